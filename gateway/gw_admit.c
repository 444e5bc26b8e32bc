/*
 * gw_admit.c - the admission queue of large requests (see gw_admit.h).
 *
 * Owns: the tickets (granted or waiting), one record per tenant that has
 * bytes in flight or waiters, and the deadline thread.
 *
 * Threads: any; a.mu guards everything but the thread handle. Callbacks
 * are collected under the mutex and run after it is released, so a
 * callback may enter or exit again. Once the thread runs, the admissions
 * that a release makes are handed to it: a release comes from the HTTP
 * library's completion callback, and a PUT's admission resumes another
 * connection of that library, which it must not do from inside its own
 * callback (the resume was lost: the ticket never came back).
 *
 * Invariants: inflight is the sum of the granted tickets' bytes but the
 * buffered ones', buffered the sum of those (writes whose first of two
 * holds exited); a ticket is freed when its last hold exits; a tenant
 * record exists while it has bytes in flight or waiters; each tenant's
 * FIFO is in arrival order, so its head has its earliest deadline; a
 * waiter is admitted only when nobody chosen before it is still waiting,
 * but that reads pass the writes while one waits only for the buffered
 * bytes to drain.
 */
#include "gw_admit.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cm_err.h"
#include "cm_metrics.h"
#include "cm_log.h"
#include "cm_time.h"

struct admit_tenant;

struct gw_admit_ticket {
    struct gw_admit *a;
    struct gw_admit_ticket *next; /* in its tenant's FIFO, then in a callback list */
    struct admit_tenant *tn;
    uint64_t bytes;
    int write;      /* GW_ADMIT_WRITE: also waits for the buffered bytes */
    int buffered;   /* its bytes count in buffered, not inflight */
    unsigned holds; /* granted: gw_admit_exit calls before its bytes go */
    uint64_t since, deadline;
    gw_admit_cb cb;
    void *arg;
    int status; /* for the callback list */
};

struct admit_tenant {
    struct admit_tenant *next;
    uint32_t id;
    uint64_t inflight;
    struct gw_admit_ticket *head, *tail;
};

struct gw_admit {
    struct gw_admit_cfg cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* monotonic: the deadline thread's sleep */
    struct admit_tenant *tenants;
    uint64_t inflight;
    uint64_t buffered;
    int stop;
    int running;
    /* With the thread running: admissions made by gw_admit_exit, whose
     * callbacks the thread runs (never the releasing thread, which may be
     * inside an HTTP library callback). */
    struct gw_admit_ticket *ready, **ready_tail;
    pthread_t thread;
    struct gw_admit_stats st;
};

struct gw_admit *
gw_admit_create(const struct gw_admit_cfg *cfg)
{
    struct gw_admit *a = calloc(1, sizeof(*a));
    pthread_condattr_t ca;

    if (a == NULL) {
        return NULL;
    }
    a->cfg = *cfg;
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    return a;
}

static struct admit_tenant *
tenant_get(struct gw_admit *a, uint32_t id)
{
    struct admit_tenant *tn;

    for (tn = a->tenants; tn != NULL; tn = tn->next) {
        if (tn->id == id) {
            return tn;
        }
    }
    if ((tn = calloc(1, sizeof(*tn))) == NULL) {
        return NULL;
    }
    tn->id = id;
    tn->next = a->tenants;
    a->tenants = tn;
    return tn;
}

/* Frees the records of tenants with nothing in flight and nobody waiting. */
static void
tenants_prune(struct gw_admit *a)
{
    struct admit_tenant **pp = &a->tenants;

    while (*pp != NULL) {
        struct admit_tenant *tn = *pp;

        if (tn->inflight == 0 && tn->head == NULL) {
            *pp = tn->next;
            free(tn);
        } else {
            pp = &tn->next;
        }
    }
}

/* Reads count the bytes in flight; writes those and the buffered ones. A
 * request larger than max_bytes alone enters when nothing it counts is in. */
static int
fits(const struct gw_admit *a, uint64_t bytes, int write)
{
    uint64_t used = a->inflight + (write ? a->buffered : 0);

    return used == 0 || used + bytes <= a->cfg.max_bytes;
}

/* A write waits only for the buffered bytes to drain. Then every write
 * waits (behind it, in arrival order), and no read waits for a write:
 * reads never wait for the persistent buffer. */
static int
writes_held(const struct gw_admit *a)
{
    for (const struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
        for (const struct gw_admit_ticket *t = tn->head; t != NULL; t = t->next) {
            if (t->write && !fits(a, t->bytes, 1) && fits(a, t->bytes, 0)) {
                return 1;
            }
        }
    }
    return 0;
}

/* The waiter of tn that may go next: its first one, or with writes held
 * its first read; *pp points at it in the FIFO. */
static struct gw_admit_ticket *
candidate(struct admit_tenant *tn, int held, struct gw_admit_ticket ***pp)
{
    struct gw_admit_ticket **p = &tn->head;

    while (*p != NULL && held && (*p)->write) {
        p = &(*p)->next;
    }
    *pp = p;
    return *p;
}

static void
grant_locked(struct gw_admit *a, struct gw_admit_ticket *t)
{
    t->tn->inflight += t->bytes;
    a->inflight += t->bytes;
    a->st.admitted++;
}

static int
anyone_waits(const struct gw_admit *a)
{
    for (const struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
        if (tn->head != NULL) {
            return 1;
        }
    }
    return 0;
}

/* Somebody waits whom a newcomer (a write or not) may not pass: since
 * the last admission round, every candidate does not fit, and nobody
 * passes a candidate. */
static int
anyone_blocks(const struct gw_admit *a, int write)
{
    int held = writes_held(a);

    if (write && held) {
        return 1;
    }
    for (struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
        struct gw_admit_ticket **p;

        if (candidate(tn, held, &p) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* Admits waiters while the next one fits; returns them as a callback list. */
static struct gw_admit_ticket *
admit_waiters_locked(struct gw_admit *a, uint64_t now)
{
    struct gw_admit_ticket *out = NULL, **tail = &out;

    for (;;) {
        struct admit_tenant *best = NULL;
        struct gw_admit_ticket *t = NULL, **tp = NULL;
        int held = writes_held(a);

        for (struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
            struct gw_admit_ticket **p, *c = candidate(tn, held, &p);

            if (c == NULL) {
                continue;
            }
            if (best == NULL || tn->inflight < best->inflight ||
                (tn->inflight == best->inflight && c->since < t->since)) {
                best = tn;
                t = c;
                tp = p;
            }
        }
        if (best == NULL || !fits(a, t->bytes, t->write)) {
            break;
        }
        *tp = t->next;
        if (best->tail == t) {
            best->tail = NULL;
            for (struct gw_admit_ticket *w = best->head; w != NULL; w = w->next) {
                best->tail = w;
            }
        }
        grant_locked(a, t);
        a->st.waiting--;
        a->st.waited++;
        a->st.wait_ns_total += now > t->since ? now - t->since : 0;
        t->status = 0;
        t->next = NULL;
        *tail = t;
        tail = &t->next;
    }
    return out;
}

/* Runs a callback list (mutex released). A failed ticket is freed first. */
static void
run_callbacks(struct gw_admit_ticket *list)
{
    while (list != NULL) {
        struct gw_admit_ticket *t = list;
        gw_admit_cb cb = t->cb;
        void *arg = t->arg;
        int status = t->status;

        list = t->next;
        t->next = NULL;
        if (status != 0) {
            free(t);
            cb(arg, NULL, status);
        } else {
            cb(arg, t, 0);
        }
    }
}

int
gw_admit_enter(struct gw_admit *a, uint32_t tenant, uint64_t bytes, int write, uint64_t now_ns,
               gw_admit_cb cb, void *arg, struct gw_admit_ticket **t)
{
    struct gw_admit_ticket *k;
    struct admit_tenant *tn;
    int wake;

    *t = NULL;
    if (a == NULL || a->cfg.max_bytes == 0 || bytes < a->cfg.min_bytes) {
        return 1;
    }
    if ((k = calloc(1, sizeof(*k))) == NULL) {
        return -ENOMEM;
    }
    k->a = a;
    k->bytes = bytes;
    k->write = write == GW_ADMIT_WRITE;
    k->holds = 1;
    k->since = now_ns;
    k->deadline = now_ns + a->cfg.wait_ns;
    k->cb = cb;
    k->arg = arg;
    pthread_mutex_lock(&a->mu);
    if ((tn = tenant_get(a, tenant)) == NULL) {
        pthread_mutex_unlock(&a->mu);
        free(k);
        return -ENOMEM;
    }
    k->tn = tn;
    *t = k;
    if (!anyone_blocks(a, k->write) && fits(a, bytes, k->write)) {
        grant_locked(a, k);
        pthread_mutex_unlock(&a->mu);
        return 1;
    }
    wake = !anyone_waits(a); /* the deadline thread sleeps without a deadline */
    if (tn->tail != NULL) {
        tn->tail->next = k;
    } else {
        tn->head = k;
    }
    tn->tail = k;
    a->st.waiting++;
    if (wake) {
        pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

void
gw_admit_exit(struct gw_admit *a, struct gw_admit_ticket *t, uint64_t now_ns)
{
    struct gw_admit_ticket *list;

    if (t == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    if (t->buffered) {
        a->buffered -= t->bytes;
    } else {
        t->tn->inflight -= t->bytes;
        a->inflight -= t->bytes;
    }
    if (--t->holds > 0) {
        /* One owner left: the write's bytes wait to be persisted. They
         * no longer count for reads, nor for the tenant's share. */
        t->buffered = 1;
        a->buffered += t->bytes;
    } else {
        free(t);
    }
    list = admit_waiters_locked(a, now_ns);
    tenants_prune(a);
    if (a->running && list != NULL) {
        struct gw_admit_ticket *last = list;

        while (last->next != NULL) {
            last = last->next;
        }
        if (a->ready == NULL) {
            a->ready_tail = &a->ready;
        }
        *a->ready_tail = list;
        a->ready_tail = &last->next;
        list = NULL;
        pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    run_callbacks(list);
}

void
gw_admit_hold(struct gw_admit_ticket *t)
{
    if (t != NULL) {
        pthread_mutex_lock(&t->a->mu);
        t->holds++;
        pthread_mutex_unlock(&t->a->mu);
    }
}

void
gw_admit_done(void *ticket)
{
    struct gw_admit_ticket *t = ticket;

    if (t != NULL) {
        gw_admit_exit(t->a, t, cm_now_ns());
    }
}

void
gw_admit_expose(struct gw_admit *a, struct cm_buf *b)
{
    struct gw_admit_stats st;

    gw_admit_stats(a, &st);
#define GW_ADMIT_FIG_(name, type, help, v)                                                         \
    cm_prom_family(b, "shoal_gateway_admit_" name, type, help);                                    \
    cm_prom_u64(b, "shoal_gateway_admit_" name, NULL, v);
    GW_ADMIT_FIG_("inflight_bytes", "gauge",
                  "Object bytes of large GETs and PUTs admitted and not yet answered",
                  st.inflight_bytes)
    GW_ADMIT_FIG_("buffered_bytes", "gauge",
                  "Object bytes of large PUTs answered and not yet persisted: large PUTs wait for "
                  "them too",
                  st.buffered_bytes)
    GW_ADMIT_FIG_("waiting", "gauge", "Large requests waiting for admission", st.waiting)
    GW_ADMIT_FIG_("admitted_total", "counter", "Large requests admitted", st.admitted)
    GW_ADMIT_FIG_("waited_total", "counter", "Large requests admitted after a wait", st.waited)
    GW_ADMIT_FIG_("timed_out_total", "counter",
                  "Large requests answered 503 after waiting --admit-wait-ms", st.timed_out)
#undef GW_ADMIT_FIG_
    cm_prom_family(b, "shoal_gateway_admit_wait_seconds_total", "counter",
                   "Time admitted requests waited");
    cm_prom_double(b, "shoal_gateway_admit_wait_seconds_total", NULL,
                   (double)st.wait_ns_total / 1e9);
}

/* Removes the waiters past their deadline (status CM_E_TIMEOUT) or all of
 * them (any other status) and returns them as a callback list. */
static struct gw_admit_ticket *
take_overdue_locked(struct gw_admit *a, uint64_t now, int status)
{
    struct gw_admit_ticket *out = NULL, **tail = &out;

    for (struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
        while (tn->head != NULL && (status != CM_E_TIMEOUT || tn->head->deadline <= now)) {
            struct gw_admit_ticket *t = tn->head;

            tn->head = t->next;
            t->next = NULL;
            t->status = status;
            a->st.waiting--;
            if (status == CM_E_TIMEOUT) {
                a->st.timed_out++;
            }
            *tail = t;
            tail = &t->next;
        }
        if (tn->head == NULL) {
            tn->tail = NULL;
        }
    }
    return out;
}

void
gw_admit_expire(struct gw_admit *a, uint64_t now_ns)
{
    struct gw_admit_ticket *list, *more, **tail;

    pthread_mutex_lock(&a->mu);
    list = take_overdue_locked(a, now_ns, CM_E_TIMEOUT);
    /* A head given up may have blocked others that fit. */
    more = admit_waiters_locked(a, now_ns);
    tenants_prune(a);
    pthread_mutex_unlock(&a->mu);
    for (tail = &list; *tail != NULL; tail = &(*tail)->next) {
    }
    *tail = more;
    run_callbacks(list);
}

static uint64_t
next_deadline_locked(const struct gw_admit *a)
{
    uint64_t d = UINT64_MAX;

    for (const struct admit_tenant *tn = a->tenants; tn != NULL; tn = tn->next) {
        if (tn->head != NULL && tn->head->deadline < d) {
            d = tn->head->deadline;
        }
    }
    return d;
}

uint64_t
gw_admit_next_deadline(struct gw_admit *a)
{
    uint64_t d;

    pthread_mutex_lock(&a->mu);
    d = next_deadline_locked(a);
    pthread_mutex_unlock(&a->mu);
    return d;
}

void
gw_admit_stats(struct gw_admit *a, struct gw_admit_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    out->inflight_bytes = a->inflight;
    out->buffered_bytes = a->buffered;
    pthread_mutex_unlock(&a->mu);
}

static void *
deadline_main(void *arg)
{
    struct gw_admit *a = arg;

    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        uint64_t d = next_deadline_locked(a), now = cm_now_ns();

        if (a->ready != NULL) {
            struct gw_admit_ticket *list = a->ready;

            a->ready = NULL;
            pthread_mutex_unlock(&a->mu);
            run_callbacks(list);
            pthread_mutex_lock(&a->mu);
            continue;
        }
        if (d == UINT64_MAX) {
            pthread_cond_wait(&a->cv, &a->mu);
            continue;
        }
        if (d > now) {
            struct timespec ts = cm_deadline(CLOCK_MONOTONIC, d - now);
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&a->mu);
        gw_admit_expire(a, now);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int
gw_admit_start(struct gw_admit *a)
{
    int rc = pthread_create(&a->thread, NULL, deadline_main, a);

    if (rc != 0) {
        return -rc;
    }
    a->running = 1;
    return 0;
}

void
gw_admit_destroy(struct gw_admit *a)
{
    struct gw_admit_ticket *list;

    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->running) {
        pthread_join(a->thread, NULL);
    }
    pthread_mutex_lock(&a->mu);
    list = take_overdue_locked(a, 0, CM_E_UNAVAIL);
    pthread_mutex_unlock(&a->mu);
    run_callbacks(a->ready); /* admitted before the stop, not yet told */
    a->ready = NULL;
    run_callbacks(list);
    while (a->tenants != NULL) {
        struct admit_tenant *tn = a->tenants;
        a->tenants = tn->next;
        free(tn);
    }
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
