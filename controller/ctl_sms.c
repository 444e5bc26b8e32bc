/*
 * ctl_sms.c - the elastic memory's state (see ctl_sms.h): its sorted
 * arrays, the life cycle, the nodes' heartbeats (their reports kept, the
 * memory they held charged and their sms_cost counters folded into the
 * pools' cost, the decisions and reclaim orders due to them answered) and
 * the reclaim orders an admin gives.
 *
 * Threads: any thread, under s->mu (ctl_sms_impl.h).
 *
 * Naming: do_x() expects s->mu held; x() takes it; ctl_sms_x_locked() is a
 * do_x() the other ctl_sms*.c files call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_sms_impl.h"

/* Times inside are the callers' monotonic ns plus this (146 years), so a
 * start restored from the store may lie before the clock's origin. */
#define BIAS (1ull << 62)

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
void *
ctl_sms_find(void *a, size_t n, size_t stride, uint32_t key)
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
size_t
ctl_sms_upsert(void **a, size_t *n, size_t stride, uint32_t key, int *created)
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

void
ctl_sms_erase(void *a, size_t *n, size_t stride, size_t i)
{
    char *p = (char *)a + i * stride;

    memmove(p, p + stride, (*n - i - 1) * stride);
    (*n)--;
}

struct ctl_sms_pool *
ctl_sms_pool_entry_locked(struct ctl_sms *s, uint32_t tenant, uint64_t now_ns)
{
    int created;
    size_t i = ctl_sms_upsert((void **)&s->pools, &s->npools, sizeof(*s->pools), tenant, &created);
    struct ctl_sms_pool *p = &s->pools[i];

    if (created) {
        p->gen_start_ns = now_ns;
        p->since_ns = now_ns;
    }
    return p;
}

struct ctl_sms_node *
ctl_sms_node_entry_locked(struct ctl_sms *s, uint32_t id)
{
    int created;
    size_t i = ctl_sms_upsert((void **)&s->nodes, &s->nnodes, sizeof(*s->nodes), id, &created);

    return &s->nodes[i];
}

struct ctl_sms_inst *
ctl_sms_inst_of(struct ctl_sms_node *nd, uint32_t slot)
{
    return ctl_sms_find(nd->inst, nd->ninst, sizeof(*nd->inst), slot);
}

static void
node_fini(struct ctl_sms_node *nd)
{
    free(nd->inst);
    free(nd->pend);
    free(nd->base);
    free(nd->reclaim);
}

/* ---- life cycle ---- */

int
ctl_sms_make_policy(const struct ctl_sms *s, uint64_t inst_bytes, struct pol_sms **out,
                    struct pol_sms_cfg *eff)
{
    struct pol_sms_cfg c = {
        .interval_ns = s->cfg.interval_ns,
        .active_intervals = s->cfg.active,
        .degraded_intervals = s->cfg.degraded,
        .compact_age = s->cfg.compact_age,
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
    rc = ctl_sms_make_policy(s, POL_SMS_INST_BYTES_DEFAULT, &s->pol, &s->pcfg);
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
uint64_t
ctl_sms_clock_locked(struct ctl_sms *s, uint64_t now_ns)
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
        ctl_sms_pool_entry_locked(s, tenants[i], now_ns)->listed = 1;
    }
    s->have_tenants = 1;
}

/* The memory each tenant held on nd since its last report, charged. */
static void
do_charge(struct ctl_sms *s, struct ctl_sms_node *nd, uint64_t now_ns)
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
            ctl_cost_add_memory(&ctl_sms_pool_entry_locked(s, in->tenant, now_ns)->cost,
                                nd->instance_bytes, dt);
        }
    }
}

static void
do_fold(struct ctl_sms *s, struct ctl_sms_node *nd, const struct ctl_sms_report *r, uint64_t now_ns)
{
    if (!nd->has_base || nd->base_incarnation != r->incarnation) {
        nd->nbase = 0;
        nd->has_base = 1;
        nd->base_incarnation = r->incarnation;
    }
    for (size_t i = 0; i < r->ncost; i++) {
        const struct ctl_sms_cost *c = &r->cost[i];
        int created;
        size_t b =
            ctl_sms_upsert((void **)&nd->base, &nd->nbase, sizeof(*nd->base), c->tenant, &created);

        ctl_cost_fold(&ctl_sms_pool_entry_locked(s, c->tenant, now_ns)->cost,
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
do_prune_pending(struct ctl_sms_node *nd, uint64_t now_ns)
{
    for (size_t i = 0; i < nd->npend;) {
        const struct ctl_sms_pending *p = &nd->pend[i];
        const struct ctl_sms_inst *in = ctl_sms_inst_of(nd, p->slot);

        if (in == NULL || in->tag != p->tag || (p->delivered_ns != 0 && p->delivered_ns < now_ns)) {
            ctl_sms_erase(nd->pend, &nd->npend, sizeof(*nd->pend), i);
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

void
ctl_sms_config_locked(const struct ctl_sms *s, const struct ctl_sms_node *nd,
                      struct ctl_sms_config *c)
{
    const struct pol_sms_cfg *p = &s->pcfg;

    memset(c, 0, sizeof(*c));
    snprintf(c->policy, sizeof(c->policy), "%s", s->ops->name);
    c->interval_ms = p->interval_ns / CTL_SMS_MS;
    c->warm_active_ms = p->warm_active_ns / CTL_SMS_MS;
    c->warm_degraded_ms = p->warm_degraded_ns / CTL_SMS_MS;
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
do_answer(struct ctl_sms *s, struct ctl_sms_node *nd, uint64_t now_ns, struct ctl_sms_answer *out)
{
    size_t k = 0;

    ctl_sms_config_locked(s, nd, &out->cfg);
    out->pools = cm_calloc(s->npools + 1, sizeof(*out->pools));
    for (size_t i = 0; i < s->npools; i++) {
        const struct ctl_sms_pool *p = &s->pools[i];

        if (p->listed) {
            out->pools[out->npools++] = (struct ctl_sms_pool_gen){
                p->tenant, p->gen, (now_ns - p->gen_start_ns) / CTL_SMS_MS};
        }
    }
    out->dec = cm_calloc(nd->npend + 1, sizeof(*out->dec));
    for (size_t i = 0; i < nd->npend;) {
        struct ctl_sms_pending *p = &nd->pend[i];
        const struct ctl_sms_inst *in = ctl_sms_inst_of(nd, p->slot);

        /* An empty instance is released only if it is still empty. */
        if (p->delivered_ns == 0 && p->d.reason == POL_SMS_EMPTY && in != NULL && in->used > 0) {
            ctl_sms_erase(nd->pend, &nd->npend, sizeof(*nd->pend), i);
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
    struct ctl_sms_node *nd;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->mu);
    now_ns = ctl_sms_clock_locked(s, now_ns);
    do_tenants(s, tenants, n, now_ns);
    nd = ctl_sms_node_entry_locked(s, r->node);
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
        ctl_sms_pool_entry_locked(s, nd->inst[i].tenant, now_ns); /* deleted tenants' age out too */
        if (r->memory_bytes == 0 && nd->inst[i].state != POL_SMS_RELEASED) {
            nd->memory_bytes += nd->instance_bytes; /* a node that does not count it */
        }
    }
    nd->report_ns = now_ns;
    do_prune_pending(nd, now_ns);
    do_answer(s, nd, now_ns, out);
    pthread_mutex_unlock(&s->mu);
}

/* ---- reclaim orders ---- */

int
ctl_sms_reclaim(struct ctl_sms *s, uint32_t node, int all, uint32_t slot,
                struct ctl_sms_inst **what, size_t *n)
{
    struct ctl_sms_node *nd;
    int rc = 0;

    *what = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    nd = ctl_sms_node_entry_locked(s, node);
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

        ctl_sms_upsert((void **)&nd->reclaim, &nd->nreclaim, sizeof(*nd->reclaim), slot, &created);
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
