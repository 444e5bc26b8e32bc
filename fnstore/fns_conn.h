/*
 * fns_conn.h - one client connection of the wire protocol: framing,
 * checks and buffered I/O (libevent events, hidden here).
 *
 *   socket ─▶ input ─▶ cm_frame: [64-byte header, checked] ─▶ [payload, CRC32C]
 *                         │ bad header / truncated: log, close      │
 *                         ▼                                         ▼
 *                      closed(err)                         frame(h, payload, status)
 *   socket ◀─ output ◀── fns_conn_send(h, chunk by reference) ◀── node, any order
 *
 * Every delivered frame must be answered with exactly one fns_conn_send
 * (it may come later and out of order; after the connection died it is
 * dropped). A peer's clean EOF closes the connection once every delivered
 * frame is answered and the output is flushed. Reading pauses while the
 * output holds more than FNS_CONN_OUT_HIGH bytes (back-pressure).
 *
 * Threads: loop thread only. Lifetime: a conn is referenced by being open
 * and by every holder that called fns_conn_ref; it is freed on the last
 * unref, so a late answer may still use the pointer safely.
 */
#ifndef FNS_CONN_H
#define FNS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "cm_wire.h"
#include "fns_chunk.h"

#define FNS_CONN_OUT_HIGH (8u << 20)

struct fns_loop;
struct fns_conn;

struct fns_arena;

/* The open connections of a listener (caller's storage, zeroed). arena
 * (borrowed, may be NULL): where PUT payloads are allocated. */
struct fns_conn_list {
    struct fns_conn *head;
    size_t n;
    struct fns_arena *arena;
};

struct fns_conn_ops {
    /*
     * One complete frame. h is borrowed for the call. payload: NULL when
     * data_len is 0 or status != 0, else h->data_len bytes plus
     * FNS_CHUNK_TAIL spare bytes, TRANSFERRED: malloc'd, except that a
     * CM_OP_PUT payload may be the list's arena memory (release it with
     * fns_arena_free, as fns_chunk_unref of the adopting chunk does). status: 0,
     * CM_E_CRC (payload CRC mismatch) or CM_E_TOOBIG (over max_payload;
     * the payload was skipped).
     */
    void (*frame)(void *arg, struct fns_conn *c, const struct cm_wire_hdr *h, uint8_t *payload,
                  int status);
    /* The connection is closed: err 0 (peer's EOF), CM_E_PROTO / CM_E_CRC
     * (bad frame), or -errno. No frame follows. */
    void (*closed)(void *arg, struct fns_conn *c, int err);
};

/* fd transferred (closed with the conn). ops borrowed for the lifetime. */
int fns_conn_create(struct fns_loop *l, int fd, uint32_t max_payload,
                    const struct fns_conn_ops *ops, void *arg, struct fns_conn_list *list,
                    struct fns_conn **out);
void fns_conn_ref(struct fns_conn *c);
void fns_conn_unref(struct fns_conn *c);
/* Answers one delivered frame: h borrowed (encoded here); chunk NULL or
 * the payload (a reference is held until the bytes are sent). */
void fns_conn_send(struct fns_conn *c, const struct cm_wire_hdr *h, struct fns_chunk *chunk);
/* Sends an unasked frame (a notice; no delivered frame is answered by it):
 * h borrowed and encoded here, payload[len] copied. Dropped once closed. */
void fns_conn_notice(struct fns_conn *c, const struct cm_wire_hdr *h, const void *payload,
                     size_t len);
/* Nonzero once the connection is closed (its notices are dropped). */
int fns_conn_is_closed(const struct fns_conn *c);
const char *fns_conn_peer(const struct fns_conn *c); /* borrowed */

/* Stops reading new frames on every connection (shutdown). */
void fns_conn_list_stop_reading(struct fns_conn_list *list);
/* Nonzero when no connection has an unanswered frame or unsent bytes. */
int fns_conn_list_idle(const struct fns_conn_list *list);
void fns_conn_list_close_all(struct fns_conn_list *list);

#endif
