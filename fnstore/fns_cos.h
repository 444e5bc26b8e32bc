/*
 * fns_cos.h - the COS worker pool: blocking cm_cos calls on threads.
 *
 *   loop thread ──submit(job)──▶ queue[hash(key) % n] ──▶ worker i ──▶ cm_cos
 *        ▲                                                     │
 *        └──── reap() ◀── done list ◀── notify(arg) ◀──────────┘
 *
 * Jobs for one key always go to the same worker, in submission order, so a
 * write, a delete and a reload of the same chunk never overtake each other
 * (a delete cannot be undone by an earlier write finishing late).
 *
 * Threads: submit/reap/pending from any thread; notify runs on a worker
 * thread right after a job lands on the done list (use it to wake the
 * event loop; it must not block). Jobs are caller-owned memory, handed to
 * the pool by submit and back by reap; they must be malloc'd (destroy
 * frees unreaped ones).
 */
#ifndef FNS_COS_H
#define FNS_COS_H

#include <stddef.h>
#include <stdint.h>

#include "fns_chunk.h"

struct cm_cos;
struct fns_cos;

enum fns_cos_op {
    FNS_COS_WRITE,  /* chunk (a reference owned by the job) -> COS; retried */
    FNS_COS_READ,   /* key -> chunk (verified; a reference owned by the job) */
    FNS_COS_DELETE, /* key */
};

struct fns_cos_job {
    struct fns_cos_job *next; /* private to the pool until reaped */
    enum fns_cos_op op;
    struct fns_key key;
    struct fns_chunk *chunk;
    int status;   /* result: 0, CM_E_NOTFOUND, CM_E_CRC, -errno... */
    void *arg;    /* caller's */
    uint64_t tag; /* caller's */
};

/* cos borrowed for the pool's lifetime. nthreads >= 1. */
int fns_cos_create(struct cm_cos *cos, int nthreads, void (*notify)(void *arg), void *arg,
                   struct fns_cos **out);
/* Transfers job to the pool. */
void fns_cos_submit(struct fns_cos *p, struct fns_cos_job *job);
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
