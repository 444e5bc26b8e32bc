/* test_fns_arena.c - chunk memory slabs: packing, reuse, the warm pool,
 * fallbacks, frees from other threads and the registry of arenas. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_err.h"
#include "fns_arena.h"

#define MIB ((size_t)1 << 20)
#define CHUNK (MIB + 8) /* a default chunk with its COS trailer */

static struct fns_arena *
mk(size_t slab, size_t resv, uint32_t keep)
{
    struct fns_arena_cfg cfg = {
        .slab_bytes = slab, .reserve_bytes = resv, .keep_slabs = keep, .min_alloc = 64 << 10};
    struct fns_arena *a = NULL;

    CHECK(fns_arena_create(&cfg, &a) == 0);
    return a;
}

static void
stats(struct fns_arena *a, struct fns_arena_stats *st)
{
    memset(st, 0xff, sizeof(*st));
    fns_arena_stats(a, st);
}

static void
test_bad_cfg(void)
{
    struct fns_arena_cfg cfg = {.slab_bytes = 3 * MIB, .reserve_bytes = 64 * MIB};
    struct fns_arena *a = (struct fns_arena *)&cfg;

    CHECK(fns_arena_create(&cfg, &a) == CM_E_BADARG && a == NULL);
    cfg.slab_bytes = 0;
    CHECK(fns_arena_create(&cfg, &a) == CM_E_BADARG);
    cfg.slab_bytes = 8 * MIB;
    cfg.reserve_bytes = 4 * MIB; /* less than a slab */
    CHECK(fns_arena_create(&cfg, &a) == CM_E_BADARG);
    cfg.reserve_bytes = 64 * MIB;
    cfg.min_alloc = 9 * MIB; /* nothing could ever come from the arena */
    CHECK(fns_arena_create(&cfg, &a) == CM_E_BADARG);
    fns_arena_destroy(NULL);
    fns_arena_free(NULL);
}

/* Chunks are packed back to back, page aligned, in 2 MiB-aligned slabs:
 * an 8 MiB slab holds seven 1 MiB + 8 chunks, the eighth opens a new one. */
static void
test_packing(void)
{
    struct fns_arena *a = mk(8 * MIB, 64 * MIB, 0);
    struct fns_arena_stats st;
    uint8_t *p[8];

    for (int i = 0; i < 8; i++) {
        p[i] = fns_arena_alloc(a, CHUNK);
        CHECK(p[i] != NULL && fns_arena_owns(p[i]));
        CHECK(((uintptr_t)p[i] & (FNS_ARENA_ALIGN - 1)) == 0);
        memset(p[i], i, CHUNK);
    }
    CHECK(((uintptr_t)p[0] & (FNS_ARENA_SLAB_UNIT - 1)) == 0);
    for (int i = 1; i < 7; i++) {
        CHECK(p[i] == p[i - 1] + CHUNK + (FNS_ARENA_ALIGN - 8));
    }
    CHECK(p[7] == p[0] + 8 * MIB);
    for (int i = 0; i < 8; i++) {
        CHECK(p[i][0] == i && p[i][CHUNK - 1] == i); /* no overlap */
    }
    stats(a, &st);
    CHECK(st.live_buffers == 8 && st.slabs_in_use == 2 && st.held_bytes == 16 * MIB);
    for (int i = 0; i < 8; i++) {
        fns_arena_free(p[i]);
    }
    stats(a, &st);
    /* keep 0: the full slab's memory is returned; the current one stays. */
    CHECK(st.live_buffers == 0 && st.slabs_in_use == 1 && st.slabs_warm == 0);
    CHECK(st.held_bytes == 8 * MIB);
    fns_arena_destroy(a);
}

/* Small and oversized requests go to malloc; fns_arena_free frees them. */
static void
test_fallback_sizes(void)
{
    struct fns_arena *a = mk(4 * MIB, 16 * MIB, 1);
    struct fns_arena_stats st;
    void *small = fns_arena_alloc(a, 100);
    void *big = fns_arena_alloc(a, 5 * MIB);
    void *none = fns_arena_alloc(NULL, CHUNK);

    CHECK(small != NULL && !fns_arena_owns(small));
    CHECK(big != NULL && !fns_arena_owns(big));
    CHECK(none != NULL && !fns_arena_owns(none));
    memset(big, 1, 5 * MIB);
    stats(a, &st);
    CHECK(st.live_buffers == 0 && st.slabs_in_use == 0 && st.fallbacks_total == 0);
    fns_arena_free(small);
    fns_arena_free(big);
    fns_arena_free(none);
    fns_arena_destroy(a);
}

/* A slab whose last chunk is freed is reused: warm first, up to keep;
 * the rest are returned and their addresses reused too. The reservation
 * never grows past what is live. */
static void
test_reuse(void)
{
    struct fns_arena *a = mk(4 * MIB, 16 * MIB, 1); /* 4 slabs of 3 chunks */
    struct fns_arena_stats st;
    uint8_t *p[12], *q[12];

    for (int i = 0; i < 12; i++) {
        p[i] = fns_arena_alloc(a, CHUNK);
        CHECK(fns_arena_owns(p[i]));
    }
    stats(a, &st);
    CHECK(st.slabs_in_use == 4 && st.fallbacks_total == 0);
    /* Reservation full: the next chunk is malloc'd, counted. */
    q[0] = fns_arena_alloc(a, CHUNK);
    CHECK(q[0] != NULL && !fns_arena_owns(q[0]));
    stats(a, &st);
    CHECK(st.fallbacks_total == 1);
    fns_arena_free(q[0]);
    /* Free slabs 0 and 1 entirely, one chunk of slab 2. */
    for (int i = 0; i < 7; i++) {
        fns_arena_free(p[i]);
    }
    stats(a, &st);
    CHECK(st.live_buffers == 5 && st.slabs_in_use == 2 && st.slabs_warm == 1);
    CHECK(st.held_bytes == 12 * MIB);
    /* Six new chunks fit in the two emptied slabs: no fallback. */
    for (int i = 0; i < 6; i++) {
        q[i] = fns_arena_alloc(a, CHUNK);
        CHECK(fns_arena_owns(q[i]));
        CHECK(q[i] >= p[0] && q[i] < p[0] + 8 * MIB);
    }
    stats(a, &st);
    CHECK(st.slabs_reused_total == 2 && st.fallbacks_total == 1 && st.slabs_in_use == 4);
    CHECK(st.slabs_warm == 0 && st.live_buffers == 11);
    for (int i = 7; i < 12; i++) {
        fns_arena_free(p[i]);
    }
    for (int i = 0; i < 6; i++) {
        fns_arena_free(q[i]);
    }
    stats(a, &st);
    CHECK(st.live_buffers == 0 && st.slabs_warm == 1 && st.slabs_in_use == 1);
    CHECK(st.held_bytes == 8 * MIB);
    fns_arena_destroy(a);
}

/* Freeing every chunk of the current slab rewinds it in place. */
static void
test_rewind_current(void)
{
    struct fns_arena *a = mk(4 * MIB, 8 * MIB, 0);
    struct fns_arena_stats st;
    void *p = fns_arena_alloc(a, CHUNK);
    void *q;

    fns_arena_free(p);
    q = fns_arena_alloc(a, CHUNK);
    CHECK(q == p);
    fns_arena_free(q);
    stats(a, &st);
    CHECK(st.slabs_in_use == 1 && st.slabs_reused_total == 0 && st.live_buffers == 0);
    fns_arena_destroy(a);
}

struct freer {
    uint8_t **p;
    int n;
};

static void *
freer_main(void *arg)
{
    struct freer *f = arg;

    for (int i = 0; i < f->n; i++) {
        fns_arena_free(f->p[i]);
    }
    return NULL;
}

/* Frees from several threads while this one allocates (COS workers drop
 * the last references while the loop thread takes new PUTs). */
static void
test_threads(void)
{
    enum { T = 4, N = 200 };
    struct fns_arena *a = mk(8 * MIB, 256 * MIB, 2);
    static uint8_t *bufs[T][N];
    struct freer f[T];
    pthread_t th[T];
    struct fns_arena_stats st;

    for (int t = 0; t < T; t++) {
        for (int i = 0; i < N; i++) {
            bufs[t][i] = fns_arena_alloc(a, 64 << 10);
            CHECK(bufs[t][i] != NULL);
            bufs[t][i][0] = (uint8_t)t;
        }
        f[t].p = bufs[t];
        f[t].n = N;
    }
    for (int t = 0; t < T; t++) {
        CHECK(pthread_create(&th[t], NULL, freer_main, &f[t]) == 0);
    }
    for (int i = 0; i < 500; i++) {
        fns_arena_free(fns_arena_alloc(a, 200 << 10));
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
    }
    stats(a, &st);
    CHECK(st.live_buffers == 0 && st.slabs_in_use <= 1 && st.slabs_warm <= 2);
    fns_arena_destroy(a);
}

/* Two arenas at once; destroy with a live buffer defers the release to its
 * last free (a COS job may outlive the node's shutdown). */
static void
test_two_and_deferred_destroy(void)
{
    struct fns_arena *a = mk(2 * MIB, 4 * MIB, 0);
    struct fns_arena *b = mk(2 * MIB, 4 * MIB, 0);
    uint8_t *pa = fns_arena_alloc(a, 1 * MIB);
    uint8_t *pb = fns_arena_alloc(b, 1 * MIB);
    void *m = malloc(16);

    CHECK(fns_arena_owns(pa) && fns_arena_owns(pb) && !fns_arena_owns(m));
    fns_arena_destroy(a);
    CHECK(fns_arena_owns(pa)); /* still mapped: pa is live */
    memset(pa, 7, MIB);
    fns_arena_free(pa);
    CHECK(!fns_arena_owns(pa));
    fns_arena_free(pb);
    fns_arena_free(m);
    fns_arena_destroy(b);
}

int
main(void)
{
    test_bad_cfg();
    test_packing();
    test_fallback_sizes();
    test_reuse();
    test_rewind_current();
    test_threads();
    test_two_and_deferred_destroy();
    return 0;
}
