/*
 * cm_kv.c - the LMDB adapter (the only file including <lmdb.h>).
 *
 * One environment per directory, one named database per table. The env is
 * opened with MDB_NOTLS: a read transaction is then bound to its MDB_txn
 * rather than to the thread's TLS slot, so thread pools may keep several
 * readers per thread (each read txn still stays on the thread that began
 * it, as cm_kv.h says). LMDB error codes are mapped into the cm_err space
 * here; MDB_MAP_FULL becomes -ENOSPC so callers can abort the txn and
 * report the store as full instead of crashing.
 *
 * CM_KV_REDO: one flush per commit instead of LMDB's two (its data pages,
 * then its meta page). The env runs with MDB_NOMETASYNC: a commit flushes
 * the data pages and writes the meta page without a flush, which keeps the
 * store consistent, but a crash of the machine may undo the last commit
 * (the next commit's flush covers the meta page). So before LMDB commits,
 * the transaction's puts and deletes go to a redo log beside it
 * (DIR/redo.log) with O_DIRECT: the write has reached the device when
 * pwrite returns, and the flush that follows for the data pages, a flush of
 * the device's cache on the same file system, makes it durable too. The
 * log has two halves, by the parity of the txn id, so the record of the
 * commit that may be undone is never the one being overwritten. At open,
 * records newer than the store's last transaction are replayed, the store
 * is synced and the log zeroed. A record larger than a half, a failed
 * record write, or a file system without O_DIRECT falls back to LMDB's two
 * flushes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_kv.h"
#include "cm_log.h"

#define KV_DEFAULT_MAP ((size_t)4 << 30)

#define REDO_HALF ((size_t)1 << 20) /* bytes per half of the log */
#define REDO_ALIGN ((size_t)4096)   /* of O_DIRECT offsets, lengths, buffers */
#define REDO_MAGIC 0x4f445253u      /* "SRDO" */
#define REDO_HDR 20                 /* magic, crc, txn id, payload length */
enum { REDO_PUT = 1, REDO_DEL = 2 };

struct cm_kv {
    MDB_env *env;
    int redo_fd;          /* O_DIRECT; -1: no redo log */
    pthread_mutex_t redo; /* a commit's log writes, up to a failed commit's undo */
    uint8_t *block;       /* REDO_HALF bytes, aligned: the record being written */
    int ntables;
    MDB_dbi dbi[];
};

struct cm_kv_txn {
    struct cm_kv *kv;
    MDB_txn *txn;
    struct cm_buf redo; /* this write txn's ops, when the store has a log */
};

static int
kv_err(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return 0;
    case MDB_NOTFOUND:
        return CM_E_NOTFOUND;
    case MDB_KEYEXIST:
        return CM_E_EXISTS;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
        return -ENOSPC;
    case MDB_BAD_VALSIZE:
        return CM_E_BADARG;
    case MDB_MAP_RESIZED:
        return -EAGAIN;
    default:
        /* LMDB passes errno values through as positive numbers. */
        return rc > 0 ? -rc : -EIO;
    }
}

static int
mkdir_p(const char *path)
{
    char *buf = cm_strdup(path);
    size_t len = strlen(buf), i;
    int ret = 0;

    for (i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') {
            continue;
        }
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            ret = -errno;
            goto out;
        }
        buf[i] = path[i];
    }
out:
    free(buf);
    return ret;
}

/* ---- the redo log (CM_KV_REDO) ----------------------------------------- */

/* Records one op of a write txn: op, table, klen, vlen, key, value. */
static void
redo_add(struct cm_kv_txn *txn, int op, int table, const void *key, size_t klen, const void *val,
         size_t vlen)
{
    uint8_t h[10];

    h[0] = (uint8_t)op;
    h[1] = (uint8_t)table;
    cm_put_le32(h + 2, (uint32_t)klen);
    cm_put_le32(h + 6, (uint32_t)vlen);
    cm_buf_append(&txn->redo, h, sizeof(h));
    cm_buf_append(&txn->redo, key, klen);
    cm_buf_append(&txn->redo, val, vlen);
}

/* Writes txn's record into its half: 0, 1 when it does not fit (the
 * caller syncs in full instead), or -errno. */
static int
redo_write(struct cm_kv *kv, uint64_t txnid, const struct cm_buf *ops)
{
    size_t total = REDO_HDR + ops->len;
    size_t n = (total + REDO_ALIGN - 1) & ~(REDO_ALIGN - 1);
    uint8_t *b = kv->block;
    ssize_t w;

    if (n > REDO_HALF) {
        return 1;
    }
    cm_put_le32(b, REDO_MAGIC);
    cm_put_le64(b + 8, txnid);
    cm_put_le32(b + 16, (uint32_t)ops->len);
    memcpy(b + REDO_HDR, ops->p, ops->len);
    memset(b + total, 0, n - total);
    cm_put_le32(b + 4, cm_crc32c(0, b + 8, total - 8));
    w = pwrite(kv->redo_fd, b, n, (off_t)((txnid & 1) * REDO_HALF));
    if (w != (ssize_t)n) {
        return w < 0 ? -errno : -EIO;
    }
    return 0;
}

/* The txn id of the valid record in half h of log[2 * REDO_HALF], or 0. */
static uint64_t
redo_valid(const uint8_t *log, int h, size_t *len)
{
    const uint8_t *b = log + (size_t)h * REDO_HALF;

    *len = cm_get_le32(b + 16);
    if (cm_get_le32(b) != REDO_MAGIC || *len > REDO_HALF - REDO_HDR ||
        cm_get_le32(b + 4) != cm_crc32c(0, b + 8, REDO_HDR - 8 + *len)) {
        return 0;
    }
    return cm_get_le64(b + 8);
}

/* Applies one record's ops in a write txn of its own, synced. */
static int
redo_apply(struct cm_kv *kv, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    MDB_txn *txn;
    int rc = mdb_txn_begin(kv->env, NULL, 0, &txn);

    while (rc == 0 && p < end) {
        if (end - p < 10) {
            rc = MDB_CORRUPTED;
            break;
        }
        int op = p[0], table = p[1];
        size_t klen = cm_get_le32(p + 2), vlen = cm_get_le32(p + 6);
        p += 10;
        if (table >= kv->ntables || klen > (size_t)(end - p) || vlen > (size_t)(end - p) - klen) {
            rc = MDB_CORRUPTED;
            break;
        }
        MDB_val k = {klen, (void *)(uintptr_t)p}, v = {vlen, (void *)(uintptr_t)(p + klen)};
        if (op == REDO_PUT) {
            rc = mdb_put(txn, kv->dbi[table], &k, &v, 0);
        } else if (op == REDO_DEL) {
            rc = mdb_del(txn, kv->dbi[table], &k, NULL);
            rc = rc == MDB_NOTFOUND ? 0 : rc;
        } else {
            rc = MDB_CORRUPTED;
        }
        p += klen + vlen;
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    return rc == 0 ? mdb_env_sync(kv->env, 1) : rc;
}

/* Zero-fills path's two halves and makes them durable, so that later
 * O_DIRECT writes overwrite allocated blocks (no metadata to flush). */
static int
redo_reset(const char *path, const char *dir)
{
    uint8_t *zero = cm_calloc(1, REDO_HALF);
    int fd, ret = 0;

    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(zero);
        return -errno;
    }
    if (ftruncate(fd, (off_t)(2 * REDO_HALF)) != 0 ||
        pwrite(fd, zero, REDO_HALF, 0) != (ssize_t)REDO_HALF ||
        pwrite(fd, zero, REDO_HALF, (off_t)REDO_HALF) != (ssize_t)REDO_HALF || fsync(fd) != 0) {
        ret = -errno;
    }
    close(fd);
    free(zero);
    fd = ret == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        ret = fsync(fd) != 0 ? -errno : 0;
        close(fd);
    }
    return ret;
}

/*
 * Replays the records newer than last (the store's last txn before open),
 * syncs the store, zeroes the log and opens it for O_DIRECT writes. 0 (with
 * redo_fd -1 when it cannot be opened so), or an LMDB or errno code.
 */
static int
redo_open(struct cm_kv *kv, const char *dir, uint64_t last)
{
    char path[PATH_MAX];
    uint8_t *log;
    ssize_t got = 0;
    int fd, rc = 0, replayed = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s/redo.log", dir) >= sizeof(path)) {
        return ENAMETOOLONG;
    }
    log = cm_calloc(2, REDO_HALF);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        got = pread(fd, log, 2 * REDO_HALF, 0);
        close(fd);
    }
    if (got == (ssize_t)(2 * REDO_HALF)) {
        size_t len[2];
        uint64_t t[2] = {redo_valid(log, 0, &len[0]), redo_valid(log, 1, &len[1])};
        int first = t[0] <= t[1] ? 0 : 1;
        for (int i = 0; i < 2 && rc == 0; i++) {
            int h = i == 0 ? first : 1 - first;
            if (t[h] <= last) {
                continue;
            }
            if (t[h] != last + 1) {
                CM_WARN("kv: redo record of txn %llu does not follow the store's %llu dir=%s",
                        (unsigned long long)t[h], (unsigned long long)last, dir);
                break;
            }
            rc = redo_apply(kv, log + (size_t)h * REDO_HALF + REDO_HDR, len[h]);
            last = t[h];
            replayed++;
        }
    }
    free(log);
    if (rc != 0) {
        CM_ERROR("kv: redo replay failed dir=%s err=%s", dir, mdb_strerror(rc));
        return rc;
    }
    if (replayed > 0) {
        CM_INFO("kv: replayed %d transaction(s) from the redo log dir=%s", replayed, dir);
    }
    rc = mdb_env_sync(kv->env, 1);
    if (rc == 0) {
        rc = redo_reset(path, dir);
        rc = rc < 0 ? -rc : rc;
    }
    if (rc != 0) {
        return rc;
    }
    kv->redo_fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (kv->redo_fd < 0) {
        return 0; /* no O_DIRECT here: the caller goes without the log */
    }
    if (posix_memalign((void **)&kv->block, REDO_ALIGN, REDO_HALF) != 0) {
        kv->block = NULL;
        return ENOMEM;
    }
    return 0;
}

int
cm_kv_open(const char *dir, size_t map_size, const char *const *tables, int ntables, int flags,
           struct cm_kv **out)
{
    struct cm_kv *kv = NULL;
    MDB_txn *txn = NULL;
    MDB_envinfo info;
    unsigned int envflags = MDB_NOTLS;
    int rc, ret, i;

    *out = NULL;
    if (dir == NULL || dir[0] == '\0' || ntables < 1 || ntables > 256 || tables == NULL) {
        return CM_E_BADARG;
    }
    ret = mkdir_p(dir);
    if (ret != 0) {
        CM_ERROR("kv: cannot create dir=%s err=%s", dir, cm_errname(ret));
        return ret;
    }
    if (flags & CM_KV_NOSYNC) {
        envflags |= MDB_NOSYNC;
    } else if (flags & CM_KV_REDO) {
        envflags |= MDB_NOMETASYNC;
    }
    kv = cm_calloc(1, sizeof(*kv) + (size_t)ntables * sizeof(MDB_dbi));
    kv->ntables = ntables;
    kv->redo_fd = -1;
    pthread_mutex_init(&kv->redo, NULL);
    rc = mdb_env_create(&kv->env);
    if (rc != 0) {
        kv->env = NULL;
        goto fail;
    }
    rc = mdb_env_set_mapsize(kv->env, map_size ? map_size : KV_DEFAULT_MAP);
    if (rc == 0) {
        rc = mdb_env_set_maxdbs(kv->env, (MDB_dbi)ntables);
    }
    if (rc == 0) {
        rc = mdb_env_open(kv->env, dir, envflags, 0644);
    }
    if (rc == 0) {
        rc = mdb_env_info(kv->env, &info);
    }
    if (rc == 0) {
        rc = mdb_txn_begin(kv->env, NULL, 0, &txn);
    }
    for (i = 0; rc == 0 && i < ntables; i++) {
        rc = mdb_dbi_open(txn, tables[i], MDB_CREATE, &kv->dbi[i]);
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (rc == 0 && (envflags & MDB_NOMETASYNC)) {
        rc = redo_open(kv, dir, info.me_last_txnid);
        if (rc == 0 && kv->redo_fd < 0) {
            CM_WARN("kv: no O_DIRECT for the redo log, commits flush twice dir=%s", dir);
            rc = mdb_env_set_flags(kv->env, MDB_NOMETASYNC, 0);
        }
    }
    if (rc != 0) {
        goto fail;
    }
    *out = kv;
    return 0;
fail:
    CM_ERROR("kv: open failed dir=%s err=%s", dir, mdb_strerror(rc));
    if (txn != NULL) {
        mdb_txn_abort(txn);
    }
    if (kv->env != NULL) {
        mdb_env_close(kv->env);
    }
    if (kv->redo_fd >= 0) {
        close(kv->redo_fd);
    }
    pthread_mutex_destroy(&kv->redo);
    free(kv->block);
    free(kv);
    return kv_err(rc);
}

void
cm_kv_close(struct cm_kv *kv)
{
    if (kv == NULL) {
        return;
    }
    mdb_env_close(kv->env);
    if (kv->redo_fd >= 0) {
        close(kv->redo_fd);
    }
    pthread_mutex_destroy(&kv->redo);
    free(kv->block);
    free(kv);
}

int
cm_kv_sync(struct cm_kv *kv)
{
    return kv_err(mdb_env_sync(kv->env, 1));
}

int
cm_kv_begin(struct cm_kv *kv, int write, struct cm_kv_txn **out)
{
    struct cm_kv_txn *t;
    int rc;

    *out = NULL;
    t = cm_malloc(sizeof(*t));
    t->kv = kv;
    cm_buf_init(&t->redo);
    rc = mdb_txn_begin(kv->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc != 0) {
        CM_ERROR("kv: begin failed err=%s", mdb_strerror(rc));
        free(t);
        return kv_err(rc);
    }
    *out = t;
    return 0;
}

int
cm_kv_commit(struct cm_kv_txn *txn)
{
    struct cm_kv *kv = txn->kv;
    uint64_t id = mdb_txn_id(txn->txn);
    int rc, full = 0, logged = txn->redo.len > 0;

    /* A failed commit releases LMDB's writer lock before its record is
     * undone: the next writer, which gets the same txn id and half, waits
     * here for that. */
    if (logged) {
        pthread_mutex_lock(&kv->redo);
        rc = redo_write(kv, id, &txn->redo);
        if (rc < 0) {
            /* Durable the slow way instead. The half holds a torn record,
             * which its CRC rejects, or an older one, never replayed. */
            CM_WARN("kv: redo log write failed, flushing twice err=%s", cm_errname(rc));
        }
        full = rc != 0; /* too big for a half, or not written */
    }
    rc = mdb_txn_commit(txn->txn);
    if (rc == 0 && full) {
        rc = mdb_env_sync(kv->env, 1); /* not in the log: flush the meta page */
    } else if (rc != 0 && logged) {
        /* Failed: its record must not be replayed after a crash. */
        memset(kv->block, 0, REDO_ALIGN);
        (void)!pwrite(kv->redo_fd, kv->block, REDO_ALIGN, (off_t)((id & 1) * REDO_HALF));
    }
    if (rc != 0) {
        CM_ERROR("kv: commit failed err=%s", mdb_strerror(rc));
    }
    if (logged) {
        pthread_mutex_unlock(&kv->redo);
    }
    cm_buf_fini(&txn->redo);
    free(txn);
    return kv_err(rc);
}

void
cm_kv_abort(struct cm_kv_txn *txn)
{
    if (txn == NULL) {
        return;
    }
    mdb_txn_abort(txn->txn);
    cm_buf_fini(&txn->redo);
    free(txn);
}

static int
check_table(const struct cm_kv_txn *txn, int table)
{
    return (table >= 0 && table < txn->kv->ntables) ? 0 : CM_E_BADARG;
}

int
cm_kv_get(struct cm_kv_txn *txn, int table, const void *key, size_t klen, const void **val,
          size_t *vlen)
{
    MDB_val k = {klen, (void *)(uintptr_t)key}, v;
    int rc;

    if (check_table(txn, table) != 0 || klen == 0) {
        return CM_E_BADARG;
    }
    rc = mdb_get(txn->txn, txn->kv->dbi[table], &k, &v);
    if (rc != 0) {
        return kv_err(rc);
    }
    *val = v.mv_data;
    *vlen = v.mv_size;
    return 0;
}

int
cm_kv_put(struct cm_kv_txn *txn, int table, const void *key, size_t klen, const void *val,
          size_t vlen)
{
    MDB_val k = {klen, (void *)(uintptr_t)key}, v = {vlen, (void *)(uintptr_t)val};
    int rc;

    if (check_table(txn, table) != 0 || klen == 0 ||
        klen > (size_t)mdb_env_get_maxkeysize(txn->kv->env)) {
        return CM_E_BADARG;
    }
    rc = mdb_put(txn->txn, txn->kv->dbi[table], &k, &v, 0);
    if (rc != 0) {
        if (rc == MDB_MAP_FULL) {
            CM_WARN("kv: map full; abort the txn or raise the map size");
        }
        return kv_err(rc);
    }
    if (txn->kv->redo_fd >= 0) {
        redo_add(txn, REDO_PUT, table, key, klen, val, vlen);
    }
    return 0;
}

int
cm_kv_del(struct cm_kv_txn *txn, int table, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)(uintptr_t)key};
    int rc;

    if (check_table(txn, table) != 0 || klen == 0) {
        return CM_E_BADARG;
    }
    rc = mdb_del(txn->txn, txn->kv->dbi[table], &k, NULL);
    if (rc == 0 && txn->kv->redo_fd >= 0) {
        redo_add(txn, REDO_DEL, table, key, klen, NULL, 0);
    }
    return kv_err(rc);
}

int
cm_kv_scan(struct cm_kv_txn *txn, int table, const void *start, size_t slen,
           int (*cb)(void *arg, const void *key, size_t klen, const void *val, size_t vlen),
           void *arg)
{
    MDB_cursor *cur = NULL;
    MDB_val k = {slen, (void *)(uintptr_t)start}, v;
    int rc, ret = 0;

    if (check_table(txn, table) != 0) {
        return CM_E_BADARG;
    }
    rc = mdb_cursor_open(txn->txn, txn->kv->dbi[table], &cur);
    if (rc != 0) {
        return kv_err(rc);
    }
    if (start != NULL && slen > 0) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    } else {
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    }
    while (rc == 0) {
        ret = cb(arg, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
        if (ret != 0) {
            goto out;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (rc != MDB_NOTFOUND) {
        ret = kv_err(rc);
    }
out:
    mdb_cursor_close(cur);
    return ret;
}
