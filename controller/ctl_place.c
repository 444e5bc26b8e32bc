/*
 * ctl_place.c - rendezvous hashing (see ctl_place.h). Top-width selection
 * by insertion: rows are short (k + m) and node lists small.
 */
#include "ctl_place.h"

#include "cm_hash.h"
#include "cm_bytes.h"

uint64_t
ctl_place_score(uint32_t tenant, uint32_t partition, uint32_t node)
{
    uint8_t b[12];

    cm_put_le32(b, tenant);
    cm_put_le32(b + 4, partition);
    cm_put_le32(b + 8, node);
    return cm_hash64(b, sizeof(b), 0);
}

/* 1 if (sa, a) ranks before (sb, b). */
static int
ranks_before(uint64_t sa, uint32_t a, uint64_t sb, uint32_t b)
{
    return sa > sb || (sa == sb && a < b);
}

size_t
ctl_place_row(uint32_t tenant, uint32_t partition, const uint32_t *nodes, size_t nnodes,
              size_t width, uint32_t *out)
{
    uint64_t sc[CTL_PLACE_MAX_WIDTH];
    size_t n = 0;

    if (width > CTL_PLACE_MAX_WIDTH) {
        width = CTL_PLACE_MAX_WIDTH;
    }
    for (size_t i = 0; i < nnodes; i++) {
        uint64_t s = ctl_place_score(tenant, partition, nodes[i]);
        size_t j;

        if (n == width && (n == 0 || !ranks_before(s, nodes[i], sc[n - 1], out[n - 1]))) {
            continue;
        }
        j = n < width ? n++ : n - 1;
        while (j > 0 && ranks_before(s, nodes[i], sc[j - 1], out[j - 1])) {
            sc[j] = sc[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        sc[j] = s;
        out[j] = nodes[i];
    }
    return n;
}
