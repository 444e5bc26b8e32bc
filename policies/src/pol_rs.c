/*
 * pol_rs.c - the registry of replica-selection policies (see pol_rs.h).
 */
#include "pol_registry.h"
#include "pol_rs_impl.h"

/* The one registry; the mechanism first, then its strawman. */
static const struct pol_rs_ops *const pol_rs_registry[] = {
    &pol_rs_fast_ops,
    &pol_rs_uniform_ops,
};

POL_REGISTRY_DEFINE(rs, pol_rs_registry)
