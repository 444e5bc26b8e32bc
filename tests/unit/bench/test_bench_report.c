/* Unit tests: fairness figures and status naming (bench_report.c). */
#include <math.h>
#include <string.h>

#include "t_check.h"

#include "bench.h"

static void
test_fairness(void)
{
    struct bn_fair f;
    double thr[3] = {100, 200, 300}, w[3] = {1, 2, 3};
    bn_fairness(thr, w, 3, &f);
    CHECK(fabs(f.min_max - 1) < 1e-12 && fabs(f.jain - 1) < 1e-12);

    double thr2[2] = {100, 100}, w2[2] = {1, 2};
    bn_fairness(thr2, w2, 2, &f);
    CHECK(fabs(f.min_max - 0.5) < 1e-12);
    CHECK(fabs(f.jain - 0.9) < 1e-12);

    double thr3[4] = {0, 0, 0, 40}, w3[4] = {1, 1, 1, 1};
    bn_fairness(thr3, w3, 4, &f);
    CHECK(f.min_max == 0 && fabs(f.jain - 0.25) < 1e-12);

    bn_fairness(thr3, w3, 0, &f);
    CHECK(f.min_max == 0 && f.jain == 0);
}

static void
test_status(void)
{
    char b[16];
    CHECK(strcmp(bn_status_name(BN_ERR_CONN, b, sizeof(b)), "conn") == 0);
    CHECK(strcmp(bn_status_name(BN_ERR_TIMEOUT, b, sizeof(b)), "timeout") == 0);
    CHECK(strcmp(bn_status_name(429, b, sizeof(b)), "429") == 0);
    CHECK(bn_status_is_error(BN_ERR_CONN) && bn_status_is_error(404));
    CHECK(!bn_status_is_error(200) && !bn_status_is_error(201));
}

int
main(void)
{
    test_fairness();
    test_status();
    return 0;
}
