/*
 * test_pol_fq_drfq.c - the "drfq" policy (DRR token-based DRF over requests
 * and bytes) on a simulated saturated node (fq_sim.h), against analytic
 * answers. With no caps set a request costs max(1/POL_FQ_NOMINAL_OPS,
 * bytes/POL_FQ_NOMINAL_BYTES) s: 1 KiB costs 10 us (count-bound), 64 KiB
 * 61 us (byte-bound), which is also the default quantum Q.
 */
#include <math.h>
#include <stdio.h>

#include "cm_err.h"
#include "fq_sim.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

/* Weights 2:1, then 3:2:1 over very different sizes (below, at and far
 * above the quantum) give dominant cost in that ratio. */
static void
test_weights(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drfq", &cfg, 3);
    s.par = 4;
    CHECK_EQ_INT(s.ops->set_weight(s.q, 0, 2), 0);
    s.t[0].lo = s.t[1].lo = 1 * KiB;
    s.t[0].hi = s.t[1].hi = 128 * KiB;
    s.t[2].depth = 0;
    sim_measure(&s, 3000, 60000);
    CHECK_NEAR(s.t[0].cost / s.t[1].cost, 2.0, 0.04);

    CHECK_EQ_INT(s.ops->set_weight(s.q, 0, 3), 0);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 1, 2), 0);
    s.t[0].lo = 0;
    s.t[0].hi = 2 * KiB;
    s.t[1].lo = s.t[1].hi = 64 * KiB;
    s.t[2].lo = 128 * KiB;
    s.t[2].hi = 1 * MiB;
    sim_depth(&s, 2, 4);
    sim_measure(&s, 5000, 100000);
    {
        double tot = s.t[0].cost + s.t[1].cost + s.t[2].cost;

        printf("drfq 3:2:1 over 0-2KiB / 64KiB / 128KiB-1MiB: shares %.4f %.4f %.4f\n",
               s.t[0].cost / tot, s.t[1].cost / tot, s.t[2].cost / tot);
        CHECK_NEAR(s.t[0].cost / tot / (3.0 / 6), 1.0, 0.02);
        CHECK_NEAR(s.t[1].cost / tot / (2.0 / 6), 1.0, 0.02);
        CHECK_NEAR(s.t[2].cost / tot / (1.0 / 6), 1.0, 0.02);
    }
    sim_check_views(&s);
    sim_fini(&s);
}

static void
served_cost_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    double *c = arg;

    c[ti->tenant] = ti->served_cost;
}

/* A request-bound tenant (1 KiB GETs) and a bandwidth-bound one (64 KiB
 * GETs) get equal dominant shares: the first ~6x the requests. */
static void
sizes_case(const struct pol_fq_cfg *cfg)
{
    struct sim s;
    double want = 0, c[2];

    sim_init(&s, "drfq", cfg, 2);
    s.t[0].flags = s.t[1].flags = POL_FQ_GET;
    s.t[1].lo = s.t[1].hi = 64 * KiB;
    sim_measure(&s, 2000, 40000);
    want = sim_cost(&s, 64 * KiB) / sim_cost(&s, 1 * KiB);
    printf("drfq 1KiB vs 64KiB (caps %g/s, %g B/s): requests %llu / %llu (ratio %.3f, "
           "analytic %.3f), dominant share ratio %.4f\n",
           s.cap_ops, s.cap_bytes, (unsigned long long)s.t[0].n, (unsigned long long)s.t[1].n,
           (double)s.t[0].n / (double)s.t[1].n, want, s.t[0].cost / s.t[1].cost);
    CHECK(want > 5.0);
    CHECK_NEAR(s.t[0].cost / s.t[1].cost, 1.0, 0.02);
    CHECK_NEAR((double)s.t[0].n / (double)s.t[1].n / want, 1.0, 0.02);
    /* served_cost is the dominant cost of completed requests. */
    while (s.rlen > 0) {
        sim_complete_one(&s);
    }
    pol_fq_foreach_tenant(s.q, served_cost_cb, c);
    CHECK_NEAR(c[0], (double)s.t[0].done * sim_cost(&s, 1 * KiB), 1e-9);
    CHECK_NEAR(c[1], (double)s.t[1].done * sim_cost(&s, 64 * KiB), 1e-9);
    sim_fini(&s);
}

static void
test_sizes(void)
{
    struct pol_fq_cfg cfg = {0};

    sizes_case(&cfg); /* nominal capacity */
    cfg.cap_ops = 2000;
    cfg.cap_bytes = 16 * MiB;
    sizes_case(&cfg); /* an emulated cap */
}

/* Tenant 2 (of 3, equal weights, 1 KiB requests) runs one GET the node
 * misjudged: estimated 4 KiB, it moved 100 MiB (1600 quanta). It goes idle
 * with a debt capped at debt_quanta of its quanta, and back it waits exactly
 * that many turns: the others serve 6 or 7 requests per turn (Q / 10 us). */
static uint64_t
debt_case(double debt_quanta)
{
    struct pol_fq_cfg cfg = {.debt_quanta = debt_quanta};
    struct sim s;
    uint64_t first;
    double k = debt_quanta != 0 ? debt_quanta : POL_FQ_DEBT_QUANTA;

    sim_init(&s, "drfq", &cfg, 3);
    s.t[2].flags = POL_FQ_GET | POL_FQ_UNSIZED;
    s.t[2].lo = s.t[2].hi = 100 * MiB;
    s.t[2].depth = 0;
    sim_fill_all(&s);
    sim_run(&s, 1000);
    sim_depth(&s, 2, 1);
    sim_depth(&s, 2, 0);
    while (s.t[2].done == 0) {
        sim_run(&s, 1);
    }
    s.t[2].flags = 0;
    s.t[2].lo = s.t[2].hi = 1 * KiB;
    sim_depth(&s, 2, 4);
    sim_window(&s);
    sim_run(&s, 3000);
    first = s.t[2].first;
    /* The others' first turn may be the rest of one already begun. */
    CHECK(first >= (uint64_t)(6 * (2 * (k + 1) - 1)) + 1);
    CHECK(first <= (uint64_t)(2 * 7 * (k + 1)) + 1);
    sim_fini(&s);
    return first;
}

static void
test_debt(void)
{
    uint64_t a = debt_case(0), b = debt_case(2);

    printf("drfq debt: back from idle after a 100 MiB misestimate, first served after %llu "
           "dequeues (cap %g quanta), %llu (cap 2)\n",
           (unsigned long long)a, POL_FQ_DEBT_QUANTA, (unsigned long long)b);
}

/* An idle tenant's share goes to the busy ones; one that comes back is
 * served within a round and gets its third, with no burst from credit it
 * was refunded while idle (its last GETs, charged ~1 MiB, moved 0 bytes)
 * or from the unspent quanta of many short busy periods. */
static void
test_idle(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drfq", &cfg, 3);
    s.par = 4;
    s.t[2].flags = POL_FQ_GET | POL_FQ_UNSIZED;
    s.t[2].lo = s.t[2].hi = 1 * MiB;
    sim_fill_all(&s);
    sim_run(&s, 20000);
    CHECK(s.t[2].n > 100);
    /* The estimate learnt 1 MiB; the last requests move nothing. */
    s.t[2].lo = s.t[2].hi = 0;
    s.t[2].depth = s.t[2].waiting + 4;
    sim_fill(&s, 2);
    s.t[2].depth = 0;
    sim_window(&s);
    sim_run(&s, 20000);
    CHECK(s.t[2].running == 0 && s.t[2].waiting == 0);
    CHECK_NEAR(s.t[0].cost / s.t[1].cost, 1.0, 0.02);
    CHECK(s.t[0].n + s.t[1].n + s.t[2].n == 20000);

    /* One request at a time: idle after each, so each turn's unspent
     * credit must be dropped, not saved up. */
    s.t[2].flags = 0;
    s.t[2].lo = s.t[2].hi = 1 * KiB;
    sim_depth(&s, 2, 1);
    sim_window(&s);
    sim_run(&s, 20000);
    CHECK(s.t[2].n > 1000);
    CHECK_NEAR(s.t[0].cost / s.t[1].cost, 1.0, 0.02);

    sim_depth(&s, 2, 4);
    sim_window(&s);
    sim_run(&s, 60);
    /* Within one round of the other two (at most 7 each)... */
    CHECK(s.t[2].first >= 1 && s.t[2].first <= 15);
    /* ...a third of 60 plus at most one quantum (6 requests) and the
     * carry of one request. */
    CHECK(s.t[2].n <= 20 + 7);
    sim_run(&s, 30000 - 60);
    CHECK_NEAR(s.t[2].cost / s.t[0].cost, 1.0, 0.02);
    sim_fini(&s);
}

/* The GET-size estimate: an EWMA (1/8) of the actual bytes of completed
 * GETs, exact to the formula, never 0; sized GETs feed it, other requests
 * do not. */
static void
test_estimate(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("drfq");
    struct pol_fq_cfg cfg = {0};
    struct pol_fq *q = NULL;
    struct pol_fq_item it = {0}, *got;
    double want = POL_FQ_GET_BYTES_INIT;
    int k;

    CHECK_EQ_INT(ops->create(&cfg, &q), 0);
    it.tenant = 5;
    for (k = 0; k < 40; k++) {
        it.flags = POL_FQ_GET | POL_FQ_UNSIZED;
        CHECK_EQ_INT(ops->enqueue(q, &it, (uint64_t)k), 0);
        got = ops->dequeue(q, (uint64_t)k);
        CHECK(got == &it);
        CHECK_EQ_INT(it.charged_bytes, (uint64_t)llround(want));
        ops->complete(q, &it, 100000, (uint64_t)k);
        want += (100000 - want) / 8;
        /* A PUT of other bytes does not move the GET estimate. */
        it.flags = 0;
        it.est_bytes = 7;
        CHECK_EQ_INT(ops->enqueue(q, &it, (uint64_t)k), 0);
        CHECK(ops->dequeue(q, (uint64_t)k) == &it);
        CHECK_EQ_INT(it.charged_bytes, 7);
        ops->complete(q, &it, 7, (uint64_t)k);
    }
    /* (7/8)^40 of the initial gap is left. */
    CHECK_NEAR(want, 100000, 100000 * pow(7.0 / 8, 40));
    CHECK(fabs(want - 100000) < 500);
    /* A sized GET is charged its size and feeds the estimate. */
    it.flags = POL_FQ_GET;
    it.est_bytes = 3;
    CHECK_EQ_INT(ops->enqueue(q, &it, 50), 0);
    CHECK(ops->dequeue(q, 50) == &it);
    CHECK_EQ_INT(it.charged_bytes, 3);
    ops->complete(q, &it, 3, 50);
    want += (3 - want) / 8;
    /* GETs that find nothing drive it down to 1 byte, never 0. */
    for (k = 0; k < 300; k++) {
        it.flags = POL_FQ_GET | POL_FQ_UNSIZED;
        CHECK_EQ_INT(ops->enqueue(q, &it, 60), 0);
        CHECK(ops->dequeue(q, 60) == &it);
        CHECK_EQ_INT(it.charged_bytes, want >= 1 ? (uint64_t)llround(want) : 1);
        CHECK(it.charged_bytes >= 1);
        ops->complete(q, &it, 0, 60);
        want += (0 - want) / 8;
    }
    CHECK_EQ_INT(it.charged_bytes, 1);
    ops->destroy(q);
}

/* Charges corrected at complete: a tenant whose GET sizes are unknown
 * (estimated) and random gets the same dominant share as one whose sizes
 * are known, with completions 8 dequeues behind the charges. */
static void
test_correction(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drfq", &cfg, 2);
    s.par = 8;
    s.t[0].flags = POL_FQ_GET | POL_FQ_UNSIZED;
    s.t[1].flags = POL_FQ_GET;
    s.t[0].lo = s.t[1].lo = 1 * KiB;
    s.t[0].hi = s.t[1].hi = 256 * KiB;
    s.t[0].depth = s.t[1].depth = 8;
    sim_measure(&s, 5000, 100000);
    printf("drfq unsized vs sized GETs 1-256 KiB: dominant share ratio %.4f\n",
           s.t[0].cost / s.t[1].cost);
    CHECK_NEAR(s.t[0].cost / s.t[1].cost, 1.0, 0.02);
    sim_fini(&s);
}

/* 1000 backlogged tenants, 16-64 KiB requests (all within the quantum, so
 * every turn serves): equal shares, and a tenant waits at most one turn of
 * each other tenant, each at most (c_max + Q) / c_min requests. With weights
 * 1..4, shares follow the weights. */
static void
test_no_starvation(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;
    uint32_t i, n = 1000;
    double tot = 0, wsum = 0, per_turn;

    sim_init(&s, "drfq", &cfg, n);
    for (i = 0; i < n; i++) {
        s.t[i].depth = 2;
        s.t[i].lo = 16 * KiB;
        s.t[i].hi = 64 * KiB;
    }
    per_turn = ceil((2 * sim_cost(&s, 64 * KiB)) / sim_cost(&s, 16 * KiB));
    sim_measure(&s, 4 * n, 60 * n);
    for (i = 0; i < n; i++) {
        tot += s.t[i].cost;
    }
    for (i = 0; i < n; i++) {
        CHECK_NEAR(s.t[i].cost / (tot / n), 1.0, 0.05);
        CHECK(s.t[i].max_gap <= (uint64_t)((n - 1) * per_turn + 1));
    }
    sim_fini(&s);

    sim_init(&s, "drfq", &cfg, n);
    for (i = 0; i < n; i++) {
        s.t[i].depth = 2;
        s.t[i].lo = 16 * KiB;
        s.t[i].hi = 64 * KiB;
        CHECK_EQ_INT(s.ops->set_weight(s.q, i, 1 + i % 4), 0);
        wsum += 1 + i % 4;
    }
    sim_measure(&s, 4 * n, 100 * n);
    tot = 0;
    for (i = 0; i < n; i++) {
        tot += s.t[i].cost;
    }
    for (i = 0; i < n; i++) {
        CHECK_NEAR(s.t[i].cost / (tot * (1 + i % 4) / wsum), 1.0, 0.05);
    }
    sim_fini(&s);
}

/* A weight set mid-run applies from the next turn. */
static void
test_weight_change(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drfq", &cfg, 2);
    s.t[1].lo = 1 * KiB;
    s.t[1].hi = 512 * KiB;
    sim_measure(&s, 2000, 40000);
    CHECK_NEAR(s.t[1].cost / s.t[0].cost, 1.0, 0.02);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 0, 0.5), 0);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 1, 1.5), 0);
    sim_measure(&s, 100, 40000);
    CHECK_NEAR(s.t[1].cost / s.t[0].cost, 3.0, 0.06);
    sim_fini(&s);
}

static void
arrived_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    uint64_t *a = arg;

    if (ti->tenant == 9) {
        a[0] = ti->arrived_requests;
        a[1] = ti->arrived_bytes;
        a[2] = ti->queued;
    }
}

static void
test_limit_and_cfg(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("drfq");
    struct pol_fq_cfg cfg = {.queue_limit = 2};
    struct pol_fq *q = NULL;
    struct pol_fq_item it[3] = {{0}};
    uint64_t a[3];
    int i;

    CHECK_EQ_INT(ops->create(&cfg, &q), 0);
    for (i = 0; i < 3; i++) {
        it[i].tenant = 9;
        it[i].est_bytes = 100;
        CHECK_EQ_INT(ops->enqueue(q, &it[i], 1), i < 2 ? 0 : CM_E_BUSY);
    }
    pol_fq_foreach_tenant(q, arrived_cb, a);
    CHECK_EQ_INT(a[0], 3);
    CHECK_EQ_INT(a[1], 300);
    CHECK_EQ_INT(a[2], 2);
    CHECK(ops->dequeue(q, 2) == &it[0]);
    CHECK_EQ_INT(ops->enqueue(q, &it[2], 3), 0);
    CHECK(ops->dequeue(q, 4) == &it[1]);
    CHECK(ops->dequeue(q, 4) == &it[2]);
    CHECK(ops->dequeue(q, 4) == NULL);
    ops->destroy(q);

    /* A quantum under a thousandth of a request is refused. */
    cfg.quantum = 1e-9;
    CHECK_EQ_INT(ops->create(&cfg, &q), CM_E_BADARG);
    cfg.quantum = 1e-7;
    CHECK_EQ_INT(ops->create(&cfg, &q), 0);
    ops->destroy(q);
    cfg.quantum = -1;
    CHECK_EQ_INT(ops->create(&cfg, &q), CM_E_BADARG);
}

/* A request of absurd size (64 GiB: 1e6 quanta) costs a few visits, not
 * one per quantum: the empty rounds are handed out in one pass. */
static void
test_huge(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("drfq");
    struct pol_fq_cfg cfg = {0};
    struct pol_fq *q = NULL;
    struct pol_fq_item it[3] = {{0}};
    uint64_t v0;

    CHECK_EQ_INT(ops->create(&cfg, &q), 0);
    it[0].tenant = 1;
    it[0].est_bytes = 1ull << 36;
    CHECK_EQ_INT(ops->enqueue(q, &it[0], 0), 0);
    CHECK(ops->dequeue(q, 1) == &it[0]);
    CHECK(pol_fq_visits(q) <= 3);
    ops->complete(q, &it[0], UINT64_MAX, 2);
    /* Two tenants, both far short: still a few visits. */
    it[1].tenant = 2;
    it[1].est_bytes = 1ull << 35;
    it[2].tenant = 1;
    it[2].est_bytes = 1ull << 36;
    CHECK_EQ_INT(ops->enqueue(q, &it[1], 3), 0);
    CHECK_EQ_INT(ops->enqueue(q, &it[2], 3), 0);
    v0 = pol_fq_visits(q);
    CHECK(ops->dequeue(q, 4) == &it[1]);
    CHECK(pol_fq_visits(q) - v0 <= 3 * 2 + 1);
    v0 = pol_fq_visits(q);
    CHECK(ops->dequeue(q, 5) == &it[2]);
    CHECK(pol_fq_visits(q) - v0 <= 3 * 1 + 1);
    ops->destroy(q);
}

/* Work per dequeue does not grow with the tenants. Requests within the
 * quantum: every turn serves, so a dequeue visits at most 2 tenants (the
 * one ending its turn, the one serving). Requests up to 16 quanta: a
 * request takes about cost/Q turns, the same at any number of tenants. */
static void
test_visits(void)
{
    static const uint32_t ns[] = {10, 1000, 100000};
    struct pol_fq_cfg cfg = {0};
    struct sim s;
    double per[2][3];
    size_t k, big;

    for (big = 0; big < 2; big++) {
        for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            uint32_t i;
            uint64_t v0, steps = 2 * (uint64_t)ns[k] + 20000;

            sim_init(&s, "drfq", &cfg, ns[k]);
            for (i = 0; i < ns[k]; i++) {
                s.t[i].depth = 2;
                s.t[i].lo = 0;
                s.t[i].hi = big ? 1 * MiB : 64 * KiB;
            }
            sim_measure(&s, 2 * (uint64_t)ns[k], 0);
            v0 = pol_fq_visits(s.q);
            sim_run(&s, steps);
            per[big][k] = (double)(pol_fq_visits(s.q) - v0) / (double)steps;
            printf("drfq %u tenants, 0-%s requests: %.3f visits per dequeue, at most %llu\n", ns[k],
                   big ? "1MiB" : "64KiB", per[big][k], (unsigned long long)s.max_visits);
            if (!big) {
                CHECK(s.max_visits <= 2);
            } else {
                /* mean cost 8 quanta: ~8 turns per request, plus the serving visit */
                CHECK(per[big][k] <= 2 + sim_cost(&s, 512 * KiB) / sim_cost(&s, 64 * KiB));
                /* an empty round, the pass that skips the next ones, a round */
                CHECK(s.max_visits <= 4 * (uint64_t)ns[k]);
            }
            sim_fini(&s);
        }
        CHECK_NEAR(per[big][2] / per[big][0], 1.0, 0.1);
    }
}

int
main(void)
{
    sim_seed();
    test_weights();
    test_sizes();
    test_debt();
    test_idle();
    test_estimate();
    test_correction();
    test_no_starvation();
    test_weight_change();
    test_limit_and_cfg();
    test_huge();
    test_visits();
    printf("ok\n");
    return 0;
}
