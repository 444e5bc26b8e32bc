/*
 * pol_rs.h - replica selection (the RS mechanism): which holders a read of
 * one stripe asks, which it adds when one errs or is slow, and when an
 * asked holder counts as slow.
 *
 *   gateway read of a stripe ──choose(view, now, rand)──▶ positions to ask now,
 *        │                                                or -EAGAIN: hold the read
 *        ├─ each chunk GET sent:  on_send(tenant, node)
 *        ├─ each answer, error or cancel:  on_done(tenant, node, rtt, outcome)
 *        └─ overdue(view, now) ──▶ asked positions now slow (and when to look again)
 *
 * A stripe is n = k + m chunks at positions 0..n-1, data first, then
 * parity; holders[j] is the node holding position j, and any k positions
 * rebuild the stripe. k == 1: n whole copies, any one of them will do.
 * Masks have bit j for position j.
 *
 * Policies decide, the read path acts: a policy does no I/O, starts no
 * threads, takes no locks, and never reads a clock or a random source
 * (now_ns is passed in, any monotonic origin; rand is a fresh uniform
 * 64-bit value per call). One instance is NOT thread-safe: the gateway
 * calls it from its engine thread only.
 *
 * What the read path promises (a policy may rely on it):
 *  - It calls choose when the read starts, and again whenever a wanted
 *    chunk is neither present nor asked from a holder that is not slow
 *    (after an error, or once overdue marked one slow). It asks exactly
 *    the returned positions, in ascending order; one it could not send to
 *    is marked failed and choose is called again.
 *  - Every chunk GET it sends gets one on_send and, later, exactly one
 *    on_done (answered, failed, or cancelled because the read no longer
 *    needs it).
 *  - A read held by -EAGAIN asks nothing; it is offered to choose again
 *    after the next on_done of any read. So hold only while a send you were
 *    told of is not yet done: the read path fails a read held when no send
 *    is outstanding at all.
 *  - It calls overdue after every step of a read and arms a timer for
 *    *next_ns; what overdue returns is marked slow (the read stays asked:
 *    a slow answer that lands first is used).
 *
 * Policies are registered in one explicit list (pol_rs.c); look them up by
 * name with pol_rs_find().
 *
 * "fast" (the default; MECHANISMS.md "RS"): per (tenant, node) a FAST-TCP
 * window of chunk GETs, an RTT estimate and a base RTT, fed by on_done:
 *   RTT      EWMA of the samples (gain 1/8; deviation gain 1/4): every
 *            answer's rtt, and a failed or cancelled GET's when it is above
 *            the estimate or there is none yet (it took at least that
 *            long); an answer to a GET sent after 1 s without a sample
 *            starts the estimate again (it was stale)
 *   baseRTT  the least sample of the last 5-10 s, so it can rise again
 *   window   every 2 RTTs w <- min(2w, (1-g)w + g(baseRTT/RTT * w + a)),
 *            g = 1/2, within [1, 64], 8 to start: at the fixed point
 *            w (1 - baseRTT/RTT) = a, i.e. the tenant keeps about a requests
 *            queued at the node; a failure halves w
 *   alpha    a = 4 requests x weight x cost ratio, within [4, 32]: weight is
 *            the view's (the tenant's over the lightest tenant's, the last
 *            one choose saw for the pair); the cost ratio is max(B, 8 KiB) /
 *            max(b, 8 KiB), b the pair's GET size (EWMA 1/8 of on_send's
 *            bytes), B the largest GET sent to any node in the last 5-10 s.
 *            So a heavier tenant keeps proportionally more waiting, and so
 *            does one whose GETs cost less than the largest ones a node
 *            serves (a node's fair queue needs quantum / cost of them
 *            waiting to fill a turn; below 8 KiB a GET costs about its
 *            count); the bound keeps one tenant from flooding a node. With
 *            one weight and one size, a = 4
 *   choose   copies: the usable copy whose window is the least filled
 *            (the largest free fraction (floor(w) - outstanding) / floor(w),
 *            ties at random), so a tenant's reads spread in proportion to
 *            its windows and a copy with an empty window is always asked
 *            (by free slots alone, a small window would wait until the
 *            others had fewer free slots than it has in all, and, without
 *            samples, never grow again); stripes: the wanted
 *            data chunks, unless as few GETs of other positions rebuild them
 *            and a wanted one has no free window or an RTT above twice
 *            another candidate's and above 5 ms (then, by rank: not that
 *            slow, wanted, other data, parity, least filled window); a node
 *            that slow, with nothing outstanding for 1 s, is asked as if it
 *            were not (a probe: its answer restarts the stale estimate,
 *            and one under half of it starts a trial: 4 answers in which
 *            the node is never slow and its RTT moves by halves). Only those with a free
 * slot are asked (the rest when the read is offered again); -EAGAIN when none has one and some GET
 * is outstanding, else it asks anyway overdue  a holder is slow RTT + 4 deviations after it was
 * asked, within [5 ms, slow_ns]; slow_ns before its first sample Entries are in a hash table; one
 * idle (nothing outstanding) for 60 s is dropped when the table would grow, so memory follows the
 * pairs in use. "uniform" (the strawman: data chunks first, a random copy, more holders on an error
 * or after a fixed delay; no state).
 */
#ifndef POL_RS_H
#define POL_RS_H

#include <stddef.h>
#include <stdint.h>

/* The policy a gateway runs unless told otherwise (its --rs default). */
#define POL_RS_DEFAULT "fast"

struct pol_rs_cfg {
    /* An asked holder that has not answered this long after the read first
     * asked counts slow (uniform; fast: the deadline before it has an RTT
     * estimate, and the longest one). 0: never. */
    uint64_t slow_ns;
};

/* One stripe read as the read path sees it; every pointer is borrowed for
 * the call. present, out and failed are disjoint; slow is within out. */
struct pol_rs_view {
    uint32_t tenant;
    uint8_t k, n;             /* any k of the n positions rebuild the stripe */
    const uint32_t *holders;  /* [n]: node id of each position */
    uint64_t want;            /* positions whose bytes the reader needs */
    uint64_t present;         /* arrived */
    uint64_t out;             /* asked, not answered yet */
    uint64_t slow;            /* asked and overdue */
    uint64_t failed;          /* erred, or could not be asked */
    uint64_t excl;            /* never to be asked */
    uint64_t usable;          /* node reachable now; set for the positions
                               * not present, out, failed or excluded */
    uint64_t start_ns;        /* when the read first asked */
    const uint64_t *asked_ns; /* [n]: when each out position was asked */
    /* The tenant's weight over the least weight of the tenants (so >= 1);
     * below 1, 0 included: 1 (unknown, or the lightest). */
    double weight;
};

/* How a chunk GET ended, for on_done. */
enum pol_rs_outcome {
    POL_RS_ANSWERED, /* the bytes came back */
    POL_RS_FAILED,   /* an error: transport, timeout, busy, not found */
    POL_RS_CANCELED, /* the read no longer needed it (no answer seen) */
};

/* What a policy keeps for one (tenant, node), for metrics and tests. */
struct pol_rs_peer {
    uint32_t tenant, node;
    uint32_t out;       /* chunk GETs between on_send and on_done */
    double window;      /* requests */
    double alpha;       /* the backlog the window aims at, requests */
    uint64_t rtt_ns;    /* RTT estimate; 0 before the first sample */
    uint64_t rttvar_ns; /* its mean deviation */
    uint64_t base_ns;   /* base RTT; 0 before the first sample */
};

struct pol_rs; /* one policy instance; opaque */

struct pol_rs_ops {
    const char *name;
    /* cfg is borrowed for the call; *out is caller-owned (destroy it).
     * 0, CM_E_BADARG or -ENOMEM. */
    int (*create)(const struct pol_rs_cfg *cfg, struct pol_rs **out);
    void (*destroy)(struct pol_rs *rs); /* NULL is a no-op */
    /* Which positions to ask now: 0 with *ask (within the positions whose
     * usable bit is set; 0 when nothing more is worth asking: the read then
     * fails once nothing is out), or -EAGAIN to hold the read. */
    int (*choose)(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns, uint64_t rand,
                  uint64_t *ask);
    /* A chunk GET of bytes bytes to node is sent for tenant. */
    void (*on_send)(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes,
                    uint64_t now_ns);
    /* The GET sent rtt_ns ago has ended (one call per on_send). */
    void (*on_done)(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes,
                    uint64_t rtt_ns, enum pol_rs_outcome outcome, uint64_t now_ns);
    /* Positions of out & ~slow that are overdue at now_ns. *next_ns: when
     * to ask again (absolute, > now_ns), or 0 when nothing asked so far can
     * become overdue. */
    uint64_t (*overdue)(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns,
                        uint64_t *next_ns);
    /* Calls cb for every (tenant, node) the policy keeps state of, in no
     * order; p is borrowed for the call, and cb must not call into the
     * policy. NULL in a policy that keeps no such state. */
    void (*peers)(struct pol_rs *rs, void (*cb)(void *arg, const struct pol_rs_peer *p), void *arg);
};

/*
 * A hedge budget, shared by every policy's caller: holders marked slow
 * (each may cost one more chunk GET, a hedge) stay within `ratio` of the
 * chunk GETs sent, so that under overload, when every holder looks slow,
 * hedges do not add the load that makes them slower still. A token bucket:
 * each GET sent earns ratio of a token, up to POL_RS_BUDGET_BURST kept; a
 * holder marked slow takes one. It starts full. Pure; the caller keeps one.
 */
#define POL_RS_BUDGET_BURST 20.0

struct pol_rs_budget {
    double tokens, ratio;
};

/* ratio > 0. */
void pol_rs_budget_init(struct pol_rs_budget *b, double ratio);
/* One chunk GET sent. */
void pol_rs_budget_sent(struct pol_rs_budget *b);
/* The positions of due that may be marked slow now, lowest first; each
 * takes a token. The rest wait for tokens (the caller asks again later). */
uint64_t pol_rs_budget_take(struct pol_rs_budget *b, uint64_t due);

/* The registered policy called name, or NULL. Result is static. */
const struct pol_rs_ops *pol_rs_find(const char *name);
/* The registry (static array of n entries), e.g. for --help. */
const struct pol_rs_ops *const *pol_rs_list(size_t *n);

#endif
