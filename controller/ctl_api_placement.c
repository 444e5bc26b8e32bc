/*
 * ctl_api_placement.c - placement over HTTP: the stored rows (GET
 * /v1/placement and the placement part of /v1/internal/state), a
 * re-placement on demand (POST /v1/placement/rebalance), its progress (GET
 * /v1/placement/status), the gateways' demand reports (POST
 * /v1/internal/demand) and the placement figures of /metrics. The rows,
 * the loop and the demand table are ctl_pp's.
 *
 * Threads: the cm_http threads; every handler answers its call once. A
 * rebalance holds its HTTP thread until the loop thread has run it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_pp.h"
#include "ctl_state.h"

#define MAX_DEMAND_ENTRIES (1u << 18)

static json_t *
u32_array(const uint32_t *v, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++) {
        json_array_append_new(a, json_integer(v[i]));
    }
    return a;
}

static json_t *
tenant_rows(const struct ctl_pp_trows *r)
{
    json_t *rows = json_array(), *ep = json_array();

    for (uint32_t p = 0; r != NULL && p < r->parts; p++) {
        json_array_append_new(rows, u32_array(&r->ids[(size_t)p * r->width], r->len[p]));
        json_array_append_new(ep, json_integer((json_int_t)r->row_epoch[p]));
    }
    return json_pack("{s:o, s:o}", "placement", rows, "row_epochs", ep);
}

json_t *
ctl_render_placement(const struct ctl_snapshot *s, const struct ctl_pp_rows *rows, int internal)
{
    json_t *tenants = json_array();
    json_t *j;
    size_t ri = 0;

    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        const struct ctl_pp_trows *r = NULL;
        json_t *jt = json_pack("{s:s, s:I, s:i, s:i}", "name", t->name, "id", (json_int_t)t->id,
                               "ec_k", t->ec_k, "ec_m", t->ec_m);

        if (ri < rows->n && rows->t[ri].tenant == t->id) {
            r = &rows->t[ri++];
        }
        json_t *jr = tenant_rows(r);

        json_object_update(jt, jr);
        json_decref(jr);
        if (internal) {
            json_t *h = json_array();

            for (int k = 0; k < t->nkeys; k++) {
                json_array_append_new(h, json_string(t->key_hash[k]));
            }
            json_object_set_new(jt, "weight", json_real(t->weight));
            json_object_set_new(jt, "key_hashes", h);
            json_object_set_new(jt, "gateway", json_string(t->gateway));
            if (t->moving_to[0] != '\0') {
                json_object_set_new(jt, "moving_to", json_string(t->moving_to));
            }
        }
        json_array_append_new(tenants, jt);
    }
    j = json_pack("{s:I, s:I, s:s, s:I, s:o}", "epoch", (json_int_t)s->epoch, "placement_epoch",
                  (json_int_t)rows->epoch, "solver", rows->solver, "partitions",
                  (json_int_t)s->partitions, "tenants", tenants);
    if (internal) {
        json_t *nodes = json_array();

        for (size_t i = 0; i < s->nnodes; i++) {
            const struct ctl_node_view *nv = &s->nodes[i];

            json_t *jn =
                json_pack("{s:I, s:s, s:s, s:s, s:I}", "id", (json_int_t)nv->n.id, "addr",
                          nv->n.addr, "metrics_addr", nv->n.metrics_addr, "state",
                          ctl_node_state(nv), "incarnation", (json_int_t)nv->n.incarnation);

            if (nv->n.retire == CTL_NODE_DRAINING) {
                json_object_set_new(jn, "draining", json_true()); /* no new chunks for it */
            }
            json_array_append_new(nodes, jn);
        }
        json_object_set_new(j, "nodes", nodes);
        json_object_set_new(j, "gateways", ctl_render_gateways(s, 0));
    }
    return j;
}

json_t *
ctl_render_gateways(const struct ctl_snapshot *s, int admin)
{
    json_t *a = json_array();

    for (size_t i = 0; i < s->ngateways; i++) {
        const struct ctl_gateway_view *g = &s->gateways[i];
        json_t *jg = json_pack("{s:s, s:s, s:s, s:b}", "id", g->id, "url", g->url, "s3_url",
                               g->s3_url, "up", g->up);

        if (admin && jg != NULL) {
            json_object_update_new(jg, json_pack("{s:I, s:I}", "seen_ms_ago",
                                                 (json_int_t)g->seen_ms_ago, "tenants",
                                                 (json_int_t)g->tenants));
        }
        json_array_append_new(a, jg);
    }
    return a;
}

json_t *
ctl_placement_json(struct ctl_api *a, const struct ctl_snapshot *s, int internal)
{
    struct ctl_pp_rows rows;
    json_t *j;
    int rc = ctl_pp_rows(a->pp, s, &rows);

    if (rc < 0) {
        /* The rows as they were: still the truth for what is stored. */
        CM_ERROR("placement sync failed err=%s", cm_strerror(rc));
    }
    j = ctl_render_placement(s, &rows, internal);
    ctl_pp_rows_fini(&rows);
    return j;
}

void
ctl_admin_placement(struct ctl_call *c)
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = ctl_placement_json(c->a, &s, 0);
    ctl_snapshot_fini(&s);
    json_object_set_new(j, "policy", json_string(ctl_pp_policy(c->a->pp)));
    ctl_reply_json(c, 200, j);
}

void
ctl_admin_placement_rebalance(struct ctl_call *c)
{
    struct ctl_pp_result r;

    ctl_pp_rebalance(c->a->pp, &r);
    if (r.rc == CM_E_TIMEOUT || r.rc == CM_E_UNAVAIL) {
        ctl_reply_error(c, 503, "unavailable", "placement did not answer in time: %s",
                        cm_strerror(r.rc));
        return;
    }
    if (r.rc < 0) {
        ctl_reply_error(c, 500, "internal", "placement failed: %s", cm_strerror(r.rc));
        return;
    }
    ctl_reply_json(c, 200,
                   json_pack("{s:I, s:s, s:s, s:b, s:I, s:I, s:f, s:f, s:f}", "epoch",
                             (json_int_t)r.epoch, "policy", ctl_pp_policy(c->a->pp), "solver",
                             r.solver, "changed", r.changed, "partitions_moved",
                             (json_int_t)r.parts_moved, "bytes_moved", (json_int_t)r.bytes_moved,
                             "solve_ms", r.solve_ms, "util_before", r.util_before, "util_after",
                             r.util_after));
}

void
ctl_admin_placement_status(struct ctl_call *c)
{
    struct ctl_pp_status s;

    ctl_pp_status(c->a->pp, cm_now_ns(), &s);
    ctl_reply_json(
        c, 200,
        json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:f, s:I, s:I, s:I, s:f, s:I, "
                  "s:I, s:{s:f, s:f}}",
                  "epoch", (json_int_t)s.epoch, "policy", s.policy, "solver", s.solver,
                  "moving_partitions", (json_int_t)s.moving_partitions, "bytes_to_move",
                  (json_int_t)s.bytes_to_move, "bytes_moved", (json_int_t)s.bytes_moved,
                  "bytes_moved_total", (json_int_t)s.bytes_moved_total, "migrating", s.migrating,
                  "gateways", (json_int_t)s.gateways, "max_util", s.max_util, "over_checks",
                  (json_int_t)s.over_checks, "replacements", (json_int_t)s.replacements, "checks",
                  (json_int_t)s.checks, "last_solve_ms", s.last_solve_ms, "last_bytes_moved",
                  (json_int_t)s.last_moved_bytes, "last_partitions_moved",
                  (json_int_t)s.last_parts_moved, "demand", "requests_per_s", s.demand_req,
                  "bytes_per_s", s.demand_bytes));
}

/* 0 with *v from a non-negative JSON integer o[key] (absent: 0), or -1. */
static int
get_u64(json_t *o, const char *key, uint64_t *v)
{
    json_t *x = json_object_get(o, key);

    *v = 0;
    if (x == NULL) {
        return 0;
    }
    if (!json_is_integer(x) || json_integer_value(x) < 0) {
        return -1;
    }
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

/* One "demand" entry [tenant, partition, req/s, bytes/s, resident bytes
 * (, requests in flight)]: 0, or -1. */
static int
get_entry(json_t *e, struct ctl_pp_demand *d)
{
    json_t *t = json_array_get(e, 0), *p = json_array_get(e, 1), *rq = json_array_get(e, 2),
           *by = json_array_get(e, 3), *res = json_array_get(e, 4), *inf = json_array_get(e, 5);

    if (inf != NULL && !json_is_number(inf)) {
        return -1;
    }
    d->inflight = inf != NULL ? json_number_value(inf) : 0;
    if (!json_is_array(e) || json_array_size(e) < 5 || json_array_size(e) > 6 ||
        !json_is_integer(t) || json_integer_value(t) <= 0 || json_integer_value(t) >= UINT32_MAX ||
        !json_is_integer(p) || json_integer_value(p) < 0 || json_integer_value(p) >= UINT32_MAX ||
        !json_is_number(rq) || !json_is_number(by) || !json_is_integer(res) ||
        json_integer_value(res) < 0) {
        return -1;
    }
    d->tenant = (uint32_t)json_integer_value(t);
    d->partition = (uint32_t)json_integer_value(p);
    d->req = json_number_value(rq);
    d->bytes = json_number_value(by);
    d->resident_bytes = (uint64_t)json_integer_value(res);
    return isfinite(d->req) && isfinite(d->bytes) && isfinite(d->inflight) && d->req >= 0 &&
                   d->bytes >= 0 && d->inflight >= 0
               ? 0
               : -1;
}

void
ctl_internal_demand(struct ctl_call *c)
{
    json_t *o = ctl_body_object(c);
    json_t *gw, *dem, *mig, *e;
    struct ctl_pp_report r;
    struct ctl_pp_demand *d = NULL;
    size_t i;

    if (o == NULL) {
        return;
    }
    memset(&r, 0, sizeof(r));
    gw = json_object_get(o, "gateway");
    dem = json_object_get(o, "demand");
    mig = json_object_get(o, "migrate");
    if (!json_is_string(gw) || json_string_length(gw) == 0 ||
        json_string_length(gw) > CTL_PP_GW_MAX ||
        strlen(json_string_value(gw)) != json_string_length(gw)) {
        ctl_reply_error(c, 400, "bad_request", "gateway must be a name of 1 to %d characters",
                        CTL_PP_GW_MAX);
        goto out;
    }
    if ((dem != NULL && !json_is_array(dem)) || json_array_size(dem) > MAX_DEMAND_ENTRIES) {
        ctl_reply_error(c, 400, "bad_request", "demand must be an array of at most %u entries",
                        MAX_DEMAND_ENTRIES);
        goto out;
    }
    if (mig != NULL && !json_is_object(mig)) {
        ctl_reply_error(c, 400, "bad_request", "migrate must be an object");
        goto out;
    }
    if (get_u64(mig, "done_epoch", &r.mig.done_epoch) < 0 ||
        get_u64(mig, "moving_partitions", &r.mig.moving_partitions) < 0 ||
        get_u64(mig, "bytes_to_move", &r.mig.bytes_to_move) < 0 ||
        get_u64(mig, "bytes_moved", &r.mig.bytes_moved) < 0 ||
        get_u64(mig, "bytes_moved_total", &r.mig.bytes_moved_total) < 0) {
        ctl_reply_error(c, 400, "bad_request", "migrate fields must be non-negative integers");
        goto out;
    }
    d = cm_calloc(json_array_size(dem) + 1, sizeof(*d));
    json_array_foreach(dem, i, e)
    {
        if (get_entry(e, &d[i]) < 0) {
            ctl_reply_error(c, 400, "bad_request",
                            "demand[%zu] must be [tenant, partition, requests/s, bytes/s, "
                            "resident bytes, requests in flight]",
                            i);
            goto out;
        }
    }
    r.gateway = json_string_value(gw);
    r.n = json_array_size(dem);
    r.d = d;
    if (ctl_pp_report(c->a->pp, &r, cm_now_ns()) < 0) {
        ctl_reply_error(c, 400, "bad_request", "report refused");
        goto out;
    }
    {
        struct ctl_pp_status s;

        ctl_pp_status(c->a->pp, cm_now_ns(), &s);
        ctl_reply_json(c, 200, json_pack("{s:I}", "placement_epoch", (json_int_t)s.epoch));
    }
out:
    free(d);
    json_decref(o);
}

void
ctl_placement_metrics(struct ctl_api *a, struct cm_buf *b)
{
    struct ctl_pp_status s;
    char lb[64];

    ctl_pp_status(a->pp, cm_now_ns(), &s);
    cm_prom_family(b, "shoal_controller_placement_info", "gauge",
                   "1, labelled with the PP policy (--pp)");
    snprintf(lb, sizeof(lb), "pp=\"%s\"", s.policy);
    cm_prom_u64(b, "shoal_controller_placement_info", lb, 1);
    cm_prom_family(b, "shoal_controller_placement_epoch", "gauge",
                   "Placement epoch: grows when placement rows change");
    cm_prom_u64(b, "shoal_controller_placement_epoch", NULL, s.epoch);
    cm_prom_family(b, "shoal_controller_placement_max_utilization", "gauge",
                   "Highest fair-share utilisation of an up node under the current rows, last "
                   "check");
    cm_prom_double(b, "shoal_controller_placement_max_utilization", NULL, s.max_util);
    cm_prom_family(b, "shoal_controller_placement_checks_total", "counter", "Placement checks run");
    cm_prom_u64(b, "shoal_controller_placement_checks_total", NULL, s.checks);
    cm_prom_family(b, "shoal_controller_placement_replacements_total", "counter",
                   "Re-placements committed");
    cm_prom_u64(b, "shoal_controller_placement_replacements_total", NULL, s.replacements);
    cm_prom_family(b, "shoal_controller_placement_solve_seconds", "gauge",
                   "Time of the last solver run");
    cm_prom_double(b, "shoal_controller_placement_solve_seconds", NULL, s.last_solve_ms / 1e3);
    cm_prom_family(b, "shoal_controller_placement_moving_partitions", "gauge",
                   "Partitions the gateways still have data to move for");
    cm_prom_u64(b, "shoal_controller_placement_moving_partitions", NULL, s.moving_partitions);
    cm_prom_family(b, "shoal_controller_placement_moved_bytes_total", "counter",
                   "Bytes the reporting gateways moved since they started");
    cm_prom_u64(b, "shoal_controller_placement_moved_bytes_total", NULL, s.bytes_moved_total);
    cm_prom_family(b, "shoal_controller_placement_gateways", "gauge",
                   "Gateways whose demand reports are fresh");
    cm_prom_u64(b, "shoal_controller_placement_gateways", NULL, s.gateways);
}
