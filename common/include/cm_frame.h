/*
 * cm_frame.h - the one reader of node-protocol frames (cm_wire.h): the
 * gateway's node connections and the node's client connections both parse
 * their byte streams with it.
 *
 *   bytes ──cm_frame_feed──▶ CM_FRAME_HEADER  f->hdr checked; the caller names
 *                            │                 the payload's buffer (or none)
 *                            ▼
 *   bytes ──cm_frame_feed──▶ CM_FRAME_END     payload in that buffer, its CRC
 *                            │                 checked: f->status
 *                            ▼
 *                            < 0              the stream is bad: f->why; close
 *
 * Pure: no I/O, no clock, no allocation. The caller owns the bytes and the
 * payload buffer (it may also read a payload straight into that buffer:
 * cm_frame_room/cm_frame_wrote). A header cut between two feeds is kept in
 * the reader (64 bytes at most); everything else is consumed in place, and a
 * payload is copied once, into its buffer, or skipped.
 *
 * Any header that fails a check (magic, version, header CRC, op, flags,
 * reserved bits, data_len over the limit, a request where responses are
 * expected) or a stream that ends mid-frame makes the whole stream bad:
 * nothing after a bad header can be trusted. A payload whose CRC does not
 * match is not: its frame ends with status CM_E_CRC and the stream goes on.
 * A payload is checked when it has a buffer (an empty one too: its CRC is 0).
 *
 * Threads: a reader is used by one thread at a time (caller's storage).
 */
#ifndef CM_FRAME_H
#define CM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "cm_wire.h"

/* Why a stream is bad: X(name, text), text fit for a key=value log line. */
#define CM_FRAME_WHYS(X)                                                                           \
    X(NONE, "none")                                                                                \
    X(MAGIC, "magic")               /* not "SHOL": not our protocol */                             \
    X(VERSION, "version")           /* another protocol version */                                 \
    X(HDR_CRC, "header_crc")        /* hdr_crc does not match bytes 0..59 (CM_E_CRC) */            \
    X(OP, "op")                     /* unknown op */                                               \
    X(FLAGS, "flags")               /* an unknown flag bit */                                      \
    X(RESERVED, "reserved")         /* the reserved word is not 0 */                               \
    X(OVERSIZE, "oversize")         /* data_len over the reader's limit */                         \
    X(NOT_RESPONSE, "not_response") /* a request where only responses may come */                  \
    X(TRUNCATED, "truncated")       /* the stream ended inside a frame */

enum cm_frame_why {
#define CM_FRAME_WHY_ENUM_(name, text) CM_FRAME_WHY_##name,
    CM_FRAME_WHYS(CM_FRAME_WHY_ENUM_)
#undef CM_FRAME_WHY_ENUM_
};

enum cm_frame_event {
    CM_FRAME_MORE = 0,   /* every byte given was consumed; feed more */
    CM_FRAME_HEADER = 1, /* f->hdr is a checked header; name its payload's buffer */
    CM_FRAME_END = 2,    /* the frame is whole: f->hdr, f->dst, f->status */
};

enum cm_frame_mode {
    CM_FRAME_ANY = 0,       /* requests and responses (a node) */
    CM_FRAME_RESPONSES = 1, /* responses only (a client of nodes) */
};

struct cm_frame {
    /* Read-only for the caller. */
    struct cm_wire_hdr hdr; /* from CM_FRAME_HEADER until the feed after CM_FRAME_END */
    uint8_t *dst;           /* the payload's buffer (borrowed), NULL: skipped */
    int status;             /* at CM_FRAME_END: 0, or CM_E_CRC (dst's CRC is wrong) */
    enum cm_frame_why why;  /* once the stream is bad */
    /* Private. */
    uint32_t max_data;
    uint32_t got;             /* payload bytes consumed */
    int err;                  /* 0, or the stream's error (every later feed returns it) */
    uint8_t mode, state, cut; /* cut: bytes of a header held in part */
    uint8_t part[CM_WIRE_HDR_LEN];
};

/* Starts (or restarts, for a new stream) a reader. max_data: the largest
 * payload accepted, at most (and 0 meaning) CM_WIRE_MAX_DATA. */
void cm_frame_init(struct cm_frame *f, uint32_t max_data, enum cm_frame_mode mode);

/*
 * Consumes bytes from buf[len] up to the next event; *used says how many.
 * Returns a cm_frame_event, or CM_E_PROTO / CM_E_CRC (a bad header CRC)
 * with f->why set, once the stream is bad (then always). An event may come
 * with no byte consumed (the end of an empty payload, of a payload the
 * caller wrote itself): call again until CM_FRAME_MORE. buf may be NULL
 * when len is 0.
 */
int cm_frame_feed(struct cm_frame *f, const uint8_t *buf, size_t len, size_t *used);

/* After CM_FRAME_HEADER: where the payload goes, hdr.data_len bytes
 * (borrowed until CM_FRAME_END; NULL skips it). During the payload, NULL
 * skips the rest: dst is no longer written, nor checked. */
void cm_frame_payload_to(struct cm_frame *f, uint8_t *dst);

/* For a caller that reads the payload itself (straight from a socket):
 * where its next bytes go and *room, how many are still due; NULL when no
 * payload buffer is being filled. Report what was written with
 * cm_frame_wrote (n <= *room). */
uint8_t *cm_frame_room(const struct cm_frame *f, size_t *room);
void cm_frame_wrote(struct cm_frame *f, size_t n);

/* The stream ended (EOF): 0 between frames, else CM_E_PROTO (why: truncated). */
int cm_frame_eof(struct cm_frame *f);

/*
 * One header from buf[CM_WIRE_HDR_LEN], every check done before a field is
 * trusted: magic and version first (so garbage reads as CM_E_PROTO), then
 * the header CRC (CM_E_CRC), then op, flags, reserved, data_len <= max_data
 * (0: CM_WIRE_MAX_DATA). 0, or the error with *why (may be NULL).
 */
int cm_frame_decode_hdr(const uint8_t *buf, uint32_t max_data, struct cm_wire_hdr *out,
                        enum cm_frame_why *why);

const char *cm_frame_why_name(enum cm_frame_why why); /* static */

#endif
