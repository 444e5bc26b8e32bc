/*
 * test_net.c - the engine's wire client (gw_net: gw_conn.c's frames, round
 * trips and failures) against a scripted node on loopback.
 *
 * The node thread accepts one connection at a time, answers PINGs at once
 * and every other request as `mode` says: after `delay_ms`, with a GET's
 * payload of hdr.index bytes; with that payload's CRC wrong; with garbage
 * instead of a header; with a request instead of an answer; or never (a
 * META request, as a node whose COS is down; or every request, as a hung
 * node). What the gateway side must do: deliver each answer to its request
 * with the payload in dst and a round-trip sample first; fail a request
 * whose payload is corrupt or too big for dst and keep the connection;
 * close the connection (failing its requests) on a bad header; fail a META
 * request unanswered for the I/O timeout alone, keeping the connection and
 * the node usable, but close the connection when a request the node
 * answers from memory is that late; keep a cancelled request's payload
 * until it is sent, then release it once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>

#include "t_check.h"
#include "t_net.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "cm_time.h"
#include "gw_engine.h"
#include "gw_net.h"

#define NODE_ID 7
#define DELAY_MS 30

enum mode { M_OK, M_BAD_CRC, M_GARBAGE, M_REQUEST, M_HOLD_META, M_HOLD_ALL };

static atomic_int mode, accepts;
static int lfd;

static void
answer(int fd, const struct cm_wire_hdr *req)
{
    static uint8_t pay[4096];
    struct cm_wire_hdr h = *req;
    uint8_t raw[CM_WIRE_HDR_LEN];
    enum mode m = req->op == CM_OP_PING ? M_OK : (enum mode)atomic_load(&mode);

    if (m == M_HOLD_ALL || (m == M_HOLD_META && req->op == CM_OP_META)) {
        return;
    }
    h.op |= CM_OP_RESPONSE;
    h.data_len = req->op == CM_OP_GET ? req->index : 0;
    for (uint32_t i = 0; i < h.data_len; i++) {
        pay[i] = (uint8_t)(i * 7 + 1);
    }
    h.data_crc = h.data_len ? cm_crc32c(0, pay, h.data_len) ^ (m == M_BAD_CRC) : 0;
    if (m == M_REQUEST) {
        h.op &= (uint8_t)~CM_OP_RESPONSE;
    }
    if (req->op != CM_OP_PING) {
        struct timespec ts = {0, DELAY_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    cm_wire_encode_hdr(&h, raw);
    if (m == M_GARBAGE) {
        memset(raw, 'x', sizeof(raw));
    }
    /* A failed write is the gateway closing: the test sees it. */
    (void)t_write_all(fd, raw, sizeof(raw));
    (void)t_write_all(fd, pay, h.data_len);
}

static void *
node_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        struct cm_frame f;
        uint8_t buf[4096];
        ssize_t got;

        if (fd < 0) {
            return NULL;
        }
        atomic_fetch_add(&accepts, 1);
        cm_frame_init(&f, 0, CM_FRAME_ANY);
        while ((got = read(fd, buf, sizeof(buf))) > 0) {
            size_t off = 0, used;
            int ev;

            while ((ev = cm_frame_feed(&f, buf + off, (size_t)got - off, &used)) > 0 || used > 0) {
                off += used;
                if (ev == CM_FRAME_END) {
                    answer(fd, &f.hdr);
                }
            }
        }
        close(fd);
    }
}

/* ---- the gateway side: everything on the loop thread, waited for here ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

struct call {
    struct gw_net *n;
    uint8_t op;
    uint32_t want; /* payload bytes asked of the node */
    size_t cap;
    uint8_t dst[4096];
    int sent, done, status;
    struct cm_wire_hdr rsp;
    int samples; /* round-trip samples for this request before done */
    struct gw_net_rtt sample;
};

static void
on_rtt(void *arg, const struct gw_net_rtt *s)
{
    struct call *c = s->arg;

    (void)arg;
    if (c != NULL) {
        CHECK(!c->done);
        c->samples++;
        c->sample = *s;
    }
}

static void
on_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct call *c = arg;

    pthread_mutex_lock(&mu);
    c->status = status;
    if (rsp != NULL) {
        c->rsp = *rsp;
    }
    c->done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void
do_send(void *arg)
{
    struct call *c = arg;
    struct gw_net_send s = {
        .hdr = {.op = c->op, .tenant = 1, .index = c->want},
        .dst = c->dst,
        .dst_cap = c->cap,
        .done = on_done,
        .arg = c,
    };
    int rc = gw_net_send(c->n, NODE_ID, &s, NULL);

    pthread_mutex_lock(&mu);
    c->sent = rc;
    if (rc < 0) {
        c->done = 1;
        c->status = rc;
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void
call_start(struct gw_net *n, struct call *c, uint8_t op, uint32_t want, size_t cap)
{
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->op = op;
    c->want = want;
    c->cap = cap;
    CHECK_EQ_INT(gw_net_post(n, do_send, c), 0);
}

static int
call_done(struct call *c)
{
    pthread_mutex_lock(&mu);
    int done = c->done;
    pthread_mutex_unlock(&mu);
    return done;
}

static void
call(struct gw_net *n, struct call *c, uint8_t op, uint32_t want, size_t cap)
{
    call_start(n, c, op, want, cap);
    pthread_mutex_lock(&mu);
    while (!c->done) {
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
}

struct usable_q {
    struct gw_net *n;
    int answered, usable;
};

static void
do_usable(void *arg)
{
    struct usable_q *q = arg;

    pthread_mutex_lock(&mu);
    q->usable = gw_net_node_usable(q->n, NODE_ID);
    q->answered = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int
node_usable(struct gw_net *n)
{
    struct usable_q q = {n, 0, 0};

    CHECK_EQ_INT(gw_net_post(n, do_usable, &q), 0);
    pthread_mutex_lock(&mu);
    while (!q.answered) {
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    return q.usable;
}

static void
wait_usable(struct gw_net *n)
{
    uint64_t t0 = cm_now_ns();

    do {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        CHECK(cm_now_ns() - t0 < 10000000000ull);
    } while (!node_usable(n));
}

/* A PUT of a payload far larger than the socket buffers, cancelled at once:
 * its bytes are still queued, so the release must wait for them to go. */
struct big_put {
    struct gw_net *n;
    uint8_t *payload;
    size_t len;
    int sent, released_at_cancel;
    atomic_int released;
};

static void
big_released(void *arg)
{
    struct big_put *b = arg;

    atomic_fetch_add(&b->released, 1);
}

static void
do_big_put(void *arg)
{
    struct big_put *b = arg;
    struct gw_net_req *r = NULL;
    struct gw_net_send s = {
        .hdr = {.op = CM_OP_PUT, .tenant = 1},
        .payload = b->payload,
        .len = b->len,
        .release = big_released,
        .release_arg = b,
        .done = on_done, /* never runs: cancelled */
    };

    pthread_mutex_lock(&mu);
    b->sent = gw_net_send(b->n, NODE_ID, &s, &r) == 0 ? 1 : -1;
    if (b->sent == 1) {
        gw_net_cancel(b->n, r);
        b->released_at_cancel = atomic_load(&b->released);
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

struct nodes_ctx {
    struct gw_net *n;
    struct gw_node node;
};

static void
do_set_nodes(void *arg)
{
    struct nodes_ctx *x = arg;

    gw_net_set_nodes(x->n, &x->node, 1);
}

int
main(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t slen = sizeof(sin);
    static struct call c;
    struct nodes_ctx nodes = {0};
    struct gw_net *n;
    pthread_t th;

    signal(SIGPIPE, SIG_IGN);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    CHECK(listen(lfd, 4) == 0 && getsockname(lfd, (struct sockaddr *)&sin, &slen) == 0);
    CHECK(pthread_create(&th, NULL, node_main, NULL) == 0);

    CHECK_EQ_INT(gw_net_create(2000, &n), 0);
    gw_net_set_rtt_handler(n, on_rtt, NULL);
    nodes.n = n;
    nodes.node.id = NODE_ID;
    nodes.node.up = 1;
    snprintf(nodes.node.addr, sizeof(nodes.node.addr), "127.0.0.1:%d", ntohs(sin.sin_port));
    CHECK_EQ_INT(gw_net_post(n, do_set_nodes, &nodes), 0);

    /* An answer: its payload in dst, its round trip sampled before done. */
    call(n, &c, CM_OP_GET, 1000, sizeof(c.dst));
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(c.rsp.op, CM_OP_GET | CM_OP_RESPONSE);
    CHECK_EQ_INT(c.rsp.data_len, 1000);
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ_INT(c.dst[i], (uint8_t)(i * 7 + 1));
    }
    CHECK_EQ_INT(c.samples, 1);
    CHECK_EQ_INT(c.sample.node, NODE_ID);
    CHECK_EQ_INT(c.sample.op, CM_OP_GET);
    CHECK_EQ_INT(c.sample.status, 0);
    CHECK_EQ_INT(c.sample.got_bytes, 1000);
    CHECK(c.sample.rtt_ns >= DELAY_MS * 1000000ull && c.sample.rtt_ns < 2000000000ull);
    call(n, &c, CM_OP_STAT, 0, 0);
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(c.samples, 1);
    CHECK_EQ_INT(c.sample.op, CM_OP_STAT);
    CHECK_EQ_INT(atomic_load(&accepts), 1);

    /* A corrupt payload or one too big for dst fails its request only. */
    atomic_store(&mode, M_BAD_CRC);
    call(n, &c, CM_OP_GET, 100, sizeof(c.dst));
    CHECK_EQ_INT(c.status, CM_E_CRC);
    CHECK_EQ_INT(c.sample.status, CM_E_CRC);
    atomic_store(&mode, M_OK);
    call(n, &c, CM_OP_GET, 100, 99);
    CHECK_EQ_INT(c.status, CM_E_PROTO);
    call(n, &c, CM_OP_GET, 10, sizeof(c.dst));
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(atomic_load(&accepts), 1);
    CHECK(node_usable(n));

    /* A bad header (garbage, or a request where answers come) fails the
     * connection: its requests fail, the node is suspect, then reconnected. */
    for (int m = M_GARBAGE; m <= M_REQUEST; m++) {
        atomic_store(&mode, m);
        call(n, &c, CM_OP_STAT, 0, 0);
        CHECK_EQ_INT(c.status, CM_E_PROTO);
        CHECK_EQ_INT(c.samples, 0);
        CHECK(!node_usable(n));
        atomic_store(&mode, M_OK);
        wait_usable(n);
        call(n, &c, CM_OP_STAT, 0, 0);
        CHECK_EQ_INT(c.status, 0);
        CHECK_EQ_INT(atomic_load(&accepts), 2 + (m - M_GARBAGE));
    }

    /* A META request waits for the node's COS: unanswered for the I/O
     * timeout (2 s), it fails alone, while the node answers the rest on the
     * same connection and stays usable. */
    static struct call meta;
    int before = atomic_load(&accepts), stats = 0;
    uint64_t t0 = cm_now_ns();
    atomic_store(&mode, M_HOLD_META);
    call_start(n, &meta, CM_OP_META, 0, 0);
    while (!call_done(&meta)) {
        call(n, &c, CM_OP_STAT, 0, 0);
        CHECK_EQ_INT(c.status, 0);
        CHECK(node_usable(n));
        stats++;
        CHECK(cm_now_ns() - t0 < 10000000000ull);
    }
    CHECK_EQ_INT(meta.status, CM_E_TIMEOUT);
    CHECK(cm_now_ns() - t0 >= 2000000000ull);
    CHECK(stats >= 3);
    CHECK(node_usable(n));
    call(n, &c, CM_OP_STAT, 0, 0);
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(atomic_load(&accepts), before);

    /* A request the node answers from memory that late: the node is hung,
     * the connection fails and the node is suspect until it answers again. */
    atomic_store(&mode, M_HOLD_ALL);
    t0 = cm_now_ns();
    call(n, &c, CM_OP_STAT, 0, 0);
    CHECK_EQ_INT(c.status, CM_E_TIMEOUT);
    CHECK(cm_now_ns() - t0 >= 2000000000ull);
    CHECK(!node_usable(n));
    atomic_store(&mode, M_OK);
    wait_usable(n);
    call(n, &c, CM_OP_STAT, 0, 0);
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(atomic_load(&accepts), before + 1);

    /* A cancelled request's payload stays referenced until it is sent. */
    static struct big_put big;
    big.n = n;
    big.len = 16u << 20;
    big.payload = calloc(1, big.len);
    CHECK(big.payload != NULL);
    CHECK_EQ_INT(gw_net_post(n, do_big_put, &big), 0);
    pthread_mutex_lock(&mu);
    while (big.sent == 0) {
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    CHECK_EQ_INT(big.sent, 1);
    CHECK_EQ_INT(big.released_at_cancel, 0);
    uint64_t t1 = cm_now_ns();
    while (atomic_load(&big.released) == 0) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        CHECK(cm_now_ns() - t1 < 10000000000ull);
    }
    call(n, &c, CM_OP_STAT, 0, 0); /* the connection carried on */
    CHECK_EQ_INT(c.status, 0);
    CHECK_EQ_INT(atomic_load(&big.released), 1);
    free(big.payload);

    gw_net_destroy(n, NULL, NULL);
    shutdown(lfd, SHUT_RDWR);
    close(lfd);
    pthread_join(th, NULL);
    return 0;
}
