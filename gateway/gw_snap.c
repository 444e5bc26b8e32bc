/*
 * gw_snap.c - the controller state as immutable snapshots (see
 * gw_state.h): the parser of /v1/internal/state, the lookups (API key,
 * tenant, S3 date key, placement row), references.
 *
 * Threads: any. A snapshot never changes once parsed; readers take a
 * reference (gw_state_snap) and drop it with an atomic decrement; the
 * last reference frees.
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
    free(s->peers);
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

static int
peer_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gw_peer *)a)->id, ((const struct gw_peer *)b)->id);
}

/* A string field of at most cap - 1 bytes into out ("" when absent);
 * -1 when it is not a string or too long. */
static int
json_str(json_t *o, const char *name, char *out, size_t cap)
{
    json_t *v = json_object_get(o, name);
    const char *str = json_string_value(v);

    if (v == NULL) {
        out[0] = '\0';
        return 0;
    }
    if (str == NULL || strlen(str) >= cap) {
        return -1;
    }
    strcpy(out, str);
    return 0;
}

/* "gateways" (docs/internal-api.md). NULL, or the reason it is refused. */
static const char *
parse_peers(json_t *gws, struct gw_snap *s)
{
    json_t *v;
    size_t i;

    if (gws == NULL) {
        return NULL;
    }
    if (!json_is_array(gws)) {
        return "bad gateways";
    }
    s->peers = cm_calloc(json_array_size(gws) + 1, sizeof(*s->peers));
    json_array_foreach(gws, i, v)
    {
        struct gw_peer *p = &s->peers[s->npeers++];

        if (!json_is_object(v) || json_str(v, "id", p->id, sizeof(p->id)) != 0 ||
            p->id[0] == '\0' || json_str(v, "url", p->url, sizeof(p->url)) != 0 ||
            json_str(v, "s3_url", p->s3_url, sizeof(p->s3_url)) != 0) {
            return "bad gateway";
        }
        p->up = json_is_true(json_object_get(v, "up"));
    }
    qsort(s->peers, s->npeers, sizeof(*s->peers), peer_cmp);
    for (i = 0; i + 1 < s->npeers; i++) {
        if (strcmp(s->peers[i].id, s->peers[i + 1].id) == 0) {
            return "duplicate gateway id";
        }
    }
    return NULL;
}

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
        s->nodes[i].draining = json_is_true(json_object_get(v, "draining"));
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
        if (t->id > s->max_tenant) {
            s->max_tenant = t->id;
        }
        if (json_str(v, "gateway", t->owner, sizeof(t->owner)) != 0 ||
            json_str(v, "moving_to", t->moving_to, sizeof(t->moving_to)) != 0) {
            reason = "bad tenant gateway";
            goto out;
        }
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
    if (reason == NULL) {
        reason = parse_peers(json_object_get(root, "gateways"), s);
    }
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

enum gw_home
gw_snap_home(const struct gw_snap *s, const struct gw_tenant *t, const char *self,
             const struct gw_peer **peer)
{
    struct gw_peer key;

    if (t->owner[0] == '\0' || strcmp(t->owner, self) == 0) {
        return GW_HOME_HERE;
    }
    strcpy(key.id, t->owner);
    *peer = s->npeers > 0 ? bsearch(&key, s->peers, s->npeers, sizeof(*s->peers), peer_cmp) : NULL;
    return *peer != NULL && (*peer)->url[0] != '\0' ? GW_HOME_PEER : GW_HOME_NONE;
}

int
gw_snap_collects(const struct gw_snap *s, uint32_t id, const char *self)
{
    const struct gw_tenant *t = gw_snap_tenant(s, id);
    int alone = s->npeers == 0 || (s->npeers == 1 && strcmp(s->peers[0].id, self) == 0);

    if (t == NULL) {
        return alone || id < s->max_tenant;
    }
    return strcmp(t->owner, self) == 0 || (t->owner[0] == '\0' && alone);
}

void
gw_snap_row(const struct gw_snap *s, const struct gw_tenant *t, uint32_t p, const uint32_t **row,
            size_t *n)
{
    p %= s->partitions;
    *row = t->rows + t->row_off[p];
    *n = t->row_off[p + 1] - t->row_off[p];
}
