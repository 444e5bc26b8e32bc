/*
 * pol_pp_milp.c - "milp": the placement that moves the fewest bytes while
 * every up node serves its fair-share load within headroom (GLPK through
 * pol_milp.h), best-fit-decreasing when the solver cannot answer.
 *
 * When: a placement that is complete (every partition has c current holders
 * that are up) and within capacity is kept as it is. Otherwise greedy
 * (pol_pp_greedy.c) places everything first: its rows are the fallback and
 * a warm start. The model is then free to move the partitions F:
 *   - all of them when partitions x up nodes <= cfg.max_binaries;
 *   - else the partitions missing holders; then, if they all fit, the
 *     partitions greedy moved (so its rows are a warm start); then, on each
 *     node over its limit (most over first), its partitions in order of
 *     load relieved per resident byte, until RELIEF x the excess is freed
 *     on every resource (counting the partitions already free); all while
 *     |F| x CANDIDATES stays <= max_binaries. Each may use only CANDIDATES
 *     nodes: its current holders, greedy's, then the least loaded (by the
 *     fixed load). The other partitions stay put and enter as constant
 *     load.
 *
 * A row's slots fall in two groups (pol_pp.h's load model): the a_p read
 * slots, each carrying share_p = 1/a_p of p's demand (every copy of a
 * copies partition, a = c; a stripe's k data slots), and the c_p - a_p
 * parity slots, carrying none. Model over F and the up nodes N:
 *   y_pn in {0,1}                    n holds a read slot of p
 *   q_pn in {0,1}  (c_p > a_p only)  n holds a parity slot of p
 *   z in [0,u]                       the max utilisation
 *   min  sum_pn (cost_pn y_pn + qcost_pn q_pn) + eps z
 *   s.t. sum_n y_pn = a_p,  sum_n q_pn = c_p - a_p,  y_pn + q_pn <= 1
 *        (fixed_nr + sum_p d_pr share_p y_pn) / cap_nr <= z   (every n, r; z <= u)
 * cost_pn = resident_p / B unless n now holds one of p's read slots (it
 * keeps its slot), qcost_pn likewise for parity slots (a chunk that changes
 * position is moved); B is the largest resident size in F, so costs are in
 * (0, 1]. eps = half the smallest positive cost, at least 1e-6 (below that
 * GLPK's tolerances would lose it): eps z <= eps u is less than any one
 * move, so no partition moves for balance alone, and balance may buy at
 * most eps u more bytes moved than the fewest (exactly: the objective is
 * bytes/B + eps z).
 *
 * Warm starts (offered when within capacity): greedy's rows, and in a
 * restricted model also greedy over F alone. Greedy's rows answer instead
 * when the budget is 0, the partitions missing holders alone exceed the
 * model, the solver finds no solution (infeasible, or out of time without
 * an incumbent), or the model could not hold greedy's moves and its best
 * moves more bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_milp.h"
#include "pol_pp_impl.h"

struct model {
    struct pp_work *w;
    uint32_t *f; /* the free partitions */
    size_t nf;
    int *y, *q; /* nf x nup columns; -1: none (q without parity slots, both off candidates) */
    int z;
    size_t ncols;
    size_t ncand; /* nodes each free partition may use */
};

/* A restricted model offers each free partition this many nodes: its
 * current holders, greedy's, then the least loaded. */
#define CANDIDATES 24

/* Nodes per free partition in the model: all of them when every partition
 * fits in max_binaries, else CANDIDATES. */
static size_t
candidates(const struct pp_work *w, uint32_t max_binaries)
{
    if (w->v->nparts <= max_binaries / w->nup) {
        return w->nup;
    }
    return w->nup < CANDIDATES ? w->nup : CANDIDATES;
}

/* p's read slots (a_p): the first ones, those that carry load. */
static uint32_t
read_slots(const struct pp_work *w, size_t p)
{
    uint32_t a = 1;

    while (a < w->c[p] && pp_share(w, p, a) > 0.0) {
        a++;
    }
    return a;
}

/* 1 if n now holds one of p's slots in [lo, hi). */
static int
holds_in(const struct pp_work *w, size_t p, int32_t n, uint32_t lo, uint32_t hi)
{
    int at = pp_cur_slot(w, p, n);

    return at >= (int)lo && at < (int)hi;
}

/* ---- which partitions may move ------------------------------------------ */

/* How much of a node's excess load its free partitions should carry: the
 * model needs choice, not just enough to fit. */
#define RELIEF 2.0

/* Relieves node n (over its limit in the current candidate): marks the
 * partitions it holds a loaded slot of, by load relieved per resident byte,
 * until RELIEF x the excess is freed (counting its partitions already free)
 * or *nf reaches maxf. */
static int
relieve(struct pp_work *w, int32_t n, unsigned char *free_mask, size_t *nf, size_t maxf)
{
    const struct pol_pp_view *v = w->v;
    struct pp_keyed *cand = malloc((v->nparts + 1) * sizeof(*cand));
    double excess[POL_PP_NRES], freed[POL_PP_NRES] = {0};
    size_t nc = 0;

    if (cand == NULL) {
        return -ENOMEM;
    }
    for (int r = 0; r < POL_PP_NRES; r++) {
        size_t i = (size_t)n * POL_PP_NRES + r;

        excess[r] = fmax(0.0, w->load[i] - w->limit[i]);
    }
    for (size_t p = 0; p < v->nparts; p++) {
        int at = pp_cur_slot(w, p, n);
        double relief = 0.0, sh = at >= 0 ? pp_share(w, p, (uint32_t)at) : 0.0;

        if (sh <= 0.0) {
            continue;
        }
        if (free_mask[p]) {
            for (int r = 0; r < POL_PP_NRES; r++) {
                freed[r] += w->dem[p * POL_PP_NRES + r] * sh;
            }
            continue;
        }
        for (int r = 0; r < POL_PP_NRES; r++) {
            relief = fmax(relief, w->dem[p * POL_PP_NRES + r] * sh / v->nodes[n].cap[r]);
        }
        cand[nc].key = relief / fmax(1.0, (double)v->parts[p].resident_bytes);
        cand[nc++].i = (uint32_t)p;
    }
    qsort(cand, nc, sizeof(*cand), pp_cmp_keyed);
    for (size_t k = 0; k < nc && *nf < maxf; k++) {
        size_t p = cand[k].i;
        int done = 1;

        for (int r = 0; r < POL_PP_NRES; r++) {
            done &= freed[r] >= RELIEF * excess[r];
        }
        if (done) {
            break;
        }
        free_mask[p] = 1;
        (*nf)++;
        for (int r = 0; r < POL_PP_NRES; r++) {
            freed[r] +=
                w->dem[p * POL_PP_NRES + r] * pp_share(w, p, (uint32_t)pp_cur_slot(w, p, n));
        }
    }
    free(cand);
    return 0;
}

/* 1 if the candidate (the current placement) is complete and within
 * limits, so nothing needs to move. */
static int
current_ok(const struct pp_work *w)
{
    for (size_t p = 0; p < w->v->nparts; p++) {
        for (uint32_t j = 0; j < w->c[p]; j++) {
            if (w->cur[w->off[p] + j] < 0) {
                return 0;
            }
        }
    }
    return pp_overload(w) <= 1.0 + 1e-9;
}

/* Marks F in free_mask; the candidate holds the current placement and g
 * (slot layout) the greedy one. Returns |F|, -1 when the partitions that
 * must be placed exceed the model, or -ENOMEM. */
static long
choose_free(struct pp_work *w, uint32_t max_binaries, const int32_t *g, unsigned char *free_mask)
{
    const struct pol_pp_view *v = w->v;
    size_t maxf = max_binaries / candidates(w, max_binaries), nf = 0, nover = 0, ng;
    struct pp_keyed *over;
    unsigned char *moved;
    int rc = 0;

    if (v->nparts <= max_binaries / w->nup) {
        memset(free_mask, 1, v->nparts);
        return (long)v->nparts;
    }
    over = malloc((w->nup + 1) * sizeof(*over));
    moved = calloc(v->nparts + 1, 1);
    if (over == NULL || moved == NULL) {
        free(over);
        free(moved);
        return -ENOMEM;
    }
    /* Partitions missing a holder must be placed. */
    for (size_t p = 0; p < v->nparts; p++) {
        for (uint32_t j = 0; j < w->c[p]; j++) {
            moved[p] |= g[w->off[p] + j] != w->cur[w->off[p] + j];
            free_mask[p] |= w->cur[w->off[p] + j] < 0;
        }
        nf += free_mask[p];
    }
    if (nf > maxf) {
        free(over);
        free(moved);
        return -1;
    }
    /* Greedy's moves, when they all fit: then its rows are a warm start. */
    ng = 0;
    for (size_t p = 0; p < v->nparts; p++) {
        ng += moved[p] && !free_mask[p];
    }
    for (size_t p = 0; p < v->nparts && nf + ng <= maxf; p++) {
        if (moved[p] && !free_mask[p]) {
            free_mask[p] = 1;
            nf++;
        }
    }
    for (size_t i = 0; i < w->nup; i++) {
        int32_t n = w->up[i];
        double ex = 0.0;

        for (int r = 0; r < POL_PP_NRES; r++) {
            size_t k = (size_t)n * POL_PP_NRES + r;

            ex = fmax(ex, (w->load[k] - w->limit[k]) / v->nodes[n].cap[r]);
        }
        if (ex > 1e-9) {
            over[nover].key = ex;
            over[nover++].i = (uint32_t)n;
        }
    }
    qsort(over, nover, sizeof(*over), pp_cmp_keyed);
    for (size_t i = 0; i < nover && rc == 0; i++) {
        rc = relieve(w, (int32_t)over[i].i, free_mask, &nf, maxf);
    }
    free(over);
    free(moved);
    return rc != 0 ? rc : (long)nf;
}

/* 1 if every partition whose row differs in g (slot layout) from the
 * current one is in free_mask: the model could choose g. */
static int
holds_rows(const struct pp_work *w, const int32_t *g, const unsigned char *free_mask)
{
    for (size_t p = 0; p < w->v->nparts; p++) {
        for (uint32_t j = 0; j < w->c[p] && !free_mask[p]; j++) {
            if (g[w->off[p] + j] != w->cur[w->off[p] + j]) {
                return 0;
            }
        }
    }
    return 1;
}

/* Puts the rows of g (slot layout) into the candidate for the partitions
 * in free_mask (NULL = all), whose slots must be empty. */
static void
hold_rows(struct pp_work *w, const int32_t *g, const unsigned char *free_mask)
{
    for (size_t p = 0; p < w->v->nparts; p++) {
        for (uint32_t j = 0; j < w->c[p] && (free_mask == NULL || free_mask[p]); j++) {
            pp_hold(w, p, j, g[w->off[p] + j], pp_share(w, p, j));
        }
    }
}

/* ---- the model ---------------------------------------------------------- */

/* A row over the columns cols[0..nup) that exist (>= 0), each with
 * coefficient 1, between lo and hi. */
static int
count_row(struct pol_milp *m, const int *cols, size_t nup, int *idx, double *val, double lo,
          double hi)
{
    size_t n = 0;

    for (size_t u = 0; u < nup; u++) {
        if (cols[u] >= 0) {
            idx[n] = cols[u];
            val[n++] = 1.0;
        }
    }
    return pol_milp_row(m, n, idx, val, lo, hi);
}

static int
add_rows(struct model *mo, struct pol_milp *m, double *fixed)
{
    struct pp_work *w = mo->w;
    size_t cap = 2 * w->nup + mo->nf + 2;
    int *idx = malloc(cap * sizeof(*idx)), rc = 0;
    double *val = malloc(cap * sizeof(*val));

    if (idx == NULL || val == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < mo->nf && rc == 0; i++) {
        size_t p = mo->f[i];
        uint32_t a = read_slots(w, p);
        const int *y = &mo->y[i * w->nup], *q = &mo->q[i * w->nup];

        rc = count_row(m, y, w->nup, idx, val, a, a);
        if (rc != 0 || a == w->c[p]) {
            continue;
        }
        rc = count_row(m, q, w->nup, idx, val, w->c[p] - a, w->c[p] - a);
        for (size_t u = 0; u < w->nup && rc == 0; u++) {
            if (y[u] >= 0) {
                idx[0] = y[u];
                idx[1] = q[u];
                val[0] = val[1] = 1.0;
                rc = pol_milp_row(m, 2, idx, val, -INFINITY, 1.0);
            }
        }
    }
    for (size_t u = 0; u < w->nup && rc == 0; u++) {
        int32_t node = w->up[u];

        for (int r = 0; r < POL_PP_NRES && rc == 0; r++) {
            double cap_nr = w->v->nodes[node].cap[r];
            size_t n = 0;

            for (size_t i = 0; i < mo->nf; i++) {
                size_t p = mo->f[i];
                double d = w->dem[p * POL_PP_NRES + r] * pp_share(w, p, 0) / cap_nr;

                if (d > 0.0 && mo->y[i * w->nup + u] >= 0) {
                    idx[n] = mo->y[i * w->nup + u];
                    val[n++] = d;
                }
            }
            idx[n] = mo->z;
            val[n++] = -1.0;
            rc = pol_milp_row(m, n, idx, val, -INFINITY,
                              -fixed[(size_t)node * POL_PP_NRES + r] / cap_nr);
        }
    }
out:
    free(idx);
    free(val);
    return rc;
}

/* Marks in mark (nup entries) the nodes free partition p may use: its
 * current holders, g's, then the first of by_load until ncand. */
static void
mark_candidates(const struct model *mo, size_t p, const int32_t *g, const struct pp_keyed *by_load,
                unsigned char *mark)
{
    const struct pp_work *w = mo->w;
    size_t k = 0;

    for (size_t u = 0; u < w->nup; u++) {
        mark[u] = mo->ncand == w->nup || pp_is_current(w, p, w->up[u]) ||
                  pp_has(g + w->off[p], w->c[p], w->up[u]);
        k += mark[u];
    }
    for (size_t i = 0; i < w->nup && k < mo->ncand; i++) {
        k += !mark[by_load[i].i];
        mark[by_load[i].i] = 1;
    }
}

/* Columns; the candidate holds only the fixed partitions (the load that
 * orders the candidates). */
static int
add_cols(struct model *mo, struct pol_milp *m, const int32_t *g)
{
    struct pp_work *w = mo->w;
    const struct pol_pp_view *v = w->v;
    double big = 1.0, minpos = INFINITY, eps;
    struct pp_keyed *by_load = malloc((w->nup + 1) * sizeof(*by_load));
    unsigned char *mark = malloc(w->nup + 1);
    int col = 0;

    if (by_load == NULL || mark == NULL) {
        col = -ENOMEM;
        goto out;
    }
    /* Least loaded first: keyed by minus the utilisation. */
    for (size_t u = 0; u < w->nup; u++) {
        by_load[u].key = -pp_util(w, w->up[u]);
        by_load[u].i = (uint32_t)u;
    }
    qsort(by_load, w->nup, sizeof(*by_load), pp_cmp_keyed);

    for (size_t i = 0; i < mo->nf; i++) {
        big = fmax(big, (double)v->parts[mo->f[i]].resident_bytes);
    }
    for (size_t i = 0; i < mo->nf; i++) {
        double c = (double)v->parts[mo->f[i]].resident_bytes / big;

        if (c > 0.0) {
            minpos = fmin(minpos, c);
        }
    }
    eps = minpos == INFINITY ? 1.0 : fmax(0.5 * minpos, 1e-6);
    for (size_t i = 0; i < mo->nf && col >= 0; i++) {
        size_t p = mo->f[i];
        double c = (double)v->parts[p].resident_bytes / big;
        uint32_t a = read_slots(w, p);

        mark_candidates(mo, p, g, by_load, mark);
        for (size_t u = 0; u < w->nup && col >= 0; u++) {
            mo->y[i * w->nup + u] = mo->q[i * w->nup + u] = -1;
            if (!mark[u]) {
                continue;
            }
            col = pol_milp_col(m, 1, 0.0, 1.0, holds_in(w, p, w->up[u], 0, a) ? 0.0 : c);
            mo->y[i * w->nup + u] = col;
            if (col >= 0 && a < w->c[p]) {
                col = pol_milp_col(m, 1, 0.0, 1.0, holds_in(w, p, w->up[u], a, w->c[p]) ? 0.0 : c);
                mo->q[i * w->nup + u] = col;
            }
        }
    }
    if (col >= 0) {
        col = mo->z = pol_milp_col(m, 0, 0.0, v->headroom, eps);
        mo->ncols = (size_t)mo->z + 1;
    }
out:
    free(by_load);
    free(mark);
    return col < 0 ? col : 0;
}

static void
unhold_free(struct model *mo)
{
    for (size_t i = 0; i < mo->nf; i++) {
        for (uint32_t j = 0; j < mo->w->c[mo->f[i]]; j++) {
            pp_unhold(mo->w, mo->f[i], j);
        }
    }
}

/* The candidate as a solution vector; 0 if it uses a node the model does
 * not offer, or breaks a capacity row by more than the slack pp_fits allows (z is then clamped to
 * u: a 1e-9 violation is far inside GLPK's own tolerances). */
static int
candidate_vector(const struct model *mo, double *sol)
{
    const struct pp_work *w = mo->w;
    double z = 0.0;

    memset(sol, 0, mo->ncols * sizeof(*sol));
    for (size_t i = 0; i < mo->nf; i++) {
        size_t p = mo->f[i];
        uint32_t a = read_slots(w, p);

        for (size_t u = 0; u < w->nup; u++) {
            for (uint32_t j = 0; j < w->c[p]; j++) {
                int col = j < a ? mo->y[i * w->nup + u] : mo->q[i * w->nup + u];

                if (w->hold[w->off[p] + j] != w->up[u]) {
                    continue;
                }
                if (col < 0) {
                    return 0; /* a node the model does not offer p */
                }
                sol[col] = 1.0;
            }
        }
    }
    for (size_t u = 0; u < w->nup; u++) {
        z = fmax(z, pp_util(w, w->up[u]));
    }
    sol[mo->z] = fmin(z, w->v->headroom);
    return z <= w->v->headroom * (1.0 + 1e-9);
}

/* Puts the nodes whose column in cols (nup entries) is set in sol into p's
 * slots [lo, hi), empty before: a current holder of one of them stays in
 * it, the others fill the rest in node order. 0, or CM_E_NOTFOUND if they
 * are not hi - lo nodes. */
static int
apply_group(struct pp_work *w, size_t p, const int *cols, const double *sol, uint32_t lo,
            uint32_t hi)
{
    int32_t got[POL_PP_MAX_WIDTH];
    uint32_t n = 0, next = lo;

    for (size_t u = 0; u < w->nup; u++) {
        if (cols[u] < 0 || sol[cols[u]] < 0.5) {
            continue;
        }
        if (n == hi - lo) {
            return CM_E_NOTFOUND;
        }
        got[n++] = w->up[u];
    }
    if (n != hi - lo) {
        return CM_E_NOTFOUND;
    }
    for (uint32_t k = 0; k < n; k++) {
        if (holds_in(w, p, got[k], lo, hi)) {
            uint32_t j = (uint32_t)pp_cur_slot(w, p, got[k]);

            pp_hold(w, p, j, got[k], pp_share(w, p, j));
            got[k] = -1;
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        if (got[k] < 0) {
            continue;
        }
        while (w->hold[w->off[p] + next] >= 0) {
            next++;
        }
        pp_hold(w, p, next, got[k], pp_share(w, p, next));
    }
    return 0;
}

/* Puts the solution's rows into the candidate (F's slots empty before).
 * 0, or CM_E_NOTFOUND if a row has the wrong holder count. */
static int
apply(struct model *mo, const double *sol)
{
    struct pp_work *w = mo->w;
    int rc = 0;

    for (size_t i = 0; i < mo->nf && rc == 0; i++) {
        size_t p = mo->f[i];
        uint32_t a = read_slots(w, p);

        rc = apply_group(w, p, &mo->y[i * w->nup], sol, 0, a);
        if (rc == 0 && a < w->c[p]) {
            rc = apply_group(w, p, &mo->q[i * w->nup], sol, a, w->c[p]);
        }
    }
    return rc;
}

/* Solves for F (marked in free_mask; the candidate holds the current
 * placement), each free partition on ncand nodes, warm-started from g
 * (greedy's rows, within limits or not) and from greedy over F alone. On 0
 * the candidate is the solution. */
static int
solve(struct pp_work *w, const unsigned char *free_mask, size_t nf, const int32_t *g, size_t ncand,
      uint32_t budget_ms, int *time_limited)
{
    struct model mo = {.w = w, .nf = 0, .ncand = ncand};
    struct pol_milp *m = pol_milp_create();
    double *fixed = NULL, *sol = NULL;
    size_t nl = w->v->nnodes * POL_PP_NRES;
    int rc = -ENOMEM;

    mo.f = malloc((nf + 1) * sizeof(*mo.f));
    mo.y = malloc((nf * w->nup + 1) * sizeof(*mo.y));
    mo.q = malloc((nf * w->nup + 1) * sizeof(*mo.q));
    fixed = malloc((nl + 1) * sizeof(*fixed));
    if (m == NULL || mo.f == NULL || mo.y == NULL || mo.q == NULL || fixed == NULL) {
        goto out;
    }
    for (size_t p = 0; p < w->v->nparts; p++) {
        if (free_mask[p]) {
            mo.f[mo.nf++] = (uint32_t)p;
        }
    }
    unhold_free(&mo);
    memcpy(fixed, w->load, nl * sizeof(*fixed));
    rc = add_cols(&mo, m, g);
    rc = rc != 0 ? rc : add_rows(&mo, m, fixed);
    if (rc != 0) {
        goto out;
    }
    sol = malloc((mo.ncols + 1) * sizeof(*sol));
    if (sol == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    hold_rows(w, g, free_mask);
    if (candidate_vector(&mo, sol)) {
        rc = pol_milp_start(m, sol);
    }
    unhold_free(&mo);
    if (rc == 0 && nf < w->v->nparts) {
        rc = pp_greedy(w, free_mask);
        if (rc == 0 && candidate_vector(&mo, sol)) {
            rc = pol_milp_start(m, sol);
        }
        unhold_free(&mo);
    }
    rc = rc != 0 ? rc : pol_milp_solve(m, budget_ms, sol, time_limited);
    rc = rc != 0 ? rc : apply(&mo, sol);
out:
    free(mo.f);
    free(mo.y);
    free(mo.q);
    free(fixed);
    free(sol);
    pol_milp_destroy(m);
    return rc;
}

static int
milp_create(const struct pol_pp_cfg *cfg, struct pol_pp **out)
{
    return pol_pp_base_create(&pol_pp_milp_ops, cfg, out);
}

static int
milp_place(struct pol_pp *pp, const struct pol_pp_view *v, uint32_t budget_ms,
           struct pol_pp_out *out)
{
    struct pp_work w;
    unsigned char *free_mask = NULL;
    int32_t *g = NULL;
    int rc, time_limited = 0;
    double g_bytes;
    long nf = 0;

    rc = pp_work_init(&w, v, 0);
    if (rc != 0) {
        return rc;
    }
    pp_hold_current(&w);
    if (current_ok(&w)) {
        pp_finish(&w, out, "milp");
        goto out;
    }
    free_mask = calloc(v->nparts + 1, 1);
    g = malloc((w.nslots + 1) * sizeof(*g));
    if (free_mask == NULL || g == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    /* Greedy first: the fallback, the warm start, and (in a restricted
     * model) the partitions it moves must be free to move. */
    pp_clear(&w);
    rc = pp_greedy(&w, NULL);
    if (rc != 0) {
        goto out;
    }
    memcpy(g, w.hold, w.nslots * sizeof(*g));
    g_bytes = pp_overload(&w) <= 1.0 + 1e-9 ? pp_moved_bytes(&w, NULL) : INFINITY;
    if (budget_ms > 0) {
        pp_clear(&w);
        pp_hold_current(&w);
        nf = choose_free(&w, pp->cfg.max_binaries, g, free_mask);
        if (nf < -1) {
            rc = (int)nf;
            goto out;
        }
        rc = nf > 0 ? solve(&w, free_mask, (size_t)nf, g, candidates(&w, pp->cfg.max_binaries),
                            budget_ms, &time_limited)
                    : CM_E_TIMEOUT;
        /* When the model could not hold greedy's moves, its best may move
         * more than greedy: then greedy's rows win. */
        if (rc == 0 && (holds_rows(&w, g, free_mask) || pp_moved_bytes(&w, NULL) <= g_bytes)) {
            pp_finish(&w, out, "milp");
            out->stats.free_parts = (uint32_t)nf;
            out->stats.time_limited = time_limited;
            goto out;
        }
        if (rc != 0 && rc != CM_E_NOTFOUND && rc != CM_E_TIMEOUT) {
            goto out;
        }
        pp_clear(&w);
        hold_rows(&w, g, NULL);
    }
    rc = 0;
    pp_finish(&w, out, "greedy");
    out->stats.time_limited = time_limited;
out:
    free(free_mask);
    free(g);
    pp_work_fini(&w);
    return rc;
}

const struct pol_pp_ops pol_pp_milp_ops = {
    .name = "milp",
    .create = milp_create,
    .destroy = pol_pp_base_destroy,
    .place = milp_place,
};
