/* fuzz_s3_sig.c - SigV4 verification (gateway/gw_s3_sig.c, gw_s3_canon.c): the
 * Authorization and presigned-query parsers, the canonical forms, the time
 * checks.
 *
 * Input: a flags byte, then NUL-separated fields: method, raw path, raw
 * query, headers ("name:value" lines), secret. Flag 1 re-signs a request
 * whose signature did not match (over the string to sign it reported), so
 * the paths behind a good signature are reached: it must then verify.
 * Flag 2 uses a key cache, flag 4 moves the clock 20 minutes on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "gw_s3_sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 1369353600 /* 2013-05-24T00:00:00Z */
#define MAXH 32

struct input {
    const char *names[MAXH];
    char *values[MAXH];
    int n;
    const char *secret;
};

static const char *
hdr(void *arg, const char *lname)
{
    struct input *in = arg;

    for (int i = 0; i < in->n; i++) {
        if (strcasecmp(in->names[i], lname) == 0) {
            return in->values[i];
        }
    }
    return NULL;
}

static int
secret_of(void *arg, const char *akid, char *secret, size_t cap)
{
    struct input *in = arg;

    if (strcmp(akid, "UNKNOWN") == 0) {
        return CM_E_NOTFOUND;
    }
    if (strcmp(akid, "BROKEN") == 0) {
        return -5;
    }
    snprintf(secret, cap, "%s", in->secret);
    return 0;
}

/* The canonical forms: only unreserved bytes, '/', '&', '=' and %XX (upper
 * case) come out, and the query's pairs are sorted. */
static void
check_canonical(const char *path, const char *query)
{
    struct cm_buf b;
    const char *prev = NULL;
    size_t prev_len = 0;

    cm_buf_init(&b);
    gw_s3_canonical_uri(&b, path, strlen(path));
    cm_buf_append(&b, "&", 1);
    if (gw_s3_canonical_query(&b, query, strlen(query), 0) != 0) {
        cm_buf_fini(&b);
        return;
    }
    if (b.len == 0 || ((path[0] == '/' || path[0] == '\0') && b.p[0] != '/')) {
        abort();
    }
    for (size_t i = 0; i < b.len; i++) {
        unsigned char c = (unsigned char)b.p[i];
        if (c == '%') {
            if (i + 2 >= b.len || !strchr("0123456789ABCDEF", b.p[i + 1]) ||
                !strchr("0123456789ABCDEF", b.p[i + 2]) || b.p[i + 1] == '\0') {
                abort();
            }
        } else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     strchr("-._~/&=", c) != NULL) ||
                   c == '\0') {
            abort();
        }
    }
    /* after the path: pairs, each "name=value", in order */
    for (char *p = strchr(b.p, '&') + 1; *p != '\0';) {
        char *e = strchr(p, '&');
        size_t l = e != NULL ? (size_t)(e - p) : strlen(p);
        char *eq = memchr(p, '=', l);

        if (eq == NULL || memchr(eq + 1, '=', l - (size_t)(eq + 1 - p)) != NULL) {
            abort();
        }
        if (prev != NULL) {
            size_t pn = (size_t)((const char *)memchr(prev, '=', prev_len) - prev);
            size_t cn = (size_t)(eq - p);
            int c = memcmp(prev, p, pn < cn ? pn : cn);
            if (c > 0 || (c == 0 && pn > cn)) {
                abort();
            }
        }
        prev = p;
        prev_len = l;
        p += l + (e != NULL);
    }
    cm_buf_fini(&b);
}

static int
hex64(const char *p)
{
    for (int i = 0; i < 64; i++) {
        if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0') {
            return 0;
        }
    }
    return 1;
}

/* In an Authorization value: the Signature component (after a space, tab
 * or comma), when it is 64 hex digits. */
static char *
header_sig(char *s)
{
    for (char *q = s; (q = strstr(q, "Signature=")) != NULL; q++) {
        if (q > s && strchr(" \t,", q[-1]) != NULL && q[-1] != '\0') {
            return strlen(q + 10) >= 64 && hex64(q + 10) ? q + 10 : NULL;
        }
    }
    return NULL;
}

/* In a query: the first parameter whose decoded name is X-Amz-Signature,
 * when neither its name nor its 64 hex digits are percent-encoded. */
static char *
query_sig(char *q)
{
    for (char *p = q; *p != '\0';) {
        size_t l = strcspn(p, "&"), k = 0, nl = strcspn(p, "=&");
        char name[32];
        int plain = 1;

        for (size_t i = 0; i < nl && k < sizeof(name) - 1; k++) {
            if (p[i] == '%' && i + 2 < nl && strchr("0123456789abcdefABCDEF", p[i + 1]) &&
                strchr("0123456789abcdefABCDEF", p[i + 2])) {
                char h[3] = {p[i + 1], p[i + 2], 0};
                name[k] = (char)strtol(h, NULL, 16);
                plain = 0;
                i += 3;
            } else {
                name[k] = p[i++];
            }
        }
        name[k] = '\0';
        if (strcmp(name, "X-Amz-Signature") == 0) {
            return plain && nl < l && l - nl - 1 == 64 && hex64(p + nl + 1) ? p + nl + 1 : NULL;
        }
        p += l + (p[l] == '&');
    }
    return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *f[5] = {"GET", "/", "", "", "secret"}, *query_copy = NULL;
    struct input in = {.n = 0};
    struct gw_s3_verify_opts o;
    struct gw_s3_sig_detail d;
    struct gw_s3_auth a;
    struct gw_s3_req req;
    static struct gw_s3_keycache *cache;
    enum gw_s3_err e;
    uint8_t flags;
    size_t nf = 0;

    if (size < 1) {
        return 0;
    }
    flags = data[0];
    buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    for (size_t i = 0, s = 0; i < size && nf < 5; i++) {
        if (i == size - 1 || buf[i] == '\0') {
            buf[i] = '\0';
            f[nf++] = buf + s;
            s = i + 1;
        }
    }
    for (char *line = f[3]; *line != '\0' && in.n < MAXH;) {
        char *nl = strchr(line, '\n'), *colon;
        if (nl != NULL) {
            *nl = '\0';
        }
        if ((colon = strchr(line, ':')) != NULL) {
            *colon = '\0';
            in.names[in.n] = line;
            in.values[in.n] = colon + 1;
            in.n++;
        }
        if (nl == NULL) {
            break;
        }
        line = nl + 1;
    }
    in.secret = f[4];
    check_canonical(f[1], f[2]);

    if ((flags & 2) && cache == NULL) {
        cache = gw_s3_keycache_create(8);
    }
    req = (struct gw_s3_req){.method = f[0],
                             .path = f[1],
                             .path_len = strlen(f[1]),
                             .query = f[2],
                             .query_len = strlen(f[2]),
                             .hdr = hdr,
                             .hdr_arg = &in};
    o = (struct gw_s3_verify_opts){.secret = secret_of,
                                   .secret_arg = &in,
                                   .region = NULL,
                                   .now = T0 + ((flags & 4) ? 1200 : 0),
                                   .cache = (flags & 2) ? cache : NULL};
    gw_s3_sig_detail_init(&d);
    e = gw_s3_verify(&req, &o, &a, &d);
    if ((unsigned)e >= GW_S3_E_COUNT_) {
        abort();
    }
    if (e == GW_S3_E_SIGNATURE_MISMATCH && (flags & 1) && d.to_sign.len > 0) {
        /* sign the string to sign it reported, as a client would have */
        char date[9], region[GW_S3_REGION_MAX + 1], sig[65];
        const char *scope = strchr(d.to_sign.p, '\n');
        uint8_t key[32], mac[32];
        char *at = NULL;

        scope = scope != NULL ? strchr(scope + 1, '\n') : NULL;
        if (scope == NULL || sscanf(scope + 1, "%8[0-9]/%64[^/]/", date, region) != 2) {
            abort();
        }
        gw_s3_signing_key(in.secret, date, region, key);
        cm_hmac_sha256(key, 32, d.to_sign.p, d.to_sign.len, mac);
        cm_hex(mac, 32, sig);
        if (hdr(&in, "authorization") != NULL) {
            for (int i = 0; i < in.n; i++) {
                if (strcasecmp(in.names[i], "authorization") == 0) {
                    at = header_sig(in.values[i]);
                    break;
                }
            }
        } else {
            query_copy = strdup(f[2]);
            at = query_sig(query_copy);
            req.query = query_copy;
        }
        /* a signed Authorization header would change with its signature */
        if (strstr(d.canonical.p, "\nauthorization:") != NULL) {
            at = NULL;
        }
        if (at != NULL) {
            memcpy(at, sig, 64);
            e = gw_s3_verify(&req, &o, &a, NULL);
            if (e != GW_S3_OK) {
                abort();
            }
            if (strcmp(a.signature, sig) != 0) {
                abort();
            }
        }
    }
    if (e == GW_S3_OK) {
        if (a.access_key[0] == '\0' || strlen(a.amz_date) != 16 || strlen(a.signature) != 64 ||
            a.payload > GW_S3_PAYLOAD_UNSIGNED_TRAILER || !gw_s3_header_signed(&a, "host") ||
            (a.presigned &&
             (a.expires <= a.request_time ||
              (a.payload != GW_S3_PAYLOAD_SIGNED && a.payload != GW_S3_PAYLOAD_UNSIGNED)))) {
            abort();
        }
    }
    gw_s3_sig_detail_fini(&d);
    free(query_copy);
    free(buf);
    return 0;
}
