/*
 * fns_node_durable.c - what the node's requests need from COS: write, read
 * and delete jobs on the COS pool and their reap on the loop thread, the
 * persisted flag, PERSISTED notices, reloads of chunks not in memory, and
 * the packed chunks' tombstones and held segments (see fns_pack.h); the
 * segment appended to is kept until records go to a newer one.
 *
 * Threads: loop thread, but fns_node_cos_notify (a COS worker). Invariants:
 * a job's req is answered once, when the job is reaped; a packed chunk is
 * indexed only while the store still holds the chunk its write carried, so
 * a DEL is never undone; segment deletes all run on one worker, in order;
 * a key's object is deleted only while no small write of it is on the
 * pool (writes), so the delete cannot overtake one that went alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_wire.h"
#include "fns_cos.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_pack.h"
#include "fns_store.h"

#define FNS_NOTE_MAX 4096                      /* records per PERSISTED notice */
#define FNS_TOMB_FLUSH_NS (1000ull * 1000000u) /* tombstones wait this long for a chunk write */

/* PERSISTED records gathered for one connection during a COS reap. */
struct fns_notes {
    struct fns_conn *conn; /* reference */
    uint8_t *buf;
    size_t n, cap;
};

/*
 * Small writes of a key on the packing worker (worker 0), while its DEL's
 * unlink runs on the worker the key hashes to. So that a DEL never
 * unlinks before such a write is done (one that fell back to an object of
 * its own would be left behind), nor when no write of the key made an
 * object, the loop thread counts them per key: a DEL while some are out
 * only marks the key, and the last one's reap unlinks what went to an
 * object of its own. A key whose write went to its own object stays known
 * until a DEL unlinks it.
 */
struct fns_wr {
    struct cm_hnode hn;
    struct fns_key key;
    uint32_t writing; /* small writes submitted and not yet reaped */
    uint8_t deleted;  /* a DEL came while writing > 0 */
    uint8_t own;      /* a write of it went to its own object (its segment failed) */
};

static int
fns_node_small(const struct fns_chunk *c)
{
    return c != NULL && fns_chunk_blob_len(c) <= FNS_PACK_BLOB_MAX;
}

static struct fns_wr *
fns_node_wr(struct fns_node *n, const struct fns_key *key, int add)
{
    uint64_t h = fns_key_hash(key);
    struct fns_wr *e;

    for (struct cm_hnode *hn = cm_hmap_first(&n->writes, h); hn; hn = cm_hmap_next(hn, h)) {
        e = CM_CONTAINER_OF(hn, struct fns_wr, hn);
        if (fns_key_eq(&e->key, key)) {
            return e;
        }
    }
    if (!add) {
        return NULL;
    }
    e = cm_calloc(1, sizeof(*e));
    e->key = *key;
    cm_hmap_add(&n->writes, &e->hn, h);
    return e;
}

static void
fns_node_wr_drop(struct fns_node *n, struct fns_wr *e)
{
    cm_hmap_del(&n->writes, &e->hn);
    free(e);
}

static void
fns_node_wr_free(void *arg, struct cm_hnode *hn)
{
    (void)arg;
    free(CM_CONTAINER_OF(hn, struct fns_wr, hn));
}

void
fns_node_writes_free(struct fns_node *n)
{
    cm_hmap_each(&n->writes, fns_node_wr_free, NULL);
    cm_hmap_free(&n->writes);
}

/* A small write of e's key left the pool (reaped or cancelled); own: it
 * made an object of its own. After the last one, a key deleted meanwhile
 * loses that object. */
static void
fns_node_wr_done(struct fns_node *n, struct fns_wr *e, int own)
{
    struct fns_key key = e->key;

    e->writing--;
    e->own |= (uint8_t)own;
    if (e->writing > 0) {
        return;
    }
    if (e->own && fns_store_get(n->store, &key) != NULL) {
        e->deleted = 0; /* put again since: the object is the new chunk's */
        return;
    }
    own = e->deleted && e->own;
    fns_node_wr_drop(n, e);
    if (own) {
        fns_node_submit(n, FNS_COS_DELETE, &key, NULL, NULL, NULL);
    }
}

/* A new COS job for req (may be NULL), stamped with the DEL sequence. */
static struct fns_cos_job *
fns_node_job(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key, struct fns_req *req)
{
    struct fns_cos_job *job = cm_calloc(1, sizeof(*job));

    job->op = op;
    job->key = *key;
    job->arg = req;
    job->tag = n->del_seq;
    job->lazy = op == FNS_COS_DELETE && req == NULL; /* the DEL was answered at once */
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
    if (job->op == FNS_COS_GET_OBJ) {
        free(job->buf);
    }
    free(job);
}

void
fns_node_submit(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key,
                struct fns_chunk *chunk, struct fns_req *req, struct fns_conn *notify)
{
    struct fns_cos_job *job = fns_node_job(n, op, key, req);

    if (chunk != NULL) {
        fns_chunk_ref(chunk);
        job->chunk = chunk;
    }
    if (op == FNS_COS_WRITE && fns_node_small(chunk)) {
        fns_node_wr(n, key, 1)->writing++;
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

void
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
void
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

void
fns_node_forget(struct fns_node *n, const struct fns_key *key, int keep_cos, int unwritten)
{
    uint64_t emptied, packed;
    struct fns_cos_job *job, *next;
    struct fns_wr *e = fns_node_wr(n, key, 0);
    int unlink;

    emptied = fns_pack_index_del(n->pack, key, &packed);
    if (packed != 0) {
        fns_node_tomb(n, key, packed);
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
        for (job = fns_cos_cancel_writes(n->pool, key); job != NULL; job = next) {
            next = job->next;
            if (e != NULL && fns_node_small(job->chunk)) {
                e->writing--; /* it never ran */
            }
            fns_node_job_free(job);
        }
    }
    if (e != NULL && e->writing > 0) {
        /* Small writes of it are running on the packing worker: the last
         * one's reap unlinks what went to an object of its own, if any. */
        e->deleted |= (uint8_t)!keep_cos;
        return;
    }
    /* An object of its own is there, or may be: a chunk not packed and
     * not a small one never written (that one is known: none), or a small
     * one whose write once went alone. */
    unlink = !keep_cos && ((!packed && !unwritten) || (e != NULL && e->own));
    if (e != NULL) {
        fns_node_wr_drop(n, e);
    }
    if (unlink) {
        fns_node_submit(n, FNS_COS_DELETE, key, NULL, NULL, NULL);
    }
}

/* A COS read finished for req (GET or STAT). */
static void
fns_node_read_done(struct fns_node *n, struct fns_cos_job *job)
{
    struct fns_req *req = job->arg;
    struct fns_chunk *cur = fns_store_get(n->store, &job->key);
    struct fns_node_cost *cost = fns_node_cost_of(n, job->key.tenant);

    if (job->status == 0) {
        cost->cos_gets++;
        cost->cos_get_bytes += fns_chunk_blob_len(job->chunk);
    }
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
        fns_node_sms_reloaded(n, job->chunk, &job->loc);
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
 * the one held, and return 1. A chunk no longer held gets a tombstone
 * instead (a replaced one is indexed by its newer write), its segment is
 * checked once the whole reap is done (*maybe_empty), and 0 is returned:
 * nothing finds those bytes again, so no PERSISTED notice may name them
 * (a chunk that left memory with its instance, not deleted, is written
 * again by the gateway's persistent buffer once a STAT says NOTFOUND).
 */
static int
fns_node_packed(struct fns_node *n, struct fns_cos_job *job, uint64_t *maybe_empty)
{
    struct fns_chunk *cur = fns_store_get(n->store, &job->key);
    uint64_t emptied;

    if (cur == job->chunk) {
        emptied = fns_pack_index_put(n->pack, &job->key, &job->loc);
        if (emptied != 0) {
            fns_node_drop_segment(n, emptied);
        }
        return 1;
    }
    if (cur == NULL) {
        fns_node_tomb(n, &job->key, job->loc.seg);
    }
    fns_pack_index_add_seg(n->pack, job->loc.seg);
    *maybe_empty = job->loc.seg;
    return 0;
}

/* Counts a persisted chunk write in its tenant's COS cost: a segment once
 * per tenant in it (its jobs are adjacent), bytes exactly. */
static void
fns_node_cost_write(struct fns_node *n, const struct fns_cos_job *job, uint64_t *last_seg,
                    uint32_t *last_tenant)
{
    struct fns_node_cost *cost = fns_node_cost_of(n, job->key.tenant);

    cost->cos_put_bytes += fns_chunk_blob_len(job->chunk);
    if (job->loc.seg == 0 || job->loc.seg != *last_seg || job->key.tenant != *last_tenant) {
        cost->cos_puts++;
    }
    *last_seg = job->loc.seg;
    *last_tenant = job->key.tenant;
}

/* Reaps the jobs of the helpers' and the log's pools. */
static void
fns_node_cos_other(struct fns_node *n)
{
    struct fns_cos_job *job, *next;

    for (job = fns_cos_reap(n->recpool); job != NULL; job = next) {
        next = job->next;
        fns_node_sms_recovered(n, job);
        fns_node_job_free(job);
    }
    for (job = fns_cos_reap(n->logpool); job != NULL; job = next) {
        next = job->next;
        fns_node_ilog_reaped(n, job);
        fns_node_job_free(job);
    }
}

void
fns_node_cos_cb(void *arg)
{
    struct fns_node *n = arg;
    struct fns_cos_job *job, *next;
    struct fns_wr *e;
    uint64_t maybe_empty[64], last_seg = 0;
    uint32_t last_tenant = 0;
    size_t nempty = 0;
    int rolled = 0;

    fns_node_cos_other(n);
    for (job = fns_cos_reap(n->pool); job != NULL; job = next) {
        next = job->next;
        if (job->loc.seg != 0 && job->status == 0 && fns_cos_appends(n->pool) &&
            (job->op == FNS_COS_WRITE || job->op == FNS_COS_TOMBS)) {
            /* Records go to the newest segment: the older ones are closed. */
            rolled |= fns_pack_index_open(n->pack, job->loc.seg);
        }
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
                int found = 1; /* a reload finds these bytes */

                job->chunk->persisted = 1;
                fns_node_cost_write(n, job, &last_seg, &last_tenant);
                fns_node_sms_persisted(n, job->chunk, &job->loc, job->tag == n->del_seq);
                if (job->loc.seg != 0) {
                    uint64_t seg = 0;

                    found = fns_node_packed(n, job, &seg);
                    /* A batch's jobs are adjacent. Past 64 segments the
                     * check waits for the next replay (a restart). */
                    if (seg != 0 && nempty < 64 &&
                        (nempty == 0 || maybe_empty[nempty - 1] != seg)) {
                        maybe_empty[nempty++] = seg;
                    }
                }
                if (job->arg2 != NULL && found) {
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
            if (fns_node_small(job->chunk) && (e = fns_node_wr(n, &job->key, 0)) != NULL) {
                fns_node_wr_done(n, e, job->status == 0 && job->loc.seg == 0);
            }
            break;
        case FNS_COS_READ:
            fns_node_read_done(n, job);
            break;
        case FNS_COS_DELETE:
            if (job->loc.seg == 0 && job->status == 0) {
                fns_node_cost_of(n, job->key.tenant)->cos_deletes++;
            }
            if (job->arg != NULL) {
                fns_node_answer(n, job->arg, job->status, 0, NULL);
            }
            break;
        default:
            break;
        }
        fns_node_job_free(job);
    }
    for (size_t i = 0; i < nempty; i++) {
        if (fns_pack_index_drop_if_empty(n->pack, maybe_empty[i])) {
            fns_node_drop_segment(n, maybe_empty[i]);
        }
    }
    if (rolled && fns_pack_index_held(n->pack) > 0) {
        (void)fns_pack_index_drop_held(n->pack, fns_node_delete_segment, n);
    }
    fns_node_notes_flush(n);
}

void
fns_node_cos_notify(void *arg)
{
    struct fns_node *n = arg;

    fns_loop_ev_wake(n->ev_cos);
}
