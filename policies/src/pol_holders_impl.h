/*
 * pol_holders_impl.h - what every holder-choice policy shares (private to
 * policies/): the instance record and the registered ops tables.
 */
#ifndef POL_HOLDERS_IMPL_H
#define POL_HOLDERS_IMPL_H

#include "pol_holders.h"

struct pol_holders {
    const struct pol_holders_ops *ops;
    void *priv; /* the policy's own state, if any */
};

/* The registered policies (one file each). */
extern const struct pol_holders_ops pol_holders_row_ops;

#endif
