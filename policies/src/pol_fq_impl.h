/*
 * pol_fq_impl.h - what every FQ policy shares (private to policies/).
 *
 * struct pol_fq is the same for every policy: the ops pointer, the config
 * with its defaults resolved, a FIFO (used by "fifo"), the round-robin list
 * of active tenants (drr/drfq) and a table of per-tenant records. A record
 * carries the bookkeeping every policy needs (queued count for the queue
 * limit, arrival and served counters, the GET-size estimate) and the
 * deficit-round-robin state (a per-tenant FIFO, deficit, list link).
 *
 * Invariants: len == sum of tenant->queued; an item is in at most one
 * list; a tenant is in the active list iff it has queued items (drr/drfq);
 * nactive and wactive are the count and the sum of wu over that list;
 * info.est_get_bytes >= 1;
 * tenant records are allocated one by one and never move or die before the
 * scheduler (policies keep pointers to them).
 */
#ifndef POL_FQ_IMPL_H
#define POL_FQ_IMPL_H

#include "pol_fq.h"

struct pol_fq_tenant {
    struct pol_fq_tenant_info info;
    struct pol_fq_item *head, *tail;   /* per-tenant FIFO (drr/drfq) */
    struct pol_fq_tenant *active_next; /* round-robin list (drr/drfq) */
    uint64_t wu;                       /* info.weight in micro-units, >= 1: exact sums */
    double deficit;                    /* cost units of the policy; < 0 is debt */
    unsigned active : 1;               /* in the round-robin list */
    unsigned in_turn : 1;              /* got this turn's quantum (at the list head) */
};

struct pol_fq {
    const struct pol_fq_ops *ops;
    struct pol_fq_cfg cfg; /* every 0-means-default field resolved */
    double inv_ops;        /* 1 / requests/s of the normalization */
    double inv_bytes;      /* 1 / bytes/s of the normalization */
    int by_cost;           /* schedule by dominant cost (drfq), not by count (drr) */
    size_t len;
    uint64_t visits;
    struct pol_fq_item *head, *tail;           /* single FIFO (fifo) */
    struct pol_fq_tenant *act_head, *act_tail; /* round robin (drr/drfq) */
    size_t nactive;
    uint64_t wactive;
    struct pol_fq_tenant **entries; /* open addressing, linear probing */
    size_t nentries, ntenants;
};

/* The registered policies (fifo in pol_fq_fifo.c, drr/drfq in pol_fq_drr.c). */
extern const struct pol_fq_ops pol_fq_fifo_ops;
extern const struct pol_fq_ops pol_fq_drr_ops;
extern const struct pol_fq_ops pol_fq_drfq_ops;

/* Allocates a scheduler of ops with cfg's defaults resolved (the quantum
 * in dominant cost if by_cost, else in requests); *out is the caller's.
 * 0, CM_E_BADARG or -ENOMEM. */
int pol_fq_base_create(const struct pol_fq_ops *ops, const struct pol_fq_cfg *cfg, int by_cost,
                       struct pol_fq **out);
void pol_fq_base_destroy(struct pol_fq *q);
/* The record of tenant, or NULL (lookup only). */
struct pol_fq_tenant *pol_fq_tenant_find(const struct pol_fq *q, uint32_t tenant);
/* The record of tenant, created on first use; NULL only on out-of-memory. */
struct pol_fq_tenant *pol_fq_tenant_get(struct pol_fq *q, uint32_t tenant);

/* Dominant cost of a request moving bytes, in seconds of node capacity. */
double pol_fq_cost(const struct pol_fq *q, uint64_t bytes);
/* The bytes to charge for it (est_bytes, or t's GET-size estimate). */
uint64_t pol_fq_est_bytes(const struct pol_fq_tenant *t, const struct pol_fq_item *it);
/* Enqueue's common part: counts the arrival, applies the queue limit, stamps
 * it and counts it queued; the policy then links it. *out is it's tenant.
 * 0, CM_E_BUSY or -ENOMEM. */
int pol_fq_admit(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns,
                 struct pol_fq_tenant **out);
/* Dequeue's common part, once the policy has unlinked it: sets
 * charged_bytes and moves it from queued to running. */
void pol_fq_took(struct pol_fq *q, struct pol_fq_tenant *t, struct pol_fq_item *it);
/* Complete's common part: served counters, the GET-size estimate. The
 * tenant, or NULL if it was never seen. */
struct pol_fq_tenant *pol_fq_done(struct pol_fq *q, const struct pol_fq_item *it,
                                  uint64_t actual_bytes);
/* set_weight for every policy; keeps wactive in step. */
int pol_fq_set_weight(struct pol_fq *q, uint32_t tenant, double weight);

#endif
