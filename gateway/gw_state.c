/*
 * gw_state.c - controller state polling and immutable snapshots (see
 * gw_state.h).
 *
 * Threads: one background thread (state_main) polls, parses, swaps the
 * snapshot under st->mu, saves the JSON to gw_meta and purges the objects
 * of tenants that disappeared. Readers take a reference under st->mu and
 * drop it with an atomic decrement; the last reference frees.
 *
 * Refreshes: a request whose key is unknown waits for a poll that begins
 * after it asked (gw_state_refresh). Such polls come at most every
 * REFRESH_GAP_MS and give up after REFRESH_TIMEOUT_MS; only this thread
 * polls, so one is in flight at most. Once a poll failed, requests do not
 * wait until one succeeds again: with the controller down, unknown keys
 * are refused at once instead of each costing a timeout.
 *
 * Invariants: st->cur is never NULL. A purge runs only on a state fresh
 * from the controller whose epoch is not older than any seen before (a
 * controller that lost its data would otherwise erase every tenant).
 */
#include "gw_state.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_token.h"
#include "gw_meta.h"
#include "gw_s3_sig.h"

#define MAX_PARTITIONS 65536
#define MAX_ROW 1024
#define PURGE_BATCH 256
#define REFRESH_GAP_MS 200     /* between the starts of polls asked by requests */
#define REFRESH_TIMEOUT_MS 500 /* a poll someone waits for */

struct gw_snap_hash {
    char hex[65];
    uint32_t idx; /* into tenants */
};

#define S3_AKID_MAX 128
#define S3_DATES_MAX 16 /* the controller sends 9: 7 days back, today, tomorrow */

struct gw_snap_s3key {
    char akid[S3_AKID_MAX + 1];
    uint32_t tenant; /* id; resolved to the tenant on lookup */
    uint32_t ndates;
    struct {
        char date[9];
        uint8_t k[32];
    } dates[S3_DATES_MAX];
};

struct gw_state {
    struct gw_state_cfg cfg;
    char url[256];
    char token[256];
    int have_token;
    struct gw_meta *meta;
    struct gw_engine *engine;

    pthread_mutex_t mu; /* guards cur, stop, running, stats, the waiters */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    struct gw_snap *cur;
    int stop;
    int running; /* the thread polls: refreshes can be had */
    int started;
    struct gw_state_wait *waiting, **waiting_tail; /* asked since the last poll began */
    pthread_t thread;
    struct gw_state_stats stats;

    /* state thread only */
    char *last_body;
    uint64_t max_epoch;
    int fresh; /* cur came from the controller (not the cache) */
};

/* ---- snapshots ---- */

static void
snap_free(struct gw_snap *s)
{
    if (s->s3keys != NULL) {
        explicit_bzero(s->s3keys, s->ns3keys * sizeof(*s->s3keys));
    }
    free(s->s3keys);
    free(s->tenants);
    free(s->hashes);
    free(s->nodes);
    free(s->rows_mem);
    free(s->off_mem);
    free(s->row_epoch_mem);
    free(s);
}

void
gw_snap_ref(struct gw_snap *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void
gw_snap_unref(struct gw_snap *s)
{
    if (s == NULL) {
        return;
    }
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        snap_free(s);
    }
}

struct gw_snap *
gw_snap_empty(void)
{
    struct gw_snap *s = cm_calloc(1, sizeof(*s));

    atomic_init(&s->refs, 1);
    s->partitions = 1;
    return s;
}

static int
tenant_cmp(const void *a, const void *b)
{
    const struct gw_tenant *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

static int
hash_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gw_snap_hash *)a)->hex, ((const struct gw_snap_hash *)b)->hex);
}

static int
s3key_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gw_snap_s3key *)a)->akid, ((const struct gw_snap_s3key *)b)->akid);
}

static int
json_u64(json_t *o, const char *name, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out);

/* "s3_keys" (docs/internal-api.md): keys whose tenant is not in the
 * snapshot are left out (a render that raced the tenant's change). NULL,
 * or the reason the list is refused. */
static const char *
parse_s3_keys(json_t *keys, struct gw_snap *s)
{
    json_t *v;
    size_t i;

    if (keys == NULL) {
        return NULL;
    }
    if (!json_is_array(keys)) {
        return "bad s3_keys";
    }
    s->s3keys = cm_calloc(json_array_size(keys) + 1, sizeof(*s->s3keys));
    json_array_foreach(keys, i, v)
    {
        struct gw_snap_s3key *k = &s->s3keys[s->ns3keys];
        const char *akid = json_string_value(json_object_get(v, "access_key_id"));
        json_t *dk = json_object_get(v, "date_keys"), *hex;
        const char *date;
        uint64_t tid;

        if (!json_is_object(v) || akid == NULL || akid[0] == '\0' ||
            strlen(akid) > S3_AKID_MAX || json_u64(v, "tenant_id", 1, UINT32_MAX, 0, &tid) != 0 ||
            tid == 0 || !json_is_object(dk) || json_object_size(dk) > S3_DATES_MAX) {
            return "bad s3 key";
        }
        for (const char *c = akid; *c != '\0'; c++) {
            if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f) {
                return "bad s3 access key id";
            }
        }
        strcpy(k->akid, akid);
        k->tenant = (uint32_t)tid;
        json_object_foreach(dk, date, hex)
        {
            const char *h = json_string_value(hex);

            if (strlen(date) != 8 || strspn(date, "0123456789") != 8 || h == NULL ||
                strlen(h) != 64 || gw_s3_unhex(h, 64, k->dates[k->ndates].k, 32) != 0) {
                return "bad s3 date key";
            }
            memcpy(k->dates[k->ndates].date, date, 9);
            k->ndates++;
        }
        if (gw_snap_tenant(s, k->tenant) != NULL) {
            s->ns3keys++;
        } else {
            explicit_bzero(k, sizeof(*k));
        }
    }
    qsort(s->s3keys, s->ns3keys, sizeof(*s->s3keys), s3key_cmp);
    for (i = 0; i + 1 < s->ns3keys; i++) {
        if (strcmp(s->s3keys[i].akid, s->s3keys[i + 1].akid) == 0) {
            return "duplicate s3 access key id";
        }
    }
    return NULL;
}

static int
json_u64(json_t *o, const char *name, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out)
{
    json_t *v = json_object_get(o, name);

    if (v == NULL) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < lo ||
        (uint64_t)json_integer_value(v) > hi) {
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int
gw_snap_parse(const char *json, size_t len, struct gw_snap **out, const char **why)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    json_t *nodes, *tenants, *v;
    struct gw_snap *s = NULL;
    const char *reason = NULL;
    size_t nrows = 0, nhash = 0, ti, i;
    uint64_t u;

    if (root == NULL || !json_is_object(root)) {
        reason = "not a JSON object";
        goto out;
    }
    s = cm_calloc(1, sizeof(*s));
    atomic_init(&s->refs, 1);
    if (json_u64(root, "epoch", 0, UINT64_MAX >> 1, 0, &s->epoch) != 0) {
        reason = "bad epoch";
        goto out;
    }
    if (json_u64(root, "partitions", 1, MAX_PARTITIONS, 1, &u) != 0) {
        reason = "bad partitions";
        goto out;
    }
    s->partitions = (uint32_t)u;
    if (json_u64(root, "placement_epoch", 0, UINT64_MAX >> 1, 0, &s->placement_epoch) != 0) {
        reason = "bad placement_epoch";
        goto out;
    }

    nodes = json_object_get(root, "nodes");
    if (nodes != NULL && !json_is_array(nodes)) {
        reason = "bad nodes";
        goto out;
    }
    s->nnodes = json_array_size(nodes);
    s->nodes = cm_calloc(s->nnodes + 1, sizeof(*s->nodes));
    json_array_foreach(nodes, i, v)
    {
        const char *addr = json_string_value(json_object_get(v, "addr"));
        const char *st = json_string_value(json_object_get(v, "state"));
        if (!json_is_object(v) || json_u64(v, "id", 0, UINT32_MAX, UINT64_MAX, &u) != 0 ||
            u == UINT64_MAX || addr == NULL || strlen(addr) >= sizeof(s->nodes[i].addr)) {
            reason = "bad node";
            goto out;
        }
        s->nodes[i].id = (uint32_t)u;
        strcpy(s->nodes[i].addr, addr);
        s->nodes[i].up = st != NULL && strcmp(st, "up") == 0;
    }

    tenants = json_object_get(root, "tenants");
    if (tenants != NULL && !json_is_array(tenants)) {
        reason = "bad tenants";
        goto out;
    }
    s->ntenants = json_array_size(tenants);
    s->tenants = cm_calloc(s->ntenants + 1, sizeof(*s->tenants));
    /* First pass: sizes. */
    json_array_foreach(tenants, ti, v)
    {
        json_t *pl = json_object_get(v, "placement");
        json_t *row;
        size_t p;
        if (!json_is_object(v)) {
            reason = "bad tenant";
            goto out;
        }
        nhash += json_array_size(json_object_get(v, "key_hashes"));
        if (pl != NULL && (!json_is_array(pl) ||
                           (json_array_size(pl) != 0 && json_array_size(pl) != s->partitions))) {
            reason = "placement rows != partitions";
            goto out;
        }
        json_array_foreach(pl, p, row)
        {
            if (!json_is_array(row) || json_array_size(row) > MAX_ROW) {
                reason = "bad placement row";
                goto out;
            }
            nrows += json_array_size(row);
        }
    }
    s->rows_mem = cm_calloc(nrows + 1, sizeof(uint32_t));
    s->off_mem = cm_calloc(s->ntenants * ((size_t)s->partitions + 1) + 1, sizeof(uint32_t));
    s->row_epoch_mem = cm_calloc(s->ntenants * (size_t)s->partitions + 1, sizeof(uint64_t));
    s->hashes = cm_calloc(nhash + 1, sizeof(*s->hashes));
    nrows = 0;
    json_array_foreach(tenants, ti, v)
    {
        struct gw_tenant *t = &s->tenants[ti];
        json_t *pl = json_object_get(v, "placement");
        json_t *kh = json_object_get(v, "key_hashes");
        json_t *w = json_object_get(v, "weight");
        const char *name = json_string_value(json_object_get(v, "name"));
        uint32_t *off = s->off_mem + ti * ((size_t)s->partitions + 1);
        uint64_t k, m;
        size_t p, j;
        json_t *row, *x;

        if (json_u64(v, "id", 1, UINT32_MAX, 0, &u) != 0 || u == 0 ||
            json_u64(v, "ec_k", 1, CM_EC_MAX_K, 4, &k) != 0 ||
            json_u64(v, "ec_m", 0, CM_EC_MAX_M, 2, &m) != 0) {
            reason = "bad tenant id or EC profile";
            goto out;
        }
        t->id = (uint32_t)u;
        t->k = (uint8_t)k;
        t->m = (uint8_t)m;
        t->weight = json_is_number(w) ? json_number_value(w) : 1.0;
        snprintf(t->name, sizeof(t->name), "%s", name != NULL ? name : "");
        t->rows = s->rows_mem;
        t->row_off = off;
        t->row_epoch = s->row_epoch_mem + ti * (size_t)s->partitions;
        json_t *rep = json_object_get(v, "row_epochs");
        if (rep != NULL && (!json_is_array(rep) || json_array_size(rep) != s->partitions)) {
            reason = "row_epochs != partitions";
            goto out;
        }
        json_array_foreach(rep, j, x)
        {
            if (!json_is_integer(x) || json_integer_value(x) < 0) {
                reason = "bad row epoch";
                goto out;
            }
            s->row_epoch_mem[ti * (size_t)s->partitions + j] = (uint64_t)json_integer_value(x);
        }
        off[0] = (uint32_t)nrows;
        for (p = 0; p < s->partitions; p++) {
            row = json_array_get(pl, p);
            json_array_foreach(row, j, x)
            {
                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                    json_integer_value(x) > UINT32_MAX) {
                    reason = "bad node id in placement";
                    goto out;
                }
                s->rows_mem[nrows++] = (uint32_t)json_integer_value(x);
            }
            off[p + 1] = (uint32_t)nrows;
        }
        if (kh != NULL && !json_is_array(kh)) {
            reason = "bad key_hashes";
            goto out;
        }
        json_array_foreach(kh, j, x)
        {
            const char *h = json_string_value(x);
            struct gw_snap_hash *e = &s->hashes[s->nhashes];
            if (h == NULL || strlen(h) != 64) {
                reason = "bad key hash";
                goto out;
            }
            for (int c = 0; c < 64; c++) {
                e->hex[c] = (char)tolower((unsigned char)h[c]);
            }
            e->hex[64] = '\0';
            e->idx = (uint32_t)ti;
            s->nhashes++;
        }
    }
    /* Sort tenants, then re-point hashes at the sorted positions. */
    {
        uint32_t *ids = cm_calloc(s->nhashes + 1, sizeof(uint32_t));
        for (i = 0; i < s->nhashes; i++) {
            ids[i] = s->tenants[s->hashes[i].idx].id;
        }
        qsort(s->tenants, s->ntenants, sizeof(*s->tenants), tenant_cmp);
        for (i = 0; i + 1 < s->ntenants; i++) {
            if (s->tenants[i].id == s->tenants[i + 1].id) {
                free(ids);
                reason = "duplicate tenant id";
                goto out;
            }
        }
        for (i = 0; i < s->nhashes; i++) {
            struct gw_tenant key = {.id = ids[i]};
            struct gw_tenant *t =
                bsearch(&key, s->tenants, s->ntenants, sizeof(*s->tenants), tenant_cmp);
            s->hashes[i].idx = (uint32_t)(t - s->tenants);
        }
        free(ids);
    }
    qsort(s->hashes, s->nhashes, sizeof(*s->hashes), hash_cmp);
    reason = parse_s3_keys(json_object_get(root, "s3_keys"), s);
out:
    json_decref(root);
    if (reason != NULL) {
        if (s != NULL) {
            snap_free(s);
        }
        if (why != NULL) {
            *why = reason;
        }
        return CM_E_PROTO;
    }
    *out = s;
    return 0;
}

const struct gw_tenant *
gw_snap_auth(const struct gw_snap *s, const char *tok, size_t len)
{
    struct gw_snap_hash key;
    const struct gw_snap_hash *h;

    if (s->nhashes == 0) {
        return NULL;
    }
    cm_sha256_hex(tok, len, key.hex);
    h = bsearch(&key, s->hashes, s->nhashes, sizeof(*s->hashes), hash_cmp);
    return h != NULL ? &s->tenants[h->idx] : NULL;
}

const struct gw_tenant *
gw_snap_tenant(const struct gw_snap *s, uint32_t id)
{
    struct gw_tenant key = {.id = id};

    if (s->ntenants == 0) {
        return NULL;
    }
    return bsearch(&key, s->tenants, s->ntenants, sizeof(*s->tenants), tenant_cmp);
}

int
gw_snap_s3_date_key(const struct gw_snap *s, const char *akid, const char *date, uint8_t kdate[32],
                    const struct gw_tenant **t)
{
    struct gw_snap_s3key key;
    const struct gw_snap_s3key *k;

    if (s->ns3keys == 0 || strlen(akid) > S3_AKID_MAX) {
        return CM_E_NOTFOUND;
    }
    strcpy(key.akid, akid);
    k = bsearch(&key, s->s3keys, s->ns3keys, sizeof(*s->s3keys), s3key_cmp);
    if (k == NULL || (*t = gw_snap_tenant(s, k->tenant)) == NULL) {
        return CM_E_NOTFOUND;
    }
    for (uint32_t i = 0; i < k->ndates; i++) {
        if (strcmp(k->dates[i].date, date) == 0) {
            memcpy(kdate, k->dates[i].k, 32);
            return 0;
        }
    }
    return -ERANGE;
}

void
gw_snap_row(const struct gw_snap *s, const struct gw_tenant *t, uint32_t p, const uint32_t **row,
            size_t *n)
{
    p %= s->partitions;
    *row = t->rows + t->row_off[p];
    *n = t->row_off[p + 1] - t->row_off[p];
}

/* ---- the state thread ---- */

struct gw_snap *
gw_state_snap(struct gw_state *st)
{
    struct gw_snap *s;

    pthread_mutex_lock(&st->mu);
    s = st->cur;
    gw_snap_ref(s);
    pthread_mutex_unlock(&st->mu);
    return s;
}

static void
install(struct gw_state *st, struct gw_snap *s)
{
    struct gw_snap *old;

    pthread_mutex_lock(&st->mu);
    old = st->cur;
    st->cur = s;
    st->stats.epoch = s->epoch;
    pthread_mutex_unlock(&st->mu);
    gw_snap_unref(old);
    if (st->engine != NULL) {
        gw_engine_set_nodes(st->engine, s->nodes, s->nnodes);
    }
}

struct purge_list {
    struct gw_layout *v;
    size_t n, cap;
};

static void
purge_add(void *arg, const struct gw_layout *l)
{
    struct purge_list *pl = arg;

    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? pl->cap * 2 : 64;
        pl->v = cm_realloc(pl->v, pl->cap * sizeof(*pl->v));
    }
    pl->v[pl->n++] = *l;
}

static int
stopping(struct gw_state *st)
{
    int s;

    pthread_mutex_lock(&st->mu);
    s = st->stop;
    pthread_mutex_unlock(&st->mu);
    return s;
}

static void
purge_tenant(struct gw_state *st, uint32_t tenant)
{
    uint64_t total = 0;
    int left = 1;

    CM_INFO("purging objects of deleted tenant tenant=%u", tenant);
    while (left && !stopping(st)) {
        struct purge_list pl = {NULL, 0, 0};
        struct gw_meta_batch *b;
        int rc = gw_meta_batch_begin(st->meta, &b);
        if (rc == 0) {
            rc = gw_meta_purge(b, tenant, PURGE_BATCH, purge_add, &pl, &left);
            if (rc == 0) {
                rc = gw_meta_batch_commit(b);
            } else {
                gw_meta_batch_abort(b);
            }
        }
        if (rc != 0) {
            CM_WARN("tenant purge failed tenant=%u err=%s", tenant, cm_errname(rc));
            free(pl.v);
            return;
        }
        for (size_t i = 0; i < pl.n; i++) {
            if (st->engine != NULL) {
                gw_engine_delete(st->engine, &pl.v[i], 0);
            }
        }
        total += pl.n;
        free(pl.v);
    }
    pthread_mutex_lock(&st->mu);
    st->stats.tenants_purged++;
    st->stats.objects_purged += total;
    pthread_mutex_unlock(&st->mu);
    CM_INFO("purged deleted tenant tenant=%u objects=%llu", tenant, (unsigned long long)total);
}

struct gone_ctx {
    const struct gw_snap *snap;
    uint32_t *ids;
    size_t n, cap;
};

static void
gone_one(void *arg, uint32_t tenant)
{
    struct gone_ctx *c = arg;

    if (gw_snap_tenant(c->snap, tenant) != NULL) {
        return;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->ids = cm_realloc(c->ids, c->cap * sizeof(*c->ids));
    }
    c->ids[c->n++] = tenant;
}

static void
purge_gone(struct gw_state *st, const struct gw_snap *s)
{
    struct gone_ctx c = {s, NULL, 0, 0};

    if (gw_meta_tenants(st->meta, gone_one, &c) != 0) {
        free(c.ids);
        return;
    }
    for (size_t i = 0; i < c.n; i++) {
        purge_tenant(st, c.ids[i]);
    }
    free(c.ids);
}

void
gw_controller_url(const char *c, const char *path, char *url, size_t cap)
{
    if (strncmp(c, "http://", 7) == 0 || strncmp(c, "https://", 8) == 0) {
        size_t n = strlen(c);
        while (n > 0 && c[n - 1] == '/') {
            n--;
        }
        snprintf(url, cap, "%.*s%s", (int)n, c, path);
    } else {
        snprintf(url, cap, "http://%s%s", c, path);
    }
}

static void
build_url(struct gw_state *st)
{
    gw_controller_url(st->cfg.controller, "/v1/internal/state", st->url, sizeof(st->url));
}

/* One poll with timeout_ms. Returns the new snapshot (a reference) when
 * the objects of deleted tenants are to be purged by it, else NULL. */
static struct gw_snap *
poll_once(struct gw_state *st, int timeout_ms)
{
    struct cm_httpc_resp resp = {0};
    struct gw_snap *s, *purge = NULL;
    const char *why = NULL;
    int rc, up = 0;

    if (!st->have_token && st->cfg.token_file != NULL) {
        st->have_token = cm_token_load(st->cfg.token_file, 0, st->token, sizeof(st->token)) == 0;
    }
    rc = cm_httpc_request("GET", st->url, st->have_token ? st->token : NULL, NULL, timeout_ms,
                          &resp);
    if (rc != 0 || resp.status != 200) {
        if (rc == 0 && resp.status == 401) {
            st->have_token = 0; /* the token file may have been rewritten */
        }
        CM_DEBUG("state poll failed url=%s err=%s status=%d", st->url, rc ? cm_errname(rc) : "http",
                 rc ? 0 : resp.status);
        goto out;
    }
    up = 1;
    if (st->last_body != NULL && strcmp(st->last_body, resp.body) == 0 && st->fresh) {
        goto out;
    }
    rc = gw_snap_parse(resp.body, resp.len, &s, &why);
    if (rc != 0) {
        CM_WARN("bad controller state, keeping the last one reason=\"%s\"", why);
        up = 0;
        goto out;
    }
    if (s->epoch != st->stats.epoch || !st->fresh) {
        CM_INFO("state epoch=%llu tenants=%zu nodes=%zu partitions=%u",
                (unsigned long long)s->epoch, s->ntenants, s->nnodes, s->partitions);
    }
    install(st, s);
    free(st->last_body);
    st->last_body = cm_strdup(resp.body);
    st->fresh = 1;
    rc = gw_meta_state_save(st->meta, resp.body, resp.len);
    if (rc != 0) {
        CM_WARN("cannot cache controller state err=%s", cm_errname(rc));
    }
    if (s->epoch < st->max_epoch) {
        CM_WARN("controller epoch went backwards, not purging epoch=%llu seen=%llu",
                (unsigned long long)s->epoch, (unsigned long long)st->max_epoch);
    } else {
        st->max_epoch = s->epoch;
        gw_snap_ref(s);
        purge = s;
    }
out:
    pthread_mutex_lock(&st->mu);
    st->stats.controller_up = up;
    if (up) {
        st->stats.polls_ok++;
    } else {
        st->stats.polls_failed++;
    }
    pthread_mutex_unlock(&st->mu);
    cm_httpc_resp_fini(&resp);
    return purge;
}

/* Lets the requests in list go on (each runs against the current state). */
static void
wake_waiters(struct gw_state_wait *list)
{
    while (list != NULL) {
        struct gw_state_wait *w = list;

        list = w->next; /* w may be gone once its fn ran */
        w->fn(w);
    }
}

/* Under st->mu: the waiters asked so far, off the list. */
static struct gw_state_wait *
take_waiters_locked(struct gw_state *st)
{
    struct gw_state_wait *list = st->waiting;

    st->waiting = NULL;
    st->waiting_tail = &st->waiting;
    return list;
}

/* Under st->mu: until stopped, the periodic poll is due (poll_ms after the
 * last ended), or a refresh is asked and REFRESH_GAP_MS have passed since
 * the last poll began. */
static void
wait_next_poll_locked(struct gw_state *st, uint64_t began)
{
    uint64_t periodic = cm_now_ns() + (uint64_t)st->cfg.poll_ms * 1000000u;
    uint64_t refresh = began + (uint64_t)REFRESH_GAP_MS * 1000000u;

    while (!st->stop) {
        uint64_t now = cm_now_ns();
        uint64_t until = st->waiting != NULL && refresh < periodic ? refresh : periodic;
        struct timespec ts;

        if (now >= until) {
            break;
        }
        ts = cm_deadline(CLOCK_MONOTONIC, until - now);
        (void)pthread_cond_timedwait(&st->cv, &st->mu, &ts);
    }
}

static void *
state_main(void *arg)
{
    struct gw_state *st = arg;

    pthread_mutex_lock(&st->mu);
    while (!st->stop) {
        /* This poll begins after they asked: it is theirs. */
        struct gw_state_wait *waiters = take_waiters_locked(st);
        uint64_t began = cm_now_ns();
        int timeout = st->cfg.timeout_ms;
        struct gw_snap *purge;

        if (waiters != NULL && timeout > REFRESH_TIMEOUT_MS) {
            timeout = REFRESH_TIMEOUT_MS;
        }
        pthread_mutex_unlock(&st->mu);
        purge = poll_once(st, timeout);
        if (waiters != NULL) {
            pthread_mutex_lock(&st->mu);
            st->stats.refreshes++;
            pthread_mutex_unlock(&st->mu);
        }
        wake_waiters(waiters);
        if (purge != NULL) {
            purge_gone(st, purge);
            gw_snap_unref(purge);
        }
        pthread_mutex_lock(&st->mu);
        wait_next_poll_locked(st, began);
    }
    st->running = 0;
    struct gw_state_wait *left = take_waiters_locked(st);
    pthread_mutex_unlock(&st->mu);
    wake_waiters(left); /* refused against the last state */
    return NULL;
}

int
gw_state_refresh(struct gw_state *st, struct gw_state_wait *w)
{
    int rc = -EAGAIN;

    pthread_mutex_lock(&st->mu);
    /* Not once a poll failed (until one succeeds); before the first, yes. */
    if (st->running &&
        (st->stats.controller_up || st->stats.polls_ok + st->stats.polls_failed == 0)) {
        w->next = NULL;
        *st->waiting_tail = w;
        st->waiting_tail = &w->next;
        pthread_cond_signal(&st->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
gw_state_create(const struct gw_state_cfg *cfg, struct gw_meta *meta, struct gw_engine *e,
                struct gw_state **out)
{
    struct gw_state *st = cm_calloc(1, sizeof(*st));
    pthread_condattr_t ca;
    char *json = NULL;
    size_t len = 0;
    int rc;

    st->cfg = *cfg;
    if (st->cfg.poll_ms <= 0) {
        st->cfg.poll_ms = 1000;
    }
    if (st->cfg.timeout_ms <= 0) {
        st->cfg.timeout_ms = 2000;
    }
    st->meta = meta;
    st->engine = e;
    st->waiting_tail = &st->waiting;
    pthread_mutex_init(&st->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st->cv, &ca);
    pthread_condattr_destroy(&ca);
    build_url(st);
    st->cur = gw_snap_empty();
    rc = gw_meta_state_load(meta, &json, &len);
    if (rc == 0) {
        struct gw_snap *s;
        const char *why = NULL;
        if (gw_snap_parse(json, len, &s, &why) == 0) {
            CM_INFO("loaded cached state epoch=%llu tenants=%zu nodes=%zu",
                    (unsigned long long)s->epoch, s->ntenants, s->nnodes);
            st->max_epoch = s->epoch;
            st->last_body = json;
            json = NULL;
            install(st, s);
        } else {
            CM_WARN("ignoring bad cached state reason=\"%s\"", why);
        }
    } else if (rc != CM_E_NOTFOUND) {
        CM_WARN("cannot read cached state err=%s", cm_errname(rc));
    }
    free(json);
    *out = st;
    return 0;
}

int
gw_state_start(struct gw_state *st)
{
    int rc;

    pthread_mutex_lock(&st->mu);
    st->running = 1;
    pthread_mutex_unlock(&st->mu);
    rc = pthread_create(&st->thread, NULL, state_main, st);
    if (rc != 0) {
        pthread_mutex_lock(&st->mu);
        st->running = 0;
        pthread_mutex_unlock(&st->mu);
        return -rc;
    }
    st->started = 1;
    return 0;
}

void
gw_state_stop(struct gw_state *st)
{
    if (st->started) {
        pthread_mutex_lock(&st->mu);
        st->stop = 1;
        pthread_cond_signal(&st->cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
        st->started = 0;
    }
}

void
gw_state_destroy(struct gw_state *st)
{
    if (st == NULL) {
        return;
    }
    gw_state_stop(st);
    gw_snap_unref(st->cur);
    free(st->last_body);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

void
gw_state_stats(struct gw_state *st, struct gw_state_stats *out)
{
    pthread_mutex_lock(&st->mu);
    *out = st->stats;
    pthread_mutex_unlock(&st->mu);
}
