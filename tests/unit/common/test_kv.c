/* test_kv.c - put/get/scan/del across transactions and a reopen; map full;
 * the redo log: a commit whose meta page a crash lost is replayed. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "t_check.h"

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

/* Copies file from to to (whole, small files). */
static void
copy_file(const char *from, const char *to)
{
    static char buf[1 << 22];
    int in = open(from, O_RDONLY), out;
    ssize_t n;

    CHECK(in >= 0);
    n = read(in, buf, sizeof(buf));
    CHECK(n > 0 && n < (ssize_t)sizeof(buf));
    close(in);
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(out >= 0);
    CHECK(write(out, buf, (size_t)n) == n);
    close(out);
}

/* key in table 1 holds val (a string), or is absent when val is NULL. */
static void
expect(struct cm_kv *kv, const char *key, const char *val)
{
    struct cm_kv_txn *t;
    const void *v;
    size_t vl;
    int rc;

    CHECK_EQ_INT(cm_kv_begin(kv, 0, &t), 0);
    rc = cm_kv_get(t, 1, key, strlen(key), &v, &vl);
    if (val == NULL) {
        CHECK_EQ_INT(rc, CM_E_NOTFOUND);
    } else {
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_STR(v, val);
    }
    cm_kv_abort(t);
}

static void
put_del(struct cm_kv *kv, const char *put, const char *val, const char *del)
{
    struct cm_kv_txn *t;

    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    if (put != NULL) {
        CHECK_EQ_INT(cm_kv_put(t, 1, put, strlen(put), val, strlen(val) + 1), 0);
    }
    if (del != NULL) {
        CHECK_EQ_INT(cm_kv_del(t, 1, del, strlen(del)), 0);
    }
    CHECK_EQ_INT(cm_kv_commit(t), 0);
}

/*
 * The crash CM_KV_REDO covers: the machine stops after a commit returned
 * but before the next flush, so the store on disk lacks the last commit's
 * meta page and shows the one before. Reproduced by putting back a copy of
 * the data file taken before that commit, keeping the log.
 */
static void
test_redo(const char *dir)
{
    char path[4200], data[4300], lock[4300], log[4300], before[4300], logsave[4300];
    struct cm_kv *kv;
    struct cm_kv_txn *t;
    static char big[4096];
    int i;

    snprintf(path, sizeof(path), "%s/redo", dir);
    snprintf(data, sizeof(data), "%s/data.mdb", path);
    snprintf(lock, sizeof(lock), "%s/lock.mdb", path);
    snprintf(log, sizeof(log), "%s/redo.log", path);
    snprintf(before, sizeof(before), "%s/data.before", dir);
    snprintf(logsave, sizeof(logsave), "%s/redo.saved", dir);

    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    put_del(kv, "a", "1", NULL);
    put_del(kv, "b", "2", NULL);
    copy_file(data, before);    /* the store as of "b" */
    put_del(kv, "c", "3", "a"); /* the commit the crash will undo */
    cm_kv_close(kv);
    copy_file(log, logsave);

    /* A clean reopen finds the store as it was. */
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    expect(kv, "a", NULL);
    expect(kv, "b", "2");
    expect(kv, "c", "3");
    cm_kv_close(kv);

    /* The crash: the data file as of "b", the log as it was. */
    copy_file(before, data);
    copy_file(logsave, log);
    unlink(lock);
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    expect(kv, "a", NULL);
    expect(kv, "b", "2");
    expect(kv, "c", "3");
    /* Commits go on after a replay, and survive a reopen. */
    put_del(kv, "d", "4", "b");
    cm_kv_close(kv);
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    expect(kv, "b", NULL);
    expect(kv, "d", "4");
    cm_kv_close(kv);

    /* A damaged record is not applied: the store stays as of "b". */
    copy_file(before, data);
    copy_file(logsave, log);
    unlink(lock);
    {
        int fd = open(log, O_RDWR);
        char c;
        CHECK(fd >= 0);
        for (off_t half = 0; half < 2; half++) {
            CHECK(pread(fd, &c, 1, half * (1 << 20) + 22) == 1);
            c ^= 0x5a;
            CHECK(pwrite(fd, &c, 1, half * (1 << 20) + 22) == 1);
        }
        close(fd);
    }
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    expect(kv, "a", "1");
    expect(kv, "c", NULL);

    /* A transaction too big for a half commits with a full sync and leaves
     * the log alone; the older record there must not be replayed over it
     * ("g" would come back). */
    put_del(kv, "g", "7", NULL);
    CHECK_EQ_INT(cm_kv_begin(kv, 1, &t), 0);
    CHECK_EQ_INT(cm_kv_del(t, 1, "g", 1), 0);
    for (i = 0; i < 400; i++) {
        char key[16];
        snprintf(key, sizeof(key), "big%03d", i);
        CHECK_EQ_INT(cm_kv_put(t, 0, key, strlen(key), big, sizeof(big)), 0);
    }
    CHECK_EQ_INT(cm_kv_put(t, 1, "e", 1, "5", 2), 0);
    CHECK_EQ_INT(cm_kv_commit(t), 0);
    cm_kv_close(kv);
    CHECK_EQ_INT(cm_kv_open(path, 0, tables, 2, CM_KV_REDO, &kv), 0);
    expect(kv, "e", "5");
    expect(kv, "g", NULL);
    cm_kv_close(kv);

    /* On tmpfs (O_DIRECT only since Linux 6.6; without it the store flushes
     * twice and keeps no log) the store works either way. */
    if (access("/dev/shm", W_OK) == 0) {
        char shm[64];
        snprintf(shm, sizeof(shm), "/dev/shm/t_kv_redo.%d", (int)getpid());
        CHECK_EQ_INT(cm_kv_open(shm, 0, tables, 2, CM_KV_REDO, &kv), 0);
        put_del(kv, "f", "6", NULL);
        cm_kv_close(kv);
        CHECK_EQ_INT(cm_kv_open(shm, 0, tables, 2, CM_KV_REDO, &kv), 0);
        expect(kv, "f", "6");
        cm_kv_close(kv);
        t_rmtree(strdup(shm)); /* takes a malloc'd path */
    }
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

    test_redo(dir);
    t_rmtree(dir);
    return 0;
}
