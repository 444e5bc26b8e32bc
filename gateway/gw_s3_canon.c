/*
 * gw_s3_canon.c - what SigV4 rebuilds before it signs (see gw_s3_sig.h):
 * AWS's URI encoding, the canonical URI and query, a query parameter's
 * value, and the dates (X-Amz-Date, an HTTP Date as the string to sign
 * has it). Pure; every loop bounded by an explicit length.
 */
#include "gw_s3_sig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_bytes.h"
#include "cm_err.h"
#include "gw_s3_route.h"

static const char hexup[] = "0123456789ABCDEF";

/* ---- encoding ---- */

/* RFC 3986 unreserved: what AWS's UriEncode leaves alone. */
int
gw_s3_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Next byte of a percent-encoded string: %XX decoded, anything else (a
 * stray '%' included) taken as is. '+' is a plus: S3 signs it as %2B. */
static unsigned char
pct_next(const char *s, size_t n, size_t *i)
{
    int hi, lo;

    if (s[*i] == '%' && *i + 2 < n && (hi = cm_hexval((unsigned char)s[*i + 1])) >= 0 &&
        (lo = cm_hexval((unsigned char)s[*i + 2])) >= 0) {
        *i += 3;
        return (unsigned char)(hi << 4 | lo);
    }
    return (unsigned char)s[(*i)++];
}

/* Appends s[n] decoded then encoded as UriEncode does; '/' kept if asked. */
static void
uri_encode(struct cm_buf *b, const char *s, size_t n, int keep_slash)
{
    char stage[256];
    size_t i = 0, k = 0;

    while (i < n) {
        unsigned char c = pct_next(s, n, &i);

        if (k + 3 > sizeof(stage)) {
            cm_buf_append(b, stage, k);
            k = 0;
        }
        if (gw_s3_unreserved(c) || (keep_slash && c == '/')) {
            stage[k++] = (char)c;
        } else {
            stage[k++] = '%';
            stage[k++] = hexup[c >> 4];
            stage[k++] = hexup[c & 15];
        }
    }
    cm_buf_append(b, stage, k);
}

void
gw_s3_canonical_uri(struct cm_buf *b, const char *path, size_t len)
{
    if (len == 0) {
        cm_buf_append(b, "/", 1);
        return;
    }
    uri_encode(b, path, len, 1);
}

struct qparam {
    size_t name_off, name_len, val_off, val_len;
};

static int
qparam_cmp(const void *a, const void *b, void *arg)
{
    const struct qparam *x = a, *y = b;
    const char *base = arg;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(base + x->name_off, base + y->name_off, n);

    if (c != 0 || x->name_len != y->name_len) {
        return c != 0 ? c : (x->name_len < y->name_len ? -1 : 1);
    }
    n = x->val_len < y->val_len ? x->val_len : y->val_len;
    c = memcmp(base + x->val_off, base + y->val_off, n);
    if (c != 0 || x->val_len == y->val_len) {
        return c;
    }
    return x->val_len < y->val_len ? -1 : 1;
}

int
gw_s3_canonical_query(struct cm_buf *b, const char *query, size_t len, int presigned)
{
    struct qparam ps[GW_S3_QUERY_PARAMS_MAX]; /* 4 KiB: no allocation per request */
    struct cm_buf s;
    size_t np = 0, i = 0;
    int ret = 0;

    cm_buf_init(&s);
    while (i < len) {
        size_t end = i, eq;

        while (end < len && query[end] != '&') {
            end++;
        }
        if (end > i) {
            struct qparam p;

            if (np == GW_S3_QUERY_PARAMS_MAX) {
                ret = CM_E_TOOBIG;
                goto out;
            }
            for (eq = i; eq < end && query[eq] != '='; eq++) {
            }
            p.name_off = s.len;
            uri_encode(&s, query + i, eq - i, 0);
            p.name_len = s.len - p.name_off;
            p.val_off = s.len;
            if (eq < end) {
                uri_encode(&s, query + eq + 1, end - eq - 1, 0);
            }
            p.val_len = s.len - p.val_off;
            if (!(presigned && p.name_len == 15 &&
                  memcmp(s.p + p.name_off, "X-Amz-Signature", 15) == 0)) {
                ps[np++] = p;
            }
        }
        i = end + 1;
    }
    if (np > 1) {
        qsort_r(ps, np, sizeof(*ps), qparam_cmp, s.p);
    }
    for (i = 0; i < np; i++) {
        if (i > 0) {
            cm_buf_append(b, "&", 1);
        }
        cm_buf_append(b, s.p + ps[i].name_off, ps[i].name_len);
        cm_buf_append(b, "=", 1);
        cm_buf_append(b, s.p + ps[i].val_off, ps[i].val_len);
    }
out:
    cm_buf_fini(&s);
    return ret;
}

int
gw_s3_query_get(const char *q, size_t len, const char *name, char *out, size_t cap)
{
    size_t i = 0, nl = strlen(name);

    while (i < len) {
        const char *amp = memchr(q + i, '&', len - i), *e;
        size_t end = amp != NULL ? (size_t)(amp - q) : len, eq, j, k = 0;
        int match;

        e = memchr(q + i, '=', end - i);
        eq = e != NULL ? (size_t)(e - q) : end;
        if (memchr(q + i, '%', eq - i) == NULL) {
            match = eq - i == nl && memcmp(q + i, name, nl) == 0; /* the usual case */
        } else {
            match = 1;
            for (j = i; j < eq && match;) {
                unsigned char c = pct_next(q, eq, &j);
                match = k < nl && c == (unsigned char)name[k];
                k++;
            }
            match = match && k == nl;
        }
        if (match) {
            k = 0;
            for (j = eq + 1; j < end && eq < end;) {
                if (k + 1 >= cap) {
                    return -1;
                }
                out[k] = (char)pct_next(q, end, &j);
                if (out[k++] == '\0') {
                    return -1;
                }
            }
            out[k] = '\0';
            return 1;
        }
        i = end + 1;
    }
    return 0;
}

/* ---- times ---- */

static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

int
gw_s3_digits(const char *s, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int
civil_ok(int y, int mo, int d, int h, int mi, int s)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
        s > 59) {
        return 0;
    }
    return !(mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)));
}

static int64_t
civil_to_unix(int y, int mo, int d, int h, int mi, int s)
{
    return days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
}

int
gw_s3_parse_amz_date(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec;

    if (s == NULL || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z' || gw_s3_digits(s, 4, &y) ||
        gw_s3_digits(s + 4, 2, &mo) || gw_s3_digits(s + 6, 2, &d) || gw_s3_digits(s + 9, 2, &h) ||
        gw_s3_digits(s + 11, 2, &mi) || gw_s3_digits(s + 13, 2, &sec) ||
        !civil_ok(y, mo, d, h, mi, sec)) {
        return -1;
    }
    *out = civil_to_unix(y, mo, d, h, mi, sec);
    return 0;
}

/* A Date header (an HTTP date) as the ISO 8601 basic form that goes into
 * the string to sign. */
int
gw_s3_amz_of_http_date(const char *s, char amz[17])
{
    int64_t t;
    time_t tt;
    struct tm tm;

    if (gw_s3_http_date(s, &t) != 0 || (tt = (time_t)t, gmtime_r(&tt, &tm) == NULL) ||
        strftime(amz, 17, "%Y%m%dT%H%M%SZ", &tm) != 16) {
        return -1;
    }
    return 0;
}
