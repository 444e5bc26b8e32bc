/*
 * pol_fq_impl.h - what every FQ policy shares (private to policies/).
 *
 * struct pol_fq is the same for every policy: the ops pointer, the config,
 * a FIFO (used by "fifo"), and a table of per-tenant records that carry
 * both the bookkeeping every policy needs (queued count for the queue limit,
 * served counters) and the fields the deficit-based policies use (a
 * per-tenant FIFO, weight, deficit, a link in the active round-robin list,
 * a GET size estimate). A policy needing more hangs it off `priv`.
 *
 * Invariants: len == sum of tenant->queued; an item is in at most one
 * list; tenant records are allocated one by one and never move or die
 * before the scheduler (policies may keep pointers to them).
 */
#ifndef POL_FQ_IMPL_H
#define POL_FQ_IMPL_H

#include "pol_fq.h"

struct pol_fq_tenant {
    struct pol_fq_tenant_info info;
    struct pol_fq_item *head, *tail;   /* per-tenant FIFO (drr/drfq) */
    struct pol_fq_tenant *active_next; /* round-robin list (drr/drfq) */
    int active;
    double deficit;       /* dominant-cost units (drr/drfq) */
    double est_get_bytes; /* EWMA of GET sizes (drfq) */
};

struct pol_fq {
    const struct pol_fq_ops *ops;
    struct pol_fq_cfg cfg;
    size_t len;
    struct pol_fq_item *head, *tail; /* single FIFO (fifo) */
    struct pol_fq_tenant **slots;    /* open addressing, linear probing */
    size_t nslots, ntenants;
    void *priv;
};

/* The registered policies (one file each). */
extern const struct pol_fq_ops pol_fq_fifo_ops;

/* Fills the common part; 0 or CM_E_BADARG. */
int pol_fq_base_init(struct pol_fq *q, const struct pol_fq_ops *ops, const struct pol_fq_cfg *cfg);
void pol_fq_base_fini(struct pol_fq *q);
/* The record of tenant, or NULL (lookup only). */
struct pol_fq_tenant *pol_fq_tenant_find(const struct pol_fq *q, uint32_t tenant);
/* The record of tenant, created on first use; NULL only on out-of-memory. */
struct pol_fq_tenant *pol_fq_tenant_get(struct pol_fq *q, uint32_t tenant);
/* 0 if weight is acceptable, else CM_E_BADARG. */
int pol_fq_check_weight(double weight);

#endif
