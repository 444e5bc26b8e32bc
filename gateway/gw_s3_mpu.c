/*
 * gw_s3_mpu.c - multipart uploads of the S3 front door (see
 * gw_s3_impl.h): CreateMultipartUpload, UploadPart (gw_s3_obj.c stores
 * it), CompleteMultipartUpload, AbortMultipartUpload, ListParts,
 * ListMultipartUploads.
 *
 *   uploads table  (tenant, upload id) -> created_ms u64 LE | klen u16 LE |
 *                  native key | hlen u16 LE | stored headers
 *   part n         an ordinary version at the internal key
 *                  "\0<upload id>/<n, 5 digits>": erasure-coded, pending
 *                  until persisted, invisible to LIST and GET
 *   Complete       copies no bytes: the parts become the composite
 *                  version's parts (gw_meta_put_composite); its S3 ETag is
 *                  the MD5 of the parts' MD5s and "-N", its native ETag
 *                  the CRC-64 of the bytes, combined from the parts'
 *
 * Upload ids are 128 random bits in hex; uploads and their parts live in
 * LMDB, so they survive a restart of the gateway.
 *
 * Threads: handlers on the S3 listener's HTTP threads; apply_* and *_done
 * on the committer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "gw_s3_impl.h"
#include "gw_s3_xml.h"

#define PART_KEY_LEN (1 + S3_UPLOAD_ID_LEN + 1 + 5)

/* ---- records ---- */

struct upload {
    uint64_t created_ms;
    const char *key; /* native */
    size_t klen;
    const char *hdrs;
    size_t hlen;
};

static void
upload_encode(struct cm_buf *b, uint64_t created_ms, const char *key, size_t klen, const char *hdrs,
              size_t hlen)
{
    uint8_t h[8];

    cm_put_le64(h, created_ms);
    cm_buf_append(b, h, 8);
    cm_put_le16(h, (uint16_t)klen);
    cm_buf_append(b, h, 2);
    cm_buf_append(b, key, klen);
    cm_put_le16(h, (uint16_t)hlen);
    cm_buf_append(b, h, 2);
    cm_buf_append(b, hdrs, hlen);
}

static int
upload_decode(const void *val, size_t vlen, struct upload *u)
{
    const uint8_t *p = val;

    if (vlen < 12) {
        return CM_E_PROTO;
    }
    u->created_ms = cm_get_le64(p);
    u->klen = cm_get_le16(p + 8);
    if (u->klen == 0 || u->klen > GW_KEY_MAX || vlen < 12 + u->klen) {
        return CM_E_PROTO;
    }
    u->key = (const char *)p + 10;
    u->hlen = cm_get_le16(p + 10 + u->klen);
    if (vlen != 12 + u->klen + u->hlen || u->hlen > GW_META_HDRS_MAX) {
        return CM_E_PROTO;
    }
    u->hdrs = u->hlen > 0 ? (const char *)p + 12 + u->klen : NULL;
    return 0;
}

static void
part_key(const char *id, unsigned n, char out[48], size_t *len)
{
    out[0] = '\0';
    snprintf(out + 1, 47, "%s/%05u", id, n);
    *len = PART_KEY_LEN;
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
static int
upload_param(struct s3_req *q)
{
    if (s3_query(q, "uploadId", q->upload_id, sizeof(q->upload_id)) != 1 ||
        !upload_id_ok(q->upload_id)) {
        s3_fail(q, GW_S3_E_NO_SUCH_UPLOAD, NULL);
        return -1;
    }
    return 0;
}

/* The upload of q (q->upload_id) in its own read: 0 with a copy of the
 * record in *val (caller frees), or answered. */
static int
upload_read(struct s3_req *q, struct cm_buf *val, struct upload *u)
{
    int rc;

    cm_buf_init(val);
    rc = gw_meta_aux_get(q->f->meta, GW_META_UPLOADS, q->tenant, q->upload_id, S3_UPLOAD_ID_LEN,
                         val);
    if (rc == 0 && (upload_decode(val->p, val->len, u) != 0 || u->klen != q->rt.klen ||
                    memcmp(u->key, q->rt.key, u->klen) != 0)) {
        rc = CM_E_NOTFOUND; /* another object's upload */
    }
    if (rc != 0) {
        cm_buf_fini(val);
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
    struct cm_buf val;
    struct upload u;

    if (upload_param(q) != 0) {
        return -1;
    }
    if (s3_query(q, "partNumber", v, sizeof(v)) != 1 || gw_s3_parse_uint(v, GW_S3_MAX_PARTS, &n) ||
        n == 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT,
                "Part number must be an integer between 1 and 10000, inclusive");
        return -1;
    }
    if (upload_read(q, &val, &u) != 0) {
        return -1;
    }
    cm_buf_fini(&val);
    q->part = (unsigned)n;
    part_key(q->upload_id, q->part, q->part_key, &q->part_klen);
    return 0;
}

/* In a commit: the record of upload id, which must be q's object's. */
static int
upload_get_in(struct gw_meta_batch *b, struct s3_req *q, struct upload *u)
{
    const void *v;
    size_t vlen;
    int rc = gw_meta_batch_aux_get(b, GW_META_UPLOADS, q->tenant, q->upload_id, S3_UPLOAD_ID_LEN,
                                   &v, &vlen);

    if (rc == 0 && (upload_decode(v, vlen, u) != 0 || u->klen != q->rt.klen ||
                    memcmp(u->key, q->rt.key, u->klen) != 0)) {
        rc = CM_E_NOTFOUND;
    }
    return rc;
}

int
s3_upload_in(struct gw_meta_batch *b, struct s3_req *q, struct gw_commit_op *op)
{
    struct upload u;
    int rc = upload_get_in(b, q, &u);

    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_UPLOAD, NULL);
    }
    return rc;
}

/* ---- parts of an upload, inside a commit ---- */

struct pkeys {
    struct cm_buf keys; /* PART_KEY_LEN each */
    size_t n;
};

static int
pkey_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
         const struct gw_meta_attrs *a)
{
    struct pkeys *p = arg;

    if (klen == PART_KEY_LEN) {
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
    char prefix[1 + S3_UPLOAD_ID_LEN + 2];
    struct pkeys p = {{NULL, 0, 0}, 0};
    int rc;

    prefix[0] = '\0';
    snprintf(prefix + 1, sizeof(prefix) - 1, "%s/", id);
    cm_buf_init(&p.keys);
    rc = gw_meta_batch_scan(b, tenant, prefix, sizeof(prefix) - 1, pkey_one, &p);
    for (size_t i = 0; rc == 0 && i < p.n; i++) {
        const char *k = p.keys.p + i * PART_KEY_LEN;
        unsigned n = (unsigned)strtoul(k + PART_KEY_LEN - 5, NULL, 10);
        struct gw_meta_old old = {0};

        if (keep != NULL && n <= GW_S3_MAX_PARTS && keep[n]) {
            continue;
        }
        rc = gw_meta_delete(b, tenant, k, PART_KEY_LEN, &old);
        if (rc == 0) {
            cm_buf_append(olds, &old, sizeof(old)); /* olds owns its parts now */
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
bucket_upload_one(void *arg, const char *name, size_t nlen, const void *val, size_t vlen)
{
    struct bucket_uploads *bu = arg;
    struct upload u;

    if (nlen == S3_UPLOAD_ID_LEN && upload_decode(val, vlen, &u) == 0 && u.klen > bu->blen &&
        memcmp(u.key, bu->bucket, bu->blen) == 0 && u.key[bu->blen] == '/') {
        cm_buf_append(&bu->ids, name, nlen);
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
    rc = gw_meta_batch_aux_scan(b, GW_META_UPLOADS, q->tenant, bucket_upload_one, &bu);
    for (size_t i = 0; rc == 0 && i < bu.n; i++) {
        char id[S3_UPLOAD_ID_LEN + 1];

        memcpy(id, bu.ids.p + i * S3_UPLOAD_ID_LEN, S3_UPLOAD_ID_LEN);
        id[S3_UPLOAD_ID_LEN] = '\0';
        rc = drop_parts(b, q->tenant, id, NULL, olds);
        if (rc == 0) {
            rc = gw_meta_batch_aux_del(b, GW_META_UPLOADS, q->tenant, id, S3_UPLOAD_ID_LEN);
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
    struct cm_buf rec;
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
    cm_buf_init(&rec);
    upload_encode(&rec, gw_meta_batch_time(b), q->rt.key, q->rt.klen, q->hdrs.p, q->hdrs.len);
    rc = gw_meta_batch_aux_put(b, GW_META_UPLOADS, q->tenant, q->upload_id, S3_UPLOAD_ID_LEN, rec.p,
                               rec.len, 0);
    cm_buf_fini(&rec);
    op->rc = rc;
    return rc == CM_E_EXISTS ? 0 : rc;
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
    struct cm_buf olds; /* unlisted parts: struct gw_meta_old */
    char etag[GW_S3_ETAG_MAX];
};

static void
cx_free(void *arg)
{
    struct cx *x = arg;

    olds_reset(&x->olds);
    cm_buf_fini(&x->olds);
    gw_s3_xml_complete_free(&x->c);
    free(x);
}

static int
apply_complete(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct cx *x = q->x;
    size_t n = x->c.nparts;
    uint8_t *md5s = NULL, *keep = NULL;
    char *pkeys = NULL, *hdrs = NULL;
    const char **pk = NULL;
    size_t *pkl = NULL;
    struct upload u;
    uint64_t size = 0, crc = 0;
    int rc;

    olds_reset(&x->olds);
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
        hdrs = cm_malloc(u.hlen);
        memcpy(hdrs, u.hdrs, u.hlen);
    }
    md5s = cm_malloc(16 * n);
    keep = cm_calloc(GW_S3_MAX_PARTS + 1, 1);
    pkeys = cm_malloc(48 * n);
    pk = cm_malloc(n * sizeof(*pk));
    pkl = cm_malloc(n * sizeof(*pkl));
    for (size_t i = 0; i < n; i++) {
        const struct gw_s3_xml_cpart *p = &x->c.parts[i];
        struct gw_layout l;
        struct gw_meta_attrs a;
        uint8_t want[16];

        part_key(q->upload_id, p->number, pkeys + 48 * i, &pkl[i]);
        pk[i] = pkeys + 48 * i;
        rc = gw_meta_batch_get(b, q->tenant, pk[i], pkl[i], &l, &a);
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
        crc = i == 0 ? l.etag : gw_s3_crc64_combine(crc, l.etag, l.size);
        size += l.size;
    }
    if (size > q->f->cfg.max_object_size) {
        rc = s3_refuse(op, GW_S3_E_ENTITY_TOO_LARGE, NULL);
        goto out;
    }
    /* checks done: now the writes */
    rc = drop_parts(b, q->tenant, q->upload_id, keep, &x->olds);
    if (rc == 0) {
        struct gw_layout l;
        struct gw_meta_attrs a;
        uint8_t md[CM_DIGEST_MAX];

        memset(&l, 0, sizeof(l));
        memset(&a, 0, sizeof(a));
        l.tenant = q->tenant;
        l.size = size;
        l.etag = crc;
        cm_digest_once(CM_DIGEST_MD5, md5s, 16 * n, md);
        a.has_md5 = 1;
        memcpy(a.md5, md, 16);
        a.hdrs = hdrs;
        a.hdrs_len = u.hlen;
        rc =
            gw_meta_put_composite(b, q->rt.key, q->rt.klen, &l, &a, pk, pkl, (uint32_t)n, &op->old);
        a.nparts = (uint32_t)n;
        s3_etag(&l, &a, x->etag);
        op->lay = l;
    }
    if (rc == 0) {
        rc = gw_meta_batch_aux_del(b, GW_META_UPLOADS, q->tenant, q->upload_id, S3_UPLOAD_ID_LEN);
    }
    op->rc = rc;
out:
    free(md5s);
    free(keep);
    free(pkeys);
    free(pk);
    free(pkl);
    free(hdrs);
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
    if (upload_param(q) != 0) {
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
    struct upload u;
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
        rc = gw_meta_batch_aux_del(b, GW_META_UPLOADS, q->tenant, q->upload_id, S3_UPLOAD_ID_LEN);
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
    if (upload_param(q) != 0) {
        return;
    }
    s3_commit(q, apply_abort, abort_done);
}

/* ---- ListParts ---- */

struct plist {
    struct gw_s3_xml_part *v;
    char (*etags)[GW_S3_ETAG_MAX];
    unsigned n, max;
    int truncated;
};

static int
part_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
         const struct gw_meta_attrs *a)
{
    struct plist *p = arg;

    if (klen != PART_KEY_LEN) {
        return 0;
    }
    if (p->n == p->max) {
        p->truncated = 1;
        return 1;
    }
    s3_etag(l, a, p->etags[p->n]);
    p->v[p->n] = (struct gw_s3_xml_part){(unsigned)strtoul(key + PART_KEY_LEN - 5, NULL, 10),
                                         (int64_t)a->mtime_ms, p->etags[p->n], l->size};
    p->n++;
    return 0;
}

void
s3_list_parts(struct s3_req *q)
{
    struct plist p = {NULL, NULL, 0, 1000, 0};
    struct gw_s3_xml_parts out;
    struct gw_s3_xml_owner o;
    char v[16], oid[16], prefix[1 + S3_UPLOAD_ID_LEN + 2], after[48];
    uint64_t marker = 0, max = 1000;
    size_t alen = 0;
    struct cm_buf val, b;
    struct upload u;
    int rc;

    if (upload_param(q) != 0) {
        return;
    }
    if ((s3_query(q, "max-parts", v, sizeof(v)) == 1 && gw_s3_parse_uint(v, UINT64_MAX, &max)) ||
        (s3_query(q, "part-number-marker", v, sizeof(v)) == 1 &&
         gw_s3_parse_uint(v, GW_S3_MAX_PARTS, &marker))) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "max-parts and part-number-marker are numbers");
        return;
    }
    if (upload_read(q, &val, &u) != 0) {
        return;
    }
    cm_buf_fini(&val);
    p.max = max > 1000 ? 1000 : (unsigned)max;
    p.v = cm_calloc(p.max + 1, sizeof(*p.v));
    p.etags = cm_calloc(p.max + 1, sizeof(*p.etags));
    prefix[0] = '\0';
    snprintf(prefix + 1, sizeof(prefix) - 1, "%s/", q->upload_id);
    if (marker > 0) {
        part_key(q->upload_id, (unsigned)marker, after, &alen);
    }
    rc = gw_meta_scan(q->f->meta, q->tenant, prefix, sizeof(prefix) - 1, alen > 0 ? after : NULL,
                      alen, part_one, &p);
    if (rc != 0) {
        free(p.v);
        free(p.etags);
        s3_fail_rc(q, rc);
        return;
    }
    s3_owner(q, &o, oid);
    memset(&out, 0, sizeof(out));
    out.bucket = q->rt.bucket;
    out.key = q->rt.key + q->rt.blen + 1;
    out.upload_id = q->upload_id;
    out.owner = &o;
    out.part_marker = (unsigned)marker;
    out.next_part_marker = p.n > 0 ? p.v[p.n - 1].number : 0;
    out.max_parts = p.max;
    out.truncated = p.truncated;
    out.parts = p.v;
    out.nparts = p.n;
    cm_buf_init(&b);
    gw_s3_xml_list_parts(&b, &out);
    free(p.v);
    free(p.etags);
    s3_reply_xml(q, 200, &b);
}

/* ---- ListMultipartUploads ---- */

struct uent {
    size_t key; /* S3 key: offset in the arena */
    char id[S3_UPLOAD_ID_LEN + 1];
    uint64_t created_ms;
};

struct ulist {
    const char *bucket;
    size_t blen;
    const char *prefix;
    size_t plen;
    struct cm_buf arena;
    struct uent *v;
    size_t n, cap;
};

static int
upload_one(void *arg, const char *name, size_t nlen, const void *val, size_t vlen)
{
    struct ulist *l = arg;
    struct upload u;
    const char *k;
    size_t kl;

    if (nlen != S3_UPLOAD_ID_LEN || upload_decode(val, vlen, &u) != 0 || u.klen <= l->blen ||
        memcmp(u.key, l->bucket, l->blen) != 0 || u.key[l->blen] != '/') {
        return 0;
    }
    k = u.key + l->blen + 1;
    kl = u.klen - l->blen - 1;
    if (kl < l->plen || memcmp(k, l->prefix, l->plen) != 0) {
        return 0;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = cm_realloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n].key = l->arena.len;
    cm_buf_append(&l->arena, k, kl);
    cm_buf_append(&l->arena, "", 1);
    memcpy(l->v[l->n].id, name, nlen);
    l->v[l->n].id[nlen] = '\0';
    l->v[l->n].created_ms = u.created_ms;
    l->n++;
    return 0;
}

/* Uploads in key order, then oldest first (arg: the arena). */
static int
uent_cmp(const void *x, const void *y, void *arg)
{
    const struct uent *a = x, *b = y;
    const char *base = arg;
    int c = strcmp(base + a->key, base + b->key);

    if (c != 0) {
        return c;
    }
    return a->created_ms < b->created_ms   ? -1
           : a->created_ms > b->created_ms ? 1
                                           : strcmp(a->id, b->id);
}

void
s3_list_uploads(struct s3_req *q)
{
    char prefix[GW_KEY_MAX + 1], delim[257], kmarker[GW_KEY_MAX + 1], umarker[64], v[32], oid[16];
    struct ulist l = {q->rt.bucket, q->rt.blen, prefix, 0, {NULL, 0, 0}, NULL, 0, 0};
    struct gw_s3_xml_upload *ups;
    const char **cps;
    size_t nups = 0, ncps = 0, dlen, i;
    uint64_t max = 1000;
    struct gw_s3_xml_uploads out;
    struct gw_s3_xml_owner o;
    int url = 0, truncated = 0, rc;
    const char *next_key = NULL, *next_id = NULL;
    struct cm_buf b;

    if (s3_query(q, "prefix", prefix, sizeof(prefix)) != 1) {
        prefix[0] = '\0';
    }
    if (s3_query(q, "delimiter", delim, sizeof(delim)) != 1) {
        delim[0] = '\0';
    }
    if (s3_query(q, "key-marker", kmarker, sizeof(kmarker)) != 1) {
        kmarker[0] = '\0';
    }
    if (s3_query(q, "upload-id-marker", umarker, sizeof(umarker)) != 1) {
        umarker[0] = '\0';
    }
    if (s3_query(q, "max-uploads", v, sizeof(v)) == 1 && gw_s3_parse_uint(v, UINT64_MAX, &max)) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "max-uploads is not a number");
        return;
    }
    url = s3_query(q, "encoding-type", v, sizeof(v)) == 1 && strcmp(v, "url") == 0;
    if ((rc = s3_bucket_get(q, q->rt.bucket, q->rt.blen, NULL)) != 0) {
        rc == CM_E_NOTFOUND ? s3_fail(q, GW_S3_E_NO_SUCH_BUCKET, NULL) : s3_fail_rc(q, rc);
        return;
    }
    max = max > 1000 ? 1000 : max;
    l.plen = strlen(prefix);
    dlen = strlen(delim);
    cm_buf_init(&l.arena);
    rc = gw_meta_aux_scan(q->f->meta, GW_META_UPLOADS, q->tenant, upload_one, &l);
    if (rc != 0) {
        cm_buf_fini(&l.arena);
        free(l.v);
        s3_fail_rc(q, rc);
        return;
    }
    if (l.n > 1) {
        qsort_r(l.v, l.n, sizeof(*l.v), uent_cmp, l.arena.p);
    }
    ups = cm_calloc(l.n + 1, sizeof(*ups));
    cps = cm_calloc(l.n + 1, sizeof(*cps));
    for (i = 0; i < l.n; i++) {
        const char *k = l.arena.p + l.v[i].key;
        int c = strcmp(k, kmarker);
        const char *d;

        if (kmarker[0] != '\0' &&
            (c < 0 || (c == 0 && (umarker[0] == '\0' || strcmp(l.v[i].id, umarker) <= 0)))) {
            continue; /* at or before the markers */
        }
        d = dlen > 0 ? strstr(k + l.plen, delim) : NULL;
        if (nups + ncps == max) {
            truncated = 1;
            break;
        }
        if (d != NULL) {
            size_t cpl = (size_t)(d - k) + dlen;

            if (ncps > 0 && strncmp(cps[ncps - 1], k, cpl) == 0 && cps[ncps - 1][cpl] == '\0') {
                continue;
            }
            /* the prefix as a string of its own at the end of k's copy */
            cps[ncps++] = k;
            ((char *)k)[cpl] = '\0';
            next_key = k;
            next_id = NULL;
            continue;
        }
        ups[nups++] = (struct gw_s3_xml_upload){k, l.v[i].id, (int64_t)l.v[i].created_ms};
        next_key = k;
        next_id = l.v[i].id;
    }
    s3_owner(q, &o, oid);
    memset(&out, 0, sizeof(out));
    out.bucket = q->rt.bucket;
    out.key_marker = kmarker;
    out.upload_id_marker = umarker;
    if (truncated) {
        out.next_key_marker = next_key;
        out.next_upload_id_marker = next_id != NULL ? next_id : "";
    }
    out.prefix = prefix;
    out.delimiter = dlen > 0 ? delim : NULL;
    out.max_uploads = (unsigned)max;
    out.truncated = truncated;
    out.url_encode = url;
    out.owner = &o;
    out.uploads = ups;
    out.nuploads = nups;
    out.prefixes = cps;
    out.nprefixes = ncps;
    cm_buf_init(&b);
    gw_s3_xml_list_uploads(&b, &out);
    free(ups);
    free(cps);
    cm_buf_fini(&l.arena);
    free(l.v);
    s3_reply_xml(q, 200, &b);
}
