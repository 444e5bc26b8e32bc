/*
 * test_fns_recover.c - the order of parallel recovery: each helper takes
 * exactly its share (hash(key) mod R), in queue order, at most `depth` at a
 * time; a chunk asked for goes to the front of its helper's queue and is
 * the next it loads; waiters come back when it is loaded; a recovery ends
 * with its last chunk; a slot dropped mid-recovery loses its queue and its
 * loading items no longer count.
 */
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_err.h"
#include "fns_recover.h"

#define N 200

static struct fns_key
key(uint64_t o)
{
    return (struct fns_key){.tenant = 1, .object = o};
}

static void
test_shares_and_order(uint32_t helpers)
{
    struct fns_recover *r;
    struct fns_ilog_loc loc = {0};
    uint64_t last[64];
    size_t got = 0;
    int done = 0;

    fns_recover_create(helpers, 2, 4, &r);
    CHECK(fns_recover_helpers(r) == helpers);
    fns_recover_begin(r, 1, 0x100005, 1000);
    for (uint64_t o = 0; o < N; o++) {
        struct fns_key k = key(o);

        CHECK(fns_recover_add(r, 1, &k, 10, &loc) == 0);
    }
    CHECK(fns_recover_add(r, 1, &(struct fns_key){.tenant = 1, .object = 5}, 10, &loc) ==
          CM_E_EXISTS);
    CHECK(fns_recover_running(r) == 1 && fns_recover_left(r, 1) == N);
    CHECK(fns_recover_began(r, 1) == 1000);
    memset(last, 0xff, sizeof(last));
    /* Each helper, in turn, loads its own share in the order added. */
    while (got < N) {
        int progressed = 0;

        for (uint32_t h = 0; h < helpers; h++) {
            struct fns_recover_item *a = fns_recover_next(r, h), *b = fns_recover_next(r, h);

            CHECK(fns_recover_next(r, h) == NULL); /* depth 2 */
            for (struct fns_recover_item *it = a; it != NULL; it = it == a ? b : NULL) {
                void **w;

                CHECK(it->helper == h && fns_recover_helper_of(r, &it->key) == h);
                CHECK(fns_key_hash(&it->key) % helpers == h);
                CHECK(last[h] == UINT64_MAX || it->key.object > last[h]);
                CHECK(it->slot == 1 && it->tag == 0x100005);
                last[h] = it->key.object;
                CHECK(fns_recover_finish(r, it, &w, &done) == 0 && w == NULL);
                got++;
                progressed = 1;
                CHECK(done == (got == N));
            }
        }
        CHECK(progressed);
    }
    CHECK(fns_recover_running(r) == 0 && fns_recover_left(r, 1) == 0);
    fns_recover_destroy(r);
}

static void
test_asked_first(void)
{
    struct fns_recover *r;
    struct fns_ilog_loc loc = {0};
    struct fns_recover_item *it, *asked, *first;
    struct fns_key k;
    void **w;
    int done, waiter1, waiter2;
    uint32_t h;

    fns_recover_create(4, 1, 2, &r);
    fns_recover_begin(r, 0, 7, 1);
    for (uint64_t o = 0; o < N; o++) {
        k = key(o);
        CHECK(fns_recover_add(r, 0, &k, 10, &loc) == 0);
    }
    /* The last chunk of some helper's queue is asked for. */
    k = key(N - 1);
    asked = fns_recover_find(r, &k);
    h = asked->helper;
    CHECK(asked != NULL && asked->state == FNS_RECOVER_QUEUED);
    first = fns_recover_next(r, h); /* one already loading */
    CHECK(first != asked && first->state == FNS_RECOVER_LOADING);
    fns_recover_promote(r, asked, &waiter1);
    fns_recover_promote(r, asked, &waiter2);
    CHECK(fns_recover_next(r, h) == NULL); /* depth 1: it waits for one load only */
    CHECK(fns_recover_finish(r, first, &w, &done) == 0);
    it = fns_recover_next(r, h);
    CHECK(it == asked);
    CHECK(fns_recover_finish(r, it, &w, &done) == 2 && w[0] == &waiter1 && w[1] == &waiter2);
    free(w);
    CHECK(fns_recover_find(r, &k) == NULL);
    /* Promoting one already loading only adds a waiter. */
    it = fns_recover_next(r, h);
    fns_recover_promote(r, it, &waiter1);
    CHECK(it->state == FNS_RECOVER_LOADING && it->nwait == 1);

    /* The slot is dropped: its queue goes with the waiters, the loading
     * item finishes without counting. */
    k = key(0);
    if (fns_recover_find(r, &k) != NULL && fns_recover_find(r, &k) != it) {
        fns_recover_promote(r, fns_recover_find(r, &k), &waiter2);
    }
    size_t nw = fns_recover_drop_slot(r, 0, &w);

    CHECK(nw <= 1 && (nw == 0 || w[0] == &waiter2));
    free(w);
    CHECK(fns_recover_running(r) == 0 && fns_recover_left(r, 0) == 0);
    for (uint32_t x = 0; x < 4; x++) {
        CHECK(fns_recover_next(r, x) == NULL || x == h);
    }
    CHECK(fns_recover_finish(r, it, &w, &done) == 1 && !done);
    free(w);
    /* A new recovery of the slot starts its own count. */
    fns_recover_begin(r, 0, 8, 5);
    k = key(1000);
    CHECK(fns_recover_add(r, 0, &k, 10, &loc) == 0 && fns_recover_running(r) == 1);
    it = fns_recover_next(r, fns_recover_helper_of(r, &k));
    CHECK(it != NULL && it->tag == 8);
    CHECK(fns_recover_finish(r, it, &w, &done) == 0 && done && fns_recover_running(r) == 0);
    fns_recover_destroy(r);
    fns_recover_destroy(NULL);
}

int
main(void)
{
    test_shares_and_order(1);
    test_shares_and_order(4);
    test_shares_and_order(16);
    test_asked_first();
    return 0;
}
