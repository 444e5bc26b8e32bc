/*
 * ctl_api_pool.c - the elastic memory on the controller's HTTP face: the
 * heartbeat's instance and cost fields in and the window's answer out
 * (docs/internal-api.md), reclaim orders (POST /v1/nodes/{id}/reclaim),
 * a tenant's cost (GET /v1/tenants/{name}/cost), the pool in a tenant's
 * view and the memory in the nodes' view, and their /metrics.
 *
 * Threads: the cm_http threads; ctl_sms does the locking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "ctl_api_impl.h"
#include "ctl_sms.h"
#include "ctl_state.h"

/* ---- heartbeat in ---- */

/* 0 with *out from v, the value of what + key (NULL: def), or -1 after
 * answering 400. */
static int
check_u64(struct ctl_call *c, json_t *v, const char *what, const char *key, uint64_t max,
          uint64_t def, uint64_t *out)
{
    *out = def;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
        ctl_reply_error(c, 400, "bad_request", "%s%s must be an integer in [0, %llu]", what, key,
                        (unsigned long long)max);
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int
get_u64(struct ctl_call *c, json_t *o, const char *what, const char *key, uint64_t max,
        uint64_t def, uint64_t *out)
{
    return check_u64(c, json_object_get(o, key), what, key, max, def, out);
}

/* A tenant id: an integer, or its decimal string, in [1, 2^32 - 2]. */
static int
get_tenant(struct ctl_call *c, json_t *o, const char *what, uint32_t *out)
{
    json_t *v = json_object_get(o, "tenant");
    long long id = -1;
    char *end;

    if (json_is_integer(v)) {
        id = json_integer_value(v);
    } else if (json_is_string(v) && json_string_value(v)[0] >= '0' &&
               json_string_value(v)[0] <= '9') {
        id = strtoll(json_string_value(v), &end, 10);
        if (*end != '\0') {
            id = -1;
        }
    }
    if (id < 1 || id >= (long long)UINT32_MAX) {
        ctl_reply_error(c, 400, "bad_request", "%stenant must be a tenant id", what);
        return -1;
    }
    *out = (uint32_t)id;
    return 0;
}

static int
parse_state(const char *s, enum pol_sms_state *out)
{
    for (int i = 0; i < POL_SMS_NSTATES; i++) {
        if (strcmp(s, pol_sms_state_name((enum pol_sms_state)i)) == 0) {
            *out = (enum pol_sms_state)i;
            return 0;
        }
    }
    return -1;
}

static int
parse_inst(struct ctl_call *c, json_t *v, size_t i, struct ctl_sms_inst *in)
{
    json_t *st = json_object_get(v, "state"), *lost = json_object_get(v, "lost");
    char what[48];
    uint64_t slot, tag, x;

    snprintf(what, sizeof(what), "instances[%zu].", i);
    if (!json_is_object(v)) {
        ctl_reply_error(c, 400, "bad_request", "instances[%zu] must be an object", i);
        return -1;
    }
    if (json_object_get(v, "slot") == NULL || json_object_get(v, "tag") == NULL) {
        ctl_reply_error(c, 400, "bad_request", "%sslot and tag are required", what);
        return -1;
    }
    if (get_u64(c, v, what, "slot", CTL_SMS_SLOTS - 1, 0, &slot) < 0 ||
        get_u64(c, v, what, "tag", UINT32_MAX, 0, &tag) < 0 ||
        get_tenant(c, v, what, &in->tenant) < 0 ||
        get_u64(c, v, what, "gen", INT64_MAX, 0, &in->gen) < 0 ||
        get_u64(c, v, what, "used", INT64_MAX, 0, &in->used) < 0 ||
        get_u64(c, v, what, "put_bytes", INT64_MAX, 0, &in->put_bytes) < 0 ||
        get_u64(c, v, what, "read_bytes", INT64_MAX, 0, &in->read_bytes) < 0 ||
        get_u64(c, v, what, "read_chunks", INT64_MAX, 0, &in->read_chunks) < 0 ||
        get_u64(c, v, what, "warm_age_ms", INT64_MAX, 0, &in->warm_age_ms) < 0) {
        return -1;
    }
    in->slot = (uint32_t)slot;
    in->tag = (uint32_t)tag;
    if (CM_WIRE_TAG_SLOT(in->tag) != in->slot) {
        ctl_reply_error(c, 400, "bad_request", "%stag %u is not of slot %u", what, in->tag,
                        in->slot);
        return -1;
    }
    if (!json_is_string(st) || parse_state(json_string_value(st), &in->state) < 0) {
        ctl_reply_error(c, 400, "bad_request", "%sstate must be warm, active, degraded or released",
                        what);
        return -1;
    }
    if (json_is_boolean(lost)) {
        in->lost = json_is_true(lost);
    } else if (get_u64(c, v, what, "lost", 1, 0, &x) < 0) {
        return -1;
    } else {
        in->lost = (int)x;
    }
    return 0;
}

/* A field of the report: at the top level, else (a node that nests it)
 * in "node" when it has the type wanted. */
static json_t *
field(json_t *o, const char *key, int (*is)(const json_t *))
{
    json_t *v = json_object_get(o, key);

    if (v == NULL) {
        v = json_object_get(json_object_get(o, "node"), key);
        if (v != NULL && !is(v)) {
            v = NULL;
        }
    }
    return v;
}

static int
is_array(const json_t *j)
{
    return json_is_array(j);
}

static int
is_integer(const json_t *j)
{
    return json_is_integer(j);
}

static int
is_object(const json_t *j)
{
    return json_is_object(j);
}

static int
parse_costs(struct ctl_call *c, json_t *ja, struct ctl_pool_in *in)
{
    json_t *v;
    size_t i;

    if (ja == NULL) {
        return 0;
    }
    if (!json_is_array(ja)) {
        ctl_reply_error(c, 400, "bad_request", "sms_cost must be an array");
        return -1;
    }
    in->cost = cm_calloc(json_array_size(ja) + 1, sizeof(*in->cost));
    json_array_foreach(ja, i, v)
    {
        struct ctl_sms_cost *e = &in->cost[i];
        char what[48];

        snprintf(what, sizeof(what), "sms_cost[%zu].", i);
        if (!json_is_object(v)) {
            ctl_reply_error(c, 400, "bad_request", "sms_cost[%zu] must be an object", i);
            return -1;
        }
        if (get_tenant(c, v, what, &e->tenant) < 0) {
            return -1;
        }
        for (int k = 0; k < CTL_CC_N; k++) {
            if (get_u64(c, v, what, ctl_cost_counter_name((enum ctl_cost_counter)k), INT64_MAX, 0,
                        &e->c.v[k]) < 0) {
                return -1;
            }
        }
        for (size_t j = 0; j < i; j++) {
            if (in->cost[j].tenant == e->tenant) {
                ctl_reply_error(c, 400, "bad_request", "sms_cost: tenant %u twice", e->tenant);
                return -1;
            }
        }
    }
    in->r.cost = in->cost;
    in->r.ncost = json_array_size(ja);
    return 0;
}

int
ctl_pool_parse(struct ctl_call *c, json_t *o, const struct ctl_hb *hb, struct ctl_pool_in *in)
{
    json_t *ja = field(o, "instances", is_array), *jr = field(o, "recovery", is_object), *v;
    unsigned char seen[CTL_SMS_SLOTS / 8] = {0};
    size_t i;

    memset(in, 0, sizeof(*in));
    in->r.node = hb->node.id;
    in->r.incarnation = hb->node.incarnation;
    in->r.capacity_bytes = hb->node.capacity_bytes;
    if (ja != NULL && !json_is_array(ja)) {
        ctl_reply_error(c, 400, "bad_request", "instances must be an array");
        return -1;
    }
    if (json_array_size(ja) > CTL_SMS_SLOTS) {
        ctl_reply_error(c, 400, "bad_request", "instances: more than %d", CTL_SMS_SLOTS);
        return -1;
    }
    in->inst = cm_calloc(json_array_size(ja) + 1, sizeof(*in->inst));
    json_array_foreach(ja, i, v)
    {
        if (parse_inst(c, v, i, &in->inst[i]) < 0) {
            return -1;
        }
        if (seen[in->inst[i].slot / 8] & (1u << (in->inst[i].slot % 8))) {
            ctl_reply_error(c, 400, "bad_request", "instances: slot %u twice", in->inst[i].slot);
            return -1;
        }
        seen[in->inst[i].slot / 8] |= (unsigned char)(1u << (in->inst[i].slot % 8));
    }
    in->r.has_instances = ja != NULL;
    in->r.inst = in->inst;
    in->r.ninst = json_array_size(ja);
    if (jr != NULL && !json_is_object(jr)) {
        ctl_reply_error(c, 400, "bad_request", "recovery must be an object");
        return -1;
    }
    if (check_u64(c, field(o, "instance_bytes", is_integer), "", "instance_bytes", INT64_MAX, 0,
                  &in->r.instance_bytes) < 0 ||
        check_u64(c, field(o, "memory_bytes", is_integer), "", "memory_bytes", INT64_MAX, 0,
                  &in->r.memory_bytes) < 0 ||
        check_u64(c, field(o, "cache_bytes", is_integer), "", "cache_bytes", INT64_MAX, 0,
                  &in->r.cache_bytes) < 0 ||
        get_u64(c, jr, "recovery.", "chunks", INT64_MAX, 0, &in->r.rec_chunks) < 0 ||
        get_u64(c, jr, "recovery.", "bytes", INT64_MAX, 0, &in->r.rec_bytes) < 0 ||
        get_u64(c, jr, "recovery.", "running", INT64_MAX, 0, &in->r.rec_running) < 0 ||
        get_u64(c, jr, "recovery.", "helpers", INT64_MAX, 0, &in->r.rec_helpers) < 0) {
        return -1;
    }
    return parse_costs(c, field(o, "sms_cost", is_array), in);
}

void
ctl_pool_in_fini(struct ctl_pool_in *in)
{
    free(in->inst);
    free(in->cost);
    memset(in, 0, sizeof(*in));
}

/* ---- heartbeat out ---- */

static json_t *
render_answer(const struct ctl_sms_answer *a)
{
    const struct ctl_sms_config *k = &a->cfg;
    json_t *pools = json_array(), *dec = json_array();
    json_t *j;

    for (size_t i = 0; i < a->npools; i++) {
        json_array_append_new(pools,
                              json_pack("{s:I, s:I, s:I}", "tenant", (json_int_t)a->pools[i].tenant,
                                        "gen", (json_int_t)a->pools[i].gen, "gen_age_ms",
                                        (json_int_t)a->pools[i].gen_age_ms));
    }
    for (size_t i = 0; i < a->ndec; i++) {
        const struct ctl_sms_decision *d = &a->dec[i];
        static const char *const why[] = {"kept", "aged", "empty", "lost"};
        json_t *jd = json_pack("{s:I, s:I, s:s, s:I, s:i}", "slot", (json_int_t)d->slot, "tag",
                               (json_int_t)d->tag, "state", pol_sms_state_name(d->state), "gen",
                               (json_int_t)d->gen, "warm_up", d->warm_up);

        if (d->state == POL_SMS_RELEASED && d->reason != POL_SMS_KEPT && (unsigned)d->reason < 4) {
            json_object_set_new(jd, "reason", json_string(why[d->reason]));
        }
        json_array_append_new(dec, jd);
    }
    j = json_pack("{s:{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o}", "sms", "policy",
                  k->policy, "interval_ms", (json_int_t)k->interval_ms, "active",
                  (json_int_t)k->active, "degraded", (json_int_t)k->degraded, "warm_active_ms",
                  (json_int_t)k->warm_active_ms, "warm_degraded_ms",
                  (json_int_t)k->warm_degraded_ms, "compact_age", (json_int_t)k->compact_age,
                  "max_instances", (json_int_t)k->max_instances, "pools", pools, "decisions", dec);
    if (j != NULL && a->reclaim_all) {
        json_object_set_new(j, "reclaim", json_pack("{s:b}", "all", 1));
    } else if (j != NULL && a->nreclaim > 0) {
        json_t *slots = json_array();

        for (size_t i = 0; i < a->nreclaim; i++) {
            json_array_append_new(slots, json_integer(a->reclaim[i]));
        }
        json_object_set_new(j, "reclaim", json_pack("{s:o}", "slots", slots));
    }
    return j;
}

void
ctl_pool_answer(struct ctl_call *c, const struct ctl_pool_in *in, const struct ctl_snapshot *s,
                json_t *ans)
{
    uint32_t *ids = cm_calloc(s->ntenants + 1, sizeof(*ids));
    struct ctl_sms_answer a;

    for (size_t i = 0; i < s->ntenants; i++) {
        ids[i] = s->tenants[i].t.id;
    }
    ctl_sms_heartbeat(c->a->sms, &in->r, ids, s->ntenants, cm_now_ns(), &a);
    free(ids);
    json_object_update_new(ans, render_answer(&a));
    ctl_sms_answer_fini(&a);
}

/* ---- views ---- */

static json_t *
maybe_u64(int valid, uint64_t v)
{
    return valid ? json_integer((json_int_t)v) : json_null();
}

void
ctl_pool_render_tenant(struct ctl_api *a, uint32_t tenant, json_t *j)
{
    struct ctl_sms_snapshot s;
    const struct ctl_sms_pool_view *p;
    struct ctl_sms_pool_view none = {.tenant = tenant};

    ctl_sms_snapshot(a->sms, cm_now_ns(), &s);
    p = ctl_sms_snapshot_pool(&s, tenant);
    if (p == NULL) {
        p = &none;
    }
    json_object_set_new(
        j, "pool",
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
                  "policy", s.cfg.policy, "generation", (json_int_t)p->gen, "generation_age_ms",
                  (json_int_t)p->gen_age_ms, "interval_ms", (json_int_t)s.cfg.interval_ms,
                  "instances", (json_int_t)p->instances, "warm", (json_int_t)p->warm, "active",
                  (json_int_t)p->active, "degraded", (json_int_t)p->degraded, "lost",
                  (json_int_t)p->lost, "nodes", (json_int_t)p->nodes, "memory_bytes",
                  (json_int_t)p->memory_bytes, "used_bytes", (json_int_t)p->used_bytes,
                  "working_set_bytes", maybe_u64(p->ticked, p->last.working_set_bytes),
                  "read_bytes_last_interval", maybe_u64(p->ticked, p->last.read_bytes),
                  "last_tick_ms_ago", maybe_u64(p->ticked, (uint64_t)p->tick_ms_ago)));
    ctl_sms_snapshot_fini(&s);
}

void
ctl_pool_render_nodes(struct ctl_api *a, json_t *j)
{
    struct ctl_sms_snapshot s;
    json_t *n;
    size_t i;

    ctl_sms_snapshot(a->sms, cm_now_ns(), &s);
    json_array_foreach(json_object_get(j, "nodes"), i, n)
    {
        const struct ctl_sms_node_view *v =
            ctl_sms_snapshot_node(&s, (uint32_t)json_integer_value(json_object_get(n, "id")));
        struct ctl_sms_node_view none = {0};

        if (v == NULL) {
            v = &none;
        }
        json_object_update_new(
            n,
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I}}", "memory_bytes",
                      (json_int_t)v->memory_bytes, "cache_bytes", (json_int_t)v->cache_bytes,
                      "instance_bytes", (json_int_t)v->instance_bytes, "held_instances",
                      (json_int_t)v->instances, "slots", (json_int_t)v->slots, "recovery", "chunks",
                      (json_int_t)v->rec_chunks, "bytes", (json_int_t)v->rec_bytes, "running",
                      (json_int_t)v->rec_running, "helpers", (json_int_t)v->rec_helpers));
    }
    ctl_sms_snapshot_fini(&s);
}

/* ---- GET /v1/tenants/{name}/cost ---- */

json_t *
ctl_pool_render_cost(const struct ctl_prices *pr, const struct ctl_tenant *t,
                     const struct ctl_sms_pool_view *p, uint64_t now_wall_ms)
{
    struct ctl_cost_bill b;
    json_t *items = json_array(), *prices = json_object(), *j;

    ctl_cost_bill(pr, &p->cost, &b);
    for (int i = 0; i < CTL_B_N; i++) {
        json_array_append_new(items,
                              json_pack("{s:s, s:f, s:s, s:f, s:f}", "item", b.item[i].name,
                                        "quantity", b.item[i].quantity, "unit", b.item[i].unit,
                                        "unit_usd", b.item[i].unit_usd, "usd", b.item[i].usd));
    }
    for (int i = 0; i < CTL_NPRICES; i++) {
        json_object_set_new(prices, ctl_price_name((enum ctl_price)i), json_real(pr->v[i]));
    }
    j = json_pack("{s:s, s:I, s:f, s:I, s:I, s:I, s:f, s:I, s:o, s:o}", "name", t->name, "id",
                  (json_int_t)t->id, "memory_gb_seconds", p->cost.memory_gb_seconds, "invocations",
                  (json_int_t)b.invocations, "cos_requests", (json_int_t)b.cos_requests,
                  "cos_bytes", (json_int_t)b.cos_bytes, "usd", b.usd, "since_ms",
                  (json_int_t)(now_wall_ms - p->cost_age_ms), "breakdown", items, "prices", prices);
    for (int i = 0; j != NULL && i < CTL_CC_N; i++) {
        json_object_set_new(j, ctl_cost_counter_name((enum ctl_cost_counter)i),
                            json_integer((json_int_t)p->cost.c.v[i]));
    }
    return j;
}

void
ctl_admin_tenant_cost(struct ctl_call *c, const char *name)
{
    struct ctl_snapshot s;
    struct ctl_sms_snapshot ss;
    const struct ctl_tenant_view *tv;
    const struct ctl_sms_pool_view *p;
    struct ctl_sms_pool_view none = {0};

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    tv = ctl_snapshot_tenant(&s, name);
    if (tv == NULL) {
        ctl_reply_error(c, 404, "not_found", "no tenant named %s", name);
        ctl_snapshot_fini(&s);
        return;
    }
    ctl_sms_snapshot(c->a->sms, cm_now_ns(), &ss);
    p = ctl_sms_snapshot_pool(&ss, tv->t.id);
    ctl_reply_json(
        c, 200, ctl_pool_render_cost(&c->a->prices, &tv->t, p != NULL ? p : &none, cm_wall_ms()));
    ctl_sms_snapshot_fini(&ss);
    ctl_snapshot_fini(&s);
}

/* ---- POST /v1/nodes/{id}/reclaim ---- */

int
ctl_parse_node_id(const char *s, size_t len, uint32_t *id)
{
    uint64_t v = 0;

    if (len == 0 || len > 10) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v >= UINT32_MAX) {
        return -1;
    }
    *id = (uint32_t)v;
    return 0;
}

void
ctl_admin_node_reclaim(struct ctl_call *c, const char *idstr, size_t idlen)
{
    json_t *o = ctl_body_object(c), *ji, *ja, *list;
    struct ctl_snapshot s;
    struct ctl_sms_inst *what;
    uint32_t id;
    size_t n, i;
    int known = 0, all, rc;

    if (o == NULL) {
        return;
    }
    ji = json_object_get(o, "instance");
    ja = json_object_get(o, "all");
    if (ctl_parse_node_id(idstr, idlen, &id) < 0) {
        ctl_reply_error(c, 400, "bad_request", "node id must be a non-negative integer");
        goto out;
    }
    if ((ji == NULL) == (ja == NULL) || (ja != NULL && !json_is_true(ja)) ||
        (ji != NULL && (!json_is_integer(ji) || json_integer_value(ji) < 0 ||
                        json_integer_value(ji) >= CTL_SMS_SLOTS))) {
        ctl_reply_error(c, 400, "bad_request",
                        "body must be {\"instance\": I} (0 <= I < %d) or {\"all\": true}",
                        CTL_SMS_SLOTS);
        goto out;
    }
    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    for (i = 0; i < s.nnodes; i++) {
        known |= s.nodes[i].n.id == id;
    }
    ctl_snapshot_fini(&s);
    if (!known) {
        ctl_reply_error(c, 404, "not_found", "no node %u", id);
        goto out;
    }
    all = ja != NULL;
    rc = ctl_sms_reclaim(c->a->sms, id, all, all ? 0 : (uint32_t)json_integer_value(ji), &what, &n);
    if (rc == CM_E_NOTFOUND) {
        ctl_reply_error(c, 404, "not_found", "node %u reports no instance %lld", id,
                        (long long)json_integer_value(ji));
        goto out;
    }
    list = json_array();
    for (i = 0; i < n; i++) {
        json_array_append_new(
            list, json_pack("{s:I, s:I, s:I, s:s, s:I, s:I}", "slot", (json_int_t)what[i].slot,
                            "tag", (json_int_t)what[i].tag, "tenant", (json_int_t)what[i].tenant,
                            "state", pol_sms_state_name(what[i].state), "gen",
                            (json_int_t)what[i].gen, "used", (json_int_t)what[i].used));
    }
    free(what);
    ctl_reply_json(
        c, 202,
        json_pack("{s:I, s:b, s:o}", "node", (json_int_t)id, "all", all, "instances", list));
out:
    json_decref(o);
}

/* ---- /metrics ---- */

/* Per tenant, per node, then the controller's own (name, type, help). */
#define POOL_METRICS(X)                                                                            \
    X(PM_TINST, "shoal_tenant_pool_instances", "gauge",                                            \
      "Instances of the tenant's pool not released, as the nodes last reported")                   \
    X(PM_TDEGR, "shoal_tenant_pool_degraded_instances", "gauge",                                   \
      "Of those, instances in their degraded intervals")                                           \
    X(PM_TMEM, "shoal_tenant_pool_memory_bytes", "gauge",                                          \
      "Instance memory the pool holds: its instances times their node's instance size")            \
    X(PM_TWS, "shoal_tenant_working_set_bytes", "gauge",                                           \
      "Chunk bytes in the instances the last tick kept (the working set of the window)")           \
    X(PM_TGEN, "shoal_tenant_pool_generation", "gauge", "The pool's current generation")           \
    X(PM_CMEM, "shoal_tenant_cost_memory_byte_seconds_total", "counter",                           \
      "Instance memory held, in byte-seconds (memory_gb_seconds x 2^30)")                          \
    X(PM_CINV, "shoal_tenant_cost_invocations_total", "counter",                                   \
      "Instance invocations: warm-ups and recoveries")                                             \
    X(PM_CREQ, "shoal_tenant_cost_cos_requests_total", "counter",                                  \
      "COS requests made for the tenant: writes, reads and deletes")                               \
    X(PM_CBYTES, "shoal_tenant_cost_cos_bytes_total", "counter",                                   \
      "COS bytes written and read for the tenant")                                                 \
    X(PM_CUSD, "shoal_tenant_cost_usd_total", "counter",                                           \
      "What the tenant's use costs at the configured prices, in USD")                              \
    X(PM_NMEM, "shoal_node_memory_bytes", "gauge", "Instance memory held: instances not released") \
    X(PM_NCACHE, "shoal_node_cache_bytes", "gauge", "Bytes in the node's cache space")             \
    X(PM_NINST, "shoal_node_pool_instances", "gauge", "Instances in tenant pools, not released")   \
    X(PM_NRECC, "shoal_node_recovered_chunks_total", "counter",                                    \
      "Chunks the node recovered from COS for lost instances")                                     \
    X(PM_NRECB, "shoal_node_recovered_bytes_total", "counter", "Bytes of those chunks")            \
    X(PM_NRECR, "shoal_node_recoveries_running", "gauge", "Instance recoveries under way")         \
    X(PM_TICKS, "shoal_controller_sms_ticks_total", "counter", "Pool window ticks run")            \
    X(PM_INTERVAL, "shoal_controller_sms_interval_seconds", "gauge",                               \
      "The GC interval of the pool windows (--gc-interval)")

enum pool_metric {
#define PM_ENUM_(e, n, t, h) e,
    POOL_METRICS(PM_ENUM_)
#undef PM_ENUM_
        PM_COUNT
};

static const struct {
    const char *name, *type, *help;
} pm_defs[PM_COUNT] = {
#define PM_DEF_(e, n, t, h) {n, t, h},
    POOL_METRICS(PM_DEF_)
#undef PM_DEF_
};

static double
tenant_metric(enum pool_metric m, const struct ctl_prices *pr, const struct ctl_sms_pool_view *p)
{
    struct ctl_cost_bill b;

    ctl_cost_bill(pr, &p->cost, &b);
    switch (m) {
    case PM_TINST:
        return p->instances;
    case PM_TDEGR:
        return p->degraded;
    case PM_TMEM:
        return (double)p->memory_bytes;
    case PM_TWS:
        return (double)p->last.working_set_bytes;
    case PM_TGEN:
        return (double)p->gen;
    case PM_CMEM:
        return p->cost.memory_gb_seconds * CTL_COST_GB;
    case PM_CINV:
        return (double)b.invocations;
    case PM_CREQ:
        return (double)b.cos_requests;
    case PM_CBYTES:
        return (double)b.cos_bytes;
    default:
        return b.usd;
    }
}

static double
node_metric(enum pool_metric m, const struct ctl_sms_node_view *v)
{
    switch (m) {
    case PM_NMEM:
        return (double)v->memory_bytes;
    case PM_NCACHE:
        return (double)v->cache_bytes;
    case PM_NINST:
        return v->instances;
    case PM_NRECC:
        return (double)v->rec_chunks;
    case PM_NRECB:
        return (double)v->rec_bytes;
    default:
        return (double)v->rec_running;
    }
}

void
ctl_pool_metrics(struct ctl_api *a, const struct ctl_snapshot *s, struct cm_buf *b)
{
    struct ctl_sms_snapshot ss;
    char lb[64];

    ctl_sms_snapshot(a->sms, cm_now_ns(), &ss);
    for (int m = PM_TINST; m <= PM_CUSD; m++) {
        cm_prom_family(b, pm_defs[m].name, pm_defs[m].type, pm_defs[m].help);
        for (size_t i = 0; i < s->ntenants; i++) {
            const struct ctl_sms_pool_view *p = ctl_sms_snapshot_pool(&ss, s->tenants[i].t.id);
            struct ctl_sms_pool_view none = {0};

            snprintf(lb, sizeof(lb), "tenant=\"%u\"", s->tenants[i].t.id);
            cm_prom_double(b, pm_defs[m].name, lb,
                           tenant_metric((enum pool_metric)m, &a->prices, p ? p : &none));
        }
    }
    for (int m = PM_NMEM; m <= PM_NRECR; m++) {
        cm_prom_family(b, pm_defs[m].name, pm_defs[m].type, pm_defs[m].help);
        for (size_t i = 0; i < s->nnodes; i++) {
            const struct ctl_sms_node_view *v = ctl_sms_snapshot_node(&ss, s->nodes[i].n.id);
            struct ctl_sms_node_view none = {0};

            snprintf(lb, sizeof(lb), "node=\"%u\"", s->nodes[i].n.id);
            cm_prom_double(b, pm_defs[m].name, lb, node_metric((enum pool_metric)m, v ? v : &none));
        }
    }
    cm_prom_family(b, pm_defs[PM_TICKS].name, pm_defs[PM_TICKS].type, pm_defs[PM_TICKS].help);
    cm_prom_u64(b, pm_defs[PM_TICKS].name, NULL, ss.ticks);
    cm_prom_family(b, pm_defs[PM_INTERVAL].name, pm_defs[PM_INTERVAL].type,
                   pm_defs[PM_INTERVAL].help);
    cm_prom_double(b, pm_defs[PM_INTERVAL].name, NULL, (double)ss.cfg.interval_ms / 1000.0);
    ctl_sms_snapshot_fini(&ss);
}
