/*
 * test_cos_s3.c - the s3 COS backend without an S3 server: the URL parser
 * (every field, and a one-line reason for each refusal), the backoff
 * bounds, status and XML reading, and, against a scripted loopback HTTP
 * server, for both signers: which answers are retried (5xx, slow-down,
 * timeouts, refused connections) and which are not (4xx), how many
 * attempts a call makes, that backoff waits, and that a server that never
 * answers times out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "t_check.h"
#include "t_net.h"

#include "cm_cos.h"
#include "cm_cos_int.h"
#include "cm_err.h"

static void
test_url(void)
{
    static const char *const bad[] = {
        "s3:/h/bucket",
        "s3://",
        "s3:///bucket",
        "s3://h",
        "s3://h/",
        "s3://h/ab",
        "s3://h/Bucket",
        "s3://h/-bucket",
        "s3://h:0/bucket",
        "s3://h:65536/bucket",
        "s3://h:12x/bucket",
        "s3://h:/bucket",
        "s3://h_x/bucket",
        "s3://[zz]/bucket",
        "s3://[]/bucket",
        "s3://user:pw@h/bucket",
        "s3://h/bucket/a//b",
        "s3://h/bucket/../b",
        "s3://h/bucket/a b",
        "s3://h/bucket/%41",
        "s3://h/bucket#frag",
        "s3://h/bucket?",
        "s3://h/bucket?sig=v3",
        "s3://h/bucket?sig=v2&sig=v4",
        "s3://h/bucket?tls=2",
        "s3://h/bucket?tls=",
        "s3://h/bucket?region=EU",
        "s3://h/bucket?foo=1",
        "s3://h/bucket?sig=v2&",
        "s3://h/bucket?sig",
        "s3://h/bucket?=v2",
        "s3://h/bucket?region=us-east-1-and-a-region-name-longer-than-32",
    };
    struct cm_s3_url u;
    char err[200], big[400];

    CHECK_EQ_INT(cm_s3_url_parse("s3://127.0.0.1:4568/shoal?sig=v2&tls=0", &u, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(u.host, "127.0.0.1");
    CHECK_EQ_INT(u.port, 4568);
    CHECK_EQ_STR(u.bucket, "shoal");
    CHECK_EQ_STR(u.prefix, "");
    CHECK_EQ_INT(u.sig, CM_S3_SIG_V2);
    CHECK_EQ_INT(u.tls, 0);
    CHECK_EQ_STR(u.region, "us-east-1");

    CHECK_EQ_INT(cm_s3_url_parse("s3://s3.eu-west-1.amazonaws.com/my.bucket-1/a/b.c/?region=eu-"
                                 "west-1",
                                 &u, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(u.host, "s3.eu-west-1.amazonaws.com");
    CHECK_EQ_INT(u.port, 443);
    CHECK_EQ_STR(u.bucket, "my.bucket-1");
    CHECK_EQ_STR(u.prefix, "a/b.c");
    CHECK_EQ_INT(u.sig, CM_S3_SIG_V4);
    CHECK_EQ_INT(u.tls, 1);
    CHECK_EQ_STR(u.region, "eu-west-1");

    CHECK_EQ_INT(
        cm_s3_url_parse("s3://[::1]:9000/bkt/p?tls=0&sig=v4&region=x1", &u, err, sizeof(err)), 0);
    CHECK_EQ_STR(u.host, "[::1]");
    CHECK_EQ_INT(u.port, 9000);
    CHECK_EQ_STR(u.prefix, "p");
    CHECK_EQ_INT(cm_s3_url_parse("s3://minio/bkt?tls=0", &u, err, sizeof(err)), 0);
    CHECK_EQ_INT(u.port, 80);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (cm_s3_url_parse(bad[i], &u, err, sizeof(err)) != CM_E_BADARG) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
            CHECK(0);
        }
        CHECK(strncmp(err, "cos url: ", 9) == 0 && strlen(err) > 12 && !strchr(err, '\n'));
    }
    /* a prefix past its limit; a tiny error buffer is still terminated */
    snprintf(big, sizeof(big), "s3://h/bucket/%0300d", 0);
    CHECK_EQ_INT(cm_s3_url_parse(big, &u, err, sizeof(err)), CM_E_BADARG);
    CHECK_EQ_INT(cm_s3_url_parse("s3://h/b", &u, err, 4), CM_E_BADARG);
    CHECK_EQ_INT(strlen(err), 3);
    CHECK_EQ_INT(cm_s3_url_parse("s3://h/b", &u, NULL, 0), CM_E_BADARG);
}

static void
test_check(void)
{
    char err[200];
    struct cm_cos *cos;

    CHECK_EQ_INT(unsetenv("AWS_ACCESS_KEY_ID"), 0);
    CHECK_EQ_INT(setenv("AWS_SECRET_ACCESS_KEY", "s", 1), 0);
    CHECK_EQ_INT(cm_cos_url_check("s3://h/bucket", err, sizeof(err)), CM_E_CONFIG);
    CHECK(strstr(err, "AWS_ACCESS_KEY_ID") != NULL);
    CHECK_EQ_INT(cm_cos_open("s3://h/bucket", &cos), CM_E_CONFIG);
    CHECK(cos == NULL);
    CHECK_EQ_INT(setenv("AWS_ACCESS_KEY_ID", "", 1), 0);
    CHECK_EQ_INT(cm_cos_url_check("s3://h/bucket", err, sizeof(err)), CM_E_CONFIG);
    CHECK_EQ_INT(setenv("AWS_ACCESS_KEY_ID", "k", 1), 0);
    CHECK_EQ_INT(cm_cos_url_check("s3://h/bucket", err, sizeof(err)), 0);
    CHECK_EQ_INT(cm_cos_url_check("s3://h/bucket?sig=v9", err, sizeof(err)), CM_E_BADARG);
    CHECK(strstr(err, "sig") != NULL);
    CHECK_EQ_INT(cm_cos_url_check("gs://h/bucket", err, sizeof(err)), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_url_check("", err, sizeof(err)), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_url_check("fs:", err, sizeof(err)), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_url_check("fs:/var/cos", err, sizeof(err)), 0);
    CHECK_EQ_INT(cm_cos_url_check("relative/dir", err, sizeof(err)), 0);
}

static void
test_backoff(void)
{
    uint32_t d, lo, hi, seen_lo = UINT32_MAX, seen_hi = 0;

    for (unsigned a = 0; a < 40; a++) {
        uint64_t full = 100ull << (a < 20 ? a : 20);

        full = full > 5000 ? 5000 : full;
        lo = (uint32_t)(full - full / 2);
        hi = (uint32_t)full;
        for (int i = 0; i < 200; i++) {
            d = cm_cos_backoff_ms(a, 100, 5000, t_rand());
            CHECK(d >= lo && d <= hi);
            if (a == 3) {
                seen_lo = d < seen_lo ? d : seen_lo;
                seen_hi = d > seen_hi ? d : seen_hi;
            }
        }
    }
    CHECK(seen_hi - seen_lo > 100); /* jittered: 400..800 */
    CHECK_EQ_INT(cm_cos_backoff_ms(0, 100, 5000, 0), 50);
    CHECK_EQ_INT(cm_cos_backoff_ms(0, 100, 5000, 50), 100);
    CHECK_EQ_INT(cm_cos_backoff_ms(UINT32_MAX, 100, 5000, 0), 2500);
    CHECK_EQ_INT(cm_cos_backoff_ms(5, 0, 5000, 7), 0);
}

static void
test_answers(void)
{
    static const char nsb[] = "<Error><Code>NoSuchBucket</Code></Error>";
    static const char rto[] = "<Error><Code>RequestTimeout</Code></Error>";

    CHECK_EQ_INT(cm_s3_http_err(200, NULL, 0), 0);
    CHECK_EQ_INT(cm_s3_http_err(204, NULL, 0), 0);
    CHECK_EQ_INT(cm_s3_http_err(404, NULL, 0), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_s3_http_err(404, nsb, sizeof(nsb) - 1), CM_E_CONFIG);
    CHECK_EQ_INT(cm_s3_http_err(403, NULL, 0), -EACCES);
    CHECK_EQ_INT(cm_s3_http_err(400, rto, sizeof(rto) - 1), CM_E_TIMEOUT);
    CHECK_EQ_INT(cm_s3_http_err(400, nsb, sizeof(nsb) - 1), -EPROTO);
    CHECK_EQ_INT(cm_s3_http_err(409, NULL, 0), -EPROTO);
    CHECK_EQ_INT(cm_s3_http_err(429, NULL, 0), -EAGAIN);
    CHECK_EQ_INT(cm_s3_http_err(500, NULL, 0), -EAGAIN);
    CHECK_EQ_INT(cm_s3_http_err(503, NULL, 0), -EAGAIN);
    CHECK(cm_cos_transient(-EAGAIN) && cm_cos_transient(CM_E_TIMEOUT) &&
          cm_cos_transient(-ECONNREFUSED) && cm_cos_transient(-EIO));
    CHECK(!cm_cos_transient(-EACCES) && !cm_cos_transient(-EPROTO) &&
          !cm_cos_transient(CM_E_NOTFOUND) && !cm_cos_transient(CM_E_CONFIG) &&
          !cm_cos_transient(0));
}

struct keys {
    char v[8][64];
    int n, stop_at;
};

static int
key_cb(void *arg, const char *key)
{
    struct keys *k = arg;

    CHECK(k->n < 8);
    snprintf(k->v[k->n++], sizeof(k->v[0]), "%s", key);
    return k->stop_at > 0 && k->n == k->stop_at ? 9 : 0;
}

static void
test_list_xml(void)
{
    static const char page[] =
        "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3\"><Name>b</Name>"
        "<Prefix>p/</Prefix><IsTruncated>true</IsTruncated>"
        "<Contents><Key>p/a</Key><Size>1</Size><Owner><ID>x</ID></Owner></Contents>"
        "<Contents><Key>p/b&amp;c&#46;d</Key></Contents>"
        "<Contents><Key>p/bad&unknown;</Key></Contents>"
        "</ListBucketResult>";
    static const char last[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                               "<Contents><Key>z</Key></Contents>"
                               "<NextMarker>zz</NextMarker></ListBucketResult>";
    char next[CM_S3_KEY_MAX + 1];
    struct keys k = {0};
    int tr;

    CHECK_EQ_INT(cm_s3_list_parse(page, sizeof(page) - 1, key_cb, &k, &tr, next), 0);
    CHECK_EQ_INT(k.n, 2);
    CHECK_EQ_STR(k.v[0], "p/a");
    CHECK_EQ_STR(k.v[1], "p/b&c.d");
    CHECK_EQ_INT(tr, 1);
    CHECK_EQ_STR(next, "p/b&c.d");
    k.n = 0;
    CHECK_EQ_INT(cm_s3_list_parse(last, sizeof(last) - 1, key_cb, &k, &tr, next), 0);
    CHECK_EQ_INT(tr, 0);
    CHECK_EQ_STR(next, "zz");
    k.n = 0;
    k.stop_at = 1;
    CHECK_EQ_INT(cm_s3_list_parse(page, sizeof(page) - 1, key_cb, &k, &tr, next), 9);
    CHECK_EQ_INT(cm_s3_list_parse("<Error/>", 8, key_cb, &k, &tr, next), CM_E_PROTO);
    CHECK_EQ_INT(cm_s3_list_parse("", 0, key_cb, &k, &tr, next), CM_E_PROTO);
}

/* ---- a scripted S3 server ---- */

#define SCRIPT_MAX 8

struct fake {
    int lfd;
    int script[SCRIPT_MAX]; /* the status of each request in turn; 0: never answer */
    int nscript;
    atomic_int requests;
    atomic_int stop;
    pthread_t th;
};

/*
 * Reads one request: its headers, and its body unless it waits for "100
 * Continue" and the answer is an error, which a server sends at once (as
 * S3 does, and as libs3 2.0 needs: it takes an interim 100 for the status
 * of a PUT whose final answer has no body). 0 at EOF.
 */
static int
read_request(int fd, int status)
{
    char buf[65536];
    size_t off = 0, need = 0;
    ssize_t n;

    for (;;) {
        char *hend, *cl;

        n = read(fd, buf + off, sizeof(buf) - 1 - off);
        if (n <= 0) {
            return 0;
        }
        off += (size_t)n;
        buf[off] = '\0';
        hend = strstr(buf, "\r\n\r\n");
        if (hend == NULL) {
            continue;
        }
        cl = strcasestr(buf, "\r\nContent-Length:");
        need = (size_t)(hend + 4 - buf) + (cl != NULL ? strtoul(cl + 17, NULL, 10) : 0);
        if (strcasestr(buf, "\r\nExpect: 100-continue") != NULL &&
            off == (size_t)(hend + 4 - buf) && off < need) {
            if (status != 200) {
                return 1;
            }
            CHECK(write(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 25);
        }
        if (off >= need) {
            return 1;
        }
    }
}

static void *
fake_main(void *arg)
{
    struct fake *f = arg;
    char resp[256];

    while (!atomic_load(&f->stop)) {
        struct pollfd p = {.fd = f->lfd, .events = POLLIN};
        int fd, i, status;

        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        i = atomic_load(&f->requests);
        status = f->script[i < f->nscript ? i : f->nscript - 1];
        if (read_request(fd, status)) {
            atomic_fetch_add(&f->requests, 1);
            if (status == 0) {
                while (!atomic_load(&f->stop) &&
                       poll(&(struct pollfd){fd, POLLIN, 0}, 1, 50) == 0) {
                }
            } else {
                int n = snprintf(resp, sizeof(resp),
                                 "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                                 status);
                CHECK(write(fd, resp, (size_t)n) == n);
            }
        }
        close(fd);
    }
    return NULL;
}

static void
fake_start(struct fake *f, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(f->lfd >= 0);
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    CHECK(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CHECK(listen(f->lfd, 16) == 0);
    atomic_init(&f->requests, 0);
    atomic_init(&f->stop, 0);
    CHECK_EQ_INT(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void
fake_stop(struct fake *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One call against a server answering script[]: its result, how many
 * requests the server saw, and how long it took. */
static int
scripted(const char *sig, const int *script, int n, int get, const struct cm_cos_opts *o,
         int *requests, double *secs)
{
    struct fake f = {.nscript = n};
    struct cm_cos *cos;
    char url[128];
    void *data = NULL;
    size_t len;
    double t0;
    int port = t_free_port(), rc;

    memcpy(f.script, script, (size_t)n * sizeof(*script));
    fake_start(&f, port);
    snprintf(url, sizeof(url), "s3://127.0.0.1:%d/bucket/pre?sig=%s&tls=0", port, sig);
    CHECK_EQ_INT(cm_cos_open_opts(url, o, &cos), 0);
    t0 = now_s();
    rc = get ? cm_cos_get(cos, "t1/x", &data, &len) : cm_cos_put(cos, "t1/x", "abc", 3);
    *secs = now_s() - t0;
    free(data);
    cm_cos_close(cos);
    fake_stop(&f);
    *requests = atomic_load(&f.requests);
    return rc;
}

static void
test_retries(const char *sig)
{
    struct cm_cos_opts o = {.tries = 4, .backoff_ms = 40, .backoff_cap_ms = 1000, .seed = 7};
    int reqs, rc;
    double secs;

    fprintf(stderr, "retries, sig=%s\n", sig);
    /* 5xx twice, then it lands: three requests, two backoffs (>= 20 + 40 ms) */
    rc = scripted(sig, (int[]){503, 500, 200}, 3, 0, &o, &reqs, &secs);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(reqs, 3);
    CHECK(secs >= 0.06);
    /* never a 4xx */
    CHECK_EQ_INT(scripted(sig, (int[]){403, 200}, 2, 0, &o, &reqs, &secs), -EACCES);
    CHECK_EQ_INT(reqs, 1);
    CHECK_EQ_INT(scripted(sig, (int[]){400, 200}, 2, 0, &o, &reqs, &secs), -EPROTO);
    CHECK_EQ_INT(reqs, 1);
    CHECK_EQ_INT(scripted(sig, (int[]){404, 200}, 2, 1, &o, &reqs, &secs), CM_E_NOTFOUND);
    CHECK_EQ_INT(reqs, 1);
    /* a get retried too, and the tries run out: the last error */
    CHECK_EQ_INT(scripted(sig, (int[]){503}, 1, 1, &o, &reqs, &secs), -EAGAIN);
    CHECK_EQ_INT(reqs, 4);
    CHECK(secs >= 0.02 + 0.04 + 0.08);
    /* a server that takes the request and never answers: the attempt's deadline */
    o.timeout_ms = 300;
    o.tries = 2;
    rc = scripted(sig, (int[]){0}, 1, 0, &o, &reqs, &secs);
    CHECK_EQ_INT(rc, CM_E_TIMEOUT);
    CHECK_EQ_INT(reqs, 2);
    CHECK(secs >= 0.6 && secs < 5);
    /* ... which, for a get, connect_timeout_ms cuts shorter on v2 (no sign
     * of progress) and bounds on v4 only while connecting */
    o.timeout_ms = 20000;
    o.connect_timeout_ms = 300;
    o.tries = 1;
    if (strcmp(sig, "v2") == 0) {
        rc = scripted(sig, (int[]){0}, 1, 1, &o, &reqs, &secs);
        CHECK_EQ_INT(rc, CM_E_TIMEOUT);
        CHECK(secs >= 0.3 && secs < 3);
    }
}

/* Nothing listens: refused at once, tried `tries` times with backoff. */
static void
test_refused(const char *sig)
{
    struct cm_cos_opts o = {.tries = 3, .backoff_ms = 50, .backoff_cap_ms = 1000, .seed = 3};
    struct cm_cos *cos;
    char url[128];
    double t0, secs;

    snprintf(url, sizeof(url), "s3://127.0.0.1:%d/bucket?sig=%s&tls=0", t_free_port(), sig);
    CHECK_EQ_INT(cm_cos_open_opts(url, &o, &cos), 0);
    t0 = now_s();
    CHECK_EQ_INT(cm_cos_put(cos, "t1/x", "abc", 3), -ECONNREFUSED);
    secs = now_s() - t0;
    CHECK(secs >= 0.025 + 0.05 && secs < 5);
    cm_cos_close(cos);
}

int
main(void)
{
    t_seed();
    test_url();
    test_check();
    test_backoff();
    test_answers();
    test_list_xml();
    CHECK_EQ_INT(setenv("AWS_ACCESS_KEY_ID", "k", 1), 0);
    CHECK_EQ_INT(setenv("AWS_SECRET_ACCESS_KEY", "s", 1), 0);
    test_retries("v2");
    test_retries("v4");
    test_refused("v2");
    test_refused("v4");
    return 0;
}
