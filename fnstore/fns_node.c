/*
 * fns_node.c - the node's request pipeline; see fns_node.h for the diagram.
 *
 * Owns: the event loop, the listener and its connections, the FQ scheduler,
 * the chunk store, the COS pool, and every in-flight request (struct
 * fns_req, freed when answered). Loop thread only, except the fields under
 * `mu` (snapshots and pending weights) and the atomics (stats).
 *
 * Invariants: inflight counts requests created and not yet answered;
 * every request holds a conn reference; a request in the scheduler is
 * answered only after dequeue (dispatched), and complete() is called once
 * per dispatched request. del_seq counts DELs so a COS reload that raced a
 * DEL does not put the deleted chunk back in memory.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "fns_chunk.h"
#include "fns_conn.h"
#include "fns_cos.h"
#include "fns_loop.h"
#include "fns_node.h"
#include "fns_pack.h"
#include "fns_rate.h"
#include "fns_store.h"
#include "pol_fq.h"

#define FNS_TICK_NS (200u * 1000000u)
#define FNS_SHUTDOWN_DEADLINE_NS (30ull * 1000000000u)
#define FNS_RATE_BURST_S 0.05
#define FNS_NOTE_MAX 4096 /* records per PERSISTED notice */
#define FNS_NODE_ARENA_MIN ((size_t)64 << 10) /* smaller chunks: malloc */
#define FNS_TOMB_FLUSH_NS (1000ull * 1000000u) /* tombstones wait this long for a chunk write */

enum { FNS_OP_PUT, FNS_OP_GET, FNS_OP_DEL, FNS_OP_STAT, FNS_NOPS };
static const char *const fns_op_names[FNS_NOPS] = {"put", "get", "del", "stat"};

struct fns_req {
    struct pol_fq_item fq;
    struct fns_conn *conn; /* reference */
    struct cm_wire_hdr hdr;
    struct fns_chunk *chunk; /* PUT payload (reference) */
    uint64_t t0;
    int dispatched;
};

/* PERSISTED records gathered for one connection during a COS reap. */
struct fns_notes {
    struct fns_conn *conn; /* reference */
    uint8_t *buf;
    size_t n, cap;
};

struct fns_node {
    struct fns_node_cfg cfg;
    struct cm_cos *cos;
    struct fns_loop *loop;
    struct fns_loop_listener *listener;
    struct fns_conn_list conns;
    struct fns_loop_ev *ev_dispatch, *ev_rate, *ev_cos, *ev_stop, *ev_tick, *ev_weights;
    struct fns_loop_ev *ev_tombs; /* writes tombstones no chunk write carried */
    int tombs_armed;
    struct fns_loop_ev *ev_sigterm, *ev_sigint;
    const struct pol_fq_ops *fq_ops;
    struct pol_fq *fq;
    struct fns_store *store;
    struct fns_arena *arena; /* chunk memory of PUTs; NULL: malloc */
    struct fns_cos *pool;
    struct fns_pack_index *pack; /* small chunks persisted in COS segments */
    struct cm_reqstats *rs;
    struct fns_rate rate_ops, rate_bytes;
    int limited, rate_armed, stopping;
    uint64_t stop_deadline;
    uint64_t inflight;
    uint64_t del_seq;
    uint16_t port;
    struct fns_notes *notes; /* one per connection with records, during a reap */
    size_t nnotes, capnotes;

    atomic_uint_fast64_t used, nchunks, bad_frames;
    atomic_uint_fast64_t segments, packed, held; /* of the pack index, per tick */

    pthread_mutex_t mu;
    struct fns_node_tenant *snap; /* under mu */
    size_t nsnap, capsnap;
    uint32_t *w_tenants; /* pending weights, under mu */
    double *w_values;
    size_t nw;
};

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
    default:
        return -1;
    }
}

static void
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

/*
 * Answers req and frees it. chunk (borrowed; may be NULL) becomes the
 * payload. Completes the request in the scheduler if it was dispatched.
 */
static void
fns_node_answer(struct fns_node *n, struct fns_req *req, int status, uint16_t flags,
                struct fns_chunk *chunk)
{
    struct cm_wire_hdr resp = req->hdr;
    uint64_t now = cm_now_ns();
    uint64_t bytes = 0;
    int opi = fns_op_index(req->hdr.op);

    resp.op = (uint8_t)(req->hdr.op | CM_OP_RESPONSE);
    resp.status = status;
    resp.flags = flags;
    resp.incarnation = n->cfg.incarnation;
    resp.data_len = chunk != NULL ? chunk->len : 0;
    resp.data_crc = chunk != NULL ? chunk->crc : 0;
    fns_conn_send(req->conn, &resp, chunk);

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
    }
    if (opi >= 0) {
        cm_reqstats_record(n->rs, req->hdr.tenant, opi, status, bytes, now - req->t0);
    }
    if (status != 0 && status != CM_E_NOTFOUND) {
        CM_DEBUG("request failed tenant=%u req=%llx op=%u err=%s", req->hdr.tenant,
                 (unsigned long long)req->hdr.req_id, req->hdr.op, cm_errname(status));
    }
    fns_conn_unref(req->conn);
    fns_chunk_unref(req->chunk);
    free(req);
    n->inflight--;
}

/* A new COS job for req (may be NULL), stamped with the DEL sequence. */
static struct fns_cos_job *
fns_node_job(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key,
             struct fns_req *req)
{
    struct fns_cos_job *job = cm_calloc(1, sizeof(*job));

    job->op = op;
    job->key = *key;
    job->arg = req;
    job->tag = n->del_seq;
    return job;
}

static void
fns_node_job_free(struct fns_cos_job *job)
{
    if (job->arg2 != NULL) {
        fns_conn_unref(job->arg2);
    }
    fns_chunk_unref(job->chunk);
    free(job->tomb_targets);
    free(job);
}

/* notify: the connection to tell once a write is persisted (a reference
 * is taken), or NULL. */
static void
fns_node_submit(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key,
                struct fns_chunk *chunk, struct fns_req *req, struct fns_conn *notify)
{
    struct fns_cos_job *job = fns_node_job(n, op, key, req);

    if (chunk != NULL) {
        fns_chunk_ref(chunk);
        job->chunk = chunk;
    }
    if (notify != NULL) {
        fns_conn_ref(notify);
        job->arg2 = notify;
    }
    fns_cos_submit(n->pool, job);
}

/* A COS job on a packed chunk (read) or on a whole segment (delete). */
static void
fns_node_submit_packed(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key,
                       const struct fns_pack_loc *loc, struct fns_req *req)
{
    struct fns_cos_job *job = fns_node_job(n, op, key, req);

    job->loc = *loc;
    fns_cos_submit(n->pool, job);
}

/* Tombstones ride in the next segment of chunks; when none comes within
 * FNS_TOMB_FLUSH_NS they get a segment of their own (until then, a node
 * killed would bring their chunks back into its index). */
static void
fns_node_tombs_later(struct fns_node *n)
{
    if (!n->tombs_armed) {
        n->tombs_armed = 1;
        fns_loop_ev_after(n->ev_tombs, FNS_TOMB_FLUSH_NS);
    }
}

static void
fns_node_tombs_cb(void *arg)
{
    struct fns_node *n = arg;
    struct fns_key none = {0};

    n->tombs_armed = 0;
    fns_node_submit(n, FNS_COS_TOMBS, &none, NULL, NULL, NULL);
}

static void
fns_node_tomb(struct fns_node *n, const struct fns_key *key, uint64_t seg)
{
    fns_cos_tomb(n->pool, key, seg);
    fns_node_tombs_later(n);
}

/* Deletes segment seg from COS. Segment deletes all go to one worker (the
 * same key), so they run in the order issued: a held segment's delete
 * follows that of the segment it waited for. */
static void
fns_node_delete_segment(void *arg, uint64_t seg)
{
    struct fns_node *n = arg;
    struct fns_key none = {0};
    struct fns_pack_loc loc = {.seg = seg};

    fns_node_submit_packed(n, FNS_COS_DELETE, &none, &loc, NULL);
}

/* seg was forgotten by the index: delete it, and the held segments that
 * were waiting only for it. */
static void
fns_node_drop_segment(struct fns_node *n, uint64_t seg)
{
    fns_node_delete_segment(n, seg);
    if (fns_pack_index_held(n->pack) > 0) {
        (void)fns_pack_index_drop_held(n->pack, fns_node_delete_segment, n);
    }
}

/* GET or STAT of a chunk not in memory: from its segment, or its object. */
static void
fns_node_reload(struct fns_node *n, struct fns_req *req, const struct fns_key *key)
{
    struct fns_pack_loc loc;

    if (fns_pack_index_get(n->pack, key, &loc) != 0) {
        fns_node_submit(n, FNS_COS_READ, key, NULL, req, NULL);
    } else if (req->hdr.op == CM_OP_STAT) {
        fns_node_answer(n, req, 0, CM_WF_PERSISTED, NULL);
    } else {
        fns_node_submit_packed(n, FNS_COS_READ, key, &loc, req);
    }
}

/* Adds key to the PERSISTED notice for c (sent by fns_node_notes_flush). */
static void
fns_node_note(struct fns_node *n, struct fns_conn *c, const struct fns_key *key)
{
    struct cm_wire_note rec = {.tenant = key->tenant, .index = key->index, .object = key->object};
    struct fns_notes *nt = NULL;
    size_t i;

    if (fns_conn_is_closed(c)) {
        return;
    }
    for (i = 0; i < n->nnotes && nt == NULL; i++) {
        nt = n->notes[i].conn == c ? &n->notes[i] : NULL;
    }
    if (nt == NULL) {
        if (n->nnotes == n->capnotes) {
            n->capnotes = n->capnotes ? 2 * n->capnotes : 4;
            n->notes = cm_realloc(n->notes, n->capnotes * sizeof(*n->notes));
        }
        nt = &n->notes[n->nnotes++];
        memset(nt, 0, sizeof(*nt));
        fns_conn_ref(c);
        nt->conn = c;
    }
    if (nt->n == nt->cap) {
        nt->cap = nt->cap ? 2 * nt->cap : 64;
        nt->buf = cm_realloc(nt->buf, nt->cap * CM_WIRE_NOTE_LEN);
    }
    cm_wire_note_encode(&rec, nt->buf + nt->n++ * CM_WIRE_NOTE_LEN);
}

/* Sends every gathered notice, FNS_NOTE_MAX records per frame. */
static void
fns_node_notes_flush(struct fns_node *n)
{
    for (size_t i = 0; i < n->nnotes; i++) {
        struct fns_notes *nt = &n->notes[i];

        for (size_t off = 0; off < nt->n; off += FNS_NOTE_MAX) {
            size_t cnt = nt->n - off < FNS_NOTE_MAX ? nt->n - off : FNS_NOTE_MAX;
            const uint8_t *p = nt->buf + off * CM_WIRE_NOTE_LEN;
            struct cm_wire_hdr h = {
                .op = CM_OP_PERSISTED | CM_OP_RESPONSE,
                .incarnation = n->cfg.incarnation,
                .data_len = (uint32_t)(cnt * CM_WIRE_NOTE_LEN),
                .data_crc = cm_crc32c(0, p, cnt * CM_WIRE_NOTE_LEN),
            };

            fns_conn_notice(nt->conn, &h, p, cnt * CM_WIRE_NOTE_LEN);
        }
        fns_conn_unref(nt->conn);
        free(nt->buf);
    }
    n->nnotes = 0;
}

static uint16_t
fns_persisted_flag(const struct fns_chunk *c)
{
    return c->persisted ? CM_WF_PERSISTED : 0;
}

/* Runs one dispatched request. */
static void
fns_node_exec(struct fns_node *n, struct fns_req *req)
{
    struct fns_key key;
    struct fns_chunk *c;
    int rc;

    fns_key_of(&req->hdr, &key);
    switch (req->hdr.op) {
    case CM_OP_PUT:
        rc = fns_store_put(n->store, req->chunk);
        if (rc != 0) {
            CM_WARN("put refused tenant=%u req=%llx len=%u used=%llu err=%s", key.tenant,
                    (unsigned long long)req->hdr.req_id, req->chunk->len,
                    (unsigned long long)fns_store_used(n->store), cm_errname(rc));
            fns_node_answer(n, req, rc, 0, NULL);
            return;
        }
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
            fns_node_answer(n, req, 0, fns_persisted_flag(c), c);
        } else {
            fns_node_reload(n, req, &key);
        }
        return;
    case CM_OP_DEL: {
        uint64_t emptied, packed;

        (void)fns_store_del(n->store, &key);
        n->del_seq++;
        fns_node_publish(n);
        emptied = fns_pack_index_del(n->pack, &key, &packed);
        if (packed != 0) {
            fns_node_tomb(n, &key, packed);
        }
        if (emptied != 0) {
            fns_node_drop_segment(n, emptied);
        }
        if (!packed) {
            /* Its COS write may still be queued: the disk need not take a
             * chunk that is gone. Then its object, if any, goes too; the
             * answer does not wait for that, as a packed chunk's does not
             * wait for its tombstone (a COS backlog must not look like a
             * dead node to the gateway). */
            struct fns_cos_job *job = fns_cos_cancel_writes(n->pool, &key), *next;

            for (; job != NULL; job = next) {
                next = job->next;
                fns_node_job_free(job);
            }
            fns_node_submit(n, FNS_COS_DELETE, &key, NULL, NULL, NULL);
        }
        fns_node_answer(n, req, 0, 0, NULL);
        return;
    }
    case CM_OP_STAT:
        c = fns_store_get(n->store, &key);
        if (c != NULL) {
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

static void
fns_node_dispatch(void *arg)
{
    struct fns_node *n = arg;
    uint64_t now = cm_now_ns();
    struct pol_fq_item *it;
    struct fns_req *req;

    for (;;) {
        if (n->limited &&
            (!fns_rate_ready(&n->rate_ops, now) || !fns_rate_ready(&n->rate_bytes, now))) {
            uint64_t a = fns_rate_wait_ns(&n->rate_ops), b = fns_rate_wait_ns(&n->rate_bytes);

            if (!n->rate_armed && pol_fq_len(n->fq) > 0) {
                n->rate_armed = 1;
                fns_loop_ev_after(n->ev_rate, a > b ? a : b);
            }
            return;
        }
        it = n->fq_ops->dequeue(n->fq, now);
        if (it == NULL) {
            return;
        }
        req = (struct fns_req *)(void *)((char *)it - offsetof(struct fns_req, fq));
        req->dispatched = 1;
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

/* A COS read finished for req (GET or STAT). */
static void
fns_node_read_done(struct fns_node *n, struct fns_cos_job *job)
{
    struct fns_req *req = job->arg;
    struct fns_chunk *cur = fns_store_get(n->store, &job->key);

    if (job->status != 0) {
        if (cur != NULL) {
            /* A PUT landed while we looked in COS: memory is newer. */
            fns_node_answer(n, req, 0, fns_persisted_flag(cur),
                            req->hdr.op == CM_OP_GET ? cur : NULL);
        } else {
            fns_node_answer(n, req, job->status, 0, NULL);
        }
        return;
    }
    job->chunk->persisted = 1;
    if (req->hdr.op == CM_OP_STAT) {
        fns_node_answer(n, req, 0, CM_WF_PERSISTED, NULL);
        return;
    }
    if (cur == NULL && job->tag == n->del_seq) {
        int rc = fns_store_put(n->store, job->chunk);

        if (rc != 0) {
            CM_DEBUG("reloaded chunk not kept tenant=%u err=%s", job->key.tenant, cm_errname(rc));
        }
        fns_node_publish(n);
    }
    if (cur != NULL) {
        fns_node_answer(n, req, 0, (uint16_t)(fns_persisted_flag(cur) | CM_WF_FROM_COS), cur);
    } else {
        fns_node_answer(n, req, 0, CM_WF_PERSISTED | CM_WF_FROM_COS, job->chunk);
    }
}

/*
 * A write landed in segment job->loc.seg: index it if the chunk is still
 * the one held. A chunk deleted meanwhile gets a tombstone instead (a
 * replaced one is indexed by its newer write), and its segment is checked
 * once the whole reap is done (*maybe_empty).
 */
static void
fns_node_packed(struct fns_node *n, struct fns_cos_job *job, uint64_t *maybe_empty)
{
    struct fns_chunk *cur = fns_store_get(n->store, &job->key);
    uint64_t emptied;

    if (cur == job->chunk) {
        emptied = fns_pack_index_put(n->pack, &job->key, &job->loc);
        if (emptied != 0) {
            fns_node_drop_segment(n, emptied);
        }
        return;
    }
    if (cur == NULL) {
        fns_node_tomb(n, &job->key, job->loc.seg);
    }
    fns_pack_index_add_seg(n->pack, job->loc.seg);
    *maybe_empty = job->loc.seg;
}

static void
fns_node_cos_cb(void *arg)
{
    struct fns_node *n = arg;
    struct fns_cos_job *job, *next;
    uint64_t maybe_empty[64];
    size_t nempty = 0;

    for (job = fns_cos_reap(n->pool); job != NULL; job = next) {
        next = job->next;
        if (job->ntomb_targets > 0) { /* segment loc.seg carried tombstones */
            fns_pack_index_add_seg(n->pack, job->loc.seg);
            for (size_t i = 0; i < job->ntomb_targets; i++) {
                fns_pack_index_hold(n->pack, job->loc.seg, job->tomb_targets[i]);
            }
        }
        switch (job->op) {
        case FNS_COS_TOMBS:
            if (job->status != 0) {
                fns_node_tombs_later(n); /* they are queued again */
            } else if (job->loc.seg != 0 && nempty < 64) {
                maybe_empty[nempty++] = job->loc.seg; /* held while its targets live */
            }
            break;
        case FNS_COS_WRITE:
            if (job->status == 0) {
                job->chunk->persisted = 1;
                if (job->loc.seg != 0) {
                    uint64_t seg = 0;

                    fns_node_packed(n, job, &seg);
                    /* A batch's jobs are adjacent. Past 64 segments the
                     * check waits for the next replay (a restart). */
                    if (seg != 0 && nempty < 64 &&
                        (nempty == 0 || maybe_empty[nempty - 1] != seg)) {
                        maybe_empty[nempty++] = seg;
                    }
                }
                if (job->arg2 != NULL) {
                    fns_node_note(n, job->arg2, &job->key);
                }
            } else if (job->arg == NULL && !n->stopping &&
                       fns_store_get(n->store, &job->key) == job->chunk) {
                /* Acknowledged and still held: keep trying (each round
                 * backs off in the worker) until COS takes it. */
                CM_WARN("chunk not persisted yet, retrying tenant=%u object=%llx index=%u "
                        "err=%s",
                        job->key.tenant, (unsigned long long)job->key.object, job->key.index,
                        cm_errname(job->status));
                fns_node_submit(n, FNS_COS_WRITE, &job->key, job->chunk, NULL, job->arg2);
            } else {
                CM_ERROR("chunk not persisted tenant=%u object=%llx version=%llu index=%u "
                         "err=%s",
                         job->key.tenant, (unsigned long long)job->key.object,
                         (unsigned long long)job->key.version, job->key.index,
                         cm_errname(job->status));
            }
            if (job->arg != NULL) {
                fns_node_answer(n, job->arg, job->status, job->status == 0 ? CM_WF_PERSISTED : 0,
                                NULL);
            }
            break;
        case FNS_COS_READ:
            fns_node_read_done(n, job);
            break;
        case FNS_COS_DELETE:
            if (job->arg != NULL) {
                fns_node_answer(n, job->arg, job->status, 0, NULL);
            }
            break;
        }
        fns_node_job_free(job);
    }
    for (size_t i = 0; i < nempty; i++) {
        if (fns_pack_index_drop_if_empty(n->pack, maybe_empty[i])) {
            fns_node_drop_segment(n, maybe_empty[i]);
        }
    }
    fns_node_notes_flush(n);
}

static void
fns_node_cos_notify(void *arg)
{
    struct fns_node *n = arg;

    fns_loop_ev_wake(n->ev_cos);
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
    req->conn = c;
    req->hdr = *h;
    req->t0 = cm_now_ns();
    n->inflight++;
    if (h->incarnation != 0 && h->incarnation != n->cfg.incarnation) {
        CM_DEBUG("request for another incarnation tenant=%u req=%llx want=%u have=%u", h->tenant,
                 (unsigned long long)h->req_id, h->incarnation, n->cfg.incarnation);
    }
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
    if (fns_op_index(h->op) < 0) {
        free(payload);
        fns_node_answer(n, req, CM_E_PROTO, 0, NULL);
        return;
    }
    fns_key_of(h, &key);
    req->fq.tenant = h->tenant;
    if (h->op == CM_OP_PUT) {
        if (payload == NULL) {
            payload = cm_malloc(FNS_CHUNK_TAIL);
        }
        req->chunk = fns_chunk_adopt(&key, payload, h->data_len, h->data_crc);
        req->fq.est_bytes = h->data_len;
    } else {
        free(payload);
        if (h->op == CM_OP_GET && (cur = fns_store_get(n->store, &key)) != NULL) {
            req->fq.est_bytes = cur->len;
        }
    }
    rc = n->fq_ops->enqueue(n->fq, &req->fq, req->t0);
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

struct fns_snap_ctx {
    struct fns_node *n;
    size_t i;
};

/* ---- segment replay (startup) ------------------------------------------ */

struct seg_list {
    uint32_t node;
    uint64_t *seqs;
    size_t n, cap;
};

static int
fns_node_seg_found(void *arg, const char *name)
{
    struct seg_list *l = arg;
    uint64_t seq;

    if (fns_pack_parse_name(name, l->node, &seq) == 0) {
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->seqs = cm_realloc(l->seqs, l->cap * sizeof(*l->seqs));
        }
        l->seqs[l->n++] = seq;
    }
    return 0;
}

static int
fns_node_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
fns_node_delete_seg_now(void *arg, uint64_t seq)
{
    struct fns_node *n = arg;
    char name[FNS_PACK_NAME_MAX];

    fns_pack_name(name, sizeof(name), n->cfg.id, seq);
    (void)cm_cos_delete(n->cos, name);
}

/* Applies one segment to the index: its tombstones, then its chunks. */
static void
fns_node_replay_one(struct fns_node *n, uint64_t seq)
{
    char name[FNS_PACK_NAME_MAX];
    struct fns_pack_ent *ents;
    struct fns_key *tombs;
    size_t len, ne, nt, i;
    uint64_t from, emptied;
    void *blob;
    int rc;

    fns_pack_name(name, sizeof(name), n->cfg.id, seq);
    rc = cm_cos_get(n->cos, name, &blob, &len);
    if (rc == 0) {
        rc = fns_pack_decode(blob, len, len, &ents, &ne, &tombs, &nt);
        free(blob);
    }
    if (rc != 0) {
        CM_ERROR("cos segment unreadable, kept name=%s err=%s", name, cm_errname(rc));
        return;
    }
    fns_pack_index_add_seg(n->pack, seq);
    /* A segment its tombstones or newer chunks empty goes now: later
     * segments can only add chunks of their own. */
    for (i = 0; i < nt; i++) {
        emptied = fns_pack_index_del(n->pack, &tombs[i], &from);
        if (from != 0) {
            fns_pack_index_hold(n->pack, seq, from);
        }
        if (emptied != 0) {
            fns_node_delete_seg_now(n, emptied);
        }
    }
    for (i = 0; i < ne; i++) {
        struct fns_pack_loc loc = {.seg = seq, .off = ents[i].off, .len = ents[i].len};

        emptied = fns_pack_index_put(n->pack, &ents[i].key, &loc);
        if (emptied != 0) {
            fns_node_delete_seg_now(n, emptied);
        }
    }
    free(ents);
    free(tombs);
}

/* Rebuilds the packed-chunk index from this node's segments, deletes the
 * ones left empty, and turns packing on above the newest. */
static int
fns_node_replay(struct fns_node *n)
{
    struct seg_list l = {.node = n->cfg.id};
    char prefix[FNS_PACK_NAME_MAX];
    size_t i;
    int rc;

    snprintf(prefix, sizeof(prefix), "seg/n%u/", n->cfg.id);
    rc = cm_cos_list(n->cos, prefix, fns_node_seg_found, &l);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        CM_ERROR("cannot list cos segments prefix=%s err=%s", prefix, cm_errname(rc));
        free(l.seqs);
        return rc;
    }
    if (l.n > 1) {
        qsort(l.seqs, l.n, sizeof(*l.seqs), fns_node_cmp_u64);
    }
    for (i = 0; i < l.n; i++) {
        fns_node_replay_one(n, l.seqs[i]);
    }
    fns_pack_index_drop_empty(n->pack, fns_node_delete_seg_now, n);
    CM_INFO("cos segments replayed segments=%zu live=%zu chunks=%zu", l.n,
            fns_pack_index_segments(n->pack), fns_pack_index_chunks(n->pack));
    fns_cos_set_packing(n->pool, n->cfg.id, l.n ? l.seqs[l.n - 1] + 1 : 1, n->cfg.cos_linger_ms);
    free(l.seqs);
    return 0;
}

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

static void
fns_node_tick(void *arg)
{
    struct fns_node *n = arg;
    struct fns_snap_ctx ctx = {n, 0};
    uint64_t now = cm_now_ns();

    pthread_mutex_lock(&n->mu);
    pol_fq_foreach_tenant(n->fq, fns_node_snap_cb, &ctx);
    n->nsnap = ctx.i;
    pthread_mutex_unlock(&n->mu);
    atomic_store(&n->segments, fns_pack_index_segments(n->pack));
    atomic_store(&n->packed, fns_pack_index_chunks(n->pack));
    atomic_store(&n->held, fns_pack_index_held(n->pack));

    if (n->stopping) {
        fns_node_cos_cb(n);
        if (pol_fq_len(n->fq) == 0 && n->inflight == 0 && fns_cos_pending(n->pool) == 0 &&
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

static void
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

/*
 * Chunk memory: reserves room for twice the capacity (segments pinned by a
 * few live chunks) plus the warm ones; past that the arena falls back to
 * malloc, so the reservation bounds nothing but the fast path.
 */
static int
fns_node_arena_create(struct fns_node *n)
{
    struct fns_arena_cfg ac = {0};
    int rc;

    if (n->cfg.arena_segment == 0) {
        return 0;
    }
    ac.seg_bytes = n->cfg.arena_segment;
    ac.keep_segs = n->cfg.arena_keep;
    ac.min_alloc = FNS_NODE_ARENA_MIN;
    ac.reserve_bytes = 2 * n->cfg.capacity + ((size_t)n->cfg.arena_keep + 2) * ac.seg_bytes;
    rc = fns_arena_create(&ac, &n->arena);
    if (rc == -ENOMEM || rc == -EMFILE) {
        /* No address space for it (e.g. strict overcommit): chunks are
         * malloc'd, slower to fault in but otherwise the same. */
        CM_WARN("chunk arena unavailable, using malloc reserve=%llu err=%s",
                (unsigned long long)ac.reserve_bytes, cm_errname(rc));
        return 0;
    }
    if (rc != 0) {
        CM_ERROR("cannot create chunk arena segment=%llu err=%s",
                 (unsigned long long)ac.seg_bytes, cm_errname(rc));
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
    rc = n->fq_ops->create(&fqc, &n->fq);
    if (rc != 0) {
        goto out;
    }
    rc = fns_store_create(cfg->capacity, cfg->instances, &n->store);
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
    n->ev_cos = fns_loop_ev_new(n->loop, fns_node_cos_cb, n);
    n->ev_stop = fns_loop_ev_new(n->loop, fns_node_stop_cb, n);
    n->ev_tick = fns_loop_ev_new(n->loop, fns_node_tick, n);
    n->ev_weights = fns_loop_ev_new(n->loop, fns_node_weights_cb, n);
    n->ev_tombs = fns_loop_ev_new(n->loop, fns_node_tombs_cb, n);
    if (cfg->handle_signals) {
        n->ev_sigterm = fns_loop_ev_signal(n->loop, SIGTERM, fns_node_stop_cb, n);
        n->ev_sigint = fns_loop_ev_signal(n->loop, SIGINT, fns_node_stop_cb, n);
    }
    rc = fns_cos_create(cos, cfg->cos_threads, fns_node_cos_notify, n, &n->pool);
    if (rc != 0) {
        goto out;
    }
    n->pack = fns_pack_index_create();
    rc = fns_node_replay(n);
    if (rc != 0) {
        goto out;
    }
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
    CM_INFO("serving port=%u id=%u incarnation=%u sched=%s capacity=%llu instances=%u", n->port,
            n->cfg.id, n->cfg.incarnation, n->fq_ops->name, (unsigned long long)n->cfg.capacity,
            n->cfg.instances);
    fns_loop_ev_after(n->ev_tick, FNS_TICK_NS);
    return fns_loop_run(n->loop);
}

void
fns_node_stop(struct fns_node *n)
{
    fns_loop_ev_wake(n->ev_stop);
}

void
fns_node_destroy(struct fns_node *n)
{
    struct pol_fq_item *it;

    if (n == NULL) {
        return;
    }
    if (n->pool != NULL) {
        fns_cos_stop(n->pool);
        fns_node_cos_cb(n);
    }
    fns_loop_listener_free(n->listener);
    fns_conn_list_close_all(&n->conns);
    /* Anything still queued (deadline passed): answer into closed conns. */
    while (n->fq != NULL && (it = n->fq_ops->dequeue(n->fq, 0)) != NULL) {
        struct fns_req *req = (struct fns_req *)(void *)((char *)it - offsetof(struct fns_req, fq));

        req->dispatched = 1;
        fns_node_answer(n, req, CM_E_UNAVAIL, 0, NULL);
    }
    fns_cos_destroy(n->pool);
    fns_loop_ev_free(n->ev_dispatch);
    fns_loop_ev_free(n->ev_rate);
    fns_loop_ev_free(n->ev_cos);
    fns_loop_ev_free(n->ev_tombs);
    fns_loop_ev_free(n->ev_stop);
    fns_loop_ev_free(n->ev_tick);
    fns_loop_ev_free(n->ev_weights);
    fns_loop_ev_free(n->ev_sigterm);
    fns_loop_ev_free(n->ev_sigint);
    fns_loop_destroy(n->loop);
    if (n->fq_ops != NULL) {
        n->fq_ops->destroy(n->fq);
    }
    fns_store_destroy(n->store);
    fns_pack_index_destroy(n->pack);
    fns_arena_destroy(n->arena); /* chunks still referenced keep it alive */
    if (n->rs != NULL) {
        cm_reqstats_destroy(n->rs);
    }
    free(n->notes);
    free(n->snap);
    free(n->w_tenants);
    free(n->w_values);
    pthread_mutex_destroy(&n->mu);
    free(n);
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
