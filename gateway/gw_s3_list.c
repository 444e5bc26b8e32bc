/*
 * gw_s3_list.c - buckets and listings of the S3 front door (see
 * gw_s3_impl.h): ListBuckets, CreateBucket, DeleteBucket (BucketNotEmpty;
 * its multipart uploads in progress are aborted), HeadBucket,
 * GetBucketLocation, ListObjects v1 and v2.
 *
 * A bucket is a record-only version of the internal key "\0b<bucket>"
 * (gw_meta.h: committed, logged and rebuilt as any version; its commit
 * time is its creation time) and the namespace "bucket/" of the tenant's
 * native keys. A listing is one
 * cursor scan from the page's start; with a delimiter, each common prefix
 * ends the scan and the next one starts past everything under it (at the
 * prefix followed by 0xFF, a byte UTF-8 keys never hold), so a prefix of a
 * million keys costs one seek, not a million steps.
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

/* ---- ListBuckets ---- */

struct blist {
    struct cm_buf names; /* NUL-terminated, back to back */
    struct gw_s3_xml_bucket *v;
    size_t n, cap;
};

static int
bucket_one(void *arg, const char *key, size_t klen, const struct gw_layout *lay,
           const struct gw_meta_attrs *a)
{
    struct blist *l = arg;

    (void)lay;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = cm_realloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n].name = (const char *)(uintptr_t)l->names.len; /* an offset until the end */
    l->v[l->n].created_ms = (int64_t)a->mtime_ms;
    l->n++;
    cm_buf_append(&l->names, key + 2, klen - 2); /* past "\0b" */
    cm_buf_append(&l->names, "", 1);
    return 0;
}

void
s3_list_buckets(struct s3_req *q)
{
    struct blist l = {{NULL, 0, 0}, NULL, 0, 0};
    struct gw_s3_xml_owner o;
    char oid[16];
    struct cm_buf b;
    int rc;

    cm_buf_init(&l.names);
    rc = gw_meta_scan(q->f->meta, q->tenant, "\0b", 2, NULL, 0, bucket_one, &l);
    if (rc != 0) {
        cm_buf_fini(&l.names);
        free(l.v);
        s3_fail_rc(q, rc);
        return;
    }
    for (size_t i = 0; i < l.n; i++) {
        l.v[i].name = l.names.p + (uintptr_t)l.v[i].name;
    }
    s3_owner(q, &o, oid);
    cm_buf_init(&b);
    gw_s3_xml_list_buckets(&b, &o, l.v, l.n);
    cm_buf_fini(&l.names);
    free(l.v);
    s3_reply_xml(q, 200, &b);
}

/* ---- CreateBucket ---- */

/* A bucket is a record-only version of its internal key: its commit time
 * is its creation time. */
static int
apply_create_bucket(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    int rc;

    if (s != NULL && gw_snap_tenant(s, q->tenant) == NULL) {
        op->rc = GW_COMMIT_TENANT_GONE;
        return 0;
    }
    rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen);
    if (rc == 0) {
        return s3_refuse(op, GW_S3_E_BUCKET_OWNED, NULL);
    }
    if (rc != CM_E_NOTFOUND) {
        return rc;
    }
    q->iklen = gw_meta_bucket_key(q->rt.bucket, q->rt.blen, q->ikey);
    memset(&op->lay, 0, sizeof(op->lay));
    op->lay.tenant = q->tenant;
    op->lay.m = q->t->m;
    memset(&op->attrs, 0, sizeof(op->attrs));
    op->attrs.mtime_ms = gw_meta_batch_time(b);
    op->rc = gw_meta_put(b, q->ikey, q->iklen, &op->lay, &op->attrs, &op->old);
    return op->rc;
}

static void
create_bucket_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    char loc[GW_S3_BUCKET_MAX + 2];

    if (op->rc != 0) {
        s3_fail_commit(q);
        return;
    }
    gw_engine_committed(q->f->engine, &op->lay, &op->attrs, q->ikey, q->iklen);
    snprintf(loc, sizeof(loc), "/%s", q->rt.bucket);
    cm_http_add_header(q->r, "Location", loc);
    s3_reply(q, 200, NULL, NULL, 0, CM_HTTP_STATIC);
}

void
s3_create_bucket(struct s3_req *q)
{
    const char *why = NULL;
    char *body;
    size_t len, cap;
    /* The body (a CreateBucketConfiguration naming a location) is checked
     * but not used: every bucket is where the gateway is. */
    enum gw_s3_err e = s3_body(q, &body, &len, &cap, NULL, &why);

    cm_free_big(body);
    if (e != GW_S3_OK) {
        s3_fail(q, e, why);
        return;
    }
    s3_commit(q, apply_create_bucket, create_bucket_done);
}

/* ---- DeleteBucket ---- */

static int
any_object(void *arg, const char *key, size_t klen, const struct gw_layout *l,
           const struct gw_meta_attrs *a)
{
    *(int *)arg = 1;
    return 1;
}

struct dbx {
    struct cm_buf olds; /* struct gw_meta_old, back to back */
};

static void
dbx_free(void *arg)
{
    struct dbx *x = arg;
    struct gw_meta_old *o = (struct gw_meta_old *)(void *)x->olds.p;

    for (size_t i = 0; i < x->olds.len / sizeof(*o); i++) {
        gw_meta_old_reset(&o[i]);
    }
    cm_buf_fini(&x->olds);
    free(x);
}

static int
apply_delete_bucket(struct gw_meta_batch *b, struct gw_commit_op *op, const struct gw_snap *s)
{
    struct s3_req *q = s3_of(op);
    struct dbx *x = q->x;
    char prefix[GW_S3_BUCKET_MAX + 2];
    int rc = s3_bucket_in(b, q->tenant, q->rt.bucket, q->rt.blen), found = 0;

    dbx_free(x);
    q->x = x = cm_calloc(1, sizeof(*x));
    cm_buf_init(&x->olds);
    if (rc == CM_E_NOTFOUND) {
        return s3_refuse(op, GW_S3_E_NO_SUCH_BUCKET, NULL);
    }
    snprintf(prefix, sizeof(prefix), "%s/", q->rt.bucket);
    if (rc == 0) {
        rc = gw_meta_batch_scan(b, q->tenant, prefix, q->rt.blen + 1, any_object, &found);
    }
    if (rc != 0) {
        return rc;
    }
    if (found) {
        return s3_refuse(op, GW_S3_E_BUCKET_NOT_EMPTY, NULL);
    }
    rc = s3_abort_bucket_uploads(b, q, &x->olds);
    if (rc == 0) {
        char k[S3_BUCKET_KEY_MAX];
        struct gw_meta_old old = {0};

        rc = gw_meta_delete(b, q->tenant, k, gw_meta_bucket_key(q->rt.bucket, q->rt.blen, k),
                            &old);
        if (rc == 0) {
            cm_buf_append(&x->olds, &old, sizeof(old)); /* olds owns its key now */
        }
    }
    op->rc = rc;
    return rc;
}

static void
delete_bucket_done(struct gw_commit_op *op)
{
    struct s3_req *q = s3_of(op);
    struct dbx *x = q->x;
    struct gw_meta_old *o = (struct gw_meta_old *)(void *)x->olds.p;

    if (op->rc != 0) {
        s3_fail_commit(q);
        return;
    }
    for (size_t i = 0; i < x->olds.len / sizeof(*o); i++) {
        gw_front_retire(q->f, &o[i]);
    }
    s3_reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
}

void
s3_delete_bucket(struct s3_req *q)
{
    struct dbx *x = cm_calloc(1, sizeof(*x));

    cm_buf_init(&x->olds);
    q->x = x;
    q->x_free = dbx_free;
    s3_commit(q, apply_delete_bucket, delete_bucket_done);
}

/* ---- HeadBucket, GetBucketLocation ---- */

void
s3_head_bucket(struct s3_req *q)
{
    const char *region = q->s3->cfg.region != NULL ? q->s3->cfg.region : "";
    int rc = s3_bucket_get(q, q->rt.bucket, q->rt.blen, NULL);
    struct cm_buf b;

    if (rc != 0) {
        rc == CM_E_NOTFOUND ? s3_fail(q, GW_S3_E_NO_SUCH_BUCKET, NULL) : s3_fail_rc(q, rc);
        return;
    }
    cm_http_add_header(q->r, "x-amz-bucket-region", region[0] != '\0' ? region : "us-east-1");
    if (q->rt.op == GW_S3_OP_HEAD_BUCKET) {
        s3_reply_head(q, 200, NULL, 0);
        return;
    }
    cm_buf_init(&b);
    gw_s3_xml_location(&b, region);
    s3_reply_xml(q, 200, &b);
}

/* ---- ListObjects v1 and v2 ---- */

#define NKEY_MAX (GW_S3_BUCKET_MAX + 1 + GW_KEY_MAX + 1) /* a native key, and a 0xFF */

struct lobj {
    size_t key, etag; /* offsets in the arena */
    uint64_t size;
    int64_t mtime_ms;
};

#define DELIM_MAX 256

struct listing {
    struct s3_req *q;
    size_t blen;
    const char *delim; /* NULL, or delim_buf when non-empty */
    size_t plen, dlen;
    char prefix[GW_KEY_MAX + 1], delim_buf[DELIM_MAX + 1], marker[GW_KEY_MAX + 1];
    char start_after[GW_KEY_MAX + 1], token[2 * NKEY_MAX + 1];
    unsigned max, n;
    int truncated, seek;
    struct cm_buf arena;
    struct lobj *objs;
    size_t nobjs;
    size_t *cps, ncps;
    char next[NKEY_MAX]; /* native: where the next scan (or page) starts after */
    size_t nextlen;
};

static size_t
arena_add(struct cm_buf *a, const char *s, size_t n)
{
    size_t at = a->len;

    cm_buf_append(a, s, n);
    cm_buf_append(a, "", 1);
    return at;
}

/* The common prefix of S3 key k[klen] under the listing's delimiter, or 0. */
static size_t
common_prefix(const struct listing *l, const char *k, size_t klen)
{
    if (l->delim == NULL || klen < l->plen) {
        return 0;
    }
    for (size_t i = l->plen; i + l->dlen <= klen; i++) {
        if (memcmp(k + i, l->delim, l->dlen) == 0) {
            return i + l->dlen;
        }
    }
    return 0;
}

static void
set_next(struct listing *l, const char *native, size_t n, int past)
{
    memcpy(l->next, native, n);
    if (past) {
        l->next[n++] = (char)0xff;
    }
    l->nextlen = n;
}

static int
list_one(void *arg, const char *key, size_t klen, const struct gw_layout *lay,
         const struct gw_meta_attrs *a)
{
    struct listing *l = arg;
    const char *k = key + l->blen + 1;
    size_t kl = klen - l->blen - 1, cp = common_prefix(l, k, kl);
    char etag[GW_S3_ETAG_MAX];

    if (l->n == l->max) {
        l->truncated = 1;
        return 1;
    }
    l->n++;
    if (cp > 0) {
        l->cps[l->ncps++] = arena_add(&l->arena, k, cp);
        set_next(l, key, l->blen + 1 + cp, 1);
        l->seek = 1; /* past everything under the prefix */
        return 1;
    }
    s3_etag(lay, a, etag);
    l->objs[l->nobjs].key = arena_add(&l->arena, k, kl);
    l->objs[l->nobjs].etag = arena_add(&l->arena, etag, strlen(etag));
    l->objs[l->nobjs].size = lay->size;
    l->objs[l->nobjs].mtime_ms = (int64_t)a->mtime_ms;
    l->nobjs++;
    set_next(l, key, klen, 0);
    return 0;
}

static void
listing_free(void *arg)
{
    struct listing *l = arg;

    cm_buf_fini(&l->arena);
    free(l->objs);
    free(l->cps);
    free(l);
}

/* The query parameter name into out[cap] ("" absent): 1 present, 0
 * absent, -1 answered (too long). */
static int
param(struct s3_req *q, const char *name, char *out, size_t cap)
{
    int r = s3_query(q, name, out, cap);

    if (r < 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "a query parameter is too long");
        return -1;
    }
    if (r == 0) {
        out[0] = '\0';
    }
    return r;
}

void
s3_list_objects(struct s3_req *q)
{
    struct listing *l = cm_calloc(1, sizeof(*l));
    struct gw_s3_xml_list out;
    struct gw_s3_xml_owner o;
    char v[64], oid[16], nprefix[NKEY_MAX], after[NKEY_MAX], token[2 * NKEY_MAX + 1];
    size_t nplen, alen = 0;
    int v2, has_delim, has_marker, has_sa, has_tok, url = 0, owner, rc;
    uint64_t max = 1000;
    const char **prefixes = NULL;
    struct gw_s3_xml_object *objs = NULL;

    q->x = l;
    q->x_free = listing_free;
    if ((rc = s3_bucket_get(q, q->rt.bucket, q->rt.blen, NULL)) != 0) {
        rc == CM_E_NOTFOUND ? s3_fail(q, GW_S3_E_NO_SUCH_BUCKET, NULL) : s3_fail_rc(q, rc);
        return;
    }
    l->q = q;
    l->blen = q->rt.blen;
    cm_buf_init(&l->arena);
    v2 = s3_query(q, "list-type", v, sizeof(v)) == 1 && strcmp(v, "2") == 0;
    if (param(q, "prefix", l->prefix, sizeof(l->prefix)) < 0 ||
        (has_delim = param(q, "delimiter", l->delim_buf, sizeof(l->delim_buf))) < 0 ||
        (has_marker = param(q, "marker", l->marker, sizeof(l->marker))) < 0 ||
        (has_sa = param(q, "start-after", l->start_after, sizeof(l->start_after))) < 0 ||
        (has_tok = param(q, "continuation-token", l->token, sizeof(l->token))) < 0) {
        return;
    }
    if (s3_query(q, "max-keys", v, sizeof(v)) == 1 && gw_s3_parse_uint(v, UINT64_MAX, &max) != 0) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "max-keys is not a number");
        return;
    }
    if (s3_query(q, "encoding-type", v, sizeof(v)) == 1) {
        if (strcmp(v, "url") != 0) {
            s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "encoding-type can only be url");
            return;
        }
        url = 1;
    }
    owner = !v2 || (s3_query(q, "fetch-owner", v, sizeof(v)) == 1 && strcmp(v, "true") == 0);
    l->max = max > 1000 ? 1000 : (unsigned)max;
    l->objs = cm_calloc(l->max + 1, sizeof(*l->objs));
    l->cps = cm_calloc(l->max + 1, sizeof(*l->cps));
    l->plen = strlen(l->prefix);
    l->delim = l->delim_buf[0] != '\0' ? l->delim_buf : NULL;
    l->dlen = l->delim != NULL ? strlen(l->delim) : 0;
    nplen = (size_t)snprintf(nprefix, sizeof(nprefix), "%s/%s", q->rt.bucket, l->prefix);
    if (nplen >= sizeof(nprefix)) {
        s3_fail(q, GW_S3_E_KEY_TOO_LONG, "the prefix is longer than a key");
        return;
    }

    /* Where the page starts: after the token (v2), or the marker (v1) or
     * start-after (v2); a marker that is a common prefix starts past it. */
    if (v2 && has_tok) {
        const char *t = l->token;
        size_t tl = strlen(t);

        if (tl == 0 || tl % 2 != 0 || tl / 2 > sizeof(after) ||
            gw_s3_unhex(t, tl, (uint8_t *)after, tl / 2) != 0 || tl / 2 <= q->rt.blen ||
            memcmp(after, q->rt.bucket, q->rt.blen) != 0 || after[q->rt.blen] != '/') {
            s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "The continuation token provided is incorrect");
            return;
        }
        alen = tl / 2;
    } else if ((!v2 && has_marker) || (v2 && has_sa)) {
        const char *m = v2 ? l->start_after : l->marker;
        size_t ml = strlen(m), cp = common_prefix(l, m, ml);

        alen = (size_t)snprintf(after, sizeof(after) - 1, "%s/%s", q->rt.bucket, m);
        if (alen >= sizeof(after) - 1) {
            s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "the marker is longer than a key");
            return;
        }
        if (cp > 0 && cp == ml) {
            after[alen++] = (char)0xff;
        }
    }
    do {
        l->seek = 0;
        rc = gw_meta_scan(q->f->meta, q->tenant, nprefix, nplen, alen > 0 ? after : NULL, alen,
                          list_one, l);
        if (l->seek) {
            memcpy(after, l->next, l->nextlen);
            alen = l->nextlen;
        }
    } while (rc == 0 && l->seek && !l->truncated);
    if (rc != 0) {
        s3_fail_rc(q, rc);
        return;
    }

    objs = cm_calloc(l->nobjs + 1, sizeof(*objs));
    prefixes = cm_calloc(l->ncps + 1, sizeof(*prefixes));
    for (size_t i = 0; i < l->nobjs; i++) {
        objs[i] = (struct gw_s3_xml_object){l->arena.p + l->objs[i].key, l->objs[i].mtime_ms,
                                            l->arena.p + l->objs[i].etag, l->objs[i].size, NULL};
    }
    for (size_t i = 0; i < l->ncps; i++) {
        prefixes[i] = l->arena.p + l->cps[i];
    }
    s3_owner(q, &o, oid);
    memset(&out, 0, sizeof(out));
    out.v2 = v2;
    out.bucket = q->rt.bucket;
    out.prefix = l->prefix;
    out.delimiter = l->delim;
    out.max_keys = l->max;
    out.truncated = l->truncated;
    out.url_encode = url;
    out.owner = owner ? &o : NULL;
    out.objects = objs;
    out.nobjects = l->nobjs;
    out.prefixes = prefixes;
    out.nprefixes = l->ncps;
    if (v2) {
        out.start_after = has_sa ? l->start_after : NULL;
        out.continuation_token = has_tok ? l->token : NULL;
        if (l->truncated) {
            cm_hex(l->next, l->nextlen, token);
            out.next_continuation_token = token;
        }
    } else {
        out.marker = l->marker;
        if (l->truncated && l->delim != NULL) {
            /* the last key or common prefix of the page, as S3 gives it */
            size_t n = l->nextlen - l->blen - 1;

            if (n > 0 && (unsigned char)l->next[l->nextlen - 1] == 0xff) {
                n--;
            }
            memcpy(token, l->next + l->blen + 1, n);
            token[n] = '\0';
            out.next_marker = token;
        }
    }
    {
        struct cm_buf b;

        cm_buf_init(&b);
        gw_s3_xml_list_objects(&b, &out);
        free(objs);
        free(prefixes);
        s3_reply_xml(q, 200, &b);
    }
}
