/*
 * ctl_state_impl.h - what ctl_state.c and ctl_state_gw.c share (private to
 * them): the state itself, and the helpers both call with st->mu held
 * (do_x() and ctl_do_x() expect it held).
 */
#ifndef CTL_STATE_IMPL_H
#define CTL_STATE_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_model.h"
#include "ctl_state.h"

struct node_rec;
struct ctl_s3set;
struct ctl_store;

struct gw_rec {
    char id[CTL_GW_ID_MAX + 1];
    char url[CTL_GW_URL_MAX + 1];
    char s3_url[CTL_GW_URL_MAX + 1];
    uint64_t last_seen_ns;
};

struct ctl_state {
    pthread_mutex_t mu;
    struct ctl_store *store; /* borrowed */
    struct ctl_state_cfg cfg;
    uint64_t epoch;
    uint32_t partitions;
    uint32_t next_tenant_id;
    size_t ntenants;
    struct ctl_tenant *tenants; /* id order */
    size_t nnodes;
    struct node_rec *nodes; /* id order */
    size_t ngws;
    struct gw_rec *gws;   /* id order (strcmp) */
    uint64_t now_ns;      /* latest time any caller passed in; never goes back */
    /* The last heartbeat of any node, and the start of the run of them
     * with no gap over the node timeout (do_tick judges only within one). */
    uint64_t heard_ns, hearing_since_ns;
    int deaf; /* no node heard for the node timeout: logged once */
    struct ctl_s3set *s3; /* tenants' S3 keys (ctl_s3keys.h) */
};

/* ctl_state.c: the state's clock, which never goes back (callers read the
 * clock before they take the lock); the epoch bumped and persisted after a
 * change held in memory only; tenant lookup and update. */
uint64_t ctl_do_clock(struct ctl_state *st, uint64_t now_ns);
void ctl_do_bump_epoch(struct ctl_state *st);
/* The tenant named name, or NULL. */
struct ctl_tenant *ctl_do_find_tenant(struct ctl_state *st, const char *name);
/* Stores the changed copy nt of *t with epoch + 1, then applies both; a
 * failed write changes nothing. 0 or the store's error. */
int ctl_do_update_tenant(struct ctl_state *st, struct ctl_tenant *t, const struct ctl_tenant *nt);

/* ctl_state_gw.c: the owner of a new tenant into gateway (CTL_GW_ID_MAX +
 * 1 bytes; "" when no gateway is up); the gateways into a snapshot. */
void ctl_do_pick_owner(struct ctl_state *st, uint64_t now_ns, char *gateway);
void ctl_do_snapshot_gateways(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out);

#endif
