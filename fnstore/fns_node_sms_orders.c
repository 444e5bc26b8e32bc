/*
 * fns_node_sms_orders.c - what the controller orders this node's SMS
 * window (the "sms" block of a heartbeat answer: the configuration, the
 * pools' generations, per-instance decisions, reclaims), and
 * --reclaim-rate, which reclaims instances at random as a FaaS provider
 * would (fns_node_sms.c owns the window).
 *
 * Threads: the loop thread, but fns_node_sms_orders (any: under mu).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_time.h"
#include "fns_ilog.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_recover.h"
#include "fns_store.h"

/* ---- the controller's orders -------------------------------------------- */

void
fns_sms_orders_free(struct fns_sms_orders *o)
{
    if (o == NULL) {
        return;
    }
    free(o->pools);
    free(o->decisions);
    free(o->reclaim);
    free(o);
}

void
fns_node_sms_orders(struct fns_node *n, struct fns_sms_orders *o)
{
    struct fns_sms_orders *old;

    pthread_mutex_lock(&n->mu);
    old = n->orders;
    if (old != NULL && (old->nreclaim > 0 || old->reclaim_all)) {
        /* A reclaim order comes once: it survives a newer answer. */
        o->reclaim_all |= old->reclaim_all;
        o->reclaim = cm_realloc(o->reclaim, (o->nreclaim + old->nreclaim + 1) * sizeof(uint32_t));
        memcpy(o->reclaim + o->nreclaim, old->reclaim, old->nreclaim * sizeof(uint32_t));
        o->nreclaim += old->nreclaim;
    }
    n->orders = o;
    pthread_mutex_unlock(&n->mu);
    fns_sms_orders_free(old);
    fns_loop_ev_wake(n->ev_orders);
}

/* The policy and configuration of an "sms" block. */
static void
fns_node_sms_configure(struct fns_node *n, const struct fns_sms_orders *o)
{
    const struct pol_sms_ops *ops = pol_sms_find(o->policy);
    struct pol_sms_cfg cfg = o->cfg;
    struct pol_sms *p;
    int rc;

    if (ops == NULL) {
        CM_WARN("unknown sms policy from the controller policy=%s", o->policy);
        return;
    }
    cfg.inst_bytes = fns_store_inst_bytes(n->store);
    if (cfg.max_instances == 0 && strcmp(ops->name, "static") == 0) {
        cfg.max_instances = fns_store_nslots(n->store);
    }
    if (n->sms_heard && ops == n->sms_ops && memcmp(&cfg, &n->sms_cfg, sizeof(cfg)) == 0) {
        return;
    }
    rc = ops->create(&cfg, &p);
    if (rc != 0) {
        CM_WARN("sms configuration refused policy=%s err=%s", o->policy, cm_errname(rc));
        return;
    }
    n->sms_ops->destroy(n->sms);
    n->sms = p;
    n->sms_ops = ops;
    n->sms_cfg = cfg;
    if (!n->sms_heard) {
        CM_INFO("sms policy from the controller policy=%s interval_ms=%llu active=%u degraded=%u",
                ops->name, (unsigned long long)(cfg.interval_ns / 1000000u), cfg.active_intervals,
                cfg.degraded_intervals);
    }
    n->sms_heard = 1;
}

static void
fns_node_sms_pools(struct fns_node *n, const struct fns_sms_orders *o)
{
    uint32_t ns = fns_store_nslots(n->store);

    for (size_t i = 0; i < o->npools; i++) {
        struct fns_pool *p = fns_pool_of(n, o->pools[i].tenant);

        if (p->gen == o->pools[i].gen) {
            continue;
        }
        p->gen = o->pools[i].gen;
        /* A new interval: the read counts start over. */
        for (uint32_t s = 0; s < ns; s++) {
            struct fns_slot *sl = fns_store_slot(n->store, s);

            if (sl->live && sl->tenant == p->tenant) {
                sl->read_bytes = sl->read_chunks = 0;
            }
        }
    }
}

static void
fns_node_sms_decide(struct fns_node *n, const struct fns_sms_decision *d)
{
    struct fns_slot *sl;
    int changed = 0;

    if (d->slot >= fns_store_nslots(n->store) || fns_store_tag(n->store, d->slot) != d->tag ||
        !(sl = fns_store_slot(n->store, d->slot))->live) {
        return; /* replaced since */
    }
    n->sst.decisions++;
    if (d->warm_up) {
        sl->warm_ns = cm_now_ns();
        fns_node_cost_of(n, sl->tenant)->warmups++;
        n->sst.warmups++;
    }
    if (d->state == POL_SMS_RELEASED) {
        fns_node_sms_release(n, d->slot); /* a recovery under way stops with it */
        return;
    }
    if (d->gen != sl->gen) {
        sl->gen = d->gen;
        sl->put_bytes = 0;
        changed = 1;
    }
    if ((int)sl->state != d->state && d->state >= 0 && d->state < POL_SMS_RELEASED &&
        !(sl->state == POL_SMS_ACTIVE && d->state == POL_SMS_WARM)) {
        sl->state = (enum pol_sms_state)d->state;
        changed = 1;
    }
    if (changed) {
        fns_node_log_instance(n, d->slot);
        fns_node_ilog_kick(n);
    }
}

void
fns_node_sms_orders_cb(void *arg)
{
    struct fns_node *n = arg;
    struct fns_sms_orders *o;
    uint32_t ns = fns_store_nslots(n->store);

    pthread_mutex_lock(&n->mu);
    o = n->orders;
    n->orders = NULL;
    pthread_mutex_unlock(&n->mu);
    if (o == NULL) {
        return;
    }
    if (o->has_sms) {
        fns_node_sms_configure(n, o);
    }
    fns_node_sms_pools(n, o);
    for (size_t i = 0; i < o->ndecisions; i++) {
        fns_node_sms_decide(n, &o->decisions[i]);
    }
    for (uint32_t s = 0; s < ns; s++) {
        int hit = o->reclaim_all;

        for (size_t i = 0; i < o->nreclaim && !hit; i++) {
            hit = o->reclaim[i] == s;
        }
        if (hit) {
            fns_node_sms_reclaim(n, s);
        }
    }
    fns_sms_orders_free(o);
    fns_node_sms_merge(n);
    fns_node_publish(n);
}

/* ---- --reclaim-rate ------------------------------------------------------ */

static uint64_t
fns_node_rand(struct fns_node *n)
{
    uint64_t z = (n->rng += 0x9E3779B97F4A7C15ull); /* splitmix64 */

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Poisson arrivals: the next reclaim after an exponential gap. */
void
fns_node_reclaim_arm(struct fns_node *n)
{
    double u = ((double)(fns_node_rand(n) >> 11) + 0.5) / 9007199254740992.0;
    double gap_s = -log(u) * 60.0 / n->cfg.reclaim_rate;

    fns_loop_ev_after(n->ev_reclaim, (uint64_t)(gap_s * 1e9));
}

void
fns_node_sms_reclaim_cb(void *arg)
{
    struct fns_node *n = arg;
    uint32_t ns = fns_store_nslots(n->store), live = fns_store_live(n->store);

    if (live > 0 && !n->stopping) {
        uint32_t pick = (uint32_t)(fns_node_rand(n) % live);

        for (uint32_t s = 0; s < ns; s++) {
            if (fns_store_slot(n->store, s)->live && pick-- == 0) {
                fns_node_sms_reclaim(n, s);
                break;
            }
        }
    }
    fns_node_reclaim_arm(n);
}
