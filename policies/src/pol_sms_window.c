/*
 * pol_sms_window.c - "sms": InfiniStore's sliding window (see pol_sms.h for
 * the lifecycle, placement, compaction and the memory bound).
 *
 * Stateless: the pool's generation and each instance's generation and
 * counters travel in the caller's view, so a restarted controller or node
 * decides from what it reports, and one policy instance serves every pool.
 */
#include "cm_err.h"
#include "pol_sms_impl.h"

static int
window_create(const struct pol_sms_cfg *cfg, struct pol_sms **out)
{
    return pol_sms_new(&pol_sms_window_ops, cfg, out);
}

/* The state an instance of age (intervals) has; RELEASED sets *why. */
static enum pol_sms_state
window_state(const struct pol_sms_cfg *c, const struct pol_sms_inst *in, uint64_t age,
             enum pol_sms_reason *why)
{
    uint64_t g = (uint64_t)c->active_intervals + c->degraded_intervals;

    *why = POL_SMS_KEPT;
    if (age >= g) {
        *why = POL_SMS_AGED;
    } else if (age >= 1 && in->used == 0) {
        *why = POL_SMS_EMPTY;
    } else if (age >= c->active_intervals) {
        if (!in->lost) {
            return POL_SMS_DEGRADED;
        }
        *why = POL_SMS_LOST;
    } else {
        return age == 0 && in->used == 0 ? POL_SMS_WARM : POL_SMS_ACTIVE;
    }
    return POL_SMS_RELEASED;
}

static int
window_tick(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
            struct pol_sms_decision *d, struct pol_sms_tick *t)
{
    const struct pol_sms_cfg *c = &p->cfg;
    uint64_t gen, start, k = 0, ig;
    uint32_t carried = 0;
    int wrote = 0;
    size_t i;

    if (pol_sms_check_tick(v, d, t) != 0) {
        return CM_E_BADARG;
    }
    gen = v->gen;
    start = v->gen_start_ns;
    if (now_ns >= start && now_ns - start >= c->interval_ns) {
        k = (now_ns - start) / c->interval_ns;
        gen += k;
        start += k * c->interval_ns;
    }
    *t = (struct pol_sms_tick){
        .gen = gen,
        .gen_start_ns = start,
        .opened = k < UINT32_MAX ? (uint32_t)k : UINT32_MAX,
    };
    for (i = 0; i < v->ninst; i++) {
        const struct pol_sms_inst *in = &v->inst[i];

        d[i] = (struct pol_sms_decision){.state = POL_SMS_RELEASED, .gen = in->gen};
        if (in->state == POL_SMS_RELEASED) {
            continue;
        }
        /* An instance ahead of the view (a node that heard of a newer
         * generation) is as young as can be. */
        ig = in->gen < v->gen ? in->gen : v->gen;
        if (k > 0 && in->gen == v->gen && in->put_bytes > 0) {
            wrote = 1;
            /* Still being filled: it joins the new generation, so a slow
             * writer keeps one instance per node, not one per interval. */
            if (!in->lost && in->used < c->inst_bytes) {
                ig = d[i].gen = gen;
                carried++;
            }
        }
        d[i].state = window_state(c, in, gen - ig, &d[i].reason);
    }
    if (wrote && carried < c->min_group) {
        t->open_instances = c->min_group - carried;
    }
    pol_sms_finish(p, v, now_ns, start + c->interval_ns, d, t);
    return 0;
}

static int
window_place(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t bytes, uint64_t now_ns,
             size_t *idx)
{
    (void)now_ns;
    return pol_sms_fit(p, v, bytes, 1, idx);
}

/* Whether a chunk read from in (of the view at generation gen) moves. */
static int
window_moves(const struct pol_sms_cfg *c, const struct pol_sms_inst *in, uint64_t gen)
{
    uint64_t age;

    if (in->state == POL_SMS_RELEASED || in->gen >= gen) {
        return 0;
    }
    age = gen - in->gen;
    /* A lost degraded instance is not rebuilt: a chunk read for it came
     * from COS and had better land in the newest generation. */
    return age >= c->compact_age || (in->lost && age >= c->active_intervals);
}

static int
window_on_read(const struct pol_sms *p, const struct pol_sms_view *v, size_t i, uint64_t bytes,
               uint64_t now_ns)
{
    size_t to;
    int rc;

    (void)now_ns;
    if (pol_sms_check_view(v) != 0 || (i >= v->ninst && i != POL_SMS_NOWHERE)) {
        return CM_E_BADARG;
    }
    /* A late read is back in the working set: re-admitted like a move. */
    if (i != POL_SMS_NOWHERE && !window_moves(&p->cfg, &v->inst[i], v->gen)) {
        return 0;
    }
    rc = pol_sms_fit(p, v, bytes, 1, &to);
    return rc == 0 || rc == POL_SMS_OPEN_NEW;
}

const struct pol_sms_ops pol_sms_window_ops = {
    .name = "sms",
    .create = window_create,
    .destroy = pol_sms_free,
    .tick = window_tick,
    .place = window_place,
    .on_read = window_on_read,
    .merge_from = pol_sms_merge_from,
    .merge_to = pol_sms_merge_to,
};
