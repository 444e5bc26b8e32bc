/*
 * test_state.c - controller state over a real LMDB store: tenant life
 * cycle, uniqueness, ids never reused, epoch growth, persistence across a
 * reopen, node liveness and rates driven by a fake clock; gateways and the
 * tenants they own (least-loaded up gateway, ties by id, not reassigned
 * by polls, kept across a reopen, old records without an owner); moving a
 * tenant to another gateway (asked, cancelled, refused, reported moved);
 * removing a node (refused below a tenant's width, draining, removed,
 * stored, its heartbeats refused).
 */
#include "t_check.h"

#include <errno.h>
#include <math.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_kv.h"
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

/* Gateway id polls at now with url and s3_url. */
static void
gw_poll(struct ctl_state *st, const char *id, const char *url, const char *s3_url, uint64_t now)
{
    CHECK_EQ_INT(ctl_state_gateway_poll(st, id, url, s3_url, now), 0);
}

/* The owner of tenant name (a copy), "?" if there is no such tenant. */
static const char *
owner_of(struct ctl_state *st, const char *name, uint64_t now)
{
    static char gw[CTL_GW_ID_MAX + 1];
    struct ctl_snapshot s;
    const struct ctl_tenant_view *tv;

    ctl_state_snapshot(st, now, &s);
    tv = ctl_snapshot_tenant(&s, name);
    snprintf(gw, sizeof(gw), "%s", tv != NULL ? tv->t.gateway : "?");
    ctl_snapshot_fini(&s);
    return gw;
}

/* Creates tenant name at now; returns its owner. */
static const char *
create_at(struct ctl_state *st, const char *name, uint64_t now)
{
    static char gw[CTL_GW_ID_MAX + 1];
    char key[CTL_KEY_LEN + 1];
    struct ctl_tenant t;

    CHECK_EQ_INT(ctl_state_tenant_create(st, name, 1.0, 0, -1, 1, now, key, &t), 0);
    snprintf(gw, sizeof(gw), "%s", t.gateway);
    return gw;
}

/* Rewrites tenant id's record as a controller from before gateways wrote
 * it: no "gateway". The store must be closed. */
static void
put_old_record(const char *dir, uint32_t id, const char *name)
{
    static const char *const tables[] = {"meta", "tenants", "nodes", "s3keys", "sms", "placement"};
    unsigned char k[4] = {(unsigned char)(id >> 24), (unsigned char)(id >> 16),
                          (unsigned char)(id >> 8), (unsigned char)id};
    char rec[256];
    struct cm_kv *kv;
    struct cm_kv_txn *txn;

    snprintf(rec, sizeof(rec),
             "{\"name\":\"%s\",\"weight\":1.0,\"key_hashes\":[],\"ec_k\":4,\"ec_m\":2,"
             "\"created_ms\":7}",
             name);
    CHECK_EQ_INT(cm_kv_open(dir, 0, tables, 6, 0, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 1, &txn), 0);
    CHECK_EQ_INT(cm_kv_put(txn, 1 /* tenants */, k, sizeof(k), rec, strlen(rec)), 0);
    CHECK_EQ_INT(cm_kv_commit(txn), 0);
    cm_kv_close(kv);
}

static void
test_gateways(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st = open_state(dir, &store);
    struct ctl_snapshot s;
    uint64_t e;

    /* No gateway known: a new tenant is unassigned. */
    CHECK_EQ_STR(create_at(st, "t1", T0), "");
    ctl_state_snapshot(st, T0, &s);
    CHECK_EQ_INT(s.ngateways, 0);
    e = s.epoch;
    ctl_snapshot_fini(&s);

    /* The first poll registers its gateway and hands it the unassigned
     * tenant: the snapshot taken after it already shows the owner. */
    gw_poll(st, "gw-b", "http://127.0.0.1:9301", "http://127.0.0.1:9311", T0);
    ctl_state_snapshot(st, T0, &s);
    CHECK(s.epoch == e + 2); /* the registration, the assignment */
    CHECK_EQ_STR(s.tenants[0].t.gateway, "gw-b");
    CHECK_EQ_INT(s.ngateways, 1);
    CHECK_EQ_STR(s.gateways[0].id, "gw-b");
    CHECK_EQ_STR(s.gateways[0].url, "http://127.0.0.1:9301");
    CHECK_EQ_STR(s.gateways[0].s3_url, "http://127.0.0.1:9311");
    CHECK(s.gateways[0].up && s.gateways[0].seen_ms_ago == 0);
    CHECK_EQ_INT(s.gateways[0].tenants, 1);
    e = s.epoch;
    ctl_snapshot_fini(&s);
    /* A poll that changes nothing changes no epoch. */
    gw_poll(st, "gw-b", "http://127.0.0.1:9301", "http://127.0.0.1:9311", T0 + 100 * MS);
    CHECK(epoch_of(st, T0 + 100 * MS) == e);
    gw_poll(st, "gw-a", "http://127.0.0.1:9300", "", T0 + 100 * MS);
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 1);

    /* Creation picks the up gateway owning the fewest, ties by id. */
    CHECK_EQ_STR(create_at(st, "t2", T0 + 200 * MS), "gw-a"); /* 0 < 1 */
    CHECK_EQ_STR(create_at(st, "t3", T0 + 200 * MS), "gw-a"); /* 1 = 1: a < b */
    CHECK_EQ_STR(create_at(st, "t4", T0 + 200 * MS), "gw-b"); /* 1 < 2 */
    CHECK_EQ_STR(create_at(st, "t5", T0 + 200 * MS), "gw-a"); /* 2 = 2 */
    CHECK_EQ_STR(owner_of(st, "t5", T0 + 200 * MS), "gw-a");

    /* A changed URL bumps the epoch and moves nothing. */
    e = epoch_of(st, T0 + 1000 * MS);
    gw_poll(st, "gw-b", "http://127.0.0.1:9302", "", T0 + 1000 * MS);
    gw_poll(st, "gw-c", "https://gw-c.example:9303", "", T0 + 1000 * MS);
    ctl_state_snapshot(st, T0 + 1000 * MS, &s);
    CHECK(s.epoch == e + 2);
    CHECK_EQ_INT(s.ngateways, 3);
    CHECK_EQ_STR(s.gateways[0].id, "gw-a");
    CHECK_EQ_STR(s.gateways[1].url, "http://127.0.0.1:9302");
    CHECK_EQ_STR(s.gateways[1].s3_url, "");
    CHECK_EQ_STR(s.gateways[2].id, "gw-c");
    CHECK(s.gateways[0].tenants == 3 && s.gateways[1].tenants == 2 && s.gateways[2].tenants == 0);
    ctl_snapshot_fini(&s);

    /* Up means heard from within 5 s: gw-c (last seen at 1 s) is up at
     * 6 s and down just after. */
    ctl_state_snapshot(st, T0 + 6000 * MS, &s);
    CHECK(s.gateways[2].up && !s.gateways[0].up);
    ctl_snapshot_fini(&s);
    ctl_state_snapshot(st, T0 + 6001 * MS, &s);
    CHECK(!s.gateways[2].up && s.gateways[2].seen_ms_ago == 5001);
    ctl_snapshot_fini(&s);
    /* A down gateway gets nothing, though gw-c owns the fewest and gw-a
     * has the smallest id. */
    gw_poll(st, "gw-b", "http://127.0.0.1:9302", "", T0 + 6500 * MS);
    CHECK_EQ_STR(create_at(st, "t6", T0 + 6500 * MS), "gw-b");
    /* None up: a new tenant waits, unassigned. */
    CHECK_EQ_STR(create_at(st, "t7", T0 + 20000 * MS), "");
    /* Owners do not change when their gateway is down. */
    CHECK_EQ_STR(owner_of(st, "t2", T0 + 20000 * MS), "gw-a");
    CHECK_EQ_STR(owner_of(st, "t4", T0 + 20000 * MS), "gw-b");
    /* Invalid polls are refused and register nothing. */
    CHECK_EQ_INT(ctl_state_gateway_poll(st, "bad id", "http://x", "", T0 + 20000 * MS),
                 CM_E_BADARG);
    CHECK_EQ_INT(ctl_state_gateway_poll(st, "gw-d", "ftp://x", "", T0 + 20000 * MS), CM_E_BADARG);
    CHECK_EQ_INT(ctl_state_gateway_poll(st, "gw-d", "http://x", "x", T0 + 20000 * MS), CM_E_BADARG);
    ctl_state_snapshot(st, T0 + 20000 * MS, &s);
    CHECK_EQ_INT(s.ngateways, 3);
    CHECK_EQ_STR(s.tenants[6].t.gateway, "");
    ctl_snapshot_fini(&s);

    /* Reopen: owners are stored, the registry is not. t7's record is
     * rewritten the way an older controller wrote it, without "gateway". */
    ctl_state_destroy(st);
    ctl_store_close(store);
    put_old_record(dir, 7, "t7");
    st = open_state(dir, &store);
    ctl_state_snapshot(st, T0, &s);
    CHECK_EQ_INT(s.ngateways, 0);
    CHECK_EQ_INT(s.ntenants, 7);
    CHECK_EQ_STR(s.tenants[0].t.gateway, "gw-b");
    CHECK_EQ_STR(s.tenants[1].t.gateway, "gw-a");
    CHECK_EQ_STR(s.tenants[5].t.gateway, "gw-b");
    CHECK_EQ_STR(s.tenants[6].t.name, "t7");
    CHECK_EQ_STR(s.tenants[6].t.gateway, "");
    e = s.epoch;
    ctl_snapshot_fini(&s);
    /* The first poll after the restart takes the unassigned tenant only:
     * gw-a and gw-b keep theirs though neither is known any more. */
    gw_poll(st, "gw-c", "http://127.0.0.1:9303", "", T0);
    ctl_state_snapshot(st, T0, &s);
    CHECK(s.epoch == e + 2);
    CHECK_EQ_STR(s.tenants[6].t.gateway, "gw-c");
    CHECK_EQ_STR(s.tenants[0].t.gateway, "gw-b");
    CHECK_EQ_STR(s.tenants[2].t.gateway, "gw-a");
    CHECK(s.ngateways == 1 && s.gateways[0].tenants == 1);
    ctl_snapshot_fini(&s);
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &store);
    CHECK_EQ_STR(owner_of(st, "t7", T0), "gw-c");
    CHECK_EQ_STR(owner_of(st, "t3", T0), "gw-a");
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* A copy of tenant name into *t; 0, or -1 if there is no such tenant. */
static int
tenant_of(struct ctl_state *st, const char *name, uint64_t now, struct ctl_tenant *t)
{
    struct ctl_snapshot s;
    const struct ctl_tenant_view *tv;

    ctl_state_snapshot(st, now, &s);
    tv = ctl_snapshot_tenant(&s, name);
    if (tv != NULL) {
        *t = tv->t;
    }
    ctl_snapshot_fini(&s);
    return tv != NULL ? 0 : -1;
}

/* Tenant id's stored record as text into rec (cap bytes). The store must
 * be closed. */
static void
get_record(const char *dir, uint32_t id, char *rec, size_t cap)
{
    static const char *const tables[] = {"meta", "tenants", "nodes", "s3keys", "sms", "placement"};
    unsigned char k[4] = {(unsigned char)(id >> 24), (unsigned char)(id >> 16),
                          (unsigned char)(id >> 8), (unsigned char)id};
    const void *val;
    size_t vlen;
    struct cm_kv *kv;
    struct cm_kv_txn *txn;

    CHECK_EQ_INT(cm_kv_open(dir, 0, tables, 6, 0, &kv), 0);
    CHECK_EQ_INT(cm_kv_begin(kv, 0, &txn), 0);
    CHECK_EQ_INT(cm_kv_get(txn, 1 /* tenants */, k, sizeof(k), &val, &vlen), 0);
    CHECK(vlen < cap);
    memcpy(rec, val, vlen);
    rec[vlen] = '\0';
    cm_kv_abort(txn);
    cm_kv_close(kv);
}

static void
test_move(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st = open_state(dir, &store);
    struct ctl_tenant t;
    char rec[512];
    uint32_t m1, m2;
    uint64_t e;

    /* No owner yet: nothing to move from. */
    CHECK_EQ_STR(create_at(st, "m1", T0), "");
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-a", T0, NULL), -EAGAIN);
    gw_poll(st, "gw-a", "http://127.0.0.1:9300", "", T0);
    gw_poll(st, "gw-b", "http://127.0.0.1:9301", "", T0);
    CHECK_EQ_STR(owner_of(st, "m1", T0), "gw-a");
    CHECK_EQ_STR(create_at(st, "m2", T0), "gw-b");
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    m1 = t.id;
    CHECK_EQ_INT(tenant_of(st, "m2", T0, &t), 0);
    m2 = t.id;

    /* Refused: unknown tenant, a bad id, a gateway that never polled;
     * each changes nothing. */
    e = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "nope", "gw-b", T0, NULL), CM_E_NOTFOUND);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "bad id", T0, NULL), CM_E_BADARG);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-x", T0, NULL), -ENXIO);
    CHECK(epoch_of(st, T0) == e);
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    CHECK_EQ_STR(t.moving_to, "");

    /* Asked: stored with an epoch bump, the owner unchanged; asking the
     * same again changes nothing. */
    memset(&t, 0, sizeof(t));
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-b", T0 + 100 * MS, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-a");
    CHECK_EQ_STR(t.moving_to, "gw-b");
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 1);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-b", T0 + 100 * MS, NULL), 0);
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 1);
    CHECK_EQ_INT(tenant_of(st, "m1", T0 + 100 * MS, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-a");
    CHECK_EQ_STR(t.moving_to, "gw-b");

    /* To the owner: cancelled, with a bump; again, no bump. */
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-a", T0 + 100 * MS, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-a");
    CHECK_EQ_STR(t.moving_to, "");
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 2);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-a", T0 + 100 * MS, NULL), 0);
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 2);

    /* A gateway that is down is refused; up again, accepted. */
    gw_poll(st, "gw-a", "http://127.0.0.1:9300", "", T0 + 6000 * MS);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-b", T0 + 6000 * MS, NULL), -EHOSTDOWN);
    CHECK_EQ_INT(tenant_of(st, "m1", T0 + 6000 * MS, &t), 0);
    CHECK_EQ_STR(t.moving_to, "");
    gw_poll(st, "gw-b", "http://127.0.0.1:9301", "", T0 + 6000 * MS);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-b", T0 + 6000 * MS, NULL), 0);

    /* Stored: "moving_to" only while a move is asked; both kept across a
     * reopen. */
    ctl_state_destroy(st);
    ctl_store_close(store);
    get_record(dir, m1, rec, sizeof(rec));
    CHECK(strstr(rec, "\"moving_to\":\"gw-b\"") != NULL);
    get_record(dir, m2, rec, sizeof(rec));
    CHECK(strstr(rec, "moving_to") == NULL);
    st = open_state(dir, &store);
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-a");
    CHECK_EQ_STR(t.moving_to, "gw-b");
    CHECK_EQ_INT(tenant_of(st, "m2", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-b");
    CHECK_EQ_STR(t.moving_to, "");

    /* Reports refused: not from the owner, a bad or equal pair, an
     * unknown tenant; none changes anything. */
    e = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-b", "gw-c"), CM_E_STALE);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-a", "gw-a"), CM_E_BADARG);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-a", "bad id"), CM_E_BADARG);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, 999, "gw-a", "gw-b"), CM_E_NOTFOUND);
    CHECK(epoch_of(st, T0) == e);
    CHECK_EQ_STR(owner_of(st, "m1", T0), "gw-a");

    /* From the owner: the target owns it, the move is done, with a bump.
     * No gateway is known after the reopen: the report needs none. */
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-a", "gw-b"), 0);
    CHECK(epoch_of(st, T0) == e + 1);
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-b");
    CHECK_EQ_STR(t.moving_to, "");
    /* Repeated (its answer lost): 0 and nothing changes, not even a move
     * asked since. */
    gw_poll(st, "gw-a", "http://127.0.0.1:9300", "", T0);
    e = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-a", "gw-b"), 0);
    CHECK(epoch_of(st, T0) == e);
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m1", "gw-a", T0, NULL), 0);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-a", "gw-b"), 0);
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-b");
    CHECK_EQ_STR(t.moving_to, "gw-a");

    /* The report wins over moving_to: m2 was asked to gw-a, its owner
     * reports it handed it to gw-c (never registered). */
    CHECK_EQ_INT(ctl_state_tenant_move(st, "m2", "gw-a", T0, NULL), 0);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m2, "gw-b", "gw-c"), 0);
    CHECK_EQ_INT(tenant_of(st, "m2", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-c");
    CHECK_EQ_STR(t.moving_to, "");

    /* A new owner is stored; a tenant deleted mid-move is just gone. */
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &store);
    CHECK_EQ_STR(owner_of(st, "m2", T0), "gw-c");
    CHECK_EQ_INT(tenant_of(st, "m1", T0, &t), 0);
    CHECK_EQ_STR(t.gateway, "gw-b");
    CHECK_EQ_STR(t.moving_to, "gw-a");
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "m1"), 0);
    CHECK_EQ_INT(ctl_state_tenant_moved(st, m1, "gw-b", "gw-a"), CM_E_NOTFOUND);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* The membership of node id in a snapshot, and whether it is up. */
static int
retire_of(struct ctl_state *st, uint32_t id, uint64_t now, int *up)
{
    struct ctl_snapshot s;
    int r = -1;

    ctl_state_snapshot(st, now, &s);
    for (size_t i = 0; i < s.nnodes; i++) {
        if (s.nodes[i].n.id == id) {
            r = s.nodes[i].n.retire;
            *up = s.nodes[i].up;
        }
    }
    ctl_snapshot_fini(&s);
    return r;
}

/* Removing nodes: refused below the widest tenant (or the default 4+2),
 * draining then removed, stored, heartbeats of a removed node refused. */
static void
test_remove(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st = open_state(dir, &store);
    struct ctl_node n;
    char why[160] = "", key[CTL_KEY_LEN + 1];
    uint64_t e;
    int up;

    for (uint32_t id = 0; id < 8; id++) {
        heartbeat(st, id, T0, 0, 0);
    }
    CHECK_EQ_INT(ctl_state_tenant_create(st, "wide", 1.0, 5, 2, 123, 0, key, NULL), 0);
    CHECK_EQ_INT(ctl_state_node_remove(st, 42, &n, why, sizeof(why)), CM_E_NOTFOUND);
    e = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_node_remove(st, 2, &n, why, sizeof(why)), 0);
    CHECK_EQ_INT(n.retire, CTL_NODE_DRAINING);
    CHECK(epoch_of(st, T0) == e + 1);
    /* Asked again: as it is, no epoch. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 2, &n, why, sizeof(why)), 0);
    CHECK(epoch_of(st, T0) == e + 1);
    /* Seven members left, width 7: one more would leave six. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 5, &n, why, sizeof(why)), -ENOSPC);
    CHECK(strstr(why, "leaves 6 nodes; tenant wide needs 7") != NULL);
    CHECK_EQ_INT(retire_of(st, 5, T0, &up), CTL_NODE_MEMBER);
    /* A draining node still beats and is up (it serves reads). */
    heartbeat(st, 2, T0 + 100 * MS, 0, 0);
    CHECK_EQ_INT(retire_of(st, 2, T0 + 100 * MS, &up), CTL_NODE_DRAINING);
    CHECK(up);
    /* Only a draining node is removed. */
    e = epoch_of(st, T0 + 100 * MS);
    CHECK_EQ_INT(ctl_state_node_removed(st, 3), 0);
    CHECK(epoch_of(st, T0 + 100 * MS) == e);
    CHECK_EQ_INT(ctl_state_node_removed(st, 2), 0);
    CHECK(epoch_of(st, T0 + 100 * MS) == e + 1);
    CHECK_EQ_INT(retire_of(st, 2, T0 + 100 * MS, &up), CTL_NODE_REMOVED);
    CHECK(!up);
    /* Its heartbeats are refused and change nothing. */
    {
        struct ctl_hb hb;

        memset(&hb, 0, sizeof(hb));
        hb.node.id = 2;
        snprintf(hb.node.addr, sizeof(hb.node.addr), "127.0.0.1:9999");
        hb.node.incarnation = 2;
        CHECK_EQ_INT(ctl_state_heartbeat(st, &hb, T0 + 200 * MS), -EIDRM);
    }
    CHECK_EQ_INT(retire_of(st, 2, T0 + 200 * MS, &up), CTL_NODE_REMOVED);
    CHECK(!up);
    CHECK(epoch_of(st, T0 + 200 * MS) == e + 1);
    /* Removing a removed node: as it is. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 2, &n, why, sizeof(why)), 0);
    CHECK_EQ_INT(n.retire, CTL_NODE_REMOVED);
    CHECK_EQ_STR(n.addr, "127.0.0.1:9502");
    /* Stored: after a reopen it is removed and down, 4 draining. */
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "wide"), 0);
    CHECK_EQ_INT(ctl_state_node_remove(st, 4, &n, why, sizeof(why)), 0);
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &store);
    CHECK_EQ_INT(retire_of(st, 2, T0, &up), CTL_NODE_REMOVED);
    CHECK(!up);
    CHECK_EQ_INT(retire_of(st, 4, T0, &up), CTL_NODE_DRAINING);
    CHECK(up);
    /* A draining node's beat keeps its membership (the beat carries none). */
    heartbeat(st, 4, T0, 0, 0);
    CHECK_EQ_INT(retire_of(st, 4, T0, &up), CTL_NODE_DRAINING);
    /* Six members, the default width 6: no more. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 0, &n, why, sizeof(why)), -ENOSPC);
    CHECK(strstr(why, "a new tenant needs 6") != NULL);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* A removal canceled while the node drains: a member again, stored; not
 * once it is removed. */
static void
test_keep(void)
{
    char *dir = t_tmpdir();
    struct ctl_store *store;
    struct ctl_state *st = open_state(dir, &store);
    struct ctl_node n;
    char why[160] = "";
    uint64_t e;
    int up = 0;

    for (uint32_t id = 0; id < 8; id++) {
        heartbeat(st, id, T0, 0, 0);
    }
    CHECK_EQ_INT(ctl_state_node_keep(st, 42, &n, &up), CM_E_NOTFOUND);
    /* A member: as it is, no epoch. */
    e = epoch_of(st, T0);
    CHECK_EQ_INT(ctl_state_node_keep(st, 3, &n, &up), 0);
    CHECK_EQ_INT(n.retire, CTL_NODE_MEMBER);
    CHECK(up);
    CHECK(epoch_of(st, T0) == e);
    /* Draining, then kept: a member again with an epoch bump. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 3, &n, why, sizeof(why)), 0);
    CHECK_EQ_INT(ctl_state_node_keep(st, 3, &n, &up), 0);
    CHECK_EQ_INT(n.retire, CTL_NODE_MEMBER);
    CHECK_EQ_STR(n.addr, "127.0.0.1:9503");
    CHECK(epoch_of(st, T0) == e + 2);
    CHECK_EQ_INT(retire_of(st, 3, T0, &up), CTL_NODE_MEMBER);
    /* What the removal check would do next finds a member: nothing. */
    CHECK_EQ_INT(ctl_state_node_removed(st, 3), 0);
    CHECK_EQ_INT(retire_of(st, 3, T0, &up), CTL_NODE_MEMBER);
    CHECK(up);
    CHECK(epoch_of(st, T0) == e + 2);
    /* Removed for good: not kept. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 5, &n, why, sizeof(why)), 0);
    CHECK_EQ_INT(ctl_state_node_removed(st, 5), 0);
    CHECK_EQ_INT(ctl_state_node_keep(st, 5, &n, &up), -EIDRM);
    CHECK_EQ_INT(retire_of(st, 5, T0, &up), CTL_NODE_REMOVED);
    /* Stored: after a reopen 3 is a member, 6 (kept while down) too. */
    CHECK_EQ_INT(ctl_state_node_remove(st, 6, &n, why, sizeof(why)), 0);
    for (uint64_t at = 1000; at <= 8000; at += 1000) { /* the others heard, 6 silent */
        for (uint32_t id = 0; id < 8; id++) {
            if (id != 5 && id != 6) {
                heartbeat(st, id, T0 + at * MS, 0, 0);
            }
        }
        ctl_state_tick(st, T0 + at * MS);
    }
    CHECK_EQ_INT(ctl_state_node_keep(st, 6, &n, &up), 0);
    CHECK(!up);
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &store);
    CHECK_EQ_INT(retire_of(st, 3, T0, &up), CTL_NODE_MEMBER);
    CHECK_EQ_INT(retire_of(st, 6, T0, &up), CTL_NODE_MEMBER);
    CHECK_EQ_INT(retire_of(st, 5, T0, &up), CTL_NODE_REMOVED);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
}

/* Bit i: the i-th node (id order) is up. */
static unsigned
up_mask(struct ctl_state *st, uint64_t now)
{
    struct ctl_snapshot s;
    unsigned m = 0;

    ctl_state_snapshot(st, now, &s);
    for (size_t i = 0; i < s.nnodes; i++) {
        m |= (unsigned)s.nodes[i].up << i;
    }
    ctl_snapshot_fini(&s);
    return m;
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
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 2.0, 0, -1, 123, 0, key, &t), 0);
    CHECK_EQ_INT(t.id, 1);
    CHECK_EQ_INT(t.ec_k, 4);
    CHECK_EQ_INT(t.ec_m, 2);
    cm_sha256_hex(key, strlen(key), hash);
    CHECK_EQ_STR(t.key_hash[0], hash);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 123, 0, key2, NULL), CM_E_EXISTS);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "beta", 1.0, 2, 1, 123, 0, key2, &t), 0);
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
    /* Node 1 falls silent; node 3 keeps reporting: node 1 is down once
     * node 3 is heard after node 1's timeout ran out, not before. */
    heartbeat(st, 3, T0 + 3500 * MS, 0, 0);
    ctl_state_tick(st, T0 + 4001 * MS);
    CHECK(up_mask(st, T0 + 4001 * MS) == 3);
    heartbeat(st, 3, T0 + 4001 * MS, 0, 0);
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
    /* ... and while no node is heard at all, kept so: a controller that hears
     * none judges none. */
    ctl_state_tick(st, T0);
    ctl_state_tick(st, T0 + 2000 * MS);
    ctl_state_tick(st, T0 + 9000 * MS);
    CHECK(up_mask(st, T0 + 9000 * MS) == 3);
    /* Node 3 heard from 10 s on: node 1, silent since the first tick, is down
     * once node 3 has been heard for a node timeout, not before. */
    heartbeat(st, 3, T0 + 10000 * MS, 0, 0);
    heartbeat(st, 3, T0 + 12000 * MS, 0, 0);
    ctl_state_tick(st, T0 + 12500 * MS);
    CHECK(up_mask(st, T0 + 12500 * MS) == 3);
    ctl_state_tick(st, T0 + 13001 * MS);
    CHECK(up_mask(st, T0 + 13001 * MS) == 2);
    /* Both heard, then neither for 10 s (the controller cut off): no
     * verdict, and none when the first is heard again, before the other's
     * next heartbeat. */
    heartbeat(st, 1, T0 + 13500 * MS, 0, 0);
    heartbeat(st, 3, T0 + 13500 * MS, 0, 0);
    ctl_state_tick(st, T0 + 23500 * MS);
    heartbeat(st, 3, T0 + 23600 * MS, 0, 0);
    ctl_state_tick(st, T0 + 24000 * MS);
    CHECK(up_mask(st, T0 + 24000 * MS) == 3);
    heartbeat(st, 1, T0 + 24400 * MS, 0, 0);
    heartbeat(st, 3, T0 + 25600 * MS, 0, 0);
    ctl_state_tick(st, T0 + 26700 * MS);
    CHECK(up_mask(st, T0 + 26700 * MS) == 3);
    /* Judged again: node 1 silent past the timeout while node 3 is heard. */
    heartbeat(st, 3, T0 + 27500 * MS, 0, 0);
    ctl_state_tick(st, T0 + 27500 * MS);
    CHECK(up_mask(st, T0 + 27500 * MS) == 2);
    /* Heartbeats a second apart, then none (the controller cut off): the
     * first to fall silent is not down before the other's timeout runs out
     * too, since none is heard after its own. */
    heartbeat(st, 1, T0 + 28000 * MS, 0, 0);
    heartbeat(st, 3, T0 + 28900 * MS, 0, 0);
    ctl_state_tick(st, T0 + 31500 * MS);
    ctl_state_tick(st, T0 + 32200 * MS);
    CHECK(up_mask(st, T0 + 32200 * MS) == 3);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "gamma", 1.0, 0, -1, 1, 0, key, &t), 0);
    CHECK_EQ_INT(t.id, 3);
    ctl_state_destroy(st);
    ctl_store_close(store);
    t_rmtree(dir);
    test_gateways();
    test_move();
    test_remove();
    test_keep();
    fprintf(stderr, "ok\n");
    return 0;
}
