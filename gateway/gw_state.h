/*
 * gw_state.h - the gateway's view of the cluster (private to gateway/):
 * tenants and their key hashes, their S3 access keys (per-day SigV4 date
 * keys, never secrets), EC profiles, placement rows, nodes.
 *
 *   controller ──GET /v1/internal/state (every poll_ms)──▶ state thread
 *        parse ─▶ new gw_snap ─▶ cache JSON in gw_meta ─▶ swap (mutex) ─▶
 *        gw_engine_set_nodes, purge objects of tenants that disappeared
 *
 * A request with a key the snapshot does not know may ask for one refresh
 * (gw_state_refresh) before it is refused, so a key works as soon as the
 * controller has created it.
 *
 * A snapshot is immutable and reference counted: a request takes one
 * (gw_state_snap) and keeps using it even if a newer one is swapped in.
 * At start the last cached state is loaded from gw_meta, so the gateway
 * serves with the controller down.
 *
 * Threads: gw_state_snap/gw_snap_* from any thread; create/start/destroy
 * from the main thread.
 */
#ifndef GW_STATE_H
#define GW_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_gateway.h"
#include "gw_engine.h"

struct gw_meta;

#define GW_ID_MAX CM_GATEWAY_ID_MAX         /* a gateway's id (--gateway-id) */
#define GW_URL_MAX (CM_GATEWAY_URL_MAX + 1) /* a buffer for a gateway's advertised URL */

struct gw_tenant {
    uint32_t id;
    char name[64];
    double weight;
    uint8_t k, m;
    const uint32_t *rows;    /* placement rows, concatenated (shared with the snapshot) */
    const uint32_t *row_off; /* partitions + 1 offsets into rows */
    /* partitions entries: the placement epoch of each row's last change
     * (0 when the controller sends none; shared with the snapshot) */
    const uint64_t *row_epoch;
    /* The gateway that owns the tenant (its metadata is there); "" when
     * none does yet */
    char owner[GW_ID_MAX + 1];
    /* The gateway the controller asked the owner to hand the tenant over
     * to (gw_handover.h); "" when none */
    char moving_to[GW_ID_MAX + 1];
};

/* A gateway, as the controller knows it. */
struct gw_peer {
    char id[GW_ID_MAX + 1];
    char url[GW_URL_MAX];    /* its tenant API, "http://host:port" */
    char s3_url[GW_URL_MAX]; /* its S3 API; "" when it has none */
    int up;                  /* heard from by the controller lately */
};

struct gw_snap_hash;
struct gw_snap_s3key;

struct gw_snap {
    atomic_int refs;
    uint64_t epoch;
    uint64_t placement_epoch; /* grows when rows change (0: not sent) */
    uint32_t partitions;
    struct gw_tenant *tenants; /* sorted by id */
    size_t ntenants;
    struct gw_snap_hash *hashes; /* sorted by key hash */
    size_t nhashes;
    struct gw_snap_s3key *s3keys; /* sorted by access key id */
    size_t ns3keys;
    struct gw_node *nodes;
    size_t nnodes;
    struct gw_peer *peers; /* every gateway, sorted by id */
    size_t npeers;
    uint32_t max_tenant; /* the largest tenant id listed (0: none) */
    uint32_t *rows_mem, *off_mem;
    uint64_t *row_epoch_mem;
};

/* Parses a /v1/internal/state answer into a new snapshot (refs = 1).
 * 0, or CM_E_PROTO with a static reason in *why. */
int gw_snap_parse(const char *json, size_t len, struct gw_snap **out, const char **why);
/* An empty snapshot (no tenants, no nodes, one partition). */
struct gw_snap *gw_snap_empty(void);
void gw_snap_ref(struct gw_snap *s);
void gw_snap_unref(struct gw_snap *s); /* NULL is a no-op */
/* The tenant owning bearer token tok[len] (hashed with SHA-256), or NULL.
 * Borrowed from s. */
const struct gw_tenant *gw_snap_auth(const struct gw_snap *s, const char *tok, size_t len);
const struct gw_tenant *gw_snap_tenant(const struct gw_snap *s, uint32_t id);
/*
 * S3 access key akid: its date key for date ("YYYYMMDD") copied into
 * kdate, and the tenant it acts for (borrowed from s): 0; CM_E_NOTFOUND
 * for an unknown key; -ERANGE when the key has no date key for that date.
 */
int gw_snap_s3_date_key(const struct gw_snap *s, const char *akid, const char *date,
                        uint8_t kdate[32], const struct gw_tenant **t);
/*
 * Where tenant t's requests are served, seen from the gateway whose id is
 * self: GW_HOME_HERE when self owns t or nobody does yet; GW_HOME_PEER at
 * *peer (borrowed from s), another gateway; GW_HOME_NONE when t's owner is
 * a gateway the controller has no address of.
 */
enum gw_home { GW_HOME_HERE, GW_HOME_PEER, GW_HOME_NONE };
enum gw_home gw_snap_home(const struct gw_snap *s, const struct gw_tenant *t, const char *self,
                          const struct gw_peer **peer);
/*
 * 1 when the chunks of tenant id are this gateway's to collect (the
 * scrub): self owns the tenant; or the tenant is not listed and either
 * self is the only gateway listed (or none is) or the id is below the
 * largest listed (a deleted tenant). A tenant newer than s may be another
 * gateway's.
 */
int gw_snap_collects(const struct gw_snap *s, uint32_t id, const char *self);
/* Partition p's preferred nodes (borrowed from s). */
void gw_snap_row(const struct gw_snap *s, const struct gw_tenant *t, uint32_t p,
                 const uint32_t **row, size_t *n);

struct gw_state_cfg {
    const char *controller; /* "host:port" or a URL; borrowed for the process */
    /* This gateway: its id and advertised URLs, sent with every poll (the
     * controller registers it and gives it tenants to own); borrowed for
     * the process. s3_url may be NULL. */
    const char *self, *url, *s3_url;
    const char *token_file; /* admin token (may be NULL); re-read until found */
    int poll_ms;
    int timeout_ms;
};

struct gw_state;

/* Loads the cached state from meta (if any) and hands its nodes to the
 * engine. meta and engine are borrowed and must outlive the state. */
int gw_state_create(const struct gw_state_cfg *cfg, struct gw_meta *meta, struct gw_engine *e,
                    struct gw_state **out);
int gw_state_start(struct gw_state *st);
/* Stops the thread (idempotent); snapshots stay readable until destroy. */
void gw_state_stop(struct gw_state *st);
void gw_state_destroy(struct gw_state *st); /* stops the thread; NULL is a no-op */
/* The current snapshot, with a reference (shared; gw_snap_unref it). */
struct gw_snap *gw_state_snap(struct gw_state *st);

/* A request waiting for a refresh (caller's storage). */
struct gw_state_wait {
    void (*fn)(struct gw_state_wait *w); /* on the state thread */
    struct gw_state_wait *next;          /* the state's */
};
/*
 * Any thread. 0: w->fn runs once a poll that began after this call has
 * ended (polls asked this way start at least 200 ms apart and wait at most
 * 500 ms for the controller), or at stop; w is borrowed until then. w->fn
 * may run before this call returns. -EAGAIN: no refresh to be had (the
 * last poll failed and none succeeded since, or polling is stopped):
 * answer at once.
 */
int gw_state_refresh(struct gw_state *st, struct gw_state_wait *w);
/* Polls every 50 ms for the next ms (a change is expected soon: a tenant's
 * owner, after a hand-over), then every poll_ms again. Any thread. */
void gw_state_hurry(struct gw_state *st, int ms);

/* The URL of path (e.g. "/v1/internal/state") at controller ("host:port"
 * or a URL) into url[cap]. */
void gw_controller_url(const char *controller, const char *path, char *url, size_t cap);

struct gw_state_stats {
    uint64_t epoch;
    uint64_t polls_ok, polls_failed;
    uint64_t refreshes; /* polls that requests with an unknown key waited for */
    uint64_t tenants_purged, objects_purged;
    int controller_up;
};
void gw_state_stats(struct gw_state *st, struct gw_state_stats *out);

#endif
