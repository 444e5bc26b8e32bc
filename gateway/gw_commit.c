/*
 * gw_commit.c - the committer: batches of queued metadata ops, one LMDB
 * write transaction each, then their answers; see gw_commit.h.
 *
 *   queue (mutex) ──▶ committer thread: apply every op in one transaction,
 *                     commit (one flush) ──▶ op->done, in queue order
 *
 * Owns the queue, the layout updates it copied, its counters and its
 * thread; borrows meta, state and every queued PUT or DELETE op. The mutex
 * guards the queue, its counts, the flags and the commit histogram; the
 * transaction and the dones run with it released.
 */
#include "gw_commit.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_meta.h"
#include "gw_state.h"

/* Layout updates queued alone wait this long for a PUT or DELETE to share
 * their commit, or until this many are queued (see committer_main). */
#define UPDATE_WAIT_MS 100
#define UPDATE_BATCH_MAX 256
#define COMMITTER_SLICE_NS 100000 /* see ask_short_slice */

struct gw_commit {
    struct gw_meta *meta;
    struct gw_state *state;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    struct gw_commit_op *head, *tail;
    size_t queued, waited; /* ops queued; of them, ops an answer waits on */
    int stop, busy, hurry; /* hurry: commit layout updates without waiting */
    uint64_t batches, ops;
    struct cm_hist time; /* one metadata transaction, with its flush */
    pthread_t thread;
};

void
gw_commit_queue(struct gw_commit *cm, struct gw_commit_op *op)
{
    pthread_mutex_lock(&cm->mu);
    op->next = NULL;
    cm->queued++;
    cm->waited += op->kind != COMMIT_UPDATE && op->kind != COMMIT_MOVE;
    if (cm->tail != NULL) {
        cm->tail->next = op;
    } else {
        cm->head = op;
    }
    cm->tail = op;
    pthread_cond_signal(&cm->work);
    pthread_mutex_unlock(&cm->mu);
}

int
gw_commit_update(struct gw_commit *cm, const struct gw_layout *layout, enum gw_report what)
{
    struct gw_commit_op *op = calloc(1, sizeof(*op));

    if (op == NULL || gw_layout_copy(&op->lay, layout) != 0) {
        free(op);
        return -ENOMEM;
    }
    op->kind = COMMIT_UPDATE;
    op->report = what;
    gw_commit_queue(cm, op);
    return 0;
}

/* Applies op in b: 0 with op->rc the op's own result, or a negative code
 * when the transaction is no longer usable. */
static int
apply(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    int stale, rc;

    gw_meta_old_reset(&op->old);
    switch (op->kind) {
    case COMMIT_PUT:
        if (s != NULL && gw_snap_tenant(s, op->lay.tenant) == NULL) {
            op->rc = GW_COMMIT_TENANT_GONE;
            return 0;
        }
        op->attrs.mtime_ms = gw_meta_batch_time(b);
        op->rc = gw_meta_put(b, op->key, op->klen, &op->lay, &op->attrs, &op->old);
        return op->rc;
    case COMMIT_DELETE:
        rc = gw_meta_delete(b, op->tenant, op->key, op->klen, &op->old);
        op->rc = rc;
        return rc == CM_E_NOTFOUND ? 0 : rc;
    case COMMIT_UPDATE:
        op->rc = gw_meta_update(b, &op->lay, op->report, &stale);
        return op->rc;
    case COMMIT_MOVE:
        op->rc = gw_meta_move(b, op->key, op->klen, &op->lay, &stale);
        op->moved = op->rc == 0 && !stale;
        return op->rc;
    case COMMIT_CALL:
        op->rc = 0;
        return op->apply(b, op, s);
    }
    return CM_E_BADARG;
}

/* One transaction for the list; falls back to one per op when any op
 * breaks the transaction, so one bad op fails alone. */
static void
commit_list(struct gw_commit *cm, struct gw_state *st, struct gw_commit_op *list)
{
    struct gw_snap *s = st != NULL ? gw_state_snap(st) : NULL;
    struct gw_meta_batch *b = NULL;
    struct gw_commit_op *op;
    int rc;

    rc = gw_meta_batch_begin(cm->meta, &b);
    for (op = list; rc == 0 && op != NULL; op = op->next) {
        rc = apply(b, op, s);
    }
    if (rc == 0) {
        rc = gw_meta_batch_commit(b);
        if (rc != 0) {
            for (op = list; op != NULL; op = op->next) {
                op->rc = rc;
                gw_meta_old_reset(&op->old);
            }
        }
    } else {
        if (b != NULL) {
            gw_meta_batch_abort(b);
        }
        for (op = list; op != NULL; op = op->next) {
            rc = gw_meta_batch_begin(cm->meta, &b);
            if (rc == 0) {
                rc = apply(b, op, s);
                if (rc == 0) {
                    rc = gw_meta_batch_commit(b);
                } else {
                    gw_meta_batch_abort(b);
                }
            }
            if (rc != 0) {
                op->rc = rc;
                gw_meta_old_reset(&op->old);
            }
        }
    }
    gw_snap_unref(s);
}

/* After the commit: a PUT's or DELETE's done; an update is the committer's
 * own, and a failed one is only logged (a restarted gateway learns the
 * layout again by STAT, and sends a META record still pending again). */
static void
complete(struct gw_commit_op *op)
{
    if (op->kind != COMMIT_UPDATE) {
        op->done(op);
        return;
    }
    if (op->rc != 0) {
        CM_WARN("layout update failed object=%016llx tenant=%u report=%d err=%s",
                (unsigned long long)op->lay.object, op->lay.tenant, (int)op->report,
                cm_errname(op->rc));
    }
    gw_layout_fini(&op->lay);
    free(op);
}

/*
 * Asks for a short scheduler slice for the calling thread. Under EEVDF
 * (Linux 6.6 and later) a shorter slice is an earlier deadline, so the
 * committer, which wakes for a few microseconds of work after each flush,
 * runs sooner instead of queueing behind the threads that keep both cores
 * busy under load: every PUT and DELETE waits for it. Kernels that do not
 * know the hint ignore it; a refusal costs only the hint.
 */
static void
ask_short_slice(void)
{
    /* The kernel's struct sched_attr, first version: glibc 2.36 has no
     * sched_setattr, and <linux/sched/types.h> clashes with <sched.h>. */
    struct {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } a = {.size = sizeof(a), .sched_policy = SCHED_OTHER};

    errno = 0;
    a.sched_nice = getpriority(PRIO_PROCESS, (id_t)gettid()); /* keep it */
    a.sched_runtime = COMMITTER_SLICE_NS;
    if (errno != 0 || syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
        CM_DEBUG("committer keeps the default scheduler slice err=%s", strerror(errno));
    }
}

static void *
committer_main(void *arg)
{
    struct gw_commit *cm = arg;

    ask_short_slice();
    pthread_mutex_lock(&cm->mu);
    for (;;) {
        struct gw_commit_op *list, *op, *next;
        uint64_t n = 0;

        while (cm->head == NULL && !cm->stop) {
            pthread_cond_wait(&cm->work, &cm->mu);
        }
        if (cm->head == NULL) {
            break; /* stopping with nothing left */
        }
        /*
         * Layout updates are hints a restarted gateway could learn again
         * (by STAT), yet each commit costs a flush that, with the COS on
         * the same disk, waits for the chunk writes before it. Alone they
         * wait for a PUT or DELETE to share its flush, or UPDATE_WAIT_MS.
         */
        if (cm->waited == 0 && !cm->stop && !cm->hurry && cm->queued < UPDATE_BATCH_MAX) {
            struct timespec until = cm_deadline(CLOCK_MONOTONIC, UPDATE_WAIT_MS * 1000000ull);

            while (cm->waited == 0 && !cm->stop && !cm->hurry && cm->queued < UPDATE_BATCH_MAX &&
                   pthread_cond_timedwait(&cm->work, &cm->mu, &until) != ETIMEDOUT) {
            }
        }
        struct gw_state *st = cm->state;
        list = cm->head;
        cm->head = cm->tail = NULL;
        cm->queued = cm->waited = 0;
        cm->busy = 1;
        pthread_mutex_unlock(&cm->mu);

        uint64_t t0 = cm_now_ns();

        commit_list(cm, st, list);
        uint64_t took = cm_now_ns() - t0;
        for (op = list; op != NULL; op = next) {
            next = op->next; /* done may free op */
            complete(op);
            n++;
        }
        pthread_mutex_lock(&cm->mu); /* the counts and the histogram agree */
        cm->batches++;
        cm->ops += n;
        cm_hist_observe(&cm->time, took);
        cm->busy = 0;
        if (cm->head == NULL) {
            pthread_cond_broadcast(&cm->idle);
        }
    }
    pthread_mutex_unlock(&cm->mu);
    return NULL;
}

int
gw_commit_create(struct gw_meta *meta, struct gw_commit **out)
{
    struct gw_commit *cm = calloc(1, sizeof(*cm));
    pthread_condattr_t ca;
    int rc;

    if (cm == NULL) {
        return -ENOMEM;
    }
    cm->meta = meta;
    pthread_mutex_init(&cm->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* committer_main's timed wait */
    pthread_cond_init(&cm->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&cm->idle, NULL);
    rc = pthread_create(&cm->thread, NULL, committer_main, cm);
    if (rc != 0) {
        pthread_cond_destroy(&cm->idle);
        pthread_cond_destroy(&cm->work);
        pthread_mutex_destroy(&cm->mu);
        free(cm);
        return -rc;
    }
    *out = cm;
    return 0;
}

void
gw_commit_set_state(struct gw_commit *cm, struct gw_state *st)
{
    pthread_mutex_lock(&cm->mu);
    cm->state = st;
    pthread_mutex_unlock(&cm->mu);
}

void
gw_commit_quiesce(struct gw_commit *cm)
{
    pthread_mutex_lock(&cm->mu);
    cm->hurry = 1;
    pthread_cond_signal(&cm->work);
    while (cm->head != NULL || cm->busy) {
        pthread_cond_wait(&cm->idle, &cm->mu);
    }
    pthread_mutex_unlock(&cm->mu);
}

void
gw_commit_destroy(struct gw_commit *cm)
{
    if (cm == NULL) {
        return;
    }
    pthread_mutex_lock(&cm->mu);
    cm->stop = 1;
    pthread_cond_signal(&cm->work);
    pthread_mutex_unlock(&cm->mu);
    pthread_join(cm->thread, NULL);
    pthread_cond_destroy(&cm->idle);
    pthread_cond_destroy(&cm->work);
    pthread_mutex_destroy(&cm->mu);
    free(cm);
}

void
gw_commit_stats(struct gw_commit *cm, struct gw_commit_stats *out)
{
    pthread_mutex_lock(&cm->mu);
    out->batches = cm->batches;
    out->ops = cm->ops;
    out->queued = cm->queued;
    out->time = cm->time;
    pthread_mutex_unlock(&cm->mu);
}
