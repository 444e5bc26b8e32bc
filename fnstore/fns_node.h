/*
 * fns_node.h - a storage node: the request pipeline that ties the
 * connections, the FQ scheduler, the chunk store and the COS pool together.
 *
 *   conn ─frame─▶ check (CRC, size, op) ─▶ pol_fq enqueue ──(CM_E_BUSY)──▶ answer
 *                                              │
 *                  dispatcher: pauses while the work dispatched and not yet
 *                  answered is at --max-dispatched / --max-dispatched-bytes
 *                  (an answer's payload counts until the connection has
 *                  written it), then the --cap-ops / --cap-bytes token buckets
 *                                              ▼
 *   PUT: store (−ENOSPC) ─▶ answer 0 ─▶ COS write job ─▶ persisted
 *        (CM_WF_COS_SYNC: answer after the write)
 *   GET: store hit ─▶ answer by reference │ miss ─▶ COS read job ─▶ verify, re-insert,
 *                                         │                       answer CM_WF_FROM_COS
 *   DEL: store ─▶ COS delete job ─▶ answer      STAT: store │ miss ─▶ COS read ─▶ answer
 *   answer ─▶ pol_fq complete(actual bytes), reqstats, conn send
 *            ─▶ payload written (or dropped) ─▶ dispatch resumes
 *
 * Threads: fns_node_run runs the event loop on the calling thread ("loop
 * thread"); store, scheduler and connections are touched only there. The
 * functions marked "any thread" are safe from others (heartbeat, metrics).
 */
#ifndef FNS_NODE_H
#define FNS_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "cm_metrics.h"
#include "fns_arena.h"

struct cm_cos;
struct cm_reqstats;
struct fns_node;

struct fns_node_cfg {
    uint32_t id;
    const char *listen; /* "127.0.0.1:9500" (port 0: any); borrowed for create */
    uint64_t capacity;  /* bytes of chunk memory */
    uint32_t instances;
    uint32_t max_chunk;   /* larger PUT payloads -> CM_E_TOOBIG */
    uint32_t queue_limit; /* per tenant; 0 = unlimited */
    double cap_ops;       /* requests/s; 0 = off */
    double cap_bytes;     /* bytes/s; 0 = off */
    /* Work dispatched and not yet answered (answers' payloads count until
     * written): at most this many requests / bytes; 0 = no bound. */
    uint32_t max_dispatched;
    uint64_t max_dispatched_bytes;
    const char *sched;    /* FQ policy name; borrowed for create */
    int cos_threads;
    int cos_linger_ms; /* small writes gather this long into one COS segment */
    uint32_t incarnation;
    int handle_signals;  /* SIGTERM/SIGINT start a clean shutdown */
    uint64_t arena_slab; /* chunk memory slab bytes (fns_arena); 0 = malloc per chunk */
    uint32_t arena_keep; /* empty slabs kept for reuse */
};

struct fns_node_stats {
    uint16_t port;
    uint32_t id, incarnation, instances;
    uint64_t capacity_bytes, used_bytes, chunks;
    uint64_t cos_pending, cos_writes_total, cos_reloads_total, bad_frames_total;
    uint64_t cos_segments, cos_packed_chunks; /* small chunks packed in COS segments */
    uint64_t cos_segments_held;               /* of cos_segments: empty, kept for tombstones */
    struct fns_arena_stats arena;             /* zero without an arena */
    const char *sched;                        /* the FQ policy's name (static) */
    double cap_ops, cap_bytes;                /* emulated capacity; 0 = none */
    uint64_t max_dispatched, max_dispatched_bytes; /* the dispatch bound; 0 = none */
    uint64_t dispatched, dispatched_bytes;         /* under that bound now (per tick) */
    uint64_t dispatch_pauses_total;                /* times dispatch stopped at the bound */
    uint64_t queued;                               /* requests waiting in the FQ (per tick) */
};

/* One tenant as the FQ scheduler and the dispatcher see it. Costs are
 * dominant costs in seconds of this node's capacity (pol_fq.h). */
struct fns_node_tenant {
    uint32_t tenant;
    uint64_t requests, bytes;                 /* served (completed), cumulative; bytes actual */
    uint32_t queued;                          /* waiting now */
    uint32_t running;                         /* dispatched, not completed */
    double weight;                            /* local weight */
    uint64_t arrived_requests, arrived_bytes; /* enqueued or refused BUSY, cumulative */
    double arrived_cost;  /* their dominant cost (unsized GETs: the estimate), cumulative */
    double served_cost;   /* dominant cost of completed requests, cumulative */
    double share;         /* served_cost per second: EWMA over ~1 s */
    struct cm_hist qwait; /* queue waits (enqueue to dispatch), cumulative */
};

/* cos borrowed for the node's lifetime; *out caller-owned. Binds the
 * listen socket here (so errors surface before run). */
int fns_node_create(const struct fns_node_cfg *cfg, struct cm_cos *cos, struct fns_node **out);
/* Serves until fns_node_stop; then stops reading, finishes in-flight
 * requests, drains the COS queue, flushes answers, returns 0. */
int fns_node_run(struct fns_node *n);
void fns_node_stop(struct fns_node *n);    /* any thread */
void fns_node_destroy(struct fns_node *n); /* NULL is a no-op; after run returned */

void fns_node_stats(struct fns_node *n, struct fns_node_stats *out); /* any thread */
/* Shared with the node (thread-safe), valid until destroy. */
struct cm_reqstats *fns_node_reqstats(struct fns_node *n);
/* The per-tenant figures (a snapshot at most ~200 ms old, tenant order
 * unspecified): *out is malloc'd, transferred (NULL when there are none);
 * returns the count. Any thread. */
size_t fns_node_tenants(struct fns_node *n, struct fns_node_tenant **out);
/* New local weights (copied); applied on the loop thread. Any thread. */
void fns_node_set_weights(struct fns_node *n, const uint32_t *tenants, const double *weights,
                          size_t count);

#endif
