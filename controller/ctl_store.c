/*
 * ctl_store.c - LMDB layout of the controller's state (see ctl_store.h).
 * Records are JSON so that a field can be added without a migration;
 * unknown fields are ignored on load, missing optional ones defaulted.
 */
#include "ctl_store.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_kv.h"
#include "cm_log.h"
#include "ctl_s3keys.h"

enum { T_META, T_TENANTS, T_NODES, T_S3KEYS, T_SMS, T_PLACEMENT, T_COUNT };

static const char *const table_names[T_COUNT] = {"meta",   "tenants", "nodes",
                                                 "s3keys", "sms",     "placement"};

#define META_EPOCH "epoch"
#define META_NEXT_ID "next_tenant_id"
#define META_PARTITIONS "partitions"
#define META_PLACEMENT_EPOCH "placement_epoch"
#define META_PLACEMENT_SOLVER "placement_solver"

struct ctl_store {
    struct cm_kv *kv;
};

int
ctl_store_open(const char *dir, struct ctl_store **out)
{
    struct ctl_store *s = cm_calloc(1, sizeof(*s));
    int rc = cm_kv_open(dir, 0, table_names, T_COUNT, 0, &s->kv);

    if (rc < 0) {
        CM_ERROR("store open failed dir=%s err=%s", dir, cm_strerror(rc));
        free(s);
        s = NULL;
    }
    *out = s;
    return rc;
}

void
ctl_store_close(struct ctl_store *s)
{
    if (s == NULL) {
        return;
    }
    cm_kv_close(s->kv);
    free(s);
}

static void
id_key(uint32_t id, unsigned char k[4])
{
    k[0] = (unsigned char)(id >> 24);
    k[1] = (unsigned char)(id >> 16);
    k[2] = (unsigned char)(id >> 8);
    k[3] = (unsigned char)id;
}

static int
put_u64(struct cm_kv_txn *txn, const char *name, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
    return cm_kv_put(txn, T_META, name, strlen(name), b, sizeof(b));
}

/* 0 with *v, or 0 leaving *v alone when absent; CM_E_CONFIG if malformed. */
static int
get_u64(struct cm_kv_txn *txn, const char *name, uint64_t *v)
{
    const void *val;
    size_t vlen;
    int rc = cm_kv_get(txn, T_META, name, strlen(name), &val, &vlen);

    if (rc == CM_E_NOTFOUND) {
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    if (vlen != 8) {
        return CM_E_CONFIG;
    }
    *v = 0;
    for (int i = 0; i < 8; i++) {
        *v |= (uint64_t)((const unsigned char *)val)[i] << (8 * i);
    }
    return 0;
}

static int
put_json(struct cm_kv_txn *txn, int table, uint32_t id, json_t *j)
{
    unsigned char k[4];
    char *text = json_dumps(j, JSON_COMPACT);
    int rc;

    if (text == NULL) {
        return -ENOMEM;
    }
    id_key(id, k);
    rc = cm_kv_put(txn, table, k, sizeof(k), text, strlen(text));
    free(text);
    return rc;
}

static json_t *
tenant_to_json(const struct ctl_tenant *t)
{
    json_t *hashes = json_array();
    json_t *j;

    for (int i = 0; i < t->nkeys; i++) {
        json_array_append_new(hashes, json_string(t->key_hash[i]));
    }
    j = json_pack("{s:s, s:f, s:o, s:i, s:i, s:I, s:s}", "name", t->name, "weight", t->weight,
                  "key_hashes", hashes, "ec_k", t->ec_k, "ec_m", t->ec_m, "created_ms",
                  (json_int_t)t->created_ms, "gateway", t->gateway);
    /* Only while a move is asked: most records never carry one. */
    if (j != NULL && t->moving_to[0] != '\0' &&
        json_object_set_new(j, "moving_to", json_string(t->moving_to)) < 0) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* 0 with o[key] copied into gw (CTL_GW_ID_MAX + 1 bytes; absent: left
 * ""), or CM_E_CONFIG when it is not "" or a gateway id. */
static int
gateway_field(json_t *o, const char *key, char *gw)
{
    json_t *v = json_object_get(o, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_string(v) || (json_string_length(v) > 0 &&
                               !cm_gateway_id_valid(json_string_value(v), json_string_length(v)))) {
        return CM_E_CONFIG;
    }
    memcpy(gw, json_string_value(v), json_string_length(v));
    return 0;
}

static int
tenant_from_json(uint32_t id, const char *text, size_t len, struct ctl_tenant *t)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *name, *hashes, *h;
    size_t i;
    int rc = CM_E_CONFIG;

    memset(t, 0, sizeof(*t));
    t->id = id;
    if (!json_is_object(j)) {
        goto out;
    }
    name = json_object_get(j, "name");
    if (!json_is_string(name) ||
        !ctl_valid_name(json_string_value(name), json_string_length(name))) {
        goto out;
    }
    memcpy(t->name, json_string_value(name), json_string_length(name));
    t->weight = json_number_value(json_object_get(j, "weight"));
    t->ec_k = (int)json_integer_value(json_object_get(j, "ec_k"));
    t->ec_m = (int)json_integer_value(json_object_get(j, "ec_m"));
    t->created_ms = (uint64_t)json_integer_value(json_object_get(j, "created_ms"));
    if (!ctl_valid_weight(t->weight) || !ctl_valid_ec(t->ec_k, t->ec_m)) {
        goto out;
    }
    /* Records from before gateways owned tenants have no "gateway":
     * unassigned; those without a move asked have no "moving_to". */
    if (gateway_field(j, "gateway", t->gateway) < 0 ||
        gateway_field(j, "moving_to", t->moving_to) < 0) {
        goto out;
    }
    hashes = json_object_get(j, "key_hashes");
    json_array_foreach(hashes, i, h)
    {
        if (t->nkeys == CTL_MAX_KEYS || !json_is_string(h) || json_string_length(h) != 64) {
            goto out;
        }
        memcpy(t->key_hash[t->nkeys++], json_string_value(h), 65);
    }
    rc = 0;
out:
    json_decref(j);
    return rc;
}

static json_t *
node_to_json(const struct ctl_node *n)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:i}", "addr", n->addr, "metrics_addr", n->metrics_addr,
                     "capacity_bytes", (json_int_t)n->capacity_bytes, "incarnation",
                     (json_int_t)n->incarnation, "retire", n->retire);
}

static int
node_from_json(uint32_t id, const char *text, size_t len, struct ctl_node *n)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    const char *addr, *maddr;
    int rc = CM_E_CONFIG;

    memset(n, 0, sizeof(*n));
    n->id = id;
    if (!json_is_object(j)) {
        goto out;
    }
    addr = json_string_value(json_object_get(j, "addr"));
    maddr = json_string_value(json_object_get(j, "metrics_addr"));
    if (addr == NULL || strlen(addr) >= sizeof(n->addr)) {
        goto out;
    }
    strcpy(n->addr, addr);
    if (maddr != NULL && strlen(maddr) < sizeof(n->metrics_addr)) {
        strcpy(n->metrics_addr, maddr);
    }
    n->capacity_bytes = (uint64_t)json_integer_value(json_object_get(j, "capacity_bytes"));
    n->incarnation = (uint64_t)json_integer_value(json_object_get(j, "incarnation"));
    n->retire = (int)json_integer_value(json_object_get(j, "retire")); /* absent: a member */
    if (n->retire < CTL_NODE_MEMBER || n->retire > CTL_NODE_REMOVED) {
        goto out;
    }
    rc = 0;
out:
    json_decref(j);
    return rc;
}

static uint32_t
key_id(const void *key, size_t klen)
{
    const unsigned char *k = key;

    if (klen != 4) {
        return 0;
    }
    return (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3];
}

static int
load_tenant_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct ctl_store_state *st = arg;
    uint32_t id = key_id(key, klen);
    struct ctl_tenant t;

    if (id == 0 || tenant_from_json(id, val, vlen, &t) < 0) {
        CM_ERROR("store bad tenant record id=%u", id);
        return CM_E_CONFIG;
    }
    st->tenants = cm_realloc(st->tenants, (st->ntenants + 1) * sizeof(t));
    st->tenants[st->ntenants++] = t;
    return 0;
}

static int
load_node_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct ctl_store_state *st = arg;
    struct ctl_node n;

    if (klen != 4 || node_from_json(key_id(key, klen), val, vlen, &n) < 0) {
        CM_ERROR("store bad node record");
        return CM_E_CONFIG;
    }
    st->nodes = cm_realloc(st->nodes, (st->nnodes + 1) * sizeof(n));
    st->nodes[st->nnodes++] = n;
    return 0;
}

static int
load_s3key_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct ctl_store_state *st = arg;
    struct ctl_s3key k;

    if (ctl_s3key_decode(key, klen, val, vlen, &k) < 0) {
        CM_ERROR("store bad s3 key record");
        return CM_E_CONFIG;
    }
    st->s3keys = cm_realloc(st->s3keys, (st->ns3keys + 1) * sizeof(k));
    st->s3keys[st->ns3keys++] = k;
    return 0;
}

int
ctl_store_load(struct ctl_store *s, struct ctl_store_state *st)
{
    struct cm_kv_txn *txn = NULL;
    uint64_t next = 1, parts = 0;
    int rc;

    memset(st, 0, sizeof(*st));
    rc = cm_kv_begin(s->kv, 0, &txn);
    if (rc < 0) {
        goto out;
    }
    if ((rc = get_u64(txn, META_EPOCH, &st->epoch)) < 0 ||
        (rc = get_u64(txn, META_NEXT_ID, &next)) < 0 ||
        (rc = get_u64(txn, META_PARTITIONS, &parts)) < 0) {
        goto out;
    }
    if (next == 0 || next > UINT32_MAX || parts > UINT32_MAX) {
        rc = CM_E_CONFIG;
        goto out;
    }
    st->next_tenant_id = (uint32_t)next;
    st->partitions = (uint32_t)parts;
    rc = cm_kv_scan(txn, T_TENANTS, NULL, 0, load_tenant_cb, st);
    if (rc < 0) {
        goto out;
    }
    rc = cm_kv_scan(txn, T_NODES, NULL, 0, load_node_cb, st);
    if (rc == 0) {
        rc = cm_kv_scan(txn, T_S3KEYS, NULL, 0, load_s3key_cb, st);
    }
out:
    cm_kv_abort(txn);
    if (rc < 0) {
        ctl_store_state_fini(st);
    }
    return rc;
}

void
ctl_store_state_fini(struct ctl_store_state *st)
{
    free(st->tenants);
    free(st->nodes);
    free(st->s3keys);
    memset(st, 0, sizeof(*st));
}

/* Commits txn when rc is 0, aborts otherwise; returns the outcome. */
static int
finish(struct cm_kv_txn *txn, int rc, const char *what)
{
    if (rc < 0) {
        cm_kv_abort(txn);
    } else {
        rc = cm_kv_commit(txn);
    }
    if (rc < 0) {
        CM_ERROR("store write failed op=%s err=%s", what, cm_strerror(rc));
    }
    return rc;
}

int
ctl_store_put_tenant(struct ctl_store *s, const struct ctl_tenant *t, uint64_t epoch,
                     uint32_t next_tenant_id)
{
    return ctl_store_put_tenants(s, t, 1, epoch, next_tenant_id);
}

int
ctl_store_put_tenants(struct ctl_store *s, const struct ctl_tenant *t, size_t n, uint64_t epoch,
                      uint32_t next_tenant_id)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *j = tenant_to_json(&t[i]);

        rc = j == NULL ? -ENOMEM : put_json(txn, T_TENANTS, t[i].id, j);
        json_decref(j);
    }
    if (rc == 0) {
        rc = put_u64(txn, META_EPOCH, epoch);
    }
    if (rc == 0) {
        rc = put_u64(txn, META_NEXT_ID, next_tenant_id);
    }
    return finish(txn, rc, "put_tenant");
}

/* The S3 keys of tenant id, collected by a scan and then deleted (a
 * deletion under LMDB's cursor would move it). */
struct s3_of {
    uint32_t tenant;
    size_t n;
    char (*ids)[CTL_S3_ID_LEN];
};

static int
s3_of_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct s3_of *o = arg;
    struct ctl_s3key k;

    if (ctl_s3key_decode(key, klen, val, vlen, &k) < 0) {
        return CM_E_CONFIG;
    }
    if (k.tenant == o->tenant) {
        o->ids = cm_realloc(o->ids, (o->n + 1) * sizeof(*o->ids));
        memcpy(o->ids[o->n++], k.id, CTL_S3_ID_LEN);
    }
    return 0;
}

static int
del_s3keys_of(struct cm_kv_txn *txn, uint32_t tenant)
{
    struct s3_of o = {tenant, 0, NULL};
    int rc = cm_kv_scan(txn, T_S3KEYS, NULL, 0, s3_of_cb, &o);

    for (size_t i = 0; rc == 0 && i < o.n; i++) {
        rc = cm_kv_del(txn, T_S3KEYS, o.ids[i], CTL_S3_ID_LEN);
    }
    free(o.ids);
    return rc;
}

int
ctl_store_del_tenant(struct ctl_store *s, uint32_t id, uint64_t epoch)
{
    struct cm_kv_txn *txn;
    unsigned char k[4];
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    id_key(id, k);
    rc = cm_kv_del(txn, T_TENANTS, k, sizeof(k));
    if (rc == 0) {
        rc = del_s3keys_of(txn, id);
    }
    if (rc == 0) {
        rc = put_u64(txn, META_EPOCH, epoch);
    }
    return finish(txn, rc, "del_tenant");
}

int
ctl_store_put_node(struct ctl_store *s, const struct ctl_node *n, uint64_t epoch)
{
    struct cm_kv_txn *txn;
    json_t *j;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    j = node_to_json(n);
    rc = j == NULL ? -ENOMEM : put_json(txn, T_NODES, n->id, j);
    json_decref(j);
    if (rc == 0) {
        rc = put_u64(txn, META_EPOCH, epoch);
    }
    return finish(txn, rc, "put_node");
}

int
ctl_store_put_s3keys(struct ctl_store *s, const struct ctl_s3key *k, size_t n, uint64_t epoch)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *rec = ctl_s3key_encode(&k[i]);

        rc = rec == NULL ? -ENOMEM
                         : cm_kv_put(txn, T_S3KEYS, k[i].id, CTL_S3_ID_LEN, rec, strlen(rec));
        free(rec);
    }
    if (rc == 0 && epoch != 0) {
        rc = put_u64(txn, META_EPOCH, epoch);
    }
    return finish(txn, rc, "put_s3keys");
}

int
ctl_store_del_s3key(struct ctl_store *s, const char *id, uint64_t epoch)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    rc = cm_kv_del(txn, T_S3KEYS, id, strlen(id));
    if (rc == 0) {
        rc = put_u64(txn, META_EPOCH, epoch);
    }
    return finish(txn, rc, "del_s3key");
}

int
ctl_store_put_meta(struct ctl_store *s, uint64_t epoch, uint32_t partitions)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    rc = put_u64(txn, META_EPOCH, epoch);
    if (rc == 0) {
        rc = put_u64(txn, META_PARTITIONS, partitions);
    }
    return finish(txn, rc, "put_meta");
}

/* ---- the "sms" table ---- */

struct sms_load {
    size_t n;
    struct ctl_store_sms *r;
};

static int
load_sms_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct sms_load *x = arg;
    const unsigned char *k = key;
    struct ctl_store_sms *r;

    if (klen != 5 || (k[0] != 't' && k[0] != 'n')) {
        CM_ERROR("store bad sms record key");
        return CM_E_CONFIG;
    }
    x->r = cm_realloc(x->r, (x->n + 1) * sizeof(*x->r));
    r = &x->r[x->n++];
    r->kind = (char)k[0];
    r->id = key_id(k + 1, 4);
    r->text = cm_malloc(vlen + 1);
    memcpy(r->text, val, vlen);
    r->text[vlen] = '\0';
    r->len = vlen;
    return 0;
}

int
ctl_store_load_sms(struct ctl_store *s, struct ctl_store_sms **out, size_t *n)
{
    struct sms_load x = {0, NULL};
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 0, &txn);

    if (rc == 0) {
        rc = cm_kv_scan(txn, T_SMS, NULL, 0, load_sms_cb, &x);
        cm_kv_abort(txn);
    }
    if (rc < 0) {
        ctl_store_sms_free(x.r, x.n);
        x.r = NULL;
        x.n = 0;
    }
    *out = x.r;
    *n = x.n;
    return rc;
}

void
ctl_store_sms_free(struct ctl_store_sms *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].text);
    }
    free(r);
}

static int
sms_key_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct cm_buf *keys = arg;
    unsigned char k[5] = {0};

    (void)val;
    (void)vlen;
    memcpy(k, key, klen < sizeof(k) ? klen : sizeof(k));
    cm_buf_append(keys, k, sizeof(k));
    return klen == sizeof(k) ? 0 : CM_E_CONFIG;
}

int
ctl_store_put_sms(struct ctl_store *s, const struct ctl_store_sms *r, size_t n)
{
    struct cm_kv_txn *txn;
    struct cm_buf keys;
    unsigned char k[5];
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    /* Deletes after the scan: a deletion under LMDB's cursor would move it. */
    cm_buf_init(&keys);
    rc = cm_kv_scan(txn, T_SMS, NULL, 0, sms_key_cb, &keys);
    for (size_t off = 0; rc == 0 && off < keys.len; off += sizeof(k)) {
        rc = cm_kv_del(txn, T_SMS, keys.p + off, sizeof(k));
    }
    cm_buf_fini(&keys);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        k[0] = (unsigned char)r[i].kind;
        id_key(r[i].id, k + 1);
        rc = cm_kv_put(txn, T_SMS, k, sizeof(k), r[i].text, r[i].len);
    }
    return finish(txn, rc, "put_sms");
}

/* ---- placement (ctl_pp_record.c owns the record format) ---- */

int
ctl_store_put_placement(struct ctl_store *s, const struct ctl_store_prec *r, size_t n,
                        uint64_t epoch, const char *solver)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(s->kv, 1, &txn);

    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        unsigned char k[4];

        id_key(r[i].tenant, k);
        rc = r[i].text != NULL ? cm_kv_put(txn, T_PLACEMENT, k, sizeof(k), r[i].text, r[i].len)
                               : cm_kv_del(txn, T_PLACEMENT, k, sizeof(k));
        if (rc == CM_E_NOTFOUND) {
            rc = 0;
        }
    }
    if (rc == 0) {
        rc = put_u64(txn, META_PLACEMENT_EPOCH, epoch);
    }
    if (rc == 0) {
        rc = cm_kv_put(txn, T_META, META_PLACEMENT_SOLVER, strlen(META_PLACEMENT_SOLVER), solver,
                       strlen(solver));
    }
    return finish(txn, rc, "put_placement");
}

struct prec_scan {
    int (*cb)(void *arg, uint32_t tenant, const char *text, size_t len);
    void *arg;
};

static int
load_prec_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct prec_scan *ps = arg;
    uint32_t id = key_id(key, klen);

    if (id == 0) {
        CM_ERROR("store bad placement record");
        return CM_E_CONFIG;
    }
    return ps->cb(ps->arg, id, val, vlen);
}

int
ctl_store_load_placement(struct ctl_store *s, uint64_t *epoch, char *solver, size_t cap,
                         int (*cb)(void *arg, uint32_t tenant, const char *text, size_t len),
                         void *arg)
{
    struct prec_scan ps = {cb, arg};
    struct cm_kv_txn *txn = NULL;
    const void *val;
    size_t vlen;
    int rc = cm_kv_begin(s->kv, 0, &txn);

    *epoch = 0;
    if (cap > 0) {
        solver[0] = '\0';
    }
    if (rc < 0) {
        return rc;
    }
    rc = get_u64(txn, META_PLACEMENT_EPOCH, epoch);
    if (rc == 0) {
        rc = cm_kv_get(txn, T_META, META_PLACEMENT_SOLVER, strlen(META_PLACEMENT_SOLVER), &val,
                       &vlen);
        if (rc == 0 && vlen < cap) {
            memcpy(solver, val, vlen);
            solver[vlen] = '\0';
        }
        rc = rc == CM_E_NOTFOUND ? 0 : rc;
    }
    if (rc == 0) {
        rc = cm_kv_scan(txn, T_PLACEMENT, NULL, 0, load_prec_cb, &ps);
    }
    cm_kv_abort(txn);
    return rc;
}
