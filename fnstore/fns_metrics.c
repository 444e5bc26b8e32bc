/*
 * fns_metrics.c - metrics exposition of a node; see fns_metrics.h.
 *
 * The node's own series are declared once in FNS_METRICS (name, type,
 * help, stats field), the per-tenant ones of the fair queue in
 * FNS_TENANT_METRICS (name, type, help, struct fns_node_tenant field) plus
 * the queue-wait histogram; request series come from cm_reqstats
 * ("fnstore"). Every series has the label node="<id>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_http.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "fns_metrics.h"
#include "fns_node.h"

#define FNS_METRICS(X)                                                                             \
    X(memory_used_bytes, "gauge", "Chunk bytes held in instance memory.", used_bytes)              \
    X(memory_capacity_bytes, "gauge", "Chunk memory capacity of the node.", capacity_bytes)        \
    X(chunks, "gauge", "Chunks held in instance memory.", chunks)                                  \
    X(cos_pending, "gauge", "COS jobs queued or running.", cos_pending)                            \
    X(cos_writes_total, "counter", "Chunks written to COS.", cos_writes_total)                     \
    X(cos_reloads_total, "counter", "Chunks reloaded from COS.", cos_reloads_total)                \
    X(cos_segments, "gauge", "COS segments holding this node's packed chunks.", cos_segments)      \
    X(cos_packed_chunks, "gauge", "Chunks persisted packed in COS segments.", cos_packed_chunks)   \
    X(cos_segments_held, "gauge",                                                                  \
      "Empty COS segments kept until the older segments their tombstones point into go.",          \
      cos_segments_held)                                                                           \
    X(bad_frames_total, "counter", "Connections closed on a malformed frame.", bad_frames_total)   \
    X(incarnation, "gauge", "Incarnation number of this node.", incarnation)                       \
    X(arena_held_bytes, "gauge", "Chunk arena segment bytes in use or kept warm.",                 \
      arena.held_bytes)                                                                            \
    X(arena_segments, "gauge", "Chunk arena segments holding chunks.", arena.slabs_in_use)         \
    X(arena_warm_segments, "gauge", "Empty chunk arena segments kept for reuse.",                  \
      arena.slabs_warm)                                                                            \
    X(arena_buffers, "gauge", "Chunk buffers live in the arena.", arena.live_buffers)              \
    X(arena_segment_reuses_total, "counter", "Arena segments reused after emptying.",              \
      arena.slabs_reused_total)                                                                    \
    X(arena_fallbacks_total, "counter", "Chunk buffers malloc'd: arena reservation full.",         \
      arena.fallbacks_total)                                                                       \
    X(cap_requests_per_second, "gauge", "Emulated request capacity (--cap-ops; 0 = none).",        \
      cap_ops)                                                                                     \
    X(cap_bytes_per_second, "gauge", "Emulated byte capacity (--cap-bytes; 0 = none).", cap_bytes) \
    X(queued_requests, "gauge", "Requests waiting in the fair queue.", queued)                     \
    X(dispatched_requests, "gauge",                                                                \
      "Requests dispatched and not yet answered (answers count until written).", dispatched)       \
    X(dispatched_bytes, "gauge", "Bytes of the requests dispatched and not yet answered.",         \
      dispatched_bytes)                                                                            \
    X(dispatch_limit_requests, "gauge",                                                            \
      "Bound on dispatched_requests (--max-dispatched; 0 = none).", max_dispatched)                \
    X(dispatch_limit_bytes, "gauge",                                                               \
      "Bound on dispatched_bytes (--max-dispatched-bytes; 0 = none).", max_dispatched_bytes)       \
    X(dispatch_pauses_total, "counter", "Times dispatch stopped at the bound with work queued.",   \
      dispatch_pauses_total)

/* Per tenant (label tenant="<id>"): the fair queue's view. */
#define FNS_TENANT_METRICS(X)                                                                      \
    X(tenant_queued_requests, "gauge", "Requests of the tenant waiting in the fair queue.",        \
      queued)                                                                                      \
    X(tenant_running_requests, "gauge", "Requests of the tenant dispatched, not yet completed.",   \
      running)                                                                                     \
    X(tenant_weight, "gauge", "Local weight of the tenant in the fair queue.", weight)             \
    X(tenant_arrived_requests_total, "counter",                                                    \
      "Requests of the tenant that reached the fair queue, refused ones included (its demand).",   \
      arrived_requests)                                                                            \
    X(tenant_arrived_bytes_total, "counter",                                                       \
      "Bytes of the arrived requests (a GET of unknown size: the tenant's GET-size estimate).",    \
      arrived_bytes)                                                                               \
    X(tenant_arrived_cost_seconds_total, "counter",                                                \
      "Dominant cost of the arrived requests, in seconds of node capacity.", arrived_cost)         \
    X(tenant_served_requests_total, "counter", "Requests of the tenant completed.", requests)      \
    X(tenant_served_bytes_total, "counter", "Bytes moved by the tenant's completed requests.",     \
      bytes)                                                                                       \
    X(tenant_served_cost_seconds_total, "counter",                                                 \
      "Dominant cost of the completed requests, in seconds of node capacity.", served_cost)        \
    X(tenant_dominant_share, "gauge",                                                              \
      "Served dominant cost per second of node capacity (EWMA over about 1 s).", share)

struct fns_metrics {
    struct cm_http_server *http;
    struct fns_node *node;
};

void
fns_metrics_expose(struct fns_node *node, struct cm_buf *out)
{
    struct fns_node_stats st;
    struct fns_node_tenant *t;
    size_t nt = fns_node_tenants(node, &t);
    char labels[32], tl[64], il[80];

    fns_node_stats(node, &st);
    snprintf(labels, sizeof(labels), "node=\"%u\"", st.id);
    snprintf(il, sizeof(il), "node=\"%u\",sched=\"%s\"", st.id, st.sched);
    cm_prom_family(out, "shoal_fnstore_info", "gauge", "Always 1; the labels name the scheduler.");
    cm_prom_u64(out, "shoal_fnstore_info", il, 1);
#define FNS_METRIC_EMIT_(name, type, help, field)                                                  \
    cm_prom_family(out, "shoal_fnstore_" #name, type, help);                                       \
    cm_prom_double(out, "shoal_fnstore_" #name, labels, (double)st.field);
    FNS_METRICS(FNS_METRIC_EMIT_)
#undef FNS_METRIC_EMIT_
#define FNS_TENANT_EMIT_(name, type, help, field)                                                  \
    cm_prom_family(out, "shoal_fnstore_" #name, type, help);                                       \
    for (size_t i = 0; i < nt; i++) {                                                              \
        snprintf(tl, sizeof(tl), "node=\"%u\",tenant=\"%u\"", st.id, t[i].tenant);                 \
        cm_prom_double(out, "shoal_fnstore_" #name, tl, (double)t[i].field);                       \
    }
    FNS_TENANT_METRICS(FNS_TENANT_EMIT_)
#undef FNS_TENANT_EMIT_
    cm_prom_family(out, "shoal_fnstore_tenant_queue_wait_seconds", "histogram",
                   "Time the tenant's requests waited in the fair queue.");
    for (size_t i = 0; i < nt; i++) {
        snprintf(tl, sizeof(tl), "node=\"%u\",tenant=\"%u\"", st.id, t[i].tenant);
        cm_prom_hist(out, "shoal_fnstore_tenant_queue_wait_seconds", tl, &t[i].qwait);
    }
    free(t);
    cm_reqstats_expose(fns_node_reqstats(node), "fnstore", out);
}

static void
fns_metrics_request(void *arg, struct cm_http_req *r)
{
    struct fns_metrics *m = arg;
    const char *path = cm_http_path(r);
    const char *method = cm_http_method(r);
    struct cm_buf b;
    size_t len;
    char *body;

    if (strcmp(path, "/metrics") != 0 && strcmp(path, "/healthz") != 0) {
        cm_http_respond(r, 404, "text/plain", "not found\n", 10, CM_HTTP_STATIC);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        cm_http_add_header(r, "Allow", "GET, HEAD");
        cm_http_respond(r, 405, "text/plain", "method not allowed\n", 19, CM_HTTP_STATIC);
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        cm_http_respond(r, 200, "text/plain", "ok", 2, CM_HTTP_STATIC);
        return;
    }
    cm_buf_init(&b);
    fns_metrics_expose(m->node, &b);
    body = cm_buf_take(&b, &len);
    cm_http_respond(r, 200, "text/plain; version=0.0.4", body, len, CM_HTTP_FREE);
}

static const struct cm_http_handlers fns_metrics_handlers = {
    .headers = NULL,
    .request = fns_metrics_request,
};

int
fns_metrics_start(const char *addr, struct fns_node *node, struct fns_metrics **out)
{
    struct fns_metrics *m = cm_calloc(1, sizeof(*m));
    struct cm_http_cfg cfg = {.addr = addr, .threads = 1, .max_body = 4096, .timeout_s = 30};
    int rc;

    *out = NULL;
    m->node = node;
    rc = cm_http_start(&cfg, &fns_metrics_handlers, m, &m->http);
    if (rc != 0) {
        CM_ERROR("cannot serve metrics addr=%s err=%s", addr, cm_errname(rc));
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void
fns_metrics_stop(struct fns_metrics *m)
{
    if (m == NULL) {
        return;
    }
    cm_http_stop(m->http, 1000);
    free(m);
}
