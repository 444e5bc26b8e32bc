/*
 * test_kv_nodirect.c - CM_KV_REDO on a file system without O_DIRECT, run
 * under nodirect_shim.so (LD_PRELOAD). Twice:
 *   NODIRECT_REFUSE=1  the log cannot be opened: the store must keep no log
 *                      and flush twice per commit (its meta page written
 *                      through LMDB's O_DSYNC descriptor);
 *   NODIRECT_REFUSE=0  the log works: one flush, no O_DSYNC meta writes.
 * The second run shows the counter tells the two modes apart.
 */
#include <dlfcn.h>
#include <fcntl.h>

#include "t_check.h"

#include "cm_err.h"
#include "cm_kv.h"

static const char *const tables[] = {"meta", "objects"};

typedef void (*counts_fn)(long *refused, long *dsync_writes);

static void
put(struct cm_kv *kv, const char *key, const char *val)
{
    struct cm_kv_txn *t;

    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    CHECK_EQ_INT(cm_kv_put(t, 1, key, strlen(key), val, strlen(val) + 1), 0);
    CHECK_EQ_INT(cm_kv_commit(t), 0);
}

/* Bytes of path that are not zero (0 when it is absent). */
static long
nonzero_bytes(const char *path)
{
    static unsigned char buf[1 << 16];
    long n = 0;
    ssize_t got;
    int fd = open(path, O_RDONLY);

    if (fd < 0) {
        return 0;
    }
    while ((got = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < got; i++) {
            n += buf[i] != 0;
        }
    }
    close(fd);
    return n;
}

int
main(void)
{
    counts_fn counts = (counts_fn)dlsym(RTLD_DEFAULT, "nodirect_counts");
    const char *mode = getenv("NODIRECT_REFUSE");
    int refuse = mode != NULL && mode[0] == '1';
    char *dir = t_tmpdir(), path[4200], log[4300], key[16];
    struct cm_kv *kv;
    struct cm_kv_txn *t;
    const void *v;
    size_t vl;
    long refused, before, after;
    int i;

    CHECK(counts != NULL); /* not under the shim: this test would prove nothing */
    snprintf(path, sizeof(path), "%s/kv", dir);
    snprintf(log, sizeof(log), "%s/redo.log", path);

    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    counts(&refused, &before);
    CHECK(refuse ? refused >= 1 : refused == 0);
    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put(kv, key, "v");
    }
    counts(&refused, &after);
    if (refuse) {
        CHECK(after - before >= 10);         /* every commit wrote its meta page O_DSYNC */
        CHECK_EQ_INT(nonzero_bytes(log), 0); /* and no record anywhere */
    } else {
        CHECK_EQ_INT(after - before, 0); /* one flush: the log carries the commit */
        CHECK(nonzero_bytes(log) > 0);
    }
    cm_kv_close(kv);

    /* Either way the store reopens with every commit. */
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 0, &t), 0);
    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        CHECK_EQ_INT(cm_kv_get(t, 1, key, strlen(key), &v, &vl), 0);
        CHECK_EQ_STR(v, "v");
    }
    cm_kv_abort(t);
    cm_kv_close(kv);
    t_rmtree(dir);
    printf("ok (%s)\n", refuse ? "O_DIRECT refused" : "O_DIRECT allowed");
    return 0;
}
