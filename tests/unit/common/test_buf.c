/* test_buf.c - growth, printf, take; the big-buffer cache. */
#include "t_check.h"

#include <malloc.h>
#include <stdint.h>

#include "cm_buf.h"

#define MIB ((size_t)1 << 20)

static struct cm_big_cache_stats
stats(void)
{
    struct cm_big_cache_stats st;
    cm_big_cache_stats(&st);
    return st;
}

/* A big buffer of n bytes, every byte written (a short one fails under
 * ASan), 2 MiB aligned. */
static uint8_t *
big(size_t n, int fill)
{
    uint8_t *p = cm_malloc_big(n);
    CHECK(p != NULL);
    CHECK(((uintptr_t)p & (2 * MIB - 1)) == 0);
    memset(p, fill, n);
    return p;
}

static void
test_big_cache(void)
{
    struct cm_big_cache_stats st;
    uint8_t *a, *b, *c, *ps[CM_BIG_CACHE_ENTRIES + 6];
    size_t i, ua, ub;

    /* Off by default: buffers go back to malloc, nothing is counted. */
    a = big(3 * MIB, 1);
    cm_free_big(a);
    st = stats();
    CHECK(st.bytes == 0 && st.buffers == 0 && st.hits == 0 && st.misses == 0);

    cm_big_cache_set(64 * MIB);
    a = big(3 * MIB, 1);
    ua = malloc_usable_size(a);
    cm_free_big(a);
    st = stats();
    CHECK(st.misses == 1 && st.hits == 0 && st.buffers == 1 && st.bytes == ua);
    /* The same size again: the same buffer, old bytes and all. */
    b = big(3 * MIB, 2);
    CHECK(b == a);
    st = stats();
    CHECK(st.hits == 1 && st.buffers == 0 && st.bytes == 0);
    /* Far too big for a 1 MiB request (more than half plus a huge page
     * over), too small for a 9 MiB one. */
    cm_free_big(b);
    cm_big_cache_set(0);
    cm_big_cache_set(64 * MIB);
    b = big(6 * MIB, 3);
    cm_free_big(b);
    CHECK(stats().buffers == 1 && stats().misses == 2);
    c = big(MIB, 3);
    CHECK(c != b);
    a = big(9 * MIB, 4);
    CHECK(a != b);
    CHECK(stats().misses == 4 && stats().buffers == 1);
    cm_free_big(c);
    cm_free_big(a);
    CHECK_EQ_INT(stats().buffers, 3);

    /* The smallest buffer that fits wins. */
    cm_big_cache_set(0);
    CHECK(stats().buffers == 0 && stats().bytes == 0);
    cm_big_cache_set(64 * MIB);
    a = big(4 * MIB, 5);
    b = big(4 * MIB + 4096, 5);
    ua = malloc_usable_size(a);
    ub = malloc_usable_size(b);
    cm_free_big(a);
    cm_free_big(b);
    c = big(4 * MIB, 6);
    CHECK(c == (ua <= ub ? a : b));
    cm_free_big(c);

    /* Past the byte limit the oldest buffers go. */
    cm_big_cache_set(0);
    cm_big_cache_set(8 * MIB);
    a = big(3 * MIB, 7);
    b = big(3 * MIB, 7);
    c = big(3 * MIB, 7);
    ub = malloc_usable_size(b);
    ua = malloc_usable_size(c);
    cm_free_big(a);
    cm_free_big(b);
    cm_free_big(c);
    st = stats();
    CHECK(st.bytes <= 8 * MIB && st.buffers >= 1 && st.buffers <= 2);
    /* c, the newest, is there: a request it fits gets it, unless b was
     * kept too and is strictly smaller (smallest fit; newest on a tie). */
    a = big(3 * MIB, 8);
    CHECK(a == c || (st.buffers == 2 && a == b && ub < ua));
    cm_free_big(a);
    /* A buffer larger than the whole limit is not kept. */
    a = big(12 * MIB, 9);
    st = stats();
    cm_free_big(a);
    CHECK(stats().bytes == st.bytes && stats().buffers == st.buffers);

    /* At most CM_BIG_CACHE_ENTRIES buffers. */
    cm_big_cache_set(1024 * MIB);
    for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        ps[i] = big(MIB, 10);
    }
    for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        cm_free_big(ps[i]);
    }
    CHECK_EQ_INT(stats().buffers, CM_BIG_CACHE_ENTRIES);

    /* Small and unaligned buffers are simply freed. */
    st = stats();
    cm_free_big(malloc(100));
    cm_free_big(malloc(3 * MIB));
    cm_free_big(NULL);
    CHECK(stats().buffers == st.buffers && stats().bytes == st.bytes);
    cm_big_cache_set(0);
    CHECK(stats().buffers == 0 && stats().bytes == 0);
}

int
main(void)
{
    struct cm_buf b;
    char *p, big[1000];
    size_t len;
    int i;

    cm_buf_init(&b);
    p = cm_buf_take(&b, &len);
    CHECK(p != NULL && len == 0 && p[0] == '\0');
    free(p);

    cm_buf_append(&b, "ab", 2);
    cm_buf_printf(&b, "-%d-%s", 42, "x");
    CHECK_EQ_STR(b.p, "ab-42-x");
    CHECK_EQ_INT(b.len, 7);
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (i = 0; i < 50; i++) {
        cm_buf_printf(&b, "%s", big);
    }
    CHECK_EQ_INT(b.len, 7 + 50 * 999);
    CHECK_EQ_INT(strlen(b.p), b.len);
    cm_buf_append(&b, NULL, 0);
    p = cm_buf_take(&b, &len);
    CHECK_EQ_INT(len, 7 + 50 * 999);
    CHECK(b.p == NULL && b.len == 0);
    free(p);
    cm_buf_fini(&b);

    p = cm_strdup("hello");
    CHECK_EQ_STR(p, "hello");
    free(p);
    p = cm_calloc(4, 4);
    CHECK(p[15] == 0);
    p = cm_realloc(p, 100);
    free(p);

    test_big_cache();
    return 0;
}
