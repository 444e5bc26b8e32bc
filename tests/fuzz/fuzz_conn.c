/*
 * fuzz_conn.c - libFuzzer target for the node's connection framing
 * (fnstore/fns_conn.c): the byte stream a peer sends, cut into writes of
 * varying size, over a real socket and the node's real event loop.
 *
 * Input: byte 0 picks the write sizes (bits 0-2) and whether the stream's
 * CRCs are made right first (bit 6 the headers', bit 7 the payloads' too:
 * fuzz_crc.h); the rest is the stream. Whatever the stream, every
 * delivered frame must obey the frame contract (a payload
 * exactly when status is 0 and data_len > 0, its CRC checked, oversized ones
 * refused with CM_E_TOOBIG), and after the peer's EOF the connection must
 * close exactly once (answered and flushed, or on a bad or truncated frame).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "cm_ec.h"
#include "cm_err.h"
#include "fns_arena.h"
#include "fns_conn.h"
#include "fns_loop.h"
#include "fuzz_crc.h"

#define MAX_PAYLOAD 4096u /* small, so oversized frames are common */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int closed_calls;

static void
on_frame(void *arg, struct fns_conn *c, const struct cm_wire_hdr *h, uint8_t *payload, int status)
{
    struct cm_wire_hdr r = *h;

    if (status == 0) {
        if ((payload != NULL) != (h->data_len > 0) || h->data_len > MAX_PAYLOAD) {
            abort();
        }
        if (payload != NULL && cm_crc32c(0, payload, h->data_len) != h->data_crc) {
            abort();
        }
    } else if (payload != NULL || !(status == CM_E_CRC || status == CM_E_TOOBIG) ||
               (status == CM_E_TOOBIG && h->data_len <= MAX_PAYLOAD)) {
        abort();
    }
    fns_arena_free(payload);
    r.op |= CM_OP_RESPONSE;
    r.data_len = 0;
    r.data_crc = 0;
    fns_conn_send(c, &r, NULL);
}

static void
on_closed(void *arg, struct fns_conn *c, int err)
{
    closed_calls++;
}

static const struct fns_conn_ops ops = {on_frame, on_closed};

/* Runs the loop without blocking and reads what the connection answered. */
static void
turn(struct fns_loop *l, int peer)
{
    char buf[65536];

    event_base_loop(fns_loop_base(l), EVLOOP_NONBLOCK);
    while (read(peer, buf, sizeof(buf)) > 0) {
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fns_loop *l;
    struct fns_conn_list list = {0};
    struct fns_conn *c;
    size_t step, off = 1;
    uint8_t *copy = NULL;
    int sv[2];

    if (l == NULL && fns_loop_create(&l) != 0) {
        abort();
    }
    if (size == 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        return 0;
    }
    step = 1 + (size_t)(data[0] % 8) * 37; /* 1 .. 260 bytes per write */
    if (data[0] & 0x40) {
        copy = malloc(size);
        memcpy(copy, data, size);
        fuzz_fix_frames(copy + 1, size - 1, data[0] & 0x80);
        data = copy;
    }
    closed_calls = 0;
    if (fns_conn_create(l, sv[0], MAX_PAYLOAD, &ops, NULL, &list, &c) != 0) {
        abort();
    }
    while (off < size && closed_calls == 0) {
        size_t n = size - off < step ? size - off : step;
        ssize_t w = write(sv[1], data + off, n);

        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno != EAGAIN) {
            break; /* the node closed its end */
        }
        turn(l, sv[1]);
    }
    shutdown(sv[1], SHUT_WR);
    for (int i = 0; i < 64 && closed_calls == 0; i++) {
        turn(l, sv[1]);
    }
    if (closed_calls != 1 || list.n != 0 || list.head != NULL) {
        abort(); /* an EOF must end the connection exactly once */
    }
    close(sv[1]);
    free(copy);
    return 0;
}
