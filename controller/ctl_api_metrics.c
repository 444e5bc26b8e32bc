/*
 * ctl_api_metrics.c - /healthz and /metrics: the controller's gauges
 * (tenants, nodes, epoch, fairness, per-tenant and per-node figures, all
 * from one snapshot) and its request stats, in the Prometheus text format.
 *
 * Threads: the cm_http threads.
 */
#include <math.h>
#include <stdio.h>

#include "cm_buf.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_state.h"

/* Gauges exposed on /metrics besides the request stats. */
#define CTL_METRICS(X)                                                                             \
    X(M_TENANTS, "shoal_controller_tenants", "Tenants defined")                                    \
    X(M_NODES, "shoal_controller_nodes", "Registered nodes by state")                              \
    X(M_EPOCH, "shoal_controller_epoch", "Current state epoch")                                    \
    X(M_PARTITIONS, "shoal_controller_partitions", "Partitions per tenant")                        \
    X(M_MMR, "shoal_controller_min_max_ratio",                                                     \
      "Min-max ratio of served/weight over active tenants (NaN if < 2)")                           \
    X(M_JAIN, "shoal_controller_jain_index",                                                       \
      "Jain's index of served/weight over active tenants (NaN if none)")                           \
    X(M_TWEIGHT, "shoal_tenant_weight", "Tenant weight")                                           \
    X(M_TREQ, "shoal_tenant_served_requests_per_second", "Requests/s served, over up nodes")       \
    X(M_TBYTES, "shoal_tenant_served_bytes_per_second", "Bytes/s served, over up nodes")           \
    X(M_TDEMAND, "shoal_tenant_demand_requests_per_second",                                        \
      "Demand: served requests/s plus requests queued")                                            \
    X(M_NUP, "shoal_node_up", "1 if the node was heard from within the timeout")                   \
    X(M_NLOAD, "shoal_node_load_requests_per_second", "Requests/s served by the node")             \
    X(M_NUSED, "shoal_node_used_bytes", "Bytes held by the node")                                  \
    X(M_NCAP, "shoal_node_capacity_bytes", "Node memory capacity")

enum ctl_metric {
#define CTL_M_ENUM_(e, n, h) e,
    CTL_METRICS(CTL_M_ENUM_)
#undef CTL_M_ENUM_
        M_COUNT
};

static const struct {
    const char *name, *help;
} metric_defs[M_COUNT] = {
#define CTL_M_DEF_(e, n, h) {n, h},
    CTL_METRICS(CTL_M_DEF_)
#undef CTL_M_DEF_
};

static void
metric_head(struct cm_buf *b, enum ctl_metric m)
{
    cm_prom_family(b, metric_defs[m].name, "gauge", metric_defs[m].help);
}

static void
render_metrics(struct ctl_api *a, const struct ctl_snapshot *s, struct cm_buf *b)
{
    struct ctl_api_fair f;
    char lb[64];
    uint64_t up = 0;

    ctl_api_fair_init(&f, s);
    for (size_t i = 0; i < s->nnodes; i++) {
        up += s->nodes[i].up != 0;
    }
    metric_head(b, M_TENANTS);
    cm_prom_u64(b, metric_defs[M_TENANTS].name, NULL, s->ntenants);
    metric_head(b, M_NODES);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"up\"", up);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"down\"", s->nnodes - up);
    metric_head(b, M_EPOCH);
    cm_prom_u64(b, metric_defs[M_EPOCH].name, NULL, s->epoch);
    metric_head(b, M_PARTITIONS);
    cm_prom_u64(b, metric_defs[M_PARTITIONS].name, NULL, s->partitions);
    metric_head(b, M_MMR);
    cm_prom_double(b, metric_defs[M_MMR].name, NULL, f.sum.mmr_valid ? f.sum.mmr : NAN);
    metric_head(b, M_JAIN);
    cm_prom_double(b, metric_defs[M_JAIN].name, NULL, f.sum.jain_valid ? f.sum.jain : NAN);
    for (int m = M_TWEIGHT; m <= M_TDEMAND; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->ntenants; i++) {
            const struct ctl_tenant_view *tv = &s->tenants[i];
            double v = m == M_TWEIGHT  ? tv->t.weight
                       : m == M_TREQ   ? tv->req_rate
                       : m == M_TBYTES ? tv->byte_rate
                                       : f.demand[i];

            snprintf(lb, sizeof(lb), "tenant=\"%u\"", tv->t.id);
            cm_prom_double(b, metric_defs[m].name, lb, v);
        }
    }
    for (int m = M_NUP; m <= M_NCAP; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->nnodes; i++) {
            const struct ctl_node_view *nv = &s->nodes[i];
            double v = m == M_NUP     ? nv->up
                       : m == M_NLOAD ? nv->load
                       : m == M_NUSED ? (double)nv->used_bytes
                                      : (double)nv->n.capacity_bytes;

            snprintf(lb, sizeof(lb), "node=\"%u\"", nv->n.id);
            cm_prom_double(b, metric_defs[m].name, lb, v);
        }
    }
    ctl_api_fair_fini(&f);
    cm_reqstats_expose(a->stats, "controller", b);
}

void
ctl_api_healthz(struct ctl_call *c)
{
    ctl_reply_raw(c, 200, "text/plain", cm_strdup("ok\n"), 3);
}

void
ctl_api_metrics(struct ctl_call *c)
{
    struct ctl_snapshot s;
    struct cm_buf b;
    size_t len;
    char *text;

    cm_buf_init(&b);
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    render_metrics(c->a, &s, &b);
    ctl_snapshot_fini(&s);
    text = cm_buf_take(&b, &len);
    if (text == NULL) {
        text = cm_strdup("");
        len = 0;
    }
    ctl_reply_raw(c, 200, "text/plain; version=0.0.4", text, len);
}
