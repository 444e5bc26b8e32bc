/*
 * gw_front.c - routing, auth and the object handlers of the tenant API.
 *
 *   HTTP thread                       engine thread        committer (gw_commit.c)
 *   ───────────                       ─────────────        ───────────────────────
 *   headers(): route, PUT auth/411/413
 *   request(): auth, key, meta read
 *     GET  ─suspend─▶ gw_engine_get ─▶ get_done: respond
 *     PUT  ─suspend─▶ gw_engine_put ─▶ put_done ─queue─▶  one LMDB write txn
 *     DELETE ─suspend──────────────────────────queue─▶  for the whole queue,
 *                                     on_layout ─queue─▶  fsync'd commit, then
 *     LIST, HEAD: answered inline                         commit_done: respond
 *                                                         201/204/404, delete
 *                                                         old chunks
 *
 * Owns: the request contexts (struct req, freed once answered, each with
 * the commit op it may need), the committer and the request stats.
 * Borrows meta, state and engine. An allocation that fails fails the
 * request it serves (503 unavailable), never the process.
 *
 * Invariants:
 *   - no HTTP thread waits on chunk I/O or on an fsync: those requests are
 *     suspended and answered from the engine or committer thread;
 *   - a PUT is acknowledged only after its layout is committed to LMDB;
 *   - a reader uses the one layout it read in one read txn; the chunks of a
 *     replaced or deleted version are deleted once every GET that began
 *     before the commit is answered (gw_grace), plus delete_delay_ms;
 *   - commit ops are applied in queue order; put_done and on_layout both
 *     queue from the engine thread, so an object's layout updates follow
 *     its commit;
 *   - the committer is the only metadata writer besides tenant purges and
 *     state saves in gw_state.
 */
#include "gw_front.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_commit.h"
#include "gw_grace.h"
#include "gw_meta.h"
#include "gw_parse.h"
#include "gw_state.h"

#define OBJ_PREFIX "/v1/objects/"
#define OBJ_PREFIX_LEN (sizeof(OBJ_PREFIX) - 1)

/* The HTTP request kinds (metrics label op=). */
enum req_kind { REQ_PUT, REQ_GET, REQ_HEAD, REQ_DELETE, REQ_LIST, REQ_N, REQ_NONE = -1 };
static const char *const req_names[REQ_N] = {"put", "get", "head", "delete", "list"};

enum route { R_NONE, R_HEALTH, R_METRICS, R_LIST, R_OBJECT };

struct req {
    struct gw_front *f;
    struct cm_http_req *r;
    char id[GW_REQID_MAX + 1];
    char method[8]; /* copied: r's strings die with the response */
    enum req_kind kind;
    int async; /* suspended: counted in f->inflight */
    uint32_t tenant;
    uint64_t t0;
    uint64_t bytes;
    char key[GW_KEY_MAX];
    size_t klen;
    /* GET */
    struct gw_grace_bucket *grace; /* in the grace period from before the layout read */
    struct gw_layout lay;
    uint64_t off, len;
    int partial;
    /* PUT, DELETE */
    struct gw_commit_op commit;
};

struct gw_front {
    struct gw_front_cfg cfg;
    struct gw_meta *meta;
    struct gw_engine *engine;
    struct gw_state *state;
    struct cm_reqstats *rs;
    struct gw_grace *grace; /* GETs in flight vs the deletes of old versions */
    struct gw_commit *commit;
    atomic_int inflight;
    atomic_int draining;
};

/* ---- responses ---- */

#define NOMEM_BODY "{\"error\":\"unavailable\",\"message\":\"gateway out of memory, retry later\"}"

/* The request's context, or NULL when there is no memory for it: then r
 * is answered 503 here. */
static struct req *
req_new(struct gw_front *f, struct cm_http_req *r, enum req_kind kind)
{
    struct req *q = calloc(1, sizeof(*q));
    const char *cid = cm_http_header(r, "X-Request-Id");
    char id[GW_REQID_MAX + 1];

    if (gw_reqid_ok(cid)) {
        snprintf(id, sizeof(id), "%s", cid);
    } else {
        snprintf(id, sizeof(id), "%016llx", (unsigned long long)cm_random_u64());
    }
    if (q == NULL) {
        CM_WARN("request failed method=%s status=503 error=unavailable err=ENOMEM req=%s",
                cm_http_method(r), id);
        cm_http_add_header(r, "X-Request-Id", id);
        cm_http_respond(r, 503, "application/json", NOMEM_BODY, sizeof(NOMEM_BODY) - 1,
                        CM_HTTP_STATIC);
        return NULL;
    }
    q->f = f;
    q->r = r;
    q->kind = kind;
    snprintf(q->method, sizeof(q->method), "%s", cm_http_method(r));
    q->t0 = cm_now_ns();
    memcpy(q->id, id, sizeof(id));
    return q;
}

static void
req_done(struct req *q, int status, const char *error)
{
    struct gw_front *f = q->f;
    uint64_t ns = cm_now_ns() - q->t0;

    if (q->kind != REQ_NONE) {
        cm_reqstats_record(f->rs, q->tenant, q->kind, status, q->bytes, ns);
    }
    if (status >= 400) {
        CM_WARN("request failed op=%s method=%s status=%d error=%s tenant=%u req=%s ms=%.3f",
                q->kind != REQ_NONE ? req_names[q->kind] : "-", q->method, status, error, q->tenant,
                q->id, (double)ns / 1e6);
    } else {
        CM_DEBUG("request op=%s method=%s status=%d bytes=%llu tenant=%u req=%s ms=%.3f",
                 q->kind != REQ_NONE ? req_names[q->kind] : "-", q->method, status,
                 (unsigned long long)q->bytes, q->tenant, q->id, (double)ns / 1e6);
    }
    if (q->async) {
        atomic_fetch_sub(&f->inflight, 1);
    }
    if (q->grace != NULL) {
        gw_grace_exit(f->grace, q->grace);
    }
    free(q);
}

/* Answers and frees q. body per mem (see cm_http_respond). */
static void
reply(struct req *q, int status, const char *ctype, void *body, size_t len, enum cm_http_mem mem)
{
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond(q->r, status, ctype, body, len, mem);
    req_done(q, status, NULL);
}

static void
reply_head(struct req *q, int status, const char *ctype, uint64_t len)
{
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond_head(q->r, status, ctype, len);
    req_done(q, status, NULL);
}

/* An API error: status + {"error","message"}; msg is a static one-liner
 * without quotes or backslashes. */
static void
fail(struct req *q, int status, const char *code, const char *msg)
{
    char buf[512];
    int n = snprintf(buf, sizeof(buf), "{\"error\":\"%s\",\"message\":\"%s\"}", code, msg);

    if (status == 429) {
        cm_http_add_header(q->r, "Retry-After", "1");
    } else if (status == 401) {
        cm_http_add_header(q->r, "WWW-Authenticate", "Bearer");
    }
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond(q->r, status, "application/json", buf, (size_t)n, CM_HTTP_COPY);
    req_done(q, status, code);
}

static void
fail_status(struct req *q, int rc)
{
    switch (rc) {
    case CM_E_BUSY:
        fail(q, 429, "slow_down", "tenant queue is full, retry later");
        break;
    case CM_E_UNAVAIL:
    case CM_E_TIMEOUT:
    case -ECONNREFUSED:
    case -ECONNRESET:
    case -EPIPE:
    case -EIO:
        fail(q, 503, "unavailable", "not enough chunk holders reachable");
        break;
    case CM_E_TOOBIG:
        fail(q, 413, "too_large", "object too large");
        break;
    case -ENOMEM:
        fail(q, 503, "unavailable", "gateway out of memory, retry later");
        break;
    default:
        CM_ERROR("internal error req=%s tenant=%u err=%s", q->id, q->tenant, cm_errname(rc));
        fail(q, 500, "internal", "internal error, see the gateway log");
        break;
    }
}

static void
suspend(struct req *q)
{
    q->async = 1;
    atomic_fetch_add(&q->f->inflight, 1);
    cm_http_suspend(q->r);
}

static void
add_etag_version(struct req *q, const struct gw_layout *l)
{
    char v[40];

    snprintf(v, sizeof(v), "\"%016llx\"", (unsigned long long)l->etag);
    cm_http_add_header(q->r, "ETag", v);
    snprintf(v, sizeof(v), "%llu", (unsigned long long)l->version);
    cm_http_add_header(q->r, "X-Shoal-Version", v);
}

/* ---- routing and auth ---- */

static enum route
route_of(const char *path)
{
    if (strcmp(path, "/healthz") == 0) {
        return R_HEALTH;
    }
    if (strcmp(path, "/metrics") == 0) {
        return R_METRICS;
    }
    if (strcmp(path, "/v1/objects") == 0) {
        return R_LIST;
    }
    if (strncmp(path, OBJ_PREFIX, OBJ_PREFIX_LEN) == 0) {
        return R_OBJECT;
    }
    return R_NONE;
}

static enum req_kind
object_kind(const char *method)
{
    if (strcmp(method, "GET") == 0) {
        return REQ_GET;
    }
    if (strcmp(method, "HEAD") == 0) {
        return REQ_HEAD;
    }
    if (strcmp(method, "PUT") == 0) {
        return REQ_PUT;
    }
    if (strcmp(method, "DELETE") == 0) {
        return REQ_DELETE;
    }
    return REQ_NONE;
}

/* Answers 404/405 for a request that names no handler; else 0 and *kind. */
static int
route_check(struct gw_front *f, struct cm_http_req *r, enum route *rt, enum req_kind *kind)
{
    const char *m = cm_http_method(r);
    struct req *q;

    *rt = route_of(cm_http_path(r));
    *kind = REQ_NONE;
    switch (*rt) {
    case R_NONE:
        if ((q = req_new(f, r, REQ_NONE)) != NULL) {
            fail(q, 404, "not_found", "no such path");
        }
        return 1;
    case R_HEALTH:
    case R_METRICS:
        if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET, HEAD");
        break;
    case R_LIST:
        if (strcmp(m, "GET") == 0) {
            *kind = REQ_LIST;
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET");
        break;
    case R_OBJECT:
        *kind = object_kind(m);
        if (*kind != REQ_NONE) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        break;
    }
    if ((q = req_new(f, r, REQ_NONE)) != NULL) {
        fail(q, 405, "method_not_allowed", "method not allowed on this path");
    }
    return 1;
}

/* 0 with a snapshot reference (*snap) and its tenant, or answered 401. */
static int
authenticate(struct req *q, struct gw_snap **snap, const struct gw_tenant **tenant)
{
    const char *tok;
    size_t toklen;
    struct gw_snap *s;
    const struct gw_tenant *t;

    if (gw_parse_bearer(cm_http_header(q->r, "Authorization"), &tok, &toklen) != 0) {
        fail(q, 401, "unauthorized", "missing or malformed bearer key");
        return -1;
    }
    s = gw_state_snap(q->f->state);
    t = gw_snap_auth(s, tok, toklen);
    if (t == NULL) {
        gw_snap_unref(s);
        fail(q, 401, "unauthorized", "unknown key");
        return -1;
    }
    q->tenant = t->id;
    *snap = s;
    *tenant = t;
    return 0;
}

static int
parse_key(struct req *q)
{
    const char *raw = cm_http_path(q->r) + OBJ_PREFIX_LEN;
    const char *why = NULL;

    if (gw_parse_key(raw, strlen(raw), q->key, &q->klen, &why) != 0) {
        fail(q, 400, "bad_request", why);
        return -1;
    }
    return 0;
}

/* Data chunks per stripe: small objects are stored as 1+m whole copies. */
static uint8_t
put_k(const struct gw_front *f, const struct gw_tenant *t, uint64_t size)
{
    return size < f->cfg.small_threshold ? 1 : t->k;
}

/* The PUT checks that must happen before the body is read. */
static int
put_precheck(struct req *q)
{
    uint64_t clen;

    if (cm_http_content_length(q->r, &clen) != 0) {
        fail(q, 411, "length_required", "PUT needs a Content-Length");
        return -1;
    }
    if (clen > q->f->cfg.max_object_size) {
        fail(q, 413, "too_large", "object larger than max_object_size");
        return -1;
    }
    q->bytes = clen;
    return 0;
}

static int
front_headers(void *arg, struct cm_http_req *r)
{
    struct gw_front *f = arg;
    enum route rt;
    enum req_kind kind;
    struct req *q;
    struct gw_snap *s;
    const struct gw_tenant *t;

    if (route_check(f, r, &rt, &kind) != 0) {
        return 1;
    }
    if (kind != REQ_PUT) {
        return 0;
    }
    if ((q = req_new(f, r, kind)) == NULL) {
        return 1;
    }
    if (atomic_load(&f->draining)) {
        fail(q, 503, "unavailable", "gateway is shutting down");
        return 1;
    }
    if (authenticate(q, &s, &t) != 0) {
        return 1;
    }
    if (parse_key(q) != 0 || put_precheck(q) != 0) {
        gw_snap_unref(s);
        return 1;
    }
    /* Room to pad the last stripe in place: the engine need not copy it. */
    cm_http_reserve_body(r, gw_engine_put_room(f->engine, put_k(f, t, q->bytes), q->bytes));
    gw_snap_unref(s);
    free(q);
    return 0;
}

/* ---- GET / HEAD ---- */

static void
get_done(void *arg, int status, void *buf, size_t len)
{
    struct req *q = arg;

    if (status != 0) {
        cm_free_big(buf);
        fail_status(q, status);
        return;
    }
    if (len != q->len) {
        cm_free_big(buf);
        CM_ERROR("engine returned a short read req=%s tenant=%u want=%llu got=%zu", q->id,
                 q->tenant, (unsigned long long)q->len, len);
        fail(q, 500, "internal", "internal error, see the gateway log");
        return;
    }
    q->bytes = len;
    add_etag_version(q, &q->lay);
    cm_http_add_header(q->r, "Accept-Ranges", "bytes");
    if (q->partial) {
        char cr[96];
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                 (unsigned long long)(q->off + q->len - 1), (unsigned long long)q->lay.size);
        cm_http_add_header(q->r, "Content-Range", cr);
    }
    reply(q, q->partial ? 206 : 200, "application/octet-stream", buf, len, CM_HTTP_FREE);
}

static void
handle_get(struct req *q)
{
    struct gw_front *f = q->f;
    const char *range = cm_http_header(q->r, "Range");
    char cr[96];
    int rc;

    if (q->kind == REQ_GET) {
        q->grace = gw_grace_enter(f->grace); /* before the read: see retire() */
    }
    rc = gw_meta_get(f->meta, q->tenant, q->key, q->klen, &q->lay);
    if (rc == CM_E_NOTFOUND) {
        fail(q, 404, "not_found", "no such object");
        return;
    }
    if (rc != 0) {
        fail_status(q, rc);
        return;
    }
    switch (gw_parse_range(range, q->lay.size, &q->off, &q->len)) {
    case GW_RANGE_NONE:
        q->off = 0;
        q->len = q->lay.size;
        break;
    case GW_RANGE_OK:
        q->partial = 1;
        break;
    case GW_RANGE_UNSAT:
        snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)q->lay.size);
        cm_http_add_header(q->r, "Content-Range", cr);
        fail(q, 416, "range_not_satisfiable", "range outside the object");
        return;
    case GW_RANGE_BAD:
        fail(q, 400, "bad_request", "bad Range header (one bytes=a-b range)");
        return;
    }
    if (q->kind == REQ_HEAD || q->len == 0) {
        add_etag_version(q, &q->lay);
        cm_http_add_header(q->r, "Accept-Ranges", "bytes");
        if (q->partial) {
            snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                     (unsigned long long)(q->off + q->len - 1), (unsigned long long)q->lay.size);
            cm_http_add_header(q->r, "Content-Range", cr);
        }
        if (q->kind == REQ_HEAD) {
            reply_head(q, q->partial ? 206 : 200, "application/octet-stream", q->len);
        } else {
            reply(q, 200, "application/octet-stream", NULL, 0, CM_HTTP_STATIC);
        }
        return;
    }
    suspend(q);
    gw_engine_get(f->engine, &q->lay, q->off, q->len, get_done, q);
}

/* ---- PUT / DELETE: the committer answers ---- */

struct retired {
    struct gw_front *f;
    struct gw_layout lay;
};

static void
retire_run(void *arg)
{
    struct retired *r = arg;

    gw_engine_delete(r->f->engine, &r->lay, r->f->cfg.delete_delay_ms);
    free(r);
}

/* Deletes the chunks of a version that a commit replaced or deleted, once
 * the GETs that may have read its layout are answered. The commit happened
 * before this call, and a GET enters before it reads: a GET that enters
 * later reads the new layout. Out of memory, the chunks stay (orphans, as
 * when the gateway stops before their delete). */
static void
retire(struct gw_front *f, const struct gw_layout *old)
{
    struct retired *r = malloc(sizeof(*r));

    if (r != NULL) {
        r->f = f;
        r->lay = *old;
    }
    if (r == NULL || gw_grace_defer(f->grace, retire_run, r) != 0) {
        CM_WARN("old version left undeleted object=%016llx tenant=%u err=ENOMEM",
                (unsigned long long)old->object, old->tenant);
        free(r);
    }
}

/* The committer's answer to a PUT or DELETE (committer thread). */
static void
commit_done(struct gw_commit_op *op)
{
    struct req *q = CM_CONTAINER_OF(op, struct req, commit);
    struct gw_front *f = q->f;

    if (op->kind == COMMIT_DELETE) {
        if (op->rc == 0) {
            reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
            retire(f, &op->old);
        } else if (op->rc == CM_E_NOTFOUND) {
            fail(q, 404, "not_found", "no such object");
        } else {
            fail_status(q, op->rc);
        }
        return;
    }
    if (op->rc == 0) {
        add_etag_version(q, &op->lay);
        reply(q, 201, NULL, NULL, 0, CM_HTTP_STATIC);
        if (op->had_old) {
            retire(f, &op->old);
        }
        return;
    }
    gw_engine_delete(f->engine, &op->lay, 0);
    if (op->rc == GW_COMMIT_TENANT_GONE) {
        fail(q, 401, "unauthorized", "tenant was deleted");
    } else {
        fail_status(q, op->rc);
    }
}

static void
put_done(void *arg, int status, const struct gw_layout *layout)
{
    struct req *q = arg;

    if (status != 0) {
        fail_status(q, status);
        return;
    }
    q->commit.kind = COMMIT_PUT;
    q->commit.key = q->key;
    q->commit.klen = q->klen;
    q->commit.lay = *layout;
    q->commit.lay.tenant = q->tenant;
    q->commit.done = commit_done;
    gw_commit_queue(q->f->commit, &q->commit);
}

void
gw_front_on_layout(void *arg, const struct gw_layout *layout)
{
    struct gw_front *f = arg;

    if (gw_commit_update(f->commit, layout) != 0) {
        CM_WARN("layout update dropped object=%016llx tenant=%u err=ENOMEM",
                (unsigned long long)layout->object, layout->tenant);
    }
}

static void
handle_put(struct req *q, struct gw_snap *s, const struct gw_tenant *t)
{
    struct gw_front *f = q->f;
    const uint32_t *row;
    size_t nrow, len, cap;
    void *body;

    if (put_precheck(q) != 0) {
        return;
    }
    body = cm_http_take_body(q->r, &len, &cap);
    if (len != q->bytes) {
        cm_free_big(body);
        fail(q, 400, "bad_request", "body shorter than Content-Length");
        return;
    }
    gw_snap_row(s, t, (uint32_t)(cm_hash64(q->key, q->klen, t->id) % s->partitions), &row, &nrow);
    if (nrow == 0) {
        cm_free_big(body);
        fail(q, 503, "unavailable", "no storage nodes known for this partition");
        return;
    }
    if (body == NULL) {
        cap = 0;
        if ((body = malloc(1)) == NULL) { /* the engine takes ownership of a real buffer */
            fail_status(q, -ENOMEM);
            return;
        }
    }
    suspend(q);
    gw_engine_put(f->engine, t->id, row, nrow, put_k(f, t, len), t->m, body, len, cap, put_done, q);
}

static void
handle_delete(struct req *q)
{
    q->commit.kind = COMMIT_DELETE;
    q->commit.tenant = q->tenant;
    q->commit.key = q->key;
    q->commit.klen = q->klen;
    q->commit.done = commit_done;
    suspend(q);
    gw_commit_queue(q->f->commit, &q->commit);
}

/* ---- LIST ---- */

struct list_out {
    json_t *arr;
    int nomem; /* an entry could not be added: the listing is not whole */
    const char *last;
    size_t last_len;
    char lastbuf[GW_KEY_MAX];
};

static void
list_one(void *arg, const char *key, size_t klen, const struct gw_layout *l)
{
    struct list_out *o = arg;
    char etag[24];
    json_t *obj = json_object();

    snprintf(etag, sizeof(etag), "%016llx", (unsigned long long)l->etag);
    if (obj == NULL || json_object_set_new(obj, "key", json_stringn(key, klen)) != 0 ||
        json_object_set_new(obj, "size", json_integer((json_int_t)l->size)) != 0 ||
        json_object_set_new(obj, "etag", json_string(etag)) != 0 ||
        json_object_set_new(obj, "version", json_integer((json_int_t)l->version)) != 0) {
        json_decref(obj);
        o->nomem = 1;
        return;
    }
    if (json_array_append_new(o->arr, obj) != 0) { /* it took obj */
        o->nomem = 1;
        return;
    }
    memcpy(o->lastbuf, key, klen);
    o->last = o->lastbuf;
    o->last_len = klen;
}

static void
handle_list(struct req *q)
{
    struct gw_list_query lq;
    struct list_out o = {0};
    const char *why = NULL;
    json_t *root;
    char *text;
    int more = 0, rc;

    if (gw_parse_list_query(cm_http_query(q->r, "prefix"), cm_http_query(q->r, "after"),
                            cm_http_query(q->r, "limit"), &lq, &why) != 0) {
        fail(q, 400, "bad_request", why);
        return;
    }
    o.arr = json_array();
    rc = gw_meta_list(q->f->meta, q->tenant, lq.prefix, lq.prefix_len, lq.after, lq.after_len,
                      lq.limit, list_one, &o, &more);
    if (rc != 0 || o.nomem) {
        json_decref(o.arr);
        fail_status(q, rc != 0 ? rc : -ENOMEM);
        return;
    }
    root = json_object();
    text = NULL;
    if (root != NULL && json_object_set_new(root, "objects", o.arr) == 0 &&
        json_object_set_new(root, "next", more && o.last != NULL
                                              ? json_stringn(o.last, o.last_len)
                                              : json_null()) == 0) {
        text = json_dumps(root, JSON_COMPACT);
    } else if (root == NULL) {
        json_decref(o.arr);
    }
    json_decref(root);
    if (text == NULL) {
        fail_status(q, -ENOMEM); /* encoding what was listed only needs memory */
        return;
    }
    reply(q, 200, "application/json", text, strlen(text), CM_HTTP_FREE);
}

/* ---- health and metrics ---- */

/* Gateway figures beside the request stats: X(name, type, help). */
#define GW_FRONT_METRICS(X)                                                                        \
    X(buffered_bytes, "gauge", "Object bytes held until every chunk is persisted in COS")          \
    X(buffered_objects, "gauge", "Objects held until every chunk is persisted in COS")             \
    X(redriven_chunks_total, "counter", "Chunks stored again after their holder was lost")         \
    X(parity_reads_total, "counter", "GET stripes served by decoding parity")                      \
    X(persist_notices_total, "counter", "Chunks a node announced persisted in COS")                \
    X(persist_stats_total, "counter", "STATs sent because a persisted notice was late or lost")    \
    X(buffer_cache_bytes, "gauge", "Freed big buffers kept for reuse (--buffer-cache)")            \
    X(buffer_cache_hits_total, "counter", "Big buffers taken from the cache")                      \
    X(buffer_cache_misses_total, "counter", "Big buffers allocated because none cached fit")       \
    X(inflight_requests, "gauge", "Suspended requests waiting on chunk I/O or a commit")           \
    X(retired_versions_waiting, "gauge",                                                           \
      "Replaced or deleted versions whose chunks wait for GETs")                                   \
    X(commit_batches_total, "counter", "Metadata write transactions of the group committer")       \
    X(commit_ops_total, "counter", "Metadata operations committed (puts, deletes, layouts)")       \
    X(commit_queued_ops, "gauge", "Metadata operations waiting for the group committer")           \
    X(state_epoch, "gauge", "Epoch of the controller state in use")                                \
    X(controller_up, "gauge", "1 when the last controller state poll succeeded")                   \
    X(state_polls_failed_total, "counter", "Controller state polls that failed")                   \
    X(tenants_purged_total, "counter", "Deleted tenants whose objects were purged")                \
    X(objects_purged_total, "counter", "Objects purged with their deleted tenant")

struct front_metrics {
#define GW_FM_FIELD_(name, type, help) uint64_t name;
    GW_FRONT_METRICS(GW_FM_FIELD_)
#undef GW_FM_FIELD_
};

static void
handle_metrics(struct req *q)
{
    struct gw_front *f = q->f;
    struct front_metrics v;
    struct gw_engine_stats es;
    struct gw_state_stats ss;
    struct cm_buf b;
    char *text;
    size_t len;

    gw_engine_stats(f->engine, &es);
    gw_state_stats(f->state, &ss);
    v.buffered_bytes = es.buffered_bytes;
    v.buffered_objects = es.buffered_objects;
    v.redriven_chunks_total = es.redriven_chunks;
    v.parity_reads_total = es.parity_reads;
    v.persist_notices_total = es.persist_notes;
    v.persist_stats_total = es.persist_stats;
    struct cm_big_cache_stats bc;
    cm_big_cache_stats(&bc);
    v.buffer_cache_bytes = bc.bytes;
    v.buffer_cache_hits_total = bc.hits;
    v.buffer_cache_misses_total = bc.misses;
    v.inflight_requests = (uint64_t)atomic_load(&f->inflight);
    size_t readers, waiting;
    gw_grace_counts(f->grace, &readers, &waiting);
    v.retired_versions_waiting = waiting;
    struct gw_commit_stats cs;
    gw_commit_stats(f->commit, &cs);
    v.commit_batches_total = cs.batches;
    v.commit_ops_total = cs.ops;
    v.commit_queued_ops = cs.queued;
    v.state_epoch = ss.epoch;
    v.controller_up = (uint64_t)ss.controller_up;
    v.state_polls_failed_total = ss.polls_failed;
    v.tenants_purged_total = ss.tenants_purged;
    v.objects_purged_total = ss.objects_purged;

    cm_buf_init(&b);
    cm_reqstats_expose(f->rs, "gateway", &b);
#define GW_FM_EXPOSE_(name, type, help)                                                            \
    cm_prom_family(&b, "shoal_gateway_" #name, type, help);                                        \
    cm_prom_u64(&b, "shoal_gateway_" #name, NULL, v.name);
    GW_FRONT_METRICS(GW_FM_EXPOSE_)
#undef GW_FM_EXPOSE_
    cm_prom_family(&b, "shoal_gateway_commit_duration_seconds", "histogram",
                   "Time of one metadata write transaction, fsyncs included");
    cm_prom_hist(&b, "shoal_gateway_commit_duration_seconds", NULL, &cs.time);
    text = cm_buf_take(&b, &len);
    if (q->kind == REQ_NONE && strcmp(q->method, "HEAD") == 0) {
        free(text);
        reply_head(q, 200, "text/plain; version=0.0.4; charset=utf-8", len);
        return;
    }
    reply(q, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, CM_HTTP_FREE);
}

/* ---- request entry ---- */

static void
front_request(void *arg, struct cm_http_req *r)
{
    struct gw_front *f = arg;
    struct gw_snap *s = NULL;
    const struct gw_tenant *t = NULL;
    enum route rt;
    enum req_kind kind;
    struct req *q;

    if (route_check(f, r, &rt, &kind) != 0 || (q = req_new(f, r, kind)) == NULL) {
        return;
    }
    if (rt == R_HEALTH) {
        if (strcmp(q->method, "HEAD") == 0) {
            reply_head(q, 200, "text/plain", 2);
        } else {
            reply(q, 200, "text/plain", "ok", 2, CM_HTTP_STATIC);
        }
        return;
    }
    if (rt == R_METRICS) {
        handle_metrics(q);
        return;
    }
    if (atomic_load(&f->draining)) {
        fail(q, 503, "unavailable", "gateway is shutting down");
        return;
    }
    if (authenticate(q, &s, &t) != 0) {
        return;
    }
    if (rt == R_LIST) {
        gw_snap_unref(s);
        handle_list(q);
        return;
    }
    if (parse_key(q) != 0) {
        gw_snap_unref(s);
        return;
    }
    switch (kind) {
    case REQ_GET:
    case REQ_HEAD:
        gw_snap_unref(s);
        handle_get(q);
        break;
    case REQ_PUT:
        handle_put(q, s, t);
        gw_snap_unref(s);
        break;
    case REQ_DELETE:
        gw_snap_unref(s);
        handle_delete(q);
        break;
    default:
        gw_snap_unref(s);
        fail(q, 405, "method_not_allowed", "method not allowed on this path");
        break;
    }
}

const struct cm_http_handlers gw_front_handlers = {
    .headers = front_headers,
    .request = front_request,
};

/* ---- life cycle ---- */

int
gw_front_create(const struct gw_front_cfg *cfg, struct gw_meta *meta, struct gw_front **out)
{
    struct gw_front *f = cm_calloc(1, sizeof(*f));
    int rc;

    f->cfg = *cfg;
    f->meta = meta;
    f->rs = cm_reqstats_create(req_names, REQ_N);
    f->grace = gw_grace_create();
    atomic_init(&f->inflight, 0);
    atomic_init(&f->draining, 0);
    rc = gw_commit_create(meta, &f->commit);
    if (rc != 0) {
        gw_grace_destroy(f->grace);
        cm_reqstats_destroy(f->rs);
        free(f);
        return rc;
    }
    *out = f;
    return 0;
}

static void
track_one(void *arg, const struct gw_layout *l)
{
    struct gw_front *f = arg;

    gw_engine_track(f->engine, l);
}

void
gw_front_attach(struct gw_front *f, struct gw_engine *e, struct gw_state *st)
{
    int rc;

    f->engine = e;
    f->state = st;
    gw_commit_set_state(f->commit, st);
    rc = gw_meta_scan_pending(f->meta, track_one, f);
    if (rc != 0) {
        CM_WARN("cannot scan pending objects err=%s", cm_errname(rc));
    }
}

void
gw_front_drain(struct gw_front *f, int timeout_ms)
{
    uint64_t deadline = cm_now_ns() + (uint64_t)timeout_ms * 1000000u;

    atomic_store(&f->draining, 1);
    while (atomic_load(&f->inflight) > 0 && cm_now_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&f->inflight) > 0) {
        CM_WARN("shutting down with requests in flight n=%d", atomic_load(&f->inflight));
    }
}

void
gw_front_quiesce(struct gw_front *f)
{
    gw_commit_quiesce(f->commit);
}

void
gw_front_destroy(struct gw_front *f)
{
    if (f == NULL) {
        return;
    }
    gw_commit_destroy(f->commit);
    size_t dropped = gw_grace_destroy(f->grace);
    if (dropped > 0) {
        CM_WARN("old versions left undeleted at shutdown (GETs never answered) n=%zu", dropped);
    }
    cm_reqstats_destroy(f->rs);
    free(f);
}
