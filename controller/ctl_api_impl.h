/*
 * ctl_api_impl.h - shared by the files behind ctl_api.h (private to them):
 *
 *   ctl_api.c           listener, authentication, routing (the whole URL
 *                       map), answers, JSON bodies, snapshot reads
 *   ctl_api_admin.c     the admin API of API.md: tenants, keys, nodes,
 *                       placement, fairness
 *   ctl_api_internal.c  the internal API of docs/internal-api.md: heartbeats
 *                       and the state gateways read
 *   ctl_api_metrics.c   /metrics and /healthz
 *   ctl_api_s3keys.c    tenants' S3 keys: admin API and the state's part
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

#include "ctl_fair.h"

#define CTL_API_TOKEN_MAX 512

struct cm_http_req;
struct ctl_snapshot;
struct ctl_state;

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

/* Fair shares of a snapshot's tenants; demand, until nodes report arrivals,
 * is what was served plus what waits. */
struct ctl_api_fair {
    struct ctl_fair_out sum;
    double *alloc;  /* per snapshot tenant */
    double *demand; /* per snapshot tenant */
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
void ctl_admin_nodes(struct ctl_call *c);
void ctl_admin_placement(struct ctl_call *c);
void ctl_admin_fairness(struct ctl_call *c);
/* Epoch, partitions and every tenant's placement rows; internal adds the
 * tenants' weights and key hashes and the nodes. Transferred. */
json_t *ctl_render_placement(const struct ctl_snapshot *s, int internal);

/* ---- internal API (ctl_api_internal.c) ---- */

void ctl_internal_heartbeat(struct ctl_call *c);
void ctl_internal_state(struct ctl_call *c);

/* ---- S3 keys (ctl_api_s3keys.c); name is a valid tenant name ---- */

void ctl_admin_s3keys_create(struct ctl_call *c, const char *name);
void ctl_admin_s3keys_list(struct ctl_call *c, const char *name);
void ctl_admin_s3keys_delete(struct ctl_call *c, const char *name, const char *id);
/* Adds "s3_keys" (every key's date keys for the UTC day of now_ms) to the
 * internal state object (borrowed): 0 or a negative code. */
int ctl_s3_render_state(struct ctl_state *st, uint64_t now_ms, json_t *state);

/* ---- /metrics and /healthz (ctl_api_metrics.c) ---- */

void ctl_api_metrics(struct ctl_call *c);
void ctl_api_healthz(struct ctl_call *c);

#endif
