/*
 * fns_loop.h - the event loop (with fns_conn.c, the only code that
 * includes libevent headers in fnstore/).
 *
 * One loop, run by one thread (the "loop thread"). Everything here is for
 * the loop thread except fns_loop_ev_wake, which any thread may call
 * (libevent is set up with pthreads locking).
 */
#ifndef FNS_LOOP_H
#define FNS_LOOP_H

#include <stdint.h>

struct fns_loop;
struct fns_loop_ev;
struct fns_loop_listener;

int fns_loop_create(struct fns_loop **out);
void fns_loop_destroy(struct fns_loop *l); /* NULL is a no-op; free events first */
/* Runs until fns_loop_break. 0 or -EIO. */
int fns_loop_run(struct fns_loop *l);
void fns_loop_break(struct fns_loop *l);

/* A callback event: fired by wake (any thread) or after a delay (loop
 * thread). Several wakes before it runs coalesce into one call. */
struct fns_loop_ev *fns_loop_ev_new(struct fns_loop *l, void (*cb)(void *arg), void *arg);
void fns_loop_ev_free(struct fns_loop_ev *ev); /* NULL is a no-op */
void fns_loop_ev_wake(struct fns_loop_ev *ev);
/* A callback event for wakes from other threads: an eventfd the loop
 * polls, written only when no wake is pending, so a waker never takes
 * libevent's base lock (which the loop thread holds except while it polls
 * or runs a callback: workers waking it at every COS completion queued on
 * that lock). No timer (fns_loop_ev_after) on a bell. */
struct fns_loop_ev *fns_loop_bell_new(struct fns_loop *l, void (*cb)(void *arg), void *arg);
/* Arms a one-shot timer (re-arming replaces the previous deadline). */
void fns_loop_ev_after(struct fns_loop_ev *ev, uint64_t ns);
/* Calls cb on the loop thread when signo arrives (persistent). */
struct fns_loop_ev *fns_loop_ev_signal(struct fns_loop *l, int signo, void (*cb)(void *arg),
                                       void *arg);

/*
 * Listens on addr ("host:port"; port 0 picks one) with non-blocking
 * accept; accept_cb gets each new fd (transferred). *port = bound port.
 */
int fns_loop_listen(struct fns_loop *l, const char *addr, void (*accept_cb)(void *arg, int fd),
                    void *arg, uint16_t *port, struct fns_loop_listener **out);
void fns_loop_listener_free(struct fns_loop_listener *lst); /* NULL is a no-op */

/* libevent's event_base, for fns_conn.c only (void * keeps types out). */
void *fns_loop_base(struct fns_loop *l);

#endif
