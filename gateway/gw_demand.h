/*
 * gw_demand.h - what tenants ask of each partition, reported to the
 * controller for partition placement (private to gateway/).
 *
 *   HTTP and engine threads ──gw_demand_note──▶ counts per (tenant,
 *        partition), one mutex
 *   reporter thread, every period: counts ─▶ rates (EWMA) ─▶ POST
 *        /v1/internal/demand {gateway, demand, migrate} ─▶ controller
 *
 * A request's demand is what it asks of the nodes: chunk requests and
 * bytes (a GET of a 4+2 stripe is 4 chunk GETs; a PUT of one stripe 6
 * chunk PUTs). Requests are counted when answered, with their latency:
 * the latencies summed over a period, divided by it, are the mean number
 * of requests in flight (Little's law), which the controller reads as
 * demand the nodes did not serve yet (a closed-loop client on saturated
 * nodes asks for more than it is served). Each report also carries the bytes each partition holds
 * on each holder and the migration's progress (gw_migrate.h). A failed POST is not retried: the
 * next period's report replaces it.
 *
 * Threads: gw_demand_note from any thread; create/start/destroy from main.
 */
#ifndef GW_DEMAND_H
#define GW_DEMAND_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf;
struct gw_demand;
struct gw_migrate;
struct gw_state;

struct gw_demand_cfg {
    const char *controller; /* "host:port" or a URL; borrowed for the process */
    const char *token_file; /* admin token (may be NULL); re-read until found */
    const char *name;       /* this gateway's name in reports (copied) */
    int period_ms;          /* between reports (1000) */
    int timeout_ms;
};

/* state (partition count) and mig (progress, resident bytes; may be NULL)
 * borrowed, must outlive the reporter. */
int gw_demand_create(const struct gw_demand_cfg *cfg, struct gw_state *state,
                     struct gw_migrate *mig, struct gw_demand **out);
int gw_demand_start(struct gw_demand *d);
void gw_demand_destroy(struct gw_demand *d); /* stops the thread; NULL is a no-op */

/* One answered request of tenant for key[klen]: reqs chunk requests,
 * bytes bytes, latency_ns from its arrival to its answer. */
void gw_demand_note(struct gw_demand *d, uint32_t tenant, const char *key, size_t klen,
                    uint64_t reqs, uint64_t bytes, uint64_t latency_ns);

/* The (tenant, partition) of a key, as the gateway and controller have it. */
uint32_t gw_demand_partition(const char *key, size_t klen, uint32_t tenant, uint32_t partitions);

/* Appends the reporter's Prometheus families to out (any thread). */
void gw_demand_metrics(struct gw_demand *d, struct cm_buf *out);

#endif
