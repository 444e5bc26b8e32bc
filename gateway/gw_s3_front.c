/*
 * gw_s3_front.c - the S3 front door's listener: routing, SigV4 auth,
 * answers and S3 errors, request bodies, and the copy worker. The
 * operations are gw_s3_obj.c's, gw_s3_list.c's and gw_s3_mpu.c's.
 *
 *   HTTP thread (S3 listener)                  engine / committer / worker
 *   ─────────────────────────                  ───────────────────────────
 *   headers(): route; for a body: auth, early
 *     checks (bucket, upload, sizes, 4 MiB XML)
 *   request(): route, auth (date keys of the
 *     snapshot; an unknown key waits for one
 *     state refresh), then the operation:
 *     reads      answered inline, or suspend ─▶ gw_oread ─▶ answer
 *     writes     body checks, suspend ─▶ engine put ─▶ commit (CALL) ─▶ answer
 *     copies     suspend ─▶ gw_oread ─▶ copy worker: MD5, engine put ─▶ commit
 *
 * Every answer carries x-amz-request-id and x-amz-id-2; errors are S3 XML
 * (none for HEAD). Requests run under the tenant that owns the access key,
 * through the same engine (so they count toward its fair share: a node's
 * BUSY is SlowDown), committer and grace periods as the tenant API's.
 *
 * Owns the request contexts (freed once answered), the signing-key cache
 * and the copy worker; borrows the front.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_grace.h"
#include "gw_s3_chunked.h"
#include "gw_s3_impl.h"
#include "gw_s3_xml.h"

#define NOMEM_BODY                                                                                 \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>gateway "    \
    "out of memory, retry later</Message></Error>"

/* ---- the request's life ---- */

static struct s3_req *
req_new(struct gw_s3 *s3, struct cm_http_req *r)
{
    struct s3_req *q = calloc(1, sizeof(*q));
    char id[17];

    snprintf(id, sizeof(id), "%016llX", (unsigned long long)cm_random_u64());
    if (q == NULL) {
        CM_WARN("s3 request failed method=%s status=503 error=SlowDown err=ENOMEM req=%s",
                cm_http_method(r), id);
        cm_http_add_header(r, "x-amz-request-id", id);
        cm_http_respond(r, 503, "application/xml", NOMEM_BODY, sizeof(NOMEM_BODY) - 1,
                        CM_HTTP_STATIC);
        return NULL;
    }
    q->s3 = s3;
    q->f = s3->f;
    q->r = r;
    q->t0 = cm_now_ns();
    q->rt.op = GW_S3_OP_NONE;
    memcpy(q->id, id, sizeof(id));
    snprintf(q->method, sizeof(q->method), "%s", cm_http_method(r));
    cm_buf_init(&q->hdrs);
    return q;
}

static void
req_done(struct s3_req *q, int status, const char *error)
{
    struct gw_front *f = q->f;
    uint64_t ns = cm_now_ns() - q->t0;
    const char *op = q->rt.op != GW_S3_OP_NONE ? gw_s3_op_names[q->rt.op] : "-";

    if (q->rt.op != GW_S3_OP_NONE && q->tenant != 0) {
        cm_reqstats_record(f->rs_s3, q->tenant, q->rt.op, status, q->bytes, ns);
    }
    if (status >= 400) {
        CM_WARN("s3 request failed op=%s method=%s status=%d error=%s tenant=%u req=%s ms=%.3f", op,
                q->method, status, error != NULL ? error : "-", q->tenant, q->id, (double)ns / 1e6);
    } else {
        CM_DEBUG("s3 request op=%s method=%s status=%d bytes=%llu tenant=%u req=%s ms=%.3f", op,
                 q->method, status, (unsigned long long)q->bytes, q->tenant, q->id,
                 (double)ns / 1e6);
    }
    if (q->async) {
        atomic_fetch_sub(&f->inflight, 1);
    }
    if (q->grace != NULL) {
        gw_grace_exit(f->grace, q->grace);
    }
    gw_front_release(f, &q->served);
    if (q->obj != NULL) {
        gw_meta_obj_fini(q->obj);
        free(q->obj);
    }
    if (q->x_free != NULL) {
        q->x_free(q->x);
    }
    gw_meta_old_reset(&q->commit.old);
    gw_layout_fini(&q->commit.lay);
    free(q->if_match);
    gw_snap_unref(q->snap);
    cm_buf_fini(&q->hdrs);
    free(q);
}

/* The headers every answer carries. */
static void
ids(struct s3_req *q)
{
    char id2[32];

    cm_http_add_header(q->r, "x-amz-request-id", q->id);
    gw_s3_b64_encode(q->id, 16, id2);
    cm_http_add_header(q->r, "x-amz-id-2", id2);
}

void
s3_reply(struct s3_req *q, int status, const char *ctype, void *body, size_t len,
         enum cm_http_mem mem)
{
    ids(q);
    cm_http_respond(q->r, status, ctype, body, len, mem);
    req_done(q, status, NULL);
}

void
s3_reply_xml(struct s3_req *q, int status, struct cm_buf *b)
{
    size_t len;
    char *body = cm_buf_take(b, &len);

    s3_reply(q, status, "application/xml", body, len, CM_HTTP_FREE);
}

void
s3_reply_head(struct s3_req *q, int status, const char *ctype, uint64_t len)
{
    ids(q);
    cm_http_respond_head(q->r, status, ctype, len);
    req_done(q, status, NULL);
}

static void
fail_extra(struct s3_req *q, enum gw_s3_err e, const char *msg, const struct gw_s3_xml_field *extra,
           size_t nextra)
{
    int status = gw_s3_err_status(e);
    const char *code = gw_s3_err_code(e);
    struct cm_buf b;
    size_t len;
    char *body;

    ids(q);
    if (e == GW_S3_E_SLOW_DOWN || e == GW_S3_E_SERVICE_UNAVAILABLE) {
        cm_http_add_header(q->r, "Retry-After", "1");
    }
    if (strcmp(q->method, "HEAD") == 0 || status == 304) {
        cm_http_respond_head(q->r, status, status == 304 ? NULL : "application/xml", 0);
        req_done(q, status, code);
        return;
    }
    cm_buf_init(&b);
    gw_s3_xml_error(&b, e, msg, cm_http_path(q->r), q->id, extra, nextra);
    body = cm_buf_take(&b, &len);
    cm_http_respond(q->r, status, "application/xml", body, len, CM_HTTP_FREE);
    req_done(q, status, code);
}

void
s3_fail(struct s3_req *q, enum gw_s3_err e, const char *msg)
{
    struct gw_s3_xml_field extra[2] = {{NULL, NULL}, {NULL, NULL}};
    size_t n = 0;

    if (q->rt.blen > 0 && (e == GW_S3_E_NO_SUCH_BUCKET || e == GW_S3_E_BUCKET_NOT_EMPTY ||
                           e == GW_S3_E_BUCKET_OWNED || e == GW_S3_E_NO_SUCH_KEY)) {
        extra[n++] = (struct gw_s3_xml_field){"BucketName", q->rt.bucket};
    }
    fail_extra(q, e, msg, extra, n);
}

void
s3_fail_rc(struct s3_req *q, int rc)
{
    switch (rc) {
    case CM_E_BUSY:
        s3_fail(q, GW_S3_E_SLOW_DOWN, "the tenant's share is in use: retry later");
        break;
    case CM_E_UNAVAIL:
    case CM_E_TIMEOUT:
    case -ECONNREFUSED:
    case -ECONNRESET:
    case -EPIPE:
    case -EIO:
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "not enough chunk holders reachable");
        break;
    case CM_E_TOOBIG:
        s3_fail(q, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        break;
    case -ENOMEM:
        s3_fail(q, GW_S3_E_SLOW_DOWN, "gateway out of memory, retry later");
        break;
    default:
        CM_ERROR("s3 internal error req=%s tenant=%u err=%s", q->id, q->tenant, cm_errname(rc));
        s3_fail(q, GW_S3_E_INTERNAL, NULL);
        break;
    }
}

void
s3_suspend(struct s3_req *q)
{
    if (!q->async) {
        q->async = 1;
        atomic_fetch_add(&q->f->inflight, 1);
    }
    cm_http_suspend(q->r);
}

const char *
s3_hdr(void *arg, const char *lname)
{
    return cm_http_header(arg, lname);
}

int
s3_query(struct s3_req *q, const char *name, char *out, size_t cap)
{
    const char *qs = cm_http_query_string(q->r);

    return gw_s3_query_get(qs, strlen(qs), name, out, cap);
}

void
s3_etag(const struct gw_layout *l, const struct gw_meta_attrs *a, char out[GW_S3_ETAG_MAX])
{
    if (a->has_md5 && a->nparts > 0) {
        char hex[33];

        cm_hex(a->md5, 16, hex);
        snprintf(out, GW_S3_ETAG_MAX, "\"%s-%u\"", hex, a->nparts);
    } else if (a->has_md5) {
        gw_s3_etag(a->md5, out);
    } else {
        snprintf(out, GW_S3_ETAG_MAX, "\"%016llx\"", (unsigned long long)l->etag);
    }
}

void
s3_owner(struct s3_req *q, struct gw_s3_xml_owner *o, char id[16])
{
    snprintf(id, 16, "%u", q->tenant);
    o->id = id;
    o->display_name = q->t != NULL ? q->t->name : id;
}

int
s3_bucket_get(struct s3_req *q, const char *b, size_t blen, uint64_t *created_ms)
{
    char k[S3_BUCKET_KEY_MAX];
    size_t klen;
    struct gw_meta_obj *o;
    struct gw_layout l = {0};
    int rc;

    if (blen > GW_S3_BUCKET_MAX) {
        return CM_E_NOTFOUND;
    }
    klen = gw_meta_bucket_key(b, blen, k);
    if (created_ms == NULL) {
        rc = gw_meta_get(q->f->meta, q->tenant, k, klen, &l);
        gw_layout_fini(&l);
        return rc;
    }
    o = malloc(sizeof(*o));
    if (o == NULL) {
        return -ENOMEM;
    }
    rc = gw_meta_get_obj(q->f->meta, q->tenant, k, klen, o);
    *created_ms = rc == 0 ? o->a.mtime_ms : 0;
    gw_meta_obj_fini(o);
    free(o);
    return rc;
}

int
s3_bucket_in(struct gw_meta_batch *b, uint32_t tenant, const char *bucket, size_t blen)
{
    char k[S3_BUCKET_KEY_MAX];
    struct gw_layout l;

    if (blen > GW_S3_BUCKET_MAX) {
        return CM_E_NOTFOUND;
    }
    return gw_meta_batch_get(b, tenant, k, gw_meta_bucket_key(bucket, blen, k), &l, NULL);
}

/* ---- commits ---- */

struct s3_req *
s3_of(struct gw_commit_op *op)
{
    return CM_CONTAINER_OF(op, struct s3_req, commit);
}

void
s3_commit(struct s3_req *q,
          int (*apply)(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s),
          void (*done)(struct gw_commit_op *op))
{
    q->commit.kind = COMMIT_CALL;
    q->commit.tenant = q->tenant;
    q->commit.key = q->rt.key;
    q->commit.klen = q->rt.klen;
    q->commit.apply = apply;
    q->commit.done = done;
    q->err = GW_S3_OK;
    q->err_msg = NULL;
    s3_suspend(q);
    gw_commit_queue(q->f->commit, &q->commit);
}

int
s3_refuse(struct gw_commit_op *op, enum gw_s3_err e, const char *msg)
{
    struct s3_req *q = s3_of(op);

    q->err = e;
    q->err_msg = msg;
    op->rc = CM_E_BADARG;
    return 0;
}

void
s3_fail_commit(struct s3_req *q)
{
    if (q->err != GW_S3_OK) {
        s3_fail(q, q->err, q->err_msg);
    } else if (q->commit.rc == GW_COMMIT_TENANT_GONE) {
        s3_fail(q, GW_S3_E_INVALID_ACCESS_KEY, "the tenant of this access key was deleted");
    } else {
        s3_fail_rc(q, q->commit.rc);
    }
}

/* ---- the copy worker ---- */

void
s3_queue_job(struct s3_req *q, void (*fn)(struct s3_req *q))
{
    struct gw_s3 *s3 = q->s3;

    q->job = fn;
    q->next_job = NULL;
    pthread_mutex_lock(&s3->mu);
    *s3->jobs_tail = q;
    s3->jobs_tail = &q->next_job;
    pthread_cond_signal(&s3->cv);
    pthread_mutex_unlock(&s3->mu);
}

/* Between upload expiry sweeps: a quarter of the expiry, 100 ms to 1 h. */
static uint64_t
sweep_ns(const struct gw_s3 *s3)
{
    uint64_t ms = (uint64_t)s3->cfg.upload_expiry_ms / 4;

    ms = ms < 100 ? 100 : ms > 3600000 ? 3600000 : ms;
    return ms * 1000000u;
}

static void *
worker_main(void *arg)
{
    struct gw_s3 *s3 = arg;
    uint64_t next = cm_now_ns() + sweep_ns(s3);

    pthread_mutex_lock(&s3->mu);
    for (;;) {
        struct s3_req *q;

        if (s3->jobs == NULL && !s3->stop && s3->cfg.upload_expiry_ms > 0 && cm_now_ns() >= next) {
            pthread_mutex_unlock(&s3->mu);
            s3_expire_uploads(s3);
            pthread_mutex_lock(&s3->mu);
            next = cm_now_ns() + sweep_ns(s3);
            continue;
        }
        if (s3->jobs == NULL && !s3->stop) {
            if (s3->cfg.upload_expiry_ms > 0) {
                cm_cond_wait_until(&s3->cv, &s3->mu, next);
            } else {
                pthread_cond_wait(&s3->cv, &s3->mu);
            }
            continue;
        }
        if (s3->jobs == NULL) {
            break;
        }
        q = s3->jobs;
        s3->jobs = q->next_job;
        if (s3->jobs == NULL) {
            s3->jobs_tail = &s3->jobs;
        }
        pthread_mutex_unlock(&s3->mu);
        q->job(q);
        pthread_mutex_lock(&s3->mu);
    }
    pthread_mutex_unlock(&s3->mu);
    return NULL;
}

/* ---- bodies ---- */

/* aws-chunked decoding in place: decoded bytes never pass the encoded. */
struct inplace {
    char *buf;
    size_t at;
};

static enum gw_s3_err
inplace_sink(void *arg, const void *data, size_t len)
{
    struct inplace *ip = arg;

    memmove(ip->buf + ip->at, data, len);
    ip->at += len;
    return GW_S3_OK;
}

enum gw_s3_err
s3_body(struct s3_req *q, char **out, size_t *len, size_t *cap, uint8_t md5[16], const char **why)
{
    char *body;
    size_t blen, bcap;
    uint64_t clen = 0;
    enum gw_s3_err e = GW_S3_OK;
    struct gw_s3_body bc;
    char etag[GW_S3_ETAG_MAX];

    *why = NULL;
    body = cm_http_take_body(q->r, &blen, &bcap);
    if (cm_http_content_length(q->r, &clen) == 0 && clen != blen) {
        cm_free_big(body);
        *why = "the body is shorter than Content-Length";
        return GW_S3_E_INCOMPLETE_BODY;
    }
    if (q->auth.payload != GW_S3_PAYLOAD_SIGNED && q->auth.payload != GW_S3_PAYLOAD_UNSIGNED) {
        struct inplace ip = {body, 0};
        struct gw_s3_chunked *c = NULL;

        e = gw_s3_chunked_create(&q->auth, s3_hdr, q->r, q->f->cfg.max_object_size, inplace_sink,
                                 &ip, &c, why);
        if (e == GW_S3_OK && blen > 0) {
            e = gw_s3_chunked_feed(c, body, blen, why);
        }
        if (e == GW_S3_OK) {
            e = gw_s3_chunked_finish(c, why);
        }
        gw_s3_chunked_destroy(c);
        blen = ip.at;
    }
    if (e == GW_S3_OK) {
        e = gw_s3_body_init(&bc, &q->auth, s3_hdr, q->r, why);
        if (e == GW_S3_OK) {
            gw_s3_body_update(&bc, body, blen);
            e = gw_s3_body_finish(&bc, md5, etag, why);
        }
        gw_s3_body_fini(&bc);
    }
    if (e != GW_S3_OK) {
        cm_free_big(body);
        return e;
    }
    *out = body;
    *len = blen;
    *cap = bcap;
    return GW_S3_OK;
}

uint64_t
gw_s3_max_body(uint64_t max_object)
{
    /* aws-chunked: a ~90-byte header per chunk of at least 8 KiB, plus trailers */
    return max_object + max_object / 64 + (1u << 20);
}

/* ---- auth ---- */

struct date_key_ctx {
    const struct gw_snap *s;
    const struct gw_tenant *t;
};

static int
date_key_of(void *arg, const char *akid, const char *date, uint8_t kdate[32])
{
    struct date_key_ctx *c = arg;

    return gw_snap_s3_date_key(c->s, akid, date, kdate, &c->t);
}

static void auth_resumed(struct gw_state_wait *w);

static void
fail_auth(struct s3_req *q, enum gw_s3_err e, const struct gw_s3_sig_detail *d)
{
    struct gw_s3_xml_field extra[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    size_t n = 0;

    if (d->access_key[0] != '\0' &&
        (e == GW_S3_E_SIGNATURE_MISMATCH || e == GW_S3_E_INVALID_ACCESS_KEY)) {
        extra[n++] = (struct gw_s3_xml_field){"AWSAccessKeyId", d->access_key};
    }
    if (e == GW_S3_E_SIGNATURE_MISMATCH && d->to_sign.len > 0) {
        extra[n++] = (struct gw_s3_xml_field){"StringToSign", d->to_sign.p};
        extra[n++] = (struct gw_s3_xml_field){"CanonicalRequest", d->canonical.p};
    }
    fail_extra(q, e, d->why, extra, n);
}

/*
 * 0: authenticated (q->snap, q->t, q->tenant); 1: the access key is
 * unknown and q waits, suspended, for one state refresh (auth_resumed then
 * takes it up again on the state thread); -1: answered.
 */
static int
authenticate(struct s3_req *q)
{
    const char *qs = cm_http_query_string(q->r), *path = cm_http_path(q->r);
    struct gw_s3_req sreq = {q->method, path, strlen(path), qs, strlen(qs), s3_hdr, q->r};
    struct date_key_ctx c = {gw_state_snap(q->f->state), NULL};
    struct gw_s3_verify_opts o = {.date_key = date_key_of,
                                  .date_key_arg = &c,
                                  .region = NULL,
                                  .now = (int64_t)time(NULL),
                                  .cache = q->s3->keys};
    struct gw_s3_sig_detail d;
    enum gw_s3_err e;

    /* The why of a refusal costs copies: asked for only when refused. */
    e = gw_s3_verify(&sreq, &o, &q->auth, NULL);
    if (e == GW_S3_OK) {
        q->snap = (struct gw_snap *)c.s;
        q->t = c.t;
        q->tenant = c.t->id;
        return 0;
    }
    gw_s3_sig_detail_init(&d);
    e = gw_s3_verify(&sreq, &o, &q->auth, &d);
    gw_snap_unref((struct gw_snap *)c.s);
    if (e == GW_S3_E_INVALID_ACCESS_KEY && !q->refreshed) {
        q->refreshed = 1;
        q->wait.fn = auth_resumed;
        s3_suspend(q); /* before: the refresh may end at once */
        if (gw_state_refresh(q->f->state, &q->wait) == 0) {
            gw_s3_sig_detail_fini(&d);
            return 1;
        }
    }
    fail_auth(q, e, &d);
    gw_s3_sig_detail_fini(&d);
    return -1;
}

/* ---- routing ---- */

static int
route(struct s3_req *q)
{
    const char *qs = cm_http_query_string(q->r), *path = cm_http_path(q->r), *why = NULL;
    struct gw_s3_target t = {
        .method = q->method,
        .host = cm_http_header(q->r, "Host"),
        .domain = q->s3->cfg.domain,
        .path = path,
        .path_len = strlen(path),
        .query = qs,
        .query_len = strlen(qs),
        .copy_source = cm_http_header(q->r, "x-amz-copy-source") != NULL,
    };
    enum gw_s3_err e = gw_s3_route(&t, &q->rt, &why);

    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return -1;
    }
    return 0;
}

/* Requests with a body are authenticated before it is read: nobody
 * unknown gets to make the gateway buffer one. */
static int
has_body(struct cm_http_req *r)
{
    uint64_t clen;

    return strcmp(cm_http_method(r), "PUT") == 0 ||
           cm_http_header(r, "Transfer-Encoding") != NULL ||
           (cm_http_content_length(r, &clen) == 0 && clen > 0);
}

/* q's body is to be read now: if q waited, its request goes on; q is
 * freed unanswered (request() makes a new one). */
static void
body_go(struct s3_req *q)
{
    if (q->async) {
        atomic_fetch_sub(&q->f->inflight, 1);
        cm_http_proceed(q->r);
    }
    gw_snap_unref(q->snap);
    cm_buf_fini(&q->hdrs);
    free(q);
}

/* A large object body's bytes admitted after a wait (admission thread):
 * it can come now, or q is answered SlowDown with its body unread. */
static void
body_admitted(void *arg, struct gw_admit_ticket *t, int status)
{
    struct s3_req *q = arg;

    if (status != 0) {
        s3_fail(q, GW_S3_E_SLOW_DOWN, "too many large requests in flight: retry later");
        return;
    }
    gw_front_admitted(q->r, t);
    body_go(q);
}

/* Before a body is read: 1 when answered; 0 when it is to be read, now or
 * once a refresh knew the key or its bytes were admitted (q is gone then,
 * or waiting). */
static int
pre_body(struct s3_req *q)
{
    uint64_t clen;
    const struct gw_peer *peer;
    int away, rc = authenticate(q);

    if (rc != 0) {
        return rc < 0;
    }
    if (cm_http_content_length(q->r, &clen) != 0) {
        if (cm_http_header(q->r, "Transfer-Encoding") != NULL) {
            s3_fail(q, GW_S3_E_MISSING_CONTENT_LENGTH, NULL);
            return 1;
        }
        clen = 0;
    }
    /* A request to be sent on to its tenant's gateway is checked there
     * (this gateway has none of its metadata); its body is read here whole
     * first, so a large one waits for its share here too. */
    away = gw_front_elsewhere(q->f, q->snap, q->t, &peer);
    if (away && clen > q->f->cfg.max_object_size + GW_S3_XML_BODY_MAX) {
        s3_fail(q, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        return 1;
    }
    if (away || q->rt.op == GW_S3_OP_PUT_OBJECT || q->rt.op == GW_S3_OP_UPLOAD_PART) {
        if (!away && s3_put_headers(q) != 0) {
            return 1;
        }
        /* A large body waits for its bytes in flight before it is read, as
         * the tenant API's PUT does. It asks for what the gateway will
         * hold, Content-Length (an aws-chunked body's encoded length, a
         * little over x-amz-decoded-content-length). */
        if (gw_front_admits(q->f, clen)) {
            s3_suspend(q); /* before: the admission may come at once, elsewhere */
            rc = gw_front_admit(q->f, q->r, q->tenant, clen, GW_ADMIT_WRITE, body_admitted, q);
            if (rc == 0) {
                return 0; /* body_admitted follows: q may be gone already */
            }
            if (rc < 0) {
                s3_fail(q, GW_S3_E_SLOW_DOWN, "gateway out of memory, retry later");
                return 1;
            }
        }
    } else if (clen > GW_S3_XML_BODY_MAX) {
        s3_fail(q, GW_S3_E_MAX_MESSAGE_LENGTH, "request bodies are at most 4 MiB but for objects");
        return 1;
    }
    body_go(q);
    return 0;
}

static void
dispatch(struct s3_req *q)
{
    const struct gw_peer *peer;

    if (authenticate(q) != 0) {
        return;
    }
    if (gw_front_elsewhere(q->f, q->snap, q->t, &peer)) {
        s3_forward(q, peer);
        return;
    }
    if (gw_front_hold(q->f, q->t->id, &q->served)) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "the tenant is moving to another gateway: retry");
        return;
    }
    switch (q->rt.op) {
    case GW_S3_OP_LIST_BUCKETS:
        s3_list_buckets(q);
        break;
    case GW_S3_OP_CREATE_BUCKET:
        s3_create_bucket(q);
        break;
    case GW_S3_OP_DELETE_BUCKET:
        s3_delete_bucket(q);
        break;
    case GW_S3_OP_HEAD_BUCKET:
    case GW_S3_OP_GET_BUCKET_LOCATION:
        s3_head_bucket(q);
        break;
    case GW_S3_OP_LIST_OBJECTS:
        s3_list_objects(q);
        break;
    case GW_S3_OP_LIST_UPLOADS:
        s3_list_uploads(q);
        break;
    case GW_S3_OP_DELETE_OBJECTS:
        s3_delete_objects(q);
        break;
    case GW_S3_OP_PUT_OBJECT:
    case GW_S3_OP_UPLOAD_PART:
        s3_put_object(q);
        break;
    case GW_S3_OP_COPY_OBJECT:
    case GW_S3_OP_UPLOAD_PART_COPY:
        s3_copy_object(q);
        break;
    case GW_S3_OP_GET_OBJECT:
    case GW_S3_OP_HEAD_OBJECT:
        s3_get_object(q);
        break;
    case GW_S3_OP_DELETE_OBJECT:
        s3_delete_object(q);
        break;
    case GW_S3_OP_CREATE_MPU:
        s3_create_mpu(q);
        break;
    case GW_S3_OP_COMPLETE_MPU:
        s3_complete_mpu(q);
        break;
    case GW_S3_OP_ABORT_MPU:
        s3_abort_mpu(q);
        break;
    case GW_S3_OP_LIST_PARTS:
        s3_list_parts(q);
        break;
    default:
        s3_fail(q, GW_S3_E_NOT_IMPLEMENTED, NULL);
        break;
    }
}

/* The state was refreshed for q's unknown access key (state thread). */
static void
auth_resumed(struct gw_state_wait *w)
{
    struct s3_req *q = CM_CONTAINER_OF(w, struct s3_req, wait);

    if (q->in_headers) {
        (void)pre_body(q);
    } else {
        dispatch(q);
    }
}

static int
s3_headers(void *arg, struct cm_http_req *r)
{
    struct gw_s3 *s3 = arg;
    struct s3_req *q;

    if (!has_body(r)) {
        return 0; /* everything is done once the request is in */
    }
    if ((q = req_new(s3, r)) == NULL || route(q) != 0) {
        return 1;
    }
    if (atomic_load(&q->f->draining)) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "the gateway is shutting down");
        return 1;
    }
    q->in_headers = 1;
    return pre_body(q);
}

static void
s3_request(void *arg, struct cm_http_req *r)
{
    struct gw_s3 *s3 = arg;
    struct s3_req *q = req_new(s3, r);

    if (q == NULL || route(q) != 0) {
        return;
    }
    if (atomic_load(&q->f->draining)) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "the gateway is shutting down");
        return;
    }
    dispatch(q);
}

const struct cm_http_handlers gw_s3_handlers = {
    .headers = s3_headers,
    .request = s3_request,
};

/* ---- life cycle ---- */

int
gw_s3_create(const struct gw_s3_cfg *cfg, struct gw_front *f, struct gw_s3 **out)
{
    struct gw_s3 *s3 = cm_calloc(1, sizeof(*s3));
    int rc;

    s3->cfg = *cfg;
    s3->f = f;
    s3->keys = gw_s3_keycache_create(1024);
    s3->jobs_tail = &s3->jobs;
    pthread_condattr_t ca;

    pthread_mutex_init(&s3->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s3->cv, &ca);
    pthread_condattr_destroy(&ca);
    rc = pthread_create(&s3->worker, NULL, worker_main, s3);
    if (rc != 0) {
        pthread_cond_destroy(&s3->cv);
        pthread_mutex_destroy(&s3->mu);
        gw_s3_keycache_destroy(s3->keys);
        free(s3);
        return -rc;
    }
    *out = s3;
    return 0;
}

void
gw_s3_destroy(struct gw_s3 *s3)
{
    if (s3 == NULL) {
        return;
    }
    pthread_mutex_lock(&s3->mu);
    s3->stop = 1;
    pthread_cond_signal(&s3->cv);
    pthread_mutex_unlock(&s3->mu);
    pthread_join(s3->worker, NULL);
    pthread_cond_destroy(&s3->cv);
    pthread_mutex_destroy(&s3->mu);
    gw_s3_keycache_destroy(s3->keys);
    free(s3);
}
