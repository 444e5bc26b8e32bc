/*
 * fns_node_report.c - what the node reports and what comes back: its stats
 * (fns_node_stats, read by /metrics and heartbeats), the per-tenant
 * snapshot heartbeats carry (taken from the FQ scheduler every tick), and
 * the local weights the controller answers with.
 *
 * Threads: the snapshot and the weights cross threads under n->mu; the
 * stats are atomics published by the loop thread. fns_node_report_tick and
 * fns_node_weights_cb run on the loop thread, the public functions on any.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_log.h"
#include "cm_time.h"
#include "fns_cos.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_pack.h"

/* The time constant of a tenant's share (served cost per second), and the
 * shortest interval a share is measured over. */
#define FNS_SHARE_TAU_S 1.0
#define FNS_SHARE_MIN_DT_NS (100u * 1000000u)

struct fns_snap_ctx {
    struct fns_node *n;
    uint64_t now;
    size_t i;
};

static void
fns_node_snap_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    struct fns_snap_ctx *ctx = arg;
    struct fns_node *n = ctx->n;
    struct fns_tstat *ts = fns_node_tstat(n, ti->tenant);
    struct fns_node_tenant *o;

    if (ctx->i == n->capsnap) {
        n->capsnap = n->capsnap ? n->capsnap * 2 : 16;
        n->snap = cm_realloc(n->snap, n->capsnap * sizeof(*n->snap));
    }
    ts->est_get = ti->est_get_bytes;
    if (ts->last_ns == 0) {
        ts->last_ns = ctx->now;
        ts->last_cost = ti->served_cost;
    } else if (ctx->now - ts->last_ns >= FNS_SHARE_MIN_DT_NS) {
        double dt = (double)(ctx->now - ts->last_ns) / 1e9;
        double rate = (ti->served_cost - ts->last_cost) / dt;

        ts->share += (1.0 - exp(-dt / FNS_SHARE_TAU_S)) * (rate - ts->share);
        ts->last_ns = ctx->now;
        ts->last_cost = ti->served_cost;
    }
    o = &n->snap[ctx->i++];
    memset(o, 0, sizeof(*o));
    o->tenant = ti->tenant;
    o->requests = ti->served_requests;
    o->bytes = ti->served_bytes;
    o->queued = ti->queued;
    o->running = ti->running;
    o->weight = ti->weight;
    o->arrived_requests = ti->arrived_requests;
    o->arrived_bytes = ti->arrived_bytes;
    o->arrived_cost = ts->arrived_cost;
    o->served_cost = ti->served_cost;
    o->share = ts->share;
    o->qwait = ts->qwait;
}

void
fns_node_report_tick(struct fns_node *n)
{
    struct fns_snap_ctx ctx = {n, cm_now_ns(), 0};

    pthread_mutex_lock(&n->mu);
    pol_fq_foreach_tenant(n->fq, fns_node_snap_cb, &ctx);
    n->nsnap = ctx.i;
    pthread_mutex_unlock(&n->mu);
    atomic_store(&n->segments, fns_pack_index_segments(n->pack));
    atomic_store(&n->packed, fns_pack_index_chunks(n->pack));
    atomic_store(&n->held, fns_pack_index_held(n->pack));
    atomic_store(&n->pub_disp, n->disp);
    atomic_store(&n->pub_disp_bytes, n->disp_bytes);
    atomic_store(&n->pub_queued, pol_fq_len(n->fq));
    fns_node_sms_report(n);
}

void
fns_node_weights_cb(void *arg)
{
    struct fns_node *n = arg;
    uint32_t *t;
    double *w;
    size_t cnt, i;

    pthread_mutex_lock(&n->mu);
    t = n->w_tenants;
    w = n->w_values;
    cnt = n->nw;
    n->w_tenants = NULL;
    n->w_values = NULL;
    n->nw = 0;
    pthread_mutex_unlock(&n->mu);
    for (i = 0; i < cnt; i++) {
        if (n->fq_ops->set_weight(n->fq, t[i], w[i]) != 0) {
            CM_WARN("weight refused tenant=%u weight=%g", t[i], w[i]);
        }
    }
    free(t);
    free(w);
    fns_node_report_tick(n); /* reports show the new weights now, not a tick later */
}

void
fns_node_stats(struct fns_node *n, struct fns_node_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->port = n->port;
    out->id = n->cfg.id;
    out->incarnation = n->cfg.incarnation;
    pthread_mutex_lock(&n->mu);
    out->sms = n->pub_sst;
    pthread_mutex_unlock(&n->mu);
    out->sms.recovery_seconds = (double)out->sms.recovery_ns / 1e9;
    out->instances =
        (uint32_t)(out->sms.instances[POL_SMS_WARM] + out->sms.instances[POL_SMS_ACTIVE] +
                   out->sms.instances[POL_SMS_DEGRADED]);
    out->capacity_bytes = n->cfg.capacity;
    out->used_bytes = atomic_load(&n->used);
    out->chunks = atomic_load(&n->nchunks);
    out->bad_frames_total = atomic_load(&n->bad_frames);
    if (n->arena != NULL) {
        fns_arena_stats(n->arena, &out->arena);
    }
    out->cos_pending = fns_cos_pending(n->pool);
    out->cos_writes_total = fns_cos_writes_total(n->pool);
    /* Recoveries reload chunks from COS too. */
    out->cos_reloads_total = fns_cos_reloads_total(n->pool) + fns_cos_reloads_total(n->recpool);
    out->cos_segments = atomic_load(&n->segments);
    out->cos_packed_chunks = atomic_load(&n->packed);
    out->cos_segments_held = atomic_load(&n->held);
    out->sched = n->fq_ops->name;
    out->cap_ops = n->cfg.cap_ops;
    out->cap_bytes = n->cfg.cap_bytes;
    out->max_dispatched = n->cfg.max_dispatched;
    out->max_dispatched_bytes = n->cfg.max_dispatched_bytes;
    out->dispatched = atomic_load(&n->pub_disp);
    out->dispatched_bytes = atomic_load(&n->pub_disp_bytes);
    out->dispatch_pauses_total = atomic_load(&n->disp_pauses);
    out->queued = atomic_load(&n->pub_queued);
}

struct cm_reqstats *
fns_node_reqstats(struct fns_node *n)
{
    return n->rs;
}

size_t
fns_node_tenants(struct fns_node *n, struct fns_node_tenant **out)
{
    size_t cnt;

    *out = NULL;
    pthread_mutex_lock(&n->mu);
    cnt = n->nsnap;
    if (cnt > 0) {
        *out = cm_malloc(cnt * sizeof(**out));
        memcpy(*out, n->snap, cnt * sizeof(**out));
    }
    pthread_mutex_unlock(&n->mu);
    return cnt;
}

void
fns_node_set_weights(struct fns_node *n, const uint32_t *tenants, const double *weights,
                     size_t count)
{
    uint32_t *t = cm_malloc((count ? count : 1) * sizeof(*t));
    double *w = cm_malloc((count ? count : 1) * sizeof(*w));

    if (count > 0) {
        memcpy(t, tenants, count * sizeof(*t));
        memcpy(w, weights, count * sizeof(*w));
    }
    pthread_mutex_lock(&n->mu);
    free(n->w_tenants);
    free(n->w_values);
    n->w_tenants = t;
    n->w_values = w;
    n->nw = count;
    pthread_mutex_unlock(&n->mu);
    fns_loop_ev_wake(n->ev_weights);
}
