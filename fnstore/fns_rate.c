/* fns_rate.c - token bucket; see fns_rate.h. */
#include "fns_rate.h"

void
fns_rate_init(struct fns_rate *r, double rate, double burst_s, uint64_t now_ns)
{
    r->rate = rate > 0 ? rate : 0;
    r->burst = r->rate * burst_s;
    if (r->burst < 1) {
        r->burst = 1;
    }
    r->tokens = r->burst;
    r->last_ns = now_ns;
}

static void
fns_rate_refill(struct fns_rate *r, uint64_t now_ns)
{
    if (now_ns <= r->last_ns) {
        return;
    }
    r->tokens += r->rate * (double)(now_ns - r->last_ns) / 1e9;
    if (r->tokens > r->burst) {
        r->tokens = r->burst;
    }
    r->last_ns = now_ns;
}

int
fns_rate_ready(struct fns_rate *r, uint64_t now_ns)
{
    if (r->rate == 0) {
        return 1;
    }
    fns_rate_refill(r, now_ns);
    return r->tokens > 0;
}

void
fns_rate_charge(struct fns_rate *r, double amount)
{
    if (r->rate == 0) {
        return;
    }
    r->tokens -= amount;
    if (r->tokens > r->burst) {
        r->tokens = r->burst;
    }
}

uint64_t
fns_rate_wait_ns(const struct fns_rate *r)
{
    double ns;

    if (r->rate == 0 || r->tokens > 0) {
        return 0;
    }
    /* Until tokens is strictly positive: a hair past the zero crossing. */
    ns = (-r->tokens / r->rate) * 1e9 + 1000;
    return ns > 1e12 ? (uint64_t)1e12 : (uint64_t)ns;
}
