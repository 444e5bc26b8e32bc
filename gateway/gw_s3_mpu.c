/*
 * gw_s3_mpu.c - multipart uploads of the S3 front door (see
 * gw_s3_impl.h): CreateMultipartUpload, UploadPart (gw_s3_obj.c stores
 * it), CompleteMultipartUpload, AbortMultipartUpload, ListParts,
 * ListMultipartUploads.
 *
 *   upload         a record-only version at the internal key
 *                  "\0u<upload id>" (gw_meta.h): its commit time, the
 *                  object's native key (target) and stored headers
 *   part n         an ordinary version at the internal key
 *                  "\0p<upload id>/<n, 5 digits>": erasure-coded, pending
 *                  until persisted, invisible to LIST and GET
 *   Complete       copies no bytes: the object becomes a composite, a
 *                  record-only version naming the upload id and the part
 *                  numbers, whose parts stay at their keys (reads look
 *                  them up there, so a migrated part is read where it
 *                  went); the upload's version is deleted. Its S3 ETag is
 *                  the MD5 of the parts' MD5s and "-N", its native ETag
 *                  the CRC-64 of the bytes, combined from the parts'
 *
 * Upload ids are 128 random bits in hex; uploads and their parts are
 * versions like any other: they survive a restart of the gateway, and
 * --rebuild-meta brings them back. Every version an op deletes (an
 * upload's, parts left out of a Complete or aborted) has its tombstone
 * logged (gw_front_retire).
 *
 * An upload begun more than --s3-upload-expiry-ms ago is aborted by the
 * copy worker's sweeps (s3_expire_uploads), as MinIO expires stale
 * uploads: a client that never completes nor aborts would leave its parts
 * for good.
 *
 * ListParts and ListMultipartUploads are in gw_s3_mpu_list.c.
 *
 * Threads: handlers on the S3 listener's HTTP threads; apply_* and *_done
 * on the committer; the expiry on the copy worker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_s3_impl.h"
#include "gw_s3_xml.h"

/* ---- records ---- */

int
s3_upload_from(const struct gw_layout *l, const struct gw_meta_attrs *a, struct s3_upload *u)
{
    if (!gw_layout_record_only(l) || a->target == NULL) {
        return CM_E_PROTO;
    }
    u->created_ms = a->mtime_ms;
    u->key = a->target;
    u->klen = a->target_len;
    u->hdrs = a->hdrs;
    u->hlen = a->hdrs_len;
    return 0;
}

void
s3_part_key(const char *id, unsigned n, char out[S3_PART_KEY_LEN], size_t *len)
{
    *len = gw_meta_part_key(id, n, out);
}

/* The number of a part key. */
unsigned
s3_part_no(const char *k)
{
    unsigned n = 0;

    for (size_t i = S3_PART_PREFIX_LEN; i < S3_PART_KEY_LEN; i++) {
        n = n * 10 + (unsigned)(k[i] - '0');
    }
    return n;
}

static int
upload_id_ok(const char *s)
{
    if (strlen(s) != S3_UPLOAD_ID_LEN) {
        return 0;
    }
    for (const char *c = s; *c != '\0'; c++) {
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

/* q's uploadId parameter into q->upload_id: 0, or answered. */
int
s3_upload_param(struct s3_req *q)
{
    if (s3_query(q, "uploadId", q->upload_id, sizeof(q->upload_id)) != 1 ||
        !upload_id_ok(q->upload_id)) {
        s3_fail(q, GW_S3_E_NO_SUCH_UPLOAD, NULL);
        return -1;
    }
    return 0;
}

/* That the upload of q (q->upload_id) exists and is q's object's, in its
 * own read: 0, or answered. */
int
s3_upload_check(struct s3_req *q)
{
    char k[S3_UPLOAD_KEY_LEN];
    struct gw_meta_obj *o = malloc(sizeof(*o));
    struct s3_upload u;
    int rc = o == NULL ? -ENOMEM
                       : gw_meta_get_obj(q->f->meta, q->tenant, k,
                                         gw_meta_upload_key(q->upload_id, k), o);

    if (rc == 0 && (s3_upload_from(&o->lay, &o->a, &u) != 0 || u.klen != q->rt.klen ||
                    memcmp(u.key, q->rt.key, u.klen) != 0)) {
        rc = CM_E_NOTFOUND; /* another object's upload */
    }
    if (o != NULL) {
        gw_meta_obj_fini(o);
        free(o);
    }
    if (rc != 0) {
        rc == CM_E_NOTFOUND ? s3_fail(q, GW_S3_E_NO_SUCH_UPLOAD, NULL) : s3_fail_rc(q, rc);
        return -1;
    }
    return 0;
}

int
s3_part_target(struct s3_req *q)
{
    char v[16];
    uint64_t n;

    if (s3_upload_param(q) != 0) {
        return -1;
    }
    if (s3_query(q, "partNumber", v, sizeof(v)) != 1 || gw_s3_parse_uint(v, GW_S3_MAX_PARTS, &n) ||
        n == 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT,
                "Part number must be an integer between 1 and 10000, inclusive");
        return -1;
    }
    if (s3_upload_check(q) != 0) {
        return -1;
    }
    q->part = (unsigned)n;
    s3_part_key(q->upload_id, q->part, q->part_key, &q->part_klen);
    return 0;
}

/* In a commit: the upload of q (q->upload_id), which must be q's
 * object's (borrowed until the batch's next write). */
static int
upload_get_in(struct gw_meta_batch *b, struct s3_req *q, struct s3_upload *u)
{
    char k[S3_UPLOAD_KEY_LEN];
    struct gw_layout l;
    struct gw_meta_attrs a;
    int rc = gw_meta_batch_get(b, q->tenant, k, gw_meta_upload_key(q->upload_id, k), &l, &a);

    if (rc == 0 && (s3_upload_from(&l, &a, u) != 0 || u->klen != q->rt.klen ||
                    memcmp(u->key, q->rt.key, u->klen) != 0)) {
        rc = CM_E_NOTFOUND;
    }
    return rc;
}

/* In a commit: deletes the version of upload id, appended to olds. */
static int
upload_delete(struct gw_meta_batch *b, uint32_t tenant, const char *id, struct cm_buf *olds)
{
    char k[S3_UPLOAD_KEY_LEN];
    struct gw_meta_old old = {0};
    int rc = gw_meta_delete(b, tenant, k, gw_meta_upload_key(id, k), &old);

    if (rc == 0) {
        cm_buf_append(olds, &old, sizeof(old)); /* olds owns its key now */
    }
    return rc;
}

int
s3_upload_in(struct gw_meta_batch *b, struct s3_req *q, struct gw_commit_op *op)
{
    struct s3_upload u;
    int rc = upload_get_in(b, q, &u);

    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_UPLOAD, NULL);
    }
    return rc;
}

/* ---- parts of an upload, inside a commit ---- */

struct pkeys {
    struct cm_buf keys; /* S3_PART_KEY_LEN each */
    size_t n;
};

static int
pkey_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
         const struct gw_meta_attrs *a)
{
    struct pkeys *p = arg;

    (void)l;
    (void)a;
    if (klen == S3_PART_KEY_LEN) {
        cm_buf_append(&p->keys, key, klen);
        p->n++;
    }
    return 0;
}

/* Deletes the parts of upload id in b (except those whose part number is
 * set in keep, when given), their versions appended to olds. */
static int
drop_parts(struct gw_meta_batch *b, uint32_t tenant, const char *id, const uint8_t *keep,
           struct cm_buf *olds)
{
    char prefix[S3_PART_KEY_LEN];
    struct pkeys p = {{NULL, 0, 0}, 0};
    size_t plen;
    int rc;

    s3_part_key(id, 0, prefix, &plen);
    cm_buf_init(&p.keys);
    rc = gw_meta_batch_scan(b, tenant, prefix, S3_PART_PREFIX_LEN, pkey_one, &p);
    for (size_t i = 0; rc == 0 && i < p.n; i++) {
        const char *k = p.keys.p + i * S3_PART_KEY_LEN;
        unsigned n = s3_part_no(k);
        struct gw_meta_old old = {0};

        if (keep != NULL && n <= GW_S3_MAX_PARTS && keep[n]) {
            continue;
        }
        rc = gw_meta_delete(b, tenant, k, S3_PART_KEY_LEN, &old);
        if (rc == 0) {
            cm_buf_append(olds, &old, sizeof(old)); /* olds owns its key now */
        }
    }
    cm_buf_fini(&p.keys);
    return rc;
}

static void
olds_retire(struct gw_front *f, struct cm_buf *olds)
{
    struct gw_meta_old *o = (struct gw_meta_old *)(void *)olds->p;

    for (size_t i = 0; i < olds->len / sizeof(*o); i++) {
        gw_front_retire(f, &o[i]);
    }
    olds->len = 0;
}

static void
olds_reset(struct cm_buf *olds)
{
    struct gw_meta_old *o = (struct gw_meta_old *)(void *)olds->p;

    for (size_t i = 0; i < olds->len / sizeof(*o); i++) {
        gw_meta_old_reset(&o[i]);
    }
    olds->len = 0;
}

struct bucket_uploads {
    const char *bucket;
    size_t blen;
    struct cm_buf ids; /* S3_UPLOAD_ID_LEN each */
    size_t n;
};

static int
bucket_upload_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
                  const struct gw_meta_attrs *a)
{
    struct bucket_uploads *bu = arg;
    struct s3_upload u;

    if (klen == S3_UPLOAD_KEY_LEN && s3_upload_from(l, a, &u) == 0 && u.klen > bu->blen &&
        memcmp(u.key, bu->bucket, bu->blen) == 0 && u.key[bu->blen] == '/') {
        cm_buf_append(&bu->ids, key + 2, S3_UPLOAD_ID_LEN);
        bu->n++;
    }
    return 0;
}

int
s3_abort_bucket_uploads(struct gw_meta_batch *b, struct s3_req *q, struct cm_buf *olds)
{
    struct bucket_uploads bu = {q->rt.bucket, q->rt.blen, {NULL, 0, 0}, 0};
    int rc;

    cm_buf_init(&bu.ids);
    rc = gw_meta_batch_scan(b, q->tenant, "\0u", 2, bucket_upload_one, &bu);
    for (size_t i = 0; rc == 0 && i < bu.n; i++) {
        char id[S3_UPLOAD_ID_LEN + 1];

        memcpy(id, bu.ids.p + i * S3_UPLOAD_ID_LEN, S3_UPLOAD_ID_LEN);
        id[S3_UPLOAD_ID_LEN] = '\0';
        rc = drop_parts(b, q->tenant, id, NULL, olds);
        if (rc == 0) {
            rc = upload_delete(b, q->tenant, id, olds);
        }
    }
    cm_buf_fini(&bu.ids);
    return rc;
}

/* ---- CreateMultipartUpload ---- */

static int
apply_create(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct gw_layout l;
    int rc;

    if (s != NULL && gw_snap_tenant(s, q->tenant) == NULL) {
        op->rc = GW_COMMIT_TENANT_GONE;
        return 0;
    }
    rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen);
    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_BUCKET, NULL);
    }
    if (rc != 0) {
        return rc;
    }
    q->iklen = gw_meta_upload_key(q->upload_id, q->ikey);
    rc = gw_meta_batch_get(b, q->tenant, q->ikey, q->iklen, &l, NULL);
    if (rc != CM_E_NOTFOUND) {
        op->rc = rc == 0 ? CM_E_EXISTS : rc;
        return rc == 0 ? 0 : rc;
    }
    memset(&op->lay, 0, sizeof(op->lay));
    op->lay.tenant = q->tenant;
    op->lay.m = q->t->m;
    memset(&op->attrs, 0, sizeof(op->attrs));
    op->attrs.mtime_ms = gw_meta_batch_time(b);
    op->attrs.hdrs = q->hdrs.len > 0 ? q->hdrs.p : NULL;
    op->attrs.hdrs_len = q->hdrs.len;
    op->attrs.target = q->rt.key;
    op->attrs.target_len = q->rt.klen;
    op->rc = gw_meta_put(b, q->ikey, q->iklen, &op->lay, &op->attrs, &op->old);
    return op->rc;
}

static void
create_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct cm_buf b;

    if (op->rc != 0) {
        s3_fail_commit(q);
        return;
    }
    gw_engine_committed(q->f->engine, &op->lay, &op->attrs, q->ikey, q->iklen);
    cm_buf_init(&b);
    gw_s3_xml_initiate_mpu(&b, q->rt.bucket, q->rt.key + q->rt.blen + 1, q->upload_id);
    s3_reply_xml(q, 200, &b);
}

void
s3_create_mpu(struct s3_req *q)
{
    if (s3_collect_hdrs(q) != 0) {
        return;
    }
    if (cm_random_hex(q->upload_id, S3_UPLOAD_ID_LEN / 2) != 0) {
        s3_fail(q, GW_S3_E_INTERNAL, NULL);
        return;
    }
    s3_commit(q, apply_create, create_done);
}

/* ---- CompleteMultipartUpload ---- */

struct cx {
    struct gw_s3_xml_complete c;
    struct cm_buf olds; /* the upload and its unlisted parts: struct gw_meta_old */
    char etag[GW_S3_ETAG_MAX];
    /* the composite's attributes' strings, for the commit and its done */
    char *hdrs;
    uint8_t *nums; /* part numbers, u16 LE */
};

static void
cx_free(void *arg)
{
    struct cx *x = arg;

    olds_reset(&x->olds);
    cm_buf_fini(&x->olds);
    gw_s3_xml_complete_free(&x->c);
    free(x->hdrs);
    free(x->nums);
    free(x);
}

static int
apply_complete(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct cx *x = q->x;
    size_t n = x->c.nparts;
    uint8_t *md5s = NULL, *keep = NULL, md[CM_DIGEST_MAX];
    struct s3_upload u;
    uint64_t size = 0, crc = 0;
    int rc;

    olds_reset(&x->olds);
    free(x->hdrs);
    x->hdrs = NULL;
    if (s != NULL && gw_snap_tenant(s, q->tenant) == NULL) {
        op->rc = GW_COMMIT_TENANT_GONE;
        return 0;
    }
    rc = upload_get_in(b, q, &u);
    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_UPLOAD, NULL);
    }
    if (rc != 0) {
        return rc;
    }
    /* the record is borrowed until the first write */
    if (u.hlen > 0) {
        x->hdrs = cm_malloc(u.hlen);
        memcpy(x->hdrs, u.hdrs, u.hlen);
    }
    md5s = cm_malloc(16 * n);
    keep = cm_calloc(GW_S3_MAX_PARTS + 1, 1);
    free(x->nums);
    x->nums = cm_malloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        const struct gw_s3_xml_cpart *p = &x->c.parts[i];
        char pk[S3_PART_KEY_LEN];
        size_t pklen;
        struct gw_layout l;
        struct gw_meta_attrs a;
        uint8_t want[16];

        s3_part_key(q->upload_id, p->number, pk, &pklen);
        rc = gw_meta_batch_get(b, q->tenant, pk, pklen, &l, &a);
        if (rc == CM_E_NOTFOUND ||
            (rc == 0 && (!a.has_md5 || gw_s3_etag_md5(p->etag, strlen(p->etag), want) != 0 ||
                         memcmp(want, a.md5, 16) != 0))) {
            rc = s3_refuse(op, GW_S3_E_INVALID_PART, NULL);
            goto out;
        }
        if (rc != 0) {
            goto out;
        }
        if (i + 1 < n && l.size < S3_MIN_PART) {
            rc = s3_refuse(op, GW_S3_E_ENTITY_TOO_SMALL,
                           "every part but the last must be at least 5 MiB");
            goto out;
        }
        memcpy(md5s + 16 * i, a.md5, 16);
        keep[p->number] = 1;
        cm_put_le16(x->nums + 2 * i, (uint16_t)p->number);
        crc = i == 0 ? l.etag : gw_s3_crc64_combine(crc, l.etag, l.size);
        size += l.size;
    }
    if (size > q->f->cfg.max_object_size) {
        rc = s3_refuse(op, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        goto out;
    }
    /* checks done: now the writes. The parts stay at their keys: the
     * composite names them by upload id and number. */
    rc = drop_parts(b, q->tenant, q->upload_id, keep, &x->olds);
    if (rc == 0) {
        memset(&op->lay, 0, sizeof(op->lay));
        op->lay.tenant = q->tenant;
        op->lay.m = q->t->m;
        op->lay.size = size;
        op->lay.etag = crc;
        memset(&op->attrs, 0, sizeof(op->attrs));
        op->attrs.mtime_ms = gw_meta_batch_time(b);
        cm_digest_once(CM_DIGEST_MD5, md5s, 16 * n, md);
        op->attrs.has_md5 = 1;
        memcpy(op->attrs.md5, md, 16);
        op->attrs.hdrs = x->hdrs;
        op->attrs.hdrs_len = x->hdrs != NULL ? u.hlen : 0;
        op->attrs.upload = q->upload_id;
        op->attrs.parts = x->nums;
        op->attrs.nparts = (uint32_t)n;
        rc = gw_meta_put(b, q->rt.key, q->rt.klen, &op->lay, &op->attrs, &op->old);
        s3_etag(&op->lay, &op->attrs, x->etag);
    }
    if (rc == 0) {
        rc = upload_delete(b, q->tenant, q->upload_id, &x->olds);
    }
    op->rc = rc;
out:
    free(md5s);
    free(keep);
    return rc;
}

static void
complete_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct cx *x = q->x;
    struct gw_front *f = q->f;
    struct gw_meta_old old = op->old;
    struct cm_buf b;

    memset(&op->old, 0, sizeof(op->old));
    if (op->rc != 0) {
        gw_meta_old_reset(&old);
        s3_fail_commit(q);
        return;
    }
    gw_engine_committed(f->engine, &op->lay, &op->attrs, q->rt.key, q->rt.klen);
    olds_retire(f, &x->olds);
    gw_front_retire(f, &old);
    q->bytes = op->lay.size;
    cm_buf_init(&b);
    gw_s3_xml_complete_mpu(&b, cm_http_path(q->r), q->rt.bucket, q->rt.key + q->rt.blen + 1,
                           x->etag);
    s3_reply_xml(q, 200, &b);
}

void
s3_complete_mpu(struct s3_req *q)
{
    struct cx *x = cm_calloc(1, sizeof(*x));
    const char *why = NULL;
    enum gw_s3_err e;
    char *body;
    size_t len, cap;

    cm_buf_init(&x->olds);
    q->x = x;
    q->x_free = cx_free;
    if (s3_upload_param(q) != 0) {
        return;
    }
    e = s3_body(q, &body, &len, &cap, NULL, &why);
    if (e == GW_S3_OK) {
        e = gw_s3_xml_parse_complete(body != NULL ? body : "", len, &x->c, &why);
        cm_free_big(body);
    }
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    s3_commit(q, apply_complete, complete_done);
}

/* ---- AbortMultipartUpload ---- */

static int
apply_abort(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct cm_buf *olds = q->x;
    struct s3_upload u;
    int rc;

    olds_reset(olds);
    rc = upload_get_in(b, q, &u);
    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_UPLOAD, NULL);
    }
    if (rc == 0) {
        rc = drop_parts(b, q->tenant, q->upload_id, NULL, olds);
    }
    if (rc == 0) {
        rc = upload_delete(b, q->tenant, q->upload_id, olds);
    }
    op->rc = rc;
    return rc;
}

static void
abort_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);

    if (op->rc != 0) {
        s3_fail_commit(q);
        return;
    }
    olds_retire(q->f, q->x);
    s3_reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
}

static void
olds_free(void *arg)
{
    olds_reset(arg);
    cm_buf_fini(arg);
    free(arg);
}

void
s3_abort_mpu(struct s3_req *q)
{
    struct cm_buf *olds = cm_calloc(1, sizeof(*olds));

    cm_buf_init(olds);
    q->x = olds;
    q->x_free = olds_free;
    if (s3_upload_param(q) != 0) {
        return;
    }
    s3_commit(q, apply_abort, abort_done);
}

/* ---- expiry of abandoned uploads ---- */

#define EXPIRE_BATCH 32 /* uploads a commit op aborts */

/* Uploads of one tenant begun before cutoff_ms, aborted in one commit. */
struct expire_op {
    struct gw_commit_op op;
    struct gw_s3 *s3;
    uint32_t tenant;
    uint64_t cutoff_ms;
    size_t n, expired;
    char ids[EXPIRE_BATCH][S3_UPLOAD_ID_LEN + 1];
    struct cm_buf olds;
    int finished; /* under s3->mu */
};

static int
apply_expire(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct expire_op *x = CM_CONTAINER_OF(op, struct expire_op, op);
    int rc = 0;

    (void)s;
    olds_reset(&x->olds);
    x->expired = 0;
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        char k[S3_UPLOAD_KEY_LEN];
        struct gw_layout l;
        struct gw_meta_attrs a;
        struct s3_upload u;

        rc = gw_meta_batch_get(b, x->tenant, k, gw_meta_upload_key(x->ids[i], k), &l, &a);
        if (rc == CM_E_NOTFOUND ||
            (rc == 0 && (s3_upload_from(&l, &a, &u) != 0 || u.created_ms >= x->cutoff_ms))) {
            rc = 0; /* completed or aborted meanwhile */
            continue;
        }
        if (rc == 0) {
            rc = drop_parts(b, x->tenant, x->ids[i], NULL, &x->olds);
        }
        if (rc == 0) {
            rc = upload_delete(b, x->tenant, x->ids[i], &x->olds);
            x->expired++;
        }
    }
    op->rc = rc;
    return rc;
}

static void
expire_done(struct gw_commit_op *op)
{
    struct expire_op *x = CM_CONTAINER_OF(op, struct expire_op, op);
    struct gw_s3 *s3 = x->s3;

    if (op->rc == 0) {
        olds_retire(s3->f, &x->olds);
    }
    pthread_mutex_lock(&s3->mu);
    x->finished = 1;
    pthread_cond_broadcast(&s3->cv);
    pthread_mutex_unlock(&s3->mu);
}

/* An upload begun before cutoff_ms into x's ids (a read of the store);
 * stops the scan once EXPIRE_BATCH are found. */
static int
expire_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
           const struct gw_meta_attrs *a)
{
    struct expire_op *x = arg;
    struct s3_upload u;

    if (klen == S3_UPLOAD_KEY_LEN && s3_upload_from(l, a, &u) == 0 && u.created_ms < x->cutoff_ms) {
        memcpy(x->ids[x->n], key + 2, S3_UPLOAD_ID_LEN);
        x->ids[x->n][S3_UPLOAD_ID_LEN] = '\0';
        x->n++;
    }
    return x->n == EXPIRE_BATCH;
}

struct tenant_ids {
    uint32_t *v;
    size_t n;
};

static void
tenant_one(void *arg, uint32_t tenant)
{
    struct tenant_ids *t = arg;

    t->v = cm_realloc(t->v, (t->n + 1) * sizeof(*t->v));
    t->v[t->n++] = tenant;
}

/* Aborts, EXPIRE_BATCH at a time, every upload of tenant begun before
 * cutoff_ms: the count, or a negative error. Stops early at a stop. */
static long
expire_tenant(struct gw_s3 *s3, uint32_t tenant, uint64_t cutoff_ms)
{
    struct expire_op *x = cm_calloc(1, sizeof(*x));
    long total = 0;
    int rc = 0;

    x->s3 = s3;
    x->tenant = tenant;
    x->cutoff_ms = cutoff_ms;
    cm_buf_init(&x->olds);
    for (;;) {
        x->n = 0;
        rc = gw_meta_scan(s3->f->meta, tenant, "\0u", 2, NULL, 0, expire_one, x);
        if (rc != 0 || x->n == 0) {
            break;
        }
        x->op = (struct gw_commit_op){
            .kind = COMMIT_CALL, .tenant = tenant, .apply = apply_expire, .done = expire_done};
        x->finished = 0;
        gw_commit_queue(s3->f->commit, &x->op);
        pthread_mutex_lock(&s3->mu);
        while (!x->finished) {
            pthread_cond_wait(&s3->cv, &s3->mu);
        }
        pthread_mutex_unlock(&s3->mu);
        if ((rc = x->op.rc) != 0 || x->expired == 0) {
            break; /* a failure, or only uploads that ended meanwhile */
        }
        total += (long)x->expired;
        CM_INFO("s3 uploads expired tenant=%u count=%zu", tenant, x->expired);
        pthread_mutex_lock(&s3->mu);
        rc = s3->stop ? -ECANCELED : 0;
        pthread_mutex_unlock(&s3->mu);
        if (rc != 0) {
            break;
        }
    }
    olds_reset(&x->olds);
    cm_buf_fini(&x->olds);
    free(x);
    return rc != 0 ? rc : total;
}

void
s3_expire_uploads(struct gw_s3 *s3)
{
    uint64_t now = cm_wall_ms(), age = (uint64_t)s3->cfg.upload_expiry_ms;
    struct tenant_ids t = {NULL, 0};
    int rc = gw_meta_tenants(s3->f->meta, tenant_one, &t);

    for (size_t i = 0; rc == 0 && i < t.n && now > age; i++) {
        long n = expire_tenant(s3, t.v[i], now - age);

        rc = n < 0 ? (int)n : 0;
    }
    if (rc != 0 && rc != -ECANCELED) {
        CM_WARN("s3 upload expiry failed err=%s", cm_errname(rc));
    }
    free(t.v);
}
