/* test_fns_store.c - instances, capacity, replace and delete of the chunk store. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "fns_store.h"

static struct fns_chunk *
mk(uint32_t tenant, uint64_t object, uint32_t index, uint32_t len)
{
    struct fns_key k = {.tenant = tenant, .index = index, .object = object, .version = 1};
    uint8_t *p = malloc(len + FNS_CHUNK_TAIL);

    memset(p, (int)index, len);
    return fns_chunk_adopt(&k, p, len, cm_crc32c(0, p, len));
}

int
main(void)
{
    struct fns_store *s = NULL;
    struct fns_chunk *a, *b, *c, *d, *big;
    struct fns_instance_info in;
    struct fns_key k;
    uint32_t i;

    CHECK(fns_store_create(1000, 0, &s) == CM_E_BADARG);
    CHECK(fns_store_create(1000, 2, &s) == 0); /* 2 instances of 500 bytes */
    a = mk(1, 1, 0, 300);
    b = mk(1, 1, 1, 300);
    c = mk(2, 1, 0, 300);
    d = mk(3, 1, 0, 10);
    big = mk(1, 9, 0, 501);

    CHECK(fns_store_put(s, big) == -ENOSPC); /* larger than an instance */
    CHECK(fns_store_put(s, a) == 0);
    CHECK(fns_store_used(s) == 300 && fns_store_nchunks(s) == 1);
    CHECK(fns_store_put(s, b) == 0); /* tenant 1 takes the second instance */
    fns_store_instance(s, 0, &in);
    CHECK(in.owned && in.tenant == 1 && in.used == 300);
    fns_store_instance(s, 1, &in);
    CHECK(in.owned && in.tenant == 1 && in.used == 300);
    CHECK(fns_store_put(s, c) == -ENOSPC); /* no instance for tenant 2 */
    CHECK(fns_store_put(s, d) == -ENOSPC);
    CHECK(fns_store_used(s) == 600);
    CHECK(fns_store_get(s, &a->key) == a);
    CHECK(fns_store_get(s, &c->key) == NULL);

    /* Deleting b frees its instance for another pool. */
    CHECK(fns_store_del(s, &b->key) == 0);
    CHECK(fns_store_del(s, &b->key) == CM_E_NOTFOUND);
    CHECK(fns_store_put(s, c) == 0);
    CHECK(fns_store_used(s) == 600);

    /* Replacing a key frees the old copy's space. */
    {
        struct fns_chunk *a2 = mk(1, 1, 0, 450);

        CHECK(fns_store_put(s, a2) == 0);
        CHECK(fns_store_get(s, &a->key) == a2);
        CHECK(fns_store_used(s) == 750);
        /* A replacement that does not fit leaves the old one in place. */
        {
            struct fns_chunk *a3 = mk(1, 1, 0, 501);

            CHECK(fns_store_put(s, a3) == -ENOSPC);
            CHECK(fns_store_get(s, &a->key) == a2);
            CHECK(fns_store_used(s) == 750);
            fns_chunk_unref(a3);
        }
        fns_chunk_unref(a2);
    }

    /* Many small chunks of one tenant: the index grows, accounting holds. */
    fns_store_destroy(s);
    CHECK(fns_store_create(1u << 30, 4, &s) == 0);
    for (i = 0; i < 5000; i++) {
        struct fns_chunk *x = mk(7, 1000 + i / 10, i % 10, 16);

        CHECK(fns_store_put(s, x) == 0);
        fns_chunk_unref(x);
    }
    CHECK(fns_store_nchunks(s) == 5000 && fns_store_used(s) == 5000 * 16);
    for (i = 0; i < 5000; i += 2) {
        k = (struct fns_key){.tenant = 7, .index = i % 10, .object = 1000 + i / 10, .version = 1};
        CHECK(fns_store_del(s, &k) == 0);
    }
    CHECK(fns_store_nchunks(s) == 2500);
    k = (struct fns_key){.tenant = 7, .index = 1, .object = 1000, .version = 1};
    CHECK(fns_store_get(s, &k) != NULL && fns_store_get(s, &k)->len == 16);
    fns_store_destroy(s);
    fns_store_destroy(NULL);

    fns_chunk_unref(a);
    fns_chunk_unref(b);
    fns_chunk_unref(c);
    fns_chunk_unref(d);
    fns_chunk_unref(big);
    return 0;
}
