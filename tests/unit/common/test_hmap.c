/*
 * test_hmap.c - the intrusive hash map: lookups among equal hashes, delete
 * from the middle of a chain, growth keeping every node, iteration, and
 * a walk in stretches that the table grows under.
 */
#include <stdlib.h>

#include "cm_hmap.h"
#include "t_check.h"

struct rec {
    struct cm_hnode hn;
    uint64_t key;
    int seen;
};

static struct rec *
find(struct cm_hmap *m, uint64_t key, uint64_t h)
{
    for (struct cm_hnode *n = cm_hmap_first(m, h); n != NULL; n = cm_hmap_next(n, h)) {
        struct rec *r = CM_CONTAINER_OF(n, struct rec, hn);
        if (r->key == key) {
            return r;
        }
    }
    return NULL;
}

static void
mark(void *arg, struct cm_hnode *n)
{
    (*(int *)arg)++;
    CM_CONTAINER_OF(n, struct rec, hn)->seen++;
}

static void
drop_odd(void *arg, struct cm_hnode *n)
{
    struct rec *r = CM_CONTAINER_OF(n, struct rec, hn);
    if (r->key % 2) {
        cm_hmap_del(arg, n);
    }
}

int
main(void)
{
    enum { N = 5000 };
    struct rec *rs = calloc(N, sizeof(*rs));
    struct cm_hmap m;
    int count = 0;

    cm_hmap_init(&m, 1);
    CHECK(m.mask == 15);
    /* three records with one hash: each is found by its own key */
    for (int i = 0; i < 3; i++) {
        rs[i].key = 100 + (uint64_t)i;
        cm_hmap_add(&m, &rs[i].hn, 42);
    }
    CHECK(find(&m, 101, 42) == &rs[1] && find(&m, 100, 42) == &rs[0]);
    CHECK(find(&m, 101, 43) == NULL && find(&m, 103, 42) == NULL);
    cm_hmap_del(&m, &rs[1].hn); /* middle of the chain */
    CHECK(find(&m, 101, 42) == NULL && find(&m, 102, 42) == &rs[2] && m.n == 2);
    cm_hmap_del(&m, &rs[0].hn);
    cm_hmap_del(&m, &rs[2].hn);
    CHECK(m.n == 0 && cm_hmap_first(&m, 42) == NULL);

    /* growth keeps every node findable */
    for (int i = 0; i < N; i++) {
        rs[i].key = (uint64_t)i;
        rs[i].seen = 0;
        cm_hmap_add(&m, &rs[i].hn, cm_hmix64((uint64_t)i));
    }
    CHECK(m.n == N && m.mask + 1 >= N);
    for (int i = 0; i < N; i++) {
        CHECK(find(&m, (uint64_t)i, cm_hmix64((uint64_t)i)) == &rs[i]);
    }
    cm_hmap_each(&m, mark, &count);
    CHECK(count == N);
    for (int i = 0; i < N; i++) {
        CHECK(rs[i].seen == 1);
    }
    cm_hmap_each(&m, drop_odd, &m);
    CHECK(m.n == N / 2);
    CHECK(find(&m, 7, cm_hmix64(7)) == NULL && find(&m, 8, cm_hmix64(8)) == &rs[8]);
    cm_hmap_free(&m);

    /* A walk in stretches of at most 7 (a chain is never split) while the
     * table grows from 16 buckets: every node that was in from the start
     * is seen at least once, none of them more than twice. */
    cm_hmap_init(&m, 1);
    for (int i = 0; i < N; i++) {
        rs[i].seen = 0;
    }
    for (int i = 0; i < 40; i++) {
        cm_hmap_add(&m, &rs[i].hn, cm_hmix64((uint64_t)i));
    }
    size_t pos = 0;
    int more = 1, added = 40, stretches = 0;
    while (more) {
        count = 0;
        more = cm_hmap_walk(&m, &pos, 7, mark, &count);
        CHECK(count <= 7); /* no chain here is longer */
        stretches++;
        for (int j = 0; j < 50 && added < N; j++, added++) {
            cm_hmap_add(&m, &rs[added].hn, cm_hmix64((uint64_t)added));
        }
    }
    CHECK(stretches > 10 && m.mask + 1 > 1024);
    for (int i = 0; i < 40; i++) {
        CHECK(rs[i].seen == 1 || rs[i].seen == 2);
    }
    pos = 0;
    count = 0;
    CHECK(cm_hmap_walk(&m, &pos, (size_t)N, mark, &count) == 0 && count == N);
    cm_hmap_free(&m);
    free(rs);
    return 0;
}
