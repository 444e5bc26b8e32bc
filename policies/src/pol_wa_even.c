/*
 * pol_wa_even.c - the "even" strawman: every node gets each tenant's
 * global weight, w[t][n] = W_t, whatever the demand. It meets the
 * invariants exactly (rows N * W_t, columns sum W, floor below W_t) and
 * is right only when every tenant's demand is spread like every other's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_wa_impl.h"

static int
even_create(const struct pol_wa_cfg *cfg, struct pol_wa **out)
{
    return pol_wa_new(&pol_wa_even_ops, cfg, out);
}

static int
even_step(struct pol_wa *wa, const struct pol_wa_view *v, double *w_out, struct pol_wa_stats *stats)
{
    size_t t, n, N = v != NULL ? v->nnodes : 0;
    double *w;
    int rc = pol_wa_check_view(v);

    if (rc != 0) {
        return rc;
    }
    w = malloc(v->ntenants * N * sizeof(*w) + 1);
    if (w == NULL) {
        return -ENOMEM;
    }
    for (t = 0; t < v->ntenants; t++) {
        for (n = 0; n < N; n++) {
            w[t * N + n] = v->tenants[t].weight;
        }
    }
    if (stats != NULL) {
        memset(stats, 0, sizeof(*stats));
        stats->moved = pol_wa_moved(v->w, w, v->ntenants * N);
        stats->projected = pol_wa_broken(v, wa->cfg.floor_frac);
    }
    memcpy(w_out, w, v->ntenants * N * sizeof(*w));
    free(w);
    return 0;
}

const struct pol_wa_ops pol_wa_even_ops = {
    .name = "even",
    .create = even_create,
    .destroy = pol_wa_free,
    .reset = pol_wa_forget,
    .step = even_step,
};
