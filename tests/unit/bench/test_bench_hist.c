/* Unit tests: histogram percentiles against a sorted array (bench_hist.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "bench.h"

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t
exact(const uint64_t *v, size_t n, double p)
{
    double want = p / 100.0 * (double)n;
    size_t rank = (size_t)ceil(want);
    if (rank == 0) {
        rank = 1;
    }
    return v[rank - 1];
}

static void
test_vs_sorted(void)
{
    size_t n = 200000;
    uint64_t *v = malloc(n * sizeof(*v));
    struct bn_hist *h = malloc(sizeof(*h)), *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    struct bn_rng r;
    CHECK(v && h && a && b);
    if (!(v && h && a && b)) {
        return;
    }
    bn_rng_seed(&r, 5);
    bn_hist_reset(h);
    bn_hist_reset(a);
    bn_hist_reset(b);
    for (size_t i = 0; i < n; i++) {
        /* log-uniform over 1 us .. 10 s */
        double e = 3 + 7 * bn_rng_double(&r);
        v[i] = (uint64_t)pow(10, e);
        bn_hist_record(h, v[i]);
        bn_hist_record(i % 2 ? a : b, v[i]);
    }
    bn_hist_merge(a, b);
    CHECK(memcmp(a, h, sizeof(*h)) == 0);
    qsort(v, n, sizeof(*v), cmp_u64);
    static const double ps[] = {0, 1, 10, 50, 90, 99, 99.9, 99.99, 100};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        uint64_t want = exact(v, n, ps[i]);
        uint64_t got = bn_hist_percentile(h, ps[i]);
        double err = fabs((double)got - (double)want) / (double)want;
        if (err >= 0.01) {
            fprintf(stderr, "p%g: got %llu want %llu\n", ps[i], (unsigned long long)got,
                    (unsigned long long)want);
        }
        CHECK(err < 0.01);
    }
    CHECK(h->max == v[n - 1]);
    CHECK(h->count == n);
    free(v);
    free(h);
    free(a);
    free(b);
}

static void
test_edges(void)
{
    struct bn_hist *h = malloc(sizeof(*h));
    CHECK(h != NULL);
    if (h == NULL) {
        return;
    }
    bn_hist_reset(h);
    CHECK(bn_hist_percentile(h, 50) == 0);
    for (uint64_t i = 1; i <= 100; i++) {
        bn_hist_record(h, i);
    }
    CHECK(bn_hist_percentile(h, 50) == 50);
    CHECK(bn_hist_percentile(h, 99) == 99);
    CHECK(bn_hist_percentile(h, 100) == 100);
    bn_hist_record(h, UINT64_MAX);
    CHECK(bn_hist_index(UINT64_MAX) == BN_HIST_BUCKETS - 1);
    /* Every index round-trips through its midpoint. */
    for (unsigned i = 0; i < BN_HIST_BUCKETS - 1; i++) {
        CHECK(bn_hist_index(bn_hist_bucket_mid(i)) == i);
    }
    free(h);
}

int
main(void)
{
    test_vs_sorted();
    test_edges();
    return 0;
}
