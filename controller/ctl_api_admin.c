/*
 * ctl_api_admin.c - the admin API of API.md: tenants (create, list, show,
 * change weight, delete, ask a move to another gateway), key rotation, and
 * the nodes (with the gateways) and fairness views (placement:
 * ctl_api_placement.c). Inputs are checked here (400 with a message naming
 * the field); ctl_state does the writes, and a tenant change kicks WA
 * (ctl_wa_kick) before it is answered.
 *
 * Threads: the cm_http threads; every handler answers its call once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_model.h"
#include "ctl_pp.h"
#include "ctl_state.h"
#include "ctl_wa.h"

/* Maps a ctl_state error to an answer. */
static void
reply_state_error(struct ctl_call *c, int rc, const char *name)
{
    if (rc == CM_E_NOTFOUND) {
        ctl_reply_error(c, 404, "not_found", "no tenant named %s", name);
    } else if (rc == CM_E_EXISTS) {
        ctl_reply_error(c, 409, "conflict", "tenant %s already exists", name);
    } else {
        ctl_reply_error(c, 500, "internal", "state update failed: %s", cm_strerror(rc));
    }
}

/* ---- input ---- */

/* 0 with *w from o["weight"] (def if absent and def > 0), or -1 after
 * answering 400. */
static int
get_weight(struct ctl_call *c, json_t *o, double def, double *w)
{
    json_t *v = json_object_get(o, "weight");

    if (v == NULL && def > 0) {
        *w = def;
        return 0;
    }
    if (v == NULL) {
        ctl_reply_error(c, 400, "bad_request", "weight is required");
        return -1;
    }
    if (!json_is_number(v) || !ctl_valid_weight(json_number_value(v))) {
        ctl_reply_error(c, 400, "bad_request", "weight must be a number > 0 and <= %g",
                        CTL_WEIGHT_MAX);
        return -1;
    }
    *w = json_number_value(v);
    return 0;
}

/* 0 with *out (dflt if absent), or -1 after answering 400. */
static int
get_int(struct ctl_call *c, json_t *o, const char *key, long lo, long hi, long dflt, long *out)
{
    json_t *v = json_object_get(o, key);

    *out = dflt;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        ctl_reply_error(c, 400, "bad_request", "%s must be an integer in [%ld, %ld]", key, lo, hi);
        return -1;
    }
    *out = (long)json_integer_value(v);
    return 0;
}

/* ---- rendering ---- */

/* Adds t's "moving_to" to j (borrowed; NULL is a no-op) while a move is
 * asked; returns j. */
static json_t *
with_moving_to(json_t *j, const struct ctl_tenant *t)
{
    if (j != NULL && t->moving_to[0] != '\0') {
        json_object_set_new(j, "moving_to", json_string(t->moving_to));
    }
    return j;
}

static json_t *
tenant_brief(const struct ctl_tenant *t)
{
    return with_moving_to(json_pack("{s:s, s:I, s:f, s:s}", "name", t->name, "id",
                                    (json_int_t)t->id, "weight", t->weight, "gateway", t->gateway),
                          t);
}

/* {"<node id>": weight} of tenant id as the up nodes report it. */
static json_t *
local_weights(const struct ctl_snapshot *s, uint32_t id)
{
    json_t *j = json_object();
    char nb[16];

    for (size_t k = 0; k < s->nlocal; k++) {
        if (s->local[k].tenant == id) {
            snprintf(nb, sizeof(nb), "%u", s->local[k].node);
            json_object_set_new(j, nb, json_real(s->local[k].weight));
        }
    }
    return j;
}

/* Adds tenant i's live figures (rates, fair share) to j. */
static void
tenant_live(json_t *j, const struct ctl_snapshot *s, const struct ctl_api_fair *f, size_t i)
{
    const struct ctl_tenant_view *tv = &s->tenants[i];

    json_object_update_new(
        j, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:f, s:o}",
                     "served_requests_per_second", tv->req_rate, "served_bytes_per_second",
                     tv->byte_rate, "queued", tv->queued, "demand_requests_per_second",
                     tv->arr_req_rate, "demand_bytes_per_second", tv->arr_byte_rate, "demand",
                     tv->demand, "allocation", f->alloc[i], "dominant_share", tv->share, "counted",
                     f->counted[i], "queue_wait_seconds", tv->queue_wait, "local_weights",
                     local_weights(s, tv->t.id)));
}

static json_t *
tenant_full(const struct ctl_snapshot *s, const struct ctl_tenant_view *tv)
{
    struct ctl_api_fair f;
    size_t i = (size_t)(tv - s->tenants);
    json_t *j;

    ctl_api_fair_init(&f, s);
    j = json_pack("{s:s, s:I, s:f, s:i, s:i, s:I, s:i, s:s}", "name", tv->t.name, "id",
                  (json_int_t)tv->t.id, "weight", tv->t.weight, "ec_k", tv->t.ec_k, "ec_m",
                  tv->t.ec_m, "created_ms", (json_int_t)tv->t.created_ms, "keys", tv->t.nkeys,
                  "gateway", tv->t.gateway);
    with_moving_to(j, &tv->t);
    tenant_live(j, s, &f, i);
    ctl_api_fair_fini(&f);
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
            "addr", nv->n.addr, "metrics_addr", nv->n.metrics_addr, "state", ctl_node_state(nv),
            "capacity_bytes", (json_int_t)nv->n.capacity_bytes, "used_bytes",
            (json_int_t)nv->used_bytes, "instances", (json_int_t)nv->instances, "incarnation",
            (json_int_t)nv->n.incarnation, "load", nv->load, "bytes_per_second", nv->byte_load);

        json_object_update_new(
            jn, json_pack("{s:o, s:f, s:f, s:f, s:f}", "sched",
                          nv->sched[0] != '\0' ? json_string(nv->sched) : json_null(), "cap_ops",
                          nv->cap_ops, "cap_bytes", nv->cap_bytes, "dominant_load", nv->share_load,
                          "dominant_capacity", nv->capacity));
        json_object_set_new(jn, "draining", json_boolean(nv->n.retire == CTL_NODE_DRAINING));
        json_object_set_new(jn, "last_seen_ms_ago",
                            nv->seen_ms_ago < 0 ? json_null() : json_integer(nv->seen_ms_ago));
        json_array_append_new(nodes, jn);
    }
    return json_pack("{s:o, s:o}", "nodes", nodes, "gateways", ctl_render_gateways(s, 1));
}

static json_t *
maybe_real(int valid, double v)
{
    return valid ? json_real(v) : json_null();
}

static json_t *
render_fairness(const struct ctl_snapshot *s)
{
    struct ctl_api_fair f;
    json_t *tenants = json_array();
    json_t *j;

    ctl_api_fair_init(&f, s);
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant_view *tv = &s->tenants[i];
        json_t *jt = json_pack("{s:s, s:I, s:f}", "name", tv->t.name, "id", (json_int_t)tv->t.id,
                               "weight", tv->t.weight);

        tenant_live(jt, s, &f, i);
        json_array_append_new(tenants, jt);
    }
    j = json_pack("{s:o, s:o, s:o, s:o, s:I, s:f, s:f, s:I}", "tenants", tenants, "min_max_ratio",
                  maybe_real(f.sum.mmr_valid, f.sum.mmr), "jain",
                  maybe_real(f.sum.jain_valid, f.sum.jain), "jain_index",
                  maybe_real(f.sum.jain_valid, f.sum.jain), "active_tenants",
                  (json_int_t)f.sum.counted, "capacity", s->capacity, "level", f.sum.level, "epoch",
                  (json_int_t)s->epoch);
    ctl_api_fair_fini(&f);
    return j;
}

/* ---- handlers ---- */

void
ctl_admin_tenants_create(struct ctl_call *c)
{
    json_t *o = ctl_body_object(c);
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
        ctl_reply_error(c, 400, "bad_request", "name must match [a-z0-9][a-z0-9-]{0,62}");
        goto out;
    }
    snprintf(name, sizeof(name), "%s", json_string_value(jn));
    if (get_weight(c, o, 1.0, &w) < 0 || get_int(c, o, "ec_k", 1, CM_EC_MAX_K, 0, &k) < 0 ||
        get_int(c, o, "ec_m", 0, CM_EC_MAX_M, -1, &m) < 0) {
        goto out;
    }
    rc = ctl_state_tenant_create(c->a->st, name, w, (int)k, (int)m, cm_wall_ms(), cm_now_ns(), key,
                                 &t);
    if (rc < 0) {
        reply_state_error(c, rc, name);
        goto out;
    }
    ctl_wa_kick(c->a->wa);
    ctl_reply_json(c, 201,
                   json_pack("{s:s, s:I, s:f, s:s, s:i, s:i, s:s}", "name", t.name, "id",
                             (json_int_t)t.id, "weight", t.weight, "key", key, "ec_k", t.ec_k,
                             "ec_m", t.ec_m, "gateway", t.gateway));
out:
    json_decref(o);
}

void
ctl_admin_tenants_list(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *arr = json_array();

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    for (size_t i = 0; i < s.ntenants; i++) {
        json_array_append_new(arr, tenant_brief(&s.tenants[i].t));
    }
    ctl_snapshot_fini(&s);
    ctl_reply_json(c, 200, json_pack("{s:o}", "tenants", arr));
}

void
ctl_admin_tenant_show(struct ctl_call *c, const char *name)
{
    struct ctl_snapshot s;
    const struct ctl_tenant_view *tv;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    tv = ctl_snapshot_tenant(&s, name);
    if (tv == NULL) {
        reply_state_error(c, CM_E_NOTFOUND, name);
    } else {
        json_t *j = tenant_full(&s, tv);

        if (j != NULL) {
            ctl_api_wa_tenant(c->a->wa, &s, tv, j);
            ctl_pool_render_tenant(c->a, tv->t.id, j);
        }
        ctl_reply_json(c, 200, j);
    }
    ctl_snapshot_fini(&s);
}

void
ctl_admin_tenant_patch(struct ctl_call *c, const char *name)
{
    json_t *o = ctl_body_object(c);
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
    ctl_wa_kick(c->a->wa);
    ctl_admin_tenant_show(c, name);
out:
    json_decref(o);
}

void
ctl_admin_tenant_delete(struct ctl_call *c, const char *name)
{
    int rc = ctl_state_tenant_delete(c->a->st, name);

    if (rc < 0) {
        reply_state_error(c, rc, name);
        return;
    }
    ctl_wa_kick(c->a->wa);
    ctl_reply_raw(c, 204, "application/json", NULL, 0);
}

void
ctl_admin_tenant_rotate(struct ctl_call *c, const char *name)
{
    char key[CTL_KEY_LEN + 1];
    struct ctl_tenant t;
    int rc = ctl_state_tenant_rotate_key(c->a->st, name, key, &t);

    if (rc < 0) {
        reply_state_error(c, rc, name);
        return;
    }
    ctl_reply_json(
        c, 201, json_pack("{s:s, s:s, s:I}", "key", key, "name", t.name, "id", (json_int_t)t.id));
}

void
ctl_admin_tenant_move(struct ctl_call *c, const char *name)
{
    json_t *o = ctl_body_object(c);
    json_t *jg;
    struct ctl_tenant t;
    const char *to;
    int rc;

    if (o == NULL) {
        return;
    }
    jg = json_object_get(o, "gateway");
    if (!json_is_string(jg) ||
        !cm_gateway_id_valid(json_string_value(jg), json_string_length(jg))) {
        ctl_reply_error(c, 400, "bad_request", "gateway must be 1 to %d of [A-Za-z0-9._:-]",
                        CTL_GW_ID_MAX);
        goto out;
    }
    to = json_string_value(jg);
    rc = ctl_state_tenant_move(c->a->st, name, to, cm_now_ns(), &t);
    if (rc == -EAGAIN) {
        ctl_reply_error(c, 409, "conflict",
                        "tenant %s has no gateway yet (it gets one at the next gateway poll)",
                        name);
    } else if (rc == -ENXIO) {
        ctl_reply_error(c, 409, "conflict", "gateway %s is not registered (no poll from it)", to);
    } else if (rc == -EHOSTDOWN) {
        ctl_reply_error(c, 409, "conflict", "gateway %s is down (no poll from it within %llu s)",
                        to, (unsigned long long)(CTL_GW_UP_NS / 1000000000ull));
    } else if (rc < 0) {
        reply_state_error(c, rc, name);
    } else if (t.moving_to[0] == '\0') {
        ctl_admin_tenant_show(c, name); /* to is the owner: nothing to move */
    } else {
        /* 202: the owner hands the metadata over after its next poll. */
        ctl_reply_json(c, 202,
                       json_pack("{s:s, s:I, s:s, s:s}", "name", t.name, "id", (json_int_t)t.id,
                                 "gateway", t.gateway, "moving_to", t.moving_to));
    }
out:
    json_decref(o);
}

/* POST /v1/nodes/{id}/remove: 202 while it drains, 200 once removed.
 * DELETE (cancel): 200 with its state, up or down; 409 once removed. */
void
ctl_admin_node_remove(struct ctl_call *c, const char *idstr, size_t idlen, int cancel)
{
    struct ctl_node n;
    char why[160] = "";
    uint32_t id;
    int up = 0, rc;

    if (ctl_parse_node_id(idstr, idlen, &id) < 0) {
        ctl_reply_error(c, 400, "bad_request", "node id must be a non-negative integer");
        return;
    }
    if (cancel) {
        rc = ctl_state_node_keep(c->a->st, id, &n, &up);
        snprintf(why, sizeof(why), "node %u is removed for good", id);
    } else {
        rc = ctl_state_node_remove(c->a->st, id, &n, why, sizeof(why));
    }
    if (rc == CM_E_NOTFOUND) {
        ctl_reply_error(c, 404, "not_found", "no node %u", id);
    } else if (rc == -ENOSPC || rc == -EIDRM) {
        ctl_reply_error(c, 409, "conflict", "%s", why);
    } else if (rc < 0) {
        ctl_reply_error(c, 500, "internal", "node not stored: %s", cm_strerror(rc));
    } else {
        ctl_reply_json(c, n.retire == CTL_NODE_DRAINING ? 202 : 200,
                       json_pack("{s:I, s:s, s:s}", "id", (json_int_t)n.id, "addr", n.addr, "state",
                                 n.retire == CTL_NODE_REMOVED    ? "removed"
                                 : n.retire == CTL_NODE_DRAINING ? "draining"
                                 : up                            ? "up"
                                                                 : "down"));
    }
}

void
ctl_admin_nodes(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = render_nodes(&s);
    ctl_snapshot_fini(&s);
    if (j != NULL) {
        ctl_pool_render_nodes(c->a, j);
    }
    ctl_reply_json(c, 200, j);
}

void
ctl_admin_fairness(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = render_fairness(&s);
    ctl_api_wa_fairness(c->a->wa, &s, j);
    ctl_snapshot_fini(&s);
    json_object_set_new(j, "pp", json_string(ctl_pp_policy(c->a->pp)));
    ctl_reply_json(c, 200, j);
}
