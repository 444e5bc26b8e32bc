/*
 * ctl_api_impl.h - shared by the files behind ctl_api.h (private to them):
 *
 *   ctl_api.c           listener, authentication, routing (the whole URL
 *                       map), answers, JSON bodies, snapshot reads
 *   ctl_api_admin.c     the admin API of API.md: tenants, keys, nodes,
 *                       placement, fairness
 *   ctl_api_internal.c  the internal API of docs/internal-api.md: heartbeats,
 *                       the state gateways read, their moved tenants
 *   ctl_api_metrics.c   /metrics and /healthz
 *   ctl_api_s3keys.c    tenants' S3 keys: admin API and the state's part
 *   ctl_api_pool.c      the elastic memory: heartbeat fields in and out,
 *                       reclaim orders, tenants' cost, pool and node figures
 *   ctl_api_placement.c placement rows, rebalance, status, demand reports
 *   ctl_api_wa.c        weight allocation in /v1/fairness, tenant views and
 *                       /metrics
 *
 * Jansson's json_t appears here because every handler builds JSON; the
 * header stays private to these four files.
 *
 * Threads: handlers run on the cm_http threads and answer synchronously,
 * exactly once per struct ctl_call.
 */
#ifndef CTL_API_IMPL_H
#define CTL_API_IMPL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ctl_cost.h"
#include "ctl_fair.h"
#include "ctl_sms.h"

#define CTL_API_TOKEN_MAX 512

struct cm_buf;
struct cm_http_req;
struct ctl_hb;
struct ctl_pp;
struct ctl_pp_rows;
struct ctl_snapshot;
struct ctl_state;
struct ctl_tenant;

/* Request-stat ops, one per route family. */
#define CTL_OPS(X)                                                                                 \
    X(OP_TENANTS, "tenants")                                                                       \
    X(OP_TENANT, "tenant")                                                                         \
    X(OP_KEYS, "keys")                                                                             \
    X(OP_S3KEYS, "s3_keys")                                                                        \
    X(OP_NODES, "nodes")                                                                           \
    X(OP_PLACEMENT, "placement")                                                                   \
    X(OP_FAIRNESS, "fairness")                                                                     \
    X(OP_HEARTBEAT, "heartbeat")                                                                   \
    X(OP_DEMAND, "demand")                                                                         \
    X(OP_STATE, "state")                                                                           \
    X(OP_HEALTH, "healthz")                                                                        \
    X(OP_METRICS, "metrics")                                                                       \
    X(OP_OTHER, "other")

enum ctl_op {
#define CTL_OP_ENUM_(e, s) e,
    CTL_OPS(CTL_OP_ENUM_)
#undef CTL_OP_ENUM_
        OP_COUNT
};

struct ctl_api {
    struct ctl_state *st; /* borrowed */
    struct ctl_pp *pp;    /* borrowed */
    struct ctl_wa *wa;    /* borrowed */
    struct ctl_sms *sms;  /* borrowed */
    struct ctl_prices prices;
    struct cm_http_server *http;
    struct cm_reqstats *stats;
    char token[CTL_API_TOKEN_MAX];
    uint32_t id_salt;
    atomic_uint_fast64_t next_req;
};

/* One request being answered (on the HTTP thread, synchronously). */
struct ctl_call {
    struct ctl_api *a;
    struct cm_http_req *r;
    enum ctl_op op;
    uint64_t t0;
};

/* ---- answers (ctl_api.c); each answers c once ---- */

/* body (transferred; may be NULL when len is 0). */
void ctl_reply_raw(struct ctl_call *c, int status, const char *ctype, char *body, size_t len);
/* j transferred (its reference is stolen); NULL j means an allocation failed. */
void ctl_reply_json(struct ctl_call *c, int status, json_t *j);
/* {"error": code, "message": ...} */
void ctl_reply_error(struct ctl_call *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers 200 with render's JSON of a fresh snapshot (taken outside the lock). */
void ctl_reply_snapshot(struct ctl_call *c, json_t *(*render)(const struct ctl_snapshot *));
/* The body as a JSON object (transferred), or NULL after answering 400. */
json_t *ctl_body_object(struct ctl_call *c);

/* Fair shares of a snapshot's tenants (ctl_fair.h): demand, shares and the
 * capacity in dominant cost per second, per snapshot tenant. */
struct ctl_api_fair {
    struct ctl_fair_out sum;
    double *alloc; /* the tenant's fair share */
    int *counted;  /* its demand reaches it: it counts in MMR and Jain */
};

void ctl_api_fair_init(struct ctl_api_fair *f, const struct ctl_snapshot *s);
void ctl_api_fair_fini(struct ctl_api_fair *f);

/* ---- admin API (ctl_api_admin.c); name is a valid tenant name ---- */

void ctl_admin_tenants_list(struct ctl_call *c);
void ctl_admin_tenants_create(struct ctl_call *c);
void ctl_admin_tenant_show(struct ctl_call *c, const char *name);
void ctl_admin_tenant_patch(struct ctl_call *c, const char *name);
void ctl_admin_tenant_delete(struct ctl_call *c, const char *name);
void ctl_admin_tenant_rotate(struct ctl_call *c, const char *name);
void ctl_admin_tenant_move(struct ctl_call *c, const char *name);
void ctl_admin_nodes(struct ctl_call *c);
void ctl_admin_fairness(struct ctl_call *c);

/* ---- placement (ctl_api_placement.c) ---- */

void ctl_admin_placement(struct ctl_call *c);
void ctl_admin_placement_rebalance(struct ctl_call *c);
void ctl_admin_placement_status(struct ctl_call *c);
void ctl_internal_demand(struct ctl_call *c);
/* Epoch, placement epoch, partitions and every tenant's stored rows with
 * their row epochs; internal adds the tenants' weights, key hashes, owning
 * gateways and asked moves, the nodes and the gateways. rows are s's tenants'
 * (ctl_pp_rows). Transferred. */
json_t *ctl_render_placement(const struct ctl_snapshot *s, const struct ctl_pp_rows *rows,
                             int internal);
/* s's gateways [{id, url, s3_url, up}] in id order; admin adds
 * seen_ms_ago and the count of tenants owned. Transferred. */
json_t *ctl_render_gateways(const struct ctl_snapshot *s, int admin);
/* The same with the rows ctl_pp holds for s (synced with it first). */
json_t *ctl_placement_json(struct ctl_api *a, const struct ctl_snapshot *s, int internal);
/* The placement families of /metrics. */
void ctl_placement_metrics(struct ctl_api *a, struct cm_buf *b);

/* ---- internal API (ctl_api_internal.c) ---- */

void ctl_internal_heartbeat(struct ctl_call *c);
void ctl_internal_state(struct ctl_call *c);
/* POST /v1/internal/tenants/{id}/moved; id is the path segment, unchecked. */
void ctl_internal_tenant_moved(struct ctl_call *c, const char *id);

/* ---- S3 keys (ctl_api_s3keys.c); name is a valid tenant name ---- */

void ctl_admin_s3keys_create(struct ctl_call *c, const char *name);
void ctl_admin_s3keys_list(struct ctl_call *c, const char *name);
void ctl_admin_s3keys_delete(struct ctl_call *c, const char *name, const char *id);
/* Adds "s3_keys" (every key's date keys for the UTC day of now_ms) to the
 * internal state object (borrowed): 0 or a negative code. */
int ctl_s3_render_state(struct ctl_state *st, uint64_t now_ms, json_t *state);

/* ---- weight allocation (ctl_api_wa.c); wa borrowed ---- */

struct ctl_tenant_view;
struct ctl_wa;
struct cm_buf;

/* Adds "wa", "wa_step" and each tenant's "wa_weights" to j (borrowed), the
 * fairness object rendered from s (its "tenants" in s's order). */
void ctl_api_wa_fairness(struct ctl_wa *wa, const struct ctl_snapshot *s, json_t *j);
/* Adds tenant tv's "wa_weights" (node id -> weight) to j (borrowed). */
void ctl_api_wa_tenant(struct ctl_wa *wa, const struct ctl_snapshot *s,
                       const struct ctl_tenant_view *tv, json_t *j);
/* The WA families of /metrics: the policy, the matrix, the step stats. */
void ctl_api_wa_metrics(struct ctl_wa *wa, const struct ctl_snapshot *s, struct cm_buf *b);

/* ---- the elastic memory (ctl_api_pool.c) ---- */

/* A heartbeat's elastic-memory fields; the arrays are owned (fini). */
struct ctl_pool_in {
    struct ctl_sms_report r;
    struct ctl_sms_inst *inst;
    struct ctl_sms_cost *cost;
};

/* Parses them from the heartbeat o (borrowed) of node hb: 0, or -1 after
 * answering 400. Call ctl_pool_in_fini either way. */
int ctl_pool_parse(struct ctl_call *c, json_t *o, const struct ctl_hb *hb, struct ctl_pool_in *in);
void ctl_pool_in_fini(struct ctl_pool_in *in);
/* Hands the report to the window loop and adds the answer's "sms", "pools",
 * "decisions" and "reclaim" to ans (borrowed); s lists the tenants. */
void ctl_pool_answer(struct ctl_call *c, const struct ctl_pool_in *in, const struct ctl_snapshot *s,
                     json_t *ans);
void ctl_admin_tenant_cost(struct ctl_call *c, const char *name);
/* GET /v1/tenants/{name}/cost's body: t's totals p at prices pr (all
 * borrowed); transferred, NULL when out of memory. */
json_t *ctl_pool_render_cost(const struct ctl_prices *pr, const struct ctl_tenant *t,
                             const struct ctl_sms_pool_view *p, uint64_t now_wall_ms);
/* id[len]: the node's path segment, unchecked. */
void ctl_admin_node_reclaim(struct ctl_call *c, const char *id, size_t len);
/* cancel: DELETE, the removal taken back. */
void ctl_admin_node_remove(struct ctl_call *c, const char *id, size_t len, int cancel);
/* A node id in decimal, s[len] (not NUL-terminated): 0, or -1. */
int ctl_parse_node_id(const char *s, size_t len, uint32_t *id);
/* Adds "pool" to tenant's JSON j (borrowed). */
void ctl_pool_render_tenant(struct ctl_api *a, uint32_t tenant, json_t *j);
/* Adds each node's instance memory to {"nodes": [...]} (j borrowed). */
void ctl_pool_render_nodes(struct ctl_api *a, json_t *j);
/* The pools', costs' and nodes' memory series for s's tenants and nodes. */
void ctl_pool_metrics(struct ctl_api *a, const struct ctl_snapshot *s, struct cm_buf *b);

/* ---- /metrics and /healthz (ctl_api_metrics.c) ---- */

void ctl_api_metrics(struct ctl_call *c);
void ctl_api_healthz(struct ctl_call *c);

#endif
