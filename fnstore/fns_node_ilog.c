/*
 * fns_node_ilog.c - the insertion log's I/O (fns_ilog.h says what it
 * holds): each batch written by the log's own COS worker, one at a time in
 * sequence order, after the data its records name (records are added only
 * once their chunk is persisted); META requests answered once their batch
 * is durable; dead log objects deleted oldest first and mostly dead ones
 * carried forward; and, at start, the replay of every log object.
 *
 * Threads: the loop thread, but fns_node_ilog_replay (create, before the
 * loop runs, synchronous COS calls). Invariant: log_writing while a batch
 * job is on the log pool; log_carrying while a carry read is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_ilog.h"
#include "cm_log.h"
#include "fns_cos.h"
#include "fns_ilog.h"
#include "fns_loop.h"
#include "fns_node_impl.h"

enum { ILOG_JOB_BATCH = 1, ILOG_JOB_DELETE, ILOG_JOB_CARRY };

static void
fns_node_ilog_job(struct fns_node *n, enum fns_cos_op op, int what, uint64_t seq, const void *buf,
                  size_t len)
{
    struct fns_cos_job *job = cm_calloc(1, sizeof(*job));

    job->op = op;
    job->tag = seq;
    job->arg = (void *)(intptr_t)what;
    job->buf = (void *)buf;
    job->buflen = len;
    cm_ilog_name(job->name, sizeof(job->name), n->cfg.id, seq);
    fns_cos_submit(n->logpool, job);
}

void
fns_node_ilog_kick(struct fns_node *n)
{
    const uint8_t *buf;
    size_t len;
    uint64_t seq;

    if (n->destroying) {
        return;
    }
    if (!n->log_writing && fns_ilog_take(n->ilog, &buf, &len, &seq)) {
        n->log_writing = 1;
        fns_node_ilog_job(n, FNS_COS_PUT_OBJ, ILOG_JOB_BATCH, seq, buf, len);
    }
    while (fns_ilog_deletable(n->ilog, &seq)) {
        fns_node_ilog_job(n, FNS_COS_DEL_OBJ, ILOG_JOB_DELETE, seq, NULL, 0);
    }
    if (!n->log_carrying && fns_ilog_carry_due(n->ilog, &seq)) {
        n->log_carrying = 1;
        fns_node_ilog_job(n, FNS_COS_GET_OBJ, ILOG_JOB_CARRY, seq, NULL, 0);
    }
}

void
fns_node_ilog_reaped(struct fns_node *n, struct fns_cos_job *job)
{
    void **waiters = NULL;
    size_t nw;

    switch ((int)(intptr_t)job->arg) {
    case ILOG_JOB_BATCH:
        n->log_writing = 0;
        if (job->status != 0) {
            /* The same batch goes again on the next kick (a tick at most). */
            CM_WARN("insertion log batch not written name=%s err=%s", job->name,
                    cm_errname(job->status));
            (void)fns_ilog_done(n->ilog, 0, &waiters);
            return;
        }
        nw = fns_ilog_done(n->ilog, 1, &waiters);
        for (size_t i = 0; i < nw; i++) {
            fns_node_answer(n, waiters[i], 0, CM_WF_PERSISTED, NULL);
        }
        free(waiters);
        break;
    case ILOG_JOB_DELETE:
        if (job->status != 0 && job->status != CM_E_NOTFOUND) {
            CM_WARN("insertion log object not deleted name=%s err=%s", job->name,
                    cm_errname(job->status));
        }
        break;
    case ILOG_JOB_CARRY:
        n->log_carrying = 0;
        fns_ilog_carry(n->ilog, job->tag, job->status == 0 ? job->buf : NULL, job->buflen);
        free(job->buf);
        job->buf = NULL;
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

int
fns_node_ilog_replay(struct fns_node *n)
{
    struct fns_ilog_stats st;
    char name[CM_ILOG_NAME_MAX];
    uint64_t *seqs = NULL;
    size_t count = 0, bad = 0;
    int rc = fns_node_list_seqs(n, "ilog", &seqs, &count);

    if (rc != 0) {
        return rc;
    }
    for (size_t i = 0; i < count; i++) {
        void *buf = NULL;
        size_t len = 0;

        cm_ilog_name(name, sizeof(name), n->cfg.id, seqs[i]);
        rc = cm_cos_get(n->cos, name, &buf, &len);
        if (rc == 0) {
            rc = fns_ilog_replay(n->ilog, seqs[i], buf, len);
        }
        free(buf);
        if (rc != 0) {
            /* A batch that cannot be read is kept for a later look, not
             * applied: its records are lost to this start. */
            CM_ERROR("insertion log object unreadable, skipped name=%s err=%s", name,
                     cm_errname(rc));
            bad++;
        }
    }
    fns_ilog_replayed(n->ilog);
    fns_ilog_stats(n->ilog, &st);
    CM_INFO("insertion log replayed objects=%zu bad=%zu live_records=%llu chunks=%llu metas=%llu",
            count, bad, (unsigned long long)st.live, (unsigned long long)st.chunks,
            (unsigned long long)st.metas);
    free(seqs);
    return 0;
}
