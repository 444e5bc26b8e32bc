/*
 * fns_conn.c - wire-protocol connections on the node's libevent loop; see
 * fns_conn.h. Loop thread only.
 *
 * Reading: headers and small frames arrive through a 64 KiB input buffer;
 * once a header is parsed its payload buffer is allocated, and the rest of
 * the payload is read from the socket straight into it (libevent's own
 * evbuffer_read moves at most 4 KiB per call, plus an ioctl). A read that
 * returns less than asked for drained the socket, so no read is spent on
 * EAGAIN. While a big payload is still arriving, SO_RCVLOWAT asks the
 * kernel to wake the loop only once the rest of it (up to 1 MiB) is in:
 * one wake-up per chunk instead of one per burst of segments.
 *
 * Writing: answers are appended to `out` (payloads by reference) and
 * flushed with writev once per loop turn, from the write event activated
 * by hand; the socket joins epoll for writing only when it pushes back.
 *
 * Frames are read by the shared reader (cm_frame): the node only picks
 * each payload's buffer and says what a frame that fails a check does.
 * Invariant: open conns are in their list; outstanding = frames delivered
 * minus answers sent; ibuf[ibeg, iend) is received input not yet fed to
 * the reader (kept while paused).
 */
#include <arpa/inet.h>
#include <errno.h>
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

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "cm_log.h"
#include "fns_arena.h"
#include "fns_conn.h"
#include "fns_loop.h"

#define FNS_CONN_IBUF (64u << 10) /* input buffer for headers and small frames */
#define FNS_CONN_READS 16         /* reads per readable event, for fairness */
#define FNS_CONN_IOV 64           /* buffers per writev */
#define FNS_CONN_LOWAT_MIN (64u << 10) /* payload left: wait for it all (SO_RCVLOWAT) */
#define FNS_CONN_LOWAT_MAX (1u << 20)

struct fns_conn {
    int fd;
    struct event *rev, *wev;
    struct evbuffer *out;
    const struct fns_conn_ops *ops;
    void *arg;
    struct fns_conn_list *list;
    struct fns_conn *prev, *next;
    unsigned refs;
    uint32_t max_payload;
    size_t outstanding;
    int closed, eof, paused, stop_reading;
    int toobig;   /* the frame being read is over max_payload: skipped */
    uint8_t *dst; /* its payload buffer (owned until delivered), or NULL */
    int lowat;  /* SO_RCVLOWAT set on fd (0: the default, 1) */
    struct cm_frame rd;
    size_t ibeg, iend;
    uint8_t *ibuf;
    char peer[64];
};

static void fns_conn_process(struct fns_conn *c);

void
fns_conn_ref(struct fns_conn *c)
{
    c->refs++;
}

void
fns_conn_unref(struct fns_conn *c)
{
    if (--c->refs == 0) {
        free(c);
    }
}

const char *
fns_conn_peer(const struct fns_conn *c)
{
    return c->peer;
}

static void
fns_conn_close(struct fns_conn *c, int err)
{
    if (c->closed) {
        return;
    }
    c->closed = 1;
    event_free(c->rev);
    event_free(c->wev);
    evbuffer_free(c->out); /* drops the references to answered chunks */
    close(c->fd);
    fns_arena_free(c->dst);
    free(c->ibuf);
    c->rev = c->wev = NULL;
    c->out = NULL;
    c->dst = NULL;
    c->ibuf = NULL;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        c->list->head = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    c->list->n--;
    c->ops->closed(c->arg, c, err);
    fns_conn_unref(c); /* the "open" reference */
}

static void
fns_conn_bad_frame(struct fns_conn *c, int err, const char *what)
{
    CM_WARN("bad frame, closing connection peer=%s what=%s err=%s", c->peer, what, cm_errname(err));
    fns_conn_close(c, err);
}

/* Closes after a clean EOF once everything is answered and flushed. */
static void
fns_conn_maybe_finish(struct fns_conn *c)
{
    if (!c->closed && c->eof && c->outstanding == 0 && evbuffer_get_length(c->out) == 0) {
        fns_conn_close(c, 0);
    }
}

/* After the peer's EOF and parsing what was buffered: a partial frame
 * left over is a truncated frame. May close c. */
static void
fns_conn_check_truncated(struct fns_conn *c)
{
    int rc;

    if (!c->closed && c->eof && !c->paused && !c->stop_reading &&
        (rc = cm_frame_eof(&c->rd)) != 0) {
        fns_conn_bad_frame(c, rc, cm_frame_why_name(c->rd.why));
    }
}

/*
 * The buffer for a payload of len bytes plus the chunk trailer's room, so a
 * PUT keeps it as chunk memory. A PUT's comes from the arena (fresh memory
 * is slow to fault in; the arena packs chunks into huge-page slabs);
 * others are malloc'd (huge pages when big), as the frame contract says.
 */
static uint8_t *
fns_conn_payload_alloc(struct fns_conn *c, const struct cm_wire_hdr *h)
{
    size_t n = (size_t)h->data_len + FNS_CHUNK_TAIL;

    if (h->op == CM_OP_PUT) {
        return fns_arena_alloc(c->list->arena, n);
    }
    return cm_malloc_big(n);
}

/* A checked header: picks where its payload goes. 0, or nonzero when c
 * was closed. */
static int
fns_conn_on_header(struct fns_conn *c)
{
    const struct cm_wire_hdr *h = &c->rd.hdr;

    c->toobig = h->data_len > c->max_payload;
    if (c->toobig || h->data_len == 0) {
        return 0;
    }
    c->dst = fns_conn_payload_alloc(c, h);
    if (c->dst == NULL) {
        fns_conn_bad_frame(c, -ENOMEM, "alloc");
        return -ENOMEM;
    }
    cm_frame_payload_to(&c->rd, c->dst);
    return 0;
}

/* A whole frame: hands it over, its payload (when it has one and its CRC
 * matched) with it. */
static void
fns_conn_deliver(struct fns_conn *c)
{
    struct cm_wire_hdr h = c->rd.hdr;
    uint8_t *p = c->dst;
    int status = c->toobig ? CM_E_TOOBIG : c->rd.status;

    c->dst = NULL;
    if (status != 0) {
        fns_arena_free(p);
        p = NULL;
    }
    c->outstanding++;
    c->ops->frame(c->arg, c, &h, p, status);
}

/* Feeds the input buffer to the reader and delivers every whole frame,
 * unless paused or closed. */
static void
fns_conn_process(struct fns_conn *c)
{
    fns_conn_ref(c);
    while (!c->closed && !c->paused && !c->stop_reading) {
        size_t used;
        int ev = cm_frame_feed(&c->rd, c->ibuf + c->ibeg, c->iend - c->ibeg, &used);

        c->ibeg += used;
        if (ev < 0) {
            fns_conn_bad_frame(c, ev, cm_frame_why_name(c->rd.why));
            break;
        }
        if (ev == CM_FRAME_MORE) {
            break;
        }
        if (ev == CM_FRAME_HEADER) {
            if (fns_conn_on_header(c) != 0) {
                break;
            }
            continue;
        }
        fns_conn_deliver(c);
        if (!c->closed && evbuffer_get_length(c->out) > FNS_CONN_OUT_HIGH) {
            c->paused = 1;
            event_del(c->rev);
        }
    }
    if (c->ibeg == c->iend) {
        c->ibeg = c->iend = 0;
    }
    fns_conn_unref(c);
}

static void
fns_conn_on_eof(struct fns_conn *c)
{
    /* Frames fully buffered before the EOF are still served. */
    c->eof = 1;
    event_del(c->rev);
    fns_conn_process(c);
    fns_conn_check_truncated(c);
    fns_conn_maybe_finish(c);
}

/* Sets the socket's SO_RCVLOWAT: the rest of the payload being filled,
 * when it is big, else the default. Advice only: a failure costs wake-ups. */
static void
fns_conn_set_lowat(struct fns_conn *c)
{
    size_t left;
    int want = 0;

    (void)cm_frame_room(&c->rd, &left);
    if (left >= FNS_CONN_LOWAT_MIN && c->ibeg == c->iend && !c->paused) {
        want = (int)(left < FNS_CONN_LOWAT_MAX ? left : FNS_CONN_LOWAT_MAX);
    }
    if (want != c->lowat) {
        int v = want > 0 ? want : 1;

        (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v));
        c->lowat = want;
    }
}

/* One read: into the payload being filled when nothing is buffered, else
 * into the input buffer. Returns the bytes read, 0 at EOF, or -errno. */
static ssize_t
fns_conn_read_once(struct fns_conn *c, size_t *asked)
{
    uint8_t *room = cm_frame_room(&c->rd, asked);
    ssize_t got;

    if (room != NULL && c->ibeg == c->iend) {
        got = read(c->fd, room, *asked);
        if (got > 0) {
            cm_frame_wrote(&c->rd, (size_t)got);
        }
    } else {
        if (c->ibeg > 0) {
            memmove(c->ibuf, c->ibuf + c->ibeg, c->iend - c->ibeg);
            c->iend -= c->ibeg;
            c->ibeg = 0;
        }
        *asked = FNS_CONN_IBUF - c->iend;
        got = read(c->fd, c->ibuf + c->iend, *asked);
        if (got > 0) {
            c->iend += (size_t)got;
        }
    }
    return got < 0 ? -errno : got;
}

static void
fns_conn_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct fns_conn *c = arg;

    fns_conn_ref(c);
    for (int i = 0; i < FNS_CONN_READS && !c->closed && !c->paused && !c->stop_reading; i++) {
        size_t asked;
        ssize_t got = fns_conn_read_once(c, &asked);

        if (got == -EINTR) {
            continue;
        }
        if (got == -EAGAIN || got == -EWOULDBLOCK) {
            break;
        }
        if (got < 0) {
            CM_DEBUG("connection error peer=%s err=%s", c->peer, cm_strerror((int)got));
            fns_conn_close(c, (int)got);
            break;
        }
        if (got == 0) {
            fns_conn_on_eof(c);
            break;
        }
        fns_conn_process(c); /* also ends a payload filled by a direct read */
        if ((size_t)got < asked) {
            break; /* the socket is drained */
        }
    }
    if (!c->closed) {
        fns_conn_set_lowat(c);
    }
    fns_conn_unref(c);
}

/* Writes out what fits; joins epoll for writing only when the socket
 * pushes back. Resumes a paused reader once drained. May close c. */
static void
fns_conn_flush(struct fns_conn *c)
{
    while (evbuffer_get_length(c->out) > 0) {
        struct evbuffer_iovec v[FNS_CONN_IOV];
        struct iovec iov[FNS_CONN_IOV];
        int nv = evbuffer_peek(c->out, -1, NULL, v, FNS_CONN_IOV);
        ssize_t sent;

        if (nv > FNS_CONN_IOV) {
            nv = FNS_CONN_IOV;
        }
        for (int i = 0; i < nv; i++) {
            iov[i].iov_base = v[i].iov_base;
            iov[i].iov_len = v[i].iov_len;
        }
        sent = writev(c->fd, iov, nv);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!event_pending(c->wev, EV_WRITE, NULL)) {
                event_add(c->wev, NULL);
            }
            return;
        }
        if (sent < 0) {
            CM_DEBUG("connection error peer=%s err=%s", c->peer, strerror(errno));
            fns_conn_close(c, -errno);
            return;
        }
        evbuffer_drain(c->out, (size_t)sent);
    }
    if (event_pending(c->wev, EV_WRITE, NULL)) {
        event_del(c->wev);
    }
    /* Output drained: resume parsing (and reading, before EOF). */
    if (c->paused && !c->stop_reading) {
        c->paused = 0;
        if (!c->eof) {
            event_add(c->rev, NULL);
        }
        fns_conn_process(c);
        fns_conn_check_truncated(c);
    }
    fns_conn_maybe_finish(c);
}

static void
fns_conn_on_write(evutil_socket_t fd, short what, void *arg)
{
    struct fns_conn *c = arg;

    fns_conn_ref(c);
    if (!c->closed) {
        fns_conn_flush(c);
    }
    fns_conn_unref(c);
}

/* Flushes later in this loop turn, so the answers of one read go out in
 * one writev. */
static void
fns_conn_want_flush(struct fns_conn *c)
{
    event_active(c->wev, EV_WRITE, 0);
}

int
fns_conn_create(struct fns_loop *l, int fd, uint32_t max_payload, const struct fns_conn_ops *ops,
                void *arg, struct fns_conn_list *list, struct fns_conn **out)
{
    struct event_base *base = fns_loop_base(l);
    struct fns_conn *c;
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    int one = 1;
    char ip[INET_ADDRSTRLEN];

    *out = NULL;
    c = cm_calloc(1, sizeof(*c));
    c->fd = fd;
    c->ibuf = malloc(FNS_CONN_IBUF);
    c->out = evbuffer_new();
    c->rev = event_new(base, fd, EV_READ | EV_PERSIST, fns_conn_on_read, c);
    c->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, fns_conn_on_write, c);
    if (c->ibuf == NULL || c->out == NULL || c->rev == NULL || c->wev == NULL ||
        evutil_make_socket_nonblocking(fd) != 0 || event_add(c->rev, NULL) != 0) {
        if (c->rev != NULL) {
            event_free(c->rev);
        }
        if (c->wev != NULL) {
            event_free(c->wev);
        }
        if (c->out != NULL) {
            evbuffer_free(c->out);
        }
        free(c->ibuf);
        free(c);
        close(fd);
        return -ENOMEM;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (getpeername(fd, (struct sockaddr *)&sin, &slen) == 0 && sin.sin_family == AF_INET &&
        inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip)) != NULL) {
        snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)ntohs(sin.sin_port));
    } else {
        snprintf(c->peer, sizeof(c->peer), "fd%d", fd);
    }
    c->ops = ops;
    c->arg = arg;
    c->list = list;
    cm_frame_init(&c->rd, CM_WIRE_MAX_DATA, CM_FRAME_ANY);
    c->refs = 1;
    c->max_payload = max_payload;
    c->next = list->head;
    if (list->head != NULL) {
        list->head->prev = c;
    }
    list->head = c;
    list->n++;
    *out = c;
    return 0;
}

static void
fns_conn_chunk_cleanup(const void *data, size_t len, void *extra)
{
    fns_chunk_unref(extra);
}

void
fns_conn_send(struct fns_conn *c, const struct cm_wire_hdr *h, struct fns_chunk *chunk)
{
    uint8_t raw[CM_WIRE_HDR_LEN];

    if (c->outstanding > 0) {
        c->outstanding--;
    }
    if (c->closed) {
        return;
    }
    cm_wire_encode_hdr(h, raw);
    if (evbuffer_add(c->out, raw, sizeof(raw)) != 0) {
        fns_conn_close(c, -ENOMEM);
        return;
    }
    if (chunk != NULL && chunk->len > 0) {
        fns_chunk_ref(chunk);
        if (evbuffer_add_reference(c->out, chunk->data, chunk->len, fns_conn_chunk_cleanup,
                                   chunk) != 0) {
            fns_chunk_unref(chunk);
            fns_conn_close(c, -ENOMEM);
            return;
        }
    }
    fns_conn_want_flush(c);
}

void
fns_conn_notice(struct fns_conn *c, const struct cm_wire_hdr *h, const void *payload, size_t len)
{
    uint8_t raw[CM_WIRE_HDR_LEN];

    if (c->closed) {
        return;
    }
    cm_wire_encode_hdr(h, raw);
    if (evbuffer_add(c->out, raw, sizeof(raw)) != 0 ||
        (len > 0 && evbuffer_add(c->out, payload, len) != 0)) {
        fns_conn_close(c, -ENOMEM);
        return;
    }
    fns_conn_want_flush(c);
}

int
fns_conn_is_closed(const struct fns_conn *c)
{
    return c->closed;
}

void
fns_conn_list_stop_reading(struct fns_conn_list *list)
{
    struct fns_conn *c;

    for (c = list->head; c != NULL; c = c->next) {
        c->stop_reading = 1;
        event_del(c->rev);
    }
}

int
fns_conn_list_idle(const struct fns_conn_list *list)
{
    const struct fns_conn *c;

    for (c = list->head; c != NULL; c = c->next) {
        if (c->outstanding > 0 || evbuffer_get_length(c->out) > 0) {
            return 0;
        }
    }
    return 1;
}

void
fns_conn_list_close_all(struct fns_conn_list *list)
{
    while (list->head != NULL) {
        fns_conn_close(list->head, 0);
    }
}
