/*
 * pol_wa.h - weight allocation (the WA mechanism): how each tenant's global
 * weight W_t is split into local weights w[t][n], one per storage node, so
 * that per-node fair queuing adds up to a cluster-wide weighted fair share.
 *
 *   heartbeats ─▶ controller ─view (W, demand, served, wait, w)─▶ step() ─▶ new w ─▶ nodes
 *                 (about once a second)                          (policy)      (FQ set_weight)
 *
 * Policies decide, callers act: a policy does no I/O, starts no threads,
 * takes no locks and never reads a clock (`now_ns` is passed in, any
 * monotonic origin). One instance is NOT thread-safe: the caller
 * serializes every call on it. An instance keeps only smoothed
 * measurements from earlier steps and the weights in force when they were
 * taken, keyed by tenant and node id: the caller owns the weight matrix
 * and passes it in each time.
 *
 * Invariants of every successful step's output, whatever the input
 * (zero demand, tenants or nodes added or removed, nodes down, unknown or
 * out-of-range current weights), up to floating-point rounding:
 *   - each tenant's local weights sum to N * W_t (N = nnodes, up or not);
 *   - each node's local weights sum to sum_t W_t;
 *   - every local weight is >= floor_frac * W_t (> 0).
 * The even matrix w[t][n] = W_t satisfies all three; see pol_wa_pisces.c
 * for how "pisces" keeps them while it moves weight.
 *
 * Units: demand and served are rates in the node's dominant-cost units
 * per second (MECHANISMS.md: a request costs max(1/cap_ops,
 * bytes/cap_bytes) of the node). Any common unit works as long as demand
 * and served use the same one; nothing here needs a node's capacity.
 *
 * Policies are registered in one explicit list (pol_wa.c); look them up
 * by name with pol_wa_find(). Today: "even" (the strawman, w = W_t) and
 * "pisces" (weight swaps along widest cycles toward the demand shapes
 * fitted to the invariants, and from better- to worse-served tenants).
 */
#ifndef POL_WA_H
#define POL_WA_H

#include <stddef.h>
#include <stdint.h>

/* Defaults, used for a cfg field left 0. */
#define POL_WA_ETA_DEFAULT 0.5            /* fraction of a gap closed per step */
#define POL_WA_DEAD_BAND_DEFAULT 0.03     /* gap to the target below this * the cell: ignored */
#define POL_WA_FLOOR_FRAC_DEFAULT 0.02    /* floor = this * W_t */
#define POL_WA_FAIR_BAND_DEFAULT 0.02     /* relative throughput gap ignored */
#define POL_WA_PRESSED_FRAC_DEFAULT 0.05  /* (demand - served) / demand above this: pressed */
#define POL_WA_PRESSED_WAIT_DEFAULT 0.005 /* s; mean queue wait above this: pressed */
#define POL_WA_SMOOTH_DEFAULT 1.0         /* s; EWMA time constant of the measurements */
#define POL_WA_MAX_CYCLES_DEFAULT 64      /* weight cycles pushed per step */

/* ntenants and nnodes are each at most this ("pisces" keeps T x T
 * matrices: meant for up to a few hundred tenants). */
#define POL_WA_MAX_DIM 1024

struct pol_wa_cfg {
    double eta;          /* damping, (0, 1] */
    double dead_band;    /* relative to the cell's target or weight, [0, 1) */
    double floor_frac;   /* (0, 1) */
    double fair_band;    /* [0, 1) */
    double pressed_frac; /* (0, 1) */
    double pressed_wait; /* s, > 0 */
    double smooth;       /* s, > 0; a tiny value turns smoothing off */
    uint32_t max_cycles; /* >= 1 */
};

struct pol_wa_tenant {
    uint32_t id;   /* unique within a view; keys the policy's history */
    double weight; /* W_t: finite, > 0, <= 10000 */
};

struct pol_wa_node {
    uint32_t id; /* unique within a view */
    int up;      /* 0: down; its column is kept (and projected), never swapped */
};

/* What one node measured for one tenant over the last period. */
struct pol_wa_cell {
    double demand; /* arrivals at the node's FQ per second (not only what it served) */
    double served; /* completed per second, same units */
    double wait;   /* mean queue wait in s of what was served; 0 = unknown */
};

/*
 * The read-only input of one step. Every pointer is borrowed for the call.
 * Matrices are row-major by tenant: entry [t * nnodes + n].
 */
struct pol_wa_view {
    size_t ntenants, nnodes;
    const struct pol_wa_tenant *tenants; /* [ntenants] */
    const struct pol_wa_node *nodes;     /* [nnodes] */
    /* [ntenants * nnodes], finite and >= 0; NULL = nothing measured yet. */
    const struct pol_wa_cell *cells;
    /* The local weights in force; NULL = none yet (start even). An entry
     * that is not finite or <= 0 is unknown (a tenant or node new to the
     * matrix) and starts at W_t; the rest are projected onto the
     * invariants before anything moves. */
    const double *w;
    uint64_t now_ns;
};

/* What a step did, for logs and metrics. */
struct pol_wa_stats {
    uint32_t cycles;     /* weight cycles pushed */
    double moved;        /* sum of |w_out - w_in| / 2 over the known entries of v->w */
    double max_mismatch; /* largest |target - w| / row of a tenant with demand ("even": 0) */
    int projected;       /* 1: the input broke an invariant beyond rounding */
};

struct pol_wa; /* one allocator instance; opaque */

struct pol_wa_ops {
    const char *name;
    /* cfg is borrowed for the call (NULL = all defaults); *out is
     * caller-owned (destroy it). 0, CM_E_BADARG or -ENOMEM. */
    int (*create)(const struct pol_wa_cfg *cfg, struct pol_wa **out);
    /* NULL is a no-op. */
    void (*destroy)(struct pol_wa *wa);
    /* Forgets the smoothed history (e.g. after the controller restarts). */
    void (*reset)(struct pol_wa *wa);
    /* Writes the new local weights to w_out ([ntenants * nnodes], caller's;
     * may be the same array as v->w). stats (caller's) may be NULL.
     * 0; CM_E_BADARG (a NULL or inconsistent view, a bad W_t, a measurement
     * that is negative or not finite, a repeated id, a dimension above
     * POL_WA_MAX_DIM) with w_out untouched; -ENOMEM. */
    int (*step)(struct pol_wa *wa, const struct pol_wa_view *v, double *w_out,
                struct pol_wa_stats *stats);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_wa_ops *pol_wa_find(const char *name);
/* The registry (static array of n entries), e.g. for --help. */
const struct pol_wa_ops *const *pol_wa_list(size_t *n);

/* The effective configuration (defaults filled in); borrowed from wa. */
const struct pol_wa_cfg *pol_wa_cfg_of(const struct pol_wa *wa);

/*
 * How far w ([ntenants * nnodes], borrowed) is from the invariants for the
 * tenants and nodes of v: the largest relative error of a row or column
 * sum, or 1.0 when some weight is below its floor (floor_frac * W_t) or is
 * not finite. 0 for an empty view. For assertions in the controller and
 * in tests.
 */
double pol_wa_invariant_error(const struct pol_wa_view *v, const double *w, double floor_frac);

#endif
