/*
 * fns_arena.c - log-structured chunk memory; see fns_arena.h.
 *
 * Slab states: FREE (never used, or cold: memory returned, on the cold
 * list), CUR (the one being bumped into), FULL (retired with live buffers),
 * WARM (empty, faulted in, on the warm list). Invariants, under a->mu:
 * nused == count of CUR and FULL; nwarm == count of WARM <= keep_slabs;
 * live == sum of slab.live; a CUR slab with live == 0 has off == 0.
 *
 * The process-wide registry (rwlock) maps an address to its arena, so
 * fns_arena_free needs no arena argument. Lock order: registry, then an
 * arena's mu; nothing takes the registry while holding an arena's mu.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "fns_arena.h"

#define SLAB_NONE UINT32_MAX

enum fns_slab_state { SLAB_FREE, SLAB_CUR, SLAB_FULL, SLAB_WARM };

struct fns_slab {
    uint32_t live;  /* buffers alive in this slab */
    uint32_t next;  /* warm or cold list link */
    uint32_t state; /* enum fns_slab_state */
    size_t off;     /* bump offset (CUR) */
};

struct fns_arena {
    uint8_t *base; /* immutable after create */
    size_t resv, slab_bytes, min_alloc;
    uint32_t nslabs, keep_slabs;
    pthread_mutex_t mu;
    /* Under mu: */
    struct fns_slab *slabs;
    uint32_t cur, warm, cold, high; /* high: slabs ever used */
    uint32_t nused, nwarm;
    uint64_t live, reused, fallbacks;
    int dying;
};

static pthread_rwlock_t fns_arena_reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct fns_arena *fns_arena_reg[FNS_ARENA_MAX]; /* under fns_arena_reg_lock */

static int
fns_arena_cfg_ok(const struct fns_arena_cfg *cfg)
{
    return cfg->slab_bytes >= FNS_ARENA_SLAB_UNIT && cfg->slab_bytes % FNS_ARENA_SLAB_UNIT == 0 &&
           cfg->reserve_bytes >= cfg->slab_bytes && cfg->reserve_bytes <= ((size_t)1 << 46) &&
           cfg->min_alloc <= cfg->slab_bytes;
}

/* A reservation of len bytes aligned to FNS_ARENA_SLAB_UNIT, or NULL. */
static uint8_t *
fns_arena_map(size_t len)
{
    size_t over = len + FNS_ARENA_SLAB_UNIT;
    uint8_t *raw, *p;
    size_t head;

    raw = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
               0);
    if (raw == MAP_FAILED) {
        return NULL;
    }
    p = (uint8_t *)(((uintptr_t)raw + FNS_ARENA_SLAB_UNIT - 1) & ~(FNS_ARENA_SLAB_UNIT - 1));
    head = (size_t)(p - raw);
    if (head > 0) {
        (void)munmap(raw, head);
    }
    (void)munmap(p + len, over - head - len);
    /* Advice only: without THP the arena still works, just slower. */
    (void)madvise(p, len, MADV_HUGEPAGE);
    return p;
}

static int
fns_arena_register(struct fns_arena *a)
{
    int rc = -EMFILE;

    pthread_rwlock_wrlock(&fns_arena_reg_lock);
    for (size_t i = 0; i < FNS_ARENA_MAX; i++) {
        if (fns_arena_reg[i] == NULL) {
            fns_arena_reg[i] = a;
            rc = 0;
            break;
        }
    }
    pthread_rwlock_unlock(&fns_arena_reg_lock);
    return rc;
}

static void
fns_arena_unregister(struct fns_arena *a)
{
    pthread_rwlock_wrlock(&fns_arena_reg_lock);
    for (size_t i = 0; i < FNS_ARENA_MAX; i++) {
        if (fns_arena_reg[i] == a) {
            fns_arena_reg[i] = NULL;
        }
    }
    pthread_rwlock_unlock(&fns_arena_reg_lock);
}

/* Caller holds the registry lock. */
static struct fns_arena *
fns_arena_find_locked(const void *p)
{
    uintptr_t q = (uintptr_t)p;

    for (size_t i = 0; i < FNS_ARENA_MAX; i++) {
        struct fns_arena *a = fns_arena_reg[i];

        if (a != NULL && q >= (uintptr_t)a->base && q - (uintptr_t)a->base < a->resv) {
            return a;
        }
    }
    return NULL;
}

int
fns_arena_create(const struct fns_arena_cfg *cfg, struct fns_arena **out)
{
    struct fns_arena *a;
    size_t nslabs;
    int rc;

    *out = NULL;
    if (!fns_arena_cfg_ok(cfg)) {
        return CM_E_BADARG;
    }
    nslabs = (cfg->reserve_bytes + cfg->slab_bytes - 1) / cfg->slab_bytes;
    if (nslabs >= SLAB_NONE) {
        return CM_E_BADARG;
    }
    a = cm_calloc(1, sizeof(*a));
    a->slab_bytes = cfg->slab_bytes;
    a->resv = nslabs * cfg->slab_bytes;
    a->min_alloc = cfg->min_alloc;
    a->nslabs = (uint32_t)nslabs;
    a->keep_slabs = cfg->keep_slabs;
    a->cur = a->warm = a->cold = SLAB_NONE;
    a->base = fns_arena_map(a->resv);
    if (a->base == NULL) {
        free(a);
        return -ENOMEM;
    }
    a->slabs = cm_calloc(nslabs, sizeof(*a->slabs));
    pthread_mutex_init(&a->mu, NULL);
    rc = fns_arena_register(a);
    if (rc != 0) {
        goto out;
    }
    *out = a;
out:
    if (rc != 0) {
        pthread_mutex_destroy(&a->mu);
        (void)munmap(a->base, a->resv);
        free(a->slabs);
        free(a);
    }
    return rc;
}

static void
fns_arena_release(struct fns_arena *a)
{
    fns_arena_unregister(a);
    (void)munmap(a->base, a->resv);
    pthread_mutex_destroy(&a->mu);
    free(a->slabs);
    free(a);
}

void
fns_arena_destroy(struct fns_arena *a)
{
    int now;

    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->dying = 1;
    now = a->live == 0;
    pthread_mutex_unlock(&a->mu);
    if (now) {
        fns_arena_release(a);
    }
}

static uint32_t
fns_arena_pop(struct fns_arena *a, uint32_t *list)
{
    uint32_t i = *list;

    if (i != SLAB_NONE) {
        *list = a->slabs[i].next;
        a->slabs[i].next = SLAB_NONE;
        a->reused++;
    }
    return i;
}

/* A slab to bump into: warm first (faulted in), then cold, then new. */
static uint32_t
fns_arena_take_locked(struct fns_arena *a)
{
    uint32_t i = fns_arena_pop(a, &a->warm);

    if (i != SLAB_NONE) {
        a->nwarm--;
    } else {
        i = fns_arena_pop(a, &a->cold);
    }
    if (i == SLAB_NONE && a->high < a->nslabs) {
        i = a->high++;
    }
    if (i != SLAB_NONE) {
        a->slabs[i].state = SLAB_CUR;
        a->slabs[i].off = 0;
        a->nused++;
    }
    return i;
}

/* Slab i just became empty and is not current: keep it warm or return
 * its memory. */
static void
fns_arena_empty_locked(struct fns_arena *a, uint32_t i)
{
    struct fns_slab *s = &a->slabs[i];

    a->nused--;
    if (a->nwarm < a->keep_slabs) {
        s->state = SLAB_WARM;
        s->next = a->warm;
        a->warm = i;
        a->nwarm++;
        return;
    }
    (void)madvise(a->base + (size_t)i * a->slab_bytes, a->slab_bytes, MADV_DONTNEED);
    s->state = SLAB_FREE;
    s->next = a->cold;
    a->cold = i;
}

void *
fns_arena_alloc(struct fns_arena *a, size_t n)
{
    size_t r = (n + FNS_ARENA_ALIGN - 1) & ~(FNS_ARENA_ALIGN - 1);
    struct fns_slab *s;
    void *p = NULL;

    if (a == NULL || n < a->min_alloc || n == 0 || r > a->slab_bytes) {
        return cm_malloc_big(n);
    }
    pthread_mutex_lock(&a->mu);
    if (a->cur != SLAB_NONE && a->slabs[a->cur].off + r > a->slab_bytes) {
        a->slabs[a->cur].state = SLAB_FULL; /* live > 0, or off would be 0 */
        a->cur = SLAB_NONE;
    }
    if (a->cur == SLAB_NONE) {
        a->cur = fns_arena_take_locked(a);
    }
    if (a->cur != SLAB_NONE) {
        s = &a->slabs[a->cur];
        p = a->base + (size_t)a->cur * a->slab_bytes + s->off;
        s->off += r;
        s->live++;
        a->live++;
    } else {
        a->fallbacks++;
    }
    pthread_mutex_unlock(&a->mu);
    return p != NULL ? p : cm_malloc_big(n);
}

/* Caller holds a->mu; p is in a. Returns nonzero when a must be released. */
static int
fns_arena_put_locked(struct fns_arena *a, const void *p)
{
    uint32_t i = (uint32_t)(((const uint8_t *)p - a->base) / a->slab_bytes);
    struct fns_slab *s = &a->slabs[i];

    s->live--;
    a->live--;
    if (s->live == 0) {
        if (i == a->cur) {
            s->off = 0;
        } else {
            fns_arena_empty_locked(a, i);
        }
    }
    return a->dying && a->live == 0;
}

void
fns_arena_free(void *p)
{
    struct fns_arena *a;
    int release = 0;

    if (p == NULL) {
        return;
    }
    pthread_rwlock_rdlock(&fns_arena_reg_lock);
    a = fns_arena_find_locked(p);
    if (a != NULL) {
        pthread_mutex_lock(&a->mu);
        release = fns_arena_put_locked(a, p);
        pthread_mutex_unlock(&a->mu);
    }
    pthread_rwlock_unlock(&fns_arena_reg_lock);
    if (a == NULL) {
        free(p);
    } else if (release) {
        fns_arena_release(a);
    }
}

int
fns_arena_owns(const void *p)
{
    int found;

    pthread_rwlock_rdlock(&fns_arena_reg_lock);
    found = fns_arena_find_locked(p) != NULL;
    pthread_rwlock_unlock(&fns_arena_reg_lock);
    return found;
}

void
fns_arena_stats(struct fns_arena *a, struct fns_arena_stats *out)
{
    pthread_mutex_lock(&a->mu);
    out->slab_bytes = a->slab_bytes;
    out->live_buffers = a->live;
    out->slabs_in_use = a->nused;
    out->slabs_warm = a->nwarm;
    out->held_bytes = (uint64_t)(a->nused + a->nwarm) * a->slab_bytes;
    out->slabs_reused_total = a->reused;
    out->fallbacks_total = a->fallbacks;
    pthread_mutex_unlock(&a->mu);
}
