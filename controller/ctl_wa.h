/*
 * ctl_wa.h - weight allocation (WA) on the controller: the loop that turns
 * each tenant's global weight into one local weight per node, and the
 * local weight matrix the heartbeat answers carry (private to controller/).
 *
 *   every ~1 s, or at once after a tenant change (ctl_wa_kick):
 *   ctl_state ──snapshot + cells──▶ view ──pol_wa step──▶ invariants? ──▶ matrix
 *   (copied under the state mutex)        (no lock held)    (else even)    (swapped in
 *                                                                          under wa.mu)
 *   heartbeat answer ◀── ctl_wa_column(node) ◀── matrix
 *
 * The view (pol_wa.h): tenants with their global weight W_t; every
 * registered node with its up flag; per (tenant, node) of an up node the
 * demand (arriving dominant cost per second), the served dominant cost per
 * second and the mean queue wait, from the heartbeats (ctl_state_cells);
 * and the matrix in force. A full step runs on the interval; a kick runs a
 * projection only (the policy's step without measurements), which fits the
 * matrix to the new tenant set and weights without moving weight by
 * demand, so a weight change is in the answers as soon as the kick returns.
 *
 * The matrix lives in memory only: after a restart it starts even (w =
 * W_t) and is learned again from the next heartbeats, a few steps.
 *
 * Invariants of the matrix in force (checked after every step with
 * pol_wa_invariant_error; a step that breaks them, or fails, is replaced
 * by the even matrix and logged): each tenant's row sums to N * W_t over
 * the N registered nodes, each node's column to the sum of W_t, every
 * entry >= the policy's floor.
 *
 * Threads: one WA thread (ctl_wa_start) runs every step; the policy
 * instance is its alone. Every other function may be called from any
 * thread (they take wa.mu briefly). Without ctl_wa_start, ctl_wa_step runs
 * a step on the caller's thread (tests), which must then be the only one.
 */
#ifndef CTL_WA_H
#define CTL_WA_H

#include <stddef.h>
#include <stdint.h>

#include "pol_wa.h"

struct ctl_state;
struct ctl_snapshot;
struct ctl_cell;

/* A local weight matrix: rows by tenant, columns by node, both in
 * increasing id order. Arrays owned by the struct. */
struct ctl_wa_matrix {
    size_t ntenants, nnodes;
    uint32_t *tenants; /* [ntenants] */
    double *gw;        /* [ntenants]: the global weight the row was made for */
    uint32_t *nodes;   /* [nnodes] */
    double *w;         /* [ntenants * nnodes] */
};

void ctl_wa_matrix_fini(struct ctl_wa_matrix *m);
/*
 * The local weight of tenant at node for a tenant whose global weight is
 * now W: the matrix's entry, scaled by W / the row's global weight (a
 * weight changed since the step); W when the matrix has no such row or
 * column (a tenant or node new since). Rounded to 12 significant digits:
 * the rest is rounding noise of the step, and an even weight reads as W.
 */
double ctl_wa_matrix_get(const struct ctl_wa_matrix *m, uint32_t tenant, uint32_t node, double W);

/* One step's input: a pol_wa_view and the arrays it points into (owned). */
struct ctl_wa_input {
    struct pol_wa_view v;
    struct pol_wa_tenant *tenants;
    struct pol_wa_node *nodes;
    struct pol_wa_cell *cells; /* NULL: a projection */
    double *w;                 /* NAN where cur has no entry */
};

/*
 * Builds the view of snapshot s (borrowed): its tenants and nodes, the
 * cells (ncells, borrowed, as ctl_state_cells gives them; cells of
 * deleted tenants, unknown nodes and down nodes are left out) when
 * measure is 1, and the weights in force from cur (borrowed; may be
 * empty). Pure.
 */
void ctl_wa_input_build(const struct ctl_snapshot *s, const struct ctl_cell *cells, size_t ncells,
                        const struct ctl_wa_matrix *cur, int measure, uint64_t now_ns,
                        struct ctl_wa_input *out);
void ctl_wa_input_fini(struct ctl_wa_input *in);

/* What one step did. */
struct ctl_wa_result {
    struct pol_wa_stats stats; /* the policy's (zero after a fallback) */
    int rc;                    /* the policy's step: 0 or a negative code */
    double error;              /* pol_wa_invariant_error of its output (1 if it failed) */
    int fallback;              /* 1: the output is the even matrix instead */
};

/*
 * Runs the policy's step on in (borrowed) and writes the matrix to out
 * (caller's, overwritten; fini it): the policy's weights if its step
 * succeeded and keeps the invariants within tolerance (relative 1e-6 of
 * the sums, the floor floor_frac * W_t), else the even matrix. No lock,
 * no clock; pol is used on the caller's thread.
 */
void ctl_wa_run(const struct pol_wa_ops *ops, struct pol_wa *pol, const struct ctl_wa_input *in,
                struct ctl_wa_matrix *out, struct ctl_wa_result *res);

/* ---- the loop ---- */

struct ctl_wa;

struct ctl_wa_cfg {
    const char *policy;   /* a pol_wa name; borrowed for the call */
    uint64_t interval_ns; /* between full steps */
};

/* Totals and the last full step, for /metrics and /v1/fairness. */
struct ctl_wa_stats {
    uint64_t steps;       /* full steps */
    uint64_t projections; /* kicked projections */
    uint64_t fallbacks;   /* steps replaced by the even matrix */
    uint64_t cycles_total;
    double moved_total;
    struct pol_wa_stats last; /* the last full step */
    double last_seconds;      /* its run time (view, policy, checks) */
    double error;             /* pol_wa_invariant_error of the matrix in force */
    int64_t age_ms;           /* since the matrix in force was made; -1: none yet */
};

/* st is borrowed and must outlive wa. CM_E_BADARG: no policy of that name
 * or a bad interval; -ENOMEM. */
int ctl_wa_create(struct ctl_state *st, const struct ctl_wa_cfg *cfg, struct ctl_wa **out);
/* Stops the thread if started, frees. NULL is a no-op. */
void ctl_wa_destroy(struct ctl_wa *wa);
/* Starts the WA thread; its first step runs at once. 0 or a negative code. */
int ctl_wa_start(struct ctl_wa *wa);
/* Runs one step now on the caller's thread (full when measure is 1, else a
 * projection) and installs its matrix. Only without ctl_wa_start. */
void ctl_wa_step(struct ctl_wa *wa, uint64_t now_ns, int measure);
/* A tenant was created, re-weighted or deleted: the WA thread projects at
 * once. Waits (at most 1 s) until the new matrix is in force, so a
 * heartbeat answered after the return carries it. No-op before start. */
void ctl_wa_kick(struct ctl_wa *wa);

/* The policy's name (static). */
const char *ctl_wa_policy(const struct ctl_wa *wa);
/* The local weights of node for n tenants (ids and current global weights
 * W, borrowed) into out[n] (caller's), as ctl_wa_matrix_get says. */
void ctl_wa_column(struct ctl_wa *wa, uint32_t node, const uint32_t *tenants, const double *W,
                   size_t n, double *out);
/* A copy of the matrix in force (fini it) and the stats. */
void ctl_wa_read(struct ctl_wa *wa, uint64_t now_ns, struct ctl_wa_matrix *m,
                 struct ctl_wa_stats *stats);

#endif
