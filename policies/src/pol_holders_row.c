/*
 * pol_holders_row.c - the "row" holder choice: position j goes to row[j]
 * when that node is usable and holds no other position; every other
 * position gets the least-used usable node (ties: the row's order, then
 * the directory's). So holders are distinct while there are enough usable
 * nodes, and spread evenly when there are not. A moving position never
 * goes back to the node it leaves. Stateless.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_holders_impl.h"

#define BIT(j) (1ull << (j))

static int
row_create(struct pol_holders **out)
{
    struct pol_holders *p = calloc(1, sizeof(*p));

    *out = p;
    if (p == NULL) {
        return -ENOMEM;
    }
    p->ops = &pol_holders_row_ops;
    return 0;
}

static void
row_destroy(struct pol_holders *p)
{
    free(p);
}

/* Index of id in ids[n], or n. */
static size_t
index_of(const uint32_t *ids, size_t n, uint32_t id)
{
    size_t i;

    for (i = 0; i < n && ids[i] != id; i++) {
    }
    return i;
}

/* Positions of done holding node. */
static unsigned
use_of(const uint32_t *holders, uint64_t done, uint32_t n, uint32_t node)
{
    unsigned use = 0;
    uint32_t j;

    for (j = 0; j < n; j++) {
        use += (done & BIT(j)) && holders[j] == node;
    }
    return use;
}

/* The least-used usable node for position j (ties: row order, then
 * directory order), or -1. */
static long
least_used(const struct pol_holders_view *v, const uint32_t *old, const uint32_t *holders,
           uint64_t done, uint32_t j)
{
    long best = -1;
    size_t best_rank = 0, rank, i;
    unsigned best_use = 0, use;

    for (i = 0; i < v->nusable; i++) {
        if ((v->moving & BIT(j)) && v->usable[i] == old[j]) {
            continue;
        }
        use = use_of(holders, done, v->n, v->usable[i]);
        rank = index_of(v->row, v->nrow, v->usable[i]);
        if (rank == v->nrow) {
            rank += i;
        }
        if (best < 0 || use < best_use || (use == best_use && rank < best_rank)) {
            best = (long)i;
            best_use = use;
            best_rank = rank;
        }
    }
    return best;
}

static int
row_choose(struct pol_holders *p, const struct pol_holders_view *v, uint32_t *holders)
{
    uint32_t out[64];
    uint64_t done = v->fixed;
    uint32_t j, r;
    long best;

    (void)p;
    if (v->n == 0 || v->n > 64) {
        return CM_E_BADARG;
    }
    if (v->nusable < v->min_nodes) {
        return CM_E_UNAVAIL;
    }
    memcpy(out, holders, v->n * sizeof(*out));
    for (j = 0; j < v->n && j < v->nrow; j++) {
        r = v->row[j];
        if ((done & BIT(j)) || index_of(v->usable, v->nusable, r) == v->nusable ||
            ((v->moving & BIT(j)) && r == holders[j]) || use_of(out, done, v->n, r) > 0) {
            continue;
        }
        out[j] = r;
        done |= BIT(j);
    }
    for (j = 0; j < v->n; j++) {
        if (done & BIT(j)) {
            continue;
        }
        best = least_used(v, holders, out, done, j);
        if (best < 0) {
            return CM_E_UNAVAIL;
        }
        out[j] = v->usable[best];
        done |= BIT(j);
    }
    memcpy(holders, out, v->n * sizeof(*out));
    return 0;
}

const struct pol_holders_ops pol_holders_row_ops = {
    .name = "row",
    .create = row_create,
    .destroy = row_destroy,
    .choose = row_choose,
};
