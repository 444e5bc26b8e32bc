/*
 * fns_heartbeat.c - heartbeat thread (cm_httpc + jansson); see fns_heartbeat.h.
 *
 * The thread sleeps on a condition variable so destroy wakes it at once.
 * Only the thread touches `reachable` and `token`.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_token.h"
#include "fns_heartbeat.h"
#include "fns_node.h"
#include "pol_sms.h"

#define FNS_HEARTBEAT_TIMEOUT_MS 2000

struct fns_heartbeat {
    struct fns_node *node;
    char *url, *token_file, *addr, *metrics_addr;
    char token[256];
    int have_token;
    int interval_ms;
    int removed;   /* the controller answered 410: logged once */
    int reachable; /* -1 unknown, 0 no, 1 yes */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int stop;
};

/* The SMS fields of a heartbeat (docs/internal-api.md), added to root. */
static void
fns_heartbeat_sms(struct fns_node *node, const struct fns_node_stats *st, json_t *root)
{
    struct fns_node_inst *in;
    struct fns_node_cost *c;
    size_t ni = fns_node_instances(node, &in), nc = fns_node_costs(node, &c), i;
    uint64_t now = cm_now_ns();
    json_t *ja = json_array(), *jc = json_array();

    for (i = 0; i < ni; i++) {
        json_array_append_new(
            ja,
            json_pack("{s:I, s:I, s:I, s:I, s:s, s:i, s:I, s:I, s:I, s:I, s:I}", "slot",
                      (json_int_t)in[i].slot, "tag", (json_int_t)in[i].tag, "tenant",
                      (json_int_t)in[i].tenant, "gen", (json_int_t)in[i].gen, "state",
                      pol_sms_state_name((enum pol_sms_state)in[i].state), "lost", in[i].lost,
                      "used", (json_int_t)in[i].used, "put_bytes", (json_int_t)in[i].put_bytes,
                      "read_bytes", (json_int_t)in[i].read_bytes, "read_chunks",
                      (json_int_t)in[i].read_chunks, "warm_age_ms",
                      (json_int_t)(now > in[i].warm_ns ? (now - in[i].warm_ns) / 1000000u : 0)));
    }
    for (i = 0; i < nc; i++) {
        json_array_append_new(
            jc,
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "tenant", (json_int_t)c[i].tenant,
                      "warmups", (json_int_t)c[i].warmups, "recoveries",
                      (json_int_t)c[i].recoveries, "cos_puts", (json_int_t)c[i].cos_puts,
                      "cos_gets", (json_int_t)c[i].cos_gets, "cos_deletes",
                      (json_int_t)c[i].cos_deletes, "cos_put_bytes", (json_int_t)c[i].cos_put_bytes,
                      "cos_get_bytes", (json_int_t)c[i].cos_get_bytes));
    }
    json_object_set_new(root, "instance_bytes", json_integer((json_int_t)st->sms.inst_bytes));
    json_object_set_new(root, "memory_bytes", json_integer((json_int_t)st->sms.memory_bytes));
    json_object_set_new(root, "cache_bytes", json_integer((json_int_t)st->sms.cache_bytes));
    json_object_set_new(root, "instances", ja);
    json_object_set_new(root, "sms_cost", jc);
    json_object_set_new(root, "recovery",
                        json_pack("{s:I, s:I, s:I, s:I}", "chunks",
                                  (json_int_t)st->sms.recovery_chunks, "bytes",
                                  (json_int_t)st->sms.recovery_bytes, "running",
                                  (json_int_t)st->sms.recovery_running, "helpers",
                                  (json_int_t)st->sms.recovery_helpers));
    free(in);
    free(c);
}

char *
fns_heartbeat_json(struct fns_node *node, const char *addr, const char *metrics_addr)
{
    struct fns_node_stats st;
    struct fns_node_tenant *t;
    size_t n, i;
    json_t *root, *jn, *jt;
    char *out, id[16];

    fns_node_stats(node, &st);
    n = fns_node_tenants(node, &t);
    jn = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:f, s:f}", "id", (json_int_t)st.id,
                   "addr", addr, "metrics_addr", metrics_addr, "capacity_bytes",
                   (json_int_t)st.capacity_bytes, "used_bytes", (json_int_t)st.used_bytes,
                   "instances", (json_int_t)st.instances, "incarnation", (json_int_t)st.incarnation,
                   "sched", st.sched, "cap_ops", st.cap_ops, "cap_bytes", st.cap_bytes);
    jt = json_object();
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%u", t[i].tenant);
        json_object_set_new(
            jt, id,
            json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:f, s:f, s:f, s:I}", "requests",
                      (json_int_t)t[i].requests, "bytes", (json_int_t)t[i].bytes, "queued",
                      (json_int_t)t[i].queued, "running", (json_int_t)t[i].running, "weight",
                      t[i].weight, "arrived_requests", (json_int_t)t[i].arrived_requests,
                      "arrived_bytes", (json_int_t)t[i].arrived_bytes, "arrived_cost",
                      t[i].arrived_cost, "served_cost", t[i].served_cost, "queue_wait_seconds",
                      (double)t[i].qwait.sum_ns / 1e9, "queue_waits",
                      (json_int_t)t[i].qwait.count));
    }
    root = json_object();
    json_object_set_new(root, "node", jn);
    json_object_set_new(root, "tenants", jt);
    fns_heartbeat_sms(node, &st, root);
    out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    free(t);
    if (out == NULL) {
        CM_ERROR("heartbeat json failed");
        abort();
    }
    return out;
}

/* A tenant id key: decimal digits only, fits in u32. */
static int
fns_heartbeat_parse_id(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (*s == '\0' || strlen(s) > 10) {
        return CM_E_BADARG;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return CM_E_BADARG;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > UINT32_MAX) {
        return CM_E_BADARG;
    }
    *out = v;
    return 0;
}

/* A non-negative integer member of o no larger than max: 0 and *out (def
 * when absent), or CM_E_PROTO. */
static int
fns_hb_uint(const json_t *o, const char *name, uint64_t max, uint64_t def, uint64_t *out)
{
    const json_t *v = json_object_get(o, name);

    if (v == NULL) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
        return CM_E_PROTO;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int
fns_hb_state(const char *s)
{
    for (int i = 0; i < POL_SMS_NSTATES; i++) {
        if (strcmp(s, pol_sms_state_name((enum pol_sms_state)i)) == 0) {
            return i;
        }
    }
    return -1;
}

/* The "sms" block: the policy and its configuration. */
static int
fns_hb_sms_cfg(const json_t *j, struct fns_sms_orders *o)
{
    const json_t *pol = json_object_get(j, "policy");
    uint64_t iv, m, nn, wa, wd, a, x;

    if (!json_is_object(j) || (pol != NULL && !json_is_string(pol)) ||
        fns_hb_uint(j, "interval_ms", 1ull << 40, 0, &iv) != 0 ||
        fns_hb_uint(j, "active", UINT32_MAX, 0, &m) != 0 ||
        fns_hb_uint(j, "degraded", UINT32_MAX, 0, &nn) != 0 ||
        fns_hb_uint(j, "warm_active_ms", 1ull << 40, 0, &wa) != 0 ||
        fns_hb_uint(j, "warm_degraded_ms", 1ull << 40, 0, &wd) != 0 ||
        fns_hb_uint(j, "compact_age", UINT32_MAX, 0, &a) != 0 ||
        fns_hb_uint(j, "max_instances", UINT32_MAX, 0, &x) != 0) {
        return CM_E_PROTO;
    }
    o->has_sms = 1;
    snprintf(o->policy, sizeof(o->policy), "%s", pol != NULL ? json_string_value(pol) : "sms");
    o->cfg = (struct pol_sms_cfg){.interval_ns = iv * 1000000u,
                                  .active_intervals = (uint32_t)m,
                                  .degraded_intervals = (uint32_t)nn,
                                  .warm_active_ns = wa * 1000000u,
                                  .warm_degraded_ns = wd * 1000000u,
                                  .compact_age = (uint32_t)a,
                                  .max_instances = (uint32_t)x};
    return 0;
}

/* "pools", "decisions" and "reclaim". */
static int
fns_hb_sms_lists(const json_t *root, struct fns_sms_orders *o)
{
    const json_t *p = json_object_get(root, "pools"), *d = json_object_get(root, "decisions");
    const json_t *r = json_object_get(root, "reclaim"), *v;
    size_t i;

    if ((p != NULL && !json_is_array(p)) || (d != NULL && !json_is_array(d)) ||
        (r != NULL && !json_is_object(r))) {
        return CM_E_PROTO;
    }
    o->pools = cm_calloc(json_array_size(p) + 1, sizeof(*o->pools));
    json_array_foreach(p, i, v)
    {
        uint64_t t, g, age;

        if (!json_is_object(v) || fns_hb_uint(v, "tenant", UINT32_MAX, UINT64_MAX, &t) != 0 ||
            t == UINT64_MAX || fns_hb_uint(v, "gen", INT64_MAX, 0, &g) != 0 ||
            fns_hb_uint(v, "gen_age_ms", INT64_MAX, 0, &age) != 0) {
            return CM_E_PROTO;
        }
        o->pools[o->npools++] = (struct fns_sms_pool){(uint32_t)t, g, age};
    }
    o->decisions = cm_calloc(json_array_size(d) + 1, sizeof(*o->decisions));
    json_array_foreach(d, i, v)
    {
        const json_t *st = json_object_get(v, "state");
        uint64_t slot, tag, g, w;
        int state;

        if (!json_is_object(v) || !json_is_string(st) ||
            (state = fns_hb_state(json_string_value(st))) < 0 ||
            fns_hb_uint(v, "slot", 4095, UINT64_MAX, &slot) != 0 || slot == UINT64_MAX ||
            fns_hb_uint(v, "tag", UINT32_MAX, UINT64_MAX, &tag) != 0 || tag == UINT64_MAX ||
            fns_hb_uint(v, "gen", INT64_MAX, 0, &g) != 0 ||
            fns_hb_uint(v, "warm_up", 1, 0, &w) != 0) {
            return CM_E_PROTO;
        }
        o->decisions[o->ndecisions++] =
            (struct fns_sms_decision){(uint32_t)slot, (uint32_t)tag, state, g, (int)w};
    }
    if (r != NULL) {
        const json_t *all = json_object_get(r, "all"), *slots = json_object_get(r, "slots");

        if ((all != NULL && !json_is_boolean(all)) || (slots != NULL && !json_is_array(slots))) {
            return CM_E_PROTO;
        }
        o->reclaim_all = all != NULL && json_is_true(all);
        o->reclaim = cm_calloc(json_array_size(slots) + 1, sizeof(*o->reclaim));
        json_array_foreach(slots, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 4095) {
                return CM_E_PROTO;
            }
            o->reclaim[o->nreclaim++] = (uint32_t)json_integer_value(v);
        }
    }
    return 0;
}

/* The SMS part of an answer, handed to the node when there is one. */
static int
fns_heartbeat_apply_sms(struct fns_node *node, const json_t *root)
{
    const json_t *sms = json_object_get(root, "sms");
    struct fns_sms_orders *o;

    if (sms == NULL && json_object_get(root, "pools") == NULL &&
        json_object_get(root, "decisions") == NULL && json_object_get(root, "reclaim") == NULL) {
        return 0;
    }
    o = cm_calloc(1, sizeof(*o));
    if ((sms != NULL && fns_hb_sms_cfg(sms, o) != 0) || fns_hb_sms_lists(root, o) != 0) {
        fns_sms_orders_free(o);
        return CM_E_PROTO;
    }
    fns_node_sms_orders(node, o);
    return 0;
}

int
fns_heartbeat_apply_answer(struct fns_node *node, const char *body)
{
    json_error_t jerr;
    json_t *root = json_loads(body, 0, &jerr), *w, *v;
    const char *key;
    uint32_t *tenants = NULL;
    double *weights = NULL;
    size_t n = 0, cap;
    int rc = 0;

    if (root == NULL || !json_is_object(root)) {
        rc = CM_E_PROTO;
        goto out;
    }
    rc = fns_heartbeat_apply_sms(node, root);
    if (rc != 0) {
        goto out;
    }
    w = json_object_get(root, "weights");
    if (w == NULL) {
        goto out;
    }
    if (!json_is_object(w)) {
        rc = CM_E_PROTO;
        goto out;
    }
    cap = json_object_size(w);
    tenants = cm_malloc((cap ? cap : 1) * sizeof(*tenants));
    weights = cm_malloc((cap ? cap : 1) * sizeof(*weights));
    json_object_foreach(w, key, v)
    {
        uint64_t id;

        if (fns_heartbeat_parse_id(key, &id) != 0 || !json_is_number(v)) {
            rc = CM_E_PROTO;
            goto out;
        }
        tenants[n] = (uint32_t)id;
        weights[n] = json_number_value(v);
        n++;
    }
    if (n > 0) {
        fns_node_set_weights(node, tenants, weights, n);
    }
out:
    free(tenants);
    free(weights);
    json_decref(root);
    return rc;
}

static void
fns_heartbeat_state(struct fns_heartbeat *c, int reachable, const char *why)
{
    if (c->reachable == reachable) {
        return;
    }
    c->reachable = reachable;
    if (reachable) {
        CM_INFO("controller reachable url=%s", c->url);
    } else {
        CM_WARN("controller unreachable url=%s why=%s", c->url, why);
    }
}

static void
fns_heartbeat_beat(struct fns_heartbeat *c)
{
    struct cm_httpc_resp resp = {0};
    char *body;
    char why[64];
    int rc;

    if (!c->have_token && c->token_file != NULL) {
        if (cm_token_load(c->token_file, 0, c->token, sizeof(c->token)) == 0) {
            c->have_token = 1;
        } else {
            fns_heartbeat_state(c, 0, "no admin token");
            return;
        }
    }
    body = fns_heartbeat_json(c->node, c->addr, c->metrics_addr);
    rc = cm_httpc_request("POST", c->url, c->have_token ? c->token : NULL, body,
                          FNS_HEARTBEAT_TIMEOUT_MS, &resp);
    free(body);
    if (rc != 0) {
        fns_heartbeat_state(c, 0, cm_errname(rc));
        return;
    }
    if (resp.status == 410) {
        /* `shoalctl node remove` took this id out: nothing is placed here
         * any more, and the id is never taken back. */
        if (!c->removed) {
            CM_ERROR("node removed from the cluster: the controller refuses its heartbeats "
                     "(http 410); nothing is placed here any more, and it can be stopped");
            c->removed = 1;
        }
        c->reachable = 0;
    } else if (resp.status != 200) {
        snprintf(why, sizeof(why), "http %d", resp.status);
        fns_heartbeat_state(c, 0, why);
    } else if (fns_heartbeat_apply_answer(c->node, resp.body != NULL ? resp.body : "") != 0) {
        fns_heartbeat_state(c, 0, "bad answer");
    } else {
        fns_heartbeat_state(c, 1, "");
    }
    cm_httpc_resp_fini(&resp);
}

static void *
fns_heartbeat_main(void *arg)
{
    struct fns_heartbeat *c = arg;
    struct timespec ts;

    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        pthread_mutex_unlock(&c->mu);
        fns_heartbeat_beat(c);
        pthread_mutex_lock(&c->mu);
        ts = cm_deadline(CLOCK_MONOTONIC, (uint64_t)c->interval_ms * 1000000u);
        while (!c->stop && pthread_cond_timedwait(&c->cond, &c->mu, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void
fns_heartbeat_free(struct fns_heartbeat *c)
{
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c->url);
    free(c->token_file);
    free(c->addr);
    free(c->metrics_addr);
    free(c);
}

int
fns_heartbeat_create(const struct fns_heartbeat_cfg *cfg, struct fns_node *node,
                     struct fns_heartbeat **out)
{
    struct fns_heartbeat *c;
    struct cm_buf url;
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (cfg->controller == NULL || cfg->controller[0] == '\0') {
        return 0;
    }
    c = cm_calloc(1, sizeof(*c));
    c->node = node;
    cm_buf_init(&url);
    if (strncmp(cfg->controller, "http://", 7) == 0 ||
        strncmp(cfg->controller, "https://", 8) == 0) {
        cm_buf_printf(&url, "%s", cfg->controller);
        while (url.len > 0 && url.p[url.len - 1] == '/') {
            url.p[--url.len] = '\0';
        }
    } else {
        cm_buf_printf(&url, "http://%s", cfg->controller);
    }
    cm_buf_printf(&url, "/v1/internal/heartbeat");
    c->url = cm_buf_take(&url, NULL);
    c->token_file =
        cfg->token_file != NULL && cfg->token_file[0] != '\0' ? cm_strdup(cfg->token_file) : NULL;
    c->addr = cm_strdup(cfg->addr);
    c->metrics_addr = cm_strdup(cfg->metrics_addr);
    c->interval_ms = cfg->interval_ms > 0 ? cfg->interval_ms : 1000;
    c->reachable = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* a wall clock step must not stop beats */
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    rc = pthread_create(&c->thread, NULL, fns_heartbeat_main, c);
    if (rc != 0) {
        fns_heartbeat_free(c);
        return -rc;
    }
    *out = c;
    return 0;
}

void
fns_heartbeat_destroy(struct fns_heartbeat *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    fns_heartbeat_free(c);
}
