/*
 * gw_loop.c - the gateway engine's libevent loop: its thread, the queue of
 * functions posted from other threads, timers, and the tick that keeps the
 * node connections (gw_nodes.c) connected.
 *
 *   any thread ──gw_net_post──▶ posts (mutex) ──eventfd──▶ loop thread
 *
 * Owns the event base, the loop thread and the posts. The mutex guards the
 * posts only; everything else is the loop thread's. A post from another
 * thread writes the eventfd only when no wake-up is pending, so a burst of
 * posts costs one write and one wake-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "gw_net_impl.h"

struct gw_post {
    struct gw_post *next;
    gw_net_fn fn;
    void *arg;
};

struct gw_timer {
    struct event *ev;
    gw_net_fn fn;
    void *arg;
};

static pthread_once_t evthread_once = PTHREAD_ONCE_INIT;

static void
evthread_setup(void)
{
    evthread_use_pthreads();
}

static void
loop_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gw_nodes_maintain(arg);
}

void
gw_loop_kick(struct gw_net *n)
{
    event_active(n->kick, EV_READ, 0);
}

static void
loop_on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct gw_net *n = arg;
    uint64_t v;
    (void)what;
    if (fd >= 0) {
        (void)read(fd, &v, sizeof(v));
    }
    pthread_mutex_lock(&n->lock);
    struct gw_post *p = n->posts_head;
    n->posts_head = n->posts_tail = NULL;
    n->wake_pending = 0;
    pthread_mutex_unlock(&n->lock);
    while (p) {
        struct gw_post *next = p->next;
        p->fn(p->arg);
        free(p);
        p = next;
    }
}

static void *
loop_thread(void *arg)
{
    struct gw_net *n = arg;
    event_base_loop(n->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

int
gw_net_create(int io_timeout_ms, struct gw_net **out)
{
    int rc = 0;
    struct gw_net *n = calloc(1, sizeof(*n));
    if (!n) {
        rc = -ENOMEM;
        goto out;
    }
    pthread_once(&evthread_once, evthread_setup);
    n->wake_fd = -1;
    pthread_mutex_init(&n->lock, NULL);
    n->io_timeout_ms = io_timeout_ms > 0 ? io_timeout_ms : 5000;
    n->base = event_base_new();
    if (!n->base) {
        rc = -ENOMEM;
        goto out;
    }
    n->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    n->wake = n->wake_fd >= 0
                  ? event_new(n->base, n->wake_fd, EV_READ | EV_PERSIST, loop_on_wake, n)
                  : NULL;
    n->tick = event_new(n->base, -1, EV_PERSIST, loop_on_tick, n);
    n->kick = event_new(n->base, -1, 0, loop_on_tick, n);
    if (!n->wake || !n->tick || !n->kick) {
        rc = -ENOMEM;
        goto out;
    }
    struct timeval tv = {0, GW_TICK_MS * 1000};
    event_add(n->tick, &tv);
    event_add(n->wake, NULL);
    if (pthread_create(&n->thread, NULL, loop_thread, n) != 0) {
        rc = -EAGAIN;
        goto out;
    }
    *out = n;
out:
    if (rc < 0 && n) {
        if (n->wake) {
            event_free(n->wake);
        }
        if (n->tick) {
            event_free(n->tick);
        }
        if (n->kick) {
            event_free(n->kick);
        }
        if (n->base) {
            event_base_free(n->base);
        }
        if (n->wake_fd >= 0) {
            close(n->wake_fd);
        }
        pthread_mutex_destroy(&n->lock);
        free(n);
    }
    return rc;
}

void
gw_net_set_note_handler(struct gw_net *n, gw_net_note_fn fn, void *arg)
{
    n->on_note = fn;
    n->note_arg = arg;
}

void
gw_net_set_rtt_handler(struct gw_net *n, gw_net_rtt_fn fn, void *arg)
{
    n->on_rtt = fn;
    n->rtt_arg = arg;
}

int
gw_net_post(struct gw_net *n, gw_net_fn fn, void *arg)
{
    struct gw_post *p = malloc(sizeof(*p));
    if (!p) {
        return -ENOMEM;
    }
    p->fn = fn;
    p->arg = arg;
    p->next = NULL;
    pthread_mutex_lock(&n->lock);
    if (n->posts_tail) {
        n->posts_tail->next = p;
    } else {
        n->posts_head = p;
    }
    n->posts_tail = p;
    int wake = !n->wake_pending;
    n->wake_pending = 1;
    pthread_mutex_unlock(&n->lock);
    /* Not event_active: from another thread it takes libevent's base lock,
     * which the loop holds most of the time (a futex wait per post). */
    if (wake) {
        uint64_t one = 1;
        (void)write(n->wake_fd, &one, sizeof(one));
    }
    return 0;
}

struct stop_ctx {
    struct gw_net *n;
    gw_net_fn fin;
    void *arg;
};

static void
loop_stop(void *arg)
{
    struct stop_ctx *s = arg;
    struct gw_net *n = s->n;
    if (s->fin) {
        s->fin(s->arg);
    }
    gw_nodes_clear(n);
    event_base_loopbreak(n->base);
}

void
gw_net_destroy(struct gw_net *n, gw_net_fn fin, void *arg)
{
    if (!n) {
        return;
    }
    struct stop_ctx s = {n, fin, arg};
    if (gw_net_post(n, loop_stop, &s) == 0) {
        pthread_join(n->thread, NULL);
    }
    loop_on_wake(-1, 0, n); /* drop anything posted late */
    event_free(n->wake);
    event_free(n->tick);
    event_free(n->kick);
    event_base_free(n->base);
    close(n->wake_fd);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gw_timer *t = arg;
    (void)fd;
    (void)what;
    t->fn(t->arg);
}

struct gw_timer *
gw_timer_create(struct gw_net *n, gw_net_fn fn, void *arg)
{
    struct gw_timer *t = calloc(1, sizeof(*t));
    if (!t) {
        return NULL;
    }
    t->fn = fn;
    t->arg = arg;
    t->ev = evtimer_new(n->base, timer_cb, t);
    if (!t->ev) {
        free(t);
        return NULL;
    }
    return t;
}

void
gw_timer_arm(struct gw_timer *t, int ms)
{
    if (ms < 0) {
        ms = 0;
    }
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(t->ev, &tv);
}

void
gw_timer_stop(struct gw_timer *t)
{
    evtimer_del(t->ev);
}

void
gw_timer_destroy(struct gw_timer *t)
{
    if (!t) {
        return;
    }
    event_free(t->ev);
    free(t);
}
