/* test_admit.c - unit.gateway.admit: the admission queue of large requests
 * (gateway/gw_admit.c) bounds the bytes in flight, shares them fairly
 * across tenants, never lets a small request pass a large head, and gives
 * up a waiter at its deadline (the caller answers 503). Time is passed in;
 * one test runs the deadline thread on the real clock. */
#include "t_check.h"

#include <pthread.h>
#include <stdatomic.h>

#include "cm_err.h"
#include "cm_time.h"
#include "gw_admit.h"

#define MIB ((uint64_t)1 << 20)
#define MS ((uint64_t)1000000)
#define RQ(t, b)                                                                                   \
    {                                                                                              \
        .tenant = (t), .bytes = (b)                                                                \
    }

/* One request as the caller sees it. */
struct rq {
    uint32_t tenant;
    uint64_t bytes;
    int write; /* GW_ADMIT_WRITE */
    int held;  /* a write's second hold taken and one exited */
    int state; /* 0 waiting, 1 admitted, 2 gave up */
    int status;
    struct gw_admit_ticket *t;
    int order; /* admission order */
};

static int g_order;
static atomic_int g_calls;

static void
cb(void *arg, struct gw_admit_ticket *t, int status)
{
    struct rq *r = arg;

    CHECK_EQ_INT(r->state, 0); /* one callback per waiter */
    r->status = status;
    r->state = status == 0 ? 1 : 2;
    r->t = t;
    r->order = g_order++;
    CHECK(status == 0 ? t != NULL : t == NULL);
    atomic_fetch_add(&g_calls, 1);
}

static int
enter(struct gw_admit *a, struct rq *r, uint64_t now)
{
    int rc = gw_admit_enter(a, r->tenant, r->bytes, r->write, now, cb, r, &r->t);

    if (rc == 1) {
        r->state = 1;
        r->order = g_order++;
    }
    return rc;
}

static uint64_t
inflight(struct gw_admit *a)
{
    struct gw_admit_stats st;

    gw_admit_stats(a, &st);
    return st.inflight_bytes;
}

static void
test_bound_and_small(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 30 * MIB, .min_bytes = 1 * MIB, .wait_ns = 1000 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq r[5] = {RQ(1, 10 * MIB), RQ(1, 10 * MIB), RQ(1, 10 * MIB), RQ(1, 10 * MIB),
                      RQ(1, 1024)};

    CHECK_EQ_INT(enter(a, &r[0], 0), 1);
    CHECK_EQ_INT(enter(a, &r[1], 0), 1);
    CHECK_EQ_INT(enter(a, &r[2], 0), 1);
    CHECK_EQ_INT(inflight(a), 30 * MIB);
    CHECK_EQ_INT(enter(a, &r[3], 1), 0); /* 40 MiB would pass the bound */
    CHECK_EQ_INT(r[3].state, 0);
    CHECK_EQ_INT(enter(a, &r[4], 1), 1); /* below min_bytes: no ticket, no wait */
    CHECK(r[4].t == NULL);
    CHECK_EQ_INT(gw_admit_next_deadline(a), 1 + 1000 * MS);
    gw_admit_exit(a, r[0].t, 5);
    CHECK_EQ_INT(r[3].state, 1);
    CHECK_EQ_INT(inflight(a), 30 * MIB);
    CHECK_EQ_INT(gw_admit_next_deadline(a), UINT64_MAX);
    gw_admit_exit(a, r[1].t, 6);
    gw_admit_exit(a, r[2].t, 6);
    gw_admit_exit(a, r[3].t, 6);
    CHECK_EQ_INT(inflight(a), 0);

    /* Larger than the bound alone: in when nothing else is. */
    struct rq big = RQ(2, 100 * MIB), after = RQ(2, 2 * MIB);
    CHECK_EQ_INT(enter(a, &big, 10), 1);
    CHECK_EQ_INT(enter(a, &after, 10), 0);
    gw_admit_exit(a, big.t, 11);
    CHECK_EQ_INT(after.state, 1);
    gw_admit_exit(a, after.t, 12);
    gw_admit_destroy(a);
}

/* A large head is not passed by smaller requests behind it, of its own
 * tenant or of others, even when they would fit. */
static void
test_no_starvation(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 20 * MIB, .min_bytes = 1 * MIB, .wait_ns = 1000 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq hold = RQ(1, 15 * MIB), big = RQ(2, 10 * MIB), small = RQ(3, 2 * MIB);

    CHECK_EQ_INT(enter(a, &hold, 0), 1);
    CHECK_EQ_INT(enter(a, &big, 1), 0);
    CHECK_EQ_INT(enter(a, &small, 2), 0); /* would fit, but someone waits */
    gw_admit_exit(a, hold.t, 3);
    CHECK_EQ_INT(big.state, 1);
    CHECK_EQ_INT(small.state, 1);
    CHECK(big.order < small.order);
    gw_admit_exit(a, big.t, 4);
    gw_admit_exit(a, small.t, 4);
    gw_admit_destroy(a);
}

/*
 * Fairness: tenant 1 queues 64 requests, tenants 2 and 3 queue 8 each, all
 * of 10 MiB, bound 40 MiB. Requests finish in admission order. Once tenant
 * 1's first four (in at once) are done, and while every tenant waits, the
 * tenants hold equal shares of the bound (within one request); the bound
 * holds at every step; tenants 2 and 3 do not wait behind tenant 1's
 * backlog.
 */
static void
test_fair(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 40 * MIB, .min_bytes = 1 * MIB, .wait_ns = 100000 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    enum { N1 = 64, N2 = 8, N3 = 8, N = N1 + N2 + N3 };
    static struct rq r[N];
    int done = 0, checked = 0, i;
    uint64_t now = 0;

    g_order = 0;
    for (i = 0; i < N; i++) {
        r[i].tenant = i < N1 ? 1 : i < N1 + N2 ? 2 : 3;
        r[i].bytes = 10 * MIB;
        (void)enter(a, &r[i], now++);
        CHECK(inflight(a) <= cfg.max_bytes);
    }
    /* The first four (tenant 1) went in at once. */
    for (int step = 0; done < N; step++) {
        struct rq *first = NULL;

        for (i = 0; i < N; i++) { /* the earliest admitted, not finished */
            if (r[i].state == 1 && r[i].t != NULL && (first == NULL || r[i].order < first->order)) {
                first = &r[i];
            }
        }
        CHECK(first != NULL);
        gw_admit_exit(a, first->t, now++);
        first->t = NULL;
        first->state = 3;
        done++;
        CHECK(inflight(a) <= cfg.max_bytes);
        int waiting[4] = {0};
        uint64_t held[4] = {0};
        for (i = 0; i < N; i++) {
            if (r[i].state == 0) {
                waiting[r[i].tenant]++;
            } else if (r[i].state == 1 && r[i].t != NULL) {
                held[r[i].tenant] += r[i].bytes;
            }
        }
        if (step >= 3 && waiting[1] > 0 && waiting[2] > 0 && waiting[3] > 0) {
            /* every tenant waits: each holds a third of the bound, give or
             * take the one request being replaced */
            for (int x = 1; x <= 3; x++) {
                for (int y = 1; y <= 3; y++) {
                    CHECK(held[x] <= held[y] + 10 * MIB);
                }
            }
            checked++;
        }
    }
    CHECK(checked >= 10);
    /* Tenants 2 and 3 were through long before tenant 1's backlog. */
    int last2 = 0, last3 = 0;
    for (i = N1; i < N1 + N2; i++) {
        last2 = r[i].order > last2 ? r[i].order : last2;
    }
    for (i = N1 + N2; i < N; i++) {
        last3 = r[i].order > last3 ? r[i].order : last3;
    }
    /* about every third admission each (FIFO: after all 64 of tenant 1) */
    CHECK(last2 <= 4 + 3 * N2 + 6);
    CHECK(last3 <= 4 + 3 * N3 + 6);
    CHECK_EQ_INT(inflight(a), 0);
    gw_admit_destroy(a);
}

/* Deadline: a waiter still queued wait_ns after it asked gets
 * CM_E_TIMEOUT (503 for the caller), the others stay; once the expired
 * head is gone, one behind it that fits goes in. */
static void
test_deadline(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 20 * MIB, .min_bytes = 1 * MIB, .wait_ns = 100 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq hold = RQ(1, 15 * MIB), big = RQ(2, 10 * MIB), small = RQ(3, 4 * MIB);
    struct gw_admit_stats st;

    CHECK_EQ_INT(enter(a, &hold, 0), 1);
    CHECK_EQ_INT(enter(a, &big, 0), 0);
    CHECK_EQ_INT(enter(a, &small, 50 * MS), 0);
    gw_admit_expire(a, 99 * MS);
    CHECK_EQ_INT(big.state, 0);
    gw_admit_expire(a, 100 * MS);
    CHECK_EQ_INT(big.state, 2);
    CHECK_EQ_INT(big.status, CM_E_TIMEOUT);
    CHECK_EQ_INT(small.state, 1); /* 15 + 4 fits once big is gone */
    gw_admit_stats(a, &st);
    CHECK_EQ_INT(st.timed_out, 1);
    CHECK_EQ_INT(st.waiting, 0);
    gw_admit_exit(a, hold.t, 120 * MS);
    gw_admit_exit(a, small.t, 120 * MS);

    /* Destroy gives up who still waits. */
    struct rq h2 = RQ(1, 20 * MIB), w2 = RQ(1, 20 * MIB);
    CHECK_EQ_INT(enter(a, &h2, 0), 1);
    CHECK_EQ_INT(enter(a, &w2, 0), 0);
    gw_admit_exit(a, h2.t, 1); /* w2 in */
    CHECK_EQ_INT(w2.state, 1);
    gw_admit_exit(a, w2.t, 1);
    struct rq h3 = RQ(1, 20 * MIB), w3 = RQ(1, 20 * MIB);
    CHECK_EQ_INT(enter(a, &h3, 0), 1);
    CHECK_EQ_INT(enter(a, &w3, 0), 0);
    gw_admit_exit(a, h3.t, 1);
    gw_admit_exit(a, w3.t, 1);
    gw_admit_destroy(a);
}

/* The deadline thread gives a waiter up on the real clock, about wait_ns
 * after it asked, with nobody calling expire. */
static void
test_thread(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 10 * MIB, .min_bytes = 1 * MIB, .wait_ns = 50 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq hold = RQ(1, 10 * MIB), w = RQ(2, 10 * MIB);
    uint64_t t0;

    CHECK_EQ_INT(gw_admit_start(a), 0);
    atomic_store(&g_calls, 0);
    CHECK_EQ_INT(enter(a, &hold, cm_now_ns()), 1);
    t0 = cm_now_ns();
    CHECK_EQ_INT(enter(a, &w, t0), 0);
    while (atomic_load(&g_calls) == 0 && cm_now_ns() - t0 < 5000 * MS) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_INT(w.state, 2);
    CHECK_EQ_INT(w.status, CM_E_TIMEOUT);
    CHECK(cm_now_ns() - t0 >= 50 * MS);
    gw_admit_done(hold.t);
    CHECK_EQ_INT(inflight(a), 0);

    /* A waiter queued behind a ticket released from another thread. */
    struct rq h2 = RQ(1, 10 * MIB), w2 = RQ(2, 10 * MIB);
    CHECK_EQ_INT(enter(a, &h2, cm_now_ns()), 1);
    CHECK_EQ_INT(enter(a, &w2, cm_now_ns()), 0);
    atomic_store(&g_calls, 0);
    gw_admit_done(h2.t); /* the admission thread tells w2, not this one */
    t0 = cm_now_ns();
    while (atomic_load(&g_calls) == 0 && cm_now_ns() - t0 < 5000 * MS) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_INT(w2.state, 1);
    gw_admit_done(w2.t);
    gw_admit_destroy(a);
}

/* Random steps against the invariants: bound respected by the bytes in
 * flight and by the buffered ones, every waiter gets exactly one answer,
 * and bytes balance at the end. A third are writes, which exit twice. */
static void
test_random(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 64 * MIB, .min_bytes = 1 * MIB, .wait_ns = 50};
    struct gw_admit *a = gw_admit_create(&cfg);
    enum { N = 2000 };
    static struct rq r[N];
    struct gw_admit_stats st;
    uint64_t now = 0;
    int i;

    t_seed();
    for (i = 0; i < N; i++) {
        r[i].tenant = (uint32_t)(t_rand() % 5);
        r[i].bytes = (t_rand() % 20 + 1) * MIB;
        r[i].write = t_rand() % 3 == 0 ? GW_ADMIT_WRITE : GW_ADMIT_READ;
        (void)enter(a, &r[i], now);
        CHECK(inflight(a) <= cfg.max_bytes || r[i].bytes > cfg.max_bytes);
        /* finish a random admitted one now and then (a write in two steps) */
        for (int j = 0; j < 2; j++) {
            int k = (int)(t_rand() % (uint64_t)(i + 1));
            if (r[k].state == 1 && r[k].t != NULL && t_rand() % 2) {
                if (r[k].write && !r[k].held) {
                    gw_admit_hold(r[k].t);
                    r[k].held = 1;
                    gw_admit_exit(a, r[k].t, now);
                    continue;
                }
                gw_admit_exit(a, r[k].t, now);
                r[k].t = NULL;
            }
        }
        now += t_rand() % 10;
        gw_admit_expire(a, now);
        gw_admit_stats(a, &st);
        CHECK(st.inflight_bytes <= cfg.max_bytes);
        CHECK(st.buffered_bytes <= cfg.max_bytes);
    }
    gw_admit_expire(a, UINT64_MAX - 1);
    for (i = 0; i < N; i++) {
        if (r[i].t != NULL) {
            gw_admit_exit(a, r[i].t, now);
        }
        CHECK(r[i].state == 1 || r[i].state == 2);
    }
    gw_admit_stats(a, &st);
    CHECK_EQ_INT((int)(st.inflight_bytes + st.buffered_bytes), 0);
    gw_admit_destroy(a);
}

/* A write's ticket has two holds (its answer, its chunks in the
 * persistent buffer): once either exits its bytes are buffered, which
 * writes wait for and reads do not; they go when both exited, in either
 * order. */
static void
test_holds(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 10 * MIB, .min_bytes = 1 * MIB, .wait_ns = 1000 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq w0 = RQ(1, 10 * MIB), w1 = RQ(2, 10 * MIB), w2 = RQ(1, 6 * MIB), r = RQ(3, 10 * MIB);
    struct gw_admit_stats st;

    w0.write = w1.write = w2.write = GW_ADMIT_WRITE;
    CHECK_EQ_INT(enter(a, &w0, 0), 1);
    CHECK_EQ_INT(enter(a, &w1, 1), 0);
    gw_admit_hold(w0.t);
    gw_admit_hold(NULL);       /* a no-op, as gw_admit_exit(NULL) */
    gw_admit_exit(a, w0.t, 2); /* answered: its bytes wait to be persisted */
    gw_admit_stats(a, &st);
    CHECK_EQ_INT((int)(st.inflight_bytes / MIB), 0);
    CHECK_EQ_INT((int)(st.buffered_bytes / MIB), 10);
    CHECK_EQ_INT(w1.state, 0);        /* a write waits for the buffer */
    CHECK_EQ_INT(enter(a, &r, 3), 1); /* a read does not, nor behind it */
    gw_admit_exit(a, r.t, 4);
    CHECK_EQ_INT(w1.state, 0);
    gw_admit_exit(a, w0.t, 5); /* persisted */
    CHECK_EQ_INT(w1.state, 1);
    gw_admit_stats(a, &st);
    CHECK_EQ_INT((int)(st.buffered_bytes / MIB), 0);
    CHECK_EQ_INT((int)(st.inflight_bytes / MIB), 10);
    /* the persistent buffer's hold may also exit first */
    gw_admit_hold(w1.t);
    CHECK_EQ_INT(enter(a, &w2, 6), 0);
    gw_admit_exit(a, w1.t, 7);
    CHECK_EQ_INT(w2.state, 0);
    gw_admit_exit(a, w1.t, 8);
    CHECK_EQ_INT(w2.state, 1);
    gw_admit_exit(a, w2.t, 9);
    gw_admit_stats(a, &st);
    CHECK_EQ_INT((int)(st.inflight_bytes + st.buffered_bytes), 0);
    gw_admit_destroy(a);
}

/* A read behind a write of its own tenant that waits only for the buffer
 * passes it; a read that does not fit holds up everyone behind it; a write
 * that also waits for bytes in flight is passed by nobody; and a write
 * gets its 503 at its deadline. */
static void
test_buffer_fifo(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 20 * MIB, .min_bytes = 1 * MIB, .wait_ns = 100 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq w0 = RQ(1, 15 * MIB), w1 = RQ(1, 10 * MIB), r1 = RQ(1, 10 * MIB),
              r2 = RQ(2, 15 * MIB), r3 = RQ(3, 2 * MIB);

    w0.write = w1.write = GW_ADMIT_WRITE;
    CHECK_EQ_INT(enter(a, &w0, 0), 1);
    gw_admit_hold(w0.t);
    gw_admit_exit(a, w0.t, 1); /* 15 MiB buffered */
    CHECK_EQ_INT(enter(a, &w1, 2), 0);
    CHECK_EQ_INT(enter(a, &r1, 3), 1); /* passes w1 in their FIFO */
    CHECK_EQ_INT(enter(a, &r2, 4), 0); /* 10 + 15 > 20 */
    CHECK_EQ_INT(enter(a, &r3, 5), 0); /* fits, but r2 is ahead of it */
    gw_admit_exit(a, r1.t, 6);
    CHECK_EQ_INT(r2.state, 1);
    /* w1 now waits for bytes in flight too (15 + 10 > 20): it is ahead of
     * r3 again, and nobody passes it */
    CHECK_EQ_INT(w1.state, 0);
    CHECK_EQ_INT(r3.state, 0);
    gw_admit_expire(a, 100 * MS + 3); /* w1's deadline, not r3's */
    CHECK_EQ_INT(w1.state, 2);
    CHECK_EQ_INT(w1.status, CM_E_TIMEOUT);
    CHECK_EQ_INT(r3.state, 1);
    gw_admit_exit(a, r2.t, 103 * MS);
    gw_admit_exit(a, r3.t, 103 * MS);
    gw_admit_exit(a, w0.t, 103 * MS);
    CHECK_EQ_INT((int)inflight(a), 0);
    gw_admit_destroy(a);
}

/* While a write waits for the buffer, a smaller write that would fit
 * waits behind it (no write overtakes another); reads still pass. */
static void
test_write_order(void)
{
    struct gw_admit_cfg cfg = {.max_bytes = 20 * MIB, .min_bytes = 1 * MIB, .wait_ns = 100 * MS};
    struct gw_admit *a = gw_admit_create(&cfg);
    struct rq w0 = RQ(1, 15 * MIB), w1 = RQ(1, 10 * MIB), w2 = RQ(2, 4 * MIB), r = RQ(3, 4 * MIB);

    w0.write = w1.write = w2.write = GW_ADMIT_WRITE;
    CHECK_EQ_INT(enter(a, &w0, 0), 1);
    gw_admit_hold(w0.t);
    gw_admit_exit(a, w0.t, 0); /* 15 MiB buffered */
    CHECK_EQ_INT(enter(a, &w1, 1), 0);
    CHECK_EQ_INT(enter(a, &w2, 2), 0); /* 15 + 4 fits, but w1 is ahead */
    CHECK_EQ_INT(enter(a, &r, 3), 1);
    gw_admit_exit(a, w0.t, 4); /* persisted: w1, then w2 */
    CHECK_EQ_INT(w1.state, 1);
    CHECK_EQ_INT(w2.state, 1);
    CHECK(w1.order < w2.order);
    gw_admit_exit(a, r.t, 5);
    gw_admit_exit(a, w1.t, 5);
    gw_admit_exit(a, w2.t, 5);
    CHECK_EQ_INT((int)inflight(a), 0);
    gw_admit_destroy(a);
}

int
main(void)
{
    test_bound_and_small();
    test_no_starvation();
    test_fair();
    test_deadline();
    test_thread();
    test_random();
    test_holds();
    test_buffer_fifo();
    test_write_order();
    printf("unit.gateway.admit: ok\n");
    return 0;
}
