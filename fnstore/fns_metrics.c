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
#include "pol_sms.h"

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
      "Empty COS segments kept until the older segments their tombstones point into go, or "       \
      "while appended to.",                                                                        \
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
      dispatch_pauses_total)                                                                       \
    FNS_SMS_METRICS(X)

/* The SMS window, the cache space, recovery and the insertion log. */
#define FNS_SMS_METRICS(X)                                                                         \
    X(instance_size_bytes, "gauge", "Memory of one function instance (--instance-size).",          \
      sms.inst_bytes)                                                                              \
    X(instance_slots, "gauge", "Instance slots of the node (--capacity / --instance-size).",       \
      sms.slots)                                                                                   \
    X(memory_instance_bytes, "gauge", "Memory of the instances not released (count x size).",      \
      sms.memory_bytes)                                                                            \
    X(instances_lost, "gauge", "Instances whose memory was lost, being recovered from COS.",       \
      sms.lost)                                                                                    \
    X(instances_opened_total, "counter", "Instances opened in a free slot.", sms.opened)           \
    X(instances_released_total, "counter", "Instances released (their memory freed).",             \
      sms.released)                                                                                \
    X(instances_reclaimed_total, "counter",                                                        \
      "Instances reclaimed (--reclaim-rate, or the controller's reclaim order).", sms.reclaimed)   \
    X(warmups_total, "counter", "Warm-ups of instances the controller decided.", sms.warmups)      \
    X(sms_decisions_total, "counter", "Controller decisions applied to an instance.",              \
      sms.decisions)                                                                               \
    X(sms_heard, "gauge", "1 once the controller's sms configuration was heard (else static).",    \
      sms.heard)                                                                                   \
    X(stale_total, "counter",                                                                      \
      "GETs answered STALE: their instance was lost, the chunk not in "                            \
      "memory.",                                                                                   \
      sms.stale)                                                                                   \
    X(compactions_total, "counter", "Chunks read from an old generation and moved to the newest.", \
      sms.compactions)                                                                             \
    X(compaction_bytes_total, "counter", "Bytes of the compacted chunks.", sms.compaction_bytes)   \
    X(merges_total, "counter",                                                                     \
      "Old instances emptied into others of their generation and released.", sms.merges)           \
    X(merge_chunks_total, "counter", "Chunks those merges moved.", sms.merge_chunks)               \
    X(readmissions_total, "counter",                                                               \
      "Chunks read late (in no instance) and placed in the pool's current generation.",            \
      sms.readmissions)                                                                            \
    X(cache_bytes, "gauge", "Bytes in the cache space (apart from instance memory).",              \
      sms.cache_bytes)                                                                             \
    X(cache_budget_bytes, "gauge", "Budget of the cache space (--cache-bytes).", sms.cache_budget) \
    X(cache_chunks, "gauge", "Chunks in the cache space.", sms.cache_chunks)                       \
    X(cache_hits_total, "counter", "GETs served from the cache space alone.", sms.cache_hits)      \
    X(cache_inserts_total, "counter", "Chunks put in the cache space (late reads, hot copies).",   \
      sms.cache_inserts)                                                                           \
    X(cache_evictions_total, "counter",                                                            \
      "Chunks evicted from the cache space (least recently used).", sms.cache_evictions)           \
    X(recoveries_total, "counter", "Recoveries of lost instances started.", sms.recoveries)        \
    X(recovery_running, "gauge", "Recoveries of lost instances under way.", sms.recovery_running)  \
    X(recovery_helpers, "gauge", "Helper threads of a recovery (--recovery-helpers).",             \
      sms.recovery_helpers)                                                                        \
    X(recovery_chunks_total, "counter", "Chunks loaded from COS into recovered instances.",        \
      sms.recovery_chunks)                                                                         \
    X(recovery_bytes_total, "counter", "Bytes loaded from COS into recovered instances.",          \
      sms.recovery_bytes)                                                                          \
    X(recovery_seconds_total, "counter",                                                           \
      "Time recoveries took, summed (running ones so far): bytes / seconds is the recovery rate.", \
      sms.recovery_seconds)                                                                        \
    X(ilog_objects, "gauge", "Insertion log objects in COS.", sms.ilog_objects)                    \
    X(ilog_records, "gauge", "Records in the insertion log objects.", sms.ilog_records)            \
    X(ilog_live_records, "gauge", "Of those, the records a replay still needs.", sms.ilog_live)    \
    X(ilog_pending_records, "gauge", "Records not yet durable in the insertion log.",              \
      sms.ilog_pending)                                                                            \
    X(ilog_batches_total, "counter", "Insertion log batches written to COS.", sms.ilog_batches)    \
    X(ilog_bytes_total, "counter", "Bytes of insertion log batches written.", sms.ilog_bytes)      \
    X(ilog_deleted_total, "counter", "Insertion log objects deleted (every record dead).",         \
      sms.ilog_deleted)                                                                            \
    X(ilog_carried_total, "counter",                                                               \
      "Insertion log objects carried forward (live records "                                       \
      "appended again).",                                                                          \
      sms.ilog_carried)                                                                            \
    X(ilog_metas, "gauge", "Keys whose newest metadata record this node's log holds.", sms.metas)

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

/* Per tenant (label tenant="<id>"): the SMS cost counters heartbeats carry. */
#define FNS_COST_METRICS(X)                                                                        \
    X(tenant_warmups_total, "counter", "Warm-ups of the tenant's instances.", warmups)             \
    X(tenant_recoveries_total, "counter", "Recoveries of the tenant's lost instances.",            \
      recoveries)                                                                                  \
    X(tenant_cos_puts_total, "counter",                                                            \
      "COS writes of the tenant's chunks (a segment once per tenant in it).", cos_puts)            \
    X(tenant_cos_gets_total, "counter", "COS reads of the tenant's chunks (reloads, recoveries).", \
      cos_gets)                                                                                    \
    X(tenant_cos_deletes_total, "counter", "COS deletes of the tenant's chunk objects.",           \
      cos_deletes)                                                                                 \
    X(tenant_cos_put_bytes_total, "counter", "Bytes of the tenant's chunks written to COS.",       \
      cos_put_bytes)                                                                               \
    X(tenant_cos_get_bytes_total, "counter", "Bytes of the tenant's chunks read from COS.",        \
      cos_get_bytes)

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
    struct fns_node_cost *c;
    size_t nc = fns_node_costs(node, &c);
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
#define FNS_COST_EMIT_(name, type, help, field)                                                    \
    cm_prom_family(out, "shoal_fnstore_" #name, type, help);                                       \
    for (size_t i = 0; i < nc; i++) {                                                              \
        snprintf(tl, sizeof(tl), "node=\"%u\",tenant=\"%u\"", st.id, c[i].tenant);                 \
        cm_prom_double(out, "shoal_fnstore_" #name, tl, (double)c[i].field);                       \
    }
    FNS_COST_METRICS(FNS_COST_EMIT_)
#undef FNS_COST_EMIT_
    cm_prom_family(out, "shoal_fnstore_instances", "gauge",
                   "Instances not released, by SMS state (warm, active, degraded).");
    for (int s = POL_SMS_WARM; s < POL_SMS_RELEASED; s++) {
        snprintf(tl, sizeof(tl), "node=\"%u\",state=\"%s\"", st.id,
                 pol_sms_state_name((enum pol_sms_state)s));
        cm_prom_u64(out, "shoal_fnstore_instances", tl, st.sms.instances[s]);
    }
    snprintf(il, sizeof(il), "node=\"%u\",policy=\"%s\"", st.id, st.sms.policy);
    cm_prom_family(out, "shoal_fnstore_sms_info", "gauge",
                   "Always 1; the label names the SMS policy the node runs.");
    cm_prom_u64(out, "shoal_fnstore_sms_info", il, 1);
    free(c);
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
