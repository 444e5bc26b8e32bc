/*
 * pol_rs_impl.h - what every replica-selection policy shares (private to
 * policies/): the instance record and the registered ops tables.
 */
#ifndef POL_RS_IMPL_H
#define POL_RS_IMPL_H

#include <stddef.h>

#include "pol_rs.h"

struct pol_rs {
    const struct pol_rs_ops *ops;
    struct pol_rs_cfg cfg;
    void *priv; /* the policy's own state (windows, RTT estimates) */
};

/* One calloc'd block: the instance of ops with cfg, and priv_size zeroed
 * bytes for the policy's own state at ->priv (NULL when 0). *out is
 * caller-owned (pol_rs_base_destroy). 0, CM_E_BADARG (no cfg) or -ENOMEM. */
int pol_rs_base_create(const struct pol_rs_ops *ops, const struct pol_rs_cfg *cfg, size_t priv_size,
                       struct pol_rs **out);
void pol_rs_base_destroy(struct pol_rs *rs); /* NULL is a no-op */

/* The registered policies (one file each). */
extern const struct pol_rs_ops pol_rs_fast_ops;
extern const struct pol_rs_ops pol_rs_uniform_ops;

#endif
