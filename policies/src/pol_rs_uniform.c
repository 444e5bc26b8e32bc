/*
 * pol_rs_uniform.c - the "uniform" strawman: no windows, no RTTs, no
 * state beyond the config.
 *
 * Copies (k == 1): one copy at random among the usable ones, so small
 * reads spread over their holders. Stripes: the wanted data chunks; when
 * they do not cover the read (one erred or is slow), the lowest positions
 * not yet asked until k are present or on their way: data before parity.
 * Slow: a holder asked within slow_ns of the read's first ask that has not
 * answered slow_ns after that ask; holders asked later never count slow
 * (one round of hedging per read).
 */
#include "pol_rs_impl.h"

static int
uniform_create(const struct pol_rs_cfg *cfg, struct pol_rs **out)
{
    return pol_rs_base_create(&pol_rs_uniform_ops, cfg, 0, out);
}

/* The r-th (from 0) set bit of mask, which has more than r. */
static uint64_t
nth_bit(uint64_t mask, unsigned r)
{
    while (r-- > 0) {
        mask &= mask - 1;
    }
    return mask & -mask;
}

static int
uniform_choose(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns, uint64_t rand,
               uint64_t *ask)
{
    uint64_t cand = v->usable & ~(v->present | v->out | v->failed | v->excl);
    uint64_t coming = v->out & ~v->slow;
    uint64_t missing = v->want & ~v->present;
    uint64_t pick = 0, bit;
    int have;

    (void)rs;
    (void)now_ns;
    if (v->k > 1) {
        pick = missing & cand;
        if ((missing & ~(coming | pick)) == 0) {
            *ask = pick;
            return 0;
        }
    }
    cand &= ~pick;
    have = __builtin_popcountll(v->present | coming | pick);
    while (have < v->k && cand != 0) {
        if (v->k == 1) {
            bit = nth_bit(cand, (unsigned)(rand % (uint64_t)__builtin_popcountll(cand)));
        } else {
            bit = cand & -cand;
        }
        pick |= bit;
        cand &= ~bit;
        have++;
    }
    *ask = pick;
    return 0;
}

static void
uniform_on_send(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t now_ns)
{
    (void)rs;
    (void)tenant;
    (void)node;
    (void)bytes;
    (void)now_ns;
}

static void
uniform_on_done(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t rtt_ns,
                enum pol_rs_outcome outcome, uint64_t now_ns)
{
    (void)rs;
    (void)tenant;
    (void)node;
    (void)bytes;
    (void)rtt_ns;
    (void)outcome;
    (void)now_ns;
}

static uint64_t
uniform_overdue(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns, uint64_t *next_ns)
{
    uint64_t deadline = v->start_ns + rs->cfg.slow_ns;
    uint64_t pending = 0, left = v->out & ~v->slow;
    unsigned j;

    *next_ns = 0;
    if (rs->cfg.slow_ns == 0) {
        return 0;
    }
    for (j = 0; left != 0; j++, left >>= 1) {
        if ((left & 1) && v->asked_ns[j] < deadline) {
            pending |= 1ull << j;
        }
    }
    if (pending == 0 || now_ns >= deadline) {
        return pending;
    }
    *next_ns = deadline;
    return 0;
}

const struct pol_rs_ops pol_rs_uniform_ops = {
    .name = "uniform",
    .create = uniform_create,
    .destroy = pol_rs_base_destroy,
    .choose = uniform_choose,
    .on_send = uniform_on_send,
    .on_done = uniform_on_done,
    .overdue = uniform_overdue,
};
