/*
 * ctl_state.h - the controller's live state: tenants, nodes, epoch and the
 * served rates derived from node heartbeats (private to controller/).
 *
 *   HTTP threads ──admin writes──▶ ctl_state ──synced txn──▶ ctl_store (LMDB)
 *   HTTP threads ──heartbeats───▶    (one mutex)
 *   main thread ──tick (liveness)─▶
 *   HTTP threads ◀──snapshot (a copy; rendered outside the lock)
 *
 * Invariants: memory and disk change together under the mutex, disk first
 * (a failed write leaves memory untouched); the epoch only grows, and
 * every change that a gateway or node would act on (tenant set, weight,
 * key, owner, node set or address, node up/down, gateway set or URLs)
 * bumps it; tenant ids are never reused; tenant names are unique; a
 * tenant's owning gateway, once set, changes only when the owner reports
 * it has handed the tenant's metadata to another gateway (an admin asks
 * for that move first, ctl_state_tenant_move). Liveness, rates and the
 * gateway registry live in memory only: after a restart every node is
 * down until it is heard from again, and no gateway is known until it polls.
 *
 * Threads: every function may be called from any thread. Time is passed
 * in (monotonic ns for liveness and rates, wall ms for creation stamps).
 */
#ifndef CTL_STATE_H
#define CTL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_model.h"

struct ctl_state;
struct ctl_store;
struct ctl_s3master;
struct ctl_s3set;

struct ctl_state_cfg {
    uint32_t partitions;
    int ec_k, ec_m;           /* default EC profile of new tenants */
    uint64_t node_timeout_ns; /* not heard from for longer: down */
    /* Seals tenants' S3 secrets (ctl_s3keys.h); copied. NULL: no S3 keys. */
    const struct ctl_s3master *s3_master;
};

/* One node's heartbeat, parsed. tenants borrowed for the call. Costs are
 * dominant costs in seconds of the reporting node's capacity. */
struct ctl_hb_tenant {
    uint32_t id;
    uint64_t requests, bytes; /* served, cumulative since the node started */
    uint64_t queued;          /* waiting now */
    uint64_t arrived_requests, arrived_bytes; /* cumulative (older nodes: = served) */
    double arrived_cost, served_cost;         /* cumulative (older nodes: 0) */
    double queue_wait_s;                      /* summed queue waits, cumulative */
    uint64_t queue_waits;                     /* their count */
    double weight;                            /* local weight; 0: not reported */
};

#define CTL_SCHED_MAX 16

struct ctl_hb {
    struct ctl_node node;
    uint64_t used_bytes, instances;
    char sched[CTL_SCHED_MAX]; /* FQ scheduler; "" if not reported */
    double cap_ops, cap_bytes; /* emulated capacity; 0 = none */
    size_t ntenants;
    const struct ctl_hb_tenant *tenants;
};

/* Rates are per second, summed over up nodes; "dominant" figures are in
 * nodes' worth of capacity (ctl_fair.h). */
struct ctl_tenant_view {
    struct ctl_tenant t;
    double req_rate;     /* served requests/s */
    double byte_rate;    /* served bytes/s */
    double queued;       /* requests waiting */
    double arr_req_rate; /* arriving requests/s (the demand in requests) */
    double arr_byte_rate;
    double demand;     /* arriving dominant cost per second */
    double share;      /* served dominant cost per second: the dominant share */
    double queue_wait; /* mean queue wait of the last reports, seconds (0: none) */
};

struct ctl_node_view {
    struct ctl_node n;
    int up;
    uint64_t used_bytes, instances;
    double load;         /* served requests/s over all tenants */
    double byte_load;    /* served bytes/s */
    double share_load;   /* served dominant cost per second over all tenants */
    double capacity;     /* in dominant cost per second: 1 with caps, else share_load */
    char sched[CTL_SCHED_MAX];
    double cap_ops, cap_bytes;
    int64_t seen_ms_ago; /* -1: not heard from since the controller started */
};

/* A gateway that polled the state (the registry is memory only). */
#define CTL_GW_UP_NS (5000ull * 1000000ull) /* heard from within: up */
#define CTL_GW_REGISTRY_MAX 1024            /* gateways remembered */

struct ctl_gateway_view {
    char id[CTL_GW_ID_MAX + 1];
    char url[CTL_GW_URL_MAX + 1];
    char s3_url[CTL_GW_URL_MAX + 1]; /* "": the gateway has no S3 API */
    int up;                          /* heard from within CTL_GW_UP_NS */
    int64_t seen_ms_ago;
    size_t tenants; /* tenants it owns */
};

/* A tenant's local weight as an up node last reported it. */
struct ctl_local_weight {
    uint32_t node, tenant;
    double weight;
};

/* A consistent copy of the state; arrays owned by the struct. */
struct ctl_snapshot {
    uint64_t epoch;
    uint32_t partitions;
    size_t ntenants;
    struct ctl_tenant_view *tenants; /* id order */
    size_t nnodes;
    struct ctl_node_view *nodes; /* id order */
    size_t nlocal;
    struct ctl_local_weight *local; /* node, then tenant order; live tenants only */
    double capacity;                /* sum of the up nodes' capacities */
    size_t ngateways;
    struct ctl_gateway_view *gateways; /* every gateway heard from since start, id order */
};

/* One (node, tenant) record of an up node, for weight allocation
 * (ctl_wa.h). Rates per second (EWMAs over the last reports); costs in
 * seconds of that node's capacity. */
struct ctl_cell {
    uint32_t node, tenant;
    double demand; /* arriving dominant cost per second */
    double served; /* served dominant cost per second */
    double wait;   /* mean queue wait of the last reports, s (0: none) */
};

/* store is borrowed and must outlive the state. Loads it and bumps the
 * epoch once (liveness was reset). */
int ctl_state_create(struct ctl_store *store, const struct ctl_state_cfg *cfg,
                     struct ctl_state **out);
void ctl_state_destroy(struct ctl_state *st); /* NULL is a no-op */

/*
 * Tenant changes. name is borrowed and must already be valid
 * (ctl_valid_name); weight valid (ctl_valid_weight). key receives the new
 * plain key (CTL_KEY_LEN + 1 bytes), shown once and never stored. out, if
 * not NULL, receives the tenant as stored. Errors: CM_E_EXISTS (name
 * taken), CM_E_NOTFOUND, or a store error (nothing changed).
 * ec_k <= 0 / ec_m < 0: the configured default. A new tenant gets its
 * owning gateway in the same write when one is up at now_ns (monotonic),
 * chosen as ctl_state_gateway_poll chooses; otherwise it is unassigned.
 */
int ctl_state_tenant_create(struct ctl_state *st, const char *name, double weight, int ec_k,
                            int ec_m, uint64_t now_wall_ms, uint64_t now_ns, char *key,
                            struct ctl_tenant *out);
int ctl_state_tenant_set_weight(struct ctl_state *st, const char *name, double weight,
                                struct ctl_tenant *out);
int ctl_state_tenant_rotate_key(struct ctl_state *st, const char *name, char *key,
                                struct ctl_tenant *out);
int ctl_state_tenant_delete(struct ctl_state *st, const char *name);

/* Registers or refreshes a node and folds its counters into the rates.
 * -EIDRM for a removed node (nothing changed). */
int ctl_state_heartbeat(struct ctl_state *st, const struct ctl_hb *hb, uint64_t now_ns);
/* Marks nodes not heard from within the timeout down (bumping the epoch). */
void ctl_state_tick(struct ctl_state *st, uint64_t now_ns);

/*
 * Removing a node (enum ctl_retire). ctl_state_node_remove makes member id
 * draining, stored with an epoch bump; placement then takes it out of
 * every row (ctl_pp.h). A node already draining or removed: 0, nothing
 * changed. Errors: CM_E_NOTFOUND; -ENOSPC when fewer members would be left
 * than the widest tenant's k + m (or the default's), with why (whylen
 * bytes) saying so; a store error. out, if not NULL, gets the node.
 * ctl_state_node_removed: draining id is removed for good (down, and its
 * heartbeats refused with -EIDRM); anything else: 0, nothing changed.
 * ctl_state_node_keep cancels a removal: draining id is a member again,
 * stored with an epoch bump (the rows keep what placement moved off it); a
 * member: 0, nothing changed; a removed node: -EIDRM; CM_E_NOTFOUND. out,
 * if not NULL, gets the node and *up whether it is up.
 */
int ctl_state_node_remove(struct ctl_state *st, uint32_t id, struct ctl_node *out, char *why,
                          size_t whylen);
int ctl_state_node_removed(struct ctl_state *st, uint32_t id);
int ctl_state_node_keep(struct ctl_state *st, uint32_t id, struct ctl_node *out, int *up);

/*
 * A gateway's state poll: registers gateway id at url (s3_url "" or NULL:
 * it has no S3 API) or refreshes it; a new id or a changed URL bumps the
 * epoch. Then, under the same lock, every unassigned tenant gets an owner:
 * the up gateway that owns the fewest tenants (ties: the smallest id by
 * strcmp), all of them in one store write with one epoch bump. Strings
 * borrowed; they must pass cm_gateway_id_valid / cm_gateway_url_valid (else CM_E_BADARG).
 * -ENOSPC when CTL_GW_REGISTRY_MAX other gateways are known (nothing
 * changed). An assignment the store refuses is logged and its tenants stay
 * unassigned until a later poll; the poll still returns 0.
 */
int ctl_state_gateway_poll(struct ctl_state *st, const char *id, const char *url,
                           const char *s3_url, uint64_t now_ns);

/*
 * Moving a tenant to another gateway: the admin asks, the owner hands the
 * metadata over and reports. Neither waits for the other here; the state
 * only records the two steps (the gateways see moving_to in their polls).
 *
 * ctl_state_tenant_move asks that tenant name move to gateway to (borrowed,
 * cm_gateway_id_valid, else CM_E_BADARG). to == the owner cancels an asked
 * move (moving_to cleared). Otherwise to must be registered and up at
 * now_ns (monotonic); moving_to = to. A change is stored with an epoch
 * bump; asking again what is asked changes nothing. Errors: CM_E_NOTFOUND,
 * -EAGAIN (the tenant has no owner yet), -ENXIO (to never polled since the
 * controller started), -EHOSTDOWN (to is down), or a store error; nothing
 * changed. out, if not NULL, receives the tenant as it is now.
 */
int ctl_state_tenant_move(struct ctl_state *st, const char *name, const char *to, uint64_t now_ns,
                          struct ctl_tenant *out);
/*
 * Gateway from reports it has handed tenant id's metadata to gateway to
 * (both cm_gateway_id_valid and different, else CM_E_BADARG). From the
 * owner: to owns the tenant and moving_to is cleared, whatever it said
 * (the metadata is at to already), stored with an epoch bump. When to owns
 * it already (a repeated report): 0, nothing changed. Errors:
 * CM_E_NOTFOUND, CM_E_STALE (from is not the owner), or a store error.
 */
int ctl_state_tenant_moved(struct ctl_state *st, uint32_t id, const char *from, const char *to);

/* A node's state as the APIs show it: "up", "down" or "removed". */
const char *ctl_node_state(const struct ctl_node_view *nv);

/* Ticks, then copies. Free with ctl_snapshot_fini. */
void ctl_state_snapshot(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out);
void ctl_snapshot_fini(struct ctl_snapshot *snap);
/* Copies the (node, tenant) records of every up node, node then tenant
 * order; deleted tenants' records may be among them. *out is caller-owned
 * (free; never NULL). Returns the count. */
size_t ctl_state_cells(struct ctl_state *st, struct ctl_cell **out);
/* The view of tenant name in snap (borrowed), or NULL. */
const struct ctl_tenant_view *ctl_snapshot_tenant(const struct ctl_snapshot *snap,
                                                  const char *name);

/* ---- S3 keys: ctl_s3keys.c keeps them beside the tenants ---- */

/* What ctl_state_with_s3 hands its callback, borrowed for the call. */
struct ctl_state_s3 {
    struct ctl_store *store;
    struct ctl_s3set *set;           /* the state's S3 keys */
    const struct ctl_tenant *tenant; /* NULL when called without a name */
    uint64_t epoch;                  /* current; a stored change writes epoch + 1 */
};

#define CTL_STATE_STORED 1 /* fn wrote its change and epoch + 1 in one store txn */
#define CTL_STATE_BUMP 2   /* a change that only the epoch records (fn wrote nothing) */

/*
 * Runs fn under the state lock, so S3 keys change in step with the epoch
 * and leave with their tenant. name NULL: no tenant; otherwise
 * CM_E_NOTFOUND, without calling fn, if no tenant has that name. fn returns
 * 0 (no change), a CTL_STATE_ value (the epoch then grows) or an error,
 * which is returned; 0 otherwise. fn must not call back into the state.
 */
int ctl_state_with_s3(struct ctl_state *st, const char *name,
                      int (*fn)(void *arg, const struct ctl_state_s3 *x), void *arg);

#endif
