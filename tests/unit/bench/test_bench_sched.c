/* Unit tests: load schedules (bench_sched.c) and their use in tenant specs (bench_spec.c). */
#include <math.h>
#include <string.h>

#include "t_check.h"

#include "bench.h"

static int
sched(struct bn_sched *s, const char *v)
{
    char err[160];
    int rc = bn_sched_parse(s, v, strlen(v), err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "'%s': %s\n", v, err);
    }
    return rc;
}

/* The schedule's value at each tv[i][0] is tv[i][1]. */
#define EXPECT_AT(s, ...)                                                                          \
    do {                                                                                           \
        static const double tv_[][2] = {__VA_ARGS__};                                              \
        for (size_t i_ = 0; i_ < sizeof(tv_) / sizeof(tv_[0]); i_++) {                             \
            CHECK_NEAR(bn_sched_at((s), tv_[i_][0]), tv_[i_][1], 1e-6);                            \
        }                                                                                          \
    } while (0)

static void
test_duration(void)
{
    double d;
    CHECK(bn_parse_duration("20s", 3, &d) == 0 && d == 20);
    CHECK(bn_parse_duration("500ms", 5, &d) == 0 && d == 0.5);
    CHECK(bn_parse_duration("2m", 2, &d) == 0 && d == 120);
    CHECK(bn_parse_duration("1.5h", 4, &d) == 0 && d == 5400);
    CHECK(bn_parse_duration("7.25", 4, &d) == 0 && d == 7.25);
    CHECK(bn_parse_duration("0", 1, &d) == 0 && d == 0);
    CHECK(bn_parse_duration("", 0, &d) != 0);
    CHECK(bn_parse_duration("s", 1, &d) != 0);
    CHECK(bn_parse_duration("-1s", 3, &d) != 0);
    CHECK(bn_parse_duration("5d", 2, &d) != 0);
    CHECK(bn_parse_duration("1e9h", 4, &d) != 0);
}

static void
test_step_ramp(void)
{
    struct bn_sched s;
    CHECK(sched(&s, "step:0s=100/20s=400/40s=100") == 0);
    CHECK(s.kind == BN_SCHED_STEP && s.npts == 3);
    CHECK_EQ_STR(s.text, "step:0s=100/20s=400/40s=100");
    EXPECT_AT(&s, {-5, 100}, {0, 100}, {19.999, 100}, {20, 400}, {39.9, 400}, {40, 100},
              {1e6, 100});
    CHECK(bn_sched_max(&s) == 400);
    /* The second that holds the step averages both sides. */
    CHECK_NEAR(bn_sched_mean(&s, 19.5, 20.5), 250, 1e-9);
    CHECK_NEAR(bn_sched_mean(&s, 20, 21), 400, 1e-9);

    CHECK(sched(&s, "ramp:0=0/10s=1000/1m=500") == 0);
    CHECK(s.kind == BN_SCHED_RAMP);
    EXPECT_AT(&s, {0, 0}, {2.5, 250}, {10, 1000}, {35, 750}, {3600, 500});
    CHECK_NEAR(bn_sched_mean(&s, 0, 10), 500, 1e-9);
    CHECK(bn_sched_max(&s) == 1000);

    /* A step to 0 is a pause. */
    CHECK(sched(&s, "step:0s=0/1s=50") == 0);
    CHECK(bn_sched_at(&s, 0.5) == 0 && bn_sched_at(&s, 1) == 50);
}

static void
test_burst_sine(void)
{
    struct bn_sched s;
    CHECK(sched(&s, "burst:base=100/peak=1000/every=10s/for=2s") == 0);
    CHECK(s.kind == BN_SCHED_BURST && bn_sched_max(&s) == 1000);
    EXPECT_AT(&s, {0, 1000}, {1.99, 1000}, {2, 100}, {9.99, 100}, {10, 1000}, {71, 1000},
              {72, 100});
    CHECK_NEAR(bn_sched_mean(&s, 0, 10), 280, 1e-9);

    CHECK(sched(&s, "burst:at=5s/for=500ms/every=1m/peak=50/base=0") == 0);
    EXPECT_AT(&s, {4.9, 0}, {5, 50}, {5.5, 0}, {64.9, 0}, {65.2, 50});

    /* A "burst" below the base is a dip. */
    CHECK(sched(&s, "burst:base=500/peak=10/every=4/for=1") == 0);
    CHECK(bn_sched_max(&s) == 500 && bn_sched_at(&s, 0.5) == 10 && bn_sched_at(&s, 1.5) == 500);

    CHECK(sched(&s, "sine:min=100/max=1000/period=60s") == 0);
    CHECK(s.kind == BN_SCHED_SINE && bn_sched_max(&s) == 1000);
    EXPECT_AT(&s, {0, 100}, {15, 550}, {30, 1000}, {45, 550}, {60, 100}, {630, 1000});
    CHECK_NEAR(bn_sched_mean(&s, 0, 60), 550, 1e-6);

    CHECK(sched(&s, "sine:min=2/max=32/period=1h/phase=0.5") == 0);
    CHECK_NEAR(bn_sched_at(&s, 0), 32, 1e-9);
    CHECK_NEAR(bn_sched_at(&s, 1800), 2, 1e-9);
    CHECK(sched(&s, "sine:min=7/max=7/period=1") == 0);
    CHECK(bn_sched_at(&s, 0.3) == 7);
}

static void
test_bad(void)
{
    struct bn_sched s;
    char err[160];
    static const char *bad[] = {
        "step",
        "step:",
        "wave:min=1/max=2/period=3",
        "step:1s=100",               /* first point not at 0 */
        "step:0s=100/0s=200",        /* times must increase */
        "step:0s=100/20s=400/10s=1", /* ... strictly */
        "step:0s=0",                 /* all zero */
        "step:0s=-1",
        "step:0s=1e9",
        "step:0s=nan",
        "step:0s100",
        "step:0s=100,20s=400",
        "step:0s=100//20s=400",
        "step:0s=100/",
        "burst:base=1/peak=2/every=2s",        /* no for */
        "burst:base=1/peak=2/every=2s/for=2s", /* for must be < every */
        "burst:base=1/peak=2/every=2s/for=0",
        "burst:base=1/base=2/peak=2/every=2s/for=1s",
        "burst:base=0/peak=0/every=2s/for=1s",
        "burst:base=1/peak=2/every=2s/for=1s/min=3",
        "sine:min=10/max=5/period=1s",
        "sine:min=1/max=5/period=0",
        "sine:min=1/max=5",
        "sine:min=1/max=5/period=1/phase=1",
        "sine:min=1/max=5/period=1/phase=-0.1",
        "sine:min=0/max=0/period=1",
        "sine:min=1/max=5/period=1d",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = bn_sched_parse(&s, bad[i], strlen(bad[i]), err, sizeof(err));
        if (rc == 0) {
            fprintf(stderr, "accepted bad schedule '%s'\n", bad[i]);
        }
        CHECK(rc != 0 && strlen(err) > 0 && s.kind == BN_SCHED_NONE);
    }
    /* 64 points fit, 65 do not. */
    char buf[BN_SCHED_TEXT];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "step:0=1");
    for (int i = 1; i < BN_SCHED_POINTS; i++) {
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "/%d=1", i);
    }
    CHECK(sched(&s, buf) == 0 && s.npts == BN_SCHED_POINTS);
    snprintf(buf + n, sizeof(buf) - n, "/99=1");
    CHECK(bn_sched_parse(&s, buf, strlen(buf), err, sizeof(err)) != 0);
    CHECK(strstr(err, "points") != NULL);
}

static int
tenant(struct bn_tenant *t, const char *spec, char *err, size_t cap)
{
    bn_tenant_defaults(t);
    return bn_tenant_parse(t, spec, strlen(spec), err, cap);
}

static void
test_in_spec(void)
{
    struct bn_tenant t;
    char err[160];
    CHECK(tenant(&t, "name=a,key=k,rate=burst:base=100/peak=1000/every=10s/for=2s,read=0.9", err,
                 sizeof(err)) == 0);
    CHECK(t.loop == BN_LOOP_OPEN && t.rate == 1000 && t.sched.kind == BN_SCHED_BURST);
    CHECK(t.read == 0.9);
    CHECK_EQ_STR(t.sched.text, "burst:base=100/peak=1000/every=10s/for=2s");

    CHECK(tenant(&t, "name=a,key=k,conc=sine:min=1/max=31.6/period=2m", err, sizeof(err)) == 0);
    CHECK(t.loop == BN_LOOP_CLOSED && t.conc == 32 && t.sched.kind == BN_SCHED_SINE);

    /* A later plain rate= replaces nothing: conc and rate stay exclusive. */
    CHECK(tenant(&t, "name=a,key=k,conc=step:0=1/1=2,rate=5", err, sizeof(err)) != 0);
    CHECK(strstr(err, "exclusive") != NULL);
    CHECK(tenant(&t, "name=a,key=k,rate=step:0=1/1=2,rate=5", err, sizeof(err)) != 0);
    CHECK(tenant(&t, "name=a,key=k,conc=step:0=1/1=100001", err, sizeof(err)) != 0);
    CHECK(tenant(&t, "name=a,key=k,conc=sine:min=0/max=0.4/period=1", err, sizeof(err)) != 0);
    CHECK(tenant(&t, "name=a,key=k,rate=step:1=1", err, sizeof(err)) != 0);
    CHECK(strstr(err, "0s") != NULL);
    CHECK(tenant(&t, "name=a,key=k,rate=10", err, sizeof(err)) == 0);
    CHECK(t.sched.kind == BN_SCHED_NONE && t.rate == 10);
}

int
main(void)
{
    test_duration();
    test_step_ramp();
    test_burst_sine();
    test_bad();
    test_in_spec();
    return 0;
}
