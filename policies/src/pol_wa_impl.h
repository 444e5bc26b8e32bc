/*
 * pol_wa_impl.h - what every WA policy shares (private to policies/).
 *
 * struct pol_wa is the same for every policy: the ops pointer, the
 * effective config, and the smoothed measurements of the previous step
 * keyed by tenant and node id (so rows and columns follow their ids when
 * the tenant or node set changes between steps).
 *
 * Invariants: hist holds hist_t * hist_n cells, row-major, for the ids in
 * hist_tid / hist_nid; hist_tord lists 0..hist_t-1 in increasing id order
 * (for lookups); have_hist is 0 until the first step with measurements.
 */
#ifndef POL_WA_IMPL_H
#define POL_WA_IMPL_H

#include "pol_wa.h"

struct pol_wa {
    const struct pol_wa_ops *ops;
    struct pol_wa_cfg cfg;
    int have_hist;
    uint64_t hist_now;
    size_t hist_t, hist_n;
    uint32_t *hist_tid, *hist_nid;
    size_t *hist_tord, *hist_nord;
    struct pol_wa_cell *hist;
    /* [2 * hist_t * hist_n]: the weights in force at the last smoothed
     * step, then the smaller of them and the step's before */
    double *hist_w;
};

/* The registered policies (one file each). */
extern const struct pol_wa_ops pol_wa_even_ops;
extern const struct pol_wa_ops pol_wa_pisces_ops;

/* create for a policy without private state (cfg NULL = defaults):
 * 0, CM_E_BADARG or -ENOMEM; *out is caller-owned. */
int pol_wa_new(const struct pol_wa_ops *ops, const struct pol_wa_cfg *cfg, struct pol_wa **out);
/* destroy and reset for such a policy. */
void pol_wa_free(struct pol_wa *wa);
void pol_wa_forget(struct pol_wa *wa);
/* 1 if v->w is given and breaks an invariant beyond rounding. */
int pol_wa_broken(const struct pol_wa_view *v, double floor_frac);
/*
 * Iterative proportional fitting of x ([T * N], in place) on the part above
 * the floors fl[t] (fl NULL: 0): each row's part above its floor to sum to rows[t], each
 * column's to cols[n] (consistent: sum rows = sum cols), keeping x's shape
 * (x = fl + r_t * c_n * (x0 - fl)). At most `sweeps` row-then-column passes,
 * fewer once the rows are within tol (relative) before a column pass;
 * columns are exact after each. A row or column with nothing above its
 * floors is spread evenly (rows) or by wt (columns). All arrays borrowed.
 */
void pol_wa_fit(size_t T, size_t N, const double *rows, const double *cols, const double *fl,
                const double *wt, int sweeps, double tol, double *x);
/* 0 if v is well-formed (see step in pol_wa.h), CM_E_BADARG, -ENOMEM. */
int pol_wa_check_view(const struct pol_wa_view *v);
/*
 * out ([T * N], caller's) receives v->w (or the even matrix) projected onto
 * the invariants with floor floor_frac * W_t. *projected (may be NULL) is
 * set to 1 when the input broke an invariant beyond rounding. 0 or -ENOMEM.
 * v must have passed pol_wa_check_view.
 */
int pol_wa_project(const struct pol_wa_view *v, double floor_frac, double *out, int *projected);
/*
 * out ([T * N], caller's) receives v->cells smoothed with the history (an
 * EWMA with time constant cfg.smooth over now_ns), and the history becomes
 * out. A cell without history is taken as measured. w ([T * N], borrowed)
 * are the weights in force now (projected); w_low ([T * N], caller's)
 * receives the smallest of them and those of the last two smoothed steps
 * (unknown ones left out), and w is kept for the next steps: a node applies
 * a weight a heartbeat late and its rates are averaged over two, so what
 * was served reflects the weights of about three steps. 0 or -ENOMEM (the
 * history is then dropped, out still holds the raw cells, w_low = w).
 * v->cells != NULL.
 */
int pol_wa_smooth(struct pol_wa *wa, const struct pol_wa_view *v, const double *w,
                  struct pol_wa_cell *out, double *w_low);
/* Scratch of the widest-cycle search (pol_wa_cycle.c) on n vertices. */
struct pol_wa_cyc {
    size_t n;
    double *vals;         /* [n * n] candidate widths */
    size_t *stk, *nxt;    /* [n] DFS stack and per-vertex cursor */
    unsigned char *state; /* [n] DFS colour */
};

/* 0 or -ENOMEM (then nothing to fini). */
int pol_wa_cyc_init(struct pol_wa_cyc *c, size_t n);
void pol_wa_cyc_fini(struct pol_wa_cyc *c);
/*
 * The widest cycle among the edges of capacity >= floor_cap (> 0) of the
 * graph with c->n vertices and capacities cap[u * n + v] (0 = no edge u ->
 * v; the diagonal is ignored if 0). Writes its vertices to cyc ([n],
 * caller's; cyc[i] -> cyc[i + 1], the last back to the first) and the count
 * to *len; returns its width (its narrowest edge), 0 when there is none.
 */
double pol_wa_widest_cycle(struct pol_wa_cyc *c, const double *cap, double floor_cap, size_t *cyc,
                           size_t *len);
/* sum |a - b| / 2 over n entries; entries of a that are unknown (not
 * finite or <= 0) are skipped. a may be NULL (0). */
double pol_wa_moved(const double *a, const double *b, size_t n);

#endif
