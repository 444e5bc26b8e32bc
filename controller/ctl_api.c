/*
 * ctl_api.c - the controller's HTTP listener (see ctl_api.h): admin-token
 * authentication, the URL map, and the helpers every handler answers with.
 * The handlers are in ctl_api_admin.c, ctl_api_internal.c and
 * ctl_api_metrics.c (ctl_api_impl.h lists them).
 *
 * Every answer is JSON (errors {"error","message"}) except /healthz and
 * /metrics, and carries X-Request-Id. Reads render a ctl_snapshot outside
 * the state lock; placement rows are ctl_pp's stored ones.
 */
#include "ctl_api.h"

#include <stdarg.h>
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
#include "ctl_api_impl.h"
#include "ctl_cost.h"
#include "ctl_model.h"
#include "ctl_state.h"

#define MAX_BODY (1u << 20)

static const char *const op_names[OP_COUNT] = {
#define CTL_OP_NAME_(e, s) s,
    CTL_OPS(CTL_OP_NAME_)
#undef CTL_OP_NAME_
};

static void
call_init(struct ctl_call *c, struct ctl_api *a, struct cm_http_req *r, enum ctl_op op)
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

void
ctl_reply_raw(struct ctl_call *c, int status, const char *ctype, char *body, size_t len)
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

void
ctl_reply_json(struct ctl_call *c, int status, json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    if (text == NULL) {
        text = cm_strdup("{\"error\":\"internal\",\"message\":\"out of memory\"}");
        status = 500;
    }
    ctl_reply_raw(c, status, "application/json", text, strlen(text));
}

void
ctl_reply_error(struct ctl_call *c, int status, const char *code, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ctl_reply_json(c, status, json_pack("{s:s, s:s}", "error", code, "message", msg));
}

static void
reply_method(struct ctl_call *c, const char *allow)
{
    cm_http_add_header(c->r, "Allow", allow);
    ctl_reply_error(c, 405, "method_not_allowed", "%s not allowed here (allowed: %s)",
                    cm_http_method(c->r), allow);
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
    struct ctl_call c;

    if (is_public(cm_http_path(r)) || authorized(a, r)) {
        return 0;
    }
    call_init(&c, a, r, OP_OTHER);
    cm_http_add_header(r, "WWW-Authenticate", "Bearer");
    ctl_reply_error(&c, 401, "unauthorized", "missing or wrong admin token");
    return 1;
}

/* ---- input ---- */

json_t *
ctl_body_object(struct ctl_call *c)
{
    size_t len;
    const void *body = cm_http_body(c->r, &len);
    json_error_t err;
    json_t *j;

    if (body == NULL || len == 0) {
        ctl_reply_error(c, 400, "bad_request", "a JSON object body is required");
        return NULL;
    }
    j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL) {
        ctl_reply_error(c, 400, "bad_request", "body is not valid JSON: %s", err.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        ctl_reply_error(c, 400, "bad_request", "body must be a JSON object");
        return NULL;
    }
    return j;
}

void
ctl_reply_snapshot(struct ctl_call *c, json_t *(*render)(const struct ctl_snapshot *))
{
    struct ctl_snapshot s;
    json_t *j;

    ctl_state_snapshot(c->a->st, cm_now_ns(), &s);
    j = render(&s);
    ctl_snapshot_fini(&s);
    ctl_reply_json(c, 200, j);
}

void
ctl_api_fair_init(struct ctl_api_fair *f, const struct ctl_snapshot *s)
{
    struct ctl_fair_in *in = cm_calloc(s->ntenants + 1, sizeof(*in));

    f->alloc = cm_calloc(s->ntenants + 1, sizeof(*f->alloc));
    f->counted = cm_calloc(s->ntenants + 1, sizeof(*f->counted));
    for (size_t i = 0; i < s->ntenants; i++) {
        in[i].weight = s->tenants[i].t.weight;
        in[i].demand = s->tenants[i].demand;
        in[i].served = s->tenants[i].share;
    }
    ctl_fair_compute(in, s->ntenants, s->capacity, f->alloc, f->counted, &f->sum);
    free(in);
}

void
ctl_api_fair_fini(struct ctl_api_fair *f)
{
    free(f->alloc);
    free(f->counted);
}

/* ---- routing ---- */

static int
is_get(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

/* A read-only route: GET (or HEAD) only. */
static void
route_read(struct ctl_call *c, const char *m, void (*fn)(struct ctl_call *))
{
    if (!is_get(m)) {
        reply_method(c, "GET, HEAD");
        return;
    }
    fn(c);
}

/* The part after "/s3-keys" ("" or "/{id}") of a tenant sub-path, or NULL. */
static const char *
s3keys_rest(const char *sub)
{
    if (sub == NULL || strncmp(sub, "/s3-keys", 8) != 0 || (sub[8] != '\0' && sub[8] != '/')) {
        return NULL;
    }
    return sub + 8;
}

/* /v1/tenants/{name}[/keys | /move | /cost | /s3-keys[/{id}]]; rest points
 * past "/v1/tenants/". */
static void
route_tenant(struct ctl_api *a, struct cm_http_req *r, const char *m, const char *rest)
{
    struct ctl_call c;
    const char *slash = strchr(rest, '/');
    const char *s3 = s3keys_rest(slash);
    size_t nlen = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    char name[CTL_NAME_MAX + 1];

    int cost = slash != NULL && strcmp(slash, "/cost") == 0;
    int move = slash != NULL && strcmp(slash, "/move") == 0;
    int keys = slash != NULL && strcmp(slash, "/keys") == 0;

    if (slash != NULL && !keys && s3 == NULL && !cost && !move) {
        call_init(&c, a, r, OP_OTHER);
        ctl_reply_error(&c, 404, "not_found", "no such resource");
        return;
    }
    call_init(&c, a, r, s3 != NULL ? OP_S3KEYS : keys ? OP_KEYS : OP_TENANT);
    if (!ctl_valid_name(rest, nlen)) {
        ctl_reply_error(&c, 400, "bad_request", "tenant name must match [a-z0-9][a-z0-9-]{0,62}");
        return;
    }
    memcpy(name, rest, nlen);
    name[nlen] = '\0';
    if (s3 != NULL && s3[0] == '\0') {
        if (is_get(m)) {
            ctl_admin_s3keys_list(&c, name);
        } else if (strcmp(m, "POST") == 0) {
            ctl_admin_s3keys_create(&c, name);
        } else {
            reply_method(&c, "GET, HEAD, POST");
        }
    } else if (s3 != NULL) {
        if (strcmp(m, "DELETE") != 0) {
            reply_method(&c, "DELETE");
        } else {
            ctl_admin_s3keys_delete(&c, name, s3 + 1);
        }
    } else if (cost) {
        if (is_get(m)) {
            ctl_admin_tenant_cost(&c, name);
        } else {
            reply_method(&c, "GET, HEAD");
        }
    } else if (move) {
        if (strcmp(m, "POST") == 0) {
            ctl_admin_tenant_move(&c, name);
        } else {
            reply_method(&c, "POST");
        }
    } else if (keys) {
        if (strcmp(m, "POST") != 0) {
            reply_method(&c, "POST");
        } else {
            ctl_admin_tenant_rotate(&c, name);
        }
    } else if (is_get(m)) {
        ctl_admin_tenant_show(&c, name);
    } else if (strcmp(m, "PATCH") == 0) {
        ctl_admin_tenant_patch(&c, name);
    } else if (strcmp(m, "DELETE") == 0) {
        ctl_admin_tenant_delete(&c, name);
    } else {
        reply_method(&c, "GET, HEAD, PATCH, DELETE");
    }
}

static const struct {
    const char *path;
    enum ctl_op op;
    void (*read)(struct ctl_call *);
} read_routes[] = {
    {"/healthz", OP_HEALTH, ctl_api_healthz},
    {"/metrics", OP_METRICS, ctl_api_metrics},
    {"/v1/nodes", OP_NODES, ctl_admin_nodes},
    {"/v1/placement", OP_PLACEMENT, ctl_admin_placement},
    {"/v1/placement/status", OP_PLACEMENT, ctl_admin_placement_status},
    {"/v1/fairness", OP_FAIRNESS, ctl_admin_fairness},
    {"/v1/internal/state", OP_STATE, ctl_internal_state},
};

static void
on_request(void *arg, struct cm_http_req *r)
{
    struct ctl_api *a = arg;
    const char *m = cm_http_method(r);
    const char *p = cm_http_path(r);
    struct ctl_call c;

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
            ctl_admin_tenants_list(&c);
        } else if (strcmp(m, "POST") == 0) {
            ctl_admin_tenants_create(&c);
        } else {
            reply_method(&c, "GET, HEAD, POST");
        }
    } else if (strncmp(p, "/v1/tenants/", 12) == 0) {
        route_tenant(a, r, m, p + 12);
    } else if (strncmp(p, "/v1/nodes/", 10) == 0 && strchr(p + 10, '/') != NULL &&
               (strcmp(strchr(p + 10, '/'), "/reclaim") == 0 ||
                strcmp(strchr(p + 10, '/'), "/remove") == 0)) {
        const char *op = strchr(p + 10, '/');
        int remove = strcmp(op, "/remove") == 0;

        call_init(&c, a, r, OP_NODES);
        if (remove && (strcmp(m, "POST") == 0 || strcmp(m, "DELETE") == 0)) {
            ctl_admin_node_remove(&c, p + 10, (size_t)(op - (p + 10)), strcmp(m, "DELETE") == 0);
        } else if (strcmp(m, "POST") != 0) {
            reply_method(&c, remove ? "POST, DELETE" : "POST");
        } else {
            ctl_admin_node_reclaim(&c, p + 10, (size_t)(op - (p + 10)));
        }
    } else if (strcmp(p, "/v1/placement/rebalance") == 0) {
        call_init(&c, a, r, OP_PLACEMENT);
        if (strcmp(m, "POST") == 0) {
            ctl_admin_placement_rebalance(&c);
        } else {
            reply_method(&c, "POST");
        }
    } else if (strcmp(p, "/v1/internal/demand") == 0) {
        call_init(&c, a, r, OP_DEMAND);
        if (strcmp(m, "POST") == 0) {
            ctl_internal_demand(&c);
        } else {
            reply_method(&c, "POST");
        }
    } else if (strncmp(p, "/v1/internal/tenants/", 21) == 0 && strchr(p + 21, '/') != NULL &&
               strcmp(strchr(p + 21, '/'), "/moved") == 0) {
        /* Counted with the tenant's other changes. */
        call_init(&c, a, r, OP_TENANT);
        if (strcmp(m, "POST") == 0) {
            ctl_internal_tenant_moved(&c, p + 21);
        } else {
            reply_method(&c, "POST");
        }
    } else if (strcmp(p, "/v1/internal/heartbeat") == 0) {
        call_init(&c, a, r, OP_HEARTBEAT);
        if (strcmp(m, "POST") == 0) {
            ctl_internal_heartbeat(&c);
        } else {
            reply_method(&c, "POST");
        }
    } else {
        call_init(&c, a, r, OP_OTHER);
        ctl_reply_error(&c, 404, "not_found", "no such resource");
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
    a->sms = cfg->sms;
    if (cfg->prices != NULL) {
        a->prices = *cfg->prices;
    } else {
        ctl_prices_default(&a->prices);
    }
    a->pp = cfg->pp;
    a->wa = cfg->wa;
    a->id_salt = (uint32_t)cm_random_u64();
    atomic_init(&a->next_req, 1);
    if (strlen(cfg->token) >= sizeof(a->token) || cfg->token[0] == '\0' || cfg->pp == NULL) {
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
