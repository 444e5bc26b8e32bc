/*
 * pol_fq.h - fair-queue schedulers (the FQ mechanism): which waiting request
 * a storage node runs next.
 *
 *   conn ──enqueue(item)──▶ [ policy: one FIFO, or per-tenant queues ] ──dequeue──▶ dispatcher
 *                                                                                     │ runs it
 *              policy state ◀──────────── complete(item, actual bytes) ◀──────────────┘
 *
 * Policies decide, callers act: a policy does no I/O, starts no threads,
 * takes no locks and never reads a clock (`now_ns` is passed in, any
 * monotonic origin). One instance is NOT thread-safe: the caller serializes
 * every call on it (fnstore calls it from its event-loop thread only).
 *
 * Policies (registered in one explicit list, pol_fq.c; pol_fq_find()):
 *   drfq  DRR token-based DRF over (requests, bytes); the default
 *   drr   weighted DRR on request count only (every request costs 1)
 *   fifo  one queue in arrival order, no fairness
 *
 * Cost model (MECHANISMS.md). A request costs the vector (1, bytes);
 * normalized by the node's capacity it is (1/cap_ops, bytes/cap_bytes) and
 * its dominant cost is the larger, in seconds of the node's capacity. When
 * cap_ops / cap_bytes are 0 (no emulated cap) the nominal capacity of a node
 * on this machine class is used instead (POL_FQ_NOMINAL_*, or cfg). drfq
 * schedules by dominant cost; drr by request count; every policy reports
 * dominant cost in pol_fq_tenant_info.served_cost.
 *
 * Charging: dequeue charges the estimate (charged_bytes) and complete()
 * corrects by the actual bytes, so a tenant's deficit may go negative; the
 * debt is kept while it is idle but capped at debt_quanta of its quanta.
 * Credit is never saved across idleness. A GET whose size the caller does
 * not know (POL_FQ_UNSIZED) is charged the tenant's GET-size estimate: an
 * EWMA (1/8) of the actual bytes of its completed POL_FQ_GET items, seeded
 * with POL_FQ_GET_BYTES_INIT and never below 1 byte.
 *
 * Caller contract for an item, set before enqueue:
 *   PUT                   flags 0,                          est_bytes = payload
 *   GET, size known       flags POL_FQ_GET,                 est_bytes = chunk size
 *   GET, size unknown     flags POL_FQ_GET|POL_FQ_UNSIZED,  est_bytes ignored
 *   anything else         flags 0,                          est_bytes = 0 (one request)
 * and complete() gets the bytes really moved (a GET that found nothing: 0).
 *
 * Items are intrusive and caller-owned: embed a struct pol_fq_item in the
 * request. Between a successful enqueue and the dequeue that returns it the
 * item is linked into the scheduler (the caller must neither free nor
 * modify it); dequeue hands it back with enq_ns and charged_bytes set, so
 * the caller measures the queue wait as (dequeue's now_ns - enq_ns).
 * complete() only reads it. Every operation is O(1) amortized: the
 * per-tenant table grows by doubling, and a dequeue looks at about
 * 1 + cost/quantum tenants on average whatever the number of tenants (at
 * most about 3x the tenants waiting, whatever the sizes).
 */
#ifndef POL_FQ_H
#define POL_FQ_H

#include <stddef.h>
#include <stdint.h>

/* The registry's first entry, as a literal for option tables. */
#define POL_FQ_DEFAULT "drfq"

/* Nominal capacity of one node on this machine class, used when cap_ops /
 * cap_bytes are 0: a node spends ~8.5 us of CPU per unpipelined GET 1 KiB
 * (~115k/s); bytes are bounded by the path out of the node (the loopback
 * path moves ~1.8 GB/s of GET through a gateway here, 10 GbE 1.25 GB/s).
 * Their ratio, ~10 KiB, is the size at which a request costs as much in
 * bytes as in count: a 1 KiB GET costs 10 us, a 64 KiB GET 61 us. */
#define POL_FQ_NOMINAL_OPS 100000.0       /* requests/s */
#define POL_FQ_NOMINAL_BYTES 1073741824.0 /* bytes/s (1 GiB/s) */
#define POL_FQ_QUANTUM_BYTES 65536        /* drfq default quantum: one 64 KiB request */
#define POL_FQ_DEBT_QUANTA 8.0            /* default debt cap, in the tenant's quanta */
#define POL_FQ_GET_BYTES_INIT 4096.0      /* GET-size estimate before any GET completes */

enum pol_fq_flags {
    POL_FQ_GET = 1u << 0,     /* a read: its actual bytes feed the GET-size estimate */
    POL_FQ_UNSIZED = 1u << 1, /* est_bytes unknown: charge the tenant's GET-size estimate */
};

struct pol_fq_item {
    struct pol_fq_item *next; /* private to the policy */
    uint32_t tenant;          /* set by the caller before enqueue */
    uint32_t flags;           /* set by the caller: enum pol_fq_flags */
    uint64_t est_bytes;       /* set by the caller: estimated bytes in + out */
    uint64_t enq_ns;          /* set by enqueue (now_ns) */
    uint64_t charged_bytes;   /* set by dequeue: bytes charged (est_bytes or the estimate) */
};

/* Every field: 0 = the default named beside it. */
struct pol_fq_cfg {
    uint32_t queue_limit; /* max waiting items per tenant; 0 = unlimited */
    double cap_ops;       /* node capacity (req/s) to normalize costs; 0 = unknown */
    double cap_bytes;     /* node capacity (B/s) to normalize costs; 0 = unknown */
    double nominal_ops;   /* req/s assumed when cap_ops is 0; 0 = POL_FQ_NOMINAL_OPS */
    double nominal_bytes; /* B/s assumed when cap_bytes is 0; 0 = POL_FQ_NOMINAL_BYTES */
    /* DRR quantum for a tenant of average weight, in the policy's cost unit
     * (drr: requests, default 1; drfq: seconds of node capacity, default the
     * dominant cost of a POL_FQ_QUANTUM_BYTES request). */
    double quantum;
    double debt_quanta; /* deepest debt in the tenant's quanta; 0 = POL_FQ_DEBT_QUANTA */
};

/* A read-only view of one tenant, for reports (heartbeats, metrics). The
 * cumulative counters never go back; rates are differences over time. */
struct pol_fq_tenant_info {
    uint32_t tenant;
    double weight;             /* local weight; 1.0 until set_weight */
    uint32_t queued;           /* waiting now */
    uint32_t running;          /* dequeued, not yet completed */
    uint64_t arrived_requests; /* enqueued or refused BUSY (the tenant's demand) */
    uint64_t arrived_bytes;    /* their est_bytes (unsized GET: the estimate at arrival) */
    uint64_t served_requests;  /* completed */
    uint64_t served_bytes;     /* actual bytes of completed items */
    /* Dominant cost of completed items (actual bytes), in seconds of node
     * capacity: its growth per second is the share of the node's dominant
     * resource the tenant got; divided by weight, what drfq equalizes. */
    double served_cost;
    double est_get_bytes; /* current GET-size estimate */
};

struct pol_fq; /* one scheduler instance; opaque */

struct pol_fq_ops {
    const char *name;
    /* cfg is borrowed for the call; *out is caller-owned (destroy it).
     * 0, CM_E_BADARG or -ENOMEM. */
    int (*create)(const struct pol_fq_cfg *cfg, struct pol_fq **out);
    /* NULL is a no-op. Items still queued are dropped from the scheduler
     * (never freed: they are the caller's). */
    void (*destroy)(struct pol_fq *q);
    /* it: caller-owned, linked until dequeued. 0; CM_E_BUSY when the
     * tenant already has queue_limit items waiting; -ENOMEM. Both 0 and
     * CM_E_BUSY count as an arrival. */
    int (*enqueue)(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns);
    /* The next item to run (ownership back to the caller), or NULL when
     * nothing waits. Work-conserving: never NULL while something waits. */
    struct pol_fq_item *(*dequeue)(struct pol_fq *q, uint64_t now_ns);
    /* it (borrowed) was returned by dequeue and has finished; actual_bytes
     * is what it really moved. Call exactly once per dequeued item. */
    void (*complete)(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes,
                     uint64_t now_ns);
    /* Local weight of a tenant: finite, > 0, <= 10000, else CM_E_BADARG.
     * Takes effect at the tenant's next quantum. */
    int (*set_weight)(struct pol_fq *q, uint32_t tenant, double weight);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_fq_ops *pol_fq_find(const char *name);
/* The registry (static array of n entries), e.g. for --help; the first
 * entry is the default (POL_FQ_DEFAULT). */
const struct pol_fq_ops *const *pol_fq_list(size_t *n);

/* Views shared by every policy (same thread rules as the ops). */
const struct pol_fq_ops *pol_fq_ops_of(const struct pol_fq *q);
size_t pol_fq_len(const struct pol_fq *q);                       /* items waiting */
uint32_t pol_fq_queued(const struct pol_fq *q, uint32_t tenant); /* 0 if unknown */
/* Tenant records dequeue has looked at, cumulative: the scheduler's work
 * (divided by the dequeues, its cost per request). */
uint64_t pol_fq_visits(const struct pol_fq *q);
/* Calls cb for every tenant the scheduler has seen (any order); the info
 * pointer is borrowed for the call. */
void pol_fq_foreach_tenant(const struct pol_fq *q,
                           void (*cb)(void *arg, const struct pol_fq_tenant_info *ti), void *arg);

#endif
