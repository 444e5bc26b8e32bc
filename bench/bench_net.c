/*
 * bench_net.c - the load engine: a lean HTTP/1.1 keep-alive client on
 * libevent (the only file of shoal-bench that includes libevent).
 *
 *   thread 0..T-1 (own event_base)
 *     tenant state ts[i] ---- conns [first, first+n) -- one request in flight each
 *        closed loop: a finished response immediately sends the next request;
 *                     conns [active, n) are parked (a conc= schedule moves active)
 *        open loop:   arrival timer -> queue of intended send times -> idle conn
 *                     (a rate= schedule thins arrivals drawn at its peak rate)
 *        trace:       due timer -> this thread's trace requests [next, due) -> idle conn
 *     tick (100 ms): request timeouts, SIGINT
 *     sched (10 ms): closed-loop schedules, only when a tenant has one
 *     stop timer:    end of the run phase; a trace replay also stops once
 *                    every request of the thread is answered
 *
 * Sockets are raw non-blocking fds watched by plain events (no bufferevents,
 * no evhttp): requests go out with one sendmsg (prebuilt header + a slice of
 * the shared random payload), responses are read into a per-thread buffer,
 * parsed in place (status line, Content-Length, chunked, Connection: close)
 * and body bytes are only counted. Everything a thread touches after start
 * is its own; the main thread reads stats only after joining.
 *
 * A PUT body of BN_EXPECT_MIN bytes or more goes out as curl sends it: the
 * headers with "Expect: 100-continue", the body after "100 Continue" or
 * BN_EXPECT_WAIT_NS without an answer; a final answer instead (a 503 from
 * an admission queue) ends the request with its body unsent. A write that
 * fails once the headers are out waits for the answer the server may have
 * sent before it closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"

#define RBUF_CAP (256u * 1024u)
#define CARRY_CAP (16u * 1024u)
#define HDR_CAP 1024u
/* Trace keys are percent-encoded into the request line: up to 3 bytes each. */
#define TRACE_HDR_CAP (HDR_CAP + 3u * BN_TRACE_KEY_MAX)
#define SCHED_TICK_NS 10000000u
#define PRE_CAP 512u
#define QUEUE_MAX (1u << 20)
#define READS_PER_EVENT 4
#define BN_EXPECT_MIN (1u << 20)           /* curl's threshold */
#define BN_EXPECT_WAIT_NS 1000000000ull /* curl's --expect100-timeout */

extern volatile sig_atomic_t bn_interrupted;

enum rstate {
    R_HEAD,
    R_BODY_LEN,
    R_BODY_CLOSE,
    R_CHUNK_SIZE,
    R_CHUNK_DATA,
    R_CHUNK_CRLF,
    R_TRAILER
};
enum cstate { C_DOWN, C_CONNECTING, C_READY };

struct bn_thread;
struct bn_ts;

struct bn_conn {
    struct bn_thread *th;
    struct bn_ts *ts;
    int fd;
    unsigned target;
    enum cstate state;
    struct event *rev, *wev, *retry, *cont;
    unsigned failures; /* consecutive; reset by a complete response */
    unsigned gen;      /* bumped on close: fd numbers get reused */
    int dead;          /* load phase: gave up on this connection */
    int in_idle;

    /* the request in flight */
    int busy;
    enum bn_op op;
    uint64_t start_ns; /* latency origin: send time, or intended time (open loop) */
    uint64_t sent_ns;  /* for --timeout */
    const char *hdr;   /* c->hbuf or the shared url-mode request */
    size_t hdr_len;
    uint64_t body_len;
    uint64_t woff;     /* bytes of hdr + body written */
    int expect;        /* the body waits for "100 Continue" (or cont) */
    int wbroken;       /* a write failed: only the answer may still come */
    char *hbuf;        /* r->hdr_cap bytes */
    char pre[PRE_CAP]; /* "Host: ...\r\nAuthorization: ...\r\n" */
    size_t pre_len;

    /* the response */
    enum rstate rs;
    unsigned status;
    int close_after;
    uint64_t remain;
    uint64_t body_bytes;
    char *carry; /* unparsed tail of the last read, CARRY_CAP */
    size_t carry_len;
};

struct bn_ts {
    const struct bn_tenant *t;
    size_t tidx;
    struct bn_thread *th;
    struct bn_rng rng;
    const struct bn_zipf *zipf;
    struct bn_conn *conns;
    unsigned nconns;

    struct bn_stats load, run;
    struct bn_sec *sec;       /* nsec */
    struct bn_hist *sec_hist; /* the current second's latencies */
    int64_t cur_sec;

    /* closed loop: conns [active, nconns) are parked */
    unsigned active;

    /* open loop */
    double rate; /* this thread's share (of the peak, with a schedule) */
    uint64_t next_ns;
    struct event *arrive;
    uint64_t *q; /* ring of intended send times */
    size_t qcap, qhead, qlen;
    struct bn_conn **idle;
    unsigned nidle;

    /* trace replay: this thread's requests of the tenant, as indices into the trace */
    uint32_t *tr_idx;
    size_t tr_n;
    size_t tr_next; /* first not sent */
    size_t tr_due;  /* first whose time has not come; [next, due) wait for a conn */

    /* load phase */
    unsigned load_busy;
    unsigned load_dead;
    int load_done;
};

struct bn_thread {
    struct bn_runner *r;
    unsigned id;
    pthread_t tid;
    struct event_base *base;
    struct event *tick, *stop;
    struct event *sched; /* NULL unless a closed-loop tenant has a schedule */
    size_t trace_left;   /* trace requests of this thread not yet answered */
    struct bn_ts *ts;    /* r->cfg.ntenants */
    char *rbuf;
    enum bn_phase phase;
    int stopping;
    unsigned load_left; /* tenants still loading */
    uint64_t t0, t_run, t_end, end_ns;
    uint64_t t_series; /* second 0 of the series: t_run - ceil(warmup) */
};

struct bn_runner {
    struct bn_run_cfg cfg;
    struct sockaddr_in *addrs;
    struct bn_zipf *zipfs;
    uint8_t *payload;
    uint64_t payload_len;
    char *url_req;
    size_t url_req_len;
    size_t hdr_cap;
    struct bn_thread *th;
    size_t nsec;
    _Atomic uint64_t *load_next; /* per tenant: next key to PUT, shared by threads */
    int precise;
};

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timeval
tv_of_ns(uint64_t ns)
{
    struct timeval tv = {(time_t)(ns / 1000000000u), (suseconds_t)(ns % 1000000000u / 1000u)};
    return tv;
}

static void conn_connect(struct bn_conn *c);
static void conn_next(struct bn_conn *c);
static void conn_write(struct bn_conn *c);

static unsigned
share(unsigned total, unsigned nth, unsigned i)
{
    return total / nth + (i < total % nth ? 1u : 0u);
}

/* Intended send time of the k-th trace request of ts. */
static uint64_t
trace_time(const struct bn_ts *ts, size_t k)
{
    const struct bn_run_cfg *cfg = &ts->th->r->cfg;
    return ts->th->t0 + (uint64_t)(cfg->trace->ent[ts->tr_idx[k]].t / cfg->trace_speed * 1e9);
}

/*
 * Next open-loop arrival after from. A schedule is a Poisson process whose
 * rate varies; it is drawn by thinning (Lewis and Shedler): candidates at the
 * peak rate, each kept with probability rate(t) / peak. Candidates past the
 * end of the run are returned as they are, so a rate of 0 cannot spin.
 */
static uint64_t
next_arrival(struct bn_ts *ts, uint64_t from)
{
    const struct bn_tenant *t = ts->t;
    const struct bn_thread *th = ts->th;

    for (;;) {
        from += bn_rng_exp_ns(&ts->rng, ts->rate);
        if (t->sched.kind == BN_SCHED_NONE || from > th->t_end ||
            bn_rng_double(&ts->rng) * t->rate <
                bn_sched_at(&t->sched, (double)(from - th->t0) / 1e9)) {
            return from;
        }
    }
}

/* Closed loop: this thread's share of the scheduled concurrency now. */
static unsigned
sched_active(const struct bn_ts *ts, uint64_t now)
{
    const struct bn_thread *th = ts->th;
    double v = bn_sched_at(&ts->t->sched, (double)(now - th->t0) / 1e9);
    unsigned n = share((unsigned)lround(v), th->r->cfg.threads, th->id);
    return n < ts->nconns ? n : ts->nconns;
}

/* ---- statistics ---------------------------------------------------------- */

static void
sec_flush(struct bn_ts *ts)
{
    if (ts->cur_sec < 0 || ts->sec_hist->count == 0) {
        return;
    }
    struct bn_sec *s = &ts->sec[ts->cur_sec];
    struct bn_hist *h = ts->sec_hist;
    uint32_t n = 0;
    for (unsigned i = 0; i < BN_HIST_BUCKETS; i++) {
        n += h->b[i] != 0;
    }
    s->idx = calloc(n, sizeof(*s->idx));
    s->cnt = calloc(n, sizeof(*s->cnt));
    if (s->idx == NULL || s->cnt == NULL) {
        free(s->idx);
        free(s->cnt);
        s->idx = NULL;
        s->cnt = NULL;
        s->nb = 0;
        bn_hist_reset(h);
        return;
    }
    n = 0;
    for (unsigned i = 0; i < BN_HIST_BUCKETS; i++) {
        if (h->b[i] != 0) {
            s->idx[n] = i;
            s->cnt[n] = h->b[i];
            n++;
        }
    }
    s->nb = n;
    bn_hist_reset(h);
}

/*
 * One finished (or failed) request; st is an HTTP status or a BN_ERR_* slot.
 * A trace may read or delete a key before it writes it: that 404 is a miss.
 */
static void
record(struct bn_ts *ts, unsigned st, enum bn_op op, uint64_t bytes, uint64_t start, uint64_t now)
{
    struct bn_thread *th = ts->th;
    struct bn_stats *s;
    int ok = st >= 200 && st < 300;
    int miss = st == 404 && op != BN_OP_PUT && th->r->cfg.trace != NULL;
    uint64_t lat = now > start ? now - start : 0;

    if (th->phase == BN_PHASE_LOAD) {
        s = &ts->load;
    } else {
        if (ts->sec != NULL && now >= th->t_series) {
            int64_t sec = (int64_t)((now - th->t_series) / 1000000000u);
            if ((size_t)sec < th->r->nsec) {
                if (sec != ts->cur_sec) {
                    sec_flush(ts);
                    ts->cur_sec = sec;
                }
                struct bn_sec *x = &ts->sec[sec];
                if (ok) {
                    x->ops++;
                    x->bytes += bytes;
                    bn_hist_record(ts->sec_hist, lat);
                } else if (!miss) {
                    x->errors++;
                }
            }
        }
        if (now < th->t_run || now > th->t_end) {
            return;
        }
        s = &ts->run;
    }
    s->status[st < BN_STATUS_MAX ? st : BN_ERR_PROTO]++;
    if (ok) {
        s->ops++;
        s->bytes += bytes;
        s->reads += op == BN_OP_GET;
        s->writes += op == BN_OP_PUT;
        s->deletes += op == BN_OP_DELETE;
        bn_hist_record(&s->hist, lat);
    } else if (miss) {
        s->misses++;
    } else {
        s->errors++;
    }
}

/* The request in flight on c got its answer or failed. */
static void
resolved(struct bn_conn *c)
{
    struct bn_thread *th = c->th;

    if (th->phase == BN_PHASE_LOAD) {
        c->ts->load_busy--;
    } else if (th->r->cfg.trace != NULL && --th->trace_left == 0) {
        th->stopping = 1;
        event_base_loopbreak(th->base);
    }
}

/* ---- connection life cycle ------------------------------------------------ */

static void
idle_remove(struct bn_conn *c)
{
    struct bn_ts *ts = c->ts;
    if (!c->in_idle) {
        return;
    }
    for (unsigned i = 0; i < ts->nidle; i++) {
        if (ts->idle[i] == c) {
            ts->idle[i] = ts->idle[--ts->nidle];
            break;
        }
    }
    c->in_idle = 0;
}

static void
conn_close(struct bn_conn *c)
{
    idle_remove(c);
    if (c->fd >= 0) {
        event_del(c->rev);
        event_del(c->wev);
        close(c->fd);
        c->fd = -1;
    }
    c->state = C_DOWN;
    c->busy = 0;
    c->carry_len = 0;
    c->gen++;
    if (c->cont != NULL) {
        evtimer_del(c->cont);
    }
}

static void load_finish(struct bn_ts *ts);

/* Load phase: all of a tenant's connections on this thread gave up. */
static void
load_give_up(struct bn_conn *c)
{
    struct bn_ts *ts = c->ts;
    c->dead = 1;
    if (++ts->load_dead < ts->nconns) {
        return;
    }
    /* Count the keys nobody will PUT now as connection errors. */
    uint64_t n = 0;
    for (;;) {
        uint64_t k = atomic_fetch_add(&c->th->r->load_next[ts->tidx], 1);
        if (k >= ts->t->keys) {
            break;
        }
        n++;
    }
    ts->load.status[BN_ERR_CONN] += n;
    ts->load.errors += n;
    load_finish(ts);
}

static void
conn_retry_later(struct bn_conn *c)
{
    if (c->th->stopping) {
        return;
    }
    if (c->th->phase == BN_PHASE_LOAD && c->failures > 5) {
        load_give_up(c);
        return;
    }
    if (c->failures == 0) {
        conn_connect(c);
        return;
    }
    unsigned sh = c->failures > 10 ? 10 : c->failures;
    uint64_t delay = 1000000ull << sh; /* 2 ms .. ~1 s */
    struct timeval tv = tv_of_ns(delay);
    evtimer_add(c->retry, &tv);
}

/* The request in flight (if any) failed with st; drop the socket and redial. */
static void
conn_fail(struct bn_conn *c, unsigned st)
{
    if (c->busy) {
        record(c->ts, st, c->op, 0, c->start_ns, now_ns());
        resolved(c);
    } else if (c->th->phase == BN_PHASE_RUN) {
        uint64_t now = now_ns();
        record(c->ts, st, BN_OP_GET, 0, now, now);
    }
    c->failures++;
    conn_close(c);
    conn_retry_later(c);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
    conn_connect(arg);
}

static void
conn_ready(struct bn_conn *c)
{
    c->state = C_READY;
    event_add(c->rev, NULL);
    conn_next(c);
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct bn_conn *c = arg;
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            conn_fail(c, BN_ERR_CONN);
            return;
        }
        conn_ready(c);
        return;
    }
    if (c->busy) {
        conn_write(c);
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg);

static void
conn_connect(struct bn_conn *c)
{
    struct bn_runner *r = c->th->r;
    if (c->th->stopping || c->state != C_DOWN || c->dead) {
        return;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        c->failures++;
        conn_retry_later(c);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    event_assign(c->rev, c->th->base, fd, EV_READ | EV_PERSIST, on_readable, c);
    event_assign(c->wev, c->th->base, fd, EV_WRITE, on_writable, c);
    const struct sockaddr_in *sa = &r->addrs[c->target];
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
        conn_ready(c);
        return;
    }
    if (errno != EINPROGRESS) {
        conn_fail(c, BN_ERR_CONN);
        return;
    }
    c->state = C_CONNECTING;
    event_add(c->wev, NULL);
}

/* ---- requests ----------------------------------------------------------- */

static char *
put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

static char *
put_str(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, lit) put_str((p), (lit), sizeof(lit) - 1)

/* Sends op on prefix + key (URL-ready, klen bytes) with a size-byte body for a PUT. */
static void
conn_send(struct bn_conn *c, enum bn_op op, const char *key, size_t klen, uint64_t size,
          uint64_t start)
{
    static const struct {
        const char *s;
        size_t n;
    } line[] = {[BN_OP_GET] = {"GET /v1/objects/", 16},
                [BN_OP_PUT] = {"PUT /v1/objects/", 16},
                [BN_OP_DELETE] = {"DELETE /v1/objects/", 19}};
    struct bn_runner *r = c->th->r;

    c->busy = 1;
    c->op = op;
    c->start_ns = start;
    c->sent_ns = now_ns();
    c->woff = 0;
    c->rs = R_HEAD;
    c->status = 0;
    c->close_after = 0;
    c->body_bytes = 0;
    c->body_len = 0;
    c->expect = 0;
    c->wbroken = 0;
    if (r->cfg.url_mode) {
        c->hdr = r->url_req;
        c->hdr_len = r->url_req_len;
    } else {
        char *p = c->hbuf;
        p = put_str(p, line[op].s, line[op].n);
        p = put_str(p, r->cfg.prefix, strlen(r->cfg.prefix));
        p = put_str(p, key, klen);
        p = PUT_LIT(p, " HTTP/1.1\r\n");
        p = put_str(p, c->pre, c->pre_len);
        if (op == BN_OP_PUT) {
            c->body_len = size;
            p = PUT_LIT(p, "Content-Length: ");
            p = put_u64(p, size);
            p = PUT_LIT(p, "\r\n");
            if (size >= BN_EXPECT_MIN) {
                struct timeval tv = tv_of_ns(BN_EXPECT_WAIT_NS);

                p = PUT_LIT(p, "Expect: 100-continue\r\n");
                c->expect = 1;
                evtimer_add(c->cont, &tv);
            }
        }
        p = PUT_LIT(p, "\r\n");
        c->hdr = c->hbuf;
        c->hdr_len = (size_t)(p - c->hbuf);
    }
    conn_write(c);
}

/* A request of the tenant's own mix (or the load phase's PUT of keynum). */
static void
conn_send_drawn(struct bn_conn *c, int load, uint64_t keynum, uint64_t start)
{
    struct bn_ts *ts = c->ts;
    const struct bn_tenant *t = ts->t;
    char key[24];
    enum bn_op op = BN_OP_PUT;

    if (c->th->r->cfg.url_mode) {
        conn_send(c, BN_OP_GET, NULL, 0, 0, start);
        return;
    }
    if (!load) {
        op = bn_rng_double(&ts->rng) < t->read ? BN_OP_GET : BN_OP_PUT;
        keynum = bn_zipf_key(ts->zipf, &ts->rng);
    }
    uint64_t sz = t->size_min;
    if (op == BN_OP_PUT && t->size_max > t->size_min) {
        sz += bn_rng_next(&ts->rng) % (t->size_max - t->size_min + 1);
    }
    conn_send(c, op, key, (size_t)(put_u64(key, keynum) - key), sz, start);
}

static void
conn_write(struct bn_conn *c)
{
    struct bn_runner *r = c->th->r;
    uint64_t total = c->expect ? c->hdr_len : c->hdr_len + c->body_len;

    while (c->woff < total && !c->wbroken) {
        struct iovec iov[2];
        int n = 0;
        if (c->woff < c->hdr_len) {
            iov[n].iov_base = (void *)(c->hdr + c->woff);
            iov[n].iov_len = c->hdr_len - c->woff;
            n++;
        }
        if (c->body_len > 0) {
            uint64_t boff = c->woff > c->hdr_len ? c->woff - c->hdr_len : 0;
            iov[n].iov_base = r->payload + boff;
            iov[n].iov_len = c->body_len - boff;
            n++;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                event_add(c->wev, NULL);
                return;
            }
            if (errno == EINTR) {
                continue;
            }
            if (c->woff >= c->hdr_len) {
                c->wbroken = 1; /* on_readable takes the answer, or fails */
                return;
            }
            conn_fail(c, BN_ERR_CONN);
            return;
        }
        c->woff += (uint64_t)w;
    }
}

/* "100 Continue", or no answer within BN_EXPECT_WAIT_NS: the body goes. */
static void
conn_continue(struct bn_conn *c)
{
    if (c->busy && c->expect) {
        c->expect = 0;
        evtimer_del(c->cont);
        conn_write(c);
    }
}

static void
on_continue(evutil_socket_t fd, short what, void *arg)
{
    conn_continue(arg);
}

/* Picks the next request for an idle, connected conn (or parks it). */
static void
conn_next(struct bn_conn *c)
{
    struct bn_ts *ts = c->ts;
    struct bn_thread *th = c->th;

    if (th->stopping || c->state != C_READY || c->busy) {
        return;
    }
    if (th->phase == BN_PHASE_LOAD) {
        uint64_t k = atomic_fetch_add(&th->r->load_next[ts->tidx], 1);
        if (k < ts->t->keys) {
            ts->load_busy++;
            conn_send_drawn(c, 1, k, now_ns());
            return;
        }
        if (ts->load_busy == 0) {
            load_finish(ts);
        }
        return;
    }
    const struct bn_trace *tr = th->r->cfg.trace;
    if (tr != NULL) {
        if (ts->tr_next < ts->tr_due) {
            const struct bn_trace_ent *e = &tr->ent[ts->tr_idx[ts->tr_next]];
            uint64_t intended = trace_time(ts, ts->tr_next++);
            conn_send(c, (enum bn_op)e->op, tr->keys + e->key, e->klen, e->size, intended);
            return;
        }
    } else if (ts->t->loop == BN_LOOP_CLOSED) {
        if ((unsigned)(c - ts->conns) < ts->active) {
            conn_send_drawn(c, 0, 0, now_ns());
        }
        return;
    } else if (ts->qlen > 0) {
        uint64_t intended = ts->q[ts->qhead];
        ts->qhead = (ts->qhead + 1) % ts->qcap;
        ts->qlen--;
        conn_send_drawn(c, 0, 0, intended);
        return;
    }
    c->in_idle = 1;
    ts->idle[ts->nidle++] = c;
}

static void
load_finish(struct bn_ts *ts)
{
    struct bn_thread *th = ts->th;
    if (ts->load_done) {
        return;
    }
    ts->load_done = 1;
    if (--th->load_left == 0) {
        th->stopping = 1;
        event_base_loopbreak(th->base);
    }
}

/* Response finished: account, then reuse or redial the connection. */
static void
conn_done(struct bn_conn *c)
{
    struct bn_ts *ts = c->ts;
    uint64_t bytes = c->op == BN_OP_PUT ? c->body_len : c->body_bytes;
    record(ts, c->status, c->op, bytes, c->start_ns, now_ns());
    resolved(c);
    c->busy = 0;
    c->failures = 0;
    if (c->close_after || c->woff < c->hdr_len + c->body_len) {
        conn_close(c);
        conn_connect(c);
        return;
    }
    conn_next(c);
}

/* ---- response parsing ------------------------------------------------------ */

static int
hdr_name_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0) {
        return 0;
    }
    const char *v = line + nl + 1;
    const char *e = line + len;
    while (v < e && (*v == ' ' || *v == '\t')) {
        v++;
    }
    while (e > v && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    *val = v;
    *vlen = (size_t)(e - v);
    return 1;
}

static int
contains_token(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= n; i++) {
        if (strncasecmp(v + i, tok, tl) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Parses a complete header block p[0..n) (ending in CRLFCRLF). */
static int
parse_head(struct bn_conn *c, const char *p, size_t n)
{
    if (n < 16 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ') {
        return -1;
    }
    unsigned st = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return -1;
        }
        st = st * 10 + (unsigned)(p[i] - '0');
    }
    if (st < 100 || st >= BN_STATUS_MAX) {
        return -1;
    }
    int http10 = p[7] == '0';
    int chunked = 0, have_len = 0, keep = 0, close = 0;
    uint64_t clen = 0;
    const char *line = memchr(p, '\n', n);
    const char *end = p + n;
    while (line != NULL && ++line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl == NULL) {
            break;
        }
        size_t ll = (size_t)(nl - line);
        if (ll > 0 && line[ll - 1] == '\r') {
            ll--;
        }
        const char *v;
        size_t vl;
        if (hdr_name_is(line, ll, "content-length", &v, &vl)) {
            if (bn_parse_u64(v, vl, &clen) != 0) {
                return -1;
            }
            have_len = 1;
        } else if (hdr_name_is(line, ll, "transfer-encoding", &v, &vl)) {
            chunked = contains_token(v, vl, "chunked");
        } else if (hdr_name_is(line, ll, "connection", &v, &vl)) {
            close = contains_token(v, vl, "close");
            keep = contains_token(v, vl, "keep-alive");
        }
        line = nl;
    }
    if (st < 200) {
        if (st == 100) {
            conn_continue(c);
        }
        return 1; /* interim response: the real one follows */
    }
    c->status = st;
    c->close_after = close || (http10 && !keep);
    if (st == 204 || st == 304) {
        c->rs = R_HEAD;
        return 2;
    }
    if (chunked) {
        c->rs = R_CHUNK_SIZE;
    } else if (have_len) {
        c->remain = clen;
        c->rs = R_BODY_LEN;
        if (clen == 0) {
            return 2;
        }
    } else {
        c->rs = R_BODY_CLOSE;
        c->close_after = 1;
    }
    return 0;
}

/*
 * Consumes a prefix of p[0..n): returns the bytes used (> 0), 0 when more
 * input is needed (the caller keeps the rest), -1 on a protocol error.
 * *done is set when the response is complete.
 */
static ssize_t
parse_step(struct bn_conn *c, const char *p, size_t n, int *done)
{
    const char *e;
    uint64_t k;

    switch (c->rs) {
    case R_HEAD:
        e = memmem(p, n, "\r\n\r\n", 4);
        if (e == NULL) {
            return n >= CARRY_CAP ? -1 : 0;
        }
        switch (parse_head(c, p, (size_t)(e - p) + 4)) {
        case -1:
            return -1;
        case 2:
            *done = 1;
            break;
        default:
            break;
        }
        return (e - p) + 4;
    case R_BODY_LEN:
    case R_CHUNK_DATA:
        k = c->remain < n ? c->remain : n;
        c->remain -= k;
        c->body_bytes += k;
        if (c->remain == 0) {
            if (c->rs == R_BODY_LEN) {
                *done = 1;
            } else {
                c->rs = R_CHUNK_CRLF;
            }
        }
        return (ssize_t)k;
    case R_BODY_CLOSE:
        c->body_bytes += n;
        return (ssize_t)n;
    case R_CHUNK_SIZE: {
        e = memmem(p, n, "\r\n", 2);
        if (e == NULL) {
            return n >= 1024 ? -1 : 0;
        }
        uint64_t sz = 0;
        const char *q = p;
        int digits = 0;
        for (; q < e; q++) {
            int d;
            if (*q >= '0' && *q <= '9') {
                d = *q - '0';
            } else if ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'f') {
                d = (*q | 0x20) - 'a' + 10;
            } else {
                break;
            }
            if (sz >> 59) {
                return -1;
            }
            sz = sz * 16 + (uint64_t)d;
            digits++;
        }
        if (digits == 0 || (q < e && *q != ';' && *q != ' ')) {
            return -1;
        }
        if (sz == 0) {
            c->rs = R_TRAILER;
        } else {
            c->remain = sz;
            c->rs = R_CHUNK_DATA;
        }
        return (e - p) + 2;
    }
    case R_CHUNK_CRLF:
        if (n < 2) {
            return 0;
        }
        if (p[0] != '\r' || p[1] != '\n') {
            return -1;
        }
        c->rs = R_CHUNK_SIZE;
        return 2;
    case R_TRAILER:
        e = memmem(p, n, "\r\n", 2);
        if (e == NULL) {
            return n >= CARRY_CAP ? -1 : 0;
        }
        if (e == p) {
            *done = 1;
        }
        return (e - p) + 2;
    }
    return -1;
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct bn_conn *c = arg;
    char *buf = c->th->rbuf;

    for (int iter = 0; iter < READS_PER_EVENT; iter++) {
        size_t have = c->carry_len;
        if (have > 0) {
            memcpy(buf, c->carry, have);
            c->carry_len = 0;
        }
        ssize_t n = read(c->fd, buf + have, RBUF_CAP - have);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                if (have > 0) {
                    memcpy(c->carry, buf, have);
                    c->carry_len = have;
                }
                return;
            }
            conn_fail(c, BN_ERR_CONN);
            return;
        }
        if (n == 0) {
            if (c->busy && c->rs == R_BODY_CLOSE) {
                c->close_after = 1;
                conn_done(c);
                return;
            }
            if (c->busy) {
                conn_fail(c, BN_ERR_CONN);
                return;
            }
            /* An idle keep-alive connection closed by the server: redial quietly. */
            conn_close(c);
            conn_connect(c);
            return;
        }
        size_t total = have + (size_t)n, off = 0;
        while (off < total) {
            if (!c->busy) {
                conn_fail(c, BN_ERR_PROTO);
                return;
            }
            int done = 0;
            ssize_t used = parse_step(c, buf + off, total - off, &done);
            if (used < 0) {
                conn_fail(c, BN_ERR_PROTO);
                return;
            }
            if (used == 0) {
                memcpy(c->carry, buf + off, total - off);
                c->carry_len = total - off;
                break;
            }
            off += (size_t)used;
            if (done) {
                unsigned gen = c->gen;
                conn_done(c);
                if (c->gen != gen || c->state != C_READY) {
                    return; /* redialed: leftover bytes belong to the old socket */
                }
            }
        }
        if ((size_t)n < RBUF_CAP - have) {
            return;
        }
    }
}

/* ---- open loop and trace replay ---------------------------------------------- */

static void
wake_idle(struct bn_ts *ts)
{
    while (ts->nidle > 0 && (ts->th->r->cfg.trace ? ts->tr_next < ts->tr_due : ts->qlen > 0)) {
        struct bn_conn *c = ts->idle[--ts->nidle];
        c->in_idle = 0;
        conn_next(c);
    }
}

static void
on_arrive(evutil_socket_t fd, short what, void *arg)
{
    struct bn_ts *ts = arg;
    struct bn_thread *th = ts->th;
    uint64_t now = now_ns();

    if (th->stopping) {
        return;
    }
    while (ts->next_ns <= now) {
        if (ts->qlen == ts->qcap) {
            uint64_t *nq = ts->qcap < QUEUE_MAX ? malloc(ts->qcap * 2 * sizeof(*nq)) : NULL;
            if (nq == NULL) {
                record(ts, BN_ERR_BACKLOG, BN_OP_GET, 0, ts->next_ns, now);
                ts->next_ns = next_arrival(ts, ts->next_ns);
                continue;
            }
            size_t ncap = ts->qcap * 2;
            for (size_t i = 0; i < ts->qlen; i++) {
                nq[i] = ts->q[(ts->qhead + i) % ts->qcap];
            }
            free(ts->q);
            ts->q = nq;
            ts->qcap = ncap;
            ts->qhead = 0;
        }
        ts->q[(ts->qhead + ts->qlen) % ts->qcap] = ts->next_ns;
        ts->qlen++;
        ts->next_ns = next_arrival(ts, ts->next_ns);
    }
    wake_idle(ts);
    struct timeval tv = tv_of_ns(ts->next_ns - now);
    evtimer_add(ts->arrive, &tv);
}

/* Trace replay: requests whose time has come go out on idle conns. */
static void
on_trace_due(evutil_socket_t fd, short what, void *arg)
{
    struct bn_ts *ts = arg;
    uint64_t now = now_ns();

    if (ts->th->stopping) {
        return;
    }
    while (ts->tr_due < ts->tr_n && trace_time(ts, ts->tr_due) <= now) {
        ts->tr_due++;
    }
    wake_idle(ts);
    if (ts->tr_due < ts->tr_n) {
        struct timeval tv = tv_of_ns(trace_time(ts, ts->tr_due) - now);
        evtimer_add(ts->arrive, &tv);
    }
}

/* Closed-loop schedules: unpark conns when the target rises (they park themselves). */
static void
on_sched(evutil_socket_t fd, short what, void *arg)
{
    struct bn_thread *th = arg;
    uint64_t now = now_ns();

    for (size_t i = 0; i < th->r->cfg.ntenants; i++) {
        struct bn_ts *ts = &th->ts[i];
        if (ts->t->loop != BN_LOOP_CLOSED || ts->t->sched.kind == BN_SCHED_NONE) {
            continue;
        }
        unsigned old = ts->active;
        ts->active = sched_active(ts, now);
        for (unsigned j = old; j < ts->active; j++) {
            conn_next(&ts->conns[j]);
        }
    }
}

/* ---- per-thread loop ---------------------------------------------------------- */

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct bn_thread *th = arg;
    uint64_t now = now_ns();
    uint64_t tmo = (uint64_t)(th->r->cfg.timeout_s * 1e9);

    if (bn_interrupted) {
        th->stopping = 1;
        event_base_loopbreak(th->base);
        return;
    }
    for (size_t i = 0; i < th->r->cfg.ntenants; i++) {
        struct bn_ts *ts = &th->ts[i];
        for (unsigned j = 0; j < ts->nconns; j++) {
            struct bn_conn *c = &ts->conns[j];
            if (c->busy && now - c->sent_ns > tmo) {
                conn_fail(c, BN_ERR_TIMEOUT);
            }
        }
    }
}

static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct bn_thread *th = arg;
    th->stopping = 1;
    event_base_loopbreak(th->base);
}

static void *
thread_main(void *arg)
{
    struct bn_thread *th = arg;
    struct bn_runner *r = th->r;
    uint64_t now = now_ns();

    th->stopping = 0;
    th->load_left = 0;
    th->trace_left = 0;
    struct timeval tv = {0, 100000};
    evtimer_add(th->tick, &tv);
    if (th->phase == BN_PHASE_RUN) {
        tv = tv_of_ns(th->t_end > now ? th->t_end - now : 0);
        evtimer_add(th->stop, &tv);
        if (th->sched != NULL) {
            tv = tv_of_ns(SCHED_TICK_NS);
            evtimer_add(th->sched, &tv);
        }
    }
    for (size_t i = 0; i < r->cfg.ntenants; i++) {
        struct bn_ts *ts = &th->ts[i];
        ts->active = ts->nconns;
        if (th->phase == BN_PHASE_LOAD) {
            ts->load_busy = 0;
            ts->load_dead = 0;
            ts->load_done = 0;
            th->load_left++;
        } else if (r->cfg.trace != NULL) {
            ts->tr_next = ts->tr_due = 0;
            th->trace_left += ts->tr_n;
            if (ts->tr_n > 0) {
                uint64_t due = trace_time(ts, 0);
                tv = tv_of_ns(due > now ? due - now : 0);
                evtimer_add(ts->arrive, &tv);
            }
        } else if (ts->t->loop == BN_LOOP_OPEN) {
            ts->next_ns = next_arrival(ts, th->t0);
            tv = tv_of_ns(ts->next_ns > now ? ts->next_ns - now : 0);
            evtimer_add(ts->arrive, &tv);
        } else if (ts->t->sched.kind != BN_SCHED_NONE) {
            ts->active = sched_active(ts, now);
        }
    }
    for (size_t i = 0; i < r->cfg.ntenants; i++) {
        struct bn_ts *ts = &th->ts[i];
        if (th->phase == BN_PHASE_LOAD && ts->nconns == 0) {
            ts->load_done = 1;
            th->load_left--;
        }
        for (unsigned j = 0; j < ts->nconns; j++) {
            struct bn_conn *c = &ts->conns[j];
            if (c->state == C_DOWN) {
                conn_connect(c);
            } else {
                conn_next(c);
            }
        }
    }
    if (th->phase == BN_PHASE_LOAD ? th->load_left > 0
                                   : r->cfg.trace == NULL || th->trace_left > 0) {
        event_base_dispatch(th->base);
    }
    th->end_ns = now_ns();
    th->stopping = 1;
    evtimer_del(th->tick);
    evtimer_del(th->stop);
    if (th->sched != NULL) {
        evtimer_del(th->sched);
    }
    for (size_t i = 0; i < r->cfg.ntenants; i++) {
        struct bn_ts *ts = &th->ts[i];
        if (ts->arrive != NULL) {
            evtimer_del(ts->arrive);
        }
        ts->qlen = 0;
        ts->nidle = 0;
        if (th->phase == BN_PHASE_RUN) {
            sec_flush(ts);
        }
        for (unsigned j = 0; j < ts->nconns; j++) {
            struct bn_conn *c = &ts->conns[j];
            c->in_idle = 0;
            c->dead = 0;
            evtimer_del(c->retry);
            if (c->busy || c->state != C_READY) {
                /* Abandoned mid-request: the socket cannot be reused. */
                conn_close(c);
                c->failures = 0;
            }
        }
    }
    return NULL;
}

/* ---- runner --------------------------------------------------------------------- */

static int
resolve(const struct bn_target *t, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons(t->port);
    const char *h = strcmp(t->host, "localhost") == 0 ? "127.0.0.1" : t->host;
    return inet_pton(AF_INET, h, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static int
conn_init(struct bn_thread *th, struct bn_ts *ts, struct bn_conn *c, unsigned target)
{
    struct bn_runner *r = th->r;
    memset(c, 0, sizeof(*c));
    c->th = th;
    c->ts = ts;
    c->fd = -1;
    c->target = target;
    c->rev = event_new(th->base, -1, 0, on_readable, c);
    c->wev = event_new(th->base, -1, 0, on_writable, c);
    c->retry = evtimer_new(th->base, on_retry, c);
    c->cont = evtimer_new(th->base, on_continue, c);
    c->carry = malloc(CARRY_CAP);
    c->hbuf = malloc(r->hdr_cap);
    if (c->rev == NULL || c->wev == NULL || c->retry == NULL || c->cont == NULL ||
        c->carry == NULL || c->hbuf == NULL) {
        return -ENOMEM;
    }
    const struct bn_target *tg = &r->cfg.targets[target];
    int n;
    if (r->cfg.url_mode) {
        n = 0;
    } else {
        n = snprintf(c->pre, sizeof(c->pre), "Host: %s:%u\r\nAuthorization: Bearer %s\r\n",
                     tg->host, tg->port, ts->t->key);
    }
    if (n < 0 || (size_t)n >= sizeof(c->pre)) {
        return -EINVAL;
    }
    c->pre_len = (size_t)n;
    return 0;
}

static int
ts_init(struct bn_runner *r, struct bn_thread *th, size_t i, unsigned *rr)
{
    struct bn_ts *ts = &th->ts[i];
    const struct bn_tenant *t = &r->cfg.tenants[i];
    unsigned nth = r->cfg.threads;

    ts->t = t;
    ts->tidx = i;
    ts->th = th;
    ts->zipf = &r->zipfs[i];
    ts->cur_sec = -1;
    bn_rng_seed(&ts->rng, r->cfg.seed ^ (0x9e3779b97f4a7c15ull * (i + 1)) ^
                              (0xc2b2ae3d27d4eb4full * (th->id + 1)));
    bn_hist_reset(&ts->load.hist);
    bn_hist_reset(&ts->run.hist);
    if (r->cfg.trace == NULL && t->loop == BN_LOOP_CLOSED) {
        ts->nconns = share(t->conc, nth, th->id);
    } else {
        ts->rate = t->rate / nth;
        ts->nconns = share(t->conns, nth, th->id);
        if (ts->nconns == 0) {
            ts->nconns = 1;
        }
        ts->idle = calloc(ts->nconns, sizeof(*ts->idle));
        if (r->cfg.trace != NULL) {
            ts->arrive = evtimer_new(th->base, on_trace_due, ts);
        } else {
            ts->qcap = 1024;
            ts->q = malloc(ts->qcap * sizeof(*ts->q));
            ts->arrive = evtimer_new(th->base, on_arrive, ts);
        }
        if ((ts->q == NULL && r->cfg.trace == NULL) || ts->idle == NULL || ts->arrive == NULL) {
            return -ENOMEM;
        }
    }
    if (r->cfg.series) {
        ts->sec = calloc(r->nsec, sizeof(*ts->sec));
        ts->sec_hist = malloc(sizeof(*ts->sec_hist));
        if (ts->sec == NULL || ts->sec_hist == NULL) {
            return -ENOMEM;
        }
        bn_hist_reset(ts->sec_hist);
    }
    ts->conns = calloc(ts->nconns ? ts->nconns : 1, sizeof(*ts->conns));
    if (ts->conns == NULL) {
        return -ENOMEM;
    }
    for (unsigned j = 0; j < ts->nconns; j++) {
        int rc = conn_init(th, ts, &ts->conns[j], (*rr)++ % r->cfg.ntargets);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/*
 * Deals the trace's requests to the threads by key, so that the requests on
 * one key leave from one thread in trace order.
 */
static int
trace_split(struct bn_runner *r)
{
    const struct bn_trace *tr = r->cfg.trace;
    unsigned nth = r->cfg.threads;
    uint32_t *owner = malloc((tr->n ? tr->n : 1) * sizeof(*owner));

    if (owner == NULL) {
        return -ENOMEM;
    }
    for (size_t k = 0; k < tr->n; k++) {
        const struct bn_trace_ent *e = &tr->ent[k];
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint32_t j = 0; j < e->klen; j++) {
            h = (h ^ (unsigned char)tr->keys[e->key + j]) * 0x100000001b3ull;
        }
        owner[k] = (uint32_t)(h % nth);
        r->th[owner[k]].ts[e->tenant].tr_n++;
    }
    for (unsigned i = 0; i < nth; i++) {
        for (size_t j = 0; j < r->cfg.ntenants; j++) {
            struct bn_ts *ts = &r->th[i].ts[j];
            ts->tr_idx = malloc((ts->tr_n ? ts->tr_n : 1) * sizeof(*ts->tr_idx));
            if (ts->tr_idx == NULL) {
                free(owner);
                return -ENOMEM;
            }
            ts->tr_n = 0;
        }
    }
    for (size_t k = 0; k < tr->n; k++) {
        struct bn_ts *ts = &r->th[owner[k]].ts[tr->ent[k].tenant];
        ts->tr_idx[ts->tr_n++] = (uint32_t)k;
    }
    free(owner);
    return 0;
}

int
bn_runner_create(const struct bn_run_cfg *cfg, struct bn_runner **out)
{
    int rc = -ENOMEM;
    struct bn_runner *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return -ENOMEM;
    }
    r->cfg = *cfg;
    r->nsec = (size_t)ceil(cfg->warmup_s) + (size_t)ceil(cfg->duration_s) + 1;
    r->addrs = calloc(cfg->ntargets, sizeof(*r->addrs));
    r->zipfs = calloc(cfg->ntenants, sizeof(*r->zipfs));
    r->th = calloc(cfg->threads, sizeof(*r->th));
    r->load_next = calloc(cfg->ntenants, sizeof(*r->load_next));
    if (r->addrs == NULL || r->zipfs == NULL || r->th == NULL || r->load_next == NULL) {
        goto out;
    }
    for (size_t i = 0; i < cfg->ntargets; i++) {
        rc = resolve(&cfg->targets[i], &r->addrs[i]);
        if (rc != 0) {
            goto out;
        }
    }
    uint64_t maxsz = cfg->trace != NULL ? cfg->trace->max_put : 0;
    int closed_sched = 0;
    r->precise = cfg->trace != NULL;
    r->hdr_cap = cfg->trace != NULL ? TRACE_HDR_CAP : HDR_CAP;
    for (size_t i = 0; i < cfg->ntenants; i++) {
        const struct bn_tenant *t = &cfg->tenants[i];
        rc = bn_zipf_init(&r->zipfs[i], t->keys, t->zipf);
        if (rc != 0) {
            goto out;
        }
        if (cfg->trace != NULL) {
            continue;
        }
        if (t->size_max > maxsz) {
            maxsz = t->size_max;
        }
        if (t->loop == BN_LOOP_OPEN) {
            r->precise = 1;
        } else if (t->sched.kind != BN_SCHED_NONE) {
            closed_sched = 1;
        }
    }
    rc = -ENOMEM;
    if (cfg->url_mode) {
        const struct bn_target *tg = &cfg->targets[0];
        r->url_req = malloc(HDR_CAP);
        if (r->url_req == NULL) {
            goto out;
        }
        int n = snprintf(r->url_req, HDR_CAP, "GET %s HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
                         cfg->url_path, tg->host, tg->port);
        if (n < 0 || n >= (int)HDR_CAP) {
            rc = -EINVAL;
            goto out;
        }
        r->url_req_len = (size_t)n;
    } else if (maxsz > 0) {
        r->payload = malloc(maxsz);
        if (r->payload == NULL) {
            goto out;
        }
        struct bn_rng g;
        bn_rng_seed(&g, cfg->seed);
        for (uint64_t off = 0; off < maxsz; off += 8) {
            uint64_t v = bn_rng_next(&g);
            memcpy(r->payload + off, &v, maxsz - off < 8 ? maxsz - off : 8);
        }
        r->payload_len = maxsz;
    }
    unsigned rr = 0;
    for (unsigned i = 0; i < cfg->threads; i++) {
        struct bn_thread *th = &r->th[i];
        th->r = r;
        th->id = i;
        rc = -ENOMEM;
        struct event_config *ec = event_config_new();
        if (ec == NULL) {
            goto out;
        }
        /*
         * Open-loop arrivals need sub-millisecond timers (timerfd on epoll);
         * closed loops skip its extra syscall per loop iteration.
         */
        event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK |
                                      (r->precise ? EVENT_BASE_FLAG_PRECISE_TIMER : 0));
        th->base = event_base_new_with_config(ec);
        event_config_free(ec);
        th->rbuf = malloc(RBUF_CAP);
        th->ts = calloc(cfg->ntenants, sizeof(*th->ts));
        if (th->base == NULL || th->rbuf == NULL || th->ts == NULL) {
            goto out;
        }
        th->tick = event_new(th->base, -1, EV_PERSIST, on_tick, th);
        th->stop = evtimer_new(th->base, on_stop, th);
        if (closed_sched) {
            th->sched = event_new(th->base, -1, EV_PERSIST, on_sched, th);
        }
        if (th->tick == NULL || th->stop == NULL || (closed_sched && th->sched == NULL)) {
            goto out;
        }
        for (size_t j = 0; j < cfg->ntenants; j++) {
            rc = ts_init(r, th, j, &rr);
            if (rc != 0) {
                goto out;
            }
        }
    }
    if (cfg->trace != NULL) {
        rc = trace_split(r);
        if (rc != 0) {
            goto out;
        }
    }
    *out = r;
    return 0;

out:
    bn_runner_destroy(r);
    return rc;
}

void
bn_runner_destroy(struct bn_runner *r)
{
    if (r == NULL) {
        return;
    }
    for (unsigned i = 0; r->th != NULL && i < r->cfg.threads; i++) {
        struct bn_thread *th = &r->th[i];
        for (size_t j = 0; th->ts != NULL && j < r->cfg.ntenants; j++) {
            struct bn_ts *ts = &th->ts[j];
            for (unsigned k = 0; ts->conns != NULL && k < ts->nconns; k++) {
                struct bn_conn *c = &ts->conns[k];
                if (c->fd >= 0 && c->rev != NULL) {
                    conn_close(c);
                }
                if (c->rev != NULL) {
                    event_free(c->rev);
                }
                if (c->wev != NULL) {
                    event_free(c->wev);
                }
                if (c->retry != NULL) {
                    event_free(c->retry);
                }
                if (c->cont != NULL) {
                    event_free(c->cont);
                }
                free(c->carry);
                free(c->hbuf);
            }
            free(ts->conns);
            free(ts->tr_idx);
            if (ts->arrive != NULL) {
                event_free(ts->arrive);
            }
            free(ts->q);
            free(ts->idle);
            for (size_t s = 0; ts->sec != NULL && s < r->nsec; s++) {
                free(ts->sec[s].idx);
                free(ts->sec[s].cnt);
            }
            free(ts->sec);
            free(ts->sec_hist);
        }
        free(th->ts);
        if (th->tick != NULL) {
            event_free(th->tick);
        }
        if (th->stop != NULL) {
            event_free(th->stop);
        }
        if (th->sched != NULL) {
            event_free(th->sched);
        }
        if (th->base != NULL) {
            event_base_free(th->base);
        }
        free(th->rbuf);
    }
    free(r->th);
    free(r->addrs);
    free(r->zipfs);
    free(r->load_next);
    free(r->payload);
    free(r->url_req);
    free(r);
}

static int
merge_secs(struct bn_runner *r, struct bn_result *res)
{
    size_t nt = r->cfg.ntenants;
    struct bn_hist *tmp = malloc(sizeof(*tmp));
    res->sec = calloc(nt * r->nsec, sizeof(*res->sec));
    if (tmp == NULL || res->sec == NULL) {
        free(tmp);
        return -ENOMEM;
    }
    res->nsec = r->nsec;
    for (size_t i = 0; i < nt; i++) {
        for (size_t s = 0; s < r->nsec; s++) {
            struct bn_sec *dst = &res->sec[i * r->nsec + s];
            bn_hist_reset(tmp);
            for (unsigned k = 0; k < r->cfg.threads; k++) {
                const struct bn_sec *src = &r->th[k].ts[i].sec[s];
                dst->ops += src->ops;
                dst->errors += src->errors;
                dst->bytes += src->bytes;
                for (uint32_t b = 0; b < src->nb; b++) {
                    tmp->b[src->idx[b]] += src->cnt[b];
                }
            }
            uint32_t n = 0;
            for (unsigned b = 0; b < BN_HIST_BUCKETS; b++) {
                n += tmp->b[b] != 0;
            }
            if (n == 0) {
                continue;
            }
            dst->idx = calloc(n, sizeof(*dst->idx));
            dst->cnt = calloc(n, sizeof(*dst->cnt));
            if (dst->idx == NULL || dst->cnt == NULL) {
                free(tmp);
                return -ENOMEM;
            }
            for (unsigned b = 0; b < BN_HIST_BUCKETS; b++) {
                if (tmp->b[b] != 0) {
                    dst->idx[dst->nb] = b;
                    dst->cnt[dst->nb] = tmp->b[b];
                    dst->nb++;
                }
            }
        }
    }
    free(tmp);
    return 0;
}

int
bn_runner_phase(struct bn_runner *r, enum bn_phase phase, struct bn_result *res)
{
    size_t nt = r->cfg.ntenants;
    memset(res, 0, sizeof(*res));
    res->ntenants = nt;
    res->stats = calloc(nt, sizeof(*res->stats));
    if (res->stats == NULL) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < nt; i++) {
        atomic_store(&r->load_next[i], 0);
    }
    uint64_t t0 = now_ns();
    uint64_t t_run = t0 + (uint64_t)(r->cfg.warmup_s * 1e9);
    uint64_t t_end = t_run + (uint64_t)(r->cfg.duration_s * 1e9);
    uint32_t wsecs = (uint32_t)ceil(r->cfg.warmup_s);
    uint64_t t_series = t_run - (uint64_t)wsecs * 1000000000u;
    for (unsigned i = 0; i < r->cfg.threads; i++) {
        struct bn_thread *th = &r->th[i];
        th->phase = phase;
        th->t0 = t0;
        th->t_run = t_run;
        th->t_end = t_end;
        th->t_series = t_series;
    }
    unsigned started = 0;
    int rc = 0;
    for (; started < r->cfg.threads; started++) {
        if (pthread_create(&r->th[started].tid, NULL, thread_main, &r->th[started]) != 0) {
            rc = -EAGAIN;
            bn_interrupted = 1;
            break;
        }
    }
    uint64_t end = t0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(r->th[i].tid, NULL);
        if (r->th[i].end_ns > end) {
            end = r->th[i].end_ns;
        }
    }
    for (size_t i = 0; i < nt; i++) {
        for (unsigned k = 0; k < r->cfg.threads; k++) {
            struct bn_ts *ts = &r->th[k].ts[i];
            bn_stats_merge(&res->stats[i], phase == BN_PHASE_LOAD ? &ts->load : &ts->run);
        }
    }
    if (phase == BN_PHASE_LOAD) {
        res->elapsed_s = (double)(end - t0) / 1e9;
    } else {
        if (end > t_end) {
            end = t_end;
        }
        res->elapsed_s = end > t_run ? (double)(end - t_run) / 1e9 : 0;
        res->warmup_secs = wsecs;
        if (r->cfg.series && rc == 0) {
            rc = merge_secs(r, res);
        }
    }
    return rc;
}

void
bn_result_fini(struct bn_result *res)
{
    for (size_t i = 0; res->sec != NULL && i < res->ntenants * res->nsec; i++) {
        free(res->sec[i].idx);
        free(res->sec[i].cnt);
    }
    free(res->sec);
    free(res->stats);
    memset(res, 0, sizeof(*res));
}
