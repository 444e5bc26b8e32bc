/*
 * test_pol_wa_cycle.c - the widest-cycle search of WA (pol_wa_cycle.c)
 * against brute force: every simple cycle of small random graphs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_wa_impl.h"
#include "t_check.h"

#define MAXV 7

struct brute {
    size_t n;
    const double *cap;
    double floor_cap, best;
    int on[MAXV];
};

/* Widest cycle through s whose other vertices are all > s (each cycle is
 * seen once, from its smallest vertex). */
static void
brute_from(struct brute *b, size_t s, size_t v, double width)
{
    size_t x;

    for (x = s; x < b->n; x++) {
        double e = b->cap[v * b->n + x];

        if (!(e > 0.0 && e >= b->floor_cap)) {
            continue;
        }
        if (x == s) {
            b->best = fmax(b->best, fmin(width, e));
        } else if (!b->on[x]) {
            b->on[x] = 1;
            brute_from(b, s, x, fmin(width, e));
            b->on[x] = 0;
        }
    }
}

static double
brute_widest(size_t n, const double *cap, double floor_cap)
{
    struct brute b = {n, cap, floor_cap, 0.0, {0}};
    size_t s;

    for (s = 0; s < n; s++) {
        b.on[s] = 1;
        brute_from(&b, s, s, INFINITY);
        b.on[s] = 0;
    }
    return b.best;
}

static void
test_random_graphs(int rounds)
{
    static const double levels[] = {0.5, 1.0, 1.0, 2.0, 3.0};
    int r, found = 0;

    for (r = 0; r < rounds; r++) {
        size_t n = (size_t)t_range(1, MAXV), i, len = 0;
        double cap[MAXV * MAXV], width, want, floor_cap = 0.0;
        size_t cyc[MAXV];
        int seen[MAXV] = {0}, density = t_range(10, 90);
        struct pol_wa_cyc cs;

        for (i = 0; i < n * n; i++) {
            cap[i] = 0.0;
            if (i % (n + 1) != 0 && t_range(0, 99) < density) {
                /* Ties on some graphs, distinct values on others. */
                cap[i] = r % 2 ? levels[t_rand() % 5] : (double)t_range(1, 1000000) / 1e3;
            }
        }
        if (r % 3 == 0) {
            floor_cap = r % 2 ? 1.0 : 300.0;
        }
        if (floor_cap == 0.0) {
            floor_cap = 1e-9;
        }
        CHECK_EQ_INT(pol_wa_cyc_init(&cs, n), 0);
        width = pol_wa_widest_cycle(&cs, cap, floor_cap, cyc, &len);
        want = brute_widest(n, cap, floor_cap);
        CHECK_NEAR(width, want, 0.0);
        if (want == 0.0) {
            CHECK_EQ_INT(len, 0);
        } else {
            double narrowest = INFINITY;

            found++;
            CHECK(len >= 2 && len <= n);
            for (i = 0; i < len; i++) {
                double e = cap[cyc[i] * n + cyc[(i + 1) % len]];

                CHECK(cyc[i] < n && !seen[cyc[i]]);
                seen[cyc[i]] = 1;
                CHECK(e >= floor_cap && e > 0.0);
                narrowest = fmin(narrowest, e);
            }
            CHECK_NEAR(narrowest, width, 0.0);
        }
        pol_wa_cyc_fini(&cs);
    }
    CHECK(found > rounds / 4 && found < rounds); /* both cases reached */
}

/* A chain has no cycle; closing it makes one as wide as its narrowest. */
static void
test_chain(void)
{
    double cap[5 * 5] = {0};
    size_t cyc[5], len = 7, i;
    struct pol_wa_cyc cs;

    CHECK_EQ_INT(pol_wa_cyc_init(&cs, 5), 0);
    for (i = 0; i + 1 < 5; i++) {
        cap[i * 5 + i + 1] = 10.0 - (double)i;
    }
    CHECK(pol_wa_widest_cycle(&cs, cap, 1e-9, cyc, &len) == 0.0);
    CHECK_EQ_INT(len, 0);
    cap[4 * 5 + 0] = 8.5; /* 4 -> 0 closes 0 -> 1 -> 2 -> 3 -> 4 */
    cap[2 * 5 + 1] = 1.0; /* a narrower 2-cycle 1 <-> 2 */
    CHECK_NEAR(pol_wa_widest_cycle(&cs, cap, 1e-9, cyc, &len), 7.0, 0.0);
    CHECK_EQ_INT(len, 5);
    CHECK(pol_wa_widest_cycle(&cs, cap, 7.5, cyc, &len) == 0.0);
    pol_wa_cyc_fini(&cs);
}

int
main(void)
{
    t_seed();
    test_chain();
    test_random_graphs(20000);
    printf("ok\n");
    return 0;
}
