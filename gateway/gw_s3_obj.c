/*
 * gw_s3_obj.c - the S3 front door's object operations (see gw_s3_impl.h):
 * PutObject and UploadPart (s3_store: engine, then one commit that checks
 * the bucket or upload is still there), GetObject/HeadObject (conditions,
 * Range or partNumber, stored headers, reads across parts), DeleteObject(s), and
 * CopyObject/UploadPartCopy (the source read through the engine, hashed
 * and stored again on the copy worker).
 *
 * Threads: handlers on the S3 listener's HTTP threads (or the state
 * thread after a refresh); *_read and store_done on the engine thread;
 * apply_* and *_done on the committer; copy_job on the copy worker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_admit.h"
#include "gw_grace.h"
#include "gw_oread.h"
#include "gw_s3_impl.h"
#include "gw_s3_xml.h"

static int
is_part(const struct s3_req *q)
{
    return q->rt.op == GW_S3_OP_UPLOAD_PART || q->rt.op == GW_S3_OP_UPLOAD_PART_COPY;
}

static int
is_copy(const struct s3_req *q)
{
    return q->rt.op == GW_S3_OP_COPY_OBJECT || q->rt.op == GW_S3_OP_UPLOAD_PART_COPY;
}

/* ---- storing a version ---- */

int
s3_put_headers(struct s3_req *q)
{
    const char *dl = cm_http_header(q->r, "x-amz-decoded-content-length");
    uint64_t clen, size;

    if (cm_http_content_length(q->r, &clen) != 0) {
        s3_fail(q, GW_S3_E_MISSING_CONTENT_LENGTH, NULL);
        return -1;
    }
    size = clen;
    if (dl != NULL && gw_s3_parse_uint(dl, UINT64_MAX, &size) != 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "x-amz-decoded-content-length is not a number");
        return -1;
    }
    if (size > q->f->cfg.max_object_size) {
        s3_fail(q, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        return -1;
    }
    if (q->rt.op == GW_S3_OP_UPLOAD_PART) {
        if (s3_part_target(q) != 0) {
            return -1;
        }
    } else {
        int rc = s3_bucket_get(q, q->rt.bucket, q->rt.blen, NULL);

        if (rc != 0) {
            rc == CM_E_NOTFOUND ? s3_fail(q, GW_S3_E_NO_SUCH_BUCKET, NULL) : s3_fail_rc(q, rc);
            return -1;
        }
    }
    /* Room to pad the last stripe in place: the engine need not copy it. */
    cm_http_reserve_body(q->r,
                         gw_engine_put_room(q->f->engine, gw_front_put_k(q->f, q->t, size), size));
    return 0;
}

/* A conditional PutObject against the version there now (in the commit,
 * so that two writers cannot both see the key free). */
static int
put_conditions(struct gw_meta_batch *b, struct s3_req *q, struct gw_commit_op *op)
{
    struct gw_layout l;
    struct gw_meta_attrs a;
    char etag[GW_S3_ETAG_MAX];
    int rc = gw_meta_batch_get(b, q->tenant, q->rt.key, q->rt.klen, &l, &a);

    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    if (q->if_none_match && rc == 0) {
        return s3_refuse(op, GW_S3_E_PRECONDITION_FAILED, "the key exists (If-None-Match: *)");
    }
    if (q->if_match != NULL) {
        if (rc != 0) {
            return s3_refuse(op, GW_S3_E_NO_SUCH_KEY, NULL);
        }
        s3_etag(&l, &a, etag);
        if (!gw_s3_etag_list_match(q->if_match, etag)) {
            return s3_refuse(op, GW_S3_E_PRECONDITION_FAILED, NULL);
        }
    }
    return 0;
}

static int
apply_store(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    int rc;

    if (s != NULL && gw_snap_tenant(s, q->tenant) == NULL) {
        op->rc = GW_COMMIT_TENANT_GONE;
        return 0;
    }
    if (is_part(q)) {
        rc = s3_upload_in(b, q, op);
        if (rc != 0 || op->rc != 0) {
            return rc;
        }
    } else {
        rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen);
        if (rc == CM_E_NOTFOUND) {
            return s3_refuse(op, GW_S3_E_NO_SUCH_BUCKET, NULL);
        }
        if (rc != 0) {
            return rc;
        }
        if ((q->if_match != NULL || q->if_none_match) && (rc = put_conditions(b, q, op)) != 0) {
            return rc;
        }
        if (op->rc != 0) {
            return 0;
        }
    }
    q->attrs.hdrs = q->hdrs.len > 0 ? q->hdrs.p : NULL;
    q->attrs.hdrs_len = q->hdrs.len;
    q->attrs.mtime_ms = gw_meta_batch_time(b);
    op->rc = is_part(q) ? gw_meta_put(b, q->part_key, q->part_klen, &op->lay, &q->attrs, &op->old)
                        : gw_meta_put(b, q->rt.key, q->rt.klen, &op->lay, &q->attrs, &op->old);
    return op->rc;
}

static void
store_committed(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct gw_front *f = q->f;
    struct gw_meta_old old = op->old;
    char etag[GW_S3_ETAG_MAX];

    memset(&op->old, 0, sizeof(op->old));
    if (op->rc != 0) {
        gw_engine_delete(f->engine, &op->lay, 0);
        gw_meta_old_reset(&old);
        s3_fail_commit(q);
        return;
    }
    /* its META record goes once every chunk is persisted */
    gw_engine_committed(f->engine, &op->lay, &q->attrs, is_part(q) ? q->part_key : q->rt.key,
                        is_part(q) ? q->part_klen : q->rt.klen);
    gw_s3_etag(q->attrs.md5, etag);
    if (is_copy(q)) {
        struct cm_buf b;

        cm_buf_init(&b);
        gw_s3_xml_copy_result(&b, is_part(q), etag, (int64_t)q->attrs.mtime_ms);
        s3_reply_xml(q, 200, &b);
    } else {
        cm_http_add_header(q->r, "ETag", etag);
        s3_reply(q, 200, NULL, NULL, 0, CM_HTTP_STATIC);
    }
    gw_front_retire(f, &old);
}

static void
store_done(void *arg, int status, const struct gw_layout *layout)
{
    struct s3_req *q = arg;

    if (status != 0) {
        s3_fail_rc(q, status);
        return;
    }
    gw_front_note_write(q->f, q->tenant, is_part(q) ? q->part_key : q->rt.key,
                        is_part(q) ? q->part_klen : q->rt.klen, layout, q->t0);
    /* The engine keeps changing its layout: the commit takes a copy. Out
     * of memory, the version is recorded with its tags unknown. */
    (void)gw_layout_copy(&q->commit.lay, layout);
    q->commit.lay.tenant = q->tenant;
    s3_commit(q, apply_store, store_committed);
}

void
s3_store(struct s3_req *q, void *body, uint64_t len, uint64_t cap)
{
    struct gw_front *f = q->f;
    const char *key = is_part(q) ? q->part_key : q->rt.key;
    size_t klen = is_part(q) ? q->part_klen : q->rt.klen;
    const uint32_t *row;
    size_t nrow;

    if (len > f->cfg.max_object_size) {
        cm_free_big(body);
        s3_fail(q, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        return;
    }
    gw_snap_row(q->snap, q->t, (uint32_t)(cm_hash64(key, klen, q->tenant) % q->snap->partitions),
                &row, &nrow);
    if (nrow == 0) {
        cm_free_big(body);
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "no storage nodes known for this partition");
        return;
    }
    if (body == NULL) {
        cap = 0;
        if ((body = malloc(1)) == NULL) { /* the engine takes ownership of a real buffer */
            s3_fail_rc(q, -ENOMEM);
            return;
        }
    }
    q->attrs.has_md5 = 1;
    q->bytes = len;
    s3_suspend(q);
    /* A large PutObject or UploadPart was admitted before its body came
     * (gw_s3_front.c): its bytes stay admitted until the engine frees them. */
    gw_engine_put(f->engine, q->tenant, row, nrow, gw_front_put_k(f, q->t, len), q->t->m, body, len,
                  cap, store_done, q, gw_admit_done, gw_front_ticket_hold(q->r));
}

/* The headers a new version keeps, from the request. */
struct collect {
    struct s3_req *q;
    size_t meta; /* user metadata bytes so far */
    enum gw_s3_err err;
};

static int
collect_one(void *arg, const char *name, const char *value)
{
    struct collect *c = arg;

    c->err = gw_s3_hdrs_add(&c->q->hdrs, &c->meta, name, value);
    return c->err != GW_S3_OK;
}

int
s3_collect_hdrs(struct s3_req *q)
{
    struct collect c = {q, 0, GW_S3_OK};

    cm_http_headers_each(q->r, collect_one, &c);
    if (c.err != GW_S3_OK) {
        s3_fail(q, c.err,
                c.err == GW_S3_E_METADATA_TOO_LARGE
                    ? "user metadata is at most 2 KB, stored headers at most 4 KB"
                    : "a stored header holds a control character");
        return -1;
    }
    return 0;
}

void
s3_put_object(struct s3_req *q)
{
    const char *im = cm_http_header(q->r, "If-Match"), *inm = cm_http_header(q->r, "If-None-Match");
    enum gw_s3_err e;
    const char *why = NULL;
    char *body;
    size_t len, cap;

    if (is_part(q) ? s3_part_target(q) != 0 : s3_collect_hdrs(q) != 0) {
        return;
    }
    if (!is_part(q) && inm != NULL) {
        if (strcmp(inm, "*") != 0) {
            s3_fail(q, GW_S3_E_NOT_IMPLEMENTED, "If-None-Match on a PUT takes only *");
            return;
        }
        q->if_none_match = 1;
    }
    if (!is_part(q) && im != NULL) {
        q->if_match = cm_strdup(im);
    }
    e = s3_body(q, &body, &len, &cap, q->attrs.md5, &why);
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    s3_store(q, body, len, cap);
}

/* ---- GET / HEAD ---- */

/* The response-* query parameters a GET may override headers with. */
static const struct {
    const char *param, *header;
} overrides[] = {
    {"response-content-language", "content-language"},
    {"response-expires", "expires"},
    {"response-cache-control", "cache-control"},
    {"response-content-disposition", "content-disposition"},
    {"response-content-encoding", "content-encoding"},
};

/* Adds the version's headers to q's answer; *ctype gets its content type
 * (borrowed from q->obj or q->x). */
static void
object_headers(struct s3_req *q, const char *etag, const char **ctype)
{
    const struct gw_meta_attrs *a = &q->obj->a;
    char date[32], v[1024];
    int over[sizeof(overrides) / sizeof(overrides[0])] = {0};

    int any = strstr(cm_http_query_string(q->r), "response-") != NULL;

    *ctype = "binary/octet-stream";
    if (any && s3_query(q, "response-content-type", v, sizeof(v)) == 1) {
        q->x = cm_strdup(v);
        q->x_free = free;
        *ctype = q->x;
    }
    for (size_t i = 0; any && i < sizeof(overrides) / sizeof(overrides[0]); i++) {
        if (s3_query(q, overrides[i].param, v, sizeof(v)) == 1) {
            cm_http_add_header(q->r, overrides[i].header, v);
            over[i] = 1;
        }
    }
    for (size_t p = 0; a->hdrs != NULL && p < a->hdrs_len;) {
        const char *name = a->hdrs + p, *value = name + strlen(name) + 1;
        int skip = 0;

        p = (size_t)(value + strlen(value) + 1 - a->hdrs);
        if (strcmp(name, "content-type") == 0) {
            if (q->x == NULL) {
                *ctype = value;
            }
            continue;
        }
        for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++) {
            skip |= over[i] && strcmp(name, overrides[i].header) == 0;
        }
        if (!skip) {
            cm_http_add_header(q->r, name, value);
        }
    }
    cm_http_add_header(q->r, "ETag", etag);
    gw_s3_http_date_fmt((int64_t)(a->mtime_ms / 1000), date);
    cm_http_add_header(q->r, "Last-Modified", date);
    cm_http_add_header(q->r, "Accept-Ranges", "bytes");
}

static void
get_done(void *arg, int status, void *buf, size_t len)
{
    struct s3_req *q = arg;
    const char *ctype = q->x != NULL ? q->x : "binary/octet-stream";

    gw_front_note_read(q->f, q->tenant, q->rt.key, q->rt.klen, &q->obj->lay, q->off, q->len,
                       status == 0 ? len : 0, q->t0);
    if (status != 0) {
        cm_free_big(buf);
        s3_fail_rc(q, status);
        return;
    }
    if (len != q->len) {
        cm_free_big(buf);
        CM_ERROR("engine returned a short read req=%s tenant=%u want=%llu got=%zu", q->id,
                 q->tenant, (unsigned long long)q->len, len);
        s3_fail(q, GW_S3_E_INTERNAL, NULL);
        return;
    }
    q->bytes = len;
    s3_reply(q, q->partial ? 206 : 200, ctype, buf, len, CM_HTTP_FREE);
}

static void
read_object(struct s3_req *q)
{
    gw_oread(q->f->engine, &q->obj->lay, q->obj->parts, q->obj->a.nparts, q->off, q->len, get_done,
             q);
}

/* A large read admitted after a wait; the ticket goes with the answer. */
static void
read_admitted(void *arg, struct gw_admit_ticket *t, int status)
{
    struct s3_req *q = arg;

    if (status != 0) {
        s3_fail(q, GW_S3_E_SLOW_DOWN, "too many large requests in flight: retry later");
        return;
    }
    gw_front_admitted(q->r, t);
    read_object(q);
}

/* The version at q->rt.key into q->obj (in a grace period first when its
 * chunks will be read): 0, or answered (NoSuchKey, NoSuchBucket...). */
static int
load_object(struct s3_req *q, const char *bucket, size_t blen, const char *key, size_t klen,
            int read)
{
    int rc;

    if (read) {
        q->grace = gw_grace_enter(q->f->grace); /* before the read: see gw_front_retire() */
    }
    q->obj = malloc(sizeof(*q->obj));
    if (q->obj == NULL) {
        s3_fail_rc(q, -ENOMEM);
        return -1;
    }
    rc = gw_meta_get_obj(q->f->meta, q->tenant, key, klen, q->obj);
    if (rc == CM_E_NOTFOUND) {
        rc = s3_bucket_get(q, bucket, blen, NULL);
        if (rc == 0) {
            s3_fail(q, GW_S3_E_NO_SUCH_KEY, NULL);
        } else if (rc == CM_E_NOTFOUND) {
            s3_fail(q, GW_S3_E_NO_SUCH_BUCKET, NULL);
        } else {
            s3_fail_rc(q, rc);
        }
        return -1;
    }
    if (rc != 0) {
        s3_fail_rc(q, rc);
        return -1;
    }
    return 0;
}

/* The Range header of q into q->off, q->len (partial: 206): 0, or
 * answered (InvalidRange). */
static int
read_range(struct s3_req *q, uint64_t size)
{
    char cr[96];

    switch (gw_parse_range(cm_http_header(q->r, "Range"), size, &q->off, &q->len)) {
    case GW_RANGE_OK:
        q->partial = 1;
        break;
    case GW_RANGE_UNSAT:
        snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
        cm_http_add_header(q->r, "Content-Range", cr);
        s3_fail(q, GW_S3_E_INVALID_RANGE, NULL);
        return -1;
    case GW_RANGE_NONE:
    case GW_RANGE_BAD: /* as S3: a Range it cannot serve is ignored */
        q->off = 0;
        q->len = size;
        break;
    }
    return 0;
}

/* GetObject's and HeadObject's partNumber (v, the query's): part n of a
 * multipart object in q->off, q->len (206, x-amz-mp-parts-count), the
 * whole object for part 1 of another (as MinIO): 0, or answered. */
static int
part_of(struct s3_req *q, const char *v)
{
    const struct gw_meta_obj *o = q->obj;
    uint64_t n;
    char cnt[16];

    if (gw_s3_parse_uint(v, GW_S3_MAX_PARTS, &n) != 0 || n == 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "partNumber must be 1 to 10000");
        return -1;
    }
    if (cm_http_header(q->r, "Range") != NULL) {
        s3_fail(q, GW_S3_E_INVALID_REQUEST,
                "Cannot specify both Range header and partNumber query parameter");
        return -1;
    }
    if (n > (o->a.nparts > 0 ? o->a.nparts : 1)) {
        s3_fail(q, GW_S3_E_INVALID_PART_NUMBER, NULL);
        return -1;
    }
    q->off = 0;
    q->len = o->lay.size;
    if (o->a.nparts > 0) {
        for (uint64_t i = 0; i + 1 < n; i++) {
            q->off += o->parts[i].size;
        }
        q->len = o->parts[n - 1].size;
        q->partial = 1;
        snprintf(cnt, sizeof(cnt), "%u", o->a.nparts);
        cm_http_add_header(q->r, "x-amz-mp-parts-count", cnt);
    }
    return 0;
}

void
s3_get_object(struct s3_req *q)
{
    int head = q->rt.op == GW_S3_OP_HEAD_OBJECT;
    struct gw_s3_cond_hdrs ch = {
        cm_http_header(q->r, "If-Match"),
        cm_http_header(q->r, "If-None-Match"),
        cm_http_header(q->r, "If-Modified-Since"),
        cm_http_header(q->r, "If-Unmodified-Since"),
    };
    char etag[GW_S3_ETAG_MAX], cr[96];
    const char *ctype;
    uint64_t size;

    if (load_object(q, q->rt.bucket, q->rt.blen, q->rt.key, q->rt.klen, !head) != 0) {
        return;
    }
    size = q->obj->lay.size;
    s3_etag(&q->obj->lay, &q->obj->a, etag);
    switch (gw_s3_conditions(&ch, etag, (int64_t)(q->obj->a.mtime_ms / 1000), 0)) {
    case GW_S3_COND_OK:
        break;
    case GW_S3_COND_NOT_MODIFIED:
        object_headers(q, etag, &ctype);
        s3_fail(q, GW_S3_E_NOT_MODIFIED, NULL);
        return;
    case GW_S3_COND_FAILED:
        s3_fail(q, GW_S3_E_PRECONDITION_FAILED, NULL);
        return;
    }
    if (s3_query(q, "partNumber", cr, sizeof(cr)) == 1 ? part_of(q, cr) : read_range(q, size)) {
        return;
    }
    object_headers(q, etag, &ctype);
    if (q->x == NULL && ctype != NULL) {
        q->x = cm_strdup(ctype); /* q->obj's headers may go before the answer */
        q->x_free = free;
    }
    if (q->partial) {
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                 (unsigned long long)(q->off + q->len - 1), (unsigned long long)size);
        cm_http_add_header(q->r, "Content-Range", cr);
    }
    if (head) {
        s3_reply_head(q, q->partial ? 206 : 200, q->x, q->len);
        return;
    }
    if (q->len == 0) {
        s3_reply(q, 200, q->x, NULL, 0, CM_HTTP_STATIC);
        return;
    }
    s3_suspend(q);
    /* Large reads share the gateway's bytes in flight with the tenant API's. */
    switch (gw_front_admit(q->f, q->r, q->tenant, q->len, GW_ADMIT_READ, read_admitted, q)) {
    case 1:
        read_object(q);
        break;
    case 0:
        break; /* read_admitted follows */
    default:
        s3_fail(q, GW_S3_E_SLOW_DOWN, "gateway out of memory, retry later");
        break;
    }
}

/* ---- DELETE ---- */

static int
apply_delete(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    int rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen);

    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_BUCKET, NULL);
    }
    if (rc == 0) {
        rc = gw_meta_delete(b, q->tenant, q->rt.key, q->rt.klen, &op->old);
    }
    return rc == CM_E_NOTFOUND ? 0 : rc; /* S3: deleting nothing is a success */
}

static void
delete_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct gw_front *f = q->f;
    struct gw_meta_old old = op->old;

    memset(&op->old, 0, sizeof(op->old));
    if (op->rc != 0) {
        gw_meta_old_reset(&old);
        s3_fail_commit(q);
        return;
    }
    s3_reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
    gw_front_retire(f, &old);
}

void
s3_delete_object(struct s3_req *q)
{
    s3_commit(q, apply_delete, delete_done);
}

struct delx {
    struct gw_s3_xml_delete d;
    struct gw_s3_xml_deleted *res;
    struct gw_meta_old *olds;
};

static void
delx_free(void *arg)
{
    struct delx *x = arg;

    for (size_t i = 0; x->olds != NULL && i < x->d.nobjects; i++) {
        gw_meta_old_reset(&x->olds[i]);
    }
    free(x->olds);
    free(x->res);
    gw_s3_xml_delete_free(&x->d);
    free(x);
}

static int
apply_delete_objects(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct delx *x = q->x;
    int rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen);

    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_BUCKET, NULL);
    }
    for (size_t i = 0; rc == 0 && i < x->d.nobjects; i++) {
        const struct gw_s3_xml_dobj *o = &x->d.objects[i];
        struct gw_s3_route k;

        x->res[i] = (struct gw_s3_xml_deleted){o->key, GW_S3_OK, NULL};
        gw_meta_old_reset(&x->olds[i]);
        if (o->version_id != NULL && strcmp(o->version_id, "null") != 0) {
            x->res[i].err = GW_S3_E_INVALID_ARGUMENT;
            x->res[i].message = "versions are not kept: the only versionId is null";
            continue;
        }
        x->res[i].err =
            gw_s3_native_key(q->rt.bucket, q->rt.blen, o->key, o->key_len, &k, &x->res[i].message);
        if (x->res[i].err == GW_S3_OK) {
            rc = gw_meta_delete(b, q->tenant, k.key, k.klen, &x->olds[i]);
            rc = rc == CM_E_NOTFOUND ? 0 : rc;
        }
    }
    return rc;
}

static void
delete_objects_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct gw_front *f = q->f;
    struct delx *x = q->x;
    struct cm_buf b;

    if (op->rc != 0) {
        s3_fail_commit(q);
        return;
    }
    for (size_t i = 0; i < x->d.nobjects; i++) {
        gw_front_retire(f, &x->olds[i]);
    }
    cm_buf_init(&b);
    gw_s3_xml_delete_result(&b, x->res, x->d.nobjects, x->d.quiet);
    s3_reply_xml(q, 200, &b);
}

void
s3_delete_objects(struct s3_req *q)
{
    struct delx *x = cm_calloc(1, sizeof(*x));
    const char *why = NULL;
    enum gw_s3_err e;
    char *body;
    size_t len, cap;

    q->x = x;
    q->x_free = delx_free;
    e = s3_body(q, &body, &len, &cap, NULL, &why);
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    e = gw_s3_xml_parse_delete(body != NULL ? body : "", len, &x->d, &why);
    cm_free_big(body);
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    x->res = cm_calloc(x->d.nobjects, sizeof(*x->res));
    x->olds = cm_calloc(x->d.nobjects, sizeof(*x->olds));
    s3_commit(q, apply_delete_objects, delete_objects_done);
}

/* ---- copies ---- */

struct copyx {
    char *buf; /* the bytes read */
    int reuse_md5;
};

static void
copyx_free(void *arg)
{
    struct copyx *x = arg;

    cm_free_big(x->buf);
    free(x);
}

static void
copy_job(struct s3_req *q)
{
    struct copyx *x = q->x;
    char *buf = x->buf;
    uint8_t md[CM_DIGEST_MAX];

    if (!x->reuse_md5) {
        cm_digest_once(CM_DIGEST_MD5, buf, (size_t)q->len, md);
        memcpy(q->attrs.md5, md, 16);
    }
    x->buf = NULL;
    s3_store(q, buf, q->len, q->len);
}

static void
copy_read(void *arg, int status, void *buf, size_t len)
{
    struct s3_req *q = arg;
    struct copyx *x = q->x;

    if (status != 0 || len != q->len) {
        cm_free_big(buf);
        s3_fail_rc(q, status != 0 ? status : -EIO);
        return;
    }
    x->buf = buf;
    s3_queue_job(q, copy_job); /* hashing and encoding stay off the engine thread */
}

void
s3_copy_object(struct s3_req *q)
{
    struct gw_s3_cond_hdrs ch = {
        cm_http_header(q->r, "x-amz-copy-source-if-match"),
        cm_http_header(q->r, "x-amz-copy-source-if-none-match"),
        cm_http_header(q->r, "x-amz-copy-source-if-modified-since"),
        cm_http_header(q->r, "x-amz-copy-source-if-unmodified-since"),
    };
    const char *dir = cm_http_header(q->r, "x-amz-metadata-directive"), *why = NULL;
    struct gw_s3_route src;
    struct copyx *x;
    char etag[GW_S3_ETAG_MAX];
    enum gw_s3_err e;
    int replace = dir != NULL && strcmp(dir, "REPLACE") == 0;

    if (dir != NULL && !replace && strcmp(dir, "COPY") != 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "x-amz-metadata-directive is COPY or REPLACE");
        return;
    }
    if (is_part(q) && s3_part_target(q) != 0) {
        return;
    }
    e = gw_s3_copy_source(cm_http_header(q->r, "x-amz-copy-source"), &src, &why);
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    if (!is_part(q) && !replace && src.klen == q->rt.klen &&
        memcmp(src.key, q->rt.key, src.klen) == 0) {
        s3_fail(q, GW_S3_E_INVALID_REQUEST,
                "This copy request is illegal because it is trying to copy an object to itself "
                "without changing the object's metadata");
        return;
    }
    if (load_object(q, src.bucket, src.blen, src.key, src.klen, 1) != 0) {
        return;
    }
    s3_etag(&q->obj->lay, &q->obj->a, etag);
    if (gw_s3_conditions(&ch, etag, (int64_t)(q->obj->a.mtime_ms / 1000), 1) != GW_S3_COND_OK) {
        s3_fail(q, GW_S3_E_PRECONDITION_FAILED, NULL);
        return;
    }
    q->off = 0;
    q->len = q->obj->lay.size;
    if (is_part(q)) {
        const char *range = cm_http_header(q->r, "x-amz-copy-source-range");
        enum gw_range rr = gw_parse_range(range, q->obj->lay.size, &q->off, &q->len);

        if (rr == GW_RANGE_BAD || (range != NULL && rr != GW_RANGE_OK)) {
            s3_fail(q, rr == GW_RANGE_BAD ? GW_S3_E_INVALID_ARGUMENT : GW_S3_E_INVALID_RANGE,
                    "x-amz-copy-source-range must be bytes=first-last within the source");
            return;
        }
        if (rr == GW_RANGE_NONE) {
            q->off = 0;
            q->len = q->obj->lay.size;
        }
    } else if (replace ? s3_collect_hdrs(q) != 0 : 0) {
        return;
    } else if (!replace && q->obj->a.hdrs != NULL) {
        cm_buf_append(&q->hdrs, q->obj->a.hdrs, q->obj->a.hdrs_len);
    }
    if (q->len > q->f->cfg.max_object_size) {
        s3_fail(q, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        return;
    }
    x = cm_calloc(1, sizeof(*x));
    q->x = x;
    q->x_free = copyx_free;
    /* A whole single version's MD5 is the copy's: no need to hash again. */
    x->reuse_md5 = q->obj->a.has_md5 && q->obj->a.nparts == 0 && q->len == q->obj->lay.size;
    memcpy(q->attrs.md5, q->obj->a.md5, 16);
    if (q->len == 0) {
        uint8_t md[CM_DIGEST_MAX];

        cm_digest_once(CM_DIGEST_MD5, "", 0, md);
        memcpy(q->attrs.md5, md, 16);
        s3_store(q, NULL, 0, 0);
        return;
    }
    s3_suspend(q);
    gw_oread(q->f->engine, &q->obj->lay, q->obj->parts, q->obj->a.nparts, q->off, q->len, copy_read,
             q);
}
