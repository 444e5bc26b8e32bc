/*
 * ctl_sms.c - the window loop of every tenant pool, the nodes' instance
 * reports, decisions and reclaim orders on their way to the nodes, and the
 * cost totals (see ctl_sms.h for the invariants).
 *
 * Naming: do_x() expects s->mu held; x() takes it.
 */
#include "ctl_sms.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_store.h"

#define MS 1000000ull
/* Times inside are the callers' monotonic ns plus this (146 years), so a
 * start restored from the store may lie before the clock's origin. */
#define BIAS (1ull << 62)

struct pool {
    uint32_t tenant;
    int listed; /* in the last tenant list heard */
    uint64_t gen, gen_start_ns;
    uint64_t next_ns; /* its tick is due then; 0: at once */
    int ticked;
    uint64_t tick_ns;
    struct pol_sms_tick last;
    struct ctl_cost_totals cost;
    uint64_t since_ns;
};

/* A decision about a slot, kept until a report shows it applied. */
struct pending {
    uint32_t slot, tag, tenant;
    struct pol_sms_decision d;
    uint64_t decided_ns;
    uint64_t delivered_ns; /* 0: not sent yet */
};

/* The sms_cost counters of a tenant as last folded. */
struct base {
    uint32_t tenant;
    struct ctl_cost_counters last;
};

struct node {
    uint32_t id;
    uint64_t incarnation, capacity_bytes;
    uint64_t report_ns; /* when inst[] was reported; 0: none kept */
    int reported;       /* that report had "instances" */
    uint64_t instance_bytes, memory_bytes, cache_bytes;
    uint64_t rec_chunks, rec_bytes, rec_running, rec_helpers;
    size_t ninst;
    struct ctl_sms_inst *inst; /* slot order */
    size_t npend;
    struct pending *pend; /* slot order */
    int has_base;
    uint64_t base_incarnation;
    size_t nbase;
    struct base *base; /* tenant order */
    int reclaim_all;
    size_t nreclaim;
    uint32_t *reclaim; /* slot order */
};

struct ctl_sms {
    pthread_mutex_t mu;
    struct ctl_sms_cfg cfg; /* .policy points at ops->name */
    const struct pol_sms_ops *ops;
    struct pol_sms_cfg pcfg; /* effective; what answers say */
    struct pol_sms *pol;     /* ctl_sms_run's thread only */
    int have_tenants;        /* a tenant list was heard: pools may be dropped */
    size_t npools;
    struct pool *pools; /* tenant order */
    size_t nnodes;
    struct node *nodes; /* id order */
    uint64_t now_ns;    /* latest time passed in, biased; never goes back */
    uint64_t ticks;
};

/* ---- sorted arrays: pools, nodes, instances, decisions, counters and reclaim
 * orders, each ordered by its first member, a u32 (tenant, node id or slot) ---- */

/* Index of the first element of a (n, stride bytes, u32 key first) whose
 * key is >= key. */
static size_t
lower_bound(const void *a, size_t n, size_t stride, uint32_t key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t k;

        memcpy(&k, (const char *)a + mid * stride, sizeof(k));
        if (k < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The element of a with key, or NULL. */
static void *
find(void *a, size_t n, size_t stride, uint32_t key)
{
    size_t i = lower_bound(a, n, stride, key);
    char *p;
    uint32_t k;

    if (i == n) {
        return NULL;
    }
    p = (char *)a + i * stride;
    memcpy(&k, p, sizeof(k));
    return k == key ? p : NULL;
}

/* The element with key in *a, inserted zeroed (but for the key) if absent.
 * Returns its index. */
static size_t
upsert(void **a, size_t *n, size_t stride, uint32_t key, int *created)
{
    size_t i = lower_bound(*a, *n, stride, key);
    uint32_t k = 0;
    char *p;

    if (i < *n) {
        memcpy(&k, (char *)*a + i * stride, sizeof(k));
    }
    *created = !(i < *n && k == key);
    if (*created) {
        *a = cm_realloc(*a, (*n + 1) * stride);
        p = (char *)*a + i * stride;
        memmove(p + stride, p, (*n - i) * stride);
        memset(p, 0, stride);
        memcpy(p, &key, sizeof(key));
        (*n)++;
    }
    return i;
}

static void
erase(void *a, size_t *n, size_t stride, size_t i)
{
    char *p = (char *)a + i * stride;

    memmove(p, p + stride, (*n - i - 1) * stride);
    (*n)--;
}

static struct pool *
do_pool(struct ctl_sms *s, uint32_t tenant)
{
    return find(s->pools, s->npools, sizeof(*s->pools), tenant);
}

static struct pool *
do_pool_entry(struct ctl_sms *s, uint32_t tenant, uint64_t now_ns)
{
    int created;
    size_t i = upsert((void **)&s->pools, &s->npools, sizeof(*s->pools), tenant, &created);
    struct pool *p = &s->pools[i];

    if (created) {
        p->gen_start_ns = now_ns;
        p->since_ns = now_ns;
    }
    return p;
}

static struct node *
do_node(struct ctl_sms *s, uint32_t id)
{
    return find(s->nodes, s->nnodes, sizeof(*s->nodes), id);
}

static struct node *
do_node_entry(struct ctl_sms *s, uint32_t id)
{
    int created;
    size_t i = upsert((void **)&s->nodes, &s->nnodes, sizeof(*s->nodes), id, &created);

    return &s->nodes[i];
}

static struct ctl_sms_inst *
inst_of(struct node *nd, uint32_t slot)
{
    return find(nd->inst, nd->ninst, sizeof(*nd->inst), slot);
}

static struct pending *
pend_of(struct node *nd, uint32_t slot)
{
    return find(nd->pend, nd->npend, sizeof(*nd->pend), slot);
}

static void
node_fini(struct node *nd)
{
    free(nd->inst);
    free(nd->pend);
    free(nd->base);
    free(nd->reclaim);
}

/* ---- life cycle ---- */

static int
make_policy(const struct ctl_sms *s, uint64_t inst_bytes, struct pol_sms **out,
            struct pol_sms_cfg *eff)
{
    struct pol_sms_cfg c = {
        .interval_ns = s->cfg.interval_ns,
        .active_intervals = s->cfg.active,
        .degraded_intervals = s->cfg.degraded,
        .inst_bytes = inst_bytes,
        /* "static" sizes its pool per node in the answers; tick ignores it. */
        .max_instances = strcmp(s->ops->name, "static") == 0
                             ? (s->cfg.static_instances ? s->cfg.static_instances : 1)
                             : 0,
    };
    int rc = s->ops->create(&c, out);

    if (rc == 0) {
        *eff = *pol_sms_cfg_of(*out);
    }
    return rc;
}

int
ctl_sms_create(const struct ctl_sms_cfg *cfg, struct ctl_sms **out)
{
    struct ctl_sms *s;
    const struct pol_sms_ops *ops = cfg->policy != NULL ? pol_sms_find(cfg->policy) : NULL;
    int rc;

    *out = NULL;
    if (ops == NULL || cfg->interval_ns < POL_SMS_INTERVAL_MIN || cfg->active == 0 ||
        cfg->degraded == 0 || cfg->node_timeout_ns == 0) {
        return CM_E_BADARG;
    }
    s = cm_calloc(1, sizeof(*s));
    s->cfg = *cfg;
    s->cfg.policy = ops->name;
    s->ops = ops;
    rc = make_policy(s, POL_SMS_INST_BYTES_DEFAULT, &s->pol, &s->pcfg);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
}

void
ctl_sms_destroy(struct ctl_sms *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        node_fini(&s->nodes[i]);
    }
    free(s->nodes);
    free(s->pools);
    s->ops->destroy(s->pol);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void
ctl_sms_answer_fini(struct ctl_sms_answer *a)
{
    free(a->pools);
    free(a->dec);
    free(a->reclaim);
    memset(a, 0, sizeof(*a));
}

/* Callers read the clock before the lock: keep time from going back.
 * Returns the time to use inside (biased). */
static uint64_t
do_clock(struct ctl_sms *s, uint64_t now_ns)
{
    if (now_ns + BIAS > s->now_ns) {
        s->now_ns = now_ns + BIAS;
    }
    return s->now_ns;
}

/* ---- heartbeats ---- */

static void
do_tenants(struct ctl_sms *s, const uint32_t *tenants, size_t n, uint64_t now_ns)
{
    for (size_t i = 0; i < s->npools; i++) {
        s->pools[i].listed = 0;
    }
    for (size_t i = 0; i < n; i++) {
        do_pool_entry(s, tenants[i], now_ns)->listed = 1;
    }
    s->have_tenants = 1;
}

/* The memory each tenant held on nd since its last report, charged. */
static void
do_charge(struct ctl_sms *s, struct node *nd, uint64_t now_ns)
{
    uint64_t dt = now_ns - nd->report_ns;

    if (nd->report_ns == 0 || !nd->reported) {
        return;
    }
    if (dt > s->cfg.node_timeout_ns) {
        dt = s->cfg.node_timeout_ns;
    }
    for (size_t i = 0; i < nd->ninst; i++) {
        const struct ctl_sms_inst *in = &nd->inst[i];

        if (in->state != POL_SMS_RELEASED) {
            ctl_cost_add_memory(&do_pool_entry(s, in->tenant, now_ns)->cost, nd->instance_bytes,
                                dt);
        }
    }
}

static void
do_fold(struct ctl_sms *s, struct node *nd, const struct ctl_sms_report *r, uint64_t now_ns)
{
    if (!nd->has_base || nd->base_incarnation != r->incarnation) {
        nd->nbase = 0;
        nd->has_base = 1;
        nd->base_incarnation = r->incarnation;
    }
    for (size_t i = 0; i < r->ncost; i++) {
        const struct ctl_sms_cost *c = &r->cost[i];
        int created;
        size_t b = upsert((void **)&nd->base, &nd->nbase, sizeof(*nd->base), c->tenant, &created);

        ctl_cost_fold(&do_pool_entry(s, c->tenant, now_ns)->cost,
                      created ? NULL : &nd->base[b].last, &c->c);
        nd->base[b].last = c->c;
    }
}

static int
cmp_slot(const void *a, const void *b)
{
    const struct ctl_sms_inst *x = a, *y = b;

    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Drops decisions the new report makes moot: its slot has another tag (or
 * none), or it was sent and this later report shows what the node did. */
static void
do_prune_pending(struct node *nd, uint64_t now_ns)
{
    for (size_t i = 0; i < nd->npend;) {
        const struct pending *p = &nd->pend[i];
        const struct ctl_sms_inst *in = inst_of(nd, p->slot);

        if (in == NULL || in->tag != p->tag || (p->delivered_ns != 0 && p->delivered_ns < now_ns)) {
            erase(nd->pend, &nd->npend, sizeof(*nd->pend), i);
        } else {
            i++;
        }
    }
}

static uint32_t
do_listed(const struct ctl_sms *s)
{
    uint32_t n = 0;

    for (size_t i = 0; i < s->npools; i++) {
        n += s->pools[i].listed != 0;
    }
    return n;
}

static void
do_config(const struct ctl_sms *s, const struct node *nd, struct ctl_sms_config *c)
{
    const struct pol_sms_cfg *p = &s->pcfg;

    memset(c, 0, sizeof(*c));
    snprintf(c->policy, sizeof(c->policy), "%s", s->ops->name);
    c->interval_ms = p->interval_ns / MS;
    c->warm_active_ms = p->warm_active_ns / MS;
    c->warm_degraded_ms = p->warm_degraded_ns / MS;
    c->active = p->active_intervals;
    c->degraded = p->degraded_intervals;
    c->compact_age = p->compact_age;
    c->max_instances = p->max_instances;
    if (strcmp(s->ops->name, "static") == 0 && nd != NULL) {
        /* Derived: the node's slots shared evenly by the tenants. */
        uint64_t isz = nd->instance_bytes ? nd->instance_bytes : POL_SMS_INST_BYTES_DEFAULT;
        uint64_t slots = nd->capacity_bytes / isz, n = do_listed(s), per = slots / (n ? n : 1);

        c->max_instances = s->cfg.static_instances ? s->cfg.static_instances
                           : per > 0               ? (uint32_t)(per < UINT32_MAX ? per : UINT32_MAX)
                                                   : 1;
    }
}

static void
do_answer(struct ctl_sms *s, struct node *nd, uint64_t now_ns, struct ctl_sms_answer *out)
{
    size_t k = 0;

    do_config(s, nd, &out->cfg);
    out->pools = cm_calloc(s->npools + 1, sizeof(*out->pools));
    for (size_t i = 0; i < s->npools; i++) {
        const struct pool *p = &s->pools[i];

        if (p->listed) {
            out->pools[out->npools++] =
                (struct ctl_sms_pool_gen){p->tenant, p->gen, (now_ns - p->gen_start_ns) / MS};
        }
    }
    out->dec = cm_calloc(nd->npend + 1, sizeof(*out->dec));
    for (size_t i = 0; i < nd->npend;) {
        struct pending *p = &nd->pend[i];
        const struct ctl_sms_inst *in = inst_of(nd, p->slot);

        /* An empty instance is released only if it is still empty. */
        if (p->delivered_ns == 0 && p->d.reason == POL_SMS_EMPTY && in != NULL && in->used > 0) {
            erase(nd->pend, &nd->npend, sizeof(*nd->pend), i);
            continue;
        }
        if (p->delivered_ns == 0) {
            out->dec[k++] = (struct ctl_sms_decision){
                p->slot, p->tag, p->tenant, p->d.state, p->d.gen, p->d.warm_up, p->d.reason};
            p->delivered_ns = now_ns;
        }
        i++;
    }
    out->ndec = k;
    out->reclaim_all = nd->reclaim_all;
    out->nreclaim = nd->reclaim_all ? 0 : nd->nreclaim;
    out->reclaim = nd->reclaim;
    nd->reclaim = NULL;
    nd->nreclaim = 0;
    nd->reclaim_all = 0;
    if (out->reclaim_all || out->nreclaim > 0) {
        CM_INFO("reclaim order sent node=%u all=%d instances=%zu", nd->id, out->reclaim_all,
                out->nreclaim);
    }
}

void
ctl_sms_heartbeat(struct ctl_sms *s, const struct ctl_sms_report *r, const uint32_t *tenants,
                  size_t n, uint64_t now_ns, struct ctl_sms_answer *out)
{
    struct node *nd;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->mu);
    now_ns = do_clock(s, now_ns);
    do_tenants(s, tenants, n, now_ns);
    nd = do_node_entry(s, r->node);
    if (nd->report_ns != 0 && nd->incarnation != r->incarnation) {
        /* Restarted: its memory was lost at a time we do not know, and
         * every tag changed. */
        nd->report_ns = 0;
        nd->npend = 0;
    }
    do_charge(s, nd, now_ns);
    do_fold(s, nd, r, now_ns);
    nd->incarnation = r->incarnation;
    nd->capacity_bytes = r->capacity_bytes;
    nd->reported = r->has_instances;
    nd->instance_bytes = r->instance_bytes;
    nd->memory_bytes = r->memory_bytes;
    nd->cache_bytes = r->cache_bytes;
    nd->rec_chunks = r->rec_chunks;
    nd->rec_bytes = r->rec_bytes;
    nd->rec_running = r->rec_running;
    nd->rec_helpers = r->rec_helpers;
    nd->inst = cm_realloc(nd->inst, (r->ninst + 1) * sizeof(*nd->inst));
    nd->ninst = r->ninst;
    if (r->ninst > 0) {
        memcpy(nd->inst, r->inst, r->ninst * sizeof(*nd->inst));
    }
    qsort(nd->inst, nd->ninst, sizeof(*nd->inst), cmp_slot);
    for (size_t i = 0; i < nd->ninst; i++) {
        do_pool_entry(s, nd->inst[i].tenant, now_ns); /* deleted tenants' age out too */
        if (r->memory_bytes == 0 && nd->inst[i].state != POL_SMS_RELEASED) {
            nd->memory_bytes += nd->instance_bytes; /* a node that does not count it */
        }
    }
    nd->report_ns = now_ns;
    do_prune_pending(nd, now_ns);
    do_answer(s, nd, now_ns, out);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the window loop ---- */

/* Where view instance i came from. */
struct ref {
    uint32_t node, slot, tag;
};

struct due {
    uint32_t tenant;
    struct pol_sms_view v;
    struct pol_sms_inst *inst;
    struct ref *ref;
    struct pol_sms_decision *d;
    struct pol_sms_tick t;
    int rc;
};

/* Reports silent for longer than the node timeout hold nothing any more. */
static void
do_expire(struct ctl_sms *s, uint64_t now_ns)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        struct node *nd = &s->nodes[i];

        if (nd->report_ns != 0 && now_ns - nd->report_ns > s->cfg.node_timeout_ns) {
            nd->report_ns = 0;
            nd->reported = 0;
            nd->ninst = 0;
            nd->npend = 0;
            nd->memory_bytes = 0;
            nd->cache_bytes = 0;
        }
    }
}

static int
do_holds(const struct ctl_sms *s, uint32_t tenant)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        for (size_t j = 0; j < s->nodes[i].ninst; j++) {
            if (s->nodes[i].inst[j].tenant == tenant) {
                return 1;
            }
        }
    }
    return 0;
}

/* Pools of deleted tenants go once no node reports an instance of theirs. */
static void
do_prune_pools(struct ctl_sms *s)
{
    if (!s->have_tenants) {
        return;
    }
    for (size_t i = 0; i < s->npools;) {
        if (!s->pools[i].listed && !do_holds(s, s->pools[i].tenant)) {
            erase(s->pools, &s->npools, sizeof(*s->pools), i);
        } else {
            i++;
        }
    }
}

/* The view instance of in (reported by nd), with the decision still on its
 * way to the node, or sent but not yet shown applied, in place of the report. */
static struct pol_sms_inst
do_view_inst(struct node *nd, const struct ctl_sms_inst *in)
{
    const struct pending *p = pend_of(nd, in->slot);
    uint64_t age = in->warm_age_ms * MS;
    struct pol_sms_inst v = {
        .gen = in->gen,
        .state = in->state,
        .lost = in->lost,
        .used = in->used,
        .put_bytes = in->put_bytes,
        .read_bytes = in->read_bytes,
        .read_chunks = in->read_chunks,
        .warm_ns = nd->report_ns > age ? nd->report_ns - age : 0,
    };

    if (p != NULL && p->tag == in->tag &&
        (p->delivered_ns == 0 || nd->report_ns <= p->delivered_ns)) {
        v.state = p->d.state;
        if (p->d.gen != v.gen) {
            v.gen = p->d.gen;
            v.put_bytes = 0; /* the node resets it with the generation */
        }
        if (p->d.warm_up && p->decided_ns > v.warm_ns) {
            v.warm_ns = p->decided_ns;
        }
    }
    return v;
}

static void
do_view(struct ctl_sms *s, struct pool *p, uint64_t now_ns, struct due *d)
{
    size_t n = 0, k = 0;
    uint64_t top = p->gen;

    for (size_t i = 0; i < s->nnodes; i++) {
        for (size_t j = 0; j < s->nodes[i].ninst; j++) {
            n += s->nodes[i].inst[j].tenant == p->tenant;
        }
    }
    d->tenant = p->tenant;
    d->inst = cm_calloc(n + 1, sizeof(*d->inst));
    d->ref = cm_calloc(n + 1, sizeof(*d->ref));
    d->d = cm_calloc(n + 1, sizeof(*d->d));
    for (size_t i = 0; i < s->nnodes; i++) {
        struct node *nd = &s->nodes[i];

        for (size_t j = 0; j < nd->ninst; j++) {
            const struct ctl_sms_inst *in = &nd->inst[j];

            if (in->tenant != p->tenant) {
                continue;
            }
            d->inst[k] = do_view_inst(nd, in);
            d->ref[k] = (struct ref){nd->id, in->slot, in->tag};
            if (d->inst[k].gen > top) {
                top = d->inst[k].gen;
            }
            k++;
        }
    }
    /* Instances ahead of the pool (its window was lost): catch up. */
    if (top > p->gen) {
        CM_WARN("pool generation behind its instances tenant=%u gen=%llu instance_gen=%llu",
                p->tenant, (unsigned long long)p->gen, (unsigned long long)top);
        p->gen = top;
        p->gen_start_ns = now_ns;
    }
    d->v = (struct pol_sms_view){
        .gen = p->gen, .gen_start_ns = p->gen_start_ns, .inst = d->inst, .ninst = k};
}

/* Stores tick's outcome: the pool's window and figures, and each decision
 * that changes something for an instance the node still has. */
static void
do_apply(struct ctl_sms *s, const struct due *d, uint64_t now_ns)
{
    struct pool *p = do_pool(s, d->tenant);
    uint64_t next;

    if (p == NULL) {
        return;
    }
    if (d->t.opened > 0) {
        CM_INFO("pool window moved tenant=%u gen=%llu instances=%u active=%u degraded=%u "
                "released=%u memory_bytes=%llu working_set_bytes=%llu",
                p->tenant, (unsigned long long)d->t.gen, d->t.instances, d->t.active, d->t.degraded,
                d->t.released, (unsigned long long)d->t.memory_bytes,
                (unsigned long long)d->t.working_set_bytes);
    }
    p->gen = d->t.gen;
    p->gen_start_ns = d->t.gen_start_ns;
    p->last = d->t;
    p->ticked = 1;
    p->tick_ns = now_ns;
    next = d->t.next_ns;
    if (next > now_ns + s->cfg.interval_ns) {
        next = now_ns + s->cfg.interval_ns;
    }
    p->next_ns = next > now_ns ? next : now_ns + MS;
    for (size_t i = 0; i < d->v.ninst; i++) {
        struct node *nd = do_node(s, d->ref[i].node);
        const struct ctl_sms_inst *in = nd != NULL ? inst_of(nd, d->ref[i].slot) : NULL;
        struct pol_sms_decision dd = d->d[i];
        struct pending *pe;
        size_t k;
        int created;

        if (in == NULL || in->tag != d->ref[i].tag) {
            continue; /* replaced since the view */
        }
        pe = pend_of(nd, in->slot);
        if (pe != NULL && pe->tag == in->tag && pe->delivered_ns == 0 && pe->d.warm_up) {
            dd.warm_up = 1; /* a warm-up not sent yet still is due */
        }
        if (pe != NULL && pe->tag == in->tag && dd.state == POL_SMS_RELEASED &&
            dd.reason == POL_SMS_KEPT) {
            dd.reason = pe->d.reason; /* released before: still for that reason */
        }
        if (dd.state == in->state && dd.gen == in->gen && !dd.warm_up) {
            if (pe != NULL) {
                erase(nd->pend, &nd->npend, sizeof(*nd->pend), (size_t)(pe - nd->pend));
            }
            continue;
        }
        k = upsert((void **)&nd->pend, &nd->npend, sizeof(*nd->pend), in->slot, &created);
        pe = &nd->pend[k];
        *pe = (struct pending){in->slot, in->tag, in->tenant, dd, now_ns, 0};
    }
}

static uint64_t
do_inst_bytes(const struct ctl_sms *s)
{
    uint64_t b = 0;

    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].reported && s->nodes[i].instance_bytes > b) {
            b = s->nodes[i].instance_bytes;
        }
    }
    return b != 0 ? b : POL_SMS_INST_BYTES_DEFAULT;
}

int
ctl_sms_run(struct ctl_sms *s, uint64_t now_ns)
{
    struct due *due = NULL;
    struct pol_sms *np = NULL;
    struct pol_sms_cfg ncfg;
    size_t n = 0;
    uint64_t isz;

    pthread_mutex_lock(&s->mu);
    now_ns = do_clock(s, now_ns);
    do_expire(s, now_ns);
    do_prune_pools(s);
    for (size_t i = 0; i < s->npools; i++) {
        n += s->pools[i].next_ns <= now_ns;
    }
    due = cm_calloc(n + 1, sizeof(*due));
    n = 0;
    for (size_t i = 0; i < s->npools; i++) {
        if (s->pools[i].next_ns <= now_ns) {
            do_view(s, &s->pools[i], now_ns, &due[n++]);
        }
    }
    isz = do_inst_bytes(s);
    pthread_mutex_unlock(&s->mu);

    /* "Has room" is judged against the instance size the nodes report (the
     * largest, should they differ). */
    if (isz != pol_sms_cfg_of(s->pol)->inst_bytes && make_policy(s, isz, &np, &ncfg) == 0) {
        s->ops->destroy(s->pol);
        s->pol = np;
        pthread_mutex_lock(&s->mu);
        s->pcfg = ncfg;
        pthread_mutex_unlock(&s->mu);
    }
    for (size_t i = 0; i < n; i++) {
        due[i].rc = s->ops->tick(s->pol, &due[i].v, now_ns, due[i].d, &due[i].t);
        if (due[i].rc < 0) {
            CM_ERROR("pool tick failed tenant=%u err=%s", due[i].tenant, cm_strerror(due[i].rc));
        }
    }

    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        if (due[i].rc == 0) {
            do_apply(s, &due[i], now_ns);
            s->ticks++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        free(due[i].inst);
        free(due[i].ref);
        free(due[i].d);
    }
    free(due);
    return (int)n;
}

/* ---- reclaim orders ---- */

int
ctl_sms_reclaim(struct ctl_sms *s, uint32_t node, int all, uint32_t slot,
                struct ctl_sms_inst **what, size_t *n)
{
    struct node *nd;
    int rc = 0;

    *what = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    nd = do_node_entry(s, node);
    *what = cm_calloc(nd->ninst + 1, sizeof(**what));
    for (size_t i = 0; i < nd->ninst; i++) {
        const struct ctl_sms_inst *in = &nd->inst[i];

        if (in->state != POL_SMS_RELEASED && (all || in->slot == slot)) {
            (*what)[(*n)++] = *in;
        }
    }
    if (all) {
        nd->reclaim_all = 1;
    } else if (*n == 0) {
        rc = CM_E_NOTFOUND;
    } else {
        int created;

        upsert((void **)&nd->reclaim, &nd->nreclaim, sizeof(*nd->reclaim), slot, &created);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        free(*what);
        *what = NULL;
    } else {
        CM_INFO("reclaim ordered node=%u all=%d slot=%u instances=%zu", node, all, all ? 0 : slot,
                *n);
    }
    return rc;
}

/* ---- figures ---- */

void
ctl_sms_snapshot(struct ctl_sms *s, uint64_t now_ns, struct ctl_sms_snapshot *out)
{
    size_t *seen; /* per pool: 1 + the last node that counted in its nodes */

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->mu);
    seen = cm_calloc(s->npools + 1, sizeof(*seen));
    now_ns = do_clock(s, now_ns);
    do_config(s, NULL, &out->cfg);
    out->cfg.max_instances = strcmp(s->ops->name, "static") == 0 ? s->cfg.static_instances : 0;
    out->ticks = s->ticks;
    out->npools = s->npools;
    out->pools = cm_calloc(s->npools + 1, sizeof(*out->pools));
    for (size_t i = 0; i < s->npools; i++) {
        const struct pool *p = &s->pools[i];
        struct ctl_sms_pool_view *v = &out->pools[i];

        v->tenant = p->tenant;
        v->gen = p->gen;
        v->gen_age_ms = (now_ns - p->gen_start_ns) / MS;
        v->ticked = p->ticked;
        v->tick_ms_ago = p->ticked ? (int64_t)((now_ns - p->tick_ns) / MS) : -1;
        v->last = p->last;
        v->cost = p->cost;
        v->cost_age_ms = (now_ns - p->since_ns) / MS;
    }
    out->nnodes = s->nnodes;
    out->nodes = cm_calloc(s->nnodes + 1, sizeof(*out->nodes));
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *nd = &s->nodes[i];
        struct ctl_sms_node_view *nv = &out->nodes[i];

        nv->node = nd->id;
        nv->reported = nd->reported;
        nv->instance_bytes = nd->instance_bytes;
        nv->memory_bytes = nd->memory_bytes;
        nv->cache_bytes = nd->cache_bytes;
        nv->slots = nd->instance_bytes ? (uint32_t)(nd->capacity_bytes / nd->instance_bytes) : 0;
        nv->rec_chunks = nd->rec_chunks;
        nv->rec_bytes = nd->rec_bytes;
        nv->rec_running = nd->rec_running;
        nv->rec_helpers = nd->rec_helpers;
        for (size_t j = 0; j < nd->ninst; j++) {
            const struct ctl_sms_inst *in = &nd->inst[j];
            struct ctl_sms_pool_view *v;
            size_t k;

            if (in->state == POL_SMS_RELEASED) {
                continue;
            }
            nv->instances++;
            v = find(out->pools, out->npools, sizeof(*out->pools), in->tenant);
            if (v == NULL) {
                continue;
            }
            k = (size_t)(v - out->pools);
            if (seen[k] != i + 1) {
                seen[k] = i + 1;
                v->nodes++;
            }
            v->instances++;
            v->warm += in->state == POL_SMS_WARM;
            v->active += in->state == POL_SMS_ACTIVE;
            v->degraded += in->state == POL_SMS_DEGRADED;
            v->lost += in->lost != 0;
            v->memory_bytes += nd->instance_bytes;
            v->used_bytes += in->used;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(seen);
}

void
ctl_sms_snapshot_fini(struct ctl_sms_snapshot *snap)
{
    free(snap->pools);
    free(snap->nodes);
    memset(snap, 0, sizeof(*snap));
}

const struct ctl_sms_pool_view *
ctl_sms_snapshot_pool(const struct ctl_sms_snapshot *snap, uint32_t tenant)
{
    return find(snap->pools, snap->npools, sizeof(*snap->pools), tenant);
}

const struct ctl_sms_node_view *
ctl_sms_snapshot_node(const struct ctl_sms_snapshot *snap, uint32_t node)
{
    return find(snap->nodes, snap->nnodes, sizeof(*snap->nodes), node);
}

/* ---- persistence ---- */

/* A monotonic time as wall ms, given now on both clocks. */
static uint64_t
to_wall(uint64_t t_ns, uint64_t now_ns, uint64_t now_wall_ms)
{
    uint64_t ago = (now_ns - t_ns) / MS;

    return now_wall_ms > ago ? now_wall_ms - ago : 0;
}

int
ctl_sms_save(struct ctl_sms *s, struct ctl_store *store, uint64_t now_ns, uint64_t now_wall_ms)
{
    struct ctl_store_sms *r;
    size_t n = 0;
    int rc;

    pthread_mutex_lock(&s->mu);
    now_ns = do_clock(s, now_ns);
    r = cm_calloc(s->npools + s->nnodes + 1, sizeof(*r));
    for (size_t i = 0; i < s->npools; i++) {
        const struct pool *p = &s->pools[i];
        struct ctl_cost_tenant_rec t = {
            .tenant = p->tenant,
            .t = p->cost,
            .since_ms = to_wall(p->since_ns, now_ns, now_wall_ms),
            .gen = p->gen,
            .gen_start_ms = to_wall(p->gen_start_ns, now_ns, now_wall_ms),
        };

        r[n] = (struct ctl_store_sms){'t', p->tenant, ctl_cost_tenant_encode(&t), 0};
        n++;
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *nd = &s->nodes[i];
        struct ctl_cost_node_rec b = {nd->id, nd->base_incarnation, nd->nbase, NULL, NULL};

        if (!nd->has_base) {
            continue;
        }
        b.tenants = cm_calloc(nd->nbase + 1, sizeof(*b.tenants));
        b.last = cm_calloc(nd->nbase + 1, sizeof(*b.last));
        for (size_t j = 0; j < nd->nbase; j++) {
            b.tenants[j] = nd->base[j].tenant;
            b.last[j] = nd->base[j].last;
        }
        r[n] = (struct ctl_store_sms){'n', nd->id, ctl_cost_node_encode(&b), 0};
        n++;
        ctl_cost_node_rec_fini(&b);
    }
    pthread_mutex_unlock(&s->mu);
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].text == NULL) {
            rc = -ENOMEM;
        } else {
            r[i].len = strlen(r[i].text);
        }
    }
    if (rc == 0) {
        rc = ctl_store_put_sms(store, r, n);
    }
    for (size_t i = 0; i < n; i++) {
        free(r[i].text);
    }
    free(r);
    return rc;
}

static void
do_load_tenant(struct ctl_sms *s, const struct ctl_cost_tenant_rec *t, uint64_t now_ns,
               uint64_t now_wall_ms)
{
    struct pool *p = do_pool_entry(s, t->tenant, now_ns);
    uint64_t ago_ms = now_wall_ms > t->gen_start_ms ? now_wall_ms - t->gen_start_ms : 0;
    uint64_t ago = ago_ms > UINT64_MAX / MS ? UINT64_MAX : ago_ms * MS;
    uint64_t k = ago / s->cfg.interval_ns, rest = ago - k * s->cfg.interval_ns;
    uint64_t since = now_wall_ms > t->since_ms ? (now_wall_ms - t->since_ms) * MS : 0;

    p->cost = t->t;
    /* The window moved on while we were away: whole intervals become
     * generations, the rest the age of the current one. */
    p->gen = t->gen + k;
    p->gen_start_ns = now_ns > rest ? now_ns - rest : 0;
    p->since_ns = now_ns > since ? now_ns - since : 0;
}

int
ctl_sms_load(struct ctl_sms *s, struct ctl_store *store, uint64_t now_ns, uint64_t now_wall_ms)
{
    struct ctl_store_sms *r;
    size_t n;
    int rc = ctl_store_load_sms(store, &r, &n);

    if (rc < 0) {
        return rc;
    }
    pthread_mutex_lock(&s->mu);
    now_ns = do_clock(s, now_ns);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (r[i].kind == 't') {
            struct ctl_cost_tenant_rec t;

            rc = ctl_cost_tenant_decode(r[i].id, r[i].text, r[i].len, &t);
            if (rc == 0) {
                do_load_tenant(s, &t, now_ns, now_wall_ms);
            }
        } else {
            struct ctl_cost_node_rec b;

            rc = ctl_cost_node_decode(r[i].id, r[i].text, r[i].len, &b);
            if (rc == 0) {
                struct node *nd = do_node_entry(s, r[i].id);

                nd->has_base = 1;
                nd->base_incarnation = b.incarnation;
                for (size_t j = 0; j < b.n; j++) {
                    int created;
                    size_t k = upsert((void **)&nd->base, &nd->nbase, sizeof(*nd->base),
                                      b.tenants[j], &created);

                    nd->base[k].last = b.last[j];
                }
            }
            ctl_cost_node_rec_fini(&b);
        }
        if (rc < 0) {
            CM_ERROR("store bad sms record kind=%c id=%u", r[i].kind, r[i].id);
        }
    }
    pthread_mutex_unlock(&s->mu);
    ctl_store_sms_free(r, n);
    return rc;
}
