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

/* One chunk's DEL: in flight (e->redels_out), or kept in its holder's
 * queue. */
struct gw_redel {
    struct gw_redel *prev, *next;
    struct gw_engine *e;
    struct gw_net_req *req; /* in flight */
    uint32_t node;
    struct cm_wire_hdr hdr;
};

/* The DELs kept for one holder, oldest last. */
struct gw_redel_q {
    uint32_t node;
    size_t n;
    struct gw_redel *head;
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
redel_keep(struct gw_redel *d)
{
    struct gw_engine *e = d->e;
    struct gw_redel_q *q = NULL;
    if (e->stopping || e->nredels >= GW_REDEL_MAX || (q = redel_q(e, d->node)) == NULL) {
        atomic_fetch_add(&e->dels_dropped, 1);
        free(d);
        return;
    }
    DL_PUSH(q->head, d);
    q->n++;
    atomic_store(&e->dels_waiting, ++e->nredels);
}

static void
redel_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_redel *d = arg;
    DL_UNLINK(d->e->redels_out, d);
    if (status == 0 && rsp->status != CM_E_BUSY) {
        free(d); /* deleted, or not there (CM_E_NOTFOUND): done either way */
        return;
    }
    redel_keep(d);
}

static void
redel_send(struct gw_redel *d)
{
    struct gw_net_send ns = {.hdr = d->hdr, .done = redel_done, .arg = d};
    if (gw_net_send(d->e->net, d->node, &ns, &d->req) < 0) {
        redel_keep(d);
        return;
    }
    DL_PUSH(d->e->redels_out, d);
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
            struct cm_wire_hdr h = {.op = CM_OP_DEL,
                                    .flags = flags,
                                    .tenant = l->tenant,
                                    .object = l->object,
                                    .index = gw_stripe_index(l, s, j)};
            struct gw_redel *d = flags & CM_WF_KEEP_COS ? NULL : malloc(sizeof(*d));
            if (d) {
                *d = (struct gw_redel){.e = e, .node = l->holders[j], .hdr = h};
                redel_send(d);
                continue;
            }
            struct gw_net_send ns = {.hdr = h, .done = noop_done};
            if (gw_net_send(e->net, l->holders[j], &ns, NULL) < 0) {
                break; /* a drop, or out of memory: fire and forget */
            }
        }
    }
}

/* Takes up to max DELs off q (all: SIZE_MAX), as a list. */
static struct gw_redel *
redel_take(struct gw_engine *e, struct gw_redel_q *q, size_t max)
{
    struct gw_redel *list = NULL;
    for (size_t i = 0; i < max && q->head; i++) {
        struct gw_redel *d = q->head;
        DL_UNLINK(q->head, d);
        q->n--;
        e->nredels--;
        d->next = list;
        list = d;
    }
    atomic_store(&e->dels_waiting, e->nredels);
    return list;
}

void
gw_pbuf_redel_poll(struct gw_engine *e)
{
    for (size_t i = 0; i < e->nredel_qs; i++) {
        struct gw_redel_q *q = &e->redel_qs[i];
        int known = gw_net_node_known(e->net, q->node);
        if (q->n == 0 || (known && !gw_net_node_usable(e->net, q->node))) {
            continue;
        }
        /* Known and usable: some go again. Gone: all are dropped. */
        struct gw_redel *d = redel_take(e, q, known ? GW_REDEL_BURST : SIZE_MAX);
        while (d) {
            struct gw_redel *next = d->next;
            if (known) {
                atomic_fetch_add(&e->dels_resent, 1);
                redel_send(d); /* may land in q again */
            } else {
                atomic_fetch_add(&e->dels_dropped, 1);
                free(d);
            }
            d = next;
        }
    }
}

void
gw_pbuf_redel_stop(struct gw_engine *e)
{
    size_t n = e->nredels;
    while (e->redels_out) { /* their answers will not come */
        struct gw_redel *d = e->redels_out;
        DL_UNLINK(e->redels_out, d);
        gw_net_cancel(e->net, d->req);
        free(d);
        n++;
    }
    for (size_t i = 0; i < e->nredel_qs; i++) {
        struct gw_redel *d = redel_take(e, &e->redel_qs[i], SIZE_MAX);
        while (d) {
            struct gw_redel *next = d->next;
            free(d);
            d = next;
        }
    }
    free(e->redel_qs);
    e->redel_qs = NULL;
    e->nredel_qs = 0;
    if (n > 0) {
        atomic_fetch_add(&e->dels_dropped, n);
        CM_WARN("gateway stops with chunk deletes its nodes have not taken count=%zu", n);
    }
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
