/*
 * gw_meta.h - the gateway's metadata store (private to gateway/), kept in
 * LMDB through cm_kv, and the records it and the nodes' insertion logs
 * hold: layout records (formats 1 and 2) and META records (pure codecs).
 *
 * Tables:
 *   objects  (tenant u32 BE, key bytes) -> layout record (incl. version)
 *   tombs    (tenant u32 BE, key bytes) -> u64 version of the last delete,
 *            so versions stay monotonic per key across a delete
 *   pending  object id u64 BE -> (tenant u32 BE, key bytes): committed
 *            versions whose chunks are not all persisted in COS, or whose
 *            META record is not logged yet;
 *            object id u64 BE, version u64 BE -> (tenant u32 BE, m u8, key
 *            bytes): deletes whose tombstone record is not logged yet
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

/*
 * The layout record (the objects table's values, and the rec of a META
 * record). Format 2 carries the chunks' tags, format 1 does not (every tag
 * unknown); both decode. A record is at most GW_META_REC_LIMIT bytes (a
 * group member's length is a u16): a layout whose tags would not fit (past
 * ~16,000 chunks: 1 GiB at 4+2 has 1,536) is written as format 1.
 * rec_len: the bytes encode writes to buf. decode: 0 or CM_E_PROTO, the
 * tags skipped (out->tags NULL); decode_tags: the same with out->tags
 * malloc'd (out owns it: gw_layout_fini; NULL for format 1), or -ENOMEM.
 */
#define GW_META_REC_LIMIT 65535
size_t gw_meta_rec_len(const struct gw_layout *l);
size_t gw_meta_encode(const struct gw_layout *l, uint8_t *buf);
int gw_meta_decode(const void *buf, size_t len, struct gw_layout *out);
int gw_meta_decode_tags(const void *buf, size_t len, struct gw_layout *out);

/*
 * A META record (SMS-CONTRACT.md): what the gateway has nodes append to
 * their insertion logs (CM_OP_META), and --rebuild-meta reads back.
 * Little-endian: u8 kind | u32 tenant | u16 key_len | key | u64 version |
 * VERSION only: u32 rec_len | the layout record (any format above).
 * For one (tenant, key) the highest version wins, and a tombstone wins
 * over a version record of the same number (it deleted that version).
 */
enum gw_mrec_kind {
    GW_MREC_VERSION = 1,
    GW_MREC_TOMB = 2,
};
struct gw_mrec {
    uint8_t kind;
    uint32_t tenant;
    const char *key; /* klen bytes, 1..65535; borrowed */
    size_t klen;
    uint64_t version;
    const uint8_t *rec; /* VERSION: the layout record; borrowed */
    size_t rec_len;
};
/* Bytes m encodes to; encode writes them to out. */
size_t gw_mrec_len(const struct gw_mrec *m);
void gw_mrec_encode(const struct gw_mrec *m, uint8_t *out);
/* 0 with *out (pointers into buf), or CM_E_PROTO: an unknown kind, an empty
 * key, or a length that does not match the bytes exactly. The layout
 * record is not looked into. */
int gw_mrec_decode(const void *buf, size_t len, struct gw_mrec *out);
/* Whether a replaces b as what their (tenant, key) is. */
int gw_mrec_newer(const struct gw_mrec *a, const struct gw_mrec *b);

/* The current version of (tenant, key), its tags included (out owns them:
 * gw_layout_fini): 0, CM_E_NOTFOUND or -ENOMEM. */
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

/* What pending holds: a committed version whose chunks are not all
 * persisted or whose META record is not logged yet, or a tombstone whose
 * META record is not logged yet. */
struct gw_pending {
    int tomb;
    const char *key; /* borrowed for the call */
    size_t klen;
    /* version: the live layout, tags included; tomb: tenant, object,
     * version and m of the deleted version. Borrowed for the call. */
    const struct gw_layout *lay;
};
/* Calls cb for every pending version and tombstone (for gw_engine_track
 * and gw_engine_tombstone at startup). Pending versions whose key now
 * holds another version are skipped. */
int gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_pending *p),
                         void *arg);

/* *empty = 1 when no table but state holds a row (a fresh store). */
int gw_meta_is_empty(struct gw_meta *m, int *empty);

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
 * is copied to *old (tags skipped) and *had_old = 1 (its chunks are the
 * caller's to delete). l is added to pending (its META record is to go).
 */
int gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
                struct gw_layout *old, int *had_old);
/* Deletes the current version (copied to *old, tags skipped) and keeps a
 * tombstone, which pending holds until its META record is logged.
 * CM_E_NOTFOUND when the key has none. */
int gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                   struct gw_layout *old);
/*
 * The engine reported l->object (gw_engine.h, enum gw_report). CHANGED:
 * stores holders, persisted bits and tags (when l has them) if that object
 * is still a pending live version of its key (the version number is
 * kept). DONE: the same when holders or tags differ, then drops it from
 * pending. TOMB: drops the tombstone (l->object, l->version) from pending.
 * *stale = 1 when nothing was pending under that name (nothing stored).
 */
int gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, enum gw_report what,
                   int *stale);
/*
 * --rebuild-meta: stores l (l->tenant, l->version as it is; its tags when
 * it has them) as the live version of key, or (restore_tomb) the
 * tombstone of version, which keeps the next version above it. Nothing
 * becomes pending: a logged META record means every chunk was persisted.
 */
int gw_meta_restore(struct gw_meta_batch *b, const char *key, size_t klen,
                    const struct gw_layout *l);
int gw_meta_restore_tomb(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                         uint64_t version);
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
