/*
 * fns_cos.c - COS worker pool; see fns_cos.h.
 *
 * One mutex guards every queue (jobs are coarse: each is a blocking COS
 * call). Each worker has its own FIFO and condition variable. Finished jobs
 * go on a lock-free stack, so a worker that finishes never waits for the
 * loop thread submitting or reaping (nor wakes it through the mutex): each
 * run of jobs is pushed reversed in one exchange, and the reap reverses the
 * whole stack, which gives every run in the order pushed, its jobs adjacent
 * and in queue order. Writes are retried a few times with backoff: the COS
 * is expected to be flaky now and then.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "fns_cos.h"

#define FNS_COS_WRITE_TRIES 4
#define FNS_COS_BATCH_MAX 64 /* writes that share one round of COS syncs */
#define FNS_COS_LAZY_MAX 64  /* lazy jobs queued that wake their worker */

struct fns_cos_worker {
    struct fns_cos *pool;
    pthread_t thread;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    struct fns_cos_job *head, *tail;
    size_t nq;     /* queued jobs */
    int lingering; /* waiting for a full batch: wake only when there is one */
};

struct fns_cos {
    struct cm_cos *cos;
    int pack;
    uint32_t pack_node;
    uint64_t linger_ns;
    atomic_uint_fast64_t next_seq;
    /* Appends (the COS can): the segment records go to, and its size;
     * worker 0 only, the one writer of segments. */
    int append;
    uint64_t seg_seq, seg_size, roll_bytes;
    struct fns_key *tombs; /* under mu; tomb_segs[i]: the segment tombs[i] is in */
    uint64_t *tomb_segs;
    size_t ntombs, captombs;
    void (*notify)(void *arg);
    void *arg;
    pthread_mutex_t mu;
    struct fns_cos_worker *w;
    int nw;
    int stopping, stopped;
    _Atomic(struct fns_cos_job *) done; /* runs pushed reversed, newest first */
    atomic_size_t pending;
    atomic_uint_fast64_t writes, reloads;
};

static int fns_cos_put_segment(struct fns_cos *p, struct fns_pack_ent *ents,
                               struct fns_cos_job **packed, size_t ne, struct fns_cos_job *tjob,
                               uint64_t *seq);

static void
fns_cos_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void
fns_cos_run(struct fns_cos *p, struct fns_cos_job *job)
{
    char name[128];
    void *blob = NULL;
    size_t len = 0;
    int rc, i;

    switch (job->op) {
    case FNS_COS_PUT_OBJ:
        for (i = 0; i < FNS_COS_WRITE_TRIES; i++) {
            rc = cm_cos_put(p->cos, job->name, job->buf, job->buflen);
            if (rc == 0) {
                break;
            }
            CM_WARN("cos write failed name=%s try=%d err=%s", job->name, i + 1, cm_errname(rc));
            fns_cos_sleep_ms(50 << i);
        }
        job->status = rc;
        return;
    case FNS_COS_APPEND_OBJ:
        /* A failed append may leave a torn tail: the caller goes elsewhere. */
        job->status = cm_cos_append(p->cos, job->name, job->buf, job->buflen, &job->obj_off);
        return;
    case FNS_COS_GET_OBJ:
        if (job->buflen != 0) {
            len = job->buflen;
            job->status =
                cm_cos_get_range(p->cos, job->name, job->obj_off, len, &job->buf, &job->buflen);
            if (job->status == 0 && job->buflen != len) {
                job->status = CM_E_CRC; /* shorter than where it was written */
            }
            return;
        }
        job->status = cm_cos_get(p->cos, job->name, &job->buf, &job->buflen);
        return;
    case FNS_COS_DEL_OBJ:
        job->status = cm_cos_delete(p->cos, job->name);
        return;
    default:
        break;
    }
    rc = fns_key_name(&job->key, name, sizeof(name));
    if (rc != 0) {
        job->status = rc;
        return;
    }
    switch (job->op) {
    case FNS_COS_TOMBS:
        rc = fns_cos_put_segment(p, NULL, NULL, 0, job, &job->loc.seg);
        if (rc == CM_E_NOTFOUND) {
            rc = 0; /* none pending: they rode with chunks */
        }
        break;
    case FNS_COS_WRITE:
        for (i = 0; i < FNS_COS_WRITE_TRIES; i++) {
            rc = cm_cos_put(p->cos, name, job->chunk->data, fns_chunk_blob_len(job->chunk));
            if (rc == 0) {
                break;
            }
            CM_WARN("cos write failed name=%s try=%d err=%s", name, i + 1, cm_errname(rc));
            fns_cos_sleep_ms(50 << i);
        }
        if (rc == 0) {
            atomic_fetch_add(&p->writes, 1);
        }
        break;
    case FNS_COS_READ:
        if (job->loc.seg != 0) {
            fns_pack_name(name, sizeof(name), p->pack_node, job->loc.seg);
            rc = cm_cos_get_range(p->cos, name, job->loc.off, job->loc.len, &blob, &len);
            if (rc == 0 && len != job->loc.len) {
                free(blob);
                blob = NULL;
                rc = CM_E_CRC; /* the segment is shorter than its index says */
            }
        } else {
            rc = cm_cos_get(p->cos, name, &blob, &len);
        }
        if (rc == 0) {
            rc = fns_chunk_from_blob(&job->key, blob, len, &job->chunk);
            if (rc != 0) {
                CM_ERROR("cos chunk corrupt name=%s len=%zu", name, len);
            } else {
                atomic_fetch_add(&p->reloads, 1);
            }
        } else if (rc != CM_E_NOTFOUND) {
            CM_WARN("cos read failed name=%s err=%s", name, cm_errname(rc));
        }
        break;
    case FNS_COS_DELETE:
        if (job->loc.seg != 0) {
            fns_pack_name(name, sizeof(name), p->pack_node, job->loc.seg);
        }
        rc = cm_cos_delete(p->cos, name);
        if (rc != 0) {
            CM_WARN("cos delete failed name=%s err=%s", name, cm_errname(rc));
        }
        break;
    default:
        break;
    }
    job->status = rc;
}

/* Puts tombstones a failed segment write carried back in front. */
static void
fns_cos_untake_tombs(struct fns_cos *p, struct fns_key *tombs, uint64_t *segs, size_t n)
{
    if (n == 0) {
        return; /* (and p->tombs may be NULL) */
    }
    pthread_mutex_lock(&p->mu);
    if (p->ntombs + n > p->captombs) {
        p->captombs = p->ntombs + n;
        p->tombs = cm_realloc(p->tombs, p->captombs * sizeof(*p->tombs));
        p->tomb_segs = cm_realloc(p->tomb_segs, p->captombs * sizeof(*p->tomb_segs));
    }
    memmove(p->tombs + n, p->tombs, p->ntombs * sizeof(*p->tombs));
    memmove(p->tomb_segs + n, p->tomb_segs, p->ntombs * sizeof(*p->tomb_segs));
    memcpy(p->tombs, tombs, n * sizeof(*tombs));
    memcpy(p->tomb_segs, segs, n * sizeof(*segs));
    p->ntombs += n;
    pthread_mutex_unlock(&p->mu);
}

/* Takes the pending tombstones (the caller frees *keys and *segs). */
static size_t
fns_cos_take_tombs(struct fns_cos *p, struct fns_key **keys, uint64_t **segs)
{
    size_t n;

    pthread_mutex_lock(&p->mu);
    *keys = p->tombs;
    *segs = p->tomb_segs;
    n = p->ntombs;
    p->tombs = NULL;
    p->tomb_segs = NULL;
    p->ntombs = p->captombs = 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Appends a record to the open segment, first starting the next one when
 * it is full, or its last append failed (its tail may be torn: no record
 * goes after that). 0 with the segment's *seq and the record's *base. */
static int
fns_cos_append_record(struct fns_cos *p, const uint8_t *rec, size_t len, uint64_t *seq,
                      uint64_t *base)
{
    char name[FNS_PACK_NAME_MAX];
    int rc;

    if (p->seg_seq != 0 && p->seg_size >= p->roll_bytes) {
        fns_pack_name(name, sizeof(name), p->pack_node, p->seg_seq);
        cm_cos_append_end(p->cos, name);
        p->seg_seq = 0;
    }
    if (p->seg_seq == 0) {
        p->seg_seq = atomic_fetch_add(&p->next_seq, 1);
        p->seg_size = 0;
    }
    fns_pack_name(name, sizeof(name), p->pack_node, p->seg_seq);
    rc = cm_cos_append(p->cos, name, rec, len, base);
    if (rc != 0) {
        p->seg_seq = 0;
        return rc;
    }
    *seq = p->seg_seq;
    p->seg_size = *base + len;
    return 0;
}

/*
 * Writes one record: the chunks of the ne jobs packed[] (ents[] without
 * offsets) and every pending tombstone, appended to the open segment or,
 * where the COS cannot append, as a segment of its own. 0 with *seq, the
 * offsets in ents[] (from the segment's start) and, through *tjob, the
 * tombstones' segments; CM_E_NOTFOUND when there was nothing to write;
 * else the error, with the tombstones queued again.
 */
static int
fns_cos_put_segment(struct fns_cos *p, struct fns_pack_ent *ents, struct fns_cos_job **packed,
                    size_t ne, struct fns_cos_job *tjob, uint64_t *seq)
{
    struct fns_key *tombs;
    uint64_t *tomb_segs, next = 0, base = 0;
    size_t nt, total, i;
    char name[FNS_PACK_NAME_MAX];
    uint8_t *rec;
    int rc;

    nt = fns_cos_take_tombs(p, &tombs, &tomb_segs);
    if (ne == 0 && nt == 0) {
        return CM_E_NOTFOUND;
    }
    total = fns_pack_hdr_len(ne, nt);
    for (i = 0; i < ne; i++) {
        ents[i].off = (uint32_t)total;
        total += ents[i].len;
    }
    rec = cm_malloc(total);
    for (i = 0; i < ne; i++) {
        memcpy(rec + ents[i].off, packed[i]->chunk->data, ents[i].len);
    }
    fns_pack_encode(rec, total, ents, ne, tombs, nt);
    if (p->append) {
        rc = fns_cos_append_record(p, rec, total, &next, &base);
        fns_pack_name(name, sizeof(name), p->pack_node, next);
    } else {
        next = atomic_fetch_add(&p->next_seq, 1);
        fns_pack_name(name, sizeof(name), p->pack_node, next);
        rc = cm_cos_put(p->cos, name, rec, total);
    }
    free(rec);
    if (rc != 0) {
        CM_WARN("cos segment write failed name=%s chunks=%zu tombstones=%zu err=%s", name, ne, nt,
                cm_errname(rc));
        fns_cos_untake_tombs(p, tombs, tomb_segs, nt);
        free(tombs);
        free(tomb_segs);
        return rc;
    }
    for (i = 0; i < ne; i++) {
        ents[i].off += (uint32_t)base;
    }
    free(tombs);
    *seq = next;
    tjob->tomb_targets = tomb_segs;
    tjob->ntomb_targets = nt;
    return 0;
}

/*
 * Writes the small chunks among the n jobs of list as one segment; marks
 * them done (status 0, loc set) on success. Returns how many it packed.
 */
static size_t
fns_cos_pack(struct fns_cos *p, struct fns_cos_job *list, size_t n)
{
    struct fns_pack_ent ents[FNS_COS_BATCH_MAX];
    struct fns_cos_job *packed[FNS_COS_BATCH_MAX];
    struct fns_cos_job *job;
    size_t ne = 0, i;
    uint64_t seq;

    for (job = list; job != NULL && ne < n && ne < FNS_COS_BATCH_MAX; job = job->next) {
        if (fns_chunk_blob_len(job->chunk) <= FNS_PACK_BLOB_MAX) {
            packed[ne] = job;
            ents[ne].key = job->key;
            ents[ne].len = (uint32_t)fns_chunk_blob_len(job->chunk);
            ne++;
        }
    }
    if (ne == 0 || fns_cos_put_segment(p, ents, packed, ne, packed[0], &seq) != 0) {
        return 0; /* each chunk then gets an object of its own */
    }
    for (i = 0; i < ne; i++) {
        packed[i]->loc.seg = seq;
        packed[i]->loc.off = ents[i].off;
        packed[i]->loc.len = ents[i].len;
        packed[i]->status = 0;
    }
    atomic_fetch_add(&p->writes, ne);
    return ne;
}

/*
 * Runs a list of writes (linked by next) as one COS batch; a write the
 * batch failed gets the single-put retries.
 */
static void
fns_cos_run_writes(struct fns_cos *p, struct fns_cos_job *list, size_t n)
{
    struct cm_cos_item items[FNS_COS_BATCH_MAX];
    char names[FNS_COS_BATCH_MAX][128];
    struct fns_cos_job *job;
    size_t i = 0, m = 0;

    if (p->pack) {
        (void)fns_cos_pack(p, list, n); /* packed jobs have loc.seg set */
    }
    for (job = list; job != NULL; job = job->next, i++) {
        if (job->loc.seg != 0) {
            continue;
        }
        job->status = fns_key_name(&job->key, names[i], sizeof(names[i]));
        if (job->status == 0) {
            items[m].name = names[i];
            items[m].data = job->chunk->data;
            items[m].len = fns_chunk_blob_len(job->chunk);
            m++;
        }
    }
    if (m > 0) {
        cm_cos_put_batch(p->cos, items, m);
    }
    m = 0;
    for (job = list; job != NULL && n > 0; job = job->next, n--) {
        if (job->status != 0 || job->loc.seg != 0) {
            continue;
        }
        if (items[m++].rc == 0) {
            atomic_fetch_add(&p->writes, 1);
        } else {
            fns_cos_run(p, job);
        }
    }
}

/* Takes the next job of w, or a run of up to FNS_COS_BATCH_MAX writes
 * (queue order is kept: a run is a prefix of the queue). Under p->mu. */
static struct fns_cos_job *
fns_cos_take(struct fns_cos_worker *w, size_t *n)
{
    struct fns_cos_job *head = w->head, *last = head;

    *n = 1;
    if (head->op == FNS_COS_WRITE) {
        while (*n < FNS_COS_BATCH_MAX && last->next != NULL && last->next->op == FNS_COS_WRITE) {
            last = last->next;
            (*n)++;
        }
    }
    w->head = last->next;
    if (w->head == NULL) {
        w->tail = NULL;
    }
    w->nq -= *n;
    last->next = NULL;
    return head;
}

/* The packing worker lets small writes gather: waits (under p->mu) until a
 * full batch is queued, linger_ns have passed, or the pool stops. */
static void
fns_cos_linger(struct fns_cos *p, struct fns_cos_worker *w)
{
    struct timespec dl;

    if (!p->pack || w != &p->w[0] || p->linger_ns == 0 || w->head->op != FNS_COS_WRITE ||
        fns_chunk_blob_len(w->head->chunk) > FNS_PACK_BLOB_MAX) {
        return; /* only small writes wait (reads and big writes queued behind may too) */
    }
    dl = cm_deadline(CLOCK_MONOTONIC, p->linger_ns);
    w->lingering = 1;
    while (w->nq < FNS_COS_BATCH_MAX && !p->stopping) {
        if (pthread_cond_timedwait(&w->cond, &p->mu, &dl) == ETIMEDOUT) {
            break;
        }
    }
    w->lingering = 0;
}

/* Reverses a list linked by next; *last gets its old head. */
static struct fns_cos_job *
fns_cos_reverse(struct fns_cos_job *list, struct fns_cos_job **last)
{
    struct fns_cos_job *rev = NULL, *next;

    *last = list;
    for (; list != NULL; list = next) {
        next = list->next;
        list->next = rev;
        rev = list;
    }
    return rev;
}

/* Pushes a finished run (in queue order) onto the done stack. Any thread. */
static void
fns_cos_done(struct fns_cos *p, struct fns_cos_job *list)
{
    struct fns_cos_job *last, *rev = fns_cos_reverse(list, &last);
    struct fns_cos_job *old = atomic_load(&p->done);

    do {
        last->next = old;
    } while (!atomic_compare_exchange_weak(&p->done, &old, rev));
}

static void *
fns_cos_main(void *arg)
{
    struct fns_cos_worker *w = arg;
    struct fns_cos *p = w->pool;
    struct fns_cos_job *list;
    size_t n;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (w->head == NULL && !p->stopping) {
            pthread_cond_wait(&w->cond, &p->mu);
        }
        if (w->head == NULL) {
            break; /* stopping and drained */
        }
        fns_cos_linger(p, w);
        if (w->head == NULL) {
            continue; /* cancelled while it lingered */
        }
        list = fns_cos_take(w, &n);
        pthread_mutex_unlock(&p->mu);

        if (list->op == FNS_COS_WRITE) {
            fns_cos_run_writes(p, list, n);
        } else {
            fns_cos_run(p, list);
        }

        fns_cos_done(p, list);
        atomic_fetch_sub(&p->pending, n);
        if (p->notify != NULL) {
            p->notify(p->arg);
        }
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int
fns_cos_create(struct cm_cos *cos, int nthreads, void (*notify)(void *arg), void *arg,
               struct fns_cos **out)
{
    pthread_condattr_t ca;
    struct fns_cos *p;
    int i, rc;

    *out = NULL;
    if (nthreads < 1) {
        return CM_E_BADARG;
    }
    p = cm_calloc(1, sizeof(*p));
    p->cos = cos;
    p->notify = notify;
    p->arg = arg;
    pthread_mutex_init(&p->mu, NULL);
    atomic_init(&p->done, NULL);
    atomic_init(&p->pending, 0);
    atomic_init(&p->writes, 0);
    atomic_init(&p->reloads, 0);
    p->w = cm_calloc((size_t)nthreads, sizeof(*p->w));
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (i = 0; i < nthreads; i++) {
        p->w[i].pool = p;
        pthread_cond_init(&p->w[i].cond, &ca);
        rc = pthread_create(&p->w[i].thread, NULL, fns_cos_main, &p->w[i]);
        if (rc != 0) {
            pthread_cond_destroy(&p->w[i].cond);
            p->nw = i;
            pthread_condattr_destroy(&ca);
            fns_cos_destroy(p);
            return -rc;
        }
        p->nw = i + 1;
    }
    pthread_condattr_destroy(&ca);
    *out = p;
    return 0;
}

void
fns_cos_set_packing(struct fns_cos *p, uint32_t node, uint64_t first_seq, int linger_ms,
                    size_t roll_bytes)
{
    p->linger_ns = linger_ms > 0 ? (uint64_t)linger_ms * 1000000u : 0;
    p->pack = 1;
    p->append = cm_cos_can_append(p->cos);
    p->roll_bytes = roll_bytes ? roll_bytes : FNS_PACK_ROLL;
    p->pack_node = node;
    atomic_store(&p->next_seq, first_seq ? first_seq : 1);
}

void
fns_cos_tomb(struct fns_cos *p, const struct fns_key *key, uint64_t target)
{
    pthread_mutex_lock(&p->mu);
    if (p->ntombs == p->captombs) {
        p->captombs = p->captombs ? 2 * p->captombs : 64;
        p->tombs = cm_realloc(p->tombs, p->captombs * sizeof(*p->tombs));
        p->tomb_segs = cm_realloc(p->tomb_segs, p->captombs * sizeof(*p->tomb_segs));
    }
    p->tomb_segs[p->ntombs] = target;
    p->tombs[p->ntombs++] = *key;
    pthread_mutex_unlock(&p->mu);
}

void
fns_cos_submit(struct fns_cos *p, struct fns_cos_job *job)
{
    int packer = job->op == FNS_COS_TOMBS ||
                 (job->op == FNS_COS_WRITE && fns_chunk_blob_len(job->chunk) <= FNS_PACK_BLOB_MAX);
    struct fns_cos_worker *w =
        p->pack && packer ? &p->w[0] : &p->w[fns_key_hash(&job->key) % (uint64_t)p->nw];
    int wake;

    job->next = NULL;
    job->status = 0;
    if (job->op == FNS_COS_WRITE || job->op == FNS_COS_TOMBS) {
        job->loc.seg = 0; /* outputs */
        job->tomb_targets = NULL;
        job->ntomb_targets = 0;
    }
    atomic_fetch_add(&p->pending, 1);
    pthread_mutex_lock(&p->mu);
    if (w->tail != NULL) {
        w->tail->next = job;
    } else {
        w->head = job;
    }
    w->tail = job;
    w->nq++;
    /* A lingering worker is woken once for a batch, and lazy jobs wait
     * for company: a wake-up per job would cost more than the job. */
    wake = job->lazy ? !w->lingering && w->nq >= FNS_COS_LAZY_MAX
                     : !w->lingering || w->nq >= FNS_COS_BATCH_MAX;
    pthread_mutex_unlock(&p->mu);
    if (wake) {
        /* Signalled unlocked: a worker woken under the mutex would at once
         * sleep again on it, a second pair of wake-ups per job. It looks
         * at its queue under the mutex, so this wake-up is never lost. */
        pthread_cond_signal(&w->cond);
    }
}

void
fns_cos_kick(struct fns_cos *p)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->nw; i++) {
        if (p->w[i].head != NULL && !p->w[i].lingering) {
            pthread_cond_signal(&p->w[i].cond); /* a few times a second: locked is simpler */
        }
    }
    pthread_mutex_unlock(&p->mu);
}

/* Moves w's queued writes of key that carry no request onto *out. Under p->mu. */
static size_t
fns_cos_unqueue(struct fns_cos_worker *w, const struct fns_key *key, struct fns_cos_job **out)
{
    struct fns_cos_job **pp = &w->head, *job, *prev = NULL;
    size_t n = 0;

    while ((job = *pp) != NULL) {
        if (job->op == FNS_COS_WRITE && job->arg == NULL && fns_key_eq(&job->key, key)) {
            *pp = job->next;
            job->next = *out;
            *out = job;
            w->nq--;
            n++;
        } else {
            prev = job;
            pp = &job->next;
        }
    }
    w->tail = prev;
    return n;
}

struct fns_cos_job *
fns_cos_cancel_writes(struct fns_cos *p, const struct fns_key *key)
{
    struct fns_cos_worker *hashed = &p->w[fns_key_hash(key) % (uint64_t)p->nw];
    struct fns_cos_job *out = NULL;
    size_t n;

    pthread_mutex_lock(&p->mu);
    n = fns_cos_unqueue(hashed, key, &out);
    if (p->pack && hashed != &p->w[0]) {
        n += fns_cos_unqueue(&p->w[0], key, &out); /* small writes queue on the packer */
    }
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_sub(&p->pending, n);
    return out;
}

struct fns_cos_job *
fns_cos_reap(struct fns_cos *p)
{
    struct fns_cos_job *last;

    return fns_cos_reverse(atomic_exchange(&p->done, NULL), &last);
}

int
fns_cos_appends(const struct fns_cos *p)
{
    return p->pack && p->append;
}

size_t
fns_cos_pending(struct fns_cos *p)
{
    return atomic_load(&p->pending);
}

uint64_t
fns_cos_writes_total(struct fns_cos *p)
{
    return atomic_load(&p->writes);
}

uint64_t
fns_cos_reloads_total(struct fns_cos *p)
{
    return atomic_load(&p->reloads);
}

void
fns_cos_stop(struct fns_cos *p)
{
    int i;

    pthread_mutex_lock(&p->mu);
    if (p->stopped) {
        pthread_mutex_unlock(&p->mu);
        return;
    }
    p->stopping = 1;
    p->stopped = 1;
    for (i = 0; i < p->nw; i++) {
        pthread_cond_signal(&p->w[i].cond);
    }
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->nw; i++) {
        pthread_join(p->w[i].thread, NULL);
    }
}

void
fns_cos_destroy(struct fns_cos *p)
{
    struct fns_cos_job *job, *next;
    int i;

    if (p == NULL) {
        return;
    }
    fns_cos_stop(p);
    for (job = fns_cos_reap(p); job != NULL; job = next) {
        next = job->next;
        fns_chunk_unref(job->chunk);
        free(job->tomb_targets);
        if (job->op == FNS_COS_GET_OBJ) {
            free(job->buf);
        }
        free(job);
    }
    for (i = 0; i < p->nw; i++) {
        pthread_cond_destroy(&p->w[i].cond);
    }
    pthread_mutex_destroy(&p->mu);
    free(p->tombs);
    free(p->tomb_segs);
    free(p->w);
    free(p);
}
