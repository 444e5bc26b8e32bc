/*
 * pol_sms_static.c - "static": InfiniCache's fixed pool, the strawman the
 * window is measured against. No window: the generation never moves, every
 * instance stays ACTIVE and is warmed up every warm_active_ns forever (a
 * lost one is rebuilt, never released), a chunk goes to whichever instance
 * has room, and nothing is compacted or merged. The pool is cfg.max_instances
 * instances per node, opened as chunks first need them. Stateless.
 */
#include "cm_err.h"
#include "pol_sms_impl.h"

static int
static_create(const struct pol_sms_cfg *cfg, struct pol_sms **out)
{
    *out = NULL;
    if (cfg == NULL || cfg->max_instances == 0) {
        return CM_E_BADARG;
    }
    return pol_sms_new(&pol_sms_static_ops, cfg, out);
}

static int
static_tick(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
            struct pol_sms_decision *d, struct pol_sms_tick *t)
{
    size_t i;

    if (pol_sms_check_tick(v, d, t) != 0) {
        return CM_E_BADARG;
    }
    *t = (struct pol_sms_tick){.gen = v->gen, .gen_start_ns = v->gen_start_ns};
    for (i = 0; i < v->ninst; i++) {
        d[i] = (struct pol_sms_decision){
            .state = v->inst[i].state == POL_SMS_RELEASED ? POL_SMS_RELEASED : POL_SMS_ACTIVE,
            .gen = v->inst[i].gen,
        };
    }
    pol_sms_finish(p, v, now_ns, now_ns + p->cfg.interval_ns, d, t);
    return 0;
}

static int
static_place(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t bytes, uint64_t now_ns,
             size_t *idx)
{
    (void)now_ns;
    return pol_sms_fit(p, v, bytes, 0, idx);
}

static int
static_on_read(const struct pol_sms *p, const struct pol_sms_view *v, size_t i, uint64_t bytes,
               uint64_t now_ns)
{
    (void)p;
    (void)bytes;
    (void)now_ns;
    return pol_sms_check_view(v) != 0 || (i >= v->ninst && i != POL_SMS_NOWHERE) ? CM_E_BADARG : 0;
}

/* A fixed pool has no generations to merge within: it never shrinks. */
static int
static_merge_from(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                  size_t *from)
{
    (void)p;
    (void)now_ns;
    return pol_sms_check_view(v) != 0 || from == NULL ? CM_E_BADARG : 0;
}

const struct pol_sms_ops pol_sms_static_ops = {
    .name = "static",
    .create = static_create,
    .destroy = pol_sms_free,
    .tick = static_tick,
    .place = static_place,
    .on_read = static_on_read,
    .merge_from = static_merge_from,
    .merge_to = pol_sms_merge_to,
};
