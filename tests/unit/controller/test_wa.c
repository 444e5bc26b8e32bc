/*
 * test_wa.c - weight allocation on the controller (ctl_wa.h): the view
 * built from a snapshot and the nodes' cells, the matrix lookups the
 * heartbeat answers use, the step with its invariant check and the even
 * fallback, and the loop over a real state driven by a fake clock: weight
 * follows a concentrated tenant's demand, and the invariants hold after
 * every step, a tenant created, re-weighted and deleted, a node down and a
 * node added.
 */
#include "t_check.h"

#include <errno.h>
#include <math.h>

#include "cm_err.h"
#include "cm_log.h"
#include "ctl_state.h"
#include "ctl_store.h"
#include "ctl_wa.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define T0 (1000 * SEC)

static const struct ctl_state_cfg cfg = {16, 4, 2, 3000 * MS, NULL};

/* ---- pure parts ---- */

static void
test_matrix_get(void)
{
    uint32_t tenants[] = {2, 5}, nodes[] = {1, 4, 9};
    double gw[] = {1.0, 2.0};
    double w[] = {3.9999999999999996, 1.0, 1.0, 1.0, 2.5, 2.5};
    struct ctl_wa_matrix m = {2, 3, tenants, gw, nodes, w};

    /* Rounding noise reads as the even value. */
    CHECK(ctl_wa_matrix_get(&m, 2, 1, 1.0) == 4.0);
    CHECK(ctl_wa_matrix_get(&m, 5, 9, 2.0) == 2.5);
    /* A tenant or node the matrix does not know: the global weight. */
    CHECK(ctl_wa_matrix_get(&m, 3, 1, 7.0) == 7.0);
    CHECK(ctl_wa_matrix_get(&m, 2, 2, 7.0) == 7.0);
    /* A weight changed since the step: the row scaled. */
    CHECK_NEAR(ctl_wa_matrix_get(&m, 5, 4, 6.0), 7.5, 1e-12);
}

static void
test_input_build(void)
{
    struct ctl_tenant_view tv[2];
    struct ctl_node_view nv[3];
    struct ctl_snapshot s;
    /* Node then tenant order, as ctl_state_cells gives them: node 7 is
     * unknown, node 4 is down, tenant 9 was deleted. */
    const struct ctl_cell cells[] = {
        {1, 2, 0.5, 0.25, 0.01}, {1, 5, 0.1, 0.1, 0.0},  {1, 9, 9, 9, 9},
        {4, 2, 3.0, 3.0, 1.0},   {6, 5, 0.2, 0.1, 0.02}, {7, 2, 9, 9, 9},
    };
    uint32_t ct[] = {5}, cn[] = {1, 6};
    double cgw[] = {2.0}, cw[] = {1.5, 2.5};
    struct ctl_wa_matrix cur = {1, 2, ct, cgw, cn, cw};
    struct ctl_wa_input in;

    memset(&s, 0, sizeof(s));
    memset(tv, 0, sizeof(tv));
    memset(nv, 0, sizeof(nv));
    tv[0].t.id = 2;
    tv[0].t.weight = 1.0;
    tv[1].t.id = 5;
    tv[1].t.weight = 2.0;
    nv[0].n.id = 1;
    nv[0].up = 1;
    nv[1].n.id = 4;
    nv[2].n.id = 6;
    nv[2].up = 1;
    s.ntenants = 2;
    s.tenants = tv;
    s.nnodes = 3;
    s.nodes = nv;

    ctl_wa_input_build(&s, cells, sizeof(cells) / sizeof(cells[0]), &cur, 1, 42, &in);
    CHECK_EQ_INT(in.v.ntenants, 2);
    CHECK_EQ_INT(in.v.nnodes, 3);
    CHECK(in.v.now_ns == 42);
    CHECK(in.v.tenants[1].id == 5 && in.v.tenants[1].weight == 2.0);
    CHECK(in.v.nodes[0].up && !in.v.nodes[1].up && in.v.nodes[2].up);
    CHECK(in.v.cells[0].demand == 0.5 && in.v.cells[0].served == 0.25 &&
          in.v.cells[0].wait == 0.01);
    CHECK(in.v.cells[1].demand == 0.0); /* node 4 is down: not measured */
    CHECK(in.v.cells[3 + 0].demand == 0.1 && in.v.cells[3 + 2].demand == 0.2 &&
          in.v.cells[3 + 2].wait == 0.02);
    CHECK(in.v.cells[2].demand == 0.0 && in.v.cells[3 + 1].demand == 0.0);
    /* Weights in force where cur has them, unknown elsewhere. */
    CHECK(isnan(in.v.w[0]) && isnan(in.v.w[1]) && isnan(in.v.w[2]));
    CHECK(in.v.w[3] == 1.5 && isnan(in.v.w[4]) && in.v.w[5] == 2.5);
    ctl_wa_input_fini(&in);

    /* A projection has no measurements. */
    ctl_wa_input_build(&s, cells, sizeof(cells) / sizeof(cells[0]), &cur, 0, 42, &in);
    CHECK(in.v.cells == NULL);
    ctl_wa_input_fini(&in);
}

static int
bad_rows(struct pol_wa *wa, const struct pol_wa_view *v, double *w_out, struct pol_wa_stats *stats)
{
    (void)wa;
    for (size_t i = 0; i < v->ntenants * v->nnodes; i++) {
        w_out[i] = 2.0 * v->tenants[i / v->nnodes].weight;
    }
    if (stats != NULL) {
        memset(stats, 0, sizeof(*stats));
        stats->cycles = 7;
    }
    return 0;
}

static int
failing(struct pol_wa *wa, const struct pol_wa_view *v, double *w_out, struct pol_wa_stats *stats)
{
    (void)wa;
    (void)v;
    (void)stats;
    w_out[0] = NAN;
    return -ENOMEM;
}

/* The even matrix of in, or 0 if out differs from it. */
static int
is_even(const struct ctl_wa_input *in, const struct ctl_wa_matrix *out)
{
    for (size_t i = 0; i < in->v.ntenants * in->v.nnodes; i++) {
        if (out->w[i] != in->v.tenants[i / in->v.nnodes].weight) {
            return 0;
        }
    }
    return 1;
}

static void
test_run(void)
{
    const struct pol_wa_ops *pisces = pol_wa_find("pisces");
    const struct pol_wa_ops bad = {"bad", NULL, NULL, NULL, bad_rows};
    const struct pol_wa_ops fail = {"fail", NULL, NULL, NULL, failing};
    struct pol_wa_tenant ts[2] = {{1, 1.0}, {2, 3.0}};
    struct pol_wa_node ns[3] = {{0, 1}, {1, 1}, {2, 1}};
    /* Tenant 1 asks only at node 0 and is short there; tenant 2 everywhere. */
    struct pol_wa_cell cells[6] = {{1.0, 0.4, 0.02}, {0, 0, 0},        {0, 0, 0},
                                   {0.6, 0.6, 0.02}, {1.0, 1.0, 0.02}, {1.0, 1.0, 0.02}};
    struct ctl_wa_input in;
    struct ctl_wa_matrix out;
    struct ctl_wa_result res;
    struct pol_wa *pol;

    memset(&in, 0, sizeof(in));
    in.v.ntenants = 2;
    in.v.nnodes = 3;
    in.v.tenants = ts;
    in.v.nodes = ns;
    in.v.cells = cells;
    in.v.now_ns = 1;
    CHECK_EQ_INT(pisces->create(NULL, &pol), 0);

    ctl_wa_run(pisces, pol, &in, &out, &res);
    CHECK(res.rc == 0 && !res.fallback && res.error < 1e-9 && res.stats.cycles > 0);
    CHECK(out.ntenants == 2 && out.tenants[1] == 2 && out.gw[1] == 3.0 && out.nodes[2] == 2);
    CHECK(out.w[0] > 1.0); /* tenant 1 gained weight at node 0 */
    CHECK(pol_wa_invariant_error(&in.v, out.w, pol_wa_cfg_of(pol)->floor_frac) < 1e-9);
    ctl_wa_matrix_fini(&out);

    /* A step that breaks the row sums, or fails: the even matrix, logged. */
    ctl_wa_run(&bad, pol, &in, &out, &res);
    CHECK(res.rc == 0 && res.fallback && res.error > 0.5 && res.stats.cycles == 0);
    CHECK(is_even(&in, &out));
    ctl_wa_matrix_fini(&out);
    ctl_wa_run(&fail, pol, &in, &out, &res);
    CHECK(res.rc == -ENOMEM && res.fallback && res.error == 1.0);
    CHECK(is_even(&in, &out));
    ctl_wa_matrix_fini(&out);
    pisces->destroy(pol);
}

/* ---- the loop over a real state ---- */

/* Cumulative counters of one (node, tenant) as a node would report them. */
struct feed {
    double arrived, served, wait_s;
    uint64_t waits;
};

static struct feed feeds[8][8];

/* One heartbeat of node id at now: each tenant of ids[] (n of them) had
 * demand[t] arriving and served[t] served (dominant cost per second) over
 * the last second, each served request waiting 10 ms. */
static void
beat(struct ctl_state *st, uint32_t id, uint64_t now, const uint32_t *ids, size_t n,
     const double *demand, const double *served)
{
    struct ctl_hb_tenant ht[8];
    struct ctl_hb hb;

    memset(&hb, 0, sizeof(hb));
    memset(ht, 0, sizeof(ht));
    for (size_t t = 0; t < n; t++) {
        struct feed *f = &feeds[id][ids[t]];

        f->arrived += demand[t];
        f->served += served[t];
        f->waits += 100;
        f->wait_s += 1.0;
        ht[t].id = ids[t];
        ht[t].requests = ht[t].arrived_requests = f->waits;
        ht[t].arrived_cost = f->arrived;
        ht[t].served_cost = f->served;
        ht[t].queue_wait_s = f->wait_s;
        ht[t].queue_waits = f->waits;
        ht[t].weight = 1.0;
    }
    snprintf(hb.sched, sizeof(hb.sched), "drfq");
    hb.cap_ops = 1000;
    hb.node.id = id;
    snprintf(hb.node.addr, sizeof(hb.node.addr), "127.0.0.1:%u", 9500 + id);
    hb.node.incarnation = 1;
    hb.ntenants = n;
    hb.tenants = ht;
    CHECK_EQ_INT(ctl_state_heartbeat(st, &hb, now), 0);
}

/* The matrix in force meets the invariants for the state's tenants and
 * nodes at now (and covers exactly them); returns its copy (fini it). */
static void
check_invariants(struct ctl_wa *wa, struct ctl_state *st, uint64_t now, struct ctl_wa_matrix *m)
{
    struct ctl_snapshot s;
    struct ctl_wa_stats stats;
    struct ctl_wa_input in;
    const struct pol_wa_ops *ops = pol_wa_find("pisces");
    struct pol_wa *pol;

    CHECK_EQ_INT(ops->create(NULL, &pol), 0);
    ctl_state_snapshot(st, now, &s);
    ctl_wa_read(wa, now, m, &stats);
    CHECK_EQ_INT(m->ntenants, s.ntenants);
    CHECK_EQ_INT(m->nnodes, s.nnodes);
    for (size_t t = 0; t < s.ntenants; t++) {
        CHECK(m->tenants[t] == s.tenants[t].t.id && m->gw[t] == s.tenants[t].t.weight);
    }
    for (size_t n = 0; n < s.nnodes; n++) {
        CHECK(m->nodes[n] == s.nodes[n].n.id);
    }
    ctl_wa_input_build(&s, NULL, 0, m, 0, now, &in);
    CHECK(pol_wa_invariant_error(&in.v, m->w, pol_wa_cfg_of(pol)->floor_frac) < 1e-9);
    CHECK(stats.error < 1e-9 && stats.fallbacks == 0);
    CHECK(stats.age_ms == 0);
    ctl_wa_input_fini(&in);
    ctl_snapshot_fini(&s);
    ops->destroy(pol);
}

static double
weight_at(const struct ctl_wa_matrix *m, uint32_t tenant, uint32_t node)
{
    for (size_t t = 0; t < m->ntenants; t++) {
        for (size_t n = 0; n < m->nnodes; n++) {
            if (m->tenants[t] == tenant && m->nodes[n] == node) {
                return m->w[t * m->nnodes + n];
            }
        }
    }
    return NAN;
}

static void
test_loop(void)
{
    char *dir = t_tmpdir(), key[CTL_KEY_LEN + 1];
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_wa *wa;
    struct ctl_wa_cfg wcfg = {"pisces", SEC};
    struct ctl_wa_cfg bad = {"nope", SEC};
    struct ctl_wa_matrix m;
    struct ctl_tenant hot, wide, extra;
    uint64_t now = T0;
    const uint32_t ids[2] = {1, 2};
    double col[2];
    int i;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &cfg, &st), 0);
    CHECK_EQ_INT(ctl_wa_create(st, &bad, &wa), CM_E_BADARG);
    CHECK(wa == NULL);
    CHECK_EQ_INT(ctl_wa_create(st, &wcfg, &wa), 0);
    CHECK_EQ_STR(ctl_wa_policy(wa), "pisces");
    CHECK_EQ_INT(ctl_state_tenant_create(st, "hot", 1.0, 0, -1, 1, 0, key, &hot), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "wide", 1.0, 0, -1, 1, 0, key, &wide), 0);
    CHECK(hot.id == 1 && wide.id == 2);

    /* Before any step: every answer is the global weight. */
    ctl_wa_column(wa, 0, ids, (const double[]){1.0, 1.0}, 2, col);
    CHECK(col[0] == 1.0 && col[1] == 1.0);

    /* Four capped nodes. Hot asks 0.8 at nodes 0 and 1 and gets 0.5; wide
     * asks 0.5 everywhere and gets it, 1.0 at nodes 2 and 3: wide is served
     * three times hot's rate, and hot is short where its demand is. */
    for (i = 0; i < 10; i++) {
        for (uint32_t n = 0; n < 4; n++) {
            double d[2] = {n < 2 ? 0.8 : 0.0, n < 2 ? 0.5 : 1.0};
            double s[2] = {n < 2 ? 0.5 : 0.0, n < 2 ? 0.5 : 1.0};

            beat(st, n, now, ids, 2, d, s);
        }
        ctl_wa_step(wa, now, 1);
        check_invariants(wa, st, now, &m);
        ctl_wa_matrix_fini(&m);
        now += SEC;
    }
    ctl_wa_read(wa, now, &m, &(struct ctl_wa_stats){0});
    CHECK(weight_at(&m, 1, 0) > 1.5 && weight_at(&m, 1, 1) > 1.5);
    CHECK(weight_at(&m, 1, 2) < 0.5 && weight_at(&m, 1, 3) < 0.5);
    /* The heartbeat answer of node 0 is that column. */
    ctl_wa_column(wa, 0, ids, (const double[]){1.0, 1.0}, 2, col);
    CHECK_NEAR(col[0], weight_at(&m, 1, 0), 1e-9);
    CHECK_NEAR(col[0] + col[1], 2.0, 1e-9);
    ctl_wa_matrix_fini(&m);

    /* A tenant created: a projection takes it in at once. */
    CHECK_EQ_INT(ctl_state_tenant_create(st, "extra", 2.0, 0, -1, 1, 0, key, &extra), 0);
    ctl_wa_step(wa, now, 0);
    check_invariants(wa, st, now, &m);
    CHECK_NEAR(weight_at(&m, extra.id, 2), 2.0, 0.5);
    ctl_wa_matrix_fini(&m);

    /* Re-weighted: until the projection the row is scaled, after it the
     * invariants hold with the new weight. */
    CHECK_EQ_INT(ctl_state_tenant_set_weight(st, "wide", 4.0, NULL), 0);
    ctl_wa_read(wa, now, &m, &(struct ctl_wa_stats){0});
    ctl_wa_column(wa, 3, ids, (const double[]){1.0, 4.0}, 2, col);
    CHECK_NEAR(col[1], 4.0 * weight_at(&m, 2, 3), 1e-9);
    ctl_wa_matrix_fini(&m);
    ctl_wa_step(wa, now, 0);
    check_invariants(wa, st, now, &m);
    ctl_wa_matrix_fini(&m);

    /* Deleted: its row goes. */
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "extra"), 0);
    ctl_wa_step(wa, now, 0);
    check_invariants(wa, st, now, &m);
    ctl_wa_matrix_fini(&m);

    /* Node 3 goes silent and is marked down after the timeout: its column
     * stays as it was, the steps go on and keep the invariants. */
    {
        struct ctl_wa_matrix before;
        struct ctl_snapshot s;

        for (i = 0; i < 6; i++) {
            for (uint32_t n = 0; n < 3; n++) {
                double d[2] = {n < 2 ? 0.8 : 0.0, n < 2 ? 0.5 : 1.0};
                double s2[2] = {n < 2 ? 0.5 : 0.0, n < 2 ? 0.5 : 1.0};

                beat(st, n, now, ids, 2, d, s2);
            }
            if (i == 4) {
                ctl_wa_read(wa, now, &before, &(struct ctl_wa_stats){0});
            }
            ctl_wa_step(wa, now, 1);
            check_invariants(wa, st, now, &m);
            ctl_wa_matrix_fini(&m);
            now += SEC;
        }
        ctl_state_snapshot(st, now, &s);
        CHECK(s.nnodes == 4 && !s.nodes[3].up);
        ctl_snapshot_fini(&s);
        ctl_wa_read(wa, now, &m, &(struct ctl_wa_stats){0});
        CHECK_NEAR(weight_at(&m, 1, 3), weight_at(&before, 1, 3), 1e-9);
        CHECK_NEAR(weight_at(&m, 2, 3), weight_at(&before, 2, 3), 1e-9);
        ctl_wa_matrix_fini(&m);
        ctl_wa_matrix_fini(&before);
    }

    /* A node new to the matrix is answered with the global weights until the
     * next step takes it in. */
    beat(st, 5, now, ids, 2, (const double[]){0, 0}, (const double[]){0, 0});
    ctl_wa_column(wa, 5, ids, (const double[]){1.0, 4.0}, 2, col);
    CHECK(col[0] == 1.0 && col[1] == 4.0);
    ctl_wa_step(wa, now, 1);
    check_invariants(wa, st, now, &m);
    CHECK_EQ_INT(m.nnodes, 5);
    ctl_wa_matrix_fini(&m);

    ctl_wa_destroy(wa);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* The thread: a kick returns once the projection is in force. */
static void
test_thread(void)
{
    char *dir = t_tmpdir(), key[CTL_KEY_LEN + 1];
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_wa *wa;
    struct ctl_wa_cfg wcfg = {"even", 3600 * SEC};
    struct ctl_wa_matrix m;
    struct ctl_wa_stats stats;

    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_state_create(store, &cfg, &st), 0);
    CHECK_EQ_INT(ctl_wa_create(st, &wcfg, &wa), 0);
    ctl_wa_kick(wa); /* before start: nothing to wait for */
    CHECK_EQ_INT(ctl_wa_start(wa), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "a", 3.0, 0, -1, 1, 0, key, NULL), 0);
    ctl_wa_kick(wa);
    ctl_wa_read(wa, T0, &m, &stats);
    /* One full step (at start; the interval is an hour): the tenant came in
     * by the kick's projection, or by that step if the kick came first. */
    CHECK(stats.steps == 1);
    CHECK_EQ_INT(m.ntenants, 1);
    CHECK(m.gw[0] == 3.0);
    ctl_wa_matrix_fini(&m);
    ctl_wa_destroy(wa);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

int
main(void)
{
    cm_log_init("test", CM_LOG_WARN);
    test_matrix_get();
    test_input_build();
    test_run();
    test_loop();
    test_thread();
    return 0;
}
