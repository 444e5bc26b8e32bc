/*
 * cm_ilog.h - a storage node's insertion log in COS: the format of its
 * batches (pure, fuzzed). The node writes it (fnstore/fns_ilog.h); a
 * gateway that lost its metadata reads the meta records back.
 *
 * A COS object "ilog/n<node>/<seq as 16 hex digits>" holds one or more
 * batches back to back, seq (growing from 1) that of its first batch:
 * where the COS can append (fs), a node appends its batches to an open
 * object and starts the next at a size limit; elsewhere (s3) each batch
 * is an object. A batch that does not check ends its object (an append
 * torn by a kill, never acknowledged). Each batch, little-endian:
 *
 *    0 u32 magic "SHIL"   4 u32 version (1)   8 u32 node   12 u32 nrec
 *   16 u64 seq           24 u32 len (the whole object)
 *   28 u32 crc (CRC32C of the len bytes, this field 0)
 *   32 nrec records, each: u8 kind, 3 bytes 0, u32 body_len, then the body
 *
 * Record kinds (a reader skips a kind it does not know by its body_len;
 * a known kind with a body of another length makes the batch bad):
 *   1 CHUNK    48 B  u32 tag, u32 tenant, u32 index, u64 object, u64 version,
 *                    u32 len (chunk bytes), u64 seg (0: the chunk's own COS
 *                    object, cm_chunk_name), u32 off, u32 blob_len (in seg)
 *   2 DELETE   24 B  u32 tenant, u32 index, u64 object, u64 version
 *   3 META     any   a gateway's metadata record, verbatim (internal-api.md)
 *   4 INSTANCE 20 B  u32 tag, u32 tenant, u64 gen, u32 state (0 warm,
 *                    1 active, 2 degraded, 3 released: pol_sms_state)
 * (len is the batch's own length; a batch's seq is its own.)
 * A chunk record is written after the chunk's bytes are durable in COS;
 * the batch is written after every record in it names durable data.
 *
 * Threads: none; every function is pure.
 */
#ifndef CM_ILOG_H
#define CM_ILOG_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"

#define CM_ILOG_MAGIC 0x4c494853u /* "SHIL" read little-endian */
#define CM_ILOG_HDR_LEN 32u
#define CM_ILOG_REC_HDR_LEN 8u
#define CM_ILOG_CHUNK_LEN 48u
#define CM_ILOG_DELETE_LEN 24u
#define CM_ILOG_INSTANCE_LEN 20u
#define CM_ILOG_NAME_MAX 48

enum cm_ilog_kind {
    CM_ILOG_CHUNK = 1,
    CM_ILOG_DELETE = 2,
    CM_ILOG_META = 3,
    CM_ILOG_INSTANCE = 4,
};

/* One record; which fields mean something depends on kind. */
struct cm_ilog_rec {
    uint8_t kind;
    uint32_t tag;             /* CHUNK, INSTANCE */
    uint32_t tenant, index;   /* CHUNK, DELETE (the chunk key), INSTANCE (tenant) */
    uint64_t object, version; /* CHUNK, DELETE */
    uint32_t len;             /* CHUNK */
    uint64_t seg;             /* CHUNK: 0 = own object */
    uint32_t off, blob_len;   /* CHUNK in seg */
    uint64_t gen;             /* INSTANCE */
    uint32_t state;           /* INSTANCE */
    const uint8_t *data;      /* META (borrowed) */
    uint32_t data_len;        /* META */
};

/* Starts a batch in b (emptied first). */
void cm_ilog_begin(struct cm_buf *b, uint32_t node, uint64_t seq);
/* Appends one record (META: data/data_len copied). */
void cm_ilog_add(struct cm_buf *b, const struct cm_ilog_rec *r);
/* Bytes one record takes in a batch. */
size_t cm_ilog_rec_size(const struct cm_ilog_rec *r);
/* Seals the batch (len, crc); b->p/b->len is then the object. */
void cm_ilog_end(struct cm_buf *b);

/* The length of the batch at the start of buf (len bytes: the rest of an
 * object, which may hold more batches): its header's len when that is a
 * batch's and fits, else 0 (no batch: the end of what can be read). Check
 * the batch with cm_ilog_open. */
size_t cm_ilog_batch_len(const uint8_t *buf, size_t len);
/* A walk over the records of a checked batch (borrows its bytes). */
struct cm_ilog_iter {
    const uint8_t *p, *end;
    uint32_t left;
};

/*
 * Checks a batch of len bytes: magic, version, len, crc, and that its nrec
 * records fill it exactly with valid bodies. 0 with *node, *seq and it set
 * to the first record; CM_E_CRC otherwise. node, seq may be NULL.
 */
int cm_ilog_open(const uint8_t *buf, size_t len, uint32_t *node, uint64_t *seq,
                 struct cm_ilog_iter *it);
/* The next record of a checked batch: 1 and *r, or 0 at the end. Records
 * of unknown kinds are skipped. */
int cm_ilog_next(struct cm_ilog_iter *it, struct cm_ilog_rec *r);

/* "ilog/n<node>/<seq as 16 hex digits>"; parse: 0 and *seq for such a name
 * (seq != 0), else CM_E_BADARG. */
void cm_ilog_name(char *buf, size_t cap, uint32_t node, uint64_t seq);
int cm_ilog_parse_name(const char *name, uint32_t node, uint64_t *seq);

#endif
