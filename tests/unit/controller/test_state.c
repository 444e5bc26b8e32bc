/*
 * test_state.c - controller state over a real LMDB store: tenant life
 * cycle, uniqueness, ids never reused, epoch growth, persistence across a
 * reopen, node liveness and rates driven by a fake clock.
 */
#include "t_check.h"

#include <math.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define MS 1000000ull
#define T0 (1000 * 1000 * MS)

static const struct ctl_state_cfg cfg = {16, 4, 2, 3000 * MS, NULL};

static struct ctl_state *
open_state(const char *dir, struct ctl_store **store)
{
    struct ctl_state *st;

    CHECK_EQ_INT(ctl_store_open(dir, store), 0);
    CHECK_EQ_INT(ctl_state_create(*store, &cfg, &st), 0);
    return st;
}

static uint64_t
epoch_of(struct ctl_state *st, uint64_t now)
{
    struct ctl_snapshot s;
    uint64_t e;

    ctl_state_snapshot(st, now, &s);
    e = s.epoch;
    ctl_snapshot_fini(&s);
    return e;
}

/* Tenant 1 on node id: reqs requests and bytes served so far, twice that
 * arrived, 1 ms of dominant cost per request served (2 ms per arrival),
 * 0.1 ms of queue wait each, local weight 1.5. Node 3 has a cap. */
static void
heartbeat(struct ctl_state *st, uint32_t id, uint64_t now, uint64_t reqs, uint64_t bytes)
{
    struct ctl_hb_tenant t = {.id = 1,
                              .requests = reqs,
                              .bytes = bytes,
                              .queued = 3,
                              .arrived_requests = 2 * reqs,
                              .arrived_bytes = 2 * bytes,
                              .arrived_cost = 2e-3 * (double)reqs,
                              .served_cost = 1e-3 * (double)reqs,
                              .queue_wait_s = 1e-4 * (double)reqs,
                              .queue_waits = reqs,
                              .weight = 1.5};
    struct ctl_hb hb;

    memset(&hb, 0, sizeof(hb));
    snprintf(hb.sched, sizeof(hb.sched), "drfq");
    hb.cap_ops = id == 3 ? 1000 : 0;
    hb.node.id = id;
    snprintf(hb.node.addr, sizeof(hb.node.addr), "127.0.0.1:%u", 9500 + id);
    hb.node.capacity_bytes = 1 << 20;
    hb.node.incarnation = 1;
    hb.used_bytes = 10;
    hb.ntenants = 1;
    hb.tenants = &t;
    CHECK_EQ_INT(ctl_state_heartbeat(st, &hb, now), 0);
}

int
main(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_tenant t;
    struct ctl_snapshot s;
    char key[CTL_KEY_LEN + 1], key2[CTL_KEY_LEN + 1], hash[65];
    uint64_t e0, e1;

    cm_log_init("test", CM_LOG_WARN);
    st = open_state(dir, &store);
    e0 = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 2.0, 0, -1, 123, key, &t), 0);
    CHECK_EQ_INT(t.id, 1);
    CHECK_EQ_INT(t.ec_k, 4);
    CHECK_EQ_INT(t.ec_m, 2);
    cm_sha256_hex(key, strlen(key), hash);
    CHECK_EQ_STR(t.key_hash[0], hash);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 123, key2, NULL), CM_E_EXISTS);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "beta", 1.0, 2, 1, 123, key2, &t), 0);
    CHECK_EQ_INT(t.id, 2);
    CHECK_EQ_INT(t.ec_k, 2);
    e1 = epoch_of(st, T0);
    CHECK(e1 == e0 + 2);
    CHECK_EQ_INT(ctl_state_tenant_set_weight(st, "beta", 5.0, &t), 0);
    CHECK(t.weight == 5.0);
    CHECK_EQ_INT(ctl_state_tenant_set_weight(st, "nope", 5.0, NULL), CM_E_NOTFOUND);
    CHECK_EQ_INT(ctl_state_tenant_rotate_key(st, "alpha", key2, &t), 0);
    CHECK_EQ_INT(t.nkeys, 1);
    CHECK(strcmp(t.key_hash[0], hash) != 0);
    cm_sha256_hex(key2, strlen(key2), hash);
    CHECK_EQ_STR(t.key_hash[0], hash);
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "beta"), 0);
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "beta"), CM_E_NOTFOUND);
    CHECK(epoch_of(st, T0) == e1 + 3);

    /* Liveness: up on heartbeat, down after the timeout, epoch bumps. */
    heartbeat(st, 3, T0, 0, 0);
    heartbeat(st, 1, T0, 100, 1000);
    e1 = epoch_of(st, T0);
    heartbeat(st, 1, T0 + 1000 * MS, 300, 3000);
    heartbeat(st, 3, T0 + 1000 * MS, 0, 0);
    CHECK(epoch_of(st, T0 + 1000 * MS) == e1);
    ctl_state_snapshot(st, T0 + 1000 * MS, &s);
    CHECK_EQ_INT(s.nnodes, 2);
    CHECK_EQ_INT(s.nodes[0].n.id, 1);
    CHECK(s.nodes[0].up && s.nodes[1].up);
    CHECK(fabs(s.nodes[0].load - 200.0) < 1e-6);
    CHECK_EQ_INT(s.ntenants, 1);
    CHECK(fabs(s.tenants[0].req_rate - 200.0) < 1e-6);
    CHECK(fabs(s.tenants[0].byte_rate - 2000.0) < 1e-6);
    CHECK(fabs(s.tenants[0].queued - 6.0) < 1e-6);
    /* Arrivals, dominant costs and queue waits become rates the same way. */
    CHECK(fabs(s.tenants[0].arr_req_rate - 400.0) < 1e-6);
    CHECK(fabs(s.tenants[0].arr_byte_rate - 4000.0) < 1e-6);
    CHECK(fabs(s.tenants[0].demand - 0.4) < 1e-9);
    CHECK(fabs(s.tenants[0].share - 0.2) < 1e-9);
    CHECK(fabs(s.tenants[0].queue_wait - 1e-4) < 1e-12);
    /* Node 1 (no cap) is estimated by what it served, node 3 (capped) is one
     * node's worth. */
    CHECK(fabs(s.nodes[0].share_load - 0.2) < 1e-9 && fabs(s.nodes[0].capacity - 0.2) < 1e-9);
    CHECK(fabs(s.nodes[1].capacity - 1.0) < 1e-9);
    CHECK(fabs(s.capacity - 1.2) < 1e-9);
    CHECK_EQ_STR(s.nodes[0].sched, "drfq");
    CHECK(s.nodes[1].cap_ops == 1000);
    CHECK_EQ_INT(s.nlocal, 2);
    CHECK(s.local[0].node == 1 && s.local[0].tenant == 1 && s.local[0].weight == 1.5);
    CHECK(s.local[1].node == 3);
    ctl_snapshot_fini(&s);
    /* Node 1 falls silent; node 3 keeps reporting. */
    heartbeat(st, 3, T0 + 3500 * MS, 0, 0);
    ctl_state_tick(st, T0 + 4001 * MS);
    ctl_state_snapshot(st, T0 + 4001 * MS, &s);
    CHECK(!s.nodes[0].up && s.nodes[1].up);
    CHECK(s.epoch == e1 + 1);
    CHECK(s.tenants[0].req_rate == 0.0); /* only up nodes count */
    CHECK(s.tenants[0].demand == 0.0 && s.capacity == 1.0);
    CHECK_EQ_INT(s.nlocal, 1);
    ctl_snapshot_fini(&s);
    heartbeat(st, 1, T0 + 4500 * MS, 300, 3000);
    CHECK(epoch_of(st, T0 + 4500 * MS) == e1 + 2);
    /* Counter reset (node restart): no negative rate. */
    heartbeat(st, 1, T0 + 5500 * MS, 10, 10);
    ctl_state_snapshot(st, T0 + 5500 * MS, &s);
    CHECK(s.tenants[0].req_rate >= 0.0);
    CHECK(s.tenants[0].demand >= 0.0 && s.tenants[0].share >= 0.0);
    e1 = s.epoch;
    ctl_snapshot_fini(&s);
    /*
     * Threads read the clock before the lock: a tick can arrive stamped
     * before the heartbeat that ran ahead of it. That is no silence.
     */
    heartbeat(st, 1, T0 + 6000 * MS, 10, 10);
    ctl_state_tick(st, T0 + 5999 * MS);
    ctl_state_snapshot(st, T0 + 5998 * MS, &s);
    CHECK(s.nodes[0].up && s.nodes[1].up);
    CHECK(s.epoch == e1);
    CHECK(s.nodes[0].seen_ms_ago == 0);
    ctl_snapshot_fini(&s);

    /* Reopen: tenants, keys, nodes and the epoch survive; ids not reused. */
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &store);
    ctl_state_snapshot(st, T0, &s);
    CHECK(s.epoch > e1);
    CHECK_EQ_INT(s.ntenants, 1);
    CHECK_EQ_STR(s.tenants[0].t.name, "alpha");
    CHECK(s.tenants[0].t.weight == 2.0);
    CHECK_EQ_STR(s.tenants[0].t.key_hash[0], hash);
    CHECK_EQ_INT(s.nnodes, 2);
    CHECK(s.nodes[0].up && s.nodes[1].up); /* presumed up after a restart */
    CHECK_EQ_STR(s.nodes[1].n.addr, "127.0.0.1:9503");
    ctl_snapshot_fini(&s);
    /* ... until silent for the node timeout counted from the first tick. */
    ctl_state_tick(st, T0);
    ctl_state_tick(st, T0 + 2000 * MS);
    ctl_state_snapshot(st, T0 + 2000 * MS, &s);
    CHECK(s.nodes[0].up && s.nodes[1].up);
    ctl_snapshot_fini(&s);
    ctl_state_tick(st, T0 + 4000 * MS);
    ctl_state_snapshot(st, T0 + 4000 * MS, &s);
    CHECK(!s.nodes[0].up && !s.nodes[1].up);
    ctl_snapshot_fini(&s);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "gamma", 1.0, 0, -1, 1, key, &t), 0);
    CHECK_EQ_INT(t.id, 3);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
    fprintf(stderr, "ok\n");
    return 0;
}
