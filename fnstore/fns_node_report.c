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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_log.h"
#include "fns_cos.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_pack.h"

struct fns_snap_ctx {
    struct fns_node *n;
    size_t i;
};

static void
fns_node_snap_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    struct fns_snap_ctx *ctx = arg;
    struct fns_node *n = ctx->n;

    if (ctx->i == n->capsnap) {
        n->capsnap = n->capsnap ? n->capsnap * 2 : 16;
        n->snap = cm_realloc(n->snap, n->capsnap * sizeof(*n->snap));
    }
    n->snap[ctx->i].tenant = ti->tenant;
    n->snap[ctx->i].requests = ti->served_requests;
    n->snap[ctx->i].bytes = ti->served_bytes;
    n->snap[ctx->i].queued = ti->queued;
    ctx->i++;
}

void
fns_node_report_tick(struct fns_node *n)
{
    struct fns_snap_ctx ctx = {n, 0};

    pthread_mutex_lock(&n->mu);
    pol_fq_foreach_tenant(n->fq, fns_node_snap_cb, &ctx);
    n->nsnap = ctx.i;
    pthread_mutex_unlock(&n->mu);
    atomic_store(&n->segments, fns_pack_index_segments(n->pack));
    atomic_store(&n->packed, fns_pack_index_chunks(n->pack));
    atomic_store(&n->held, fns_pack_index_held(n->pack));
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
}

void
fns_node_stats(struct fns_node *n, struct fns_node_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->port = n->port;
    out->id = n->cfg.id;
    out->incarnation = n->cfg.incarnation;
    out->instances = n->cfg.instances;
    out->capacity_bytes = n->cfg.capacity;
    out->used_bytes = atomic_load(&n->used);
    out->chunks = atomic_load(&n->nchunks);
    out->bad_frames_total = atomic_load(&n->bad_frames);
    if (n->arena != NULL) {
        fns_arena_stats(n->arena, &out->arena);
    }
    out->cos_pending = fns_cos_pending(n->pool);
    out->cos_writes_total = fns_cos_writes_total(n->pool);
    out->cos_reloads_total = fns_cos_reloads_total(n->pool);
    out->cos_segments = atomic_load(&n->segments);
    out->cos_packed_chunks = atomic_load(&n->packed);
    out->cos_segments_held = atomic_load(&n->held);
}

struct cm_reqstats *
fns_node_reqstats(struct fns_node *n)
{
    return n->rs;
}

size_t
fns_node_tenants(struct fns_node *n, struct fns_node_tenant *out, size_t cap)
{
    size_t cnt;

    pthread_mutex_lock(&n->mu);
    cnt = n->nsnap < cap ? n->nsnap : cap;
    if (cnt > 0) {
        memcpy(out, n->snap, cnt * sizeof(*out));
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
