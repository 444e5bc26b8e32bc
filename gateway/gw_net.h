/*
 * gw_net.h - the engine's event loop and wire client (private to gateway/;
 * the only gateway interface behind which libevent lives).
 *
 *   any thread ──gw_net_post──▶ queue ──▶ loop thread: timers, one
 *                                         pipelined connection per node
 *
 * Built from gw_loop.c (thread, posts, timers), gw_nodes.c (the node
 * directory and health) and gw_conn.c (one node's connection).
 *
 * Threads: gw_net_create/destroy and gw_net_post from any thread; every
 * other function only on the loop thread (inside a posted function, a
 * timer or a completion). Completions never run inside gw_net_send or
 * gw_net_cancel, so callers need not fear re-entrancy.
 */
#ifndef GW_NET_H
#define GW_NET_H

#include <stddef.h>
#include <stdint.h>

#include "cm_wire.h"

struct gw_net;
struct gw_net_req;
struct gw_timer;
struct gw_node;

typedef void (*gw_net_fn)(void *arg);

/*
 * status: 0 when the node answered (rsp then holds its header, and its
 * status may still be negative), else a transport error (-ECONNRESET,
 * CM_E_TIMEOUT, CM_E_CRC for a corrupt payload, CM_E_PROTO). A GET's
 * payload has been copied to dst (rsp->data_len bytes, CRC checked).
 */
typedef void (*gw_net_done_fn)(void *arg, int status, const struct cm_wire_hdr *rsp);

struct gw_net_send {
    struct cm_wire_hdr hdr;   /* req_id and data_len are filled in */
    const void *payload;      /* borrowed until release(release_arg) */
    size_t len;
    gw_net_fn release;        /* may be NULL; runs once the bytes are sent or dropped */
    void *release_arg;
    void *dst;                /* response payload goes here (borrowed until done/cancel) */
    size_t dst_cap;
    gw_net_done_fn done;
    void *arg;
};

/* One record of a node's PERSISTED notice; node is the sender's id. */
typedef void (*gw_net_note_fn)(void *arg, uint32_t node, const struct cm_wire_note *note);

/*
 * One answered request's round trip, for a latency-aware choice of the
 * node to read from. rtt_ns (monotonic) runs from the request entering its
 * connection's output (after any wait for the connection's byte cap) to
 * its whole answer having been read: the network both ways, the node's
 * queueing and service, and the loop's own delays.
 */
struct gw_net_rtt {
    uint32_t node;
    uint8_t op;          /* the request's wire op (CM_OP_GET, ...) */
    int32_t status;      /* what done gets, or else the node's status (CM_E_BUSY, ...) */
    uint32_t sent_bytes; /* request payload */
    uint32_t got_bytes;  /* answer payload */
    uint64_t rtt_ns;
    void *arg;           /* the request's done arg (NULL: the connection's own PING) */
};
typedef void (*gw_net_rtt_fn)(void *arg, const struct gw_net_rtt *sample);

int gw_net_create(int io_timeout_ms, struct gw_net **out);
/* Where PERSISTED notices go (default: dropped). Set before gw_net_set_nodes. */
void gw_net_set_note_handler(struct gw_net *n, gw_net_note_fn fn, void *arg);
/* Where round-trip samples go (default: nowhere, and no clock is read for
 * them): one per request a node answered, just before its done runs;
 * sample borrowed for the call. Not for requests that failed on the
 * connection, timed out or were cancelled. Set before gw_net_set_nodes. */
void gw_net_set_rtt_handler(struct gw_net *n, gw_net_rtt_fn fn, void *arg);
/* Runs fin(arg) on the loop thread, stops the loop, joins it, closes
 * every connection (failing nothing: fin is expected to cancel). */
void gw_net_destroy(struct gw_net *n, gw_net_fn fin, void *arg);

/* Any thread. fn(arg) runs on the loop thread soon. 0 or -ENOMEM. */
int gw_net_post(struct gw_net *n, gw_net_fn fn, void *arg);

/* Replaces the node directory (copied). */
void gw_net_set_nodes(struct gw_net *n, const struct gw_node *nodes, size_t count);
/* Known, up per controller, and not suspect. */
int gw_net_node_usable(struct gw_net *n, uint32_t id);
/* Usable and not draining: a place for new chunks and records. */
int gw_net_node_placeable(struct gw_net *n, uint32_t id);
/* In the directory (up or not). */
int gw_net_node_known(struct gw_net *n, uint32_t id);
/* Monotonic ns since which the node has been unreachable; 0 if reachable. */
uint64_t gw_net_node_down_since(struct gw_net *n, uint32_t id);
/* Ids of the directory, in its order; returns the count (at most cap). */
size_t gw_net_node_ids(struct gw_net *n, uint32_t *ids, size_t cap);

/*
 * Queues one request on node's connection. 0 and *out (valid until done
 * runs or gw_net_cancel) on success; negative when the node is unknown or
 * suspect (nothing queued, release not called).
 */
int gw_net_send(struct gw_net *n, uint32_t node, const struct gw_net_send *s,
                struct gw_net_req **out);
/* done will not run; dst is no longer written; release runs when the
 * payload is no longer referenced (possibly now). */
void gw_net_cancel(struct gw_net *n, struct gw_net_req *r);

struct gw_timer *gw_timer_create(struct gw_net *n, gw_net_fn fn, void *arg);
void gw_timer_arm(struct gw_timer *t, int ms);
void gw_timer_stop(struct gw_timer *t);
void gw_timer_destroy(struct gw_timer *t); /* NULL is a no-op */

#endif
