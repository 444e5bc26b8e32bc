/*
 * fns_pack.h - COS segments: many small chunks persisted as one COS object.
 *
 * A COS write costs the same whether it carries 1 KiB or 1 MiB (the fs
 * backend: a sync; S3: one request), so a node packs the small chunks of
 * one write batch into a record of a segment "seg/n<node>/<seq>" and keeps
 * an index key -> (segment, offset, length) in memory. Where the COS can
 * append (fs), each batch's record is appended to the node's open segment,
 * which rolls over to the next sequence number at a size limit; elsewhere
 * (s3) each record is a segment of its own.
 *
 * A segment is records back to back. Record layout (little-endian):
 *    0 u32 magic "SHSG"   4 u32 version (2)   8 u32 nent   12 u32 ntomb
 *   16 u32 hdr_len       20 u32 hdr_crc (CRC32C of hdr_len bytes, this field 0)
 *   24 u32 rec_len       28 u32 body_crc (CRC32C of bytes hdr_len..rec_len)
 *   32 nent  x 32 B: u32 tenant, u32 index, u64 object, u64 version, u32 off, u32 len
 *      ntomb x 24 B: u32 tenant, u32 index, u64 object, u64 version
 *   hdr_len.. the chunk blobs (bytes + trailer, fns_chunk.h) at their
 *   offsets from the record's start
 * A record that does not check (a torn append: a node killed while it
 * wrote) ends what a reader takes from its segment: records are appended
 * one at a time and acknowledged once synced, so nothing after it was.
 * Version 1 (a 24-byte fixed part without rec_len and body_crc) is one
 * record spanning its whole segment, as written before records were
 * appended; it is still read.
 * Tombstones name chunks of older segments (or of earlier records of the
 * same one) deleted since: replaying the segments in sequence order, and
 * each one's records in order, rebuilds the index after a restart.
 *
 * The format functions are pure; the index is loop-thread only.
 */
#ifndef FNS_PACK_H
#define FNS_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "fns_chunk.h"

#define FNS_PACK_MAGIC 0x47534853u /* "SHSG" read little-endian */
#define FNS_PACK_FIXED 32u         /* version 2 */
#define FNS_PACK_FIXED_V1 24u
#define FNS_PACK_ENT_LEN 32u
#define FNS_PACK_TOMB_LEN 24u
#define FNS_PACK_BLOB_MAX (256u << 10) /* larger chunks get their own object */
#define FNS_PACK_NAME_MAX 48
#define FNS_PACK_ROLL (4u << 20) /* an appended segment's size that starts the next */

struct fns_pack_ent {
    struct fns_key key;
    uint32_t off, len; /* the blob within the segment */
};

/* Header bytes of a record with nent chunks and ntomb tombstones. */
size_t fns_pack_hdr_len(size_t nent, size_t ntomb);
/* Fills in the header (fns_pack_hdr_len bytes) of the rec_len-byte record
 * at rec, whose blobs are already at rec + ents[i].off. */
void fns_pack_encode(uint8_t *rec, size_t rec_len, const struct fns_pack_ent *ents, size_t nent,
                     const struct fns_key *tombs, size_t ntomb);
/*
 * Parses and checks the record at the start of buf (len bytes: the rest of
 * its segment): magic, version, counts, both CRCs, every blob inside the
 * record. 0 with malloc'd *ents and *tombs (either NULL when its count is
 * 0), offsets from buf, and *rec_len (version 1: len); CM_E_CRC when
 * anything is wrong.
 */
int fns_pack_decode(const uint8_t *buf, size_t len, struct fns_pack_ent **ents, size_t *nent,
                    struct fns_key **tombs, size_t *ntomb, size_t *rec_len);
/* Calls fn for each record of the segment buf[0..len), in order, with
 * offsets from the segment's start, until one does not check (a torn
 * tail) or fn returns non-zero. Returns the bytes of the records that
 * checked (len when all did). ents and tombs are borrowed for the call. */
size_t fns_pack_scan(const uint8_t *buf, size_t len,
                     int (*fn)(void *arg, const struct fns_pack_ent *ents, size_t nent,
                               const struct fns_key *tombs, size_t ntomb),
                     void *arg);
/* "seg/n<node>/<seq as 16 hex digits>"; parse returns 0 and *seq for such a name. */
void fns_pack_name(char *buf, size_t cap, uint32_t node, uint64_t seq);
int fns_pack_parse_name(const char *name, uint32_t node, uint64_t *seq);

/* ---- the index: chunk key -> where it is packed ------------------------ */

struct fns_pack_loc {
    uint64_t seg; /* sequence number, never 0 */
    uint32_t off, len;
};

struct fns_pack_index;

struct fns_pack_index *fns_pack_index_create(void);
void fns_pack_index_destroy(struct fns_pack_index *x); /* NULL is a no-op */
/*
 * Segment lifetime. A tombstone in segment S kills a chunk of an older
 * segment T; if S went while T stays, a replay would bring the chunk back.
 * So a segment is deleted only when it holds no indexed chunk and none of
 * the segments its tombstones point into is left. An empty segment that
 * must wait is "held"; it goes when its last target does (the functions
 * below that return or report segments to delete apply this rule).
 */
/* Appended segments: seg is the one records are appended to now (the
 * numbers only grow). It and newer ones are kept however empty they get,
 * as "held"; older empty ones may go once the mark passes them: call
 * fns_pack_index_drop_held when this returns 1 (the mark moved). */
int fns_pack_index_open(struct fns_pack_index *x, uint64_t seg);
/* Makes seg known with no chunks (replay: a segment holding only tombstones). */
void fns_pack_index_add_seg(struct fns_pack_index *x, uint64_t seg);
/* A tombstone in seg killed a chunk of target: seg waits for target. */
void fns_pack_index_hold(struct fns_pack_index *x, uint64_t seg, uint64_t target);
/* Records key at loc, replacing an older location. Returns a segment that
 * can now be deleted from COS (forgotten here), else 0. */
uint64_t fns_pack_index_put(struct fns_pack_index *x, const struct fns_key *key,
                            const struct fns_pack_loc *loc);
/* 0 and *loc, or CM_E_NOTFOUND. */
int fns_pack_index_get(const struct fns_pack_index *x, const struct fns_key *key,
                       struct fns_pack_loc *loc);
/* Forgets key. *from: the segment it was packed in, 0 if it was not indexed
 * (a tombstone for it then names *from as its target). Returns a segment
 * that can now be deleted (forgotten here), else 0. */
uint64_t fns_pack_index_del(struct fns_pack_index *x, const struct fns_key *key, uint64_t *from);
/* If seg is known, empty and free to go: forgets it, returns 1 (else it
 * may be held). */
int fns_pack_index_drop_if_empty(struct fns_pack_index *x, uint64_t seg);
/* Calls fn for (and forgets) every held segment that is free to go now,
 * repeatedly, since one going may free another. Returns how many. Call it
 * after deleting a segment. */
size_t fns_pack_index_drop_held(struct fns_pack_index *x, void (*fn)(void *arg, uint64_t seg),
                                void *arg);
/* Calls fn for (and forgets) every empty segment free to go; the other
 * empty ones become held (after a replay). */
void fns_pack_index_drop_empty(struct fns_pack_index *x, void (*fn)(void *arg, uint64_t seg),
                               void *arg);
/* The keys of the packed chunks, a stretch at a time (as
 * fns_store_walk_keys). */
int fns_pack_index_walk_keys(const struct fns_pack_index *x, size_t *pos, size_t limit,
                             void (*fn)(void *arg, const struct fns_key *key), void *arg);
/* Empty segments kept for their tombstones. */
size_t fns_pack_index_held(const struct fns_pack_index *x);
size_t fns_pack_index_chunks(const struct fns_pack_index *x);
size_t fns_pack_index_segments(const struct fns_pack_index *x);

#endif
