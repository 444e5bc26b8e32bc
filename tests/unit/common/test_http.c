/*
 * test_http.c - the HTTP server's answers over a real loopback socket:
 * headers that outgrow the inline buffer arrive whole, once each and in
 * order, whether answered on the HTTP thread or, suspended, from another
 * thread; a second answer to one request changes nothing of the first.
 * A request suspended by headers() reads no body until it is let go on
 * (then it is served whole, also behind "Expect: 100-continue", and its
 * connection stays usable) or answered early (then no body is read).
 * The query string is kept as sent, and every header can be walked.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "t_check.h"
#include "../t_net.h"

#include "cm_buf.h"
#include "cm_http.h"
#include "cm_log.h"

#define NHDR 24 /* 24 headers of ~45 bytes: several times the inline buffer */

static void
add_headers(struct cm_http_req *r)
{
    char name[32], value[64];

    for (int i = 0; i < NHDR; i++) {
        snprintf(name, sizeof(name), "X-Test-%02d", i);
        snprintf(value, sizeof(value), "value-%02d-abcdefghijklmnopqrstuvwxyz", i);
        cm_http_add_header(r, name, value);
    }
}

static void *
answer_later(void *arg)
{
    struct cm_http_req *r = arg;

    usleep(20 * 1000);
    add_headers(r);
    /* Only once: the request may be sent and freed right after. */
    cm_http_respond(r, 201, "text/plain", (void *)"later", 5, CM_HTTP_STATIC);
    return NULL;
}

/* ---- headers() that suspends: /hold/ok goes on, /hold/no is refused,
 * /hold/now is let go on before headers() returns ---- */

static void *
decide_later(void *arg)
{
    struct cm_http_req *r = arg;

    usleep(30 * 1000);
    if (strcmp(cm_http_path(r), "/hold/no") == 0) {
        cm_http_respond(r, 401, "text/plain", (void *)"no", 2, CM_HTTP_STATIC);
    } else {
        cm_http_reserve_body(r, 1 << 20);
        cm_http_proceed(r);
    }
    return NULL;
}

static int
on_headers(void *arg, struct cm_http_req *r)
{
    pthread_t th;

    (void)arg;
    if (strncmp(cm_http_path(r), "/hold/", 6) != 0) {
        return 0;
    }
    cm_http_suspend(r);
    if (strcmp(cm_http_path(r), "/hold/now") == 0) {
        cm_http_proceed(r);
        return 0;
    }
    CHECK(pthread_create(&th, NULL, decide_later, r) == 0);
    pthread_detach(th);
    return 0;
}

static int
echo_header(void *arg, const char *name, const char *value)
{
    cm_buf_printf(arg, " %s=%s", name, value);
    return 0;
}

static void
on_request(void *arg, struct cm_http_req *r)
{
    pthread_t th;

    (void)arg;
    if (strncmp(cm_http_path(r), "/hold/", 6) == 0) {
        char n[32];
        size_t len;

        CHECK(strcmp(cm_http_path(r), "/hold/no") != 0);
        (void)cm_http_body(r, &len);
        snprintf(n, sizeof(n), "got %zu;", len);
        cm_http_respond(r, 200, "text/plain", n, strlen(n), CM_HTTP_COPY);
        return;
    }
    if (strcmp(cm_http_path(r), "/echo") == 0) {
        struct cm_buf b;
        size_t len;
        char *body;

        cm_buf_init(&b);
        cm_buf_printf(&b, "q=[%s]", cm_http_query_string(r));
        cm_http_headers_each(r, echo_header, &b);
        body = cm_buf_take(&b, &len);
        cm_http_respond(r, 200, "text/plain", body, len, CM_HTTP_FREE);
        return;
    }
    if (strcmp(cm_http_path(r), "/later") == 0) {
        cm_http_suspend(r);
        CHECK(pthread_create(&th, NULL, answer_later, r) == 0);
        pthread_detach(th);
        return;
    }
    add_headers(r);
    cm_http_respond(r, 200, "text/plain", (void *)"now", 3, CM_HTTP_STATIC);
    /* A second answer is dropped, its Content-Type and body with it (safe
     * here: the request lives until this callback returns). */
    cm_http_respond(r, 500, "application/json", (void *)"{}", 2, CM_HTTP_STATIC);
}

/* One request on a new connection; the whole answer (the server closes). */
static void
fetch(int port, const char *path, char *out, size_t cap)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char req[256];
    size_t off = 0;
    ssize_t n;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    CHECK(write(fd, req, (size_t)n) == n);
    while (off < cap - 1 && (n = read(fd, out + off, cap - 1 - off)) > 0) {
        off += (size_t)n;
    }
    out[off] = '\0';
    close(fd);
}

static int
count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    return n;
}

static void
check_answer(const char *resp, const char *status, const char *body)
{
    char line[128];
    const char *prev = resp, *p;

    CHECK(strncmp(resp, status, strlen(status)) == 0);
    for (int i = 0; i < NHDR; i++) {
        snprintf(line, sizeof(line), "\r\nX-Test-%02d: value-%02d-abcdefghijklmnopqrstuvwxyz\r\n",
                 i, i);
        CHECK_EQ_INT(count(resp, line), 1);
        p = strstr(resp, line);
        CHECK(p != NULL && p > prev); /* in the order added */
        prev = p;
    }
    CHECK_EQ_INT(count(resp, "Content-Type:"), 1);
    CHECK(strstr(resp, "\r\nContent-Type: text/plain\r\n") != NULL);
    p = strstr(resp, "\r\n\r\n");
    CHECK(p != NULL && strcmp(p + 4, body) == 0);
}

static int
dial(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    return fd;
}

/* Reads until want is in buf (NUL-terminated); 0, or -1 at EOF first. */
static int
read_until(int fd, char *buf, size_t cap, const char *want)
{
    size_t off = 0;
    ssize_t n;

    buf[0] = '\0';
    while (strstr(buf, want) == NULL) {
        if (off >= cap - 1 || (n = read(fd, buf + off, cap - 1 - off)) <= 0) {
            return -1;
        }
        off += (size_t)n;
        buf[off] = '\0';
    }
    return 0;
}

/* PUT path with a body of len bytes on fd; with expect, the body goes
 * only after "100 Continue". The answer's head and body are in out. */
static void
put_held(int fd, const char *path, size_t len, int expect, char *out, size_t cap)
{
    static char body[300000];
    char head[256];
    int n =
        snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n%s\r\n",
                 path, len, expect ? "Expect: 100-continue\r\n" : "");

    memset(body, 'b', sizeof(body));
    CHECK(write(fd, head, (size_t)n) == n);
    if (expect) {
        CHECK(read_until(fd, out, cap, "\r\n\r\n") == 0);
        CHECK(strncmp(out, "HTTP/1.1 100", 12) == 0);
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, body + off, len - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    CHECK(read_until(fd, out, cap, ";") == 0);
}

static void
test_held(int port)
{
    char out[4096], want[64];
    size_t lens[] = {0, 10, 250000};

    for (int expect = 0; expect < 2; expect++) {
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            const char *paths[] = {"/hold/ok", "/hold/now"};
            for (int p = 0; p < 2; p++) {
                int fd = dial(port);

                if (expect && lens[i] == 0) {
                    close(fd);
                    continue; /* no body: no 100 Continue either */
                }
                put_held(fd, paths[p], lens[i], expect, out, sizeof(out));
                CHECK(strstr(out, "HTTP/1.1 200") != NULL);
                snprintf(want, sizeof(want), "\r\n\r\ngot %zu;", lens[i]);
                CHECK(strstr(out, want) != NULL);
                /* the connection is still good for the next request */
                put_held(fd, "/hold/ok", 5, 0, out, sizeof(out));
                CHECK(strstr(out, "HTTP/1.1 200") != NULL);
                close(fd);
            }
        }
    }
    /* Refused while held: 401, and the body is never asked for. */
    for (int expect = 0; expect < 2; expect++) {
        int fd = dial(port);
        int n = snprintf(out, sizeof(out),
                         "PUT /hold/no HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n%s\r\n",
                         expect ? "Expect: 100-continue\r\n" : "");

        CHECK(write(fd, out, (size_t)n) == n);
        CHECK(read_until(fd, out, sizeof(out), "\r\n\r\n") == 0);
        CHECK(strncmp(out, "HTTP/1.1 401", 12) == 0);
        close(fd);
    }
}

int
main(void)
{
    struct cm_http_handlers h = {.headers = on_headers, .request = on_request};
    struct cm_http_cfg cfg = {0};
    struct cm_http_server *srv = NULL;
    char addr[64], resp[8192];
    int port = t_free_port();

    cm_log_init("test", CM_LOG_WARN);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cfg.addr = addr;
    cfg.threads = 2;
    cfg.max_body = 1 << 20;
    CHECK(cm_http_start(&cfg, &h, NULL, &srv) == 0);

    fetch(port, "/now", resp, sizeof(resp));
    check_answer(resp, "HTTP/1.1 200", "now");
    fetch(port, "/later", resp, sizeof(resp));
    check_answer(resp, "HTTP/1.1 201", "later");
    test_held(port);
    fetch(port, "/echo?b=%2B+x&a&c=1%2f2", resp, sizeof(resp));
    CHECK(strncmp(resp, "HTTP/1.1 200", 12) == 0);
    CHECK(strstr(resp, "\r\n\r\nq=[b=%2B+x&a&c=1%2f2] Host=t Connection=close") != NULL);
    fetch(port, "/echo", resp, sizeof(resp));
    CHECK(strstr(resp, "\r\n\r\nq=[] Host=t Connection=close") != NULL);

    cm_http_stop(srv, 1000);
    return 0;
}
