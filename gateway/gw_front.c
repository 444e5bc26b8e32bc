/*
 * gw_front.c - routing, auth and the object handlers of the tenant API,
 * and the group committer that makes every acknowledged write durable.
 *
 *   HTTP thread                       engine thread        committer thread
 *   ───────────                       ─────────────        ────────────────
 *   headers(): route, PUT auth/411/413
 *   request(): auth, key, meta read
 *     GET  ─suspend─▶ gw_engine_get ─▶ get_done: respond
 *     PUT  ─suspend─▶ gw_engine_put ─▶ put_done ─queue─▶  one LMDB write txn
 *     DELETE ─suspend──────────────────────────queue─▶  for the whole queue,
 *                                     on_layout ─queue─▶  fsync'd commit, then
 *     LIST, HEAD: answered inline                         respond 201/204/404,
 *                                                         delete old chunks
 *
 * Owns: the request contexts (struct req, freed once answered), the commit
 * queue and the request stats. Borrows meta, state and engine.
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
 *     its commit; updates alone wait (UPDATE_WAIT_MS) for a PUT or DELETE;
 *   - the committer is the only metadata writer besides tenant purges and
 *     state saves in gw_state.
 */
#include "gw_front.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_grace.h"
#include "gw_meta.h"
#include "gw_parse.h"
#include "gw_state.h"

#define OBJ_PREFIX "/v1/objects/"
#define OBJ_PREFIX_LEN (sizeof(OBJ_PREFIX) - 1)
#define E_TENANT_GONE (-EACCES) /* commit refused: the tenant was deleted */
/* Layout updates queued alone wait this long for a PUT or DELETE to share
 * their commit, or until this many are queued (see committer_main). */
#define UPDATE_WAIT_MS 100
#define UPDATE_BATCH_MAX 256
#define COMMITTER_SLICE_NS 100000 /* see ask_short_slice */

enum op { OP_PUT, OP_GET, OP_HEAD, OP_DELETE, OP_LIST, OP_N, OP_NONE = -1 };
static const char *const op_names[OP_N] = {"put", "get", "head", "delete", "list"};

enum route { R_NONE, R_HEALTH, R_METRICS, R_LIST, R_OBJECT };

struct req {
    struct gw_front *f;
    struct cm_http_req *r;
    char id[GW_REQID_MAX + 1];
    char method[8]; /* copied: r's strings die with the response */
    enum op op;
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
};

enum cop_kind { COP_PUT, COP_DELETE, COP_UPDATE };

struct cop {
    struct cop *next;
    enum cop_kind kind;
    struct req *q; /* PUT, DELETE */
    struct gw_layout lay;
    struct gw_layout old;
    int had_old;
    int rc;
};

struct gw_front {
    struct gw_front_cfg cfg;
    struct gw_meta *meta;
    struct gw_engine *engine;
    struct gw_state *state;
    struct cm_reqstats *rs;
    struct gw_grace *grace; /* GETs in flight vs the deletes of old versions */
    atomic_int inflight;
    atomic_int draining;
    atomic_uint_fast64_t commit_batches, commit_ops;

    pthread_mutex_t mu; /* guards the queue and its counts, the flags, commit_time */
    pthread_cond_t work, idle;
    struct cop *head, *tail;
    size_t queued, waited; /* ops queued; of them, ops an answer waits on */
    int stop, busy, hurry; /* hurry: commit layout updates without waiting */
    struct cm_hist commit_time; /* one metadata transaction, with its fsyncs */
    pthread_t committer;
};

/* ---- responses ---- */

static struct req *
req_new(struct gw_front *f, struct cm_http_req *r, enum op op)
{
    struct req *q = cm_calloc(1, sizeof(*q));
    const char *cid = cm_http_header(r, "X-Request-Id");

    q->f = f;
    q->r = r;
    q->op = op;
    snprintf(q->method, sizeof(q->method), "%s", cm_http_method(r));
    q->t0 = cm_now_ns();
    if (gw_reqid_ok(cid)) {
        snprintf(q->id, sizeof(q->id), "%s", cid);
    } else {
        snprintf(q->id, sizeof(q->id), "%016llx", (unsigned long long)cm_random_u64());
    }
    return q;
}

static void
req_done(struct req *q, int status, const char *error)
{
    struct gw_front *f = q->f;
    uint64_t ns = cm_now_ns() - q->t0;

    if (q->op != OP_NONE) {
        cm_reqstats_record(f->rs, q->tenant, q->op, status, q->bytes, ns);
    }
    if (status >= 400) {
        CM_WARN("request failed op=%s method=%s status=%d error=%s tenant=%u req=%s ms=%.3f",
                q->op != OP_NONE ? op_names[q->op] : "-", q->method, status, error, q->tenant,
                q->id, (double)ns / 1e6);
    } else {
        CM_DEBUG("request op=%s method=%s status=%d bytes=%llu tenant=%u req=%s ms=%.3f",
                 q->op != OP_NONE ? op_names[q->op] : "-", q->method, status,
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

static enum op
object_op(const char *method)
{
    if (strcmp(method, "GET") == 0) {
        return OP_GET;
    }
    if (strcmp(method, "HEAD") == 0) {
        return OP_HEAD;
    }
    if (strcmp(method, "PUT") == 0) {
        return OP_PUT;
    }
    if (strcmp(method, "DELETE") == 0) {
        return OP_DELETE;
    }
    return OP_NONE;
}

/* Answers 404/405 for a request that names no handler; else 0 and *op. */
static int
route_check(struct gw_front *f, struct cm_http_req *r, enum route *rt, enum op *op)
{
    const char *m = cm_http_method(r);
    struct req *q;

    *rt = route_of(cm_http_path(r));
    *op = OP_NONE;
    switch (*rt) {
    case R_NONE:
        q = req_new(f, r, OP_NONE);
        fail(q, 404, "not_found", "no such path");
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
            *op = OP_LIST;
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET");
        break;
    case R_OBJECT:
        *op = object_op(m);
        if (*op != OP_NONE) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        break;
    }
    q = req_new(f, r, OP_NONE);
    fail(q, 405, "method_not_allowed", "method not allowed on this path");
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
    enum op op;
    struct req *q;
    struct gw_snap *s;
    const struct gw_tenant *t;

    if (route_check(f, r, &rt, &op) != 0) {
        return 1;
    }
    if (op != OP_PUT) {
        return 0;
    }
    q = req_new(f, r, op);
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

    if (q->op == OP_GET) {
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
    if (q->op == OP_HEAD || q->len == 0) {
        add_etag_version(q, &q->lay);
        cm_http_add_header(q->r, "Accept-Ranges", "bytes");
        if (q->partial) {
            snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                     (unsigned long long)(q->off + q->len - 1), (unsigned long long)q->lay.size);
            cm_http_add_header(q->r, "Content-Range", cr);
        }
        if (q->op == OP_HEAD) {
            reply_head(q, q->partial ? 206 : 200, "application/octet-stream", q->len);
        } else {
            reply(q, 200, "application/octet-stream", NULL, 0, CM_HTTP_STATIC);
        }
        return;
    }
    suspend(q);
    gw_engine_get(f->engine, &q->lay, q->off, q->len, get_done, q);
}

/* ---- PUT / DELETE and the committer ---- */

static void
enqueue(struct gw_front *f, struct cop *c)
{
    pthread_mutex_lock(&f->mu);
    c->next = NULL;
    f->queued++;
    f->waited += c->kind != COP_UPDATE;
    if (f->tail != NULL) {
        f->tail->next = c;
    } else {
        f->head = c;
    }
    f->tail = c;
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
}

static void
put_done(void *arg, int status, const struct gw_layout *layout)
{
    struct req *q = arg;
    struct cop *c;

    if (status != 0) {
        fail_status(q, status);
        return;
    }
    c = cm_calloc(1, sizeof(*c));
    c->kind = COP_PUT;
    c->q = q;
    c->lay = *layout;
    c->lay.tenant = q->tenant;
    enqueue(q->f, c);
}

void
gw_front_on_layout(void *arg, const struct gw_layout *layout)
{
    struct gw_front *f = arg;
    struct cop *c = cm_calloc(1, sizeof(*c));

    c->kind = COP_UPDATE;
    c->lay = *layout;
    enqueue(f, c);
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
        body = cm_malloc(1); /* the engine takes ownership of a real buffer */
        cap = 0;
    }
    suspend(q);
    gw_engine_put(f->engine, t->id, row, nrow, put_k(f, t, len), t->m, body, len, cap, put_done, q);
}

static void
handle_delete(struct req *q)
{
    struct cop *c = cm_calloc(1, sizeof(*c));

    c->kind = COP_DELETE;
    c->q = q;
    suspend(q);
    enqueue(q->f, c);
}

/* Applies c in b: 0 with c->rc the op's own result, or a negative code
 * when the transaction is no longer usable. */
static int
apply(struct gw_meta_batch *b, struct cop *c, const struct gw_snap *s)
{
    int stale, rc;

    c->had_old = 0;
    switch (c->kind) {
    case COP_PUT:
        if (s != NULL && gw_snap_tenant(s, c->lay.tenant) == NULL) {
            c->rc = E_TENANT_GONE;
            return 0;
        }
        c->rc = gw_meta_put(b, c->q->key, c->q->klen, &c->lay, &c->old, &c->had_old);
        return c->rc;
    case COP_DELETE:
        rc = gw_meta_delete(b, c->q->tenant, c->q->key, c->q->klen, &c->old);
        c->rc = rc;
        c->had_old = rc == 0;
        return rc == CM_E_NOTFOUND ? 0 : rc;
    case COP_UPDATE:
        c->rc = gw_meta_update(b, &c->lay, &stale);
        return c->rc;
    }
    return CM_E_BADARG;
}

/* One transaction for the list; falls back to one per op when any op
 * breaks the transaction, so one bad op fails alone. */
static void
commit_list(struct gw_front *f, struct cop *list)
{
    struct gw_snap *s = f->state != NULL ? gw_state_snap(f->state) : NULL;
    struct gw_meta_batch *b = NULL;
    struct cop *c;
    int rc;

    rc = gw_meta_batch_begin(f->meta, &b);
    for (c = list; rc == 0 && c != NULL; c = c->next) {
        rc = apply(b, c, s);
    }
    if (rc == 0) {
        rc = gw_meta_batch_commit(b);
        if (rc != 0) {
            for (c = list; c != NULL; c = c->next) {
                c->rc = rc;
                c->had_old = 0;
            }
        }
    } else {
        if (b != NULL) {
            gw_meta_batch_abort(b);
        }
        for (c = list; c != NULL; c = c->next) {
            rc = gw_meta_batch_begin(f->meta, &b);
            if (rc == 0) {
                rc = apply(b, c, s);
                if (rc == 0) {
                    rc = gw_meta_batch_commit(b);
                } else {
                    gw_meta_batch_abort(b);
                }
            }
            if (rc != 0) {
                c->rc = rc;
                c->had_old = 0;
            }
        }
    }
    gw_snap_unref(s);
}

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
 * later reads the new layout. */
static void
retire(struct gw_front *f, const struct gw_layout *old)
{
    struct retired *r = cm_malloc(sizeof(*r));

    r->f = f;
    r->lay = *old;
    gw_grace_defer(f->grace, retire_run, r);
}

static void
complete(struct gw_front *f, struct cop *c)
{
    struct req *q = c->q;

    switch (c->kind) {
    case COP_PUT:
        if (c->rc == 0) {
            add_etag_version(q, &c->lay);
            reply(q, 201, NULL, NULL, 0, CM_HTTP_STATIC);
            if (c->had_old) {
                retire(f, &c->old);
            }
        } else {
            gw_engine_delete(f->engine, &c->lay, 0);
            if (c->rc == E_TENANT_GONE) {
                fail(q, 401, "unauthorized", "tenant was deleted");
            } else {
                fail_status(q, c->rc);
            }
        }
        break;
    case COP_DELETE:
        if (c->rc == 0) {
            reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
            retire(f, &c->old);
        } else if (c->rc == CM_E_NOTFOUND) {
            fail(q, 404, "not_found", "no such object");
        } else {
            fail_status(q, c->rc);
        }
        break;
    case COP_UPDATE:
        if (c->rc != 0) {
            CM_WARN("layout update failed object=%016llx tenant=%u err=%s",
                    (unsigned long long)c->lay.object, c->lay.tenant, cm_errname(c->rc));
        }
        break;
    }
}

/*
 * Asks for a short scheduler slice for the calling thread. Under EEVDF
 * (Linux 6.6 and later) a shorter slice is an earlier deadline, so the
 * committer, which wakes for a few microseconds of work after each flush,
 * runs sooner instead of queueing behind the threads that keep both cores
 * busy under load: every PUT and DELETE waits for it. Kernels that do not
 * know the hint ignore it; a refusal costs only the hint.
 */
static void
ask_short_slice(void)
{
    /* The kernel's struct sched_attr, first version: glibc 2.36 has no
     * sched_setattr, and <linux/sched/types.h> clashes with <sched.h>. */
    struct {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } a = {.size = sizeof(a), .sched_policy = SCHED_OTHER};

    errno = 0;
    a.sched_nice = getpriority(PRIO_PROCESS, (id_t)gettid()); /* keep it */
    a.sched_runtime = COMMITTER_SLICE_NS;
    if (errno != 0 || syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
        CM_DEBUG("committer keeps the default scheduler slice err=%s", strerror(errno));
    }
}

static void *
committer_main(void *arg)
{
    struct gw_front *f = arg;

    ask_short_slice();
    pthread_mutex_lock(&f->mu);
    for (;;) {
        struct cop *list, *c, *next;
        size_t n = 0;

        while (f->head == NULL && !f->stop) {
            pthread_cond_wait(&f->work, &f->mu);
        }
        if (f->head == NULL) {
            break; /* stopping with nothing left */
        }
        /*
         * Layout updates are hints a restarted gateway could learn again
         * (by STAT), yet each commit costs a flush that, with the COS on
         * the same disk, waits for the chunk writes before it. Alone they
         * wait for a PUT or DELETE to share its flush, or UPDATE_WAIT_MS.
         */
        if (f->waited == 0 && !f->stop && !f->hurry && f->queued < UPDATE_BATCH_MAX) {
            struct timespec until = cm_deadline(CLOCK_MONOTONIC, UPDATE_WAIT_MS * 1000000ull);

            while (f->waited == 0 && !f->stop && !f->hurry && f->queued < UPDATE_BATCH_MAX &&
                   pthread_cond_timedwait(&f->work, &f->mu, &until) != ETIMEDOUT) {
            }
        }
        list = f->head;
        f->head = f->tail = NULL;
        f->queued = f->waited = 0;
        f->busy = 1;
        pthread_mutex_unlock(&f->mu);

        uint64_t t0 = cm_now_ns();

        commit_list(f, list);
        uint64_t took = cm_now_ns() - t0;
        for (c = list; c != NULL; c = next) {
            next = c->next;
            complete(f, c);
            free(c);
            n++;
        }
        pthread_mutex_lock(&f->mu); /* the count and the histogram agree */
        atomic_fetch_add(&f->commit_batches, 1);
        atomic_fetch_add(&f->commit_ops, n);
        cm_hist_observe(&f->commit_time, took);
        f->busy = 0;
        if (f->head == NULL) {
            pthread_cond_broadcast(&f->idle);
        }
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---- LIST ---- */

struct list_out {
    json_t *arr;
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
    json_object_set_new(obj, "key", json_stringn(key, klen));
    json_object_set_new(obj, "size", json_integer((json_int_t)l->size));
    json_object_set_new(obj, "etag", json_string(etag));
    json_object_set_new(obj, "version", json_integer((json_int_t)l->version));
    json_array_append_new(o->arr, obj);
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
    if (rc != 0) {
        json_decref(o.arr);
        fail_status(q, rc);
        return;
    }
    root = json_object();
    json_object_set_new(root, "objects", o.arr);
    json_object_set_new(root, "next",
                        more && o.last != NULL ? json_stringn(o.last, o.last_len) : json_null());
    text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (text == NULL) {
        fail(q, 500, "internal", "cannot encode the listing");
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
    pthread_mutex_lock(&f->mu);
    struct cm_hist commit_time = f->commit_time;
    v.commit_batches_total = atomic_load(&f->commit_batches);
    v.commit_ops_total = atomic_load(&f->commit_ops);
    v.commit_queued_ops = f->queued;
    pthread_mutex_unlock(&f->mu);
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
    cm_prom_hist(&b, "shoal_gateway_commit_duration_seconds", NULL, &commit_time);
    text = cm_buf_take(&b, &len);
    if (q->op == OP_NONE && strcmp(q->method, "HEAD") == 0) {
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
    enum op op;
    struct req *q;

    if (route_check(f, r, &rt, &op) != 0) {
        return;
    }
    q = req_new(f, r, op);
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
    switch (op) {
    case OP_GET:
    case OP_HEAD:
        gw_snap_unref(s);
        handle_get(q);
        break;
    case OP_PUT:
        handle_put(q, s, t);
        gw_snap_unref(s);
        break;
    case OP_DELETE:
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
    pthread_condattr_t ca;
    int rc;

    f->cfg = *cfg;
    f->meta = meta;
    f->rs = cm_reqstats_create(op_names, OP_N);
    f->grace = gw_grace_create();
    atomic_init(&f->inflight, 0);
    atomic_init(&f->draining, 0);
    atomic_init(&f->commit_batches, 0);
    atomic_init(&f->commit_ops, 0);
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* committer_main's timed wait */
    pthread_cond_init(&f->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&f->idle, NULL);
    rc = pthread_create(&f->committer, NULL, committer_main, f);
    if (rc != 0) {
        gw_grace_destroy(f->grace);
        cm_reqstats_destroy(f->rs);
        free(f);
        return -rc;
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
    pthread_mutex_lock(&f->mu);
    f->hurry = 1;
    pthread_cond_signal(&f->work);
    while (f->head != NULL || f->busy) {
        pthread_cond_wait(&f->idle, &f->mu);
    }
    pthread_mutex_unlock(&f->mu);
}

void
gw_front_destroy(struct gw_front *f)
{
    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->committer, NULL);
    size_t dropped = gw_grace_destroy(f->grace);
    if (dropped > 0) {
        CM_WARN("old versions left undeleted at shutdown (GETs never answered) n=%zu", dropped);
    }
    cm_reqstats_destroy(f->rs);
    pthread_cond_destroy(&f->idle);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
