/*
 * cm_cos_s3p.c - the pure parts of the s3 COS backend: the URL parser, the
 * reading of S3 answers (status codes, error and listing XML) and the
 * backoff arithmetic. No I/O, no clock, no randomness (passed in), so the
 * unit tests and the fuzz targets call them directly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_cos_int.h"
#include "cm_err.h"

/* ---- URL ---- */

static int url_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
url_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (errlen == 0) {
        return CM_E_BADARG;
    }
    n = snprintf(err, errlen, "cos url: ");
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < errlen) {
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    }
    va_end(ap);
    return CM_E_BADARG;
}

static int
is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int
host_char_ok(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '-' || c == '.';
}

/* Bucket names S3 accepts for path-style access: 3..63 of [a-z0-9.-],
 * a letter or digit at each end. */
static int
bucket_ok(const char *b, size_t n)
{
    size_t i;

    if (n < 3 || n > 63 || !is_lower_alnum(b[0]) || !is_lower_alnum(b[n - 1])) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!is_lower_alnum(b[i]) && b[i] != '-' && b[i] != '.') {
            return 0;
        }
    }
    return 1;
}

/* host[:port] in [s, e): fills u->host and u->port (0 when absent). */
static int
parse_authority(const char *s, const char *e, struct cm_s3_url *u, char *err, size_t errlen)
{
    const char *hend, *p;
    size_t hn;

    if (s == e) {
        return url_err(err, errlen, "no host");
    }
    if (*s == '[') {
        hend = memchr(s, ']', (size_t)(e - s));
        if (hend == NULL || hend == s + 1) {
            return url_err(err, errlen, "bad IPv6 host");
        }
        for (p = s + 1; p < hend; p++) {
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                  (*p >= 'A' && *p <= 'F') || *p == ':' || *p == '.')) {
                return url_err(err, errlen, "bad IPv6 host");
            }
        }
        hend++;
    } else {
        for (hend = s; hend < e && *hend != ':'; hend++) {
            if (!host_char_ok(*hend)) {
                return url_err(err, errlen, "bad character in host");
            }
        }
        if (hend == s || *s == '.' || *s == '-') {
            return url_err(err, errlen, "bad host");
        }
    }
    hn = (size_t)(hend - s);
    if (hn >= sizeof(u->host)) {
        return url_err(err, errlen, "host too long");
    }
    memcpy(u->host, s, hn);
    u->host[hn] = '\0';
    u->port = 0;
    if (hend == e) {
        return 0;
    }
    if (*hend != ':' || hend + 1 == e) {
        return url_err(err, errlen, "bad port");
    }
    for (p = hend + 1; p < e; p++) {
        if (*p < '0' || *p > '9' || u->port > 6553) {
            return url_err(err, errlen, "port must be 1..65535");
        }
        u->port = u->port * 10 + (*p - '0');
    }
    if (u->port < 1 || u->port > 65535) {
        return url_err(err, errlen, "port must be 1..65535");
    }
    return 0;
}

/* /BUCKET[/PREFIX][/] in [s, e). */
static int
parse_path(const char *s, const char *e, struct cm_s3_url *u, char *err, size_t errlen)
{
    const char *b = s + 1, *slash;
    size_t n;

    if (s == e || *s != '/') {
        return url_err(err, errlen, "no bucket (s3://HOST:PORT/BUCKET[/PREFIX])");
    }
    slash = memchr(b, '/', (size_t)(e - b));
    n = (size_t)((slash != NULL ? slash : e) - b);
    if (!bucket_ok(b, n)) {
        return url_err(err, errlen, "bucket must be 3-63 of [a-z0-9.-]");
    }
    memcpy(u->bucket, b, n);
    u->bucket[n] = '\0';
    u->prefix[0] = '\0';
    if (slash == NULL) {
        return 0;
    }
    b = slash + 1;
    n = (size_t)(e - b);
    if (n > 0 && b[n - 1] == '/') {
        n--; /* "bucket/pre/" means "bucket/pre" */
    }
    if (n == 0) {
        return 0;
    }
    if (n > CM_S3_PREFIX_MAX) {
        return url_err(err, errlen, "prefix longer than %d", CM_S3_PREFIX_MAX);
    }
    memcpy(u->prefix, b, n);
    u->prefix[n] = '\0';
    if (!cm_cos_name_valid(u->prefix)) {
        return url_err(err, errlen, "prefix must be segments of [A-Za-z0-9._-]");
    }
    return 0;
}

/* k=v pairs of [s, e) joined by '&'. */
static int
parse_query(const char *s, const char *e, struct cm_s3_url *u, char *err, size_t errlen)
{
    int seen_sig = 0, seen_region = 0, seen_tls = 0;

    while (s < e) {
        const char *amp = memchr(s, '&', (size_t)(e - s)), *eq, *v;
        const char *pe = amp != NULL ? amp : e;
        size_t kn, vn;

        eq = memchr(s, '=', (size_t)(pe - s));
        if (eq == NULL || eq == s || eq + 1 == pe) {
            return url_err(err, errlen, "query wants key=value pairs (sig, region, tls)");
        }
        kn = (size_t)(eq - s);
        v = eq + 1;
        vn = (size_t)(pe - v);
        if (kn == 3 && memcmp(s, "sig", 3) == 0) {
            if (seen_sig++) {
                return url_err(err, errlen, "sig given twice");
            }
            if (vn == 2 && memcmp(v, "v2", 2) == 0) {
                u->sig = CM_S3_SIG_V2;
            } else if (vn == 2 && memcmp(v, "v4", 2) == 0) {
                u->sig = CM_S3_SIG_V4;
            } else {
                return url_err(err, errlen, "sig must be v2 or v4");
            }
        } else if (kn == 6 && memcmp(s, "region", 6) == 0) {
            if (seen_region++) {
                return url_err(err, errlen, "region given twice");
            }
            if (vn >= sizeof(u->region)) {
                return url_err(err, errlen, "region too long");
            }
            for (size_t i = 0; i < vn; i++) {
                if (!is_lower_alnum(v[i]) && v[i] != '-') {
                    return url_err(err, errlen, "region must be [a-z0-9-]");
                }
            }
            memcpy(u->region, v, vn);
            u->region[vn] = '\0';
        } else if (kn == 3 && memcmp(s, "tls", 3) == 0) {
            if (seen_tls++) {
                return url_err(err, errlen, "tls given twice");
            }
            if (vn != 1 || (v[0] != '0' && v[0] != '1')) {
                return url_err(err, errlen, "tls must be 0 or 1");
            }
            u->tls = v[0] == '1';
        } else {
            return url_err(err, errlen, "unknown parameter '%.*s' (sig, region, tls)",
                           (int)(kn > 32 ? 32 : kn), s);
        }
        s = amp != NULL ? amp + 1 : e;
        if (amp != NULL && s == e) {
            return url_err(err, errlen, "empty query parameter");
        }
    }
    return 0;
}

int
cm_s3_url_parse(const char *url, struct cm_s3_url *out, char *err, size_t errlen)
{
    struct cm_s3_url u;
    const char *s, *e, *slash, *q;
    int rc;

    if (errlen > 0) {
        err[0] = '\0';
    }
    memset(&u, 0, sizeof(u));
    u.sig = CM_S3_SIG_V4;
    u.tls = 1;
    snprintf(u.region, sizeof(u.region), "us-east-1");
    if (url == NULL || strncmp(url, "s3://", 5) != 0) {
        return url_err(err, errlen, "must start with s3://");
    }
    s = url + 5;
    e = s + strlen(s);
    for (const char *p = s; p < e; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '#' || *p == '%' || *p == '@') {
            return url_err(err, errlen,
                           "unexpected character (no userinfo, escapes or "
                           "fragments: credentials come from the environment)");
        }
    }
    q = memchr(s, '?', (size_t)(e - s));
    slash = memchr(s, '/', (size_t)((q != NULL ? q : e) - s));
    rc = parse_authority(s, slash != NULL ? slash : (q != NULL ? q : e), &u, err, errlen);
    if (rc == 0) {
        rc = parse_path(slash != NULL ? slash : (q != NULL ? q : e), q != NULL ? q : e, &u, err,
                        errlen);
    }
    if (rc == 0 && q != NULL) {
        if (q + 1 == e) {
            return url_err(err, errlen, "empty query");
        }
        rc = parse_query(q + 1, e, &u, err, errlen);
    }
    if (rc != 0) {
        return rc;
    }
    if (u.port == 0) {
        u.port = u.tls ? 443 : 80;
    }
    *out = u;
    return 0;
}

/* ---- retries ---- */

uint32_t
cm_cos_backoff_ms(unsigned attempt, uint32_t base_ms, uint32_t cap_ms, uint64_t rnd)
{
    uint64_t d = base_ms;

    if (base_ms == 0) {
        return 0;
    }
    while (attempt-- > 0 && d < cap_ms) {
        d *= 2;
    }
    if (d > cap_ms) {
        d = cap_ms;
    }
    return (uint32_t)(d - d / 2 + rnd % (d / 2 + 1));
}

int
cm_cos_transient(int rc)
{
    return rc == CM_E_TIMEOUT || rc == -EAGAIN || rc == -EIO || rc == -ECONNREFUSED ||
           rc == -ECONNRESET || rc == -EHOSTUNREACH;
}

/* The text of <tag>...</tag> in [s, e), or NULL; *n its length. */
static const char *
xml_elem(const char *s, const char *e, const char *tag, size_t *n)
{
    char open[40], close[40];
    size_t ol = (size_t)snprintf(open, sizeof(open), "<%s>", tag);
    size_t cl = (size_t)snprintf(close, sizeof(close), "</%s>", tag);
    const char *a, *b;

    a = memmem(s, (size_t)(e - s), open, ol);
    if (a == NULL) {
        return NULL;
    }
    a += ol;
    b = memmem(a, (size_t)(e - a), close, cl);
    if (b == NULL) {
        return NULL;
    }
    *n = (size_t)(b - a);
    return a;
}

int
cm_s3_http_err(int status, const char *body, size_t len)
{
    const char *code = NULL;
    size_t cn = 0;

    if (body != NULL) {
        code = xml_elem(body, body + len, "Code", &cn);
    }
#define CODE_IS(lit) (code != NULL && cn == sizeof(lit) - 1 && memcmp(code, lit, cn) == 0)
    if (status >= 200 && status < 300) {
        return 0;
    }
    if (status == 404) {
        return CODE_IS("NoSuchBucket") ? CM_E_CONFIG : CM_E_NOTFOUND;
    }
    if (status == 401 || status == 403) {
        return -EACCES;
    }
    if (status == 408 || (status == 400 && CODE_IS("RequestTimeout"))) {
        return CM_E_TIMEOUT;
    }
    if (status == 429 || (status >= 500 && status < 600)) {
        return -EAGAIN;
    }
#undef CODE_IS
    return -EPROTO;
}

/* Decodes XML text [s, s + n) into out (cap bytes with its NUL): the five
 * predefined entities and numeric ones below 128. 0, or -1 if it does not
 * fit or holds an entity we do not know. */
static int
xml_text(const char *s, size_t n, char *out, size_t cap)
{
    static const struct {
        const char *name;
        char c;
    } ents[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    size_t i = 0, o = 0, k;

    while (i < n) {
        char c = s[i++];

        if (c == '&') {
            for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++) {
                size_t el = strlen(ents[k].name);
                if (n - i >= el && memcmp(s + i, ents[k].name, el) == 0) {
                    c = ents[k].c;
                    i += el;
                    break;
                }
            }
            if (k == sizeof(ents) / sizeof(ents[0])) {
                unsigned v = 0, digits = 0;

                if (i >= n || s[i] != '#') {
                    return -1;
                }
                for (i++; i < n && s[i] >= '0' && s[i] <= '9' && digits < 4; i++, digits++) {
                    v = v * 10 + (unsigned)(s[i] - '0');
                }
                if (digits == 0 || i >= n || s[i] != ';' || v == 0 || v >= 128) {
                    return -1;
                }
                i++;
                c = (char)v;
            }
        }
        if (o + 1 >= cap) {
            return -1;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int
cm_s3_list_parse(const char *xml, size_t len, int (*cb)(void *arg, const char *key), void *arg,
                 int *truncated, char next[CM_S3_KEY_MAX + 1])
{
    const char *p = xml, *e = xml + len, *t;
    char key[CM_S3_KEY_MAX + 1];
    size_t n;
    int rc;

    *truncated = 0;
    next[0] = '\0';
    if (memmem(xml, len, "<ListBucketResult", 17) == NULL) {
        return CM_E_PROTO;
    }
    t = xml_elem(xml, e, "IsTruncated", &n);
    *truncated = t != NULL && n == 4 && memcmp(t, "true", 4) == 0;
    while ((t = xml_elem(p, e, "Key", &n)) != NULL) {
        p = t + n;
        if (xml_text(t, n, key, sizeof(key)) != 0) {
            continue;
        }
        memcpy(next, key, strlen(key) + 1);
        if (cb != NULL && (rc = cb(arg, key)) != 0) {
            return rc;
        }
    }
    t = xml_elem(xml, e, "NextMarker", &n);
    if (t != NULL && xml_text(t, n, key, sizeof(key)) == 0 && key[0] != '\0') {
        memcpy(next, key, strlen(key) + 1);
    }
    return 0;
}
