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

size_t
ctl_place_replace(uint32_t tenant, uint32_t partition, uint32_t *row, size_t len,
                  const uint32_t *keep, const uint8_t *up, size_t nkeep)
{
    size_t replaced = 0;

    for (size_t j = 0; j < len; j++) {
        int kept = 0;
        long best = -1;
        uint64_t best_score = 0;

        for (size_t i = 0; i < nkeep && !kept; i++) {
            kept = keep[i] == row[j];
        }
        for (size_t i = 0; i < nkeep && !kept; i++) {
            uint64_t sc = ctl_place_score(tenant, partition, keep[i]);
            int held = 0;

            for (size_t q = 0; q < len && !held; q++) {
                held = row[q] == keep[i];
            }
            if (held) {
                continue;
            }
            /* Up first; then the higher score, then the lower id. */
            if (best < 0 || up[i] > up[best] ||
                (up[i] == up[best] &&
                 (sc > best_score || (sc == best_score && keep[i] < keep[best])))) {
                best = (long)i;
                best_score = sc;
            }
        }
        if (!kept && best >= 0) {
            row[j] = keep[best];
            replaced++;
        }
    }
    return replaced;
}
