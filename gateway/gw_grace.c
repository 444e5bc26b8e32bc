/*
 * gw_grace.c - grace periods; see gw_grace.h.
 *
 * Readers are counted in buckets, oldest first. New readers join the
 * newest bucket (the tail). Deferring an action while readers are in
 * closes the tail: the action hangs on it and a new, empty tail opens.
 * A closed bucket is released, with its actions, once its readers and
 * every older bucket are gone. A defer that finds no reader in the tail
 * since the last close reuses the last closed bucket.
 *
 * Invariant: with no reader in, head == tail and nothing waits.
 */
#include "gw_grace.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cm_buf.h"

struct act {
    struct act *next;
    void (*fn)(void *arg);
    void *arg;
};

struct gw_grace_bucket {
    struct gw_grace_bucket *next; /* newer */
    size_t readers;
    struct act *acts, **acts_tail;
};

struct gw_grace {
    pthread_mutex_t mu;
    struct gw_grace_bucket *head, *tail; /* oldest, newest (open) */
    struct gw_grace_bucket *closed;      /* the newest closed bucket, or NULL */
    size_t readers, waiting;
};

static struct gw_grace_bucket *
bucket_new(void)
{
    struct gw_grace_bucket *b = calloc(1, sizeof(*b));

    if (b != NULL) {
        b->acts_tail = &b->acts;
    }
    return b;
}

struct gw_grace *
gw_grace_create(void)
{
    struct gw_grace *g = cm_calloc(1, sizeof(*g));

    pthread_mutex_init(&g->mu, NULL);
    g->head = g->tail = cm_calloc(1, sizeof(*g->head)); /* start-up: may abort */
    g->head->acts_tail = &g->head->acts;
    return g;
}

size_t
gw_grace_destroy(struct gw_grace *g)
{
    struct gw_grace_bucket *b, *nb;
    struct act *a, *na;
    size_t n;

    if (g == NULL) {
        return 0;
    }
    n = g->waiting;
    for (b = g->head; b != NULL; b = nb) {
        nb = b->next;
        for (a = b->acts; a != NULL; a = na) {
            na = a->next;
            free(a);
        }
        free(b);
    }
    pthread_mutex_destroy(&g->mu);
    free(g);
    return n;
}

struct gw_grace_bucket *
gw_grace_enter(struct gw_grace *g)
{
    struct gw_grace_bucket *b;

    pthread_mutex_lock(&g->mu);
    b = g->tail;
    b->readers++;
    g->readers++;
    pthread_mutex_unlock(&g->mu);
    return b;
}

void
gw_grace_exit(struct gw_grace *g, struct gw_grace_bucket *ticket)
{
    struct act *run = NULL, **run_tail = &run, *a;

    pthread_mutex_lock(&g->mu);
    ticket->readers--;
    g->readers--;
    while (g->head != g->tail && g->head->readers == 0) {
        struct gw_grace_bucket *b = g->head;

        if (b->acts != NULL) {
            *run_tail = b->acts;
            run_tail = b->acts_tail;
        }
        g->head = b->next;
        if (g->closed == b) {
            g->closed = NULL;
        }
        free(b);
    }
    for (a = run; a != NULL; a = a->next) {
        g->waiting--;
    }
    pthread_mutex_unlock(&g->mu);

    while (run != NULL) {
        a = run;
        run = a->next;
        a->fn(a->arg);
        free(a);
    }
}

int
gw_grace_defer(struct gw_grace *g, void (*fn)(void *arg), void *arg)
{
    struct gw_grace_bucket *b, *nb = NULL;
    struct act *a;

    pthread_mutex_lock(&g->mu);
    if (g->readers == 0) {
        pthread_mutex_unlock(&g->mu);
        fn(arg);
        return 0;
    }
    a = malloc(sizeof(*a));
    if (a != NULL && !(g->tail->readers == 0 && g->closed != NULL) &&
        (nb = bucket_new()) == NULL) {
        free(a);
        a = NULL;
    }
    if (a == NULL) {
        pthread_mutex_unlock(&g->mu);
        return -ENOMEM;
    }
    a->next = NULL;
    a->fn = fn;
    a->arg = arg;
    if (nb == NULL) {
        b = g->closed; /* nobody entered since it closed */
    } else {
        b = g->tail;
        g->closed = b;
        g->tail = b->next = nb;
    }
    *b->acts_tail = a;
    b->acts_tail = &a->next;
    g->waiting++;
    pthread_mutex_unlock(&g->mu);
    return 0;
}

void
gw_grace_counts(struct gw_grace *g, size_t *readers, size_t *waiting)
{
    pthread_mutex_lock(&g->mu);
    *readers = g->readers;
    *waiting = g->waiting;
    pthread_mutex_unlock(&g->mu);
}
