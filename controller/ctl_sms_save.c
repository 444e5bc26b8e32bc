/*
 * ctl_sms_save.c - the elastic memory across restarts: the cost totals and
 * windows of every pool, and the sms_cost counters last folded per node,
 * written to ctl_store's "sms" table in one transaction and read back at
 * start (the records' codecs are ctl_cost.c's).
 *
 * Times are stored as wall ms; a window read back is moved on by the wall
 * time that passed (whole intervals become generations, the rest the
 * current one's age). The counters last folded are stored with the totals
 * in one transaction, so a restart neither loses nor repeats what a node's
 * counters had reached by then.
 *
 * Threads: any thread; the records are copied under s->mu and written to
 * the store after it is released.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_sms_impl.h"
#include "ctl_store.h"

/* A monotonic time as wall ms, given now on both clocks. */
static uint64_t
to_wall(uint64_t t_ns, uint64_t now_ns, uint64_t now_wall_ms)
{
    uint64_t ago = (now_ns - t_ns) / CTL_SMS_MS;

    return now_wall_ms > ago ? now_wall_ms - ago : 0;
}

int
ctl_sms_save(struct ctl_sms *s, struct ctl_store *store, uint64_t now_ns, uint64_t now_wall_ms)
{
    struct ctl_store_sms *r;
    size_t n = 0;
    int rc;

    pthread_mutex_lock(&s->mu);
    now_ns = ctl_sms_clock_locked(s, now_ns);
    r = cm_calloc(s->npools + s->nnodes + 1, sizeof(*r));
    for (size_t i = 0; i < s->npools; i++) {
        const struct ctl_sms_pool *p = &s->pools[i];
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
        const struct ctl_sms_node *nd = &s->nodes[i];
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
    struct ctl_sms_pool *p = ctl_sms_pool_entry_locked(s, t->tenant, now_ns);
    uint64_t ago_ms = now_wall_ms > t->gen_start_ms ? now_wall_ms - t->gen_start_ms : 0;
    uint64_t ago = ago_ms > UINT64_MAX / CTL_SMS_MS ? UINT64_MAX : ago_ms * CTL_SMS_MS;
    uint64_t k = ago / s->cfg.interval_ns, rest = ago - k * s->cfg.interval_ns;
    uint64_t since = now_wall_ms > t->since_ms ? (now_wall_ms - t->since_ms) * CTL_SMS_MS : 0;

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
    now_ns = ctl_sms_clock_locked(s, now_ns);
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
                struct ctl_sms_node *nd = ctl_sms_node_entry_locked(s, r[i].id);

                nd->has_base = 1;
                nd->base_incarnation = b.incarnation;
                for (size_t j = 0; j < b.n; j++) {
                    int created;
                    size_t k = ctl_sms_upsert((void **)&nd->base, &nd->nbase, sizeof(*nd->base),
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
