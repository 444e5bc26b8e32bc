/*
 * rs_view.h - stripe reads as the read path shows them to an RS policy,
 * for the RS policy tests: holders 10..18 at positions 0..8 (k + m <= 9), the read
 * starting at 1 s; random ones from the t_check.h seed.
 */
#ifndef RS_VIEW_H
#define RS_VIEW_H

#include <stdint.h>

#include "pol_rs.h"
#include "t_check.h"

#define B(j) (1ull << (j))
#define MS 1000000ull

static const uint32_t holders[9] = {10, 11, 12, 13, 14, 15, 16, 17, 18};
static uint64_t asked[9];

/* A read of a k+m stripe with every holder usable and nothing asked yet. */
static inline struct pol_rs_view
view(uint8_t k, uint8_t m, uint64_t want)
{
    struct pol_rs_view v = {
        .tenant = 7,
        .k = k,
        .n = (uint8_t)(k + m),
        .holders = holders,
        .want = want,
        .usable = B(k + m) - 1,
        .start_ns = 1000 * MS,
        .asked_ns = asked,
    };
    return v;
}

/* A read of a random k+m stripe (k <= 6, m <= 3) in a random state:
 * some positions present, asked, slow, failed; random usable ones. */
static inline struct pol_rs_view
random_view(void)
{
    uint8_t k = (uint8_t)t_range(1, 6), m = (uint8_t)t_range(0, 3);
    uint64_t all = B(k + m) - 1;
    struct pol_rs_view v = view(k, m, (t_rand() & all) | B(0));
    uint64_t state[4];
    for (int i = 0; i < 4; i++) {
        state[i] = t_rand() & all;
    }
    v.present = state[0] & ~v.want;
    v.out = state[1] & ~v.present;
    v.slow = v.out & state[2];
    v.failed = state[3] & ~(v.present | v.out);
    v.usable = t_rand() & all;
    return v;
}

#endif
