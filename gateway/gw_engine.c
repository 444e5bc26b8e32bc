/*
 * gw_engine.c - the chunk data path: erasure coding, holder choice, GET
 * with parity fallback, and the persistent buffer (see gw_engine.h).
 *
 *   put(): etag, encode, CRCs ──post──▶ choose holders ─▶ PUT every chunk
 *        (caller's thread)              (loop thread)     │ fail: move slot j
 *                                                         ▼
 *   cb(0) once all acked ─▶ buffered: STAT every persist_poll_ms, redrive
 *                           slots whose holder stays unreachable ─▶ freed
 *                           once every slot is persisted
 *   get(): ≤ GW_GET_PARALLEL stripe fetches; each asks its wanted data
 *          chunks, adds parity/copies on error or after slow_ms, decodes
 *
 * Threads: the public functions only validate, encode and post; every
 * object, fetch and delete lives on the gw_net loop thread. The cm_ec
 * cache is shared (lock); stats are atomics.
 * Invariants: chunk j of every stripe lives on holders[j]; a slot's
 * outstanding ops all carry its current gen (changing holders cancels them
 * first); an object's bytes stay alive while any payload reference is in
 * a socket buffer (refs); callbacks run exactly once, on the loop thread.
 * Wire: obj_version is always 0 (object ids are unique per version).
 */
#include "gw_engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_net.h"

#define GW_GET_PARALLEL 8
#define GW_REBUILD_PARALLEL 4
#define GW_DEFAULT_MAX_CHUNK (1u << 20)
#define BIT(i) (1ull << (i))
/* Nodes send PERSISTED notices; STATs are the fallback for lost ones: an
 * object STATs its pending chunks only after this many poll periods without
 * progress, doubling up to GW_STAT_GAP_MAX polls. */
#define GW_STAT_GAP_POLLS 4
#define GW_STAT_GAP_MAX 32

struct gw_obj;
struct gw_sfetch;

typedef void (*sfetch_done_fn)(void *arg, struct gw_sfetch *f, int status);

struct sfetch_ctx {
    struct gw_sfetch *f;
    uint32_t slot;
};

/* One stripe read: gets the wanted chunks, directly or by decoding. */
struct gw_sfetch {
    struct gw_sfetch *prev, *next; /* owner's list */
    struct gw_engine *e;
    const struct gw_layout *lay; /* borrowed from the owner */
    uint32_t stripe;
    uint8_t *bufs[GW_MAX_HOLDERS]; /* caller's buffers (NULL: own[i]) */
    uint8_t *own[GW_MAX_HOLDERS];
    uint64_t want, excl, present, out, failed, slow;
    struct gw_net_req *reqs[GW_MAX_HOLDERS];
    struct sfetch_ctx ctx[GW_MAX_HOLDERS];
    struct gw_timer *slow_timer;
    int nlaunch;
    int first_slot;
    int served_by_backup;
    int saw_busy;
    int finished;
    sfetch_done_fn done;
    void *arg;
    uint32_t slot; /* rebuild: slot being rebuilt */
    uint32_t gen;
};

struct gw_slot {
    uint32_t gen;
    uint32_t acked;      /* stripes acked in memory at this gen */
    uint32_t npersisted; /* stripes known persisted on the holder */
    uint32_t moves;
    uint32_t next_stripe; /* rebuild cursor */
    int rebuilding;       /* fetches in flight */
    int stat_out;
    int put_out;
    int need_move;
    int stalled; /* rebuild failed: restart at the next poll */
};

enum obj_state { OBJ_PUTTING, OBJ_BUFFERED, OBJ_TRACKED };
enum op_kind { OP_PUT, OP_STAT, OP_DEL };

struct gw_op {
    struct gw_op *prev, *next;
    struct gw_obj *o; /* NULL for a DEL */
    struct gw_net_req *req;
    uint32_t slot, stripe, gen;
    enum op_kind kind;
};

struct gw_obj {
    struct gw_obj *prev, *next;
    struct cm_hnode hn; /* in the engine's object map, while linked */
    struct gw_engine *e;
    int refs; /* 1 while live + 1 per payload referenced by a socket buffer */
    int linked;
    int placed;    /* holders chosen: chunks may exist on them */
    int accounted; /* bytes counted in the buffered stats */
    int init_status;
    enum obj_state state;
    struct gw_layout lay;
    uint8_t *data, *parity, *tail;
    uint32_t *crc;       /* per wire index */
    uint8_t *persisted;  /* per wire index */
    uint64_t bytes;      /* accounted in buffered_bytes */
    uint32_t place[GW_MAX_HOLDERS];
    size_t nplace;
    struct gw_slot slot[GW_MAX_HOLDERS];
    struct gw_op *ops;
    struct gw_sfetch *fetches;
    uint64_t reported;
    uint64_t stat_at;    /* ns: STAT unpersisted chunks from then on */
    uint64_t stat_gap;   /* ns: wait for notices this long before STATs */
    gw_put_cb cb;
    void *cb_arg;
};

struct gw_get {
    struct gw_get *prev, *next;
    struct gw_engine *e;
    struct gw_layout lay;
    uint64_t off, len;
    uint8_t *buf;
    gw_get_cb cb;
    void *arg;
    uint32_t s_next, s_end;
    int inflight;
    int status;
    struct gw_sfetch *fetches;
};

struct gw_del {
    struct gw_del *prev, *next;
    struct gw_engine *e;
    struct gw_layout lay;
    int delay_ms;
    struct gw_timer *t;
};

struct gw_engine {
    struct gw_engine_cfg cfg;
    gw_layout_cb on_layout;
    void *arg;
    struct gw_net *net;
    pthread_mutex_t ec_lock;
    struct cm_ec *ecs[CM_EC_MAX_K + 1][CM_EC_MAX_M + 1];
    /* loop thread only */
    struct gw_obj *objs;     /* buffered and tracked objects */
    struct cm_hmap objmap;   /* the same by (tenant, object) */
    struct gw_get *gets;
    struct gw_del *dels;
    struct gw_timer *poll;
    int stopping;
    _Atomic uint64_t buffered_bytes, buffered_objects, redriven_chunks, parity_reads;
    _Atomic uint64_t persist_notes, persist_stats;
};

/* Doubly linked list helpers over any struct with prev/next. */
#define DL_PUSH(head, x)              \
    do {                              \
        (x)->prev = NULL;             \
        (x)->next = (head);           \
        if (head) {                   \
            (head)->prev = (x);       \
        }                             \
        (head) = (x);                 \
    } while (0)
#define DL_UNLINK(head, x)                 \
    do {                                   \
        if ((x)->prev) {                   \
            (x)->prev->next = (x)->next;   \
        } else {                           \
            (head) = (x)->next;            \
        }                                  \
        if ((x)->next) {                   \
            (x)->next->prev = (x)->prev;   \
        }                                  \
        (x)->prev = (x)->next = NULL;      \
    } while (0)

static struct cm_ec *
ec_get(struct gw_engine *e, int k, int m)
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

static uint32_t
nchunks(const struct gw_layout *l)
{
    return (uint32_t)(l->k + l->m);
}

static uint64_t
full_mask(const struct gw_layout *l)
{
    return nchunks(l) >= 64 ? ~0ull : BIT(nchunks(l)) - 1;
}

static uint32_t
wire_index(const struct gw_layout *l, uint32_t s, uint32_t j)
{
    return s * nchunks(l) + j;
}

static void
noop_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    (void)arg;
    (void)status;
    (void)rsp;
}

/* ---- stripe fetch ---------------------------------------------------- */

static uint8_t *
sfetch_buf(struct gw_sfetch *f, uint32_t i)
{
    if (f->bufs[i]) {
        return f->bufs[i];
    }
    if (!f->own[i]) {
        f->own[i] = malloc(f->lay->chunk_size ? f->lay->chunk_size : 1);
    }
    return f->own[i];
}

static void sfetch_progress(struct gw_sfetch *f);

static void
sfetch_on_chunk(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct sfetch_ctx *ctx = arg;
    struct gw_sfetch *f = ctx->f;
    uint32_t i = ctx->slot;
    int st = status ? status : rsp->status;
    f->reqs[i] = NULL;
    f->out &= ~BIT(i);
    if (st == 0 && rsp->data_len != f->lay->chunk_size) {
        st = CM_E_PROTO;
    }
    if (st == 0) {
        f->present |= BIT(i);
    } else {
        f->failed |= BIT(i);
        f->saw_busy |= st == CM_E_BUSY;
        CM_DEBUG("gateway chunk get failed tenant=%u object=%016llx index=%u node=%u err=%s",
                 f->lay->tenant, (unsigned long long)f->lay->object,
                 wire_index(f->lay, f->stripe, i), f->lay->holders[i], cm_errname(st));
    }
    sfetch_progress(f);
}

static int
sfetch_launch(struct gw_sfetch *f, uint32_t i)
{
    const struct gw_layout *l = f->lay;
    uint8_t *buf = sfetch_buf(f, i);
    if (!buf) {
        f->failed |= BIT(i);
        return -ENOMEM;
    }
    f->ctx[i].f = f;
    f->ctx[i].slot = i;
    struct gw_net_send s = {
        .hdr = {.op = CM_OP_GET,
                .tenant = l->tenant,
                .object = l->object,
                .index = wire_index(l, f->stripe, i)},
        .dst = buf,
        .dst_cap = l->chunk_size,
        .done = sfetch_on_chunk,
        .arg = &f->ctx[i],
    };
    int rc = gw_net_send(f->e->net, l->holders[i], &s, &f->reqs[i]);
    if (rc < 0) {
        f->failed |= BIT(i);
        return rc;
    }
    if (f->nlaunch++ == 0) {
        f->first_slot = (int)i;
    }
    f->out |= BIT(i);
    return 0;
}

static void
sfetch_cancel_reqs(struct gw_sfetch *f)
{
    for (uint32_t i = 0; i < nchunks(f->lay); i++) {
        if (f->reqs[i]) {
            gw_net_cancel(f->e->net, f->reqs[i]);
            f->reqs[i] = NULL;
        }
    }
    f->out = 0;
    if (f->slow_timer) {
        gw_timer_destroy(f->slow_timer);
        f->slow_timer = NULL;
    }
}

static void
sfetch_finish(struct gw_sfetch *f, int status)
{
    f->finished = 1;
    sfetch_cancel_reqs(f);
    f->done(f->arg, f, status);
}

/* Fills the missing wanted chunks from the present ones. */
static int
sfetch_decode(struct gw_sfetch *f)
{
    const struct gw_layout *l = f->lay;
    uint32_t n = nchunks(l);
    if (l->k == 1) {
        uint32_t src = 0;
        while (src < n && !(f->present & BIT(src))) {
            src++;
        }
        for (uint32_t i = 0; i < n; i++) {
            if ((f->want & BIT(i)) && !(f->present & BIT(i))) {
                uint8_t *dst = sfetch_buf(f, i);
                if (!dst) {
                    return -ENOMEM;
                }
                memcpy(dst, sfetch_buf(f, src), l->chunk_size);
            }
        }
        if ((int)src != f->first_slot) {
            f->served_by_backup = 1;
        }
        return 0;
    }
    struct cm_ec *ec = ec_get(f->e, l->k, l->m);
    uint8_t *chunks[GW_MAX_HOLDERS];
    uint8_t present[GW_MAX_HOLDERS];
    for (uint32_t i = 0; i < n; i++) {
        present[i] = (f->present & BIT(i)) != 0;
        chunks[i] = NULL;
        if (present[i] || (f->want & BIT(i))) {
            chunks[i] = sfetch_buf(f, i);
            if (!chunks[i]) {
                return -ENOMEM;
            }
        }
    }
    if (!ec) {
        return -ENOMEM;
    }
    f->served_by_backup = 1;
    return cm_ec_decode(ec, l->chunk_size, chunks, present);
}

static int
popcount64(uint64_t x)
{
    return __builtin_popcountll(x);
}

/* Launches more reads unless every missing wanted chunk is already
 * on its way from a holder that is not slow. */
static void
sfetch_fill(struct gw_sfetch *f)
{
    const struct gw_layout *l = f->lay;
    uint64_t missing = f->want & ~f->present;
    if (l->k > 1 && (missing & (f->out & ~f->slow)) == missing) {
        return;
    }
    int have = popcount64(f->present) + popcount64(f->out & ~f->slow);
    while (have < l->k) {
        uint64_t cand = full_mask(l) & ~(f->present | f->out | f->failed | f->excl);
        if (!cand) {
            break;
        }
        uint32_t pick = 0;
        if (l->k == 1) {
            /* copies: a random one spreads small reads */
            int r = (int)(cm_random_u64() % (uint64_t)popcount64(cand));
            for (pick = 0; pick < nchunks(l); pick++) {
                if ((cand & BIT(pick)) && r-- == 0) {
                    break;
                }
            }
        } else {
            while (!(cand & BIT(pick))) {
                pick++; /* data chunks first, then parity */
            }
        }
        if (sfetch_launch(f, pick) == 0) {
            have++;
        }
    }
}

static void
sfetch_progress(struct gw_sfetch *f)
{
    const struct gw_layout *l = f->lay;
    if (f->finished) {
        return;
    }
    if ((f->want & ~f->present) == 0) {
        sfetch_finish(f, 0);
        return;
    }
    if (popcount64(f->present) >= l->k) {
        sfetch_cancel_reqs(f); /* no late response may land in a buffer we decode into */
        int rc = sfetch_decode(f);
        sfetch_finish(f, rc);
        return;
    }
    sfetch_fill(f);
    if (f->out == 0) {
        sfetch_finish(f, f->saw_busy ? CM_E_BUSY : CM_E_UNAVAIL);
    }
}

static void
sfetch_on_slow(void *arg)
{
    struct gw_sfetch *f = arg;
    f->slow |= f->out;
    sfetch_progress(f);
}

static void
sfetch_free(struct gw_sfetch *f)
{
    if (!f) {
        return;
    }
    if (!f->finished) {
        sfetch_cancel_reqs(f);
    }
    for (uint32_t i = 0; i < GW_MAX_HOLDERS; i++) {
        free(f->own[i]);
    }
    free(f);
}

/*
 * Starts reading stripe s of l (borrowed until done or free): want and
 * excl are slot masks; bufs[i] (may be NULL) receive chunk i. done runs
 * on a later loop turn, never from here.
 */
static struct gw_sfetch *
sfetch_start(struct gw_engine *e, const struct gw_layout *l, uint32_t s, uint64_t want,
             uint64_t excl, uint8_t *const *bufs, sfetch_done_fn done, void *arg)
{
    struct gw_sfetch *f = calloc(1, sizeof(*f));
    if (!f) {
        return NULL;
    }
    f->e = e;
    f->lay = l;
    f->stripe = s;
    f->want = want;
    f->excl = excl;
    f->done = done;
    f->arg = arg;
    f->first_slot = -1;
    for (uint32_t i = 0; i < nchunks(l); i++) {
        f->bufs[i] = bufs ? bufs[i] : NULL;
        if (l->k > 1 && (want & BIT(i)) && !(excl & BIT(i))) {
            sfetch_launch(f, i);
        }
    }
    if (e->cfg.slow_ms > 0) {
        f->slow_timer = gw_timer_create(e->net, sfetch_on_slow, f);
        if (f->slow_timer) {
            gw_timer_arm(f->slow_timer, e->cfg.slow_ms);
        }
    }
    /* A fetch that cannot start at all fails here, synchronously, so
     * done() never runs inside sfetch_start. */
    sfetch_fill(f);
    if (f->out == 0) {
        sfetch_free(f);
        return NULL;
    }
    return f;
}

/* ---- objects: put, persistent buffer, redrive ------------------------- */

static uint64_t
obj_hash(uint32_t tenant, uint64_t object)
{
    return cm_hmix64(object ^ ((uint64_t)tenant << 32));
}

static struct gw_obj *
obj_find(struct gw_engine *e, uint32_t tenant, uint64_t object)
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

static void
obj_unref(struct gw_obj *o)
{
    if (--o->refs > 0) {
        return;
    }
    cm_free_big(o->data);
    cm_free_big(o->parity);
    cm_free_big(o->tail);
    free(o->crc);
    free(o->persisted);
    free(o);
}

static void
obj_release(void *arg)
{
    obj_unref(arg);
}

static void
buf_release(void *arg)
{
    free(arg);
}

static const uint8_t *
obj_chunk(const struct gw_obj *o, uint32_t s, uint32_t j)
{
    const struct gw_layout *l = &o->lay;
    size_t cs = l->chunk_size;
    if (j >= l->k) {
        if (l->k > 1) {
            return o->parity + ((size_t)(j - l->k) * l->nstripes + s) * cs;
        }
        j = 0;
    }
    if (o->tail && s == l->nstripes - 1) {
        return o->tail + (size_t)j * cs;
    }
    return o->data + ((size_t)s * l->k + j) * cs;
}

static uint64_t
obj_mask(const struct gw_obj *o)
{
    uint64_t mask = 0;
    for (uint32_t j = 0; j < nchunks(&o->lay); j++) {
        if (o->slot[j].npersisted == o->lay.nstripes) {
            mask |= BIT(j);
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
    uint32_t idx = wire_index(&o->lay, s, j);
    if (!o->persisted[idx]) {
        o->persisted[idx] = 1;
        o->slot[j].npersisted++;
        stat_defer(o);
    }
}

static void
slot_cancel(struct gw_obj *o, uint32_t j)
{
    struct gw_op *op = o->ops;
    while (op) {
        struct gw_op *next = op->next;
        if (op->slot == j) {
            gw_net_cancel(o->e->net, op->req);
            DL_UNLINK(o->ops, op);
            free(op);
        }
        op = next;
    }
    struct gw_sfetch *f = o->fetches;
    while (f) {
        struct gw_sfetch *next = f->next;
        if (f->slot == j) {
            DL_UNLINK(o->fetches, f);
            free(f->bufs[f->slot]);
            sfetch_free(f);
        }
        f = next;
    }
    o->slot[j].stat_out = 0;
    o->slot[j].put_out = 0;
    o->slot[j].rebuilding = 0;
}

static void op_done(void *arg, int status, const struct cm_wire_hdr *rsp);

/* Sends chunk (s, j) from buf (owned: freed once sent, else the object's
 * bytes). */
static int
op_send(struct gw_obj *o, enum op_kind kind, uint32_t j, uint32_t s, const uint8_t *buf,
        uint8_t *owned)
{
    const struct gw_layout *l = &o->lay;
    struct gw_op *op = calloc(1, sizeof(*op));
    if (!op) {
        return -ENOMEM;
    }
    op->o = o;
    op->slot = j;
    op->stripe = s;
    op->gen = o->slot[j].gen;
    op->kind = kind;
    uint32_t idx = wire_index(l, s, j);
    uint16_t flags = kind == OP_PUT ? CM_WF_NOTIFY : 0; /* tell us once in COS */
    struct gw_net_send ns = {
        .hdr = {.op = kind == OP_PUT ? CM_OP_PUT : CM_OP_STAT,
                .flags = flags,
                .tenant = l->tenant,
                .object = l->object,
                .index = idx},
        .done = op_done,
        .arg = op,
    };
    if (kind == OP_PUT) {
        ns.payload = buf;
        ns.len = l->chunk_size;
        ns.hdr.data_crc = o->crc && !owned ? o->crc[idx] : 0;
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
        if (kind == OP_PUT && !owned) {
            o->refs--;
        }
        free(op);
        return rc;
    }
    DL_PUSH(o->ops, op);
    if (kind == OP_PUT) {
        o->slot[j].put_out++;
    }
    return 0;
}

static void rebuild_pump(struct gw_obj *o, uint32_t j);

/* (Re)sends every chunk of slot j to holders[j] under a new gen. */
static void
slot_send(struct gw_obj *o, uint32_t j)
{
    struct gw_slot *sl = &o->slot[j];
    slot_cancel(o, j);
    sl->gen++;
    sl->acked = 0;
    sl->need_move = 0;
    sl->stalled = 0;
    sl->npersisted = 0;
    for (uint32_t s = 0; s < o->lay.nstripes; s++) {
        o->persisted[wire_index(&o->lay, s, j)] = 0;
    }
    if (!o->data) {
        sl->next_stripe = 0;
        rebuild_pump(o, j);
        return;
    }
    for (uint32_t s = 0; s < o->lay.nstripes; s++) {
        if (op_send(o, OP_PUT, j, s, obj_chunk(o, s, j), NULL) < 0) {
            slot_cancel(o, j);
            sl->need_move = 1;
            return;
        }
    }
}

/* Usable nodes in placement order, then directory order. */
static size_t
candidates(struct gw_obj *o, uint32_t *ids, size_t cap)
{
    struct gw_net *net = o->e->net;
    uint32_t dir[256];
    size_t nd = gw_net_node_ids(net, dir, 256);
    size_t n = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        const uint32_t *src = pass == 0 ? o->place : dir;
        size_t ns = pass == 0 ? o->nplace : nd;
        for (size_t i = 0; i < ns && n < cap; i++) {
            int dup = 0;
            for (size_t x = 0; x < n; x++) {
                dup |= ids[x] == src[i];
            }
            if (!dup && gw_net_node_usable(net, src[i])) {
                ids[n++] = src[i];
            }
        }
    }
    return n;
}

/* A usable node for slot j other than its current holder: one holding no
 * slot if any, else the least used. -1 if none. */
static int64_t
pick_node(struct gw_obj *o, uint32_t j)
{
    uint32_t ids[256];
    size_t n = candidates(o, ids, 256);
    int64_t best = -1;
    int best_use = 1 << 30;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == o->lay.holders[j]) {
            continue;
        }
        int use = 0;
        for (uint32_t x = 0; x < nchunks(&o->lay); x++) {
            use += x != j && o->lay.holders[x] == ids[i];
        }
        if (use < best_use) {
            best_use = use;
            best = ids[i];
        }
    }
    return best;
}

static int
choose_holders(struct gw_obj *o)
{
    struct gw_layout *l = &o->lay;
    uint32_t ids[256];
    size_t n = candidates(o, ids, 256);
    if (n < l->k) {
        return CM_E_UNAVAIL;
    }
    uint64_t done = 0;
    for (uint32_t j = 0; j < nchunks(l) && j < o->nplace; j++) {
        int taken = 0;
        for (uint32_t x = 0; x < j; x++) {
            taken |= (done & BIT(x)) && l->holders[x] == o->place[j];
        }
        if (!taken && gw_net_node_usable(o->e->net, o->place[j])) {
            l->holders[j] = o->place[j];
            done |= BIT(j);
        }
    }
    for (uint32_t j = 0; j < nchunks(l); j++) {
        if (done & BIT(j)) {
            continue;
        }
        int64_t best = -1;
        int best_use = 1 << 30;
        for (size_t i = 0; i < n; i++) {
            int use = 0;
            for (uint32_t x = 0; x < nchunks(l); x++) {
                use += (done & BIT(x)) && l->holders[x] == ids[i];
            }
            if (use < best_use) {
                best_use = use;
                best = ids[i];
            }
        }
        l->holders[j] = (uint32_t)best;
        done |= BIT(j);
    }
    return 0;
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
        free(f->bufs[f->slot]);
        sfetch_free(f);
    }
    if (o->accounted) {
        atomic_fetch_sub(&e->buffered_bytes, o->bytes);
        atomic_fetch_sub(&e->buffered_objects, 1);
        o->accounted = 0;
    }
}

static void
send_dels(struct gw_engine *e, const struct gw_layout *l)
{
    for (uint32_t j = 0; j < nchunks(l); j++) {
        for (uint32_t s = 0; s < l->nstripes; s++) {
            struct gw_net_send ns = {
                .hdr = {.op = CM_OP_DEL,
                        .tenant = l->tenant,
                        .object = l->object,
                        .index = wire_index(l, s, j)},
                .done = noop_done,
            };
            if (gw_net_send(e->net, l->holders[j], &ns, NULL) < 0) {
                break;
            }
        }
    }
}

/* Ends o: the put callback (if not yet run) gets status. */
static void
obj_finish(struct gw_obj *o, int status)
{
    obj_unlink(o);
    if (o->state == OBJ_PUTTING && o->cb) {
        gw_put_cb cb = o->cb;
        o->cb = NULL;
        if (status < 0) {
            CM_WARN("gateway put failed tenant=%u object=%016llx size=%llu err=%s",
                    o->lay.tenant, (unsigned long long)o->lay.object,
                    (unsigned long long)o->lay.size, cm_errname(status));
            if (o->placed && o->lay.nstripes > 0 && !o->e->stopping) {
                send_dels(o->e, &o->lay);
            }
        }
        cb(o->cb_arg, status, &o->lay);
    }
    obj_unref(o);
}

/* Acts on what changed: moves failed slots, completes the put, reports
 * layouts, frees the object once persisted. o may be gone on return. */
static void
obj_step(struct gw_obj *o)
{
    struct gw_engine *e = o->e;
    struct gw_layout *l = &o->lay;
    int changed = 0;
    uint32_t dir[256];
    size_t ndir = gw_net_node_ids(e->net, dir, 256);
    for (int round = 0; round < 4; round++) {
        int again = 0;
        for (uint32_t j = 0; j < nchunks(l); j++) {
            struct gw_slot *sl = &o->slot[j];
            if (!sl->need_move) {
                continue;
            }
            /* A put keeps the rule choose_holders() applied: at least k
             * usable nodes, whether a dead node was noticed before the put
             * began or only by its failed chunk. */
            uint32_t ids[256];
            int64_t node = pick_node(o, j);
            if (node < 0 || (o->state == OBJ_PUTTING && (++sl->moves > ndir + 1 ||
                                                          candidates(o, ids, 256) < l->k))) {
                if (o->state == OBJ_PUTTING) {
                    obj_finish(o, CM_E_UNAVAIL);
                    return;
                }
                continue; /* retried at the next poll */
            }
            CM_INFO("gateway chunk move tenant=%u object=%016llx slot=%u from=%u to=%u "
                    "state=%d",
                    l->tenant, (unsigned long long)l->object, j, l->holders[j],
                    (unsigned)node, (int)o->state);
            l->holders[j] = (uint32_t)node;
            if (o->state != OBJ_PUTTING) {
                atomic_fetch_add(&e->redriven_chunks, l->nstripes);
                changed = 1;
            }
            slot_send(o, j);
            again |= sl->need_move;
        }
        if (!again) {
            break;
        }
    }
    if (o->state == OBJ_PUTTING) {
        for (uint32_t j = 0; j < nchunks(l); j++) {
            if (o->slot[j].acked < l->nstripes) {
                return;
            }
        }
        o->state = OBJ_BUFFERED;
        stat_defer(o);
        l->persisted = o->reported = obj_mask(o);
        gw_put_cb cb = o->cb;
        o->cb = NULL;
        CM_DEBUG("gateway put acked tenant=%u object=%016llx size=%llu persisted=%llx",
                 l->tenant, (unsigned long long)l->object, (unsigned long long)l->size,
                 (unsigned long long)l->persisted);
        cb(o->cb_arg, 0, l);
        changed = 0;
    }
    uint64_t mask = obj_mask(o);
    l->persisted = mask;
    /* Report only what a restarted gateway needs (a new holder, or the
     * object wholly in COS): each report is a synced metadata write, and
     * partial progress is learnt again by STAT after a restart. */
    if (changed || (mask != o->reported && mask == full_mask(l))) {
        o->reported = mask;
        if (e->on_layout) {
            e->on_layout(e->arg, l);
        }
    }
    if (mask == full_mask(l)) {
        obj_finish(o, 0);
    }
}

static void
op_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_op *op = arg;
    struct gw_obj *o = op->o;
    struct gw_slot *sl = &o->slot[op->slot];
    int st = status ? status : rsp->status;
    uint32_t j = op->slot, s = op->stripe;
    enum op_kind kind = op->kind;
    DL_UNLINK(o->ops, op);
    free(op);
    if (kind == OP_PUT) {
        sl->put_out--;
        if (st == 0) {
            sl->acked++;
            if (rsp->flags & CM_WF_PERSISTED) {
                mark_persisted(o, j, s);
            }
        } else if (st == CM_E_BUSY && o->state == OBJ_PUTTING) {
            obj_finish(o, CM_E_BUSY);
            return;
        } else {
            CM_DEBUG("gateway chunk put failed tenant=%u object=%016llx index=%u node=%u "
                     "err=%s",
                     o->lay.tenant, (unsigned long long)o->lay.object,
                     wire_index(&o->lay, s, j), o->lay.holders[j], cm_errname(st));
            slot_cancel(o, j);
            sl->need_move = 1;
        }
    } else if (kind == OP_STAT) {
        sl->stat_out--;
        if (st == 0 && (rsp->flags & CM_WF_PERSISTED)) {
            mark_persisted(o, j, s);
        } else if (st == CM_E_NOTFOUND) {
            /* The holder lost it (restarted before persisting). */
            if (!o->data || op_send(o, OP_PUT, j, s, obj_chunk(o, s, j), NULL) < 0) {
                slot_cancel(o, j);
                sl->need_move = 1;
            }
        }
    }
    obj_step(o);
}

static void
rebuild_fetched(void *arg, struct gw_sfetch *f, int status)
{
    struct gw_obj *o = arg;
    uint32_t j = f->slot, s = f->stripe;
    struct gw_slot *sl = &o->slot[j];
    DL_UNLINK(o->fetches, f);
    sl->rebuilding--;
    uint8_t *buf = f->bufs[j];
    if (status == 0) {
        if (op_send(o, OP_PUT, j, s, buf, buf) < 0) {
            free(buf);
            slot_cancel(o, j);
            sl->need_move = 1;
        }
    } else {
        free(buf);
        sl->stalled = 1;
        CM_WARN("gateway rebuild failed tenant=%u object=%016llx index=%u err=%s",
                o->lay.tenant, (unsigned long long)o->lay.object, wire_index(&o->lay, s, j),
                cm_errname(status));
    }
    sfetch_free(f);
    if (!sl->need_move) {
        rebuild_pump(o, j);
    }
    obj_step(o);
}

/* Tracked objects have no bytes: rebuild slot j stripe by stripe from k
 * other chunks, a few stripes at a time. */
static void
rebuild_pump(struct gw_obj *o, uint32_t j)
{
    struct gw_slot *sl = &o->slot[j];
    uint64_t excl = BIT(j);
    for (uint32_t x = 0; x < nchunks(&o->lay); x++) {
        if (o->slot[x].need_move || (x != j && o->slot[x].rebuilding)) {
            excl |= BIT(x);
        }
    }
    while (!sl->stalled && sl->rebuilding < GW_REBUILD_PARALLEL &&
           sl->next_stripe < o->lay.nstripes) {
        uint32_t s = sl->next_stripe;
        uint8_t *bufs[GW_MAX_HOLDERS] = {0};
        bufs[j] = malloc(o->lay.chunk_size);
        if (!bufs[j]) {
            sl->stalled = 1;
            break;
        }
        struct gw_sfetch *f =
            sfetch_start(o->e, &o->lay, s, BIT(j), excl, bufs, rebuild_fetched, o);
        if (!f) {
            free(bufs[j]);
            sl->stalled = 1;
            break;
        }
        f->slot = j;
        f->gen = sl->gen;
        DL_PUSH(o->fetches, f);
        sl->rebuilding++;
        sl->next_stripe++;
    }
}

static void
engine_poll(void *arg)
{
    struct gw_engine *e = arg;
    uint64_t now = cm_now_ns();
    uint64_t redrive_ns = (uint64_t)(e->cfg.redrive_after_ms > 0 ? e->cfg.redrive_after_ms : 0) *
                          1000000u;
    struct gw_obj *o = e->objs;
    while (o) {
        struct gw_obj *next = o->next;
        if (o->state == OBJ_PUTTING) {
            o = next;
            continue;
        }
        const struct gw_layout *l = &o->lay;
        int stat_due = now >= o->stat_at, stated = 0;
        for (uint32_t j = 0; j < nchunks(l); j++) {
            struct gw_slot *sl = &o->slot[j];
            if (sl->npersisted == l->nstripes || sl->need_move) {
                continue;
            }
            uint64_t since = gw_net_node_down_since(e->net, l->holders[j]);
            if (since && now - since >= redrive_ns) {
                slot_cancel(o, j);
                sl->need_move = 1;
                continue;
            }
            if (sl->stalled) {
                slot_send(o, j);
                continue;
            }
            if (!stat_due || sl->stat_out > 0 || sl->put_out > 0 || sl->rebuilding > 0 ||
                sl->next_stripe < l->nstripes || !gw_net_node_usable(e->net, l->holders[j])) {
                continue; /* notices may still come, busy, or not reachable just now */
            }
            for (uint32_t s = 0; s < l->nstripes; s++) {
                if (o->persisted[wire_index(l, s, j)]) {
                    continue;
                }
                if (op_send(o, OP_STAT, j, s, NULL, NULL) < 0) {
                    break;
                }
                sl->stat_out++;
                stated = 1;
                atomic_fetch_add(&e->persist_stats, 1);
            }
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
    gw_timer_arm(e->poll, e->cfg.persist_poll_ms > 0 ? e->cfg.persist_poll_ms : 200);
}

/* A node's PERSISTED notice for one chunk. */
static void
engine_on_note(void *arg, uint32_t node, const struct cm_wire_note *note)
{
    struct gw_obj *o = obj_find(arg, note->tenant, note->object);
    if (!o || o->lay.nstripes == 0) {
        return; /* done already, or not ours */
    }
    uint32_t s = note->index / nchunks(&o->lay), j = note->index % nchunks(&o->lay);
    if (s >= o->lay.nstripes || o->lay.holders[j] != node || o->slot[j].need_move) {
        return; /* from a former holder */
    }
    atomic_fetch_add(&o->e->persist_notes, 1);
    mark_persisted(o, j, s);
    obj_step(o);
}

/* ---- get ------------------------------------------------------------- */

static void get_pump(struct gw_get *g);

static void
get_complete(struct gw_get *g)
{
    struct gw_engine *e = g->e;
    DL_UNLINK(e->gets, g);
    if (g->status < 0) {
        cm_free_big(g->buf);
        CM_DEBUG("gateway get failed tenant=%u object=%016llx err=%s", g->lay.tenant,
                 (unsigned long long)g->lay.object, cm_errname(g->status));
        g->cb(g->arg, g->status, NULL, 0);
    } else {
        g->cb(g->arg, 0, g->buf, (size_t)g->len);
    }
    free(g);
}

static void
get_cancel_fetches(struct gw_get *g)
{
    while (g->fetches) {
        struct gw_sfetch *f = g->fetches;
        DL_UNLINK(g->fetches, f);
        sfetch_free(f);
        g->inflight--;
    }
}

/* Object bytes [lo, hi) of data chunk i in stripe s, clipped to the range. */
static int
get_span(const struct gw_get *g, uint32_t s, uint32_t i, uint64_t *co, uint64_t *lo,
         uint64_t *hi)
{
    uint64_t cs = g->lay.chunk_size;
    *co = ((uint64_t)s * g->lay.k + i) * cs;
    *lo = *co > g->off ? *co : g->off;
    uint64_t end = g->off + g->len;
    *hi = *co + cs < end ? *co + cs : end;
    return *lo < *hi;
}

static void
get_fetched(void *arg, struct gw_sfetch *f, int status)
{
    struct gw_get *g = arg;
    DL_UNLINK(g->fetches, f);
    g->inflight--;
    if (status == 0) {
        for (uint32_t i = 0; i < g->lay.k; i++) {
            uint64_t co, lo, hi;
            if (f->bufs[i] || !get_span(g, f->stripe, i, &co, &lo, &hi)) {
                continue; /* landed in place, or not wanted */
            }
            memcpy(g->buf + (lo - g->off), f->own[i] + (lo - co), hi - lo);
        }
        if (f->served_by_backup) {
            atomic_fetch_add(&g->e->parity_reads, 1);
        }
    } else if (g->status == 0) {
        g->status = status;
        get_cancel_fetches(g);
    }
    sfetch_free(f);
    get_pump(g);
}

static void
get_pump(struct gw_get *g)
{
    while (g->status == 0 && g->inflight < GW_GET_PARALLEL && g->s_next < g->s_end) {
        uint32_t s = g->s_next++;
        uint8_t *bufs[GW_MAX_HOLDERS] = {0};
        uint64_t want = 0;
        for (uint32_t i = 0; i < g->lay.k; i++) {
            uint64_t co, lo, hi;
            if (!get_span(g, s, i, &co, &lo, &hi)) {
                continue;
            }
            want |= BIT(i);
            if (lo == co && hi == co + g->lay.chunk_size) {
                bufs[i] = g->buf + (co - g->off);
            }
        }
        struct gw_sfetch *f = sfetch_start(g->e, &g->lay, s, want, 0, bufs, get_fetched, g);
        if (!f) {
            g->status = CM_E_UNAVAIL;
            get_cancel_fetches(g);
            break;
        }
        DL_PUSH(g->fetches, f);
        g->inflight++;
    }
    if (g->inflight == 0 && (g->status < 0 || g->s_next >= g->s_end)) {
        get_complete(g);
    }
}

static void
get_start(void *arg)
{
    struct gw_get *g = arg;
    struct gw_engine *e = g->e;
    DL_PUSH(e->gets, g);
    if (e->stopping) {
        g->status = CM_E_UNAVAIL;
    }
    if (g->status == 0 && g->len > 0) {
        uint64_t sb = (uint64_t)g->lay.k * g->lay.chunk_size;
        g->s_next = (uint32_t)(g->off / sb);
        g->s_end = (uint32_t)((g->off + g->len - 1) / sb + 1);
    }
    get_pump(g);
}

/* ---- delete, track, nodes -------------------------------------------- */

static void
del_fire(void *arg)
{
    struct gw_del *d = arg;
    struct gw_engine *e = d->e;
    struct gw_obj *o = obj_find(e, d->lay.tenant, d->lay.object);
    if (o && o->state != OBJ_PUTTING) {
        /* Still buffered: its holders are the newest word. */
        memcpy(d->lay.holders, o->lay.holders, sizeof(d->lay.holders));
        obj_finish(o, 0);
    }
    send_dels(e, &d->lay);
    DL_UNLINK(e->dels, d);
    gw_timer_destroy(d->t);
    free(d);
}

static void
del_start(void *arg)
{
    struct gw_del *d = arg;
    struct gw_engine *e = d->e;
    DL_PUSH(e->dels, d);
    d->t = gw_timer_create(e->net, del_fire, d);
    if (!d->t) {
        del_fire(d);
        return;
    }
    gw_timer_arm(d->t, d->delay_ms);
}

static void
track_start(void *arg)
{
    struct gw_obj *o = arg;
    if (obj_find(o->e, o->lay.tenant, o->lay.object)) {
        obj_unref(o);
        return;
    }
    o->placed = 1;
    obj_link(o);
    obj_step(o);
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

/* ---- put ------------------------------------------------------------- */

static void
put_start(void *arg)
{
    struct gw_obj *o = arg;
    struct gw_engine *e = o->e;
    int rc = o->init_status;
    if (rc == 0 && e->stopping) {
        rc = CM_E_UNAVAIL;
    }
    if (rc == 0) {
        rc = choose_holders(o);
        if (rc < 0 && o->lay.nstripes == 0) {
            rc = 0; /* nothing to store: any holders do */
        }
    }
    if (rc < 0) {
        obj_finish(o, rc);
        return;
    }
    o->placed = 1;
    obj_link(o);
    if (o->bytes) {
        o->accounted = 1;
        atomic_fetch_add(&e->buffered_bytes, o->bytes);
        atomic_fetch_add(&e->buffered_objects, 1);
    }
    for (uint32_t j = 0; j < nchunks(&o->lay); j++) {
        o->slot[j].next_stripe = o->lay.nstripes;
        slot_send(o, j);
    }
    obj_step(o);
}

/*
 * Stripe geometry of a size-byte object (size > 0): as few stripes as
 * max_chunk allows, then chunks just big enough for them; erasure-coded
 * chunks are rounded up to 64 bytes (the code's vector width) unless that
 * would leave the last stripe without object bytes. Chunks of max_chunk
 * each would pad the last stripe to a whole one: a 10 MiB object at
 * RS(4+2) would take 18 MiB of chunks instead of 15.
 */
static void
stripe_geometry(const struct gw_engine *e, uint32_t k, uint64_t size, uint64_t *cs_out,
                uint64_t *ns_out)
{
    uint64_t max_chunk = e->cfg.max_chunk ? e->cfg.max_chunk : GW_DEFAULT_MAX_CHUNK;
    if (max_chunk > CM_WIRE_MAX_DATA) {
        max_chunk = CM_WIRE_MAX_DATA;
    }
    uint64_t ns = (size + k * max_chunk - 1) / (k * max_chunk);
    uint64_t cs = (size + ns * k - 1) / (ns * k);
    uint64_t aligned = (cs + 63) & ~(uint64_t)63;
    if (k > 1 && aligned <= max_chunk && (ns - 1) * k * aligned < size) {
        cs = aligned;
    }
    *cs_out = cs;
    *ns_out = ns;
}

uint64_t
gw_engine_put_room(const struct gw_engine *e, uint8_t k, uint64_t size)
{
    uint64_t cs, ns;
    if (size == 0 || k < 1) {
        return size;
    }
    stripe_geometry(e, k, size, &cs, &ns);
    return ns * k * cs;
}

/* Computes the layout, etag, parity and CRCs on the caller's thread. */
static int
put_prepare(struct gw_engine *e, struct gw_obj *o, uint64_t cap)
{
    struct gw_layout *l = &o->lay;
    uint64_t size = l->size;
    uint32_t k = l->k;
    l->etag = cm_crc64(0, o->data, (size_t)size);
    if (size == 0) {
        l->chunk_size = 0;
        l->nstripes = 0;
        l->persisted = full_mask(l);
        return 0;
    }
    uint64_t cs, ns;
    stripe_geometry(e, k, size, &cs, &ns);
    if (ns * nchunks(l) > UINT32_MAX) {
        return CM_E_TOOBIG;
    }
    uint64_t sb = cs * k;
    l->chunk_size = (uint32_t)cs;
    l->nstripes = (uint32_t)ns;
    uint64_t nidx = ns * nchunks(l);
    o->persisted = calloc(nidx, 1);
    o->crc = malloc(nidx * sizeof(*o->crc));
    if (!o->persisted || !o->crc) {
        return -ENOMEM;
    }
    o->bytes = size;
    if (ns * sb <= cap) {
        memset(o->data + size, 0, ns * sb - size); /* pad in place */
        o->bytes = ns * sb;
    } else {
        uint64_t start = (ns - 1) * sb;
        o->tail = cm_malloc_big(sb);
        if (!o->tail) {
            return -ENOMEM;
        }
        memcpy(o->tail, o->data + start, size - start);
        memset(o->tail + (size - start), 0, sb - (size - start));
        o->bytes += sb;
    }
    struct cm_ec *ec = NULL;
    if (k > 1 && l->m > 0) {
        ec = ec_get(e, (int)k, l->m);
        o->parity = cm_malloc_big((size_t)l->m * ns * cs);
        if (!ec || !o->parity) {
            return -ENOMEM;
        }
        o->bytes += (uint64_t)l->m * ns * cs;
    }
    for (uint32_t s = 0; s < ns; s++) {
        const uint8_t *d[CM_EC_MAX_K];
        uint8_t *p[CM_EC_MAX_M];
        for (uint32_t j = 0; j < k; j++) {
            d[j] = obj_chunk(o, s, j);
        }
        if (ec) {
            for (uint32_t i = 0; i < l->m; i++) {
                p[i] = (uint8_t *)obj_chunk(o, s, k + i);
            }
            cm_ec_encode(ec, cs, d, p);
        }
        for (uint32_t j = 0; j < nchunks(l); j++) {
            uint32_t c = (j < k || k > 1) ? cm_crc32c(0, obj_chunk(o, s, j), cs)
                                          : o->crc[wire_index(l, s, 0)];
            o->crc[wire_index(l, s, j)] = c;
        }
    }
    return 0;
}

/* ---- public API ------------------------------------------------------ */

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

void
gw_engine_put(struct gw_engine *e, uint32_t tenant, const uint32_t *placement, size_t nplace,
              uint8_t k, uint8_t m, void *data, uint64_t size, uint64_t cap, gw_put_cb cb,
              void *arg)
{
    struct gw_obj *o = obj_new(e);
    if (!o) {
        cm_free_big(data);
        struct gw_layout l = {.tenant = tenant};
        cb(arg, -ENOMEM, &l); /* cannot even queue: answer here */
        return;
    }
    o->data = data;
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
    if (gw_net_post(e->net, put_start, o) < 0) {
        o->state = OBJ_BUFFERED; /* no callback from obj_unref */
        cb(arg, -ENOMEM, &o->lay);
        obj_unref(o);
    }
}

void
gw_engine_get(struct gw_engine *e, const struct gw_layout *layout, uint64_t off, uint64_t len,
              gw_get_cb cb, void *arg)
{
    struct gw_get *g = calloc(1, sizeof(*g));
    if (!g) {
        cb(arg, -ENOMEM, NULL, 0);
        return;
    }
    g->e = e;
    g->lay = *layout;
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
    if (gw_net_post(e->net, get_start, g) < 0) {
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
        return;
    }
    d->e = e;
    d->lay = *layout;
    d->delay_ms = delay_ms;
    if (gw_net_post(e->net, del_start, d) < 0) {
        free(d);
    }
}

void
gw_engine_track(struct gw_engine *e, const struct gw_layout *layout)
{
    if (layout->nstripes == 0 || (layout->persisted & full_mask(layout)) == full_mask(layout) ||
        layout->k < 1 || layout->k > CM_EC_MAX_K || layout->m > CM_EC_MAX_M) {
        return;
    }
    struct gw_obj *o = obj_new(e);
    if (!o) {
        return;
    }
    o->state = OBJ_TRACKED;
    o->lay = *layout;
    uint64_t nidx = (uint64_t)layout->nstripes * nchunks(layout);
    o->persisted = calloc(nidx, 1);
    if (!o->persisted) {
        obj_unref(o);
        return;
    }
    for (uint32_t j = 0; j < nchunks(layout); j++) {
        o->slot[j].next_stripe = layout->nstripes;
        if (layout->persisted & BIT(j)) {
            for (uint32_t s = 0; s < layout->nstripes; s++) {
                mark_persisted(o, j, s);
            }
        }
    }
    o->reported = layout->persisted;
    if (gw_net_post(e->net, track_start, o) < 0) {
        obj_unref(o);
    }
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
        free(c);
    }
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
}

static void
engine_start(void *arg)
{
    struct gw_engine *e = arg;
    e->poll = gw_timer_create(e->net, engine_poll, e);
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
    while (e->gets) {
        struct gw_get *g = e->gets;
        get_cancel_fetches(g);
        if (g->status == 0) {
            g->status = CM_E_UNAVAIL;
        }
        get_complete(g);
    }
    while (e->objs) {
        obj_finish(e->objs, CM_E_UNAVAIL);
    }
    while (e->dels) {
        struct gw_del *d = e->dels;
        DL_UNLINK(e->dels, d);
        gw_timer_destroy(d->t);
        free(d);
    }
    gw_timer_destroy(e->poll);
    e->poll = NULL;
    cm_hmap_free(&e->objmap);
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
    cm_hmap_init(&e->objmap, 256);
    if (e->cfg.max_chunk == 0) {
        e->cfg.max_chunk = GW_DEFAULT_MAX_CHUNK;
    }
    if (e->cfg.io_timeout_ms <= 0) {
        e->cfg.io_timeout_ms = 5000;
    }
    e->on_layout = on_layout;
    e->arg = arg;
    pthread_mutex_init(&e->ec_lock, NULL);
    rc = gw_net_create(e->cfg.io_timeout_ms, &e->net);
    if (rc < 0) {
        pthread_mutex_destroy(&e->ec_lock);
        cm_hmap_free(&e->objmap);
        free(e);
        e = NULL;
        goto out;
    }
    gw_net_set_note_handler(e->net, engine_on_note, e);
    rc = gw_net_post(e->net, engine_start, e);
    if (rc < 0) {
        gw_engine_destroy(e);
        e = NULL;
        goto out;
    }
    *out = e;
out:
    return rc;
}

void
gw_engine_destroy(struct gw_engine *e)
{
    if (!e) {
        return;
    }
    gw_net_destroy(e->net, engine_fin, e);
    for (int k = 0; k <= CM_EC_MAX_K; k++) {
        for (int m = 0; m <= CM_EC_MAX_M; m++) {
            cm_ec_destroy(e->ecs[k][m]);
        }
    }
    pthread_mutex_destroy(&e->ec_lock);
    free(e);
}
