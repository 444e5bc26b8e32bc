/*
 * pol_rs.c - the registry of replica-selection policies (see pol_rs.h),
 * and what every policy's create shares.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_registry.h"
#include "pol_rs_impl.h"

/* The one registry; the mechanism first, then its strawman. */
static const struct pol_rs_ops *const pol_rs_registry[] = {
    &pol_rs_fast_ops,
    &pol_rs_uniform_ops,
};

POL_REGISTRY_DEFINE(rs, pol_rs_registry)

int
pol_rs_base_create(const struct pol_rs_ops *ops, const struct pol_rs_cfg *cfg, size_t priv_size,
                   struct pol_rs **out)
{
    struct pol_rs *rs;

    *out = NULL;
    if (cfg == NULL) {
        return CM_E_BADARG;
    }
    /* The state follows the record, at the alignment of its uint64_t. */
    rs = calloc(1, sizeof(*rs) + priv_size);
    if (rs == NULL) {
        return -ENOMEM;
    }
    rs->ops = ops;
    rs->cfg = *cfg;
    rs->priv = priv_size > 0 ? (void *)(rs + 1) : NULL;
    *out = rs;
    return 0;
}

void
pol_rs_base_destroy(struct pol_rs *rs)
{
    free(rs);
}
