/*
 * ctl_place.c - the "hash" PP policy's rows with the controller's hash
 * (see ctl_place.h).
 */
#include "ctl_place.h"

#include "cm_hash.h"

uint64_t
ctl_place_score(uint32_t tenant, uint32_t partition, uint32_t node)
{
    return pol_pp_hash_score(cm_hash64, 0, tenant, partition, node);
}

size_t
ctl_place_row(uint32_t tenant, uint32_t partition, const uint32_t *nodes, size_t nnodes,
              size_t width, uint32_t *out)
{
    return pol_pp_hash_row(cm_hash64, 0, tenant, partition, nodes, nnodes, width, out);
}
