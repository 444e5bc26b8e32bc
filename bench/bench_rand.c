/*
 * bench_rand.c - xoshiro256** random numbers, exponential gaps, and YCSB's
 * scrambled Zipfian key chooser. An rng belongs to one thread; a zipf is
 * read-only after bn_zipf_init and shared.
 */
#include <errno.h>
#include <math.h>

#include "bench.h"

static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void
bn_rng_seed(struct bn_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        r->s[i] = splitmix64(&seed);
    }
}

static inline uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t
bn_rng_next(struct bn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double
bn_rng_double(struct bn_rng *r)
{
    return (double)(bn_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t
bn_rng_exp_ns(struct bn_rng *r, double rate_per_s)
{
    double u = bn_rng_double(r);
    double gap = -log1p(-u) / rate_per_s * 1e9;
    return gap < 1.0 ? 1 : (uint64_t)gap;
}

/* FNV-1a over the 8 bytes of v, as YCSB's Utils.fnvhash64. */
uint64_t
bn_fnv64(uint64_t v)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++) {
        h ^= v & 0xff;
        h *= 0x100000001b3ull;
        v >>= 8;
    }
    return h;
}

int
bn_zipf_init(struct bn_zipf *z, uint64_t n, double theta)
{
    if (n == 0 || !(theta >= 0.0 && theta < 1.0)) {
        return -EINVAL;
    }
    z->n = n;
    z->theta = theta;
    z->zetan = 0;
    z->zeta2 = 0;
    z->alpha = 0;
    z->eta = 0;
    if (theta == 0.0) {
        return 0;
    }
    double zetan = 0;
    /* Summed smallest-first so rounding does not swamp the long tail. */
    for (uint64_t i = n; i >= 1; i--) {
        zetan += 1.0 / pow((double)i, theta);
    }
    z->zetan = zetan;
    z->zeta2 = 1.0 + 1.0 / pow(2.0, theta);
    z->alpha = 1.0 / (1.0 - theta);
    z->eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - z->zeta2 / zetan);
    return 0;
}

uint64_t
bn_zipf_rank(const struct bn_zipf *z, struct bn_rng *r)
{
    if (z->theta == 0.0 || z->n == 1) {
        return z->n == 1 ? 0 : bn_rng_next(r) % z->n;
    }
    double u = bn_rng_double(r);
    double uz = u * z->zetan;
    if (uz < 1.0) {
        return 0;
    }
    if (uz < 1.0 + pow(0.5, z->theta)) {
        return 1;
    }
    uint64_t k = (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
    return k >= z->n ? z->n - 1 : k;
}

uint64_t
bn_zipf_key(const struct bn_zipf *z, struct bn_rng *r)
{
    uint64_t rank = bn_zipf_rank(z, r);
    if (z->theta == 0.0) {
        return rank;
    }
    return bn_fnv64(rank) % z->n;
}
