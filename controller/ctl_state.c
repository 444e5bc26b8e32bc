/*
 * ctl_state.c - tenants, nodes, epoch and rates behind one mutex (see
 * ctl_state.h for the invariants).
 *
 * Rates: each (node, tenant) keeps the last cumulative counters a node
 * reported. A new report at least RATE_MIN_DT later turns the delta into
 * an instantaneous rate folded into an EWMA (RATE_ALPHA per report, i.e.
 * about a 1-2 s memory at one heartbeat a second). A counter that went
 * down means the node restarted: the baseline is reset, the rate kept.
 * Only up nodes count towards tenant rates and node load.
 *
 * Naming: do_x() expects st->mu held; x() takes it.
 */
#include "ctl_state.h"

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

struct ntstat {
    uint32_t tenant;
    int primed; /* req_rate/byte_rate hold a measurement */
    uint64_t req, bytes, queued;
    uint64_t t_ns; /* when req/bytes were taken */
    double req_rate, byte_rate;
};

struct node_rec {
    struct ctl_node n;
    int up;
    uint64_t last_seen_ns; /* 0: never since start */
    uint64_t used_bytes, instances;
    size_t nstats;
    struct ntstat *stats;
};

struct ctl_state {
    pthread_mutex_t mu;
    struct ctl_store *store; /* borrowed */
    struct ctl_state_cfg cfg;
    uint64_t epoch;
    uint32_t partitions;
    uint32_t next_tenant_id;
    size_t ntenants;
    struct ctl_tenant *tenants; /* id order */
    size_t nnodes;
    struct node_rec *nodes; /* id order */
    uint64_t now_ns;        /* latest time any caller passed in; never goes back */
    struct ctl_s3set *s3;   /* tenants' S3 keys (ctl_s3keys.h) */
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
        st->nodes[i].up = 1;
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
    free(st->tenants);
    ctl_s3set_destroy(st->s3);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static struct ctl_tenant *
do_find_tenant(struct ctl_state *st, const char *name)
{
    for (size_t i = 0; i < st->ntenants; i++) {
        if (strcmp(st->tenants[i].name, name) == 0) {
            return &st->tenants[i];
        }
    }
    return NULL;
}

int
ctl_state_tenant_create(struct ctl_state *st, const char *name, double weight, int ec_k, int ec_m,
                        uint64_t now_wall_ms, char *key, struct ctl_tenant *out)
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
    if (do_find_tenant(st, name) != NULL) {
        rc = CM_E_EXISTS;
        goto out;
    }
    if (st->next_tenant_id == UINT32_MAX) {
        rc = -ENOSPC;
        goto out;
    }
    t.id = st->next_tenant_id;
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
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Stores the changed copy nt of *t, then applies it. */
static int
do_update_tenant(struct ctl_state *st, struct ctl_tenant *t, const struct ctl_tenant *nt)
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
    t = do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (t->weight != weight) {
        nt = *t;
        nt.weight = weight;
        rc = do_update_tenant(st, t, &nt);
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
    t = do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    nt = *t;
    memset(nt.key_hash, 0, sizeof(nt.key_hash));
    memcpy(nt.key_hash[0], hash, sizeof(hash));
    nt.nkeys = 1;
    rc = do_update_tenant(st, t, &nt);
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
    t = do_find_tenant(st, name);
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

/* Persists the epoch after an in-memory-only change (liveness). */
static void
do_bump_epoch(struct ctl_state *st)
{
    st->epoch++;
    if (ctl_store_put_meta(st->store, st->epoch, st->partitions) < 0) {
        CM_WARN("epoch not persisted epoch=%llu", (unsigned long long)st->epoch);
    }
}

int
ctl_state_with_s3(struct ctl_state *st, const char *name,
                  int (*fn)(void *arg, const struct ctl_state_s3 *x), void *arg)
{
    struct ctl_state_s3 x = {st->store, st->s3, NULL, 0};
    int rc;

    pthread_mutex_lock(&st->mu);
    if (name != NULL && (x.tenant = do_find_tenant(st, name)) == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    x.epoch = st->epoch;
    rc = fn(arg, &x);
    if (rc == CTL_STATE_STORED) {
        st->epoch++;
    } else if (rc == CTL_STATE_BUMP) {
        do_bump_epoch(st);
    }
    rc = rc < 0 ? rc : 0;
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/*
 * Callers read the clock before they take the lock, so two threads can
 * arrive with their times out of order: a heartbeat stamped later than a
 * tick that then runs after it. Time inside the state never goes back, or
 * now - last_seen would wrap and call a live node silent for 584 years.
 */
static uint64_t
do_clock(struct ctl_state *st, uint64_t now_ns)
{
    if (now_ns > st->now_ns) {
        st->now_ns = now_ns;
    }
    return st->now_ns;
}

static void
do_tick(struct ctl_state *st, uint64_t now_ns)
{
    for (size_t i = 0; i < st->nnodes; i++) {
        struct node_rec *nr = &st->nodes[i];

        if (nr->up && nr->last_seen_ns == 0) {
            nr->last_seen_ns = now_ns; /* presumed up since our start */
        }
        if (nr->up && now_ns - nr->last_seen_ns > st->cfg.node_timeout_ns) {
            nr->up = 0;
            do_bump_epoch(st);
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
    do_tick(st, do_clock(st, now_ns));
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
    struct ntstat *s = NULL;
    double dt;

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
        s->req = ht->requests;
        s->bytes = ht->bytes;
        s->t_ns = now_ns;
    }
    s->queued = ht->queued;
    if (ht->requests < s->req || ht->bytes < s->bytes) {
        s->req = ht->requests;
        s->bytes = ht->bytes;
        s->t_ns = now_ns;
        return;
    }
    if (now_ns - s->t_ns < RATE_MIN_DT_NS) {
        return;
    }
    dt = (double)(now_ns - s->t_ns) / 1e9;
    {
        double rr = (double)(ht->requests - s->req) / dt;
        double br = (double)(ht->bytes - s->bytes) / dt;

        s->req_rate = s->primed ? RATE_ALPHA * rr + (1 - RATE_ALPHA) * s->req_rate : rr;
        s->byte_rate = s->primed ? RATE_ALPHA * br + (1 - RATE_ALPHA) * s->byte_rate : br;
    }
    s->primed = 1;
    s->req = ht->requests;
    s->bytes = ht->bytes;
    s->t_ns = now_ns;
}

int
ctl_state_heartbeat(struct ctl_state *st, const struct ctl_hb *hb, uint64_t now_ns)
{
    struct node_rec *nr;
    int created, changed, rc = 0;

    pthread_mutex_lock(&st->mu);
    now_ns = do_clock(st, now_ns);
    do_tick(st, now_ns);
    nr = do_node_entry(st, hb->node.id, &created);
    changed = created || strcmp(nr->n.addr, hb->node.addr) != 0 ||
              strcmp(nr->n.metrics_addr, hb->node.metrics_addr) != 0 ||
              nr->n.capacity_bytes != hb->node.capacity_bytes ||
              nr->n.incarnation != hb->node.incarnation;
    if (changed) {
        rc = ctl_store_put_node(st->store, &hb->node, st->epoch + 1);
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
        nr->n = hb->node;
        CM_INFO("node %s node=%u addr=%s epoch=%llu", created ? "registered" : "updated", nr->n.id,
                nr->n.addr, (unsigned long long)st->epoch);
    }
    if (!nr->up) {
        nr->up = 1;
        if (!changed) {
            do_bump_epoch(st);
        }
        CM_INFO("node up node=%u addr=%s epoch=%llu", nr->n.id, nr->n.addr,
                (unsigned long long)st->epoch);
    }
    nr->last_seen_ns = now_ns;
    nr->used_bytes = hb->used_bytes;
    nr->instances = hb->instances;
    for (size_t i = 0; i < hb->ntenants; i++) {
        do_fold_stats(nr, &hb->tenants[i], now_ns);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
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

void
ctl_state_snapshot(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&st->mu);
    now_ns = do_clock(st, now_ns);
    do_tick(st, now_ns);
    out->epoch = st->epoch;
    out->partitions = st->partitions;
    out->ntenants = st->ntenants;
    out->tenants = cm_calloc(st->ntenants ? st->ntenants : 1, sizeof(*out->tenants));
    for (size_t i = 0; i < st->ntenants; i++) {
        out->tenants[i].t = st->tenants[i];
    }
    out->nnodes = st->nnodes;
    out->nodes = cm_calloc(st->nnodes ? st->nnodes : 1, sizeof(*out->nodes));
    for (size_t i = 0; i < st->nnodes; i++) {
        const struct node_rec *nr = &st->nodes[i];
        struct ctl_node_view *nv = &out->nodes[i];

        nv->n = nr->n;
        nv->up = nr->up;
        nv->used_bytes = nr->used_bytes;
        nv->instances = nr->instances;
        nv->seen_ms_ago = nr->last_seen_ns ? (int64_t)((now_ns - nr->last_seen_ns) / 1000000) : -1;
        if (!nr->up) {
            continue;
        }
        for (size_t j = 0; j < nr->nstats; j++) {
            const struct ntstat *s = &nr->stats[j];
            struct ctl_tenant_view *tv = view_by_id(out, s->tenant);

            nv->load += s->req_rate;
            nv->byte_load += s->byte_rate;
            if (tv != NULL) {
                tv->req_rate += s->req_rate;
                tv->byte_rate += s->byte_rate;
                tv->queued += (double)s->queued;
            }
        }
    }
    pthread_mutex_unlock(&st->mu);
}

void
ctl_snapshot_fini(struct ctl_snapshot *snap)
{
    free(snap->tenants);
    free(snap->nodes);
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
