/*
 * pol_sms.c - the registry of SMS policies and what they share: the
 * configuration's defaults and bounds, best-fit placement, merges, and
 * the warm-ups and figures that end every tick (see pol_sms.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_registry.h"
#include "pol_sms_impl.h"

/* The one registry. */
static const struct pol_sms_ops *const pol_sms_registry[] = {
    &pol_sms_window_ops,
    &pol_sms_static_ops,
};

POL_REGISTRY_DEFINE(sms, pol_sms_registry)

const struct pol_sms_cfg *
pol_sms_cfg_of(const struct pol_sms *p)
{
    return &p->cfg;
}

const char *
pol_sms_state_name(enum pol_sms_state s)
{
    static const char *const names[POL_SMS_NSTATES] = {"warm", "active", "degraded", "released"};

    return (unsigned)s < POL_SMS_NSTATES ? names[s] : "?";
}

/* The smallest A >= M with (G - A) / A <= 1/5, at most G - 1. */
static uint32_t
pol_sms_default_compact_age(uint32_t m, uint32_t n)
{
    uint64_t g = (uint64_t)m + n, a = (5 * g + 5) / 6;

    if (a > g - 1) {
        a = g - 1;
    }
    return (uint32_t)(a < m ? m : a);
}

static int
pol_sms_fill_cfg(struct pol_sms_cfg *c)
{
    if (c->interval_ns == 0) {
        c->interval_ns = POL_SMS_INTERVAL_DEFAULT;
    }
    if (c->active_intervals == 0) {
        c->active_intervals = POL_SMS_ACTIVE_DEFAULT;
    }
    if (c->degraded_intervals == 0) {
        c->degraded_intervals = POL_SMS_DEGRADED_DEFAULT;
    }
    if (c->warm_active_ns == 0) {
        c->warm_active_ns = c->interval_ns / POL_SMS_WARM_ACTIVE_DIV;
    }
    if (c->warm_degraded_ns == 0) {
        c->warm_degraded_ns = c->interval_ns / POL_SMS_WARM_DEGRADED_DIV;
    }
    if (c->inst_bytes == 0) {
        c->inst_bytes = POL_SMS_INST_BYTES_DEFAULT;
    }
    if (c->min_group == 0) {
        c->min_group = POL_SMS_MIN_GROUP_DEFAULT;
    }
    if (c->interval_ns < POL_SMS_INTERVAL_MIN || c->active_intervals > POL_SMS_INTERVALS_MAX ||
        c->degraded_intervals > POL_SMS_INTERVALS_MAX || c->compact_age > POL_SMS_INTERVALS_MAX ||
        c->min_group > POL_SMS_MIN_GROUP_MAX) {
        return CM_E_BADARG;
    }
    if (c->compact_age == 0) {
        c->compact_age = pol_sms_default_compact_age(c->active_intervals, c->degraded_intervals);
    }
    return 0;
}

int
pol_sms_new(const struct pol_sms_ops *ops, const struct pol_sms_cfg *cfg, struct pol_sms **out)
{
    struct pol_sms *p;
    struct pol_sms_cfg c = {0};
    int rc;

    *out = NULL;
    if (cfg != NULL) {
        c = *cfg;
    }
    rc = pol_sms_fill_cfg(&c);
    if (rc != 0) {
        return rc;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return -ENOMEM;
    }
    p->ops = ops;
    p->cfg = c;
    *out = p;
    return 0;
}

void
pol_sms_free(struct pol_sms *p)
{
    free(p);
}

int
pol_sms_check_view(const struct pol_sms_view *v)
{
    if (v == NULL || (v->ninst > 0 && v->inst == NULL)) {
        return CM_E_BADARG;
    }
    return 0;
}

int
pol_sms_check_tick(const struct pol_sms_view *v, const struct pol_sms_decision *d,
                   const struct pol_sms_tick *t)
{
    size_t i;

    if (pol_sms_check_view(v) != 0 || (v->ninst > 0 && d == NULL) || t == NULL) {
        return CM_E_BADARG;
    }
    for (i = 0; i < v->ninst; i++) {
        if ((unsigned)v->inst[i].state >= POL_SMS_NSTATES) {
            return CM_E_BADARG;
        }
    }
    return 0;
}

int
pol_sms_fit(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t bytes, int newest_only,
            size_t *idx)
{
    uint64_t size = p->cfg.inst_bytes, room, best_room = 0;
    size_t i, best = 0, live = 0;
    int found = 0;

    if (pol_sms_check_view(v) != 0 || idx == NULL) {
        return CM_E_BADARG;
    }
    if (bytes > size) {
        return CM_E_TOOBIG;
    }
    for (i = 0; i < v->ninst; i++) {
        const struct pol_sms_inst *in = &v->inst[i];

        if (in->state == POL_SMS_RELEASED) {
            continue;
        }
        live++;
        if (in->lost || (in->state != POL_SMS_WARM && in->state != POL_SMS_ACTIVE) ||
            (newest_only && in->gen != v->gen)) {
            continue;
        }
        room = in->used < size ? size - in->used : 0;
        if (room >= bytes && (!found || room < best_room)) {
            found = 1;
            best = i;
            best_room = room;
        }
    }
    if (found) {
        *idx = best;
        return 0;
    }
    if (v->can_open > 0 && (p->cfg.max_instances == 0 || live < p->cfg.max_instances)) {
        return POL_SMS_OPEN_NEW;
    }
    return -ENOSPC;
}

/* Whether v->inst[j] may take chunks merged out of v->inst[from]: not an
 * empty one (tick releases it; filling it would only swap the two). */
static int
pol_sms_merge_target(const struct pol_sms_view *v, size_t from, size_t j)
{
    const struct pol_sms_inst *in = &v->inst[j];

    return j != from && in->gen == v->inst[from].gen && in->state != POL_SMS_RELEASED &&
           !in->lost && in->used > 0;
}

static uint64_t
pol_sms_room(const struct pol_sms *p, const struct pol_sms_inst *in)
{
    return in->used < p->cfg.inst_bytes ? p->cfg.inst_bytes - in->used : 0;
}

/* O(n^2) in the node's instances of the pool: a handful per generation. */
int
pol_sms_merge_from(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                   size_t *from)
{
    size_t i, j, best = 0;
    int found = 0;

    (void)now_ns;
    if (pol_sms_check_view(v) != 0 || from == NULL) {
        return CM_E_BADARG;
    }
    for (i = 0; i < v->ninst; i++) {
        const struct pol_sms_inst *in = &v->inst[i];
        uint64_t room = 0;

        if (in->gen >= v->gen || in->state == POL_SMS_RELEASED || in->lost || in->used == 0 ||
            (found && in->used >= v->inst[best].used)) {
            continue;
        }
        for (j = 0; j < v->ninst && room < in->used; j++) {
            if (pol_sms_merge_target(v, i, j)) {
                room += pol_sms_room(p, &v->inst[j]);
            }
        }
        if (room >= in->used) {
            found = 1;
            best = i;
        }
    }
    if (found) {
        *from = best;
    }
    return found;
}

int
pol_sms_merge_to(const struct pol_sms *p, const struct pol_sms_view *v, size_t from, uint64_t bytes,
                 size_t *idx)
{
    uint64_t room, best_room = 0;
    size_t j, best = 0;
    int found = 0;

    if (pol_sms_check_view(v) != 0 || from >= v->ninst || idx == NULL) {
        return CM_E_BADARG;
    }
    for (j = 0; j < v->ninst; j++) {
        if (!pol_sms_merge_target(v, from, j)) {
            continue;
        }
        room = pol_sms_room(p, &v->inst[j]);
        if (room >= bytes && (!found || room < best_room)) {
            found = 1;
            best = j;
            best_room = room;
        }
    }
    if (!found) {
        return -ENOSPC;
    }
    *idx = best;
    return 0;
}

static uint64_t
pol_sms_warm_period(const struct pol_sms *p, enum pol_sms_state s)
{
    return s == POL_SMS_DEGRADED ? p->cfg.warm_degraded_ns : p->cfg.warm_active_ns;
}

void
pol_sms_finish(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
               uint64_t next_roll_ns, struct pol_sms_decision *d, struct pol_sms_tick *t)
{
    uint64_t period, next;
    size_t i;

    t->next_ns = next_roll_ns;
    for (i = 0; i < v->ninst; i++) {
        const struct pol_sms_inst *in = &v->inst[i];

        d[i].warm_up = 0;
        t->read_bytes += in->read_bytes;
        if (d[i].state == POL_SMS_RELEASED) {
            t->released += in->state != POL_SMS_RELEASED;
            continue;
        }
        t->instances++;
        t->working_set_bytes += in->used;
        if (d[i].state == POL_SMS_DEGRADED) {
            t->degraded++;
        } else {
            t->active++;
        }
        period = pol_sms_warm_period(p, d[i].state);
        if (now_ns >= in->warm_ns && now_ns - in->warm_ns >= period) {
            d[i].warm_up = 1;
            t->warm_ups++;
            next = now_ns + period;
        } else {
            next = in->warm_ns + period;
        }
        if (next < t->next_ns) {
            t->next_ns = next;
        }
    }
    t->memory_bytes = (uint64_t)t->instances * p->cfg.inst_bytes;
}
