/*
 * pol_pp.h - partition placement (the PP mechanism): which nodes hold each
 * partition of each tenant.
 *
 *   controller ── view: nodes (capacity, up), partitions (demand EWMA, width,
 *        │        resident bytes), tenant weights, current rows, headroom u
 *        ▼
 *   place(view, budget_ms) ──▶ a row per partition (+ each holder's share of
 *        │                     its demand) and stats (bytes moved, max
 *        ▼                     utilisation, solver used)
 *   the controller moves the data (in the background, at a bounded rate) and
 *   publishes the rows.
 *
 * Policies decide, callers act: no I/O, no threads, no locks, no clock and
 * no random source. Time enters as `budget_ms`, which "milp" hands to its
 * solver as a time limit; the caller measures the call if it wants the time
 * (stats.solve_ms is the caller's field). One instance is NOT thread-safe;
 * different instances may run in different threads.
 *
 * Policies (one explicit registry, pol_pp.c):
 *   "hash"   rendezvous hashing of (tenant, partition) over every node in the
 *            view, up or not (a node that goes down keeps its rows: readers
 *            rebuild around it, and rows do not churn on a transient
 *            failure). Ignores demand, capacity and the current rows.
 *   "greedy" best-fit-decreasing on the dominant resource, keeping current
 *            holders where they still fit (the milp fallback, on its own).
 *   "milp"   the placement within capacity that moves the fewest bytes (a
 *            MILP solved by GLPK, warm-started from greedy), greedy's when
 *            the solver finds nothing in time or the model is infeasible.
 *
 * Load model (greedy and milp). Each tenant's demand is first scaled to its
 * weighted DRF share of POL_PP_DRF_FILL x u x the cluster (pol_pp_drf):
 * placement only owes every tenant its fair share, and the fill below u
 * leaves room to place whole holders. A partition's demand is its load summed
 * over its holders, and each holder carries what the gateway's reads ask of
 * it (pol_pp_slot_share): a copies partition (k == 1) is read from any copy
 * and replica selection spreads reads over them, so each of its c holders
 * carries 1/c; a stripe partition (k > 1) is read from its k data positions
 * (slots 0..k-1; parity only when a data holder fails or is slow), so each
 * data holder carries 1/k and a parity holder nothing (the controller
 * passes k = m+1 for a partition read in small-object copies, slots
 * 0..m). (The demand the
 * gateways report does not tell writes, which touch every position, from
 * reads.) A node must stay within u * capacity on every resource.
 *
 * Rows. Partition p owns slots off_p .. off_p + width_p - 1 of the row
 * arrays, off_p = sum of the widths before it (pol_pp_slots counts them
 * all). A row holds c = min(width, eligible nodes) distinct node ids, then
 * the rest of its slots are unused: eligible is every node for "hash", the
 * up nodes otherwise. A holder kept from the current row stays in its slot
 * (slot j holds chunk j), and no current holder takes another slot of its
 * row (its chunk would move): bytes moved count by slot.
 */
#ifndef POL_PP_H
#define POL_PP_H

#include <stddef.h>
#include <stdint.h>

#define POL_PP_MAX_WIDTH 64

enum { POL_PP_REQ = 0, POL_PP_BYTES = 1, POL_PP_NRES = 2 };

struct pol_pp_node {
    uint32_t id;             /* distinct within a view */
    int up;                  /* 0: holds nothing new (hash still ranks it) */
    double cap[POL_PP_NRES]; /* requests/s and bytes/s it serves; > 0 when up */
};

struct pol_pp_part {
    uint32_t tenant;            /* owning tenant: must be in the view's tenants */
    uint32_t id;                /* partition number within its tenant */
    uint32_t width;             /* nodes it needs, k + m: 1..POL_PP_MAX_WIDTH */
    uint32_t k;                 /* 1 = whole copies, > 1 = stripes; <= width */
    double demand[POL_PP_NRES]; /* EWMA, summed over its holders; >= 0 */
    uint64_t resident_bytes;    /* bytes on each holder: what a new holder receives */
};

struct pol_pp_tenant {
    uint32_t id;
    double weight; /* finite, > 0 */
};

/* Everything borrowed for the call; nothing is kept. */
struct pol_pp_view {
    const struct pol_pp_node *nodes;
    size_t nnodes;
    const struct pol_pp_part *parts;
    size_t nparts;
    const struct pol_pp_tenant *tenants;
    size_t ntenants;
    /* The current placement in the slot layout, cur_len[p] ids in partition
     * p's slots; ids that are unknown, down or repeated count as missing
     * holders. NULL (both) = nothing placed yet. */
    const uint32_t *cur_rows;
    const uint32_t *cur_len;
    double headroom; /* u in (0, 1] */
    /* "hash" only: the 64-bit hash that scores the nodes, and its seed (the
     * controller passes cm_hash64 and 0). */
    uint64_t (*hash64)(const void *data, size_t len, uint64_t seed);
    uint64_t hash_seed;
};

struct pol_pp_stats {
    const char *solver;           /* "hash", "milp" or "greedy" (static) */
    uint64_t bytes_moved;         /* resident bytes x holders new to their partition */
    uint32_t parts_moved;         /* partitions whose node set changed */
    uint32_t free_parts;          /* partitions the MILP was allowed to move */
    double max_util[POL_PP_NRES]; /* over up nodes, of the fair-share load */
    int feasible;                 /* every up node within headroom */
    int time_limited;             /* the solver stopped at its time limit */
    double solve_ms;              /* never written by a policy: the caller's */
};

/* Caller-allocated: rows and share have pol_pp_slots() entries (share may
 * be NULL), len has nparts. */
struct pol_pp_out {
    uint32_t *rows;
    double *share; /* each holder's pol_pp_slot_share (informational) */
    uint32_t *len;
    struct pol_pp_stats stats;
};

struct pol_pp_cfg {
    /* milp: the most binaries (partitions x nodes offered to each) in its
     * model. When partitions x up nodes is more, the model re-places only
     * the partitions that must move, each on a few candidate nodes (see
     * pol_pp_milp.c). 0 = 4096. */
    uint32_t max_binaries;
};

struct pol_pp; /* one policy instance; opaque */

struct pol_pp_ops {
    const char *name;
    /* cfg borrowed for the call (NULL = defaults); *out caller-owned
     * (destroy it). 0, CM_E_BADARG or -ENOMEM. */
    int (*create)(const struct pol_pp_cfg *cfg, struct pol_pp **out);
    void (*destroy)(struct pol_pp *pp); /* NULL is a no-op */
    /* Fills out (rows, len, share, stats). budget_ms bounds the solver
     * ("milp"; 0 = answer greedy at once). 0; CM_E_BADARG on a bad view;
     * CM_E_UNAVAIL when partitions exist but no node is eligible; -ENOMEM.
     * On error out's arrays are unspecified. */
    int (*place)(struct pol_pp *pp, const struct pol_pp_view *v, uint32_t budget_ms,
                 struct pol_pp_out *out);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_pp_ops *pol_pp_find(const char *name);
/* The registry (static array of n entries), e.g. for --help. */
const struct pol_pp_ops *const *pol_pp_list(size_t *n);

/* Sum of the partitions' widths: the length of the row arrays. */
size_t pol_pp_slots(const struct pol_pp_view *v);

/* The fraction of a partition's demand (k data positions, 1 = copies) that
 * the holder in slot j of a row of c holders carries, j < c: copies 1/c;
 * stripes 1/min(k, c) in the first min(k, c) slots, else 0 (see the load
 * model above). */
double pol_pp_slot_share(uint32_t k, uint32_t c, uint32_t j);

/* What weighted DRF fills: this fraction of u x the cluster. Demand that
 * fills u exactly would need a perfectly even placement; below it, whole
 * holders fit under u without moving nearly everything. */
#define POL_PP_DRF_FILL 0.9

/*
 * Weighted DRF over the whole cluster (progressive filling): the fraction
 * frac[i] in [0, 1] of tenant v->tenants[i]'s total demand that it is owed
 * when every tenant's dominant share of POL_PP_DRF_FILL * u * (capacity of
 * the up nodes)
 * grows in proportion to its weight, a tenant stopping when its demand is
 * met and every tenant using a resource stopping when that resource is full.
 * frac has v->ntenants entries. 0 or CM_E_BADARG.
 */
int pol_pp_drf(const struct pol_pp_view *v, double *frac);

/* Rendezvous hashing ("hash"). The score of node for (tenant, partition):
 * hash64 over the three ids as 32-bit little-endian words, with seed. */
uint64_t pol_pp_hash_score(uint64_t (*hash64)(const void *, size_t, uint64_t), uint64_t seed,
                           uint32_t tenant, uint32_t partition, uint32_t node);
/* Writes to out the min(width, nnodes) highest-scoring nodes (ties: lower
 * id first), best first, and returns that count. nodes (borrowed, any order,
 * distinct) and out must not overlap; width is capped at POL_PP_MAX_WIDTH. */
size_t pol_pp_hash_row(uint64_t (*hash64)(const void *, size_t, uint64_t), uint64_t seed,
                       uint32_t tenant, uint32_t partition, const uint32_t *nodes, size_t nnodes,
                       size_t width, uint32_t *out);

#endif
