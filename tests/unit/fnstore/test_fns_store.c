/*
 * test_fns_store.c - the instance table, the chunk index and the cache
 * space: slots from capacity, the lifecycle (open, release, reclaim), tags
 * and incarnations (never 0, changed by every release and reclaim, apart
 * across node starts), placement and moves, replace and delete, the cache
 * space's budget and LRU order, and the accounting invariants under a
 * random mix of operations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"
#include "fns_store.h"

static struct fns_chunk *
mk(uint32_t tenant, uint64_t object, uint32_t index, uint32_t len)
{
    struct fns_key k = {.tenant = tenant, .index = index, .object = object, .version = 1};
    uint8_t *p = malloc(len + FNS_CHUNK_TAIL);

    memset(p, (int)index, len);
    return fns_chunk_adopt(&k, p, len, cm_crc32c(0, p, len));
}

static struct fns_store *
mkstore(uint64_t cap, uint64_t inst, uint64_t cache, uint32_t node_inc)
{
    struct fns_store_cfg cfg = {
        .capacity = cap, .inst_bytes = inst, .cache_bytes = cache, .node_inc = node_inc};
    struct fns_store *s = NULL;

    CHECK(fns_store_create(&cfg, &s) == 0);
    return s;
}

/* Sum of slot used and counts equal the store's, and each slot's list. */
static void
check_accounting(struct fns_store *s)
{
    uint64_t used = 0, n = 0;
    uint32_t live = 0;

    for (uint32_t i = 0; i < fns_store_nslots(s); i++) {
        struct fns_slot *sl = fns_store_slot(s, i);
        uint64_t u = 0, c = 0;

        for (struct fns_chunk *x = sl->head; x != NULL; x = x->inext) {
            CHECK(x->instance == (int)i);
            CHECK(x->tag == fns_store_tag(s, i));
            CHECK(fns_store_get(s, &x->key) == x);
            u += x->len;
            c++;
        }
        CHECK(u == sl->used && c == sl->nchunks);
        CHECK(sl->live || c == 0);
        CHECK(u <= fns_store_inst_bytes(s));
        CHECK(sl->inc != 0 && sl->inc <= 0xfffff);
        used += u;
        n += c;
        live += sl->live != 0;
    }
    CHECK(used == fns_store_used(s) && n == fns_store_nchunks(s) && live == fns_store_live(s));
    CHECK(fns_store_cache_bytes(s) <= fns_store_cache_budget(s));
}

static void
test_slots_and_tags(void)
{
    struct fns_store_cfg bad = {.capacity = 1000, .inst_bytes = 2000};
    struct fns_store *s = NULL, *s2;
    uint32_t slot, slot2, t0, got;

    CHECK(fns_store_create(&bad, &s) == CM_E_BADARG && s == NULL);
    bad = (struct fns_store_cfg){.capacity = 4097ull * 10, .inst_bytes = 10};
    CHECK(fns_store_create(&bad, &s) == CM_E_BADARG); /* slot ids are 12 bits */
    bad.inst_bytes = 0;
    CHECK(fns_store_create(&bad, &s) == CM_E_BADARG);

    s = mkstore(1000, 300, 0, 1); /* 3 slots: the rest is not an instance */
    CHECK(fns_store_nslots(s) == 3 && fns_store_live(s) == 0);
    /* Tag 0 means "any": slot 0's tag is never 0, even at node incarnation 0. */
    s2 = mkstore(1000, 300, 0, 0);
    CHECK(fns_store_tag(s2, 0) != 0);
    fns_store_destroy(s2);

    /* Incarnations differ across node starts (and tags with them). */
    s2 = mkstore(1000, 300, 0, 2);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(fns_store_tag(s, i) != fns_store_tag(s2, i));
        CHECK(CM_WIRE_TAG_SLOT(fns_store_tag(s, i)) == i);
    }
    fns_store_destroy(s2);

    CHECK(!fns_store_tag_live(s, fns_store_tag(s, 0), &got)); /* free: no instance */
    CHECK(fns_store_open(s, 7, 5, &slot) == 0 && slot == 0);
    CHECK(fns_store_slot(s, 0)->state == POL_SMS_WARM && fns_store_slot(s, 0)->gen == 5);
    CHECK(fns_store_slot(s, 0)->tenant == 7 && fns_store_live(s) == 1);
    t0 = fns_store_tag(s, 0);
    CHECK(fns_store_tag_live(s, t0, &got) && got == 0);
    CHECK(!fns_store_tag_live(s, 0, &got));
    CHECK(!fns_store_tag_live(s, CM_WIRE_TAG(3, 1), &got)); /* no such slot */
    CHECK(!fns_store_tag_live(s, CM_WIRE_TAG(0, CM_WIRE_TAG_INC(t0) + 1), &got));

    /* Release: the incarnation changes, the slot is free again. */
    fns_store_release(s, 0);
    CHECK(fns_store_live(s) == 0 && !fns_store_tag_live(s, t0, &got));
    CHECK(fns_store_tag(s, 0) != t0);
    CHECK(fns_store_open(s, 8, 6, &slot) == 0 && slot == 0);
    CHECK(fns_store_tag(s, 0) != t0 && fns_store_slot(s, 0)->tenant == 8);

    /* Reclaim: the instance stays (pool, generation, state), lost, new tag. */
    t0 = fns_store_tag(s, 0);
    fns_store_slot(s, 0)->state = POL_SMS_ACTIVE;
    CHECK(fns_store_reclaim(s, 0) == t0);
    CHECK(fns_store_slot(s, 0)->live && fns_store_slot(s, 0)->lost);
    CHECK(fns_store_slot(s, 0)->prev_tag == t0 && fns_store_slot(s, 0)->tenant == 8);
    CHECK(fns_store_slot(s, 0)->state == POL_SMS_ACTIVE && fns_store_slot(s, 0)->gen == 6);
    CHECK(!fns_store_tag_live(s, t0, &got) && fns_store_tag_live(s, fns_store_tag(s, 0), &got));

    /* Slots fill up. */
    CHECK(fns_store_open(s, 1, 0, &slot) == 0 && slot == 1);
    CHECK(fns_store_open(s, 1, 0, &slot2) == 0 && slot2 == 2);
    CHECK(fns_store_open(s, 1, 0, &slot) == -ENOSPC);
    fns_store_destroy(s);
}

static void
test_placement(void)
{
    struct fns_store *s = mkstore(1000, 500, 0, 9);
    struct fns_chunk *a = mk(1, 1, 0, 300), *b = mk(1, 1, 1, 300), *big = mk(1, 9, 0, 501);
    struct fns_chunk *a2 = mk(1, 1, 0, 450), *a3 = mk(1, 1, 0, 501);
    uint32_t s0, s1;
    int from;

    CHECK(fns_store_put(s, a, 0) == CM_E_BADARG); /* free slot */
    CHECK(fns_store_open(s, 1, 0, &s0) == 0 && fns_store_open(s, 1, 0, &s1) == 0);
    CHECK(fns_store_put(s, big, s0) == -ENOSPC);
    CHECK(fns_store_put(s, a, s0) == 0 && a->instance == (int)s0 && a->tag == fns_store_tag(s, s0));
    CHECK(fns_store_put(s, b, s0) == -ENOSPC); /* 600 > 500 */
    CHECK(fns_store_put(s, b, s1) == 0);
    CHECK(fns_store_used(s) == 600 && fns_store_nchunks(s) == 2);
    check_accounting(s);

    /* A move (compaction) keeps the chunk findable; its tag changes. */
    CHECK(fns_store_put(s, a, s1) == -ENOSPC);
    CHECK(fns_store_del(s, &b->key, &from) == 0 && from == (int)s1);
    CHECK(fns_store_put(s, a, s1) == 0);
    CHECK(fns_store_get(s, &a->key) == a && a->instance == (int)s1);
    CHECK(a->tag == fns_store_tag(s, s1) && fns_store_slot(s, s0)->used == 0);
    check_accounting(s);

    /* Replacing a key frees the old copy's space, in the same instance too. */
    CHECK(fns_store_put(s, a2, s1) == 0 && fns_store_get(s, &a->key) == a2);
    CHECK(fns_store_used(s) == 450 && a->instance == -1);
    CHECK(fns_store_put(s, a3, s1) == -ENOSPC && fns_store_get(s, &a->key) == a2);
    check_accounting(s);
    CHECK(fns_store_del(s, &a->key, &from) == 0 && from == (int)s1);
    CHECK(fns_store_del(s, &a->key, &from) == CM_E_NOTFOUND && from == -1);

    /* Release drops an instance's chunks from the index. */
    CHECK(fns_store_put(s, a, s0) == 0 && fns_store_put(s, b, s1) == 0);
    fns_store_release(s, s0);
    CHECK(fns_store_get(s, &a->key) == NULL && fns_store_get(s, &b->key) == b);
    CHECK(a->instance == -1 && a->tag != 0); /* it remembers where it was */
    /* Reclaim too, but the slot stays the pool's. */
    fns_store_reclaim(s, s1);
    CHECK(fns_store_get(s, &b->key) == NULL && fns_store_used(s) == 0);
    check_accounting(s);
    fns_store_destroy(s);
    fns_chunk_unref(a);
    fns_chunk_unref(b);
    fns_chunk_unref(big);
    fns_chunk_unref(a2);
    fns_chunk_unref(a3);
}

static void
test_cache(void)
{
    struct fns_store *s = mkstore(1000, 500, 250, 3);
    struct fns_chunk *c[4], *hot = mk(2, 50, 0, 100), *other;
    uint32_t slot;

    for (int i = 0; i < 4; i++) {
        c[i] = mk(2, 10 + (uint64_t)i, 0, 100);
    }
    CHECK(fns_store_cache(s, c[0]) == 0 && fns_store_cache(s, c[1]) == 0);
    CHECK(fns_store_cache_bytes(s) == 200 && fns_store_get(s, &c[0]->key) == c[0]);
    CHECK(fns_store_used(s) == 0);  /* counted apart from the instances */
    fns_store_cache_touch(s, c[0]); /* c[1] is now the least recent */
    CHECK(fns_store_cache(s, c[2]) == 0);
    CHECK(fns_store_get(s, &c[1]->key) == NULL && fns_store_get(s, &c[0]->key) == c[0]);
    CHECK(fns_store_evictions(s) == 1 && fns_store_cache_chunks(s) == 2);
    /* Too big for the budget: not kept. */
    other = mk(2, 99, 0, 251);
    CHECK(fns_store_cache(s, other) == -ENOSPC && fns_store_get(s, &other->key) == NULL);
    fns_chunk_unref(other);

    /* A hot copy: in an instance and in the cache space at once. */
    CHECK(fns_store_open(s, 2, 0, &slot) == 0 && fns_store_put(s, hot, slot) == 0);
    CHECK(fns_store_cache(s, hot) == 0 && fns_store_cached(hot) && hot->instance == (int)slot);
    CHECK(fns_store_used(s) == 100 && fns_store_cache_bytes(s) == 200);
    CHECK(fns_store_get(s, &c[0]->key) == NULL); /* least recent once c[2] came */
    /* Its instance goes: the copy stays and serves. */
    fns_store_release(s, slot);
    CHECK(fns_store_get(s, &hot->key) == hot && hot->instance == -1 && fns_store_cached(hot));
    /* Re-admitted: from the cache space into an instance, counted once. */
    CHECK(fns_store_open(s, 2, 1, &slot) == 0 && fns_store_put(s, hot, slot) == 0);
    CHECK(!fns_store_cached(hot) && fns_store_cache_bytes(s) == 100 && fns_store_used(s) == 100);
    /* A cached chunk under another key's chunk: refused. */
    other = mk(2, 12, 0, 100); /* same key as c[2], another chunk */
    CHECK(fns_store_cache(s, other) == -ENOSPC);
    fns_chunk_unref(other);
    CHECK(fns_store_cache(s, c[3]) == 0 && fns_store_cache_bytes(s) == 200);
    fns_store_uncache(s, c[3]);
    CHECK(fns_store_get(s, &c[3]->key) == NULL && fns_store_cache_bytes(s) == 100);
    CHECK(fns_store_del(s, &c[2]->key, NULL) == 0 && fns_store_cache_bytes(s) == 0);
    check_accounting(s);
    fns_store_destroy(s);
    for (int i = 0; i < 4; i++) {
        fns_chunk_unref(c[i]);
    }
    fns_chunk_unref(hot);
}

/* Random opens, puts, moves, deletes, caches, releases and reclaims keep
 * every invariant; every tag a slot ever had is distinct. */
static void
test_random(void)
{
    struct fns_store *s = mkstore(8 * 4096, 4096, 8192, 11);
    uint32_t seen[4096], nseen = 0;
    int i;

    for (i = 0; i < 20000; i++) {
        uint32_t op = (uint32_t)(t_rand() % 100), slot = (uint32_t)(t_rand() % 8), ns;
        struct fns_chunk *c =
            mk((uint32_t)(t_rand() % 3), t_rand() % 64, 0, (uint32_t)(t_rand() % 1000));
        struct fns_slot *sl = fns_store_slot(s, slot);

        if (op < 40) {
            if (!sl->live) {
                (void)fns_store_open(s, c->key.tenant, 0, &ns);
            } else {
                (void)fns_store_put(s, c, slot);
            }
        } else if (op < 55) {
            struct fns_chunk *cur = fns_store_get(s, &c->key);

            if (cur != NULL && sl->live) {
                (void)fns_store_put(s, cur, slot); /* a move */
            }
        } else if (op < 70) {
            (void)fns_store_del(s, &c->key, NULL);
        } else if (op < 85) {
            struct fns_chunk *cur = fns_store_get(s, &c->key);

            (void)fns_store_cache(s, cur != NULL ? cur : c);
        } else if (op < 95 && sl->live) {
            uint32_t before = fns_store_tag(s, slot);

            if (op & 1) {
                fns_store_release(s, slot);
            } else {
                CHECK(fns_store_reclaim(s, slot) == before);
            }
            CHECK(fns_store_tag(s, slot) != before);
            for (uint32_t j = 0; j < nseen; j++) {
                CHECK(seen[j] != fns_store_tag(s, slot));
            }
            if (nseen < 4096) {
                seen[nseen++] = before;
            }
        }
        fns_chunk_unref(c);
        if (i % 97 == 0) {
            check_accounting(s);
        }
    }
    check_accounting(s);
    fns_store_destroy(s);
}

int
main(void)
{
    t_seed();
    test_slots_and_tags();
    test_placement();
    test_cache();
    test_random();
    fns_store_destroy(NULL);
    return 0;
}
