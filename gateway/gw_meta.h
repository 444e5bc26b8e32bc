/*
 * gw_meta.h - the gateway's metadata store (private to gateway/), kept in
 * LMDB through cm_kv.
 *
 * Tables:
 *   objects  (tenant u32 BE, key bytes) -> layout record (incl. version)
 *   tombs    (tenant u32 BE, key bytes) -> u64 version of the last delete,
 *            so versions stay monotonic per key across a delete
 *   pending  object id u64 BE -> (tenant u32 BE, key bytes): committed
 *            versions whose chunks are not all persisted in COS yet
 *   state    "last" -> the last controller state JSON (start without it);
 *            other names -> a u64 (gw_meta_mark_*)
 *
 * Threads: reads (gw_meta_get, _list, _scan_pending, _tenants, _state_load)
 * from any thread, each in its own read transaction. Writes go through a
 * batch (one LMDB write transaction); LMDB serializes writers, and the
 * front keeps to one writing thread (the committer) plus short tenant
 * purges and state saves from the state thread.
 */
#ifndef GW_META_H
#define GW_META_H

#include <stddef.h>
#include <stdint.h>

#include "gw_engine.h"

struct gw_meta;
struct gw_meta_batch;

/* dir is created if needed; map_size 0 = 4 GiB. Commits are fsync'd. */
int gw_meta_open(const char *dir, size_t map_size, struct gw_meta **out);
void gw_meta_close(struct gw_meta *m); /* NULL is a no-op */

/* Record (de)serialization, exposed for tests. enc: buf of
 * GW_META_REC_MAX bytes; returns the length. dec: 0 or CM_E_PROTO. */
#define GW_META_REC_MAX (64 + 4 * GW_MAX_HOLDERS)
size_t gw_meta_encode(const struct gw_layout *l, uint8_t *buf);
int gw_meta_decode(const void *buf, size_t len, struct gw_layout *out);

/* The current version of (tenant, key): 0 or CM_E_NOTFOUND. */
int gw_meta_get(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                struct gw_layout *out);

/*
 * Up to limit objects of tenant whose key starts with prefix and, when
 * after is non-NULL, sorts after it (bytewise), in key order. cb gets
 * borrowed pointers valid for the call. *more: whether another object
 * matches past the last one returned. 0 or a negative code.
 */
typedef void (*gw_meta_list_cb)(void *arg, const char *key, size_t klen, const struct gw_layout *l);
int gw_meta_list(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen,
                 const char *after, size_t alen, unsigned limit, gw_meta_list_cb cb, void *arg,
                 int *more);

/* Calls cb for the live layout of every pending object (for
 * gw_engine_track at startup). Pending entries whose key now holds another
 * version are skipped. */
int gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_layout *l),
                         void *arg);

/* Distinct tenant ids that own objects or tombstones, ascending. */
int gw_meta_tenants(struct gw_meta *m, void (*cb)(void *arg, uint32_t tenant), void *arg);

/* The cached controller state: *json malloc'd (transferred), NUL-terminated;
 * CM_E_NOTFOUND when none. */
int gw_meta_state_load(struct gw_meta *m, char **json, size_t *len);
int gw_meta_state_save(struct gw_meta *m, const char *json, size_t len);
/* A named u64 of the state table (e.g. the migration's finished epoch):
 * 0, CM_E_NOTFOUND, or a store error. */
int gw_meta_mark_get(struct gw_meta *m, const char *name, uint64_t *v);
int gw_meta_mark_set(struct gw_meta *m, const char *name, uint64_t v);

/* Write batches: one write transaction. commit frees b (also on error);
 * abort frees b; after an operation returned an error other than
 * CM_E_NOTFOUND, the batch can only be aborted. */
int gw_meta_batch_begin(struct gw_meta *m, struct gw_meta_batch **out);
int gw_meta_batch_commit(struct gw_meta_batch *b);
void gw_meta_batch_abort(struct gw_meta_batch *b);

/*
 * Commits l (l->tenant) as the newest version of key: l->version is set to
 * (current version or last deleted version) + 1. When a version existed it
 * is copied to *old and *had_old = 1 (its chunks are the caller's to
 * delete). l is added to pending unless fully persisted.
 */
int gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
                struct gw_layout *old, int *had_old);
/* Deletes the current version (copied to *old) and keeps a tombstone.
 * CM_E_NOTFOUND when the key has none. */
int gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                   struct gw_layout *old);
/*
 * The engine reported a new layout of l->object: stores holders and
 * persisted bits if that object is still the live version of its key (the
 * version number is kept), and drops it from pending once fully
 * persisted (without rewriting the record when the holders are
 * unchanged). *stale = 1 when the object is no longer live (nothing stored).
 */
int gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, int *stale);
/*
 * A version moved to other holders (l: tenant, object, holders, persisted
 * bits): stored if key's live version is still l->object (the version
 * number is kept); *stale = 1 when it is not (nothing stored).
 */
int gw_meta_move(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
                 int *stale);
/*
 * Deletes up to max objects (and tombstones) of tenant; cb gets each
 * deleted layout (borrowed). *left = 1 when more remain.
 */
int gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
                  void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left);

/* All k + m persisted bits of l set. */
int gw_layout_persisted(const struct gw_layout *l);

#endif
