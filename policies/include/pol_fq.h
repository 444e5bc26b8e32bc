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
 * Cost model (MECHANISMS.md): a request costs the vector (1 request,
 * est_bytes bytes); the policy charges the estimate at dequeue and corrects
 * by the actual bytes at complete() (a GET's size is only an estimate).
 *
 * Items are intrusive and caller-owned: embed a struct pol_fq_item in the
 * request. Between a successful enqueue and the dequeue that returns it the
 * item is linked into the scheduler (the caller must neither free nor
 * modify it); dequeue hands it back. complete() only reads it. Every
 * operation is O(1) (amortized: the per-tenant table grows by doubling).
 *
 * Policies are registered in one explicit list (pol_fq.c); look them up by
 * name with pol_fq_find(). Today: "fifo". "drr" and "drfq" use the same
 * per-tenant records (queue, weight, deficit) and slot into that list.
 */
#ifndef POL_FQ_H
#define POL_FQ_H

#include <stddef.h>
#include <stdint.h>

struct pol_fq_item {
    struct pol_fq_item *next; /* private to the policy */
    uint32_t tenant;          /* set by the caller before enqueue */
    uint64_t est_bytes;       /* set by the caller: estimated bytes in + out */
    uint64_t enq_ns;          /* set by enqueue (now_ns) */
    uint64_t charged_bytes;   /* set by dequeue: bytes charged for this item */
};

struct pol_fq_cfg {
    uint32_t queue_limit; /* max waiting items per tenant; 0 = unlimited */
    double cap_ops;       /* node capacity (req/s) to normalize costs; 0 = unknown */
    double cap_bytes;     /* node capacity (B/s) to normalize costs; 0 = unknown */
    double quantum;       /* DRR quantum in dominant-cost units; 0 = policy default */
};

/* A read-only view of one tenant, for reports (heartbeats, metrics). */
struct pol_fq_tenant_info {
    uint32_t tenant;
    double weight;            /* 1.0 until set_weight */
    uint32_t queued;          /* waiting now */
    uint32_t running;         /* dequeued, not yet completed */
    uint64_t served_requests; /* completed, cumulative */
    uint64_t served_bytes;    /* actual bytes of completed items, cumulative */
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
     * tenant already has queue_limit items waiting; -ENOMEM. */
    int (*enqueue)(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns);
    /* The next item to run (ownership back to the caller), or NULL when
     * nothing waits. Work-conserving: never NULL while something waits. */
    struct pol_fq_item *(*dequeue)(struct pol_fq *q, uint64_t now_ns);
    /* it (borrowed) was returned by dequeue and has finished; actual_bytes
     * is what it really moved. Call exactly once per dequeued item. */
    void (*complete)(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes,
                     uint64_t now_ns);
    /* Local weight of a tenant: finite, > 0, <= 10000, else CM_E_BADARG. */
    int (*set_weight)(struct pol_fq *q, uint32_t tenant, double weight);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_fq_ops *pol_fq_find(const char *name);
/* The registry (static array of n entries), e.g. for --help. */
const struct pol_fq_ops *const *pol_fq_list(size_t *n);

/* Views shared by every policy (same thread rules as the ops). */
const struct pol_fq_ops *pol_fq_ops_of(const struct pol_fq *q);
size_t pol_fq_len(const struct pol_fq *q);                       /* items waiting */
uint32_t pol_fq_queued(const struct pol_fq *q, uint32_t tenant); /* 0 if unknown */
/* Calls cb for every tenant the scheduler has seen (any order); the info
 * pointer is borrowed for the call. */
void pol_fq_foreach_tenant(const struct pol_fq *q,
                           void (*cb)(void *arg, const struct pol_fq_tenant_info *ti), void *arg);

#endif
