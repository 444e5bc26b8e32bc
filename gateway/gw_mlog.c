/*
 * gw_mlog.c - the engine's META records: what a gateway that lost its
 * metadata rebuilds it from (the record format is gw_meta.h's gw_mrec;
 * the reader is shoal-gateway --rebuild-meta, gw_rebuild.c).
 *
 *   version:   committed and every chunk persisted (gw_pbuf.c obj_step)
 *              ─▶ record (key, version, layout record) ─▶ m + 1 nodes
 *              ─▶ every one logged it ─▶ gw_pbuf_meta_done: it leaves the buffer
 *   tombstone: a DELETE committed (gw_engine_tombstone) ─▶ m + 1 nodes
 *              ─▶ logged ─▶ GW_REPORT_TOMB: it leaves pending
 *   record-only version (a composite, a bucket, an upload: no chunks, never
 *              in the buffer): committed (gw_engine_committed) ─▶ m + 1
 *              nodes ─▶ logged ─▶ GW_REPORT_DONE: it leaves pending
 *   moved:     a migration's move committed (gw_engine_relog) ─▶ a MOVED
 *              record with the new holders ─▶ m + 1 nodes, the new holders
 *              first ─▶ logged ─▶ its caller is told (and drops the old copies)
 *
 * Nodes: the version's holders in position order (distinct), then the
 * other usable nodes in directory order; m + 1 of them, so that losing m
 * nodes loses no record (all there are, when fewer). The records bound for
 * a node in one loop turn share one CM_OP_META frame per tenant (records
 * back to back), answered once they are all in COS: one message each way
 * for the turn's records, not one per record. A failed one is sent again
 * at the next poll (alone in a frame when the node refused its frame as
 * malformed); a node unreachable for redrive_after_ms, or gone from the
 * directory, is replaced by another. A node answering CM_E_PROTO keeps no
 * insertion log (it predates it): the record counts as logged there,
 * counted apart (meta_unlogged), so that a gateway among such nodes still
 * drains its buffer.
 *
 * Threads: the gw_net loop thread only (stats are atomics). Invariants: a
 * job is linked in the engine's list (and counted in meta_waiting) from its
 * start to its end; each node it chose is in t[] once; a target is in at
 * most one frame (f, slot), and a frame's live count is its riders still
 * there; an open frame is in the engine's list until sent; every frame
 * owns its copy of the records (a cancelled send may still be in a socket
 * buffer, and a rider whose job ended leaves its bytes in the frame).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_meta.h"
#include "gw_net.h"

#define GW_MLOG_NODES_MAX 256
#define GW_MLOG_FRAME_BYTES (256u << 10) /* a frame this full goes at once */

enum target_state { T_TODO, T_OUT, T_LOGGED };

struct gw_mframe;

struct gw_mtarget {
    struct gw_mjob *j;
    uint32_t node;
    enum target_state state;
    int alone;           /* its frame was refused: the next goes alone */
    struct gw_mframe *f; /* T_OUT: the frame it rides in */
    size_t slot;         /* its place in f->t */
};

/* A CM_OP_META frame: a tenant's records sent to a node in a loop turn
 * (one tenant's, so that the node counts its requests per tenant). */
struct gw_mframe {
    struct gw_mframe *next; /* the engine's open frames */
    struct gw_engine *e;
    uint32_t node, tenant;
    int open, answering;
    uint8_t *buf; /* open: the records so far (owned) */
    size_t len, cap;
    struct gw_mtarget **t; /* riders, in record order; NULL once gone */
    size_t nt, tcap, live;
    struct gw_net_req *req; /* sent */
};

struct gw_mjob {
    struct gw_mjob *prev, *next;
    struct gw_engine *e;
    struct gw_obj *o;     /* a version's record: its object; NULL: a tombstone or a record-only */
    int record_only;      /* o == NULL: a record-only version's record, not a tombstone */
    struct gw_layout lay; /* tenant, object, version, m; holders: nodes to try first */
    uint32_t npref;       /* holders to try first (0: unknown) */
    int linked;
    uint8_t *rec; /* the CM_OP_META payload */
    size_t len;
    struct gw_mtarget t[CM_EC_MAX_M + 1];
    size_t nt;
    /* a moved version's record: told once logged (0), or dropped */
    void (*logged)(void *arg, int rc);
    void *logged_arg;
};

static struct gw_mjob *
mjob_new(struct gw_engine *e, const struct gw_layout *l, const struct gw_mrec *m)
{
    struct gw_mjob *j = calloc(1, sizeof(*j));
    if (!j) {
        return NULL;
    }
    j->len = gw_mrec_len(m);
    j->rec = malloc(j->len);
    if (!j->rec) {
        free(j);
        return NULL;
    }
    gw_mrec_encode(m, j->rec);
    j->e = e;
    j->lay = *l;
    j->lay.tags = NULL;
    j->npref = l->k > 0 ? (uint32_t)l->k + l->m : 0;
    return j;
}

static void frame_free(struct gw_mframe *f);

/* t leaves its frame; a sent frame left by every rider is cancelled. */
static void
target_detach(struct gw_mtarget *t)
{
    struct gw_mframe *f = t->f;
    if (!f) {
        return;
    }
    f->t[t->slot] = NULL;
    f->live--;
    t->f = NULL;
    if (f->live == 0 && !f->open && !f->answering) {
        gw_net_cancel(f->e->net, f->req);
        frame_free(f);
    }
}

static void
mjob_free(struct gw_mjob *j)
{
    struct gw_engine *e = j->e;
    if (j->logged) { /* dropped before it was logged */
        j->logged(j->logged_arg, -ECANCELED);
    }
    for (size_t i = 0; i < j->nt; i++) {
        target_detach(&j->t[i]);
    }
    if (j->linked) {
        DL_UNLINK(e->mjobs, j);
        atomic_fetch_sub(&e->meta_waiting, 1);
    }
    free(j->rec);
    free(j);
}

static void
mjob_link(struct gw_mjob *j)
{
    DL_PUSH(j->e->mjobs, j);
    j->linked = 1;
    atomic_fetch_add(&j->e->meta_waiting, 1);
}

static int
chosen(const struct gw_mjob *j, uint32_t node)
{
    for (size_t i = 0; i < j->nt; i++) {
        if (j->t[i].node == node) {
            return 1;
        }
    }
    return 0;
}

/* A usable node the record is not on its way to yet: the holders first.
 * 0 with *node, or -1. */
static int
pick(const struct gw_mjob *j, const uint32_t *dir, size_t ndir, uint32_t *node)
{
    struct gw_net *n = j->e->net;
    for (uint32_t p = 0; p < j->npref; p++) {
        if (!chosen(j, j->lay.holders[p]) && gw_net_node_usable(n, j->lay.holders[p])) {
            *node = j->lay.holders[p];
            return 0;
        }
    }
    for (size_t i = 0; i < ndir; i++) {
        if (!chosen(j, dir[i]) && gw_net_node_placeable(n, dir[i])) {
            *node = dir[i];
            return 0;
        }
    }
    return -1;
}

static void target_answered(struct gw_mtarget *t, int status, const struct cm_wire_hdr *rsp);

static void
frame_free(struct gw_mframe *f)
{
    free(f->buf);
    free(f->t);
    free(f);
}

/* Every rider still there is answered with status / rsp, in record order. */
static void
frame_answered(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_mframe *f = arg;
    f->req = NULL;
    f->answering = 1;
    for (size_t i = 0; i < f->nt; i++) {
        struct gw_mtarget *t = f->t[i];
        if (t) { /* an earlier rider's answer may have ended this one's job */
            f->t[i] = NULL;
            f->live--;
            t->f = NULL;
            target_answered(t, status, rsp);
        }
    }
    frame_free(f);
}

/* Sends an open frame (unlinked already): its riders are T_OUT until the
 * answer, or T_TODO again (the next poll) when it cannot be sent. */
static void
frame_send(struct gw_mframe *f)
{
    f->open = 0;
    if (f->live == 0) {
        frame_free(f);
        return;
    }
    struct gw_net_send ns = {
        .hdr = {.op = CM_OP_META, .tenant = f->tenant},
        .payload = f->buf,
        .len = f->len,
        .release = free,
        .release_arg = f->buf,
        .done = frame_answered,
        .arg = f,
    };
    if (f->nt == 1) { /* a record alone is named in the node's log lines */
        ns.hdr.object = f->t[0]->j->lay.object;
    }
    if (gw_net_send(f->e->net, f->node, &ns, &f->req) < 0) {
        for (size_t i = 0; i < f->nt; i++) {
            if (f->t[i]) {
                f->t[i]->state = T_TODO;
                f->t[i]->f = NULL;
            }
        }
        frame_free(f); /* not queued: release does not run */
        return;
    }
    f->buf = NULL; /* the net's until release */
}

static void
frames_flush(void *arg)
{
    struct gw_engine *e = arg;
    while (e->mframes) {
        struct gw_mframe *f = e->mframes;
        e->mframes = f->next;
        frame_send(f);
    }
}

/* Appends j's record to f for t: 0, or -ENOMEM (nothing changed). */
static int
frame_add(struct gw_mframe *f, struct gw_mjob *j, struct gw_mtarget *t)
{
    if (f->len + j->len > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + j->len) {
            cap *= 2;
        }
        uint8_t *b = realloc(f->buf, cap);
        if (!b) {
            return -ENOMEM;
        }
        f->buf = b;
        f->cap = cap;
    }
    if (f->nt == f->tcap) {
        size_t cap = f->tcap ? 2 * f->tcap : 16;
        struct gw_mtarget **ts = realloc(f->t, cap * sizeof(*ts));
        if (!ts) {
            return -ENOMEM;
        }
        f->t = ts;
        f->tcap = cap;
    }
    memcpy(f->buf + f->len, j->rec, j->len);
    f->len += j->len;
    t->f = f;
    t->slot = f->nt;
    f->t[f->nt++] = t;
    f->live++;
    t->state = T_OUT;
    return 0;
}

static struct gw_mframe *
frame_new(struct gw_engine *e, uint32_t node, uint32_t tenant)
{
    struct gw_mframe *f = calloc(1, sizeof(*f));
    if (f) {
        f->e = e;
        f->node = node;
        f->tenant = tenant;
        f->open = 1;
    }
    return f;
}

/* Adds j's record to this turn's frame for t's node (a frame of its own
 * when t goes alone, sent now); t is T_OUT once it rides one, else it is
 * sent again at the next poll. */
static void
target_send(struct gw_mjob *j, struct gw_mtarget *t)
{
    struct gw_engine *e = j->e;
    struct gw_mframe *f, **pp;

    if (t->alone) {
        if ((f = frame_new(e, t->node, j->lay.tenant)) == NULL) {
            return;
        }
        if (frame_add(f, j, t) < 0) {
            frame_free(f);
            return;
        }
        t->alone = 0;
        frame_send(f);
        return;
    }
    for (pp = &e->mframes; *pp; pp = &(*pp)->next) {
        if ((*pp)->node == t->node && (*pp)->tenant == j->lay.tenant) {
            break;
        }
    }
    if ((f = *pp) == NULL) {
        if ((!e->mflush && !(e->mflush = gw_timer_create(e->net, frames_flush, e))) ||
            (f = frame_new(e, t->node, j->lay.tenant)) == NULL) {
            return;
        }
        *pp = f;                    /* the list's tail */
        gw_timer_arm(e->mflush, 0); /* after this loop turn's callbacks */
    }
    if (frame_add(f, j, t) < 0) {
        return; /* an empty frame is freed with the turn */
    }
    if (f->len >= GW_MLOG_FRAME_BYTES) {
        *pp = f->next;
        frame_send(f);
    }
}

/* Ends a job whose record every chosen node logged. */
static void
mjob_finish(struct gw_mjob *j)
{
    struct gw_engine *e = j->e;
    struct gw_obj *o = j->o;
    struct gw_layout l = j->lay;
    int record_only = j->record_only;
    void (*logged)(void *arg, int rc) = j->logged;
    void *logged_arg = j->logged_arg;
    CM_DEBUG("gateway meta record logged tenant=%u object=%016llx version=%llu tomb=%d nodes=%zu",
             l.tenant, (unsigned long long)l.object, (unsigned long long)l.version, o == NULL,
             j->nt);
    j->logged = NULL;
    mjob_free(j);
    if (logged) {
        logged(logged_arg, 0);
    } else if (o) {
        gw_pbuf_meta_done(o);
    } else if (e->on_layout) {
        l.k = 0;
        l.nstripes = 0;
        e->on_layout(e->arg, &l, record_only ? GW_REPORT_DONE : GW_REPORT_TOMB);
    }
}

/*
 * Replaces the nodes gone for redrive_after_ms (or from the directory)
 * that have not logged the record, chooses nodes up to m + 1 (or all there
 * are), sends to those not asked, and ends the job once enough logged it.
 * j may be gone on return.
 */
static void
mjob_step(struct gw_mjob *j)
{
    struct gw_engine *e = j->e;
    uint32_t dir[GW_MLOG_NODES_MAX];
    size_t ndir = gw_net_node_ids(e->net, dir, GW_MLOG_NODES_MAX);
    size_t want = (size_t)j->lay.m + 1 < ndir ? (size_t)j->lay.m + 1 : ndir;
    uint64_t now = cm_now_ns();
    uint64_t redrive_ns =
        (uint64_t)(e->cfg.redrive_after_ms > 0 ? e->cfg.redrive_after_ms : 0) * 1000000u;
    size_t logged = 0;

    for (size_t i = 0; i < j->nt; i++) {
        struct gw_mtarget *t = &j->t[i];
        uint64_t since = gw_net_node_down_since(e->net, t->node);
        uint32_t other;
        if (t->state == T_TODO && since && now >= since + redrive_ns &&
            pick(j, dir, ndir, &other) == 0) {
            CM_INFO("gateway meta record moves tenant=%u object=%016llx from=%u to=%u",
                    j->lay.tenant, (unsigned long long)j->lay.object, t->node, other);
            t->node = other;
        }
    }
    while (j->nt < want) {
        uint32_t node;
        if (pick(j, dir, ndir, &node) < 0) {
            break;
        }
        j->t[j->nt++] = (struct gw_mtarget){.j = j, .node = node, .state = T_TODO};
    }
    for (size_t i = 0; i < j->nt; i++) {
        struct gw_mtarget *t = &j->t[i];
        if (t->state == T_TODO && gw_net_node_usable(e->net, t->node)) {
            target_send(j, t);
        }
        logged += t->state == T_LOGGED;
    }
    if (want > 0 && logged >= want) {
        mjob_finish(j);
    }
}

static void
target_answered(struct gw_mtarget *t, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_mjob *j = t->j;
    struct gw_engine *e = j->e;
    int st = status ? status : rsp->status;
    if (st == 0) {
        t->state = T_LOGGED;
        atomic_fetch_add(&e->meta_records, 1);
    } else if (status == 0 && st == CM_E_PROTO) {
        t->state = T_LOGGED;
        atomic_fetch_add(&e->meta_unlogged, 1);
        if (!e->warned_unlogged) {
            e->warned_unlogged = 1;
            CM_WARN("gateway meta record not logged: node keeps no insertion log node=%u "
                    "(--rebuild-meta cannot bring back what it stores)",
                    t->node);
        }
    } else {
        t->state = T_TODO;
        /* Refused as malformed: the next try shows whose record it was. */
        t->alone = status == 0 && st == CM_E_BADARG;
        CM_DEBUG("gateway meta record failed tenant=%u object=%016llx node=%u err=%s",
                 j->lay.tenant, (unsigned long long)j->lay.object, t->node, cm_errname(st));
        return; /* again at the next poll */
    }
    mjob_step(j);
}

/* The job of a version's record: layout and attrs as they are now
 * (persisted: every bit); gen > 0: a MOVED record. */
static struct gw_mjob *
version_job(struct gw_engine *e, const struct gw_layout *l, const struct gw_meta_attrs *a,
            const char *key, size_t klen, uint32_t gen)
{
    size_t rlen = gw_meta_rec_len(l, a);
    uint8_t *rec = malloc(rlen);
    if (!rec) {
        return NULL;
    }
    gw_meta_encode(l, a, rec);
    struct gw_mrec m = {
        .kind = gen > 0 ? GW_MREC_MOVED : GW_MREC_VERSION,
        .tenant = l->tenant,
        .key = key,
        .klen = klen,
        .version = l->version,
        .gen = gen,
        .rec = rec,
        .rec_len = rlen,
    };
    struct gw_mjob *j = mjob_new(e, l, &m);
    free(rec);
    return j;
}

int
gw_mlog_version(struct gw_obj *o)
{
    struct gw_mjob *j = version_job(o->e, &o->lay, &o->attrs, o->key, o->klen, 0);
    if (!j) {
        return -ENOMEM;
    }
    j->o = o;
    o->mjob = j;
    mjob_link(j);
    mjob_step(j);
    return 0;
}

struct gw_mjob *
gw_mlog_record_new(struct gw_engine *e, const struct gw_layout *l, const struct gw_meta_attrs *a,
                   const char *key, size_t klen)
{
    struct gw_mjob *j = version_job(e, l, a, key, klen, 0);
    if (j) {
        j->record_only = 1;
    }
    return j;
}

struct gw_mjob *
gw_mlog_moved_new(struct gw_engine *e, const struct gw_layout *l, const struct gw_meta_attrs *a,
                  const char *key, size_t klen, uint32_t gen, void (*logged)(void *arg, int rc),
                  void *arg)
{
    struct gw_mjob *j = version_job(e, l, a, key, klen, gen > 0 ? gen : 1);
    if (j) {
        j->logged = logged;
        j->logged_arg = arg;
    }
    return j;
}

struct gw_mjob *
gw_mlog_tomb_new(struct gw_engine *e, const struct gw_layout *l, const char *key, size_t klen)
{
    struct gw_mrec m = {
        .kind = GW_MREC_TOMB,
        .tenant = l->tenant,
        .key = key,
        .klen = klen,
        .version = l->version,
    };
    return mjob_new(e, l, &m);
}

void
gw_mlog_start(void *arg)
{
    struct gw_mjob *j = arg;
    if (j->e->stopping) {
        mjob_free(j);
        return;
    }
    mjob_link(j);
    mjob_step(j);
}

void
gw_mlog_cancel(struct gw_mjob *j)
{
    if (j) {
        mjob_free(j);
    }
}

void
gw_mlog_poll(struct gw_engine *e)
{
    struct gw_mjob *j = e->mjobs;
    while (j) {
        struct gw_mjob *next = j->next; /* ending j ends only j */
        mjob_step(j);
        j = next;
    }
}

void
gw_mlog_stop(struct gw_engine *e)
{
    while (e->mjobs) {
        mjob_free(e->mjobs);
    }
    while (e->mframes) { /* open, and left by every rider */
        struct gw_mframe *f = e->mframes;
        e->mframes = f->next;
        frame_free(f);
    }
    gw_timer_destroy(e->mflush);
    e->mflush = NULL;
}
