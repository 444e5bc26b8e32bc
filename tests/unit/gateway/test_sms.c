/*
 * test_sms.c - unit.gateway.sms: the engine's side of the elastic memory
 * tier against six scripted nodes on loopback.
 *
 * Each node keeps its chunks with the tag of the one instance it has
 * (CM_WIRE_TAG(1, inc)) and answers as docs/internal-api.md says: a PUT with
 * that tag; a GET of a chunk not in memory whose tag names an older
 * incarnation with STALE, unless flagged CM_WF_COS_OK (then it reloads);
 * a META frame by keeping its records. "Reclaiming" a node bumps inc and drops
 * its memory. What the engine must do: record every PUT answer's tag in
 * the layout; send the tag with every GET; read around STALE chunks
 * (parity, another copy) and ask them again with CM_WF_COS_OK only when
 * fewer than k others are left, never failing a GET for STALE alone; send
 * a version's META record (key, version, layout record with its tags) to
 * m + 1 distinct nodes, the holders first, once committed and persisted,
 * and keep the version until they answered (failures again at the next
 * poll, a node gone for redrive_after_ms replaced); tombstones likewise;
 * a node without a log (CM_E_PROTO) counted apart.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>

#include "t_check.h"
#include "t_net.h"

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_engine.h"
#include "gw_meta.h"
#include "pol_rs.h"

#define NNODES 6
#define MAXCHUNKS 512
#define MAXMETA 256
#define MAXPAY (1u << 20)
#define TENANT 3

struct chunk {
    uint32_t tenant, index, tag, len;
    uint64_t object;
    int mem; /* in memory; else only in "COS" */
    uint8_t *data;
};

struct node {
    int id, lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    uint32_t inc;
    struct chunk chunks[MAXCHUNKS];
    int nchunks;
    uint8_t *meta[MAXMETA];
    size_t meta_len[MAXMETA];
    int nmeta, meta_frames, meta_refused;
    /* what it saw */
    int gets, stale, cos_ok, tag_right, tag_wrong, tag_zero;
    /* how it behaves */
    int meta_fail;  /* answer this many METAs with CM_E_UNAVAIL */
    int meta_proto; /* answer METAs CM_E_PROTO (a node without a log) */
    int meta_hang;  /* keep METAs unanswered */
    int meta_one;   /* refuse (CM_E_BADARG) a META frame of more than one record */
    atomic_int dead;
};

static struct node nodes[NNODES];

static struct chunk *
chunk_find(struct node *nd, const struct cm_wire_hdr *h)
{
    for (int i = 0; i < nd->nchunks; i++) {
        struct chunk *c = &nd->chunks[i];
        if (c->tenant == h->tenant && c->object == h->object && c->index == h->index) {
            return c;
        }
    }
    return NULL;
}

/* The length of the META record at p (gw_mrec: kind, tenant, key length,
 * key, version, then a version's layout record with its length), or 0. */
static size_t
rec_span(const uint8_t *p, size_t len)
{
    size_t n;

    if (len < 7) {
        return 0;
    }
    n = 7u + cm_get_le16(p + 5) + 8u;
    if (p[0] == GW_MREC_VERSION) {
        n = n + 4 <= len ? n + 4 + cm_get_le32(p + n) : len + 1;
    }
    return n <= len ? n : 0;
}

/* One request in, one answer out (node's mutex held). */
static void
serve(struct node *nd, int fd, const struct cm_wire_hdr *req, const uint8_t *pay)
{
    struct cm_wire_hdr h = *req;
    uint8_t raw[CM_WIRE_HDR_LEN];
    const uint8_t *out = NULL;
    uint32_t tag = CM_WIRE_TAG(1, nd->inc);
    struct chunk *c;

    h.op |= CM_OP_RESPONSE;
    h.flags = 0;
    h.status = 0;
    h.data_len = 0;
    h.data_crc = 0;
    h.incarnation = nd->inc;
    switch (req->op) {
    case CM_OP_PUT:
        c = chunk_find(nd, req);
        if (c == NULL) {
            CHECK(nd->nchunks < MAXCHUNKS);
            c = &nd->chunks[nd->nchunks++];
        } else {
            free(c->data);
        }
        c->tenant = req->tenant;
        c->object = req->object;
        c->index = req->index;
        c->len = req->data_len;
        c->data = malloc(req->data_len + 1);
        memcpy(c->data, pay, req->data_len);
        c->tag = tag;
        c->mem = 1;
        h.incarnation = tag;
        h.flags = CM_WF_PERSISTED; /* in "COS" at once */
        break;
    case CM_OP_GET:
        nd->gets++;
        c = chunk_find(nd, req);
        if (c == NULL) {
            h.status = CM_E_NOTFOUND;
            break;
        }
        nd->tag_right += req->incarnation == c->tag;
        nd->tag_wrong += req->incarnation != 0 && req->incarnation != c->tag;
        nd->tag_zero += req->incarnation == 0;
        if (!c->mem && req->incarnation != 0 && CM_WIRE_TAG_INC(req->incarnation) != nd->inc &&
            !(req->flags & CM_WF_COS_OK)) {
            nd->stale++;
            h.status = CM_E_STALE;
            break;
        }
        if (!c->mem) {
            nd->cos_ok += (req->flags & CM_WF_COS_OK) != 0;
            c->mem = 1;
            h.flags = CM_WF_FROM_COS;
        }
        out = c->data;
        h.data_len = c->len;
        h.data_crc = cm_crc32c(0, out, c->len);
        break;
    case CM_OP_STAT:
        h.status = chunk_find(nd, req) ? 0 : CM_E_NOTFOUND;
        h.flags = h.status == 0 ? CM_WF_PERSISTED : 0;
        break;
    case CM_OP_DEL:
        c = chunk_find(nd, req);
        if (c != NULL) {
            free(c->data);
            *c = nd->chunks[--nd->nchunks];
        }
        break;
    case CM_OP_META:
        if (nd->meta_hang) {
            return;
        }
        if (nd->meta_fail > 0) {
            nd->meta_fail--;
            h.status = CM_E_UNAVAIL;
        } else if (nd->meta_proto) {
            h.status = CM_E_PROTO;
        } else if (nd->meta_one && rec_span(pay, req->data_len) != req->data_len) {
            nd->meta_refused++;
            h.status = CM_E_BADARG;
        } else {
            size_t at = 0, n;
            nd->meta_frames++;
            while (at < req->data_len) {
                n = rec_span(pay + at, req->data_len - at);
                CHECK(n > 0 && nd->nmeta < MAXMETA);
                nd->meta[nd->nmeta] = malloc(n);
                memcpy(nd->meta[nd->nmeta], pay + at, n);
                nd->meta_len[nd->nmeta++] = n;
                at += n;
            }
        }
        break;
    default:
        break;
    }
    cm_wire_encode_hdr(&h, raw);
    (void)t_write_all(fd, raw, sizeof(raw));
    if (out != NULL) {
        (void)t_write_all(fd, out, h.data_len);
    }
}

static void
serve_conn(struct node *nd, int fd)
{
    static _Thread_local uint8_t pay[MAXPAY];
    struct cm_frame f;
    uint8_t buf[65536];

    cm_frame_init(&f, MAXPAY, CM_FRAME_ANY);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t got;
        size_t off = 0, used;
        int ev;

        if (atomic_load(&nd->dead)) {
            return;
        }
        if (poll(&p, 1, 20) <= 0) {
            continue;
        }
        got = read(fd, buf, sizeof(buf));
        if (got <= 0) {
            return;
        }
        while ((ev = cm_frame_feed(&f, buf + off, (size_t)got - off, &used)) > 0 || used > 0) {
            off += used;
            if (ev == CM_FRAME_HEADER) {
                cm_frame_payload_to(&f, pay);
            } else if (ev == CM_FRAME_END) {
                CHECK_EQ_INT(f.status, 0);
                pthread_mutex_lock(&nd->mu);
                serve(nd, fd, &f.hdr, pay);
                pthread_mutex_unlock(&nd->mu);
            }
        }
        CHECK(ev >= 0);
    }
}

static void *
node_main(void *arg)
{
    struct node *nd = arg;

    for (;;) {
        int fd = accept(nd->lfd, NULL, NULL);
        if (fd < 0) {
            return NULL;
        }
        if (!atomic_load(&nd->dead)) {
            serve_conn(nd, fd);
        }
        close(fd);
    }
}

static void
node_start(struct node *nd, int id)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t slen = sizeof(sin);

    nd->id = id;
    nd->inc = 1;
    pthread_mutex_init(&nd->mu, NULL);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    nd->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(nd->lfd >= 0 && bind(nd->lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    CHECK(listen(nd->lfd, 8) == 0 && getsockname(nd->lfd, (struct sockaddr *)&sin, &slen) == 0);
    nd->port = ntohs(sin.sin_port);
    CHECK(pthread_create(&nd->th, NULL, node_main, nd) == 0);
}

/* The instance is gone: a new incarnation, memory lost (COS keeps all). */
static void
reclaim(int id)
{
    struct node *nd = &nodes[id];

    pthread_mutex_lock(&nd->mu);
    nd->inc++;
    for (int i = 0; i < nd->nchunks; i++) {
        nd->chunks[i].mem = 0;
    }
    pthread_mutex_unlock(&nd->mu);
}

static void
node_set(int id, int *field, int v)
{
    pthread_mutex_lock(&nodes[id].mu);
    *field = v;
    pthread_mutex_unlock(&nodes[id].mu);
}

static int
node_count(int id, const int *field)
{
    int v;

    pthread_mutex_lock(&nodes[id].mu);
    v = *field;
    pthread_mutex_unlock(&nodes[id].mu);
    return v;
}

/* ---- the gateway side ---- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    struct gw_layout lay; /* put: a copy with its own tags */
    void *buf;
    size_t len;
};

static void
waiter_init(struct waiter *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void
waiter_wait(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

static void
put_cb(void *arg, int status, const struct gw_layout *l)
{
    struct waiter *w = arg;

    pthread_mutex_lock(&w->mu);
    w->status = status;
    if (status == 0) {
        CHECK_EQ_INT(gw_layout_copy(&w->lay, l), 0);
    }
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void
get_cb(void *arg, int status, void *buf, size_t len)
{
    struct waiter *w = arg;

    pthread_mutex_lock(&w->mu);
    w->status = status;
    w->buf = buf;
    w->len = len;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Reports: which objects are done, how many tombstones logged. */
static pthread_mutex_t rep_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t done_objects[64];
static int ndone, ntombs, nchanged;

static void
on_layout(void *arg, const struct gw_layout *l, enum gw_report what)
{
    (void)arg;
    pthread_mutex_lock(&rep_mu);
    if (what == GW_REPORT_DONE) {
        CHECK(ndone < 64);
        CHECK(gw_layout_persisted(l));
        done_objects[ndone++] = l->object;
    } else if (what == GW_REPORT_TOMB) {
        ntombs++;
    } else {
        nchanged++;
    }
    pthread_mutex_unlock(&rep_mu);
}

static int
is_done(uint64_t object)
{
    int d = 0;

    pthread_mutex_lock(&rep_mu);
    for (int i = 0; i < ndone; i++) {
        d |= done_objects[i] == object;
    }
    pthread_mutex_unlock(&rep_mu);
    return d;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
wait_done(uint64_t object)
{
    for (int t = 0; t < 500 && !is_done(object); t++) {
        sleep_ms(10);
    }
    CHECK(is_done(object));
}

static struct gw_engine *eng;
static uint8_t src[1 << 20];

static struct gw_layout
put(uint8_t k, uint8_t m, size_t size, const uint32_t *row)
{
    struct waiter w;
    uint8_t *copy = malloc(size);

    memcpy(copy, src, size);
    waiter_init(&w);
    gw_engine_put(eng, TENANT, row, NNODES, k, m, copy, size, size, put_cb, &w, NULL, NULL);
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    return w.lay;
}

static void
get_ok(const struct gw_layout *l, uint64_t off, uint64_t len)
{
    struct waiter w;

    waiter_init(&w);
    gw_engine_get(eng, l, off, len, get_cb, &w);
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_EQ_INT(w.len, len);
    CHECK(memcmp(w.buf, src + off, len) == 0);
    free(w.buf);
}

static struct gw_engine_stats
stats(void)
{
    struct gw_engine_stats s;

    gw_engine_stats(eng, &s);
    return s;
}

/* The nodes holding a META record of (kind, key), as a bit mask; *rec the
 * last one found (decoded, pointers into the node's copy). */
static unsigned
meta_nodes(uint8_t kind, const char *key, struct gw_mrec *rec)
{
    unsigned mask = 0;

    for (int i = 0; i < NNODES; i++) {
        pthread_mutex_lock(&nodes[i].mu);
        for (int r = 0; r < nodes[i].nmeta; r++) {
            struct gw_mrec m;
            CHECK_EQ_INT(gw_mrec_decode(nodes[i].meta[r], nodes[i].meta_len[r], &m), 0);
            if (m.kind == kind && m.klen == strlen(key) && memcmp(m.key, key, m.klen) == 0) {
                mask |= 1u << i;
                *rec = m;
            }
        }
        pthread_mutex_unlock(&nodes[i].mu);
    }
    return mask;
}

static unsigned
first_holders(const struct gw_layout *l, unsigned n)
{
    unsigned mask = 0;

    for (unsigned j = 0; j < n; j++) {
        mask |= 1u << l->holders[j];
    }
    return mask;
}

static void
commit(struct gw_layout *l, const char *key, uint64_t version)
{
    l->version = version;
    gw_engine_committed(eng, l, NULL, key, strlen(key));
}

#define BURST 16

/* Holds the engine thread until *go is set (a census answer that waits). */
static void
hold_loop(void *arg, struct gw_census *c)
{
    atomic_int *go = arg;

    free(c->ids);
    free(c->nodes);
    while (!atomic_load(go)) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* BURST small versions stored on row, then committed back to back (keys
 * prefix0, prefix1, ...) while the engine thread is held, so that it takes
 * the commits in one loop turn however this thread is scheduled; waited
 * for until each left the buffer. */
static void
commit_burst(const uint32_t *row, const char *prefix)
{
    struct gw_layout v[BURST];
    char key[32];
    atomic_int go = 0;

    for (int i = 0; i < BURST; i++) {
        v[i] = put(1, 2, 1000, row);
    }
    CHECK_EQ_INT(gw_engine_census(eng, hold_loop, &go), 0);
    for (int i = 0; i < BURST; i++) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        commit(&v[i], key, 1);
    }
    atomic_store(&go, 1);
    for (int i = 0; i < BURST; i++) {
        wait_done(v[i].object);
        gw_layout_fini(&v[i]);
    }
}

/* The int field at offset off of struct node, summed over the nodes. */
static int
nodes_total(size_t off)
{
    int sum = 0;

    for (int i = 0; i < NNODES; i++) {
        sum += node_count(i, (const int *)((const char *)&nodes[i] + off));
    }
    return sum;
}

int
main(void)
{
    const uint32_t row[NNODES] = {0, 1, 2, 3, 4, 5};
    const uint32_t row2[NNODES] = {3, 4, 5, 0, 1, 2};
    struct gw_node dir[NNODES] = {0};
    struct gw_mrec rec;
    struct gw_layout big, small, lay, got;
    struct gw_engine_stats s0, s1;

    signal(SIGPIPE, SIG_IGN);
    cm_log_init("test", getenv("GW_TEST_DEBUG") ? CM_LOG_DEBUG : CM_LOG_ERROR);
    t_seed();
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (uint8_t)t_rand();
    }
    for (int i = 0; i < NNODES; i++) {
        node_start(&nodes[i], i);
        dir[i].id = (uint32_t)i;
        dir[i].up = 1;
        snprintf(dir[i].addr, sizeof(dir[i].addr), "127.0.0.1:%d", nodes[i].port);
    }
    struct gw_engine_cfg cfg = {
        .max_chunk = 64 * 1024,
        .io_timeout_ms = 2000,
        .slow_ms = 2000, /* reads go around STALE, not around slowness */
        .persist_poll_ms = 50,
        .redrive_after_ms = 400,
        /* a read asks the data chunks first, so one that reaches a
         * reclaimed instance is certain to: which k the default policy
         * asks depends on windows and round trips */
        .rs = pol_rs_find("uniform"),
    };
    CHECK_EQ_INT(gw_engine_create(&cfg, on_layout, NULL, &eng), 0);
    gw_engine_set_nodes(eng, dir, NNODES);

    /* Tags: every chunk's, from its PUT's answer, by wire index. */
    for (int i = 0; i < NNODES; i++) {
        nodes[i].inc = 10 + (uint32_t)i;
    }
    big = put(4, 2, 600000, row);
    small = put(1, 2, 10000, row);
    CHECK(big.nstripes == 3 && small.nstripes == 1);
    for (uint32_t s = 0; s < big.nstripes; s++) {
        for (uint32_t j = 0; j < 6; j++) {
            CHECK_EQ_INT(big.tags[s * 6 + j], CM_WIRE_TAG(1, 10 + big.holders[j]));
        }
    }
    for (uint32_t j = 0; j < 3; j++) {
        CHECK_EQ_INT(small.tags[j], CM_WIRE_TAG(1, 10 + small.holders[j]));
    }
    printf("ok tags recorded\n");

    /* META: once committed (and persisted, at once here), to the holders
     * of positions 0..m; the version leaves the buffer once they answered. */
    s0 = stats();
    CHECK_EQ_INT(s0.buffered_objects, 2); /* persisted, but not committed */
    commit(&big, "big", 7);
    commit(&small, "small", 1);
    wait_done(big.object);
    wait_done(small.object);
    s1 = stats();
    CHECK(s1.buffered_objects == 0 && s1.meta_waiting == 0 && s1.meta_records == 6);
    CHECK_EQ_INT(meta_nodes(GW_MREC_VERSION, "big", &rec), first_holders(&big, 3));
    CHECK(rec.tenant == TENANT && rec.version == 7);
    CHECK_EQ_INT(gw_meta_decode_tags(rec.rec, rec.rec_len, &got), 0);
    CHECK(got.object == big.object && got.version == 7 && got.size == 600000);
    CHECK(got.etag == big.etag && gw_layout_persisted(&got) && got.tags != NULL);
    CHECK(memcmp(got.holders, big.holders, sizeof(got.holders)) == 0);
    CHECK(memcmp(got.tags, big.tags, gw_layout_nchunks(&big) * sizeof(*big.tags)) == 0);
    gw_layout_fini(&got);
    CHECK_EQ_INT(meta_nodes(GW_MREC_VERSION, "small", &rec), first_holders(&small, 3));
    printf("ok meta records\n");

    /* Versions committed together: their records share a frame per node. */
    {
        int rec0 = nodes_total(offsetof(struct node, nmeta));
        int frames0 = nodes_total(offsetof(struct node, meta_frames));
        commit_burst(row, "burst");
        int rec1 = nodes_total(offsetof(struct node, nmeta));
        int frames1 = nodes_total(offsetof(struct node, meta_frames));
        CHECK_EQ_INT(rec1 - rec0, BURST * 3);
        CHECK(frames1 - frames0 < rec1 - rec0);
        printf("ok meta frames: %d records in %d frames\n", rec1 - rec0, frames1 - frames0);

        /* A node that refuses a frame as malformed gets its records again
         * one per frame, and every version still leaves the buffer. */
        int one = (int)row[0], logged0 = node_count(one, &nodes[one].nmeta);
        node_set(one, &nodes[one].meta_one, 1);
        commit_burst(row, "again");
        CHECK_EQ_INT(node_count(one, &nodes[one].nmeta) - logged0, BURST);
        CHECK(node_count(one, &nodes[one].meta_refused) >= 1);
        node_set(one, &nodes[one].meta_one, 0);
        printf("ok meta frame refused: its records logged one by one\n");
    }

    /* Reads send the tags. */
    get_ok(&big, 0, big.size);
    get_ok(&small, 0, small.size);
    for (int i = 0; i < NNODES; i++) {
        CHECK_EQ_INT(node_count(i, &nodes[i].tag_wrong), 0);
        CHECK_EQ_INT(node_count(i, &nodes[i].tag_zero), 0);
    }
    CHECK_EQ_INT(stats().stale_chunks, 0);

    /* One node's instance reclaimed: read around it, no COS read. */
    s0 = stats();
    reclaim((int)big.holders[0]);
    get_ok(&big, 0, big.size);
    get_ok(&big, 1000, 70000);
    s1 = stats();
    CHECK(s1.stale_chunks > s0.stale_chunks && s1.parity_reads > s0.parity_reads);
    CHECK_EQ_INT(s1.late_reads, 0);
    CHECK(node_count((int)big.holders[0], &nodes[big.holders[0]].stale) > 0);
    CHECK_EQ_INT(node_count((int)big.holders[0], &nodes[big.holders[0]].cos_ok), 0);
    get_ok(&small, 0, small.size); /* another copy */
    printf("ok read around stale: stale=%llu parity_reads=%llu\n",
           (unsigned long long)s1.stale_chunks, (unsigned long long)s1.parity_reads);

    /* Three reclaimed: fewer than k left; the stale ones are asked again
     * with CM_WF_COS_OK, as few as needed. Copies: all three stale. */
    reclaim((int)big.holders[1]);
    reclaim((int)big.holders[2]);
    s0 = stats();
    get_ok(&big, 0, big.size);
    s1 = stats();
    CHECK(s1.late_reads >= big.nstripes && s1.late_reads - s0.late_reads <= big.nstripes * 3);
    /* The GET ends once it has k chunks: late reads still on their way
     * reach their nodes after it (2 s at most). */
    int cos_ok = 0;
    for (int t = 0; t < 200; t++, sleep_ms(10)) {
        cos_ok = 0;
        for (int j = 0; j < 3; j++) {
            cos_ok += node_count((int)big.holders[j], &nodes[big.holders[j]].cos_ok);
        }
        if ((uint64_t)cos_ok >= s1.late_reads - s0.late_reads) {
            break;
        }
    }
    CHECK_EQ_INT((uint64_t)cos_ok, s1.late_reads - s0.late_reads);
    for (uint32_t j = 0; j < 3; j++) {
        reclaim((int)small.holders[j]);
    }
    s0 = stats();
    get_ok(&small, 0, small.size);
    s1 = stats();
    CHECK(s1.stale_chunks - s0.stale_chunks == 3 && s1.late_reads - s0.late_reads >= 1);
    printf("ok late reads: %llu\n", (unsigned long long)s1.late_reads);

    /* A layout without tags (format 1): GETs say "any" and never see STALE. */
    reclaim((int)big.holders[0]);
    lay = big;
    lay.tags = NULL;
    s0 = stats();
    get_ok(&lay, 0, lay.size);
    CHECK_EQ_INT(stats().stale_chunks, s0.stale_chunks);
    int tag_zero = 0; /* which k of the k + m were asked is the read policy's choice */
    for (uint32_t j = 0; j < big.k + big.m; j++) {
        tag_zero += node_count((int)big.holders[j], &nodes[big.holders[j]].tag_zero);
    }
    CHECK(tag_zero >= (int)big.k);

    /* A META that fails is sent again; a node gone is replaced. */
    node_set((int)row2[0], &nodes[row2[0]].meta_fail, 3);
    lay = put(4, 2, 300000, row2);
    commit(&lay, "retry", 1);
    wait_done(lay.object);
    CHECK_EQ_INT(meta_nodes(GW_MREC_VERSION, "retry", &rec), first_holders(&lay, 3));
    CHECK_EQ_INT(node_count((int)row2[0], &nodes[row2[0]].meta_fail), 0);
    gw_layout_fini(&lay);
    lay = put(4, 2, 300000, row2);
    node_set((int)lay.holders[1], &nodes[lay.holders[1]].meta_hang, 1); /* asked, then gone */
    commit(&lay, "moved", 1);
    sleep_ms(100);
    atomic_store(&nodes[lay.holders[1]].dead, 1);
    wait_done(lay.object);
    /* holders[1] replaced by the next holder, holders[3] */
    CHECK_EQ_INT(meta_nodes(GW_MREC_VERSION, "moved", &rec),
                 (1u << lay.holders[0]) | (1u << lay.holders[2]) | (1u << lay.holders[3]));
    node_set((int)lay.holders[1], &nodes[lay.holders[1]].meta_hang, 0);
    atomic_store(&nodes[lay.holders[1]].dead, 0);
    printf("ok meta retries and moves\n");

    /* A tombstone: m + 1 nodes, then reported. */
    gw_engine_tombstone(eng, &big, "big", 3);
    for (int t = 0; t < 500 && ntombs == 0; t++) {
        sleep_ms(10);
    }
    CHECK_EQ_INT(ntombs, 1);
    CHECK_EQ_INT(meta_nodes(GW_MREC_TOMB, "big", &rec), first_holders(&big, 3));
    CHECK(rec.version == 7 && rec.tenant == TENANT);

    /* Nodes that keep no log: the version still leaves, counted apart. */
    for (int i = 0; i < NNODES; i++) {
        node_set(i, &nodes[i].meta_proto, 1);
    }
    s0 = stats();
    gw_layout_fini(&lay);
    lay = put(1, 2, 5000, row);
    commit(&lay, "nolog", 1);
    wait_done(lay.object);
    s1 = stats();
    CHECK_EQ_INT(s1.meta_unlogged - s0.meta_unlogged, 3);
    CHECK_EQ_INT(s1.meta_waiting, 0);
    printf("ok tombstone, unlogged\n");

    gw_engine_destroy(eng);
    gw_layout_fini(&lay);
    gw_layout_fini(&big);
    gw_layout_fini(&small);
    for (int i = 0; i < NNODES; i++) {
        shutdown(nodes[i].lfd, SHUT_RDWR);
        close(nodes[i].lfd);
        atomic_store(&nodes[i].dead, 1);
        pthread_join(nodes[i].th, NULL);
        for (int c = 0; c < nodes[i].nchunks; c++) {
            free(nodes[i].chunks[c].data);
        }
        for (int r = 0; r < nodes[i].nmeta; r++) {
            free(nodes[i].meta[r]);
        }
    }
    printf("PASS\n");
    return 0;
}
