/*
 * pol_fq_fifo.c - the "fifo" strawman: one queue in arrival order, no
 * fairness, but still the per-tenant queue limit (so a flooding tenant gets
 * CM_E_BUSY rather than unbounded memory). Weights are stored, not used.
 *
 * Invariant: q->head..q->tail links exactly q->len items.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_fq_impl.h"

static int
fifo_create(const struct pol_fq_cfg *cfg, struct pol_fq **out)
{
    struct pol_fq *q = malloc(sizeof(*q));
    int rc;

    *out = NULL;
    if (q == NULL) {
        return -ENOMEM;
    }
    rc = pol_fq_base_init(q, &pol_fq_fifo_ops, cfg);
    if (rc != 0) {
        free(q);
        return rc;
    }
    *out = q;
    return 0;
}

static void
fifo_destroy(struct pol_fq *q)
{
    if (q == NULL) {
        return;
    }
    pol_fq_base_fini(q);
    free(q);
}

static int
fifo_enqueue(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns)
{
    struct pol_fq_tenant *t = pol_fq_tenant_get(q, it->tenant);

    if (t == NULL) {
        return -ENOMEM;
    }
    if (q->cfg.queue_limit != 0 && t->info.queued >= q->cfg.queue_limit) {
        return CM_E_BUSY;
    }
    it->next = NULL;
    it->enq_ns = now_ns;
    it->charged_bytes = 0;
    if (q->tail != NULL) {
        q->tail->next = it;
    } else {
        q->head = it;
    }
    q->tail = it;
    q->len++;
    t->info.queued++;
    return 0;
}

static struct pol_fq_item *
fifo_dequeue(struct pol_fq *q, uint64_t now_ns)
{
    struct pol_fq_item *it = q->head;
    struct pol_fq_tenant *t;

    if (it == NULL) {
        return NULL;
    }
    q->head = it->next;
    if (q->head == NULL) {
        q->tail = NULL;
    }
    it->next = NULL;
    q->len--;
    it->charged_bytes = it->est_bytes;
    /* The record exists: enqueue created it and records never die. */
    t = pol_fq_tenant_find(q, it->tenant);
    t->info.queued--;
    t->info.running++;
    return it;
}

static void
fifo_complete(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes,
              uint64_t now_ns)
{
    struct pol_fq_tenant *t = pol_fq_tenant_find(q, it->tenant);

    if (t == NULL) {
        return;
    }
    if (t->info.running > 0) {
        t->info.running--;
    }
    t->info.served_requests++;
    t->info.served_bytes += actual_bytes;
}

static int
fifo_set_weight(struct pol_fq *q, uint32_t tenant, double weight)
{
    struct pol_fq_tenant *t;
    int rc = pol_fq_check_weight(weight);

    if (rc != 0) {
        return rc;
    }
    t = pol_fq_tenant_get(q, tenant);
    if (t == NULL) {
        return -ENOMEM;
    }
    t->info.weight = weight;
    return 0;
}

const struct pol_fq_ops pol_fq_fifo_ops = {
    .name = "fifo",
    .create = fifo_create,
    .destroy = fifo_destroy,
    .enqueue = fifo_enqueue,
    .dequeue = fifo_dequeue,
    .complete = fifo_complete,
    .set_weight = fifo_set_weight,
};
