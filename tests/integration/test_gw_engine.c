/*
 * test_gw_engine.c - gw_engine against six real shoal-fnstore processes.
 *
 * Usage: test_gw_engine PATH/TO/shoal-fnstore
 * Nodes listen on free 127.0.0.1 ports in 12000-12999 with a temp COS dir;
 * every process started is killed on exit. Node 5 gets its own COS dir
 * that is broken after start, so its chunks never persist: that is how the
 * redrive and track paths are exercised. Each put is "committed" as the
 * front would, so that its META record goes out and it leaves the buffer;
 * the tags its PUTs (and a redrive's, a rebuild's) answered are checked.
 */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "cm_log.h"
#include "gw_engine.h"
#include "pol_rs.h"
#include "t_check.h"
#include "t_net.h"

#define NNODES 6
#define NPROCS 7 /* + one node with a tiny queue, for CM_E_BUSY */
#define BUSYNODE 6
#define BROKEN 5
#define MAX_CHUNK (256 * 1024) /* the engine's max_chunk in the put/get tests */
#define GET_PARALLEL 8 /* stripe fetches in flight per GET (GW_GET_PARALLEL) */

static pid_t pids[NPROCS];
static int ports[NPROCS];
static char tmpdir[256];
static const char *fnstore_bin;

static void
cleanup(void)
{
    for (int i = 0; i < NPROCS; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "cannot remove %s\n", tmpdir);
        }
        tmpdir[0] = '\0';
    }
}

/* Exits 1; the nodes and the temp dir go with cleanup() (atexit). */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int
port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    int ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
    close(fd);
    return ok;
}

static int
port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    int ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
    close(fd);
    return ok;
}

static void
start_node(int i)
{
    char id[16], listen[64], cos[300], data[300];
    snprintf(id, sizeof(id), "%d", i);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", ports[i]);
    if (i == BROKEN) {
        snprintf(cos, sizeof(cos), "%s/cos%d", tmpdir, i);
    } else {
        snprintf(cos, sizeof(cos), "%s/cos", tmpdir);
    }
    snprintf(data, sizeof(data), "%s/node%d", tmpdir, i);
    mkdir(cos, 0700);
    mkdir(data, 0700);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (i == BUSYNODE) {
            execl(fnstore_bin, fnstore_bin, "--id", id, "--listen", listen, "--metrics-listen=",
                  "--controller=", "--cos", cos, "--data-dir", data, "--capacity", "512MiB",
                  "--log-level", "error", "--queue-limit", "1", "--cap-ops", "5",
                  (char *)NULL);
        } else {
            execl(fnstore_bin, fnstore_bin, "--id", id, "--listen", listen, "--metrics-listen=",
                  "--controller=", "--cos", cos, "--data-dir", data, "--capacity", "512MiB",
                  "--log-level", "warn", (char *)NULL);
        }
        _exit(127);
    }
    pids[i] = pid;
    for (int t = 0; t < 500; t++) {
        if (port_open(ports[i])) {
            return;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            pids[i] = 0;
            fail("fnstore %d exited at start (status %d)", i, st);
        }
        sleep_ms(10);
    }
    fail("fnstore %d did not listen on %d", i, ports[i]);
}

static void
kill_node(int i)
{
    kill(pids[i], SIGKILL);
    waitpid(pids[i], NULL, 0);
    pids[i] = 0;
}

/* A STAT of one chunk sent straight to node i: the status it answers. */
static int
wire_stat(int i, const struct gw_layout *l, uint32_t index)
{
    struct cm_wire_hdr h = {
        .op = CM_OP_STAT, .tenant = l->tenant, .object = l->object, .index = index, .req_id = 9};
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ports[i])};
    struct timeval tv = {10, 0};
    uint8_t b[CM_WIRE_HDR_LEN];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
    CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    cm_wire_encode_hdr(&h, b);
    CHECK(t_write_all(fd, b, sizeof(b)) == 0);
    CHECK(t_read_all(fd, b, sizeof(b)) == 0);
    close(fd);
    CHECK(cm_frame_decode_hdr(b, 0, &h, NULL) == 0);
    CHECK(h.op == (CM_OP_STAT | CM_OP_RESPONSE) && h.req_id == 9);
    return h.status;
}

/* ---- synchronous wrappers ---- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int status;
    struct gw_layout lay; /* tags stripped: they die with the callback */
    int tagged;           /* every chunk's tag was known */
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
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT) {
            pthread_mutex_unlock(&w->mu);
            fail("callback never ran");
        }
    }
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

/* Positions every chunk of which has a tag (0: unknown). */
static uint64_t
tagged_positions(const struct gw_layout *l)
{
    uint64_t mask = 0;
    for (uint32_t j = 0; j < (uint32_t)(l->k + l->m); j++) {
        int all = l->tags != NULL;
        for (uint32_t s = 0; all && s < l->nstripes; s++) {
            all = l->tags[s * (uint32_t)(l->k + l->m) + j] != 0;
        }
        mask |= (uint64_t)all << j;
    }
    return mask;
}

static void
put_cb(void *arg, int status, const struct gw_layout *l)
{
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    CHECK(!w->done);
    w->status = status;
    w->lay = *l;
    w->lay.tags = NULL;
    w->tagged = tagged_positions(l) == (1ull << (l->k + l->m)) - 1;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void
get_cb(void *arg, int status, void *buf, size_t len)
{
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    CHECK(!w->done);
    w->status = status;
    w->buf = buf;
    w->len = len;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Newest layout per object, as reported by on_layout (tags stripped; the
 * positions whose tags were all known, and whether it was done). */
#define MAXOBJ 64
static pthread_mutex_t lay_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gw_layout lays[MAXOBJ];
static uint64_t lay_tagged[MAXOBJ];
static int lay_done[MAXOBJ];
static int nlays;
static int layout_calls;

static void
on_layout(void *arg, const struct gw_layout *l, enum gw_report what)
{
    (void)arg;
    CHECK(what != GW_REPORT_TOMB); /* no deletes are committed here */
    pthread_mutex_lock(&lay_mu);
    layout_calls++;
    int i;
    for (i = 0; i < nlays; i++) {
        if (lays[i].object == l->object) {
            break;
        }
    }
    if (i < MAXOBJ) {
        lays[i] = *l;
        lays[i].tags = NULL;
        lay_tagged[i] = tagged_positions(l);
        lay_done[i] = what == GW_REPORT_DONE;
        if (i == nlays) {
            nlays++;
        }
    }
    pthread_mutex_unlock(&lay_mu);
}

/* Whether object was reported done; *tagged: its tagged positions then. */
static int
done_tagged(uint64_t object, uint64_t *tagged)
{
    int done = 0;
    pthread_mutex_lock(&lay_mu);
    for (int i = 0; i < nlays; i++) {
        if (lays[i].object == object) {
            done = lay_done[i];
            *tagged = lay_tagged[i];
        }
    }
    pthread_mutex_unlock(&lay_mu);
    return done;
}

static void
remember(const struct gw_layout *l)
{
    pthread_mutex_lock(&lay_mu);
    int i;
    for (i = 0; i < nlays; i++) {
        if (lays[i].object == l->object) {
            break;
        }
    }
    if (i == nlays && i < MAXOBJ) {
        lays[nlays++] = *l;
    }
    pthread_mutex_unlock(&lay_mu);
}

static struct gw_layout
latest(uint64_t object)
{
    struct gw_layout l = {0};
    pthread_mutex_lock(&lay_mu);
    for (int i = 0; i < nlays; i++) {
        if (lays[i].object == object) {
            l = lays[i];
        }
    }
    pthread_mutex_unlock(&lay_mu);
    return l;
}

static uint64_t
full(const struct gw_layout *l)
{
    return (1ull << (l->k + l->m)) - 1;
}

static int
do_put(struct gw_engine *e, const uint32_t *place, size_t np, int k, int m, const uint8_t *src,
       size_t size, struct gw_layout *out)
{
    static unsigned calls;
    struct waiter w;
    waiter_init(&w);
    /* Every other put leaves room to pad the last stripe in place (the
     * room holds garbage, as a reused buffer would); the others make the
     * engine copy the last stripe. */
    size_t room = gw_engine_put_room(e, (uint8_t)k, size);
    size_t cap = calls++ % 2 ? room : size;
    CHECK(room >= size);
    uint8_t *copy = malloc(cap ? cap : 1);
    CHECK(copy);
    memcpy(copy, src, size);
    memset(copy + size, 0xa5, cap - size);
    gw_engine_put(e, 7, place, np, (uint8_t)k, (uint8_t)m, copy, size, cap, put_cb, &w, NULL,
                  NULL);
    waiter_wait(&w);
    if (w.status == 0) {
        char key[32];
        CHECK(w.tagged || size == 0); /* every PUT answer's tag is in the layout */
        w.lay.version = calls;
        *out = w.lay;
        remember(&w.lay);
        snprintf(key, sizeof(key), "key%u", calls);
        gw_engine_committed(e, &w.lay, NULL, key, strlen(key)); /* as the front does */
    }
    return w.status;
}

static int
do_get(struct gw_engine *e, const struct gw_layout *l, uint64_t off, uint64_t len,
       const uint8_t *expect)
{
    struct waiter w;
    waiter_init(&w);
    gw_engine_get(e, l, off, len, get_cb, &w);
    waiter_wait(&w);
    if (w.status != 0) {
        fprintf(stderr, "get off=%llu len=%llu: %s\n", (unsigned long long)off,
                (unsigned long long)len, cm_errname(w.status));
        return w.status;
    }
    CHECK(w.len == len);
    CHECK(w.buf != NULL);
    int same = memcmp(w.buf, expect + off, len) == 0;
    free(w.buf);
    if (!same) {
        fprintf(stderr, "get mismatch off=%llu len=%llu\n", (unsigned long long)off,
                (unsigned long long)len);
        return -1;
    }
    return 0;
}

static void
fill_random(uint8_t *p, size_t n, unsigned seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

/* Waits until object's persisted mask is full (or ms pass). */
static int
wait_persisted(uint64_t object, int ms)
{
    for (int t = 0; t < ms / 20; t++) {
        struct gw_layout l = latest(object);
        if (l.k && (l.persisted & full(&l)) == full(&l)) {
            return 1;
        }
        sleep_ms(20);
    }
    return 0;
}

static void
set_nodes(struct gw_engine *e, int n)
{
    struct gw_node nodes[NNODES] = {0};
    for (int i = 0; i < n; i++) {
        nodes[i].id = (uint32_t)i;
        snprintf(nodes[i].addr, sizeof(nodes[i].addr), "127.0.0.1:%d", ports[i]);
        nodes[i].up = 1;
    }
    gw_engine_set_nodes(e, nodes, (size_t)n);
}

static struct gw_engine *
new_engine(int n)
{
    struct gw_engine_cfg cfg = {
        .max_chunk = MAX_CHUNK,
        .io_timeout_ms = 3000,
        .slow_ms = 300,
        .persist_poll_ms = 100,
        .redrive_after_ms = 500,
    };
    struct gw_engine *e = NULL;
    CHECK(gw_engine_create(&cfg, on_layout, NULL, &e) == 0);
    set_nodes(e, n);
    return e;
}

/*
 * An RS policy injected through the engine config: uniform, but at most one
 * chunk GET outstanding per node, holding reads (-EAGAIN) when a chosen
 * node has one (hold_all: every read is held). Counts what the engine
 * tells it. Runs on the engine thread; read once the engine is destroyed.
 */
static struct {
    int hold_all;
    int out[NPROCS], max_out[NPROCS];
    long sends, dones, canceled, holds;
} win;
static struct pol_rs_ops win_ops;

static int
win_choose(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now, uint64_t rand,
           uint64_t *ask)
{
    int rc = pol_rs_find("uniform")->choose(rs, v, now, rand, ask);
    for (int j = 0; rc == 0 && j < v->n; j++) {
        if (win.hold_all || ((*ask >> j & 1) && win.out[v->holders[j]] > 0)) {
            win.holds++;
            return -EAGAIN;
        }
    }
    return rc;
}

static void
win_on_send(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t now)
{
    (void)rs;
    (void)tenant;
    (void)bytes;
    (void)now;
    win.sends++;
    if (++win.out[node] > win.max_out[node]) {
        win.max_out[node] = win.out[node];
    }
}

static void
win_on_done(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t rtt,
            enum pol_rs_outcome outcome, uint64_t now)
{
    (void)rs;
    (void)tenant;
    (void)bytes;
    (void)rtt;
    (void)now;
    win.dones++;
    win.canceled += outcome == POL_RS_CANCELED;
    win.out[node]--;
}

/* The engine asks only what the policy chooses, retries held reads as
 * sends end, tells it of every end, and fails (not hangs) a read held
 * with nothing outstanding. */
static void
test_rs_policy(struct gw_layout big, struct gw_layout small, const uint8_t *src)
{
    struct gw_engine_cfg cfg = {.max_chunk = MAX_CHUNK, .io_timeout_ms = 3000, .slow_ms = 300,
                                .persist_poll_ms = 100, .redrive_after_ms = 500, .rs = &win_ops};
    struct gw_engine *e = NULL;
    win_ops = *pol_rs_find("uniform");
    win_ops.name = "window1";
    win_ops.choose = win_choose;
    win_ops.on_send = win_on_send;
    win_ops.on_done = win_on_done;
    CHECK(gw_engine_create(&cfg, on_layout, NULL, &e) == 0);
    set_nodes(e, NNODES - 1);
    CHECK(big.k == 4 && big.nstripes > GET_PARALLEL && small.k == 1);
    CHECK(do_get(e, &big, 0, big.size, src) == 0);
    CHECK(do_get(e, &small, 0, small.size, src) == 0);
    CHECK(do_get(e, &big, 12345, 3 * MAX_CHUNK, src) == 0);
    gw_engine_destroy(e); /* its loop thread is gone: win is ours to read */
    printf("ok rs policy: sends=%ld dones=%ld canceled=%ld holds=%ld\n", win.sends, win.dones,
           win.canceled, win.holds);
    CHECK(win.sends >= big.nstripes * 4 && win.holds > 0);
    CHECK_EQ_INT(win.dones, win.sends);
    for (int i = 0; i < NPROCS; i++) {
        CHECK_EQ_INT(win.out[i], 0);
        CHECK(win.max_out[i] <= 1);
    }
    win.hold_all = 1;
    CHECK(gw_engine_create(&cfg, on_layout, NULL, &e) == 0);
    set_nodes(e, NNODES - 1);
    struct waiter w;
    waiter_init(&w);
    gw_engine_get(e, &big, 0, big.size, get_cb, &w);
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, CM_E_UNAVAIL);
    gw_engine_destroy(e);
    win.hold_all = 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SHOAL_FNSTORE\n", argv[0]);
        return 2;
    }
    fnstore_bin = argv[1];
    atexit(cleanup);
    cm_log_init("test", getenv("GW_TEST_DEBUG") ? CM_LOG_DEBUG : CM_LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/gw_engine_test.XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);
    srand((unsigned)getpid());
    int base = 12000 + (rand() % 900);
    int np = 0;
    for (int p = base; np < NPROCS && p < 13000; p++) {
        if (port_free(p)) {
            ports[np++] = p;
        }
    }
    CHECK(np == NPROCS);
    for (int i = 0; i < NPROCS; i++) {
        start_node(i);
    }
    /* Break node 5's COS: its chunks will never persist. */
    {
        char path[300], moved[320];
        snprintf(path, sizeof(path), "%s/cos%d", tmpdir, BROKEN);
        snprintf(moved, sizeof(moved), "%s.gone", path);
        CHECK(rename(path, moved) == 0);
        FILE *f = fopen(path, "w");
        CHECK(f);
        fclose(f);
    }

    /* Node 5 joins the directory only for the redrive part. */
    struct gw_engine *e = new_engine(NNODES - 1);
    const uint32_t place[] = {0, 1, 2, 3, 4};
    const size_t sizes[] = {0, 1, 1000, 65536, (1 << 20) + 3, (3 << 20) - 5, 10 << 20};
    const int ks[2][2] = {{4, 2}, {1, 2}};
    size_t maxsz = 10 << 20;
    uint8_t *src = malloc(maxsz);
    CHECK(src);
    fill_random(src, maxsz, 42);

    struct gw_layout big42 = {0}, big10 = {0}, copies = {0};
    uint64_t objs[32];
    int nobjs = 0;
    for (int ki = 0; ki < 2; ki++) {
        int k = ks[ki][0], m = ks[ki][1];
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            size_t size = sizes[si];
            struct gw_layout l;
            /* placement without node 5 so these persist */
            int rc = do_put(e, place, 5, k, m, src, size, &l);
            if (rc != 0) {
                fail("put k=%d m=%d size=%zu: %s", k, m, size, cm_errname(rc));
            }
            CHECK(l.size == size);
            CHECK(l.etag == cm_crc64(0, src, size));
            CHECK(l.k == k && l.m == m);
            if (size > 0) {
                /* Few stripes, chunks just big enough: every stripe holds
                 * object bytes and the padding is under 64 bytes a chunk. */
                uint64_t sb = (uint64_t)l.chunk_size * l.k;
                CHECK(sb * l.nstripes >= size);
                CHECK(sb * (l.nstripes - 1) < size);
                CHECK(l.chunk_size <= MAX_CHUNK);
                CHECK(l.nstripes == (size + MAX_CHUNK * k - 1) / (MAX_CHUNK * k));
                CHECK(sb * l.nstripes - size < 64ull * k * l.nstripes);
                CHECK(gw_engine_put_room(e, (uint8_t)k, size) == sb * l.nstripes);
            }
            objs[nobjs++] = l.object;
            CHECK(do_get(e, &l, 0, size, src) == 0);
            CHECK(do_get(e, &l, 0, 0, src) == 0);
            if (size > 0) {
                CHECK(do_get(e, &l, 0, 1, src) == 0);
                CHECK(do_get(e, &l, size - 1, 1, src) == 0);
                CHECK(do_get(e, &l, size / 3, size / 2, src) == 0);
            }
            if (size > (uint64_t)l.chunk_size * l.k) {
                uint64_t sb = (uint64_t)l.chunk_size * l.k;
                uint64_t n = size - (sb - 7) < 14 ? size - (sb - 7) : 14;
                CHECK(do_get(e, &l, sb - 7, n, src) == 0);         /* across stripes */
                CHECK(do_get(e, &l, l.chunk_size - 1, 2, src) == 0); /* across chunks */
                if (size >= 2 * sb) {
                    CHECK(do_get(e, &l, sb, sb, src) == 0); /* one whole stripe */
                }
            }
            if (k == 4 && size == (1 << 20) + 3) {
                big42 = l;
            }
            if (size == (10u << 20)) {
                *(k == 4 ? &big10 : &copies) = l;
            }
            printf("ok put/get k=%d m=%d size=%zu stripes=%u chunk=%u\n", k, m, size,
                   l.nstripes, l.chunk_size);
        }
    }
    /* /metrics: the policy in use, and its windows for the nodes read. */
    {
        struct cm_buf b;
        size_t len;
        cm_buf_init(&b);
        gw_engine_metrics(e, &b);
        char *text = cm_buf_take(&b, &len);
        CHECK(strstr(text, "shoal_gateway_info{rs=\"" POL_RS_DEFAULT "\"} 1\n") != NULL);
        CHECK(strstr(text, "\nshoal_gateway_rs_window{tenant=\"") != NULL);
        CHECK(strstr(text, "\nshoal_gateway_rs_rtt_seconds{tenant=\"") != NULL);
        free(text);
    }
    /* Out-of-range reads are refused. */
    {
        struct waiter w;
        waiter_init(&w);
        gw_engine_get(e, &big42, big42.size, 1, get_cb, &w);
        waiter_wait(&w);
        CHECK(w.status == CM_E_BADARG);
    }

    /* Every object persists and leaves the buffer. */
    for (int i = 0; i < nobjs; i++) {
        if (!wait_persisted(objs[i], 15000)) {
            struct gw_layout l = latest(objs[i]);
            fail("object %d not persisted: mask=%llx", i, (unsigned long long)l.persisted);
        }
    }
    struct gw_engine_stats st;
    for (int t = 0; t < 100; t++) {
        gw_engine_stats(e, &st);
        if (st.buffered_objects == 0) {
            break;
        }
        sleep_ms(20);
    }
    CHECK(st.buffered_objects == 0 && st.buffered_bytes == 0);
    /* Each left once its META record was answered by m + 1 nodes (logged,
     * or refused by nodes that keep no log). */
    CHECK_EQ_INT(st.meta_waiting, 0);
    CHECK(st.meta_records + st.meta_unlogged >= (uint64_t)nobjs * 3);
    for (int i = 0; i < nobjs; i++) {
        uint64_t tagged = 0;
        CHECK(done_tagged(objs[i], &tagged));
    }
    printf("ok all persisted (layout calls=%d, meta records=%llu, unlogged=%llu)\n", layout_calls,
           (unsigned long long)st.meta_records, (unsigned long long)st.meta_unlogged);

    /* Slow holder: a stopped node costs slow_ms, not io_timeout_ms. */
    {
        gw_engine_stats(e, &st);
        uint64_t before = st.parity_reads;
        int stopped = (int)big42.holders[1];
        kill(pids[stopped], SIGSTOP);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK(do_get(e, &big42, 0, big42.size, src) == 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        kill(pids[stopped], SIGCONT);
        long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        gw_engine_stats(e, &st);
        printf("ok slow holder %d: get took %ld ms, parity_reads=%llu\n", stopped, ms,
               (unsigned long long)st.parity_reads);
        CHECK(ms < 2500);
        CHECK(st.parity_reads > before);
    }

    /* The hedge budget (10 %, at most 20 kept, full at start): 40 GETs at
     * once, one data holder of every stripe stopped. The first overdue
     * holders are read around after slow_ms; past the budget the rest are
     * left to fail with the connection at io_timeout_ms, and counted.
     * Every GET still gets its bytes. uniform always asks the data chunks. */
    {
        struct gw_engine_cfg bcfg = {.max_chunk = MAX_CHUNK,
                                     .io_timeout_ms = 3000,
                                     .slow_ms = 300,
                                     .hedge_pct = 10,
                                     .persist_poll_ms = 100,
                                     .redrive_after_ms = 500,
                                     .rs = pol_rs_find("uniform")};
        static struct waiter bw[40];
        struct gw_engine *eb = NULL;
        struct gw_engine_stats bs;
        int stopped = (int)big42.holders[1];
        CHECK(gw_engine_create(&bcfg, on_layout, NULL, &eb) == 0);
        set_nodes(eb, NNODES);
        CHECK(do_get(eb, &big42, 0, big42.size, src) == 0); /* connected */
        kill(pids[stopped], SIGSTOP);
        for (int i = 0; i < 40; i++) {
            waiter_init(&bw[i]);
            gw_engine_get(eb, &big42, 0, big42.size, get_cb, &bw[i]);
        }
        for (int i = 0; i < 40; i++) {
            waiter_wait(&bw[i]);
            CHECK_EQ_INT(bw[i].status, 0);
            CHECK(bw[i].len == big42.size && memcmp(bw[i].buf, src, big42.size) == 0);
            free(bw[i].buf);
        }
        kill(pids[stopped], SIGCONT);
        gw_engine_stats(eb, &bs);
        printf("ok hedge budget: %u stripes a read, hedges=%llu kept=%llu\n", big42.nstripes,
               (unsigned long long)bs.hedges, (unsigned long long)bs.hedges_denied);
        /* At most 6 chunk GETs a stripe: 0.1 * 40 * 6 * nstripes earned. */
        CHECK(bs.hedges >= 20 && bs.hedges <= 20 + 24 * big42.nstripes + 1);
        CHECK(bs.hedges_denied >= 1);
        gw_engine_destroy(eb);
    }

    test_rs_policy(big10, copies, src);

    /* Redrive: position 0 on node 5, whose COS is broken; kill it; the
     * buffer re-sends position 0 elsewhere and the object becomes fully
     * persisted. */
    set_nodes(e, NNODES);
    const uint32_t place5[] = {BROKEN, 0, 1, 2, 3, 4};
    struct gw_layout red;
    CHECK(do_put(e, place5, 6, 4, 2, src, 3 << 20, &red) == 0);
    CHECK(red.holders[0] == BROKEN);
    /* Track: the same situation for an object whose put engine is gone. */
    struct gw_layout trk;
    {
        struct gw_engine *e2 = new_engine(NNODES);
        CHECK(do_put(e2, place5, 6, 4, 2, src + 5, 2 << 20, &trk) == 0);
        gw_engine_destroy(e2);
        CHECK(trk.holders[0] == BROKEN);
    }
    sleep_ms(500);
    CHECK((latest(red.object).persisted & 1) == 0);
    gw_engine_stats(e, &st);
    CHECK(st.buffered_objects == 1);
    trk.version = 1;
    gw_engine_track(e, &trk, NULL, "trk", 3); /* as from a record without tags */
    kill_node(BROKEN);
    printf("killed node %d (unpersisted holder)\n", BROKEN);
    if (!wait_persisted(red.object, 15000)) {
        fail("redrive did not persist: mask=%llx", (unsigned long long)latest(red.object).persisted);
    }
    red = latest(red.object);
    CHECK(red.holders[0] != BROKEN);
    CHECK(do_get(e, &red, 0, red.size, src) == 0);
    {
        /* done once its record was answered; the new holder's tags with it */
        uint64_t tagged = 0;
        for (int t = 0; t < 250 && !done_tagged(red.object, &tagged); t++) {
            sleep_ms(20);
        }
        CHECK(done_tagged(red.object, &tagged));
        CHECK_EQ_INT(tagged, 0x3f);
    }
    printf("ok redrive holder0=%u\n", red.holders[0]);
    if (!wait_persisted(trk.object, 15000)) {
        fail("track rebuild did not persist: mask=%llx",
             (unsigned long long)latest(trk.object).persisted);
    }
    trk = latest(trk.object);
    CHECK(trk.holders[0] != BROKEN);
    CHECK(do_get(e, &trk, 0, trk.size, src + 5) == 0);
    {
        /* tracked without tags: the rebuilt position learnt its own */
        uint64_t tagged = 0;
        for (int t = 0; t < 250 && !done_tagged(trk.object, &tagged); t++) {
            sleep_ms(20);
        }
        CHECK(done_tagged(trk.object, &tagged));
        CHECK_EQ_INT(tagged, 0x1);
    }
    gw_engine_stats(e, &st);
    CHECK(st.redriven_chunks > 0);
    printf("ok track rebuild holder0=%u redriven=%llu\n", trk.holders[0],
           (unsigned long long)st.redriven_chunks);

    /* Parity: kill the holder of data chunk 0 of a 4+2 object; reads decode. */
    gw_engine_stats(e, &st);
    uint64_t pr0 = st.parity_reads;
    int victim = (int)big42.holders[0];
    kill_node(victim);
    printf("killed node %d (data holder)\n", victim);
    CHECK(do_get(e, &big42, 0, big42.size, src) == 0);
    CHECK(do_get(e, &big42, 5, 1000, src) == 0);
    gw_engine_stats(e, &st);
    CHECK(st.parity_reads > pr0);
    /* Copies: a 1+2 object still reads with one holder gone. */
    for (int i = 0; i < nobjs; i++) {
        struct gw_layout l = latest(objs[i]);
        if (l.k == 1 && l.size > 0) {
            CHECK(do_get(e, &l, 0, l.size, src) == 0);
        }
    }
    printf("ok degraded reads parity_reads=%llu\n", (unsigned long long)st.parity_reads);

    /* A put still succeeds with a placement naming the dead node. */
    struct gw_layout l2;
    CHECK(do_put(e, place5, 6, 4, 2, src, 100000, &l2) == 0);
    for (int j = 0; j < 6; j++) {
        CHECK(l2.holders[j] != BROKEN && (int)l2.holders[j] != victim);
    }
    CHECK(do_get(e, &l2, 0, l2.size, src) == 0);

    /* Delete: chunks go away (a read then fails). */
    gw_engine_delete(e, &l2, 50);
    sleep_ms(400);
    {
        struct waiter w;
        waiter_init(&w);
        gw_engine_get(e, &l2, 0, l2.size, get_cb, &w);
        waiter_wait(&w);
        CHECK(w.status != 0);
    }
    printf("ok delete\n");

    /* A holder unreachable when a delete fires gets its DEL once it is
     * back: restarted from its COS, it has the chunk again until then.
     * keep is the control: never deleted, it is found after the restart. */
    {
        uint32_t alive[3];
        int na = 0;
        for (int i = 0; i < NNODES && na < 3; i++) {
            if (i != BROKEN && i != victim) {
                alive[na++] = (uint32_t)i;
            }
        }
        CHECK(na == 3);
        struct gw_layout gone, keep;
        CHECK(do_put(e, alive, 3, 1, 2, src, 1000, &gone) == 0);
        CHECK(do_put(e, alive, 3, 1, 2, src + 1, 1000, &keep) == 0);
        CHECK(wait_persisted(gone.object, 15000) && wait_persisted(keep.object, 15000));
        int away = (int)gone.holders[1];
        CHECK(keep.holders[1] == (uint32_t)away);
        kill_node(away);
        gw_engine_delete(e, &gone, 0);
        for (int t = 0; t < 500; t++) {
            gw_engine_stats(e, &st);
            if (st.dels_waiting >= 1) {
                break;
            }
            sleep_ms(20);
        }
        CHECK_EQ_INT(st.dels_waiting, 1);
        uint64_t resent = st.dels_resent;
        start_node(away);
        for (int t = 0; t < 1000; t++) {
            gw_engine_stats(e, &st);
            if (st.dels_waiting == 0) {
                break;
            }
            sleep_ms(20);
        }
        CHECK_EQ_INT(st.dels_waiting, 0);
        CHECK(st.dels_resent > resent);
        int status = 0;
        for (int t = 0; t < 250 && status != CM_E_NOTFOUND; t++) { /* the DEL is on its way */
            status = wire_stat(away, &gone, 1);
            sleep_ms(status == CM_E_NOTFOUND ? 0 : 20);
        }
        CHECK_EQ_INT(status, CM_E_NOTFOUND);
        CHECK_EQ_INT(wire_stat(away, &keep, 1), 0);
        CHECK_EQ_INT(wire_stat((int)gone.holders[0], &gone, 0), CM_E_NOTFOUND);
        printf("ok delete for an unreachable holder, sent again once it was back (node %d)\n",
               away);

        /* A holder that leaves the directory while its DELs wait: they are
         * given up and counted. */
        kill_node(away);
        gw_engine_delete(e, &keep, 0);
        for (int t = 0; t < 500 && st.dels_waiting == 0; t++) {
            sleep_ms(20);
            gw_engine_stats(e, &st);
        }
        CHECK_EQ_INT(st.dels_waiting, 1);
        uint64_t dropped = st.dels_dropped;
        struct gw_node rest[NNODES] = {0};
        int nrest = 0;
        for (int i = 0; i < NNODES; i++) {
            if (i != away) {
                rest[nrest].id = (uint32_t)i;
                snprintf(rest[nrest].addr, sizeof(rest[nrest].addr), "127.0.0.1:%d", ports[i]);
                rest[nrest++].up = 1;
            }
        }
        gw_engine_set_nodes(e, rest, (size_t)nrest);
        for (int t = 0; t < 500 && st.dels_waiting != 0; t++) {
            sleep_ms(20);
            gw_engine_stats(e, &st);
        }
        CHECK_EQ_INT(st.dels_waiting, 0);
        CHECK_EQ_INT(st.dels_dropped, dropped + 1);
        start_node(away);
        set_nodes(e, NNODES);
        printf("ok the DELs of a holder that left the directory are given up\n");
    }

    /* Too few nodes: with 4 of 6 left, a 5+1 put is unavailable. */
    {
        struct gw_layout l3;
        CHECK(do_put(e, place, 5, 5, 1, src, 5000, &l3) == CM_E_UNAVAIL);
    }
    gw_engine_destroy(e);

    /* A node that answers "queue full" fails the put with CM_E_BUSY. */
    {
        struct gw_engine_cfg cfg = {.max_chunk = 64 * 1024, .io_timeout_ms = 5000,
                                    .slow_ms = 300, .persist_poll_ms = 100,
                                    .redrive_after_ms = 500};
        struct gw_engine *e3 = NULL;
        CHECK(gw_engine_create(&cfg, on_layout, NULL, &e3) == 0);
        struct gw_node busy = {.id = BUSYNODE, .up = 1};
        snprintf(busy.addr, sizeof(busy.addr), "127.0.0.1:%d", ports[BUSYNODE]);
        gw_engine_set_nodes(e3, &busy, 1);
        const uint32_t pb[] = {BUSYNODE};
        struct gw_layout lb;
        int rc = do_put(e3, pb, 1, 1, 0, src, 4 << 20, &lb);
        printf("busy node put: %s\n", cm_errname(rc));
        CHECK(rc == CM_E_BUSY);
        gw_engine_destroy(e3);
        printf("ok busy\n");
    }
    free(src);
    cleanup();
    printf("PASS\n");
    return 0;
}
