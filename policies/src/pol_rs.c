/*
 * pol_rs.c - the registry of replica-selection policies (see pol_rs.h),
 * what every policy's create shares, and the hedge budget.
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

void
pol_rs_budget_init(struct pol_rs_budget *b, double ratio)
{
    b->tokens = POL_RS_BUDGET_BURST;
    b->ratio = ratio;
}

void
pol_rs_budget_sent(struct pol_rs_budget *b)
{
    b->tokens += b->ratio;
    if (b->tokens > POL_RS_BUDGET_BURST) {
        b->tokens = POL_RS_BUDGET_BURST;
    }
}

uint64_t
pol_rs_budget_take(struct pol_rs_budget *b, uint64_t due)
{
    uint64_t ok = 0;

    for (; due != 0 && b->tokens >= 1.0 - 1e-9; due &= due - 1) { /* 10 x 0.1 is a token */
        ok |= due & -due;
        b->tokens -= 1.0;
    }
    return ok;
}
