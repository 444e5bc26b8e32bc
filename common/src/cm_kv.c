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
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_kv.h"
#include "cm_log.h"

#define KV_DEFAULT_MAP ((size_t)4 << 30)

struct cm_kv {
    MDB_env *env;
    int ntables;
    MDB_dbi dbi[];
};

struct cm_kv_txn {
    struct cm_kv *kv;
    MDB_txn *txn;
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

int
cm_kv_open(const char *dir, size_t map_size, const char *const *tables, int ntables, int flags,
           struct cm_kv **out)
{
    struct cm_kv *kv = NULL;
    MDB_txn *txn = NULL;
    unsigned int envflags = MDB_NOTLS;
    int rc, ret, i;

    *out = NULL;
    if (dir == NULL || dir[0] == '\0' || ntables < 1 || tables == NULL) {
        return CM_E_BADARG;
    }
    ret = mkdir_p(dir);
    if (ret != 0) {
        CM_ERROR("kv: cannot create dir=%s err=%s", dir, cm_errname(ret));
        return ret;
    }
    if (flags & CM_KV_NOSYNC) {
        envflags |= MDB_NOSYNC;
    }
    kv = cm_calloc(1, sizeof(*kv) + (size_t)ntables * sizeof(MDB_dbi));
    kv->ntables = ntables;
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
        rc = mdb_txn_begin(kv->env, NULL, 0, &txn);
    }
    for (i = 0; rc == 0 && i < ntables; i++) {
        rc = mdb_dbi_open(txn, tables[i], MDB_CREATE, &kv->dbi[i]);
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
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
    int rc = mdb_txn_commit(txn->txn);

    if (rc != 0) {
        CM_ERROR("kv: commit failed err=%s", mdb_strerror(rc));
    }
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
    return 0;
}

int
cm_kv_del(struct cm_kv_txn *txn, int table, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)(uintptr_t)key};

    if (check_table(txn, table) != 0 || klen == 0) {
        return CM_E_BADARG;
    }
    return kv_err(mdb_del(txn->txn, txn->kv->dbi[table], &k, NULL));
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
