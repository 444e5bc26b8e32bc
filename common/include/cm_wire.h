/*
 * cm_wire.h - the binary protocol between gateways and storage nodes.
 *
 *   request:  [64-byte header][data_len bytes of payload]
 *   response: same header, op | CM_OP_RESPONSE, same req_id, status
 *
 * Header, little-endian, fixed offsets:
 *    0 u32 magic "SHOL"     4 u8 version    5 u8 op     6 u16 flags
 *    8 i32 status          12 u32 tenant   16 u64 req_id
 *   24 u64 object          32 u64 obj_version
 *   40 u32 index           44 u32 incarnation
 *   48 u32 data_len        52 u32 data_crc (CRC32C of the payload)
 *   56 u32 reserved (0)    60 u32 hdr_crc  (CRC32C of bytes 0..59)
 *
 * Requests are pipelined on a connection and may be answered out of order;
 * req_id matches them. One frame is not an answer: a node sends
 * CM_OP_PERSISTED | CM_OP_RESPONSE with req_id 0, unasked, to a client that
 * sent PUTs flagged CM_WF_NOTIFY (see cm_wire_note). A peer that receives
 * a header failing any check closes the connection (nothing after a bad
 * header can be trusted). cm_frame.h reads frames.
 */
#ifndef CM_WIRE_H
#define CM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define CM_WIRE_MAGIC 0x4c4f4853u /* "SHOL" read little-endian */
#define CM_WIRE_VERSION 1
#define CM_WIRE_HDR_LEN 64
#define CM_WIRE_MAX_DATA (256u << 20) /* hard cap; peers may set lower */

enum cm_wire_op {
    CM_OP_PING = 1, /* -> empty; incarnation = node's */
    CM_OP_PUT = 2,  /* payload = chunk bytes -> empty */
    CM_OP_GET = 3,  /* -> payload = chunk bytes */
    CM_OP_DEL = 4,  /* -> empty; memory and COS; missing is not an error */
    CM_OP_STAT = 5, /* -> empty, flags say PERSISTED; CM_E_NOTFOUND if unknown */
    CM_OP_PERSISTED = 6, /* node -> client notice (never a request): payload =
                            cm_wire_note records of chunks now durable in COS */
    CM_OP_META = 7, /* payload = metadata records, one or more back to back,
                       for the node's insertion log in COS (a committed
                       version's key and layout, or a tombstone) -> empty
                       once they are all in COS */
    CM_OP_LIST = 8, /* object = cursor (0: from the start), index = records
                       wanted at most -> payload = cm_wire_note records of
                       chunks the node holds (in memory, in its insertion
                       log, packed in its COS segments; one may come more
                       than once), object = the next cursor,
                       CM_WIRE_LIST_END after the last page */
    CM_OP_RESPONSE = 0x80,
};

enum cm_wire_flag {
    CM_WF_PERSISTED = 1 << 0, /* response: the chunk is durable in COS */
    CM_WF_COS_SYNC = 1 << 1,  /* PUT request: answer only once in COS */
    CM_WF_FROM_COS = 1 << 2,  /* GET response: had to be reloaded from COS */
    CM_WF_NOTIFY = 1 << 3,    /* PUT request: send a PERSISTED notice when in COS */
    CM_WF_COS_OK = 1 << 4,    /* GET request: reload from COS even when the
                                 instance named by incarnation is gone (STALE) */
    CM_WF_KEEP_COS = 1 << 5,  /* DEL request: the chunk moved to another node,
                                 which stores it under the same COS name: drop
                                 it from memory and from this node's segments,
                                 but not its COS object */
};

struct cm_wire_hdr {
    uint8_t op;
    uint16_t flags;
    int32_t status; /* 0 or a negative cm_err / -errno */
    uint32_t tenant;
    uint64_t req_id;
    uint64_t object;
    uint64_t obj_version;
    uint32_t index;
    /* PING response: the node's incarnation. Chunk requests and answers: an
     * instance tag (CM_WIRE_TAG), the instance a PUT was placed in (answer)
     * and the one a GET/STAT expects it in (request; 0 = any). */
    uint32_t incarnation;
    uint32_t data_len;
    uint32_t data_crc;
};

/* An instance tag: the node-local instance slot (< 4096) and that slot's
 * incarnation (20 bits, wrapping). A GET whose chunk is not in memory and
 * whose tag's slot no longer has that incarnation (the instance was
 * reclaimed, replaced or released) is answered CM_E_STALE at once. */
#define CM_WIRE_TAG(slot, inc) (((uint32_t)(slot) << 20) | ((uint32_t)(inc)&0xfffffu))
#define CM_WIRE_TAG_SLOT(tag) ((uint32_t)(tag) >> 20)
#define CM_WIRE_TAG_INC(tag) ((uint32_t)(tag)&0xfffffu)

#define CM_WIRE_LIST_END UINT64_MAX
#define CM_WIRE_LIST_MAX 4096u /* records in one LIST answer, at most */

/* Fills out[CM_WIRE_HDR_LEN], setting magic, version and hdr_crc. */
void cm_wire_encode_hdr(const struct cm_wire_hdr *h, uint8_t *out);

/* One record of a CM_OP_PERSISTED payload: 16 bytes, little-endian
 * u32 tenant, u32 index, u64 object (obj_version is always 0 on the wire). */
#define CM_WIRE_NOTE_LEN 16
struct cm_wire_note {
    uint32_t tenant;
    uint32_t index;
    uint64_t object;
};
void cm_wire_note_encode(const struct cm_wire_note *n, uint8_t *out);
void cm_wire_note_decode(const uint8_t *in, struct cm_wire_note *out);

/* Name of a chunk in COS: "t<tenant>/<object hex16>.<version>.<index>" (one
 * directory per tenant in the fs backend, not one per object). */
int cm_chunk_name(char *buf, size_t cap, uint32_t tenant, uint64_t object,
                  uint64_t obj_version, uint32_t index);

#endif
