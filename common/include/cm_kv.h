/*
 * cm_kv.h - an embedded transactional key-value store (the LMDB adapter).
 *
 * Tables are named at open time and addressed by their index in that list.
 * One writer at a time (others block), any number of readers. Values
 * returned by cm_kv_get/scan are borrowed until the transaction ends.
 * A read transaction must stay on the thread that began it.
 */
#ifndef CM_KV_H
#define CM_KV_H

#include <stddef.h>

struct cm_kv;
struct cm_kv_txn;

/* Creates dir if needed. map_size in bytes (0 = 4 GiB). tables: ntables
 * names, borrowed for the call (at most 256). flags: CM_KV_NOSYNC to skip
 * fsync on commit (only for data that can be rebuilt); CM_KV_REDO for one
 * flush per commit instead of two, through a redo log in dir (cm_kv.c). */
#define CM_KV_NOSYNC 1
#define CM_KV_REDO 2
int cm_kv_open(const char *dir, size_t map_size, const char *const *tables, int ntables,
               int flags, struct cm_kv **out);
void cm_kv_close(struct cm_kv *kv); /* NULL is a no-op */
/* Forces buffered commits to disk (for CM_KV_NOSYNC stores). */
int cm_kv_sync(struct cm_kv *kv);

int cm_kv_begin(struct cm_kv *kv, int write, struct cm_kv_txn **out);
int cm_kv_commit(struct cm_kv_txn *txn); /* frees txn, also on error */
void cm_kv_abort(struct cm_kv_txn *txn); /* frees txn; NULL is a no-op */

/* CM_E_NOTFOUND if absent. */
int cm_kv_get(struct cm_kv_txn *txn, int table, const void *key, size_t klen,
              const void **val, size_t *vlen);
int cm_kv_put(struct cm_kv_txn *txn, int table, const void *key, size_t klen,
              const void *val, size_t vlen);
/* CM_E_NOTFOUND if absent. */
int cm_kv_del(struct cm_kv_txn *txn, int table, const void *key, size_t klen);
/* In key order from the first key >= start (start NULL = from the first).
 * cb returns non-zero to stop; that value is returned. */
int cm_kv_scan(struct cm_kv_txn *txn, int table, const void *start, size_t slen,
               int (*cb)(void *arg, const void *key, size_t klen, const void *val,
                         size_t vlen),
               void *arg);

#endif
