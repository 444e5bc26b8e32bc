/*
 * ctl_state.c - tenants, nodes, epoch and rates behind one mutex (see
 * ctl_state.h for the invariants).
 *
 * Rates: each (node, tenant) keeps the last cumulative counters a node
 * reported (served and arrived requests, bytes and dominant cost, queue
 * waits). A new report at least RATE_MIN_DT later turns the deltas into
 * instantaneous rates folded into EWMAs (RATE_ALPHA per report, i.e. about
 * a 1-2 s memory at one heartbeat a second). A counter that went down
 * means the node restarted: the baseline is reset, the rates kept. Only up
 * nodes count towards tenant rates, node load and the capacity.
 *
 * Gateways and the tenants they own: ctl_state_gw.c.
 *
 * Naming: do_x() expects st->mu held; x() takes it.
 */
#include "ctl_state.h"
#include "ctl_state_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_s3keys.h"
#include "ctl_store.h"

#define RATE_ALPHA 0.5
#define RATE_MIN_DT_NS 200000000ull

/* The cumulative counters of a (node, tenant) that become rates. */
enum { C_REQ, C_BYTES, C_ARR_REQ, C_ARR_BYTES, C_ARR_COST, C_COST, C_QW_S, C_QW_N, C_N };

struct ntstat {
    uint32_t tenant;
    int primed; /* rate[] holds a measurement */
    uint64_t queued;
    double weight; /* local weight as reported; 0: not reported */
    uint64_t t_ns; /* when last[] was taken */
    double last[C_N];
    double rate[C_N];
};

struct node_rec {
    struct ctl_node n;
    int up;
    uint64_t last_seen_ns; /* 0: never since start */
    uint64_t used_bytes, instances;
    char sched[CTL_SCHED_MAX];
    double cap_ops, cap_bytes;
    size_t nstats;
    struct ntstat *stats;
};

int
ctl_state_create(struct ctl_store *store, const struct ctl_state_cfg *cfg, struct ctl_state **out)
{
    struct ctl_store_state ss;
    struct ctl_state *st = NULL;
    int rc = ctl_store_load(store, &ss);

    if (rc < 0) {
        goto out;
    }
    st = cm_calloc(1, sizeof(*st));
    pthread_mutex_init(&st->mu, NULL);
    st->store = store;
    st->cfg = *cfg;
    st->epoch = ss.epoch + 1;
    st->partitions = cfg->partitions;
    st->next_tenant_id = ss.next_tenant_id;
    st->ntenants = ss.ntenants;
    st->tenants = ss.tenants;
    st->nnodes = ss.nnodes;
    st->nodes = cm_calloc(ss.nnodes ? ss.nnodes : 1, sizeof(*st->nodes));
    /* Nodes known before a restart are presumed up until they stay silent
     * for node_timeout from our first tick: a controller restart must not
     * make gateways write around every node at once. */
    for (size_t i = 0; i < ss.nnodes; i++) {
        st->nodes[i].n = ss.nodes[i];
        st->nodes[i].up = ss.nodes[i].retire != CTL_NODE_REMOVED;
    }
    free(ss.nodes);
    rc = ctl_s3set_create(cfg->s3_master, ss.s3keys, ss.ns3keys, &st->s3);
    if (rc < 0) {
        ctl_state_destroy(st);
        st = NULL;
        goto out;
    }
    if (ss.partitions != 0 && ss.partitions != cfg->partitions) {
        CM_WARN("partition count changed old=%u new=%u", ss.partitions, cfg->partitions);
    }
    rc = ctl_store_put_meta(store, st->epoch, st->partitions);
    if (rc < 0) {
        ctl_state_destroy(st);
        st = NULL;
        goto out;
    }
    CM_INFO("state loaded tenants=%zu nodes=%zu epoch=%llu partitions=%u", st->ntenants, st->nnodes,
            (unsigned long long)st->epoch, st->partitions);
out:
    *out = st;
    return rc;
}

void
ctl_state_destroy(struct ctl_state *st)
{
    if (st == NULL) {
        return;
    }
    for (size_t i = 0; i < st->nnodes; i++) {
        free(st->nodes[i].stats);
    }
    free(st->nodes);
    free(st->gws);
    free(st->tenants);
    ctl_s3set_destroy(st->s3);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

struct ctl_tenant *
ctl_do_find_tenant(struct ctl_state *st, const char *name)
{
    for (size_t i = 0; i < st->ntenants; i++) {
        if (strcmp(st->tenants[i].name, name) == 0) {
            return &st->tenants[i];
        }
    }
    return NULL;
}

/*
 * Callers read the clock before they take the lock, so two threads can
 * arrive with their times out of order: a heartbeat stamped later than a
 * tick that then runs after it. Time inside the state never goes back, or
 * now - last_seen would wrap and call a live node silent for 584 years.
 */
uint64_t
ctl_do_clock(struct ctl_state *st, uint64_t now_ns)
{
    if (now_ns > st->now_ns) {
        st->now_ns = now_ns;
    }
    return st->now_ns;
}

/* Persists the epoch after an in-memory-only change (liveness, the gateway
 * registry). */
void
ctl_do_bump_epoch(struct ctl_state *st)
{
    st->epoch++;
    if (ctl_store_put_meta(st->store, st->epoch, st->partitions) < 0) {
        CM_WARN("epoch not persisted epoch=%llu", (unsigned long long)st->epoch);
    }
}

/* ---- tenants ---- */

int
ctl_state_tenant_create(struct ctl_state *st, const char *name, double weight, int ec_k, int ec_m,
                        uint64_t now_wall_ms, uint64_t now_ns, char *key, struct ctl_tenant *out)
{
    struct ctl_tenant t;
    int rc;

    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "%s", name);
    t.weight = weight;
    t.ec_k = ec_k > 0 ? ec_k : st->cfg.ec_k;
    t.ec_m = ec_m >= 0 ? ec_m : st->cfg.ec_m;
    t.created_ms = now_wall_ms;
    t.nkeys = 1;
    rc = ctl_key_new(key, t.key_hash[0]);
    if (rc < 0) {
        return rc;
    }
    pthread_mutex_lock(&st->mu);
    if (ctl_do_find_tenant(st, name) != NULL) {
        rc = CM_E_EXISTS;
        goto out;
    }
    if (st->next_tenant_id == UINT32_MAX) {
        rc = -ENOSPC;
        goto out;
    }
    t.id = st->next_tenant_id;
    ctl_do_pick_owner(st, ctl_do_clock(st, now_ns), t.gateway);
    rc = ctl_store_put_tenant(st->store, &t, st->epoch + 1, t.id + 1);
    if (rc < 0) {
        goto out;
    }
    st->epoch++;
    st->next_tenant_id = t.id + 1;
    st->tenants = cm_realloc(st->tenants, (st->ntenants + 1) * sizeof(t));
    st->tenants[st->ntenants++] = t;
    if (out != NULL) {
        *out = t;
    }
    CM_INFO("tenant created tenant=%u name=%s weight=%g epoch=%llu", t.id, t.name, t.weight,
            (unsigned long long)st->epoch);
    if (t.gateway[0] != '\0') {
        CM_INFO("tenant assigned tenant=%u gateway=%s epoch=%llu", t.id, t.gateway,
                (unsigned long long)st->epoch);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_do_update_tenant(struct ctl_state *st, struct ctl_tenant *t, const struct ctl_tenant *nt)
{
    int rc = ctl_store_put_tenant(st->store, nt, st->epoch + 1, st->next_tenant_id);

    if (rc == 0) {
        st->epoch++;
        *t = *nt;
    }
    return rc;
}

int
ctl_state_tenant_set_weight(struct ctl_state *st, const char *name, double weight,
                            struct ctl_tenant *out)
{
    struct ctl_tenant *t, nt;
    int rc = 0;

    pthread_mutex_lock(&st->mu);
    t = ctl_do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (t->weight != weight) {
        nt = *t;
        nt.weight = weight;
        rc = ctl_do_update_tenant(st, t, &nt);
        if (rc < 0) {
            goto out;
        }
        CM_INFO("tenant weight set tenant=%u weight=%g epoch=%llu", t->id, weight,
                (unsigned long long)st->epoch);
    }
    if (out != NULL) {
        *out = *t;
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_tenant_rotate_key(struct ctl_state *st, const char *name, char *key,
                            struct ctl_tenant *out)
{
    struct ctl_tenant *t, nt;
    char hash[65];
    int rc = ctl_key_new(key, hash);

    if (rc < 0) {
        return rc;
    }
    pthread_mutex_lock(&st->mu);
    t = ctl_do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    nt = *t;
    memset(nt.key_hash, 0, sizeof(nt.key_hash));
    memcpy(nt.key_hash[0], hash, sizeof(hash));
    nt.nkeys = 1;
    rc = ctl_do_update_tenant(st, t, &nt);
    if (rc < 0) {
        goto out;
    }
    if (out != NULL) {
        *out = *t;
    }
    CM_INFO("tenant key rotated tenant=%u epoch=%llu", t->id, (unsigned long long)st->epoch);
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_tenant_delete(struct ctl_state *st, const char *name)
{
    struct ctl_tenant *t;
    size_t i;
    uint32_t id;
    int rc;

    pthread_mutex_lock(&st->mu);
    t = ctl_do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    id = t->id;
    rc = ctl_store_del_tenant(st->store, id, st->epoch + 1);
    if (rc < 0) {
        goto out;
    }
    st->epoch++;
    ctl_s3set_drop_tenant(st->s3, id);
    i = (size_t)(t - st->tenants);
    memmove(t, t + 1, (st->ntenants - i - 1) * sizeof(*t));
    st->ntenants--;
    CM_INFO("tenant deleted tenant=%u epoch=%llu", id, (unsigned long long)st->epoch);
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_with_s3(struct ctl_state *st, const char *name,
                  int (*fn)(void *arg, const struct ctl_state_s3 *x), void *arg)
{
    struct ctl_state_s3 x = {st->store, st->s3, NULL, 0};
    int rc;

    pthread_mutex_lock(&st->mu);
    if (name != NULL && (x.tenant = ctl_do_find_tenant(st, name)) == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    x.epoch = st->epoch;
    rc = fn(arg, &x);
    if (rc == CTL_STATE_STORED) {
        st->epoch++;
    } else if (rc == CTL_STATE_BUMP) {
        ctl_do_bump_epoch(st);
    }
    rc = rc < 0 ? rc : 0;
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/*
 * A node silent for the node timeout is down once another node has been
 * heard since its timeout ran out, and the controller has heard nodes
 * without a gap of a node timeout for a node timeout. A controller that
 * hears none (its host cut off, or just started with every node gone)
 * would otherwise call every node down, one heartbeat interval apart, and
 * the moment it was heard again the gateways would take its word before
 * the nodes' next heartbeats and write around them (a controller cut off
 * for 12 s: 683 requests answered 503 in half a second). A verdict comes
 * up to a heartbeat interval later for it. Not judging costs nothing on
 * the data path: a gateway does not use a node its own connection finds
 * dead, whatever the controller says.
 */
static void
do_tick(struct ctl_state *st, uint64_t now_ns)
{
    uint64_t t = st->cfg.node_timeout_ns;

    for (size_t i = 0; i < st->nnodes; i++) {
        if (st->nodes[i].up && st->nodes[i].last_seen_ns == 0) {
            st->nodes[i].last_seen_ns = now_ns; /* presumed up since our start */
        }
    }
    if (st->heard_ns != 0 && now_ns > st->heard_ns + t && !st->deaf) {
        st->deaf = 1;
        CM_WARN("controller hears no node silent_ms=%llu: nodes are not judged until "
                "they are heard again (this controller's network?)",
                (unsigned long long)((now_ns - st->heard_ns) / 1000000));
    }
    if (st->heard_ns == 0 || now_ns < st->hearing_since_ns + t) {
        return;
    }
    for (size_t i = 0; i < st->nnodes; i++) {
        struct node_rec *nr = &st->nodes[i];

        if (nr->up && now_ns - nr->last_seen_ns > t && st->heard_ns > nr->last_seen_ns + t) {
            nr->up = 0;
            ctl_do_bump_epoch(st);
            CM_WARN("node down node=%u addr=%s silent_ms=%llu epoch=%llu", nr->n.id, nr->n.addr,
                    (unsigned long long)((now_ns - nr->last_seen_ns) / 1000000),
                    (unsigned long long)st->epoch);
        }
    }
}

void
ctl_state_tick(struct ctl_state *st, uint64_t now_ns)
{
    pthread_mutex_lock(&st->mu);
    do_tick(st, ctl_do_clock(st, now_ns));
    pthread_mutex_unlock(&st->mu);
}

/* The record of node id, inserted (id order, zeroed but for the id) if new. */
static struct node_rec *
do_node_entry(struct ctl_state *st, uint32_t id, int *created)
{
    size_t i = 0;

    while (i < st->nnodes && st->nodes[i].n.id < id) {
        i++;
    }
    *created = !(i < st->nnodes && st->nodes[i].n.id == id);
    if (*created) {
        st->nodes = cm_realloc(st->nodes, (st->nnodes + 1) * sizeof(*st->nodes));
        memmove(&st->nodes[i + 1], &st->nodes[i], (st->nnodes - i) * sizeof(*st->nodes));
        memset(&st->nodes[i], 0, sizeof(st->nodes[i]));
        st->nodes[i].n.id = id;
        st->nnodes++;
    }
    return &st->nodes[i];
}

static void
do_fold_stats(struct node_rec *nr, const struct ctl_hb_tenant *ht, uint64_t now_ns)
{
    const double v[C_N] = {
        [C_REQ] = (double)ht->requests,
        [C_BYTES] = (double)ht->bytes,
        [C_ARR_REQ] = (double)ht->arrived_requests,
        [C_ARR_BYTES] = (double)ht->arrived_bytes,
        [C_ARR_COST] = ht->arrived_cost,
        [C_COST] = ht->served_cost,
        [C_QW_S] = ht->queue_wait_s,
        [C_QW_N] = (double)ht->queue_waits,
    };
    struct ntstat *s = NULL;
    double dt;
    int k;

    for (size_t i = 0; i < nr->nstats; i++) {
        if (nr->stats[i].tenant == ht->id) {
            s = &nr->stats[i];
            break;
        }
    }
    if (s == NULL) {
        nr->stats = cm_realloc(nr->stats, (nr->nstats + 1) * sizeof(*s));
        s = &nr->stats[nr->nstats++];
        memset(s, 0, sizeof(*s));
        s->tenant = ht->id;
        memcpy(s->last, v, sizeof(v));
        s->t_ns = now_ns;
    }
    s->queued = ht->queued;
    s->weight = ht->weight;
    for (k = 0; k < C_N && v[k] >= s->last[k]; k++) {
    }
    if (k < C_N) {
        memcpy(s->last, v, sizeof(v));
        s->t_ns = now_ns;
        return;
    }
    if (now_ns - s->t_ns < RATE_MIN_DT_NS) {
        return;
    }
    dt = (double)(now_ns - s->t_ns) / 1e9;
    for (k = 0; k < C_N; k++) {
        double r = (v[k] - s->last[k]) / dt;

        s->rate[k] = s->primed ? RATE_ALPHA * r + (1 - RATE_ALPHA) * s->rate[k] : r;
    }
    s->primed = 1;
    memcpy(s->last, v, sizeof(v));
    s->t_ns = now_ns;
}

int
ctl_state_heartbeat(struct ctl_state *st, const struct ctl_hb *hb, uint64_t now_ns)
{
    struct ctl_node n;
    struct node_rec *nr;
    int created, changed, rc = 0;

    pthread_mutex_lock(&st->mu);
    now_ns = ctl_do_clock(st, now_ns);
    do_tick(st, now_ns);
    nr = do_node_entry(st, hb->node.id, &created);
    if (nr->n.retire == CTL_NODE_REMOVED) {
        rc = -EIDRM; /* its id is never heard again */
        goto out;
    }
    n = hb->node;
    n.retire = created ? CTL_NODE_MEMBER : nr->n.retire;
    changed = created || strcmp(nr->n.addr, n.addr) != 0 ||
              strcmp(nr->n.metrics_addr, n.metrics_addr) != 0 ||
              nr->n.capacity_bytes != n.capacity_bytes || nr->n.incarnation != n.incarnation;
    if (changed) {
        rc = ctl_store_put_node(st->store, &n, st->epoch + 1);
        if (rc < 0) {
            if (created) {
                memmove(nr, nr + 1, (st->nnodes - (size_t)(nr - st->nodes) - 1) * sizeof(*nr));
                st->nnodes--;
            }
            goto out;
        }
        st->epoch++;
        if (nr->n.incarnation != hb->node.incarnation && !created) {
            CM_INFO("node restarted node=%u incarnation=%llu", hb->node.id,
                    (unsigned long long)hb->node.incarnation);
        }
        nr->n = n;
        CM_INFO("node %s node=%u addr=%s epoch=%llu", created ? "registered" : "updated", nr->n.id,
                nr->n.addr, (unsigned long long)st->epoch);
    }
    if (!nr->up) {
        nr->up = 1;
        if (!changed) {
            ctl_do_bump_epoch(st);
        }
        CM_INFO("node up node=%u addr=%s epoch=%llu", nr->n.id, nr->n.addr,
                (unsigned long long)st->epoch);
    }
    nr->last_seen_ns = now_ns;
    if (st->heard_ns == 0 || now_ns > st->heard_ns + st->cfg.node_timeout_ns) {
        st->hearing_since_ns = now_ns;
        if (st->deaf) {
            CM_INFO("controller hears nodes again node=%u", nr->n.id);
        }
        st->deaf = 0;
    }
    st->heard_ns = now_ns;
    nr->used_bytes = hb->used_bytes;
    nr->instances = hb->instances;
    memcpy(nr->sched, hb->sched, sizeof(nr->sched));
    nr->sched[sizeof(nr->sched) - 1] = '\0';
    nr->cap_ops = hb->cap_ops;
    nr->cap_bytes = hb->cap_bytes;
    for (size_t i = 0; i < hb->ntenants; i++) {
        do_fold_stats(nr, &hb->tenants[i], now_ns);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static struct node_rec *
do_find_node(struct ctl_state *st, uint32_t id)
{
    for (size_t i = 0; i < st->nnodes; i++) {
        if (st->nodes[i].n.id == id) {
            return &st->nodes[i];
        }
    }
    return NULL;
}

/* Stores nr's membership as retire with an epoch bump. */
static int
do_set_retire(struct ctl_state *st, struct node_rec *nr, int retire)
{
    struct ctl_node n = nr->n;
    int rc;

    n.retire = retire;
    rc = ctl_store_put_node(st->store, &n, st->epoch + 1);
    if (rc < 0) {
        return rc;
    }
    nr->n.retire = retire;
    st->epoch++;
    return 0;
}

int
ctl_state_node_remove(struct ctl_state *st, uint32_t id, struct ctl_node *out, char *why,
                      size_t whylen)
{
    struct node_rec *nr;
    size_t left = 0;
    int width = st->cfg.ec_k + st->cfg.ec_m, rc = 0;
    const char *widest = NULL;

    pthread_mutex_lock(&st->mu);
    nr = do_find_node(st, id);
    if (nr == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (nr->n.retire != CTL_NODE_MEMBER) {
        goto done; /* asked again: as it is */
    }
    for (size_t i = 0; i < st->nnodes; i++) {
        left += st->nodes[i].n.id != id && st->nodes[i].n.retire == CTL_NODE_MEMBER;
    }
    for (size_t i = 0; i < st->ntenants; i++) {
        if (st->tenants[i].ec_k + st->tenants[i].ec_m > width) {
            width = st->tenants[i].ec_k + st->tenants[i].ec_m;
            widest = st->tenants[i].name;
        }
    }
    if (left < (size_t)width) {
        snprintf(why, whylen, "removing node %u leaves %zu nodes; %s%s needs %d", id, left,
                 widest ? "tenant " : "a new tenant", widest ? widest : "", width);
        rc = -ENOSPC;
        goto out;
    }
    rc = do_set_retire(st, nr, CTL_NODE_DRAINING);
    if (rc == 0) {
        CM_INFO("node draining node=%u addr=%s epoch=%llu", id, nr->n.addr,
                (unsigned long long)st->epoch);
    }
done:
    if (rc == 0 && out != NULL) {
        *out = nr->n;
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_node_removed(struct ctl_state *st, uint32_t id)
{
    struct node_rec *nr;
    int rc = 0;

    pthread_mutex_lock(&st->mu);
    nr = do_find_node(st, id);
    if (nr != NULL && nr->n.retire == CTL_NODE_DRAINING) {
        rc = do_set_retire(st, nr, CTL_NODE_REMOVED);
        if (rc == 0) {
            nr->up = 0;
            CM_INFO("node removed node=%u addr=%s epoch=%llu", id, nr->n.addr,
                    (unsigned long long)st->epoch);
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_node_keep(struct ctl_state *st, uint32_t id, struct ctl_node *out, int *up)
{
    struct node_rec *nr;
    int rc = 0;

    pthread_mutex_lock(&st->mu);
    nr = do_find_node(st, id);
    if (nr == NULL) {
        rc = CM_E_NOTFOUND;
    } else if (nr->n.retire == CTL_NODE_REMOVED) {
        rc = -EIDRM;
    } else if (nr->n.retire == CTL_NODE_DRAINING &&
               (rc = do_set_retire(st, nr, CTL_NODE_MEMBER)) == 0) {
        CM_INFO("node removal canceled node=%u addr=%s epoch=%llu", id, nr->n.addr,
                (unsigned long long)st->epoch);
    }
    if (rc == 0 && out != NULL) {
        *out = nr->n;
        *up = nr->up;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

const char *
ctl_node_state(const struct ctl_node_view *nv)
{
    return nv->n.retire == CTL_NODE_REMOVED ? "removed" : nv->up ? "up" : "down";
}

static struct ctl_tenant_view *
view_by_id(struct ctl_snapshot *s, uint32_t id)
{
    size_t lo = 0, hi = s->ntenants;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->tenants[mid].t.id == id) {
            return &s->tenants[mid];
        }
        if (s->tenants[mid].t.id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Adds node nr's figures (an up node) to its view nv, the tenants' views
 * and the local weights; qw accumulates each tenant's queue-wait rates
 * (seconds, count) by view index. */
static void
do_snapshot_node(const struct node_rec *nr, struct ctl_node_view *nv, struct ctl_snapshot *out,
                 double *qw)
{
    for (size_t j = 0; j < nr->nstats; j++) {
        const struct ntstat *s = &nr->stats[j];
        struct ctl_tenant_view *tv = view_by_id(out, s->tenant);
        size_t ti;

        nv->load += s->rate[C_REQ];
        nv->byte_load += s->rate[C_BYTES];
        nv->share_load += s->rate[C_COST];
        if (tv == NULL) {
            continue;
        }
        ti = (size_t)(tv - out->tenants);
        tv->req_rate += s->rate[C_REQ];
        tv->byte_rate += s->rate[C_BYTES];
        tv->queued += (double)s->queued;
        tv->arr_req_rate += s->rate[C_ARR_REQ];
        tv->arr_byte_rate += s->rate[C_ARR_BYTES];
        tv->demand += s->rate[C_ARR_COST];
        tv->share += s->rate[C_COST];
        qw[2 * ti] += s->rate[C_QW_S];
        qw[2 * ti + 1] += s->rate[C_QW_N];
        if (s->weight > 0) {
            struct ctl_local_weight *lw = &out->local[out->nlocal++];

            lw->node = nr->n.id;
            lw->tenant = s->tenant;
            lw->weight = s->weight;
        }
    }
    /* With an emulated cap the node serves exactly one node's worth of
     * capacity when busy; without, what it served is the estimate. */
    nv->capacity = nr->cap_ops > 0 || nr->cap_bytes > 0 ? 1.0 : nv->share_load;
    out->capacity += nv->capacity;
}

/* Node, then tenant order. */
static int
cmp_node_tenant(uint32_t xn, uint32_t xt, uint32_t yn, uint32_t yt)
{
    if (xn != yn) {
        return xn < yn ? -1 : 1;
    }
    return xt < yt ? -1 : xt > yt;
}

static int
cmp_local(const void *a, const void *b)
{
    const struct ctl_local_weight *x = a, *y = b;

    return cmp_node_tenant(x->node, x->tenant, y->node, y->tenant);
}

void
ctl_state_snapshot(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out)
{
    size_t nlocal = 0;
    double *qw;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&st->mu);
    now_ns = ctl_do_clock(st, now_ns);
    do_tick(st, now_ns);
    out->epoch = st->epoch;
    out->partitions = st->partitions;
    out->ntenants = st->ntenants;
    out->tenants = cm_calloc(st->ntenants ? st->ntenants : 1, sizeof(*out->tenants));
    qw = cm_calloc(2 * st->ntenants + 1, sizeof(*qw));
    for (size_t i = 0; i < st->ntenants; i++) {
        out->tenants[i].t = st->tenants[i];
    }
    for (size_t i = 0; i < st->nnodes; i++) {
        nlocal += st->nodes[i].nstats;
    }
    out->local = cm_calloc(nlocal + 1, sizeof(*out->local));
    out->nnodes = st->nnodes;
    out->nodes = cm_calloc(st->nnodes ? st->nnodes : 1, sizeof(*out->nodes));
    for (size_t i = 0; i < st->nnodes; i++) {
        const struct node_rec *nr = &st->nodes[i];
        struct ctl_node_view *nv = &out->nodes[i];

        nv->n = nr->n;
        nv->up = nr->up;
        nv->used_bytes = nr->used_bytes;
        nv->instances = nr->instances;
        memcpy(nv->sched, nr->sched, sizeof(nv->sched));
        nv->cap_ops = nr->cap_ops;
        nv->cap_bytes = nr->cap_bytes;
        nv->seen_ms_ago = nr->last_seen_ns ? (int64_t)((now_ns - nr->last_seen_ns) / 1000000) : -1;
        if (nr->up) {
            do_snapshot_node(nr, nv, out, qw);
        }
    }
    ctl_do_snapshot_gateways(st, now_ns, out);
    pthread_mutex_unlock(&st->mu);
    qsort(out->local, out->nlocal, sizeof(*out->local), cmp_local);
    for (size_t i = 0; i < out->ntenants; i++) {
        out->tenants[i].queue_wait = qw[2 * i + 1] > 0 ? qw[2 * i] / qw[2 * i + 1] : 0.0;
    }
    free(qw);
}

static int
cmp_cell(const void *a, const void *b)
{
    const struct ctl_cell *x = a, *y = b;

    return cmp_node_tenant(x->node, x->tenant, y->node, y->tenant);
}

size_t
ctl_state_cells(struct ctl_state *st, struct ctl_cell **out)
{
    size_t n = 0, cap = 0;
    struct ctl_cell *c;

    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < st->nnodes; i++) {
        cap += st->nodes[i].up ? st->nodes[i].nstats : 0;
    }
    c = cm_calloc(cap + 1, sizeof(*c));
    for (size_t i = 0; i < st->nnodes; i++) {
        const struct node_rec *nr = &st->nodes[i];

        for (size_t j = 0; j < nr->nstats && nr->up; j++) {
            const struct ntstat *s = &nr->stats[j];

            c[n].node = nr->n.id;
            c[n].tenant = s->tenant;
            c[n].demand = s->rate[C_ARR_COST];
            c[n].served = s->rate[C_COST];
            c[n].wait = s->rate[C_QW_N] > 0 ? s->rate[C_QW_S] / s->rate[C_QW_N] : 0.0;
            n++;
        }
    }
    pthread_mutex_unlock(&st->mu);
    qsort(c, n, sizeof(*c), cmp_cell);
    *out = c;
    return n;
}

void
ctl_snapshot_fini(struct ctl_snapshot *snap)
{
    free(snap->tenants);
    free(snap->nodes);
    free(snap->local);
    free(snap->gateways);
    memset(snap, 0, sizeof(*snap));
}

const struct ctl_tenant_view *
ctl_snapshot_tenant(const struct ctl_snapshot *snap, const char *name)
{
    for (size_t i = 0; i < snap->ntenants; i++) {
        if (strcmp(snap->tenants[i].t.name, name) == 0) {
            return &snap->tenants[i];
        }
    }
    return NULL;
}
