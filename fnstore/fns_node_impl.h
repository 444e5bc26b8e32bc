/*
 * fns_node_impl.h - the node's state, shared by the four files behind
 * fns_node.h (private to them):
 *
 *   fns_node.c          lifecycle and the request pipeline: frame -> FQ ->
 *                       dispatch -> exec -> answer
 *   fns_node_durable.c  COS jobs and their reap: persisted flags, PERSISTED
 *                       notices, reloads, tombstones, held segments
 *   fns_node_replay.c   startup: the packed-chunk index rebuilt from this
 *                       node's COS segments
 *   fns_node_report.c   what heartbeats and /metrics read: stats, per-tenant
 *                       snapshots, and the weights they bring back
 *   fns_node_sms.c      the SMS window on this node: placement, compaction,
 *                       the cache space, the controller's decisions, reclaims,
 *                       releases, and the recovery of lost instances
 *   fns_node_ilog.c     the insertion log's I/O: batches written in order,
 *                       META answers, dead objects deleted, the start-up replay
 *
 * struct fns_node owns the event loop, the listener and its connections, the
 * FQ scheduler, the chunk store, the COS pool, and every in-flight request
 * (struct fns_req, freed when answered). Loop thread only, except the fields
 * under `mu` (snapshots and pending weights) and the atomics (stats).
 *
 * Invariants: inflight counts requests created and not yet answered; every
 * unanswered request holds a conn reference; a request in the scheduler is
 * answered only after dequeue (dispatched), and complete() is called once
 * per dispatched request. disp / disp_bytes count the dispatched requests
 * not yet released and their `held` bytes: a request is released when it
 * is answered, or, when its answer carries a payload, once the connection
 * has written that payload or dropped it (the last unref of req->view);
 * a request lives until then. del_seq counts DELs so a COS reload that
 * raced a DEL does not put the deleted chunk back in memory.
 */
#ifndef FNS_NODE_IMPL_H
#define FNS_NODE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cm_hmap.h"
#include "cm_metrics.h"
#include "cm_wire.h"
#include "fns_chunk.h"
#include "fns_conn.h"
#include "fns_cos.h"
#include "fns_node.h"
#include "fns_rate.h"
#include "pol_fq.h"
#include "pol_sms.h"

struct fns_notes;

/* What the node keeps per tenant beside the scheduler's figures (loop
 * thread; records live as long as the node). */
struct fns_tstat {
    struct cm_hnode hn;
    uint32_t tenant;
    struct fns_node_cost cost; /* SMS cost counters, cumulative */
    double est_get;            /* the policy's GET-size estimate, copied every tick */
    double arrived_cost;       /* dominant cost of arrivals, cumulative */
    struct cm_hist qwait;      /* enqueue to dispatch */
    double share;              /* EWMA of the served cost per second */
    double last_cost;          /* served_cost at last_ns */
    uint64_t last_ns;
};

struct fns_req {
    struct pol_fq_item fq;
    struct fns_node *node;
    struct fns_conn *conn; /* reference until answered */
    struct fns_tstat *ts;  /* the tenant's (scheduled requests only) */
    struct cm_wire_hdr hdr;
    struct fns_chunk *chunk; /* PUT payload (reference) */
    uint64_t t0;
    uint64_t held; /* bytes counted in disp_bytes while dispatched */
    int dispatched;
    uint32_t tag;          /* PUT, STAT answers: the instance's tag */
    struct fns_chunk view; /* the answer's payload while the connection holds it */
};

/* One recovery helper's progress (fns_node_sms.c). */
struct fns_rec_trace {
    uint64_t loads, wait_ns, last_ns; /* loads reaped, their submit-to-reap time, the last reap */
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
    uint32_t disp;             /* dispatched, not released (see the invariants) */
    uint64_t disp_bytes;       /* their held bytes */
    int disp_paused;           /* the bound stopped dispatch; a release resumes it */
    double inv_ops, inv_bytes; /* cost normalization, as the policy's (pol_fq.h) */
    struct cm_hmap tstats;     /* tenant -> struct fns_tstat */
    uint64_t stop_deadline;
    uint64_t inflight;
    uint64_t del_seq;
    uint16_t port;
    struct fns_notes *notes; /* one per connection with records, during a reap */
    size_t nnotes, capnotes;

    /* SMS (fns_node_sms.c). Until the controller's "sms" block is heard:
     * static, max_instances = every slot. */
    const struct pol_sms_ops *sms_ops;
    struct pol_sms *sms;
    struct pol_sms_cfg sms_cfg;
    int sms_heard;
    struct cm_hmap pools;      /* tenant -> struct fns_pool */
    struct pol_sms_inst *view; /* scratch for place/on_read: one per slot */
    uint32_t *view_slot;
    struct fns_loop_ev *ev_reclaim, *ev_orders;
    uint64_t rng;
    struct fns_node_sms_stats sst; /* loop thread; published under mu */
    struct fns_sms_orders *orders; /* under mu: the last heartbeat answer's */

    /* Recovery (fns_node_sms.c): R helpers on their own COS pool, and each
     * helper's progress in the recoveries since none was running (logged
     * when one ends: which helper lagged, and how long its loads took). */
    struct fns_recover *rec;
    struct fns_cos *recpool;
    struct fns_rec_trace *rtrace; /* one per helper */
    uint64_t rtrace_ns;           /* when the first of those recoveries began */

    /* Keys with small writes on the packing worker not yet reaped, or
     * written to an object of their own (fns_node_durable.c, struct
     * fns_wr): a DEL must not unlink before those writes are done (it ran
     * on another worker and could overtake them), nor when nothing made an
     * object (every DEL of a packed chunk was an unlink that failed). */
    struct cm_hmap writes;

    /* The insertion log (fns_node_ilog.c): its batches, deletes and
     * carries run on their own one-worker COS pool, in order. */
    struct fns_ilog *ilog;
    struct fns_cos *logpool;
    int log_writing, log_carrying;
    /* ev_ilog: the pending batch's linger is over (armed for log_due, 0:
     * not armed). */
    struct fns_loop_ev *ev_ilog;
    uint64_t log_due;
    /* Where each batch not yet deleted is, oldest first (log_at[log_head
     * .. log_n)), and the object batches are appended to (its first
     * batch's seq; 0: none, and always 0 where the COS cannot append). */
    struct fns_log_at *log_at;
    size_t log_head, log_n, log_cap, log_cached;
    int log_append;
    uint64_t log_open, log_open_size, log_open_batches;
    int destroying; /* the COS pools are stopped: submit nothing */

    atomic_uint_fast64_t used, nchunks, bad_frames;
    atomic_uint_fast64_t segments, packed, held;               /* of the pack index, per tick */
    atomic_uint_fast64_t pub_disp, pub_disp_bytes, pub_queued; /* per tick */
    atomic_uint_fast64_t disp_pauses;

    pthread_mutex_t mu;
    struct fns_node_tenant *snap; /* under mu */
    size_t nsnap, capsnap;
    struct fns_node_inst *isnap; /* under mu: instances not free */
    size_t nisnap;
    struct fns_node_cost *csnap; /* under mu: every tenant's SMS cost */
    size_t ncsnap;
    struct fns_node_sms_stats pub_sst; /* under mu */
    uint32_t *w_tenants;               /* pending weights, under mu */
    double *w_values;
    size_t nw;
};

static inline uint16_t
fns_persisted_flag(const struct fns_chunk *c)
{
    return c->persisted ? CM_WF_PERSISTED : 0;
}

/* ---- fns_node.c (loop thread) ---- */

/* Answers req and frees it. chunk (borrowed; may be NULL) becomes the
 * payload. Completes the request in the scheduler if it was dispatched. */
void fns_node_answer(struct fns_node *n, struct fns_req *req, int status, uint16_t flags,
                     struct fns_chunk *chunk);
/* Publishes the store's figures for fns_node_stats. */
void fns_node_publish(struct fns_node *n);
/* The tenant's record, created on first use. */
struct fns_tstat *fns_node_tstat(struct fns_node *n, uint32_t tenant);

/* ---- fns_node_durable.c (loop thread, but cos_notify) ---- */

/* A COS job for key: chunk (borrowed; a reference is taken) for a write;
 * req (transferred; may be NULL) is answered when the job is reaped;
 * notify (borrowed; a reference is taken; may be NULL) gets a PERSISTED
 * notice once the write is persisted. */
void fns_node_submit(struct fns_node *n, enum fns_cos_op op, const struct fns_key *key,
                     struct fns_chunk *chunk, struct fns_req *req, struct fns_conn *notify);
/* GET or STAT of a chunk not in memory: from its segment, or its object.
 * req transferred (answered when the read is reaped). */
void fns_node_reload(struct fns_node *n, struct fns_req *req, const struct fns_key *key);
/* The COS side of a DEL of key (the chunk already left the store).
 * keep_cos (CM_WF_KEEP_COS): a chunk of its own object is left in COS,
 * where its new holder keeps it under the same name. unwritten: the chunk
 * deleted was a small one whose bytes never reached COS (no object of it
 * unless an earlier write of the key made one, which n->writes knows). */
void fns_node_forget(struct fns_node *n, const struct fns_key *key, int keep_cos, int unwritten);
/* Frees n->writes (destroy). */
void fns_node_writes_free(struct fns_node *n);
/* ev_cos: reaps finished COS jobs, answers their requests, sends notices. */
void fns_node_cos_cb(void *arg);
/* The COS pool's notify: wakes ev_cos. Any thread. */
void fns_node_cos_notify(void *arg);
/* ev_tombs: writes pending tombstones in a segment of their own. */
void fns_node_tombs_cb(void *arg);

/* ---- fns_node_sms.c (loop thread) ---- */

/* Creates the SMS state, the store and the recovery helpers (create). */
int fns_node_sms_create(struct fns_node *n);
void fns_node_sms_destroy(struct fns_node *n);
/* The slot a new chunk of len bytes of tenant goes to: 0 and *slot, or
 * -ENOSPC / CM_E_TOOBIG. */
int fns_node_sms_place(struct fns_node *n, uint32_t tenant, uint32_t len, uint32_t *slot);
/* A PUT placed c in slot (counts, WARM -> ACTIVE). */
void fns_node_sms_placed(struct fns_node *n, struct fns_chunk *c, uint32_t slot);
/* GET of c found in memory: counts, compaction, re-admission from the cache. */
void fns_node_sms_hit(struct fns_node *n, struct fns_chunk *c);
/* GET of key not in memory (req transferred): STALE, a wait on its
 * recovery, or a reload from COS. */
void fns_node_sms_miss(struct fns_node *n, struct fns_req *req, const struct fns_key *key);
/* A chunk reloaded from COS for a GET (c not in the store; loc where it
 * was read): re-admitted into the pool's current generation, else cached. */
void fns_node_sms_reloaded(struct fns_node *n, struct fns_chunk *c, const struct fns_pack_loc *loc);
/* A DEL took c out of slot (-1: none): the log's delete; a static
 * instance left empty is released. */
void fns_node_sms_deleted(struct fns_node *n, const struct fns_key *key, int slot);
/* A chunk write was persisted at loc (seg 0: its own object): its record
 * in the log, under the instance the chunk is in now (undeleted: no DEL
 * came since the write was submitted). */
void fns_node_sms_persisted(struct fns_node *n, struct fns_chunk *c, const struct fns_pack_loc *loc,
                            int undeleted);
/* A recovery read finished (job from the helpers' pool). */
void fns_node_sms_recovered(struct fns_node *n, struct fns_cos_job *job);
/* Start-up, after the log's replay: lost instances recovered, degraded released. */
void fns_node_sms_restart(struct fns_node *n);
/* Per tick: publishes the instance snapshot and the SMS figures (under mu). */
void fns_node_sms_report(struct fns_node *n);
/* The tenant's SMS cost counters. */
struct fns_node_cost *fns_node_cost_of(struct fns_node *n, uint32_t tenant);
/* What fns_node_sms_orders.c uses of the window: a tenant's pool (made
 * when new), an instance record logged for slot, slot released (its
 * waiters rerun), slot reclaimed (its memory gone: recovered or
 * released). */
struct fns_pool {
    struct cm_hnode hn;
    uint32_t tenant;
    uint64_t gen;
};
struct fns_pool *fns_pool_of(struct fns_node *n, uint32_t tenant);
void fns_node_log_instance(struct fns_node *n, uint32_t slot);
void fns_node_sms_release(struct fns_node *n, uint32_t slot);
void fns_node_sms_reclaim(struct fns_node *n, uint32_t slot);
/* Every pool's instances of older generations that fit in the others of
 * their generation are merged into them and released (pol_sms.h). */
void fns_node_sms_merge(struct fns_node *n);

/* ---- fns_node_sms_orders.c (loop thread) ---- */

/* --reclaim-rate: the next random reclaim, after an exponential gap. */
void fns_node_reclaim_arm(struct fns_node *n);
/* ev_orders: applies the controller's last answer. ev_reclaim: --reclaim-rate. */
void fns_node_sms_orders_cb(void *arg);
void fns_node_sms_reclaim_cb(void *arg);

/* ---- fns_node_ilog.c (loop thread; replay at create) ---- */

/* A durable log batch: its seq, the object holding it (that object's first
 * batch's seq) and where in it; bytes: a copy of it written by this run
 * (malloc'd, NULL once the node's copies reach FNS_LOG_CACHE) so that
 * carrying it forward reads nothing back. */
struct fns_log_at {
    uint64_t seq, obj, off;
    uint32_t len;
    uint8_t *bytes;
};

/* Replays the log (create, before the loop); 0 or an error. */
int fns_node_ilog_replay(struct fns_node *n);
/* Writes the pending batch if none is in flight and it is due (its
 * linger, --cos-linger-ms, is over, it is full, or it was flushed), else
 * arms ev_ilog for when it is; deletes or carries forward old log
 * objects. Call after adding records. */
void fns_node_ilog_kick(struct fns_node *n);
/* ev_ilog's callback. */
void fns_node_ilog_due_cb(void *arg);
/* Frees what the log's I/O holds (destroy). */
void fns_node_ilog_free(struct fns_node *n);
/* A job of the log's pool was reaped. */
void fns_node_ilog_reaped(struct fns_node *n, struct fns_cos_job *job);
/* A META request: its payload (transferred) into the log; answered once
 * durable. */
void fns_node_ilog_meta(struct fns_node *n, struct fns_req *req, uint8_t *payload);

/* ---- fns_node_replay.c (create, before the loop runs) ---- */

/* This node's numbered objects of kind ("seg", "ilog"), their sequence
 * numbers sorted (*seqs malloc'd, transferred); a COS not listable yet is
 * waited for up to a minute. 0 or an error. */
int fns_node_list_seqs(struct fns_node *n, const char *kind, uint64_t **seqs, size_t *count);
/* One listed object of this node (*buf malloc'd, transferred); a COS that
 * does not answer for now is waited for up to a minute, like a listing. 0,
 * an error fns_node_cos_final calls final (the object is gone or refused:
 * the caller skips it), or one the wait did not end (the node must not
 * start without the object). */
int fns_node_replay_get(struct fns_node *n, const char *name, void **buf, size_t *len);
/* Whether a COS call's status is an answer that waiting would not change. */
int fns_node_cos_final(int rc);
/* Rebuilds the packed-chunk index from this node's segments, deletes the
 * ones left empty, and turns packing on above the newest. */
int fns_node_replay(struct fns_node *n);

/* ---- fns_node_report.c (loop thread) ---- */

/* Takes the per-tenant snapshot and the gauges published per tick
 * (every tick, and after new weights). */
void fns_node_report_tick(struct fns_node *n);
/* ev_weights: applies the weights fns_node_set_weights left. */
void fns_node_weights_cb(void *arg);

#endif
