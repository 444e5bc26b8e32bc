/*
 * fns_metrics.h - the node's metrics HTTP server (cm_http): GET /metrics
 * (Prometheus text 0.0.4) and GET /healthz. Runs on cm_http's threads and
 * reads the node only through its thread-safe calls.
 */
#ifndef FNS_METRICS_H
#define FNS_METRICS_H

#include "cm_buf.h"

struct fns_node;
struct fns_metrics;

/* addr borrowed for the call; node borrowed until destroy. */
int fns_metrics_start(const char *addr, struct fns_node *node, struct fns_metrics **out);
void fns_metrics_stop(struct fns_metrics *m); /* NULL is a no-op */
/* Appends the whole exposition to out (for tests too). */
void fns_metrics_expose(struct fns_node *node, struct cm_buf *out);

#endif
