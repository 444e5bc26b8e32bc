/*
 * ctl_balance.c - tenants moved between gateways so that their loads even
 * out (see ctl_balance.h).
 */
#include "ctl_balance.h"

#include <stdlib.h>
#include <string.h>

/* The even part of a tenant's cost, against the loads' sum: small enough
 * that loads decide, large enough that counts do when there are none. */
#define EVEN_PART 0.01

size_t
ctl_balance_plan(const struct ctl_balance_gw *g, size_t ng, const struct ctl_balance_tenant *t,
                 size_t nt, struct ctl_balance_move *out, size_t max)
{
    double *sum = calloc(ng + 1, sizeof(*sum));
    double *cost = calloc(nt + 1, sizeof(*cost));
    size_t *at = calloc(nt + 1, sizeof(*at)), n = 0;
    double total = 0, even;

    if (sum == NULL || cost == NULL || at == NULL) {
        goto out;
    }
    for (size_t i = 0; i < nt; i++) {
        total += t[i].load > 0 ? t[i].load : 0;
    }
    even = total > 0 && nt > 0 ? EVEN_PART * total / (double)nt : 1.0;
    for (size_t i = 0; i < nt; i++) {
        at[i] = ng; /* stays */
        for (size_t j = 0; j < ng && t[i].owner != NULL; j++) {
            if (g[j].up && strcmp(g[j].id, t[i].owner) == 0) {
                at[i] = j;
            }
        }
        cost[i] = (t[i].load > 0 ? t[i].load : 0) + even;
        if (at[i] < ng) {
            sum[at[i]] += cost[i];
        }
    }
    while (n < max) {
        size_t hi = ng, lo = ng, best = nt;

        for (size_t j = 0; j < ng; j++) {
            if (!g[j].up) {
                continue;
            }
            if (hi == ng || sum[j] > sum[hi]) {
                hi = j;
            }
            if (lo == ng || sum[j] < sum[lo]) {
                lo = j;
            }
        }
        if (hi == ng || hi == lo) {
            break;
        }
        /* A move of c from hi to lo lowers the larger of the two only
         * when c < sum[hi] - sum[lo]; the costliest such tenant goes. */
        for (size_t i = 0; i < nt; i++) {
            if (at[i] == hi && cost[i] < sum[hi] - sum[lo] - 1e-12 * sum[hi] &&
                (best == nt || cost[i] > cost[best])) {
                best = i;
            }
        }
        if (best == nt) {
            break;
        }
        sum[hi] -= cost[best];
        sum[lo] += cost[best];
        at[best] = lo;
        out[n++] = (struct ctl_balance_move){best, hi, lo};
    }
out:
    free(sum);
    free(cost);
    free(at);
    return n;
}
