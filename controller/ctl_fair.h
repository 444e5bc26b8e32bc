/*
 * ctl_fair.h - system-wide fairness figures over per-tenant rates (pure;
 * any thread).
 *
 * Units (MECHANISMS.md): a request's dominant cost is in seconds of the
 * capacity of the node that serves it, so a rate of dominant cost is a
 * number of nodes' worth of capacity. Demand (the rate of dominant cost
 * arriving), served share and capacity are all in that unit.
 *
 * Fair shares are weighted max-min (water-filling) over the demands against
 * the capacity: there is a level L such that a tenant with demand below
 * L * weight gets its demand, every other tenant gets L * weight, and the
 * shares add up to the capacity. When the demands fit in the capacity every
 * tenant gets its demand and L is the largest demand / weight.
 *
 * A tenant counts towards the min-max ratio (MMR) and Jain's index when its
 * demand reaches its level share (demand >= (1 - CTL_FAIR_SLACK) * L *
 * weight): a tenant asking for less is rightly below the others. Over the
 * counted tenants x = served / weight; MMR = min x / max x (1.0 = perfect),
 * Jain = (sum x)^2 / (n * sum x^2).
 */
#ifndef CTL_FAIR_H
#define CTL_FAIR_H

#include <stddef.h>

/* Relative slack on "demand reaches the fair share": the rates are measured
 * over about two heartbeats. */
#define CTL_FAIR_SLACK 0.1

struct ctl_fair_in {
    double weight; /* > 0; a tenant with weight <= 0 gets nothing and never counts */
    double demand; /* dominant cost arriving per second */
    double served; /* dominant cost served per second */
};

struct ctl_fair_out {
    double level;   /* L (0 when no tenant has demand) */
    size_t counted; /* tenants whose demand reaches their share */
    int mmr_valid;  /* 0: fewer than 2 counted tenants, or none served */
    double mmr;
    int jain_valid; /* 0: no counted tenant, or none served */
    double jain;
};

/*
 * in: n tenants (borrowed). capacity: in demand's unit (< 0 is taken as 0).
 * alloc and counted (n entries each, caller's) receive each tenant's fair
 * share and whether it counts.
 */
void ctl_fair_compute(const struct ctl_fair_in *in, size_t n, double capacity, double *alloc,
                      int *counted, struct ctl_fair_out *out);

#endif
