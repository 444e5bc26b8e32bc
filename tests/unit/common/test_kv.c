/* test_kv.c - put/get/scan/del across transactions and a reopen; map full. */
#include <errno.h>

#include "t_common.h"

#include "cm_err.h"
#include "cm_kv.h"

static const char *const tables[] = {"meta", "objects"};

struct scan_acc {
    char keys[32][16];
    int n, stop_at;
};

static int
scan_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct scan_acc *a = arg;

    (void)val;
    (void)vlen;
    CHECK(a->n < 32 && klen < 16);
    memcpy(a->keys[a->n], key, klen);
    a->keys[a->n][klen] = '\0';
    a->n++;
    return a->stop_at > 0 && a->n == a->stop_at ? 42 : 0;
}

int
main(void)
{
    char *dir = t_tmpdir(), path[4200], key[16], val[16];
    struct cm_kv *kv;
    struct cm_kv_txn *t;
    struct scan_acc acc;
    const void *v;
    size_t vl;
    int i, rc;

    snprintf(path, sizeof(path), "%s/db/nested", dir);
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, 0, &kv), 0);

    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    for (i = 9; i >= 0; i--) {
        snprintf(key, sizeof(key), "k%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        CHECK_EQ_INT(cm_kv_put(t, 1, key, strlen(key), val, strlen(val) + 1), 0);
    }
    CHECK_EQ_INT(cm_kv_put(t, 0, "epoch", 5, "7", 2), 0);
    CHECK_EQ_INT(cm_kv_put(t, 2, "x", 1, "y", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_kv_put(t, 0, "", 0, "y", 1), CM_E_BADARG);
    CHECK_EQ_INT(cm_kv_commit(t), 0);

    /* an aborted write leaves no trace */
    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    CHECK_EQ_INT(cm_kv_put(t, 0, "ghost", 5, "1", 1), 0);
    cm_kv_abort(t);
    cm_kv_abort(NULL);
    cm_kv_close(kv);

    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_NOSYNC, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 0, &t), 0);
    CHECK_EQ_INT(cm_kv_get(t, 0, "epoch", 5, &v, &vl), 0);
    CHECK(vl == 2 && strcmp(v, "7") == 0);
    CHECK_EQ_INT(cm_kv_get(t, 0, "ghost", 5, &v, &vl), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_kv_get(t, 1, "epoch", 5, &v, &vl), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_kv_get(t, 1, "k03", 3, &v, &vl), 0);
    CHECK_EQ_STR(v, "v3");
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_INT(cm_kv_scan(t, 1, NULL, 0, scan_cb, &acc), 0);
    CHECK_EQ_INT(acc.n, 10);
    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%02d", i);
        CHECK_EQ_STR(acc.keys[i], key);
    }
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_INT(cm_kv_scan(t, 1, "k045", 4, scan_cb, &acc), 0);
    CHECK_EQ_INT(acc.n, 5);
    CHECK_EQ_STR(acc.keys[0], "k05");
    memset(&acc, 0, sizeof(acc));
    acc.stop_at = 3;
    CHECK_EQ_INT(cm_kv_scan(t, 1, "k02", 3, scan_cb, &acc), 42);
    CHECK_EQ_INT(acc.n, 3);
    CHECK_EQ_STR(acc.keys[2], "k04");
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_INT(cm_kv_scan(t, 1, "z", 1, scan_cb, &acc), 0);
    CHECK_EQ_INT(acc.n, 0);
    cm_kv_abort(t);

    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    CHECK_EQ_INT(cm_kv_del(t, 1, "k03", 3), 0);
    CHECK_EQ_INT(cm_kv_del(t, 1, "k03", 3), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_kv_put(t, 1, "k04", 3, "new", 4), 0);
    CHECK_EQ_INT(cm_kv_commit(t), 0);
    CHECK_EQ_INT(cm_kv_sync(kv), 0);
    cm_kv_close(kv);

    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, 0, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 0, &t), 0);
    CHECK_EQ_INT(cm_kv_get(t, 1, "k03", 3, &v, &vl), CM_E_NOTFOUND);
    CHECK_EQ_INT(cm_kv_get(t, 1, "k04", 3, &v, &vl), 0);
    CHECK_EQ_STR(v, "new");
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_INT(cm_kv_scan(t, 1, NULL, 0, scan_cb, &acc), 0);
    CHECK_EQ_INT(acc.n, 9);
    cm_kv_abort(t);
    cm_kv_close(kv);
    cm_kv_close(NULL);

    /* a tiny map fills up: -ENOSPC, and the store stays usable */
    snprintf(path, sizeof(path), "%s/small", dir);
    CHECK_EQ_INT(cm_kv_open(path, 256 * 1024, tables, 2, CM_KV_NOSYNC, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    {
        static char blob[8192];
        rc = 0;
        for (i = 0; i < 1000 && rc == 0; i++) {
            snprintf(key, sizeof(key), "b%05d", i);
            rc = cm_kv_put(t, 0, key, strlen(key), blob, sizeof(blob));
        }
    }
    CHECK_EQ_INT(rc, -ENOSPC);
    cm_kv_abort(t);
    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    CHECK_EQ_INT(cm_kv_put(t, 0, "small", 5, "ok", 2), 0);
    CHECK_EQ_INT(cm_kv_commit(t), 0);
    cm_kv_close(kv);

    t_rmtree(dir);
    return 0;
}
