/*
 * ctl_pp.h - partition placement in the controller (private to
 * controller/): the placement rows as persisted state with an epoch, the
 * demand gateways report, and the loop that re-places partitions with a PP
 * policy (pol_pp.h) when some node cannot serve its fair-share load.
 *
 *   gateways ──POST /v1/internal/demand (1 s): per (tenant, partition)
 *        │      requests/s, bytes/s, resident bytes; migration progress
 *        ▼
 *   ctl_pp ── rows per (tenant, partition), placement epoch ──▶ ctl_store (LMDB)
 *        │    every interval: fair-share load per node from the summed
 *        │    demand (DRF-scaled) vs capacity; over the headroom for
 *        │    `checks` checks in a row, no migration running, cool-down over:
 *        ▼    solve (off every lock, time-limited), commit rows + epoch
 *   GET /v1/placement, /v1/internal/state ◀── the stored rows
 *
 * Rows. A tenant's rows are made with "hash" (rendezvous over every node
 * ever registered: ctl_place.h) the first time a snapshot shows the tenant,
 * so a store from before placement was stored gets exactly the rows it
 * served. A row made by hash that is shorter than the tenant's width
 * (fewer nodes were known) is made again by hash when more nodes are
 * known; nothing else changes a row but a re-placement. A node that joins
 * moves nothing by itself. Each row keeps the placement epoch at which it
 * last changed (row_epoch), so a gateway migrates only partitions whose row
 * changed since its last finished migration pass.
 *
 * Invariants: memory and disk change together under the mutex, disk
 * first; the placement epoch grows exactly when rows change (tenants'
 * rows added, changed or dropped), one step per committed change; a
 * snapshot older than one already synced changes nothing.
 *
 * Threads: every function may be called from any thread (one mutex). The
 * loop thread (ctl_pp_start) runs the policy with no lock held.
 * ctl_pp_rebalance blocks its caller until the loop thread has run it.
 *
 * The files behind this header, and what each owns: ctl_pp_impl.h.
 */
#ifndef CTL_PP_H
#define CTL_PP_H

#include <stddef.h>
#include <stdint.h>

#include "pol_pp.h"

struct ctl_pp;
struct ctl_state;
struct ctl_store;
struct ctl_snapshot;

#define CTL_PP_NAME_MAX 16
#define CTL_PP_GW_MAX 64 /* characters of a gateway's name */

struct ctl_pp_cfg {
    const char *policy;     /* a pol_pp_find name: "milp" or "hash" (copied) */
    uint32_t partitions;    /* per tenant */
    double headroom;        /* u in (0, 1]: a node over u x capacity is over */
    uint32_t interval_ms;   /* between checks */
    uint32_t checks;        /* consecutive checks over before a re-placement */
    uint32_t cooldown_ms;   /* after a re-placement, and after its migration */
    uint32_t budget_ms;     /* the solver's time limit */
    uint32_t gw_timeout_ms; /* a gateway silent longer is ignored */
    /* Requests in flight count as demand: a tenant asks for at least
     * inflight / latency requests per second (see ctl_pp_demand_scale). */
    uint32_t latency_ms;
    double nominal_ops;   /* capacity of a node without --cap-ops */
    double nominal_bytes; /* capacity of a node without --cap-bytes */
};

/* One tenant's rows (a copy; arrays owned by the struct's holder). */
struct ctl_pp_trows {
    uint32_t tenant;
    uint32_t width; /* k + m */
    uint32_t k;
    uint32_t parts;
    uint32_t *len;       /* parts: entries used in each row */
    uint32_t *ids;       /* parts x width node ids */
    uint64_t *row_epoch; /* parts: placement epoch of the row's last change */
    uint8_t *by_hash;    /* parts: 1 = made by hash (refilled when short) */
    uint64_t seen; /* newest state epoch of a snapshot that had the tenant */
};

/* The rows of one snapshot's tenants, in its order. */
struct ctl_pp_rows {
    uint64_t epoch;
    char solver[CTL_PP_NAME_MAX]; /* what made the last change */
    size_t n;
    struct ctl_pp_trows *t;
};

/* One gateway's report (parsed; borrowed for the call). */
/* The gateway's default --small-threshold: smaller objects are stored as
 * 1+m copies (slots 0..m). The load model reads a partition whose mean
 * request is smaller as copies in those slots. */
#define CTL_PP_SMALL_BYTES (256.0 * 1024.0)

struct ctl_pp_demand {
    uint32_t tenant, partition;
    double req, bytes;       /* per second, EWMA */
    uint64_t resident_bytes; /* on each holder (pol_pp_part) */
    double inflight;         /* mean requests in flight (Little's law) */
};

struct ctl_pp_mig {
    uint64_t done_epoch;        /* placement epoch of its last finished pass */
    uint64_t moving_partitions; /* partitions with versions still to move */
    uint64_t bytes_to_move;     /* in the current pass */
    uint64_t bytes_moved;       /* in the current pass */
    uint64_t bytes_moved_total; /* since the gateway started */
};

struct ctl_pp_report {
    const char *gateway; /* its name, <= CTL_PP_GW_MAX chars */
    size_t n;
    const struct ctl_pp_demand *d;
    struct ctl_pp_mig mig;
};

struct ctl_pp_status {
    uint64_t epoch;
    char policy[CTL_PP_NAME_MAX];
    char solver[CTL_PP_NAME_MAX]; /* of the last re-placement ("hash": none yet) */
    uint64_t moving_partitions, bytes_to_move, bytes_moved, bytes_moved_total;
    size_t gateways;       /* reporting now */
    int migrating;         /* some gateway has not finished the current epoch */
    double max_util;       /* of the current rows, last check */
    uint32_t over_checks;  /* consecutive checks over the headroom */
    uint64_t replacements; /* re-placements committed */
    uint64_t checks;       /* checks run */
    double last_solve_ms;  /* the last solver run */
    uint64_t last_moved_bytes, last_parts_moved;
    double demand_req, demand_bytes; /* summed over gateways */
};

/* The outcome of a re-placement attempt. */
struct ctl_pp_result {
    int rc;                       /* 0, or why nothing could be tried */
    uint64_t epoch;               /* after it */
    char solver[CTL_PP_NAME_MAX]; /* the policy's answer: "milp", "greedy", "hash" */
    int changed;                  /* rows committed */
    uint32_t parts_moved;
    uint64_t bytes_moved; /* the policy's estimate */
    double solve_ms;
    double util_before, util_after; /* max fair-share utilisation */
};

/* store and st borrowed, must outlive pp. Loads the stored rows. 0, a
 * store error, or CM_E_CONFIG (bad record, unknown policy). */
int ctl_pp_create(struct ctl_store *store, struct ctl_state *st, const struct ctl_pp_cfg *cfg,
                  struct ctl_pp **out);
/* Starts the loop thread. */
int ctl_pp_start(struct ctl_pp *pp);
void ctl_pp_destroy(struct ctl_pp *pp); /* stops the thread; NULL is a no-op */

/* The configured policy's name (static). */
const char *ctl_pp_policy(const struct ctl_pp *pp);

/* Brings the rows in line with s (new tenants, dropped tenants, short hash
 * rows) and copies those of s's tenants into out (free with
 * ctl_pp_rows_fini). 0 or a store error (out then holds the rows as they
 * were). */
int ctl_pp_rows(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out);
void ctl_pp_rows_fini(struct ctl_pp_rows *r);

/* Keeps r as its gateway's latest report. 0 or CM_E_BADARG. */
int ctl_pp_report(struct ctl_pp *pp, const struct ctl_pp_report *r, uint64_t now_ns);

/* Runs a re-placement now (on the loop thread; waits up to the solver
 * budget + 10 s). "hash" never re-places: rc 0, changed 0. */
void ctl_pp_rebalance(struct ctl_pp *pp, struct ctl_pp_result *out);

void ctl_pp_status(struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out);

/* ---- pure parts, exposed for tests ---- */

/* Hysteresis of the trigger: consecutive checks over the headroom, and a
 * quiet time after each re-placement and while a migration runs. */
struct ctl_pp_trig {
    uint32_t over; /* consecutive checks over */
    uint64_t quiet_until_ms;
};

struct ctl_pp_trig_cfg {
    double headroom;
    uint32_t checks;
    uint32_t cooldown_ms;
};

/* One check: 1 when a re-placement should run now. A running migration
 * resets the count and pushes the quiet time to now + cooldown, so the
 * cool-down counts from when it was last seen running. */
int ctl_pp_trig_step(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, double max_util,
                     int migrating, uint64_t now_ms);
/* A re-placement was tried (committed or not): quiet for the cool-down. */
void ctl_pp_trig_tried(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, uint64_t now_ms);

/*
 * The highest fair-share utilisation of an up node under v's current rows
 * (v->cur_rows, cur_len): each tenant's demand scaled to its DRF share
 * (pol_pp_drf), a partition's load spread over its holders that are up,
 * in slot order, by pol_pp_slot_share (copies evenly; a stripe's first k
 * up holders, the ones reads ask), over each node's capacity, the larger
 * resource. 0 when no node is up
 * or nothing is placed; CM_E_BADARG on a bad view (*max_util then 0).
 */
int ctl_pp_util(const struct pol_pp_view *v, double *max_util);

/* The demand the summed reports d[n] (sorted by tenant) stand for,
 * rewritten in place: a tenant whose requests in flight say it would take
 * more than it was served (inflight x 1000 / latency_ms requests/s over all
 * its partitions, more than their requests/s) has every partition's req and
 * bytes scaled up alike. Its partitions keep the split of its answered
 * requests: a request waits longest where it is served slowest, so each
 * partition's own backlog would put a closed-loop client's demand on the
 * busiest nodes, while its requests split by the keys it picks. A tenant
 * with nothing answered asks inflight / latency per partition (no bytes).
 * latency_ms 0: reports as they are. */
void ctl_pp_demand_scale(struct ctl_pp_demand *d, size_t n, uint32_t latency_ms);

/* Whether a policy's answer is worth moving data for: it moves something,
 * and it fits within the headroom or lowers the utilisation by at least
 * 5 points. */
int ctl_pp_accept(double util_before, const struct pol_pp_stats *after, double headroom);

/* Record codec of one tenant's rows (JSON), exposed for the fuzzer and
 * tests. encode: malloc'd text (NUL-terminated; *len its length) or NULL.
 * decode: 0 or CM_E_CONFIG; r's arrays malloc'd (ctl_pp_trows_fini). */
char *ctl_pp_encode(const struct ctl_pp_trows *r, size_t *len);
int ctl_pp_decode(uint32_t tenant, const char *text, size_t len, struct ctl_pp_trows *r);
void ctl_pp_trows_fini(struct ctl_pp_trows *r);

#endif
