/*
 * test_cos.c - the fs backend: put/get/overwrite/delete/list, name rules,
 * no temp file left behind, batches from several threads at once (they
 * share syncs), and the s3 placeholder.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>

#include "t_check.h"

#include "cm_cos.h"
#include "cm_err.h"

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
    static const size_t lens[] = {(1 << 20) + 8, 1 << 20, (64 << 10) - 1, (200 << 10) + 4095,
                                  (3 << 20) + 1, 70000};
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
test_concurrent(struct cm_cos *cos, const char *dir)
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
    CHECK_EQ_INT(count_tmp(dir), 0);
}

int
main(void)
{
    char *root = t_tmpdir(), url[4200], big_name[600];
    struct names ns = {0};
    struct cm_cos *cos;
    void *data;
    size_t len;
    uint8_t *big;
    int i;

    t_seed();
    CHECK_EQ_INT(cm_cos_open("s3://bucket/prefix", &cos), -ENOTSUP);
    CHECK(cos == NULL);
    snprintf(url, sizeof(url), "fs:%s/store/sub", root);
    CHECK_EQ_INT(cm_cos_open(url, &cos), 0);

    CHECK_EQ_INT(cm_cos_get(cos, "t1/none", &data, &len), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.0", "hello", 5), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/0000000000000001/1.0", &data, &len), 0);
    CHECK(len == 5 && memcmp(data, "hello", 5) == 0);
    free(data);

    /* overwrite, and a big object */
    big = malloc(1 << 20);
    t_fill(big, 1 << 20);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.0", big, 1 << 20), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "t1/0000000000000001/1.0", &data, &len), 0);
    CHECK(len == 1 << 20 && memcmp(data, big, len) == 0);
    free(data);
    /* ranges: inside, running past the end, past the end, missing */
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 4096, 100, &data, &len), 0);
    CHECK(len == 100 && memcmp(data, big + 4096, 100) == 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", (1 << 20) - 10, 100, &data,
                                  &len),
                 0);
    CHECK(len == 10 && memcmp(data, big + (1 << 20) - 10, 10) == 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/0000000000000001/1.0", 2 << 20, 100, &data, &len), 0);
    CHECK_EQ_INT(len, 0);
    free(data);
    CHECK_EQ_INT(cm_cos_get_range(cos, "t1/none", 0, 1, &data, &len), CM_E_NOTFOUND);
    CHECK(data == NULL);
    free(big);
    test_direct(cos);

    /* empty object */
    CHECK_EQ_INT(cm_cos_put(cos, "empty", "", 0), 0);
    CHECK_EQ_INT(cm_cos_get(cos, "empty", &data, &len), 0);
    CHECK_EQ_INT(len, 0);
    free(data);

    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000001/1.1", "a", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000002/1.0", "b", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t12/0000000000000001/1.0", "c", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t2/x", "d", 1), 0);
    snprintf(url, sizeof(url), "%s/store/sub", root);
    CHECK_EQ_INT(count_tmp(url), 0);
    test_concurrent(cos, url);

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
    big_name[512] = '\0';
    CHECK_EQ_INT(cm_cos_put(cos, big_name, "x", 1) == CM_E_BADARG, 0); /* may hit NAME_MAX */
    cm_cos_delete(cos, big_name);
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
    cm_cos_close(cos);

    /* a plain path reopens the same store */
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
    CHECK_EQ_INT(count_tmp(url), 0);
    cm_cos_close(cos);
    cm_cos_close(NULL);
    t_rmtree(root);
    return 0;
}
