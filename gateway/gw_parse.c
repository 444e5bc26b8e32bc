/*
 * gw_parse.c - pure parsers for the tenant API (see gw_parse.h).
 *
 * Invariants: nothing here allocates, reads a clock or touches global
 * state, so each function is safe on any thread and under libFuzzer. Input
 * strings are treated as untrusted bytes; every loop is bounded by an
 * explicit length.
 */
#include "gw_parse.h"

#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"

/* Length of the UTF-8 sequence at s[0..len) when valid and not a control
 * character, else 0. */
static size_t
utf8_char(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    uint32_t cp;
    size_t n;

    if (c < 0x80) {
        return (c < 0x20 || c == 0x7f) ? 0 : 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
        return 0; /* overlong or beyond Unicode */
    }
    if (cp >= 0xd800 && cp <= 0xdfff) {
        return 0; /* surrogate */
    }
    if (cp >= 0x80 && cp <= 0x9f) {
        return 0; /* C1 control */
    }
    return n;
}

int
gw_utf8_clean(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        size_t n = utf8_char(p + i, len - i);
        if (n == 0) {
            return 0;
        }
        i += n;
    }
    return 1;
}

int
gw_parse_key(const char *raw, size_t rawlen, char *out, size_t *outlen, const char **why)
{
    const char *reason = NULL;
    size_t n = 0;

    for (size_t i = 0; i < rawlen; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            if (rawlen - i < 3) {
                reason = "bad percent-encoding in key";
                goto out;
            }
            int h = cm_hexval(raw[i + 1]);
            int l = cm_hexval(raw[i + 2]);
            if (h < 0 || l < 0) {
                reason = "bad percent-encoding in key";
                goto out;
            }
            c = (unsigned char)(h << 4 | l);
            i += 2;
        }
        if (n == GW_KEY_MAX) {
            reason = "key longer than 1024 bytes";
            goto out;
        }
        out[n++] = (char)c;
    }
    if (n == 0) {
        reason = "empty key";
        goto out;
    }
    if (!gw_utf8_clean(out, n)) {
        reason = "key is not clean UTF-8 (or has control characters)";
        goto out;
    }
    for (size_t s = 0; s < n;) {
        size_t e = s;
        while (e < n && out[e] != '/') {
            e++;
        }
        size_t sl = e - s;
        if ((sl == 1 && out[s] == '.') || (sl == 2 && out[s] == '.' && out[s + 1] == '.')) {
            reason = "key has a '.' or '..' segment";
            goto out;
        }
        s = e + 1;
    }
    *outlen = n;
out:
    if (why != NULL) {
        *why = reason;
    }
    return reason == NULL ? 0 : CM_E_BADARG;
}

static int
is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* [*p, *end) = s without leading and trailing optional white space. */
static void
trim_ows(const char *s, const char **p, const char **end)
{
    *p = s;
    *end = s + strlen(s);
    while (*p < *end && is_ows(**p)) {
        (*p)++;
    }
    while (*end > *p && is_ows((*end)[-1])) {
        (*end)--;
    }
}

/* Decimal digits at *p (at least one), saturating at UINT64_MAX. */
static int
parse_dec(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    if (s == end || *s < '0' || *s > '9') {
        return -1;
    }
    while (s < end && *s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) {
            v = UINT64_MAX;
        } else {
            v = v * 10 + d;
        }
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

static int
ci_prefix(const char *s, size_t len, const char *pfx)
{
    size_t n = strlen(pfx);

    if (len < n) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        }
        if (c != pfx[i]) {
            return 0;
        }
    }
    return 1;
}

enum gw_range
gw_parse_range(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    const char *p, *end;
    uint64_t a = 0, b = UINT64_MAX;
    int has_a, has_b;

    if (hdr == NULL) {
        return GW_RANGE_NONE;
    }
    trim_ows(hdr, &p, &end);
    if (!ci_prefix(p, (size_t)(end - p), "bytes=")) {
        return GW_RANGE_BAD;
    }
    p += 6;
    while (p < end && is_ows(*p)) {
        p++;
    }
    has_a = parse_dec(&p, end, &a) == 0;
    while (p < end && is_ows(*p)) {
        p++;
    }
    if (p == end || *p != '-') {
        return GW_RANGE_BAD;
    }
    p++;
    while (p < end && is_ows(*p)) {
        p++;
    }
    has_b = parse_dec(&p, end, &b) == 0;
    if (p != end) {
        return GW_RANGE_BAD; /* trailing garbage or a second range */
    }
    if (!has_a && !has_b) {
        return GW_RANGE_BAD;
    }
    if (!has_a) {
        /* suffix: the last b bytes */
        if (b == 0 || size == 0) {
            return GW_RANGE_UNSAT;
        }
        if (b > size) {
            b = size;
        }
        *off = size - b;
        *len = b;
        return GW_RANGE_OK;
    }
    if (has_b && b < a) {
        return GW_RANGE_BAD;
    }
    if (a >= size) {
        return GW_RANGE_UNSAT;
    }
    if (!has_b || b >= size) {
        b = size - 1;
    }
    *off = a;
    *len = b - a + 1;
    return GW_RANGE_OK;
}

static int
is_token68(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
}

int
gw_parse_bearer(const char *hdr, const char **tok, size_t *toklen)
{
    const char *p, *end, *t;

    if (hdr == NULL) {
        return CM_E_BADARG;
    }
    trim_ows(hdr, &p, &end);
    if (!ci_prefix(p, (size_t)(end - p), "bearer") || (size_t)(end - p) < 7 || !is_ows(p[6])) {
        return CM_E_BADARG;
    }
    p += 6;
    while (p < end && is_ows(*p)) {
        p++;
    }
    t = p;
    if (t == end) {
        return CM_E_BADARG;
    }
    for (; p < end; p++) {
        if (!is_token68((unsigned char)*p)) {
            return CM_E_BADARG;
        }
    }
    *tok = t;
    *toklen = (size_t)(end - t);
    return 0;
}

/* A LIST argument that names keys (prefix, after): at most a key long,
 * clean UTF-8. */
static int
list_key_arg(const char *v, const char **out, size_t *len)
{
    size_t n = strlen(v);

    if (n > GW_KEY_MAX || !gw_utf8_clean(v, n)) {
        return CM_E_BADARG;
    }
    *out = v;
    *len = n;
    return 0;
}

int
gw_parse_list_query(const char *prefix, const char *after, const char *limit,
                    struct gw_list_query *out, const char **why)
{
    const char *reason = NULL;

    memset(out, 0, sizeof(*out));
    out->prefix = "";
    out->limit = GW_LIST_MAX;
    if (prefix != NULL && list_key_arg(prefix, &out->prefix, &out->prefix_len) != 0) {
        reason = "bad prefix";
        goto out;
    }
    if (after != NULL && list_key_arg(after, &out->after, &out->after_len) != 0) {
        reason = "bad after";
        goto out;
    }
    if (limit != NULL) {
        const char *p = limit;
        const char *end = limit + strlen(limit);
        uint64_t v;
        if (parse_dec(&p, end, &v) != 0 || p != end || v == 0) {
            reason = "limit must be a positive integer";
            goto out;
        }
        out->limit = v > GW_LIST_MAX ? GW_LIST_MAX : (unsigned)v;
    }
out:
    if (why != NULL) {
        *why = reason;
    }
    return reason == NULL ? 0 : CM_E_BADARG;
}

int
gw_reqid_ok(const char *s)
{
    size_t n = 0;

    if (s == NULL) {
        return 0;
    }
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (n == GW_REQID_MAX) {
            return 0;
        }
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-')) {
            return 0;
        }
    }
    return n > 0;
}
