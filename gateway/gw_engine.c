/*
 * gw_engine.c - the engine's API (gw_engine.h): validation and the work
 * done on the caller's thread, then a post onto the gw_net loop thread,
 * where gw_read.c and gw_pbuf.c take over; the engine's life cycle.
 *
 *   put():    etag, layout, encode, CRCs ──post──▶ gw_pbuf_put_start
 *   get():    range check, result buffer ──post──▶ gw_read_start
 *   delete(), track(), set_nodes()       ──post──▶ gw_pbuf / gw_net
 *   committed(), tombstone()             ──post──▶ gw_pbuf / gw_mlog
 *
 * Threads: the public functions run on any thread and touch nothing the
 * loop thread owns; the cm_ec cache is shared (lock); stats are atomics.
 * The policies (RS, holders) are created here and used on the loop thread
 * only.
 */
#include "gw_engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_engine_impl.h"
#include "gw_net.h"
#include "pol_holders.h"
#include "pol_rs.h"

struct cm_ec *
gw_engine_ec(struct gw_engine *e, int k, int m)
{
    struct cm_ec *ec;
    pthread_mutex_lock(&e->ec_lock);
    ec = e->ecs[k][m];
    if (!ec && cm_ec_create(k, m, &ec) == 0) {
        e->ecs[k][m] = ec;
    }
    pthread_mutex_unlock(&e->ec_lock);
    return ec;
}

uint64_t
gw_engine_put_room(const struct gw_engine *e, uint8_t k, uint64_t size)
{
    return gw_stripe_room(e->cfg.max_chunk, k, size);
}

static struct gw_obj *
obj_new(struct gw_engine *e)
{
    struct gw_obj *o = calloc(1, sizeof(*o));
    if (o) {
        o->e = e;
        o->refs = 1;
    }
    return o;
}

/* The layout, etag, parity and CRCs, on the caller's thread. */
static int
put_prepare(struct gw_engine *e, struct gw_obj *o, uint64_t cap)
{
    struct gw_layout *l = &o->lay;
    struct cm_ec *ec = NULL;
    if (l->size > 0 && l->k > 1 && l->m > 0) {
        ec = gw_engine_ec(e, l->k, l->m);
        if (!ec) {
            return -ENOMEM;
        }
    }
    int rc = gw_stripe_encode(&o->st, l, ec, e->cfg.max_chunk, cap);
    if (rc < 0 || l->nstripes == 0) {
        return rc;
    }
    o->persisted = calloc(gw_layout_nchunks(l), 1);
    l->tags = calloc(gw_layout_nchunks(l), sizeof(*l->tags)); /* the PUT answers fill them */
    return o->persisted && l->tags ? 0 : -ENOMEM;
}

void
gw_engine_put(struct gw_engine *e, uint32_t tenant, const uint32_t *placement, size_t nplace,
              uint8_t k, uint8_t m, void *data, uint64_t size, uint64_t cap, gw_put_cb cb,
              void *arg, void (*freed)(void *arg), void *freed_arg)
{
    struct gw_obj *o = obj_new(e);
    if (!o) {
        cm_free_big(data);
        if (freed != NULL) {
            freed(freed_arg);
        }
        struct gw_layout l = {.tenant = tenant};
        cb(arg, -ENOMEM, &l); /* cannot even queue: answer here */
        return;
    }
    o->st.data = data;
    o->freed = freed;
    o->freed_arg = freed_arg;
    if (cap < size) {
        cap = size;
    }
    o->cb = cb;
    o->cb_arg = arg;
    o->state = OBJ_PUTTING;
    o->lay.tenant = tenant;
    o->lay.size = size;
    o->lay.k = k;
    o->lay.m = m;
    do {
        o->lay.object = cm_random_u64();
    } while (o->lay.object == 0);
    o->nplace = nplace < GW_MAX_HOLDERS ? nplace : GW_MAX_HOLDERS;
    if (placement && o->nplace) {
        memcpy(o->place, placement, o->nplace * sizeof(*placement));
    }
    if (k < 1 || k > CM_EC_MAX_K || m > CM_EC_MAX_M || (size > 0 && !data)) {
        o->init_status = CM_E_BADARG;
    } else {
        o->init_status = put_prepare(e, o, cap);
    }
    if (gw_net_post(e->net, gw_pbuf_put_start, o) < 0) {
        o->state = OBJ_BUFFERED; /* no callback from gw_obj_unref */
        cb(arg, -ENOMEM, &o->lay);
        gw_obj_unref(o);
    }
}

void
gw_engine_get(struct gw_engine *e, const struct gw_layout *layout, uint64_t off, uint64_t len,
              gw_get_cb cb, void *arg)
{
    size_t ntags = layout->tags ? gw_layout_nchunks(layout) : 0;
    struct gw_get *g = calloc(1, sizeof(*g) + ntags * sizeof(g->tags[0]));
    if (!g) {
        cb(arg, -ENOMEM, NULL, 0);
        return;
    }
    g->e = e;
    g->lay = *layout;
    if (ntags) {
        memcpy(g->tags, layout->tags, ntags * sizeof(g->tags[0]));
        g->lay.tags = g->tags;
    }
    g->off = off;
    g->len = len;
    g->cb = cb;
    g->arg = arg;
    if (off > layout->size || len > layout->size - off || layout->k < 1 ||
        layout->k > CM_EC_MAX_K || layout->m > CM_EC_MAX_M ||
        (len > 0 && (layout->chunk_size == 0 || layout->nstripes == 0))) {
        g->status = CM_E_BADARG;
    } else {
        g->buf = cm_malloc_big(len);
        if (!g->buf) {
            g->status = -ENOMEM;
        }
    }
    if (gw_net_post(e->net, gw_read_start, g) < 0) {
        cm_free_big(g->buf);
        free(g);
        cb(arg, -ENOMEM, NULL, 0);
    }
}

void
gw_engine_delete(struct gw_engine *e, const struct gw_layout *layout, int delay_ms)
{
    struct gw_del *d = calloc(1, sizeof(*d));
    if (!d) {
        CM_ERROR("gateway delete dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
                 (unsigned long long)layout->object);
        return;
    }
    d->e = e;
    d->lay = *layout;
    d->lay.tags = NULL; /* a DEL names no instance */
    d->delay_ms = delay_ms;
    if (gw_net_post(e->net, gw_pbuf_delete_start, d) < 0) {
        CM_ERROR("gateway delete dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
                 (unsigned long long)layout->object);
        free(d);
    }
}

void
gw_engine_track(struct gw_engine *e, const struct gw_layout *layout,
                const struct gw_meta_attrs *attrs, const char *key, size_t klen)
{
    if (layout->k == 0) {
        gw_engine_committed(e, layout, attrs, key, klen);
        return;
    }
    if (layout->k > CM_EC_MAX_K || layout->m > CM_EC_MAX_M || klen == 0) {
        return;
    }
    struct gw_obj *o = obj_new(e);
    if (o) {
        o->state = OBJ_TRACKED;
        (void)gw_layout_copy(&o->lay, layout); /* out of memory: tags unknown */
        if (!o->lay.tags && gw_layout_nchunks(layout) > 0) {
            /* a record without tags: what is stored again learns its tags */
            o->lay.tags = calloc(gw_layout_nchunks(layout), sizeof(*o->lay.tags));
        }
        o->committed = 1;
        o->key = malloc(klen);
        o->klen = klen;
        /* one byte at least: an empty object has no chunks */
        o->persisted = calloc(gw_layout_nchunks(layout) + 1, 1);
        if (o->key && o->persisted &&
            (attrs == NULL || gw_meta_attrs_dup(attrs, &o->attrs, &o->attrs_mem) == 0)) {
            memcpy(o->key, key, klen);
            if (gw_net_post(e->net, gw_pbuf_track_start, o) == 0) {
                return;
            }
        }
        gw_obj_unref(o);
    }
    CM_ERROR("gateway track dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
             (unsigned long long)layout->object);
}

void
gw_engine_move(struct gw_engine *e, const struct gw_layout *layout, uint64_t mask,
               const uint32_t *to, gw_move_cb cb, void *arg)
{
    uint64_t all = gw_stripe_all(layout);
    if (layout->nstripes == 0 || mask == 0 || (mask & ~all) != 0 || layout->k < 1 ||
        layout->k > CM_EC_MAX_K || layout->m > CM_EC_MAX_M) {
        cb(arg, CM_E_BADARG, NULL);
        return;
    }
    struct gw_obj *o = obj_new(e);
    if (o) {
        o->state = OBJ_TRACKED;
        (void)gw_layout_copy(&o->lay, layout); /* out of memory: tags unknown */
        if (!o->lay.tags && gw_layout_nchunks(layout) > 0) {
            o->lay.tags = calloc(gw_layout_nchunks(layout), sizeof(*o->lay.tags));
        }
        for (uint32_t j = 0; j < gw_stripe_n(layout); j++) {
            if (mask & GW_BIT(j)) {
                o->lay.holders[j] = to[j];
                for (uint32_t s = 0; o->lay.tags && s < layout->nstripes; s++) {
                    o->lay.tags[gw_stripe_index(layout, s, j)] = 0; /* the PUTs' answers tell */
                }
            }
            o->place[j] = o->lay.holders[j];
        }
        o->nplace = gw_stripe_n(layout);
        o->lay.persisted = all & ~mask;
        o->move_mask = mask;
        o->move_cb = cb;
        o->move_arg = arg;
        o->src = malloc(sizeof(*o->src));
        o->persisted = calloc((size_t)layout->nstripes * gw_stripe_n(layout), 1);
        if (o->src && o->persisted) {
            *o->src = *layout;
            o->src->tags = NULL; /* the caller's; reads from the old holders ask "any" */
            if (gw_net_post(e->net, gw_pbuf_move_start, o) == 0) {
                return;
            }
        }
        o->move_cb = NULL;
        gw_obj_unref(o);
    }
    cb(arg, -ENOMEM, NULL);
}

void
gw_engine_drop(struct gw_engine *e, const struct gw_layout *layout, uint64_t mask)
{
    struct gw_del *d = calloc(1, sizeof(*d));
    if (d) {
        d->e = e;
        d->lay = *layout;
        d->mask = mask;
        if (gw_net_post(e->net, gw_pbuf_drop_start, d) == 0) {
            return;
        }
        free(d);
    }
    CM_ERROR("gateway drop lost tenant=%u object=%016llx err=ENOMEM", layout->tenant,
             (unsigned long long)layout->object);
}

void
gw_engine_committed(struct gw_engine *e, const struct gw_layout *layout,
                    const struct gw_meta_attrs *attrs, const char *key, size_t klen)
{
    if (gw_layout_record_only(layout)) {
        struct gw_mjob *j = gw_mlog_record_new(e, layout, attrs, key, klen);
        if (j && gw_net_post(e->net, gw_mlog_start, j) == 0) {
            return;
        }
        gw_mlog_cancel(j);
        CM_ERROR("gateway record dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
                 (unsigned long long)layout->object);
        return;
    }
    struct committed_cmd *c = calloc(1, sizeof(*c) + klen);
    if (c && (attrs == NULL || gw_meta_attrs_dup(attrs, &c->attrs, &c->attrs_mem) == 0)) {
        c->e = e;
        c->tenant = layout->tenant;
        c->object = layout->object;
        c->version = layout->version;
        c->klen = klen;
        memcpy(c->key, key, klen);
        if (gw_net_post(e->net, gw_pbuf_committed, c) == 0) {
            return;
        }
        free(c->attrs_mem);
    }
    free(c);
    /* Pending keeps the version: the next start sends its record. */
    CM_ERROR("gateway commit notice dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
             (unsigned long long)layout->object);
}

void
gw_engine_tombstone(struct gw_engine *e, const struct gw_layout *layout, const char *key,
                    size_t klen)
{
    struct gw_mjob *j = gw_mlog_tomb_new(e, layout, key, klen);
    if (j && gw_net_post(e->net, gw_mlog_start, j) == 0) {
        return;
    }
    gw_mlog_cancel(j);
    CM_ERROR("gateway tombstone dropped tenant=%u object=%016llx err=ENOMEM", layout->tenant,
             (unsigned long long)layout->object);
}

void
gw_engine_relog(struct gw_engine *e, const struct gw_layout *layout,
                const struct gw_meta_attrs *attrs, const char *key, size_t klen, uint32_t gen,
                void (*logged)(void *arg, int rc), void *arg)
{
    struct gw_mjob *j = gw_mlog_moved_new(e, layout, attrs, key, klen, gen, logged, arg);
    if (!j) {
        logged(arg, -ENOMEM);
        return;
    }
    if (gw_net_post(e->net, gw_mlog_start, j) != 0) {
        gw_mlog_cancel(j); /* tells logged */
    }
}

struct nodes_cmd {
    struct gw_engine *e;
    size_t n;
    struct gw_node nodes[];
};

static void
nodes_apply(void *arg)
{
    struct nodes_cmd *c = arg;
    gw_net_set_nodes(c->e->net, c->nodes, c->n);
    free(c);
}

void
gw_engine_set_nodes(struct gw_engine *e, const struct gw_node *nodes, size_t n)
{
    struct nodes_cmd *c = malloc(sizeof(*c) + n * sizeof(*nodes));
    if (!c) {
        CM_ERROR("gateway set_nodes err=ENOMEM");
        return;
    }
    c->e = e;
    c->n = n;
    if (n) {
        memcpy(c->nodes, nodes, n * sizeof(*nodes));
    }
    if (gw_net_post(e->net, nodes_apply, c) < 0) {
        CM_ERROR("gateway set_nodes err=ENOMEM");
        free(c);
    }
}

struct weights_cmd {
    struct gw_engine *e;
    size_t n;
    struct gw_weight w[];
};

static void
weights_apply(void *arg)
{
    struct weights_cmd *c = arg;
    struct gw_engine *e = c->e;
    free(e->weights);
    e->weights = malloc((c->n ? c->n : 1) * sizeof(*e->weights));
    e->nweights = e->weights ? c->n : 0;
    if (e->nweights) {
        memcpy(e->weights, c->w, c->n * sizeof(*c->w));
    }
    free(c);
}

void
gw_engine_set_weights(struct gw_engine *e, const uint32_t *ids, const double *weights, size_t n)
{
    struct weights_cmd *c = malloc(sizeof(*c) + (n ? n : 1) * sizeof(c->w[0]));
    double least = 0;
    size_t m = 0;
    if (!c) {
        CM_ERROR("gateway set_weights err=ENOMEM");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (weights[i] > 0 && (least == 0 || weights[i] < least)) {
            least = weights[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (weights[i] > 0) {
            c->w[m++] = (struct gw_weight){ids[i], weights[i] / least};
        }
    }
    c->e = e;
    c->n = m;
    if (gw_net_post(e->net, weights_apply, c) < 0) {
        CM_ERROR("gateway set_weights err=ENOMEM");
        free(c);
    }
}

static int
weight_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = ((const struct gw_weight *)b)->tenant;
    return x < y ? -1 : x > y;
}

double
gw_engine_weight(const struct gw_engine *e, uint32_t tenant)
{
    const struct gw_weight *w =
        e->nweights ? bsearch(&tenant, e->weights, e->nweights, sizeof(*w), weight_cmp) : NULL;
    return w ? w->rel : 1.0;
}

void
gw_engine_stats(struct gw_engine *e, struct gw_engine_stats *out)
{
    out->buffered_bytes = atomic_load(&e->buffered_bytes);
    out->buffered_objects = atomic_load(&e->buffered_objects);
    out->redriven_chunks = atomic_load(&e->redriven_chunks);
    out->parity_reads = atomic_load(&e->parity_reads);
    out->persist_notes = atomic_load(&e->persist_notes);
    out->persist_stats = atomic_load(&e->persist_stats);
    out->stale_chunks = atomic_load(&e->stale_chunks);
    out->late_reads = atomic_load(&e->late_reads);
    out->hedges = atomic_load(&e->hedges);
    out->hedges_denied = atomic_load(&e->hedges_denied);
    out->meta_records = atomic_load(&e->meta_records);
    out->meta_unlogged = atomic_load(&e->meta_unlogged);
    out->meta_waiting = atomic_load(&e->meta_waiting);
    out->dels_waiting = atomic_load(&e->dels_waiting);
    out->dels_resent = atomic_load(&e->dels_resent);
    out->dels_dropped = atomic_load(&e->dels_dropped);
}

/* The per (tenant, node) RS figures, one family of the snapshot. */
static void
metrics_rs_family(const struct gw_rs_snap *s, struct cm_buf *out, const char *name,
                  const char *help, int field)
{
    char labels[48];
    if (s->n == 0) {
        return;
    }
    cm_prom_family(out, name, "gauge", help);
    for (size_t i = 0; i < s->n; i++) {
        const struct pol_rs_peer *p = &s->p[i];
        snprintf(labels, sizeof(labels), "tenant=\"%u\",node=\"%u\"", p->tenant, p->node);
        cm_prom_double(out, name, labels,
                       field == 0   ? p->window
                       : field == 1 ? (double)p->rtt_ns / 1e9
                       : field == 2 ? (double)p->base_ns / 1e9
                                    : p->alpha);
    }
}

void
gw_engine_metrics(struct gw_engine *e, struct cm_buf *out)
{
    char labels[80];
    snprintf(labels, sizeof(labels), "rs=\"%s\"", e->rs_ops->name);
    cm_prom_family(out, "shoal_gateway_info", "gauge", "Policies in use (labels); always 1");
    cm_prom_u64(out, "shoal_gateway_info", labels, 1);
    pthread_mutex_lock(&e->rs_lock);
    metrics_rs_family(&e->rs_snap, out, "shoal_gateway_rs_window",
                      "Replica selection: chunk GETs a tenant may have outstanding at a node", 0);
    metrics_rs_family(&e->rs_snap, out, "shoal_gateway_rs_rtt_seconds",
                      "Replica selection: RTT estimate of a tenant's chunk GETs at a node", 1);
    metrics_rs_family(&e->rs_snap, out, "shoal_gateway_rs_base_rtt_seconds",
                      "Replica selection: base (least recent) RTT of a tenant at a node", 2);
    metrics_rs_family(&e->rs_snap, out, "shoal_gateway_rs_alpha",
                      "Replica selection: chunk GETs a tenant's window keeps queued at a node", 3);
    pthread_mutex_unlock(&e->rs_lock);
}

static void
engine_start(void *arg)
{
    struct gw_engine *e = arg;
    e->poll = gw_timer_create(e->net, gw_pbuf_poll, e);
    e->kick = gw_timer_create(e->net, gw_read_kick, e);
    if (!e->poll || !e->kick) {
        /* Persisted notices still drain the buffer; reads are never held. */
        CM_ERROR("gateway engine timers err=ENOMEM poll=%d kick=%d", e->poll != NULL,
                 e->kick != NULL);
    }
    if (e->poll) {
        gw_timer_arm(e->poll, e->cfg.persist_poll_ms > 0 ? e->cfg.persist_poll_ms : 200);
    }
}

/* On the loop thread, last: fail what is in flight, drop the rest. */
static void
engine_fin(void *arg)
{
    struct gw_engine *e = arg;
    e->stopping = 1;
    gw_read_stop(e);
    gw_pbuf_stop(e);
    gw_mlog_stop(e);
    gw_timer_destroy(e->poll);
    gw_timer_destroy(e->kick);
    e->poll = e->kick = NULL;
    cm_hmap_free(&e->objmap);
}

/* The policies; 0 or the reason the engine cannot start. */
static int
engine_policies(struct gw_engine *e)
{
    struct pol_rs_cfg rcfg = {
        .slow_ns = (uint64_t)(e->cfg.slow_ms > 0 ? e->cfg.slow_ms : 0) * 1000000u,
    };
    e->rs_ops = e->cfg.rs ? e->cfg.rs : pol_rs_find(POL_RS_DEFAULT);
    e->holders_ops = pol_holders_find(POL_HOLDERS_DEFAULT);
    if (!e->rs_ops || !e->holders_ops) {
        return CM_E_CONFIG;
    }
    if (e->cfg.hedge_pct > 0) {
        pol_rs_budget_init(&e->hedge, e->cfg.hedge_pct / 100.0);
    }
    int rc = e->rs_ops->create(&rcfg, &e->rs);
    return rc < 0 ? rc : e->holders_ops->create(&e->holders);
}

static void
engine_free(struct gw_engine *e)
{
    for (int k = 0; k <= CM_EC_MAX_K; k++) {
        for (int m = 0; m <= CM_EC_MAX_M; m++) {
            cm_ec_destroy(e->ecs[k][m]);
        }
    }
    if (e->rs) {
        e->rs_ops->destroy(e->rs);
    }
    if (e->holders) {
        e->holders_ops->destroy(e->holders);
    }
    pthread_mutex_destroy(&e->ec_lock);
    pthread_mutex_destroy(&e->rs_lock);
    free(e->rs_next.p);
    free(e->rs_snap.p);
    free(e->weights);
    free(e);
}

int
gw_engine_create(const struct gw_engine_cfg *cfg, gw_layout_cb on_layout, void *arg,
                 struct gw_engine **out)
{
    int rc = 0;
    struct gw_engine *e = calloc(1, sizeof(*e));
    if (!e) {
        rc = -ENOMEM;
        goto out;
    }
    e->cfg = *cfg;
    if (e->cfg.io_timeout_ms <= 0) {
        e->cfg.io_timeout_ms = 5000;
    }
    e->on_layout = on_layout;
    e->arg = arg;
    pthread_mutex_init(&e->ec_lock, NULL);
    pthread_mutex_init(&e->rs_lock, NULL);
    rc = engine_policies(e);
    if (rc < 0) {
        engine_free(e);
        goto out;
    }
    cm_hmap_init(&e->objmap, 256);
    rc = gw_net_create(e->cfg.io_timeout_ms, &e->net);
    if (rc < 0) {
        cm_hmap_free(&e->objmap);
        engine_free(e);
        goto out;
    }
    gw_net_set_note_handler(e->net, gw_pbuf_on_note, e);
    rc = gw_net_post(e->net, engine_start, e);
    if (rc < 0) {
        gw_engine_destroy(e);
        goto out;
    }
    *out = e;
out:
    return rc;
}

size_t
gw_engine_flush_deletes(struct gw_engine *e, int timeout_ms)
{
    uint64_t end = cm_now_ns() + (uint64_t)timeout_ms * 1000000u;
    if (gw_net_post(e->net, gw_pbuf_dels_now, e) < 0) {
        return (size_t)atomic_load(&e->dels_out);
    }
    while ((!atomic_load(&e->dels_fired) || atomic_load(&e->dels_out) > 0) && cm_now_ns() < end) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return (size_t)atomic_load(&e->dels_out);
}

void
gw_engine_destroy(struct gw_engine *e)
{
    if (!e) {
        return;
    }
    gw_net_destroy(e->net, engine_fin, e);
    engine_free(e);
}
