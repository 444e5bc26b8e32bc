/*
 * cm_metrics.h - Prometheus text exposition (format 0.0.4) and the
 * per-tenant request statistics every process keeps.
 *
 * Naming: shoal_ prefix, base units (_seconds, _bytes), counters end in
 * _total, histograms not summaries, labels from a bounded set
 * (tenant, op, code, node). Tenant label values are tenant ids.
 */
#ifndef CM_METRICS_H
#define CM_METRICS_H

#include <stdint.h>

#include "cm_buf.h"

/* Latency buckets in seconds, shared by every histogram. */
#define CM_HIST_BUCKETS(X) \
    X(0.0001) X(0.00025) X(0.0005) X(0.001) X(0.0025) X(0.005) X(0.01) \
    X(0.025) X(0.05) X(0.1) X(0.25) X(0.5) X(1) X(2.5) X(5) X(10)
#define CM_HIST_NB 16

struct cm_hist {
    uint64_t bucket[CM_HIST_NB]; /* non-cumulative; +Inf = count */
    uint64_t count;
    uint64_t sum_ns;
};

/* Not thread-safe on its own: callers lock or keep one per thread. */
void cm_hist_observe(struct cm_hist *h, uint64_t ns);
void cm_hist_merge(struct cm_hist *into, const struct cm_hist *from);

/* "# HELP name help\n# TYPE name type\n" */
void cm_prom_family(struct cm_buf *b, const char *name, const char *type, const char *help);
/* labels: 'tenant="3",op="get"' or NULL/"" for none. */
void cm_prom_u64(struct cm_buf *b, const char *name, const char *labels, uint64_t v);
void cm_prom_double(struct cm_buf *b, const char *name, const char *labels, double v);
/* Emits name_bucket{...,le=}, name_sum, name_count for one label set. */
void cm_prom_hist(struct cm_buf *b, const char *name, const char *labels,
                  const struct cm_hist *h);

/*
 * Per-tenant request stats: counters by (tenant, op, code), bytes by
 * (tenant, op), a latency histogram by (tenant, op). Thread-safe (one
 * mutex; a record is a few adds). ops: a fixed list of op names given at
 * creation (borrowed for the process lifetime), indexed by op.
 */
struct cm_reqstats;
struct cm_reqstats *cm_reqstats_create(const char *const *ops, int nops);
void cm_reqstats_destroy(struct cm_reqstats *rs);
void cm_reqstats_record(struct cm_reqstats *rs, uint32_t tenant, int op, int code,
                        uint64_t bytes, uint64_t ns);
/*
 * Writes, for prefix "gateway":
 *   shoal_gateway_requests_total{tenant,op,code}
 *   shoal_gateway_bytes_total{tenant,op}
 *   shoal_gateway_request_duration_seconds{tenant,op} (histogram)
 */
void cm_reqstats_expose(struct cm_reqstats *rs, const char *prefix, struct cm_buf *out);
/* Per-tenant totals over every op and code (for controller reports):
 * calls cb once per tenant seen. */
void cm_reqstats_tenants(struct cm_reqstats *rs,
                         void (*cb)(void *arg, uint32_t tenant, uint64_t requests,
                                    uint64_t bytes),
                         void *arg);

#endif
