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
 * Gateways: each tenant is owned by one gateway (its metadata lives
 * there; the others forward to it). The registry of gateways that polled
 * is memory only; ownership is stored with the tenant and never changes,
 * because moving a tenant would need its metadata handed over, which
 * nothing does. A gateway that is down therefore keeps its tenants; it
 * only gets no new ones.
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

struct gw_rec {
    char id[CTL_GW_ID_MAX + 1];
    char url[CTL_GW_URL_MAX + 1];
    char s3_url[CTL_GW_URL_MAX + 1];
    uint64_t last_seen_ns;
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
    size_t ngws;
    struct gw_rec *gws;     /* id order (strcmp) */
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
    free(st->gws);
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

/* Persists the epoch after an in-memory-only change (liveness, the gateway
 * registry). */
static void
do_bump_epoch(struct ctl_state *st)
{
    st->epoch++;
    if (ctl_store_put_meta(st->store, st->epoch, st->partitions) < 0) {
        CM_WARN("epoch not persisted epoch=%llu", (unsigned long long)st->epoch);
    }
}

/* ---- gateways and tenant ownership ---- */

static struct gw_rec *
do_find_gw(struct ctl_state *st, const char *id)
{
    size_t lo = 0, hi = st->ngws;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->gws[mid].id, id);

        if (c == 0) {
            return &st->gws[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static int
gw_up(const struct gw_rec *g, uint64_t now_ns)
{
    return now_ns - g->last_seen_ns <= CTL_GW_UP_NS;
}

/* Tenants each registered gateway owns, in st->gws order (caller frees). */
static size_t *
do_owned_counts(struct ctl_state *st)
{
    size_t *n = cm_calloc(st->ngws + 1, sizeof(*n));

    for (size_t i = 0; i < st->ntenants; i++) {
        const struct gw_rec *g =
            st->tenants[i].gateway[0] != '\0' ? do_find_gw(st, st->tenants[i].gateway) : NULL;

        if (g != NULL) {
            n[g - st->gws]++;
        }
    }
    return n;
}

/* The up gateway that owns the fewest tenants, the smallest id among equals
 * (gws is in id order), or NULL when none is up. */
static struct gw_rec *
do_least_loaded(struct ctl_state *st, const size_t *owned, uint64_t now_ns)
{
    struct gw_rec *best = NULL;

    for (size_t i = 0; i < st->ngws; i++) {
        if (gw_up(&st->gws[i], now_ns) && (best == NULL || owned[i] < owned[best - st->gws])) {
            best = &st->gws[i];
        }
    }
    return best;
}

/* Gives every unassigned tenant an owner (do_least_loaded, counting each
 * assignment as it goes), all in one store write and one epoch bump. */
static int
do_assign_tenants(struct ctl_state *st, uint64_t now_ns)
{
    struct ctl_tenant *nt;
    size_t *owned, *idx, n = 0, first = 0;
    int rc = 0;

    /* Every poll comes here: the usual answer is that all have an owner. */
    while (first < st->ntenants && st->tenants[first].gateway[0] != '\0') {
        first++;
    }
    if (first == st->ntenants) {
        return 0;
    }
    owned = do_owned_counts(st);
    nt = cm_calloc(st->ntenants, sizeof(*nt));
    idx = cm_calloc(st->ntenants, sizeof(*idx));
    for (size_t i = first; i < st->ntenants; i++) {
        struct gw_rec *g;

        if (st->tenants[i].gateway[0] != '\0' || (g = do_least_loaded(st, owned, now_ns)) == NULL) {
            continue;
        }
        nt[n] = st->tenants[i];
        memcpy(nt[n].gateway, g->id, sizeof(g->id));
        owned[g - st->gws]++;
        idx[n++] = i;
    }
    if (n > 0) {
        rc = ctl_store_put_tenants(st->store, nt, n, st->epoch + 1, st->next_tenant_id);
    }
    if (n > 0 && rc == 0) {
        st->epoch++;
        for (size_t k = 0; k < n; k++) {
            st->tenants[idx[k]] = nt[k];
            CM_INFO("tenant assigned tenant=%u gateway=%s epoch=%llu", nt[k].id, nt[k].gateway,
                    (unsigned long long)st->epoch);
        }
    }
    free(owned);
    free(nt);
    free(idx);
    return rc;
}

/* The record of gateway id, inserted (id order, zeroed but for the id) if
 * new; NULL when new and the registry is full. */
static struct gw_rec *
do_gw_entry(struct ctl_state *st, const char *id, int *created)
{
    size_t i = 0;

    while (i < st->ngws && strcmp(st->gws[i].id, id) < 0) {
        i++;
    }
    *created = !(i < st->ngws && strcmp(st->gws[i].id, id) == 0);
    if (*created) {
        if (st->ngws >= CTL_GW_REGISTRY_MAX) {
            return NULL;
        }
        st->gws = cm_realloc(st->gws, (st->ngws + 1) * sizeof(*st->gws));
        memmove(&st->gws[i + 1], &st->gws[i], (st->ngws - i) * sizeof(*st->gws));
        memset(&st->gws[i], 0, sizeof(st->gws[i]));
        snprintf(st->gws[i].id, sizeof(st->gws[i].id), "%s", id);
        st->ngws++;
    }
    return &st->gws[i];
}

int
ctl_state_gateway_poll(struct ctl_state *st, const char *id, const char *url, const char *s3_url,
                       uint64_t now_ns)
{
    struct gw_rec *g;
    int created, rc = 0;

    s3_url = s3_url != NULL ? s3_url : "";
    if (id == NULL || !ctl_valid_gateway_id(id, strlen(id)) || url == NULL ||
        !ctl_valid_gateway_url(url, strlen(url)) ||
        (s3_url[0] != '\0' && !ctl_valid_gateway_url(s3_url, strlen(s3_url)))) {
        return CM_E_BADARG;
    }
    pthread_mutex_lock(&st->mu);
    now_ns = do_clock(st, now_ns);
    g = do_gw_entry(st, id, &created);
    if (g == NULL) {
        rc = -ENOSPC;
        goto out;
    }
    if (created || strcmp(g->url, url) != 0 || strcmp(g->s3_url, s3_url) != 0) {
        if (!created && gw_up(g, now_ns)) {
            /* A restart on another address looks the same, once. */
            CM_WARN("gateway polled from a new URL while up gateway=%s url=%s was=%s: if two "
                    "gateways share this id, each takes the other's tenants for its own; give "
                    "each its own --gateway-id",
                    id, url, g->url);
        }
        snprintf(g->url, sizeof(g->url), "%s", url);
        snprintf(g->s3_url, sizeof(g->s3_url), "%s", s3_url);
        do_bump_epoch(st);
        CM_INFO("gateway %s gateway=%s url=%s s3_url=%s epoch=%llu",
                created ? "registered" : "updated", g->id, g->url, g->s3_url,
                (unsigned long long)st->epoch);
    }
    g->last_seen_ns = now_ns;
    if (do_assign_tenants(st, now_ns) < 0) {
        CM_WARN("tenants not assigned, retried at the next poll gateway=%s", id);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- tenants ---- */

int
ctl_state_tenant_create(struct ctl_state *st, const char *name, double weight, int ec_k, int ec_m,
                        uint64_t now_wall_ms, uint64_t now_ns, char *key, struct ctl_tenant *out)
{
    struct ctl_tenant t;
    const struct gw_rec *g;
    size_t *owned;
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
    owned = do_owned_counts(st);
    g = do_least_loaded(st, owned, do_clock(st, now_ns));
    free(owned);
    if (g != NULL) {
        memcpy(t.gateway, g->id, sizeof(g->id));
    }
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

static void
do_snapshot_gateways(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out)
{
    size_t *owned = do_owned_counts(st);

    out->ngateways = st->ngws;
    out->gateways = cm_calloc(st->ngws + 1, sizeof(*out->gateways));
    for (size_t i = 0; i < st->ngws; i++) {
        const struct gw_rec *g = &st->gws[i];
        struct ctl_gateway_view *gv = &out->gateways[i];

        memcpy(gv->id, g->id, sizeof(gv->id));
        memcpy(gv->url, g->url, sizeof(gv->url));
        memcpy(gv->s3_url, g->s3_url, sizeof(gv->s3_url));
        gv->up = gw_up(g, now_ns);
        gv->seen_ms_ago = (int64_t)((now_ns - g->last_seen_ns) / 1000000);
        gv->tenants = owned[i];
    }
    free(owned);
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
    now_ns = do_clock(st, now_ns);
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
    do_snapshot_gateways(st, now_ns, out);
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
