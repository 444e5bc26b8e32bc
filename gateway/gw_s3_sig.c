/*
 * gw_s3_sig.c - AWS Signature Version 4 verification (see gw_s3_sig.h):
 * the signing key and its cache, the credentials, the canonical request
 * and the verification. The canonical URI, query and dates are in
 * gw_s3_canon.c.
 *
 * Invariants: every input byte is untrusted and every loop is bounded by an
 * explicit length; the only state shared between calls is the key cache
 * (under its mutex); secrets are never logged nor written to the detail.
 */
#include "gw_s3_sig.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "gw_s3_route.h"

#define ALGORITHM "AWS4-HMAC-SHA256"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- the signing key and its cache ---- */

void
gw_s3_signing_key_from_date(const uint8_t kdate[32], const char *region, uint8_t out[32])
{
    uint8_t k[32];

    cm_hmac_sha256(kdate, 32, region, strlen(region), k);
    cm_hmac_sha256(k, 32, "s3", 2, k);
    cm_hmac_sha256(k, 32, "aws4_request", 12, out);
    memset(k, 0, sizeof(k));
}

void
gw_s3_signing_key(const char *secret, const char *date, const char *region, uint8_t out[32])
{
    char k0[4 + GW_S3_SECRET_MAX + 1];
    size_t sl = strnlen(secret, GW_S3_SECRET_MAX);
    uint8_t k[32];

    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, sl);
    cm_hmac_sha256(k0, 4 + sl, date, strlen(date), k);
    gw_s3_signing_key_from_date(k, region, out);
    memset(k0, 0, sizeof(k0));
    memset(k, 0, sizeof(k));
}

/* What a signing key is derived from: a secret, or a date key. */
struct kc_root {
    int is_date_key;
    size_t len;
    uint8_t b[GW_S3_SECRET_MAX];
};

struct kc_entry {
    int used;
    char akid[GW_S3_AKID_MAX + 1];
    char date[9];
    char region[GW_S3_REGION_MAX + 1];
    struct kc_root root;
    uint8_t key[32];
};

struct gw_s3_keycache {
    pthread_mutex_t mu;
    unsigned mask;
    struct kc_entry *e;
};

struct gw_s3_keycache *
gw_s3_keycache_create(unsigned slots)
{
    struct gw_s3_keycache *c;
    unsigned n = 1;

    if (slots == 0 || slots > 65536) {
        return NULL;
    }
    while (n < slots) {
        n <<= 1;
    }
    c = cm_calloc(1, sizeof(*c));
    c->e = cm_calloc(n, sizeof(*c->e));
    c->mask = n - 1;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void
gw_s3_keycache_destroy(struct gw_s3_keycache *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_destroy(&c->mu);
    memset(c->e, 0, (size_t)(c->mask + 1) * sizeof(*c->e));
    free(c->e);
    free(c);
}

static unsigned
kc_slot(const struct gw_s3_keycache *c, const char *akid, const char *date, const char *region)
{
    uint64_t h = cm_hash64(akid, strlen(akid), 0);

    h = cm_hash64(date, strlen(date), h);
    h = cm_hash64(region, strlen(region), h);
    return (unsigned)h & c->mask;
}

static void
derive(const struct kc_root *root, const char *date, const char *region, uint8_t out[32])
{
    char secret[GW_S3_SECRET_MAX + 1];

    if (root->is_date_key) {
        gw_s3_signing_key_from_date(root->b, region, out);
        return;
    }
    memcpy(secret, root->b, root->len);
    secret[root->len] = '\0';
    gw_s3_signing_key(secret, date, region, out);
    memset(secret, 0, sizeof(secret));
}

static void
signing_key_cached(struct gw_s3_keycache *c, const char *akid, const struct kc_root *root,
                   const char *date, const char *region, uint8_t out[32])
{
    struct kc_entry *e;

    if (c == NULL) {
        derive(root, date, region, out);
        return;
    }
    pthread_mutex_lock(&c->mu);
    e = &c->e[kc_slot(c, akid, date, region)];
    if (e->used && strcmp(e->akid, akid) == 0 && strcmp(e->date, date) == 0 &&
        strcmp(e->region, region) == 0 && e->root.is_date_key == root->is_date_key &&
        e->root.len == root->len && cm_ct_equal(e->root.b, root->b, root->len)) {
        memcpy(out, e->key, 32);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    pthread_mutex_unlock(&c->mu);
    derive(root, date, region, out);
    pthread_mutex_lock(&c->mu);
    e->used = 1;
    snprintf(e->akid, sizeof(e->akid), "%s", akid);
    snprintf(e->date, sizeof(e->date), "%s", date);
    snprintf(e->region, sizeof(e->region), "%s", region);
    e->root = *root;
    memcpy(e->key, out, 32);
    pthread_mutex_unlock(&c->mu);
}

/* The verifier's root material for (akid, date): the secret, or the date
 * key, per opts. GW_S3_OK, or the error with *why. */
static enum gw_s3_err
root_of(const struct gw_s3_verify_opts *opts, const char *akid, const char *date,
        struct kc_root *root, const char **why)
{
    char secret[GW_S3_SECRET_MAX + 1];
    int r;

    memset(root, 0, sizeof(*root));
    if (opts->date_key != NULL) {
        root->is_date_key = 1;
        root->len = 32;
        r = opts->date_key(opts->date_key_arg, akid, date, root->b);
    } else {
        r = opts->secret(opts->secret_arg, akid, secret, sizeof(secret));
        if (r == 0) {
            root->len = strnlen(secret, GW_S3_SECRET_MAX);
            memcpy(root->b, secret, root->len);
        }
        memset(secret, 0, sizeof(secret));
    }
    if (r == CM_E_NOTFOUND) {
        return GW_S3_E_INVALID_ACCESS_KEY;
    }
    if (r == -ERANGE) {
        *why = "the credential date is outside the dates this access key can sign for";
        return GW_S3_E_ACCESS_DENIED;
    }
    if (r != 0) {
        *why = "the secret of the access key could not be read";
        return GW_S3_E_INTERNAL;
    }
    return GW_S3_OK;
}

/* ---- parsing the credentials ---- */

struct sigv4 {
    char akid[GW_S3_AKID_MAX + 1];
    char date[9];
    char region[GW_S3_REGION_MAX + 1];
    char signed_headers[GW_S3_SIGNED_HEADERS_MAX + 1];
    uint8_t sig[32];
};

/* "AKID/YYYYMMDD/region/s3/aws4_request" (the id may hold '/', so split
 * from the right). */
static const char *
parse_credential(const char *s, size_t n, struct sigv4 *v)
{
    size_t cut[4], k = 0, i, len;

    for (i = n; i > 0 && k < 4; i--) {
        if (s[i - 1] == '/') {
            cut[k++] = i - 1;
        }
    }
    if (k < 4) {
        return "the credential is not AKID/date/region/s3/aws4_request";
    }
    /* cut[3] < cut[2] < cut[1] < cut[0] */
    if (cut[3] == 0 || cut[3] > GW_S3_AKID_MAX) {
        return "the access key id is empty or too long";
    }
    for (i = 0; i < cut[3]; i++) {
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) {
            return "the access key id holds a control character or space";
        }
    }
    memcpy(v->akid, s, cut[3]);
    v->akid[cut[3]] = '\0';
    len = cut[2] - cut[3] - 1;
    if (len != 8 || gw_s3_digits(s + cut[3] + 1, 8, &(int){0})) {
        return "the credential date is not YYYYMMDD";
    }
    memcpy(v->date, s + cut[3] + 1, 8);
    v->date[8] = '\0';
    len = cut[1] - cut[2] - 1;
    if (len == 0 || len > GW_S3_REGION_MAX) {
        return "the credential region is empty or too long";
    }
    for (i = cut[2] + 1; i < cut[1]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!gw_s3_unreserved(c)) {
            return "the credential region holds a character outside [A-Za-z0-9._~-]";
        }
    }
    memcpy(v->region, s + cut[2] + 1, len);
    v->region[len] = '\0';
    if (cut[0] - cut[1] - 1 != 2 || memcmp(s + cut[1] + 1, "s3", 2) != 0) {
        return "the credential service is not s3";
    }
    if (n - cut[0] - 1 != 12 || memcmp(s + cut[0] + 1, "aws4_request", 12) != 0) {
        return "the credential does not end in aws4_request";
    }
    return NULL;
}

/* Lowercase header names (tchar) separated by ';', host among them. */
static const char *
parse_signed_headers(const char *s, size_t n, struct sigv4 *v)
{
    static const char tchar_extra[] = "!#$%&'*+-.^_`|~";
    size_t i, start = 0;
    int host = 0;

    if (n == 0 || n > GW_S3_SIGNED_HEADERS_MAX) {
        return "SignedHeaders is empty or too long";
    }
    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == ';') {
            if (i == start) {
                return "SignedHeaders has an empty name";
            }
            if (i - start == 4 && memcmp(s + start, "host", 4) == 0) {
                host = 1;
            }
            start = i + 1;
            continue;
        }
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              (s[i] != '\0' && strchr(tchar_extra, s[i]) != NULL))) {
            return "SignedHeaders must be lowercase header names separated by ';'";
        }
    }
    if (!host) {
        return "the host header must be signed";
    }
    memcpy(v->signed_headers, s, n);
    v->signed_headers[n] = '\0';
    return NULL;
}

int
gw_s3_unhex(const char *s, size_t len, uint8_t *out, size_t n)
{
    if (len != 2 * n) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int hi = cm_hexval((unsigned char)s[2 * i]), lo = cm_hexval((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int
is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." with
 * the three parts in any order, each once. */
static const char *
parse_authorization(const char *h, struct sigv4 *v)
{
    size_t n = strlen(h), i = sizeof(ALGORITHM) - 1;
    int seen = 0;

    if (n < i + 1 || memcmp(h, ALGORITHM, i) != 0 || !is_ws(h[i])) {
        return "the Authorization header does not start with AWS4-HMAC-SHA256";
    }
    while (i < n) {
        size_t ks, ke, vs, ve;
        const char *err;
        int bit;

        while (i < n && (is_ws(h[i]) || h[i] == ',')) {
            i++;
        }
        if (i == n) {
            break;
        }
        for (ks = i; i < n && h[i] != '=' && h[i] != ',' && !is_ws(h[i]); i++) {
        }
        ke = i;
        if (i == n || h[i] != '=') {
            return "an Authorization component is not name=value";
        }
        for (vs = ++i; i < n && h[i] != ',' && !is_ws(h[i]); i++) {
        }
        ve = i;
        if (ke - ks == 10 && memcmp(h + ks, "Credential", 10) == 0) {
            bit = 1;
            err = parse_credential(h + vs, ve - vs, v);
        } else if (ke - ks == 13 && memcmp(h + ks, "SignedHeaders", 13) == 0) {
            bit = 2;
            err = parse_signed_headers(h + vs, ve - vs, v);
        } else if (ke - ks == 9 && memcmp(h + ks, "Signature", 9) == 0) {
            bit = 4;
            err = gw_s3_unhex(h + vs, ve - vs, v->sig, 32) ? "the Signature is not 64 hex digits"
                                                           : NULL;
        } else {
            return "the Authorization header has an unknown component";
        }
        if (err != NULL) {
            return err;
        }
        if (seen & bit) {
            return "an Authorization component appears twice";
        }
        seen |= bit;
    }
    return seen == 7 ? NULL
                     : "the Authorization header lacks Credential, SignedHeaders or Signature";
}

/* ---- the canonical request ---- */

/* Appends the value trimmed, with each inner run of spaces and tabs made
 * one space (as botocore and the AWS SDKs sign it). */
static void
append_header_value(struct cm_buf *b, const char *v)
{
    size_t i = 0, n = strlen(v), start;

    while (i < n && is_ws(v[i])) {
        i++;
    }
    while (i < n) {
        start = i;
        while (i < n && !is_ws(v[i])) {
            i++;
        }
        cm_buf_append(b, v + start, i - start);
        while (i < n && is_ws(v[i])) {
            i++;
        }
        if (i < n) {
            cm_buf_append(b, " ", 1);
        }
    }
}

static int
header_in_list(const char *list, const char *lname)
{
    size_t nl = strlen(lname);
    const char *p = list;

    while (*p != '\0') {
        const char *e = strchr(p, ';');
        size_t l = e != NULL ? (size_t)(e - p) : strlen(p);

        if (l == nl && memcmp(p, lname, nl) == 0) {
            return 1;
        }
        if (e == NULL) {
            break;
        }
        p = e + 1;
    }
    return 0;
}

int
gw_s3_header_signed(const struct gw_s3_auth *auth, const char *lname)
{
    return header_in_list(auth->signed_headers, lname);
}

/* Everything after the canonical URI line (query, headers, signed list,
 * payload hash): built once, shared by the candidate URIs. */
static int
canonical_tail(const struct gw_s3_req *req, const struct sigv4 *v, int presigned,
               const char *payload, struct cm_buf *b)
{
    char name[GW_S3_SIGNED_HEADERS_MAX + 1];
    const char *p = v->signed_headers;

    if (gw_s3_canonical_query(b, req->query != NULL ? req->query : "", req->query_len, presigned) !=
        0) {
        return -1;
    }
    cm_buf_append(b, "\n", 1);
    while (*p != '\0') {
        const char *e = strchr(p, ';');
        size_t l = e != NULL ? (size_t)(e - p) : strlen(p);
        const char *val;

        memcpy(name, p, l);
        name[l] = '\0';
        val = req->hdr(req->hdr_arg, name);
        cm_buf_append(b, name, l);
        cm_buf_append(b, ":", 1);
        if (val != NULL) {
            append_header_value(b, val);
        }
        cm_buf_append(b, "\n", 1);
        p = e != NULL ? e + 1 : p + l;
    }
    cm_buf_printf(b, "\n%s\n%s", v->signed_headers, payload);
    return 0;
}

/* HMAC of the string to sign for one canonical request; also written to
 * detail->to_sign when asked. */
static void
sign_canonical(const char *canonical, size_t len, const char *amz_date, const char *scope,
               const uint8_t key[32], uint8_t sig[32], struct cm_buf *to_sign)
{
    char hex[65], sts[16 + 1 + 16 + 1 + GW_S3_SCOPE_MAX + 1 + 64 + 1];
    int n;

    cm_sha256_hex(canonical, len, hex);
    n = snprintf(sts, sizeof(sts), ALGORITHM "\n%s\n%s\n%s", amz_date, scope, hex);
    cm_hmac_sha256(key, 32, sts, (size_t)n, sig);
    if (to_sign != NULL) {
        to_sign->len = 0;
        cm_buf_append(to_sign, sts, (size_t)n);
    }
}

static int
classify_payload(const char *v, enum gw_s3_payload *mode, uint8_t sha[32])
{
    static const struct {
        const char *s;
        enum gw_s3_payload m;
    } names[] = {
        {"UNSIGNED-PAYLOAD", GW_S3_PAYLOAD_UNSIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", GW_S3_PAYLOAD_STREAMING},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", GW_S3_PAYLOAD_STREAMING_TRAILER},
        {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", GW_S3_PAYLOAD_UNSIGNED_TRAILER},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(v, names[i].s) == 0) {
            *mode = names[i].m;
            return 0;
        }
    }
    if (gw_s3_unhex(v, strlen(v), sha, 32) == 0) {
        *mode = GW_S3_PAYLOAD_SIGNED;
        return 0;
    }
    return -1;
}

void
gw_s3_sig_detail_init(struct gw_s3_sig_detail *d)
{
    d->why = NULL;
    cm_buf_init(&d->canonical);
    cm_buf_init(&d->to_sign);
    d->access_key[0] = '\0';
}

void
gw_s3_sig_detail_fini(struct gw_s3_sig_detail *d)
{
    cm_buf_fini(&d->canonical);
    cm_buf_fini(&d->to_sign);
}

#define FAIL(code, reason)                                                                         \
    do {                                                                                           \
        ret = (code);                                                                              \
        why = (reason);                                                                            \
        goto out;                                                                                  \
    } while (0)

enum gw_s3_err
gw_s3_verify(const struct gw_s3_req *req, const struct gw_s3_verify_opts *opts,
             struct gw_s3_auth *out, struct gw_s3_sig_detail *detail)
{
    struct sigv4 v;
    char amz_date[17], scope[GW_S3_SCOPE_MAX + 1];
    struct kc_root root;
    char qv[GW_S3_SIGNED_HEADERS_MAX + 1], sighex[65];
    const char *authz = req->hdr(req->hdr_arg, "authorization");
    const char *query = req->query != NULL ? req->query : "";
    const char *payload = "UNSIGNED-PAYLOAD", *why = NULL, *perr, *hv;
    size_t qlen = req->query != NULL ? req->query_len : 0, tail_at;
    enum gw_s3_err ret = GW_S3_OK, malformed;
    enum gw_s3_payload mode = GW_S3_PAYLOAD_UNSIGNED;
    uint8_t key[32], sig[32], sha[32];
    int64_t t, expires = 0;
    struct cm_buf cr;
    int presigned, r;

    cm_buf_init(&cr);
    memset(&v, 0, sizeof(v));
    memset(sha, 0, sizeof(sha));
    r = gw_s3_query_get(query, qlen, "X-Amz-Algorithm", qv, sizeof(qv));
    presigned = r != 0;
    if (authz != NULL && presigned) {
        FAIL(GW_S3_E_INVALID_ARGUMENT, "Only one auth mechanism allowed; only the X-Amz-Algorithm "
                                       "query parameter or the Authorization header may be set");
    }
    if (authz == NULL && !presigned) {
        if (gw_s3_query_get(query, qlen, "AWSAccessKeyId", qv, sizeof(qv)) != 0) {
            FAIL(GW_S3_E_INVALID_REQUEST, "Signature Version 2 is not supported; please use "
                                          "AWS4-HMAC-SHA256");
        }
        FAIL(GW_S3_E_ACCESS_DENIED, "the request carries no credentials");
    }
    malformed = presigned ? GW_S3_E_AUTH_QUERY_ERROR : GW_S3_E_AUTH_HEADER_MALFORMED;
    if (!presigned) {
        if (strncmp(authz, "AWS ", 4) == 0) {
            FAIL(GW_S3_E_INVALID_REQUEST, "Signature Version 2 is not supported; please use "
                                          "AWS4-HMAC-SHA256");
        }
        if (strncmp(authz, ALGORITHM, sizeof(ALGORITHM) - 1) != 0) {
            FAIL(GW_S3_E_INVALID_ARGUMENT, "Unsupported Authorization Type");
        }
        if ((perr = parse_authorization(authz, &v)) != NULL) {
            FAIL(malformed, perr);
        }
        if (!header_in_list(v.signed_headers, "x-amz-content-sha256")) {
            FAIL(malformed, "the x-amz-content-sha256 header must be signed");
        }
        if ((hv = req->hdr(req->hdr_arg, "x-amz-date")) != NULL) {
            if (gw_s3_parse_amz_date(hv, &t) != 0) {
                FAIL(GW_S3_E_ACCESS_DENIED, "X-Amz-Date is not YYYYMMDDTHHMMSSZ");
            }
            memcpy(amz_date, hv, 17);
        } else if ((hv = req->hdr(req->hdr_arg, "date")) != NULL &&
                   gw_s3_amz_of_http_date(hv, amz_date) == 0) {
            gw_s3_parse_amz_date(amz_date, &t);
        } else {
            FAIL(GW_S3_E_ACCESS_DENIED,
                 "AWS authentication requires a valid Date or x-amz-date header");
        }
        if ((payload = req->hdr(req->hdr_arg, "x-amz-content-sha256")) == NULL) {
            FAIL(GW_S3_E_INVALID_REQUEST,
                 "Missing required header for this request: x-amz-content-sha256");
        }
        if (classify_payload(payload, &mode, sha) != 0) {
            FAIL(GW_S3_E_INVALID_ARGUMENT,
                 "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
                 "[-TRAILER], STREAMING-UNSIGNED-PAYLOAD-TRAILER or a SHA-256 in hex");
        }
    } else {
        if (r < 0 || strcmp(qv, ALGORITHM) != 0) {
            FAIL(malformed, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
        }
        if (gw_s3_query_get(query, qlen, "X-Amz-Credential", qv, sizeof(qv)) != 1 ||
            (perr = parse_credential(qv, strlen(qv), &v)) != NULL) {
            FAIL(malformed, "X-Amz-Credential is missing or not AKID/date/region/s3/aws4_request");
        }
        if (gw_s3_query_get(query, qlen, "X-Amz-SignedHeaders", qv, sizeof(qv)) != 1) {
            FAIL(malformed, "X-Amz-SignedHeaders is missing");
        }
        if ((perr = parse_signed_headers(qv, strlen(qv), &v)) != NULL) {
            FAIL(malformed, perr);
        }
        if (gw_s3_query_get(query, qlen, "X-Amz-Signature", qv, sizeof(qv)) != 1 ||
            gw_s3_unhex(qv, strlen(qv), v.sig, 32) != 0) {
            FAIL(malformed, "X-Amz-Signature is missing or not 64 hex digits");
        }
        if (gw_s3_query_get(query, qlen, "X-Amz-Date", qv, sizeof(qv)) != 1 ||
            gw_s3_parse_amz_date(qv, &t) != 0) {
            FAIL(malformed, "X-Amz-Date is missing or not YYYYMMDDTHHMMSSZ");
        }
        memcpy(amz_date, qv, 17);
        if (gw_s3_query_get(query, qlen, "X-Amz-Expires", qv, sizeof(qv)) != 1 || qv[0] == '\0' ||
            strlen(qv) > 7 || strspn(qv, "0123456789") != strlen(qv) ||
            (expires = strtol(qv, NULL, 10)) < 1 || expires > GW_S3_PRESIGN_MAX) {
            FAIL(malformed, "X-Amz-Expires must be a number of seconds from 1 to 604800");
        }
        hv = req->hdr(req->hdr_arg, "x-amz-content-sha256");
        if (hv != NULL && header_in_list(v.signed_headers, "x-amz-content-sha256")) {
            if (classify_payload(hv, &mode, sha) != 0 ||
                (mode != GW_S3_PAYLOAD_SIGNED && mode != GW_S3_PAYLOAD_UNSIGNED)) {
                FAIL(GW_S3_E_INVALID_REQUEST,
                     "a presigned URL takes UNSIGNED-PAYLOAD or a SHA-256 in hex");
            }
            payload = hv;
        }
    }
    if (detail != NULL) {
        snprintf(detail->access_key, sizeof(detail->access_key), "%s", v.akid);
    }
    if (memcmp(v.date, amz_date, 8) != 0) {
        FAIL(malformed, "Invalid credential date. Date is not the same as X-Amz-Date.");
    }
    if (opts->region != NULL && strcmp(opts->region, v.region) != 0) {
        FAIL(malformed, "the credential's region is not this endpoint's region");
    }
    if (presigned) {
        if (opts->now > t + expires) {
            FAIL(GW_S3_E_ACCESS_DENIED, "Request has expired");
        }
        if (t > opts->now + GW_S3_SKEW_MAX) {
            FAIL(GW_S3_E_ACCESS_DENIED, "Request is not valid yet");
        }
    } else if (t > opts->now + GW_S3_SKEW_MAX || t < opts->now - GW_S3_SKEW_MAX) {
        FAIL(GW_S3_E_TIME_SKEWED, NULL);
    }
    if ((ret = root_of(opts, v.akid, v.date, &root, &why)) != GW_S3_OK) {
        goto out;
    }
    snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", v.date, v.region);
    signing_key_cached(opts->cache, v.akid, &root, v.date, v.region, key);
    memset(&root, 0, sizeof(root));

    /* method \n uri \n tail: the URI first as S3 encodes it, then as sent */
    cm_buf_printf(&cr, "%s\n", req->method);
    tail_at = cr.len;
    gw_s3_canonical_uri(&cr, req->path, req->path_len);
    {
        struct cm_buf tail;
        int uri_differs;

        cm_buf_init(&tail);
        cm_buf_append(&tail, "\n", 1);
        if (canonical_tail(req, &v, presigned, payload, &tail) != 0) {
            cm_buf_fini(&tail);
            FAIL(GW_S3_E_INVALID_REQUEST, "too many query parameters");
        }
        uri_differs = cr.len - tail_at != req->path_len ||
                      memcmp(cr.p + tail_at, req->path, req->path_len) != 0;
        cm_buf_append(&cr, tail.p, tail.len);
        sign_canonical(cr.p, cr.len, amz_date, scope, key, sig,
                       detail != NULL ? &detail->to_sign : NULL);
        if (!cm_ct_equal(sig, v.sig, 32) && uri_differs && req->path_len > 0) {
            struct cm_buf alt;
            uint8_t sig2[32];

            cm_buf_init(&alt);
            cm_buf_append(&alt, cr.p, tail_at);
            cm_buf_append(&alt, req->path, req->path_len);
            cm_buf_append(&alt, tail.p, tail.len);
            sign_canonical(alt.p, alt.len, amz_date, scope, key, sig2, NULL);
            if (cm_ct_equal(sig2, v.sig, 32)) {
                memcpy(sig, sig2, 32);
            }
            cm_buf_fini(&alt);
        }
        cm_buf_fini(&tail);
    }
    if (detail != NULL) {
        detail->canonical.len = 0;
        cm_buf_append(&detail->canonical, cr.p, cr.len);
    }
    if (!cm_ct_equal(sig, v.sig, 32)) {
        FAIL(GW_S3_E_SIGNATURE_MISMATCH, NULL);
    }
    if (presigned && mode != GW_S3_PAYLOAD_SIGNED) {
        mode = GW_S3_PAYLOAD_UNSIGNED;
    }

    memset(out, 0, sizeof(*out));
    memcpy(out->access_key, v.akid, sizeof(out->access_key));
    memcpy(out->region, v.region, sizeof(out->region));
    memcpy(out->scope, scope, sizeof(out->scope));
    memcpy(out->amz_date, amz_date, sizeof(out->amz_date));
    out->request_time = t;
    out->presigned = presigned;
    out->expires = presigned ? t + expires : 0;
    cm_hex(v.sig, 32, sighex);
    memcpy(out->signature, sighex, sizeof(out->signature));
    memcpy(out->signing_key, key, 32);
    out->payload = mode;
    memcpy(out->payload_sha256, sha, 32);
    memcpy(out->signed_headers, v.signed_headers, sizeof(out->signed_headers));
out:
    memset(key, 0, sizeof(key));
    memset(&root, 0, sizeof(root));
    cm_buf_fini(&cr);
    if (detail != NULL) {
        detail->why = why;
    }
    return ret;
}
