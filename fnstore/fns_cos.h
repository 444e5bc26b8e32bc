/*
 * fns_cos.h - the COS worker pool: blocking cm_cos calls on threads.
 *
 *   loop thread ──submit(job)──▶ queue[hash(key) % n] ──▶ worker i ──▶ cm_cos
 *        ▲                                                     │
 *        └──── reap() ◀── done stack ◀── notify(arg) ◀─────────┘
 *
 * Jobs for one key always go to the same worker, in submission order, so a
 * write, a delete and a reload of the same chunk never overtake each other
 * (a delete cannot be undone by an earlier write finishing late).
 *
 * Packing (fns_cos_set_packing): small chunk writes all go to worker 0,
 * which lets them gather for up to linger_ms (persisting is asynchronous)
 * and writes each batch as one record of a COS segment (fns_pack.h)
 * instead of an object per chunk: appended to the open segment where the
 * COS can append (a new segment every roll_bytes), else as a segment of
 * its own. The job then says where its chunk went (loc), and
 * reads and deletes take a loc too. A small write and a later delete of
 * the same key may then run on different workers: the node indexes a
 * packed chunk only if it still holds it, so a delete is never undone,
 * and submits the delete of a key's own object only once no small write
 * of that key is left on the pool (fns_node_durable.c).
 *
 * Threads: submit/reap/pending from any thread; notify runs on a worker
 * thread right after a job lands on the done stack (use it to wake the
 * event loop; it must not block). Jobs are caller-owned memory, handed to
 * the pool by submit and back by reap; they must be malloc'd (destroy
 * frees unreaped ones).
 */
#ifndef FNS_COS_H
#define FNS_COS_H

#include <stddef.h>
#include <stdint.h>

#include "fns_chunk.h"
#include "fns_pack.h"

struct cm_cos;
struct fns_cos;

enum fns_cos_op {
    FNS_COS_WRITE,  /* chunk (a reference owned by the job) -> COS; retried;
                       loc.seg != 0 afterwards when it was packed */
    FNS_COS_READ,   /* key (or loc, when loc.seg != 0) -> chunk (verified; a
                       reference owned by the job) */
    FNS_COS_DELETE, /* key's object, or the whole segment loc.seg */
    FNS_COS_TOMBS,  /* the pending tombstones as a record of their own (loc.seg
                       != 0 afterwards, with tomb_targets); none pending: no-op */
    /* Named objects that are not chunks (the insertion log): */
    FNS_COS_PUT_OBJ,    /* buf/buflen (borrowed) -> name; retried like a write */
    FNS_COS_APPEND_OBJ, /* buf/buflen (borrowed) appended to name (cm_cos_append;
                           obj_off: where they start); not retried */
    FNS_COS_GET_OBJ,    /* name -> buf/buflen (malloc'd, the reaper frees it); with
                           buflen != 0 on submit, only bytes [obj_off, +buflen) */
    FNS_COS_DEL_OBJ,    /* name */
};

struct fns_cos_job {
    struct fns_cos_job *next; /* private to the pool until reaped */
    enum fns_cos_op op;
    struct fns_key key;
    struct fns_chunk *chunk;
    struct fns_pack_loc loc;
    int status;   /* result: 0, CM_E_NOTFOUND, CM_E_CRC, -errno... */
    void *arg;    /* caller's */
    void *arg2;   /* caller's */
    uint64_t tag; /* caller's */
    /* Nobody waits for it (a DEL's object, a dead segment): its worker is
     * not woken for it alone, but runs it with the next job it is woken
     * for, once FNS_COS_LAZY_MAX are queued, or at fns_cos_kick. */
    int lazy;
    /* Output of a write packed into segment loc.seg (on one job of that
     * segment) or of FNS_COS_TOMBS: the segments its tombstones kill chunks
     * in (malloc'd, the reaper frees it; see fns_pack_index_hold). */
    uint64_t *tomb_targets;
    size_t ntomb_targets;
    /* The *_OBJ ops. */
    char name[64];
    void *buf;
    size_t buflen;
    uint64_t obj_off;
};

/* cos borrowed for the pool's lifetime. nthreads >= 1. */
int fns_cos_create(struct cm_cos *cos, int nthreads, void (*notify)(void *arg), void *arg,
                   struct fns_cos **out);
/* Packs small writes from now on into segments of node, numbered from
 * first_seq (above every existing one: a segment is never appended to
 * after a restart), appended ones rolling over at roll_bytes (0:
 * FNS_PACK_ROLL). Call before the first submit. */
void fns_cos_set_packing(struct fns_cos *p, uint32_t node, uint64_t first_seq, int linger_ms,
                         size_t roll_bytes);
/* 1 when packed records are appended to an open segment (then the newest
 * segment a job reports is the one appended to: fns_pack_index_open). */
int fns_cos_appends(const struct fns_cos *p);
/* Records that key, a chunk packed in segment target, was deleted: the
 * next segment carries the tombstone so a replay does not bring it back.
 * Any thread. */
void fns_cos_tomb(struct fns_cos *p, const struct fns_key *key, uint64_t target);
/* Transfers job to the pool. */
void fns_cos_submit(struct fns_cos *p, struct fns_cos_job *job);
/* Takes back the writes of key still queued, that no worker has started
 * and that no request waits on (job->arg NULL): transferred to the caller,
 * linked by next, never run or reaped. For a chunk just deleted. */
struct fns_cos_job *fns_cos_cancel_writes(struct fns_cos *p, const struct fns_key *key);
/* Wakes every worker that has jobs queued (lazy ones too) and is not
 * lingering for a batch. Call it now and then (the node: every tick). */
void fns_cos_kick(struct fns_cos *p);
/* Takes every finished job (transferred to the caller), in finish order. */
struct fns_cos_job *fns_cos_reap(struct fns_cos *p);
/* Jobs submitted and not yet finished. */
size_t fns_cos_pending(struct fns_cos *p);
uint64_t fns_cos_writes_total(struct fns_cos *p);  /* successful writes */
uint64_t fns_cos_reloads_total(struct fns_cos *p); /* successful reads */
/* Runs every queued job to completion, then joins the workers. Finished
 * jobs stay reapable. */
void fns_cos_stop(struct fns_cos *p);
/* Stops if needed and frees; unreaped jobs are freed too (chunks unref'd). */
void fns_cos_destroy(struct fns_cos *p);

#endif
