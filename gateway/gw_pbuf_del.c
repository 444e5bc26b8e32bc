/*
 * gw_pbuf_del.c - the persistent buffer's deletes (see gw_pbuf.c): a
 * retired version's chunks DEL'd after its delay (gw_engine_delete),
 * from its newest holders when it is still buffered, and the copies a
 * moved version left behind, DEL'd keeping COS (gw_engine_drop). The
 * answers are not waited for: a chunk a DEL misses is an orphan.
 *
 * Threads: the gw_net loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_net.h"

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
            struct gw_net_send ns = {
                .hdr = {.op = CM_OP_DEL,
                        .flags = flags,
                        .tenant = l->tenant,
                        .object = l->object,
                        .index = gw_stripe_index(l, s, j)},
                .done = noop_done,
            };
            if (gw_net_send(e->net, l->holders[j], &ns, NULL) < 0) {
                break;
            }
        }
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
