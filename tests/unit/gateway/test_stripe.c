/* test_stripe.c - gw_stripe: geometry, encode, and decode from any k chunks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "gw_stripe.h"
#include "t_check.h"

#define MiB (1ull << 20)

static void
test_geometry(void)
{
    uint64_t cs, ns;

    /* docs/architecture.md: 10 MiB at RS(4+2) is 3 stripes of 873,856-byte
     * chunks (15 MiB stored), not 18 MiB of 1 MiB chunks. */
    gw_stripe_geometry(1 << 20, 4, 10 * MiB, &cs, &ns);
    CHECK_EQ_INT(ns, 3);
    CHECK_EQ_INT(cs, 873856);
    CHECK_EQ_INT(gw_stripe_room(1 << 20, 4, 10 * MiB), 3 * 4 * 873856ull);
    gw_stripe_geometry(0, 4, 10 * MiB, &cs, &ns); /* 0: the 1 MiB default */
    CHECK(ns == 3 && cs == 873856);
    /* Copies are not rounded: 10 chunks of exactly 1 MiB. */
    gw_stripe_geometry(1 << 20, 1, 10 * MiB, &cs, &ns);
    CHECK(ns == 10 && cs == MiB);
    /* One byte at RS(4+2): one stripe of 64-byte chunks. */
    gw_stripe_geometry(1 << 20, 4, 1, &cs, &ns);
    CHECK(ns == 1 && cs == 64);
    /* Rounding to 64 would leave the last stripe empty: not rounded. */
    gw_stripe_geometry(4096, 4, 3 * 4 * 4096 + 4, &cs, &ns);
    CHECK(ns == 4 && cs * 4 * 3 < 3 * 4 * 4096 + 4);
    CHECK_EQ_INT(gw_stripe_room(4096, 4, 0), 0);
    CHECK_EQ_INT(gw_stripe_room(4096, 0, 5), 5);
    for (int t = 0; t < 20000; t++) {
        uint32_t k = (uint32_t)t_range(1, CM_EC_MAX_K), mc = (uint32_t)t_range(64, 1 << 20);
        uint64_t size = 1 + t_rand() % (64 * MiB);
        gw_stripe_geometry(mc, k, size, &cs, &ns);
        CHECK(cs >= 1 && cs <= mc);
        CHECK(ns * k * cs >= size);      /* holds the object */
        CHECK((ns - 1) * k * cs < size); /* every stripe holds object bytes */
        CHECK_EQ_INT(ns, (size + (uint64_t)k * mc - 1) / ((uint64_t)k * mc)); /* fewest stripes */
        CHECK(ns * k * cs - size < 64ull * k * ns); /* padding under 64 bytes a chunk */
        CHECK(k == 1 || cs % 64 == 0 || cs == (size + ns * k - 1) / (ns * k));
        CHECK_EQ_INT(gw_stripe_room(mc, k, size), ns * k * cs);
    }
}

static void
test_masks(void)
{
    struct gw_layout l = {.k = 4, .m = 2};

    CHECK_EQ_INT(gw_stripe_n(&l), 6);
    CHECK_EQ_INT(gw_stripe_all(&l), 0x3f);
    CHECK_EQ_INT(gw_stripe_index(&l, 0, 5), 5);
    CHECK_EQ_INT(gw_stripe_index(&l, 3, 2), 20);
}

/* One PUT: encode, check every chunk against the input, then rebuild each
 * stripe from a random k of its chunks. */
static void
roundtrip(uint8_t k, uint8_t m, uint64_t size, uint32_t max_chunk, int room)
{
    struct gw_layout l = {.tenant = 3, .size = size, .k = k, .m = m};
    struct gw_stripes st = {0};
    struct cm_ec *ec = NULL;
    uint64_t cap = room ? gw_stripe_room(max_chunk, k, size) : size;
    uint8_t *src = malloc(size ? size : 1);

    CHECK(src != NULL);
    t_fill(src, size);
    st.data = malloc(cap ? cap : 1);
    CHECK(st.data != NULL);
    memcpy(st.data, src, size);
    memset(st.data + size, 0xa5, cap - size); /* the room holds garbage */
    if (k > 1 && m > 0) {
        CHECK_EQ_INT(cm_ec_create(k, m, &ec), 0);
        struct gw_layout bad = l;
        struct gw_stripes none = {.data = st.data};
        CHECK(size == 0 || gw_stripe_encode(&none, &bad, NULL, max_chunk, cap) == CM_E_BADARG);
        free(none.crc);
        cm_free_big(none.tail);
    }
    CHECK_EQ_INT(gw_stripe_encode(&st, &l, ec, max_chunk, cap), 0);
    CHECK_EQ_INT(l.etag, cm_crc64(0, src, size));
    if (size == 0) {
        CHECK(l.nstripes == 0 && l.chunk_size == 0 && l.persisted == gw_stripe_all(&l));
        gw_stripes_fini(&st);
        cm_ec_destroy(ec);
        free(src);
        return;
    }
    uint32_t n = gw_stripe_n(&l), cs = l.chunk_size;
    CHECK(room ? st.tail == NULL : (l.nstripes * (uint64_t)k * cs == size) || st.tail != NULL);
    uint64_t sb = (uint64_t)k * cs;
    uint64_t stored =
        (st.tail ? size + sb : l.nstripes * sb) + (k > 1 ? (uint64_t)m * l.nstripes * cs : 0);
    CHECK_EQ_INT(st.bytes, stored);
    uint8_t *back = calloc((size_t)l.nstripes * k, cs);
    uint8_t *bufs = malloc((size_t)n * cs);
    CHECK(back != NULL && bufs != NULL);
    for (uint32_t s = 0; s < l.nstripes; s++) {
        uint8_t *chunks[GW_MAX_HOLDERS];
        uint64_t present = 0;
        for (uint32_t j = 0; j < n; j++) {
            const uint8_t *c = gw_stripe_chunk(&st, &l, s, j);
            CHECK_EQ_INT(st.crc[gw_stripe_index(&l, s, j)], cm_crc32c(0, c, cs));
            if (j < k) {
                memcpy(back + ((size_t)s * k + j) * cs, c, cs);
            } else if (k == 1) {
                CHECK(memcmp(c, gw_stripe_chunk(&st, &l, s, 0), cs) == 0); /* a copy */
            }
        }
        /* Any k of n: the others rebuilt equal to what was encoded. */
        while (__builtin_popcountll(present) < k) {
            present |= 1ull << t_range(0, (int)n - 1);
        }
        for (uint32_t j = 0; j < n; j++) {
            chunks[j] = bufs + (size_t)j * cs;
            if (present & (1ull << j)) {
                memcpy(chunks[j], gw_stripe_chunk(&st, &l, s, j), cs);
            } else {
                memset(chunks[j], 0x5a, cs);
            }
        }
        CHECK_EQ_INT(gw_stripe_decode(&l, ec, chunks, present), 0);
        for (uint32_t j = 0; j < n; j++) {
            CHECK(memcmp(chunks[j], gw_stripe_chunk(&st, &l, s, j), cs) == 0);
        }
        if (k > 1) {
            CHECK_EQ_INT(gw_stripe_decode(&l, ec, chunks, present & (present - 1)), CM_E_UNAVAIL);
        }
    }
    /* The data chunks are the object, then zeros. */
    CHECK(memcmp(back, src, size) == 0);
    for (uint64_t i = size; i < (uint64_t)l.nstripes * k * cs; i++) {
        CHECK_EQ_INT(back[i], 0);
    }
    free(back);
    free(bufs);
    free(src);
    gw_stripes_fini(&st);
    cm_ec_destroy(ec);
}

int
main(void)
{
    t_seed();
    test_geometry();
    test_masks();
    roundtrip(4, 2, 10 * MiB, 1 << 20, 1);
    roundtrip(4, 2, 10 * MiB, 1 << 20, 0);
    roundtrip(1, 2, 300000, 1 << 16, 0);
    roundtrip(4, 2, 0, 1 << 20, 0);
    for (int t = 0; t < 200; t++) {
        uint8_t k = (uint8_t)t_range(1, 10), m = (uint8_t)t_range(0, 4);
        roundtrip(k, m, (uint64_t)t_range(0, 200000), (uint32_t)t_range(64, 32768), t_range(0, 1));
    }
    printf("ok\n");
    return 0;
}
