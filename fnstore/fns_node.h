/*
 * fns_node.h - a storage node: the request pipeline that ties the
 * connections, the FQ scheduler, the chunk store and the COS pool together.
 *
 *   conn ─frame─▶ check (CRC, size, op) ─▶ pol_fq enqueue ──(CM_E_BUSY)──▶ answer
 *                        └─ META: log record, not scheduled ─▶ durable ─▶ answer
 *                                              │
 *                  dispatcher: pauses while the work dispatched and not yet
 *                  answered is at --max-dispatched / --max-dispatched-bytes
 *                  (an answer's payload counts until the connection has
 *                  written it), then the --cap-ops / --cap-bytes token buckets
 *                                              ▼
 *   PUT: pol_sms place ─▶ instance (−ENOSPC) ─▶ answer 0 + tag ─▶ COS write job
 *        ─▶ persisted ─▶ chunk record in the insertion log (CM_WF_COS_SYNC: answer
 *        after the write)
 *   GET: in memory (an instance or the cache space) ─▶ answer by reference, maybe
 *        compacted into the current generation │ miss: tag of a lost instance ─▶
 *        CM_E_STALE │ chunk being recovered ─▶ wait for it, asked first │ else COS
 *        read job ─▶ verify, re-admit or cache, answer CM_WF_FROM_COS
 *   DEL: store ─▶ delete record, COS delete job ─▶ answer
 *   STAT: store │ miss ─▶ COS read ─▶ answer
 *   answer ─▶ pol_fq complete(actual bytes), reqstats, conn send
 *            ─▶ payload written (or dropped) ─▶ dispatch resumes
 *
 * Memory is a set of instance slots (fns_store.h); which tenant's pool
 * opens, fills, compacts, ages and releases instances follows pol_sms
 * (fns_node_sms.c), with the controller's decisions from the heartbeat.
 * Lost instances (reclaimed, or found in the insertion log after a
 * restart) are recovered from COS by --recovery-helpers threads.
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
#include "pol_sms.h"

struct cm_cos;
struct cm_reqstats;
struct fns_node;

struct fns_node_cfg {
    uint32_t id;
    const char *listen;        /* "127.0.0.1:9500" (port 0: any); borrowed for create */
    uint64_t capacity;         /* bytes of instance memory: capacity / inst_bytes slots */
    uint64_t inst_bytes;       /* one instance's storage partition */
    uint64_t cache_bytes;      /* the cache space's budget (apart from capacity) */
    double reclaim_rate;       /* instances reclaimed per minute at random; 0 = none */
    uint32_t recovery_helpers; /* R threads recovering lost instances */
    uint32_t max_chunk;        /* larger PUT payloads -> CM_E_TOOBIG */
    uint32_t queue_limit;      /* per tenant; 0 = unlimited */
    double cap_ops;            /* requests/s; 0 = off */
    double cap_bytes;          /* bytes/s; 0 = off */
    /* Work dispatched and not yet answered (answers' payloads count until
     * written): at most this many requests / bytes; 0 = no bound. */
    uint32_t max_dispatched;
    uint64_t max_dispatched_bytes;
    const char *sched; /* FQ policy name; borrowed for create */
    int cos_threads;
    int cos_linger_ms; /* small writes gather this long into one COS segment */
    uint64_t cos_segment_max; /* appended segments roll over past it (0: FNS_PACK_ROLL) */
    uint32_t incarnation;
    int handle_signals;  /* SIGTERM/SIGINT start a clean shutdown */
    uint64_t arena_slab; /* chunk memory slab bytes (fns_arena); 0 = malloc per chunk */
    uint32_t arena_keep; /* empty slabs kept for reuse */
};

/* The SMS figures of a node (cumulative counters, gauges as of the last
 * tick). */
struct fns_node_sms_stats {
    uint64_t inst_bytes, slots;
    uint64_t instances[POL_SMS_NSTATES]; /* not free, by state (none RELEASED) */
    uint64_t lost;                       /* of those: being recovered */
    uint64_t memory_bytes;               /* instances x inst_bytes */
    uint64_t cache_bytes, cache_budget, cache_chunks;
    uint64_t cache_hits, cache_inserts, cache_evictions;
    uint64_t stale, compactions, compaction_bytes, readmissions;
    uint64_t merges, merge_chunks; /* instances emptied into others of their generation */
    uint64_t opened, released, reclaimed, warmups, decisions;
    uint64_t recovery_chunks, recovery_bytes, recoveries, recovery_running, recovery_helpers;
    uint64_t recovery_ns;    /* summed time of recoveries, the running ones included */
    double recovery_seconds; /* the same in seconds */
    uint64_t ilog_objects, ilog_records, ilog_live, ilog_batches, ilog_bytes;
    uint64_t ilog_deleted, ilog_carried, ilog_pending, metas;
    int heard; /* the controller's "sms" block was heard */
    const char *policy;
};

/* One instance as heartbeats report it. */
struct fns_node_inst {
    uint32_t slot, tag, tenant;
    uint64_t gen;
    int state, lost; /* enum pol_sms_state */
    uint64_t used, put_bytes, read_bytes, read_chunks;
    uint64_t warm_ns; /* last invocation (cm_now_ns) */
};

/* A tenant's SMS cost, cumulative. */
struct fns_node_cost {
    uint32_t tenant;
    uint64_t warmups, recoveries;
    uint64_t cos_puts, cos_gets, cos_deletes, cos_put_bytes, cos_get_bytes;
};

/* The controller's heartbeat answer, SMS part (docs/internal-api.md). */
struct fns_sms_decision {
    uint32_t slot, tag;
    int state; /* enum pol_sms_state */
    uint64_t gen;
    int warm_up;
};
struct fns_sms_pool {
    uint32_t tenant;
    uint64_t gen, gen_age_ms;
};
struct fns_sms_orders {
    int has_sms;
    char policy[16];
    struct pol_sms_cfg cfg; /* interval, M, N, warm-ups, A, max_instances */
    struct fns_sms_pool *pools;
    size_t npools;
    struct fns_sms_decision *decisions;
    size_t ndecisions;
    uint32_t *reclaim;
    size_t nreclaim;
    int reclaim_all;
};
void fns_sms_orders_free(struct fns_sms_orders *o); /* NULL is a no-op */

struct fns_node_stats {
    uint16_t port;
    uint32_t id, incarnation, instances; /* instances: not free */
    uint64_t capacity_bytes, used_bytes, chunks;
    uint64_t cos_pending, cos_writes_total, cos_reloads_total, bad_frames_total;
    uint64_t cos_segments, cos_packed_chunks;      /* small chunks packed in COS segments */
    uint64_t cos_segments_held;                    /* of cos_segments: empty, kept for tombstones */
    struct fns_arena_stats arena;                  /* zero without an arena */
    const char *sched;                             /* the FQ policy's name (static) */
    double cap_ops, cap_bytes;                     /* emulated capacity; 0 = none */
    uint64_t max_dispatched, max_dispatched_bytes; /* the dispatch bound; 0 = none */
    uint64_t dispatched, dispatched_bytes;         /* under that bound now (per tick) */
    uint64_t dispatch_pauses_total;                /* times dispatch stopped at the bound */
    uint64_t queued;                               /* requests waiting in the FQ (per tick) */
    struct fns_node_sms_stats sms;
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
/* The instances not free (a snapshot at most ~200 ms old): *out
 * malloc'd, transferred; returns the count. Any thread. */
size_t fns_node_instances(struct fns_node *n, struct fns_node_inst **out);
/* Every tenant's SMS cost, likewise. Any thread. */
size_t fns_node_costs(struct fns_node *n, struct fns_node_cost **out);
/* The controller's answer (transferred); applied on the loop thread, in
 * order: sms, pools, decisions, reclaim. Any thread. */
void fns_node_sms_orders(struct fns_node *n, struct fns_sms_orders *o);
/* New local weights (copied); applied on the loop thread. Any thread. */
void fns_node_set_weights(struct fns_node *n, const uint32_t *tenants, const double *weights,
                          size_t count);

#endif
