/*
 * cm_metrics.c - Prometheus text exposition (0.0.4) and per-tenant request
 * statistics.
 *
 * cm_reqstats keeps one entry per (tenant, op) in a chained hash table;
 * each entry holds the bytes counter, the latency histogram and a short
 * array of (code, count) pairs, since an op sees only a handful of
 * distinct codes. One mutex guards everything: a record is a hash lookup
 * and a few adds. Exposition sorts entries by (tenant, op) so scrapes are
 * stable and easy to diff; callbacks run without the lock held.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_metrics.h"

/* Bucket bounds in ns, generated from the same list as the le labels. */
#define CM_HIST_NS_(x) (uint64_t)((x)*1e9 + 0.5),
static const uint64_t hist_bound_ns[CM_HIST_NB] = {CM_HIST_BUCKETS(CM_HIST_NS_)};
#undef CM_HIST_NS_
#define CM_HIST_LE_(x) #x,
static const char *const hist_le[CM_HIST_NB] = {CM_HIST_BUCKETS(CM_HIST_LE_)};
#undef CM_HIST_LE_

void
cm_hist_observe(struct cm_hist *h, uint64_t ns)
{
    int lo = 0, hi = CM_HIST_NB;

    /* first bucket whose bound >= ns; CM_HIST_NB means only +Inf */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (hist_bound_ns[mid] >= ns) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (lo < CM_HIST_NB) {
        h->bucket[lo]++;
    }
    h->count++;
    h->sum_ns += ns;
}

void
cm_hist_merge(struct cm_hist *into, const struct cm_hist *from)
{
    int i;

    for (i = 0; i < CM_HIST_NB; i++) {
        into->bucket[i] += from->bucket[i];
    }
    into->count += from->count;
    into->sum_ns += from->sum_ns;
}

void
cm_prom_family(struct cm_buf *b, const char *name, const char *type, const char *help)
{
    cm_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
prom_name(struct cm_buf *b, const char *name, const char *labels)
{
    if (labels != NULL && labels[0] != '\0') {
        cm_buf_printf(b, "%s{%s}", name, labels);
    } else {
        cm_buf_printf(b, "%s", name);
    }
}

void
cm_prom_u64(struct cm_buf *b, const char *name, const char *labels, uint64_t v)
{
    prom_name(b, name, labels);
    cm_buf_printf(b, " %llu\n", (unsigned long long)v);
}

void
cm_prom_double(struct cm_buf *b, const char *name, const char *labels, double v)
{
    prom_name(b, name, labels);
    if (isnan(v)) {
        cm_buf_printf(b, " NaN\n");
    } else if (isinf(v)) {
        cm_buf_printf(b, " %s\n", v > 0 ? "+Inf" : "-Inf");
    } else {
        cm_buf_printf(b, " %.17g\n", v);
    }
}

void
cm_prom_hist(struct cm_buf *b, const char *name, const char *labels, const struct cm_hist *h)
{
    int has = labels != NULL && labels[0] != '\0';
    const char *sep = has ? "," : "";
    uint64_t cum = 0;
    int i;

    if (!has) {
        labels = "";
    }
    for (i = 0; i < CM_HIST_NB; i++) {
        cum += h->bucket[i];
        cm_buf_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, hist_le[i],
                      (unsigned long long)cum);
    }
    cm_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                  (unsigned long long)h->count);
    cm_buf_printf(b, "%s_sum%s%s%s %.9f\n", name, has ? "{" : "", labels, has ? "}" : "",
                  (double)h->sum_ns / 1e9);
    cm_buf_printf(b, "%s_count%s%s%s %llu\n", name, has ? "{" : "", labels, has ? "}" : "",
                  (unsigned long long)h->count);
}

/* ---- per-tenant request stats ---- */

struct rs_code {
    int code;
    uint64_t count;
};

struct rs_entry {
    struct rs_entry *next;
    uint32_t tenant;
    int op;
    uint64_t bytes;
    struct cm_hist hist;
    struct rs_code *codes;
    int ncodes, capcodes;
};

struct cm_reqstats {
    pthread_mutex_t lock;
    const char *const *ops;
    int nops;
    struct rs_entry **table;
    size_t nbuckets, nentries;
};

#define RS_INIT_BUCKETS 64

static size_t
rs_hash(uint32_t tenant, int op, size_t nbuckets)
{
    uint64_t x = ((uint64_t)tenant << 16) ^ (uint64_t)(unsigned)op;

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x & (nbuckets - 1));
}

struct cm_reqstats *
cm_reqstats_create(const char *const *ops, int nops)
{
    struct cm_reqstats *rs = cm_calloc(1, sizeof(*rs));

    pthread_mutex_init(&rs->lock, NULL);
    rs->ops = ops;
    rs->nops = nops;
    rs->nbuckets = RS_INIT_BUCKETS;
    rs->table = cm_calloc(rs->nbuckets, sizeof(*rs->table));
    return rs;
}

void
cm_reqstats_destroy(struct cm_reqstats *rs)
{
    struct rs_entry *e, *next;
    size_t i;

    if (rs == NULL) {
        return;
    }
    for (i = 0; i < rs->nbuckets; i++) {
        for (e = rs->table[i]; e != NULL; e = next) {
            next = e->next;
            free(e->codes);
            free(e);
        }
    }
    free(rs->table);
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

static void
rs_grow_locked(struct cm_reqstats *rs)
{
    size_t nb = rs->nbuckets * 2, i, h;
    struct rs_entry **t = cm_calloc(nb, sizeof(*t));
    struct rs_entry *e, *next;

    for (i = 0; i < rs->nbuckets; i++) {
        for (e = rs->table[i]; e != NULL; e = next) {
            next = e->next;
            h = rs_hash(e->tenant, e->op, nb);
            e->next = t[h];
            t[h] = e;
        }
    }
    free(rs->table);
    rs->table = t;
    rs->nbuckets = nb;
}

static struct rs_entry *
rs_get_locked(struct cm_reqstats *rs, uint32_t tenant, int op)
{
    size_t h = rs_hash(tenant, op, rs->nbuckets);
    struct rs_entry *e;

    for (e = rs->table[h]; e != NULL; e = e->next) {
        if (e->tenant == tenant && e->op == op) {
            return e;
        }
    }
    if (rs->nentries >= rs->nbuckets) {
        rs_grow_locked(rs);
        h = rs_hash(tenant, op, rs->nbuckets);
    }
    e = cm_calloc(1, sizeof(*e));
    e->tenant = tenant;
    e->op = op;
    e->next = rs->table[h];
    rs->table[h] = e;
    rs->nentries++;
    return e;
}

void
cm_reqstats_record(struct cm_reqstats *rs, uint32_t tenant, int op, int code, uint64_t bytes,
                   uint64_t ns)
{
    struct rs_entry *e;
    int i;

    if (op < 0 || op >= rs->nops) {
        return; /* a caller bug; never let it grow the label set */
    }
    pthread_mutex_lock(&rs->lock);
    e = rs_get_locked(rs, tenant, op);
    e->bytes += bytes;
    cm_hist_observe(&e->hist, ns);
    for (i = 0; i < e->ncodes; i++) {
        if (e->codes[i].code == code) {
            break;
        }
    }
    if (i == e->ncodes) {
        if (e->ncodes == e->capcodes) {
            e->capcodes = e->capcodes ? e->capcodes * 2 : 4;
            e->codes = cm_realloc(e->codes, (size_t)e->capcodes * sizeof(*e->codes));
        }
        e->codes[i].code = code;
        e->codes[i].count = 0;
        e->ncodes++;
    }
    e->codes[i].count++;
    pthread_mutex_unlock(&rs->lock);
}

static int
entry_cmp(const void *a, const void *b)
{
    const struct rs_entry *x = *(const struct rs_entry *const *)a;
    const struct rs_entry *y = *(const struct rs_entry *const *)b;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    return (x->op > y->op) - (x->op < y->op);
}

static int
code_cmp(const void *a, const void *b)
{
    const struct rs_code *x = a, *y = b;

    return (x->code > y->code) - (x->code < y->code);
}

/* Sorted snapshot of the entry pointers; entries are never freed before
 * destroy, so the pointers stay valid, but fields must be read locked. */
static struct rs_entry **
rs_sorted_locked(struct cm_reqstats *rs, size_t *n)
{
    struct rs_entry **v = cm_malloc((rs->nentries + 1) * sizeof(*v));
    struct rs_entry *e;
    size_t i, k = 0;

    for (i = 0; i < rs->nbuckets; i++) {
        for (e = rs->table[i]; e != NULL; e = e->next) {
            v[k++] = e;
        }
    }
    qsort(v, k, sizeof(*v), entry_cmp);
    *n = k;
    return v;
}

void
cm_reqstats_expose(struct cm_reqstats *rs, const char *prefix, struct cm_buf *out)
{
    char name[256], labels[256];
    struct rs_entry **v;
    size_t n, i;
    int j;

    pthread_mutex_lock(&rs->lock);
    v = rs_sorted_locked(rs, &n);

    snprintf(name, sizeof(name), "shoal_%s_requests_total", prefix);
    cm_prom_family(out, name, "counter", "Requests by tenant, operation and result code.");
    for (i = 0; i < n; i++) {
        qsort(v[i]->codes, (size_t)v[i]->ncodes, sizeof(*v[i]->codes), code_cmp);
        for (j = 0; j < v[i]->ncodes; j++) {
            snprintf(labels, sizeof(labels), "tenant=\"%u\",op=\"%s\",code=\"%d\"", v[i]->tenant,
                     rs->ops[v[i]->op], v[i]->codes[j].code);
            cm_prom_u64(out, name, labels, v[i]->codes[j].count);
        }
    }

    snprintf(name, sizeof(name), "shoal_%s_bytes_total", prefix);
    cm_prom_family(out, name, "counter", "Payload bytes by tenant and operation.");
    for (i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "tenant=\"%u\",op=\"%s\"", v[i]->tenant,
                 rs->ops[v[i]->op]);
        cm_prom_u64(out, name, labels, v[i]->bytes);
    }

    snprintf(name, sizeof(name), "shoal_%s_request_duration_seconds", prefix);
    cm_prom_family(out, name, "histogram", "Request latency by tenant and operation.");
    for (i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "tenant=\"%u\",op=\"%s\"", v[i]->tenant,
                 rs->ops[v[i]->op]);
        cm_prom_hist(out, name, labels, &v[i]->hist);
    }
    pthread_mutex_unlock(&rs->lock);
    free(v);
}

struct rs_tenant {
    uint32_t tenant;
    uint64_t requests, bytes;
};

void
cm_reqstats_tenants(struct cm_reqstats *rs,
                    void (*cb)(void *arg, uint32_t tenant, uint64_t requests, uint64_t bytes),
                    void *arg)
{
    struct rs_tenant *t;
    struct rs_entry **v;
    size_t n, i, nt = 0;
    int j;

    pthread_mutex_lock(&rs->lock);
    v = rs_sorted_locked(rs, &n);
    t = cm_calloc(n + 1, sizeof(*t));
    for (i = 0; i < n; i++) {
        if (nt == 0 || t[nt - 1].tenant != v[i]->tenant) {
            t[nt++].tenant = v[i]->tenant;
        }
        for (j = 0; j < v[i]->ncodes; j++) {
            t[nt - 1].requests += v[i]->codes[j].count;
        }
        t[nt - 1].bytes += v[i]->bytes;
    }
    pthread_mutex_unlock(&rs->lock);
    free(v);
    for (i = 0; i < nt; i++) {
        cb(arg, t[i].tenant, t[i].requests, t[i].bytes);
    }
    free(t);
}
