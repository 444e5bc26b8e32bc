/*
 * fq_sim.h - a saturated storage node for the FQ policy tests.
 *
 * Closed-loop tenants keep `depth` requests waiting (0: idle); a server
 * runs `par` requests at a time and completes them in dequeue order, so a
 * charge is corrected par - 1 dequeues after it was made; a virtual clock
 * (ns) advances by each request's dominant cost at the capacity the policy
 * normalizes by. Deterministic given the t_check.h seed. Per tenant it
 * measures, over a window (sim_window), the requests, bytes and dominant
 * cost served and the longest run of dequeues between two of its services.
 */
#ifndef FQ_SIM_H
#define FQ_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pol_fq.h"
#include "t_check.h"

#define SIM_PAR_MAX 16

struct sim_req {
    struct pol_fq_item fq;
    uint64_t actual;
};

struct sim_tenant {
    uint64_t lo, hi; /* actual bytes: uniform in [lo, hi] */
    uint32_t flags;  /* POL_FQ_GET, POL_FQ_UNSIZED */
    int depth;       /* requests kept waiting; 0 = idle */
    int waiting, running;
    uint64_t enq, done, done_bytes; /* cumulative, to check the policy's views */
    /* since sim_window() */
    uint64_t n, bytes;
    double cost;
    uint64_t first;         /* dequeues into the window at its first service; 0 = none */
    uint64_t last, max_gap; /* dequeue index of its last service; longest gap */
};

struct sim {
    const struct pol_fq_ops *ops;
    struct pol_fq *q;
    struct sim_tenant *t;
    uint32_t nt;
    double cap_ops, cap_bytes;
    int par;
    uint64_t now, deq, win; /* virtual ns; dequeues so far; at sim_window() */
    uint64_t max_visits;    /* most tenant visits one dequeue made, since sim_window() */
    struct sim_req *run[SIM_PAR_MAX];
    int rhead, rlen;
};

static inline double
sim_cost(const struct sim *s, uint64_t bytes)
{
    double a = 1.0 / s->cap_ops, b = (double)bytes / s->cap_bytes;

    return a > b ? a : b;
}

/* Every tenant starts as 1 KiB sized requests, depth 4. */
static inline void
sim_init(struct sim *s, const char *policy, const struct pol_fq_cfg *cfg, uint32_t nt)
{
    uint32_t i;

    memset(s, 0, sizeof(*s));
    s->ops = pol_fq_find(policy);
    CHECK(s->ops != NULL);
    CHECK_EQ_INT(s->ops->create(cfg, &s->q), 0);
    s->t = calloc(nt, sizeof(*s->t));
    CHECK(s->t != NULL);
    s->nt = nt;
    s->cap_ops = cfg->cap_ops > 0 ? cfg->cap_ops : POL_FQ_NOMINAL_OPS;
    s->cap_bytes = cfg->cap_bytes > 0 ? cfg->cap_bytes : POL_FQ_NOMINAL_BYTES;
    s->par = 1;
    for (i = 0; i < nt; i++) {
        s->t[i].lo = s->t[i].hi = 1024;
        s->t[i].depth = 4;
    }
}

static inline void
sim_fill(struct sim *s, uint32_t i)
{
    struct sim_tenant *t = &s->t[i];

    while (t->waiting < t->depth) {
        struct sim_req *r = calloc(1, sizeof(*r));

        CHECK(r != NULL);
        r->actual = t->lo + t_rand() % (t->hi - t->lo + 1);
        r->fq.tenant = i;
        r->fq.flags = t->flags;
        r->fq.est_bytes = (t->flags & POL_FQ_UNSIZED) ? 0 : r->actual;
        CHECK_EQ_INT(s->ops->enqueue(s->q, &r->fq, s->now), 0);
        t->waiting++;
        t->enq++;
    }
}

static inline void
sim_fill_all(struct sim *s)
{
    uint32_t i;

    for (i = 0; i < s->nt; i++) {
        sim_fill(s, i);
    }
}

static inline void
sim_complete_one(struct sim *s)
{
    struct sim_req *r = s->run[s->rhead];
    struct sim_tenant *t = &s->t[r->fq.tenant];

    s->rhead = (s->rhead + 1) % SIM_PAR_MAX;
    s->rlen--;
    s->ops->complete(s->q, &r->fq, r->actual, s->now);
    t->running--;
    t->done++;
    t->done_bytes += r->actual;
    free(r);
}

/* One dequeue (completing the oldest running request first if the server
 * is full). Checks work conservation; 0 when nothing waited. */
static inline int
sim_step(struct sim *s)
{
    struct pol_fq_item *it;
    struct sim_req *r;
    struct sim_tenant *t;
    uint64_t v0 = pol_fq_visits(s->q), waiting = pol_fq_len(s->q);
    double c;

    if (s->rlen == s->par) {
        sim_complete_one(s);
    }
    it = s->ops->dequeue(s->q, s->now);
    if (pol_fq_visits(s->q) - v0 > s->max_visits) {
        s->max_visits = pol_fq_visits(s->q) - v0;
    }
    CHECK((it == NULL) == (waiting == 0));
    if (it == NULL) {
        return 0;
    }
    r = (struct sim_req *)(void *)it;
    t = &s->t[it->tenant];
    CHECK(t->waiting > 0);
    t->waiting--;
    t->running++;
    c = sim_cost(s, r->actual);
    s->deq++;
    t->n++;
    t->bytes += r->actual;
    t->cost += c;
    if (t->first == 0) {
        t->first = s->deq - s->win;
    }
    if (t->last != 0 && s->deq - t->last > t->max_gap) {
        t->max_gap = s->deq - t->last;
    }
    t->last = s->deq;
    s->now += (uint64_t)(c * 1e9);
    s->run[(s->rhead + s->rlen) % SIM_PAR_MAX] = r;
    s->rlen++;
    sim_fill(s, it->tenant);
    return 1;
}

static inline void
sim_run(struct sim *s, uint64_t steps)
{
    while (steps-- > 0) {
        CHECK(sim_step(s));
    }
}

static inline void
sim_window(struct sim *s)
{
    uint32_t i;

    for (i = 0; i < s->nt; i++) {
        s->t[i].n = s->t[i].bytes = s->t[i].first = s->t[i].max_gap = 0;
        s->t[i].cost = 0;
    }
    s->win = s->deq;
    s->max_visits = 0;
}

/* Fills every tenant to its depth, runs warm dequeues, then measures a
 * window of steps. */
static inline void
sim_measure(struct sim *s, uint64_t warm, uint64_t steps)
{
    sim_fill_all(s);
    sim_run(s, warm);
    sim_window(s);
    sim_run(s, steps);
}

/* Tenant i stops (0) or starts keeping depth requests waiting. */
static inline void
sim_depth(struct sim *s, uint32_t i, int depth)
{
    s->t[i].depth = depth;
    s->t[i].last = 0;
    sim_fill(s, i);
}

static inline void
sim_check_view_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    struct sim *s = arg;
    struct sim_tenant *t;

    CHECK(ti->tenant < s->nt);
    t = &s->t[ti->tenant];
    CHECK_EQ_INT(ti->queued, t->waiting);
    CHECK_EQ_INT(ti->running, t->running);
    CHECK_EQ_INT(ti->arrived_requests, t->enq);
    CHECK_EQ_INT(ti->served_requests, t->done);
    CHECK_EQ_INT(ti->served_bytes, t->done_bytes);
    CHECK(ti->est_get_bytes >= 1.0);
}

/* The policy's per-tenant views agree with what the simulation did. */
static inline void
sim_check_views(struct sim *s)
{
    pol_fq_foreach_tenant(s->q, sim_check_view_cb, s);
}

/* Drains the scheduler (it must hand back every waiting item), checks the
 * views, destroys everything. */
static inline void
sim_fini(struct sim *s)
{
    uint32_t i;

    for (i = 0; i < s->nt; i++) {
        s->t[i].depth = 0;
    }
    while (sim_step(s)) {
    }
    while (s->rlen > 0) {
        sim_complete_one(s);
    }
    CHECK_EQ_INT(pol_fq_len(s->q), 0);
    sim_check_views(s);
    s->ops->destroy(s->q);
    free(s->t);
}

/* Deterministic unless T_SEED says otherwise. */
static inline void
sim_seed(void)
{
    setenv("T_SEED", "1", 0);
    t_seed();
}

#endif
