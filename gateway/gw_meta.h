/*
 * gw_meta.h - the gateway's metadata store (private to gateway/), kept in
 * LMDB through cm_kv.
 *
 * Tables:
 *   objects   (tenant u32 BE, key bytes) -> version record (layout, commit
 *             time, and what S3 keeps: MD5, stored headers, part count)
 *   tombs     (tenant u32 BE, key bytes) -> u64 version of the last delete,
 *             so versions stay monotonic per key across a delete
 *   pending   object id u64 BE -> (tenant u32 BE, key bytes): committed
 *             versions whose chunks are not all persisted in COS yet
 *   state     "last" -> the last controller state JSON (start without it)
 *   composite (composite id u64 BE, part index u32 BE) -> the layout of
 *             one part of a composite version (a completed multipart upload)
 *   cpending  part object id u64 BE -> (composite id, part index): the
 *             parts of composite versions not all persisted in COS yet
 *   buckets, uploads  (tenant u32 BE, name) -> a value the caller defines
 *             (the S3 front door's buckets and multipart uploads)
 *
 * Keys that begin with a NUL byte are internal (the parts of multipart
 * uploads in progress): the tenant API cannot name them (keys hold no
 * control characters), LIST leaves them out unless its prefix names them,
 * and deleting one leaves no tombstone. They are ordinary versions
 * otherwise: erasure-coded, pending until persisted, purged with their
 * tenant.
 *
 * Threads: reads (gw_meta_get*, _list, _scan*, _aux_*, _scan_pending,
 * _tenants, _state_load) from any thread, each in its own read transaction.
 * Writes go through a batch (one LMDB write transaction); LMDB serializes
 * writers, and the front keeps to one writing thread (the committer) plus
 * short tenant purges and state saves from the state thread.
 */
#ifndef GW_META_H
#define GW_META_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"
#include "gw_engine.h"

struct gw_meta;
struct gw_meta_batch;

/* dir is created if needed; map_size 0 = 4 GiB. Commits are fsync'd. */
int gw_meta_open(const char *dir, size_t map_size, struct gw_meta **out);
void gw_meta_close(struct gw_meta *m); /* NULL is a no-op */

#define GW_META_HDRS_MAX 4096 /* stored headers of one version */

/*
 * What a version keeps beside its layout. A composite version (nparts > 0)
 * has a layout with k == 0: no chunks of its own; its object id names its
 * parts in the composite table, and its size and etag are the whole
 * object's.
 */
struct gw_meta_attrs {
    uint64_t mtime_ms; /* commit time, unix ms (0: a record from before it was kept) */
    int has_md5;
    uint8_t md5[16];  /* the S3 ETag: MD5 of the bytes, or of the parts' MD5s */
    uint32_t nparts;  /* > 0: composite, of that many parts */
    const char *hdrs; /* "name\0value\0"..., lowercase names; NULL when none */
    size_t hdrs_len;  /* <= GW_META_HDRS_MAX */
};

/* A composite version's layout has no chunks of its own. */
static inline int
gw_layout_composite(const struct gw_layout *l)
{
    return l->k == 0;
}

/*
 * Record (de)serialization, exposed for tests. enc: buf of GW_META_REC_MAX
 * bytes, attrs may be NULL (nothing beside the layout); writes format 2 and
 * returns the length. dec: formats 1 and 2; 0 or CM_E_PROTO; attrs (may be
 * NULL) gets what the record keeps, its hdrs borrowed from buf.
 */
#define GW_META_REC_MAX (64 + 4 * GW_MAX_HOLDERS + 16 + 4 + 2 + GW_META_HDRS_MAX)
size_t gw_meta_encode(const struct gw_layout *l, const struct gw_meta_attrs *attrs, uint8_t *buf);
int gw_meta_decode(const void *buf, size_t len, struct gw_layout *out);
int gw_meta_decode_attrs(const void *buf, size_t len, struct gw_layout *out,
                         struct gw_meta_attrs *attrs);

/* The current version of (tenant, key): 0 or CM_E_NOTFOUND. */
int gw_meta_get(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                struct gw_layout *out);

/* A version with all it keeps, and its parts when composite. */
struct gw_meta_obj {
    struct gw_layout lay;
    struct gw_meta_attrs a; /* a.hdrs points into hdrs */
    char hdrs[GW_META_HDRS_MAX];
    struct gw_layout *parts; /* a.nparts layouts in object order (owned), or NULL */
};
/* The current version of (tenant, key) in one read transaction: 0,
 * CM_E_NOTFOUND, -ENOMEM. Release with gw_meta_obj_fini (also after an
 * error). */
int gw_meta_get_obj(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                    struct gw_meta_obj *out);
void gw_meta_obj_fini(struct gw_meta_obj *o);

/*
 * Objects of tenant whose key starts with prefix and sorts after after
 * (when non-NULL), in key order, in one read transaction, until cb returns
 * non-zero. Internal keys are left out unless prefix begins with NUL. cb
 * gets borrowed pointers valid for the call. 0 or a negative code.
 */
typedef int (*gw_meta_scan_cb)(void *arg, const char *key, size_t klen, const struct gw_layout *l,
                               const struct gw_meta_attrs *a);
int gw_meta_scan(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen,
                 const char *after, size_t alen, gw_meta_scan_cb cb, void *arg);

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

/* Calls cb for the live layout of every pending object and pending part of
 * a composite version (for gw_engine_track at startup). Pending entries
 * whose key now holds another version are skipped. */
int gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_layout *l),
                         void *arg);

/* Distinct tenant ids that own objects, tombstones, buckets or uploads,
 * ascending. */
int gw_meta_tenants(struct gw_meta *m, void (*cb)(void *arg, uint32_t tenant), void *arg);

/* The cached controller state: *json malloc'd (transferred), NUL-terminated;
 * CM_E_NOTFOUND when none. */
int gw_meta_state_load(struct gw_meta *m, char **json, size_t *len);
int gw_meta_state_save(struct gw_meta *m, const char *json, size_t len);

/* ---- buckets and uploads: a value per (tenant, name) ---- */

enum gw_meta_aux { GW_META_BUCKETS, GW_META_UPLOADS };
#define GW_META_AUX_NAME_MAX 400 /* bytes of a name */

/* name's value copied into val (appended): 0 or CM_E_NOTFOUND. */
int gw_meta_aux_get(struct gw_meta *m, enum gw_meta_aux t, uint32_t tenant, const char *name,
                    size_t nlen, struct cm_buf *val);
/* Every entry of tenant in name order until cb returns non-zero (borrowed
 * pointers, valid for the call), in one read transaction. */
typedef int (*gw_meta_aux_cb)(void *arg, const char *name, size_t nlen, const void *val,
                              size_t vlen);
int gw_meta_aux_scan(struct gw_meta *m, enum gw_meta_aux t, uint32_t tenant, gw_meta_aux_cb cb,
                     void *arg);

/* ---- writes ---- */

/* Write batches: one write transaction. commit frees b (also on error);
 * abort frees b; after an operation returned an error other than
 * CM_E_NOTFOUND or CM_E_EXISTS, the batch can only be aborted. Every
 * version a batch commits gets its begin time as commit time. */
int gw_meta_batch_begin(struct gw_meta *m, struct gw_meta_batch **out);
int gw_meta_batch_commit(struct gw_meta_batch *b);
void gw_meta_batch_abort(struct gw_meta_batch *b);
/* The batch's commit time (unix ms). */
uint64_t gw_meta_batch_time(const struct gw_meta_batch *b);

/* The version a write replaced or deleted: its chunks are the caller's to
 * delete, those of each part for a composite. */
struct gw_meta_old {
    int had;
    struct gw_layout lay;
    struct gw_layout *parts; /* composite: nparts layouts (owned, free()); else NULL */
    uint32_t nparts;
};
/* Frees parts and clears old. */
void gw_meta_old_reset(struct gw_meta_old *old);

/*
 * Commits l (l->tenant) as the newest version of key, with attrs (may be
 * NULL; hdrs copied, and not borrowed from this batch: the put writes
 * before it copies them; mtime_ms and nparts ignored): l->version is set to
 * (current version or last deleted version) + 1. The version it replaced,
 * if any, goes to *old (reset first). l is added to pending unless fully
 * persisted. l must not be composite (see gw_meta_put_composite).
 */
int gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
                const struct gw_meta_attrs *attrs, struct gw_meta_old *old);
/*
 * Commits a composite version of key whose parts are the versions now at
 * the internal keys pkeys[i] (pklens[i]), in order: they leave the objects
 * table without their chunks being deleted (the new version owns them; a
 * part not yet persisted moves to cpending). l: tenant, size and etag set;
 * its object id is chosen here, version as gw_meta_put; attrs as
 * gw_meta_put, with nparts set to n. CM_E_NOTFOUND when a part is missing
 * (the batch must then be aborted).
 */
int gw_meta_put_composite(struct gw_meta_batch *b, const char *key, size_t klen,
                          struct gw_layout *l, const struct gw_meta_attrs *attrs,
                          const char *const *pkeys, const size_t *pklens, uint32_t n,
                          struct gw_meta_old *old);
/* Deletes the current version (to *old, reset first) and keeps a tombstone
 * (none for an internal key). CM_E_NOTFOUND when the key has none. */
int gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                   struct gw_meta_old *old);
/* Reads inside the batch: as gw_meta_get, attrs (may be NULL) borrowed
 * until the next write; as gw_meta_scan. */
int gw_meta_batch_get(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                      struct gw_layout *out, struct gw_meta_attrs *attrs);
int gw_meta_batch_scan(struct gw_meta_batch *b, uint32_t tenant, const char *prefix, size_t plen,
                       gw_meta_scan_cb cb, void *arg);
/* Buckets and uploads inside the batch: get (val borrowed until the next
 * write; 0 or CM_E_NOTFOUND), put (CM_E_EXISTS when there, unless
 * replace), del (CM_E_NOTFOUND when absent). */
int gw_meta_batch_aux_get(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                          const char *name, size_t nlen, const void **val, size_t *vlen);
int gw_meta_batch_aux_put(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                          const char *name, size_t nlen, const void *val, size_t vlen, int replace);
int gw_meta_batch_aux_del(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                          const char *name, size_t nlen);
/* As gw_meta_aux_scan inside the batch (no writes from cb). */
int gw_meta_batch_aux_scan(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                           gw_meta_aux_cb cb, void *arg);
/*
 * The engine reported a new layout of l->object: stores holders and
 * persisted bits if that object is still the live version of its key, or
 * a part of the live composite version (the version number is kept), and
 * drops it from pending once fully persisted (without rewriting the record
 * when the holders are unchanged). *stale = 1 when the object is no longer
 * live (nothing stored).
 */
int gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, int *stale);
/*
 * Deletes up to max objects (and tombstones, buckets, uploads) of tenant;
 * cb gets each deleted layout with chunks (borrowed: a composite's parts).
 * *left = 1 when more remain.
 */
int gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
                  void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left);

/* All k + m persisted bits of l set. */
int gw_layout_persisted(const struct gw_layout *l);

#endif
