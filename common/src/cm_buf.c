/*
 * cm_buf.c - growable NUL-terminated buffers and aborting allocators.
 *
 * Allocation failure of a bounded size is treated as fatal everywhere in
 * Shoal: we log one line and abort rather than thread ENOMEM through every
 * caller. An empty cm_buf has p == NULL; the first append allocates.
 */
#include <malloc.h>
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
    if (posix_memalign(&p, HUGE_PAGE, len) != 0) {
        return NULL;
    }
    /* Advice only: without THP the buffer still works, just slower. */
    (void)madvise(p, len & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
    return p;
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
