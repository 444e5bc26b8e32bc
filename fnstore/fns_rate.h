/*
 * fns_rate.h - a token bucket emulating a per-second resource cap
 * (--cap-ops, --cap-bytes). Pure: time is passed in. Not thread-safe.
 *
 * Work is admitted while tokens > 0 and charged in full, so a big item
 * drives the bucket into debt that later refills pay back: the long-run
 * rate is exact whatever the item sizes. rate == 0 means unlimited.
 */
#ifndef FNS_RATE_H
#define FNS_RATE_H

#include <stdint.h>

struct fns_rate {
    double rate;  /* units per second; 0 = unlimited */
    double burst; /* bucket size */
    double tokens;
    uint64_t last_ns;
};

/* burst_s: seconds of rate the bucket holds (a burst of at least 1 unit). */
void fns_rate_init(struct fns_rate *r, double rate, double burst_s, uint64_t now_ns);
/* Nonzero when work may start now (refills first). */
int fns_rate_ready(struct fns_rate *r, uint64_t now_ns);
/* Charges amount (negative refunds, e.g. actual < estimate). */
void fns_rate_charge(struct fns_rate *r, double amount);
/* Nanoseconds until ready (0 if ready or unlimited). */
uint64_t fns_rate_wait_ns(const struct fns_rate *r);

#endif
