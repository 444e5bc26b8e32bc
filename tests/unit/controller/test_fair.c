/*
 * test_fair.c - water-filling fair shares, which tenants count, the min-max
 * ratio and Jain's index: hand-computed cases, then random instances
 * checked against the max-min definition.
 */
#include "t_check.h"

#include <math.h>

#include "ctl_fair.h"

#define EPS 1e-9

static struct ctl_fair_out o;
static double alloc[64];
static int counted[64];

static void
fair(const struct ctl_fair_in *in, size_t n, double capacity)
{
    ctl_fair_compute(in, n, capacity, alloc, counted, &o);
}

static void
test_hand(void)
{
    {
        /* C = 10, weights 1,1,2, demands 1,6,8. Tenant 0 (1 per weight) fits
         * under 10/4 and gets its 1; 9 left over weight 3 gives level 3:
         * tenant 1 gets 3 of its 6, tenant 2 6 of its 8. Tenant 0 asks for
         * less than 3: it does not count. */
        struct ctl_fair_in in[] = {{1, 1, 1}, {1, 6, 3}, {2, 8, 6}};

        fair(in, 3, 10);
        CHECK_NEAR(o.level, 3.0, EPS);
        CHECK_NEAR(alloc[0], 1.0, EPS);
        CHECK_NEAR(alloc[1], 3.0, EPS);
        CHECK_NEAR(alloc[2], 6.0, EPS);
        CHECK(!counted[0] && counted[1] && counted[2]);
        CHECK_EQ_INT(o.counted, 2);
        CHECK(o.mmr_valid && fabs(o.mmr - 1.0) < EPS);
        CHECK(o.jain_valid && fabs(o.jain - 1.0) < EPS);
    }
    {
        /* Same demands; tenant 1 served 2 (x = 2), tenant 2 served 6 (x = 3):
         * MMR 2/3, Jain (2 + 3)^2 / (2 * (4 + 9)) = 25/26. Tenant 0's low x
         * (1) is not held against the system. */
        struct ctl_fair_in in[] = {{1, 1, 1}, {1, 6, 2}, {2, 8, 6}};

        fair(in, 3, 10);
        CHECK(o.mmr_valid && fabs(o.mmr - 2.0 / 3.0) < EPS);
        CHECK(o.jain_valid && fabs(o.jain - 25.0 / 26.0) < EPS);
    }
    {
        /* Weights 100, 10, 1, all asking for the whole capacity 1: level
         * 1/111, shares 100/111, 10/111, 1/111; served exactly so: MMR 1. */
        struct ctl_fair_in in[] = {{100, 1, 100.0 / 111}, {10, 1, 10.0 / 111}, {1, 1, 1.0 / 111}};

        fair(in, 3, 1);
        CHECK_NEAR(o.level, 1.0 / 111, EPS);
        CHECK_NEAR(alloc[0], 100.0 / 111, EPS);
        CHECK_NEAR(alloc[1], 10.0 / 111, EPS);
        CHECK_NEAR(alloc[2], 1.0 / 111, EPS);
        CHECK_EQ_INT(o.counted, 3);
        CHECK(o.mmr_valid && fabs(o.mmr - 1.0) < EPS);
    }
    {
        /* Demands fit (2 + 3 <= 10): each gets its demand, the level is the
         * largest demand / weight (3); tenant 0 (2 < 0.9 * 3) does not count,
         * so there is no ratio; Jain over the one tenant is 1. */
        struct ctl_fair_in in[] = {{1, 2, 2}, {1, 3, 3}};

        fair(in, 2, 10);
        CHECK_NEAR(o.level, 3.0, EPS);
        CHECK_NEAR(alloc[0], 2.0, EPS);
        CHECK_NEAR(alloc[1], 3.0, EPS);
        CHECK(!counted[0] && counted[1]);
        CHECK(!o.mmr_valid);
        CHECK(o.jain_valid && fabs(o.jain - 1.0) < EPS);
    }
    {
        /* Within the slack: 2.9 >= 0.9 * 3 counts. MMR 2.9 / 3. */
        struct ctl_fair_in in[] = {{1, 2.9, 2.9}, {1, 3, 3}};

        fair(in, 2, 10);
        CHECK(counted[0] && counted[1]);
        CHECK(o.mmr_valid && fabs(o.mmr - 2.9 / 3) < EPS);
        in[0].demand = in[0].served = 2.6; /* 2.6 < 0.9 * 3: out */
        fair(in, 2, 10);
        CHECK(!counted[0] && counted[1] && !o.mmr_valid);
    }
    {
        /* No demand, or no weight: nothing, never counted. */
        struct ctl_fair_in in[] = {{5, 0, 0}, {0, 4, 1}, {1, 4, 2}};

        fair(in, 3, 3);
        CHECK_NEAR(alloc[0], 0.0, EPS);
        CHECK_NEAR(alloc[1], 0.0, EPS);
        CHECK_NEAR(alloc[2], 3.0, EPS);
        CHECK(!counted[0] && !counted[1] && counted[2]);
        CHECK(!o.mmr_valid && o.jain_valid);
    }
    {
        /* No capacity known yet: level 0, everyone with demand counts, and
         * nothing served gives no figures (no division by zero). */
        struct ctl_fair_in in[] = {{1, 3, 0}, {1, 4, 0}};

        fair(in, 2, 0);
        CHECK_NEAR(o.level, 0.0, EPS);
        CHECK_NEAR(alloc[0], 0.0, EPS);
        CHECK_EQ_INT(o.counted, 2);
        CHECK(!o.mmr_valid && !o.jain_valid);
    }
    fair(NULL, 0, 5);
    CHECK(!o.mmr_valid && !o.jain_valid && o.counted == 0 && o.level == 0.0);
}

/* Random instances against the definition: shares never exceed demands,
 * add up to min(capacity, total demand), and a tenant short of its demand
 * has the largest share per weight of all (nobody is held below another
 * that got more per weight while it still wanted more). */
static void
test_random(void)
{
    struct ctl_fair_in in[64];

    t_seed();
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = (size_t)t_range(1, 64);
        double cap = (double)t_range(0, 1000) / 10.0, dsum = 0.0, asum = 0.0, top = 0.0;

        for (size_t i = 0; i < n; i++) {
            in[i].weight = (double)t_range(1, 100) / 10.0;
            in[i].demand = t_range(0, 3) == 0 ? 0.0 : (double)t_range(1, 1000) / 100.0;
            in[i].served = in[i].demand;
            dsum += in[i].demand;
        }
        fair(in, n, cap);
        for (size_t i = 0; i < n; i++) {
            CHECK(alloc[i] <= in[i].demand + EPS);
            asum += alloc[i];
            if (alloc[i] / in[i].weight > top) {
                top = alloc[i] / in[i].weight;
            }
        }
        CHECK_NEAR(asum, dsum < cap ? dsum : cap, 1e-6);
        for (size_t i = 0; i < n; i++) {
            if (alloc[i] < in[i].demand - 1e-6) {
                CHECK_NEAR(alloc[i] / in[i].weight, top, 1e-6);
                CHECK(counted[i]);
            }
        }
    }
}

int
main(void)
{
    test_hand();
    test_random();
    fprintf(stderr, "ok\n");
    return 0;
}
