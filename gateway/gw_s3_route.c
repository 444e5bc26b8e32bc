/*
 * gw_s3_route.c - the S3 front door's pure request parsers (see
 * gw_s3_route.h).
 *
 * Invariants: every input byte is untrusted and every loop is bounded by
 * an explicit length or a NUL; output buffers are filled within their
 * declared sizes; nothing reads a clock or touches global state.
 */
#include "gw_s3_route.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "gw_s3_sig.h"

const char *const gw_s3_op_names[GW_S3_OP_COUNT] = {
#define GW_S3_OP_NAME_(name, label) label,
    GW_S3_OPS(GW_S3_OP_NAME_)
#undef GW_S3_OP_NAME_
};

/* The query parameters routing looks at, as bits of one pass. */
enum {
    P_LOCATION = 1,
    P_UPLOADS = 2,
    P_DELETE = 4,
    P_UPLOAD_ID = 8,
    P_PART_NUMBER = 16,
    P_UNSUPPORTED = 32, /* a sub-resource S3 has and we do not serve */
};

static const struct {
    const char *name;
    size_t len;
    unsigned bit;
} params[] = {
    {"location", 8, P_LOCATION},
    {"uploads", 7, P_UPLOADS},
    {"delete", 6, P_DELETE},
    {"uploadId", 8, P_UPLOAD_ID},
    {"partNumber", 10, P_PART_NUMBER},
    {"acl", 3, P_UNSUPPORTED},
    {"policy", 6, P_UNSUPPORTED},
    {"cors", 4, P_UNSUPPORTED},
    {"lifecycle", 9, P_UNSUPPORTED},
    {"tagging", 7, P_UNSUPPORTED},
    {"versioning", 10, P_UNSUPPORTED},
    {"versions", 8, P_UNSUPPORTED},
    {"website", 7, P_UNSUPPORTED},
    {"logging", 7, P_UNSUPPORTED},
    {"notification", 12, P_UNSUPPORTED},
    {"replication", 11, P_UNSUPPORTED},
    {"encryption", 10, P_UNSUPPORTED},
    {"object-lock", 11, P_UNSUPPORTED},
    {"retention", 9, P_UNSUPPORTED},
    {"legal-hold", 10, P_UNSUPPORTED},
    {"torrent", 7, P_UNSUPPORTED},
    {"restore", 7, P_UNSUPPORTED},
    {"select", 6, P_UNSUPPORTED},
    {"accelerate", 10, P_UNSUPPORTED},
    {"requestPayment", 14, P_UNSUPPORTED},
    {"analytics", 9, P_UNSUPPORTED},
    {"inventory", 9, P_UNSUPPORTED},
    {"metrics", 7, P_UNSUPPORTED},
    {"intelligent-tiering", 19, P_UNSUPPORTED},
    {"ownershipControls", 17, P_UNSUPPORTED},
    {"publicAccessBlock", 17, P_UNSUPPORTED},
    {"policyStatus", 12, P_UNSUPPORTED},
    {"attributes", 10, P_UNSUPPORTED},
};

/* Which of params the query names (decoded names; values are not read). */
static unsigned
query_bits(const char *q, size_t len)
{
    unsigned bits = 0;
    size_t i = 0;

    while (i < len) {
        char name[24];
        size_t k = 0;
        int fits = 1;

        for (; i < len && q[i] != '&' && q[i] != '='; i++) {
            int hi, lo;
            char c = q[i];

            if (c == '%' && i + 2 < len && (hi = cm_hexval((unsigned char)q[i + 1])) >= 0 &&
                (lo = cm_hexval((unsigned char)q[i + 2])) >= 0) {
                c = (char)(hi << 4 | lo);
                i += 2;
            }
            if (k + 1 < sizeof(name)) {
                name[k++] = c;
            } else {
                fits = 0;
            }
        }
        while (i < len && q[i] != '&') {
            i++;
        }
        i++;
        name[k] = '\0';
        for (size_t j = 0; fits && k > 0 && j < sizeof(params) / sizeof(params[0]); j++) {
            if (params[j].len == k && memcmp(name, params[j].name, k) == 0) {
                bits |= params[j].bit;
                break;
            }
        }
    }
    return bits;
}

static int
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int
gw_s3_bucket_name_ok(const char *name, size_t len)
{
    int dots = 0, all_ip = 1;

    if (len < 3 || len > GW_S3_BUCKET_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '.' || c == '-')) {
            return 0;
        }
        if (i > 0 && (c == '.' || c == '-') && (name[i - 1] == '.' || name[i - 1] == '-') &&
            !(c == '-' && name[i - 1] == '-')) {
            return 0; /* "..", ".-", "-." */
        }
        dots += c == '.';
        all_ip &= is_digit(c) || c == '.';
    }
    if (name[0] == '.' || name[0] == '-' || name[len - 1] == '.' || name[len - 1] == '-') {
        return 0;
    }
    if (all_ip && dots == 3) {
        return 0; /* looks like an IPv4 address */
    }
    if (len >= 4 && memcmp(name, "xn--", 4) == 0) {
        return 0;
    }
    if (len >= 8 && memcmp(name + len - 8, "-s3alias", 8) == 0) {
        return 0;
    }
    return 1;
}

/* The bucket the Host header names, when it is "<bucket>.<domain>[:port]". */
static int
host_bucket(const struct gw_s3_target *t, const char **b, size_t *blen)
{
    size_t hl, dl;

    if (t->host == NULL || t->domain == NULL || t->domain[0] == '\0' || t->host[0] == '[') {
        return 0;
    }
    for (hl = 0; t->host[hl] != '\0' && t->host[hl] != ':'; hl++) {
    }
    dl = strlen(t->domain);
    if (hl < dl + 2 || t->host[hl - dl - 1] != '.' ||
        strncasecmp(t->host + hl - dl, t->domain, dl) != 0) {
        return 0;
    }
    *b = t->host;
    *blen = hl - dl - 1;
    return 1;
}

/* "bucket/" + raw as a native key. */
static enum gw_s3_err
native_key(const char *bucket, size_t blen, const char *raw, size_t rawlen, struct gw_s3_route *out,
           const char **why)
{
    char tmp[GW_S3_BUCKET_MAX + 1 + 3 * GW_KEY_MAX + 1];
    const char *reason = NULL;

    if (rawlen > 3 * GW_KEY_MAX) {
        *why = "the key is longer than 1024 bytes with its bucket";
        return GW_S3_E_KEY_TOO_LONG;
    }
    memcpy(tmp, bucket, blen);
    tmp[blen] = '/';
    memcpy(tmp + blen + 1, raw, rawlen);
    if (gw_parse_key(tmp, blen + 1 + rawlen, out->key, &out->klen, &reason) != 0) {
        out->klen = 0;
        *why = reason;
        return strstr(reason, "longer") != NULL ? GW_S3_E_KEY_TOO_LONG : GW_S3_E_INVALID_URI;
    }
    return GW_S3_OK;
}

static enum gw_s3_err
op_of(const struct gw_s3_target *t, struct gw_s3_route *out, const char **why)
{
    const char *m = t->method;
    int bucket = out->blen > 0, object = out->klen > 0;
    unsigned q = t->query != NULL ? query_bits(t->query, t->query_len) : 0;

    if (bucket && (q & P_UNSUPPORTED)) {
        *why = "this sub-resource is not implemented";
        return GW_S3_E_NOT_IMPLEMENTED;
    }
    if (!bucket) {
        if (strcmp(m, "GET") == 0) {
            out->op = GW_S3_OP_LIST_BUCKETS;
            return GW_S3_OK;
        }
    } else if (!object) {
        if (strcmp(m, "PUT") == 0) {
            out->op = GW_S3_OP_CREATE_BUCKET;
        } else if (strcmp(m, "DELETE") == 0) {
            out->op = GW_S3_OP_DELETE_BUCKET;
        } else if (strcmp(m, "HEAD") == 0) {
            out->op = GW_S3_OP_HEAD_BUCKET;
        } else if (strcmp(m, "GET") == 0) {
            out->op = (q & P_LOCATION)  ? GW_S3_OP_GET_BUCKET_LOCATION
                      : (q & P_UPLOADS) ? GW_S3_OP_LIST_UPLOADS
                                        : GW_S3_OP_LIST_OBJECTS;
        } else if (strcmp(m, "POST") == 0 && (q & P_DELETE)) {
            out->op = GW_S3_OP_DELETE_OBJECTS;
        }
    } else if (strcmp(m, "PUT") == 0) {
        if (q & (P_UPLOAD_ID | P_PART_NUMBER)) {
            out->op = t->copy_source ? GW_S3_OP_UPLOAD_PART_COPY : GW_S3_OP_UPLOAD_PART;
        } else {
            out->op = t->copy_source ? GW_S3_OP_COPY_OBJECT : GW_S3_OP_PUT_OBJECT;
        }
    } else if (strcmp(m, "GET") == 0) {
        out->op = (q & P_UPLOAD_ID) ? GW_S3_OP_LIST_PARTS : GW_S3_OP_GET_OBJECT;
    } else if (strcmp(m, "HEAD") == 0) {
        out->op = GW_S3_OP_HEAD_OBJECT;
    } else if (strcmp(m, "DELETE") == 0) {
        out->op = (q & P_UPLOAD_ID) ? GW_S3_OP_ABORT_MPU : GW_S3_OP_DELETE_OBJECT;
    } else if (strcmp(m, "POST") == 0) {
        out->op = (q & P_UPLOADS)     ? GW_S3_OP_CREATE_MPU
                  : (q & P_UPLOAD_ID) ? GW_S3_OP_COMPLETE_MPU
                                      : GW_S3_OP_NONE;
    }
    if (out->op == GW_S3_OP_NONE) {
        *why = "the method is not allowed against this resource";
        return GW_S3_E_METHOD_NOT_ALLOWED;
    }
    return GW_S3_OK;
}

enum gw_s3_err
gw_s3_route(const struct gw_s3_target *t, struct gw_s3_route *out, const char **why)
{
    const char *b = NULL, *rest, *reason = NULL, *dummy;
    size_t blen = 0, rlen;
    enum gw_s3_err e = GW_S3_OK;

    if (why == NULL) {
        why = &dummy;
    }
    memset(out, 0, offsetof(struct gw_s3_route, key));
    out->op = GW_S3_OP_NONE;
    out->klen = 0;
    if (t->path_len == 0 || t->path[0] != '/') {
        reason = "the path does not begin with '/'";
        e = GW_S3_E_INVALID_URI;
        goto out;
    }
    rest = t->path + 1;
    rlen = t->path_len - 1;
    if (host_bucket(t, &b, &blen)) {
        out->virtual_host = 1;
    } else {
        b = rest;
        while (blen < rlen && b[blen] != '/') {
            blen++;
        }
        rest = b + blen + (blen < rlen);
        rlen -= blen + (blen < rlen);
        if (blen == 0 && rlen > 0) {
            reason = "the path names an object without a bucket";
            e = GW_S3_E_INVALID_URI;
            goto out;
        }
    }
    if (blen > 0) {
        if (!gw_s3_bucket_name_ok(b, blen)) {
            reason = "bucket names are 3-63 of [a-z0-9.-], begin and end with a letter or digit";
            e = GW_S3_E_INVALID_BUCKET_NAME;
            goto out;
        }
        memcpy(out->bucket, b, blen);
        out->bucket[blen] = '\0';
        out->blen = blen;
    }
    if (rlen > 0 && (e = native_key(b, blen, rest, rlen, out, &reason)) != GW_S3_OK) {
        goto out;
    }
    e = op_of(t, out, &reason);
out:
    *why = reason;
    return e;
}

enum gw_s3_err
gw_s3_native_key(const char *bucket, size_t blen, const char *key, size_t klen,
                 struct gw_s3_route *out, const char **why)
{
    static const char hex[] = "0123456789ABCDEF";
    char enc[3 * GW_KEY_MAX];
    enum gw_s3_err e;

    memset(out, 0, offsetof(struct gw_s3_route, key));
    out->op = GW_S3_OP_NONE;
    out->klen = 0;
    if (klen == 0 || blen > GW_S3_BUCKET_MAX || klen > GW_KEY_MAX) {
        *why = klen == 0 ? "the key is empty" : "the key is longer than 1024 bytes";
        return klen == 0 ? GW_S3_E_INVALID_ARGUMENT : GW_S3_E_KEY_TOO_LONG;
    }
    for (size_t i = 0; i < klen; i++) {
        enc[3 * i] = '%';
        enc[3 * i + 1] = hex[(unsigned char)key[i] >> 4];
        enc[3 * i + 2] = hex[(unsigned char)key[i] & 15];
    }
    memcpy(out->bucket, bucket, blen);
    out->bucket[blen] = '\0';
    out->blen = blen;
    e = native_key(bucket, blen, enc, 3 * klen, out, why);
    return e == GW_S3_E_INVALID_URI ? GW_S3_E_INVALID_ARGUMENT : e;
}

int
gw_s3_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (s == NULL || *s == '\0') {
        return -1;
    }
    for (; *s != '\0'; s++) {
        if (!is_digit(*s) || v > (max - (uint64_t)(*s - '0')) / 10) {
            return -1;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* ---- dates ---- */

static int
month_of(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

    for (int i = 0; i < 12; i++) {
        if (strncmp(s, months + 3 * i, 3) == 0) {
            return i + 1;
        }
    }
    return 0;
}

/* n digits of s (a space first is allowed when lead_space) into *v. */
static int
num(const char *s, int n, int lead_space, int *v)
{
    int x = 0;

    for (int i = 0; i < n; i++) {
        if (i == 0 && lead_space && s[i] == ' ') {
            continue;
        }
        if (!is_digit(s[i])) {
            return -1;
        }
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 0;
}

static int
civil(int y, int mo, int d, const char *hms, int64_t *out)
{
    int h, mi, sec;
    char amz[64]; /* the fields are in range; the compiler cannot tell */

    if (mo == 0 || num(hms, 2, 0, &h) || hms[2] != ':' || num(hms + 3, 2, 0, &mi) ||
        hms[5] != ':' || num(hms + 6, 2, 0, &sec) || y < 1970 || y > 9999) {
        return -1;
    }
    snprintf(amz, sizeof(amz), "%04d%02d%02dT%02d%02d%02dZ", y, mo, d, h, mi, sec);
    return gw_s3_parse_amz_date(amz, out);
}

int
gw_s3_http_date(const char *s, int64_t *out)
{
    const char *c;
    size_t n;
    int y, d;

    if (s == NULL) {
        return -1;
    }
    n = strlen(s);
    if (n == 29 && s[3] == ',' && strcmp(s + 25, " GMT") == 0 && s[4] == ' ' && s[7] == ' ' &&
        s[11] == ' ' && s[16] == ' ') {
        /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
        if (num(s + 5, 2, 0, &d) || num(s + 12, 4, 0, &y)) {
            return -1;
        }
        return civil(y, month_of(s + 8), d, s + 17, out);
    }
    if (n == 24 && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' && s[19] == ' ') {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        if (num(s + 8, 2, 1, &d) || num(s + 20, 4, 0, &y)) {
            return -1;
        }
        return civil(y, month_of(s + 4), d, s + 11, out);
    }
    c = strchr(s, ',');
    if (c != NULL && strlen(c) == 24 && c[1] == ' ' && c[4] == '-' && c[8] == '-' && c[11] == ' ' &&
        strcmp(c + 20, " GMT") == 0) {
        /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT (two-digit years: 1970-2069) */
        if (num(c + 2, 2, 0, &d) || num(c + 9, 2, 0, &y)) {
            return -1;
        }
        return civil(y < 70 ? 2000 + y : 1900 + y, month_of(c + 5), d, c + 12, out);
    }
    return -1;
}

void
gw_s3_http_date_fmt(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || strftime(out, 32, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0) {
        snprintf(out, 32, "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}

/* ---- conditions ---- */

int
gw_s3_etag_list_match(const char *list, const char *etag)
{
    const char *p = list;
    size_t el = strlen(etag);
    const char *bare = etag;
    size_t bl = el;

    if (el >= 2 && etag[0] == '"' && etag[el - 1] == '"') {
        bare = etag + 1;
        bl = el - 2;
    }
    while (*p != '\0') {
        const char *s, *e;

        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        if (*p == '*') {
            return 1;
        }
        if (p[0] == 'W' && p[1] == '/') {
            p += 2;
        }
        if (*p == '"') {
            s = ++p;
            while (*p != '\0' && *p != '"') {
                p++;
            }
            e = p;
            if (*p == '"') {
                p++;
            }
        } else {
            s = p;
            while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t') {
                p++;
            }
            e = p;
        }
        if ((size_t)(e - s) == bl && memcmp(s, bare, bl) == 0) {
            return 1;
        }
    }
    return 0;
}

enum gw_s3_cond
gw_s3_conditions(const struct gw_s3_cond_hdrs *h, const char *etag, int64_t mtime_s, int copy)
{
    int64_t t;

    if (h->if_match != NULL) {
        if (!gw_s3_etag_list_match(h->if_match, etag)) {
            return GW_S3_COND_FAILED;
        }
    } else if (h->if_unmodified_since != NULL && gw_s3_http_date(h->if_unmodified_since, &t) == 0 &&
               mtime_s > t) {
        return GW_S3_COND_FAILED;
    }
    if (h->if_none_match != NULL) {
        if (gw_s3_etag_list_match(h->if_none_match, etag)) {
            return copy ? GW_S3_COND_FAILED : GW_S3_COND_NOT_MODIFIED;
        }
    } else if (h->if_modified_since != NULL && gw_s3_http_date(h->if_modified_since, &t) == 0 &&
               mtime_s <= t) {
        return copy ? GW_S3_COND_FAILED : GW_S3_COND_NOT_MODIFIED;
    }
    return GW_S3_COND_OK;
}

/* ---- copy source ---- */

enum gw_s3_err
gw_s3_copy_source(const char *hdr, struct gw_s3_route *out, const char **why)
{
    const char *p = hdr, *q, *slash;
    char ver[16];
    size_t n;
    enum gw_s3_err e;

    memset(out, 0, offsetof(struct gw_s3_route, key));
    out->op = GW_S3_OP_NONE;
    out->klen = 0;
    if (p == NULL) {
        *why = "x-amz-copy-source is missing";
        return GW_S3_E_INVALID_ARGUMENT;
    }
    if (*p == '/') {
        p++;
    }
    q = strchr(p, '?');
    n = q != NULL ? (size_t)(q - p) : strlen(p);
    slash = memchr(p, '/', n);
    if (slash == NULL || slash == p + n - 1) {
        *why = "x-amz-copy-source must be bucket/key";
        return GW_S3_E_INVALID_ARGUMENT;
    }
    if (!gw_s3_bucket_name_ok(p, (size_t)(slash - p))) {
        *why = "the bucket of x-amz-copy-source is not a valid bucket name";
        return GW_S3_E_INVALID_BUCKET_NAME;
    }
    if (q != NULL) {
        int r = gw_s3_query_get(q + 1, strlen(q + 1), "versionId", ver, sizeof(ver));
        if (r != 1 || strcmp(ver, "null") != 0) {
            *why = "versions are not kept: the only versionId is \"null\"";
            return GW_S3_E_INVALID_ARGUMENT;
        }
    }
    out->blen = (size_t)(slash - p);
    memcpy(out->bucket, p, out->blen);
    out->bucket[out->blen] = '\0';
    e = native_key(p, out->blen, slash + 1, n - out->blen - 1, out, why);
    if (e == GW_S3_E_INVALID_URI) {
        e = GW_S3_E_INVALID_ARGUMENT;
    }
    return e;
}

/* ---- stored headers ---- */

static const char *const kept[] = {
    "content-type",     "content-encoding", "content-disposition",
    "content-language", "cache-control",    "expires",
};

/* Content-Encoding without the aws-chunked token, which describes the
 * request's framing, not the object (S3 drops it too), into out[cap]. */
static void
strip_aws_chunked(const char *v, char *out, size_t cap)
{
    size_t n = 0;

    out[0] = '\0';
    while (*v != '\0') {
        const char *s, *e;

        while (*v == ' ' || *v == '\t' || *v == ',') {
            v++;
        }
        s = v;
        while (*v != '\0' && *v != ',') {
            v++;
        }
        e = v;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
            e--;
        }
        if (e == s || ((size_t)(e - s) == 11 && strncasecmp(s, "aws-chunked", 11) == 0)) {
            continue;
        }
        if (n + (size_t)(e - s) + 3 > cap) {
            break;
        }
        if (n > 0) {
            out[n++] = ',';
            out[n++] = ' ';
        }
        memcpy(out + n, s, (size_t)(e - s));
        n += (size_t)(e - s);
        out[n] = '\0';
    }
}

enum gw_s3_err
gw_s3_hdrs_add(struct cm_buf *blob, size_t *meta_bytes, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    int meta = nl > 11 && strncasecmp(name, "x-amz-meta-", 11) == 0, keep = meta;
    char enc[GW_S3_HDRS_MAX];

    for (size_t i = 0; !keep && i < sizeof(kept) / sizeof(kept[0]); i++) {
        keep = strcasecmp(name, kept[i]) == 0;
    }
    if (!keep) {
        return GW_S3_OK;
    }
    if (strcasecmp(name, "content-encoding") == 0) {
        strip_aws_chunked(value, enc, sizeof(enc));
        if (enc[0] == '\0') {
            return GW_S3_OK;
        }
        value = enc;
        vl = strlen(enc);
    }
    for (size_t i = 0; i < vl; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return GW_S3_E_INVALID_ARGUMENT;
        }
    }
    if (meta) {
        *meta_bytes += nl - 11 + vl;
    }
    if ((meta && *meta_bytes > GW_S3_META_MAX) || blob->len + nl + vl + 2 > GW_S3_HDRS_MAX) {
        return GW_S3_E_METADATA_TOO_LARGE;
    }
    for (size_t i = 0; i < nl; i++) {
        char c = name[i];
        cm_buf_append(blob, &(char){c >= 'A' && c <= 'Z' ? (char)(c + 32) : c}, 1);
    }
    cm_buf_append(blob, "", 1);
    cm_buf_append(blob, value, vl + 1);
    return GW_S3_OK;
}
