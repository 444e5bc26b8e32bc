/*
 * gw_pbuf_del.c - the persistent buffer's deletes (see gw_pbuf.c): a
 * retired version's chunks DEL'd after its delay (gw_engine_delete),
 * from its newest holders when it is still buffered, the chunks of a PUT
 * that failed, and the copies a moved version left behind, DEL'd keeping
 * COS (gw_engine_drop).
 *
 * A DEL that removes a chunk from COS and that its holder did not take
 * (the holder unusable, its connection lost before the answer, or BUSY)
 * is kept, up to GW_REDEL_MAX, in its holder's queue and sent again from
 * the persist poll once the holder is usable, GW_REDEL_BURST a poll and
 * holder: a chunk it misses would stay in COS for good, and a holder
 * restarted from COS would load it again. Object ids are never reused,
 * so a late DEL cannot hit a newer version. A drop is not kept: what it
 * misses is a copy in a node's memory, and COS keeps the chunk either
 * way. DELs kept for a node that leaves the directory, and those still
 * kept or in flight when the engine stops, are counted and lost
 * (docs/architecture.md, orphans).
 *
 * Threads: the gw_net loop thread only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_log.h"
#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_net.h"

/* A kept DEL: 16 bytes, so that a long outage costs little memory. */
struct gw_redel_rec {
    uint64_t object;
    uint32_t tenant, index;
};

/* The DELs kept for one holder (a stack). */
struct gw_redel_q {
    uint32_t node;
    struct gw_redel_rec *v;
    size_t n, cap;
};

/* One DEL in flight (e->redels_out) that is kept if its holder does not
 * take it. */
struct gw_redel {
    struct gw_redel *prev, *next;
    struct gw_engine *e;
    struct gw_net_req *req;
    uint32_t node;
    struct gw_redel_rec rec;
};

static struct gw_redel_q *
redel_q(struct gw_engine *e, uint32_t node)
{
    for (size_t i = 0; i < e->nredel_qs; i++) {
        if (e->redel_qs[i].node == node) {
            return &e->redel_qs[i];
        }
    }
    struct gw_redel_q *qs = realloc(e->redel_qs, (e->nredel_qs + 1) * sizeof(*qs));
    if (qs == NULL) {
        return NULL;
    }
    e->redel_qs = qs;
    qs[e->nredel_qs] = (struct gw_redel_q){.node = node};
    return &qs[e->nredel_qs++];
}

static void
redel_keep(struct gw_engine *e, uint32_t node, const struct gw_redel_rec *rec)
{
    struct gw_redel_q *q =
        e->stopping || atomic_load(&e->dels_waiting) >= GW_REDEL_MAX ? NULL : redel_q(e, node);
    if (q != NULL && q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        struct gw_redel_rec *v = realloc(q->v, cap * sizeof(*v));
        if (v != NULL) {
            q->v = v;
            q->cap = cap;
        } else {
            q = NULL;
        }
    }
    if (q == NULL) {
        atomic_fetch_add(&e->dels_dropped, 1);
        return;
    }
    q->v[q->n++] = *rec;
    atomic_fetch_add(&e->dels_waiting, 1);
}

static void
redel_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_redel *d = arg;
    DL_UNLINK(d->e->redels_out, d);
    atomic_fetch_sub(&d->e->dels_out, 1);
    if (status != 0 || rsp->status == CM_E_BUSY) {
        redel_keep(d->e, d->node, &d->rec);
    } /* else deleted, or not there (CM_E_NOTFOUND): done either way */
    free(d);
}

/* 0, or -1 when it went back to its holder's queue (or was dropped). */
static int
redel_send(struct gw_engine *e, uint32_t node, const struct gw_redel_rec *rec)
{
    struct gw_redel *d = malloc(sizeof(*d));
    struct gw_net_send ns = {
        .hdr = {.op = CM_OP_DEL, .tenant = rec->tenant, .object = rec->object, .index = rec->index},
        .done = redel_done,
        .arg = d};
    if (d == NULL || gw_net_send(e->net, node, &ns, &d->req) < 0) {
        free(d);
        redel_keep(e, node, rec);
        return -1;
    }
    d->e = e;
    d->node = node;
    d->rec = *rec;
    DL_PUSH(e->redels_out, d);
    atomic_fetch_add(&e->dels_out, 1);
    return 0;
}

static void
noop_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    (void)arg;
    (void)status;
    (void)rsp;
}

/* DELs the chunks of the positions in mask (flags: CM_WF_KEEP_COS or 0). */
static void
send_dels_mask(struct gw_engine *e, const struct gw_layout *l, uint64_t mask, uint16_t flags)
{
    for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
        if (!(mask & GW_BIT(j))) {
            continue;
        }
        for (uint32_t s = 0; s < l->nstripes; s++) {
            uint32_t index = gw_stripe_index(l, s, j);
            if (!(flags & CM_WF_KEEP_COS)) {
                struct gw_redel_rec rec = {
                    .object = l->object, .tenant = l->tenant, .index = index};
                (void)redel_send(e, l->holders[j], &rec);
                continue;
            }
            struct gw_net_send ns = {
                .hdr = {.op = CM_OP_DEL,
                        .flags = flags,
                        .tenant = l->tenant,
                        .object = l->object,
                        .index = index},
                .done = noop_done,
            };
            if (gw_net_send(e->net, l->holders[j], &ns, NULL) < 0) {
                break; /* a drop: fire and forget */
            }
        }
    }
}

void
gw_pbuf_redel_poll(struct gw_engine *e)
{
    for (size_t i = 0; i < e->nredel_qs; i++) {
        uint32_t node = e->redel_qs[i].node;
        if (e->redel_qs[i].n == 0) {
            continue;
        }
        if (!gw_net_node_known(e->net, node)) { /* it left the cluster */
            atomic_fetch_add(&e->dels_dropped, e->redel_qs[i].n);
            atomic_fetch_sub(&e->dels_waiting, e->redel_qs[i].n);
            e->redel_qs[i].n = 0;
            continue;
        }
        /* A send that fails puts its DEL back (the queue may grow, so
         * it is read afresh each time) and ends this holder's turn. */
        for (size_t k = 0; k < GW_REDEL_BURST && e->redel_qs[i].n > 0; k++) {
            if (!gw_net_node_usable(e->net, node)) {
                break;
            }
            struct gw_redel_rec rec = e->redel_qs[i].v[--e->redel_qs[i].n];
            atomic_fetch_sub(&e->dels_waiting, 1);
            if (redel_send(e, node, &rec) < 0) {
                break;
            }
            atomic_fetch_add(&e->dels_resent, 1);
        }
    }
}

void
gw_pbuf_redel_stop(struct gw_engine *e)
{
    size_t n = (size_t)atomic_load(&e->dels_waiting);
    while (e->redels_out) { /* their answers will not come */
        struct gw_redel *d = e->redels_out;
        DL_UNLINK(e->redels_out, d);
        atomic_fetch_sub(&e->dels_out, 1);
        gw_net_cancel(e->net, d->req);
        free(d);
        n++;
    }
    for (size_t i = 0; i < e->nredel_qs; i++) {
        free(e->redel_qs[i].v);
    }
    free(e->redel_qs);
    e->redel_qs = NULL;
    e->nredel_qs = 0;
    atomic_store(&e->dels_waiting, 0);
    if (n > 0) {
        atomic_fetch_add(&e->dels_dropped, n);
        CM_WARN("gateway stops with chunk deletes its nodes have not taken count=%zu", n);
    }
}

void
gw_pbuf_del_chunk(struct gw_engine *e, uint32_t node, uint32_t tenant, uint64_t object,
                  uint32_t index)
{
    struct gw_redel_rec rec = {.object = object, .tenant = tenant, .index = index};

    (void)redel_send(e, node, &rec);
}

void
gw_pbuf_send_dels(struct gw_engine *e, const struct gw_layout *l)
{
    send_dels_mask(e, l, gw_stripe_all(l), 0);
}

static void
del_fire(void *arg)
{
    struct gw_del *d = arg;
    struct gw_engine *e = d->e;
    struct gw_obj *o = gw_obj_find(e, d->lay.tenant, d->lay.object);
    if (o && o->state != OBJ_PUTTING) {
        if (o->src) {
            gw_pbuf_send_dels(e, o->src); /* a move in flight: where the chunks still are */
        }
        /* Still buffered: its holders are the newest word. */
        memcpy(d->lay.holders, o->lay.holders, sizeof(d->lay.holders));
        gw_obj_finish(o, 0);
    }
    gw_pbuf_send_dels(e, &d->lay);
    DL_UNLINK(e->dels, d);
    gw_timer_destroy(d->t);
    free(d);
}

void
gw_pbuf_dels_now(void *arg)
{
    struct gw_engine *e = arg;
    while (e->dels) {
        del_fire(e->dels); /* unlinks and frees it */
    }
    atomic_store(&e->dels_fired, 1);
}

void
gw_pbuf_delete_start(void *arg)
{
    struct gw_del *d = arg;
    struct gw_engine *e = d->e;
    DL_PUSH(e->dels, d);
    d->t = gw_timer_create(e->net, del_fire, d);
    if (!d->t) {
        del_fire(d); /* no timer: delete now rather than never */
        return;
    }
    gw_timer_arm(d->t, d->delay_ms);
}

void
gw_pbuf_drop_start(void *arg)
{
    struct gw_del *d = arg;
    if (!d->e->stopping) {
        send_dels_mask(d->e, &d->lay, d->mask, CM_WF_KEEP_COS);
    }
    free(d);
}
