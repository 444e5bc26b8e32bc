/*
 * test_pol_sms_static.c - unit tests of the "static" SMS policy (the fixed
 * pool): nothing ever ages, is released or moves; chunks go wherever there
 * is room; the pool grows to its size and stays there.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_err.h"
#include "pol_sms.h"
#include "t_check.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define KIB 1024ull

static const struct pol_sms_ops *S;

static struct pol_sms *
make(uint32_t max_instances)
{
    struct pol_sms_cfg c = {
        .interval_ns = SEC,
        .active_intervals = 2,
        .degraded_intervals = 3,
        .inst_bytes = 64 * KIB,
        .max_instances = max_instances,
    };
    struct pol_sms *p;

    CHECK_EQ_INT(S->create(&c, &p), 0);
    return p;
}

static void
test_create(void)
{
    struct pol_sms_cfg c = {.interval_ns = SEC};
    struct pol_sms *p = (struct pol_sms *)&c;

    /* A fixed pool needs its size. */
    CHECK_EQ_INT(S->create(NULL, &p), CM_E_BADARG);
    CHECK(p == NULL);
    CHECK_EQ_INT(S->create(&c, &p), CM_E_BADARG);
    c.max_instances = 3;
    c.interval_ns = 1;
    CHECK_EQ_INT(S->create(&c, &p), CM_E_BADARG);
    p = make(3);
    CHECK_EQ_INT(pol_sms_cfg_of(p)->max_instances, 3);
    CHECK_EQ_INT(pol_sms_cfg_of(p)->warm_active_ns, 100 * MS);
    S->destroy(p);
    S->destroy(NULL);
}

static void
test_place_and_read(void)
{
    struct pol_sms *p = make(4);
    struct pol_sms_inst in[4] = {
        {.gen = 0, .state = POL_SMS_ACTIVE, .used = 60 * KIB}, /* old, 4 KiB room */
        {.gen = 9, .state = POL_SMS_ACTIVE, .used = 10 * KIB}, /* newest, 54 KiB room */
        {.gen = 9, .state = POL_SMS_ACTIVE, .used = 0, .lost = 1},
        {.gen = 0, .state = POL_SMS_RELEASED},
    };
    struct pol_sms_view v = {.gen = 9, .inst = in, .ninst = 4, .can_open = 1};
    size_t idx = 99;

    /* Anywhere with room, the fullest first, whatever its generation. */
    CHECK_EQ_INT(S->place(p, &v, 4 * KIB, 0, &idx), 0);
    CHECK_EQ_INT(idx, 0);
    CHECK_EQ_INT(S->place(p, &v, 5 * KIB, 0, &idx), 0);
    CHECK_EQ_INT(idx, 1);
    /* No room: the pool (3 live of 4) may still grow, then not. */
    CHECK_EQ_INT(S->place(p, &v, 60 * KIB, 0, &idx), POL_SMS_OPEN_NEW);
    v.can_open = 0;
    CHECK_EQ_INT(S->place(p, &v, 60 * KIB, 0, &idx), -ENOSPC);
    v.can_open = 1;
    in[3].state = POL_SMS_ACTIVE;
    in[3].used = 64 * KIB;
    CHECK_EQ_INT(S->place(p, &v, 60 * KIB, 0, &idx), -ENOSPC);
    CHECK_EQ_INT(S->place(p, &v, 65 * KIB, 0, &idx), CM_E_TOOBIG);
    /* Never compacted, not even from old or lost instances or late reads. */
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ_INT(S->on_read(p, &v, i, KIB, 0), 0);
    }
    CHECK_EQ_INT(S->on_read(p, &v, POL_SMS_NOWHERE, KIB, 0), 0);
    CHECK_EQ_INT(S->on_read(p, &v, 4, KIB, 0), CM_E_BADARG);
    CHECK_EQ_INT(S->on_read(p, NULL, 0, KIB, 0), CM_E_BADARG);
    S->destroy(p);
}

/*
 * A pool filled, then left alone for far longer than any window: every
 * instance stays ACTIVE (a lost one too: it is rebuilt), nothing is
 * released, the generation never moves, and every instance is warmed up
 * every warm_active_ns, for ever. Ticks at next_ns only.
 */
static void
test_never_releases(void)
{
    enum { N = 4 };
    struct pol_sms *p = make(N);
    struct pol_sms_inst in[N];
    struct pol_sms_view v = {.gen = 3, .gen_start_ns = 0, .inst = in, .ninst = 0, .can_open = 1};
    struct pol_sms_decision d[N];
    struct pol_sms_tick t;
    uint64_t now = 10 * SEC, chunks = 0, ups = 0;
    size_t idx;
    int rc;

    /* Fill: 16 KiB chunks until the pool is full. */
    while ((rc = S->place(p, &v, 16 * KIB, now, &idx)) != -ENOSPC) {
        if (rc == POL_SMS_OPEN_NEW) {
            CHECK(v.ninst < N);
            in[v.ninst++] = (struct pol_sms_inst){.gen = v.gen, .warm_ns = now};
            continue;
        }
        CHECK_EQ_INT(rc, 0);
        in[idx].used += 16 * KIB;
        in[idx].put_bytes += 16 * KIB;
        in[idx].state = POL_SMS_ACTIVE;
        chunks++;
    }
    CHECK_EQ_INT(v.ninst, N);
    CHECK_EQ_INT(chunks, N * 4);
    in[2].lost = 1;
    while (now <= 10 * SEC + 100 * SEC) {
        CHECK_EQ_INT(S->tick(p, &v, now, d, &t), 0);
        CHECK_EQ_INT(t.gen, 3);
        CHECK_EQ_INT(t.opened, 0);
        CHECK_EQ_INT(t.released, 0);
        CHECK_EQ_INT(t.instances, N);
        CHECK_EQ_INT(t.degraded, 0);
        CHECK_EQ_INT(t.memory_bytes, N * 64 * KIB);
        CHECK_EQ_INT(t.working_set_bytes, N * 64 * KIB);
        CHECK(t.next_ns > now && t.next_ns <= now + 100 * MS);
        for (size_t i = 0; i < N; i++) {
            CHECK_EQ_INT(d[i].state, POL_SMS_ACTIVE);
            CHECK_EQ_INT(d[i].gen, in[i].gen);
            CHECK_EQ_INT(d[i].reason, POL_SMS_KEPT);
            if (d[i].warm_up) {
                CHECK_EQ_INT(now - in[i].warm_ns, 100 * MS);
                in[i].warm_ns = now;
                ups++;
            }
        }
        now = t.next_ns;
    }
    CHECK_EQ_INT(ups, N * 1000); /* 100 s at one per 100 ms each */
    /* A released instance (the caller's doing) stays so, uncounted. */
    in[1].state = POL_SMS_RELEASED;
    CHECK_EQ_INT(S->tick(p, &v, now, d, &t), 0);
    CHECK_EQ_INT(d[1].state, POL_SMS_RELEASED);
    CHECK_EQ_INT(d[1].warm_up, 0);
    CHECK_EQ_INT(t.instances, N - 1);
    CHECK_EQ_INT(t.released, 0);
    in[1].state = POL_SMS_NSTATES;
    CHECK_EQ_INT(S->tick(p, &v, now, d, &t), CM_E_BADARG);
    S->destroy(p);
}

int
main(void)
{
    t_seed();
    S = pol_sms_find("static");
    CHECK(S != NULL);
    test_create();
    test_place_and_read();
    test_never_releases();
    printf("ok\n");
    return 0;
}
