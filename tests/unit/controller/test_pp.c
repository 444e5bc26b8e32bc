/*
 * test_pp.c - unit.controller.pp: placement rows as stored state (made by
 * hash, the epoch, tenants added and dropped, short rows filled, a reopen,
 * the record codec), the trigger's hysteresis, the utilisation of a view,
 * the acceptance rule, the demand of requests in flight, a rebalance
 * through the loop thread that is stored, small reads modelled on the
 * small-object copies, and a node removed (its positions only, then
 * removed once the gateway has migrated).
 */
#include "t_check.h"

#include <math.h>

#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "ctl_place.h"
#include "ctl_pp.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define MS 1000000ull

static const struct ctl_state_cfg scfg = {16, 1, 1, 600000 * MS, NULL};

static struct ctl_pp_cfg
pp_cfg(const char *policy)
{
    struct ctl_pp_cfg c = {
        .policy = policy,
        .partitions = 16,
        .headroom = 0.9,
        .interval_ms = 3600000, /* only rebalances run */
        .checks = 3,
        .cooldown_ms = 1000,
        .budget_ms = 2000,
        .gw_timeout_ms = 600000,
        .latency_ms = 100,
        .nominal_ops = 100000,
        .nominal_bytes = 1e9,
    };
    return c;
}

static void
heartbeat(struct ctl_state *st, uint32_t id, double cap_ops)
{
    struct ctl_hb hb;

    memset(&hb, 0, sizeof(hb));
    hb.node.id = id;
    snprintf(hb.node.addr, sizeof(hb.node.addr), "127.0.0.1:%u", 9500 + id);
    hb.node.incarnation = 1;
    hb.cap_ops = cap_ops;
    CHECK_EQ_INT(ctl_state_heartbeat(st, &hb, cm_now_ns()), 0);
}

/* The rows pp holds for st's tenants now (after a sync). */
static void
rows_now(struct ctl_pp *pp, struct ctl_state *st, struct ctl_pp_rows *r)
{
    struct ctl_snapshot s;

    ctl_state_snapshot(st, cm_now_ns(), &s);
    CHECK_EQ_INT(ctl_pp_rows(pp, &s, r), 0);
    ctl_snapshot_fini(&s);
}

static int
rows_equal(const struct ctl_pp_rows *a, const struct ctl_pp_rows *b)
{
    if (a->n != b->n) {
        return 0;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct ctl_pp_trows *x = &a->t[i], *y = &b->t[i];

        if (x->tenant != y->tenant || x->parts != y->parts || x->width != y->width ||
            memcmp(x->len, y->len, x->parts * sizeof(*x->len)) != 0 ||
            memcmp(x->ids, y->ids, (size_t)x->parts * x->width * sizeof(*x->ids)) != 0 ||
            memcmp(x->row_epoch, y->row_epoch, x->parts * sizeof(*x->row_epoch)) != 0) {
            return 0;
        }
    }
    return 1;
}

/* Every row of r is the hash row over nodes 0..nnodes-1. */
static void
check_hash_rows(const struct ctl_pp_rows *r, uint32_t nnodes)
{
    uint32_t ids[16], row[POL_PP_MAX_WIDTH];

    for (uint32_t i = 0; i < nnodes; i++) {
        ids[i] = i;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct ctl_pp_trows *t = &r->t[i];

        for (uint32_t p = 0; p < t->parts; p++) {
            size_t n = ctl_place_row(t->tenant, p, ids, nnodes, t->width, row);

            CHECK_EQ_INT((int)t->len[p], (int)n);
            CHECK(memcmp(&t->ids[(size_t)p * t->width], row, n * sizeof(*row)) == 0);
        }
    }
}

static void
test_store(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_pp *pp;
    struct ctl_pp_cfg c = pp_cfg("milp");
    struct ctl_pp_rows r0, r1, r2;
    char key[CTL_KEY_LEN + 1];
    uint64_t e;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &scfg, &st), 0);
    /* Two tenants before any node: their rows are empty, made by hash. */
    CHECK_EQ_INT(ctl_state_tenant_create(st, "a", 1, 1, 1, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "b", 1, 2, 1, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
    rows_now(pp, st, &r0);
    CHECK_EQ_INT((int)r0.n, 2);
    CHECK_EQ_INT((int)r0.epoch, 1);
    CHECK_EQ_INT((int)r0.t[0].len[0], 0);
    ctl_pp_rows_fini(&r0);
    /* Nodes join: the short hash rows fill up, in one more epoch. */
    for (uint32_t i = 0; i < 6; i++) {
        heartbeat(st, i, 0);
    }
    rows_now(pp, st, &r0);
    CHECK_EQ_INT((int)r0.epoch, 2);
    check_hash_rows(&r0, 6);
    CHECK_EQ_INT((int)r0.t[1].width, 3);
    CHECK_EQ_INT((int)r0.t[1].row_epoch[5], 2);
    /* Asked again: nothing changes. A seventh node joins: rows are full,
     * nothing moves, the epoch stays. */
    heartbeat(st, 6, 0);
    rows_now(pp, st, &r1);
    CHECK(rows_equal(&r0, &r1));
    CHECK_EQ_INT((int)r1.epoch, 2);
    ctl_pp_rows_fini(&r1);
    /* A new tenant: rows over the seven nodes, one epoch. */
    CHECK_EQ_INT(ctl_state_tenant_create(st, "c", 1, 1, 1, 0, 0, key, NULL), 0);
    rows_now(pp, st, &r1);
    CHECK_EQ_INT((int)r1.n, 3);
    CHECK_EQ_INT((int)r1.epoch, 3);
    {
        struct ctl_pp_rows only = {.n = 1, .t = &r1.t[2]};
        check_hash_rows(&only, 7);
    }
    ctl_pp_rows_fini(&r1);
    /* A tenant deleted: its rows go, one epoch. */
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "a"), 0);
    rows_now(pp, st, &r1);
    CHECK_EQ_INT((int)r1.n, 2);
    CHECK_EQ_INT((int)r1.epoch, 4);
    e = r1.epoch;
    /* Reopened: the same rows and epoch from the store. */
    ctl_pp_destroy(pp);
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
    rows_now(pp, st, &r2);
    CHECK(rows_equal(&r1, &r2));
    CHECK_EQ_INT((int)r2.epoch, (int)e);
    ctl_pp_rows_fini(&r0);
    ctl_pp_rows_fini(&r1);
    ctl_pp_rows_fini(&r2);
    ctl_pp_destroy(pp);
    /* An unknown policy is refused. */
    c.policy = "nope";
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), CM_E_CONFIG);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

static void
test_codec(void)
{
    struct ctl_pp_trows r, d;
    size_t len;
    char *text;

    memset(&r, 0, sizeof(r));
    r.tenant = 9;
    r.width = 3;
    r.k = 1;
    r.parts = 2;
    r.len = (uint32_t[]){3, 2};
    r.ids = (uint32_t[]){4, 1, 7, 2, 5, 0};
    r.row_epoch = (uint64_t[]){5, 1ull << 40};
    r.by_hash = (uint8_t[]){0, 1};
    text = ctl_pp_encode(&r, &len);
    CHECK(text != NULL && len == strlen(text));
    CHECK_EQ_INT(ctl_pp_decode(9, text, len, &d), 0);
    CHECK_EQ_INT((int)d.width, 3);
    CHECK_EQ_INT((int)d.parts, 2);
    CHECK_EQ_INT((int)d.len[1], 2);
    CHECK(memcmp(d.ids, (uint32_t[]){4, 1, 7}, 3 * sizeof(uint32_t)) == 0);
    CHECK(d.ids[3] == 2 && d.ids[4] == 5);
    CHECK(d.row_epoch[1] == 1ull << 40 && d.by_hash[1] == 1 && d.by_hash[0] == 0);
    ctl_pp_trows_fini(&d);
    free(text);
    static const char *const bad[] = {
        "",
        "[]",
        "{\"width\":2,\"k\":1,\"rows\":[[1,1]],\"row_epochs\":[1],\"by_hash\":[1]}",
        "{\"width\":2,\"k\":1,\"rows\":[[1,2,3]],\"row_epochs\":[1],\"by_hash\":[1]}",
        "{\"width\":2,\"k\":3,\"rows\":[[1,2]],\"row_epochs\":[1],\"by_hash\":[1]}",
        "{\"width\":99,\"k\":1,\"rows\":[[1]],\"row_epochs\":[1],\"by_hash\":[1]}",
        "{\"width\":2,\"k\":1,\"rows\":[[1,2]],\"row_epochs\":[],\"by_hash\":[1]}",
        "{\"width\":2,\"k\":1,\"rows\":[[1,-2]],\"row_epochs\":[1],\"by_hash\":[1]}",
        "{\"width\":2,\"k\":1,\"rows\":[],\"row_epochs\":[],\"by_hash\":[]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(ctl_pp_decode(1, bad[i], strlen(bad[i]), &d), CM_E_CONFIG);
    }
    /* An older record's shares are ignored. */
    {
        const char *t = "{\"width\":2,\"k\":1,\"rows\":[[1,2]],\"row_epochs\":[1],\"by_hash\":[0],"
                        "\"shares\":[[0.9,0.9]]}";
        CHECK_EQ_INT(ctl_pp_decode(1, t, strlen(t), &d), 0);
        CHECK(d.len[0] == 2 && d.ids[1] == 2);
        ctl_pp_trows_fini(&d);
    }
}

static void
test_trigger(void)
{
    struct ctl_pp_trig t = {0};
    struct ctl_pp_trig_cfg c = {0.9, 3, 10000};
    uint64_t now = 1000;

    /* Over for three checks in a row, not two, and an under resets. */
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 1.2, 0, now), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 1.2, 0, now += 5000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 0.5, 0, now += 5000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 1.2, 0, now += 5000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 1.2, 0, now += 5000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 0.91, 0, now += 5000), 1);
    ctl_pp_trig_tried(&t, &c, now);
    /* Quiet for the cool-down, however over. */
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 3000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 3000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 3000), 0);
    /* A migration runs: the cool-down counts from when it was last seen. */
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 1, now += 3000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 1, now += 30000), 0);
    uint64_t ended = now;
    while (now + 2000 < ended + 10000) {
        CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 2000), 0);
    }
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 2000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 2000), 0);
    CHECK_EQ_INT(ctl_pp_trig_step(&t, &c, 5, 0, now += 2000), 1);
}

static void
test_util(void)
{
    struct pol_pp_node nodes[3] = {{1, 1, {100, 1e9}}, {2, 1, {100, 1e9}}, {3, 1, {100, 1e9}}};
    struct pol_pp_tenant tenants[2] = {{7, 1}, {8, 1}};
    struct pol_pp_part parts[2] = {{7, 0, 2, 1, {90, 0}, 0}, {8, 0, 1, 1, {0, 0}, 0}};
    struct pol_pp_part stripe = {7, 0, 3, 2, {90, 0}, 0};
    uint32_t rows[3] = {1, 2, 1}, len[2] = {2, 1}, srow[3] = {1, 2, 3}, slen = 3;
    double u;
    struct pol_pp_view v = {nodes, 2, parts, 2, tenants, 2, rows, len, 0.9, NULL, 0};

    /* 90 req/s split evenly over two nodes of 100: copies are read alike. */
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, 0.45, 1e-9);
    /* Node 2 down: all of it on node 1, as much as DRF owes there (it fills
     * POL_PP_DRF_FILL x u of the one up node: 81). */
    nodes[1].up = 0;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, POL_PP_DRF_FILL * 0.9, 1e-9);
    /* Demand over the cluster: DRF owes at most that, so the utilisation
     * stays below the headroom, not 3. */
    parts[0].demand[POL_PP_REQ] = 300;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, POL_PP_DRF_FILL * 0.9, 1e-9);
    /* Two tenants over one node: each owed half. */
    parts[1].demand[POL_PP_REQ] = 300;
    nodes[1].up = 1;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK(u > 0.9);
    /* A 2+1 stripe on nodes 1-3: reads ask its two data positions, 45 each,
     * none its parity; with node 1 down, the parity holder stands in. */
    v.parts = &stripe;
    v.nparts = 1;
    v.ntenants = 1;
    v.nnodes = 3;
    v.cur_rows = srow;
    v.cur_len = &slen;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, 0.45, 1e-9);
    nodes[0].up = 0;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, 0.45, 1e-9);
    nodes[1].up = 0;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), 0);
    CHECK_NEAR(u, POL_PP_DRF_FILL * 0.9, 1e-9); /* one holder left: it serves all DRF owes */
    v.headroom = 0;
    CHECK_EQ_INT(ctl_pp_util(&v, &u), CM_E_BADARG);
}

/* Partition 2 of tenant 1 and partition 3 of tenant 1 + other, each at
 * req/s of 10 B and the given requests in flight, scaled at 100 ms; scaled_d
 * gets partition 2. Returns its req. */
static struct ctl_pp_demand scaled_d;

static double
scaled(double inflight, double inflight_other, double req, uint32_t other)
{
    struct ctl_pp_demand two[2] = {
        {1, 2, req, req * 10, 0, inflight},
        {1 + other, 3, req, req * 10, 0, inflight_other},
    };

    ctl_pp_demand_scale(two, 2, 100);
    scaled_d = two[0];
    return scaled_d.req;
}

static void
test_accept_demand(void)
{
    struct pol_pp_stats s = {0};

    s.parts_moved = 2;
    s.max_util[POL_PP_REQ] = 0.85;
    CHECK(ctl_pp_accept(1.5, &s, 0.9));
    CHECK(!ctl_pp_accept(0.8, &s, 0.9)); /* nothing over: nothing moves */
    s.max_util[POL_PP_REQ] = 1.2;
    CHECK(ctl_pp_accept(1.5, &s, 0.9));   /* over still, but much better */
    CHECK(!ctl_pp_accept(1.22, &s, 0.9)); /* not enough better */
    s.parts_moved = 0;
    s.max_util[POL_PP_REQ] = 0.5;
    CHECK(!ctl_pp_accept(1.5, &s, 0.9));

    /* 100 req/s with 5 in flight (50 ms each): served as asked; another
     * tenant's 40 in flight do not count. */
    CHECK_NEAR(scaled(5, 40, 100, 1), 100, 1e-9);
    CHECK_NEAR(scaled_d.bytes, 1000, 1e-9);
    /* 40 in flight: 400 ms each; they would take 400 req/s. */
    CHECK_NEAR(scaled(40, 5, 100, 1), 400, 1e-9);
    CHECK_NEAR(scaled_d.bytes, 4000, 1e-9);
    /* The same tenant's other partition, at the same 100 req/s with 20 in
     * flight (on less busy nodes): 600 req/s asked, split as answered. */
    CHECK_NEAR(scaled(40, 20, 100, 0), 300, 1e-9);
    CHECK_NEAR(scaled_d.bytes, 3000, 1e-9);
    /* Nothing answered yet: each partition asks its own backlog. */
    CHECK_NEAR(scaled(40, 20, 0, 0), 400, 1e-9);
    CHECK_NEAR(scaled_d.bytes, 0, 1e-9);
    /* latency 0: as reported. */
    scaled_d.req = 100;
    scaled_d.inflight = 40;
    ctl_pp_demand_scale(&scaled_d, 1, 0);
    CHECK_NEAR(scaled_d.req, 100, 1e-9);
}

/* A tenant's hot partitions all on two of four capped nodes: a rebalance
 * spreads them, stores the rows with a new epoch; "hash" never moves. */
static void
test_rebalance(const char *policy)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_pp *pp;
    struct ctl_pp_cfg c = pp_cfg(policy);
    struct ctl_pp_rows r0, r1;
    struct ctl_pp_result res;
    struct ctl_pp_demand dem[16];
    struct ctl_pp_report rep = {"gw1", 0, dem, {0}};
    char key[CTL_KEY_LEN + 1];
    size_t n = 0;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &scfg, &st), 0);
    for (uint32_t i = 0; i < 4; i++) {
        heartbeat(st, i, 100);
    }
    CHECK_EQ_INT(ctl_state_tenant_create(st, "a", 1, 1, 0, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
    CHECK_EQ_INT(ctl_pp_start(pp), 0);
    rows_now(pp, st, &r0);
    /* The partitions on the first row's node, 60 req/s each. */
    for (uint32_t p = 0; p < 16 && n < 3; p++) {
        if (r0.t[0].ids[p] == r0.t[0].ids[0]) {
            dem[n++] = (struct ctl_pp_demand){r0.t[0].tenant, p, 60, 6000, 1000, 0};
        }
    }
    CHECK(n >= 2);
    rep.n = n;
    CHECK_EQ_INT(ctl_pp_report(pp, &rep, cm_now_ns()), 0);
    ctl_pp_rebalance(pp, &res);
    CHECK_EQ_INT(res.rc, 0);
    rows_now(pp, st, &r1);
    if (strcmp(policy, "hash") == 0) {
        CHECK(!res.changed);
        CHECK(rows_equal(&r0, &r1));
        CHECK_EQ_STR(res.solver, "hash");
    } else {
        uint32_t seen[4] = {0};

        CHECK(res.changed);
        CHECK(res.util_before > 0.9 && res.util_after <= 0.9 + 1e-9);
        CHECK(r1.epoch == r0.epoch + 1 && res.epoch == r1.epoch);
        for (size_t i = 0; i < n; i++) {
            seen[r1.t[0].ids[dem[i].partition]]++;
            CHECK(r1.t[0].by_hash[dem[i].partition] ||
                  r1.t[0].row_epoch[dem[i].partition] <= r1.epoch);
        }
        for (int i = 0; i < 4; i++) {
            CHECK(seen[i] <= 1); /* 60 req/s each: one per node of 90 */
        }
        /* Stored: a reopen has the same rows. */
        ctl_pp_destroy(pp);
        CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
        ctl_pp_rows_fini(&r0);
        rows_now(pp, st, &r0);
        CHECK(rows_equal(&r0, &r1));
        /* Nothing over any more: a rebalance moves nothing. */
        CHECK_EQ_INT(ctl_pp_start(pp), 0);
        CHECK_EQ_INT(ctl_pp_report(pp, &rep, cm_now_ns()), 0);
        ctl_pp_rebalance(pp, &res);
        CHECK_EQ_INT(res.rc, 0);
        CHECK(!res.changed && res.epoch == r1.epoch);
    }
    {
        struct ctl_pp_status s;

        ctl_pp_status(pp, cm_now_ns(), &s);
        CHECK_EQ_INT((int)s.gateways, 1);
        CHECK_EQ_STR(s.policy, policy);
        /* The gateway reported no finished pass (done epoch 0) while rows
         * exist: it counts as migrating, the rows changed since as moving. */
        CHECK(s.migrating && s.moving_partitions == 16);
    }
    ctl_pp_rows_fini(&r0);
    ctl_pp_rows_fini(&r1);
    ctl_pp_destroy(pp);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* The membership of node id in st now. */
static int
retire_now(struct ctl_state *st, uint32_t id)
{
    struct ctl_snapshot s;
    int r = -1;

    ctl_state_snapshot(st, cm_now_ns(), &s);
    for (size_t i = 0; i < s.nnodes; i++) {
        r = s.nodes[i].n.id == id ? s.nodes[i].n.retire : r;
    }
    ctl_snapshot_fini(&s);
    return r;
}

/* A node removed: the rows leave it at its own positions only (the others
 * keep their nodes and row epochs), in one placement epoch; it is removed
 * once no gateway that reports is migrating, not before. */
static void
test_remove(const char *policy)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_pp *pp;
    struct ctl_pp_cfg c = pp_cfg(policy);
    struct ctl_pp_rows r0, r1;
    struct ctl_pp_result res;
    struct ctl_pp_report rep = {"gw1", 0, NULL, {0}};
    char key[CTL_KEY_LEN + 1], why[160];
    size_t changed = 0;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &scfg, &st), 0);
    for (uint32_t i = 0; i < 6; i++) {
        heartbeat(st, i, 100);
    }
    CHECK_EQ_INT(ctl_state_tenant_create(st, "a", 1, 2, 1, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "b", 1, 1, 1, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
    CHECK_EQ_INT(ctl_pp_start(pp), 0);
    rows_now(pp, st, &r0);
    /* The gateway has migrated up to now. */
    rep.mig.done_epoch = r0.epoch;
    CHECK_EQ_INT(ctl_pp_report(pp, &rep, cm_now_ns()), 0);
    CHECK_EQ_INT(ctl_state_node_remove(st, 2, NULL, why, sizeof(why)), 0);
    rows_now(pp, st, &r1);
    CHECK(r1.epoch == r0.epoch + 1);
    for (size_t i = 0; i < r0.n; i++) {
        const struct ctl_pp_trows *a = &r0.t[i], *b = &r1.t[i];

        for (uint32_t p = 0; p < a->parts; p++) {
            int moved = 0;

            CHECK_EQ_INT((int)b->len[p], (int)a->len[p]);
            for (uint32_t j = 0; j < a->len[p]; j++) {
                uint32_t was = a->ids[(size_t)p * a->width + j];
                uint32_t now = b->ids[(size_t)p * b->width + j];

                CHECK(now != 2);
                CHECK(was == 2 || now == was);
                moved |= was == 2;
            }
            CHECK(b->row_epoch[p] == (moved ? r1.epoch : a->row_epoch[p]));
            changed += (size_t)moved;
        }
    }
    CHECK(changed > 0);
    /* The gateway has not migrated the new rows yet: 2 stays draining. */
    ctl_pp_rebalance(pp, &res);
    CHECK_EQ_INT(res.rc, 0);
    CHECK_EQ_INT(retire_now(st, 2), CTL_NODE_DRAINING);
    rep.mig.done_epoch = r1.epoch;
    CHECK_EQ_INT(ctl_pp_report(pp, &rep, cm_now_ns()), 0);
    ctl_pp_rebalance(pp, &res);
    CHECK_EQ_INT(res.rc, 0);
    CHECK_EQ_INT(retire_now(st, 2), CTL_NODE_REMOVED);
    ctl_pp_rows_fini(&r0);
    ctl_pp_rows_fini(&r1);
    ctl_pp_destroy(pp);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* A 4+2 tenant's partition read in 1 KiB requests is read from its 1+m
 * small-object copies in slots 0..2, 1/3 each, not from the four data
 * positions at 1/4; in 1 MiB requests from the data positions. */
static void
test_small_reads(void)
{
    static const struct {
        double bytes, util;
    } want[] = {{1024.0, 60.0 / 3 / 100}, {1048576.0, 60.0 / 4 / 100}};
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_pp *pp;
    struct ctl_pp_cfg c = pp_cfg("hash");
    char key[CTL_KEY_LEN + 1];

    c.nominal_bytes = 1e12; /* only requests count */
    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &scfg, &st), 0);
    for (uint32_t i = 0; i < 6; i++) {
        heartbeat(st, i, 100);
    }
    CHECK_EQ_INT(ctl_state_tenant_create(st, "a", 1, 4, 2, 0, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_pp_create(store, st, &c, &pp), 0);
    CHECK_EQ_INT(ctl_pp_start(pp), 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct ctl_pp_rows r;
        struct ctl_pp_result res;
        struct ctl_pp_demand d;
        struct ctl_pp_report rep = {"gw1", 1, &d, {0}};

        rows_now(pp, st, &r);
        d = (struct ctl_pp_demand){r.t[0].tenant, 0, 60, 60 * want[i].bytes, 1000, 0};
        CHECK_EQ_INT(ctl_pp_report(pp, &rep, cm_now_ns()), 0);
        ctl_pp_rebalance(pp, &res);
        CHECK_EQ_INT(res.rc, 0);
        CHECK_NEAR(res.util_before, want[i].util, 1e-6);
        ctl_pp_rows_fini(&r);
    }
    ctl_pp_destroy(pp);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

int
main(void)
{
    t_seed();
    cm_log_init("test", CM_LOG_WARN);
    test_store();
    test_codec();
    test_trigger();
    test_util();
    test_accept_demand();
    test_rebalance("milp");
    test_rebalance("hash");
    test_remove("hash");
    test_remove("milp");
    test_small_reads();
    return 0;
}
