/*
 * bench_spec.c - parsers for shoal-bench's tenant specs, sizes and URLs.
 *
 * Pure and self-contained (no libevent, no common): the fuzz targets compile
 * it with bench_sched.c (and bench_trace.c). Inputs are (pointer, length) and
 * need no NUL.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void
bn_seterr(char *err, size_t cap, const char *fmt, ...)
{
    if (cap == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

void
bn_tenant_defaults(struct bn_tenant *t)
{
    memset(t, 0, sizeof(*t));
    t->weight = 1.0;
    t->loop = BN_LOOP_CLOSED;
    t->conc = BN_DEFAULT_CONC;
    t->conns = BN_DEFAULT_CONNS;
    t->size_min = BN_DEFAULT_SIZE;
    t->size_max = BN_DEFAULT_SIZE;
    t->read = 0.5;
    t->keys = BN_DEFAULT_KEYS;
    t->zipf = BN_DEFAULT_ZIPF;
}

int
bn_parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 20) {
        return -EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -EINVAL;
        }
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return -EINVAL;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int
bn_parse_double(const char *s, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof(buf)) {
        return -EINVAL;
    }
    /* Plain decimal only: no hex floats, inf, nan or leading blanks. */
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) {
            return -EINVAL;
        }
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end != '\0' || errno != 0 || !isfinite(v)) {
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int
bn_parse_size(const char *s, size_t len, uint64_t *out)
{
    size_t n = 0;
    while (n < len && s[n] >= '0' && s[n] <= '9') {
        n++;
    }
    uint64_t v;
    if (bn_parse_u64(s, n, &v) != 0) {
        return -EINVAL;
    }
    const char *u = s + n;
    size_t ul = len - n;
    static const struct {
        const char *sfx;
        uint64_t mul;
    } units[] = {
        {"", 1},
        {"B", 1},
        {"K", 1000ull},
        {"k", 1000ull},
        {"KB", 1000ull},
        {"kB", 1000ull},
        {"M", 1000000ull},
        {"MB", 1000000ull},
        {"G", 1000000000ull},
        {"GB", 1000000000ull},
        {"KiB", 1ull << 10},
        {"MiB", 1ull << 20},
        {"GiB", 1ull << 30},
    };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strlen(units[i].sfx) == ul && memcmp(units[i].sfx, u, ul) == 0) {
            if (v > UINT64_MAX / units[i].mul) {
                return -EINVAL;
            }
            *out = v * units[i].mul;
            return 0;
        }
    }
    return -EINVAL;
}

int
bn_workload_read(const char *name, double *read)
{
    if (name[0] != '\0' && name[1] == '\0') {
        switch (tolower((unsigned char)name[0])) {
        case 'a':
            *read = 0.5;
            return 0;
        case 'b':
            *read = 0.95;
            return 0;
        case 'c':
            *read = 1.0;
            return 0;
        default:
            break;
        }
    }
    return -EINVAL;
}

static int
valid_name(const char *s, size_t len)
{
    if (len == 0 || len > 63) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* A bearer token goes verbatim into a header line: visible ASCII only. */
static int
valid_key(const char *s, size_t len)
{
    if (len == 0 || len >= BN_KEY_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

static int
field_is(const char *k, size_t kl, const char *want)
{
    return strlen(want) == kl && memcmp(k, want, kl) == 0;
}

static int
parse_field(struct bn_tenant *t, const char *k, size_t kl, const char *v, size_t vl, unsigned *seen,
            char *err, size_t cap)
{
    uint64_t u;
    double d;
    const char *dash;

    if (field_is(k, kl, "name")) {
        if (!valid_name(v, vl)) {
            bn_seterr(err, cap, "bad tenant name (want [a-z0-9][a-z0-9-]{0,62})");
            return -EINVAL;
        }
        memcpy(t->name, v, vl);
        t->name[vl] = '\0';
        *seen |= 1u << 0;
    } else if (field_is(k, kl, "key")) {
        if (!valid_key(v, vl)) {
            bn_seterr(err, cap, "bad key (visible ASCII, 1..%d bytes)", BN_KEY_MAX - 1);
            return -EINVAL;
        }
        memcpy(t->key, v, vl);
        t->key[vl] = '\0';
        *seen |= 1u << 1;
    } else if (field_is(k, kl, "weight")) {
        if (bn_parse_double(v, vl, &d) != 0 || !(d > 0) || d > 10000) {
            bn_seterr(err, cap, "bad weight (want 0 < w <= 10000)");
            return -EINVAL;
        }
        t->weight = d;
    } else if (field_is(k, kl, "conc") || field_is(k, kl, "rate")) {
        int open = k[0] == 'r';
        if (*seen & (3u << 2)) {
            bn_seterr(err, cap, "conc and rate are exclusive");
            return -EINVAL;
        }
        t->sched.kind = BN_SCHED_NONE;
        if (memchr(v, ':', vl) != NULL) {
            if (bn_sched_parse(&t->sched, v, vl, err, cap) != 0) {
                return -EINVAL;
            }
            d = bn_sched_max(&t->sched);
            if (!open && d >= 100000.5) {
                bn_seterr(err, cap, "bad conc schedule (want values 0..100000)");
                return -EINVAL;
            }
            if (!open && d < 0.5) {
                bn_seterr(err, cap, "bad conc schedule (its peak rounds to 0)");
                return -EINVAL;
            }
        } else if (open ? (bn_parse_double(v, vl, &d) != 0 || !(d > 0) || d > BN_SCHED_VMAX)
                        : (bn_parse_u64(v, vl, &u) != 0 || u < 1 || u > 100000)) {
            bn_seterr(err, cap,
                      open ? "bad rate (want 0 < r <= 1e8 requests/s, or a schedule)"
                           : "bad conc (want 1..100000, or a schedule)");
            return -EINVAL;
        } else if (!open) {
            d = (double)u;
        }
        t->loop = open ? BN_LOOP_OPEN : BN_LOOP_CLOSED;
        if (open) {
            t->rate = d;
        } else {
            t->conc = (unsigned)lround(d);
        }
        t->set |= BN_SET_LOOP;
        *seen |= open ? 1u << 3 : 1u << 2;
    } else if (field_is(k, kl, "conns")) {
        if (bn_parse_u64(v, vl, &u) != 0 || u < 1 || u > 100000) {
            bn_seterr(err, cap, "bad conns (want 1..100000)");
            return -EINVAL;
        }
        t->conns = (unsigned)u;
    } else if (field_is(k, kl, "size")) {
        dash = memchr(v, '-', vl);
        uint64_t lo, hi;
        if (dash == NULL) {
            if (bn_parse_size(v, vl, &lo) != 0) {
                goto badsize;
            }
            hi = lo;
        } else if (bn_parse_size(v, (size_t)(dash - v), &lo) != 0 ||
                   bn_parse_size(dash + 1, vl - (size_t)(dash - v) - 1, &hi) != 0) {
            goto badsize;
        }
        if (lo > hi || hi > BN_MAX_SIZE) {
            goto badsize;
        }
        t->size_min = lo;
        t->size_max = hi;
    } else if (field_is(k, kl, "read")) {
        if (bn_parse_double(v, vl, &d) != 0 || !(d >= 0 && d <= 1)) {
            bn_seterr(err, cap, "bad read fraction (want 0..1)");
            return -EINVAL;
        }
        t->read = d;
        t->set |= BN_SET_READ;
    } else if (field_is(k, kl, "keys")) {
        if (bn_parse_u64(v, vl, &u) != 0 || u < 1 || u > 1000000000ull) {
            bn_seterr(err, cap, "bad keys (want 1..1e9)");
            return -EINVAL;
        }
        t->keys = u;
    } else if (field_is(k, kl, "zipf")) {
        if (bn_parse_double(v, vl, &d) != 0 || !(d >= 0 && d < 1)) {
            bn_seterr(err, cap, "bad zipf theta (want 0 <= theta < 1; 0 = uniform)");
            return -EINVAL;
        }
        t->zipf = d;
        t->set |= BN_SET_ZIPF;
    } else {
        bn_seterr(err, cap, "unknown tenant field '%.*s'%s", (int)(kl > 32 ? 32 : kl), k,
                  k[0] >= '0' && k[0] <= '9' ? " (a schedule's items are split by '/')" : "");
        return -EINVAL;
    }
    return 0;

badsize:
    bn_seterr(err, cap, "bad size (want S or S-S, e.g. 1KiB-64KiB, at most 1GiB)");
    return -EINVAL;
}

int
bn_tenant_parse(struct bn_tenant *t, const char *s, size_t len, char *err, size_t cap)
{
    unsigned seen = 0;
    size_t pos = 0;

    bn_seterr(err, cap, "ok");
    if (len == 0) {
        bn_seterr(err, cap, "empty tenant spec");
        return -EINVAL;
    }
    while (pos <= len) {
        const char *f = s + pos;
        const char *comma = memchr(f, ',', len - pos);
        size_t fl = comma ? (size_t)(comma - f) : len - pos;
        const char *eq = memchr(f, '=', fl);
        if (eq == NULL || eq == f) {
            bn_seterr(err, cap, "want field=value, got '%.*s'", (int)(fl > 32 ? 32 : fl), f);
            return -EINVAL;
        }
        size_t kl = (size_t)(eq - f);
        int rc = parse_field(t, f, kl, eq + 1, fl - kl - 1, &seen, err, cap);
        if (rc != 0) {
            return rc;
        }
        pos += fl + 1;
    }
    if (!(seen & 1u)) {
        bn_seterr(err, cap, "tenant spec needs name=");
        return -EINVAL;
    }
    if (!(seen & 2u)) {
        bn_seterr(err, cap, "tenant spec needs key=");
        return -EINVAL;
    }
    return 0;
}

int
bn_parse_url(const char *url, char *host, size_t cap, uint16_t *port, char *path, size_t pcap)
{
    static const char scheme[] = "http://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
        return -EINVAL;
    }
    const char *h = url + sizeof(scheme) - 1;
    const char *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hl);
    size_t namel = colon ? (size_t)(colon - h) : hl;
    uint64_t p = 80;
    if (colon != NULL && (bn_parse_u64(colon + 1, hl - namel - 1, &p) != 0 || p < 1 || p > 65535)) {
        return -EINVAL;
    }
    if (namel == 0 || namel >= cap) {
        return -EINVAL;
    }
    for (size_t i = 0; i < namel; i++) {
        char c = h[i];
        if (!((c >= '0' && c <= '9') || c == '.' || (c >= 'a' && c <= 'z'))) {
            return -EINVAL;
        }
    }
    const char *pth = slash ? slash : "/";
    size_t pl = strlen(pth);
    if (pl >= pcap) {
        return -EINVAL;
    }
    for (size_t i = 0; i < pl; i++) {
        unsigned char c = (unsigned char)pth[i];
        if (c <= 0x20 || c >= 0x7f) {
            return -EINVAL;
        }
    }
    memcpy(host, h, namel);
    host[namel] = '\0';
    memcpy(path, pth, pl + 1);
    *port = (uint16_t)p;
    return 0;
}
