/*
 * t_check.h - the whole "framework" of the C unit tests, for every
 * component: check macros that print file:line and exit 1, a seeded PRNG
 * (the seed is printed so a failure can be replayed with T_SEED=<n>), and
 * temp dirs. A test that must clean up on failure registers it with atexit().
 */
#ifndef T_CHECK_H
#define T_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, a_, b_);                                                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n", __FILE__,        \
                    __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);                             \
        if (!(a_ - b_ <= t_ && b_ - a_ <= t_)) {                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s ~ %s (%g vs %g, tolerance %g)\n", __FILE__,   \
                    __LINE__, #a, #b, a_, b_, t_);                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t t_rng_state;

static inline void
t_seed(void)
{
    const char *s = getenv("T_SEED");

    t_rng_state = s != NULL ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    fprintf(stderr, "seed: T_SEED=%llu\n", (unsigned long long)t_rng_state);
}

/* splitmix64 */
static inline uint64_t
t_rand(void)
{
    uint64_t z = (t_rng_state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static inline int
t_range(int lo, int hi)
{
    return lo + (int)(t_rand() % (uint64_t)(hi - lo + 1));
}

static inline void
t_fill(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (unsigned char)t_rand();
    }
}

static inline char *
t_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *path;

    if (base == NULL || base[0] == '\0') {
        base = "/tmp";
    }
    if (asprintf(&path, "%s/shoal-test-XXXXXX", base) < 0) {
        exit(1);
    }
    CHECK(mkdtemp(path) != NULL);
    return path;
}

static inline int
t_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static inline void
t_rmtree(char *path)
{
    nftw(path, t_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}

#endif
