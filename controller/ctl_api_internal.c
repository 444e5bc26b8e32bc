/*
 * ctl_api_internal.c - the internal API of docs/internal-api.md: a node's
 * heartbeat (its figures in, every tenant's local weight at that node out,
 * from ctl_wa.h; the elastic-memory fields in and out go through
 * ctl_api_pool.c) and the state a gateway polls (tenants with key hashes,
 * placement and owning gateway, nodes, gateways, and the S3 keys' date
 * keys from ctl_api_s3keys.c); a poll that names its gateway registers it.
 * Also a gateway's report that it has handed a tenant to another one.
 *
 * Threads: the cm_http threads; every handler answers its call once.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_http.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_model.h"
#include "ctl_state.h"
#include "ctl_wa.h"

/* A scheduler name: 1 to CTL_SCHED_MAX - 1 of [a-z0-9_-] (it becomes a
 * label value and a table cell). */
static int
ctl_valid_sched(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= CTL_SCHED_MAX) {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-')) {
            return 0;
        }
    }
    return 1;
}

/* 0, or -1 after answering 400. Non-negative integer o[key] or absent. */
static int
hb_u64(struct ctl_call *c, json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);

    *out = 0;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        ctl_reply_error(c, 400, "bad_request", "%s must be a non-negative integer", key);
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* 0, or -1 after answering 400. Finite non-negative number o[key] or absent
 * (*out untouched). */
static int
hb_double(struct ctl_call *c, json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v))) {
        ctl_reply_error(c, 400, "bad_request", "%s must be a non-negative number", key);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* One entry of "tenants" (docs/internal-api.md); 0, or -1 after answering
 * 400. Arrivals a node does not report are its served counters. */
static int
hb_tenant(struct ctl_call *c, json_t *v, struct ctl_hb_tenant *t)
{
    if (hb_u64(c, v, "requests", &t->requests) < 0 || hb_u64(c, v, "bytes", &t->bytes) < 0 ||
        hb_u64(c, v, "queued", &t->queued) < 0) {
        return -1;
    }
    t->arrived_requests = t->requests;
    t->arrived_bytes = t->bytes;
    if ((json_object_get(v, "arrived_requests") != NULL &&
         hb_u64(c, v, "arrived_requests", &t->arrived_requests) < 0) ||
        (json_object_get(v, "arrived_bytes") != NULL &&
         hb_u64(c, v, "arrived_bytes", &t->arrived_bytes) < 0) ||
        hb_u64(c, v, "queue_waits", &t->queue_waits) < 0 ||
        hb_double(c, v, "arrived_cost", &t->arrived_cost) < 0 ||
        hb_double(c, v, "served_cost", &t->served_cost) < 0 ||
        hb_double(c, v, "queue_wait_seconds", &t->queue_wait_s) < 0 ||
        hb_double(c, v, "weight", &t->weight) < 0) {
        return -1;
    }
    if (t->weight > CTL_WEIGHT_MAX) {
        ctl_reply_error(c, 400, "bad_request", "weight must be <= %g", CTL_WEIGHT_MAX);
        return -1;
    }
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

/* The answer's weights: every tenant's local weight at node (WA's matrix,
 * the global weight for a tenant or node it does not know yet). */
static void
hb_local_weights(struct ctl_wa *wa, uint32_t node, const struct ctl_snapshot *s, json_t *weights)
{
    uint32_t *ids = cm_malloc(s->ntenants * sizeof(*ids) + 1);
    double *gw = cm_malloc(s->ntenants * sizeof(*gw) + 1);
    double *w = cm_malloc(s->ntenants * sizeof(*w) + 1);

    for (size_t i = 0; i < s->ntenants; i++) {
        ids[i] = s->tenants[i].t.id;
        gw[i] = s->tenants[i].t.weight;
    }
    ctl_wa_column(wa, node, ids, gw, s->ntenants, w);
    for (size_t i = 0; i < s->ntenants; i++) {
        char idb[16];

        snprintf(idb, sizeof(idb), "%u", ids[i]);
        json_object_set_new(weights, idb, json_real(w[i]));
    }
    free(ids);
    free(gw);
    free(w);
}

void
ctl_internal_heartbeat(struct ctl_call *c)
{
    json_t *o = ctl_body_object(c);
    json_t *jn, *jt, *v, *ja, *jm, *js, *weights, *ans;
    struct ctl_hb hb;
    struct ctl_hb_tenant *ts = NULL;
    struct ctl_pool_in pin = {0};
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
        ctl_reply_error(c, 400, "bad_request", "node.id must be a non-negative integer");
        goto out;
    }
    id = (uint64_t)json_integer_value(json_object_get(jn, "id"));
    if (!json_is_string(ja) || !ctl_valid_addr(json_string_value(ja), json_string_length(ja))) {
        ctl_reply_error(c, 400, "bad_request", "node.addr must be host:port");
        goto out;
    }
    if (jm != NULL &&
        (!json_is_string(jm) || (json_string_length(jm) > 0 &&
                                 !ctl_valid_addr(json_string_value(jm), json_string_length(jm))))) {
        ctl_reply_error(c, 400, "bad_request", "node.metrics_addr must be host:port");
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
        hb_u64(c, jn, "instances", &hb.instances) < 0 ||
        hb_double(c, jn, "cap_ops", &hb.cap_ops) < 0 ||
        hb_double(c, jn, "cap_bytes", &hb.cap_bytes) < 0) {
        goto out;
    }
    js = json_object_get(jn, "sched");
    if (js != NULL && (!json_is_string(js) || !ctl_valid_sched(json_string_value(js)))) {
        ctl_reply_error(c, 400, "bad_request", "node.sched must be a scheduler name");
        goto out;
    }
    if (js != NULL) {
        snprintf(hb.sched, sizeof(hb.sched), "%s", json_string_value(js));
    }
    jt = json_object_get(o, "tenants");
    if (jt != NULL && !json_is_object(jt)) {
        ctl_reply_error(c, 400, "bad_request", "tenants must be an object");
        goto out;
    }
    ts = cm_calloc(json_object_size(jt) + 1, sizeof(*ts));
    json_object_foreach(jt, tk, v)
    {
        struct ctl_hb_tenant *t = &ts[hb.ntenants];

        if (parse_tenant_id(tk, &t->id) < 0 || !json_is_object(v)) {
            ctl_reply_error(c, 400, "bad_request", "tenants: bad entry for %.32s", tk);
            goto out;
        }
        if (hb_tenant(c, v, t) < 0) {
            goto out;
        }
        hb.ntenants++;
    }
    hb.tenants = ts;
    if (ctl_pool_parse(c, o, &hb, &pin) < 0) {
        goto out;
    }
    rc = ctl_state_heartbeat(c->a->st, &hb, cm_now_ns());
    if (rc == -EIDRM) {
        ctl_reply_error(c, 410, "gone", "node %u was removed from the cluster", hb.node.id);
        goto out;
    }
    if (rc < 0) {
        ctl_reply_error(c, 500, "internal", "node update failed: %s", cm_strerror(rc));
        goto out;
    }
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    weights = json_object();
    hb_local_weights(c->a->wa, hb.node.id, &s, weights);
    ans = json_pack("{s:I, s:o}", "epoch", (json_int_t)s.epoch, "weights", weights);
    if (ans != NULL) {
        ctl_pool_answer(c, &pin, &s, ans);
    }
    ctl_reply_json(c, 200, ans);
    ctl_snapshot_fini(&s);
out:
    ctl_pool_in_fini(&pin);
    free(ts);
    json_decref(o);
}

/* A poll that names its gateway (?gateway=&url=&s3_url=) registers it and
 * has unassigned tenants given owners before the state is read, so this
 * very answer shows them. 0, or -1 after answering. */
static int
state_gateway(struct ctl_call *c)
{
    const char *id = cm_http_query(c->r, "gateway");
    const char *url = cm_http_query(c->r, "url");
    const char *s3 = cm_http_query(c->r, "s3_url");
    int rc;

    if (id == NULL) {
        return 0;
    }
    if (!cm_gateway_id_valid(id, strlen(id))) {
        ctl_reply_error(c, 400, "bad_request", "gateway must be 1 to %d of [A-Za-z0-9._:-]",
                        CTL_GW_ID_MAX);
        return -1;
    }
    if (url == NULL || !cm_gateway_url_valid(url, strlen(url))) {
        ctl_reply_error(c, 400, "bad_request",
                        "url must be an http:// or https:// URL of at most %d characters",
                        CTL_GW_URL_MAX);
        return -1;
    }
    if (s3 != NULL && s3[0] != '\0' && !cm_gateway_url_valid(s3, strlen(s3))) {
        ctl_reply_error(c, 400, "bad_request",
                        "s3_url must be empty or an http:// or https:// URL of at most %d "
                        "characters",
                        CTL_GW_URL_MAX);
        return -1;
    }
    rc = ctl_state_gateway_poll(c->a->st, id, url, s3, cm_now_ns());
    if (rc == -ENOSPC) {
        ctl_reply_error(c, 503, "unavailable", "too many gateways (at most %d)",
                        CTL_GW_REGISTRY_MAX);
        return -1;
    }
    if (rc < 0) {
        ctl_reply_error(c, 500, "internal", "gateway update failed: %s", cm_strerror(rc));
        return -1;
    }
    return 0;
}

void
ctl_internal_state(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *j;

    if (state_gateway(c) < 0) {
        return;
    }
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = ctl_placement_json(c->a, &s, 1);
    ctl_snapshot_fini(&s);
    /* Keys read after the snapshot are at least as new as its epoch: a key
     * change a poll misses shows up with a larger epoch on the next one. */
    if (j != NULL && ctl_s3_render_state(c->a->st, cm_wall_ms(), j) < 0) {
        json_decref(j);
        j = NULL;
    }
    ctl_reply_json(c, 200, j);
}

/* A string o[key] that is a gateway id, or NULL after answering 400. */
static const char *
moved_gateway(struct ctl_call *c, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    if (!json_is_string(v) || !cm_gateway_id_valid(json_string_value(v), json_string_length(v))) {
        ctl_reply_error(c, 400, "bad_request", "%s must be 1 to %d of [A-Za-z0-9._:-]", key,
                        CTL_GW_ID_MAX);
        return NULL;
    }
    return json_string_value(v);
}

void
ctl_internal_tenant_moved(struct ctl_call *c, const char *id)
{
    size_t len = strcspn(id, "/");
    char idb[16];
    uint32_t tid;
    json_t *o;
    const char *from, *to;
    int rc;

    if (len >= sizeof(idb)) {
        len = sizeof(idb) - 1; /* too long for an id: refused below */
    }
    memcpy(idb, id, len);
    idb[len] = '\0';
    if (id[len] != '/' || parse_tenant_id(idb, &tid) < 0) {
        ctl_reply_error(c, 400, "bad_request", "tenant id must be a positive integer");
        return;
    }
    if ((o = ctl_body_object(c)) == NULL) {
        return;
    }
    if ((from = moved_gateway(c, o, "from")) == NULL || (to = moved_gateway(c, o, "to")) == NULL) {
        goto out;
    }
    if (strcmp(from, to) == 0) {
        ctl_reply_error(c, 400, "bad_request", "from and to must differ");
        goto out;
    }
    rc = ctl_state_tenant_moved(c->a->st, tid, from, to);
    if (rc == CM_E_NOTFOUND) {
        ctl_reply_error(c, 404, "not_found", "no tenant with id %u", tid);
    } else if (rc == CM_E_STALE) {
        ctl_reply_error(c, 409, "conflict", "tenant %u is not owned by %s or %s", tid, from, to);
    } else if (rc < 0) {
        ctl_reply_error(c, 500, "internal", "tenant update failed: %s", cm_strerror(rc));
    } else {
        ctl_reply_raw(c, 204, "application/json", NULL, 0);
    }
out:
    json_decref(o);
}
