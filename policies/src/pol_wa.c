/*
 * pol_wa.c - the WA policy registry and what every policy shares: config
 * defaults and checks, view validation, the projection onto the
 * invariants, and the measurement history (EWMA keyed by ids).
 *
 * No threads, no I/O: see pol_wa.h.
 *
 * Projection (pol_wa_project). Let E be the even matrix, E[t][n] = W_t:
 * its rows sum to N * W_t and its columns to sum W, the two invariants.
 * Starting from the caller's weights (unknown entries = W_t), we
 *   1. fit the marginals by iterative proportional fitting on the part
 *      above the floor, y = w - floor >= 0, which keeps every weight at or
 *      above its floor and keeps the shape (ratios) the caller had;
 *   2. make both sums exact: D = w - E is double-centered
 *      (D - row mean - column mean + grand mean has zero row and column
 *      sums exactly, up to rounding);
 *   3. keep the floor exactly: w = E + alpha * D with the largest
 *      alpha <= 1 that leaves every entry >= its floor (E itself is above
 *      the floor, so some alpha in (0, 1] always works).
 * Step 1 usually converges in one or two sweeps (a tenant or node came or
 * went); for input that already satisfies the invariants it is a no-op
 * up to rounding, so calling it every step also stops rounding drift.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_wa_impl.h"

/* The one registry. */
static const struct pol_wa_ops *const pol_wa_registry[] = {
    &pol_wa_even_ops,
    &pol_wa_pisces_ops,
};

#define POL_WA_WEIGHT_MAX 10000.0
#define POL_WA_IPF_SWEEPS 200
#define POL_WA_IPF_TOL 1e-14
#define POL_WA_BROKEN_TOL 1e-9 /* relative error beyond rounding */

const struct pol_wa_ops *
pol_wa_find(const char *name)
{
    size_t i;

    if (name == NULL) {
        return NULL;
    }
    for (i = 0; i < sizeof(pol_wa_registry) / sizeof(pol_wa_registry[0]); i++) {
        if (strcmp(pol_wa_registry[i]->name, name) == 0) {
            return pol_wa_registry[i];
        }
    }
    return NULL;
}

const struct pol_wa_ops *const *
pol_wa_list(size_t *n)
{
    *n = sizeof(pol_wa_registry) / sizeof(pol_wa_registry[0]);
    return pol_wa_registry;
}

const struct pol_wa_cfg *
pol_wa_cfg_of(const struct pol_wa *wa)
{
    return &wa->cfg;
}

/* 0 selects the default; otherwise lo < x < hi (lo <= x when lo_ok). */
static int
pol_wa_fill(double *x, double def, double lo, int lo_ok, double hi, int hi_ok)
{
    if (*x == 0.0) {
        *x = def;
        return 0;
    }
    if (!isfinite(*x) || *x < lo || (!lo_ok && *x == lo) || *x > hi || (!hi_ok && *x == hi)) {
        return CM_E_BADARG;
    }
    return 0;
}

static int
pol_wa_cfg_fill(const struct pol_wa_cfg *cfg, struct pol_wa_cfg *out)
{
    struct pol_wa_cfg c = {0};
    int rc = 0;

    if (cfg != NULL) {
        c = *cfg;
    }
    rc |= pol_wa_fill(&c.eta, POL_WA_ETA_DEFAULT, 0.0, 0, 1.0, 1);
    rc |= pol_wa_fill(&c.dead_band, POL_WA_DEAD_BAND_DEFAULT, 0.0, 0, 1.0, 0);
    rc |= pol_wa_fill(&c.floor_frac, POL_WA_FLOOR_FRAC_DEFAULT, 0.0, 0, 1.0, 0);
    rc |= pol_wa_fill(&c.fair_band, POL_WA_FAIR_BAND_DEFAULT, 0.0, 0, 1.0, 0);
    rc |= pol_wa_fill(&c.pressed_frac, POL_WA_PRESSED_FRAC_DEFAULT, 0.0, 0, 1.0, 0);
    rc |= pol_wa_fill(&c.pressed_wait, POL_WA_PRESSED_WAIT_DEFAULT, 0.0, 0, INFINITY, 0);
    rc |= pol_wa_fill(&c.smooth, POL_WA_SMOOTH_DEFAULT, 0.0, 0, INFINITY, 0);
    if (c.max_cycles == 0) {
        c.max_cycles = POL_WA_MAX_CYCLES_DEFAULT;
    }
    if (rc != 0) {
        return CM_E_BADARG;
    }
    *out = c;
    return 0;
}

int
pol_wa_new(const struct pol_wa_ops *ops, const struct pol_wa_cfg *cfg, struct pol_wa **out)
{
    struct pol_wa_cfg c;
    struct pol_wa *wa;

    *out = NULL;
    if (pol_wa_cfg_fill(cfg, &c) != 0) {
        return CM_E_BADARG;
    }
    wa = calloc(1, sizeof(*wa));
    if (wa == NULL) {
        return -ENOMEM;
    }
    wa->ops = ops;
    wa->cfg = c;
    *out = wa;
    return 0;
}

void
pol_wa_forget(struct pol_wa *wa)
{
    free(wa->hist_tid);
    free(wa->hist_nid);
    free(wa->hist_tord);
    free(wa->hist_nord);
    free(wa->hist);
    free(wa->hist_w);
    wa->hist_tid = wa->hist_nid = NULL;
    wa->hist_tord = wa->hist_nord = NULL;
    wa->hist = NULL;
    wa->hist_w = NULL;
    wa->hist_t = wa->hist_n = 0;
    wa->have_hist = 0;
}

void
pol_wa_free(struct pol_wa *wa)
{
    if (wa == NULL) {
        return;
    }
    pol_wa_forget(wa);
    free(wa);
}

static int
pol_wa_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* 1 if ids (n, scratch of n entries) holds a repeated value. */
static int
pol_wa_has_dup(uint32_t *scratch, size_t n)
{
    size_t i;

    qsort(scratch, n, sizeof(*scratch), pol_wa_cmp_u32);
    for (i = 1; i < n; i++) {
        if (scratch[i] == scratch[i - 1]) {
            return 1;
        }
    }
    return 0;
}

static int
pol_wa_bad_num(double x)
{
    return !isfinite(x) || x < 0.0;
}

int
pol_wa_check_view(const struct pol_wa_view *v)
{
    size_t i, T, N;
    uint32_t *ids;
    int dup = 0;

    if (v == NULL || v->ntenants > POL_WA_MAX_DIM || v->nnodes > POL_WA_MAX_DIM ||
        (v->ntenants > 0 && v->tenants == NULL) || (v->nnodes > 0 && v->nodes == NULL)) {
        return CM_E_BADARG;
    }
    T = v->ntenants;
    N = v->nnodes;
    for (i = 0; i < T; i++) {
        double w = v->tenants[i].weight;

        if (!isfinite(w) || w <= 0.0 || w > POL_WA_WEIGHT_MAX) {
            return CM_E_BADARG;
        }
    }
    if (v->cells != NULL) {
        for (i = 0; i < T * N; i++) {
            const struct pol_wa_cell *c = &v->cells[i];

            if (pol_wa_bad_num(c->demand) || pol_wa_bad_num(c->served) || pol_wa_bad_num(c->wait)) {
                return CM_E_BADARG;
            }
        }
    }
    ids = malloc((T > N ? T : N) * sizeof(*ids) + 1);
    if (ids == NULL) {
        return -ENOMEM;
    }
    for (i = 0; i < T; i++) {
        ids[i] = v->tenants[i].id;
    }
    dup |= pol_wa_has_dup(ids, T);
    for (i = 0; i < N; i++) {
        ids[i] = v->nodes[i].id;
    }
    dup |= pol_wa_has_dup(ids, N);
    free(ids);
    return dup ? CM_E_BADARG : 0;
}

double
pol_wa_invariant_error(const struct pol_wa_view *v, const double *w, double floor_frac)
{
    size_t t, n, T = v->ntenants, N = v->nnodes;
    double sumw = 0.0, err = 0.0;

    if (T == 0 || N == 0) {
        return 0.0;
    }
    for (t = 0; t < T; t++) {
        sumw += v->tenants[t].weight;
    }
    for (t = 0; t < T; t++) {
        double W = v->tenants[t].weight, row = 0.0;

        for (n = 0; n < N; n++) {
            double x = w[t * N + n];

            if (!isfinite(x) || x < floor_frac * W * (1.0 - 1e-9)) {
                return 1.0;
            }
            row += x;
        }
        err = fmax(err, fabs(row - (double)N * W) / ((double)N * W));
    }
    for (n = 0; n < N; n++) {
        double col = 0.0;

        for (t = 0; t < T; t++) {
            col += w[t * N + n];
        }
        err = fmax(err, fabs(col - sumw) / sumw);
    }
    return err;
}

int
pol_wa_broken(const struct pol_wa_view *v, double floor_frac)
{
    return v->w != NULL && pol_wa_invariant_error(v, v->w, floor_frac) > POL_WA_BROKEN_TOL;
}

void
pol_wa_fit(size_t T, size_t N, const double *rows, const double *cols, const double *fl,
           const double *wt, int sweeps, double tol, double *x)
{
    size_t t, n;
    double sumwt = 0.0;
    int sweep;

#define FL(t) (fl != NULL ? fl[t] : 0.0)

    for (t = 0; t < T; t++) {
        sumwt += wt[t];
    }
    for (sweep = 0; sweep < sweeps; sweep++) {
        double worst = 0.0;

        for (t = 0; t < T; t++) {
            double s = 0.0;

            for (n = 0; n < N; n++) {
                s += x[t * N + n] - FL(t);
            }
            worst = fmax(worst, fabs(s - rows[t]) / fmax(rows[t], 1e-300));
            for (n = 0; n < N; n++) {
                double *p = &x[t * N + n];

                *p = s > 0.0 ? FL(t) + (*p - FL(t)) * (rows[t] / s) : FL(t) + rows[t] / (double)N;
            }
        }
        for (n = 0; n < N; n++) {
            double s = 0.0;

            for (t = 0; t < T; t++) {
                s += x[t * N + n] - FL(t);
            }
            for (t = 0; t < T; t++) {
                double *p = &x[t * N + n];

                *p = s > 0.0 ? FL(t) + (*p - FL(t)) * (cols[n] / s)
                             : FL(t) + cols[n] * wt[t] / sumwt;
            }
        }
        /* Columns are exact after their pass; rows were off by `worst`
         * before it. */
        if (worst < tol) {
            break;
        }
    }
#undef FL
}

int
pol_wa_project(const struct pol_wa_view *v, double ff, double *out, int *projected)
{
    size_t t, n, T = v->ntenants, N = v->nnodes;
    double sumw = 0.0, g = 0.0, alpha = 1.0;
    double *rowd, *cold, *fl, *wt;

    if (projected != NULL) {
        *projected = pol_wa_broken(v, ff);
    }
    if (T == 0 || N == 0) {
        return 0;
    }
    rowd = calloc(T, sizeof(*rowd));
    cold = calloc(N, sizeof(*cold));
    fl = calloc(T, sizeof(*fl));
    wt = calloc(T, sizeof(*wt));
    if (rowd == NULL || cold == NULL || fl == NULL || wt == NULL) {
        free(rowd);
        free(cold);
        free(fl);
        free(wt);
        return -ENOMEM;
    }
    for (t = 0; t < T; t++) {
        double W = v->tenants[t].weight;

        sumw += W;
        for (n = 0; n < N; n++) {
            double x = v->w != NULL ? v->w[t * N + n] : NAN;

            if (!isfinite(x) || x <= 0.0) {
                x = W;
            }
            out[t * N + n] = fmin(fmax(x, ff * W), (double)N * W);
        }
    }
    /* Step 1: IPF on the part above the floor (rowd, cold: what each row
     * and column wants above its floors). */
    for (t = 0; t < T; t++) {
        wt[t] = v->tenants[t].weight;
        fl[t] = ff * wt[t];
        rowd[t] = (double)N * wt[t] * (1.0 - ff);
    }
    for (n = 0; n < N; n++) {
        cold[n] = sumw * (1.0 - ff);
    }
    pol_wa_fit(T, N, rowd, cold, fl, wt, POL_WA_IPF_SWEEPS, POL_WA_IPF_TOL, out);
    memset(rowd, 0, T * sizeof(*rowd));
    memset(cold, 0, N * sizeof(*cold));

    /* Step 2: D = out - E, double-centered. */
    for (t = 0; t < T; t++) {
        for (n = 0; n < N; n++) {
            double d = out[t * N + n] - v->tenants[t].weight;

            rowd[t] += d;
            cold[n] += d;
            g += d;
        }
    }
    for (t = 0; t < T; t++) {
        double W = v->tenants[t].weight;

        for (n = 0; n < N; n++) {
            double d = out[t * N + n] - W - rowd[t] / (double)N - cold[n] / (double)T +
                       g / ((double)T * (double)N);

            out[t * N + n] = d;
            if (d < 0.0 && W - ff * W < -d * alpha) {
                alpha = (W - ff * W) / -d;
            }
        }
    }
    /* Step 3: shrink toward even just enough to keep every floor. */
    for (t = 0; t < T; t++) {
        double W = v->tenants[t].weight;

        for (n = 0; n < N; n++) {
            out[t * N + n] = fmax(W + alpha * out[t * N + n], ff * W);
        }
    }
    free(rowd);
    free(cold);
    free(fl);
    free(wt);
    return 0;
}

double
pol_wa_moved(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    size_t i;

    if (a == NULL) {
        return 0.0;
    }
    for (i = 0; i < n; i++) {
        if (isfinite(a[i]) && a[i] > 0.0) {
            s += fabs(a[i] - b[i]);
        }
    }
    return s / 2.0;
}

/* ids sorted: fills ord with 0..n-1 in increasing ids[] order. */
struct pol_wa_idpos {
    uint32_t id;
    size_t pos;
};

static int
pol_wa_cmp_idpos(const void *a, const void *b)
{
    return pol_wa_cmp_u32(&((const struct pol_wa_idpos *)a)->id,
                          &((const struct pol_wa_idpos *)b)->id);
}

static int
pol_wa_sort_ids(const uint32_t *ids, size_t n, size_t *ord)
{
    struct pol_wa_idpos *p = malloc(n * sizeof(*p) + 1);
    size_t i;

    if (p == NULL) {
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        p[i].id = ids[i];
        p[i].pos = i;
    }
    qsort(p, n, sizeof(*p), pol_wa_cmp_idpos);
    for (i = 0; i < n; i++) {
        ord[i] = p[i].pos;
    }
    free(p);
    return 0;
}

/* Position of id in ids (sorted through ord), or SIZE_MAX. */
static size_t
pol_wa_lookup(const uint32_t *ids, const size_t *ord, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ids[ord[mid]] < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && ids[ord[lo]] == id ? ord[lo] : SIZE_MAX;
}

static void
pol_wa_ewma(struct pol_wa_cell *out, const struct pol_wa_cell *old, const struct pol_wa_cell *now,
            double a)
{
    out->demand = old->demand + a * (now->demand - old->demand);
    out->served = old->served + a * (now->served - old->served);
    out->wait = old->wait + a * (now->wait - old->wait);
}

int
pol_wa_smooth(struct pol_wa *wa, const struct pol_wa_view *v, const double *w,
              struct pol_wa_cell *out, double *w_low)
{
    size_t t, n, T = v->ntenants, N = v->nnodes;
    double a = 1.0;
    uint32_t *tid = malloc(T * sizeof(*tid) + 1), *nid = malloc(N * sizeof(*nid) + 1);
    size_t *tord = malloc(T * sizeof(*tord) + 1), *nord = malloc(N * sizeof(*nord) + 1);
    size_t *nmap = malloc(N * sizeof(*nmap) + 1);
    struct pol_wa_cell *h = malloc(T * N * sizeof(*h) + 1);
    /* [0, TN): w; [TN, 2 TN): the smaller of w and the last step's */
    double *hw = malloc(2 * T * N * sizeof(*hw) + 1);
    int rc = -ENOMEM;

    /* A clock that went backwards (new origin) starts the history over. */
    if (wa->have_hist && v->now_ns >= wa->hist_now) {
        a = -expm1(-(double)(v->now_ns - wa->hist_now) / 1e9 / wa->cfg.smooth);
    }
    memcpy(out, v->cells, T * N * sizeof(*out));
    memcpy(w_low, w, T * N * sizeof(*w_low));
    if (tid == NULL || nid == NULL || tord == NULL || nord == NULL || nmap == NULL || h == NULL ||
        hw == NULL) {
        goto out;
    }
    memcpy(hw, w, T * N * sizeof(*hw));
    memcpy(hw + T * N, w, T * N * sizeof(*hw));
    for (n = 0; n < N; n++) {
        nid[n] = v->nodes[n].id;
        nmap[n] = wa->have_hist ? pol_wa_lookup(wa->hist_nid, wa->hist_nord, wa->hist_n, nid[n])
                                : SIZE_MAX;
    }
    for (t = 0; t < T; t++) {
        size_t ht = wa->have_hist
                        ? pol_wa_lookup(wa->hist_tid, wa->hist_tord, wa->hist_t, v->tenants[t].id)
                        : SIZE_MAX;

        tid[t] = v->tenants[t].id;
        for (n = 0; n < N && ht != SIZE_MAX; n++) {
            size_t i = t * N + n, j = ht * wa->hist_n + nmap[n]; /* used when mapped */

            if (nmap[n] != SIZE_MAX) {
                pol_wa_ewma(&out[i], &wa->hist[j], &v->cells[i], a);
                w_low[i] = fmin(w[i], wa->hist_w[wa->hist_t * wa->hist_n + j]);
                hw[T * N + i] = fmin(w[i], wa->hist_w[j]);
            }
        }
    }
    if (pol_wa_sort_ids(tid, T, tord) != 0 || pol_wa_sort_ids(nid, N, nord) != 0) {
        goto out;
    }
    memcpy(h, out, T * N * sizeof(*h));
    pol_wa_forget(wa);
    wa->hist_tid = tid;
    wa->hist_nid = nid;
    wa->hist_tord = tord;
    wa->hist_nord = nord;
    wa->hist = h;
    wa->hist_w = hw;
    wa->hist_t = T;
    wa->hist_n = N;
    wa->hist_now = v->now_ns;
    wa->have_hist = 1;
    tid = nid = NULL;
    tord = nord = NULL;
    h = NULL;
    hw = NULL;
    rc = 0;
out:
    if (rc != 0) {
        pol_wa_forget(wa);
        memcpy(w_low, w, T * N * sizeof(*w_low));
    }
    free(tid);
    free(nid);
    free(tord);
    free(nord);
    free(nmap);
    free(h);
    free(hw);
    return rc;
}
