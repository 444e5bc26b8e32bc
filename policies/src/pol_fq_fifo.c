/*
 * pol_fq_fifo.c - the "fifo" strawman: one queue in arrival order, no
 * fairness, but still the per-tenant queue limit (so a flooding tenant gets
 * CM_E_BUSY rather than unbounded memory) and the per-tenant counters.
 * Weights are stored, not used.
 *
 * Invariant: q->head..q->tail links exactly q->len items.
 */
#include <stdlib.h>

#include "pol_fq_impl.h"

static int
fifo_create(const struct pol_fq_cfg *cfg, struct pol_fq **out)
{
    return pol_fq_base_create(&pol_fq_fifo_ops, cfg, 0, out);
}

static int
fifo_enqueue(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns)
{
    struct pol_fq_tenant *t;
    int rc = pol_fq_admit(q, it, now_ns, &t);

    if (rc != 0) {
        return rc;
    }
    if (q->tail != NULL) {
        q->tail->next = it;
    } else {
        q->head = it;
    }
    q->tail = it;
    return 0;
}

static struct pol_fq_item *
fifo_dequeue(struct pol_fq *q, uint64_t now_ns)
{
    struct pol_fq_item *it = q->head;

    if (it == NULL) {
        return NULL;
    }
    q->head = it->next;
    if (q->head == NULL) {
        q->tail = NULL;
    }
    q->visits++;
    /* The record exists: enqueue created it and records never die. */
    pol_fq_took(q, pol_fq_tenant_find(q, it->tenant), it);
    return it;
}

static void
fifo_complete(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes,
              uint64_t now_ns)
{
    pol_fq_done(q, it, actual_bytes);
}

const struct pol_fq_ops pol_fq_fifo_ops = {
    .name = "fifo",
    .create = fifo_create,
    .destroy = pol_fq_base_destroy,
    .enqueue = fifo_enqueue,
    .dequeue = fifo_dequeue,
    .complete = fifo_complete,
    .set_weight = pol_fq_set_weight,
};
