/*
 * gw_meta.h - the gateway's metadata store (private to gateway/), kept in
 * LMDB through cm_kv, and the records it and the nodes' insertion logs
 * hold: version records (format 3; 1 and 2 read) and META records (pure
 * codecs).
 *
 * Tables:
 *   objects  (tenant u32 BE, key bytes) -> version record (layout, tags,
 *            commit time, and what S3 keeps: MD5, stored headers, parts)
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
 * Keys that begin with a NUL byte are internal: the tenant API cannot
 * name them (keys hold no control characters) and LIST leaves them out
 * unless its prefix names them. The S3 front door keeps everything in
 * them, so that its buckets, uploads and multipart objects are versions
 * like any other (committed, pending, logged in META records, rebuilt):
 *   "\0b" name                  a bucket: a record-only version
 *   "\0u" upload id             a multipart upload in progress: a
 *                               record-only version naming its object
 *   "\0p" upload id "/" nnnnn   part nnnnn of that upload: an ordinary
 *                               version, which stays when the upload
 *                               completes, as a part of the composite
 * A record-only version (k = 0) has no chunks of its own: a composite (a
 * completed multipart upload, whose parts are read at their keys), a
 * bucket or an upload. Keys named by an upload id are used once: deleting
 * one leaves no tombs row.
 *
 * Threads: reads (gw_meta_get*, _list, _scan*, _scan_pending, _tenants,
 * _state_load) from any thread, each in its own read transaction. Writes
 * go through a batch (one LMDB write transaction); LMDB serializes
 * writers, and the front keeps to one writing thread (the committer) plus
 * short tenant purges and state saves from the state thread.
 */
#ifndef GW_META_H
#define GW_META_H

#include <stddef.h>
#include <stdint.h>

#include "cm_gateway.h"
#include "gw_engine.h"
#include "gw_parse.h"

struct gw_meta;
struct gw_meta_batch;

/* dir is created if needed; map_size 0 = 4 GiB. Commits are fsync'd. */
int gw_meta_open(const char *dir, size_t map_size, struct gw_meta **out);
void gw_meta_close(struct gw_meta *m); /* NULL is a no-op */

/* ---- internal keys ---- */

#define GW_META_UPLOAD_ID_LEN 32 /* lowercase hex */
#define GW_META_PART_KEY_LEN (2 + GW_META_UPLOAD_ID_LEN + 1 + 5)
#define GW_META_PARTS_MAX 10000
/* The key of bucket name[nlen] (out: 2 + nlen bytes), of upload id (out:
 * 2 + GW_META_UPLOAD_ID_LEN), of part n (1..GW_META_PARTS_MAX) of upload
 * id (out: GW_META_PART_KEY_LEN). Each returns its length. */
size_t gw_meta_bucket_key(const char *name, size_t nlen, char *out);
size_t gw_meta_upload_key(const char *id, char *out);
size_t gw_meta_part_key(const char *id, unsigned n, char *out);

/* ---- records ---- */

#define GW_META_REC_LIMIT 65535 /* a group member's length is a u16 */
#define GW_META_HDRS_MAX 4096   /* stored headers of one version */

/*
 * What a version keeps beside its layout; every pointer borrowed. A
 * decoded record's point into its bytes.
 */
struct gw_meta_attrs {
    uint64_t mtime_ms; /* commit time, unix ms (0: a format 1 record) */
    int has_md5;
    uint8_t md5[16];  /* the S3 ETag: MD5 of the bytes, or of the parts' MD5s */
    const char *hdrs; /* "name\0value\0"..., lowercase names; NULL when none */
    size_t hdrs_len;  /* <= GW_META_HDRS_MAX */
    /* A composite (record-only): its parts are the versions at
     * gw_meta_part_key(upload, n) for the part numbers n, ascending. */
    const char *upload;   /* GW_META_UPLOAD_ID_LEN chars, or NULL */
    const uint8_t *parts; /* nparts part numbers, u16 LE each */
    uint32_t nparts;      /* 0: not a composite */
    /* An upload (record-only): the key of the object it makes. */
    const char *target;
    size_t target_len;
};

/* Part number i of a composite's attrs. */
static inline unsigned
gw_meta_part_no(const struct gw_meta_attrs *a, uint32_t i)
{
    return (unsigned)a->parts[2 * (size_t)i] | (unsigned)a->parts[2 * (size_t)i + 1] << 8;
}

/* A version without chunks of its own (a composite, a bucket, an upload):
 * no holders, stripes or tags; m says to how many nodes (m + 1) its META
 * record goes. */
static inline int
gw_layout_record_only(const struct gw_layout *l)
{
    return l->k == 0;
}

/*
 * The version record: the objects table's values, and the rec of a META
 * record. Format 3 is written; format 1 (a layout alone) still decodes,
 * with every tag unknown and no attributes, and so do both records once
 * written as format 2 (a layout and its tags; a layout, its commit time,
 * MD5 and stored headers). A record is at most
 * GW_META_REC_LIMIT bytes: past it (tags of ~16,000 chunks: 1 GiB at 4+2
 * has 1,536) the tags are left out, unknown. Attributes always fit.
 * rec_len: the bytes encode writes to buf (a may be NULL: none; a's
 * strings within their limits). decode: 0 or CM_E_PROTO, the tags
 * skipped (out->tags NULL); decode_tags: the same with out->tags
 * malloc'd (out owns it: gw_layout_fini; NULL when the record has none),
 * or -ENOMEM; decode_attrs: tags skipped, *attrs (may be NULL) pointing
 * into buf; decode_full: both.
 */
size_t gw_meta_rec_len(const struct gw_layout *l, const struct gw_meta_attrs *a);
size_t gw_meta_encode(const struct gw_layout *l, const struct gw_meta_attrs *a, uint8_t *buf);
int gw_meta_decode(const void *buf, size_t len, struct gw_layout *out);
int gw_meta_decode_tags(const void *buf, size_t len, struct gw_layout *out);
int gw_meta_decode_attrs(const void *buf, size_t len, struct gw_layout *out,
                         struct gw_meta_attrs *attrs);
int gw_meta_decode_full(const void *buf, size_t len, struct gw_layout *out,
                        struct gw_meta_attrs *attrs);
/* *out = *a with every string in one malloc'd block, *mem (the caller
 * frees it; NULL when a has none). 0 or -ENOMEM. */
int gw_meta_attrs_dup(const struct gw_meta_attrs *a, struct gw_meta_attrs *out, void **mem);

/*
 * A META record (docs/internal-api.md): what the gateway has nodes append to
 * their insertion logs (CM_OP_META), and --rebuild-meta reads back.
 * Little-endian: u8 kind | u32 tenant | u16 key_len | key | u64 version |
 * MOVED only: u32 gen | VERSION and MOVED: u32 rec_len | the version
 * record (any format above). A MOVED record is a version's record again
 * after a migration moved some of its positions; gen is the placement
 * epoch of the pass that moved it, so a later move has a higher one.
 * For one (tenant, key) the highest version wins; of one version a
 * tombstone wins (it deleted that version), then the highest gen (a
 * VERSION record's is 0).
 */
enum gw_mrec_kind {
    GW_MREC_VERSION = 1,
    GW_MREC_TOMB = 2,
    GW_MREC_MOVED = 3,
};
struct gw_mrec {
    uint8_t kind;
    uint32_t tenant;
    const char *key; /* klen bytes, 1..65535; borrowed */
    size_t klen;
    uint64_t version;
    uint32_t gen;       /* MOVED; 0 otherwise */
    const uint8_t *rec; /* VERSION, MOVED: the version record; borrowed */
    size_t rec_len;
};
/* Bytes m encodes to; encode writes them to out. */
size_t gw_mrec_len(const struct gw_mrec *m);
void gw_mrec_encode(const struct gw_mrec *m, uint8_t *out);
/* 0 with *out (pointers into buf), or CM_E_PROTO: an unknown kind, an empty
 * key, or a length that does not match the bytes exactly. The version
 * record is not looked into. */
int gw_mrec_decode(const void *buf, size_t len, struct gw_mrec *out);
/* Whether a replaces b as what their (tenant, key) is. */
int gw_mrec_newer(const struct gw_mrec *a, const struct gw_mrec *b);

/* ---- reads ---- */

/* The current version of (tenant, key), its tags included (out owns them:
 * gw_layout_fini): 0, CM_E_NOTFOUND or -ENOMEM. */
int gw_meta_get(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                struct gw_layout *out);

/* A version with all it keeps, and its parts when a composite. */
struct gw_meta_obj {
    struct gw_layout lay;   /* tags owned */
    struct gw_meta_attrs a; /* strings point into hdrs and target; a.upload, a.parts NULL */
    char hdrs[GW_META_HDRS_MAX];
    char target[GW_KEY_MAX];
    struct gw_layout *parts; /* a.nparts layouts, tags owned, in object order; or NULL */
};
/* The current version of (tenant, key) in one read transaction: 0,
 * CM_E_NOTFOUND, CM_E_PROTO (a composite's part missing), -ENOMEM.
 * Release with gw_meta_obj_fini (also after an error). */
int gw_meta_get_obj(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                    struct gw_meta_obj *out);
void gw_meta_obj_fini(struct gw_meta_obj *o);

/*
 * Objects of tenant whose key starts with prefix and sorts after after
 * (when non-NULL), in key order, in one read transaction, until cb returns
 * non-zero. Internal keys are left out unless prefix begins with NUL. cb
 * gets borrowed pointers (tags skipped) valid for the call. 0 or a
 * negative code.
 */
typedef int (*gw_meta_scan_cb)(void *arg, const char *key, size_t klen, const struct gw_layout *l,
                               const struct gw_meta_attrs *a);
int gw_meta_scan(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen,
                 const char *after, size_t alen, gw_meta_scan_cb cb, void *arg);

/*
 * Up to limit objects of tenant, as gw_meta_scan. *more: whether another
 * object matches past the last one returned. 0 or a negative code.
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
    const struct gw_meta_attrs *attrs; /* version: what it keeps; borrowed */
};
/* Calls cb for every pending version and tombstone (for gw_engine_track
 * and gw_engine_tombstone at startup). Pending versions whose key now
 * holds another version are skipped. */
int gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_pending *p),
                         void *arg);

/* *empty = 1 when no table but state holds a row (a fresh store). */
int gw_meta_is_empty(struct gw_meta *m, int *empty);

/* cb(tenant, object id) for every live version with chunks of its own (all
 * tenants, internal keys included), in one read transaction, until cb
 * returns non-zero. 0, cb's non-zero, a store error, or CM_E_PROTO (a
 * torn record). */
int gw_meta_scan_ids(struct gw_meta *m, int (*cb)(void *arg, uint32_t tenant, uint64_t object),
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

/* ---- hand-over (gw_meta_handover.c) ---- */

#define GW_META_GATEWAY_MAX CM_GATEWAY_ID_MAX /* a gateway id in an outbox entry */

/*
 * Takes tenant's metadata out of the store into an outbox entry for
 * gateway to, in one transaction (*groups: how many groups went). -EBUSY
 * when the tenant still has pending versions or tombstones (nothing
 * changed); -EEXIST when an outbox entry exists already; CM_E_BADARG when
 * to is longer than GW_META_GATEWAY_MAX.
 */
int gw_meta_handover_out(struct gw_meta *m, uint32_t tenant, const char *to, uint32_t *groups);
/* cb for every outbox entry: the bundle is borrowed for the call. */
int gw_meta_handover_outbox(struct gw_meta *m,
                            void (*cb)(void *arg, uint32_t tenant, const char *to,
                                       const void *bundle, size_t len),
                            void *arg);
/* Drops tenant's outbox entry (0 also when there is none). */
int gw_meta_handover_done(struct gw_meta *m, uint32_t tenant);
/* 0 with *tenant when bundle is well formed (magic, CRC, every group and
 * record as the store would hold it), else CM_E_PROTO. */
int gw_meta_bundle_check(const void *bundle, size_t len, uint32_t *tenant);
/* Replaces all the store holds of the bundle's tenant by the bundle, in
 * one transaction: 0 with *tenant and *groups, or CM_E_PROTO (nothing
 * changed). */
int gw_meta_handover_in(struct gw_meta *m, const void *bundle, size_t len, uint32_t *tenant,
                        uint32_t *groups);

/* ---- writes ---- */

/* Write batches: one write transaction. commit frees b (also on error);
 * abort frees b; after an operation returned an error other than
 * CM_E_NOTFOUND, the batch can only be aborted. */
int gw_meta_batch_begin(struct gw_meta *m, struct gw_meta_batch **out);
int gw_meta_batch_commit(struct gw_meta_batch *b);
void gw_meta_batch_abort(struct gw_meta_batch *b);
/* The batch's time (unix ms): the commit time of what it puts. */
uint64_t gw_meta_batch_time(const struct gw_meta_batch *b);

/* The version a write replaced or deleted: its chunks are the caller's to
 * delete (those of each part, for a composite), and, when key is set (a
 * delete), its tombstone record the caller's to log (gw_engine_tombstone). */
struct gw_meta_old {
    int had;
    struct gw_layout lay;    /* tags skipped */
    struct gw_layout *parts; /* a composite's: nparts layouts (owned, tags skipped) */
    uint32_t nparts;
    char *key; /* a delete: the key (owned); NULL when replaced */
    size_t klen;
};
/* Frees parts and key, and clears old. */
void gw_meta_old_reset(struct gw_meta_old *old);

/*
 * Commits l (l->tenant) as the newest version of key, with attrs (may be
 * NULL; its strings copied, never borrowed from this batch; mtime_ms is
 * taken as given): l->version is set to (current version or last deleted
 * version) + 1; a record-only l with object 0 gets a random object id. The
 * version it replaced, if any, goes to *old (reset first; a composite's
 * parts with it: they leave the store too). l is added to pending (its
 * META record is to go). A composite's parts must be live at their keys:
 * the caller checks.
 */
int gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
                const struct gw_meta_attrs *attrs, struct gw_meta_old *old);
/* Deletes the current version (to *old, reset first, with a copy of key)
 * and keeps a tombstone, which pending holds until its META record is
 * logged. CM_E_NOTFOUND when the key has none. */
int gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                   struct gw_meta_old *old);
/* Reads inside the batch: as gw_meta_get without the tags, attrs (may be
 * NULL) borrowed until the next write; as gw_meta_scan. */
int gw_meta_batch_get(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                      struct gw_layout *out, struct gw_meta_attrs *attrs);
int gw_meta_batch_scan(struct gw_meta_batch *b, uint32_t tenant, const char *prefix, size_t plen,
                       gw_meta_scan_cb cb, void *arg);
/*
 * The engine reported l->object (gw_engine.h, enum gw_report). CHANGED:
 * stores holders, persisted bits and tags (when l has them) if that object
 * is still a pending live version of its key (the version number and its
 * attributes are kept). DONE: the same when holders or tags differ, then
 * drops it from pending. TOMB: drops the tombstone (l->object, l->version)
 * from pending. *stale = 1 when nothing was pending under that name
 * (nothing stored).
 */
int gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, enum gw_report what,
                   int *stale);
/*
 * --rebuild-meta: stores l (l->tenant, l->version as it is; its tags when
 * it has them) with attrs (may be NULL) as the live version of key, or
 * (restore_tomb) the tombstone of version, which keeps the next version
 * above it. Nothing becomes pending: a logged META record means every
 * chunk was persisted.
 */
int gw_meta_restore(struct gw_meta_batch *b, const char *key, size_t klen,
                    const struct gw_layout *l, const struct gw_meta_attrs *attrs);
int gw_meta_restore_tomb(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                         uint64_t version);
/*
 * A version moved to other holders (l: tenant, object, holders, persisted
 * bits, tags): stored if key's live version is still l->object (the
 * version number and attributes are kept); *stale = 1 when it is not
 * (nothing stored). The parts of a composite move this way at their own
 * keys, where the composite's reads look them up.
 */
int gw_meta_move(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
                 int *stale);
/*
 * Deletes up to max objects (and tombstones) of tenant; cb gets each
 * deleted layout that has chunks (borrowed). *left = 1 when more remain.
 */
int gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
                  void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left);

/* All k + m persisted bits of l set. */
int gw_layout_persisted(const struct gw_layout *l);

#endif
