/*
 * ctl_api_internal.c - the internal API of docs/internal-api.md: a node's
 * heartbeat (its figures in, the tenants' weights out) and the state a
 * gateway polls (tenants with key hashes and placement, nodes, and the S3
 * keys' date keys from ctl_api_s3keys.c).
 *
 * Threads: the cm_http threads; every handler answers its call once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_model.h"
#include "ctl_state.h"

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

void
ctl_internal_heartbeat(struct ctl_call *c)
{
    json_t *o = ctl_body_object(c);
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
        hb_u64(c, jn, "instances", &hb.instances) < 0) {
        goto out;
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
        if (hb_u64(c, v, "requests", &t->requests) < 0 || hb_u64(c, v, "bytes", &t->bytes) < 0 ||
            hb_u64(c, v, "queued", &t->queued) < 0) {
            goto out;
        }
        hb.ntenants++;
    }
    hb.tenants = ts;
    rc = ctl_state_heartbeat(c->a->st, &hb, cm_now_ns());
    if (rc < 0) {
        ctl_reply_error(c, 500, "internal", "node update failed: %s", cm_strerror(rc));
        goto out;
    }
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    weights = json_object();
    for (size_t i = 0; i < s.ntenants; i++) {
        char idb[16];

        snprintf(idb, sizeof(idb), "%u", s.tenants[i].t.id);
        json_object_set_new(weights, idb, json_real(s.tenants[i].t.weight));
    }
    ctl_reply_json(c, 200,
                   json_pack("{s:I, s:o}", "epoch", (json_int_t)s.epoch, "weights", weights));
    ctl_snapshot_fini(&s);
out:
    free(ts);
    json_decref(o);
}

void
ctl_internal_state(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = ctl_render_placement(&s, 1);
    ctl_snapshot_fini(&s);
    /* Keys read after the snapshot are at least as new as its epoch: a key
     * change a poll misses shows up with a larger epoch on the next one. */
    if (j != NULL && ctl_s3_render_state(c->a->st, cm_wall_ms(), j) < 0) {
        json_decref(j);
        j = NULL;
    }
    ctl_reply_json(c, 200, j);
}
