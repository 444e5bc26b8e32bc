/*
 * gw_read.c - the engine's read path: stripe fetches and GETs.
 *
 *   GET ──▶ ≤ GW_GET_PARALLEL stripe fetches ──▶ assembled in one buffer ──▶ cb
 *   stripe fetch: RS policy choose ──▶ chunk GETs ──▶ wanted chunks in: copy
 *                 ▲ an error, STALE, or overdue (slow)   any k in: decode
 *                 └─ choose again (parity / another copy) fewer than k left:
 *                                                         STALE ones again,
 *                                                         CM_WF_COS_OK
 *                                                         none left: fail
 *
 * The RS policy (pol_rs.h) decides which holders to ask and when one is
 * slow, within the hedge budget (--hedge-budget: holders marked slow at
 * most that share of the chunk GETs sent; an overdue one beyond it is left
 * to answer, or to fail, and looked at again every 10 ms); this file asks,
 * times, decodes and tells the policy every send and its end. A read the
 * policy holds (-EAGAIN) waits in the engine's held list and is offered
 * again after the next chunk GET ends. The rebuild of a lost position
 * (gw_pbuf.c) reads through the same stripe fetches.
 * Each chunk GET carries the tag of the instance the chunk was placed in
 * (the layout's tags): a node answers STALE at once when that instance is
 * gone and the chunk is not in its memory, instead of reloading it from
 * COS; the read goes around it, and asks it again, allowed to reload
 * (CM_WF_COS_OK), only when the other positions cannot make k.
 *
 * Threads: the gw_net loop thread only. Invariants: a fetch's out bits are
 * exactly its reqs[] that are not NULL, each announced to the policy by
 * on_send and ended by one on_done; a response never lands in a buffer
 * after the fetch began to decode (its requests are cancelled first).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_net.h"

/* An overdue holder the hedge budget kept: looked at again this soon. */
#define GW_HEDGE_RETRY_NS 10000000ull

/* ---- held reads ------------------------------------------------------ */

static void
held_push(struct gw_sfetch *f)
{
    struct gw_engine *e = f->e;
    if (f->held) {
        return;
    }
    f->held = 1;
    f->hnext = NULL;
    f->hprev = e->held_tail;
    if (e->held_tail) {
        e->held_tail->hnext = f;
    } else {
        e->held_head = f;
    }
    e->held_tail = f;
    e->nheld++;
}

static void
held_unlink(struct gw_sfetch *f)
{
    struct gw_engine *e = f->e;
    if (!f->held) {
        return;
    }
    if (f->hprev) {
        f->hprev->hnext = f->hnext;
    } else {
        e->held_head = f->hnext;
    }
    if (f->hnext) {
        f->hnext->hprev = f->hprev;
    } else {
        e->held_tail = f->hprev;
    }
    f->hprev = f->hnext = NULL;
    f->held = 0;
    e->nheld--;
}

/* ---- the policy's state for /metrics ---------------------------------- */

static void
rs_snap_add(void *arg, const struct pol_rs_peer *p)
{
    struct gw_rs_snap *s = arg;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct pol_rs_peer *np = realloc(s->p, cap * sizeof(*np));
        if (!np) {
            return; /* a partial snapshot */
        }
        s->p = np;
        s->cap = cap;
    }
    s->p[s->n++] = *p;
}

/* At most once a second: the policy's peers, built without the lock (no
 * lock is held across a call into the policy), then swapped in. */
static void
rs_snapshot(struct gw_engine *e, uint64_t now)
{
    if (!e->rs_ops->peers || (e->rs_snap_at != 0 && now - e->rs_snap_at < 1000000000u)) {
        return;
    }
    e->rs_snap_at = now;
    e->rs_next.n = 0;
    e->rs_ops->peers(e->rs, rs_snap_add, &e->rs_next);
    pthread_mutex_lock(&e->rs_lock);
    struct gw_rs_snap t = e->rs_snap;
    e->rs_snap = e->rs_next;
    e->rs_next = t;
    pthread_mutex_unlock(&e->rs_lock);
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

/* The chunk GET of position i has ended: the policy hears of it, and held
 * reads may now find room. */
static void
sfetch_ended(struct gw_sfetch *f, uint32_t i, enum pol_rs_outcome outcome, uint64_t now)
{
    struct gw_engine *e = f->e;
    f->reqs[i] = NULL;
    f->v.out &= ~GW_BIT(i);
    f->v.slow &= ~GW_BIT(i);
    e->rs_out--;
    e->rs_ops->on_done(e->rs, f->lay->tenant, f->lay->holders[i], f->lay->chunk_size,
                       now - f->asked_ns[i], outcome, now);
    rs_snapshot(e, now);
    if (e->held_head && !e->stopping) {
        gw_timer_arm(e->kick, 0);
    }
}

static void sfetch_progress(struct gw_sfetch *f, uint64_t now);

static void
sfetch_on_chunk(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct gw_sfetch_ctx *ctx = arg;
    struct gw_sfetch *f = ctx->f;
    uint32_t i = ctx->pos;
    int st = status ? status : rsp->status;
    if (st == 0 && rsp->data_len != f->lay->chunk_size) {
        st = CM_E_PROTO;
    }
    uint64_t now = cm_now_ns();
    /* STALE: the node is fine, the chunk's instance is gone. It fails the
     * position like any error (the policy reads around it), but is no
     * sign of a slow or failing node: ended as cancelled, so no policy
     * shrinks that node's window or takes its quick answer for an RTT. */
    sfetch_ended(f, i,
                 st == 0            ? POL_RS_ANSWERED
                 : st == CM_E_STALE ? POL_RS_CANCELED
                                    : POL_RS_FAILED,
                 now);
    if (st == 0) {
        f->v.present |= GW_BIT(i);
    } else if (st == CM_E_STALE && !(f->late & GW_BIT(i))) {
        f->v.failed |= GW_BIT(i);
        f->stale |= GW_BIT(i);
        atomic_fetch_add(&f->e->stale_chunks, 1);
        CM_DEBUG("gateway chunk stale tenant=%u object=%016llx index=%u node=%u tag=%08x",
                 f->lay->tenant, (unsigned long long)f->lay->object,
                 gw_stripe_index(f->lay, f->stripe, i), f->lay->holders[i],
                 gw_layout_tag(f->lay, gw_stripe_index(f->lay, f->stripe, i)));
    } else {
        f->v.failed |= GW_BIT(i);
        f->saw_busy |= st == CM_E_BUSY;
        CM_DEBUG("gateway chunk get failed tenant=%u object=%016llx index=%u node=%u err=%s",
                 f->lay->tenant, (unsigned long long)f->lay->object,
                 gw_stripe_index(f->lay, f->stripe, i), f->lay->holders[i], cm_errname(st));
    }
    sfetch_progress(f, now);
}

static int
sfetch_launch(struct gw_sfetch *f, uint32_t i, uint64_t now)
{
    struct gw_engine *e = f->e;
    const struct gw_layout *l = f->lay;
    uint8_t *buf = sfetch_buf(f, i);
    if (!buf) {
        f->v.failed |= GW_BIT(i);
        f->saw_nomem = 1;
        return -ENOMEM;
    }
    f->ctx[i].f = f;
    f->ctx[i].pos = i;
    uint32_t idx = gw_stripe_index(l, f->stripe, i);
    struct gw_net_send s = {
        .hdr = {.op = CM_OP_GET,
                .flags = (f->late & GW_BIT(i)) ? CM_WF_COS_OK : 0,
                .tenant = l->tenant,
                .object = l->object,
                .index = idx,
                .incarnation = gw_layout_tag(l, idx)},
        .dst = buf,
        .dst_cap = l->chunk_size,
        .done = sfetch_on_chunk,
        .arg = &f->ctx[i],
    };
    int rc = gw_net_send(e->net, l->holders[i], &s, &f->reqs[i]);
    if (rc < 0) {
        f->v.failed |= GW_BIT(i);
        f->saw_nomem |= rc == -ENOMEM;
        return rc;
    }
    if (f->nlaunch++ == 0) {
        f->first_pos = (int)i;
        f->v.start_ns = now;
    }
    if (f->late & GW_BIT(i)) {
        atomic_fetch_add(&e->late_reads, 1);
    }
    f->asked_ns[i] = now;
    f->v.out |= GW_BIT(i);
    e->rs_out++;
    e->rs_ops->on_send(e->rs, l->tenant, l->holders[i], l->chunk_size, now);
    pol_rs_budget_sent(&e->hedge);
    return 0;
}

/* Stops every request, the slow timer, and holding. */
static void
sfetch_cancel_reqs(struct gw_sfetch *f)
{
    uint64_t now = 0;
    for (uint32_t i = 0; i < gw_stripe_n(f->lay); i++) {
        if (f->reqs[i]) {
            gw_net_cancel(f->e->net, f->reqs[i]);
            now = now ? now : cm_now_ns();
            sfetch_ended(f, i, POL_RS_CANCELED, now);
        }
    }
    if (f->slow_timer) {
        gw_timer_destroy(f->slow_timer);
        f->slow_timer = NULL;
        f->slow_at = 0;
    }
    held_unlink(f);
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
    uint8_t *chunks[GW_MAX_HOLDERS];
    struct cm_ec *ec = NULL;
    for (uint32_t i = 0; i < gw_stripe_n(l); i++) {
        chunks[i] = NULL;
        if ((f->v.present | f->v.want) & GW_BIT(i)) {
            chunks[i] = sfetch_buf(f, i);
            if (!chunks[i]) {
                return -ENOMEM;
            }
        }
    }
    if (l->k > 1) {
        ec = gw_engine_ec(f->e, l->k, l->m);
        if (!ec) {
            return -ENOMEM;
        }
        f->served_by_backup = 1;
    } else if (__builtin_ctzll(f->v.present) != f->first_pos) {
        f->served_by_backup = 1;
    }
    return gw_stripe_decode(l, ec, chunks, f->v.present);
}

/* Asks the holders the policy chooses, unless every missing wanted chunk
 * is already on its way from a holder that is not slow. */
static void
sfetch_fill(struct gw_sfetch *f, uint64_t now)
{
    struct gw_engine *e = f->e;
    struct pol_rs_view *v = &f->v;
    for (;;) {
        uint64_t missing = v->want & ~v->present, ask = 0, bit;
        if ((missing & ~(v->out & ~v->slow)) == 0) {
            return;
        }
        uint64_t cand = gw_stripe_all(f->lay) & ~(v->present | v->out | v->failed | v->excl);
        v->usable = 0;
        for (uint64_t c = cand; c; c &= c - 1) {
            if (gw_net_node_usable(e->net, v->holders[__builtin_ctzll(c)])) {
                v->usable |= c & -c;
            }
        }
        if (e->rs_ops->choose(e->rs, v, now, cm_random_u64(), &ask) == -EAGAIN) {
            if (e->rs_out > 0 && e->kick) {
                held_push(f); /* an on_done will come and offer it again */
            }
            return;
        }
        ask &= v->usable & cand;
        int failed = 0;
        for (bit = ask; bit; bit &= bit - 1) {
            failed |= sfetch_launch(f, (uint32_t)__builtin_ctzll(bit), now) < 0;
        }
        if (!failed) {
            return;
        }
    }
}

/*
 * Gives the positions answered STALE back to the policy, to be asked again
 * with CM_WF_COS_OK (the node reloads from COS), once the other positions
 * cannot make k any more: present, asked, or not yet asked on a usable
 * node. force: whenever some are left (the read would fail otherwise).
 * Returns whether any was given back.
 */
static int
sfetch_late(struct gw_sfetch *f, int force)
{
    struct pol_rs_view *v = &f->v;
    uint64_t redo = f->stale & ~f->late;
    if (!redo) {
        return 0;
    }
    if (!force) {
        uint64_t avail = v->present | v->out;
        uint64_t cand = gw_stripe_all(f->lay) & ~(v->present | v->out | v->failed | v->excl);
        for (uint64_t c = cand; c; c &= c - 1) {
            if (gw_net_node_usable(f->e->net, v->holders[__builtin_ctzll(c)])) {
                avail |= c & -c;
            }
        }
        if (__builtin_popcountll(avail) >= f->lay->k) {
            return 0;
        }
    }
    v->failed &= ~redo;
    f->late |= redo;
    return 1;
}

static void sfetch_on_slow(void *arg);

/* Arms the slow timer for next (0: none). 0 or -ENOMEM. */
static int
sfetch_arm(struct gw_sfetch *f, uint64_t now, uint64_t next)
{
    if (next == f->slow_at) {
        return 0;
    }
    f->slow_at = next;
    if (next == 0) {
        gw_timer_stop(f->slow_timer);
        return 0;
    }
    if (!f->slow_timer) {
        f->slow_timer = gw_timer_create(f->e->net, sfetch_on_slow, f);
        if (!f->slow_timer) {
            f->slow_at = 0;
            return -ENOMEM;
        }
    }
    uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
    gw_timer_arm(f->slow_timer, ms < INT_MAX ? (int)ms : INT_MAX);
    return 0;
}

/* Asks more holders while some are overdue, then waits: 0, or the status
 * the fetch fails with. */
static int
sfetch_step(struct gw_sfetch *f, uint64_t now)
{
    struct gw_engine *e = f->e;
    uint64_t next, due;
    for (;;) {
        sfetch_late(f, 0);
        sfetch_fill(f, now);
        next = 0;
        due = e->rs_ops->overdue(e->rs, &f->v, now, &next) & f->v.out & ~f->v.slow;
        if (due && e->cfg.hedge_pct > 0) {
            uint64_t ok = pol_rs_budget_take(&e->hedge, due);
            if (ok != due) { /* the rest answer, or are looked at again soon */
                uint64_t newly = due & ~ok & ~f->kept;
                f->kept |= newly;
                atomic_fetch_add(&e->hedges_denied, (uint64_t)__builtin_popcountll(newly));
                if (next == 0 || next > now + GW_HEDGE_RETRY_NS) {
                    next = now + GW_HEDGE_RETRY_NS;
                }
            }
            due = ok;
        }
        if (due) {
            atomic_fetch_add(&e->hedges, (uint64_t)__builtin_popcountll(due));
            f->v.slow |= due;
            continue;
        }
        if (f->v.out == 0 && !f->held && sfetch_late(f, 1)) {
            continue;
        }
        break;
    }
    if (f->v.out == 0 && !f->held) {
        return f->saw_nomem ? -ENOMEM : f->saw_busy ? CM_E_BUSY : CM_E_UNAVAIL;
    }
    return sfetch_arm(f, now, next);
}

static void
sfetch_progress(struct gw_sfetch *f, uint64_t now)
{
    if (f->finished) {
        return;
    }
    if ((f->v.want & ~f->v.present) == 0) {
        sfetch_finish(f, 0);
        return;
    }
    if (__builtin_popcountll(f->v.present) >= f->lay->k) {
        sfetch_cancel_reqs(f); /* no late response may land in a buffer we decode into */
        sfetch_finish(f, sfetch_decode(f));
        return;
    }
    int rc = sfetch_step(f, now);
    if (rc < 0) {
        sfetch_finish(f, rc);
    }
}

static void
sfetch_on_slow(void *arg)
{
    struct gw_sfetch *f = arg;
    f->slow_at = 0;
    sfetch_progress(f, cm_now_ns());
}

void
gw_read_kick(void *arg)
{
    struct gw_engine *e = arg;
    /* Those held again while offered wait for the next kick. */
    for (size_t n = e->nheld; n > 0 && e->held_head; n--) {
        struct gw_sfetch *f = e->held_head;
        held_unlink(f);
        sfetch_progress(f, cm_now_ns());
    }
}

void
gw_sfetch_free(struct gw_sfetch *f)
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

int
gw_sfetch_start(struct gw_engine *e, const struct gw_layout *l, uint32_t s, uint64_t want,
                uint64_t excl, uint8_t *const *bufs, gw_sfetch_done_fn done, void *arg,
                struct gw_sfetch **out)
{
    struct gw_sfetch *f = calloc(1, sizeof(*f));
    *out = NULL;
    if (!f) {
        return -ENOMEM;
    }
    f->e = e;
    f->lay = l;
    f->stripe = s;
    f->done = done;
    f->arg = arg;
    f->first_pos = -1;
    f->v.tenant = l->tenant;
    f->v.weight = gw_engine_weight(e, l->tenant);
    f->v.k = l->k;
    f->v.n = (uint8_t)gw_stripe_n(l);
    f->v.holders = l->holders;
    f->v.want = want;
    f->v.excl = excl;
    f->v.asked_ns = f->asked_ns;
    for (uint32_t i = 0; i < gw_stripe_n(l); i++) {
        f->bufs[i] = bufs ? bufs[i] : NULL;
    }
    /* A fetch that cannot start fails here, synchronously, so done()
     * never runs inside gw_sfetch_start. */
    int rc = sfetch_step(f, cm_now_ns());
    if (rc < 0) {
        gw_sfetch_free(f);
        return rc;
    }
    *out = f;
    return 0;
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
        gw_sfetch_free(f);
        g->inflight--;
    }
}

/* Object bytes [lo, hi) of data chunk i in stripe s, clipped to the range. */
static int
get_span(const struct gw_get *g, uint32_t s, uint32_t i, uint64_t *co, uint64_t *lo, uint64_t *hi)
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
    gw_sfetch_free(f);
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
            want |= GW_BIT(i);
            if (lo == co && hi == co + g->lay.chunk_size) {
                bufs[i] = g->buf + (co - g->off);
            }
        }
        struct gw_sfetch *f;
        int rc = gw_sfetch_start(g->e, &g->lay, s, want, 0, bufs, get_fetched, g, &f);
        if (rc < 0) {
            g->status = rc;
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

void
gw_read_start(void *arg)
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

void
gw_read_stop(struct gw_engine *e)
{
    while (e->gets) {
        struct gw_get *g = e->gets;
        get_cancel_fetches(g);
        if (g->status == 0) {
            g->status = CM_E_UNAVAIL;
        }
        get_complete(g);
    }
}
