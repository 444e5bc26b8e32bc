/*
 * ctl_fair.h - fairness figures over per-tenant rates (pure; any thread).
 *
 * Vocabulary (MECHANISMS.md): a tenant is active when its demand is > 0.
 * Its normalized throughput is served / weight. The min-max ratio (MMR) is
 * min / max of that over active tenants (1.0 = perfect); Jain's index is
 * (sum x)^2 / (n * sum x^2) over the same x. Allocation is the tenant's
 * share of the total weight of all tenants.
 */
#ifndef CTL_FAIR_H
#define CTL_FAIR_H

#include <stddef.h>

struct ctl_fair_in {
    double weight;
    double demand; /* requests/s asked for */
    double served; /* requests/s served */
};

struct ctl_fair_out {
    int mmr_valid; /* 0: fewer than 2 active tenants, or none served */
    double mmr;
    int jain_valid; /* 0: no active tenant, or none served */
    double jain;
    size_t active;
};

/* alloc (n entries, caller's) receives each tenant's weight share. */
void ctl_fair_compute(const struct ctl_fair_in *in, size_t n, double *alloc,
                      struct ctl_fair_out *out);

#endif
