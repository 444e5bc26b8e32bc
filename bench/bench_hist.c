/*
 * bench_hist.c - HdrHistogram-like log-linear latency histogram.
 *
 * Owned by one thread while recording; the main thread merges copies after
 * the recording threads are joined. Index layout: for v < 2^S the index is
 * v itself; otherwise with e = msb(v) - S, the index is
 * (e + 1) * 2^S + ((v >> e) - 2^S), i.e. 2^S linear sub-buckets per octave.
 */
#include <string.h>

#include "bench.h"

#define SUB (1u << BN_HIST_SUB_BITS)

void
bn_hist_reset(struct bn_hist *h)
{
    memset(h, 0, sizeof(*h));
}

unsigned
bn_hist_index(uint64_t ns)
{
    if (ns < SUB) {
        return (unsigned)ns;
    }
    if (ns >> BN_HIST_MAX_BITS) {
        return BN_HIST_BUCKETS - 1;
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned e = msb - BN_HIST_SUB_BITS;
    return (e + 1) * SUB + (unsigned)((ns >> e) - SUB);
}

static uint64_t
bucket_low(unsigned idx, uint64_t *width)
{
    if (idx < SUB) {
        *width = 1;
        return idx;
    }
    unsigned e = idx / SUB - 1;
    uint64_t sub = idx % SUB + SUB;
    *width = 1ull << e;
    return sub << e;
}

uint64_t
bn_hist_bucket_mid(unsigned idx)
{
    uint64_t w;
    uint64_t lo = bucket_low(idx, &w);
    return lo + w / 2;
}

void
bn_hist_record(struct bn_hist *h, uint64_t ns)
{
    h->b[bn_hist_index(ns)]++;
    h->count++;
    h->sum += ns;
    if (ns > h->max) {
        h->max = ns;
    }
}

void
bn_hist_merge(struct bn_hist *dst, const struct bn_hist *src)
{
    if (src->count == 0) {
        return;
    }
    for (unsigned i = 0; i < BN_HIST_BUCKETS; i++) {
        dst->b[i] += src->b[i];
    }
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max) {
        dst->max = src->max;
    }
}

uint64_t
bn_hist_percentile(const struct bn_hist *h, double p)
{
    if (h->count == 0) {
        return 0;
    }
    if (p < 0) {
        p = 0;
    }
    if (p > 100) {
        p = 100;
    }
    /* Nearest rank: the smallest value with at least ceil(p/100 * n) below or at it. */
    double want = p / 100.0 * (double)h->count;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want) {
        rank++;
    }
    if (rank == 0) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (unsigned i = 0; i < BN_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t mid = bn_hist_bucket_mid(i);
            return mid > h->max ? h->max : mid;
        }
    }
    return h->max;
}
