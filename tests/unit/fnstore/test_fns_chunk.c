/* test_fns_chunk.c - chunk COS blobs (trailer, corruption) and the token bucket. */
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "fns_chunk.h"
#include "fns_rate.h"

static void
test_blob(void)
{
    struct fns_key k = {.tenant = 3, .index = 2, .object = 0xabc, .version = 9};
    uint8_t *p = malloc(100 + FNS_CHUNK_TAIL);
    struct fns_chunk *c, *r = NULL;
    void *blob;
    char name[128];

    memset(p, 0x5a, 100);
    c = fns_chunk_adopt(&k, p, 100, cm_crc32c(0, p, 100));
    CHECK(fns_chunk_blob_len(c) == 108);
    CHECK(fns_key_name(&k, name, sizeof(name)) == 0);
    CHECK(strcmp(name, "t3/0000000000000abc.9.2") == 0);

    blob = malloc(108);
    memcpy(blob, c->data, 108);
    CHECK(fns_chunk_from_blob(&k, blob, 108, &r) == 0);
    CHECK(r != NULL && r->len == 100 && r->crc == c->crc && memcmp(r->data, p, 100) == 0);
    fns_chunk_unref(r);

    blob = malloc(108);
    memcpy(blob, c->data, 108);
    ((uint8_t *)blob)[50] ^= 1; /* flipped bit */
    CHECK(fns_chunk_from_blob(&k, blob, 108, &r) == CM_E_CRC && r == NULL);
    blob = malloc(108);
    memcpy(blob, c->data, 108);
    ((uint8_t *)blob)[107] ^= 1; /* bad magic */
    CHECK(fns_chunk_from_blob(&k, blob, 108, &r) == CM_E_CRC);
    blob = malloc(4);
    CHECK(fns_chunk_from_blob(&k, blob, 4, &r) == CM_E_CRC); /* too short */
    blob = malloc(8);
    memcpy(blob, "\0\0\0\0SHCK", 8); /* an empty chunk is valid */
    CHECK(fns_chunk_from_blob(&k, blob, 8, &r) == 0 && r->len == 0);
    fns_chunk_unref(r);

    fns_chunk_ref(c);
    fns_chunk_unref(c);
    fns_chunk_unref(c);
    fns_chunk_unref(NULL);
}

static void
test_rate(void)
{
    struct fns_rate r;
    uint64_t t = 1000000000ull;
    int admitted = 0, i;

    fns_rate_init(&r, 0, 0.05, t);
    CHECK(fns_rate_ready(&r, t) && fns_rate_wait_ns(&r) == 0); /* unlimited */

    /* 1000/s with a 50 ms burst: over 2 s of 1 ms steps, ~2000 (+burst) admitted. */
    fns_rate_init(&r, 1000, 0.05, t);
    for (i = 0; i < 2000; i++) {
        while (fns_rate_ready(&r, t)) {
            fns_rate_charge(&r, 1);
            admitted++;
        }
        t += 1000000;
    }
    CHECK(admitted >= 1990 && admitted <= 2060);

    /* A big item drives the bucket into debt; the wait covers it. */
    fns_rate_init(&r, 1000, 0.05, t);
    CHECK(fns_rate_ready(&r, t));
    fns_rate_charge(&r, 1050); /* 50 tokens in the bucket, 1000 owed */
    CHECK(!fns_rate_ready(&r, t));
    CHECK(fns_rate_wait_ns(&r) >= 999000000ull && fns_rate_wait_ns(&r) <= 1001000000ull);
    CHECK(!fns_rate_ready(&r, t + 999000000ull));
    CHECK(fns_rate_ready(&r, t + 1001000000ull));
    /* A refund never overfills. */
    fns_rate_charge(&r, -1e9);
    CHECK(r.tokens <= r.burst);
}

int
main(void)
{
    test_blob();
    test_rate();
    return 0;
}
