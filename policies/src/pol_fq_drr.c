/*
 * pol_fq_drr.c - deficit round robin over per-tenant FIFOs, in two costs:
 *   drfq  a request costs its dominant cost (pol_fq_cost: seconds of node
 *         capacity), so tenants get equal weighted dominant shares (DRF);
 *   drr   a request costs 1, so tenants get equal weighted request counts
 *         (the single-resource strawman).
 *
 *   enqueue ─▶ tenant FIFO ─▶ (first item: tenant joins the tail of the active list)
 *   dequeue:  head tenant starts a turn: deficit += quantum
 *             deficit >= cost(first item)?  serve it, deficit -= cost (turn goes on)
 *                                      else end the turn: move to the tail, next tenant
 *   complete: deficit -= cost(actual) - cost(charged), floored at -debt_quanta quanta
 *
 * A tenant's quantum is cfg.quantum * w / (mean weight of the active
 * tenants), so quanta keep their weight ratio and a round hands out
 * nactive * cfg.quantum in all: a dequeue looks at about 1 + cost/quantum
 * tenants on average however many are active; after a round in which
 * nobody could pay, the further rounds that would serve nobody are handed
 * out in one pass, so a dequeue visits at most about three times the
 * active tenants (an empty round, that pass, a round), whatever the sizes.
 * A weight change applies from the tenant's next turn.
 *
 * Idleness: a tenant whose FIFO empties leaves the list and drops its
 * credit but keeps its debt (capped), so coming back it starts at the tail
 * with at most one quantum: no burst. Work-conserving: the list holds
 * exactly the tenants with waiting items and every turn adds a positive
 * quantum, so dequeue only returns NULL when nothing waits.
 *
 * Invariants: those of pol_fq_impl.h; t->deficit >= 0 right after a charge
 * (only complete() makes debt); in_turn only for the list head.
 */
#include <math.h>

#include "pol_fq_impl.h"

static int
drr_create(const struct pol_fq_cfg *cfg, struct pol_fq **out)
{
    return pol_fq_base_create(&pol_fq_drr_ops, cfg, 0, out);
}

static int
drfq_create(const struct pol_fq_cfg *cfg, struct pol_fq **out)
{
    return pol_fq_base_create(&pol_fq_drfq_ops, cfg, 1, out);
}

static double
drr_cost(const struct pol_fq *q, uint64_t bytes)
{
    return q->by_cost ? pol_fq_cost(q, bytes) : 1.0;
}

/* t's quantum, as if it were active when it is not. */
static double
drr_quantum(const struct pol_fq *q, const struct pol_fq_tenant *t)
{
    uint64_t n = q->nactive, sum = q->wactive;

    if (!t->active) {
        n++;
        sum += t->wu;
    }
    return q->cfg.quantum * (double)t->wu * (double)n / (double)sum;
}

static int
drr_enqueue(struct pol_fq *q, struct pol_fq_item *it, uint64_t now_ns)
{
    struct pol_fq_tenant *t;
    int rc = pol_fq_admit(q, it, now_ns, &t);

    if (rc != 0) {
        return rc;
    }
    if (t->tail != NULL) {
        t->tail->next = it;
    } else {
        t->head = it;
    }
    t->tail = it;
    if (!t->active) {
        t->active = 1;
        t->in_turn = 0;
        t->active_next = NULL;
        if (q->act_tail != NULL) {
            q->act_tail->active_next = t;
        } else {
            q->act_head = t;
        }
        q->act_tail = t;
        q->nactive++;
        q->wactive += t->wu;
    }
    return 0;
}

/* A whole round went by and nobody could pay for its first item, and the
 * next `rounds` - 1 would not serve anyone either: hand their quanta out at
 * once, so a request far larger than the quanta costs one pass, not one
 * round per quantum. */
static void
drr_skip_rounds(struct pol_fq *q, double rounds)
{
    struct pol_fq_tenant *t;

    for (t = q->act_head; t != NULL; t = t->active_next) {
        t->deficit += (rounds - 1) * drr_quantum(q, t);
        q->visits++;
    }
}

static struct pol_fq_item *
drr_dequeue(struct pol_fq *q, uint64_t now_ns)
{
    struct pol_fq_tenant *t;
    struct pol_fq_item *it;
    size_t ended = 0;         /* turns ended without serving, in this call */
    double rounds = INFINITY; /* fewest more turns one of those needs */
    double cost, r;

    for (;;) {
        t = q->act_head;
        if (t == NULL) {
            return NULL;
        }
        q->visits++;
        if (!t->in_turn) {
            t->in_turn = 1;
            t->deficit += drr_quantum(q, t);
        }
        it = t->head;
        cost = drr_cost(q, pol_fq_est_bytes(t, it));
        if (t->deficit >= cost) {
            break;
        }
        t->in_turn = 0;
        r = ceil((cost - t->deficit) / drr_quantum(q, t));
        rounds = r < rounds ? r : rounds;
        if (t->active_next != NULL) {
            q->act_head = t->active_next;
            t->active_next = NULL;
            q->act_tail->active_next = t;
            q->act_tail = t;
        }
        if (++ended == q->nactive) {
            if (rounds > 1) {
                drr_skip_rounds(q, rounds);
            }
            ended = 0;
            rounds = INFINITY;
        }
    }
    t->deficit -= cost;
    t->head = it->next;
    if (t->head == NULL) {
        t->tail = NULL;
        /* Idle: leave the list, keep no credit (debt comes from complete). */
        q->act_head = t->active_next;
        if (q->act_head == NULL) {
            q->act_tail = NULL;
        }
        t->active_next = NULL;
        t->active = 0;
        t->in_turn = 0;
        t->deficit = 0;
        q->nactive--;
        q->wactive -= t->wu;
    }
    pol_fq_took(q, t, it);
    return it;
}

static void
drr_complete(struct pol_fq *q, const struct pol_fq_item *it, uint64_t actual_bytes, uint64_t now_ns)
{
    struct pol_fq_tenant *t = pol_fq_done(q, it, actual_bytes);
    double floor;

    if (t == NULL || !q->by_cost) {
        return;
    }
    t->deficit -= pol_fq_cost(q, actual_bytes) - pol_fq_cost(q, it->charged_bytes);
    floor = -q->cfg.debt_quanta * drr_quantum(q, t);
    if (t->deficit < floor) {
        t->deficit = floor;
    }
    if (!t->active && t->deficit > 0) {
        t->deficit = 0;
    }
}

const struct pol_fq_ops pol_fq_drr_ops = {
    .name = "drr",
    .create = drr_create,
    .destroy = pol_fq_base_destroy,
    .enqueue = drr_enqueue,
    .dequeue = drr_dequeue,
    .complete = drr_complete,
    .set_weight = pol_fq_set_weight,
};

const struct pol_fq_ops pol_fq_drfq_ops = {
    .name = "drfq",
    .create = drfq_create,
    .destroy = pol_fq_base_destroy,
    .enqueue = drr_enqueue,
    .dequeue = drr_dequeue,
    .complete = drr_complete,
    .set_weight = pol_fq_set_weight,
};
