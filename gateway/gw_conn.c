/*
 * gw_conn.c - one pipelined connection to a node: connect, backoff,
 * suspect, frames in and out, the requests in flight.
 *
 *   gw_net_send ─▶ conn.pending ─(cap)─▶ conn.inflight + out evbuffer ─▶ socket
 *   socket ─▶ in evbuffer ─▶ cm_frame: header ─▶ body straight into req.dst ─▶ done()
 *
 * Loop thread only. Invariants: a request is on exactly one of its
 * connection's lists (pending: not yet written; inflight or, when
 * cos_bound, cos_wait: written, awaiting its response; failed);
 * inflight_bytes is the payload + expected response bytes of inflight and
 * cos_wait; done() runs at most once and never inside send/cancel.
 * Payloads are sent by reference (evbuffer_add_reference) and released
 * when libevent drops them. A connection that fails (connect,
 * I/O, bad frame, timeout) fails all its requests, makes its node unusable
 * until a reconnect is answered (PING) and at least GW_SUSPECT_MS have
 * passed, and is retried with backoff.
 *
 * Timeouts: a request answered from the node's memory that waits longer
 * than io_timeout fails the connection (the node is hung or gone). A
 * request whose answer waits for the node's COS by contract (a META
 * record, a GET flagged COS_OK, a PUT flagged COS_SYNC) says nothing about
 * the node: it waits in its own FIFO (cos_wait) and, past io_timeout,
 * fails alone. Otherwise a COS outage longer than io_timeout would make
 * every node with a META record in flight unusable at once, and GETs and
 * PUTs that need no COS would fail with 503.
 *
 * Round trips: a request's sent_ns is taken with the clock read that pump
 * makes once per batch anyway (it also starts the I/O timeout); the answer
 * costs one more read, and only while an RTT handler is set.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cm_config.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_net_impl.h"

#define GW_SUSPECT_MS 2000
#define GW_BACKOFF_MIN_MS 50
#define GW_BACKOFF_MAX_MS 1000
#define GW_CONN_CAP_BYTES (32u << 20) /* outstanding bytes per connection */
#define GW_READ_BUF (64 << 10)        /* bytes per buffered read (headers, small bodies) */
#define GW_NOTE_MAX_BYTES (1u << 20)  /* largest PERSISTED notice accepted */

enum conn_state { C_IDLE, C_CONNECTING, C_OPEN };

/* Where a request is: not yet written; written, awaiting its answer; or
 * refused for want of memory, its done due from the next maintain. */
enum req_where { Q_PENDING, Q_INFLIGHT, Q_FAILED };

struct req_list {
    struct gw_net_req *head, *tail;
};

struct gw_net_req {
    struct gw_net_req *prev, *next;
    struct cm_hnode hn; /* in the conn's id map, while inflight */
    struct gw_conn *c;
    uint64_t id;
    uint8_t hdr[CM_WIRE_HDR_LEN];
    const void *payload;
    size_t len;
    gw_net_fn release;
    void *release_arg;
    void *dst;
    size_t dst_cap;
    gw_net_done_fn done;
    void *arg;
    uint64_t sent_ns; /* monotonic; when it entered the output (timeout, round trip) */
    enum req_where where;
    int held;      /* the output still references payload: release not yet run */
    int cos_bound; /* its answer waits for the node's COS: times out alone */
    int orphan;    /* answered or dropped while held: freed by the release */
};

struct gw_conn {
    struct gw_conn_health h; /* the directory's view (gw_nodes.c) */
    struct gw_net *n;
    int fd;
    enum conn_state state;
    struct event *rev, *wev;
    struct evbuffer *in, *out;
    struct req_list pending, inflight, failed;
    struct req_list cos_wait; /* inflight too, but cos_bound */
    struct cm_hmap ids;       /* inflight (and cos_wait) by id */
    size_t inflight_bytes;
    uint64_t next_connect, connect_deadline;
    int backoff_ms;
    int broken;                  /* failed mid-frame: fail at the next tick */
    struct cm_frame rd;          /* the frame being received */
    struct gw_net_req *body_req; /* whose answer it is (NULL: unknown, cancelled, a notice) */
    int body_status;             /* CM_E_PROTO when it does not fit the request's dst */
    uint8_t *note;               /* body of a PERSISTED notice being received (owned) */
};

static void
list_push(struct req_list *l, struct gw_net_req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail) {
        l->tail->next = r;
    } else {
        l->head = r;
    }
    l->tail = r;
}

static void
list_unlink(struct req_list *l, struct gw_net_req *r)
{
    if (r->prev) {
        r->prev->next = r->next;
    } else {
        l->head = r->next;
    }
    if (r->next) {
        r->next->prev = r->prev;
    } else {
        l->tail = r->prev;
    }
    r->prev = r->next = NULL;
}

static size_t
req_bytes(const struct gw_net_req *r)
{
    return r->len + r->dst_cap;
}

/* ---- inflight requests: FIFOs (deadlines) + id map (responses) ------ */

static struct gw_net_req *
inflight_find(struct gw_conn *c, uint64_t id)
{
    uint64_t h = cm_hmix64(id);
    for (struct cm_hnode *n = cm_hmap_first(&c->ids, h); n; n = cm_hmap_next(n, h)) {
        struct gw_net_req *r = CM_CONTAINER_OF(n, struct gw_net_req, hn);
        if (r->id == id) {
            return r;
        }
    }
    return NULL;
}

static void
inflight_add(struct gw_conn *c, struct gw_net_req *r)
{
    cm_hmap_add(&c->ids, &r->hn, cm_hmix64(r->id));
    r->where = Q_INFLIGHT;
    list_push(r->cos_bound ? &c->cos_wait : &c->inflight, r);
    c->inflight_bytes += req_bytes(r);
}

static void
inflight_del(struct gw_conn *c, struct gw_net_req *r)
{
    cm_hmap_del(&c->ids, &r->hn);
    list_unlink(r->cos_bound ? &c->cos_wait : &c->inflight, r);
    c->inflight_bytes -= req_bytes(r);
}

/* Takes r off its connection; the caller frees it (req_free). */
static void
req_detach(struct gw_net_req *r)
{
    struct gw_conn *c = r->c;
    if (r->where == Q_INFLIGHT) {
        inflight_del(c, r);
    } else if (r->where == Q_FAILED) {
        list_unlink(&c->failed, r);
    } else {
        list_unlink(&c->pending, r);
        if (r->release) {
            r->release(r->release_arg);
        }
    }
    if (c->body_req == r) {
        c->body_req = NULL;
        cm_frame_payload_to(&c->rd, NULL); /* dst is no longer written */
    }
}

/* A detached request goes once the output no longer references its
 * payload (a node may answer, or a caller cancel, before it is all sent). */
static void
req_free(struct gw_net_req *r)
{
    if (r->held) {
        r->orphan = 1;
    } else {
        free(r);
    }
}

/* libevent dropped r's payload (sent, or the output was drained). */
static void
req_released(const void *data, size_t len, void *extra)
{
    struct gw_net_req *r = extra;
    (void)data;
    (void)len;
    r->held = 0;
    r->release(r->release_arg);
    if (r->orphan) {
        free(r);
    }
}

/* Detaches r, frees it and runs its done with err. */
static void
req_complete(struct gw_net_req *r, int err)
{
    gw_net_done_fn done = r->done;
    void *arg = r->arg;
    req_detach(r);
    req_free(r);
    if (done) {
        done(arg, err, NULL);
    }
}

static struct gw_net_req *
conn_first(const struct gw_conn *c)
{
    return c->inflight.head   ? c->inflight.head
           : c->cos_wait.head ? c->cos_wait.head
           : c->pending.head  ? c->pending.head
                              : c->failed.head;
}

struct gw_conn_health *
gw_conn_health(struct gw_conn *c)
{
    return &c->h;
}

static void
conn_close_socket(struct gw_conn *c)
{
    if (c->rev) {
        event_free(c->rev);
        c->rev = NULL;
    }
    if (c->wev) {
        event_free(c->wev);
        c->wev = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    /* Draining out runs the release of every payload still referenced. */
    evbuffer_drain(c->out, evbuffer_get_length(c->out));
    evbuffer_drain(c->in, evbuffer_get_length(c->in));
    cm_frame_init(&c->rd, CM_WIRE_MAX_DATA, CM_FRAME_RESPONSES);
    c->body_req = NULL;
    free(c->note);
    c->note = NULL;
    c->state = C_IDLE;
}

/* Fails every request of c with err. Callbacks may cancel other requests
 * of c, so requests stay linked until their turn. */
static void
conn_fail_all(struct gw_conn *c, int err)
{
    struct gw_net_req *r;
    while ((r = conn_first(c)) != NULL) {
        req_complete(r, err);
    }
}

void
gw_conn_fail(struct gw_conn *c, int err)
{
    if (c->state == C_OPEN || c->h.healthy) { /* not once per failed reconnect */
        CM_WARN("gateway conn down node=%u addr=%s err=%s", c->h.id, c->h.addr, cm_errname(err));
    }
    conn_close_socket(c);
    uint64_t now = cm_now_ns();
    c->h.healthy = 0; /* suspect: unusable until a reconnect answers and the time is up */
    c->h.suspect_until = now + (uint64_t)GW_SUSPECT_MS * 1000000u;
    if (c->h.down_since == 0) {
        c->h.down_since = now;
    }
    c->next_connect = now + (uint64_t)c->backoff_ms * 1000000u;
    c->backoff_ms = c->backoff_ms * 2 > GW_BACKOFF_MAX_MS ? GW_BACKOFF_MAX_MS : c->backoff_ms * 2;
    conn_fail_all(c, err);
}

static void conn_on_read(evutil_socket_t fd, short what, void *arg);
static void conn_on_write(evutil_socket_t fd, short what, void *arg);
static void conn_pump(struct gw_conn *c);

static int
parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *sslen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char host[64], port[8];
    uint16_t p;

    if (cm_parse_addr(addr, host, sizeof(host), &p) != 0) {
        return CM_E_BADARG;
    }
    snprintf(port, sizeof(port), "%u", (unsigned)p);
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
        return CM_E_BADARG;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sslen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static void
conn_connect(struct gw_conn *c)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int rc = parse_addr(c->h.addr, &ss, &sslen);
    if (rc < 0) {
        gw_conn_fail(c, rc);
        return;
    }
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        gw_conn_fail(c, -errno);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->rev = event_new(c->n->base, c->fd, EV_READ | EV_PERSIST, conn_on_read, c);
    c->wev = event_new(c->n->base, c->fd, EV_WRITE | EV_PERSIST, conn_on_write, c);
    if (!c->rev || !c->wev) {
        gw_conn_fail(c, -ENOMEM);
        return;
    }
    c->state = C_CONNECTING;
    c->connect_deadline = cm_now_ns() + (uint64_t)c->n->io_timeout_ms * 1000000u;
    if (connect(c->fd, (struct sockaddr *)&ss, sslen) < 0 && errno != EINPROGRESS) {
        gw_conn_fail(c, -errno);
        return;
    }
    event_add(c->wev, NULL);
}

static int
conn_enqueue(struct gw_conn *c, const struct gw_net_send *s, struct gw_net_req **out)
{
    struct gw_net *n = c->n;
    if (s->len > CM_WIRE_MAX_DATA) {
        return CM_E_TOOBIG;
    }
    struct gw_net_req *r = calloc(1, sizeof(*r));
    if (!r) {
        return -ENOMEM;
    }
    struct cm_wire_hdr h = s->hdr;
    h.req_id = ++n->next_req_id;
    h.data_len = (uint32_t)s->len;
    if (s->len > 0 && h.data_crc == 0) {
        h.data_crc = cm_crc32c(0, s->payload, s->len);
    }
    cm_wire_encode_hdr(&h, r->hdr);
    r->c = c;
    r->id = h.req_id;
    r->payload = s->payload;
    r->len = s->len;
    r->release = s->release;
    r->release_arg = s->release_arg;
    r->dst = s->dst;
    r->dst_cap = s->dst ? s->dst_cap : 0;
    r->done = s->done;
    r->arg = s->arg;
    r->cos_bound = h.op == CM_OP_META || (h.op == CM_OP_GET && (h.flags & CM_WF_COS_OK)) ||
                   (h.op == CM_OP_PUT && (h.flags & CM_WF_COS_SYNC));
    list_push(&c->pending, r);
    if (out) {
        *out = r;
    }
    return 0;
}

static void
conn_opened(struct gw_conn *c)
{
    c->state = C_OPEN;
    c->backoff_ms = GW_BACKOFF_MIN_MS;
    event_add(c->rev, NULL);
    /* A reconnect is trusted once the node answers: PING it. */
    struct gw_net_send s = {.hdr = {.op = CM_OP_PING}};
    if (conn_enqueue(c, &s, NULL) < 0) {
        gw_conn_fail(c, -ENOMEM);
        return;
    }
    conn_pump(c);
}

static void
conn_pump(struct gw_conn *c)
{
    if (c->state != C_OPEN) {
        return;
    }
    uint64_t now = cm_now_ns();
    int added = 0;
    while (c->pending.head && (c->inflight_bytes < GW_CONN_CAP_BYTES ||
                               (c->inflight.head == NULL && c->cos_wait.head == NULL))) {
        struct gw_net_req *r = c->pending.head;
        list_unlink(&c->pending, r);
        if (evbuffer_add(c->out, r->hdr, CM_WIRE_HDR_LEN) < 0) {
            /* Out of memory: this request fails (not inside send, which
             * may be our caller: from the next maintain). */
            if (r->release) {
                r->release(r->release_arg);
            }
            r->where = Q_FAILED;
            list_push(&c->failed, r);
            gw_loop_kick(c->n);
            continue;
        }
        r->held = r->len && r->release;
        if (r->len && evbuffer_add_reference(c->out, r->payload, r->len,
                                             r->held ? req_released : NULL, r) < 0) {
            r->held = 0; /* half a frame is queued: the stream is lost */
            c->broken = 1;
        }
        if (r->release && !r->held) {
            r->release(r->release_arg);
        }
        r->sent_ns = now;
        inflight_add(c, r);
        added = 1;
    }
    if (added) {
        /* Written later in this loop turn, so a turn's frames share one
         * sendmsg, and the socket joins epoll only if it pushes back. */
        event_active(c->wev, EV_WRITE, 0);
    }
}

/* Hands a PERSISTED notice to the note handler, record by record. -1 when
 * it was corrupt (the connection failed). */
static int
note_deliver(struct gw_conn *c, const struct cm_wire_hdr *h, int status)
{
    uint8_t *buf = c->note;
    c->note = NULL;
    if (status != 0) {
        free(buf);
        gw_conn_fail(c, status);
        return -1;
    }
    struct gw_net *n = c->n;
    for (uint32_t off = 0; n->on_note && off < h->data_len; off += CM_WIRE_NOTE_LEN) {
        struct cm_wire_note rec;
        cm_wire_note_decode(buf + off, &rec);
        n->on_note(n->note_arg, c->h.id, &rec);
    }
    free(buf);
    return 0;
}

/* A checked header: picks where its payload goes (the request's dst, a
 * notice buffer, or nowhere). -1 when the connection failed. */
static int
conn_on_header(struct gw_conn *c)
{
    const struct cm_wire_hdr *h = &c->rd.hdr;
    struct gw_net_req *r;

    c->body_req = NULL;
    c->body_status = 0;
    if (h->op == (CM_OP_PERSISTED | CM_OP_RESPONSE)) {
        if (h->data_len % CM_WIRE_NOTE_LEN != 0 || h->data_len > GW_NOTE_MAX_BYTES) {
            gw_conn_fail(c, CM_E_PROTO);
            return -1;
        }
        c->note = malloc(h->data_len ? h->data_len : 1);
        if (!c->note) {
            /* Skipped: the chunks it names are STATed later instead. */
            CM_WARN("gateway skips a persisted notice node=%u err=ENOMEM", c->h.id);
        }
        cm_frame_payload_to(&c->rd, c->note);
        return 0;
    }
    r = inflight_find(c, h->req_id);
    c->body_req = r;
    if (r && h->data_len > 0) {
        if (r->dst && h->data_len <= r->dst_cap) {
            cm_frame_payload_to(&c->rd, r->dst);
        } else {
            c->body_status = CM_E_PROTO;
        }
    }
    return 0;
}

/* Hands the frame received to its request (if still wanted); the reader
 * has checked the payload's CRC. */
static void
conn_deliver(struct gw_conn *c)
{
    struct gw_net_req *r = c->body_req;
    struct cm_wire_hdr h = c->rd.hdr;
    int status = c->body_status != 0 ? c->body_status : c->rd.status;
    c->body_req = NULL;
    c->h.healthy = 1;
    c->h.down_since = 0;
    if (c->note) {
        (void)note_deliver(c, &h, status);
        return;
    }
    if (!r) {
        return;
    }
    if (c->n->on_rtt) {
        struct gw_net_rtt sample = {
            .node = c->h.id,
            .op = r->hdr[5],
            .status = status != 0 ? status : h.status,
            .sent_bytes = (uint32_t)r->len,
            .got_bytes = h.data_len,
            .rtt_ns = cm_now_ns() - r->sent_ns,
            .arg = r->arg,
        };
        c->n->on_rtt(c->n->rtt_arg, &sample);
    }
    inflight_del(c, r);
    gw_net_done_fn done = r->done;
    void *arg = r->arg;
    req_free(r);
    if (done) {
        done(arg, status, &h);
    }
}

/* Feeds what is buffered in c->in to the frame reader. -1 when the
 * connection failed. */
static int
conn_process(struct gw_conn *c)
{
    for (;;) {
        struct evbuffer_iovec v = {NULL, 0};
        size_t used;

        (void)evbuffer_peek(c->in, -1, NULL, &v, 1);
        int ev = cm_frame_feed(&c->rd, v.iov_base, v.iov_len, &used);
        if (used > 0) {
            evbuffer_drain(c->in, used);
        }
        if (ev < 0) {
            gw_conn_fail(c, ev);
            return -1;
        }
        if (ev == CM_FRAME_HEADER) {
            if (conn_on_header(c) < 0) {
                return -1;
            }
        } else if (ev == CM_FRAME_END) {
            conn_deliver(c);
            if (c->state != C_OPEN) {
                return -1;
            }
        } else if (evbuffer_get_length(c->in) == 0) {
            return 0;
        }
    }
}

/* Reads up to max bytes into c->in. evbuffer_read would ask FIONREAD
 * first and then read at most 4 KiB (libevent 2.1). */
static ssize_t
conn_read_buffered(struct gw_conn *c, evutil_socket_t fd, size_t max)
{
    struct evbuffer_iovec v[2];
    struct iovec iov[2];
    int nv = evbuffer_reserve_space(c->in, (ev_ssize_t)max, v, 2);
    ssize_t got;

    if (nv <= 0) {
        errno = ENOMEM;
        return -1;
    }
    for (int i = 0; i < nv; i++) {
        iov[i].iov_base = v[i].iov_base;
        iov[i].iov_len = v[i].iov_len;
    }
    got = readv(fd, iov, nv);
    if (got <= 0) {
        int err = errno;
        evbuffer_commit_space(c->in, v, 0);
        errno = err;
        return got;
    }
    size_t left = (size_t)got;
    int used = 0;
    for (; used < nv && left > 0; used++) {
        v[used].iov_len = left < iov[used].iov_len ? left : iov[used].iov_len;
        left -= v[used].iov_len;
    }
    evbuffer_commit_space(c->in, v, used);
    return got;
}

static void
conn_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)what;
    for (int i = 0; i < 64; i++) {
        /* Large bodies go from the socket straight to their buffer. */
        size_t asked = 0;
        uint8_t *room = evbuffer_get_length(c->in) == 0 ? cm_frame_room(&c->rd, &asked) : NULL;
        if (!room) {
            asked = GW_READ_BUF;
        }
        ssize_t got = room ? read(fd, room, asked) : conn_read_buffered(c, fd, asked);

        if (got > 0) {
            if (room) {
                cm_frame_wrote(&c->rd, (size_t)got);
            }
            if (conn_process(c) < 0) {
                return;
            }
            if ((size_t)got < asked) {
                break; /* the socket is drained: no read just to see EAGAIN */
            }
            continue;
        }
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        gw_conn_fail(c, got == 0 ? -ECONNRESET : -errno);
        return;
    }
    conn_pump(c);
}

static void
conn_on_write(evutil_socket_t fd, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)what;
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
            err = errno;
        }
        if (err != 0) {
            gw_conn_fail(c, -err);
            return;
        }
        event_del(c->wev);
        conn_opened(c);
        return;
    }
    while (evbuffer_get_length(c->out) > 0) {
        struct evbuffer_iovec v[32];
        struct iovec iov[32];
        int nv = evbuffer_peek(c->out, -1, NULL, v, 32);
        if (nv > 32) {
            nv = 32;
        }
        for (int i = 0; i < nv; i++) {
            iov[i].iov_base = v[i].iov_base;
            iov[i].iov_len = v[i].iov_len;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)nv};
        ssize_t sent = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!event_pending(c->wev, EV_WRITE, NULL)) {
                    event_add(c->wev, NULL);
                }
                return;
            }
            gw_conn_fail(c, -errno);
            return;
        }
        evbuffer_drain(c->out, (size_t)sent);
    }
    if (event_pending(c->wev, EV_WRITE, NULL)) {
        event_del(c->wev);
    }
}

void
gw_conn_maintain(struct gw_conn *c, uint64_t now)
{
    /* Only those failed before: a done may send again, and fail again. */
    uint64_t upto = c->failed.tail ? c->failed.tail->id : 0;
    uint64_t timeout_ns = (uint64_t)c->n->io_timeout_ms * 1000000u;
    while (c->failed.head && c->failed.head->id <= upto) {
        req_complete(c->failed.head, -ENOMEM);
    }
    if (c->state == C_IDLE && c->h.up && now >= c->next_connect) {
        conn_connect(c);
    } else if (c->state == C_CONNECTING && now > c->connect_deadline) {
        gw_conn_fail(c, CM_E_TIMEOUT);
    } else if (c->state == C_OPEN &&
               (c->broken || (c->inflight.head && now > c->inflight.head->sent_ns + timeout_ns))) {
        /* Not now - sent_ns: a request moved here from a connection failed
         * earlier in this pass was sent after now was read. */
        c->broken = 0;
        gw_conn_fail(c, CM_E_TIMEOUT);
    } else {
        /* A done may send again: what it sends is newer (sent after now),
         * so this ends. */
        while (c->cos_wait.head && now > c->cos_wait.head->sent_ns + timeout_ns) {
            req_complete(c->cos_wait.head, CM_E_TIMEOUT);
        }
    }
}

void
gw_conn_readdress(struct gw_conn *c, const char *addr)
{
    snprintf(c->h.addr, sizeof(c->h.addr), "%s", addr);
    gw_conn_fail(c, -ECONNRESET);
    c->next_connect = 0;
}

/* Drops every request without completing it (shutdown, node removed). */
void
gw_conn_free(struct gw_conn *c)
{
    struct gw_net_req *r;
    conn_close_socket(c); /* first: payloads are released, no request held */
    while ((r = conn_first(c)) != NULL) {
        req_detach(r);
        free(r);
    }
    evbuffer_free(c->in);
    evbuffer_free(c->out);
    cm_hmap_free(&c->ids);
    free(c);
}

struct gw_conn *
gw_conn_new(struct gw_net *n, const struct gw_node *node)
{
    struct gw_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->n = n;
    c->h.id = node->id;
    snprintf(c->h.addr, sizeof(c->h.addr), "%s", node->addr);
    c->h.up = node->up;
    c->h.draining = node->draining;
    c->h.healthy = 1;
    c->fd = -1;
    c->backoff_ms = GW_BACKOFF_MIN_MS;
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    if (!c->in || !c->out) {
        if (c->in) {
            evbuffer_free(c->in);
        }
        if (c->out) {
            evbuffer_free(c->out);
        }
        free(c);
        return NULL;
    }
    cm_hmap_init(&c->ids, 64);
    cm_frame_init(&c->rd, CM_WIRE_MAX_DATA, CM_FRAME_RESPONSES);
    if (!c->h.up) {
        c->h.down_since = cm_now_ns();
    }
    return c;
}

int
gw_conn_send(struct gw_conn *c, const struct gw_net_send *s, struct gw_net_req **out)
{
    int rc = conn_enqueue(c, s, out);
    if (rc < 0) {
        return rc;
    }
    if (c->state == C_OPEN) {
        conn_pump(c);
    } else if (c->state == C_IDLE) {
        c->next_connect = 0;
        gw_loop_kick(c->n);
    }
    return 0;
}

void
gw_net_cancel(struct gw_net *n, struct gw_net_req *r)
{
    (void)n;
    if (!r) {
        return;
    }
    req_detach(r);
    req_free(r);
}
