/*
 * ctl_sms_loop.c - the window loop of every tenant pool (ctl_sms_run):
 * reports of silent nodes expired, pools of deleted tenants dropped, a view
 * of each due pool copied out, the policy's tick run on the copies, and its
 * decisions kept until a report shows them applied (see ctl_sms.h).
 *
 * A view shows, for an instance with a decision still on its way (or sent
 * but not yet shown applied), the decision in place of the report, so a
 * tick never decides the same thing twice. A decision is kept only for an
 * instance whose slot still has the tag it was made for.
 *
 * Threads: ctl_sms_run is called by one thread (main), which owns s->pol;
 * it takes s->mu to copy the views and to apply the ticks, never across
 * the policy's tick.
 *
 * Naming: do_x() expects s->mu held.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_sms_impl.h"

static struct ctl_sms_pool *
do_pool(struct ctl_sms *s, uint32_t tenant)
{
    return ctl_sms_find(s->pools, s->npools, sizeof(*s->pools), tenant);
}

static struct ctl_sms_node *
do_node(struct ctl_sms *s, uint32_t id)
{
    return ctl_sms_find(s->nodes, s->nnodes, sizeof(*s->nodes), id);
}

static struct ctl_sms_pending *
pend_of(struct ctl_sms_node *nd, uint32_t slot)
{
    return ctl_sms_find(nd->pend, nd->npend, sizeof(*nd->pend), slot);
}

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
        struct ctl_sms_node *nd = &s->nodes[i];

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
            ctl_sms_erase(s->pools, &s->npools, sizeof(*s->pools), i);
        } else {
            i++;
        }
    }
}

/* The view instance of in (reported by nd), with the decision still on its
 * way to the node, or sent but not yet shown applied, in place of the report. */
static struct pol_sms_inst
do_view_inst(struct ctl_sms_node *nd, const struct ctl_sms_inst *in)
{
    const struct ctl_sms_pending *p = pend_of(nd, in->slot);
    uint64_t age = in->warm_age_ms * CTL_SMS_MS;
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
do_view(struct ctl_sms *s, struct ctl_sms_pool *p, uint64_t now_ns, struct due *d)
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
        struct ctl_sms_node *nd = &s->nodes[i];

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
    struct ctl_sms_pool *p = do_pool(s, d->tenant);
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
    p->next_ns = next > now_ns ? next : now_ns + CTL_SMS_MS;
    for (size_t i = 0; i < d->v.ninst; i++) {
        struct ctl_sms_node *nd = do_node(s, d->ref[i].node);
        const struct ctl_sms_inst *in = nd != NULL ? ctl_sms_inst_of(nd, d->ref[i].slot) : NULL;
        struct pol_sms_decision dd = d->d[i];
        struct ctl_sms_pending *pe;
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
                ctl_sms_erase(nd->pend, &nd->npend, sizeof(*nd->pend), (size_t)(pe - nd->pend));
            }
            continue;
        }
        k = ctl_sms_upsert((void **)&nd->pend, &nd->npend, sizeof(*nd->pend), in->slot, &created);
        pe = &nd->pend[k];
        *pe = (struct ctl_sms_pending){in->slot, in->tag, in->tenant, dd, now_ns, 0};
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
    now_ns = ctl_sms_clock_locked(s, now_ns);
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
    if (isz != pol_sms_cfg_of(s->pol)->inst_bytes && ctl_sms_make_policy(s, isz, &np, &ncfg) == 0) {
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
