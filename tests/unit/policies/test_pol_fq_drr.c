/*
 * test_pol_fq_drr.c - the "drr" policy (weighted DRR, every request costs
 * 1) on a simulated saturated node (fq_sim.h), against analytic answers.
 */
#include <stdio.h>

#include "cm_err.h"
#include "fq_sim.h"

/* Weights 2:1 and 3:2:1 give request counts in that ratio. */
static void
test_weights(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drr", &cfg, 3);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 0, 2), 0);
    s.t[1].lo = 1;
    s.t[1].hi = 1 << 20; /* size does not matter to drr */
    s.t[2].depth = 0;
    sim_measure(&s, 3000, 30000);
    CHECK_NEAR((double)s.t[0].n / (double)s.t[1].n, 2.0, 0.04);

    CHECK_EQ_INT(s.ops->set_weight(s.q, 0, 3), 0);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 1, 2), 0);
    sim_depth(&s, 2, 4);
    sim_measure(&s, 3000, 60000);
    CHECK_NEAR((double)s.t[0].n / 30000.0, 1.0, 0.02);
    CHECK_NEAR((double)s.t[1].n / 20000.0, 1.0, 0.02);
    CHECK_NEAR((double)s.t[2].n / 10000.0, 1.0, 0.02);
    sim_check_views(&s);
    sim_fini(&s);
}

/* 1 KiB against 64 KiB GETs: equal request counts, so the large tenant gets
 * 64x the bytes and ~6x the dominant share (the strawman's unfairness). */
static void
test_sizes(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;
    double cost_ratio;

    sim_init(&s, "drr", &cfg, 2);
    s.t[1].lo = s.t[1].hi = 65536;
    sim_measure(&s, 1000, 20000);
    cost_ratio = s.t[1].cost / s.t[0].cost;
    printf("drr 1KiB vs 64KiB: requests %llu / %llu, bytes ratio %.2f, dominant share ratio %.2f\n",
           (unsigned long long)s.t[0].n, (unsigned long long)s.t[1].n,
           (double)s.t[1].bytes / (double)s.t[0].bytes, cost_ratio);
    CHECK_NEAR((double)s.t[0].n / (double)s.t[1].n, 1.0, 0.01);
    CHECK_NEAR((double)s.t[1].bytes / (double)s.t[0].bytes, 64.0, 0.64);
    CHECK_NEAR(cost_ratio, sim_cost(&s, 65536) / sim_cost(&s, 1024), 0.06);
    CHECK(cost_ratio > 6.0);
    sim_fini(&s);
}

/* An idle tenant's share goes to the busy ones; back, it is served within a
 * round and gets a third, not a burst. */
static void
test_idle(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drr", &cfg, 3);
    s.t[2].depth = 0;
    sim_measure(&s, 0, 10000);
    CHECK_EQ_INT(s.t[0].n, 5000);
    CHECK_EQ_INT(s.t[1].n, 5000);
    CHECK_EQ_INT(s.t[2].n, 0);

    sim_depth(&s, 2, 4);
    sim_window(&s);
    sim_run(&s, 30);
    CHECK(s.t[2].first >= 1 && s.t[2].first <= 3);
    CHECK(s.t[2].n <= 11);
    sim_run(&s, 2970);
    CHECK_NEAR(s.t[2].n, 1000, 1);
    sim_fini(&s);
}

/* 1000 equal backlogged tenants: exact round robin, nobody waits more than
 * one round. Weights 1..4: a tenant waits at most ceil(w_mean / w) rounds. */
static void
test_no_starvation(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;
    uint32_t i, n = 1000;
    double wsum = 0;

    sim_init(&s, "drr", &cfg, n);
    for (i = 0; i < n; i++) {
        s.t[i].depth = 2;
    }
    sim_measure(&s, 2 * n, 20 * n);
    for (i = 0; i < n; i++) {
        CHECK_EQ_INT(s.t[i].n, 20);
        CHECK(s.t[i].max_gap <= n);
    }
    sim_fini(&s);

    sim_init(&s, "drr", &cfg, n);
    for (i = 0; i < n; i++) {
        s.t[i].depth = 2;
        CHECK_EQ_INT(s.ops->set_weight(s.q, i, 1 + i % 4), 0);
        wsum += 1 + i % 4;
    }
    sim_measure(&s, 4 * n, 40 * n);
    for (i = 0; i < n; i++) {
        double w = 1 + i % 4, rounds = (double)(int)(wsum / n / w + 0.999) + 1;

        CHECK_NEAR((double)s.t[i].n / (40.0 * n * w / wsum), 1.0, 0.05);
        /* Per round the others serve at most sum(q + 1) requests. */
        CHECK((double)s.t[i].max_gap <= rounds * (2.0 * n));
    }
    sim_fini(&s);
}

/* A weight set mid-run applies from the next turn. */
static void
test_weight_change(void)
{
    struct pol_fq_cfg cfg = {0};
    struct sim s;

    sim_init(&s, "drr", &cfg, 2);
    sim_measure(&s, 0, 10000);
    CHECK_NEAR(s.t[0].n, 5000, 1);
    CHECK_EQ_INT(s.ops->set_weight(s.q, 1, 3), 0);
    sim_measure(&s, 8, 20000);
    CHECK_NEAR((double)s.t[1].n / (double)s.t[0].n, 3.0, 0.06);
    sim_fini(&s);
}

static void
test_limit(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("drr");
    struct pol_fq_cfg cfg = {.queue_limit = 2};
    struct pol_fq *q = NULL;
    struct pol_fq_item it[4] = {{0}};
    int i;

    CHECK_EQ_INT(ops->create(&cfg, &q), 0);
    CHECK(ops->dequeue(q, 0) == NULL);
    for (i = 0; i < 3; i++) {
        it[i].tenant = 9;
        CHECK_EQ_INT(ops->enqueue(q, &it[i], 1), i < 2 ? 0 : CM_E_BUSY);
    }
    it[3].tenant = 10;
    CHECK_EQ_INT(ops->enqueue(q, &it[3], 1), 0);
    CHECK_EQ_INT(pol_fq_queued(q, 9), 2);
    /* Round robin: 9, 10, 9. */
    CHECK(ops->dequeue(q, 2) == &it[0]);
    CHECK_EQ_INT(ops->enqueue(q, &it[2], 3), 0);
    CHECK(ops->dequeue(q, 4) == &it[3]);
    CHECK(ops->dequeue(q, 4) == &it[1]);
    CHECK(ops->dequeue(q, 4) == &it[2]);
    CHECK(ops->dequeue(q, 4) == NULL);
    CHECK_EQ_INT(pol_fq_len(q), 0);
    ops->destroy(q);
}

/* Work per dequeue does not grow with the tenants: with equal weights a
 * dequeue ends one turn and serves from the next, at most 2 visits. */
static void
test_visits(void)
{
    static const uint32_t ns[] = {10, 1000, 100000};
    struct pol_fq_cfg cfg = {0};
    struct sim s;
    size_t k;

    for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        uint32_t i;
        uint64_t v0;
        double per;

        sim_init(&s, "drr", &cfg, ns[k]);
        for (i = 0; i < ns[k]; i++) {
            s.t[i].depth = 2;
        }
        sim_measure(&s, ns[k], 0);
        v0 = pol_fq_visits(s.q);
        sim_run(&s, 2 * (uint64_t)ns[k] + 1000);
        per = (double)(pol_fq_visits(s.q) - v0) / (2.0 * ns[k] + 1000);
        printf("drr %u tenants: %.3f visits per dequeue, at most %llu\n", ns[k], per,
               (unsigned long long)s.max_visits);
        CHECK(per <= 2.0);
        CHECK(s.max_visits <= 2);
        sim_fini(&s);
    }
}

int
main(void)
{
    sim_seed();
    test_weights();
    test_sizes();
    test_idle();
    test_no_starvation();
    test_weight_change();
    test_limit();
    test_visits();
    printf("ok\n");
    return 0;
}
