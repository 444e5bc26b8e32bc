/*
 * pol_fq.c - the FQ policy registry and the state every policy shares:
 * per-tenant records in an open-addressing table keyed by tenant id, the
 * cost normalization, and the bookkeeping of enqueue / dequeue / complete
 * that does not depend on the scheduling order (arrivals, queue limit,
 * served counters, the GET-size estimate).
 *
 * No threads, no I/O: see pol_fq.h. The table holds pointers so records
 * never move when it grows.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_fq_impl.h"

/* The one registry; the first entry is the default (POL_FQ_DEFAULT). */
static const struct pol_fq_ops *const pol_fq_registry[] = {
    &pol_fq_drfq_ops,
    &pol_fq_drr_ops,
    &pol_fq_fifo_ops,
};

/* Weights are summed as integers of this unit, so the active sum never drifts. */
#define POL_FQ_WEIGHT_UNIT 1e6
/* The GET-size EWMA gain (as TCP's smoothed RTT). */
#define POL_FQ_EWMA_GAIN 0.125
/* The smallest quantum accepted, in requests of 0 bytes: below it a turn
 * would buy too little to keep dequeue cheap. */
#define POL_FQ_MIN_QUANTUM 1e-3

const struct pol_fq_ops *
pol_fq_find(const char *name)
{
    size_t i;

    if (name == NULL) {
        return NULL;
    }
    for (i = 0; i < sizeof(pol_fq_registry) / sizeof(pol_fq_registry[0]); i++) {
        if (strcmp(pol_fq_registry[i]->name, name) == 0) {
            return pol_fq_registry[i];
        }
    }
    return NULL;
}

const struct pol_fq_ops *const *
pol_fq_list(size_t *n)
{
    *n = sizeof(pol_fq_registry) / sizeof(pol_fq_registry[0]);
    return pol_fq_registry;
}

static int
pol_fq_check_weight(double weight)
{
    if (!isfinite(weight) || weight <= 0.0 || weight > 10000.0) {
        return CM_E_BADARG;
    }
    return 0;
}

static int
pol_fq_nonneg(double v)
{
    return isfinite(v) && v >= 0;
}

double
pol_fq_cost(const struct pol_fq *q, uint64_t bytes)
{
    double by_ops = q->inv_ops, by_bytes = (double)bytes * q->inv_bytes;

    return by_ops > by_bytes ? by_ops : by_bytes;
}

int
pol_fq_base_create(const struct pol_fq_ops *ops, const struct pol_fq_cfg *cfg, int by_cost,
                   struct pol_fq **out)
{
    struct pol_fq *q;
    struct pol_fq_cfg c;
    double unit;

    *out = NULL;
    if (cfg == NULL || !pol_fq_nonneg(cfg->cap_ops) || !pol_fq_nonneg(cfg->cap_bytes) ||
        !pol_fq_nonneg(cfg->nominal_ops) || !pol_fq_nonneg(cfg->nominal_bytes) ||
        !pol_fq_nonneg(cfg->quantum) || !pol_fq_nonneg(cfg->debt_quanta)) {
        return CM_E_BADARG;
    }
    c = *cfg;
    if (c.nominal_ops == 0) {
        c.nominal_ops = POL_FQ_NOMINAL_OPS;
    }
    if (c.nominal_bytes == 0) {
        c.nominal_bytes = POL_FQ_NOMINAL_BYTES;
    }
    if (c.debt_quanta == 0) {
        c.debt_quanta = POL_FQ_DEBT_QUANTA;
    }
    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return -ENOMEM;
    }
    q->ops = ops;
    q->by_cost = by_cost;
    q->inv_ops = 1.0 / (c.cap_ops > 0 ? c.cap_ops : c.nominal_ops);
    q->inv_bytes = 1.0 / (c.cap_bytes > 0 ? c.cap_bytes : c.nominal_bytes);
    unit = by_cost ? pol_fq_cost(q, 0) : 1.0;
    if (c.quantum == 0) {
        c.quantum = by_cost ? pol_fq_cost(q, POL_FQ_QUANTUM_BYTES) : 1.0;
    }
    if (c.quantum < POL_FQ_MIN_QUANTUM * unit || !isfinite(q->inv_ops) || !isfinite(q->inv_bytes)) {
        free(q);
        return CM_E_BADARG;
    }
    q->cfg = c;
    *out = q;
    return 0;
}

void
pol_fq_base_destroy(struct pol_fq *q)
{
    size_t i;

    if (q == NULL) {
        return;
    }
    for (i = 0; i < q->nentries; i++) {
        free(q->entries[i]);
    }
    free(q->entries);
    free(q);
}

/* Fibonacci hashing of the id onto a power-of-two table. */
static size_t
pol_fq_entry_of(uint32_t tenant, size_t nentries)
{
    return (size_t)(((uint64_t)tenant * 0x9e3779b97f4a7c15ull) >> 32) & (nentries - 1);
}

struct pol_fq_tenant *
pol_fq_tenant_find(const struct pol_fq *q, uint32_t tenant)
{
    size_t i;

    if (q->nentries == 0) {
        return NULL;
    }
    for (i = pol_fq_entry_of(tenant, q->nentries); q->entries[i] != NULL;
         i = (i + 1) & (q->nentries - 1)) {
        if (q->entries[i]->info.tenant == tenant) {
            return q->entries[i];
        }
    }
    return NULL;
}

static int
pol_fq_grow(struct pol_fq *q)
{
    size_t n = q->nentries ? q->nentries * 2 : 16;
    struct pol_fq_tenant **entries = calloc(n, sizeof(*entries));
    size_t i, j;

    if (entries == NULL) {
        return -ENOMEM;
    }
    for (i = 0; i < q->nentries; i++) {
        if (q->entries[i] == NULL) {
            continue;
        }
        for (j = pol_fq_entry_of(q->entries[i]->info.tenant, n); entries[j] != NULL;
             j = (j + 1) & (n - 1)) {
        }
        entries[j] = q->entries[i];
    }
    free(q->entries);
    q->entries = entries;
    q->nentries = n;
    return 0;
}

struct pol_fq_tenant *
pol_fq_tenant_get(struct pol_fq *q, uint32_t tenant)
{
    struct pol_fq_tenant *t = pol_fq_tenant_find(q, tenant);
    size_t i;

    if (t != NULL) {
        return t;
    }
    /* Keep the load factor at or below 1/2. */
    if ((q->ntenants + 1) * 2 > q->nentries && pol_fq_grow(q) != 0) {
        return NULL;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->info.tenant = tenant;
    t->info.weight = 1.0;
    t->info.est_get_bytes = POL_FQ_GET_BYTES_INIT;
    t->wu = (uint64_t)POL_FQ_WEIGHT_UNIT;
    for (i = pol_fq_entry_of(tenant, q->nentries); q->entries[i] != NULL;
         i = (i + 1) & (q->nentries - 1)) {
    }
    q->entries[i] = t;
    q->ntenants++;
    return t;
}

uint64_t
pol_fq_est_bytes(const struct pol_fq_tenant *t, const struct pol_fq_item *it)
{
    if (!(it->flags & POL_FQ_UNSIZED)) {
        return it->est_bytes;
    }
    return (uint64_t)llround(t->info.est_get_bytes);
}

int
pol_fq_admit(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns, struct pol_fq_tenant **out)
{
    struct pol_fq_tenant *t = pol_fq_tenant_get(q, it->tenant);

    *out = t;
    if (t == NULL) {
        return -ENOMEM;
    }
    t->info.arrived_requests++;
    t->info.arrived_bytes += pol_fq_est_bytes(t, it);
    if (q->cfg.queue_limit != 0 && t->info.queued >= q->cfg.queue_limit) {
        return CM_E_BUSY;
    }
    it->next = NULL;
    it->enq_ns = now_ns;
    it->charged_bytes = 0;
    t->info.queued++;
    q->len++;
    return 0;
}

void
pol_fq_took(struct pol_fq *q, struct pol_fq_tenant *t, struct pol_fq_item *it)
{
    it->next = NULL;
    it->charged_bytes = pol_fq_est_bytes(t, it);
    t->info.queued--;
    t->info.running++;
    q->len--;
}

struct pol_fq_tenant *
pol_fq_done(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes)
{
    struct pol_fq_tenant *t = pol_fq_tenant_find(q, it->tenant);
    double est;

    if (t == NULL) {
        return NULL;
    }
    if (t->info.running > 0) {
        t->info.running--;
    }
    t->info.served_requests++;
    t->info.served_bytes += actual_bytes;
    t->info.served_cost += pol_fq_cost(q, actual_bytes);
    if (it->flags & POL_FQ_GET) {
        est = t->info.est_get_bytes;
        est += POL_FQ_EWMA_GAIN * ((double)actual_bytes - est);
        t->info.est_get_bytes = est > 1.0 ? est : 1.0;
    }
    return t;
}

int
pol_fq_set_weight(struct pol_fq *q, uint32_t tenant, double weight)
{
    struct pol_fq_tenant *t;
    uint64_t wu;
    int rc = pol_fq_check_weight(weight);

    if (rc != 0) {
        return rc;
    }
    t = pol_fq_tenant_get(q, tenant);
    if (t == NULL) {
        return -ENOMEM;
    }
    wu = (uint64_t)llround(weight * POL_FQ_WEIGHT_UNIT);
    if (wu == 0) {
        wu = 1;
    }
    if (t->active) {
        q->wactive = q->wactive - t->wu + wu;
    }
    t->info.weight = weight;
    t->wu = wu;
    return 0;
}

const struct pol_fq_ops *
pol_fq_ops_of(const struct pol_fq *q)
{
    return q->ops;
}

size_t
pol_fq_len(const struct pol_fq *q)
{
    return q->len;
}

uint64_t
pol_fq_visits(const struct pol_fq *q)
{
    return q->visits;
}

uint32_t
pol_fq_queued(const struct pol_fq *q, uint32_t tenant)
{
    const struct pol_fq_tenant *t = pol_fq_tenant_find(q, tenant);

    return t != NULL ? t->info.queued : 0;
}

void
pol_fq_foreach_tenant(const struct pol_fq *q,
                      void (*cb)(void *arg, const struct pol_fq_tenant_info *ti), void *arg)
{
    size_t i;

    for (i = 0; i < q->nentries; i++) {
        if (q->entries[i] != NULL) {
            cb(arg, &q->entries[i]->info);
        }
    }
}
