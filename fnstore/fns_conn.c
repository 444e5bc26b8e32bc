/*
 * fns_conn.c - wire-protocol connections over libevent bufferevents; see
 * fns_conn.h. Loop thread only.
 *
 * Read state: waiting for a header (have_hdr = 0), or for the payload of
 * `hdr` (have_hdr = 1; skip > 0 while discarding an oversized payload).
 * Invariant: open conns are in their list; outstanding = frames delivered
 * minus answers sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "fns_arena.h"
#include "fns_conn.h"
#include "fns_loop.h"

#define FNS_CONN_IO_MAX (1u << 20) /* bytes per read or write syscall */

struct fns_conn {
    struct bufferevent *bev;
    const struct fns_conn_ops *ops;
    void *arg;
    struct fns_conn_list *list;
    struct fns_conn *prev, *next;
    unsigned refs;
    uint32_t max_payload;
    size_t outstanding;
    int closed, eof, paused, stop_reading, have_hdr;
    uint32_t skip; /* payload bytes still to discard */
    struct cm_wire_hdr hdr;
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
    bufferevent_free(c->bev);
    c->bev = NULL;
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
    if (!c->closed && c->eof && c->outstanding == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
        fns_conn_close(c, 0);
    }
}

/* After the peer's EOF and parsing what was buffered: a partial frame
 * left over is a truncated frame. May close c. */
static void
fns_conn_check_truncated(struct fns_conn *c)
{
    if (!c->closed && c->eof && !c->paused && !c->stop_reading &&
        (c->have_hdr || evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)) {
        fns_conn_bad_frame(c, CM_E_PROTO, "truncated");
    }
}

static void
fns_conn_deliver(struct fns_conn *c, uint8_t *payload, int status)
{
    struct cm_wire_hdr h = c->hdr;

    c->have_hdr = 0;
    c->outstanding++;
    c->ops->frame(c->arg, c, &h, payload, status);
}

/*
 * The buffer for a payload of len bytes plus the chunk trailer's room, so a
 * PUT keeps it as chunk memory. A PUT's comes from the arena (fresh memory
 * is slow to fault in; the arena packs chunks into huge-page segments);
 * others are malloc'd (huge pages when big), as the frame contract says.
 */
static uint8_t *
fns_conn_payload_alloc(struct fns_conn *c, uint32_t len)
{
    size_t n = (size_t)len + FNS_CHUNK_TAIL;

    if (c->hdr.op == CM_OP_PUT) {
        return fns_arena_alloc(c->list->arena, n);
    }
    return cm_malloc_big(n);
}

/* Parses every complete frame in the input, unless paused or closed. */
static void
fns_conn_process(struct fns_conn *c)
{
    struct evbuffer *in;
    uint8_t raw[CM_WIRE_HDR_LEN];
    size_t avail;
    int rc;

    fns_conn_ref(c);
    while (!c->closed && !c->paused && !c->stop_reading) {
        in = bufferevent_get_input(c->bev);
        avail = evbuffer_get_length(in);
        if (!c->have_hdr) {
            if (avail < CM_WIRE_HDR_LEN) {
                break;
            }
            if (evbuffer_copyout(in, raw, sizeof(raw)) != (ev_ssize_t)sizeof(raw)) {
                fns_conn_bad_frame(c, -EIO, "copyout");
                break;
            }
            rc = cm_wire_decode_hdr(raw, sizeof(raw), CM_WIRE_MAX_DATA, &c->hdr);
            if (rc != 0) {
                fns_conn_bad_frame(c, rc, "header");
                break;
            }
            evbuffer_drain(in, sizeof(raw));
            c->have_hdr = 1;
            c->skip = c->hdr.data_len > c->max_payload ? c->hdr.data_len : 0;
            continue;
        }
        if (c->skip > 0) {
            size_t n = avail < c->skip ? avail : c->skip;

            evbuffer_drain(in, n);
            c->skip -= (uint32_t)n;
            if (c->skip > 0) {
                break;
            }
            fns_conn_deliver(c, NULL, CM_E_TOOBIG);
        } else if (c->hdr.data_len == 0) {
            fns_conn_deliver(c, NULL, 0);
        } else {
            uint32_t len = c->hdr.data_len;
            uint8_t *p;

            if (avail < len) {
                break;
            }
            p = fns_conn_payload_alloc(c, len);
            if (p == NULL) {
                fns_conn_bad_frame(c, -ENOMEM, "alloc");
                break;
            }
            if (evbuffer_remove(in, p, len) != (int)len) {
                fns_arena_free(p);
                fns_conn_bad_frame(c, -EIO, "remove");
                break;
            }
            if (cm_crc32c(0, p, len) != c->hdr.data_crc) {
                fns_arena_free(p);
                fns_conn_deliver(c, NULL, CM_E_CRC);
            } else {
                fns_conn_deliver(c, p, 0);
            }
        }
        if (!c->closed && evbuffer_get_length(bufferevent_get_output(c->bev)) > FNS_CONN_OUT_HIGH) {
            c->paused = 1;
            bufferevent_disable(c->bev, EV_READ);
        }
    }
    fns_conn_unref(c);
}

static void
fns_conn_read_cb(struct bufferevent *bev, void *arg)
{
    fns_conn_process(arg);
}

/* Steps of the callbacks below may close c: they hold a reference and
 * re-check `closed` after each. */
static void
fns_conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct fns_conn *c = arg;

    fns_conn_ref(c);
    /* Output fully drained: resume parsing (and reading, before EOF). */
    if (c->paused && !c->stop_reading) {
        c->paused = 0;
        if (!c->eof) {
            bufferevent_enable(c->bev, EV_READ);
        }
        fns_conn_process(c);
        if (!c->closed) {
            fns_conn_check_truncated(c);
        }
    }
    if (!c->closed) {
        fns_conn_maybe_finish(c);
    }
    fns_conn_unref(c);
}

static void
fns_conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct fns_conn *c = arg;
    int err;

    fns_conn_ref(c);
    if (what & BEV_EVENT_EOF) {
        /* Frames fully buffered before the EOF are still served. */
        c->eof = 1;
        bufferevent_disable(c->bev, EV_READ);
        fns_conn_process(c);
        if (!c->closed) {
            fns_conn_check_truncated(c);
        }
        if (!c->closed) {
            fns_conn_maybe_finish(c);
        }
    } else if (what & BEV_EVENT_ERROR) {
        err = EVUTIL_SOCKET_ERROR();
        CM_DEBUG("connection error peer=%s err=%s", c->peer, strerror(err));
        fns_conn_close(c, err > 0 ? -err : -EIO);
    }
    fns_conn_unref(c);
}

int
fns_conn_create(struct fns_loop *l, int fd, uint32_t max_payload, const struct fns_conn_ops *ops,
                void *arg, struct fns_conn_list *list, struct fns_conn **out)
{
    struct fns_conn *c;
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    int one = 1;
    char ip[INET_ADDRSTRLEN];

    *out = NULL;
    c = cm_calloc(1, sizeof(*c));
    c->bev = bufferevent_socket_new(fns_loop_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL) {
        evutil_closesocket(fd);
        free(c);
        return -ENOMEM;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* libevent moves 16 KiB per syscall by default: a 1 MiB chunk would
     * cost ~64 reads (or writes) and as many loop turns. */
    (void)bufferevent_set_max_single_read(c->bev, FNS_CONN_IO_MAX);
    (void)bufferevent_set_max_single_write(c->bev, FNS_CONN_IO_MAX);
    if (getpeername(fd, (struct sockaddr *)&sin, &slen) == 0 && sin.sin_family == AF_INET &&
        inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip)) != NULL) {
        snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)ntohs(sin.sin_port));
    } else {
        snprintf(c->peer, sizeof(c->peer), "fd%d", fd);
    }
    c->ops = ops;
    c->arg = arg;
    c->list = list;
    c->refs = 1;
    c->max_payload = max_payload;
    c->next = list->head;
    if (list->head != NULL) {
        list->head->prev = c;
    }
    list->head = c;
    list->n++;
    bufferevent_setcb(c->bev, fns_conn_read_cb, fns_conn_write_cb, fns_conn_event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
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
    struct evbuffer *out;

    if (c->outstanding > 0) {
        c->outstanding--;
    }
    if (c->closed) {
        return;
    }
    out = bufferevent_get_output(c->bev);
    cm_wire_encode_hdr(h, raw);
    evbuffer_add(out, raw, sizeof(raw));
    if (chunk != NULL && chunk->len > 0) {
        fns_chunk_ref(chunk);
        if (evbuffer_add_reference(out, chunk->data, chunk->len, fns_conn_chunk_cleanup, chunk) !=
            0) {
            fns_chunk_unref(chunk);
            fns_conn_close(c, -ENOMEM);
        }
    }
}

void
fns_conn_notice(struct fns_conn *c, const struct cm_wire_hdr *h, const void *payload, size_t len)
{
    uint8_t raw[CM_WIRE_HDR_LEN];
    struct evbuffer *out;

    if (c->closed) {
        return;
    }
    out = bufferevent_get_output(c->bev);
    cm_wire_encode_hdr(h, raw);
    if (evbuffer_add(out, raw, sizeof(raw)) != 0 ||
        (len > 0 && evbuffer_add(out, payload, len) != 0)) {
        fns_conn_close(c, -ENOMEM);
    }
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
        bufferevent_disable(c->bev, EV_READ);
    }
}

int
fns_conn_list_idle(const struct fns_conn_list *list)
{
    const struct fns_conn *c;

    for (c = list->head; c != NULL; c = c->next) {
        if (c->outstanding > 0 || evbuffer_get_length(bufferevent_get_output(c->bev)) > 0) {
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
