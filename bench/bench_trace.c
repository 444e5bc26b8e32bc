/*
 * bench_trace.c - the --trace CSV parser: "t,tenant,op,key,size" lines into
 * an array of requests, with each key already percent-encoded for the URL
 * path, so the load threads only copy bytes.
 *
 * Pure: the caller reads the file; the fuzz target feeds it bytes. The
 * result is immutable after parsing and shared by every load thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define HEADER "t,tenant,op,key,size"
#define NFIELDS 5

struct field {
    const char *p;
    size_t n;
};

static int
same(struct field f, const char *s)
{
    return strlen(s) == f.n && memcmp(f.p, s, f.n) == 0;
}

/* Bytes that go into a URL path as they are; everything else is %XX. */
static int
unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~' || c == '/';
}

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t ncap = *cap ? *cap : 1024;
    while (ncap < need) {
        ncap *= 2;
    }
    void *np = realloc(*p, ncap * elem);
    if (np == NULL) {
        return -ENOMEM;
    }
    *p = np;
    *cap = ncap;
    return 0;
}

static int
append_key(struct bn_trace *tr, size_t *kcap, struct field k, struct bn_trace_ent *e)
{
    static const char hex[] = "0123456789ABCDEF";

    if (grow((void **)&tr->keys, kcap, tr->keys_len + 3 * k.n, 1) != 0) {
        return -ENOMEM;
    }
    e->key = tr->keys_len;
    char *o = tr->keys + tr->keys_len;
    for (size_t i = 0; i < k.n; i++) {
        unsigned char c = (unsigned char)k.p[i];
        if (unreserved(c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    e->klen = (uint32_t)(o - (tr->keys + tr->keys_len));
    tr->keys_len += e->klen;
    return 0;
}

/* One request line split into its fields; 0 or -EINVAL with the reason. */
static int
parse_line(struct bn_trace_ent *e, const struct field *f, const struct bn_tenant *tenants,
           size_t ntenants, size_t *last_tenant, double prev_t, char *err, size_t cap)
{
    if (bn_parse_double(f[0].p, f[0].n, &e->t) != 0 || !(e->t >= 0) || e->t > BN_TRACE_TMAX) {
        bn_seterr(err, cap, "bad t (want seconds, 0..1e7)");
        return -EINVAL;
    }
    if (e->t < prev_t) {
        bn_seterr(err, cap, "t goes back in time (sort the trace by t)");
        return -EINVAL;
    }
    size_t i = *last_tenant;
    if (i >= ntenants || !same(f[1], tenants[i].name)) {
        for (i = 0; i < ntenants && !same(f[1], tenants[i].name); i++) {
        }
    }
    if (i == ntenants) {
        bn_seterr(err, cap, "tenant '%.*s' has no --tenant spec", (int)(f[1].n > 64 ? 64 : f[1].n),
                  f[1].p);
        return -EINVAL;
    }
    *last_tenant = i;
    e->tenant = (uint32_t)i;
    if (same(f[2], "GET")) {
        e->op = BN_OP_GET;
    } else if (same(f[2], "PUT")) {
        e->op = BN_OP_PUT;
    } else if (same(f[2], "DELETE")) {
        e->op = BN_OP_DELETE;
    } else {
        bn_seterr(err, cap, "bad op (want GET, PUT or DELETE)");
        return -EINVAL;
    }
    int key_ok = f[3].n >= 1 && f[3].n <= BN_TRACE_KEY_MAX;
    for (size_t j = 0; key_ok && j < f[3].n; j++) {
        unsigned char c = (unsigned char)f[3].p[j];
        key_ok = c > 0x20 && c != 0x7f && c != '"';
    }
    if (!key_ok) {
        bn_seterr(err, cap, "bad key (1..%d bytes, no blanks, controls, '\"' or ',')",
                  BN_TRACE_KEY_MAX);
        return -EINVAL;
    }
    e->size = 0;
    if (e->op == BN_OP_PUT || f[4].n > 0) {
        uint64_t sz;
        if (bn_parse_size(f[4].p, f[4].n, &sz) != 0 || sz > BN_MAX_SIZE) {
            bn_seterr(err, cap, "bad size (want bytes, at most 1GiB; required for PUT)");
            return -EINVAL;
        }
        e->size = e->op == BN_OP_PUT ? sz : 0;
    }
    return 0;
}

int
bn_trace_parse(struct bn_trace *tr, const char *buf, size_t len, const struct bn_tenant *tenants,
               size_t ntenants, char *err, size_t cap)
{
    size_t pos = 0, line = 0, ecap = 0, kcap = 0, last_tenant = 0;
    int rc = 0;

    memset(tr, 0, sizeof(*tr));
    bn_seterr(err, cap, "ok");
    while (pos < len) {
        const char *l = buf + pos;
        const char *nl = memchr(l, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - l) : len - pos;
        pos += ll + 1;
        line++;
        if (ll > 0 && l[ll - 1] == '\r') {
            ll--;
        }
        if (line == 1) {
            if (ll != strlen(HEADER) || memcmp(l, HEADER, ll) != 0) {
                bn_seterr(err, cap, "line 1: want the header '" HEADER "'");
                rc = -EINVAL;
                goto out;
            }
            continue;
        }
        if (ll == 0) {
            continue;
        }
        struct field f[NFIELDS];
        size_t nf = 0, start = 0;
        for (size_t j = 0; j <= ll; j++) {
            if (j == ll || l[j] == ',') {
                if (nf == NFIELDS) {
                    nf++;
                    break;
                }
                f[nf].p = l + start;
                f[nf].n = j - start;
                nf++;
                start = j + 1;
            }
        }
        char why[160];
        if (nf != NFIELDS) {
            bn_seterr(why, sizeof(why), "want 5 fields t,tenant,op,key,size");
            rc = -EINVAL;
        } else if (tr->n == BN_TRACE_MAX_ENTRIES) {
            bn_seterr(why, sizeof(why), "more than %u requests", BN_TRACE_MAX_ENTRIES);
            rc = -EINVAL;
        } else if (grow((void **)&tr->ent, &ecap, tr->n + 1, sizeof(*tr->ent)) != 0) {
            bn_seterr(why, sizeof(why), "out of memory");
            rc = -ENOMEM;
        } else {
            struct bn_trace_ent *e = &tr->ent[tr->n];
            rc = parse_line(e, f, tenants, ntenants, &last_tenant, tr->n ? tr->ent[tr->n - 1].t : 0,
                            why, sizeof(why));
            if (rc == 0 && append_key(tr, &kcap, f[3], e) != 0) {
                bn_seterr(why, sizeof(why), "out of memory");
                rc = -ENOMEM;
            }
        }
        if (rc != 0) {
            bn_seterr(err, cap, "line %zu: %s", line, why);
            goto out;
        }
        if (tr->ent[tr->n].size > tr->max_put) {
            tr->max_put = tr->ent[tr->n].size;
        }
        tr->n++;
    }
    if (line == 0) {
        bn_seterr(err, cap, "empty trace (want the header '" HEADER "')");
        rc = -EINVAL;
    }

out:
    if (rc != 0) {
        bn_trace_fini(tr);
    }
    return rc;
}

void
bn_trace_fini(struct bn_trace *tr)
{
    free(tr->ent);
    free(tr->keys);
    memset(tr, 0, sizeof(*tr));
}
