/*
 * gw_handover.h - moving a tenant's metadata to another gateway (private
 * to gateway/), both ends.
 *
 * The operator asks the controller (`shoalctl tenant move`); the state
 * then names the tenant's next owner (`moving_to`). The owner, here:
 *
 *   freeze: new requests of the tenant are answered 503 (Retry-After),
 *     those already in wait out a grace period (gw_grace)
 *   -> its pending versions persist (bounded: past it the move waits and
 *     the tenant thaws)
 *   -> its records leave the store for an outbox entry, in one commit
 *     (gw_meta_handover_out)
 *   -> the bundle goes to the next owner (POST /v1/internal/tenants/{id}/
 *     handover), which replaces what it held of the tenant by it
 *   -> the controller is told (POST /v1/internal/tenants/{id}/moved) and
 *     makes the next owner the owner
 *   -> once the state says so, the outbox entry goes; the tenant's
 *     requests are forwarded to its owner from then on.
 *
 * Every step after the commit is retried until it is done, after a
 * restart too (the outbox is in the store); the tenant stays frozen here
 * until then.
 *
 * Threads: one of its own for the owner's steps; gw_handover_frozen from
 * any thread; gw_handover_receive from the HTTP threads.
 */
#ifndef GW_HANDOVER_H
#define GW_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf;
struct gw_grace;
struct gw_meta;
struct gw_migrate;
struct gw_state;

struct gw_handover_cfg {
    const char *self;       /* this gateway's id; borrowed for the process */
    const char *controller; /* "host:port" or a URL; borrowed */
    const char *token_file; /* the admin token; borrowed; may be NULL */
    int timeout_ms;         /* of each request it sends */
    int drain_ms;           /* how long pending versions may take before the move waits */
};

struct gw_handover;

/* meta, state, migrate (may be NULL: its versions are where the rows
 * want them before they go) and requests (the grace every request of the
 * fronts is in while it is served here) are borrowed and outlive h. */
int gw_handover_create(const struct gw_handover_cfg *cfg, struct gw_meta *meta,
                       struct gw_state *state, struct gw_migrate *migrate,
                       struct gw_grace *requests, struct gw_handover **out);
int gw_handover_start(struct gw_handover *h);
void gw_handover_stop(struct gw_handover *h); /* idempotent; NULL is a no-op */
void gw_handover_destroy(struct gw_handover *h);

/* 1 when tenant's requests are to be refused here (503): its metadata is
 * on its way to another gateway. h may be NULL (0). */
int gw_handover_frozen(struct gw_handover *h, uint32_t tenant);

/*
 * A figure that changes whenever a tenant freezes or thaws here or a
 * bundle is taken in, and is odd while any tenant is frozen: the scrub
 * judges no chunk across a pass in which it was not the same even value
 * (which tenants are this gateway's, and which records it holds, moved
 * under it). h may be NULL (0).
 */
uint64_t gw_handover_moves(struct gw_handover *h);

/*
 * The next owner's end: a bundle for tenant (the id of the path) with the
 * Authorization header auth. The tenant is frozen here while it is taken
 * in, after the requests in have gone. Returns the HTTP status (204 taken;
 * 400 not a bundle of that tenant; 401 not the admin token; 409 this
 * gateway owns the tenant already: a bundle sent again must not overwrite
 * what it wrote since; 503 busy; 500 the store failed), with a one-line
 * reason in *why (static) when not 204. Blocks its HTTP thread for the
 * wait and the commit.
 */
int gw_handover_receive(struct gw_handover *h, uint32_t tenant, const char *auth, const void *body,
                        size_t len, const char **why);

void gw_handover_metrics(struct gw_handover *h, struct cm_buf *b);

#endif
