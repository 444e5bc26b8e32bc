/*
 * cm_buf.c - growable NUL-terminated buffers and aborting allocators.
 *
 * Allocation failure of a bounded size is treated as fatal everywhere in
 * Shoal: we log one line and abort rather than thread ENOMEM through every
 * caller. An empty cm_buf has p == NULL; the first append allocates.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cm_buf.h"
#include "cm_log.h"

static void
oom(size_t n)
{
    cm_log_write(CM_LOG_ERROR, "out of memory allocating %zu bytes", n);
    abort();
}

void *
cm_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        oom(n);
    }
    return p;
}

#define HUGE_PAGE ((size_t)2 << 20)

/* Cached buffers are poisoned under AddressSanitizer, so a use after
 * cm_free_big is still reported. */
#if defined(__SANITIZE_ADDRESS__)
#define CM_BUF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CM_BUF_ASAN 1
#endif
#endif
#ifdef CM_BUF_ASAN
#include <sanitizer/asan_interface.h>
#define BIG_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define BIG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define BIG_POISON(p, n) ((void)(p), (void)(n))
#define BIG_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The big-buffer cache (see cm_buf.h): entries in the order they were freed. */
static struct {
    pthread_mutex_t mu;
    size_t max_bytes, bytes, n;
    struct {
        void *p;
        size_t len; /* malloc_usable_size: what the buffer holds */
    } entry[CM_BIG_CACHE_ENTRIES];
    uint64_t hits, misses;
} big_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Takes the best cached buffer for len bytes, or NULL. Under the lock.
 * The slack allowed beyond len/2 is one huge page: a 2 MiB-aligned buffer
 * glibc maps for itself holds up to that much more than was asked. */
static void *
big_cache_take(size_t len)
{
    size_t i, best = big_cache.n;

    for (i = big_cache.n; i-- > 0;) {
        size_t have = big_cache.entry[i].len;
        if (have >= len && have - len <= len / 2 + HUGE_PAGE &&
            (best == big_cache.n || have < big_cache.entry[best].len)) {
            best = i;
        }
    }
    if (best == big_cache.n) {
        big_cache.misses++;
        return NULL;
    }
    void *p = big_cache.entry[best].p;
    size_t have = big_cache.entry[best].len;
    big_cache.bytes -= have;
    big_cache.n--;
    memmove(&big_cache.entry[best], &big_cache.entry[best + 1],
            (big_cache.n - best) * sizeof(big_cache.entry[0]));
    big_cache.hits++;
    BIG_UNPOISON(p, have);
    return p;
}

void *
cm_malloc_big(size_t n)
{
    size_t len;
    void *p;

    if (n < CM_BIG_MIN) {
        return malloc(n ? n : 1);
    }
    if (n > SIZE_MAX - HUGE_PAGE) {
        return NULL;
    }
    /* Round up to whole huge pages only when that wastes at most 1/8:
     * a node stores these buffers, and its memory is what it sells. */
    len = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    if (len - n > n / 8) {
        len = n;
    }
    pthread_mutex_lock(&big_cache.mu);
    p = big_cache.max_bytes > 0 ? big_cache_take(len) : NULL;
    pthread_mutex_unlock(&big_cache.mu);
    if (p != NULL) {
        return p;
    }
    if (posix_memalign(&p, HUGE_PAGE, len) != 0) {
        return NULL;
    }
    /* Advice only: without THP the buffer still works, just slower. */
    (void)madvise(p, len & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
    return p;
}

/* Drops the oldest entries until len more bytes (and one more entry, when
 * one_more) fit; the dropped buffers go to out. Under the lock. */
static size_t
big_cache_make_room(size_t len, int one_more, void **out)
{
    size_t k = 0;

    while (k < big_cache.n && ((one_more && big_cache.n - k == CM_BIG_CACHE_ENTRIES) ||
                               big_cache.bytes + len > big_cache.max_bytes)) {
        big_cache.bytes -= big_cache.entry[k].len;
        out[k] = big_cache.entry[k].p;
        k++;
    }
    big_cache.n -= k;
    memmove(&big_cache.entry[0], &big_cache.entry[k], big_cache.n * sizeof(big_cache.entry[0]));
    return k;
}

void
cm_free_big(void *p)
{
    void *drop[CM_BIG_CACHE_ENTRIES];
    size_t len, k = 0;

    if (p == NULL) {
        return;
    }
    len = malloc_usable_size(p);
    if (len < CM_BIG_MIN || ((uintptr_t)p & (HUGE_PAGE - 1)) != 0) {
        free(p);
        return;
    }
    pthread_mutex_lock(&big_cache.mu);
    if (len > big_cache.max_bytes) {
        drop[k++] = p;
    } else {
        k = big_cache_make_room(len, 1, drop);
        BIG_POISON(p, len);
        big_cache.entry[big_cache.n].p = p;
        big_cache.entry[big_cache.n].len = len;
        big_cache.n++;
        big_cache.bytes += len;
    }
    pthread_mutex_unlock(&big_cache.mu);
    while (k > 0) {
        free(drop[--k]);
    }
}

void
cm_big_cache_set(size_t max_bytes)
{
    void *drop[CM_BIG_CACHE_ENTRIES];
    size_t k;

    pthread_mutex_lock(&big_cache.mu);
    big_cache.max_bytes = max_bytes;
    k = big_cache_make_room(0, 0, drop);
    pthread_mutex_unlock(&big_cache.mu);
    while (k > 0) {
        free(drop[--k]);
    }
}

void
cm_big_cache_stats(struct cm_big_cache_stats *out)
{
    pthread_mutex_lock(&big_cache.mu);
    out->bytes = big_cache.bytes;
    out->buffers = big_cache.n;
    out->hits = big_cache.hits;
    out->misses = big_cache.misses;
    pthread_mutex_unlock(&big_cache.mu);
}

void
cm_malloc_tune_reuse(void)
{
    /* Fixed values also turn off glibc's sliding mmap threshold. */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

void *
cm_calloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);

    if (p == NULL) {
        oom(n * sz);
    }
    return p;
}

void *
cm_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (q == NULL) {
        oom(n);
    }
    return q;
}

char *
cm_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cm_malloc(n);

    memcpy(p, s, n);
    return p;
}

void
cm_buf_init(struct cm_buf *b)
{
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
}

void
cm_buf_fini(struct cm_buf *b)
{
    free(b->p);
    cm_buf_init(b);
}

/* Makes room for extra bytes plus the terminating NUL. */
static void
reserve(struct cm_buf *b, size_t extra)
{
    size_t need, cap;

    if (extra > SIZE_MAX - b->len - 1) {
        oom(SIZE_MAX);
    }
    need = b->len + extra + 1;
    if (need <= b->cap) {
        return;
    }
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    b->p = cm_realloc(b->p, cap);
    b->cap = cap;
}

void
cm_buf_append(struct cm_buf *b, const void *data, size_t len)
{
    reserve(b, len);
    if (len > 0) {
        memcpy(b->p + b->len, data, len);
    }
    b->len += len;
    b->p[b->len] = '\0';
}

void
cm_buf_printf(struct cm_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    reserve(b, 128);
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->p[b->len] = '\0';
        return;
    }
    if ((size_t)n >= b->cap - b->len) {
        reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

char *
cm_buf_take(struct cm_buf *b, size_t *len)
{
    char *p;

    if (b->p == NULL) {
        reserve(b, 0);
        b->p[0] = '\0';
    }
    p = b->p;
    if (len != NULL) {
        *len = b->len;
    }
    cm_buf_init(b);
    return p;
}
