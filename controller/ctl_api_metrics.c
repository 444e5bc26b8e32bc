/*
 * ctl_api_metrics.c - /healthz and /metrics: the controller's gauges
 * (tenants, nodes, gateways, epoch, fairness, per-tenant and per-node
 * figures, all from one snapshot), weight allocation's (ctl_api_wa.c) and
 * its request stats, in the Prometheus text format.
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

/* Gauges exposed on /metrics besides the request stats: the controller's
 * own, then per tenant (label tenant), then per node (label node). Dominant
 * figures are in nodes' worth of capacity (ctl_fair.h). */
#define CTL_METRICS(X)                                                                             \
    X(M_TENANTS, "shoal_controller_tenants", "Tenants defined")                                    \
    X(M_NODES, "shoal_controller_nodes", "Registered nodes by state (removed: for good)")          \
    X(M_DRAINING, "shoal_controller_nodes_draining",                                               \
      "Nodes being removed: their chunks move to the others (node remove)")                        \
    X(M_GATEWAYS, "shoal_controller_gateways",                                                     \
      "Gateways that polled the state since the controller started, by state (up: within 5 s)")    \
    X(M_EPOCH, "shoal_controller_epoch", "Current state epoch")                                    \
    X(M_PARTITIONS, "shoal_controller_partitions", "Partitions per tenant")                        \
    X(M_MMR, "shoal_controller_min_max_ratio",                                                     \
      "Min-max ratio of dominant share per weight over the tenants whose demand reaches their "    \
      "fair share (NaN if fewer than 2)")                                                          \
    X(M_JAIN, "shoal_controller_jain_index",                                                       \
      "Jain's index of dominant share per weight over the same tenants (NaN if none)")             \
    X(M_COUNTED, "shoal_controller_fair_tenants",                                                  \
      "Tenants whose demand reaches their fair share (those the ratio and index count)")           \
    X(M_CAPACITY, "shoal_controller_dominant_capacity",                                            \
      "Capacity the fair shares divide: up nodes, 1 each with a cap, else what each served")       \
    X(M_LEVEL, "shoal_controller_fair_share_level",                                                \
      "Fair share per unit of weight of the tenants held to it")                                   \
    X(M_TWEIGHT, "shoal_tenant_weight", "Tenant weight")                                           \
    X(M_TREQ, "shoal_tenant_served_requests_per_second", "Requests/s served, over up nodes")       \
    X(M_TBYTES, "shoal_tenant_served_bytes_per_second", "Bytes/s served, over up nodes")           \
    X(M_TDEMAND, "shoal_tenant_demand_requests_per_second",                                        \
      "Requests/s arriving at the nodes' fair queues, refused ones included")                      \
    X(M_TDEMANDB, "shoal_tenant_demand_bytes_per_second", "Bytes/s of the arriving requests")      \
    X(M_TDDEMAND, "shoal_tenant_dominant_demand",                                                  \
      "Dominant cost arriving per second, in nodes' worth of capacity")                            \
    X(M_TFAIR, "shoal_tenant_fair_share",                                                          \
      "Fair share of the capacity by weighted max-min over the demands")                           \
    X(M_TSHARE, "shoal_tenant_dominant_share",                                                     \
      "Dominant cost served per second, in nodes' worth of capacity")                              \
    X(M_TREACHED, "shoal_tenant_fair_share_reached",                                               \
      "1 if the demand reaches the fair share (the tenant counts in the ratio), else 0")           \
    X(M_TQUEUED, "shoal_tenant_queued_requests", "Requests waiting in the nodes' fair queues")     \
    X(M_TWAIT, "shoal_tenant_queue_wait_seconds",                                                  \
      "Mean time in the nodes' fair queues over the last reports")                                 \
    X(M_TLOCAL, "shoal_tenant_local_weight",                                                       \
      "Local weight an up node applies to the tenant in its fair queue, as its last heartbeat "    \
      "reported (shoal_tenant_wa_weight is what the controller allocates)")                        \
    X(M_NUP, "shoal_node_up", "1 if the node was heard from within the timeout")                   \
    X(M_NLOAD, "shoal_node_load_requests_per_second", "Requests/s served by the node")             \
    X(M_NUSED, "shoal_node_used_bytes", "Bytes held by the node")                                  \
    X(M_NCAP, "shoal_node_capacity_bytes", "Node memory capacity")                                 \
    X(M_NDLOAD, "shoal_node_dominant_load",                                                        \
      "Dominant cost served per second, in this node's capacity")                                  \
    X(M_NDCAP, "shoal_node_dominant_capacity",                                                     \
      "The node's part of shoal_controller_dominant_capacity")                                     \
    X(M_NINFO, "shoal_node_info", "Always 1; the labels name the node's scheduler")

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

static double
tenant_value(enum ctl_metric m, const struct ctl_snapshot *s, const struct ctl_api_fair *f,
             size_t i)
{
    const struct ctl_tenant_view *tv = &s->tenants[i];

    switch (m) {
    case M_TWEIGHT:
        return tv->t.weight;
    case M_TREQ:
        return tv->req_rate;
    case M_TBYTES:
        return tv->byte_rate;
    case M_TDEMAND:
        return tv->arr_req_rate;
    case M_TDEMANDB:
        return tv->arr_byte_rate;
    case M_TDDEMAND:
        return tv->demand;
    case M_TFAIR:
        return f->alloc[i];
    case M_TSHARE:
        return tv->share;
    case M_TREACHED:
        return f->counted[i];
    case M_TQUEUED:
        return tv->queued;
    default:
        return tv->queue_wait;
    }
}

static double
node_value(enum ctl_metric m, const struct ctl_node_view *nv)
{
    switch (m) {
    case M_NUP:
        return nv->up;
    case M_NLOAD:
        return nv->load;
    case M_NUSED:
        return (double)nv->used_bytes;
    case M_NCAP:
        return (double)nv->n.capacity_bytes;
    case M_NDLOAD:
        return nv->share_load;
    default:
        return nv->capacity;
    }
}

static void
render_metrics(struct ctl_api *a, const struct ctl_snapshot *s, struct cm_buf *b)
{
    struct ctl_api_fair f;
    char lb[64];
    uint64_t up = 0, gw_up = 0, n[3] = {0};

    ctl_api_fair_init(&f, s);
    for (size_t i = 0; i < s->nnodes; i++) {
        n[s->nodes[i].n.retire]++;
        up += s->nodes[i].n.retire != CTL_NODE_REMOVED && s->nodes[i].up;
    }
    for (size_t i = 0; i < s->ngateways; i++) {
        gw_up += s->gateways[i].up != 0;
    }
    metric_head(b, M_TENANTS);
    cm_prom_u64(b, metric_defs[M_TENANTS].name, NULL, s->ntenants);
    metric_head(b, M_NODES);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"up\"", up);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"down\"",
                s->nnodes - n[CTL_NODE_REMOVED] - up);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"removed\"", n[CTL_NODE_REMOVED]);
    metric_head(b, M_DRAINING);
    cm_prom_u64(b, metric_defs[M_DRAINING].name, NULL, n[CTL_NODE_DRAINING]);
    metric_head(b, M_GATEWAYS);
    cm_prom_u64(b, metric_defs[M_GATEWAYS].name, "state=\"up\"", gw_up);
    cm_prom_u64(b, metric_defs[M_GATEWAYS].name, "state=\"down\"", s->ngateways - gw_up);
    metric_head(b, M_EPOCH);
    cm_prom_u64(b, metric_defs[M_EPOCH].name, NULL, s->epoch);
    metric_head(b, M_PARTITIONS);
    cm_prom_u64(b, metric_defs[M_PARTITIONS].name, NULL, s->partitions);
    metric_head(b, M_MMR);
    cm_prom_double(b, metric_defs[M_MMR].name, NULL, f.sum.mmr_valid ? f.sum.mmr : NAN);
    metric_head(b, M_JAIN);
    cm_prom_double(b, metric_defs[M_JAIN].name, NULL, f.sum.jain_valid ? f.sum.jain : NAN);
    metric_head(b, M_COUNTED);
    cm_prom_u64(b, metric_defs[M_COUNTED].name, NULL, f.sum.counted);
    metric_head(b, M_CAPACITY);
    cm_prom_double(b, metric_defs[M_CAPACITY].name, NULL, s->capacity);
    metric_head(b, M_LEVEL);
    cm_prom_double(b, metric_defs[M_LEVEL].name, NULL, f.sum.level);
    for (int m = M_TWEIGHT; m <= M_TWAIT; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->ntenants; i++) {
            snprintf(lb, sizeof(lb), "tenant=\"%u\"", s->tenants[i].t.id);
            cm_prom_double(b, metric_defs[m].name, lb, tenant_value((enum ctl_metric)m, s, &f, i));
        }
    }
    metric_head(b, M_TLOCAL);
    for (size_t k = 0; k < s->nlocal; k++) {
        snprintf(lb, sizeof(lb), "tenant=\"%u\",node=\"%u\"", s->local[k].tenant, s->local[k].node);
        cm_prom_double(b, metric_defs[M_TLOCAL].name, lb, s->local[k].weight);
    }
    ctl_api_wa_metrics(a->wa, s, b);
    for (int m = M_NUP; m <= M_NDCAP; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->nnodes; i++) {
            snprintf(lb, sizeof(lb), "node=\"%u\"", s->nodes[i].n.id);
            cm_prom_double(b, metric_defs[m].name, lb,
                           node_value((enum ctl_metric)m, &s->nodes[i]));
        }
    }
    metric_head(b, M_NINFO);
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].sched[0] != '\0') {
            snprintf(lb, sizeof(lb), "node=\"%u\",sched=\"%s\"", s->nodes[i].n.id,
                     s->nodes[i].sched);
            cm_prom_u64(b, metric_defs[M_NINFO].name, lb, 1);
        }
    }
    ctl_api_fair_fini(&f);
    ctl_pool_metrics(a, s, b);
    ctl_placement_metrics(a, b);
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
