/*
 * gw_pbuf.c - the engine's persistent buffer: a new version from the
 * choice of its holders until every chunk is persisted in COS.
 *
 *   put_start: choose holders ─▶ PUT every chunk ─▶ all acked: cb(0)
 *              │ a position fails: move it (holder policy), resend
 *   buffered:  notices / STATs mark chunks persisted; every poll, a
 *              position whose holder stays unreachable moves and is sent
 *              again (from the bytes, or rebuilt by decoding when tracked
 *              after a restart); each PUT answer's tag is recorded
 *              ─▶ every position persisted and the front's commit notice
 *              in: its META record (gw_mlog.c) ─▶ logged: freed
 *   delete:    after its delay, DEL every chunk (the newest holders;
 *              gw_pbuf_del.c)
 *   move:      a stored version's positions to new holders (migration): a
 *              tracked object whose moving chunks are read from the old
 *              layout (src), PUT, then followed until persisted; the
 *              caller is told instead of on_layout
 *   drop:      DEL the chunks a moved version left behind, keeping COS
 *              (gw_pbuf_del.c)
 *
 * The holder policy (pol_holders.h) decides where positions go; this file
 * sends, counts and reports.
 *
 * Threads: the gw_net loop thread only (stats are atomics). Invariants:
 * chunk j of every stripe lives on holders[j]; a position's outstanding
 * ops all carry its current gen (changing holders cancels them first); an
 * object's bytes stay alive while any payload reference is in a socket
 * buffer (refs); the put callback runs exactly once.
 * Wire: obj_version is always 0 (object ids are unique per version).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_net.h"
#include "pol_holders.h"

/* Nodes send PERSISTED notices; STATs are the fallback for lost ones: an
 * object STATs its pending chunks only after this many poll periods without
 * progress, doubling up to GW_STAT_GAP_MAX polls. */
#define GW_STAT_GAP_POLLS 4
#define GW_STAT_GAP_MAX 32
#define GW_MAX_NODES 256

enum chunk_kind { CHUNK_PUT, CHUNK_STAT, CHUNK_DEL };

/* One chunk request of an object. */
struct gw_op {
    struct gw_op *prev, *next;
    struct gw_obj *o;
    struct gw_net_req *req;
    uint32_t pos, stripe, gen;
    enum chunk_kind kind;
};

static uint64_t
obj_hash(uint32_t tenant, uint64_t object)
{
    return cm_hmix64(object ^ ((uint64_t)tenant << 32));
}

struct gw_obj *
gw_obj_find(struct gw_engine *e, uint32_t tenant, uint64_t object)
{
    uint64_t h = obj_hash(tenant, object);
    for (struct cm_hnode *n = cm_hmap_first(&e->objmap, h); n; n = cm_hmap_next(n, h)) {
        struct gw_obj *o = CM_CONTAINER_OF(n, struct gw_obj, hn);
        if (o->lay.tenant == tenant && o->lay.object == object) {
            return o;
        }
    }
    return NULL;
}

/* Makes o one of the engine's live objects (polled, found by notices). */
static void
obj_link(struct gw_obj *o)
{
    struct gw_engine *e = o->e;
    cm_hmap_add(&e->objmap, &o->hn, obj_hash(o->lay.tenant, o->lay.object));
    o->linked = 1;
    DL_PUSH(e->objs, o);
}

void
gw_obj_unref(struct gw_obj *o)
{
    if (--o->refs > 0) {
        return;
    }
    gw_stripes_fini(&o->st);
    if (o->freed != NULL) {
        o->freed(o->freed_arg);
    }
    gw_layout_fini(&o->lay);
    free(o->persisted);
    free(o->src);
    free(o->key);
    free(o->attrs_mem);
    free(o);
}

static void
obj_release(void *arg)
{
    gw_obj_unref(arg);
}

static void
buf_release(void *arg)
{
    free(arg);
}

static uint64_t
obj_mask(const struct gw_obj *o)
{
    uint64_t mask = 0;
    for (uint32_t j = 0; j < gw_stripe_n(&o->lay); j++) {
        if (o->pos[j].npersisted == o->lay.nstripes) {
            mask |= GW_BIT(j);
        }
    }
    return mask;
}

static uint64_t
poll_ns(const struct gw_engine *e)
{
    return (uint64_t)(e->cfg.persist_poll_ms > 0 ? e->cfg.persist_poll_ms : 200) * 1000000u;
}

/* Progress: STATs wait for notices again. */
static void
stat_defer(struct gw_obj *o)
{
    o->stat_gap = GW_STAT_GAP_POLLS * poll_ns(o->e);
    o->stat_at = cm_now_ns() + o->stat_gap;
}

static void
mark_persisted(struct gw_obj *o, uint32_t j, uint32_t s)
{
    uint32_t idx = gw_stripe_index(&o->lay, s, j);
    if (!o->persisted[idx]) {
        o->persisted[idx] = 1;
        o->pos[j].npersisted++;
        stat_defer(o);
    }
}

static void
pos_cancel(struct gw_obj *o, uint32_t j)
{
    struct gw_op *op = o->ops;
    while (op) {
        struct gw_op *next = op->next;
        if (op->pos == j) {
            gw_net_cancel(o->e->net, op->req);
            DL_UNLINK(o->ops, op);
            free(op);
        }
        op = next;
    }
    struct gw_sfetch *f = o->fetches;
    while (f) {
        struct gw_sfetch *next = f->next;
        if (f->pos == j) {
            DL_UNLINK(o->fetches, f);
            free(f->bufs[f->pos]);
            gw_sfetch_free(f);
        }
        f = next;
    }
    o->pos[j].stat_out = 0;
    o->pos[j].put_out = 0;
    o->pos[j].rebuilding = 0;
}

/* Position j could not send (rc): its ops are cancelled. An unreachable
 * holder is replaced; out of memory fails a put, or, once the put is
 * answered, retries the position at the next poll. */
static void
pos_failed(struct gw_obj *o, uint32_t j, int rc)
{
    pos_cancel(o, j);
    if (rc != -ENOMEM) {
        o->pos[j].need_move = 1;
    } else if (o->state == OBJ_PUTTING) {
        o->nomem = 1;
    } else {
        o->pos[j].stalled = 1;
    }
}

static void op_done(void *arg, int status, const struct cm_wire_hdr *rsp);

/* Sends chunk (s, j) from buf (owned: freed once sent, else the object's
 * bytes). */
static int
op_send(struct gw_obj *o, enum chunk_kind kind, uint32_t j, uint32_t s, const uint8_t *buf,
        uint8_t *owned)
{
    static const uint8_t wire_op[] = {
        [CHUNK_PUT] = CM_OP_PUT, [CHUNK_STAT] = CM_OP_STAT, [CHUNK_DEL] = CM_OP_DEL};
    const struct gw_layout *l = &o->lay;
    struct gw_op *op = calloc(1, sizeof(*op));
    if (!op) {
        return -ENOMEM;
    }
    op->o = o;
    op->pos = j;
    op->stripe = s;
    op->gen = o->pos[j].gen;
    op->kind = kind;
    uint32_t idx = gw_stripe_index(l, s, j);
    struct gw_net_send ns = {
        .hdr = {.op = wire_op[kind],
                .flags = kind == CHUNK_PUT ? CM_WF_NOTIFY : 0, /* tell us once in COS */
                .tenant = l->tenant,
                .object = l->object,
                .index = idx,
                .incarnation = kind == CHUNK_STAT ? gw_layout_tag(l, idx) : 0},
        .done = op_done,
        .arg = op,
    };
    if (kind == CHUNK_PUT) {
        ns.payload = buf;
        ns.len = l->chunk_size;
        ns.hdr.data_crc = o->st.crc && !owned ? o->st.crc[idx] : 0;
        if (owned) {
            ns.release = buf_release;
            ns.release_arg = owned;
        } else {
            ns.release = obj_release;
            ns.release_arg = o;
            o->refs++;
        }
    }
    int rc = gw_net_send(o->e->net, l->holders[j], &ns, &op->req);
    if (rc < 0) {
        if (kind == CHUNK_PUT && !owned) {
            o->refs--;
        }
        free(op);
        return rc;
    }
    DL_PUSH(o->ops, op);
    if (kind == CHUNK_PUT) {
        o->pos[j].put_out++;
    }
    return 0;
}

static void rebuild_pump(struct gw_obj *o, uint32_t j);

/* (Re)sends every chunk of position j to holders[j] under a new gen. */
static void
pos_send(struct gw_obj *o, uint32_t j)
{
    struct gw_position *p = &o->pos[j];
    pos_cancel(o, j);
    p->gen++;
    p->acked = 0;
    p->need_move = 0;
    p->stalled = 0;
    p->npersisted = 0;
    for (uint32_t s = 0; s < o->lay.nstripes; s++) {
        o->persisted[gw_stripe_index(&o->lay, s, j)] = 0;
        if (o->lay.tags) {
            o->lay.tags[gw_stripe_index(&o->lay, s, j)] = 0; /* the new PUTs' answers tell */
        }
    }
    if (!o->st.data) {
        p->next_stripe = 0;
        rebuild_pump(o, j);
        return;
    }
    for (uint32_t s = 0; s < o->lay.nstripes; s++) {
        int rc = op_send(o, CHUNK_PUT, j, s, gw_stripe_chunk(&o->st, &o->lay, s, j), NULL);
        if (rc < 0) {
            pos_failed(o, j, rc);
            return;
        }
    }
}

/*
 * Asks the holder policy for the positions not in fixed (moving: those
 * whose holder failed). Usable nodes in directory order; a new version
 * needs k of them, a stored chunk moves to any other. 0 or CM_E_UNAVAIL.
 */
static int
obj_choose(struct gw_obj *o, uint64_t fixed, uint64_t moving, uint32_t min_nodes)
{
    struct gw_engine *e = o->e;
    uint32_t dir[GW_MAX_NODES], usable[GW_MAX_NODES];
    size_t ndir = gw_net_node_ids(e->net, dir, GW_MAX_NODES), nusable = 0;
    for (size_t i = 0; i < ndir; i++) {
        if (gw_net_node_placeable(e->net, dir[i])) {
            usable[nusable++] = dir[i];
        }
    }
    struct pol_holders_view v = {
        .row = o->place,
        .nrow = o->nplace,
        .usable = usable,
        .nusable = nusable,
        .n = gw_stripe_n(&o->lay),
        .min_nodes = min_nodes,
        .fixed = fixed,
        .moving = moving,
    };
    return e->holders_ops->choose(e->holders, &v, o->lay.holders);
}

static void
obj_unlink(struct gw_obj *o)
{
    struct gw_engine *e = o->e;
    if (o->linked) {
        DL_UNLINK(e->objs, o);
        o->linked = 0;
        cm_hmap_del(&e->objmap, &o->hn);
    }
    while (o->ops) {
        struct gw_op *op = o->ops;
        gw_net_cancel(e->net, op->req);
        DL_UNLINK(o->ops, op);
        free(op);
    }
    while (o->fetches) {
        struct gw_sfetch *f = o->fetches;
        DL_UNLINK(o->fetches, f);
        free(f->bufs[f->pos]);
        gw_sfetch_free(f);
    }
    gw_mlog_cancel(o->mjob);
    o->mjob = NULL;
    if (o->accounted) {
        atomic_fetch_sub(&e->buffered_bytes, o->st.bytes);
        atomic_fetch_sub(&e->buffered_objects, 1);
        o->accounted = 0;
    }
}

/* Ends o: the put callback (if not yet run) gets status. */
void
gw_obj_finish(struct gw_obj *o, int status)
{
    obj_unlink(o);
    if (o->state == OBJ_PUTTING && o->cb) {
        gw_put_cb cb = o->cb;
        o->cb = NULL;
        if (status < 0) {
            CM_WARN("gateway put failed tenant=%u object=%016llx size=%llu err=%s", o->lay.tenant,
                    (unsigned long long)o->lay.object, (unsigned long long)o->lay.size,
                    cm_errname(status));
            if (o->placed && o->lay.nstripes > 0 && !o->e->stopping) {
                gw_pbuf_send_dels(o->e, &o->lay);
            }
        }
        cb(o->cb_arg, status, &o->lay);
    }
    if (o->move_cb) {
        gw_move_cb cb = o->move_cb;
        o->move_cb = NULL;
        cb(o->move_arg, status < 0 ? status : -ECANCELED, &o->lay);
    }
    gw_obj_unref(o);
}

/* Moves the positions that need it. 0, or the status a put fails with. */
static int
obj_move(struct gw_obj *o)
{
    struct gw_engine *e = o->e;
    struct gw_layout *l = &o->lay;
    uint32_t dir[GW_MAX_NODES];
    size_t ndir = gw_net_node_ids(e->net, dir, GW_MAX_NODES);
    int putting = o->state == OBJ_PUTTING;
    for (int round = 0; round < 4; round++) {
        int again = 0;
        for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
            struct gw_position *p = &o->pos[j];
            if (!p->need_move) {
                continue;
            }
            /* A put keeps the rule its first choice applied: at least k
             * usable nodes, whether a dead node was noticed before the put
             * began or only by its failed chunk. */
            uint32_t from = l->holders[j];
            if (putting && ++p->moves > ndir + 1) {
                return CM_E_UNAVAIL;
            }
            if (obj_choose(o, gw_stripe_all(l) & ~GW_BIT(j), GW_BIT(j), putting ? l->k : 1) < 0) {
                if (putting) {
                    return CM_E_UNAVAIL;
                }
                continue; /* retried at the next poll */
            }
            CM_INFO("gateway chunk move tenant=%u object=%016llx position=%u from=%u to=%u "
                    "state=%d",
                    l->tenant, (unsigned long long)l->object, j, from, l->holders[j],
                    (int)o->state);
            if (!putting) {
                atomic_fetch_add(&e->redriven_chunks, l->nstripes);
                o->dirty = 1;
            }
            pos_send(o, j);
            if (o->nomem) {
                return -ENOMEM;
            }
            again |= p->need_move;
        }
        if (!again) {
            break;
        }
    }
    return 0;
}

/* A PUT or rebuild of o is on its way: its answers bring tags. */
static int
obj_sending(const struct gw_obj *o)
{
    for (uint32_t j = 0; j < gw_stripe_n(&o->lay); j++) {
        if (o->pos[j].put_out > 0 || o->pos[j].rebuilding > 0) {
            return 1;
        }
    }
    return 0;
}

/* Acts on what changed: moves failed positions, completes the put,
 * reports layouts, sends the META record once committed and persisted,
 * frees the object once it is logged. o may be gone on return. */
static void
obj_step(struct gw_obj *o)
{
    struct gw_engine *e = o->e;
    struct gw_layout *l = &o->lay;
    int rc = o->nomem ? -ENOMEM : obj_move(o);
    if (rc < 0) {
        gw_obj_finish(o, rc); /* only a put fails */
        return;
    }
    if (o->state == OBJ_PUTTING) {
        for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
            if (o->pos[j].acked < l->nstripes) {
                return;
            }
        }
        o->state = OBJ_BUFFERED;
        stat_defer(o);
        l->persisted = obj_mask(o);
        gw_put_cb cb = o->cb;
        o->cb = NULL;
        CM_DEBUG("gateway put acked tenant=%u object=%016llx size=%llu persisted=%llx", l->tenant,
                 (unsigned long long)l->object, (unsigned long long)l->size,
                 (unsigned long long)l->persisted);
        cb(o->cb_arg, 0, l); /* the commit records these holders and tags */
        o->dirty = 0;
    }
    uint64_t mask = obj_mask(o);
    l->persisted = mask;
    /* Report only what a restarted gateway needs (new holders, and the
     * tags their PUTs answered): each report is a metadata write, and
     * partial progress is learnt again by STAT after a restart. */
    if (o->src) {
        /* A migration's move commits only when whole: its caller is told,
         * and it ends. The migration sends its META record again once the
         * move is committed (gw_engine_relog). */
        if (mask == gw_stripe_all(l)) {
            if (o->move_cb) {
                gw_move_cb cb = o->move_cb;
                o->move_cb = NULL;
                cb(o->move_arg, 0, l);
            }
            gw_obj_finish(o, 0);
        }
        return;
    }
    if (o->dirty && !obj_sending(o) && e->on_layout) {
        o->dirty = 0;
        e->on_layout(e->arg, l, GW_REPORT_CHANGED);
    }
    if (mask != gw_stripe_all(l) || !o->committed) {
        return; /* not yet persisted, or the front's commit notice is still to come */
    }
    if (!o->meta_done) {
        if (!o->mjob && gw_mlog_version(o) < 0) {
            CM_DEBUG("gateway meta record deferred tenant=%u object=%016llx err=ENOMEM", l->tenant,
                     (unsigned long long)l->object);
        }
        return; /* gw_pbuf_meta_done comes back, or the next poll tries again */
    }
    if (e->on_layout) {
        e->on_layout(e->arg, l, GW_REPORT_DONE);
    }
    gw_obj_finish(o, 0);
}

void
gw_pbuf_meta_done(struct gw_obj *o)
{
    o->mjob = NULL;
    o->meta_done = 1;
    obj_step(o);
}

static void
op_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_op *op = arg;
    struct gw_obj *o = op->o;
    struct gw_position *p = &o->pos[op->pos];
    int st = status ? status : rsp->status;
    uint32_t j = op->pos, s = op->stripe;
    enum chunk_kind kind = op->kind;
    DL_UNLINK(o->ops, op);
    free(op);
    if (kind == CHUNK_PUT) {
        p->put_out--;
        if (st == 0) {
            uint32_t idx = gw_stripe_index(&o->lay, s, j);
            if (o->lay.tags && o->lay.tags[idx] != rsp->incarnation) {
                o->lay.tags[idx] = rsp->incarnation;
                o->dirty |= o->state != OBJ_PUTTING;
            }
            p->acked++;
            if (rsp->flags & CM_WF_PERSISTED) {
                mark_persisted(o, j, s);
            }
        } else if (st == CM_E_BUSY && o->state == OBJ_PUTTING) {
            gw_obj_finish(o, CM_E_BUSY);
            return;
        } else {
            CM_DEBUG("gateway chunk put failed tenant=%u object=%016llx index=%u node=%u "
                     "err=%s",
                     o->lay.tenant, (unsigned long long)o->lay.object,
                     gw_stripe_index(&o->lay, s, j), o->lay.holders[j], cm_errname(st));
            pos_cancel(o, j);
            p->need_move = 1;
        }
    } else if (kind == CHUNK_STAT) {
        p->stat_out--;
        if (st == 0 && (rsp->flags & CM_WF_PERSISTED)) {
            mark_persisted(o, j, s);
        } else if (st == CM_E_NOTFOUND) {
            /* The holder lost it (restarted before persisting). */
            int rc = o->st.data
                         ? op_send(o, CHUNK_PUT, j, s, gw_stripe_chunk(&o->st, &o->lay, s, j), NULL)
                         : CM_E_NOTFOUND;
            if (rc < 0) {
                pos_failed(o, j, rc);
            }
        }
    }
    obj_step(o);
}

static void
rebuild_fetched(void *arg, struct gw_sfetch *f, int status)
{
    struct gw_obj *o = arg;
    uint32_t j = f->pos, s = f->stripe;
    struct gw_position *p = &o->pos[j];
    DL_UNLINK(o->fetches, f);
    p->rebuilding--;
    uint8_t *buf = f->bufs[j];
    if (status == 0) {
        int rc = op_send(o, CHUNK_PUT, j, s, buf, buf);
        if (rc < 0) {
            free(buf);
            pos_failed(o, j, rc);
        }
    } else {
        free(buf);
        p->stalled = 1;
        CM_WARN("gateway rebuild failed tenant=%u object=%016llx index=%u err=%s", o->lay.tenant,
                (unsigned long long)o->lay.object, gw_stripe_index(&o->lay, s, j),
                cm_errname(status));
    }
    gw_sfetch_free(f);
    if (!p->need_move) {
        rebuild_pump(o, j);
    }
    obj_step(o);
}

/* Tracked objects have no bytes: rebuild position j stripe by stripe from
 * k other chunks, a few stripes at a time. */
static void
rebuild_pump(struct gw_obj *o, uint32_t j)
{
    struct gw_position *p = &o->pos[j];
    /* A move reads the chunk where it was (src), decoding only if that
     * fails; a rebuild decodes from the other positions. */
    const struct gw_layout *from = o->src ? o->src : &o->lay;
    uint64_t excl = o->src ? 0 : GW_BIT(j);
    for (uint32_t x = 0; x < gw_stripe_n(&o->lay) && !o->src; x++) {
        if (o->pos[x].need_move || (x != j && o->pos[x].rebuilding)) {
            excl |= GW_BIT(x);
        }
    }
    while (!p->stalled && p->rebuilding < GW_REBUILD_PARALLEL && p->next_stripe < o->lay.nstripes) {
        uint32_t s = p->next_stripe;
        uint8_t *bufs[GW_MAX_HOLDERS] = {0};
        struct gw_sfetch *f;
        bufs[j] = malloc(o->lay.chunk_size);
        if (!bufs[j]) {
            p->stalled = 1;
            break;
        }
        if (gw_sfetch_start(o->e, from, s, GW_BIT(j), excl, bufs, rebuild_fetched, o, &f) < 0) {
            free(bufs[j]);
            p->stalled = 1;
            break;
        }
        f->pos = j;
        f->gen = p->gen;
        DL_PUSH(o->fetches, f);
        p->rebuilding++;
        p->next_stripe++;
    }
}

/* STATs the unpersisted chunks of position j; 1 if any was sent. */
static int
pos_stat(struct gw_obj *o, uint32_t j)
{
    int stated = 0;
    for (uint32_t s = 0; s < o->lay.nstripes; s++) {
        if (o->persisted[gw_stripe_index(&o->lay, s, j)]) {
            continue;
        }
        if (op_send(o, CHUNK_STAT, j, s, NULL, NULL) < 0) {
            break; /* again at the next poll */
        }
        o->pos[j].stat_out++;
        stated = 1;
        atomic_fetch_add(&o->e->persist_stats, 1);
    }
    return stated;
}

void
gw_pbuf_poll(void *arg)
{
    struct gw_engine *e = arg;
    uint64_t now = cm_now_ns();
    uint64_t redrive_ns =
        (uint64_t)(e->cfg.redrive_after_ms > 0 ? e->cfg.redrive_after_ms : 0) * 1000000u;
    struct gw_obj *o = e->objs;
    while (o) {
        struct gw_obj *next = o->next;
        if (o->state == OBJ_PUTTING) {
            o = next;
            continue;
        }
        const struct gw_layout *l = &o->lay;
        int stat_due = now >= o->stat_at, stated = 0;
        for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
            struct gw_position *p = &o->pos[j];
            if (p->npersisted == l->nstripes || p->need_move) {
                continue;
            }
            uint64_t since = gw_net_node_down_since(e->net, l->holders[j]);
            if (since && now >= since + redrive_ns) {
                pos_cancel(o, j);
                p->need_move = 1;
                continue;
            }
            if (p->stalled) {
                pos_send(o, j);
                continue;
            }
            if (!stat_due || p->stat_out > 0 || p->put_out > 0 || p->rebuilding > 0 ||
                p->next_stripe < l->nstripes || !gw_net_node_usable(e->net, l->holders[j])) {
                continue; /* notices may still come, busy, or not reachable just now */
            }
            stated |= pos_stat(o, j);
        }
        if (stated) {
            uint64_t max = GW_STAT_GAP_MAX * poll_ns(e);
            uint64_t gap = o->stat_gap ? 2 * o->stat_gap : GW_STAT_GAP_POLLS * poll_ns(e);
            o->stat_gap = gap < max ? gap : max;
            o->stat_at = now + o->stat_gap;
        }
        obj_step(o);
        o = next;
    }
    gw_mlog_poll(e);
    gw_pbuf_redel_poll(e);
    gw_timer_arm(e->poll, e->cfg.persist_poll_ms > 0 ? e->cfg.persist_poll_ms : 200);
}

/* A node's PERSISTED notice for one chunk. */
void
gw_pbuf_on_note(void *arg, uint32_t node, const struct cm_wire_note *note)
{
    struct gw_obj *o = gw_obj_find(arg, note->tenant, note->object);
    if (!o || o->lay.nstripes == 0) {
        return; /* done already, or not ours */
    }
    uint32_t s = note->index / gw_stripe_n(&o->lay), j = note->index % gw_stripe_n(&o->lay);
    if (s >= o->lay.nstripes || o->lay.holders[j] != node || o->pos[j].need_move) {
        return; /* from a former holder */
    }
    atomic_fetch_add(&o->e->persist_notes, 1);
    mark_persisted(o, j, s);
    obj_step(o);
}

void
gw_pbuf_put_start(void *arg)
{
    struct gw_obj *o = arg;
    struct gw_engine *e = o->e;
    int rc = o->init_status;
    if (rc == 0 && e->stopping) {
        rc = CM_E_UNAVAIL;
    }
    if (rc == 0) {
        rc = obj_choose(o, 0, 0, o->lay.k);
        if (rc < 0 && o->lay.nstripes == 0) {
            rc = 0; /* nothing to store: any holders do */
        }
    }
    if (rc < 0) {
        gw_obj_finish(o, rc);
        return;
    }
    o->placed = 1;
    obj_link(o);
    if (o->st.bytes) {
        o->accounted = 1;
        atomic_fetch_add(&e->buffered_bytes, o->st.bytes);
        atomic_fetch_add(&e->buffered_objects, 1);
    }
    for (uint32_t j = 0; j < gw_stripe_n(&o->lay) && !o->nomem; j++) {
        o->pos[j].next_stripe = o->lay.nstripes;
        pos_send(o, j);
    }
    obj_step(o);
}

void
gw_pbuf_committed(void *arg)
{
    struct committed_cmd *c = arg;
    struct gw_obj *o = gw_obj_find(c->e, c->tenant, c->object);
    if (o && !o->committed && o->state != OBJ_PUTTING) {
        o->key = malloc(c->klen);
        if (o->key) {
            memcpy(o->key, c->key, c->klen);
            o->klen = c->klen;
            o->lay.version = c->version;
            o->attrs = c->attrs;
            o->attrs_mem = c->attrs_mem;
            c->attrs_mem = NULL;
            o->committed = 1;
            obj_step(o);
        } else {
            /* pending keeps it: the next start sends its record */
            CM_ERROR("gateway commit notice dropped tenant=%u object=%016llx err=ENOMEM", c->tenant,
                     (unsigned long long)c->object);
        }
    }
    free(c->attrs_mem);
    free(c);
}

void
gw_pbuf_track_start(void *arg)
{
    struct gw_obj *o = arg;
    const struct gw_layout *l = &o->lay;
    if (gw_obj_find(o->e, l->tenant, l->object)) {
        gw_obj_unref(o);
        return;
    }
    for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
        o->pos[j].next_stripe = l->nstripes;
        if (l->persisted & GW_BIT(j)) {
            for (uint32_t s = 0; s < l->nstripes; s++) {
                mark_persisted(o, j, s);
            }
        }
    }
    o->placed = 1;
    obj_link(o);
    obj_step(o);
}

void
gw_pbuf_move_start(void *arg)
{
    struct gw_obj *o = arg;
    struct gw_engine *e = o->e;
    struct gw_layout *l = &o->lay;
    int rc = e->stopping ? -ECANCELED : gw_obj_find(e, l->tenant, l->object) ? -EBUSY : 0;
    for (uint32_t j = 0; j < gw_stripe_n(l) && rc == 0; j++) {
        if ((o->move_mask & GW_BIT(j)) && !gw_net_node_usable(e->net, l->holders[j])) {
            rc = CM_E_UNAVAIL;
        }
    }
    if (rc < 0) {
        gw_obj_finish(o, rc);
        return;
    }
    for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
        o->pos[j].next_stripe = l->nstripes;
        if (!(o->move_mask & GW_BIT(j))) {
            for (uint32_t s = 0; s < l->nstripes; s++) {
                mark_persisted(o, j, s);
            }
        }
    }
    o->placed = 1;
    obj_link(o);
    for (uint32_t j = 0; j < gw_stripe_n(l); j++) {
        if (o->move_mask & GW_BIT(j)) {
            pos_send(o, j);
        }
    }
    obj_step(o);
}

void
gw_pbuf_stop(struct gw_engine *e)
{
    while (e->objs) {
        gw_obj_finish(e->objs, CM_E_UNAVAIL);
    }
    while (e->dels) {
        struct gw_del *d = e->dels;
        DL_UNLINK(e->dels, d);
        gw_timer_destroy(d->t);
        free(d);
    }
    gw_pbuf_redel_stop(e);
}
