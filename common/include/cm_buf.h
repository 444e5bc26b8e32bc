/* cm_buf.h - a growable byte/string buffer (always NUL-terminated). */
#ifndef CM_BUF_H
#define CM_BUF_H

#include <stddef.h>

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
 * A buffer for a big body, result or chunk (freed with free()); NULL when
 * out of memory. From CM_BIG_MIN up it is 2 MiB aligned and its whole 2 MiB
 * pages are advised as transparent huge pages: the first write to fresh
 * 4 KiB pages runs at ~0.1-0.3 GB/s on our VMs, to fresh huge pages at
 * several GB/s. The length is rounded up to 2 MiB (so the tail is huge
 * too) only when that adds at most n/8.
 */
#define CM_BIG_MIN ((size_t)1 << 20)
void *cm_malloc_big(size_t n);
/*
 * Makes malloc keep freed big buffers for reuse (up to 32 MiB each, no
 * trimming below 256 MiB free) instead of unmapping them, so a data path
 * that allocates a body or result per request writes to warm memory.
 * Call once at start, before any thread.
 */
void cm_malloc_tune_reuse(void);

#endif
