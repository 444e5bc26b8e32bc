/*
 * pol_pp_greedy.c - best-fit-decreasing on the dominant resource: the
 * "greedy" policy, milp's fallback and its warm start.
 *
 * Keep, then fill. Keep: in order of resident bytes per unit of dominant
 * load, descending (what is dearest to move and relieves least stays
 * first), each partition keeps the current holders it still fits on. Fill:
 * in order of dominant demand, descending, each empty slot goes to the up
 * node not yet in the row that fits the holder's load and has the least
 * dominant headroom left after it (best fit); when none fits, to the least
 * utilised one. Shares are 1/c (copies too: greedy does not split reads).
 *
 * Best fit fills nodes one after another, so wide rows (k + m distinct
 * nodes) can find only full nodes left at 60% average load; and keeping
 * every holder that fits can keep three hot partitions whole on a node
 * where the fourth then finds no room. So when a pass leaves a node over
 * its limit, the next is tried: keep + best fit, keep + spread (each holder
 * to the node least full after taking it), then the same two without
 * keeping; the first within limits wins, else the lowest peak (then fewer
 * bytes moved). O(P log P + P x width x nodes x width) per pass.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pol_pp_impl.h"

/* Dominant headroom of node n left after taking frac of p, or -1 if it
 * does not fit. */
static double
headroom_after(const struct pp_work *w, size_t p, int32_t n, double frac)
{
    double h = INFINITY;

    if (!pp_fits(w, p, n, frac)) {
        return -1.0;
    }
    for (int r = 0; r < POL_PP_NRES; r++) {
        size_t i = (size_t)n * POL_PP_NRES + r;

        h = fmin(h, (w->limit[i] - w->load[i] - w->dem[p * POL_PP_NRES + r] * frac) /
                        w->v->nodes[n].cap[r]);
    }
    return fmax(h, 0.0);
}

/* Load of node n relative to its limit after taking frac of p (the
 * highest resource). */
static double
fill_after(const struct pp_work *w, size_t p, int32_t n, double frac)
{
    double f = 0.0;

    for (int r = 0; r < POL_PP_NRES; r++) {
        size_t i = (size_t)n * POL_PP_NRES + r;

        f = fmax(f, (w->load[i] + w->dem[p * POL_PP_NRES + r] * frac) / w->limit[i]);
    }
    return f;
}

/* The node for p's next holder. Best fit: the fitting node left with the
 * least headroom, else the least utilised. Spread: the node least full
 * after taking it. Ties: the first up node. */
static int32_t
pick(const struct pp_work *w, size_t p, double frac, int spread)
{
    int32_t best = -1, least = -1;
    double best_h = INFINITY, least_u = INFINITY;

    for (size_t i = 0; i < w->nup; i++) {
        int32_t n = w->up[i];
        double h, u;

        if (pp_row_has(w, p, n)) {
            continue;
        }
        h = spread ? fill_after(w, p, n, frac) : headroom_after(w, p, n, frac);
        if (h >= 0.0 && h < best_h) {
            best_h = h;
            best = n;
        }
        u = pp_util(w, n);
        if (u < least_u) {
            least_u = u;
            least = n;
        }
    }
    return best >= 0 ? best : least;
}

/* The candidate's worst node: load over limit, the highest resource. */
static double
overload(const struct pp_work *w)
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

/* Bytes the candidate moves for the partitions in order. */
static double
moved(const struct pp_work *w, const struct pp_keyed *order, size_t n)
{
    double b = 0.0;

    for (size_t i = 0; i < n; i++) {
        size_t p = order[i].i;

        for (uint32_t j = 0; j < w->c[p]; j++) {
            if (!pp_is_current(w, p, w->hold[w->off[p] + j])) {
                b += (double)w->v->parts[p].resident_bytes;
            }
        }
    }
    return b;
}

/* The candidate's arrays, to try a pass and go back. */
struct snap {
    int32_t *hold;
    double *share, *load;
};

static int
snap_init(struct snap *s, const struct pp_work *w)
{
    s->hold = malloc((w->nslots + 1) * sizeof(*s->hold));
    s->share = malloc((w->nslots + 1) * sizeof(*s->share));
    s->load = malloc((w->v->nnodes * POL_PP_NRES + 1) * sizeof(*s->load));
    return s->hold != NULL && s->share != NULL && s->load != NULL ? 0 : -ENOMEM;
}

static void
snap_fini(struct snap *s)
{
    free(s->hold);
    free(s->share);
    free(s->load);
}

/* copy: 1 = w to s, 0 = s to w. */
static void
snap_copy(struct snap *s, struct pp_work *w, int save)
{
    size_t nl = w->v->nnodes * POL_PP_NRES;

    memcpy(save ? s->hold : w->hold, save ? w->hold : s->hold, w->nslots * sizeof(*s->hold));
    memcpy(save ? s->share : w->share, save ? w->share : s->share, w->nslots * sizeof(*s->share));
    memcpy(save ? s->load : w->load, save ? w->load : s->load, nl * sizeof(*s->load));
}

/* Keep (unless fresh), then fill (order: dominant demand, descending). */
static void
pass(struct pp_work *w, struct pp_keyed *order, size_t n, const struct pp_keyed *keep, int fresh,
     int spread)
{
    for (size_t i = 0; i < n && !fresh; i++) {
        size_t p = keep[i].i;
        double frac = 1.0 / w->c[p];

        for (uint32_t j = 0; j < w->c[p]; j++) {
            int32_t h = w->cur[w->off[p] + j];

            if (h >= 0 && pp_fits(w, p, h, frac)) {
                pp_hold(w, p, j, h, frac);
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t p = order[i].i;
        double frac = 1.0 / w->c[p];

        for (uint32_t j = 0; j < w->c[p]; j++) {
            if (w->hold[w->off[p] + j] < 0) {
                pp_hold(w, p, j, pick(w, p, frac, spread), frac);
            }
        }
    }
}

int
pp_greedy(struct pp_work *w, const unsigned char *free_mask)
{
    const struct pol_pp_view *v = w->v;
    struct pp_keyed *keep = malloc((v->nparts + 1) * sizeof(*keep));
    struct pp_keyed *order = malloc((v->nparts + 1) * sizeof(*order));
    struct snap before = {0}, best = {0};
    double best_over = INFINITY, best_moved = INFINITY;
    size_t n = 0;
    int rc = -ENOMEM;

    if (keep == NULL || order == NULL || snap_init(&before, w) != 0 || snap_init(&best, w) != 0) {
        goto out;
    }
    for (size_t p = 0; p < v->nparts; p++) {
        double d = pp_dominant(w, p);

        if (free_mask == NULL || free_mask[p]) {
            keep[n].key = d > 0.0 ? (double)v->parts[p].resident_bytes / d : INFINITY;
            order[n].key = d;
            keep[n].i = order[n].i = (uint32_t)p;
            n++;
        }
    }
    qsort(keep, n, sizeof(*keep), pp_cmp_keyed);
    qsort(order, n, sizeof(*order), pp_cmp_keyed);
    snap_copy(&before, w, 1);
    /* Modes in order of the bytes they tend to move: keep + best fit, keep +
     * spread, fresh + best fit, fresh + spread. */
    for (int mode = 0; mode < 4; mode++) {
        double over, mv;

        if (mode > 0) {
            snap_copy(&before, w, 0);
        }
        pass(w, order, n, keep, mode >= 2, mode % 2);
        over = fmax(overload(w), 1.0);
        mv = moved(w, order, n);
        if (over < best_over || (over == best_over && mv < best_moved)) {
            best_over = over;
            best_moved = mv;
            snap_copy(&best, w, 1);
        }
        if (best_over <= 1.0 + 1e-9) {
            break;
        }
    }
    snap_copy(&best, w, 0);
    rc = 0;
out:
    free(keep);
    free(order);
    snap_fini(&before);
    snap_fini(&best);
    return rc;
}

static int
greedy_create(const struct pol_pp_cfg *cfg, struct pol_pp **out)
{
    return pol_pp_base_create(&pol_pp_greedy_ops, cfg, out);
}

static int
greedy_place(struct pol_pp *pp, const struct pol_pp_view *v, uint32_t budget_ms,
             struct pol_pp_out *out)
{
    struct pp_work w;
    int rc;

    (void)pp;
    (void)budget_ms;
    rc = pp_work_init(&w, v, 0);
    if (rc != 0) {
        return rc;
    }
    rc = pp_greedy(&w, NULL);
    if (rc == 0) {
        pp_finish(&w, out, "greedy");
    }
    pp_work_fini(&w);
    return rc;
}

const struct pol_pp_ops pol_pp_greedy_ops = {
    .name = "greedy",
    .create = greedy_create,
    .destroy = pol_pp_base_destroy,
    .place = greedy_place,
};
