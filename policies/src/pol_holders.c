/*
 * pol_holders.c - the registry of holder-choice policies (see pol_holders.h).
 */
#include "pol_holders_impl.h"
#include "pol_registry.h"

/* The one registry. */
static const struct pol_holders_ops *const pol_holders_registry[] = {
    &pol_holders_row_ops,
};

POL_REGISTRY_DEFINE(holders, pol_holders_registry)
