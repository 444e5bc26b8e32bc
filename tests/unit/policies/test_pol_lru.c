/* test_pol_lru.c - unit tests of the cache space's LRU: order, byte budget,
 * and a constant number of list steps per call whatever the length. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pol_lru.h"
#include "t_check.h"

struct item {
    int id;
    uint64_t stamp; /* reference model: last insert or touch */
    struct pol_lru_node lru;
};

static struct item *
item_of(struct pol_lru_node *n)
{
    return (struct item *)(void *)((char *)n - offsetof(struct item, lru));
}

static void
test_order_and_budget(void)
{
    struct pol_lru l;
    struct item it[4] = {{.id = 0}, {.id = 1}, {.id = 2}, {.id = 3}};

    pol_lru_init(&l);
    CHECK(pol_lru_oldest(&l) == NULL);
    CHECK(pol_lru_evict(&l, 0) == NULL);
    pol_lru_insert(&l, &it[0].lru, 100);
    pol_lru_insert(&l, &it[1].lru, 200);
    pol_lru_insert(&l, &it[2].lru, 300);
    CHECK_EQ_INT(pol_lru_bytes(&l), 600);
    CHECK_EQ_INT(pol_lru_len(&l), 3);
    CHECK(pol_lru_oldest(&l) == &it[0].lru);
    pol_lru_touch(&l, &it[0].lru); /* order now 1, 2, 0 (oldest first) */
    CHECK(pol_lru_oldest(&l) == &it[1].lru);
    /* Within budget: nothing goes. */
    CHECK(pol_lru_evict(&l, 600) == NULL);
    /* 350 bytes: 1 (200) then 2 (300) go, 0 (100) stays. */
    CHECK(pol_lru_evict(&l, 350) == &it[1].lru);
    CHECK(!pol_lru_linked(&it[1].lru));
    CHECK_EQ_INT(pol_lru_bytes(&l), 400);
    CHECK(pol_lru_evict(&l, 350) == &it[2].lru);
    CHECK(pol_lru_evict(&l, 350) == NULL);
    CHECK_EQ_INT(pol_lru_bytes(&l), 100);
    CHECK_EQ_INT(pol_lru_len(&l), 1);
    /* Unlinked nodes: touch and remove are no-ops. */
    pol_lru_touch(&l, &it[3].lru);
    pol_lru_remove(&l, &it[3].lru);
    pol_lru_remove(&l, &it[1].lru);
    CHECK_EQ_INT(pol_lru_len(&l), 1);
    /* Re-inserting a linked node re-counts it and makes it most recent. */
    pol_lru_insert(&l, &it[3].lru, 50);
    pol_lru_insert(&l, &it[0].lru, 70);
    CHECK_EQ_INT(pol_lru_bytes(&l), 120);
    CHECK(pol_lru_oldest(&l) == &it[3].lru);
    pol_lru_remove(&l, &it[3].lru);
    pol_lru_remove(&l, &it[0].lru);
    CHECK_EQ_INT(pol_lru_bytes(&l), 0);
    CHECK(pol_lru_oldest(&l) == NULL);
    /* A zero budget empties it; a zero-byte node over budget 0 stays. */
    pol_lru_insert(&l, &it[0].lru, 0);
    CHECK(pol_lru_evict(&l, 0) == NULL);
    pol_lru_insert(&l, &it[1].lru, 1);
    CHECK(pol_lru_evict(&l, 0) == &it[0].lru);
    CHECK(pol_lru_evict(&l, 0) == &it[1].lru);
    CHECK(pol_lru_evict(&l, 0) == NULL);
}

/* Random operations against a reference (stamps scanned in O(n)). */
static void
test_random_against_model(void)
{
    enum { N = 300 };
    static struct item it[N];
    struct pol_lru l;
    uint64_t clock = 0, bytes = 0;

    pol_lru_init(&l);
    memset(it, 0, sizeof(it));
    for (int i = 0; i < N; i++) {
        it[i].id = i;
    }
    for (int op = 0; op < 200000; op++) {
        struct item *x = &it[t_range(0, N - 1)];
        int what = t_range(0, 9);

        if (what < 4) {
            uint64_t b = (uint64_t)t_range(0, 1000);
            if (pol_lru_linked(&x->lru)) {
                bytes -= x->lru.bytes;
            }
            pol_lru_insert(&l, &x->lru, b);
            bytes += b;
            x->stamp = ++clock;
        } else if (what < 7) {
            pol_lru_touch(&l, &x->lru);
            if (pol_lru_linked(&x->lru)) {
                x->stamp = ++clock;
            }
        } else if (what < 8) {
            if (pol_lru_linked(&x->lru)) {
                bytes -= x->lru.bytes;
            }
            pol_lru_remove(&l, &x->lru);
        } else {
            uint64_t budget = (uint64_t)t_range(0, 150000);
            struct pol_lru_node *v;
            while ((v = pol_lru_evict(&l, budget)) != NULL) {
                struct item *oldest = NULL;
                CHECK(bytes > budget);
                for (int i = 0; i < N; i++) {
                    if ((pol_lru_linked(&it[i].lru) || &it[i].lru == v) &&
                        (oldest == NULL || it[i].stamp < oldest->stamp)) {
                        oldest = &it[i];
                    }
                }
                CHECK(item_of(v) == oldest);
                bytes -= v->bytes;
            }
            CHECK(bytes <= budget);
        }
        CHECK_EQ_INT(pol_lru_bytes(&l), bytes);
    }
    size_t linked = 0;
    for (int i = 0; i < N; i++) {
        linked += pol_lru_linked(&it[i].lru);
    }
    CHECK_EQ_INT(pol_lru_len(&l), linked);
}

/* O(1): the same mix of calls on 100 and on 100000 cached chunks costs at
 * most one list step per call, and evicting k victims exactly k steps. */
static void
test_constant_steps(void)
{
    static const int sizes[] = {100, 100000};

    for (int s = 0; s < 2; s++) {
        int n = sizes[s];
        struct item *it = calloc((size_t)n, sizeof(*it));
        struct pol_lru l;
        uint64_t calls = 0, before;

        CHECK(it != NULL);
        pol_lru_init(&l);
        for (int i = 0; i < n; i++) {
            pol_lru_insert(&l, &it[i].lru, 4096);
            calls++;
        }
        CHECK_EQ_INT(l.steps, calls);
        before = l.steps;
        calls = 0;
        for (int op = 0; op < 100000; op++) {
            struct item *x = &it[t_range(0, n - 1)];
            switch (t_range(0, 3)) {
            case 0:
                pol_lru_touch(&l, &x->lru);
                break;
            case 1:
                pol_lru_remove(&l, &x->lru);
                break;
            case 2:
                pol_lru_insert(&l, &x->lru, 4096);
                break;
            default:
                (void)pol_lru_evict(&l, pol_lru_bytes(&l) - 1);
                break;
            }
            calls++;
        }
        CHECK(l.steps - before <= calls);
        /* Evicting half of it: one step per victim. */
        size_t len = pol_lru_len(&l), k = 0;
        before = l.steps;
        while (pol_lru_evict(&l, (uint64_t)(len / 2) * 4096) != NULL) {
            k++;
        }
        CHECK_EQ_INT(k, len - len / 2);
        CHECK_EQ_INT(l.steps - before, k);
        free(it);
    }
}

int
main(void)
{
    t_seed();
    test_order_and_budget();
    test_random_against_model();
    test_constant_steps();
    printf("ok\n");
    return 0;
}
