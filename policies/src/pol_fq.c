/*
 * pol_fq.c - the FQ policy registry and the state every policy shares
 * (per-tenant records in an open-addressing table keyed by tenant id).
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

/* The one registry: add drr / drfq here. */
static const struct pol_fq_ops *const pol_fq_registry[] = {
    &pol_fq_fifo_ops,
};

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

int
pol_fq_check_weight(double weight)
{
    if (!isfinite(weight) || weight <= 0.0 || weight > 10000.0) {
        return CM_E_BADARG;
    }
    return 0;
}

int
pol_fq_base_init(struct pol_fq *q, const struct pol_fq_ops *ops, const struct pol_fq_cfg *cfg)
{
    memset(q, 0, sizeof(*q));
    if (cfg == NULL || !isfinite(cfg->cap_ops) || cfg->cap_ops < 0 || !isfinite(cfg->cap_bytes) ||
        cfg->cap_bytes < 0 || !isfinite(cfg->quantum) || cfg->quantum < 0) {
        return CM_E_BADARG;
    }
    q->ops = ops;
    q->cfg = *cfg;
    return 0;
}

void
pol_fq_base_fini(struct pol_fq *q)
{
    size_t i;

    for (i = 0; i < q->nslots; i++) {
        free(q->slots[i]);
    }
    free(q->slots);
    q->slots = NULL;
    q->nslots = q->ntenants = 0;
}

/* Fibonacci hashing of the id onto a power-of-two table. */
static size_t
pol_fq_slot_of(uint32_t tenant, size_t nslots)
{
    return (size_t)(((uint64_t)tenant * 0x9e3779b97f4a7c15ull) >> 32) & (nslots - 1);
}

struct pol_fq_tenant *
pol_fq_tenant_find(const struct pol_fq *q, uint32_t tenant)
{
    size_t i;

    if (q->nslots == 0) {
        return NULL;
    }
    for (i = pol_fq_slot_of(tenant, q->nslots); q->slots[i] != NULL;
         i = (i + 1) & (q->nslots - 1)) {
        if (q->slots[i]->info.tenant == tenant) {
            return q->slots[i];
        }
    }
    return NULL;
}

static int
pol_fq_grow(struct pol_fq *q)
{
    size_t n = q->nslots ? q->nslots * 2 : 16;
    struct pol_fq_tenant **slots = calloc(n, sizeof(*slots));
    size_t i, j;

    if (slots == NULL) {
        return -ENOMEM;
    }
    for (i = 0; i < q->nslots; i++) {
        if (q->slots[i] == NULL) {
            continue;
        }
        for (j = pol_fq_slot_of(q->slots[i]->info.tenant, n); slots[j] != NULL;
             j = (j + 1) & (n - 1)) {
        }
        slots[j] = q->slots[i];
    }
    free(q->slots);
    q->slots = slots;
    q->nslots = n;
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
    if ((q->ntenants + 1) * 2 > q->nslots && pol_fq_grow(q) != 0) {
        return NULL;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->info.tenant = tenant;
    t->info.weight = 1.0;
    for (i = pol_fq_slot_of(tenant, q->nslots); q->slots[i] != NULL;
         i = (i + 1) & (q->nslots - 1)) {
    }
    q->slots[i] = t;
    q->ntenants++;
    return t;
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

    for (i = 0; i < q->nslots; i++) {
        if (q->slots[i] != NULL) {
            cb(arg, &q->slots[i]->info);
        }
    }
}
