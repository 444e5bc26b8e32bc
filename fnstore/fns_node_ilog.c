/*
 * fns_node_ilog.c - the insertion log's I/O (fns_ilog.h says what it
 * holds): each batch written by the log's own COS worker, one at a time in
 * sequence order, after the data its records name (records are added only
 * once their chunk is persisted), once its records have gathered for
 * --cos-linger-ms (ev_ilog), filled it, or the node drains: a write and a
 * sync then carry dozens of records, not one to four; META requests
 * answered once their batch is durable; dead log objects deleted oldest
 * first and mostly dead ones carried forward (from the batch's copy in
 * memory when this run wrote it); and, at start, the replay of every log
 * object.
 *
 * Where the COS can append (fs), batches are appended to one open log
 * object, named by its first batch's seq, and the next object starts past
 * FNS_LOG_ROLL bytes: a batch costs a write and a sync, not a new file, a
 * rename and an unlink. An object goes once every batch in it is dead and
 * none is appended to it any more; log_at says where each batch is, for
 * carries and for that. Elsewhere (s3) each batch is an object.
 *
 * Threads: the loop thread, but fns_node_ilog_replay (create, before the
 * loop runs, synchronous COS calls). Invariant: log_writing while a batch
 * job is on the log pool; log_carrying while a carry read is; log_at is in
 * seq order, an object's batches consecutive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_ilog.h"
#include "cm_log.h"
#include "cm_time.h"
#include "fns_cos.h"
#include "fns_ilog.h"
#include "fns_loop.h"
#include "fns_node_impl.h"

enum { ILOG_JOB_BATCH = 1, ILOG_JOB_DELETE, ILOG_JOB_CARRY, ILOG_JOB_DROP };

/* An appended log object starts the next one past this size. */
#define FNS_LOG_ROLL (1u << 20)
/* Bytes of the batches written that are kept for their carry. */
#define FNS_LOG_CACHE (1u << 20)

/* A job on log object obj (named by its first batch's seq); tag: the batch.
 * Returned when op is FNS_COS_GET_OBJ (the caller submits it), else
 * submitted (NULL). */
static struct fns_cos_job *
fns_node_ilog_job(struct fns_node *n, enum fns_cos_op op, int what, uint64_t obj, uint64_t seq,
                  const void *buf, size_t len)
{
    struct fns_cos_job *job = cm_calloc(1, sizeof(*job));

    job->op = op;
    job->tag = seq;
    job->arg = (void *)(intptr_t)what;
    job->buf = (void *)buf;
    job->buflen = len;
    cm_ilog_name(job->name, sizeof(job->name), n->cfg.id, obj);
    if (op == FNS_COS_GET_OBJ) {
        return job;
    }
    fns_cos_submit(n->logpool, job);
    return NULL;
}

/* Batch seq is durable at off in object obj; bytes (borrowed; NULL: not
 * known) are kept for its carry while the copies stay within
 * FNS_LOG_CACHE. */
static void
fns_node_log_at(struct fns_node *n, uint64_t seq, uint64_t obj, uint64_t off, uint32_t len,
                const uint8_t *bytes)
{
    uint8_t *copy = NULL;

    if (n->log_head > 0 && n->log_n == n->log_cap) {
        memmove(n->log_at, n->log_at + n->log_head, (n->log_n - n->log_head) * sizeof(*n->log_at));
        n->log_n -= n->log_head;
        n->log_head = 0;
    }
    if (n->log_n == n->log_cap) {
        n->log_cap = n->log_cap ? 2 * n->log_cap : 256;
        n->log_at = cm_realloc(n->log_at, n->log_cap * sizeof(*n->log_at));
    }
    if (bytes != NULL && n->log_cached + len <= FNS_LOG_CACHE) {
        copy = cm_malloc(len);
        memcpy(copy, bytes, len);
        n->log_cached += len;
    }
    n->log_at[n->log_n++] =
        (struct fns_log_at){.seq = seq, .obj = obj, .off = off, .len = len, .bytes = copy};
}

/* Forgets log_at[log_head] (its batch is dead). */
static void
fns_node_log_pop(struct fns_node *n)
{
    struct fns_log_at *at = &n->log_at[n->log_head++];

    if (at->bytes != NULL) {
        n->log_cached -= at->len;
        free(at->bytes);
        at->bytes = NULL;
    }
}

void
fns_node_ilog_free(struct fns_node *n)
{
    while (n->log_head < n->log_n) {
        fns_node_log_pop(n);
    }
    free(n->log_at);
    n->log_at = NULL;
}

/* Where batch seq is, or NULL. */
static const struct fns_log_at *
fns_node_log_find(const struct fns_node *n, uint64_t seq)
{
    size_t lo = n->log_head, hi = n->log_n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (n->log_at[mid].seq == seq) {
            return &n->log_at[mid];
        }
        if (n->log_at[mid].seq < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Whether any batch not yet deleted is in object obj. */
static int
fns_node_log_holds(const struct fns_node *n, uint64_t obj)
{
    /* Objects hold runs of consecutive batches: its batches are at one end
     * when any are left. */
    return n->log_n > n->log_head &&
           (n->log_at[n->log_head].obj == obj || n->log_at[n->log_n - 1].obj == obj);
}

/* Batch seq is dead (oldest first): its object goes once no batch in it is
 * left and nothing is appended to it any more. */
static void
fns_node_log_dead(struct fns_node *n, uint64_t seq)
{
    uint64_t obj = seq;

    if (n->log_head < n->log_n && n->log_at[n->log_head].seq == seq) {
        obj = n->log_at[n->log_head].obj;
        fns_node_log_pop(n);
    }
    if (obj != n->log_open && !fns_node_log_holds(n, obj)) {
        fns_node_ilog_job(n, FNS_COS_DEL_OBJ, ILOG_JOB_DELETE, obj, seq, NULL, 0);
    }
}

/* No more appends to the open object: it goes now when all in it is dead. */
static void
fns_node_log_close(struct fns_node *n)
{
    uint64_t obj = n->log_open;

    n->log_open = 0;
    if (obj != 0 && !fns_node_log_holds(n, obj)) {
        fns_node_ilog_job(n, FNS_COS_DEL_OBJ, ILOG_JOB_DELETE, obj, obj, NULL, 0);
    }
}

/* The next batch: appended to the open log object (a new one when there
 * is none or it is full), or, where the COS cannot append, an object of
 * its own. */
static void
fns_node_ilog_write(struct fns_node *n, uint64_t seq, const uint8_t *buf, size_t len)
{
    if (!n->log_append) {
        fns_node_ilog_job(n, FNS_COS_PUT_OBJ, ILOG_JOB_BATCH, seq, seq, buf, len);
        return;
    }
    if (n->log_open != 0 && n->log_open_size >= FNS_LOG_ROLL) {
        fns_node_log_close(n);
    }
    if (n->log_open == 0) {
        n->log_open = seq;
        n->log_open_size = n->log_open_batches = 0;
    }
    fns_node_ilog_job(n, FNS_COS_APPEND_OBJ, ILOG_JOB_BATCH, n->log_open, seq, buf, len);
}

/* A batch written (or not). */
static void
fns_node_ilog_written(struct fns_node *n, struct fns_cos_job *job)
{
    void **waiters = NULL;
    size_t nw;

    n->log_writing = 0;
    if (job->status != 0) {
        /* The same batch goes again on the next kick (a tick at most), to
         * another object: this one's tail may be torn. An object holding
         * no batch yet goes first (the retry may take its name again). */
        CM_WARN("insertion log batch not written name=%s seq=%llu err=%s", job->name,
                (unsigned long long)job->tag, cm_errname(job->status));
        if (n->log_open != 0 && n->log_open_batches == 0) {
            fns_node_ilog_job(n, FNS_COS_DEL_OBJ, ILOG_JOB_DROP, n->log_open, n->log_open, NULL, 0);
            n->log_open = 0;
        } else if (n->log_open != 0) {
            fns_node_log_close(n);
        }
        (void)fns_ilog_done(n->ilog, 0, &waiters);
        return;
    }
    if (job->op == FNS_COS_APPEND_OBJ) {
        fns_node_log_at(n, job->tag, n->log_open, job->obj_off, (uint32_t)job->buflen, job->buf);
        n->log_open_size = job->obj_off + job->buflen;
        n->log_open_batches++;
    } else {
        fns_node_log_at(n, job->tag, job->tag, 0, (uint32_t)job->buflen, job->buf);
    }
    nw = fns_ilog_done(n->ilog, 1, &waiters);
    for (size_t i = 0; i < nw; i++) {
        fns_node_answer(n, waiters[i], 0, CM_WF_PERSISTED, NULL);
    }
    free(waiters);
}

void
fns_node_ilog_kick(struct fns_node *n)
{
    const struct fns_log_at *at;
    const uint8_t *buf;
    size_t len;
    uint64_t seq, now = cm_now_ns(), wait;

    if (n->destroying) {
        return;
    }
    while (fns_ilog_deletable(n->ilog, &seq)) {
        fns_node_log_dead(n, seq);
    }
    if (!n->log_carrying && fns_ilog_carry_due(n->ilog, &seq)) {
        struct fns_cos_job *job;

        at = fns_node_log_find(n, seq);
        if (at != NULL && at->bytes != NULL) {
            fns_ilog_carry(n->ilog, seq, at->bytes, at->len); /* written by this run */
        } else {
            n->log_carrying = 1;
            job = fns_node_ilog_job(n, FNS_COS_GET_OBJ, ILOG_JOB_CARRY, at != NULL ? at->obj : seq,
                                    seq, NULL, 0);
            if (at != NULL) { /* the batch alone, not the whole object */
                job->obj_off = at->off;
                job->buflen = at->len;
            }
            fns_cos_submit(n->logpool, job);
        }
    }
    if (!n->log_writing && fns_ilog_take(n->ilog, now, &buf, &len, &seq)) {
        n->log_writing = 1;
        fns_node_ilog_write(n, seq, buf, len);
    } else if ((wait = fns_ilog_wait(n->ilog, now)) != UINT64_MAX &&
               (n->log_due == 0 || n->log_due > now + wait)) {
        /* Records gather for a linger, so that one write and sync carries
         * many: nothing a client was answered waits for them. */
        n->log_due = now + wait;
        fns_loop_ev_after(n->ev_ilog, wait);
    }
}

void
fns_node_ilog_due_cb(void *arg)
{
    struct fns_node *n = arg;

    n->log_due = 0;
    fns_node_ilog_kick(n);
}

/* A carry read finished: the batch's bytes out of its object. */
static void
fns_node_ilog_carried(struct fns_node *n, struct fns_cos_job *job)
{
    const uint8_t *buf = NULL;
    size_t len = 0;

    n->log_carrying = 0;
    if (job->status == 0) {
        buf = job->buf; /* the batch's range (or, not known, the whole object) */
        len = job->buflen;
    }
    fns_ilog_carry(n->ilog, job->tag, buf, len);
    free(job->buf);
    job->buf = NULL;
}

void
fns_node_ilog_reaped(struct fns_node *n, struct fns_cos_job *job)
{
    switch ((int)(intptr_t)job->arg) {
    case ILOG_JOB_BATCH:
        fns_node_ilog_written(n, job);
        break;
    case ILOG_JOB_DELETE:
    case ILOG_JOB_DROP:
        if (job->status != 0 && job->status != CM_E_NOTFOUND) {
            CM_WARN("insertion log object not deleted name=%s err=%s", job->name,
                    cm_errname(job->status));
        }
        break;
    case ILOG_JOB_CARRY:
        fns_node_ilog_carried(n, job);
        break;
    default:
        break;
    }
    fns_node_ilog_kick(n);
}

void
fns_node_ilog_meta(struct fns_node *n, struct fns_req *req, uint8_t *payload)
{
    int rc = fns_ilog_add_meta(n->ilog, payload, req->hdr.data_len, req);

    free(payload);
    if (rc != 0) {
        fns_node_answer(n, req, rc, 0, NULL);
        return;
    }
    fns_node_ilog_kick(n);
}

/* ---- start-up ----------------------------------------------------------- */

/* Applies the batches of log object obj (its bytes), in order, up to the
 * first that does not check (a torn append). A batch seen already (its
 * append failed after its bytes were down, and it went again into the next
 * object) is skipped. Returns the batches applied. */
static size_t
fns_node_ilog_replay_obj(struct fns_node *n, uint64_t obj, const uint8_t *buf, size_t len,
                         uint64_t *last)
{
    struct cm_ilog_iter it;
    size_t at = 0, applied = 0;

    while (at < len) {
        size_t bl = cm_ilog_batch_len(buf + at, len - at);
        uint64_t seq;

        if (bl == 0 || bl > UINT32_MAX || cm_ilog_open(buf + at, bl, NULL, &seq, &it) != 0) {
            break;
        }
        if (seq > *last) {
            if (fns_ilog_replay(n->ilog, seq, buf + at, bl) != 0) {
                break;
            }
            fns_node_log_at(n, seq, obj, at, (uint32_t)bl, NULL);
            *last = seq;
            applied++;
        }
        at += bl;
    }
    if (at < len && applied > 0) {
        CM_WARN("insertion log object torn tail ignored obj=%llu good=%zu bytes=%zu",
                (unsigned long long)obj, at, len);
    }
    return applied;
}

int
fns_node_ilog_replay(struct fns_node *n)
{
    struct fns_ilog_stats st;
    char name[CM_ILOG_NAME_MAX];
    uint64_t *seqs = NULL, last = 0;
    size_t count = 0, bad = 0;
    int rc = fns_node_list_seqs(n, "ilog", &seqs, &count);

    if (rc != 0) {
        return rc;
    }
    n->log_append = cm_cos_can_append(n->cos);
    for (size_t i = 0; i < count; i++) {
        void *buf = NULL;
        size_t len = 0;

        cm_ilog_name(name, sizeof(name), n->cfg.id, seqs[i]);
        rc = fns_node_replay_get(n, name, &buf, &len);
        if (!fns_node_cos_final(rc)) {
            CM_ERROR("insertion log object not readable, giving up name=%s err=%s", name,
                     cm_errname(rc));
            free(seqs);
            return rc;
        }
        if (rc == 0 && fns_node_ilog_replay_obj(n, seqs[i], buf, len, &last) == 0) {
            rc = CM_E_CRC;
        }
        free(buf);
        if (rc != 0) {
            /* An object none of whose batches can be read is kept for a
             * later look, not applied: its records are lost to this start. */
            CM_ERROR("insertion log object unreadable, skipped name=%s err=%s", name,
                     cm_errname(rc));
            bad++;
        }
    }
    fns_ilog_replayed(n->ilog);
    fns_ilog_stats(n->ilog, &st);
    CM_INFO("insertion log replayed objects=%zu bad=%zu batches=%zu live_records=%llu chunks=%llu "
            "metas=%llu",
            count, bad, n->log_n - n->log_head, (unsigned long long)st.live,
            (unsigned long long)st.chunks, (unsigned long long)st.metas);
    free(seqs);
    return 0;
}
