/*
 * gw_admit.h - admission of large reads and writes into the engine: a
 * gateway-wide bound on the object bytes in flight, fair queueing across
 * tenants in front of it, and a deadline on the wait.
 *
 * A request of at least min_bytes asks to enter with its size. It enters at
 * once when nobody waits and its bytes fit under max_bytes (a request
 * larger than max_bytes alone enters when nothing else is in). Otherwise it
 * waits in its tenant's FIFO. Whenever bytes are released, the waiting
 * tenant with the fewest bytes in flight goes next (ties: the oldest head);
 * if its head does not fit, nobody passes it, so large requests are not
 * starved by small ones. A waiter still queued wait_ns after it asked is
 * given up: its callback gets CM_E_TIMEOUT (the caller answers 503).
 *
 * Writes have a second phase: a write's ticket may get a second hold (its
 * bytes in the persistent buffer, gw_admit_hold); once either hold exits,
 * its bytes are "buffered" until the other does. Writes must fit with the
 * buffered bytes counted, reads without them: so the persistent buffer of
 * large PUTs stays under max_bytes. While a write waits only for it to
 * drain (the nodes' COS slow or away), every write waits behind it, and
 * the reads pass them all, even in their tenant's FIFO: no read waits for
 * the persistent buffer.
 *
 * Threads: every call may come from any thread; one mutex inside. Callbacks
 * run with the mutex released: on the admission thread once gw_admit_start
 * ran (admissions and deadlines alike), else on the thread that released
 * bytes (gw_admit_exit) or gave up waiters (gw_admit_expire); on the
 * destroying thread for CM_E_UNAVAIL. Time is passed in, so the queue is
 * tested without a clock or a thread.
 */
#ifndef GW_ADMIT_H
#define GW_ADMIT_H

#include <stdint.h>

struct gw_admit;
struct gw_admit_ticket;

enum { GW_ADMIT_READ, GW_ADMIT_WRITE };

struct gw_admit_cfg {
    uint64_t max_bytes; /* object bytes in flight, gateway-wide; 0 = no bound */
    uint64_t min_bytes; /* smaller requests pass without a ticket */
    uint64_t wait_ns;   /* longest wait in the queue */
};

/* status 0: admitted, t holds its bytes until gw_admit_exit(t). Else
 * CM_E_TIMEOUT (deadline) or CM_E_UNAVAIL (destroyed): t is already freed. */
typedef void (*gw_admit_cb)(void *arg, struct gw_admit_ticket *t, int status);

struct gw_admit_stats {
    uint64_t inflight_bytes;
    uint64_t buffered_bytes; /* writes answered, their bytes not yet freed */
    uint64_t waiting;        /* requests queued now */
    uint64_t admitted;       /* tickets granted, at once or after a wait */
    uint64_t waited;         /* of those, after a wait */
    uint64_t timed_out;      /* given up at the deadline */
    uint64_t wait_ns_total;  /* summed over the waits that ended admitted */
};

struct gw_admit *gw_admit_create(const struct gw_admit_cfg *cfg);
/* Starts the thread that gives up waiters at their deadline (cm_now_ns). */
int gw_admit_start(struct gw_admit *a);
/* Stops the thread; waiters still queued get CM_E_UNAVAIL. Tickets still
 * held must not be used afterwards. NULL is a no-op. */
void gw_admit_destroy(struct gw_admit *a);

/*
 * write: GW_ADMIT_READ or GW_ADMIT_WRITE.
 * 1: go on now; *t is the ticket to release (NULL below min_bytes or with
 * no bound). 0: queued; cb(arg, t, status) comes later, possibly before
 * this returns on another thread, so whatever cb needs must be ready
 * before the call. -ENOMEM: no memory for a ticket (*t NULL).
 */
int gw_admit_enter(struct gw_admit *a, uint32_t tenant, uint64_t bytes, int write, uint64_t now_ns,
                   gw_admit_cb cb, void *arg, struct gw_admit_ticket **t);
/* One hold of t exits: with none left, its bytes are released (t freed);
 * with one left, they become buffered. Then admits who fits next. A
 * ticket is granted with one hold. NULL is a no-op. */
void gw_admit_exit(struct gw_admit *a, struct gw_admit_ticket *t, uint64_t now_ns);
/* A second hold of a granted write t, for the second owner of its bytes
 * (a PUT's answer, and its chunks in the persistent buffer): each exits
 * once. NULL is a no-op. */
void gw_admit_hold(struct gw_admit_ticket *t);
/* gw_admit_exit of a ticket (void *, as cm_http_on_done wants), now. */
void gw_admit_done(void *ticket);
/* Gives up the waiters whose deadline is <= now_ns. */
void gw_admit_expire(struct gw_admit *a, uint64_t now_ns);
/* The earliest deadline of a waiter, or UINT64_MAX. */
uint64_t gw_admit_next_deadline(struct gw_admit *a);
void gw_admit_stats(struct gw_admit *a, struct gw_admit_stats *out);
/* The figures in Prometheus text (shoal_gateway_admit_*). */
struct cm_buf;
void gw_admit_expose(struct gw_admit *a, struct cm_buf *b);

#endif
