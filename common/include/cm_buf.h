/* cm_buf.h - a growable byte/string buffer (always NUL-terminated). */
#ifndef CM_BUF_H
#define CM_BUF_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf {
    char *p;
    size_t len, cap;
};

void cm_buf_init(struct cm_buf *b);
void cm_buf_fini(struct cm_buf *b);
/* Abort on out-of-memory (as every allocation in Shoal of a bounded size). */
void cm_buf_append(struct cm_buf *b, const void *data, size_t len);
void cm_buf_printf(struct cm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Transfers p to the caller (free()); b is left empty. */
char *cm_buf_take(struct cm_buf *b, size_t *len);

/* malloc/calloc/realloc that abort with a log line on failure. */
void *cm_malloc(size_t n);
void *cm_calloc(size_t n, size_t sz);
void *cm_realloc(void *p, size_t n);
char *cm_strdup(const char *s);

/*
 * A buffer for a big body, result or chunk; NULL when out of memory.
 * Release it with cm_free_big (or free() when the cache below is off).
 * From CM_BIG_MIN up it is 2 MiB aligned and its whole 2 MiB pages are
 * advised as transparent huge pages: the first write to fresh 4 KiB pages
 * runs at ~0.1-0.3 GB/s on our VMs, to fresh huge pages at several GB/s.
 * The length is rounded up to 2 MiB (so the tail is huge too) only when
 * that adds at most n/8. The contents are not zeroed.
 */
#define CM_BIG_MIN ((size_t)1 << 20)
void *cm_malloc_big(size_t n);
/*
 * The big-buffer cache: a process that allocates and frees a body or a
 * result per request keeps up to max_bytes of freed big buffers mapped and
 * hands them out again, so its data path writes to memory that is already
 * faulted in, instead of the kernel zeroing fresh pages for every request
 * (glibc returns them: a big buffer lives in a thread's arena heap, which
 * is unmapped once empty). Off (0) until set; any thread.
 *
 * A cached buffer serves a request of len bytes when it holds at least len
 * and at most len/2 + 2 MiB more (glibc's own 2 MiB-aligned mappings hold
 * up to 2 MiB extra); the smallest such, the newest on a tie. Past
 * max_bytes (or CM_BIG_CACHE_ENTRIES buffers) the oldest are freed.
 */
#define CM_BIG_CACHE_ENTRIES 64
void cm_big_cache_set(size_t max_bytes);
/* Releases p from cm_malloc_big or malloc (NULL is a no-op): into the cache
 * when it is on and p is a 2 MiB-aligned buffer of CM_BIG_MIN or more,
 * else free(). */
void cm_free_big(void *p);
struct cm_big_cache_stats {
    uint64_t bytes, buffers; /* held now */
    uint64_t hits, misses;   /* big allocations served from it / not */
};
void cm_big_cache_stats(struct cm_big_cache_stats *out);
/*
 * Makes malloc keep freed big buffers for reuse (up to 32 MiB each, no
 * trimming below 256 MiB free) instead of unmapping them, so a data path
 * that allocates a body or result per request writes to warm memory.
 * Call once at start, before any thread.
 */
void cm_malloc_tune_reuse(void);

#endif
