/*
 * ctl_pp.c - placement rows, gateway demand and the re-placement loop (see
 * ctl_pp.h).
 *
 * The loop thread wakes every interval (or at once for a rebalance): it
 * takes a state snapshot, syncs the rows with it, copies the rows and the
 * summed demand under the mutex, then builds a pol_pp view and measures the
 * current fair-share utilisation with no lock held. When the trigger says
 * so (or a rebalance asked), the policy runs, still with no lock held; its
 * rows are committed only for partitions whose row did not change
 * meanwhile, in one store transaction with the new epoch.
 *
 * Naming: do_x() expects pp->mu held; x() takes it.
 */
#include "ctl_pp.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "ctl_place.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define MAX_PARTS 65536u
#define REBALANCE_SLACK_MS 10000u

struct pp_gw {
    char name[CTL_PP_GW_MAX + 1];
    uint64_t seen_ns;
    size_t n;
    struct ctl_pp_demand *d; /* sorted by (tenant, partition) */
    struct ctl_pp_mig mig;
};

struct ctl_pp {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* the loop: stop, a rebalance asked */
    pthread_cond_t done_cv;  /* a rebalance answered */
    struct ctl_store *store; /* borrowed */
    struct ctl_state *st;    /* borrowed */
    struct ctl_pp_cfg cfg;
    struct ctl_pp_trig_cfg tcfg;
    const struct pol_pp_ops *ops;
    struct pol_pp *pol; /* the loop thread's alone */
    uint64_t epoch;
    char solver[CTL_PP_NAME_MAX];
    size_t nt;
    struct ctl_pp_trows *t; /* tenant id order */
    uint64_t synced;        /* newest state epoch a sync applied */
    size_t ngw;
    struct pp_gw *gw;
    struct ctl_pp_trig trig;
    double max_util;
    uint64_t replacements, nchecks;
    double last_solve_ms;
    uint64_t last_moved_bytes, last_parts_moved;
    uint64_t asked, answered; /* rebalance requests */
    struct ctl_pp_result answer;
    int stop, started;
    pthread_t thread;
};

/* ---- records ---- */

void
ctl_pp_trows_fini(struct ctl_pp_trows *r)
{
    if (r == NULL) {
        return;
    }
    free(r->len);
    free(r->ids);
    free(r->row_epoch);
    free(r->by_hash);
    free(r->share);
    memset(r, 0, sizeof(*r));
}

static void
trows_alloc(struct ctl_pp_trows *r, uint32_t tenant, uint32_t width, uint32_t k, uint32_t parts)
{
    memset(r, 0, sizeof(*r));
    r->tenant = tenant;
    r->width = width;
    r->k = k;
    r->parts = parts;
    r->len = cm_calloc(parts, sizeof(*r->len));
    r->ids = cm_calloc((size_t)parts * width, sizeof(*r->ids));
    r->row_epoch = cm_calloc(parts, sizeof(*r->row_epoch));
    r->by_hash = cm_calloc(parts, sizeof(*r->by_hash));
    r->share = cm_calloc((size_t)parts * width, sizeof(*r->share));
}

/* Row p's holders carry even shares. */
static void
even_shares(struct ctl_pp_trows *r, uint32_t p)
{
    for (uint32_t i = 0; i < r->width; i++) {
        r->share[(size_t)p * r->width + i] = i < r->len[p] ? 1.0 / r->len[p] : 0.0;
    }
}

static void
trows_copy(struct ctl_pp_trows *dst, const struct ctl_pp_trows *src)
{
    trows_alloc(dst, src->tenant, src->width, src->k, src->parts);
    memcpy(dst->len, src->len, src->parts * sizeof(*src->len));
    memcpy(dst->ids, src->ids, (size_t)src->parts * src->width * sizeof(*src->ids));
    memcpy(dst->row_epoch, src->row_epoch, src->parts * sizeof(*src->row_epoch));
    memcpy(dst->by_hash, src->by_hash, src->parts * sizeof(*src->by_hash));
    memcpy(dst->share, src->share, (size_t)src->parts * src->width * sizeof(*src->share));
    dst->seen = src->seen;
}

char *
ctl_pp_encode(const struct ctl_pp_trows *r, size_t *len)
{
    json_t *rows = json_array(), *ep = json_array(), *bh = json_array(), *sh = json_array(), *j;
    char *text;

    for (uint32_t p = 0; p < r->parts; p++) {
        json_t *row = json_array(), *srow = json_array();

        for (uint32_t i = 0; i < r->len[p]; i++) {
            json_array_append_new(row, json_integer(r->ids[(size_t)p * r->width + i]));
            json_array_append_new(srow, json_real(r->share[(size_t)p * r->width + i]));
        }
        json_array_append_new(rows, row);
        json_array_append_new(sh, srow);
        json_array_append_new(ep, json_integer((json_int_t)r->row_epoch[p]));
        json_array_append_new(bh, json_integer(r->by_hash[p]));
    }
    j = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "width", (json_int_t)r->width, "k",
                  (json_int_t)r->k, "rows", rows, "row_epochs", ep, "by_hash", bh, "shares", sh);
    text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text != NULL) {
        *len = strlen(text);
    }
    return text;
}

/* 0 with *v from a JSON integer in [lo, hi], else -1. */
static int
json_range(json_t *x, uint64_t lo, uint64_t hi, uint64_t *v)
{
    if (!json_is_integer(x) || json_integer_value(x) < 0 || (uint64_t)json_integer_value(x) < lo ||
        (uint64_t)json_integer_value(x) > hi) {
        return -1;
    }
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

/* Row p's shares from srow when they are well formed (each in [0, 1], one
 * per holder, summing to 1); even ones stay otherwise. */
static void
shares_from(struct ctl_pp_trows *r, uint32_t p, json_t *srow)
{
    double s[POL_PP_MAX_WIDTH], sum = 0;
    size_t i;
    json_t *x;

    if (!json_is_array(srow) || json_array_size(srow) != r->len[p]) {
        return;
    }
    json_array_foreach(srow, i, x)
    {
        s[i] = json_number_value(x);
        if (!json_is_number(x) || !(s[i] >= 0 && s[i] <= 1)) {
            return;
        }
        sum += s[i];
    }
    if (fabs(sum - 1.0) <= 1e-6) {
        memcpy(&r->share[(size_t)p * r->width], s, r->len[p] * sizeof(*s));
    }
}

int
ctl_pp_decode(uint32_t tenant, const char *text, size_t len, struct ctl_pp_trows *r)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *rows, *ep, *bh, *row, *x;
    uint64_t width, k, v;
    size_t p, i, parts;
    int rc = CM_E_CONFIG;

    memset(r, 0, sizeof(*r));
    rows = json_object_get(j, "rows");
    ep = json_object_get(j, "row_epochs");
    bh = json_object_get(j, "by_hash");
    parts = json_array_size(rows);
    if (!json_is_object(j) ||
        json_range(json_object_get(j, "width"), 1, POL_PP_MAX_WIDTH, &width) < 0 ||
        json_range(json_object_get(j, "k"), 1, width, &k) < 0 || !json_is_array(rows) ||
        parts == 0 || parts > MAX_PARTS || json_array_size(ep) != parts ||
        json_array_size(bh) != parts || !json_is_array(ep) || !json_is_array(bh)) {
        goto out;
    }
    trows_alloc(r, tenant, (uint32_t)width, (uint32_t)k, (uint32_t)parts);
    json_array_foreach(rows, p, row)
    {
        if (!json_is_array(row) || json_array_size(row) > width ||
            json_range(json_array_get(ep, p), 0, UINT64_MAX >> 1, &r->row_epoch[p]) < 0 ||
            json_range(json_array_get(bh, p), 0, 1, &v) < 0) {
            goto out;
        }
        r->by_hash[p] = (uint8_t)v;
        json_array_foreach(row, i, x)
        {
            uint32_t *ids = &r->ids[p * width];

            if (json_range(x, 0, UINT32_MAX - 1, &v) < 0) {
                goto out;
            }
            for (size_t q = 0; q < i; q++) {
                if (ids[q] == v) {
                    goto out; /* a node twice in one row */
                }
            }
            ids[i] = (uint32_t)v;
        }
        r->len[p] = (uint32_t)json_array_size(row);
        even_shares(r, p);
        shares_from(r, p, json_array_get(json_object_get(j, "shares"), p));
    }
    rc = 0;
out:
    json_decref(j);
    if (rc != 0) {
        ctl_pp_trows_fini(r);
    }
    return rc;
}

/* ---- pure parts ---- */

int
ctl_pp_trig_step(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, double max_util,
                 int migrating, uint64_t now_ms)
{
    if (migrating) {
        t->over = 0;
        if (t->quiet_until_ms < now_ms + c->cooldown_ms) {
            t->quiet_until_ms = now_ms + c->cooldown_ms;
        }
        return 0;
    }
    if (now_ms < t->quiet_until_ms) {
        t->over = 0;
        return 0;
    }
    t->over = max_util > c->headroom ? t->over + 1 : 0;
    if (t->over >= (c->checks > 0 ? c->checks : 1)) {
        t->over = 0;
        return 1;
    }
    return 0;
}

void
ctl_pp_trig_tried(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, uint64_t now_ms)
{
    t->over = 0;
    t->quiet_until_ms = now_ms + c->cooldown_ms;
}

static long
node_index(const struct pol_pp_view *v, uint32_t id)
{
    for (size_t n = 0; n < v->nnodes; n++) {
        if (v->nodes[n].id == id) {
            return (long)n;
        }
    }
    return -1;
}

int
ctl_pp_util(const struct pol_pp_view *v, double *max_util)
{
    double *frac, *load;
    size_t off = 0;
    int rc;

    *max_util = 0;
    if (v->cur_rows == NULL || v->nnodes == 0) {
        return 0;
    }
    frac = cm_calloc(v->ntenants + 1, sizeof(*frac));
    rc = pol_pp_drf(v, frac);
    if (rc != 0) {
        free(frac);
        return rc;
    }
    load = cm_calloc(v->nnodes * POL_PP_NRES, sizeof(*load));
    for (size_t p = 0; p < v->nparts; p++) {
        const struct pol_pp_part *pt = &v->parts[p];
        long hold[POL_PP_MAX_WIDTH];
        size_t c = 0, ti = 0;

        while (ti < v->ntenants && v->tenants[ti].id != pt->tenant) {
            ti++;
        }
        for (uint32_t i = 0; i < v->cur_len[p] && i < pt->width; i++) {
            long n = node_index(v, v->cur_rows[off + i]);
            int dup = 0;

            for (size_t q = 0; q < c; q++) {
                dup |= hold[q] == n;
            }
            if (n >= 0 && v->nodes[n].up && !dup) {
                hold[c++] = n;
            }
        }
        off += pt->width;
        if (c == 0 || ti == v->ntenants) {
            continue;
        }
        /* Published shares count for a copies row whose holders all stay. */
        int whole = v->cur_share != NULL && pt->k == 1 && c == v->cur_len[p];
        for (size_t q = 0; q < c; q++) {
            double sh = whole ? v->cur_share[off - pt->width + q] : 1.0 / (double)c;

            for (int r = 0; r < POL_PP_NRES; r++) {
                load[(size_t)hold[q] * POL_PP_NRES + r] += pt->demand[r] * frac[ti] * sh;
            }
        }
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        for (int r = 0; r < POL_PP_NRES && v->nodes[n].up; r++) {
            double u = load[n * POL_PP_NRES + r] / v->nodes[n].cap[r];

            *max_util = fmax(*max_util, u);
        }
    }
    free(load);
    free(frac);
    return 0;
}

void
ctl_pp_demand_eff(const struct ctl_pp_demand *d, uint32_t latency_ms, double *req, double *bytes)
{
    double backlog = latency_ms > 0 ? d->inflight * 1000.0 / latency_ms : 0;

    *req = d->req;
    *bytes = d->bytes;
    if (backlog > d->req) {
        *bytes = d->req > 0 ? d->bytes * backlog / d->req : 0;
        *req = backlog;
    }
}

int
ctl_pp_accept(double util_before, const struct pol_pp_stats *after, double headroom)
{
    double a = fmax(after->max_util[POL_PP_REQ], after->max_util[POL_PP_BYTES]);

    if (after->parts_moved == 0 || util_before <= headroom) {
        return 0;
    }
    return a <= headroom || a < util_before - 0.05;
}

/* ---- rows ---- */

static struct ctl_pp_trows *
do_find(struct ctl_pp *pp, uint32_t tenant)
{
    size_t lo = 0, hi = pp->nt;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (pp->t[mid].tenant == tenant) {
            return &pp->t[mid];
        }
        if (pp->t[mid].tenant < tenant) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Replaces or inserts r (transferred) in tenant order. */
static void
do_put(struct ctl_pp *pp, struct ctl_pp_trows *r)
{
    struct ctl_pp_trows *cur = do_find(pp, r->tenant);
    size_t i = 0;

    if (cur != NULL) {
        ctl_pp_trows_fini(cur);
        *cur = *r;
        return;
    }
    while (i < pp->nt && pp->t[i].tenant < r->tenant) {
        i++;
    }
    pp->t = cm_realloc(pp->t, (pp->nt + 1) * sizeof(*pp->t));
    memmove(&pp->t[i + 1], &pp->t[i], (pp->nt - i) * sizeof(*pp->t));
    pp->t[i] = *r;
    pp->nt++;
}

static void
do_drop(struct ctl_pp *pp, uint32_t tenant)
{
    struct ctl_pp_trows *cur = do_find(pp, tenant);
    size_t i;

    if (cur == NULL) {
        return;
    }
    i = (size_t)(cur - pp->t);
    ctl_pp_trows_fini(cur);
    memmove(cur, cur + 1, (pp->nt - i - 1) * sizeof(*cur));
    pp->nt--;
}

/* Writes puts[nput] (their row epochs already set) and the drops with
 * epoch + 1, then applies them (puts transferred on success, freed on
 * failure). 0 or the store's error. */
static int
do_write(struct ctl_pp *pp, struct ctl_pp_trows *puts, size_t nput, const uint32_t *drops,
         size_t ndrop, const char *solver)
{
    struct ctl_store_prec *recs = cm_calloc(nput + ndrop + 1, sizeof(*recs));
    char **texts = cm_calloc(nput + 1, sizeof(*texts));
    int rc = 0;

    for (size_t i = 0; i < nput && rc == 0; i++) {
        texts[i] = ctl_pp_encode(&puts[i], &recs[i].len);
        recs[i].tenant = puts[i].tenant;
        recs[i].text = texts[i];
        rc = texts[i] == NULL ? -ENOMEM : 0;
    }
    for (size_t i = 0; i < ndrop; i++) {
        recs[nput + i].tenant = drops[i];
    }
    if (rc == 0) {
        rc = ctl_store_put_placement(pp->store, recs, nput + ndrop, pp->epoch + 1, solver);
    }
    for (size_t i = 0; i < nput; i++) {
        free(texts[i]);
        if (rc == 0) {
            do_put(pp, &puts[i]);
        } else {
            ctl_pp_trows_fini(&puts[i]);
        }
    }
    free(texts);
    free(recs);
    if (rc < 0) {
        CM_ERROR("placement not stored err=%s", cm_strerror(rc));
        return rc;
    }
    for (size_t i = 0; i < ndrop; i++) {
        do_drop(pp, drops[i]);
    }
    pp->epoch++;
    snprintf(pp->solver, sizeof(pp->solver), "%s", solver);
    return 0;
}

/* The hash row of (tenant, p) over ids into r's row p; 1 if it changed. */
static int
hash_row(struct ctl_pp_trows *r, uint32_t p, const uint32_t *ids, size_t nids)
{
    uint32_t row[POL_PP_MAX_WIDTH];
    size_t n = ctl_place_row(r->tenant, p, ids, nids, r->width, row);
    uint32_t *dst = &r->ids[(size_t)p * r->width];

    if (n == r->len[p] && memcmp(dst, row, n * sizeof(*row)) == 0) {
        return 0;
    }
    memcpy(dst, row, n * sizeof(*row));
    r->len[p] = (uint32_t)n;
    even_shares(r, p);
    return 1;
}

static int
do_sync(struct ctl_pp *pp, const struct ctl_snapshot *s)
{
    uint32_t *ids = cm_calloc(s->nnodes + 1, sizeof(*ids));
    struct ctl_pp_trows *puts = cm_calloc(s->ntenants + 1, sizeof(*puts));
    uint32_t *drops = cm_calloc(pp->nt + 1, sizeof(*drops));
    size_t nput = 0, ndrop = 0;
    int rc = 0;

    if (s->epoch < pp->synced) {
        goto out; /* an older snapshot than one already applied */
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        ids[i] = s->nodes[i].n.id;
    }
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        uint32_t width = (uint32_t)(t->ec_k + t->ec_m);
        struct ctl_pp_trows *cur = do_find(pp, t->id), *r = &puts[nput];
        int changed = 0;

        if (width > POL_PP_MAX_WIDTH) {
            continue;
        }
        if (cur != NULL) {
            cur->seen = s->epoch > cur->seen ? s->epoch : cur->seen;
            for (uint32_t p = 0; p < cur->parts && !changed; p++) {
                changed = cur->by_hash[p] && cur->len[p] < width && s->nnodes > cur->len[p];
            }
            if (!changed) {
                continue;
            }
            trows_copy(r, cur);
            changed = 0;
            for (uint32_t p = 0; p < r->parts; p++) {
                if (r->by_hash[p] && r->len[p] < width && s->nnodes > r->len[p] &&
                    hash_row(r, p, ids, s->nnodes)) {
                    r->row_epoch[p] = pp->epoch + 1;
                    changed = 1;
                }
            }
        } else {
            trows_alloc(r, t->id, width, (uint32_t)t->ec_k, pp->cfg.partitions);
            r->seen = s->epoch;
            for (uint32_t p = 0; p < r->parts; p++) {
                hash_row(r, p, ids, s->nnodes);
                r->row_epoch[p] = pp->epoch + 1;
                r->by_hash[p] = 1;
            }
            changed = 1;
            CM_INFO("placement rows made tenant=%u partitions=%u width=%u nodes=%zu", t->id,
                    r->parts, width, s->nnodes);
        }
        if (changed) {
            nput++;
        } else {
            ctl_pp_trows_fini(r);
        }
    }
    for (size_t i = 0; i < pp->nt; i++) {
        const struct ctl_pp_trows *r = &pp->t[i];
        int present = 0;

        for (size_t j = 0; j < s->ntenants && !present; j++) {
            present = s->tenants[j].t.id == r->tenant;
        }
        if (!present && r->seen < s->epoch) {
            drops[ndrop++] = r->tenant;
        }
    }
    if (nput + ndrop > 0) {
        rc = do_write(pp, puts, nput, drops, ndrop, pp->solver);
        if (rc == 0) {
            CM_INFO("placement synced tenants_changed=%zu tenants_dropped=%zu epoch=%llu", nput,
                    ndrop, (unsigned long long)pp->epoch);
        }
    }
    if (rc == 0) {
        pp->synced = s->epoch;
    }
out:
    free(ids);
    free(puts);
    free(drops);
    return rc;
}

/* Copies the rows of s's tenants; a tenant without stored rows (s is older
 * than a sync that dropped it) gets hash rows made on the spot. */
static void
do_copy(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out)
{
    uint32_t *ids = cm_calloc(s->nnodes + 1, sizeof(*ids));

    for (size_t i = 0; i < s->nnodes; i++) {
        ids[i] = s->nodes[i].n.id;
    }
    memset(out, 0, sizeof(*out));
    out->epoch = pp->epoch;
    snprintf(out->solver, sizeof(out->solver), "%s", pp->solver);
    out->t = cm_calloc(s->ntenants + 1, sizeof(*out->t));
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        const struct ctl_pp_trows *cur = do_find(pp, t->id);
        struct ctl_pp_trows *r = &out->t[out->n];
        uint32_t width = (uint32_t)(t->ec_k + t->ec_m);

        if (cur != NULL) {
            trows_copy(r, cur);
        } else if (width <= POL_PP_MAX_WIDTH) {
            trows_alloc(r, t->id, width, (uint32_t)t->ec_k, pp->cfg.partitions);
            for (uint32_t p = 0; p < r->parts; p++) {
                hash_row(r, p, ids, s->nnodes);
                r->by_hash[p] = 1;
            }
        } else {
            continue;
        }
        out->n++;
    }
    free(ids);
}

int
ctl_pp_rows(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out)
{
    int rc;

    pthread_mutex_lock(&pp->mu);
    rc = do_sync(pp, s);
    do_copy(pp, s, out);
    pthread_mutex_unlock(&pp->mu);
    return rc;
}

void
ctl_pp_rows_fini(struct ctl_pp_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        ctl_pp_trows_fini(&r->t[i]);
    }
    free(r->t);
    memset(r, 0, sizeof(*r));
}

/* ---- gateway reports ---- */

static int
cmp_demand(const void *a, const void *b)
{
    const struct ctl_pp_demand *x = a, *y = b;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

int
ctl_pp_report(struct ctl_pp *pp, const struct ctl_pp_report *r, uint64_t now_ns)
{
    struct pp_gw *g = NULL;
    size_t nlen = r->gateway != NULL ? strlen(r->gateway) : 0;

    if (nlen == 0 || nlen > CTL_PP_GW_MAX) {
        return CM_E_BADARG;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (!(r->d[i].req >= 0) || !(r->d[i].bytes >= 0) || !(r->d[i].inflight >= 0) ||
            !isfinite(r->d[i].req) || !isfinite(r->d[i].bytes) || !isfinite(r->d[i].inflight)) {
            return CM_E_BADARG;
        }
    }
    pthread_mutex_lock(&pp->mu);
    for (size_t i = 0; i < pp->ngw; i++) {
        if (strcmp(pp->gw[i].name, r->gateway) == 0) {
            g = &pp->gw[i];
        }
    }
    if (g == NULL) {
        pp->gw = cm_realloc(pp->gw, (pp->ngw + 1) * sizeof(*pp->gw));
        g = &pp->gw[pp->ngw++];
        memset(g, 0, sizeof(*g));
        memcpy(g->name, r->gateway, nlen);
        CM_INFO("gateway reports demand gateway=%s", g->name);
    }
    free(g->d);
    g->d = cm_calloc(r->n + 1, sizeof(*g->d));
    memcpy(g->d, r->d, r->n * sizeof(*g->d));
    g->n = r->n;
    qsort(g->d, g->n, sizeof(*g->d), cmp_demand);
    g->mig = r->mig;
    g->seen_ns = now_ns;
    pthread_mutex_unlock(&pp->mu);
    return 0;
}

static int
do_fresh(const struct ctl_pp *pp, const struct pp_gw *g, uint64_t now_ns)
{
    return now_ns - g->seen_ns <= (uint64_t)pp->cfg.gw_timeout_ms * 1000000u;
}

/* The fresh gateways' demand summed per (tenant, partition), sorted. */
static struct ctl_pp_demand *
do_demand(const struct ctl_pp *pp, uint64_t now_ns, size_t *n)
{
    struct ctl_pp_demand *all;
    size_t total = 0, k = 0;

    for (size_t i = 0; i < pp->ngw; i++) {
        total += do_fresh(pp, &pp->gw[i], now_ns) ? pp->gw[i].n : 0;
    }
    all = cm_calloc(total + 1, sizeof(*all));
    for (size_t i = 0; i < pp->ngw; i++) {
        if (do_fresh(pp, &pp->gw[i], now_ns)) {
            memcpy(&all[k], pp->gw[i].d, pp->gw[i].n * sizeof(*all));
            k += pp->gw[i].n;
        }
    }
    qsort(all, total, sizeof(*all), cmp_demand);
    k = 0;
    for (size_t i = 0; i < total; i++) {
        if (k > 0 && cmp_demand(&all[k - 1], &all[i]) == 0) {
            all[k - 1].req += all[i].req;
            all[k - 1].bytes += all[i].bytes;
            all[k - 1].resident_bytes += all[i].resident_bytes;
            all[k - 1].inflight += all[i].inflight;
        } else {
            all[k++] = all[i];
        }
    }
    *n = k;
    return all;
}

/* Rows changed after placement epoch e. */
static uint64_t
do_rows_since(const struct ctl_pp *pp, uint64_t e)
{
    uint64_t n = 0;

    for (size_t i = 0; i < pp->nt; i++) {
        for (uint32_t p = 0; p < pp->t[i].parts; p++) {
            n += pp->t[i].row_epoch[p] > e;
        }
    }
    return n;
}

/* Migration over the fresh gateways. A gateway that has not finished the
 * current epoch counts at least the partitions changed since the epoch it
 * finished (it may not even have seen the new rows yet). */
static void
do_migration(const struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out)
{
    for (size_t i = 0; i < pp->ngw; i++) {
        const struct pp_gw *g = &pp->gw[i];
        uint64_t moving = g->mig.moving_partitions;

        if (!do_fresh(pp, g, now_ns)) {
            continue;
        }
        out->gateways++;
        if (g->mig.done_epoch < pp->epoch) {
            uint64_t since = do_rows_since(pp, g->mig.done_epoch);

            out->migrating = 1;
            moving = moving > since ? moving : since;
        }
        out->migrating |= moving > 0;
        out->moving_partitions += moving;
        out->bytes_to_move += g->mig.bytes_to_move;
        out->bytes_moved += g->mig.bytes_moved;
        out->bytes_moved_total += g->mig.bytes_moved_total;
    }
}

void
ctl_pp_status(struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&pp->mu);
    out->epoch = pp->epoch;
    snprintf(out->policy, sizeof(out->policy), "%s", pp->ops->name);
    snprintf(out->solver, sizeof(out->solver), "%s", pp->solver);
    do_migration(pp, now_ns, out);
    out->max_util = pp->max_util;
    out->over_checks = pp->trig.over;
    out->replacements = pp->replacements;
    out->checks = pp->nchecks;
    out->last_solve_ms = pp->last_solve_ms;
    out->last_moved_bytes = pp->last_moved_bytes;
    out->last_parts_moved = pp->last_parts_moved;
    for (size_t i = 0; i < pp->ngw; i++) {
        if (do_fresh(pp, &pp->gw[i], now_ns)) {
            for (size_t j = 0; j < pp->gw[i].n; j++) {
                double rq, by;

                ctl_pp_demand_eff(&pp->gw[i].d[j], pp->cfg.latency_ms, &rq, &by);
                out->demand_req += rq;
                out->demand_bytes += by;
            }
        }
    }
    pthread_mutex_unlock(&pp->mu);
}

/* ---- the loop ---- */

/* What one check works on, copied under the mutex. */
struct pp_check {
    struct ctl_snapshot s;
    struct ctl_pp_rows rows;
    struct ctl_pp_demand *dem;
    size_t ndem;
    int migrating;
    /* the view */
    struct pol_pp_node *nodes;
    struct pol_pp_tenant *tenants;
    struct pol_pp_part *parts;
    uint32_t *cur, *cur_len;
    double *cur_share;
    struct pol_pp_view v;
};

static void
check_fini(struct pp_check *c)
{
    ctl_snapshot_fini(&c->s);
    ctl_pp_rows_fini(&c->rows);
    free(c->dem);
    free(c->nodes);
    free(c->tenants);
    free(c->parts);
    free(c->cur);
    free(c->cur_len);
    free(c->cur_share);
}

static const struct ctl_pp_demand *
find_demand(const struct pp_check *c, uint32_t tenant, uint32_t p)
{
    struct ctl_pp_demand key = {.tenant = tenant, .partition = p};

    return c->ndem ? bsearch(&key, c->dem, c->ndem, sizeof(key), cmp_demand) : NULL;
}

static void
check_view(struct ctl_pp *pp, struct pp_check *c)
{
    size_t nparts = 0, slots = 0, k = 0, off = 0;

    c->nodes = cm_calloc(c->s.nnodes + 1, sizeof(*c->nodes));
    for (size_t i = 0; i < c->s.nnodes; i++) {
        const struct ctl_node_view *nv = &c->s.nodes[i];
        struct pol_pp_node *n = &c->nodes[i];

        n->id = nv->n.id;
        n->up = nv->up;
        n->cap[POL_PP_REQ] = nv->cap_ops > 0 ? nv->cap_ops : pp->cfg.nominal_ops;
        n->cap[POL_PP_BYTES] = nv->cap_bytes > 0 ? nv->cap_bytes : pp->cfg.nominal_bytes;
    }
    c->tenants = cm_calloc(c->s.ntenants + 1, sizeof(*c->tenants));
    for (size_t i = 0; i < c->s.ntenants; i++) {
        c->tenants[i].id = c->s.tenants[i].t.id;
        c->tenants[i].weight = c->s.tenants[i].t.weight;
    }
    for (size_t i = 0; i < c->rows.n; i++) {
        nparts += c->rows.t[i].parts;
        slots += (size_t)c->rows.t[i].parts * c->rows.t[i].width;
    }
    c->parts = cm_calloc(nparts + 1, sizeof(*c->parts));
    c->cur = cm_calloc(slots + 1, sizeof(*c->cur));
    c->cur_len = cm_calloc(nparts + 1, sizeof(*c->cur_len));
    c->cur_share = cm_calloc(slots + 1, sizeof(*c->cur_share));
    for (size_t i = 0; i < c->rows.n; i++) {
        const struct ctl_pp_trows *r = &c->rows.t[i];

        for (uint32_t p = 0; p < r->parts; p++, k++) {
            const struct ctl_pp_demand *d = find_demand(c, r->tenant, p);
            struct pol_pp_part *pt = &c->parts[k];

            pt->tenant = r->tenant;
            pt->id = p;
            pt->width = r->width;
            pt->k = r->k;
            /* An empty partition costs a byte to move, so it moves only
             * when it must (a free move would churn rows for nothing). */
            pt->resident_bytes = 1;
            if (d != NULL) {
                ctl_pp_demand_eff(d, pp->cfg.latency_ms, &pt->demand[POL_PP_REQ],
                                  &pt->demand[POL_PP_BYTES]);
                pt->resident_bytes = d->resident_bytes > 0 ? d->resident_bytes : 1;
            }
            memcpy(&c->cur[off], &r->ids[(size_t)p * r->width], r->len[p] * sizeof(*c->cur));
            memcpy(&c->cur_share[off], &r->share[(size_t)p * r->width],
                   r->len[p] * sizeof(*c->cur_share));
            c->cur_len[k] = r->len[p];
            off += r->width;
        }
    }
    c->v.nodes = c->nodes;
    c->v.nnodes = c->s.nnodes;
    c->v.parts = c->parts;
    c->v.nparts = nparts;
    c->v.tenants = c->tenants;
    c->v.ntenants = c->s.ntenants;
    c->v.cur_rows = c->cur;
    c->v.cur_len = c->cur_len;
    c->v.cur_share = c->cur_share;
    c->v.headroom = pp->cfg.headroom;
}

/* Commits out's rows where they differ from c's and the live row is still
 * c's. 0 (*changed set) or a store error. */
static int
do_commit(struct ctl_pp *pp, const struct pp_check *c, const struct pol_pp_out *out,
          const char *solver, int *changed)
{
    struct ctl_pp_trows *puts = cm_calloc(c->rows.n + 1, sizeof(*puts));
    size_t nput = 0, k = 0, off = 0;
    int rc = 0;

    *changed = 0;
    for (size_t i = 0; i < c->rows.n; i++) {
        const struct ctl_pp_trows *was = &c->rows.t[i];
        const struct ctl_pp_trows *live = do_find(pp, was->tenant);
        struct ctl_pp_trows *r = &puts[nput];
        int any = 0;

        for (uint32_t p = 0; p < was->parts; p++, k++, off += was->width) {
            const uint32_t *old = &was->ids[(size_t)p * was->width];
            const uint32_t *nrow = &out->rows[off];
            const double *nshare = &out->share[off];

            if (out->len[k] == was->len[p] && memcmp(old, nrow, was->len[p] * sizeof(*old)) == 0 &&
                memcmp(&was->share[(size_t)p * was->width], nshare,
                       was->len[p] * sizeof(*nshare)) == 0) {
                continue;
            }
            if (live == NULL || live->parts != was->parts || live->len[p] != was->len[p] ||
                memcmp(&live->ids[(size_t)p * was->width], old, was->len[p] * sizeof(*old)) != 0) {
                continue; /* changed meanwhile: this answer is about another row */
            }
            if (!any) {
                trows_copy(r, live);
                any = 1;
            }
            /* Shares alone move no data: the row epoch says what gateways
             * must look at. */
            if (out->len[k] != was->len[p] || memcmp(old, nrow, was->len[p] * sizeof(*old)) != 0) {
                r->row_epoch[p] = pp->epoch + 1;
                r->by_hash[p] = 0;
            }
            memcpy(&r->ids[(size_t)p * r->width], nrow, out->len[k] * sizeof(*nrow));
            r->len[p] = out->len[k];
            memcpy(&r->share[(size_t)p * r->width], nshare, out->len[k] * sizeof(*nshare));
            CM_DEBUG("partition placed tenant=%u partition=%u epoch=%llu", r->tenant, p,
                     (unsigned long long)(pp->epoch + 1));
        }
        nput += any;
    }
    if (nput > 0) {
        rc = do_write(pp, puts, nput, NULL, 0, solver);
        *changed = rc == 0;
    }
    free(puts);
    return rc;
}

/* One check; manual: a rebalance asked for it. res (may be NULL) gets the
 * outcome. */
static void
check_once(struct ctl_pp *pp, int manual, struct ctl_pp_result *res)
{
    struct pp_check c;
    struct ctl_pp_result r;
    struct ctl_pp_status ms;
    uint64_t now_ns = cm_now_ns(), now_ms = now_ns / 1000000u;
    double util = 0;
    int place, rc;

    memset(&c, 0, sizeof(c));
    memset(&r, 0, sizeof(r));
    memset(&ms, 0, sizeof(ms));
    ctl_state_snapshot(pp->st, now_ns, &c.s);
    pthread_mutex_lock(&pp->mu);
    r.rc = do_sync(pp, &c.s);
    do_copy(pp, &c.s, &c.rows);
    c.dem = do_demand(pp, now_ns, &c.ndem);
    do_migration(pp, now_ns, &ms);
    c.migrating = ms.migrating;
    pthread_mutex_unlock(&pp->mu);

    check_view(pp, &c);
    rc = ctl_pp_util(&c.v, &util);
    if (rc != 0 && r.rc == 0) {
        r.rc = rc;
    }
    r.util_before = r.util_after = util;
    pthread_mutex_lock(&pp->mu);
    pp->nchecks++;
    pp->max_util = util;
    place =
        rc == 0 && (ctl_pp_trig_step(&pp->trig, &pp->tcfg, util, c.migrating, now_ms) || manual);
    r.epoch = pp->epoch;
    pthread_mutex_unlock(&pp->mu);
    snprintf(r.solver, sizeof(r.solver), "%s", pp->ops->name);
    if (!place || strcmp(pp->ops->name, "hash") == 0) {
        goto out;
    }

    size_t slots = pol_pp_slots(&c.v);
    struct pol_pp_out o = {
        .rows = cm_calloc(slots + 1, sizeof(uint32_t)),
        .share = cm_calloc(slots + 1, sizeof(double)),
        .len = cm_calloc(c.v.nparts + 1, sizeof(uint32_t)),
    };
    uint64_t t0 = cm_now_ns();

    rc = pp->ops->place(pp->pol, &c.v, pp->cfg.budget_ms, &o);
    r.solve_ms = (double)(cm_now_ns() - t0) / 1e6;
    if (rc == 0) {
        snprintf(r.solver, sizeof(r.solver), "%s", o.stats.solver);
        r.parts_moved = o.stats.parts_moved;
        r.bytes_moved = o.stats.bytes_moved;
        r.util_after = fmax(o.stats.max_util[POL_PP_REQ], o.stats.max_util[POL_PP_BYTES]);
    }
    pthread_mutex_lock(&pp->mu);
    if (rc == 0 && ctl_pp_accept(util, &o.stats, pp->cfg.headroom)) {
        rc = do_commit(pp, &c, &o, o.stats.solver, &r.changed);
    }
    if (r.changed) {
        pp->replacements++;
        pp->last_moved_bytes = r.bytes_moved;
        pp->last_parts_moved = r.parts_moved;
    } else {
        r.util_after = util;
    }
    pp->last_solve_ms = r.solve_ms;
    r.epoch = pp->epoch;
    ctl_pp_trig_tried(&pp->trig, &pp->tcfg, now_ms);
    pthread_mutex_unlock(&pp->mu);
    r.rc = rc;
    CM_INFO("placement solved manual=%d solver=%s solve_ms=%.1f util_before=%.3f util_after=%.3f "
            "partitions_moved=%u bytes_moved=%llu committed=%d epoch=%llu err=%s",
            manual, r.solver, r.solve_ms, util, r.util_after, r.parts_moved,
            (unsigned long long)r.bytes_moved, r.changed, (unsigned long long)r.epoch,
            rc ? cm_errname(rc) : "none");
    free(o.rows);
    free(o.share);
    free(o.len);
out:
    check_fini(&c);
    if (res != NULL) {
        *res = r;
    }
}

static void *
pp_main(void *arg)
{
    struct ctl_pp *pp = arg;
    uint64_t next = cm_now_ns() + (uint64_t)pp->cfg.interval_ms * 1000000u;

    pthread_mutex_lock(&pp->mu);
    while (!pp->stop) {
        uint64_t now = cm_now_ns();
        int manual = pp->asked > pp->answered;
        uint64_t want = pp->asked;
        struct ctl_pp_result res;

        if (!manual && now < next) {
            struct timespec ts = cm_deadline(CLOCK_MONOTONIC, next - now);

            (void)pthread_cond_timedwait(&pp->cv, &pp->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&pp->mu);
        check_once(pp, manual, &res);
        next = cm_now_ns() + (uint64_t)pp->cfg.interval_ms * 1000000u;
        pthread_mutex_lock(&pp->mu);
        if (manual) {
            pp->answer = res;
            pp->answered = want;
            pthread_cond_broadcast(&pp->done_cv);
        }
    }
    pthread_mutex_unlock(&pp->mu);
    return NULL;
}

void
ctl_pp_rebalance(struct ctl_pp *pp, struct ctl_pp_result *out)
{
    uint64_t want, until;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&pp->mu);
    if (!pp->started) {
        pthread_mutex_unlock(&pp->mu);
        out->rc = CM_E_UNAVAIL;
        return;
    }
    want = ++pp->asked;
    pthread_cond_signal(&pp->cv);
    until = cm_now_ns() + (uint64_t)(pp->cfg.budget_ms + REBALANCE_SLACK_MS) * 1000000u;
    while (pp->answered < want && !pp->stop && cm_now_ns() < until) {
        struct timespec ts = cm_deadline(CLOCK_MONOTONIC, until - cm_now_ns());

        (void)pthread_cond_timedwait(&pp->done_cv, &pp->mu, &ts);
    }
    if (pp->answered >= want) {
        *out = pp->answer;
    } else {
        out->rc = CM_E_TIMEOUT;
        out->epoch = pp->epoch;
    }
    pthread_mutex_unlock(&pp->mu);
}

/* ---- life cycle ---- */

static int
load_cb(void *arg, uint32_t tenant, const char *text, size_t len)
{
    struct ctl_pp *pp = arg;
    struct ctl_pp_trows r;

    if (ctl_pp_decode(tenant, text, len, &r) < 0) {
        CM_ERROR("store bad placement record tenant=%u", tenant);
        return CM_E_CONFIG;
    }
    if (r.parts != pp->cfg.partitions) {
        CM_WARN("placement rows dropped: partition count changed tenant=%u old=%u new=%u", tenant,
                r.parts, pp->cfg.partitions);
        ctl_pp_trows_fini(&r);
        return 0;
    }
    do_put(pp, &r);
    return 0;
}

int
ctl_pp_create(struct ctl_store *store, struct ctl_state *st, const struct ctl_pp_cfg *cfg,
              struct ctl_pp **out)
{
    struct ctl_pp *pp = cm_calloc(1, sizeof(*pp));
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    pp->store = store;
    pp->st = st;
    pp->cfg = *cfg;
    pp->cfg.policy = NULL;
    pp->ops = pol_pp_find(cfg->policy);
    if (pp->ops == NULL || cfg->partitions == 0 || cfg->partitions > MAX_PARTS ||
        !(cfg->headroom > 0 && cfg->headroom <= 1) || !(cfg->nominal_ops > 0) ||
        !(cfg->nominal_bytes > 0)) {
        free(pp);
        return CM_E_CONFIG;
    }
    pp->tcfg.headroom = cfg->headroom;
    pp->tcfg.checks = cfg->checks;
    pp->tcfg.cooldown_ms = cfg->cooldown_ms;
    pthread_mutex_init(&pp->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pp->cv, &ca);
    pthread_cond_init(&pp->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    rc = pp->ops->create(NULL, &pp->pol);
    if (rc == 0) {
        rc = ctl_store_load_placement(store, &pp->epoch, pp->solver, sizeof(pp->solver), load_cb,
                                      pp);
    }
    if (rc < 0) {
        ctl_pp_destroy(pp);
        return rc;
    }
    if (pp->solver[0] == '\0') {
        snprintf(pp->solver, sizeof(pp->solver), "hash");
    }
    CM_INFO("placement loaded policy=%s tenants=%zu epoch=%llu solver=%s", pp->ops->name, pp->nt,
            (unsigned long long)pp->epoch, pp->solver);
    *out = pp;
    return 0;
}

int
ctl_pp_start(struct ctl_pp *pp)
{
    int rc = pthread_create(&pp->thread, NULL, pp_main, pp);

    if (rc != 0) {
        return -rc;
    }
    pthread_mutex_lock(&pp->mu);
    pp->started = 1;
    pthread_mutex_unlock(&pp->mu);
    return 0;
}

void
ctl_pp_destroy(struct ctl_pp *pp)
{
    int started;

    if (pp == NULL) {
        return;
    }
    pthread_mutex_lock(&pp->mu);
    started = pp->started;
    pp->stop = 1;
    pthread_cond_broadcast(&pp->cv);
    pthread_cond_broadcast(&pp->done_cv);
    pthread_mutex_unlock(&pp->mu);
    if (started) {
        pthread_join(pp->thread, NULL);
    }
    for (size_t i = 0; i < pp->nt; i++) {
        ctl_pp_trows_fini(&pp->t[i]);
    }
    free(pp->t);
    for (size_t i = 0; i < pp->ngw; i++) {
        free(pp->gw[i].d);
    }
    free(pp->gw);
    if (pp->ops != NULL) {
        pp->ops->destroy(pp->pol);
    }
    pthread_cond_destroy(&pp->cv);
    pthread_cond_destroy(&pp->done_cv);
    pthread_mutex_destroy(&pp->mu);
    free(pp);
}

const char *
ctl_pp_policy(const struct ctl_pp *pp)
{
    return pp->ops->name;
}
