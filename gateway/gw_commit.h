/*
 * gw_commit.h - the committer (private to gateway/): the one thread that
 * writes object metadata.
 *
 *   any thread ──gw_commit_queue / gw_commit_update──▶ queue ──▶ committer:
 *       one LMDB write transaction for the whole queue, one flush,
 *       then each op's done (answers, deletes of old versions)
 *
 * Ops are applied in queue order, so an object's layout updates, queued
 * from the engine thread after its PUT, follow its commit. Updates and
 * moves alone wait up to 100 ms for a PUT or DELETE to share their flush. An op that
 * breaks the transaction is retried alone, so it fails alone.
 *
 * Threads: every function from any thread; done runs on the committer.
 */
#ifndef GW_COMMIT_H
#define GW_COMMIT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_metrics.h"
#include "gw_engine.h"
#include "gw_meta.h"

struct gw_state;
struct gw_snap;
struct gw_commit;

enum gw_commit_kind {
    COMMIT_PUT,    /* a new version of key */
    COMMIT_DELETE, /* a tombstone for key */
    COMMIT_UPDATE, /* an engine report (enum gw_report): holders, tags, done */
    COMMIT_MOVE,   /* a migrated version's holders and tags, if key still holds lay.object */
    COMMIT_CALL,   /* the op's own apply (the S3 front door's writes) */
};

#define GW_COMMIT_TENANT_GONE (-EACCES) /* a PUT refused: its tenant was deleted */

struct gw_commit_op {
    enum gw_commit_kind kind;
    uint32_t tenant; /* DELETE */
    const char *key; /* PUT, DELETE, MOVE: borrowed until done */
    size_t klen;
    /* PUT, MOVE: the version (lay.tenant set; a PUT's tags owned by the op,
     * freed by its owner); UPDATE: the report's */
    struct gw_layout lay;
    /* PUT: what the version keeps beside its layout (hdrs borrowed until
     * done); the commit sets mtime_ms, which done hands on to
     * gw_engine_committed with the layout */
    struct gw_meta_attrs attrs;
    enum gw_report report; /* UPDATE */
    /*
     * CALL: applies the op in b, on the committer; s is the state snapshot
     * (NULL before the state is set). Returns 0 with op->rc its own result
     * (an op that fails before it wrote anything), or a negative code when
     * b is no longer usable: then the op is applied again, alone, in a
     * batch of its own, and fails with that code if it does again.
     */
    int (*apply)(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s);
    /* Set before done: rc 0, CM_E_NOTFOUND (DELETE of nothing),
     * GW_COMMIT_TENANT_GONE (PUT) or the error; the version the op
     * replaced or deleted, when old.had (its parts and key owned by the op
     * until done hands them to gw_front_retire, or gw_meta_old_reset).
     * MOVE: moved = the live version was lay.object and now has its
     * holders (0: stale, nothing stored). */
    int rc;
    int moved;
    struct gw_meta_old old;
    void (*done)(struct gw_commit_op *op); /* on the committer thread */
    struct gw_commit_op *next;             /* the queue's */
};

/* meta borrowed, must outlive the committer. Starts its thread. */
int gw_commit_create(struct gw_meta *meta, struct gw_commit **out);
/* Where PUTs check that their tenant still exists (borrowed; before use). */
void gw_commit_set_state(struct gw_commit *cm, struct gw_state *st);
/* op is borrowed until its done has run. */
void gw_commit_queue(struct gw_commit *cm, struct gw_commit_op *op);
/* An engine report (layout copied, tags included). 0, or -ENOMEM: not
 * queued. */
int gw_commit_update(struct gw_commit *cm, const struct gw_layout *layout, enum gw_report what);
/* Commits what is queued without the update wait; returns once the queue
 * is empty and no commit runs. */
void gw_commit_quiesce(struct gw_commit *cm);
/* Commits what is left and stops the thread. NULL is a no-op. */
void gw_commit_destroy(struct gw_commit *cm);

struct gw_commit_stats {
    uint64_t batches, ops; /* totals */
    uint64_t queued;       /* ops waiting now */
    struct cm_hist time;   /* one transaction, flushes included */
};
void gw_commit_stats(struct gw_commit *cm, struct gw_commit_stats *out);

#endif
