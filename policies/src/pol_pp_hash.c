/*
 * pol_pp_hash.c - the "hash" strawman: every partition on the top-width
 * rendezvous nodes of (tenant, partition) over every node of the view, up
 * or down; blind to load. Stats still measure the fair-share load it puts
 * on the up nodes, so it compares with the others.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_pp_impl.h"

static int
hash_create(const struct pol_pp_cfg *cfg, struct pol_pp **out)
{
    return pol_pp_base_create(&pol_pp_hash_ops, cfg, out);
}

static int
hash_place(struct pol_pp *pp, const struct pol_pp_view *v, uint32_t budget_ms,
           struct pol_pp_out *out)
{
    struct pp_work w;
    uint32_t *ids, row[POL_PP_MAX_WIDTH];
    int rc;

    (void)pp;
    (void)budget_ms;
    if (v == NULL || v->hash64 == NULL) {
        return CM_E_BADARG;
    }
    rc = pp_work_init(&w, v, 1);
    if (rc != 0) {
        return rc;
    }
    ids = malloc((v->nnodes + 1) * sizeof(*ids));
    if (ids == NULL) {
        pp_work_fini(&w);
        return -ENOMEM;
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        ids[n] = v->nodes[n].id;
    }
    for (size_t p = 0; p < v->nparts; p++) {
        size_t k = pol_pp_hash_row(v->hash64, v->hash_seed, v->parts[p].tenant, v->parts[p].id, ids,
                                   v->nnodes, v->parts[p].width, row);

        for (uint32_t j = 0; j < k; j++) {
            /* O(nodes), as scoring the row already is. */
            int32_t n = 0;

            while (ids[n] != row[j]) {
                n++;
            }
            pp_hold(&w, p, j, n, pp_share(&w, p, j));
        }
    }
    pp_finish(&w, out, "hash");
    free(ids);
    pp_work_fini(&w);
    return 0;
}

const struct pol_pp_ops pol_pp_hash_ops = {
    .name = "hash",
    .create = hash_create,
    .destroy = pol_pp_base_destroy,
    .place = hash_place,
};
