/*
 * cm_ilog.h - a node's insertion log in COS and the metadata records
 * gateways put in it: the codec both ends share (pure: no I/O, no threads,
 * no allocation but the writer's cm_buf).
 *
 * A log object "ilog/n<node>/<seq as 16 hex digits>" is one batch of
 * records, little-endian:
 *
 *    0 u32 magic "SHIL"   4 u32 version (1)   8 u32 node   12 u32 nrec
 *   16 u64 seq           24 u32 body_len     28 u32 crc: CRC32C of bytes 0..27, then the body
 *   32 body: nrec records, each  u8 kind | u32 len | len bytes
 *
 * Records:
 *   CM_ILOG_CHUNK (48 bytes): u32 tag | u32 tenant | u64 object | u64 obj_version |
 *       u32 index | u32 length (chunk bytes) | u64 seg | u32 off | u32 blob_len
 *       seg 0: the chunk is its own COS object (cm_chunk_name); else it is
 *       packed in segment seg at [off, off + blob_len)
 *   CM_ILOG_DEL (24 bytes): u32 tenant | u64 object | u64 obj_version | u32 index
 *   CM_ILOG_META: the payload of a CM_OP_META request, verbatim
 * A reader hands over kinds it does not know as they are (their length
 * says where the next record starts), so a kind can be added.
 *
 * A META payload (a gateway's metadata record), little-endian:
 *   u8 kind (1 version, 2 tombstone) | u32 tenant | u16 key_len | key |
 *   u64 version | kind 1 only: u32 rec_len | rec_len bytes of the gateway's
 *   layout record (gateway/gw_meta.h; opaque here)
 * For one (tenant, key) the highest version wins, and a tombstone wins
 * over a version record of the same number (it deleted that version).
 */
#ifndef CM_ILOG_H
#define CM_ILOG_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf;

#define CM_ILOG_MAGIC 0x4c494853u /* "SHIL" read little-endian */
#define CM_ILOG_VERSION 1
#define CM_ILOG_HDR_LEN 32
#define CM_ILOG_REC_HDR 5
#define CM_ILOG_CHUNK_LEN 48
#define CM_ILOG_DEL_LEN 24
#define CM_ILOG_PREFIX "ilog/"
#define CM_ILOG_NAME_MAX 40

enum cm_ilog_kind {
    CM_ILOG_CHUNK = 1,
    CM_ILOG_DEL = 2,
    CM_ILOG_META = 3,
};

/* CM_ILOG_CHUNK's fields; CM_ILOG_DEL uses the chunk key only. */
struct cm_ilog_chunk {
    uint32_t tag; /* the instance it was placed in (CM_WIRE_TAG) */
    uint32_t tenant;
    uint64_t object, obj_version;
    uint32_t index;
    uint32_t length;
    uint64_t seg; /* 0: its own COS object */
    uint32_t off, blob_len;
};

struct cm_ilog_rec {
    uint8_t kind;
    struct cm_ilog_chunk chunk; /* CHUNK, DEL (key fields) */
    const uint8_t *data;        /* META and unknown kinds: the payload (borrowed) */
    size_t len;
};

/* "ilog/n<node>/<seq hex16>"; parse returns 0 with *node and *seq, or
 * CM_E_BADARG for any other name. */
void cm_ilog_name(char *buf, size_t cap, uint32_t node, uint64_t seq);
int cm_ilog_parse_name(const char *name, uint32_t *node, uint64_t *seq);

/* Writer: init resets b to an empty batch; the adds append; seal fills the
 * count, length and CRC (adds after a seal need another seal). */
void cm_ilog_init(struct cm_buf *b, uint32_t node, uint64_t seq);
void cm_ilog_add_chunk(struct cm_buf *b, const struct cm_ilog_chunk *c);
void cm_ilog_add_del(struct cm_buf *b, const struct cm_ilog_chunk *c);
void cm_ilog_add_meta(struct cm_buf *b, const void *payload, size_t len);
void cm_ilog_seal(struct cm_buf *b);

/* Reader over one batch (buf borrowed while the reader is used). open
 * checks the header and the CRC: 0, CM_E_CRC (torn or altered) or
 * CM_E_PROTO (not a batch of a version this code reads). next: 1 with *out
 * (data borrowed from buf), 0 after the last record, CM_E_PROTO when the
 * records do not fill the body exactly. */
struct cm_ilog_reader {
    const uint8_t *p;
    size_t end, pos;
    uint32_t left;
    uint32_t node;
    uint64_t seq;
};
int cm_ilog_open(struct cm_ilog_reader *r, const void *buf, size_t len);
int cm_ilog_next(struct cm_ilog_reader *r, struct cm_ilog_rec *out);

/* ---- META payloads ---- */

enum cm_meta_kind {
    CM_META_VERSION = 1,
    CM_META_TOMB = 2,
};

#define CM_META_KEY_MAX 65535

struct cm_meta_rec {
    uint8_t kind;
    uint32_t tenant;
    const char *key; /* klen bytes, 1..CM_META_KEY_MAX; borrowed */
    size_t klen;
    uint64_t version;
    const uint8_t *rec; /* VERSION: the layout record; borrowed */
    size_t rec_len;
};

/* Bytes m encodes to; encode writes them to out. */
size_t cm_meta_len(const struct cm_meta_rec *m);
void cm_meta_encode(const struct cm_meta_rec *m, uint8_t *out);
/* 0 with *out (pointers into buf), or CM_E_PROTO: an unknown kind, an empty
 * key, or a length that does not match the bytes exactly. */
int cm_meta_decode(const void *buf, size_t len, struct cm_meta_rec *out);
/* Whether a replaces b as what (tenant, key) is: a higher version, or a
 * tombstone of the same version. Same key assumed. */
int cm_meta_newer(const struct cm_meta_rec *a, const struct cm_meta_rec *b);

#endif
