/* test_pol_rs_fast.c - unit tests of the "fast" RS policy: the window law,
 * its alpha by weight and GET size, choice by the least filled window and
 * RTT, holds, RTT-derived deadlines, base RTT ageing, bounded state, and a
 * closed-loop simulation against "uniform". */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_rs.h"
#include "rs_view.h"
#include "t_check.h"

#define US 1000ull
#define SEC 1000000000ull

/* The defaults pol_rs.h documents. */
#define ALPHA 4.0
#define ALPHA_MAX 32.0
#define W0 8.0
#define WMAX 64.0
#define FLOOR (5 * MS)
#define SLOW (200 * MS)

static const struct pol_rs_ops *ops;
static const struct pol_rs_cfg cfg = {.slow_ns = SLOW};
static long nout; /* sends not yet done, over every instance in use */

static struct pol_rs *
new_rs(void)
{
    struct pol_rs *rs = NULL;
    CHECK_EQ_INT(ops->create(&cfg, &rs), 0);
    nout = 0;
    return rs;
}

/* ---- what the policy keeps, read through peers() ---- */

struct find {
    uint32_t tenant, node;
    int found;
    size_t count;
    struct pol_rs_peer p;
};

static void
find_cb(void *arg, const struct pol_rs_peer *p)
{
    struct find *f = arg;
    f->count++;
    if (p->tenant == f->tenant && p->node == f->node) {
        f->found++;
        f->p = *p;
    }
}

static struct pol_rs_peer
peer(struct pol_rs *rs, uint32_t tenant, uint32_t node)
{
    struct find f = {.tenant = tenant, .node = node};
    ops->peers(rs, find_cb, &f);
    CHECK_EQ_INT(f.found, 1);
    return f.p;
}

static size_t
npeers(struct pol_rs *rs)
{
    struct find f = {.tenant = UINT32_MAX, .node = UINT32_MAX};
    ops->peers(rs, find_cb, &f);
    return f.count;
}

static double
window(struct pol_rs *rs, uint32_t tenant, uint32_t node)
{
    return peer(rs, tenant, node).window;
}

static void
send(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint64_t now)
{
    ops->on_send(rs, tenant, node, 4096, now);
    nout++;
}

static void
done(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint64_t rtt, enum pol_rs_outcome o,
     uint64_t now)
{
    ops->on_done(rs, tenant, node, 4096, rtt, o, now);
    nout--;
}

/* One GET of bytes to node that took rtt and ended at now. */
static void
sample_sized(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t rtt,
             uint64_t now)
{
    ops->on_send(rs, tenant, node, bytes, now - rtt);
    ops->on_done(rs, tenant, node, bytes, rtt, POL_RS_ANSWERED, now);
}

/* One GET to node that took rtt and ended at now. */
static void
sample(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint64_t rtt, uint64_t now)
{
    sample_sized(rs, tenant, node, 4096, rtt, now);
}

/* Answers of rtt every step from *now for dur; *now moves on. */
static void
feed(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint64_t rtt, uint64_t step, uint64_t dur,
     uint64_t *now)
{
    for (uint64_t end = *now + dur; *now < end;) {
        *now += step;
        sample(rs, tenant, node, rtt, *now);
    }
}

/* A stripe's holders, nodes 10-15 but skip, each answering in 1 ms for
 * 100 ms, one after the other; *now moves on. */
static void
feed_stripe(struct pol_rs *rs, uint32_t skip, uint64_t *now)
{
    for (uint32_t node = 10; node < 16; node++) {
        if (node != skip) {
            feed(rs, 7, node, 1 * MS, 1 * MS, 100 * MS, now);
        }
    }
}

/* choose's answer: the positions asked, or -1 for -EAGAIN (only ever
 * while a send is outstanding). */
static long long
choose(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now, uint64_t rand)
{
    uint64_t ask = ~0ull;
    int rc = ops->choose(rs, v, now, rand, &ask);
    if (rc == -EAGAIN) {
        CHECK(nout > 0);
        return -1;
    }
    CHECK_EQ_INT(rc, 0);
    CHECK((ask & ~(v->usable & ~(v->present | v->out | v->failed | v->excl))) == 0);
    return (long long)ask;
}

/* ---- tests ---- */

static void
test_registry(void)
{
    size_t n;
    struct pol_rs *x = (struct pol_rs *)&n;

    CHECK(pol_rs_find("fast") == ops);
    CHECK(pol_rs_find(POL_RS_DEFAULT) == ops);
    CHECK(pol_rs_list(&n)[0] == ops && n >= 2);
    CHECK_EQ_INT(ops->create(NULL, &x), CM_E_BADARG);
    CHECK(x == NULL);
    ops->destroy(NULL);
}

/* The window goes to the FAST fixed point w (1 - base/RTT) = alpha, to the
 * cap when RTT = base, and grows at most 2x per update. */
static void
test_window_law(void)
{
    struct pol_rs *rs = new_rs();
    uint64_t now = 10 * SEC;

    sample(rs, 1, 10, 1 * MS, now); /* base 1 ms */
    CHECK_NEAR(window(rs, 1, 10), W0, 1e-9);
    feed(rs, 1, 10, 1250 * US, 100 * US, 2 * SEC, &now);
    CHECK_NEAR(window(rs, 1, 10), ALPHA / (1 - 1.0 / 1.25), 0.01); /* 20 */
    feed(rs, 1, 10, 2 * MS, 100 * US, 2 * SEC, &now);
    CHECK_NEAR(window(rs, 1, 10), ALPHA / (1 - 1.0 / 2), 0.01); /* 8 */
    feed(rs, 1, 10, 4 * MS, 100 * US, 2 * SEC, &now);
    CHECK_NEAR(window(rs, 1, 10), ALPHA / (1 - 1.0 / 4), 0.01); /* 5.33 */
    CHECK_EQ_INT(peer(rs, 1, 10).base_ns, 1 * MS);
    CHECK_NEAR(peer(rs, 1, 10).rtt_ns, 4 * MS, 1000);
    feed(rs, 1, 10, 1 * MS, 100 * US, 1 * SEC, &now);
    CHECK_NEAR(window(rs, 1, 10), WMAX, 1e-9);

    /* Failures halve it down to 1; then each update (every 2 RTTs) at
     * most doubles it: 1, 2, 4, then the law's own 4 + g a = 6. */
    now = 100 * SEC;
    sample(rs, 2, 10, 1 * MS, now); /* RTT and base 1 ms: next update in 2 ms */
    for (int i = 0; i < 3; i++) {
        send(rs, 2, 10, now);
        done(rs, 2, 10, 0, POL_RS_FAILED, now);
    }
    CHECK_NEAR(window(rs, 2, 10), 1, 1e-9);
    sample(rs, 2, 10, 1 * MS, now + 1 * MS); /* too early */
    CHECK_NEAR(window(rs, 2, 10), 1, 1e-9);
    sample(rs, 2, 10, 1 * MS, now + 2 * MS);
    CHECK_NEAR(window(rs, 2, 10), 2, 1e-9); /* (1-g) + g (1 + a) = 3, capped */
    sample(rs, 2, 10, 1 * MS, now + 3 * MS);
    CHECK_NEAR(window(rs, 2, 10), 2, 1e-9);
    sample(rs, 2, 10, 1 * MS, now + 4 * MS);
    CHECK_NEAR(window(rs, 2, 10), 4, 1e-9);
    sample(rs, 2, 10, 1 * MS, now + 6 * MS);
    CHECK_NEAR(window(rs, 2, 10), 6, 1e-9);
    CHECK_EQ_INT(peer(rs, 2, 10).out, 0);
    /* Per tenant: tenant 1's window at node 10 is its own. */
    CHECK_NEAR(window(rs, 1, 10), WMAX, 1e-9);
    CHECK_EQ_INT(nout, 0);
    ops->destroy(rs);
}

/* The backlog a window aims at, w (1 - base/RTT), follows the tenant's
 * weight (as the last read chose with it): weight 2 and 3 keep 2 and 3
 * times a weight-1 tenant's at the same node and RTTs, and 100 no more
 * than ALPHA_MAX; below 1, unknown or not a number counts as 1. */
static void
test_window_weight(void)
{
    static const double weights[] = {1, 2, 3, 100, 0, 0.5, -1, 0.0 / 0.0};
    enum { N = sizeof(weights) / sizeof(weights[0]) };
    static const double want[N] = {ALPHA, 2 * ALPHA, 3 * ALPHA, ALPHA_MAX,
                                   ALPHA, ALPHA,     ALPHA,     ALPHA};
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(1, 0, B(0)); /* one copy, on node 10 */
    uint64_t now = 10 * SEC;

    for (uint32_t i = 0; i < N; i++) {
        v.tenant = 20 + i;
        v.weight = weights[i];
        CHECK_EQ_INT(choose(rs, &v, now, 1), B(0));
        sample(rs, 20 + i, 10, 1 * MS, now); /* base 1 ms */
    }
    for (uint64_t end = now + 2 * SEC; now < end;) {
        now += 100 * US;
        for (uint32_t i = 0; i < N; i++) {
            sample(rs, 20 + i, 10, 4 * MS, now);
        }
    }
    double base1 = window(rs, 20, 10) * (1 - 1.0 / 4);
    CHECK_NEAR(base1, ALPHA, 0.01);
    for (uint32_t i = 0; i < N; i++) {
        struct pol_rs_peer p = peer(rs, 20 + i, 10);
        CHECK_NEAR(p.alpha, want[i], 1e-9);
        CHECK_NEAR(p.window * (1 - 1.0 / 4), want[i], 0.02); /* the backlog */
        CHECK(p.window <= WMAX);
    }
    CHECK_NEAR(window(rs, 21, 10) * (1 - 1.0 / 4), 2 * base1, 0.03);
    CHECK_NEAR(window(rs, 22, 10) * (1 - 1.0 / 4), 3 * base1, 0.04);
    /* A weight change reaches the windows with the tenant's next read. */
    v.tenant = 22;
    v.weight = 1;
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(0));
    CHECK_NEAR(peer(rs, 22, 10).alpha, ALPHA, 1e-9);
    feed(rs, 22, 10, 4 * MS, 100 * US, 2 * SEC, &now);
    CHECK_NEAR(window(rs, 22, 10), ALPHA / (1 - 1.0 / 4), 0.01);
    ops->destroy(rs);
}

/* Small GETs get proportionally more outstanding: alpha counts in units of
 * the largest GET sent lately (64 KiB here), with anything up to 8 KiB
 * costing as much as 8 KiB, so 1 and 4 KiB GETs keep 8 times the large
 * tenant's backlog, 16 KiB ones 4 times; weight and size multiply, within
 * ALPHA_MAX. Once the large GETs are 10 s gone, the small ones are back
 * at ALPHA: with one size, alpha is the plain FAST one. */
static void
test_window_cost(void)
{
    static const uint32_t size[] = {65536, 16384, 4096, 1024, 1024};
    static const double weight[] = {1, 1, 1, 1, 3};
    static const double want[] = {ALPHA, 4 * ALPHA, 8 * ALPHA, 8 * ALPHA, ALPHA_MAX};
    enum { N = sizeof(size) / sizeof(size[0]) };
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(1, 0, B(0));
    uint64_t now = 10 * SEC;

    for (uint32_t i = 0; i < N; i++) {
        v.tenant = 40 + i;
        v.weight = weight[i];
        CHECK_EQ_INT(choose(rs, &v, now, 1), B(0));
        sample_sized(rs, 40 + i, 10, size[i], 1 * MS, now);
    }
    for (uint64_t end = now + 2 * SEC; now < end;) {
        now += 100 * US;
        for (uint32_t i = 0; i < N; i++) {
            sample_sized(rs, 40 + i, 10, size[i], 4 * MS, now);
        }
    }
    double large = window(rs, 40, 10) * (1 - 1.0 / 4);
    CHECK_NEAR(large, ALPHA, 0.01);
    for (uint32_t i = 0; i < N; i++) {
        struct pol_rs_peer p = peer(rs, 40 + i, 10);
        CHECK_NEAR(p.alpha, want[i], 1e-9);
        CHECK_NEAR(p.window * (1 - 1.0 / 4), want[i], 0.02);
    }
    CHECK_NEAR(window(rs, 43, 10) * (1 - 1.0 / 4), 8 * large, 0.1);
    /* The 64 KiB GETs stop: 5-10 s later the 1 KiB ones are the largest
     * (a 1 ms answer every 2 s keeps the base RTT where it was). */
    for (int i = 1; i <= 11000; i++) {
        now += 1 * MS;
        sample_sized(rs, 43, 10, 1024, i % 2000 ? 4 * MS : 1 * MS, now);
    }
    CHECK_NEAR(peer(rs, 43, 10).alpha, ALPHA, 1e-9);
    CHECK_NEAR(window(rs, 43, 10), ALPHA / (1 - 1.0 / 4), 0.01);
    ops->destroy(rs);
}

/* The base RTT is a minimum that ages: once the 1 ms samples are 10 s
 * old, 3 ms is the new base and the window opens up again. */
static void
test_base_ageing(void)
{
    struct pol_rs *rs = new_rs();
    uint64_t now = 50 * SEC;

    sample(rs, 3, 10, 1 * MS, now);
    feed(rs, 3, 10, 3 * MS, 1 * MS, 4 * SEC, &now);
    CHECK_EQ_INT(peer(rs, 3, 10).base_ns, 1 * MS);
    CHECK_NEAR(window(rs, 3, 10), ALPHA / (1 - 1.0 / 3), 0.01); /* 6 */
    feed(rs, 3, 10, 3 * MS, 1 * MS, 7 * SEC, &now);
    CHECK_EQ_INT(peer(rs, 3, 10).base_ns, 3 * MS);
    feed(rs, 3, 10, 3 * MS, 1 * MS, 1 * SEC, &now);
    CHECK_NEAR(window(rs, 3, 10), WMAX, 1e-9);
    /* A cancelled or failed GET is a sample only when it lasted longer
     * than the estimate, and never lowers the base. */
    send(rs, 3, 10, now);
    done(rs, 3, 10, 100 * US, POL_RS_CANCELED, now + 100 * US);
    CHECK_NEAR(peer(rs, 3, 10).rtt_ns, 3 * MS, 1000);
    CHECK_EQ_INT(peer(rs, 3, 10).base_ns, 3 * MS);
    send(rs, 3, 10, now);
    done(rs, 3, 10, 83 * MS, POL_RS_CANCELED, now + 83 * MS);
    CHECK_NEAR(peer(rs, 3, 10).rtt_ns, 13 * MS, 1000); /* 3 + (83 - 3) / 8 */
    CHECK_EQ_INT(peer(rs, 3, 10).base_ns, 3 * MS);
    ops->destroy(rs);
}

/* Copies: the most free window; -EAGAIN only when every copy is full. */
static void
test_copies_windows(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(1, 2, B(0));
    uint64_t now = 1 * SEC;

    /* Node 10 has used 6 of its 8: the others are chosen. */
    for (int i = 0; i < 6; i++) {
        send(rs, 7, 10, now);
    }
    int count[3] = {0};
    for (uint64_t r = 0; r < 200; r++) {
        long long a = choose(rs, &v, now, r);
        CHECK(a == (long long)B(1) || a == (long long)B(2));
        count[__builtin_ctzll((uint64_t)a)]++;
    }
    CHECK(count[1] > 60 && count[2] > 60); /* ties broken at random */
    /* Fill every window: 8 each. */
    for (int i = 0; i < 2; i++) {
        send(rs, 7, 10, now);
    }
    for (int i = 0; i < 8; i++) {
        CHECK(choose(rs, &v, now, (uint64_t)i) != 0);
        send(rs, 7, 11, now);
        send(rs, 7, 12, now);
    }
    CHECK_EQ_INT(choose(rs, &v, now, 1), -1);
    /* Another tenant's windows are its own. */
    v.tenant = 8;
    CHECK(choose(rs, &v, now, 1) > 0);
    v.tenant = 7;
    /* A copy that answers frees a slot there. */
    done(rs, 7, 12, 1 * MS, POL_RS_ANSWERED, now + 1 * MS);
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(2));
    /* A hedge for a slow copy waits for room too. */
    v.out = B(0);
    v.slow = B(0);
    send(rs, 7, 12, now);
    CHECK_EQ_INT(choose(rs, &v, now, 1), -1);
    /* One copy on its way (not slow): nothing more to ask. */
    v.slow = 0;
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0);
    /* With nothing outstanding anywhere the read is never held. */
    for (uint32_t node = 10; node <= 12; node++) {
        while (peer(rs, 7, node).out > 0) {
            done(rs, 7, node, 0, POL_RS_FAILED, now + 2 * MS);
        }
    }
    CHECK_EQ_INT(nout, 0);
    v = view(1, 2, B(0));
    CHECK(choose(rs, &v, now, 1) > 0);
    ops->destroy(rs);
}

/* Stripes: the wanted data chunks, unless one is clearly slower (RTT over
 * twice another's and over 5 ms) or has no free window and a rebuild costs
 * no more GETs; then not that one, data before parity. */
static void
test_stripes(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(4, 2, 0xf);
    uint64_t now = 1 * SEC;

    feed_stripe(rs, UINT32_MAX, &now);
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf);
    v.want = B(1) | B(2);
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(1) | B(2));
    /* Position 1's holder at 1.5x: not clearly slower; at 3x, 3 ms: not
     * either (under the floor); at 12x, 12 ms: parity. */
    uint64_t t = now;
    feed(rs, 7, 11, 1500 * US, 1 * MS, 100 * MS, &t);
    v.want = 0xf;
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf);
    feed(rs, 7, 11, 3 * MS, 1 * MS, 100 * MS, &t);
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf);
    feed(rs, 7, 11, 12 * MS, 1 * MS, 100 * MS, &t);
    for (uint64_t r = 0; r < 50; r++) {
        long long a = choose(rs, &v, now, r);
        CHECK(a == (long long)(B(0) | B(2) | B(3) | B(4)) ||
              a == (long long)(B(0) | B(2) | B(3) | B(5)));
    }
    /* A partial read: one GET beats four, slow or not. */
    v.want = B(1);
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(1));
    /* Position 2's holder has no free window: parity instead for a whole
     * stripe; a partial read waits for it. */
    v = view(4, 2, 0xf);
    v.holders = (const uint32_t[]){10, 12, 13, 14, 15, 16};
    uint32_t w = (uint32_t)window(rs, 7, 13);
    for (uint32_t i = 0; i < w; i++) {
        send(rs, 7, 13, now);
    }
    long long a = choose(rs, &v, now, 1);
    CHECK(__builtin_popcountll((uint64_t)a) == 4 && (a & 0xb) == 0xb && !(a & B(2)));
    v.want = B(2);
    CHECK_EQ_INT(choose(rs, &v, now, 1), -1);
    /* Only positions 1 and 3 have room: they are asked now, the other
     * two once the read is offered again; then it is held. */
    v = view(4, 2, 0xf);
    v.holders = (const uint32_t[]){13, 30, 13, 31, 13, 13};
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(1) | B(3));
    v.out = B(1) | B(3);
    CHECK_EQ_INT(choose(rs, &v, now, 1), -1);
    /* An erred data chunk: k positions, data first. */
    v = view(4, 2, 0xf);
    v.out = B(0) | B(2) | B(3);
    v.failed = B(1);
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(4));
    /* A slow one (its node 11, the clearly slower one) is hedged the same. */
    v.failed = 0;
    v.out = 0xf;
    v.slow = B(1);
    CHECK(choose(rs, &v, now, 1) == (long long)B(4) || choose(rs, &v, now, 1) == (long long)B(5));
    /* A rebuild of position 5 from the others, data first. */
    v = view(4, 2, B(5));
    v.excl = B(5);
    v.holders = (const uint32_t[]){10, 12, 13, 14, 15, 16};
    a = choose(rs, &v, now, 1);
    CHECK_EQ_INT(a, B(0) | B(1) | B(3) | B(4)); /* 2's node (13) is full */
    /* Two positions on one node share its window. */
    v = view(2, 1, 0x3);
    v.holders = (const uint32_t[]){20, 20, 21};
    for (int i = 0; i < 7; i++) {
        send(rs, 7, 20, now);
    }
    a = choose(rs, &v, now, 1);
    CHECK(a == (long long)(B(0) | B(2)) || a == (long long)(B(1) | B(2)));
    ops->destroy(rs);
}

/* A node none of whose GETs was ever answered (each canceled once a
 * hedge served the read) counts slow from its first cancel: its GETs
 * took at least that long. */
static void
test_never_answered(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(4, 2, 0xf);
    uint64_t now = 1 * SEC;

    feed_stripe(rs, 11, &now);
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf); /* 11 unknown: asked */
    send(rs, 7, 11, now);
    done(rs, 7, 11, SLOW, POL_RS_CANCELED, now + SLOW);
    now += SLOW;
    CHECK(peer(rs, 7, 11).rtt_ns >= SLOW);
    for (uint64_t r = 0; r < 50; r++) {
        long long a = choose(rs, &v, now, r);
        CHECK(!(a & B(1)) && __builtin_popcountll((uint64_t)a) == 4);
    }
    ops->destroy(rs);
}

/* A slow node quiet for a second is asked again (a probe), one at a
 * time. An answer in under half its estimate restarts the estimate and
 * starts a trial: four answers in which it is never slow and its RTT
 * moves by halves, so a first answer slowed by the pause (TCP slow start)
 * does not call it slow again; a probe no faster keeps it slow. */
static void
test_probe(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(4, 2, 0xf);
    uint64_t now = 1 * SEC;

    feed_stripe(rs, 11, &now);
    feed(rs, 7, 11, 50 * MS, 1 * MS, 100 * MS, &now);
    CHECK(!(choose(rs, &v, now, 1) & B(1)));
    CHECK(!(choose(rs, &v, now + 900 * MS, 1) & B(1)));
    now += 1 * SEC;
    CHECK(choose(rs, &v, now, 1) & B(1)); /* the probe */
    send(rs, 7, 11, now);
    for (uint64_t r = 0; r < 20; r++) {
        CHECK(!(choose(rs, &v, now + 2 * SEC, r) & B(1))); /* while it is out */
    }
    /* 12 ms: over the floor and 12x the others, but a quarter of 50. */
    done(rs, 7, 11, 12 * MS, POL_RS_ANSWERED, now + 12 * MS);
    now += 12 * MS;
    CHECK_EQ_INT(peer(rs, 7, 11).rtt_ns, 12 * MS);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf); /* on trial */
        sample(rs, 7, 11, 1 * MS, now += 1 * MS);
    }
    CHECK(peer(rs, 7, 11).rtt_ns < 2 * MS); /* 12, 6.5, 3.75, 2.38, 1.69 */
    CHECK_EQ_INT(choose(rs, &v, now, 1), 0xf);
    /* Slow again: once its estimate is, with no trial left. */
    feed(rs, 7, 11, 50 * MS, 1 * MS, 100 * MS, &now);
    CHECK(!(choose(rs, &v, now, 1) & B(1)));
    /* A probe no faster (40 ms, not under 25): still slow. */
    for (uint32_t node = 10; node < 16; node++) {
        if (node != 11) {
            uint64_t t = now + 1 * SEC;
            feed(rs, 7, node, 1 * MS, 1 * MS, 10 * MS, &t);
        }
    }
    now += 1 * SEC;
    CHECK(choose(rs, &v, now, 1) & B(1));
    send(rs, 7, 11, now);
    done(rs, 7, 11, 40 * MS, POL_RS_ANSWERED, now + 40 * MS);
    CHECK(!(choose(rs, &v, now + 50 * MS, 1) & B(1)));
    ops->destroy(rs);
}

/* Slow: RTT + 4 deviations after the ask, in [5 ms, slow_ns]; slow_ns
 * before any sample. */
static void
test_overdue(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(1, 2, B(0));
    uint64_t now = 1 * SEC, next = 1;

    v.out = B(0);
    asked[0] = now;
    CHECK_EQ_INT(ops->overdue(rs, &v, now + 199 * MS, &next), 0);
    CHECK_EQ_INT(next, now + SLOW);
    CHECK_EQ_INT(ops->overdue(rs, &v, now + SLOW, &next), B(0));
    /* Node 10 answers in 1 ms, steadily: the floor. */
    feed(rs, 7, 10, 1 * MS, 1 * MS, 1 * SEC, &now);
    asked[0] = now;
    CHECK_EQ_INT(ops->overdue(rs, &v, now + 4 * MS, &next), 0);
    CHECK_EQ_INT(next, now + FLOOR);
    CHECK_EQ_INT(ops->overdue(rs, &v, now + FLOOR, &next), B(0));
    /* Node 11: 40 or 60 ms (RTT 50, deviation 10): about 90 ms. */
    for (int i = 0; i < 400; i++) {
        now += 50 * MS;
        sample(rs, 7, 11, i % 2 ? 40 * MS : 60 * MS, now);
    }
    struct pol_rs_peer p = peer(rs, 7, 11);
    CHECK_NEAR(p.rtt_ns, 50 * MS, 2 * MS);
    CHECK_NEAR(p.rttvar_ns, 10 * MS, 2 * MS);
    v.out = B(0) | B(1);
    asked[0] = asked[1] = now;
    CHECK_EQ_INT(ops->overdue(rs, &v, now + 10 * MS, &next), B(0));
    CHECK_NEAR(next, now + p.rtt_ns + 4 * p.rttvar_ns, 10);
    v.slow = B(0);
    CHECK_EQ_INT(ops->overdue(rs, &v, next - 1, &next), 0);
    CHECK_EQ_INT(ops->overdue(rs, &v, next, &next), B(1));
    /* Node 12: 300 ms answers, capped at slow_ns. */
    feed(rs, 7, 12, 300 * MS, 300 * MS, 3 * SEC, &now);
    v = view(1, 2, B(0));
    v.out = B(2);
    asked[2] = now;
    CHECK_EQ_INT(ops->overdue(rs, &v, now, &next), 0);
    CHECK_EQ_INT(next, now + SLOW);
    ops->destroy(rs);

    struct pol_rs_cfg never = {.slow_ns = 0};
    CHECK_EQ_INT(ops->create(&never, &rs), 0);
    CHECK_EQ_INT(ops->overdue(rs, &v, now + 3600 * SEC, &next), 0);
    CHECK_EQ_INT(next, 0);
    ops->destroy(rs);
}

/* Records idle (nothing out) for a minute go when the table grows; busy
 * ones stay. */
static void
test_bounded(void)
{
    struct pol_rs *rs = new_rs();
    uint64_t now = 1 * SEC;

    for (uint32_t i = 0; i < 1000; i++) {
        sample(rs, i, 1, 1 * MS, now);
    }
    send(rs, 5, 1, now); /* busy */
    CHECK_EQ_INT(npeers(rs), 1000);
    now += 61 * SEC;
    for (uint32_t i = 0; i < 3000; i++) {
        sample(rs, i, 2, 1 * MS, now);
    }
    size_t n = npeers(rs);
    CHECK(n >= 3001 && n < 3500);
    CHECK_EQ_INT(peer(rs, 5, 1).out, 1);
    CHECK_EQ_INT(peer(rs, 2999, 2).out, 0);
    ops->destroy(rs);
}

/* Copies: the least filled window, not the most free slots. A copy whose
 * window is small but empty is asked before copies with larger windows
 * partly used: counting free slots alone, it would wait until the others
 * had fewer free slots than its whole window, getting no RTT samples, so
 * its window could never grow again (a fair-queued node where a tenant is
 * slow in turn, not by its own queue, keeps such a window for good). */
static void
test_copies_fill(void)
{
    struct pol_rs *rs = new_rs();
    struct pol_rs_view v = view(1, 2, B(0));
    uint64_t now = 10 * SEC;

    sample(rs, 7, 10, 1 * MS, now);
    feed(rs, 7, 10, 1 * MS, 100 * US, 1 * SEC, &now); /* RTT = base: the cap */
    sample(rs, 7, 11, 1 * MS, now);
    feed(rs, 7, 11, 4 * MS, 100 * US, 2 * SEC, &now); /* 4x base: 5.33 */
    sample(rs, 7, 12, 1 * MS, now);
    feed(rs, 7, 12, 1 * MS, 100 * US, 1 * SEC, &now);
    CHECK_NEAR(window(rs, 7, 10), WMAX, 1e-9);
    CHECK_NEAR(window(rs, 7, 11), ALPHA / (1 - 1.0 / 4), 0.01);
    for (int i = 0; i < 8; i++) {
        send(rs, 7, 10, now);
        send(rs, 7, 12, now);
    }
    /* 56 of 64 free at 10 and 12, 5 of 5 at 11: 11 is asked. */
    CHECK_EQ_INT(choose(rs, &v, now, 1), B(1));
    /* Filled to the same fraction as the others, it shares them. */
    send(rs, 7, 11, now);
    CHECK(choose(rs, &v, now, 1) != (long long)B(1));
    ops->destroy(rs);
}

/* Random views. With every window free (no traffic), what is asked covers
 * the read or exhausts the holders, as uniform's does. With traffic, a
 * read is held only while a send is out, and what is asked is never more
 * than the read needs. */
static void
test_random_views(int traffic)
{
    struct pol_rs *rs = new_rs();
    uint64_t now = 1 * SEC;

    for (int t = 0; t < 20000; t++) {
        struct pol_rs_view v = random_view();
        uint8_t k = v.k;
        uint32_t node = holders[t_range(0, 7)];
        if (traffic && (t_rand() % 2 || nout == 0)) {
            send(rs, 7, node, now);
        } else if (traffic) {
            done(rs, 7, node, t_range(100, 20000) * US, (enum pol_rs_outcome)t_range(0, 2), now);
        }
        now += 100 * US;
        long long a = choose(rs, &v, now, t_rand());
        CHECK(traffic || a >= 0);
        if (a < 0) {
            continue;
        }
        uint64_t ask = (uint64_t)a;
        uint64_t coming = (v.out & ~v.slow) | ask;
        uint64_t left = v.usable & ~(v.present | v.out | v.failed | v.excl | ask);
        uint64_t missing = v.want & ~v.present;
        int have = __builtin_popcountll(v.present | coming);
        int covered = (k > 1 && (missing & ~coming) == 0) || have >= k;
        CHECK(covered || left == 0 || (traffic && ask != 0));
        CHECK((ask & ~missing) == 0 || have <= k);
    }
    ops->destroy(rs);
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * A closed loop: `clients` reads of one of three copies at a time; nodes
 * 10, 11 and 12 serve a GET in 200 us (FIFO each) until node 12 slows
 * down to 2 ms at SLOW_AT. A held read is offered again after every
 * answer. Returns the p99 latency of the reads from 100 ms after that
 * (hold time included), and each node's GETs and final window.
 */
#define SLOW_AT (500 * MS)
static uint64_t
sim(const struct pol_rs_ops *o, int clients, uint64_t seed, long served[3], double win[3])
{
    enum { MAXC = 64, MAXLAT = 1 << 16 };
    uint64_t service[3] = {200 * US, 200 * US, 200 * US};
    const uint32_t ids[3] = {10, 11, 12};
    uint64_t free_at[3] = {0}, start[MAXC], done_at[MAXC], sent[MAXC];
    int node_of[MAXC];
    static uint64_t lat[MAXLAT];
    size_t nlat = 0;
    struct pol_rs *rs = NULL;
    uint64_t now = 0, rng = seed;
    struct pol_rs_view v = view(1, 2, B(0));
    v.holders = ids;

    CHECK_EQ_INT(o->create(&cfg, &rs), 0);
    for (int c = 0; c < clients; c++) {
        start[c] = 0;
        node_of[c] = -1; /* held */
    }
    served[0] = served[1] = served[2] = 0;
    while (nlat < MAXLAT) {
        /* Offer every held read, oldest first. */
        for (int c = 0; c < clients; c++) {
            uint64_t ask;
            if (node_of[c] >= 0) {
                continue;
            }
            rng += 0x9e3779b97f4a7c15ull;
            int rc = o->choose(rs, &v, now, rng * 0xbf58476d1ce4e5b9ull, &ask);
            if (rc == -EAGAIN) {
                continue;
            }
            CHECK(rc == 0 && __builtin_popcountll(ask) == 1);
            int j = __builtin_ctzll(ask);
            node_of[c] = j;
            sent[c] = now;
            free_at[j] = (free_at[j] > now ? free_at[j] : now) + service[j];
            done_at[c] = free_at[j];
            o->on_send(rs, 7, ids[j], 4096, now);
        }
        int first = -1;
        for (int c = 0; c < clients; c++) {
            if (node_of[c] >= 0 && (first < 0 || done_at[c] < done_at[first])) {
                first = c;
            }
        }
        CHECK(first >= 0); /* never every read held */
        now = done_at[first];
        if (now > SLOW_AT) {
            service[2] = 2 * MS;
        }
        int j = node_of[first];
        o->on_done(rs, 7, ids[j], 4096, now - sent[first], POL_RS_ANSWERED, now);
        served[j]++;
        if (now > SLOW_AT + 100 * MS) {
            lat[nlat++] = now - start[first];
        }
        start[first] = now;
        node_of[first] = -1;
    }
    for (int j = 0; j < 3 && win; j++) {
        struct find f = {.tenant = 7, .node = ids[j]};
        o->peers(rs, find_cb, &f);
        win[j] = f.p.window;
    }
    o->destroy(rs);
    qsort(lat, nlat, sizeof(lat[0]), cmp_u64);
    return lat[nlat * 99 / 100];
}

/* Against uniform: the slow node gets a small window and few reads, and
 * the p99 is far lower; same seed, same run. */
static void
test_slow_node(void)
{
    long fs[3], us[3], again[3];
    double win[3];
    uint64_t p99_fast = sim(ops, 8, 42, fs, win);
    uint64_t p99_uni = sim(pol_rs_find("uniform"), 8, 42, us, NULL);
    double share_fast = (double)fs[2] / (double)(fs[0] + fs[1] + fs[2]);
    double share_uni = (double)us[2] / (double)(us[0] + us[1] + us[2]);

    printf("sim: slow node share fast %.3f uniform %.3f; p99 fast %.2f ms uniform %.2f ms; "
           "windows %.3f %.3f %.3f\n",
           share_fast, share_uni, (double)p99_fast / MS, (double)p99_uni / MS, win[0], win[1],
           win[2]);
    CHECK(share_uni > 0.3);
    CHECK(share_fast < share_uni / 3);
    CHECK(win[2] < 0.8 * win[0] && win[2] < 0.8 * win[1]);
    CHECK(p99_fast * 2 <= p99_uni);
    /* Deterministic: rand is passed in. */
    CHECK_EQ_INT(sim(ops, 8, 42, again, NULL), p99_fast);
    CHECK(again[0] == fs[0] && again[1] == fs[1] && again[2] == fs[2]);
}

int
main(void)
{
    t_seed();
    ops = pol_rs_find("fast");
    CHECK(ops != NULL);
    test_registry();
    test_window_law();
    test_window_weight();
    test_window_cost();
    test_base_ageing();
    test_copies_windows();
    test_copies_fill();
    test_stripes();
    test_never_answered();
    test_probe();
    test_overdue();
    test_bounded();
    test_random_views(0);
    test_random_views(1);
    test_slow_node();
    printf("ok\n");
    return 0;
}
