/*
 * gw_front.h - the tenant-facing HTTP API of the gateway (private to
 * gateway/): routing, auth and the object handlers. It starts the
 * committer (gw_commit.c), which answers PUT and DELETE.
 *
 * Threads: the handlers run on cm_http threads; engine callbacks on the
 * engine thread; one committer thread owns every metadata write. See
 * gw_front.c for the pipeline.
 */
#ifndef GW_FRONT_H
#define GW_FRONT_H

#include <stdint.h>

#include "cm_http.h"
#include "gw_admit.h"
#include "gw_engine.h"

struct gw_meta;
struct gw_state;
struct gw_front;

struct gw_front_cfg {
    const char *self; /* this gateway's id (borrowed for the process) */
    uint64_t max_object_size;
    uint64_t small_threshold; /* smaller objects are stored as 1+m copies */
    int delete_delay_ms;      /* extra wait before deleting an old version's chunks */
    struct gw_admit_cfg admit; /* large GETs and PUTs into the engine (gw_admit.h) */
};

/* meta is borrowed and must outlive the front. Starts the committer. The
 * only allocations that end the process are the start-up's. */
int gw_front_create(const struct gw_front_cfg *cfg, struct gw_meta *meta, struct gw_front **out);
/* The engine's on_layout callback; arg is the front. */
void gw_front_on_layout(void *arg, const struct gw_layout *layout, enum gw_report what);
/* Wires the engine and state (borrowed) and hands every pending layout to
 * gw_engine_track. Before serving. */
void gw_front_attach(struct gw_front *f, struct gw_engine *e, struct gw_state *st);
/* Partition placement's parts (borrowed; may be NULL): demand counts
 * from every GET and PUT, both in /metrics. Before serving. */
struct gw_demand;
struct gw_migrate;
void gw_front_attach_pp(struct gw_front *f, struct gw_demand *d, struct gw_migrate *m);
/* The orphan scrub (borrowed; may be NULL), in /metrics. Before serving. */
struct gw_scrub;
void gw_front_attach_scrub(struct gw_front *f, struct gw_scrub *s);
/* Tenants moving to another gateway (borrowed; may be NULL): their
 * requests are refused while frozen, and their metadata is taken in at
 * POST /v1/internal/tenants/{id}/handover. Before serving. */
struct gw_handover;
void gw_front_attach_handover(struct gw_front *f, struct gw_handover *h);
/* The grace period every request served here is in (gw_handover.h). */
struct gw_grace *gw_front_served(struct gw_front *f);
/* The committer and the grace periods the front owns (borrowed). */
struct gw_commit *gw_front_committer(struct gw_front *f);
struct gw_grace *gw_front_grace(struct gw_front *f);
/* The cm_http handlers; their arg is the front. */
extern const struct cm_http_handlers gw_front_handlers;

/* Shutdown, in this order: cm_http_stop (requests already begun finish),
 * drain (anything still in flight; late arrivals get 503; waits up to
 * timeout_ms), quiesce (committer queue empty), gw_engine_destroy, destroy
 * (flushes late layout updates). */
void gw_front_drain(struct gw_front *f, int timeout_ms);
void gw_front_quiesce(struct gw_front *f);
void gw_front_destroy(struct gw_front *f); /* NULL is a no-op */

#endif
