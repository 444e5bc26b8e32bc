/* test_fair.c - min-max ratio, Jain's index and weight shares. */
#include "t_check.h"

#include <math.h>

#include "ctl_fair.h"

static int
near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

int
main(void)
{
    struct ctl_fair_out o;
    double alloc[4];

    {
        /* Weighted and perfectly fair: 100 and 200 req/s at weights 1 and 2. */
        struct ctl_fair_in in[] = {{1, 150, 100}, {2, 300, 200}, {1, 0, 0}};

        ctl_fair_compute(in, 3, alloc, &o);
        CHECK(o.mmr_valid && near(o.mmr, 1.0));
        CHECK(o.jain_valid && near(o.jain, 1.0));
        CHECK_EQ_INT(o.active, 2);
        CHECK(near(alloc[0], 0.25) && near(alloc[1], 0.5) && near(alloc[2], 0.25));
    }
    {
        /* One tenant gets half its share: MMR 0.5, Jain (1.5)^2 / (2 * 1.25) = 0.9. */
        struct ctl_fair_in in[] = {{1, 100, 50}, {1, 100, 100}};

        ctl_fair_compute(in, 2, alloc, &o);
        CHECK(o.mmr_valid && near(o.mmr, 0.5));
        CHECK(o.jain_valid && near(o.jain, 0.9));
    }
    {
        /* A single active tenant: no MMR, Jain 1. */
        struct ctl_fair_in in[] = {{1, 10, 10}, {5, 0, 0}};

        ctl_fair_compute(in, 2, alloc, &o);
        CHECK(!o.mmr_valid);
        CHECK(o.jain_valid && near(o.jain, 1.0));
        CHECK_EQ_INT(o.active, 1);
    }
    {
        /* Demand but nothing served yet: no figures, no division by zero. */
        struct ctl_fair_in in[] = {{1, 3, 0}, {1, 4, 0}};

        ctl_fair_compute(in, 2, alloc, &o);
        CHECK(!o.mmr_valid && !o.jain_valid);
        CHECK_EQ_INT(o.active, 2);
    }
    ctl_fair_compute(NULL, 0, alloc, &o);
    CHECK(!o.mmr_valid && !o.jain_valid && o.active == 0);
    fprintf(stderr, "ok\n");
    return 0;
}
