/*
 * fns_node.c - the node's lifecycle and its request pipeline (the diagram
 * is in fns_node.h): a frame becomes a struct fns_req, waits in the FQ
 * scheduler, is dispatched under the --cap-ops/--cap-bytes rates, runs
 * against the chunk store, and is answered. What a request needs from COS
 * is in fns_node_durable.c, the startup replay in fns_node_replay.c, the
 * figures heartbeats carry in fns_node_report.c; the state they share and
 * its invariants are in fns_node_impl.h.
 *
 * Threads: the loop thread (fns_node_run's caller), but fns_node_stop.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "fns_chunk.h"
#include "fns_conn.h"
#include "fns_cos.h"
#include "fns_ilog.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_pack.h"
#include "fns_rate.h"
#include "fns_store.h"
#include "pol_fq.h"

#define FNS_TICK_NS (200u * 1000000u)
#define FNS_SHUTDOWN_DEADLINE_NS (30ull * 1000000000u)
#define FNS_RATE_BURST_S 0.05
#define FNS_NODE_ARENA_MIN ((size_t)64 << 10) /* smaller chunks: malloc */

enum { FNS_OP_PUT, FNS_OP_GET, FNS_OP_DEL, FNS_OP_STAT, FNS_OP_META, FNS_NOPS };
static const char *const fns_op_names[FNS_NOPS] = {"put", "get", "del", "stat", "meta"};

static int
fns_op_index(uint8_t op)
{
    switch (op) {
    case CM_OP_PUT:
        return FNS_OP_PUT;
    case CM_OP_GET:
        return FNS_OP_GET;
    case CM_OP_DEL:
        return FNS_OP_DEL;
    case CM_OP_STAT:
        return FNS_OP_STAT;
    case CM_OP_META:
        return FNS_OP_META;
    default:
        return -1;
    }
}

void
fns_node_publish(struct fns_node *n)
{
    atomic_store(&n->used, fns_store_used(n->store));
    atomic_store(&n->nchunks, fns_store_nchunks(n->store));
}

static void
fns_key_of(const struct cm_wire_hdr *h, struct fns_key *k)
{
    k->tenant = h->tenant;
    k->object = h->object;
    k->version = h->obj_version;
    k->index = h->index;
}

/* A dispatched request leaves the bound: dispatch resumes if it waited. */
static void
fns_node_release(struct fns_node *n, struct fns_req *req)
{
    n->disp--;
    n->disp_bytes -= req->held;
    if (n->disp_paused) {
        n->disp_paused = 0;
        fns_loop_ev_wake(n->ev_dispatch);
    }
}

static void
fns_req_free(struct fns_node *n, struct fns_req *req)
{
    if (req->dispatched) {
        fns_node_release(n, req);
    }
    free(req);
}

/* req->view's last unref: the connection wrote the payload or dropped it. */
static void
fns_node_view_sent(struct fns_chunk *view)
{
    struct fns_req *req = CM_CONTAINER_OF(view, struct fns_req, view);

    fns_req_free(req->node, req);
}

void
fns_node_answer(struct fns_node *n, struct fns_req *req, int status, uint16_t flags,
                struct fns_chunk *chunk)
{
    struct cm_wire_hdr resp = req->hdr;
    struct fns_conn *conn = req->conn;
    uint64_t now = cm_now_ns();
    uint64_t bytes = 0;
    int opi = fns_op_index(req->hdr.op);

    resp.op = (uint8_t)(req->hdr.op | CM_OP_RESPONSE);
    resp.status = status;
    resp.flags = flags;
    /* Chunk answers name the instance (0: in none); the rest the node. */
    switch (req->hdr.op) {
    case CM_OP_GET:
        resp.incarnation = chunk != NULL && chunk->instance >= 0 ? chunk->tag : req->tag;
        break;
    case CM_OP_PUT:
    case CM_OP_STAT:
        resp.incarnation = req->tag;
        break;
    default:
        resp.incarnation = n->cfg.incarnation;
        break;
    }
    resp.data_len = chunk != NULL ? chunk->len : 0;
    resp.data_crc = chunk != NULL ? chunk->crc : 0;

    if (req->hdr.op == CM_OP_PUT) {
        bytes = req->hdr.data_len;
    } else if (chunk != NULL) {
        bytes = chunk->len;
    }
    if (req->dispatched) {
        n->fq_ops->complete(n->fq, &req->fq, bytes, now);
        if (n->limited) {
            fns_rate_charge(&n->rate_bytes, (double)bytes - (double)req->fq.charged_bytes);
        }
        /* From here the bound holds what the answer really moves. */
        n->disp_bytes = n->disp_bytes - req->held + bytes;
        req->held = bytes;
    }
    if (opi >= 0) {
        cm_reqstats_record(n->rs, req->hdr.tenant, opi, status, bytes, now - req->t0);
    }
    if (status != 0 && status != CM_E_NOTFOUND) {
        CM_DEBUG("request failed tenant=%u req=%llx op=%u err=%s", req->hdr.tenant,
                 (unsigned long long)req->hdr.req_id, req->hdr.op, cm_errname(status));
    }
    fns_chunk_unref(req->chunk);
    req->chunk = NULL;
    req->conn = NULL;
    n->inflight--;
    if (req->dispatched && chunk != NULL && chunk->len > 0 && !fns_conn_is_closed(conn)) {
        /* The payload goes out as a view, so the request stays counted in
         * the bound until the connection has written it. */
        fns_chunk_view_init(&req->view, chunk, fns_node_view_sent);
        fns_conn_send(conn, &resp, &req->view);
        fns_conn_unref(conn);
        fns_chunk_unref(&req->view); /* may free req */
        return;
    }
    fns_conn_send(conn, &resp, chunk);
    fns_conn_unref(conn);
    fns_req_free(n, req);
}

static struct fns_req *
fns_req_of(struct pol_fq_item *it)
{
    return CM_CONTAINER_OF(it, struct fns_req, fq);
}

struct fns_tstat *
fns_node_tstat(struct fns_node *n, uint32_t tenant)
{
    uint64_t h = cm_hmix64(tenant);
    struct cm_hnode *hn;
    struct fns_tstat *ts;

    for (hn = cm_hmap_first(&n->tstats, h); hn != NULL; hn = cm_hmap_next(hn, h)) {
        ts = CM_CONTAINER_OF(hn, struct fns_tstat, hn);
        if (ts->tenant == tenant) {
            return ts;
        }
    }
    ts = cm_calloc(1, sizeof(*ts));
    ts->tenant = tenant;
    ts->est_get = POL_FQ_GET_BYTES_INIT;
    cm_hmap_add(&n->tstats, &ts->hn, h);
    return ts;
}

/* Dominant cost of a request of `bytes`, as the policy counts it. */
static double
fns_node_cost(const struct fns_node *n, double bytes)
{
    double by_bytes = bytes * n->inv_bytes;

    return n->inv_ops > by_bytes ? n->inv_ops : by_bytes;
}

/* Runs one dispatched request. */
static void
fns_node_exec(struct fns_node *n, struct fns_req *req)
{
    struct fns_key key;
    struct fns_chunk *c;
    uint32_t slot;
    int rc, from, unwritten;

    fns_key_of(&req->hdr, &key);
    switch (req->hdr.op) {
    case CM_OP_PUT:
        rc = fns_node_sms_place(n, key.tenant, req->chunk->len, &slot);
        if (rc == 0) {
            rc = fns_store_put(n->store, req->chunk, slot);
        }
        if (rc != 0) {
            CM_WARN("put refused tenant=%u req=%llx len=%u used=%llu err=%s", key.tenant,
                    (unsigned long long)req->hdr.req_id, req->chunk->len,
                    (unsigned long long)fns_store_used(n->store), cm_errname(rc));
            fns_node_answer(n, req, rc, 0, NULL);
            return;
        }
        fns_node_sms_placed(n, req->chunk, slot);
        req->tag = req->chunk->tag;
        fns_node_publish(n);
        if (req->hdr.flags & CM_WF_COS_SYNC) {
            fns_node_submit(n, FNS_COS_WRITE, &key, req->chunk, req, NULL);
        } else {
            fns_node_submit(n, FNS_COS_WRITE, &key, req->chunk, NULL,
                            (req->hdr.flags & CM_WF_NOTIFY) ? req->conn : NULL);
            fns_node_answer(n, req, 0, 0, NULL);
        }
        return;
    case CM_OP_GET:
        c = fns_store_get(n->store, &key);
        if (c != NULL) {
            fns_node_sms_hit(n, c);
            fns_node_answer(n, req, 0, fns_persisted_flag(c), c);
        } else {
            fns_node_sms_miss(n, req, &key);
        }
        return;
    case CM_OP_DEL:
        c = fns_store_get(n->store, &key);
        unwritten = c != NULL && !c->persisted && fns_chunk_blob_len(c) <= FNS_PACK_BLOB_MAX;
        (void)fns_store_del(n->store, &key, &from);
        n->del_seq++;
        fns_node_sms_deleted(n, &key, from);
        fns_node_publish(n);
        fns_node_forget(n, &key, (req->hdr.flags & CM_WF_KEEP_COS) != 0, unwritten);
        fns_node_answer(n, req, 0, 0, NULL);
        return;
    case CM_OP_STAT:
        c = fns_store_get(n->store, &key);
        if (c != NULL) {
            req->tag = c->instance >= 0 ? c->tag : 0;
            fns_node_answer(n, req, 0, fns_persisted_flag(c), NULL);
        } else {
            fns_node_reload(n, req, &key);
        }
        return;
    default:
        fns_node_answer(n, req, CM_E_PROTO, 0, NULL);
        return;
    }
}

/* The bound on dispatched work (fns_node_impl.h) is reached. One request
 * always runs, however big. */
static int
fns_node_bound_reached(const struct fns_node *n)
{
    return (n->cfg.max_dispatched != 0 && n->disp >= n->cfg.max_dispatched) ||
           (n->cfg.max_dispatched_bytes != 0 && n->disp > 0 &&
            n->disp_bytes >= n->cfg.max_dispatched_bytes);
}

/* Takes a dequeued request out of the scheduler's hands. */
static struct fns_req *
fns_node_take(struct fns_node *n, struct pol_fq_item *it)
{
    struct fns_req *req = fns_req_of(it);

    req->dispatched = 1;
    req->held = it->charged_bytes;
    n->disp++;
    n->disp_bytes += req->held;
    return req;
}

static void
fns_node_dispatch(void *arg)
{
    struct fns_node *n = arg;
    uint64_t now = cm_now_ns();
    struct pol_fq_item *it;
    struct fns_req *req;

    while (pol_fq_len(n->fq) > 0) {
        if (fns_node_bound_reached(n)) {
            if (!n->disp_paused) {
                n->disp_paused = 1;
                atomic_fetch_add_explicit(&n->disp_pauses, 1, memory_order_relaxed);
            }
            return;
        }
        if (n->limited &&
            (!fns_rate_ready(&n->rate_ops, now) || !fns_rate_ready(&n->rate_bytes, now))) {
            uint64_t a = fns_rate_wait_ns(&n->rate_ops), b = fns_rate_wait_ns(&n->rate_bytes);

            if (!n->rate_armed) {
                n->rate_armed = 1;
                fns_loop_ev_after(n->ev_rate, a > b ? a : b);
            }
            return;
        }
        it = n->fq_ops->dequeue(n->fq, now);
        if (it == NULL) {
            return;
        }
        req = fns_node_take(n, it);
        cm_hist_observe(&req->ts->qwait, now > it->enq_ns ? now - it->enq_ns : 0);
        if (n->limited) {
            fns_rate_charge(&n->rate_ops, 1);
            fns_rate_charge(&n->rate_bytes, (double)it->charged_bytes);
        }
        fns_node_exec(n, req);
    }
}

static void
fns_node_rate_cb(void *arg)
{
    struct fns_node *n = arg;

    n->rate_armed = 0;
    fns_node_dispatch(n);
}

/* A LIST cursor: the top two bits say which index the entry in the
 * others is of: 0 memory, 1 the insertion log, 2 the packed-chunk index. */
#define FNS_LIST_SHIFT 62
#define FNS_LIST_POS(cur) ((cur) & ((1ull << FNS_LIST_SHIFT) - 1))

struct fns_list_page {
    uint8_t *buf; /* cap records, and room for a chunk's tail */
    size_t n, cap;
};

static void
fns_list_add(void *arg, const struct fns_key *k)
{
    struct fns_list_page *p = arg;
    struct cm_wire_note nt = {.tenant = k->tenant, .index = k->index, .object = k->object};

    if (p->n == p->cap) { /* a page's last hash chain took it past limit */
        p->cap *= 2;
        p->buf = cm_realloc(p->buf, p->cap * CM_WIRE_NOTE_LEN + FNS_CHUNK_TAIL);
    }
    cm_wire_note_encode(&nt, p->buf + p->n++ * CM_WIRE_NOTE_LEN);
}

/* One stretch of index i's keys from *pos: 1 while more are left. */
static int
fns_list_walk(struct fns_node *n, unsigned i, size_t *pos, size_t limit, struct fns_list_page *p)
{
    switch (i) {
    case 0:
        return fns_store_walk_keys(n->store, pos, limit, fns_list_add, p);
    case 1:
        return n->ilog != NULL && fns_ilog_walk_keys(n->ilog, pos, limit, fns_list_add, p);
    default:
        return n->pack != NULL && fns_pack_index_walk_keys(n->pack, pos, limit, fns_list_add, p);
    }
}

/* CM_OP_LIST: one page of the keys in memory, then of those in the
 * insertion log, then of the packed chunks (chunks only in COS included).
 * Not queued: a scrub's pages are few and small. */
static void
fns_node_list(struct fns_node *n, struct fns_req *req)
{
    uint64_t cur = req->hdr.object, next = CM_WIRE_LIST_END;
    size_t limit = req->hdr.index == 0 || req->hdr.index > CM_WIRE_LIST_MAX ? CM_WIRE_LIST_MAX
                                                                            : req->hdr.index;
    unsigned i = (unsigned)(cur >> FNS_LIST_SHIFT);
    size_t pos = (size_t)FNS_LIST_POS(cur);
    struct fns_list_page p = {cm_malloc(limit * CM_WIRE_NOTE_LEN + FNS_CHUNK_TAIL), 0, limit};
    struct fns_chunk *page = NULL;

    if (cur != CM_WIRE_LIST_END && i < 3) {
        if (fns_list_walk(n, i, &pos, limit, &p)) {
            next = (uint64_t)i << FNS_LIST_SHIFT | pos;
        } else if (i < 2) {
            next = (uint64_t)(i + 1) << FNS_LIST_SHIFT;
        }
    }
    if (p.n > 0) {
        size_t len = p.n * CM_WIRE_NOTE_LEN;
        page =
            fns_chunk_adopt(&(struct fns_key){0}, p.buf, (uint32_t)len, cm_crc32c(0, p.buf, len));
    } else {
        free(p.buf);
    }
    req->hdr.object = next;
    fns_node_answer(n, req, 0, 0, page);
    fns_chunk_unref(page);
}

static void
fns_node_frame(void *arg, struct fns_conn *c, const struct cm_wire_hdr *h, uint8_t *payload,
               int status)
{
    struct fns_node *n = arg;
    struct fns_req *req = cm_calloc(1, sizeof(*req));
    struct fns_chunk *cur;
    struct fns_key key;
    int rc;

    fns_conn_ref(c);
    req->node = n;
    req->conn = c;
    req->hdr = *h;
    req->t0 = cm_now_ns();
    n->inflight++;
    if (status != 0) {
        free(payload);
        fns_node_answer(n, req, status, 0, NULL);
        return;
    }
    if (h->op == CM_OP_PING) {
        free(payload);
        fns_node_answer(n, req, 0, 0, NULL);
        return;
    }
    if (h->op == CM_OP_LIST) {
        free(payload);
        fns_node_list(n, req);
        return;
    }
    if (fns_op_index(h->op) < 0) {
        free(payload);
        fns_node_answer(n, req, CM_E_PROTO, 0, NULL);
        return;
    }
    if (h->op == CM_OP_META) {
        /* A gateway's record of a version whose chunk PUTs the tenant's
         * turns paid for already: logged at once, never queued. In the
         * tenant's FIFO it would take the tenant's turns and hold its reads
         * back long after its PUTs were answered (m + 1 records per version,
         * at a weight-1 tenant's few turns a second). The log's COS writes
         * pace it: it is answered once its batch is durable. */
        fns_node_ilog_meta(n, req, payload);
        return;
    }
    fns_key_of(h, &key);
    /* The item as pol_fq.h's caller contract has it. */
    req->fq.tenant = h->tenant;
    if (h->op == CM_OP_PUT) {
        if (payload == NULL) {
            payload = cm_malloc(FNS_CHUNK_TAIL);
        }
        req->chunk = fns_chunk_adopt(&key, payload, h->data_len, h->data_crc);
        req->fq.est_bytes = h->data_len;
    } else {
        free(payload);
        if (h->op == CM_OP_GET) {
            req->fq.flags = POL_FQ_GET;
            if ((cur = fns_store_get(n->store, &key)) != NULL) {
                req->fq.est_bytes = cur->len;
            } else {
                req->fq.flags |= POL_FQ_UNSIZED; /* COS knows its size */
            }
        }
    }
    req->ts = fns_node_tstat(n, h->tenant);
    rc = n->fq_ops->enqueue(n->fq, &req->fq, req->t0);
    if (rc == 0 || rc == CM_E_BUSY) {
        req->ts->arrived_cost += fns_node_cost(
            n, (req->fq.flags & POL_FQ_UNSIZED) ? req->ts->est_get : (double)req->fq.est_bytes);
    }
    if (rc != 0) {
        fns_node_answer(n, req, rc, 0, NULL);
        return;
    }
    fns_loop_ev_wake(n->ev_dispatch);
}

static void
fns_node_closed(void *arg, struct fns_conn *c, int err)
{
    struct fns_node *n = arg;

    if (err == CM_E_PROTO || err == CM_E_CRC) {
        atomic_fetch_add(&n->bad_frames, 1);
    }
    CM_DEBUG("connection closed peer=%s err=%s", fns_conn_peer(c), cm_errname(err));
}

static const struct fns_conn_ops fns_node_conn_ops = {
    .frame = fns_node_frame,
    .closed = fns_node_closed,
};

static void
fns_node_accept(void *arg, int fd)
{
    struct fns_node *n = arg;
    struct fns_conn *c;

    if (n->stopping) {
        close(fd);
        return;
    }
    if (fns_conn_create(n->loop, fd, n->cfg.max_chunk, &fns_node_conn_ops, n, &n->conns, &c) == 0) {
        CM_DEBUG("connection accepted peer=%s", fns_conn_peer(c));
    }
}

static void
fns_node_tick(void *arg)
{
    struct fns_node *n = arg;
    uint64_t now = cm_now_ns();

    fns_node_report_tick(n);
    fns_cos_kick(n->pool); /* lazy deletes wait at most a tick */
    if (n->stopping) {
        fns_node_cos_cb(n);
        fns_ilog_flush(n->ilog); /* the drain does not wait out a linger */
        fns_node_ilog_kick(n);
        if (pol_fq_len(n->fq) == 0 && n->inflight == 0 && fns_cos_pending(n->pool) == 0 &&
            fns_cos_pending(n->logpool) == 0 && fns_ilog_pending(n->ilog) == 0 &&
            fns_conn_list_idle(&n->conns)) {
            CM_INFO("drained, stopping");
            fns_conn_list_close_all(&n->conns);
            fns_loop_break(n->loop);
            return;
        }
        if (now > n->stop_deadline) {
            CM_WARN("shutdown deadline passed inflight=%llu cos_pending=%zu",
                    (unsigned long long)n->inflight, fns_cos_pending(n->pool));
            fns_conn_list_close_all(&n->conns);
            fns_loop_break(n->loop);
            return;
        }
        fns_loop_ev_after(n->ev_tick, 10u * 1000000u);
        return;
    }
    fns_node_ilog_kick(n); /* a batch whose write failed goes again */
    fns_loop_ev_after(n->ev_tick, FNS_TICK_NS);
}

static void
fns_node_stop_cb(void *arg)
{
    struct fns_node *n = arg;

    if (n->stopping) {
        return;
    }
    n->stopping = 1;
    n->stop_deadline = cm_now_ns() + FNS_SHUTDOWN_DEADLINE_NS;
    CM_INFO("shutting down inflight=%llu cos_pending=%zu connections=%zu",
            (unsigned long long)n->inflight, fns_cos_pending(n->pool), n->conns.n);
    fns_loop_listener_free(n->listener);
    n->listener = NULL;
    fns_conn_list_stop_reading(&n->conns);
    if (n->tombs_armed) {
        fns_node_tombs_cb(n); /* written before the drain completes */
    }
    fns_loop_ev_after(n->ev_tick, 1000000u);
}

/*
 * Chunk memory: reserves room for twice the capacity (slabs pinned by a
 * few live chunks) plus the warm ones; past that the arena falls back to
 * malloc, so the reservation bounds nothing but the fast path.
 */
static int
fns_node_arena_create(struct fns_node *n)
{
    struct fns_arena_cfg ac = {0};
    int rc;

    if (n->cfg.arena_slab == 0) {
        return 0;
    }
    ac.slab_bytes = n->cfg.arena_slab;
    ac.keep_slabs = n->cfg.arena_keep;
    ac.min_alloc = FNS_NODE_ARENA_MIN;
    ac.reserve_bytes = 2 * n->cfg.capacity + ((size_t)n->cfg.arena_keep + 2) * ac.slab_bytes;
    rc = fns_arena_create(&ac, &n->arena);
    if (rc == -ENOMEM || rc == -EMFILE) {
        /* No address space for it (e.g. strict overcommit): chunks are
         * malloc'd, slower to fault in but otherwise the same. */
        CM_WARN("chunk arena unavailable, using malloc reserve=%llu err=%s",
                (unsigned long long)ac.reserve_bytes, cm_errname(rc));
        return 0;
    }
    if (rc != 0) {
        CM_ERROR("cannot create chunk arena segment=%llu err=%s", (unsigned long long)ac.slab_bytes,
                 cm_errname(rc));
        return rc;
    }
    n->conns.arena = n->arena;
    return 0;
}

int
fns_node_create(const struct fns_node_cfg *cfg, struct cm_cos *cos, struct fns_node **out)
{
    struct fns_node *n;
    struct pol_fq_cfg fqc = {0};
    int rc;

    *out = NULL;
    n = cm_calloc(1, sizeof(*n));
    n->cfg = *cfg;
    n->cfg.listen = NULL;
    n->cfg.sched = NULL;
    n->cos = cos;
    pthread_mutex_init(&n->mu, NULL);
    cm_hmap_init(&n->tstats, 16);
    cm_hmap_init(&n->writes, 256);
    cm_hmap_init(&n->pools, 16);
    atomic_init(&n->pub_disp, 0);
    atomic_init(&n->pub_disp_bytes, 0);
    atomic_init(&n->pub_queued, 0);
    atomic_init(&n->disp_pauses, 0);
    atomic_init(&n->used, 0);
    atomic_init(&n->segments, 0);
    atomic_init(&n->packed, 0);
    atomic_init(&n->held, 0);
    atomic_init(&n->nchunks, 0);
    atomic_init(&n->bad_frames, 0);
    n->fq_ops = pol_fq_find(cfg->sched);
    if (n->fq_ops == NULL) {
        CM_ERROR("unknown scheduler sched=%s", cfg->sched != NULL ? cfg->sched : "(null)");
        rc = CM_E_CONFIG;
        goto out;
    }
    fqc.queue_limit = cfg->queue_limit;
    fqc.cap_ops = cfg->cap_ops;
    fqc.cap_bytes = cfg->cap_bytes;
    n->inv_ops = 1.0 / (cfg->cap_ops > 0 ? cfg->cap_ops : POL_FQ_NOMINAL_OPS);
    n->inv_bytes = 1.0 / (cfg->cap_bytes > 0 ? cfg->cap_bytes : POL_FQ_NOMINAL_BYTES);
    rc = n->fq_ops->create(&fqc, &n->fq);
    if (rc != 0) {
        goto out;
    }
    rc = fns_node_arena_create(n);
    if (rc != 0) {
        goto out;
    }
    n->rs = cm_reqstats_create(fns_op_names, FNS_NOPS);
    n->limited = cfg->cap_ops > 0 || cfg->cap_bytes > 0;
    fns_rate_init(&n->rate_ops, cfg->cap_ops, FNS_RATE_BURST_S, cm_now_ns());
    fns_rate_init(&n->rate_bytes, cfg->cap_bytes, FNS_RATE_BURST_S, cm_now_ns());
    rc = fns_loop_create(&n->loop);
    if (rc != 0) {
        goto out;
    }
    n->ev_dispatch = fns_loop_ev_new(n->loop, fns_node_dispatch, n);
    n->ev_rate = fns_loop_ev_new(n->loop, fns_node_rate_cb, n);
    n->ev_cos = fns_loop_bell_new(n->loop, fns_node_cos_cb, n);
    n->ev_stop = fns_loop_ev_new(n->loop, fns_node_stop_cb, n);
    n->ev_tick = fns_loop_ev_new(n->loop, fns_node_tick, n);
    n->ev_weights = fns_loop_ev_new(n->loop, fns_node_weights_cb, n);
    n->ev_tombs = fns_loop_ev_new(n->loop, fns_node_tombs_cb, n);
    n->ev_ilog = fns_loop_ev_new(n->loop, fns_node_ilog_due_cb, n);
    if (cfg->handle_signals) {
        n->ev_sigterm = fns_loop_ev_signal(n->loop, SIGTERM, fns_node_stop_cb, n);
        n->ev_sigint = fns_loop_ev_signal(n->loop, SIGINT, fns_node_stop_cb, n);
    }
    rc = fns_cos_create(cos, cfg->cos_threads, fns_node_cos_notify, n, &n->pool);
    if (rc == 0) {
        rc = fns_cos_create(cos, 1, fns_node_cos_notify, n, &n->logpool);
    }
    if (rc == 0) {
        rc = fns_cos_create(cos, cfg->recovery_helpers > 0 ? (int)cfg->recovery_helpers : 1,
                            fns_node_cos_notify, n, &n->recpool);
    }
    if (rc != 0) {
        goto out;
    }
    rc = fns_node_sms_create(n);
    if (rc != 0) {
        goto out;
    }
    n->pack = fns_pack_index_create();
    fns_ilog_create(cfg->id, &n->ilog);
    fns_ilog_set_linger(n->ilog,
                        (uint64_t)(cfg->cos_linger_ms > 0 ? cfg->cos_linger_ms : 0) * 1000000u,
                        FNS_ILOG_BATCH_MAX);
    rc = fns_node_replay(n);
    if (rc == 0) {
        /* Recovery reads name segments by this node's id. */
        fns_cos_set_packing(n->recpool, cfg->id, 1, 0, 0);
        rc = fns_node_ilog_replay(n);
    }
    if (rc != 0) {
        goto out;
    }
    fns_node_sms_restart(n);
    fns_node_sms_report(n);
    rc = fns_loop_listen(n->loop, cfg->listen, fns_node_accept, n, &n->port, &n->listener);
    if (rc != 0) {
        CM_ERROR("cannot listen addr=%s err=%s", cfg->listen, cm_errname(rc));
        goto out;
    }
    CM_INFO("listening addr=%s port=%u", cfg->listen, n->port);
    *out = n;
    return 0;
out:
    fns_node_destroy(n);
    return rc;
}

int
fns_node_run(struct fns_node *n)
{
    CM_INFO("serving port=%u id=%u incarnation=%u sched=%s capacity=%llu instance_size=%llu "
            "slots=%u cache_bytes=%llu recovery_helpers=%u max_dispatched=%u "
            "max_dispatched_bytes=%llu",
            n->port, n->cfg.id, n->cfg.incarnation, n->fq_ops->name,
            (unsigned long long)n->cfg.capacity, (unsigned long long)n->cfg.inst_bytes,
            fns_store_nslots(n->store), (unsigned long long)n->cfg.cache_bytes,
            n->cfg.recovery_helpers, n->cfg.max_dispatched,
            (unsigned long long)n->cfg.max_dispatched_bytes);
    fns_loop_ev_after(n->ev_tick, FNS_TICK_NS);
    return fns_loop_run(n->loop);
}

void
fns_node_stop(struct fns_node *n)
{
    fns_loop_ev_wake(n->ev_stop);
}

static void
fns_node_tstat_free(void *arg, struct cm_hnode *hn)
{
    free(CM_CONTAINER_OF(hn, struct fns_tstat, hn));
}

void
fns_node_destroy(struct fns_node *n)
{
    struct pol_fq_item *it;

    if (n == NULL) {
        return;
    }
    n->destroying = 1; /* nothing new goes to the COS pools */
    if (n->pool != NULL) {
        fns_cos_stop(n->pool);
    }
    if (n->logpool != NULL) {
        fns_cos_stop(n->logpool);
    }
    if (n->recpool != NULL) {
        fns_cos_stop(n->recpool);
    }
    if (n->pool != NULL) {
        fns_node_cos_cb(n);
    }
    fns_loop_listener_free(n->listener);
    fns_conn_list_close_all(&n->conns);
    /* Anything still queued (deadline passed): answer into closed conns. */
    while (n->fq != NULL && (it = n->fq_ops->dequeue(n->fq, 0)) != NULL) {
        fns_node_answer(n, fns_node_take(n, it), CM_E_UNAVAIL, 0, NULL);
    }
    fns_cos_destroy(n->pool);
    fns_cos_destroy(n->logpool);
    fns_cos_destroy(n->recpool);
    fns_loop_ev_free(n->ev_dispatch);
    fns_loop_ev_free(n->ev_rate);
    fns_loop_ev_free(n->ev_cos);
    fns_loop_ev_free(n->ev_tombs);
    fns_loop_ev_free(n->ev_ilog);
    fns_loop_ev_free(n->ev_stop);
    fns_loop_ev_free(n->ev_tick);
    fns_loop_ev_free(n->ev_weights);
    fns_loop_ev_free(n->ev_sigterm);
    fns_loop_ev_free(n->ev_sigint);
    fns_loop_ev_free(n->ev_orders);
    fns_loop_ev_free(n->ev_reclaim);
    fns_loop_destroy(n->loop);
    if (n->fq_ops != NULL) {
        n->fq_ops->destroy(n->fq);
    }
    fns_node_sms_destroy(n);
    fns_ilog_destroy(n->ilog);
    fns_node_ilog_free(n);
    fns_node_writes_free(n);
    fns_pack_index_destroy(n->pack);
    fns_arena_destroy(n->arena); /* chunks still referenced keep it alive */
    if (n->rs != NULL) {
        cm_reqstats_destroy(n->rs);
    }
    cm_hmap_each(&n->tstats, fns_node_tstat_free, NULL);
    cm_hmap_free(&n->tstats);
    free(n->notes);
    free(n->snap);
    free(n->w_tenants);
    free(n->w_values);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
