/*
 * test_cos.c - one COS backend through cm_cos.h: put/get/overwrite, ranges,
 * delete, list (by prefix, stopped early, past one S3 listing page), name
 * rules, batches from several threads at once, reopening.
 *
 * Without SHOAL_TEST_COS_URL it runs on a temp directory with the fs
 * backend, plus what only fs has (no temp file left behind, O_DIRECT
 * writes of every length and alignment). With it (an empty store, e.g.
 * s3://127.0.0.1:PORT/bucket?sig=v2&tls=0 of a fresh s3rver, see
 * tests/integration/s3rver.py) the same cases run on that store, plus
 * what only s3 has (refused credentials fail at once, a missing bucket is
 * a configuration error, an object name under the URL's prefix).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>

#include "t_check.h"

#include "cm_cos.h"
#include "cm_err.h"

#define PAGE_OBJECTS 1003 /* one S3 listing page is 1000 keys */

struct names {
    char *v[64];
    int n;
    int stop_after;
};

static int
collect(void *arg, const char *name)
{
    struct names *ns = arg;

    CHECK(ns->n < 64);
    ns->v[ns->n++] = strdup(name);
    return ns->stop_after > 0 && ns->n >= ns->stop_after ? 7 : 0;
}

static int
has(const struct names *ns, const char *name)
{
    int i;

    for (i = 0; i < ns->n; i++) {
        if (strcmp(ns->v[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

static void
names_free(struct names *ns)
{
    while (ns->n > 0) {
        free(ns->v[--ns->n]);
    }
    ns->stop_after = 0;
}

/* Fails if any file under dir is a temp file (its name holds '#'). */
static int
count_tmp(const char *dir)
{
    struct dirent *de;
    char sub[4096];
    int n = 0;
    DIR *d = opendir(dir);

    CHECK(d != NULL);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0)) {
            continue;
        }
        if (strchr(de->d_name, '#') != NULL) {
            n++;
        }
        if (de->d_type == DT_DIR) {
            snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
            n += count_tmp(sub);
        }
    }
    closedir(d);
    return n;
}

/* Page-aligned big buffers are written with O_DIRECT for their whole
 * blocks and the rest through the page cache: every length and alignment
 * must read back byte for byte (and a shorter overwrite must not keep the
 * old tail). */
static void
test_direct(struct cm_cos *cos)
{
    static const size_t lens[] = {(1 << 20) + 8,      1 << 20,       (64 << 10) - 1,
                                  (200 << 10) + 4095, (3 << 20) + 1, 70000};
    uint8_t *buf = NULL;
    void *data;
    size_t len;

    CHECK(posix_memalign((void **)&buf, 4096, (4 << 20) + 4096) == 0);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t off = 0; off <= 8; off += 8) { /* aligned, then not */
            t_fill(buf + off, lens[i]);
            buf[off] ^= (uint8_t)i;
            CHECK_EQ_INT(cm_cos_put(cos, "t9/0000000000000001/1.0", buf + off, lens[i]), 0);
            CHECK_EQ_INT(cm_cos_get(cos, "t9/0000000000000001/1.0", &data, &len), 0);
            CHECK(len == lens[i] && memcmp(data, buf + off, len) == 0);
            free(data);
        }
    }
    free(buf);
    CHECK_EQ_INT(cm_cos_delete(cos, "t9/0000000000000001/1.0"), 0);
}

#define CONC_THREADS 4
#define CONC_BATCHES 25
#define CONC_ITEMS 4

struct conc_arg {
    struct cm_cos *cos;
    int id;
};

/* Every put of every thread's batches lands whole, whatever sync it rode. */
static void *
conc_main(void *arg)
{
    struct conc_arg *a = arg;
    char names[CONC_ITEMS][64];
    uint8_t bufs[CONC_ITEMS][300];
    struct cm_cos_item items[CONC_ITEMS];

    for (int b = 0; b < CONC_BATCHES; b++) {
        for (int i = 0; i < CONC_ITEMS; i++) {
            snprintf(names[i], sizeof(names[i]), "conc/%d/%d.%d", a->id, b, i);
            memset(bufs[i], a->id * 31 + b * 7 + i, sizeof(bufs[i]));
            items[i].name = names[i];
            items[i].data = bufs[i];
            items[i].len = sizeof(bufs[i]) - (size_t)i;
            items[i].rc = -1;
        }
        cm_cos_put_batch(a->cos, items, CONC_ITEMS);
        for (int i = 0; i < CONC_ITEMS; i++) {
            CHECK_EQ_INT(items[i].rc, 0);
        }
    }
    return NULL;
}

static void
test_concurrent(struct cm_cos *cos)
{
    pthread_t th[CONC_THREADS];
    struct conc_arg args[CONC_THREADS];
    char name[64];
    void *data;
    size_t len;

    for (int t = 0; t < CONC_THREADS; t++) {
        args[t].cos = cos;
        args[t].id = t;
        CHECK_EQ_INT(pthread_create(&th[t], NULL, conc_main, &args[t]), 0);
    }
    for (int t = 0; t < CONC_THREADS; t++) {
        CHECK_EQ_INT(pthread_join(th[t], NULL), 0);
    }
    for (int t = 0; t < CONC_THREADS; t++) {
        for (int b = 0; b < CONC_BATCHES; b++) {
            for (int i = 0; i < CONC_ITEMS; i++) {
                snprintf(name, sizeof(name), "conc/%d/%d.%d", t, b, i);
                CHECK_EQ_INT(cm_cos_get(cos, name, &data, &len), 0);
                CHECK_EQ_INT(len, 300 - i);
                CHECK(((uint8_t *)data)[0] == (uint8_t)(t * 31 + b * 7 + i));
                CHECK(((uint8_t *)data)[len - 1] == (uint8_t)(t * 31 + b * 7 + i));
                free(data);
                CHECK_EQ_INT(cm_cos_delete(cos, name), 0);
            }
        }
    }
}

static int
count_cb(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

/* More objects than one S3 listing page holds: every one listed once, and
 * a prefix that only the second page matches. */
static void
test_pages(struct cm_cos *cos)
{
    struct cm_cos_item items[64];
    char names[64][32];
    int i = 0, n, count = 0;

    while (i < PAGE_OBJECTS) {
        for (n = 0; n < 64 && i < PAGE_OBJECTS; n++, i++) {
            snprintf(names[n], sizeof(names[n]), "page/%05d", i);
            items[n].name = names[n];
            items[n].data = names[n];
            items[n].len = strlen(names[n]);
        }
        cm_cos_put_batch(cos, items, (size_t)n);
        while (n-- > 0) {
            CHECK_EQ_INT(items[n].rc, 0);
        }
    }
    CHECK_EQ_INT(cm_cos_list(cos, "page/", count_cb, &count), 0);
    CHECK_EQ_INT(count, PAGE_OBJECTS);
    count = 0;
    CHECK_EQ_INT(cm_cos_list(cos, "page/01", count_cb, &count), 0);
    CHECK_EQ_INT(count, 3); /* 01000..01002: the second page alone */
}

/* SHOAL_TEST_COS_BENCH=N: N puts, whole gets and 4 KiB ranged gets of
 * chunk-sized objects (SHOAL_TEST_COS_BENCH_SIZE, 1 MiB), one thread, and
 * their rates; no checks beyond each call's success. */
static void
bench(const char *url, int n)
{
    const char *sz = getenv("SHOAL_TEST_COS_BENCH_SIZE");
    size_t size = sz != NULL ? strtoul(sz, NULL, 10) : (size_t)1 << 20;
    static const char *const what[] = {"put", "get", "get_range_4k"};
    uint8_t *buf = malloc(size + 1);
    struct cm_cos *cos;
    char name[64];
    void *data;
    size_t len;

    t_fill(buf, size);
    CHECK_EQ_INT(cm_cos_open(url, &cos), 0);
    for (int op = 0; op < 3; op++) {
        struct timespec a, b;
        double s;

        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof(name), "bench/%06d", i);
            if (op == 0) {
                CHECK_EQ_INT(cm_cos_put(cos, name, buf, size), 0);
                continue;
            }
            if (op == 1) {
                CHECK_EQ_INT(cm_cos_get(cos, name, &data, &len), 0);
            } else {
                CHECK_EQ_INT(cm_cos_get_range(cos, name, size / 2, 4096, &data, &len), 0);
            }
            free(data);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        printf("bench %s: %d x %zu bytes in %.2f s: %.0f ops/s, %.1f MiB/s\n", what[op], n,
               op == 2 ? (size_t)4096 : size, s, n / s,
               (double)n * (double)(op == 2 ? 4096 : size) / s / 1048576.0);
    }
    cm_cos_close(cos);
    free(buf);
}

/* The cases every backend passes; the store starts empty. */
static void
test_store(const char *url)
{
    struct names ns = {0};
    struct cm_cos *cos;
    char big_name[600];
    void *data;
    size_t len;
    uint8_t *big;
    int i;

    CHECK_EQ_INT(cm_cos_open(url, &cos), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/none", &data, &len), CM_E_NOTFOUND);
    CHECK(data == NULL);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.0", "hello", 5), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/0000000000000001/1.0", &data, &len), 0);
    CHECK(len == 5 && memcmp(data, "hello", 5) == 0 && ((char *)data)[5] == '\0');
    free(data);

    /* overwrite, and a big object */
    big = malloc(1 << 20);
    t_fill(big, 1 << 20);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.0", big, 1 << 20), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/0000000000000001/1.0", &data, &len), 0);
    CHECK(len == 1 << 20 && memcmp(data, big, len) == 0);
    free(data);
    /* ranges: inside, running past the end, past the end, empty, missing */
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 4096, 100, &data, &len), 0);
    CHECK(len == 100 && memcmp(data, big + 4096, 100) == 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 0, 1, &data, &len), 0);
    CHECK(len == 1 && ((uint8_t *)data)[0] == big[0]);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", (1 << 20) - 10, 100, &data, &len),
                 0);
    CHECK(len == 10 && memcmp(data, big + (1 << 20) - 10, 10) == 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 2 << 20, 100, &data, &len), 0);
    CHECK_EQ_INT(len, 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 7, 0, &data, &len), 0);
    CHECK_EQ_INT(len, 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/none", 0, 1, &data, &len), CM_E_NOTFOUND);
    CHECK(data == NULL);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/none", 0, 0, &data, &len), CM_E_NOTFOUND);
    free(big);

    /* empty object */
    CHECK_EQ_INT(cm_cos_put(cos, "empty", "", 0), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "empty", &data, &len), 0);
    CHECK_EQ_INT(len, 0);
    free(data);

    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.1", "a", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000002/1.0", "b", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t12/0000000000000001/1.0", "c", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t2/x", "d", 1), 0);
    test_concurrent(cos);

    /* names */
    CHECK_EQ_INT(cm_cos_put(cos, "", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "/abs", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a//b", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a/../b", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a/./b", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "..", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a/", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a b", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_put(cos, "a#b", "x", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_cos_get(cos, "../etc/passwd", &data, &len), CM_E_BADARG);
    memset(big_name, 'n', 513);
    big_name[513] = '\0';
    CHECK_EQ_INT(cm_cos_put(cos, big_name, "x", 1), CM_E_BADARG);
    /* the longest name, in segments a file system takes (NAME_MAX 255) */
    big_name[512] = '\0';
    big_name[200] = big_name[400] = '/';
    CHECK_EQ_INT(cm_cos_put(cos, big_name, "x", 1), 0);
    CHECK_EQ_INT(cm_cos_get(cos, big_name, &data, &len), 0);
    CHECK(len == 1 && ((char *)data)[0] == 'x');
    free(data);
    CHECK_EQ_INT(cm_cos_delete(cos, big_name), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "a.b-c_D/.hidden", "x", 1), 0);
    CHECK_EQ_INT(cm_cos_delete(cos, "a.b-c_D/.hidden"), 0);

    /* list */
    CHECK_EQ_INT(cm_cos_list(cos, "t1/", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 3);
    CHECK(has(&ns, "t1/0000000000000001/1.0") && has(&ns, "t1/0000000000000001/1.1") &&
          has(&ns, "t1/0000000000000002/1.0"));
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, "t1", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 4);
    CHECK(has(&ns, "t12/0000000000000001/1.0"));
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, "t1/0000000000000001/1.", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 2);
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, "", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 6);
    CHECK(has(&ns, "empty") && has(&ns, "t2/x"));
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, NULL, collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 6);
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, "nothing/here/", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 0);
    ns.stop_after = 2;
    CHECK_EQ_INT(cm_cos_list(cos, "", collect, &ns), 7);
    CHECK_EQ_INT(ns.n, 2);
    names_free(&ns);
    CHECK_EQ_INT(cm_cos_list(cos, "../", collect, &ns), CM_E_BADARG);

    /* delete */
    CHECK_EQ_INT(cm_cos_delete(cos, "t1/0000000000000001/1.0"), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/0000000000000001/1.0", &data, &len), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_cos_delete(cos, "t1/0000000000000001/1.0"), 0);
    CHECK_EQ_INT(cm_cos_delete(cos, "never/was"), 0);
    CHECK_EQ_INT(cm_cos_list(cos, "t1/", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 2);
    names_free(&ns);
    test_pages(cos);
    cm_cos_close(cos);

    /* the same url reopens the same store */
    CHECK_EQ_INT(cm_cos_open(url, &cos), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t2/x", &data, &len), 0);
    CHECK(len == 1 && ((char *)data)[0] == 'd');
    free(data);
    for (i = 0; i < 20; i++) {
        char name[64];
        snprintf(name, sizeof(name), "many/%02d", i);
        CHECK_EQ_INT(cm_cos_put(cos, name, name, strlen(name)), 0);
    }
    CHECK_EQ_INT(cm_cos_list(cos, "many/", collect, &ns), 0);
    CHECK_EQ_INT(ns.n, 20);
    names_free(&ns);
    cm_cos_close(cos);
    cm_cos_close(NULL);
}

/* What only fs has: temp files, O_DIRECT, plain paths. */
static void
test_fs(void)
{
    char *root = t_tmpdir(), url[4200], dir[4200];
    struct cm_cos *cos;
    void *data;
    size_t len;

    snprintf(url, sizeof(url), "fs:%s/store/sub", root);
    snprintf(dir, sizeof(dir), "%s/store/sub", root);
    test_store(url);
    CHECK_EQ_INT(count_tmp(dir), 0);
    /* a plain path is the same store */
    CHECK_EQ_INT(cm_cos_open(dir, &cos), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t2/x", &data, &len), 0);
    CHECK(len == 1 && ((char *)data)[0] == 'd');
    free(data);
    test_direct(cos);
    CHECK_EQ_INT(count_tmp(dir), 0);
    cm_cos_close(cos);
    t_rmtree(root);
}

/* What only s3 has; url is the store's. */
static void
test_s3(const char *url)
{
    char other[1024], *q, *slash;
    char *id = strdup(getenv("AWS_ACCESS_KEY_ID")),
         *secret = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
    struct cm_cos_opts opts = {.tries = 3, .backoff_ms = 1};
    struct cm_cos *cos, *sub;
    void *data;
    size_t len;
    int count = 0;

    /* refused credentials (an unknown key, a wrong secret): an error at
     * once, not after retries */
    CHECK_EQ_INT(setenv("AWS_ACCESS_KEY_ID", "NOSUCHKEY", 1), 0);
    CHECK_EQ_INT(cm_cos_open_opts(url, &opts, &cos), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "denied", "x", 1), -EACCES);
    CHECK_EQ_INT(cm_cos_get(cos, "t2/x", &data, &len), -EACCES);
    cm_cos_close(cos);
    CHECK_EQ_INT(setenv("AWS_ACCESS_KEY_ID", id, 1), 0);
    CHECK_EQ_INT(setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1), 0);
    CHECK_EQ_INT(cm_cos_open_opts(url, &opts, &cos), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "denied", "x", 1), -EACCES);
    cm_cos_close(cos);
    CHECK_EQ_INT(setenv("AWS_SECRET_ACCESS_KEY", secret, 1), 0);

    /* a bucket that is not there is a configuration error, not "no object" */
    snprintf(other, sizeof(other), "%s", url);
    slash = strchr(other + 5, '/');
    CHECK(slash != NULL);
    q = strchr(url + 5, '?');
    snprintf(slash, sizeof(other) - (size_t)(slash - other), "/no-such-bucket%s", q ? q : "");
    CHECK_EQ_INT(cm_cos_open_opts(other, &opts, &cos), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t2/x", &data, &len), CM_E_CONFIG);
    cm_cos_close(cos);

    /* a prefix: names live under it, listed without it */
    snprintf(other, sizeof(other), "%s", url);
    slash = strchr(other + 5, '/');
    slash = strchr(slash + 1, '?');
    snprintf(slash != NULL ? slash : other + strlen(other),
             sizeof(other) - (size_t)((slash != NULL ? slash : other + strlen(other)) - other),
             "/pre/fix%s", q ? q : "");
    CHECK_EQ_INT(cm_cos_open(other, &sub), 0);
    CHECK_EQ_INT(cm_cos_open(url, &cos), 0);
    CHECK_EQ_INT(cm_cos_put(sub, "seg/n1/01", "s", 1), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "pre/fix/seg/n1/01", &data, &len), 0);
    CHECK(len == 1 && ((char *)data)[0] == 's');
    free(data);
    CHECK_EQ_INT(cm_cos_list(sub, "seg/n1/", count_cb, &count), 0);
    CHECK_EQ_INT(count, 1);
    count = 0;
    CHECK_EQ_INT(cm_cos_list(sub, "", count_cb, &count), 0);
    CHECK_EQ_INT(count, 1);
    CHECK_EQ_INT(cm_cos_delete(sub, "seg/n1/01"), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "pre/fix/seg/n1/01", &data, &len), CM_E_NOTFOUND);
    cm_cos_close(sub);
    cm_cos_close(cos);
    free(id);
    free(secret);
}

int
main(void)
{
    const char *url = getenv("SHOAL_TEST_COS_URL");
    char err[200];

    t_seed();
    if (getenv("SHOAL_TEST_COS_BENCH") != NULL) {
        bench(url != NULL && url[0] != '\0' ? url : "/tmp/shoal-cos-bench",
              (int)strtol(getenv("SHOAL_TEST_COS_BENCH"), NULL, 10));
        return 0;
    }
    if (url == NULL || url[0] == '\0') {
        test_fs();
        return 0;
    }
    CHECK_EQ_INT(cm_cos_url_check(url, err, sizeof(err)), 0);
    test_store(url);
    test_s3(url);
    return 0;
}
