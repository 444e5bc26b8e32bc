/*
 * test_sms.c - the controller's window loop on a fake clock, against
 * simulated nodes that apply the answers as the contract says: pool views
 * built from reports, decisions routed by node, slot and tag, decisions
 * kept until applied (no second carry, one warm-up per heartbeat), empty
 * releases withheld from an instance that filled, reclaim orders delivered
 * once, memory GB-seconds and cost counters from heartbeats, the totals
 * and windows across a save and load, the compaction age answered, the
 * static pool's size, and pools of deleted tenants dropped.
 */
#include "t_check.h"

#include "cm_err.h"
#include "cm_log.h"
#include "cm_wire.h"
#include "ctl_sms.h"
#include "ctl_store.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define T0 (1000 * SEC)
#define MIB (1024ull * 1024)
#define ISZ (4 * MIB)

/* A node that keeps its instances and applies what the controller says. */
struct simnode {
    uint32_t id;
    uint64_t incarnation;
    uint32_t next_inc;
    size_t n;
    struct ctl_sms_inst inst[64];
    uint64_t warm_ns[64]; /* last invocation, on the fake clock */
    size_t ncost;
    struct ctl_sms_cost cost[4];
    uint64_t pool_gen[8]; /* by tenant id */
    /* What the last answer said. */
    struct ctl_sms_answer ans;
    uint32_t warmups; /* warm-ups applied */
    int no_memory;    /* leaves memory_bytes out of its reports */
};

static void
sim_init(struct simnode *n, uint32_t id)
{
    memset(n, 0, sizeof(*n));
    n->id = id;
    n->incarnation = 1;
    n->next_inc = 1;
}

static struct ctl_sms_inst *
sim_open(struct simnode *n, uint32_t slot, uint32_t tenant, uint64_t gen, uint64_t used,
         uint64_t now)
{
    struct ctl_sms_inst *in = &n->inst[n->n];

    memset(in, 0, sizeof(*in));
    in->slot = slot;
    in->tag = CM_WIRE_TAG(slot, n->next_inc++);
    in->tenant = tenant;
    in->gen = gen;
    in->state = used > 0 ? POL_SMS_ACTIVE : POL_SMS_WARM;
    in->used = used;
    in->put_bytes = used;
    n->warm_ns[n->n] = now;
    n->n++;
    return in;
}

static struct ctl_sms_inst *
sim_find(struct simnode *n, uint32_t slot)
{
    for (size_t i = 0; i < n->n; i++) {
        if (n->inst[i].slot == slot) {
            return &n->inst[i];
        }
    }
    return NULL;
}

static const struct ctl_sms_decision *
ans_dec(const struct ctl_sms_answer *a, uint32_t slot)
{
    for (size_t i = 0; i < a->ndec; i++) {
        if (a->dec[i].slot == slot) {
            return &a->dec[i];
        }
    }
    return NULL;
}

/* One heartbeat; with apply, the node then does what the answer says. */
static void
sim_beat(struct ctl_sms *s, struct simnode *n, const uint32_t *tenants, size_t nt, uint64_t now,
         int apply)
{
    struct ctl_sms_report r = {
        .node = n->id,
        .incarnation = n->incarnation,
        .capacity_bytes = 64 * MIB,
        .has_instances = 1,
        .instance_bytes = ISZ,
        .ninst = n->n,
        .inst = n->inst,
        .ncost = n->ncost,
        .cost = n->cost,
    };

    for (size_t i = 0; i < n->n; i++) {
        n->inst[i].warm_age_ms = (now - n->warm_ns[i]) / MS;
        r.memory_bytes += n->inst[i].state != POL_SMS_RELEASED && !n->no_memory ? ISZ : 0;
    }
    ctl_sms_answer_fini(&n->ans);
    ctl_sms_heartbeat(s, &r, tenants, nt, now, &n->ans);
    if (!apply) {
        return;
    }
    for (size_t i = 0; i < n->ans.npools; i++) {
        n->pool_gen[n->ans.pools[i].tenant] = n->ans.pools[i].gen;
    }
    for (size_t i = 0; i < n->ans.ndec; i++) {
        const struct ctl_sms_decision *d = &n->ans.dec[i];
        struct ctl_sms_inst *in = sim_find(n, d->slot);

        if (in == NULL || in->tag != d->tag) {
            continue;
        }
        if (d->warm_up) {
            n->warm_ns[in - n->inst] = now;
            n->warmups++;
        }
        if (d->gen != in->gen) {
            in->put_bytes = 0;
        }
        in->gen = d->gen;
        in->state = d->state;
        if (d->state == POL_SMS_RELEASED) {
            size_t k = (size_t)(in - n->inst);

            memmove(&n->inst[k], &n->inst[k + 1], (n->n - k - 1) * sizeof(n->inst[0]));
            memmove(&n->warm_ns[k], &n->warm_ns[k + 1], (n->n - k - 1) * sizeof(n->warm_ns[0]));
            n->n--;
        }
    }
}

static struct ctl_sms *
make(const char *policy, uint64_t interval, uint32_t m, uint32_t nn, uint32_t static_inst)
{
    struct ctl_sms_cfg c = {policy, interval, m, nn, static_inst, 3 * SEC, 0};
    struct ctl_sms *s;

    CHECK_EQ_INT(ctl_sms_create(&c, &s), 0);
    return s;
}

static const uint32_t tenants12[] = {1, 2};

/* Views from two nodes' reports; decisions go to the node, slot and tag
 * they are about, and only there. */
static void
test_routing(void)
{
    struct ctl_sms *s = make("sms", SEC, 1, 1, 0);
    struct simnode a, b;
    struct ctl_sms_snapshot snap;
    const struct ctl_sms_pool_view *p1, *p2;
    const struct ctl_sms_decision *d;
    uint32_t tag3, tag5, tag7;

    sim_init(&a, 0);
    sim_init(&b, 1);
    tag3 = sim_open(&a, 3, 1, 0, 100, T0)->tag;
    tag5 = sim_open(&a, 5, 2, 0, 0, T0)->tag;
    tag7 = sim_open(&b, 7, 1, 0, 50, T0)->tag;
    b.no_memory = 1;
    sim_beat(s, &a, tenants12, 2, T0, 0);
    sim_beat(s, &b, tenants12, 2, T0, 0);
    CHECK_EQ_INT(ctl_sms_run(s, T0), 2);
    ctl_sms_snapshot(s, T0, &snap);
    p1 = ctl_sms_snapshot_pool(&snap, 1);
    p2 = ctl_sms_snapshot_pool(&snap, 2);
    CHECK(p1 != NULL && p2 != NULL);
    CHECK_EQ_INT(p1->instances, 2);
    CHECK_EQ_INT(p1->nodes, 2);
    CHECK_EQ_INT(p1->active, 2);
    CHECK_EQ_INT(p1->memory_bytes, 2 * ISZ);
    CHECK_EQ_INT(p1->used_bytes, 150);
    CHECK_EQ_INT(p1->last.working_set_bytes, 150);
    CHECK_EQ_INT(p2->instances, 1);
    CHECK_EQ_INT(p2->warm, 1);
    CHECK_EQ_INT(p2->nodes, 1);
    CHECK_EQ_INT(ctl_sms_snapshot_node(&snap, 0)->instances, 2);
    CHECK_EQ_INT(ctl_sms_snapshot_node(&snap, 0)->slots, 16);
    CHECK_EQ_INT(ctl_sms_snapshot_node(&snap, 0)->memory_bytes, 2 * ISZ);
    CHECK_EQ_INT(ctl_sms_snapshot_node(&snap, 1)->memory_bytes, ISZ); /* counted for it */
    ctl_sms_snapshot_fini(&snap);
    /* Nothing changes within the interval: no decisions. */
    sim_beat(s, &a, tenants12, 2, T0 + 50 * MS, 0);
    CHECK_EQ_INT(a.ans.ndec, 0);
    CHECK_EQ_INT(a.ans.npools, 2);
    CHECK_EQ_STR(a.ans.cfg.policy, "sms");
    CHECK_EQ_INT(a.ans.cfg.interval_ms, 1000);
    CHECK_EQ_INT(a.ans.cfg.warm_active_ms, 100);

    /* The window moves: tenant 1's instances were written and have room,
     * so they are carried into generation 1; tenant 2's holds nothing. */
    CHECK_EQ_INT(ctl_sms_run(s, T0 + SEC), 2);
    sim_beat(s, &a, tenants12, 2, T0 + SEC + 10 * MS, 0);
    sim_beat(s, &b, tenants12, 2, T0 + SEC + 10 * MS, 0);
    CHECK_EQ_INT(a.ans.pools[0].gen, 1);
    CHECK_EQ_INT(a.ans.ndec, 2);
    d = ans_dec(&a.ans, 3);
    CHECK(d != NULL && d->tag == tag3 && d->gen == 1 && d->state == POL_SMS_ACTIVE);
    d = ans_dec(&a.ans, 5);
    CHECK(d != NULL && d->tag == tag5 && d->state == POL_SMS_RELEASED &&
          d->reason == POL_SMS_EMPTY && d->tenant == 2);
    CHECK(ans_dec(&a.ans, 7) == NULL);
    CHECK_EQ_INT(b.ans.ndec, 1);
    d = ans_dec(&b.ans, 7);
    CHECK(d != NULL && d->tag == tag7 && d->gen == 1);
    /* Sent once: the next answers carry them no more. */
    sim_beat(s, &a, tenants12, 2, T0 + SEC + 20 * MS, 0);
    CHECK_EQ_INT(a.ans.ndec, 0);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_answer_fini(&b.ans);
    ctl_sms_destroy(s);
}

/* A decision about an instance replaced since the view is never sent; an
 * empty instance that filled since is not released. */
static void
test_stale_decisions(void)
{
    struct ctl_sms *s = make("sms", SEC, 1, 1, 0);
    struct simnode a;
    struct ctl_sms_inst *in3;

    sim_init(&a, 0);
    in3 = sim_open(&a, 3, 1, 0, 0, T0);
    sim_open(&a, 4, 1, 0, 0, T0);
    sim_beat(s, &a, tenants12, 2, T0, 0);
    ctl_sms_run(s, T0);
    ctl_sms_run(s, T0 + SEC);      /* both empty and a generation old: released */
    in3->tag = CM_WIRE_TAG(3, 99); /* slot 3 reclaimed and opened again */
    a.inst[1].used = 10;           /* slot 4 got a chunk */
    sim_beat(s, &a, tenants12, 2, T0 + SEC + 10 * MS, 0);
    CHECK_EQ_INT(a.ans.ndec, 0);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
}

/* Written during generation 0, then idle: active, degraded, released, at
 * the generations M and N say, and its memory goes. The carried generation
 * and the warm-ups are decided once though the ticks run faster than the
 * heartbeats. */
static void
test_lifecycle(void)
{
    struct ctl_sms *s = make("sms", SEC, 2, 2, 0);
    struct simnode a;
    const uint32_t one[] = {1};
    uint64_t degraded_at = 0, released_at = 0, t;
    uint32_t beats = 0;
    struct ctl_sms_snapshot snap;

    sim_init(&a, 0);
    sim_open(&a, 1, 1, 0, 1000, T0);
    for (t = T0; t <= T0 + 8 * SEC; t += 50 * MS) {
        ctl_sms_run(s, t);
        if ((t - T0) % (250 * MS) != 0) {
            continue;
        }
        sim_beat(s, &a, one, 1, t, 1);
        beats++;
        for (size_t i = 0; i < a.ans.ndec; i++) {
            /* Carried once into generation 1, never again. */
            CHECK(a.ans.dec[i].gen <= 1);
        }
        if (a.n == 1 && a.inst[0].state == POL_SMS_DEGRADED && degraded_at == 0) {
            degraded_at = t;
            CHECK_EQ_INT(a.ans.pools[0].gen, 3); /* age 2 = M */
        }
        if (a.n == 0 && released_at == 0) {
            released_at = t;
            CHECK_EQ_INT(a.ans.pools[0].gen, 5); /* age 4 = M + N */
        }
    }
    CHECK(degraded_at >= T0 + 3 * SEC && degraded_at <= T0 + 3 * SEC + 250 * MS);
    CHECK(released_at >= T0 + 5 * SEC && released_at <= T0 + 5 * SEC + 250 * MS);
    /* One warm-up per heartbeat at most: active ones every 100 ms, but the
     * node hears at every heartbeat (250 ms), and degraded ones every 500 ms. */
    CHECK(a.warmups >= 12 && a.warmups <= beats);
    sim_beat(s, &a, one, 1, t, 1);
    ctl_sms_snapshot(s, t, &snap);
    CHECK_EQ_INT(ctl_sms_snapshot_pool(&snap, 1)->instances, 0);
    CHECK_EQ_INT(ctl_sms_snapshot_pool(&snap, 1)->memory_bytes, 0);
    CHECK(ctl_sms_snapshot_pool(&snap, 1)->gen >= 8);
    ctl_sms_snapshot_fini(&snap);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
}

static void
test_reclaim(void)
{
    struct ctl_sms *s = make("sms", SEC, 6, 12, 0);
    struct simnode a;
    struct ctl_sms_inst *what;
    size_t n;

    sim_init(&a, 2);
    sim_open(&a, 3, 1, 0, 10, T0);
    sim_open(&a, 8, 2, 0, 10, T0);
    sim_beat(s, &a, tenants12, 2, T0, 0);
    CHECK_EQ_INT(ctl_sms_reclaim(s, 2, 0, 9, &what, &n), CM_E_NOTFOUND);
    CHECK(what == NULL && n == 0);
    CHECK_EQ_INT(ctl_sms_reclaim(s, 2, 0, 8, &what, &n), 0);
    CHECK(n == 1 && what[0].slot == 8 && what[0].tenant == 2 && what[0].tag == a.inst[1].tag);
    free(what);
    CHECK_EQ_INT(ctl_sms_reclaim(s, 2, 0, 3, &what, &n), 0);
    free(what);
    sim_beat(s, &a, tenants12, 2, T0 + 100 * MS, 0);
    CHECK(!a.ans.reclaim_all && a.ans.nreclaim == 2);
    CHECK(a.ans.reclaim[0] == 3 && a.ans.reclaim[1] == 8);
    sim_beat(s, &a, tenants12, 2, T0 + 200 * MS, 0);
    CHECK(!a.ans.reclaim_all && a.ans.nreclaim == 0); /* once */
    CHECK_EQ_INT(ctl_sms_reclaim(s, 2, 1, 0, &what, &n), 0);
    CHECK_EQ_INT(n, 2);
    free(what);
    sim_beat(s, &a, tenants12, 2, T0 + 300 * MS, 0);
    CHECK(a.ans.reclaim_all);
    /* A node not heard from yet gets its order when it comes. */
    CHECK_EQ_INT(ctl_sms_reclaim(s, 7, 1, 0, &what, &n), 0);
    CHECK_EQ_INT(n, 0);
    free(what);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
}

/* Memory x time between reports (time passed in), at most the node
 * timeout per report; counters by their growth, restarts included. */
static void
test_cost(void)
{
    struct ctl_sms *s = make("sms", 600 * SEC, 6, 12, 0);
    struct simnode a;
    struct ctl_sms_snapshot snap;
    const struct ctl_sms_pool_view *p;
    const double gbs = (double)ISZ / (1024.0 * 1024 * 1024); /* one instance-second */

    sim_init(&a, 0);
    sim_open(&a, 1, 1, 0, 10, T0);
    sim_open(&a, 2, 1, 0, 10, T0);
    sim_open(&a, 3, 2, 0, 10, T0);
    a.ncost = 1;
    a.cost[0].tenant = 1;
    a.cost[0].c.v[CTL_CC_WARMUPS] = 5;
    a.cost[0].c.v[CTL_CC_COS_PUTS] = 7;
    sim_beat(s, &a, tenants12, 2, T0, 0); /* the first report charges nothing */
    a.inst[2].state = POL_SMS_RELEASED;   /* tenant 2's goes */
    a.cost[0].c.v[CTL_CC_WARMUPS] = 8;
    sim_beat(s, &a, tenants12, 2, T0 + 2 * SEC, 0);
    ctl_sms_snapshot(s, T0 + 2 * SEC, &snap);
    p = ctl_sms_snapshot_pool(&snap, 1);
    CHECK_NEAR(p->cost.memory_gb_seconds, 2 * 2 * gbs, 1e-12);
    CHECK_EQ_INT(p->cost.c.v[CTL_CC_WARMUPS], 8);
    CHECK_EQ_INT(p->cost.c.v[CTL_CC_COS_PUTS], 7);
    CHECK_NEAR(ctl_sms_snapshot_pool(&snap, 2)->cost.memory_gb_seconds, 2 * gbs, 1e-12);
    ctl_sms_snapshot_fini(&snap);
    /* Silent for 10 s: at most the node timeout (3 s) is charged; tenant
     * 2's released instance costs nothing any more. */
    sim_beat(s, &a, tenants12, 2, T0 + 12 * SEC, 0);
    ctl_sms_snapshot(s, T0 + 12 * SEC, &snap);
    CHECK_NEAR(ctl_sms_snapshot_pool(&snap, 1)->cost.memory_gb_seconds, (4 + 2 * 3) * gbs, 1e-12);
    CHECK_NEAR(ctl_sms_snapshot_pool(&snap, 2)->cost.memory_gb_seconds, 2 * gbs, 1e-12);
    ctl_sms_snapshot_fini(&snap);
    /* A run after the timeout forgets the silent node's report: nothing is
     * charged for the time it was silent. */
    ctl_sms_run(s, T0 + 16 * SEC);
    sim_beat(s, &a, tenants12, 2, T0 + 20 * SEC, 0);
    ctl_sms_snapshot(s, T0 + 20 * SEC, &snap);
    CHECK_NEAR(ctl_sms_snapshot_pool(&snap, 1)->cost.memory_gb_seconds, 10 * gbs, 1e-12);
    ctl_sms_snapshot_fini(&snap);
    /* The node restarts: its counters start again from 0, all of it new. */
    a.incarnation = 2;
    a.cost[0].c.v[CTL_CC_WARMUPS] = 2;
    a.cost[0].c.v[CTL_CC_COS_PUTS] = 0;
    sim_beat(s, &a, tenants12, 2, T0 + 21 * SEC, 0);
    ctl_sms_snapshot(s, T0 + 21 * SEC, &snap);
    p = ctl_sms_snapshot_pool(&snap, 1);
    CHECK_EQ_INT(p->cost.c.v[CTL_CC_WARMUPS], 10);
    CHECK_EQ_INT(p->cost.c.v[CTL_CC_COS_PUTS], 7);
    /* ... and no memory was charged across the restart. */
    CHECK_NEAR(p->cost.memory_gb_seconds, 10 * gbs, 1e-12);
    ctl_sms_snapshot_fini(&snap);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
}

/* Totals, the counters last folded and the windows survive a save and a
 * load; the window moves on by the wall time that passed. */
static void
test_persist(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_sms *s = make("sms", SEC, 6, 12, 0);
    struct simnode a;
    struct ctl_sms_snapshot snap;
    const struct ctl_sms_pool_view *p;
    double mem;
    uint64_t wall = 1800000000000ull;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    sim_init(&a, 0);
    sim_open(&a, 1, 1, 0, 10, T0);
    a.ncost = 1;
    a.cost[0].tenant = 1;
    a.cost[0].c.v[CTL_CC_COS_GETS] = 40;
    for (uint64_t t = T0; t < T0 + 3 * SEC; t += SEC) {
        sim_beat(s, &a, tenants12, 2, t, 1);
        ctl_sms_run(s, t);
    }
    ctl_sms_run(s, T0 + 3 * SEC + 300 * MS); /* generation 3, 300 ms old */
    sim_beat(s, &a, tenants12, 2, T0 + 3 * SEC + 300 * MS, 1);
    ctl_sms_snapshot(s, T0 + 3 * SEC + 300 * MS, &snap);
    p = ctl_sms_snapshot_pool(&snap, 1);
    CHECK_EQ_INT(p->gen, 3);
    mem = p->cost.memory_gb_seconds;
    CHECK(mem > 0);
    ctl_sms_snapshot_fini(&snap);
    CHECK_EQ_INT(ctl_sms_save(s, store, T0 + 3 * SEC + 300 * MS, wall), 0);
    ctl_sms_destroy(s);
    ctl_store_close(store);

    /* 2.5 s later, on another monotonic origin. */
    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    s = make("sms", SEC, 6, 12, 0);
    CHECK_EQ_INT(ctl_sms_load(s, store, 5 * SEC, wall + 2500), 0);
    ctl_sms_snapshot(s, 5 * SEC, &snap);
    p = ctl_sms_snapshot_pool(&snap, 1);
    CHECK(p != NULL);
    CHECK_EQ_INT(p->gen, 5);
    CHECK_EQ_INT(p->gen_age_ms, 800);
    CHECK_NEAR(p->cost.memory_gb_seconds, mem, 1e-9);
    CHECK_EQ_INT(p->cost.c.v[CTL_CC_COS_GETS], 40);
    CHECK_EQ_INT(p->cost_age_ms, 3300 + 2500);
    ctl_sms_snapshot_fini(&snap);
    /* The same node incarnation goes on counting: only the growth is new. */
    a.cost[0].c.v[CTL_CC_COS_GETS] = 45;
    sim_beat(s, &a, tenants12, 2, 5 * SEC, 0);
    ctl_sms_snapshot(s, 5 * SEC, &snap);
    CHECK_EQ_INT(ctl_sms_snapshot_pool(&snap, 1)->cost.c.v[CTL_CC_COS_GETS], 45);
    ctl_sms_snapshot_fini(&snap);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* The compaction age the controller is given is the one every answer
 * carries to the nodes (they run on_read with it); 0 keeps the policy's
 * default, and one past the bound is refused. */
static void
test_compact_age(void)
{
    struct ctl_sms_cfg c = {"sms", SEC, 6, 12, 0, 3 * SEC, 17};
    struct ctl_sms *s;
    struct simnode a;

    sim_init(&a, 0);
    CHECK_EQ_INT(ctl_sms_create(&c, &s), 0);
    sim_beat(s, &a, tenants12, 2, T0, 0);
    CHECK_EQ_INT(a.ans.cfg.compact_age, 17);
    CHECK_EQ_INT(a.ans.cfg.active, 6);
    CHECK_EQ_INT(a.ans.cfg.degraded, 12);
    ctl_sms_destroy(s);
    s = make("sms", SEC, 6, 12, 0);
    sim_beat(s, &a, tenants12, 2, T0, 0);
    CHECK_EQ_INT(a.ans.cfg.compact_age, 15);
    ctl_sms_destroy(s);
    c.compact_age = POL_SMS_INTERVALS_MAX + 1;
    CHECK_EQ_INT(ctl_sms_create(&c, &s), CM_E_BADARG);
    ctl_sms_answer_fini(&a.ans);
}

/* "static": the pool never moves; its size per node is given or the
 * node's slots shared by the tenants. */
static void
test_static(void)
{
    struct ctl_sms *s = make("static", SEC, 6, 12, 0);
    struct ctl_sms_cfg bad = {"nope", SEC, 6, 12, 0, SEC, 0};
    struct ctl_sms *x;
    struct simnode a;
    const uint32_t four[] = {1, 2, 3, 4};

    sim_init(&a, 0);
    sim_open(&a, 1, 1, 0, 10, T0);
    sim_beat(s, &a, tenants12, 2, T0, 1);
    CHECK_EQ_STR(a.ans.cfg.policy, "static");
    CHECK_EQ_INT(a.ans.cfg.max_instances, 8); /* 16 slots, 2 tenants */
    sim_beat(s, &a, four, 4, T0, 1);
    CHECK_EQ_INT(a.ans.cfg.max_instances, 4);
    for (uint64_t t = T0; t < T0 + 30 * SEC; t += SEC) {
        ctl_sms_run(s, t);
        sim_beat(s, &a, four, 4, t, 1);
        CHECK_EQ_INT(a.ans.pools[0].gen, 0);
        CHECK(a.n == 1 && a.inst[0].state == POL_SMS_ACTIVE);
    }
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
    s = make("static", SEC, 6, 12, 3);
    sim_beat(s, &a, tenants12, 2, T0, 0);
    CHECK_EQ_INT(a.ans.cfg.max_instances, 3);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
    CHECK_EQ_INT(ctl_sms_create(&bad, &x), CM_E_BADARG);
    bad.policy = "sms";
    bad.interval_ns = 1000;
    CHECK_EQ_INT(ctl_sms_create(&bad, &x), CM_E_BADARG);
    bad.interval_ns = SEC;
    bad.active = 0;
    CHECK_EQ_INT(ctl_sms_create(&bad, &x), CM_E_BADARG);
}

/* A deleted tenant's pool stays while a node reports its instances. */
static void
test_prune(void)
{
    struct ctl_sms *s = make("sms", SEC, 6, 12, 0);
    struct simnode a;
    struct ctl_sms_snapshot snap;
    const uint32_t one[] = {1};

    sim_init(&a, 0);
    sim_open(&a, 1, 2, 0, 10, T0);
    sim_beat(s, &a, one, 1, T0, 0);
    ctl_sms_run(s, T0);
    ctl_sms_snapshot(s, T0, &snap);
    CHECK(ctl_sms_snapshot_pool(&snap, 2) != NULL);
    CHECK_EQ_INT(a.ans.npools, 1); /* only listed tenants go to the nodes */
    ctl_sms_snapshot_fini(&snap);
    a.n = 0;
    sim_beat(s, &a, one, 1, T0 + SEC, 0);
    ctl_sms_run(s, T0 + SEC);
    ctl_sms_snapshot(s, T0 + SEC, &snap);
    CHECK(ctl_sms_snapshot_pool(&snap, 2) == NULL);
    CHECK(ctl_sms_snapshot_pool(&snap, 1) != NULL);
    ctl_sms_snapshot_fini(&snap);
    ctl_sms_answer_fini(&a.ans);
    ctl_sms_destroy(s);
}

int
main(void)
{
    cm_log_init("test", CM_LOG_WARN);
    test_routing();
    test_stale_decisions();
    test_lifecycle();
    test_reclaim();
    test_cost();
    test_persist();
    test_compact_age();
    test_static();
    test_prune();
    printf("ok\n");
    return 0;
}
