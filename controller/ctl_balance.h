/*
 * ctl_balance.h - which tenants to move between gateways so that their
 * loads even out (`shoalctl gateway rebalance`). Pure: no I/O, no clock.
 *
 * A tenant's cost is its load (its dominant share of the nodes, as GET
 * /v1/fairness reports it) plus a small even part, so that tenants with
 * no load spread by count. Greedy, one move at a time: from the up
 * gateway with the largest cost to the one with the smallest, the
 * costliest tenant whose move lowers the larger of the two; until no move
 * does, or max moves are planned. Tenants of gateways that are down (their
 * metadata cannot be handed over) and tenants without an owner stay.
 */
#ifndef CTL_BALANCE_H
#define CTL_BALANCE_H

#include <stddef.h>

struct ctl_balance_gw {
    const char *id;
    int up;
};

struct ctl_balance_tenant {
    const char *owner; /* a gateway's id; "" or unknown: stays */
    double load;       /* >= 0 */
};

struct ctl_balance_move {
    size_t tenant;   /* index into the tenants */
    size_t from, to; /* indexes into the gateways */
};

/* Up to max moves into out (applied in order, each with the loads the ones
 * before it left); returns how many. */
size_t ctl_balance_plan(const struct ctl_balance_gw *g, size_t ng,
                        const struct ctl_balance_tenant *t, size_t nt, struct ctl_balance_move *out,
                        size_t max);

#endif
