/*
 * pol_pp_greedy.c - best-fit-decreasing on the dominant resource: the
 * "greedy" policy, milp's fallback and its warm start.
 *
 * A pass: first every partition keeps the current holders it still fits
 * on; then, in order of dominant demand, descending, each empty slot goes
 * to the up node not yet in the row that fits the holder's load and has the
 * least dominant headroom left after it (best fit); when none fits, to the
 * least utilised one. Each slot carries its share of the load model
 * (pp_share: 1/c of a copies partition, 1/k on a stripe's data slots, none
 * on its parity), and a node that currently holds another slot of the
 * partition is not taken for this one (that would move its chunk).
 *
 * Then a repair: while a node is over its limit, its movable holders that
 * relieve most load per resident byte move, each to the node where it fits
 * best, until it fits (or nothing can leave it).
 *
 * Which holders are kept, and best fit itself, can fail where a feasible
 * answer exists: keeping cold partitions first can leave no node with room
 * for a hot one's holder, and best fit fills nodes one after another, so
 * wide rows (k + m distinct nodes) find only full nodes left at 60% average
 * load. So four passes run: keeping the hottest partitions first or the
 * dearest to move per unit of load first, each with best fit or spread
 * (each holder to the node least full after taking it); two more without
 * keeping anything when none of those ends within limits. The best wins:
 * within limits first (else the lowest peak), then the fewest bytes moved.
 * O(P log P + P x width x nodes x width) per pass, the repair O(slots) per
 * node it relieves plus O(width x nodes) per move.
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

/* 1 if n may take p's slot j: not in the row yet, and not a current holder
 * of another slot. */
static int
may_take(const struct pp_work *w, size_t p, uint32_t j, int32_t n)
{
    int at = pp_cur_slot(w, p, n);

    return !pp_row_has(w, p, n) && (at < 0 || at == (int)j);
}

/* The node for p's slot j. Best fit: the fitting node left with the least
 * headroom, else the least utilised. Spread: the node least full after
 * taking it. Ties: the first up node. Only when every node left is a
 * current holder of another slot (a row missing holders, others not kept)
 * may one of those take it. */
static int32_t
pick(const struct pp_work *w, size_t p, uint32_t j, int spread)
{
    double frac = pp_share(w, p, j);
    int32_t best = -1, least = -1, other = -1;
    double best_h = INFINITY, least_u = INFINITY;

    for (size_t i = 0; i < w->nup; i++) {
        int32_t n = w->up[i];
        double h, u;

        if (!may_take(w, p, j, n)) {
            other = other < 0 && !pp_row_has(w, p, n) ? n : other;
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
    return best >= 0 ? best : least >= 0 ? least : other;
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

/* Keep (unless keep is NULL): in keep's order, each partition keeps the
 * current holders that still fit. Then fill: in fill's order, each empty
 * slot gets a node. */
static void
pass(struct pp_work *w, const struct pp_keyed *keep, const struct pp_keyed *fill, size_t n,
     int spread)
{
    for (size_t i = 0; i < n && keep != NULL; i++) {
        size_t p = keep[i].i;

        for (uint32_t j = 0; j < w->c[p]; j++) {
            int32_t h = w->cur[w->off[p] + j];

            if (h >= 0 && pp_fits(w, p, h, pp_share(w, p, j))) {
                pp_hold(w, p, j, h, pp_share(w, p, j));
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t p = fill[i].i;

        for (uint32_t j = 0; j < w->c[p]; j++) {
            if (w->hold[w->off[p] + j] < 0) {
                pp_hold(w, p, j, pick(w, p, j, spread), pp_share(w, p, j));
            }
        }
    }
}

/* Load over limit of node n, the highest resource. */
static double
node_over(const struct pp_work *w, int32_t n)
{
    double f = 0.0;

    for (int r = 0; r < POL_PP_NRES; r++) {
        size_t k = (size_t)n * POL_PP_NRES + r;

        f = fmax(f, w->load[k] / w->limit[k]);
    }
    return f;
}

/* Moves movable holders off the node most over its limit until it fits:
 * first those relieving most load per resident byte, each to the node
 * where it fits best (not in its row). A node that stays over is given up;
 * at most as many moves as slots. part_of maps slots to partitions. */
static int
repair(struct pp_work *w, const unsigned char *free_mask, const uint32_t *part_of)
{
    const struct pol_pp_view *v = w->v;
    unsigned char *stuck = calloc(v->nnodes + 1, 1);
    struct pp_keyed *cand = malloc((w->nslots + 1) * sizeof(*cand));
    size_t moves = 0;

    if (stuck == NULL || cand == NULL) {
        free(stuck);
        free(cand);
        return -ENOMEM;
    }
    while (moves < w->nslots) {
        int32_t worst = -1;
        double worst_over = 1.0 + 1e-9;
        size_t nc = 0;
        int moved_one = 0;

        for (size_t i = 0; i < w->nup; i++) {
            if (!stuck[w->up[i]] && node_over(w, w->up[i]) > worst_over) {
                worst_over = node_over(w, w->up[i]);
                worst = w->up[i];
            }
        }
        if (worst < 0) {
            break;
        }
        for (size_t s = 0; s < w->nslots; s++) {
            size_t p = part_of[s];
            double relief = 0.0;

            if (w->hold[s] != worst || (free_mask != NULL && !free_mask[p])) {
                continue;
            }
            for (int r = 0; r < POL_PP_NRES; r++) {
                relief = fmax(relief,
                              w->dem[p * POL_PP_NRES + r] * w->share[s] / v->nodes[worst].cap[r]);
            }
            if (relief <= 0.0) {
                continue; /* moving it costs bytes and relieves nothing */
            }
            cand[nc].key = relief / fmax(1.0, (double)v->parts[p].resident_bytes);
            cand[nc++].i = (uint32_t)s;
        }
        qsort(cand, nc, sizeof(*cand), pp_cmp_keyed);
        for (size_t k = 0; k < nc && node_over(w, worst) > 1.0 + 1e-9; k++) {
            size_t s = cand[k].i, p = part_of[s];
            double frac = w->share[s], best_h = INFINITY;
            int32_t to = -1;

            for (size_t i = 0; i < w->nup; i++) {
                int32_t n = w->up[i];
                double h;

                if (!may_take(w, p, (uint32_t)(s - w->off[p]), n)) {
                    continue;
                }
                h = headroom_after(w, p, n, frac);
                if (h >= 0.0 && h < best_h) {
                    best_h = h;
                    to = n;
                }
            }
            if (to >= 0) {
                pp_unhold(w, p, (uint32_t)(s - w->off[p]));
                pp_hold(w, p, (uint32_t)(s - w->off[p]), to, frac);
                moves++;
                moved_one = 1;
            }
        }
        if (!moved_one || node_over(w, worst) > 1.0 + 1e-9) {
            stuck[worst] = 1;
        }
    }
    free(stuck);
    free(cand);
    return 0;
}

int
pp_greedy(struct pp_work *w, const unsigned char *free_mask)
{
    const struct pol_pp_view *v = w->v;
    struct pp_keyed *hot = malloc((v->nparts + 1) * sizeof(*hot));
    struct pp_keyed *dear = malloc((v->nparts + 1) * sizeof(*dear));
    uint32_t *part_of = malloc((w->nslots + 1) * sizeof(*part_of));
    struct snap before = {0}, best = {0};
    double best_over = INFINITY, best_moved = INFINITY;
    size_t n = 0;
    int rc = -ENOMEM;

    if (hot == NULL || dear == NULL || part_of == NULL || snap_init(&before, w) != 0 ||
        snap_init(&best, w) != 0) {
        goto out;
    }
    for (size_t p = 0; p < v->nparts; p++) {
        for (size_t s = w->off[p]; s < w->off[p + 1]; s++) {
            part_of[s] = (uint32_t)p;
        }
    }
    for (size_t p = 0; p < v->nparts; p++) {
        double d = pp_dominant(w, p);

        if (free_mask == NULL || free_mask[p]) {
            hot[n].key = d;
            dear[n].key = d > 0.0 ? (double)v->parts[p].resident_bytes / d : INFINITY;
            hot[n].i = dear[n].i = (uint32_t)p;
            n++;
        }
    }
    qsort(hot, n, sizeof(*hot), pp_cmp_keyed);
    qsort(dear, n, sizeof(*dear), pp_cmp_keyed);
    snap_copy(&before, w, 1);
    /* Keeping the hottest first, then the dearest to move per unit of load
     * first, each with best fit and spread; without keeping only when none
     * of those ends within limits. */
    for (int mode = 0; mode < 6 && !(mode >= 4 && best_over <= 1.0); mode++) {
        const struct pp_keyed *keep = mode < 2 ? hot : mode < 4 ? dear : NULL;
        double over, mv;

        snap_copy(&before, w, 0);
        pass(w, keep, hot, n, mode % 2);
        if (repair(w, free_mask, part_of) != 0) {
            goto out;
        }
        over = fmax(pp_overload(w), 1.0);
        mv = pp_moved_bytes(w, free_mask);
        if (over < best_over - 1e-12 || (over <= best_over + 1e-12 && mv < best_moved)) {
            best_over = over;
            best_moved = mv;
            snap_copy(&best, w, 1);
        }
    }
    rc = 0;
out:
    if (best_over < INFINITY) {
        snap_copy(&best, w, 0);
    }
    free(hot);
    free(dear);
    free(part_of);
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
