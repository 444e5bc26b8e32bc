/*
 * ctl_api.c - routes, input checks and JSON rendering of the controller's
 * HTTP API (see ctl_api.h).
 *
 * Every answer is JSON (errors {"error","message"}) except /healthz and
 * /metrics, and carries X-Request-Id. Reads render a ctl_snapshot outside
 * the state lock; placement rows are recomputed per read (ctl_place is
 * cheap: tenants x partitions x nodes hashes).
 */
#include "ctl_api.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_http.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "ctl_fair.h"
#include "ctl_model.h"
#include "ctl_place.h"
#include "ctl_state.h"

#define MAX_BODY (1u << 20)
#define TOKEN_MAX 512

/* Request-stat ops, one per route family. */
#define CTL_OPS(X)                                                                                 \
    X(OP_TENANTS, "tenants")                                                                       \
    X(OP_TENANT, "tenant")                                                                         \
    X(OP_KEYS, "keys")                                                                             \
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

static const char *const op_names[OP_COUNT] = {
#define CTL_OP_NAME_(e, s) s,
    CTL_OPS(CTL_OP_NAME_)
#undef CTL_OP_NAME_
};

/* Gauges exposed on /metrics besides the request stats. */
#define CTL_METRICS(X)                                                                             \
    X(M_TENANTS, "shoal_controller_tenants", "Tenants defined")                                    \
    X(M_NODES, "shoal_controller_nodes", "Registered nodes by state")                              \
    X(M_EPOCH, "shoal_controller_epoch", "Current state epoch")                                    \
    X(M_PARTITIONS, "shoal_controller_partitions", "Partitions per tenant")                        \
    X(M_MMR, "shoal_controller_min_max_ratio",                                                     \
      "Min-max ratio of served/weight over active tenants (NaN if < 2)")                           \
    X(M_JAIN, "shoal_controller_jain_index",                                                       \
      "Jain's index of served/weight over active tenants (NaN if none)")                           \
    X(M_TWEIGHT, "shoal_tenant_weight", "Tenant weight")                                           \
    X(M_TREQ, "shoal_tenant_served_requests_per_second", "Requests/s served, over up nodes")       \
    X(M_TBYTES, "shoal_tenant_served_bytes_per_second", "Bytes/s served, over up nodes")           \
    X(M_TDEMAND, "shoal_tenant_demand_requests_per_second",                                        \
      "Demand: served requests/s plus requests queued")                                            \
    X(M_NUP, "shoal_node_up", "1 if the node was heard from within the timeout")                   \
    X(M_NLOAD, "shoal_node_load_requests_per_second", "Requests/s served by the node")             \
    X(M_NUSED, "shoal_node_used_bytes", "Bytes held by the node")                                  \
    X(M_NCAP, "shoal_node_capacity_bytes", "Node memory capacity")

enum ctl_metric {
#define CTL_M_ENUM_(e, n, h) e,
    CTL_METRICS(CTL_M_ENUM_)
#undef CTL_M_ENUM_
        M_COUNT
};

static const struct {
    const char *name, *help;
} metric_defs[M_COUNT] = {
#define CTL_M_DEF_(e, n, h) {n, h},
    CTL_METRICS(CTL_M_DEF_)
#undef CTL_M_DEF_
};

struct ctl_api {
    struct ctl_state *st; /* borrowed */
    struct cm_http_server *http;
    struct cm_reqstats *stats;
    char token[TOKEN_MAX];
    uint32_t id_salt;
    atomic_uint_fast64_t next_req;
};

/* One request being answered (on the HTTP thread, synchronously). */
struct call {
    struct ctl_api *a;
    struct cm_http_req *r;
    enum ctl_op op;
    uint64_t t0;
};

static void
call_init(struct call *c, struct ctl_api *a, struct cm_http_req *r, enum ctl_op op)
{
    char id[32];
    uint64_t n = atomic_fetch_add(&a->next_req, 1);

    c->a = a;
    c->r = r;
    c->op = op;
    c->t0 = cm_now_ns();
    snprintf(id, sizeof(id), "%08x%08llx", a->id_salt, (unsigned long long)n);
    cm_http_add_header(r, "X-Request-Id", id);
}

static void
reply_raw(struct call *c, int status, const char *ctype, char *body, size_t len)
{
    cm_reqstats_record(c->a->stats, 0, (int)c->op, status, len, cm_now_ns() - c->t0);
    if (status >= 500) {
        CM_ERROR("request failed method=%s path=%s status=%d", cm_http_method(c->r),
                 cm_http_path(c->r), status);
    } else {
        CM_DEBUG("request method=%s path=%s status=%d", cm_http_method(c->r), cm_http_path(c->r),
                 status);
    }
    cm_http_respond(c->r, status, ctype, body, len, CM_HTTP_FREE);
}

/* Answers with j (reference stolen); NULL j means an allocation failed. */
static void
reply_json(struct call *c, int status, json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    if (text == NULL) {
        text = cm_strdup("{\"error\":\"internal\",\"message\":\"out of memory\"}");
        status = 500;
    }
    reply_raw(c, status, "application/json", text, strlen(text));
}

static void reply_error(struct call *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
reply_error(struct call *c, int status, const char *code, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reply_json(c, status, json_pack("{s:s, s:s}", "error", code, "message", msg));
}

static void
reply_method(struct call *c, const char *allow)
{
    cm_http_add_header(c->r, "Allow", allow);
    reply_error(c, 405, "method_not_allowed", "%s not allowed here (allowed: %s)",
                cm_http_method(c->r), allow);
}

/* Maps a ctl_state error to an answer. */
static void
reply_state_error(struct call *c, int rc, const char *name)
{
    if (rc == CM_E_NOTFOUND) {
        reply_error(c, 404, "not_found", "no tenant named %s", name);
    } else if (rc == CM_E_EXISTS) {
        reply_error(c, 409, "conflict", "tenant %s already exists", name);
    } else {
        reply_error(c, 500, "internal", "state update failed: %s", cm_strerror(rc));
    }
}

/* ---- authentication ---- */

static int
token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;

    for (size_t i = 0; i < la && i < lb; i++) {
        d |= (unsigned char)(a[i] ^ b[i]);
    }
    return d == 0;
}

static int
is_public(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0;
}

static int
authorized(struct ctl_api *a, struct cm_http_req *r)
{
    const char *h = cm_http_header(r, "Authorization");

    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0) {
        return 0;
    }
    h += 7;
    while (*h == ' ') {
        h++;
    }
    return token_equal(h, a->token);
}

static int
on_headers(void *arg, struct cm_http_req *r)
{
    struct ctl_api *a = arg;
    struct call c;

    if (is_public(cm_http_path(r)) || authorized(a, r)) {
        return 0;
    }
    call_init(&c, a, r, OP_OTHER);
    cm_http_add_header(r, "WWW-Authenticate", "Bearer");
    reply_error(&c, 401, "unauthorized", "missing or wrong admin token");
    return 1;
}

/* ---- input ---- */

/* The body as a JSON object, or NULL after answering 400. */
static json_t *
body_object(struct call *c)
{
    size_t len;
    const void *body = cm_http_body(c->r, &len);
    json_error_t err;
    json_t *j;

    if (body == NULL || len == 0) {
        reply_error(c, 400, "bad_request", "a JSON object body is required");
        return NULL;
    }
    j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL) {
        reply_error(c, 400, "bad_request", "body is not valid JSON: %s", err.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        reply_error(c, 400, "bad_request", "body must be a JSON object");
        return NULL;
    }
    return j;
}

/* 0 with *w from o["weight"] (def if absent and def > 0), or -1 after
 * answering 400. */
static int
get_weight(struct call *c, json_t *o, double def, double *w)
{
    json_t *v = json_object_get(o, "weight");

    if (v == NULL && def > 0) {
        *w = def;
        return 0;
    }
    if (v == NULL) {
        reply_error(c, 400, "bad_request", "weight is required");
        return -1;
    }
    if (!json_is_number(v) || !ctl_valid_weight(json_number_value(v))) {
        reply_error(c, 400, "bad_request", "weight must be a number > 0 and <= %g", CTL_WEIGHT_MAX);
        return -1;
    }
    *w = json_number_value(v);
    return 0;
}

/* 0 with *out (dflt if absent), or -1 after answering 400. */
static int
get_int(struct call *c, json_t *o, const char *key, long lo, long hi, long dflt, long *out)
{
    json_t *v = json_object_get(o, key);

    *out = dflt;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        reply_error(c, 400, "bad_request", "%s must be an integer in [%ld, %ld]", key, lo, hi);
        return -1;
    }
    *out = (long)json_integer_value(v);
    return 0;
}

/* ---- rendering ---- */

struct fair {
    struct ctl_fair_out sum;
    double *alloc;  /* per snapshot tenant */
    double *demand; /* per snapshot tenant */
};

/* Demand until nodes report arrivals: what was served plus what waits. */
static void
fair_compute(const struct ctl_snapshot *s, struct fair *f)
{
    struct ctl_fair_in *in = cm_calloc(s->ntenants + 1, sizeof(*in));

    f->alloc = cm_calloc(s->ntenants + 1, sizeof(double));
    f->demand = cm_calloc(s->ntenants + 1, sizeof(double));
    for (size_t i = 0; i < s->ntenants; i++) {
        in[i].weight = s->tenants[i].t.weight;
        in[i].served = s->tenants[i].req_rate;
        in[i].demand = s->tenants[i].req_rate + s->tenants[i].queued;
        f->demand[i] = in[i].demand;
    }
    ctl_fair_compute(in, s->ntenants, f->alloc, &f->sum);
    free(in);
}

static void
fair_fini(struct fair *f)
{
    free(f->alloc);
    free(f->demand);
}

static json_t *
tenant_brief(const struct ctl_tenant *t)
{
    return json_pack("{s:s, s:I, s:f}", "name", t->name, "id", (json_int_t)t->id, "weight",
                     t->weight);
}

static json_t *
tenant_full(const struct ctl_snapshot *s, const struct ctl_tenant_view *tv)
{
    struct fair f;
    size_t i = (size_t)(tv - s->tenants);
    json_t *j;

    fair_compute(s, &f);
    j = json_pack("{s:s, s:I, s:f, s:i, s:i, s:I, s:i, s:f, s:f, s:f, s:f, s:f}", "name",
                  tv->t.name, "id", (json_int_t)tv->t.id, "weight", tv->t.weight, "ec_k",
                  tv->t.ec_k, "ec_m", tv->t.ec_m, "created_ms", (json_int_t)tv->t.created_ms,
                  "keys", tv->t.nkeys, "served_requests_per_second", tv->req_rate,
                  "served_bytes_per_second", tv->byte_rate, "queued", tv->queued, "demand",
                  f.demand[i], "allocation", f.alloc[i]);
    fair_fini(&f);
    return j;
}

/* Node ids of every registered node (up or down), caller frees. */
static uint32_t *
node_ids(const struct ctl_snapshot *s)
{
    uint32_t *ids = cm_calloc(s->nnodes + 1, sizeof(*ids));

    for (size_t i = 0; i < s->nnodes; i++) {
        ids[i] = s->nodes[i].n.id;
    }
    return ids;
}

static json_t *
placement_rows(const struct ctl_snapshot *s, const struct ctl_tenant *t, const uint32_t *ids)
{
    json_t *rows = json_array();
    uint32_t row[CTL_PLACE_MAX_WIDTH];

    for (uint32_t p = 0; p < s->partitions; p++) {
        size_t n = ctl_place_row(t->id, p, ids, s->nnodes, (size_t)(t->ec_k + t->ec_m), row);
        json_t *jr = json_array();

        for (size_t i = 0; i < n; i++) {
            json_array_append_new(jr, json_integer(row[i]));
        }
        json_array_append_new(rows, jr);
    }
    return rows;
}

static json_t *
render_placement(const struct ctl_snapshot *s, int internal)
{
    uint32_t *ids = node_ids(s);
    json_t *tenants = json_array();
    json_t *j;

    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        json_t *jt =
            json_pack("{s:s, s:I, s:i, s:i, s:o}", "name", t->name, "id", (json_int_t)t->id, "ec_k",
                      t->ec_k, "ec_m", t->ec_m, "placement", placement_rows(s, t, ids));

        if (internal) {
            json_t *h = json_array();

            for (int k = 0; k < t->nkeys; k++) {
                json_array_append_new(h, json_string(t->key_hash[k]));
            }
            json_object_set_new(jt, "weight", json_real(t->weight));
            json_object_set_new(jt, "key_hashes", h);
        }
        json_array_append_new(tenants, jt);
    }
    free(ids);
    j = json_pack("{s:I, s:I, s:o}", "epoch", (json_int_t)s->epoch, "partitions",
                  (json_int_t)s->partitions, "tenants", tenants);
    if (internal) {
        json_t *nodes = json_array();

        for (size_t i = 0; i < s->nnodes; i++) {
            const struct ctl_node_view *nv = &s->nodes[i];

            json_array_append_new(nodes,
                                  json_pack("{s:I, s:s, s:s, s:s, s:I}", "id", (json_int_t)nv->n.id,
                                            "addr", nv->n.addr, "metrics_addr", nv->n.metrics_addr,
                                            "state", nv->up ? "up" : "down", "incarnation",
                                            (json_int_t)nv->n.incarnation));
        }
        json_object_set_new(j, "nodes", nodes);
    }
    return j;
}

static json_t *
render_nodes(const struct ctl_snapshot *s)
{
    json_t *nodes = json_array();

    for (size_t i = 0; i < s->nnodes; i++) {
        const struct ctl_node_view *nv = &s->nodes[i];
        json_t *jn = json_pack(
            "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f}", "id", (json_int_t)nv->n.id,
            "addr", nv->n.addr, "metrics_addr", nv->n.metrics_addr, "state", nv->up ? "up" : "down",
            "capacity_bytes", (json_int_t)nv->n.capacity_bytes, "used_bytes",
            (json_int_t)nv->used_bytes, "instances", (json_int_t)nv->instances, "incarnation",
            (json_int_t)nv->n.incarnation, "load", nv->load, "bytes_per_second", nv->byte_load);

        json_object_set_new(jn, "last_seen_ms_ago",
                            nv->seen_ms_ago < 0 ? json_null() : json_integer(nv->seen_ms_ago));
        json_array_append_new(nodes, jn);
    }
    return json_pack("{s:o}", "nodes", nodes);
}

static json_t *
maybe_real(int valid, double v)
{
    return valid ? json_real(v) : json_null();
}

static json_t *
render_fairness(const struct ctl_snapshot *s)
{
    struct fair f;
    json_t *tenants = json_array();
    json_t *j;

    fair_compute(s, &f);
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant_view *tv = &s->tenants[i];

        json_array_append_new(
            tenants, json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "name", tv->t.name, "id",
                               (json_int_t)tv->t.id, "weight", tv->t.weight, "demand", f.demand[i],
                               "allocation", f.alloc[i], "served_requests_per_second", tv->req_rate,
                               "served_bytes_per_second", tv->byte_rate, "queued", tv->queued));
    }
    j = json_pack("{s:o, s:o, s:o, s:I, s:I}", "tenants", tenants, "min_max_ratio",
                  maybe_real(f.sum.mmr_valid, f.sum.mmr), "jain_index",
                  maybe_real(f.sum.jain_valid, f.sum.jain), "active_tenants",
                  (json_int_t)f.sum.active, "epoch", (json_int_t)s->epoch);
    fair_fini(&f);
    return j;
}

static void
metric_head(struct cm_buf *b, enum ctl_metric m)
{
    cm_prom_family(b, metric_defs[m].name, "gauge", metric_defs[m].help);
}

static void
render_metrics(struct ctl_api *a, const struct ctl_snapshot *s, struct cm_buf *b)
{
    struct fair f;
    char lb[64];
    uint64_t up = 0;

    fair_compute(s, &f);
    for (size_t i = 0; i < s->nnodes; i++) {
        up += s->nodes[i].up != 0;
    }
    metric_head(b, M_TENANTS);
    cm_prom_u64(b, metric_defs[M_TENANTS].name, NULL, s->ntenants);
    metric_head(b, M_NODES);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"up\"", up);
    cm_prom_u64(b, metric_defs[M_NODES].name, "state=\"down\"", s->nnodes - up);
    metric_head(b, M_EPOCH);
    cm_prom_u64(b, metric_defs[M_EPOCH].name, NULL, s->epoch);
    metric_head(b, M_PARTITIONS);
    cm_prom_u64(b, metric_defs[M_PARTITIONS].name, NULL, s->partitions);
    metric_head(b, M_MMR);
    cm_prom_double(b, metric_defs[M_MMR].name, NULL, f.sum.mmr_valid ? f.sum.mmr : NAN);
    metric_head(b, M_JAIN);
    cm_prom_double(b, metric_defs[M_JAIN].name, NULL, f.sum.jain_valid ? f.sum.jain : NAN);
    for (int m = M_TWEIGHT; m <= M_TDEMAND; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->ntenants; i++) {
            const struct ctl_tenant_view *tv = &s->tenants[i];
            double v = m == M_TWEIGHT  ? tv->t.weight
                       : m == M_TREQ   ? tv->req_rate
                       : m == M_TBYTES ? tv->byte_rate
                                       : f.demand[i];

            snprintf(lb, sizeof(lb), "tenant=\"%u\"", tv->t.id);
            cm_prom_double(b, metric_defs[m].name, lb, v);
        }
    }
    for (int m = M_NUP; m <= M_NCAP; m++) {
        metric_head(b, (enum ctl_metric)m);
        for (size_t i = 0; i < s->nnodes; i++) {
            const struct ctl_node_view *nv = &s->nodes[i];
            double v = m == M_NUP     ? nv->up
                       : m == M_NLOAD ? nv->load
                       : m == M_NUSED ? (double)nv->used_bytes
                                      : (double)nv->n.capacity_bytes;

            snprintf(lb, sizeof(lb), "node=\"%u\"", nv->n.id);
            cm_prom_double(b, metric_defs[m].name, lb, v);
        }
    }
    fair_fini(&f);
    cm_reqstats_expose(a->stats, "controller", b);
}

/* ---- handlers ---- */

static void
tenants_create(struct call *c)
{
    json_t *o = body_object(c);
    json_t *jn;
    struct ctl_tenant t;
    char key[CTL_KEY_LEN + 1], name[CTL_NAME_MAX + 1];
    double w;
    long k, m;
    int rc;

    if (o == NULL) {
        return;
    }
    jn = json_object_get(o, "name");
    if (!json_is_string(jn) || !ctl_valid_name(json_string_value(jn), json_string_length(jn))) {
        reply_error(c, 400, "bad_request", "name must match [a-z0-9][a-z0-9-]{0,62}");
        goto out;
    }
    snprintf(name, sizeof(name), "%s", json_string_value(jn));
    if (get_weight(c, o, 1.0, &w) < 0 || get_int(c, o, "ec_k", 1, CM_EC_MAX_K, 0, &k) < 0 ||
        get_int(c, o, "ec_m", 0, CM_EC_MAX_M, -1, &m) < 0) {
        goto out;
    }
    rc = ctl_state_tenant_create(c->a->st, name, w, (int)k, (int)m, cm_wall_ms(), key, &t);
    if (rc < 0) {
        reply_state_error(c, rc, name);
        goto out;
    }
    reply_json(c, 201,
               json_pack("{s:s, s:I, s:f, s:s, s:i, s:i}", "name", t.name, "id", (json_int_t)t.id,
                         "weight", t.weight, "key", key, "ec_k", t.ec_k, "ec_m", t.ec_m));
out:
    json_decref(o);
}

static void
tenants_list(struct call *c)
{
    struct ctl_snapshot s;
    json_t *arr = json_array();

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    for (size_t i = 0; i < s.ntenants; i++) {
        json_array_append_new(arr, tenant_brief(&s.tenants[i].t));
    }
    ctl_snapshot_fini(&s);
    reply_json(c, 200, json_pack("{s:o}", "tenants", arr));
}

static void
tenant_show(struct call *c, const char *name)
{
    struct ctl_snapshot s;
    const struct ctl_tenant_view *tv;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    tv = ctl_snapshot_tenant(&s, name);
    if (tv == NULL) {
        reply_state_error(c, CM_E_NOTFOUND, name);
    } else {
        reply_json(c, 200, tenant_full(&s, tv));
    }
    ctl_snapshot_fini(&s);
}

static void
tenant_patch(struct call *c, const char *name)
{
    json_t *o = body_object(c);
    double w;
    int rc;

    if (o == NULL) {
        return;
    }
    if (get_weight(c, o, 0.0, &w) < 0) {
        goto out;
    }
    rc = ctl_state_tenant_set_weight(c->a->st, name, w, NULL);
    if (rc < 0) {
        reply_state_error(c, rc, name);
        goto out;
    }
    tenant_show(c, name);
out:
    json_decref(o);
}

static void
tenant_delete(struct call *c, const char *name)
{
    int rc = ctl_state_tenant_delete(c->a->st, name);

    if (rc < 0) {
        reply_state_error(c, rc, name);
        return;
    }
    reply_raw(c, 204, "application/json", NULL, 0);
}

static void
tenant_rotate(struct call *c, const char *name)
{
    char key[CTL_KEY_LEN + 1];
    struct ctl_tenant t;
    int rc = ctl_state_tenant_rotate_key(c->a->st, name, key, &t);

    if (rc < 0) {
        reply_state_error(c, rc, name);
        return;
    }
    reply_json(c, 201,
               json_pack("{s:s, s:s, s:I}", "key", key, "name", t.name, "id", (json_int_t)t.id));
}

static void
render_read(struct call *c, json_t *(*render)(const struct ctl_snapshot *))
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = render(&s);
    ctl_snapshot_fini(&s);
    reply_json(c, 200, j);
}

static json_t *
render_placement_admin(const struct ctl_snapshot *s)
{
    return render_placement(s, 0);
}

static json_t *
render_state_internal(const struct ctl_snapshot *s)
{
    return render_placement(s, 1);
}

/* 0, or -1 after answering 400. Non-negative integer o[key] or absent. */
static int
hb_u64(struct call *c, json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);

    *out = 0;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        reply_error(c, 400, "bad_request", "%s must be a non-negative integer", key);
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int
parse_tenant_id(const char *s, uint32_t *id)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v >= UINT32_MAX) {
        return -1;
    }
    *id = (uint32_t)v;
    return 0;
}

static void
heartbeat(struct call *c)
{
    json_t *o = body_object(c);
    json_t *jn, *jt, *v, *ja, *jm, *weights;
    struct ctl_hb hb;
    struct ctl_hb_tenant *ts = NULL;
    struct ctl_snapshot s;
    const char *tk;
    uint64_t id;
    int rc;

    if (o == NULL) {
        return;
    }
    memset(&hb, 0, sizeof(hb));
    jn = json_object_get(o, "node");
    ja = json_object_get(jn, "addr");
    jm = json_object_get(jn, "metrics_addr");
    if (!json_is_object(jn) || !json_is_integer(json_object_get(jn, "id")) ||
        json_integer_value(json_object_get(jn, "id")) < 0 ||
        json_integer_value(json_object_get(jn, "id")) >= UINT32_MAX) {
        reply_error(c, 400, "bad_request", "node.id must be a non-negative integer");
        goto out;
    }
    id = (uint64_t)json_integer_value(json_object_get(jn, "id"));
    if (!json_is_string(ja) || !ctl_valid_addr(json_string_value(ja), json_string_length(ja))) {
        reply_error(c, 400, "bad_request", "node.addr must be host:port");
        goto out;
    }
    if (jm != NULL &&
        (!json_is_string(jm) || (json_string_length(jm) > 0 &&
                                 !ctl_valid_addr(json_string_value(jm), json_string_length(jm))))) {
        reply_error(c, 400, "bad_request", "node.metrics_addr must be host:port");
        goto out;
    }
    hb.node.id = (uint32_t)id;
    snprintf(hb.node.addr, sizeof(hb.node.addr), "%s", json_string_value(ja));
    if (jm != NULL) {
        snprintf(hb.node.metrics_addr, sizeof(hb.node.metrics_addr), "%s", json_string_value(jm));
    }
    if (hb_u64(c, jn, "capacity_bytes", &hb.node.capacity_bytes) < 0 ||
        hb_u64(c, jn, "incarnation", &hb.node.incarnation) < 0 ||
        hb_u64(c, jn, "used_bytes", &hb.used_bytes) < 0 ||
        hb_u64(c, jn, "instances", &hb.instances) < 0) {
        goto out;
    }
    jt = json_object_get(o, "tenants");
    if (jt != NULL && !json_is_object(jt)) {
        reply_error(c, 400, "bad_request", "tenants must be an object");
        goto out;
    }
    ts = cm_calloc(json_object_size(jt) + 1, sizeof(*ts));
    json_object_foreach(jt, tk, v)
    {
        struct ctl_hb_tenant *t = &ts[hb.ntenants];

        if (parse_tenant_id(tk, &t->id) < 0 || !json_is_object(v)) {
            reply_error(c, 400, "bad_request", "tenants: bad entry for %.32s", tk);
            goto out;
        }
        if (hb_u64(c, v, "requests", &t->requests) < 0 || hb_u64(c, v, "bytes", &t->bytes) < 0 ||
            hb_u64(c, v, "queued", &t->queued) < 0) {
            goto out;
        }
        hb.ntenants++;
    }
    hb.tenants = ts;
    rc = ctl_state_heartbeat(c->a->st, &hb, cm_now_ns());
    if (rc < 0) {
        reply_error(c, 500, "internal", "node update failed: %s", cm_strerror(rc));
        goto out;
    }
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    weights = json_object();
    for (size_t i = 0; i < s.ntenants; i++) {
        char idb[16];

        snprintf(idb, sizeof(idb), "%u", s.tenants[i].t.id);
        json_object_set_new(weights, idb, json_real(s.tenants[i].t.weight));
    }
    reply_json(c, 200, json_pack("{s:I, s:o}", "epoch", (json_int_t)s.epoch, "weights", weights));
    ctl_snapshot_fini(&s);
out:
    free(ts);
    json_decref(o);
}

static void
healthz(struct call *c)
{
    reply_raw(c, 200, "text/plain", cm_strdup("ok\n"), 3);
}

static void
metrics(struct call *c)
{
    struct ctl_snapshot s;
    struct cm_buf b;
    size_t len;
    char *text;

    cm_buf_init(&b);
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    render_metrics(c->a, &s, &b);
    ctl_snapshot_fini(&s);
    text = cm_buf_take(&b, &len);
    if (text == NULL) {
        text = cm_strdup("");
        len = 0;
    }
    reply_raw(c, 200, "text/plain; version=0.0.4", text, len);
}

/* ---- routing ---- */

static int
is_get(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

/* A read-only route: GET (or HEAD) only. */
static void
route_read(struct call *c, const char *m, void (*fn)(struct call *))
{
    if (!is_get(m)) {
        reply_method(c, "GET, HEAD");
        return;
    }
    fn(c);
}

static void
nodes_read(struct call *c)
{
    render_read(c, render_nodes);
}

static void
placement_read(struct call *c)
{
    render_read(c, render_placement_admin);
}

static void
fairness_read(struct call *c)
{
    render_read(c, render_fairness);
}

static void
state_read(struct call *c)
{
    render_read(c, render_state_internal);
}

/* /v1/tenants/{name}[/keys]; rest points past "/v1/tenants/". */
static void
route_tenant(struct ctl_api *a, struct cm_http_req *r, const char *m, const char *rest)
{
    struct call c;
    const char *slash = strchr(rest, '/');
    size_t nlen = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    char name[CTL_NAME_MAX + 1];

    if (slash != NULL && strcmp(slash, "/keys") != 0) {
        call_init(&c, a, r, OP_OTHER);
        reply_error(&c, 404, "not_found", "no such resource");
        return;
    }
    call_init(&c, a, r, slash != NULL ? OP_KEYS : OP_TENANT);
    if (!ctl_valid_name(rest, nlen)) {
        reply_error(&c, 400, "bad_request", "tenant name must match [a-z0-9][a-z0-9-]{0,62}");
        return;
    }
    memcpy(name, rest, nlen);
    name[nlen] = '\0';
    if (slash != NULL) {
        if (strcmp(m, "POST") != 0) {
            reply_method(&c, "POST");
        } else {
            tenant_rotate(&c, name);
        }
    } else if (is_get(m)) {
        tenant_show(&c, name);
    } else if (strcmp(m, "PATCH") == 0) {
        tenant_patch(&c, name);
    } else if (strcmp(m, "DELETE") == 0) {
        tenant_delete(&c, name);
    } else {
        reply_method(&c, "GET, HEAD, PATCH, DELETE");
    }
}

static const struct {
    const char *path;
    enum ctl_op op;
    void (*read)(struct call *);
} read_routes[] = {
    {"/healthz", OP_HEALTH, healthz},
    {"/metrics", OP_METRICS, metrics},
    {"/v1/nodes", OP_NODES, nodes_read},
    {"/v1/placement", OP_PLACEMENT, placement_read},
    {"/v1/fairness", OP_FAIRNESS, fairness_read},
    {"/v1/internal/state", OP_STATE, state_read},
};

static void
on_request(void *arg, struct cm_http_req *r)
{
    struct ctl_api *a = arg;
    const char *m = cm_http_method(r);
    const char *p = cm_http_path(r);
    struct call c;

    for (size_t i = 0; i < sizeof(read_routes) / sizeof(read_routes[0]); i++) {
        if (strcmp(p, read_routes[i].path) == 0) {
            call_init(&c, a, r, read_routes[i].op);
            route_read(&c, m, read_routes[i].read);
            return;
        }
    }
    if (strcmp(p, "/v1/tenants") == 0) {
        call_init(&c, a, r, OP_TENANTS);
        if (is_get(m)) {
            tenants_list(&c);
        } else if (strcmp(m, "POST") == 0) {
            tenants_create(&c);
        } else {
            reply_method(&c, "GET, HEAD, POST");
        }
    } else if (strncmp(p, "/v1/tenants/", 12) == 0) {
        route_tenant(a, r, m, p + 12);
    } else if (strcmp(p, "/v1/internal/heartbeat") == 0) {
        call_init(&c, a, r, OP_HEARTBEAT);
        if (strcmp(m, "POST") == 0) {
            heartbeat(&c);
        } else {
            reply_method(&c, "POST");
        }
    } else {
        call_init(&c, a, r, OP_OTHER);
        reply_error(&c, 404, "not_found", "no such resource");
    }
}

int
ctl_api_start(struct ctl_state *st, const struct ctl_api_cfg *cfg, struct ctl_api **out)
{
    static const struct cm_http_handlers handlers = {on_headers, on_request};
    struct cm_http_cfg hc = {cfg->listen, cfg->threads, MAX_BODY, 0};
    struct ctl_api *a = cm_calloc(1, sizeof(*a));
    int rc;

    a->st = st;
    a->id_salt = (uint32_t)cm_random_u64();
    atomic_init(&a->next_req, 1);
    if (strlen(cfg->token) >= sizeof(a->token) || cfg->token[0] == '\0') {
        rc = CM_E_CONFIG;
        goto out;
    }
    snprintf(a->token, sizeof(a->token), "%s", cfg->token);
    a->stats = cm_reqstats_create(op_names, OP_COUNT);
    rc = cm_http_start(&hc, &handlers, a, &a->http);
out:
    if (rc < 0) {
        CM_ERROR("http start failed listen=%s err=%s", cfg->listen, cm_strerror(rc));
        ctl_api_stop(a);
        a = NULL;
    }
    *out = a;
    return rc;
}

void
ctl_api_stop(struct ctl_api *a)
{
    if (a == NULL) {
        return;
    }
    if (a->http != NULL) {
        cm_http_stop(a->http, 5000);
    }
    if (a->stats != NULL) {
        cm_reqstats_destroy(a->stats);
    }
    explicit_bzero(a->token, sizeof(a->token));
    free(a);
}
