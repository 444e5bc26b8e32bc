/*
 * pol_rs_impl.h - what every replica-selection policy shares (private to
 * policies/): the instance record and the registered ops tables.
 */
#ifndef POL_RS_IMPL_H
#define POL_RS_IMPL_H

#include "pol_rs.h"

struct pol_rs {
    const struct pol_rs_ops *ops;
    struct pol_rs_cfg cfg;
    void *priv; /* the policy's own state (windows, RTT estimates) */
};

/* The registered policies (one file each). */
extern const struct pol_rs_ops pol_rs_fast_ops;
extern const struct pol_rs_ops pol_rs_uniform_ops;

#endif
