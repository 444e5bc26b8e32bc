/*
 * gw_s3_mpu_list.c - the listings of multipart uploads (see gw_s3_impl.h):
 * ListParts (the part versions of one upload, by their internal keys) and
 * ListMultipartUploads (the upload versions of a bucket's objects, sorted
 * as S3 sorts them). gw_s3_mpu.c owns the uploads.
 *
 * Threads: the S3 listener's HTTP threads, each listing in one read of
 * the metadata store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_log.h"
#include "gw_s3_impl.h"
#include "gw_s3_xml.h"

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

    if (klen != S3_PART_KEY_LEN) {
        return 0;
    }
    if (p->n == p->max) {
        p->truncated = 1;
        return 1;
    }
    s3_etag(l, a, p->etags[p->n]);
    p->v[p->n] =
        (struct gw_s3_xml_part){s3_part_no(key), (int64_t)a->mtime_ms, p->etags[p->n], l->size};
    p->n++;
    return 0;
}

void
s3_list_parts(struct s3_req *q)
{
    struct plist p = {NULL, NULL, 0, 1000, 0};
    struct gw_s3_xml_parts out;
    struct gw_s3_xml_owner o;
    char v[16], oid[16], prefix[S3_PART_KEY_LEN], after[S3_PART_KEY_LEN];
    uint64_t marker = 0, max = 1000;
    size_t alen = 0, plen;
    struct cm_buf b;
    int rc;

    if (s3_upload_param(q) != 0) {
        return;
    }
    if ((s3_query(q, "max-parts", v, sizeof(v)) == 1 && gw_s3_parse_uint(v, UINT64_MAX, &max)) ||
        (s3_query(q, "part-number-marker", v, sizeof(v)) == 1 &&
         gw_s3_parse_uint(v, GW_S3_MAX_PARTS, &marker))) {
        s3_fail(q, GW_S3_E_INVALID_ARGUMENT, "max-parts and part-number-marker are numbers");
        return;
    }
    if (s3_upload_check(q) != 0) {
        return;
    }
    p.max = max > 1000 ? 1000 : (unsigned)max;
    p.v = cm_calloc(p.max + 1, sizeof(*p.v));
    p.etags = cm_calloc(p.max + 1, sizeof(*p.etags));
    s3_part_key(q->upload_id, 0, prefix, &plen);
    if (marker > 0) {
        s3_part_key(q->upload_id, (unsigned)marker, after, &alen);
    }
    rc = gw_meta_scan(q->f->meta, q->tenant, prefix, S3_PART_PREFIX_LEN, alen > 0 ? after : NULL,
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
upload_one(void *arg, const char *key, size_t klen, const struct gw_layout *lay,
           const struct gw_meta_attrs *a)
{
    struct ulist *l = arg;
    struct s3_upload u;
    const char *k;
    size_t kl;

    if (klen != S3_UPLOAD_KEY_LEN || s3_upload_from(lay, a, &u) != 0 || u.klen <= l->blen ||
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
    memcpy(l->v[l->n].id, key + 2, S3_UPLOAD_ID_LEN);
    l->v[l->n].id[S3_UPLOAD_ID_LEN] = '\0';
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
    rc = gw_meta_scan(q->f->meta, q->tenant, "\0u", 2, NULL, 0, upload_one, &l);
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
