/*
 * ctl_api_wa.c - weight allocation as the admin API and /metrics show it:
 * the policy, the local weight matrix (what the controller answers each
 * node's heartbeat with, "wa_weights"; what the nodes report applying
 * stays "local_weights") and the step stats.
 *
 * Threads: the cm_http threads; each call copies the matrix once
 * (ctl_wa_read) and renders the copy.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cm_buf.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_state.h"
#include "ctl_wa.h"

/* The WA families of the controller's /metrics: name, type, help. */
#define CTL_WA_METRICS(X)                                                                          \
    X(W_INFO, "shoal_controller_wa_info", "gauge",                                                 \
      "Weight allocation policy in use (label wa); always 1")                                      \
    X(W_STEPS, "shoal_controller_wa_steps_total", "counter",                                       \
      "Weight allocation steps run on the measurements (about one per --wa-interval-ms)")          \
    X(W_PROJ, "shoal_controller_wa_projections_total", "counter",                                  \
      "Local weights fitted at once to a tenant created, re-weighted or deleted")                  \
    X(W_FALLBACKS, "shoal_controller_wa_fallbacks_total", "counter",                               \
      "Steps that failed or broke an invariant, replaced by even local weights")                   \
    X(W_MOVED, "shoal_controller_wa_moved_weight_total", "counter",                                \
      "Local weight moved by the steps: per step, the sum of |change| over (tenant, node) / 2")    \
    X(W_CYCLES, "shoal_controller_wa_cycles_total", "counter",                                     \
      "Weight cycles the steps pushed (pisces)")                                                   \
    X(W_MISMATCH, "shoal_controller_wa_max_mismatch", "gauge",                                     \
      "Last step: largest |target - weight| / row of a tenant at an up node (pisces)")             \
    X(W_ERROR, "shoal_controller_wa_invariant_error", "gauge",                                     \
      "Largest relative error of a row or column sum of the local weights in force")               \
    X(W_SECONDS, "shoal_controller_wa_step_seconds", "gauge", "Run time of the last step")         \
    X(W_WEIGHT, "shoal_tenant_wa_weight", "gauge",                                                 \
      "Local weight the controller allocates the tenant at the node (its heartbeat answer)")

enum ctl_wa_metric {
#define CTL_WA_M_ENUM_(e, n, t, h) e,
    CTL_WA_METRICS(CTL_WA_M_ENUM_)
#undef CTL_WA_M_ENUM_
        W_COUNT
};

static const struct {
    const char *name, *type, *help;
} wa_defs[W_COUNT] = {
#define CTL_WA_M_DEF_(e, n, t, h) {n, t, h},
    CTL_WA_METRICS(CTL_WA_M_DEF_)
#undef CTL_WA_M_DEF_
};

/* {"<node id>": weight} of tenant tv at every node of s. */
static json_t *
wa_weights(const struct ctl_wa_matrix *m, const struct ctl_snapshot *s,
           const struct ctl_tenant_view *tv)
{
    json_t *j = json_object();
    char nb[16];

    for (size_t n = 0; n < s->nnodes; n++) {
        snprintf(nb, sizeof(nb), "%u", s->nodes[n].n.id);
        json_object_set_new(
            j, nb, json_real(ctl_wa_matrix_get(m, tv->t.id, s->nodes[n].n.id, tv->t.weight)));
    }
    return j;
}

void
ctl_api_wa_fairness(struct ctl_wa *wa, const struct ctl_snapshot *s, json_t *j)
{
    struct ctl_wa_matrix m;
    struct ctl_wa_stats st;
    json_t *tenants = json_object_get(j, "tenants");

    if (j == NULL) {
        return;
    }
    ctl_wa_read(wa, cm_now_ns(), &m, &st);
    for (size_t i = 0; i < s->ntenants && i < json_array_size(tenants); i++) {
        json_object_set_new(json_array_get(tenants, i), "wa_weights",
                            wa_weights(&m, s, &s->tenants[i]));
    }
    json_object_set_new(j, "wa", json_string(ctl_wa_policy(wa)));
    json_object_set_new(j, "wa_step",
                        json_pack("{s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:I, s:f, s:f, s:o}",
                                  "steps", (json_int_t)st.steps, "projections",
                                  (json_int_t)st.projections, "fallbacks", (json_int_t)st.fallbacks,
                                  "moved", st.last.moved, "cycles", (json_int_t)st.last.cycles,
                                  "max_mismatch", st.last.max_mismatch, "moved_total",
                                  st.moved_total, "cycles_total", (json_int_t)st.cycles_total,
                                  "seconds", st.last_seconds, "invariant_error", st.error, "age_ms",
                                  st.age_ms < 0 ? json_null() : json_integer(st.age_ms)));
    ctl_wa_matrix_fini(&m);
}

void
ctl_api_wa_tenant(struct ctl_wa *wa, const struct ctl_snapshot *s, const struct ctl_tenant_view *tv,
                  json_t *j)
{
    struct ctl_wa_matrix m;
    struct ctl_wa_stats st;

    if (j == NULL) {
        return;
    }
    ctl_wa_read(wa, cm_now_ns(), &m, &st);
    json_object_set_new(j, "wa_weights", wa_weights(&m, s, tv));
    ctl_wa_matrix_fini(&m);
}

static void
wa_head(struct cm_buf *b, enum ctl_wa_metric k)
{
    cm_prom_family(b, wa_defs[k].name, wa_defs[k].type, wa_defs[k].help);
}

void
ctl_api_wa_metrics(struct ctl_wa *wa, const struct ctl_snapshot *s, struct cm_buf *b)
{
    struct ctl_wa_matrix m;
    struct ctl_wa_stats st;
    char lb[64];

    ctl_wa_read(wa, cm_now_ns(), &m, &st);
    wa_head(b, W_INFO);
    snprintf(lb, sizeof(lb), "wa=\"%s\"", ctl_wa_policy(wa));
    cm_prom_u64(b, wa_defs[W_INFO].name, lb, 1);
    wa_head(b, W_STEPS);
    cm_prom_u64(b, wa_defs[W_STEPS].name, NULL, st.steps);
    wa_head(b, W_PROJ);
    cm_prom_u64(b, wa_defs[W_PROJ].name, NULL, st.projections);
    wa_head(b, W_FALLBACKS);
    cm_prom_u64(b, wa_defs[W_FALLBACKS].name, NULL, st.fallbacks);
    wa_head(b, W_MOVED);
    cm_prom_double(b, wa_defs[W_MOVED].name, NULL, st.moved_total);
    wa_head(b, W_CYCLES);
    cm_prom_u64(b, wa_defs[W_CYCLES].name, NULL, st.cycles_total);
    wa_head(b, W_MISMATCH);
    cm_prom_double(b, wa_defs[W_MISMATCH].name, NULL, st.last.max_mismatch);
    wa_head(b, W_ERROR);
    cm_prom_double(b, wa_defs[W_ERROR].name, NULL, st.error);
    wa_head(b, W_SECONDS);
    cm_prom_double(b, wa_defs[W_SECONDS].name, NULL, st.last_seconds);
    wa_head(b, W_WEIGHT);
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant_view *tv = &s->tenants[i];

        for (size_t n = 0; n < s->nnodes; n++) {
            snprintf(lb, sizeof(lb), "tenant=\"%u\",node=\"%u\"", tv->t.id, s->nodes[n].n.id);
            cm_prom_double(b, wa_defs[W_WEIGHT].name, lb,
                           ctl_wa_matrix_get(&m, tv->t.id, s->nodes[n].n.id, tv->t.weight));
        }
    }
    ctl_wa_matrix_fini(&m);
}
