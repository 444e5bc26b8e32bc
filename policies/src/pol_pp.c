/*
 * pol_pp.c - the PP policy registry, view checks, the DRF scaling, the
 * rendezvous score, and the working state every policy shares (see
 * pol_pp_impl.h).
 *
 * No threads, no I/O, no clock: see pol_pp.h. Everything a call allocates
 * is freed before it returns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "pol_pp_impl.h"

/* The one registry. */
static const struct pol_pp_ops *const pol_pp_registry[] = {
    &pol_pp_hash_ops,
    &pol_pp_greedy_ops,
    &pol_pp_milp_ops,
};

/* Slack on capacity checks, so a load computed in another order is not
 * called over its limit. */
#define PP_TOL 1e-9

const struct pol_pp_ops *
pol_pp_find(const char *name)
{
    size_t i;

    if (name == NULL) {
        return NULL;
    }
    for (i = 0; i < sizeof(pol_pp_registry) / sizeof(pol_pp_registry[0]); i++) {
        if (strcmp(pol_pp_registry[i]->name, name) == 0) {
            return pol_pp_registry[i];
        }
    }
    return NULL;
}

const struct pol_pp_ops *const *
pol_pp_list(size_t *n)
{
    *n = sizeof(pol_pp_registry) / sizeof(pol_pp_registry[0]);
    return pol_pp_registry;
}

int
pol_pp_base_create(const struct pol_pp_ops *ops, const struct pol_pp_cfg *cfg, struct pol_pp **out)
{
    struct pol_pp *pp;

    *out = NULL;
    pp = calloc(1, sizeof(*pp));
    if (pp == NULL) {
        return -ENOMEM;
    }
    pp->ops = ops;
    if (cfg != NULL) {
        pp->cfg = *cfg;
    }
    if (pp->cfg.max_binaries == 0) {
        pp->cfg.max_binaries = 4096;
    }
    *out = pp;
    return 0;
}

void
pol_pp_base_destroy(struct pol_pp *pp)
{
    free(pp);
}

size_t
pol_pp_slots(const struct pol_pp_view *v)
{
    size_t n = 0;

    for (size_t p = 0; p < v->nparts; p++) {
        n += v->parts[p].width;
    }
    return n;
}

/* ---- rendezvous hashing ------------------------------------------------ */

uint64_t
pol_pp_hash_score(uint64_t (*hash64)(const void *, size_t, uint64_t), uint64_t seed,
                  uint32_t tenant, uint32_t partition, uint32_t node)
{
    uint8_t b[12];

    cm_put_le32(b, tenant);
    cm_put_le32(b + 4, partition);
    cm_put_le32(b + 8, node);
    return hash64(b, sizeof(b), seed);
}

/* 1 if (sa, a) ranks before (sb, b). */
static int
ranks_before(uint64_t sa, uint32_t a, uint64_t sb, uint32_t b)
{
    return sa > sb || (sa == sb && a < b);
}

/* Top-width selection by insertion: rows are short (k + m). */
size_t
pol_pp_hash_row(uint64_t (*hash64)(const void *, size_t, uint64_t), uint64_t seed, uint32_t tenant,
                uint32_t partition, const uint32_t *nodes, size_t nnodes, size_t width,
                uint32_t *out)
{
    uint64_t sc[POL_PP_MAX_WIDTH];
    size_t n = 0;

    if (width > POL_PP_MAX_WIDTH) {
        width = POL_PP_MAX_WIDTH;
    }
    for (size_t i = 0; i < nnodes; i++) {
        uint64_t s = pol_pp_hash_score(hash64, seed, tenant, partition, nodes[i]);
        size_t j;

        if (n == width && (n == 0 || !ranks_before(s, nodes[i], sc[n - 1], out[n - 1]))) {
            continue;
        }
        j = n < width ? n++ : n - 1;
        while (j > 0 && ranks_before(s, nodes[i], sc[j - 1], out[j - 1])) {
            sc[j] = sc[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        sc[j] = s;
        out[j] = nodes[i];
    }
    return n;
}

/* ---- view checks ------------------------------------------------------- */

struct id_ix {
    uint32_t id;
    int32_t ix;
};

static int
cmp_id_ix(const void *a, const void *b)
{
    const struct id_ix *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorted (id, index) pairs of n records whose id is at byte offset 0 of
 * each stride-sized record; NULL on -ENOMEM (n == 0 gives a valid empty
 * array). *dup = 1 when two ids are equal. */
static struct id_ix *
index_ids(const void *base, size_t n, size_t stride, int *dup)
{
    struct id_ix *a = malloc((n + 1) * sizeof(*a));

    *dup = 0;
    if (a == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(&a[i].id, (const char *)base + i * stride, sizeof(uint32_t));
        a[i].ix = (int32_t)i;
    }
    qsort(a, n, sizeof(*a), cmp_id_ix);
    for (size_t i = 1; i < n; i++) {
        *dup |= a[i].id == a[i - 1].id;
    }
    return a;
}

static int32_t
lookup(const struct id_ix *a, size_t n, uint32_t id)
{
    struct id_ix key = {.id = id};
    const struct id_ix *hit = bsearch(&key, a, n, sizeof(*a), cmp_id_ix);

    return hit != NULL ? hit->ix : -1;
}

static int
finite_nonneg(double x)
{
    return isfinite(x) && x >= 0.0;
}

/* Checks the view; on success *tix (caller frees) maps each partition to
 * its tenant's index in v->tenants. */
static int
check_view(const struct pol_pp_view *v, int32_t **tix)
{
    struct id_ix *nodes = NULL, *tenants = NULL;
    int dup, rc = CM_E_BADARG;

    *tix = NULL;
    if (v == NULL || (v->nnodes > 0 && v->nodes == NULL) || (v->nparts > 0 && v->parts == NULL) ||
        (v->ntenants > 0 && v->tenants == NULL) || (v->cur_rows == NULL) != (v->cur_len == NULL) ||
        v->nnodes > INT32_MAX || v->nparts > INT32_MAX || v->ntenants > INT32_MAX ||
        !isfinite(v->headroom) || v->headroom <= 0.0 || v->headroom > 1.0) {
        return CM_E_BADARG;
    }
    nodes = index_ids(v->nodes, v->nnodes, sizeof(v->nodes[0]), &dup);
    if (nodes == NULL) {
        return -ENOMEM;
    }
    if (dup) {
        goto out;
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        for (int r = 0; r < POL_PP_NRES; r++) {
            if (v->nodes[n].up && (!isfinite(v->nodes[n].cap[r]) || v->nodes[n].cap[r] <= 0.0)) {
                goto out;
            }
        }
    }
    tenants = index_ids(v->tenants, v->ntenants, sizeof(v->tenants[0]), &dup);
    if (tenants == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if (dup) {
        goto out;
    }
    for (size_t t = 0; t < v->ntenants; t++) {
        if (!isfinite(v->tenants[t].weight) || v->tenants[t].weight <= 0.0) {
            goto out;
        }
    }
    *tix = malloc((v->nparts + 1) * sizeof(**tix));
    if (*tix == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t p = 0; p < v->nparts; p++) {
        const struct pol_pp_part *pt = &v->parts[p];

        (*tix)[p] = lookup(tenants, v->ntenants, pt->tenant);
        if ((*tix)[p] < 0 || pt->width < 1 || pt->width > POL_PP_MAX_WIDTH || pt->k < 1 ||
            pt->k > pt->width || !finite_nonneg(pt->demand[0]) || !finite_nonneg(pt->demand[1]) ||
            (v->cur_len != NULL && v->cur_len[p] > pt->width)) {
            goto out;
        }
    }
    rc = 0;
out:
    free(nodes);
    free(tenants);
    if (rc != 0) {
        free(*tix);
        *tix = NULL;
    }
    return rc;
}

/* ---- the load model and weighted DRF ------------------------------------ */

double
pol_pp_slot_share(uint32_t k, uint32_t c, uint32_t j)
{
    uint32_t read = k < c ? k : c; /* holders a read asks */

    if (k == 1) {
        return 1.0 / c;
    }
    return j < read ? 1.0 / read : 0.0;
}

/* Progressive filling in closed form: while some tenants are unfrozen,
 * each unfrozen tenant t owns the fraction w_t * theta / d_t of its demand
 * (d_t its dominant demand share), so every resource's use is linear in
 * theta; jump theta to the next event (a tenant met, a resource full) and
 * freeze whoever it stops. O(tenants^2). */
static void
drf_fill(const struct pol_pp_view *v, const int32_t *tix, double *frac)
{
    size_t nt = v->ntenants;
    double cap[POL_PP_NRES] = {0}, used[POL_PP_NRES] = {0};
    double *dem = calloc(nt * POL_PP_NRES + 1, sizeof(*dem));
    double *dom = calloc(nt + 1, sizeof(*dom));
    unsigned char *active = calloc(nt + 1, 1);
    size_t nactive = 0;

    for (size_t t = 0; t < nt; t++) {
        frac[t] = 1.0;
    }
    if (dem == NULL || dom == NULL || active == NULL) {
        goto out; /* frac stays 1: the unscaled demand, a safe overestimate */
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        for (int r = 0; r < POL_PP_NRES && v->nodes[n].up; r++) {
            cap[r] += POL_PP_DRF_FILL * v->headroom * v->nodes[n].cap[r];
        }
    }
    for (size_t p = 0; p < v->nparts; p++) {
        for (int r = 0; r < POL_PP_NRES; r++) {
            dem[(size_t)tix[p] * POL_PP_NRES + r] += v->parts[p].demand[r];
        }
    }
    for (size_t t = 0; t < nt; t++) {
        for (int r = 0; r < POL_PP_NRES; r++) {
            double d = dem[t * POL_PP_NRES + r];

            if (d > 0.0) {
                dom[t] = fmax(dom[t], cap[r] > 0.0 ? d / cap[r] : INFINITY);
            }
        }
        if (dom[t] == INFINITY) {
            frac[t] = 0.0; /* no capacity at all for what it asks */
        } else if (dom[t] > 0.0) {
            active[t] = 1;
            nactive++;
        }
    }
    while (nactive > 0) {
        double slope[POL_PP_NRES] = {0}, theta = INFINITY, tr[POL_PP_NRES];

        for (size_t t = 0; t < nt; t++) {
            if (!active[t]) {
                continue;
            }
            theta = fmin(theta, dom[t] / v->tenants[t].weight);
            for (int r = 0; r < POL_PP_NRES; r++) {
                slope[r] += v->tenants[t].weight * dem[t * POL_PP_NRES + r] / dom[t];
            }
        }
        for (int r = 0; r < POL_PP_NRES; r++) {
            tr[r] = slope[r] > 0.0 ? fmax(0.0, cap[r] - used[r]) / slope[r] : INFINITY;
            theta = fmin(theta, tr[r]);
        }
        for (size_t t = 0; t < nt; t++) {
            int stop = 0;

            if (!active[t]) {
                continue;
            }
            stop = dom[t] / v->tenants[t].weight <= theta * (1.0 + 1e-12);
            for (int r = 0; r < POL_PP_NRES; r++) {
                stop |= tr[r] <= theta * (1.0 + 1e-12) && dem[t * POL_PP_NRES + r] > 0.0;
            }
            if (!stop) {
                continue;
            }
            frac[t] = fmin(1.0, v->tenants[t].weight * theta / dom[t]);
            for (int r = 0; r < POL_PP_NRES; r++) {
                used[r] += frac[t] * dem[t * POL_PP_NRES + r];
            }
            active[t] = 0;
            nactive--;
        }
    }
out:
    free(dem);
    free(dom);
    free(active);
}

int
pol_pp_drf(const struct pol_pp_view *v, double *frac)
{
    int32_t *tix;
    int rc = check_view(v, &tix);

    if (rc != 0) {
        return rc;
    }
    drf_fill(v, tix, frac);
    free(tix);
    return 0;
}

/* ---- working state ----------------------------------------------------- */

void
pp_work_fini(struct pp_work *w)
{
    free(w->off);
    free(w->c);
    free(w->dem);
    free(w->cur);
    free(w->up);
    free(w->hold);
    free(w->share);
    free(w->load);
    free(w->limit);
    memset(w, 0, sizeof(*w));
}

/* Current holders as indexes: known, eligible, not repeated, in a slot the
 * row still has. */
static int
map_current(struct pp_work *w, int all_eligible)
{
    const struct pol_pp_view *v = w->v;
    int dup;
    struct id_ix *ids = index_ids(v->nodes, v->nnodes, sizeof(v->nodes[0]), &dup);

    if (ids == NULL) {
        return -ENOMEM;
    }
    for (size_t p = 0; p < v->nparts && v->cur_rows != NULL; p++) {
        for (uint32_t j = 0; j < v->cur_len[p] && j < w->c[p]; j++) {
            int32_t n = lookup(ids, v->nnodes, v->cur_rows[w->off[p] + j]);

            if (n < 0 || (!all_eligible && !v->nodes[n].up)) {
                continue;
            }
            for (uint32_t i = 0; i < j && n >= 0; i++) {
                if (w->cur[w->off[p] + i] == n) {
                    n = -1;
                }
            }
            w->cur[w->off[p] + j] = n;
        }
    }
    free(ids);
    return 0;
}

int
pp_work_init(struct pp_work *w, const struct pol_pp_view *v, int all_eligible)
{
    int32_t *tix;
    double *frac = NULL;
    size_t eligible, nn;
    int rc;

    memset(w, 0, sizeof(*w));
    rc = check_view(v, &tix);
    if (rc != 0) {
        return rc;
    }
    w->v = v;
    w->nslots = pol_pp_slots(v);
    nn = v->nnodes * POL_PP_NRES + 1;
    w->off = malloc((v->nparts + 1) * sizeof(*w->off));
    w->c = malloc((v->nparts + 1) * sizeof(*w->c));
    w->dem = malloc((v->nparts * POL_PP_NRES + 1) * sizeof(*w->dem));
    w->cur = malloc((w->nslots + 1) * sizeof(*w->cur));
    w->up = malloc((v->nnodes + 1) * sizeof(*w->up));
    w->hold = malloc((w->nslots + 1) * sizeof(*w->hold));
    w->share = calloc(w->nslots + 1, sizeof(*w->share));
    w->load = calloc(nn, sizeof(*w->load));
    w->limit = calloc(nn, sizeof(*w->limit));
    frac = malloc((v->ntenants + 1) * sizeof(*frac));
    if (w->off == NULL || w->c == NULL || w->dem == NULL || w->cur == NULL || w->up == NULL ||
        w->hold == NULL || w->share == NULL || w->load == NULL || w->limit == NULL ||
        frac == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        if (v->nodes[n].up) {
            w->up[w->nup++] = (int32_t)n;
            for (int r = 0; r < POL_PP_NRES; r++) {
                w->limit[n * POL_PP_NRES + r] = v->headroom * v->nodes[n].cap[r];
            }
        }
    }
    eligible = all_eligible ? v->nnodes : w->nup;
    if (v->nparts > 0 && eligible == 0) {
        rc = CM_E_UNAVAIL;
        goto out;
    }
    drf_fill(v, tix, frac);
    w->off[0] = 0;
    for (size_t p = 0; p < v->nparts; p++) {
        w->off[p + 1] = w->off[p] + v->parts[p].width;
        w->c[p] = v->parts[p].width < eligible ? v->parts[p].width : (uint32_t)eligible;
        for (int r = 0; r < POL_PP_NRES; r++) {
            w->dem[p * POL_PP_NRES + r] = v->parts[p].demand[r] * frac[tix[p]];
        }
    }
    for (size_t s = 0; s < w->nslots; s++) {
        w->cur[s] = w->hold[s] = -1;
    }
    rc = map_current(w, all_eligible);
out:
    free(tix);
    free(frac);
    if (rc != 0) {
        pp_work_fini(w);
    }
    return rc;
}

void
pp_hold(struct pp_work *w, size_t p, uint32_t slot, int32_t n, double s)
{
    size_t i = w->off[p] + slot;

    w->hold[i] = n;
    w->share[i] = s;
    for (int r = 0; r < POL_PP_NRES; r++) {
        w->load[(size_t)n * POL_PP_NRES + r] += w->dem[p * POL_PP_NRES + r] * s;
    }
}

void
pp_unhold(struct pp_work *w, size_t p, uint32_t slot)
{
    size_t i = w->off[p] + slot;
    int32_t n = w->hold[i];

    if (n < 0) {
        return;
    }
    for (int r = 0; r < POL_PP_NRES; r++) {
        w->load[(size_t)n * POL_PP_NRES + r] -= w->dem[p * POL_PP_NRES + r] * w->share[i];
    }
    w->hold[i] = -1;
    w->share[i] = 0.0;
}

void
pp_clear(struct pp_work *w)
{
    for (size_t s = 0; s < w->nslots; s++) {
        w->hold[s] = -1;
        w->share[s] = 0.0;
    }
    memset(w->load, 0, w->v->nnodes * POL_PP_NRES * sizeof(*w->load));
}

void
pp_hold_current(struct pp_work *w)
{
    for (size_t p = 0; p < w->v->nparts; p++) {
        for (uint32_t j = 0; j < w->c[p]; j++) {
            size_t s = w->off[p] + j;

            if (w->cur[s] >= 0) {
                pp_hold(w, p, j, w->cur[s], pp_share(w, p, j));
            }
        }
    }
}

double
pp_share(const struct pp_work *w, size_t p, uint32_t j)
{
    return pol_pp_slot_share(w->v->parts[p].k, w->c[p], j);
}

int
pp_fits(const struct pp_work *w, size_t p, int32_t n, double frac)
{
    for (int r = 0; r < POL_PP_NRES; r++) {
        double lim = w->limit[(size_t)n * POL_PP_NRES + r];

        if (w->load[(size_t)n * POL_PP_NRES + r] + w->dem[p * POL_PP_NRES + r] * frac >
            lim * (1.0 + PP_TOL)) {
            return 0;
        }
    }
    return 1;
}

double
pp_util(const struct pp_work *w, int32_t n)
{
    double u = 0.0;

    for (int r = 0; r < POL_PP_NRES; r++) {
        u = fmax(u, w->load[(size_t)n * POL_PP_NRES + r] / w->v->nodes[n].cap[r]);
    }
    return u;
}

int
pp_has(const int32_t *a, size_t n, int32_t x)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] == x) {
            return 1;
        }
    }
    return 0;
}

int
pp_row_has(const struct pp_work *w, size_t p, int32_t n)
{
    return pp_has(w->hold + w->off[p], w->off[p + 1] - w->off[p], n);
}

int
pp_is_current(const struct pp_work *w, size_t p, int32_t n)
{
    return pp_has(w->cur + w->off[p], w->c[p], n);
}

int
pp_cur_slot(const struct pp_work *w, size_t p, int32_t n)
{
    for (uint32_t j = 0; j < w->c[p] && n >= 0; j++) {
        if (w->cur[w->off[p] + j] == n) {
            return (int)j;
        }
    }
    return -1;
}

int
pp_cmp_keyed(const void *a, const void *b)
{
    const struct pp_keyed *x = a, *y = b;

    if (x->key != y->key) {
        return x->key > y->key ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

double
pp_overload(const struct pp_work *w)
{
    double f = 0.0;

    for (size_t i = 0; i < w->nup; i++) {
        for (int r = 0; r < POL_PP_NRES; r++) {
            size_t k = (size_t)w->up[i] * POL_PP_NRES + r;

            f = fmax(f, w->load[k] / w->limit[k]);
        }
    }
    return f;
}

double
pp_moved_bytes(const struct pp_work *w, const unsigned char *mask)
{
    double b = 0.0;

    for (size_t p = 0; p < w->v->nparts; p++) {
        for (size_t s = w->off[p]; s < w->off[p] + w->c[p] && (mask == NULL || mask[p]); s++) {
            if (w->hold[s] != w->cur[s]) {
                b += (double)w->v->parts[p].resident_bytes;
            }
        }
    }
    return b;
}

double
pp_dominant(const struct pp_work *w, size_t p)
{
    double d = 0.0;

    for (int r = 0; r < POL_PP_NRES; r++) {
        double cap = 0.0;

        for (size_t i = 0; i < w->nup; i++) {
            cap += w->v->nodes[w->up[i]].cap[r];
        }
        d = fmax(d, w->dem[p * POL_PP_NRES + r] * (double)w->nup / cap);
    }
    return d;
}

void
pp_finish(const struct pp_work *w, struct pol_pp_out *out, const char *solver)
{
    const struct pol_pp_view *v = w->v;
    struct pol_pp_stats *st = &out->stats;

    memset(st, 0, sizeof(*st));
    st->solver = solver;
    st->feasible = 1;
    for (size_t p = 0; p < v->nparts; p++) {
        const uint32_t *cur = v->cur_rows != NULL ? v->cur_rows + w->off[p] : NULL;
        uint32_t ncur = cur != NULL ? v->cur_len[p] : 0, n = 0;
        uint32_t *row = out->rows + w->off[p];
        int moved = 0;

        for (size_t s = w->off[p]; s < w->off[p + 1]; s++) {
            if (w->hold[s] < 0) {
                continue;
            }
            if (out->share != NULL) {
                out->share[w->off[p] + n] = w->share[s];
            }
            row[n] = v->nodes[w->hold[s]].id;
            if (n >= ncur || cur[n] != row[n]) {
                st->bytes_moved += v->parts[p].resident_bytes;
                moved = 1;
            }
            n++;
        }
        out->len[p] = n;
        st->parts_moved += (uint32_t)(moved || n != ncur);
    }
    for (size_t i = 0; i < w->nup; i++) {
        int32_t n = w->up[i];

        for (int r = 0; r < POL_PP_NRES; r++) {
            double load = w->load[(size_t)n * POL_PP_NRES + r];

            st->max_util[r] = fmax(st->max_util[r], load / v->nodes[n].cap[r]);
            st->feasible &= load <= w->limit[(size_t)n * POL_PP_NRES + r] * (1.0 + PP_TOL) + 1e-12;
        }
    }
}
