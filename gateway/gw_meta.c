/*
 * gw_meta.c - object metadata in LMDB (see gw_meta.h): the groups, open
 * and close, and every read. Writes are in gw_meta_write.c, the records
 * in gw_meta_rec.c.
 *
 * LMDB keys are at most 511 bytes but object keys reach 1024, so the
 * objects and tombs tables are keyed by a *group key*: tenant u32 BE
 * followed by the first GW_META_INLINE bytes of the object key. Its value
 * is the *group*: the members, one per object key that maps to it, sorted
 * by full key:
 *
 *   member := klen u16 LE | key[klen] | vlen u16 LE | value[vlen]
 *
 * Keys shorter than GW_META_INLINE have a group of their own. Ordering
 * holds: comparing two group keys bytewise orders their keys as the full
 * keys would be ordered (a key that is a prefix of another sorts first both
 * ways), and inside a group the members are sorted. So a LIST is one cursor
 * scan, and all operations stay O(group size), which is 1 except for many
 * long keys sharing their first 480 bytes.
 *
 * Threads: see gw_meta.h. Invariants: pending holds exactly the objects
 * that are a live version of their key and that the engine has not
 * reported done (every chunk persisted and the META record logged; stale
 * entries are tolerated on read and dropped on update), and the deletes
 * whose tombstone record is not logged. A record's persisted bits count
 * only while its object is pending: an object leaves pending without its
 * record being rewritten, so a record outside pending may still show the
 * bits it was written with. A live composite's parts are live at their
 * keys (gw_meta_put's caller checks; nothing but a delete or a
 * replacement of the composite, or a purge, removes them).
 */
#include "gw_meta_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_kv.h"
#include "cm_time.h"
#include "gw_parse.h"

static const char *const table_names[T_COUNT] = {"objects", "tombs", "pending", "state"};

static uint64_t
get_be64(const uint8_t *p)
{
    return (uint64_t)cm_get_be32(p) << 32 | cm_get_be32(p + 4);
}

/* ---- internal keys ---- */

size_t
gw_meta_bucket_key(const char *name, size_t nlen, char *out)
{
    out[0] = '\0';
    out[1] = 'b';
    memcpy(out + 2, name, nlen);
    return 2 + nlen;
}

size_t
gw_meta_upload_key(const char *id, char *out)
{
    out[0] = '\0';
    out[1] = 'u';
    memcpy(out + 2, id, GW_META_UPLOAD_ID_LEN);
    return 2 + GW_META_UPLOAD_ID_LEN;
}

size_t
gw_meta_part_key(const char *id, unsigned n, char *out)
{
    char num[8];

    out[0] = '\0';
    out[1] = 'p';
    memcpy(out + 2, id, GW_META_UPLOAD_ID_LEN);
    snprintf(num, sizeof(num), "/%05u", n % 100000);
    memcpy(out + 2 + GW_META_UPLOAD_ID_LEN, num, 6);
    return GW_META_PART_KEY_LEN;
}

/* Keys named by an upload id: never written again once deleted. */
int
gw_meta_once_key(const char *key, size_t klen)
{
    return klen >= 2 && key[0] == '\0' && (key[1] == 'u' || key[1] == 'p');
}

/* ---- groups ---- */

size_t
gw_meta_group_key(uint32_t tenant, const char *key, size_t klen, uint8_t *out)
{
    size_t n = klen < GW_META_INLINE ? klen : GW_META_INLINE;

    cm_put_be32(out, tenant);
    memcpy(out + 4, key, n);
    return 4 + n;
}

/* Iterates a group: 1 with *e filled, 0 at the end, CM_E_PROTO if torn. */
int
gw_meta_group_next(const uint8_t *b, size_t blen, size_t *pos, struct gw_meta_member *e)
{
    size_t p = *pos;

    if (p == blen) {
        return 0;
    }
    if (blen - p < 2) {
        return CM_E_PROTO;
    }
    e->klen = (size_t)b[p] | (size_t)b[p + 1] << 8;
    p += 2;
    if (blen - p < e->klen + 2) {
        return CM_E_PROTO;
    }
    e->key = (const char *)b + p;
    p += e->klen;
    e->vlen = (size_t)b[p] | (size_t)b[p + 1] << 8;
    p += 2;
    if (blen - p < e->vlen) {
        return CM_E_PROTO;
    }
    e->val = b + p;
    p += e->vlen;
    *pos = p;
    return 1;
}

int
gw_meta_keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static void
group_append(struct cm_buf *out, const char *key, size_t klen, const void *val, size_t vlen)
{
    uint8_t h[2];

    h[0] = (uint8_t)klen;
    h[1] = (uint8_t)(klen >> 8);
    cm_buf_append(out, h, 2);
    cm_buf_append(out, key, klen);
    h[0] = (uint8_t)vlen;
    h[1] = (uint8_t)(vlen >> 8);
    cm_buf_append(out, h, 2);
    cm_buf_append(out, val, vlen);
}

/* Finds key in its group of table: 0 with *val and *vlen borrowed (txn), or
 * CM_E_NOTFOUND. */
int
gw_meta_group_get(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
                  const uint8_t **val, size_t *vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = gw_meta_group_key(tenant, key, klen, gk);
    const void *b;
    size_t blen, pos = 0;
    struct gw_meta_member e;
    int rc;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0) {
        return rc;
    }
    while ((rc = gw_meta_group_next(b, blen, &pos, &e)) == 1) {
        if (gw_meta_keycmp(e.key, e.klen, key, klen) == 0) {
            *val = e.val;
            *vlen = e.vlen;
            return 0;
        }
    }
    return rc < 0 ? rc : CM_E_NOTFOUND;
}

/* Sets (val != NULL) or removes key in its group. Removing an absent key is
 * CM_E_NOTFOUND. */
int
gw_meta_group_set(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
                  const void *val, size_t vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = gw_meta_group_key(tenant, key, klen, gk);
    const void *b = NULL;
    size_t blen = 0, pos = 0;
    struct cm_buf nb;
    struct gw_meta_member e;
    int rc, done = 0, found = 0;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    cm_buf_init(&nb);
    if (rc == 0) {
        while ((rc = gw_meta_group_next(b, blen, &pos, &e)) == 1) {
            int c = gw_meta_keycmp(e.key, e.klen, key, klen);
            if (c == 0) {
                found = 1;
                continue;
            }
            if (c > 0 && !done) {
                if (val != NULL) {
                    group_append(&nb, key, klen, val, vlen);
                }
                done = 1;
            }
            group_append(&nb, e.key, e.klen, e.val, e.vlen);
        }
        if (rc < 0) {
            goto out;
        }
    }
    if (!done && val != NULL) {
        group_append(&nb, key, klen, val, vlen);
    }
    if (val == NULL && !found) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (nb.len == 0) {
        rc = cm_kv_del(txn, table, gk, gklen);
    } else {
        rc = cm_kv_put(txn, table, gk, gklen, nb.p, nb.len);
    }
out:
    cm_buf_fini(&nb);
    return rc;
}

/* ---- open / close ---- */

int
gw_meta_open(const char *dir, size_t map_size, struct gw_meta **out)
{
    struct gw_meta *m = cm_calloc(1, sizeof(*m));
    /* Every acknowledged PUT waits for a commit: one flush, not two. */
    int rc = cm_kv_open(dir, map_size, table_names, T_COUNT, CM_KV_REDO, &m->kv);

    if (rc != 0) {
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void
gw_meta_close(struct gw_meta *m)
{
    if (m == NULL) {
        return;
    }
    cm_kv_close(m->kv);
    free(m);
}

/* ---- reads ---- */

int
gw_meta_get(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen, struct gw_layout *out)
{
    struct cm_kv_txn *txn;
    const uint8_t *v;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_tags(v, vlen, out);
    }
    cm_kv_abort(txn);
    return rc;
}

/* The layouts of the parts a (a composite's) names, tags included, into
 * *out (calloc'd): 0, CM_E_PROTO (a part missing), -ENOMEM. */
static int
parts_read(struct cm_kv_txn *txn, uint32_t tenant, const struct gw_meta_attrs *a,
           struct gw_layout **out)
{
    struct gw_layout *v = calloc(a->nparts, sizeof(*v));
    int rc = v == NULL ? -ENOMEM : 0;

    for (uint32_t i = 0; rc == 0 && i < a->nparts; i++) {
        char pk[GW_META_PART_KEY_LEN];
        size_t pklen = gw_meta_part_key(a->upload, gw_meta_part_no(a, i), pk);
        const uint8_t *pv;
        size_t pvlen;

        rc = gw_meta_group_get(txn, T_OBJECTS, tenant, pk, pklen, &pv, &pvlen);
        if (rc == 0) {
            rc = gw_meta_decode_tags(pv, pvlen, &v[i]);
        }
        if (rc == 0 && gw_layout_record_only(&v[i])) {
            rc = CM_E_PROTO;
        }
        rc = rc == CM_E_NOTFOUND ? CM_E_PROTO : rc;
    }
    if (rc != 0 && v != NULL) {
        for (uint32_t i = 0; i < a->nparts; i++) {
            gw_layout_fini(&v[i]);
        }
        free(v);
        v = NULL;
    }
    *out = v;
    return rc;
}

int
gw_meta_get_obj(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                struct gw_meta_obj *out)
{
    struct cm_kv_txn *txn;
    const uint8_t *v;
    size_t vlen;
    int rc;

    memset(&out->lay, 0, sizeof(out->lay));
    memset(&out->a, 0, sizeof(out->a));
    out->parts = NULL;
    rc = cm_kv_begin(m->kv, 0, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_full(v, vlen, &out->lay, &out->a);
    }
    if (rc == 0 && out->a.nparts > 0) {
        rc = parts_read(txn, tenant, &out->a, &out->parts);
    }
    if (rc == 0 && out->a.hdrs != NULL) {
        memcpy(out->hdrs, out->a.hdrs, out->a.hdrs_len);
        out->a.hdrs = out->hdrs;
    }
    if (rc == 0 && out->a.target != NULL) {
        memcpy(out->target, out->a.target, out->a.target_len);
        out->a.target = out->target;
    }
    out->a.upload = NULL; /* they point into the transaction's pages */
    out->a.parts = NULL;
    cm_kv_abort(txn);
    return rc;
}

void
gw_meta_obj_fini(struct gw_meta_obj *o)
{
    gw_layout_fini(&o->lay);
    for (uint32_t i = 0; o->parts != NULL && i < o->a.nparts; i++) {
        gw_layout_fini(&o->parts[i]);
    }
    free(o->parts);
    o->parts = NULL;
}

struct scan_ctx {
    uint32_t tenant;
    const char *prefix;
    size_t plen;
    const char *after;
    size_t alen;
    gw_meta_scan_cb cb;
    void *arg;
    int err;
};

/* 1 = stop the scan. */
static int
scan_group(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct scan_ctx *c = arg;
    size_t pos = 0;
    struct gw_meta_member e;
    int rc;

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    while ((rc = gw_meta_group_next(v, vlen, &pos, &e)) == 1) {
        struct gw_layout l;
        struct gw_meta_attrs a;

        if (c->after != NULL && gw_meta_keycmp(e.key, e.klen, c->after, c->alen) <= 0) {
            continue;
        }
        if (e.klen < c->plen || memcmp(e.key, c->prefix, c->plen) != 0) {
            if (gw_meta_keycmp(e.key, e.klen, c->prefix, c->plen) > 0) {
                return 1; /* past every key with the prefix */
            }
            continue;
        }
        if (e.klen > 0 && e.key[0] == '\0' && (c->plen == 0 || c->prefix[0] != '\0')) {
            continue; /* internal, not asked for */
        }
        if (gw_meta_decode_attrs(e.val, e.vlen, &l, &a) != 0) {
            c->err = CM_E_PROTO;
            return 1;
        }
        if (c->cb(c->arg, e.key, e.klen, &l, &a) != 0) {
            return 1;
        }
    }
    if (rc < 0) {
        c->err = rc;
        return 1;
    }
    return 0;
}

int
gw_meta_scan_txn(struct cm_kv_txn *txn, uint32_t tenant, const char *prefix, size_t plen,
                 const char *after, size_t alen, gw_meta_scan_cb cb, void *arg)
{
    struct scan_ctx c = {tenant, prefix, plen, after, alen, cb, arg, 0};
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen;
    int rc;

    if (after != NULL && gw_meta_keycmp(after, alen, prefix, plen) > 0) {
        gklen = gw_meta_group_key(tenant, after, alen, gk);
    } else {
        gklen = gw_meta_group_key(tenant, prefix, plen, gk);
    }
    rc = cm_kv_scan(txn, T_OBJECTS, gk, gklen, scan_group, &c);
    return rc < 0 ? rc : c.err;
}

int
gw_meta_scan(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
             size_t alen, gw_meta_scan_cb cb, void *arg)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_scan_txn(txn, tenant, prefix, plen, after, alen, cb, arg);
    cm_kv_abort(txn);
    return rc;
}

struct list_ctx {
    unsigned limit, n;
    gw_meta_list_cb cb;
    void *arg;
    int more;
};

static int
list_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
         const struct gw_meta_attrs *a)
{
    struct list_ctx *c = arg;

    (void)a;
    if (c->n == c->limit) {
        c->more = 1;
        return 1;
    }
    c->cb(c->arg, key, klen, l);
    c->n++;
    return 0;
}

int
gw_meta_list(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
             size_t alen, unsigned limit, gw_meta_list_cb cb, void *arg, int *more)
{
    struct list_ctx c = {limit, 0, cb, arg, 0};
    int rc = gw_meta_scan(m, tenant, prefix, plen, after, alen, list_one, &c);

    if (rc == 0) {
        *more = c.more;
    }
    return rc;
}

struct pending_ctx {
    struct cm_kv_txn *txn;
    void (*cb)(void *arg, const struct gw_pending *p);
    void *arg;
    int err;
};

static int
pending_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pending_ctx *c = arg;
    const uint8_t *rec;
    size_t rlen;
    struct gw_layout l;
    struct gw_meta_attrs a;
    struct gw_pending p = {0};
    int rc;

    if (klen == 16 && vlen >= 6) { /* a tombstone */
        memset(&l, 0, sizeof(l));
        l.object = get_be64(k);
        l.version = get_be64((const uint8_t *)k + 8);
        l.tenant = cm_get_be32(v);
        l.m = ((const uint8_t *)v)[4];
        p.tomb = 1;
        p.key = (const char *)v + 5;
        p.klen = vlen - 5;
        p.lay = &l;
        c->cb(c->arg, &p);
        return 0;
    }
    if (klen != 8 || vlen < 5 ||
        gw_meta_group_get(c->txn, T_OBJECTS, cm_get_be32(v), (const char *)v + 4, vlen - 4, &rec,
                          &rlen) != 0) {
        return 0;
    }
    rc = gw_meta_decode_full(rec, rlen, &l, &a);
    if (rc == -ENOMEM) {
        c->err = rc;
        return 1;
    }
    if (rc == 0 && l.object == get_be64(k)) {
        p.key = (const char *)v + 4;
        p.klen = vlen - 4;
        p.lay = &l;
        p.attrs = &a;
        c->cb(c->arg, &p);
    }
    gw_layout_fini(&l);
    return 0;
}

int
gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_pending *p),
                     void *arg)
{
    struct pending_ctx c = {NULL, cb, arg, 0};
    int rc = cm_kv_begin(m->kv, 0, &c.txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(c.txn, T_PENDING, NULL, 0, pending_one, &c);
    cm_kv_abort(c.txn);
    return rc < 0 ? rc : c.err;
}

static int
any_row(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    (void)k;
    (void)klen;
    (void)v;
    (void)vlen;
    *(int *)arg = 1;
    return 1;
}

int
gw_meta_is_empty(struct gw_meta *m, int *empty)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn), any = 0;

    if (rc != 0) {
        return rc;
    }
    for (int t = T_OBJECTS; t <= T_PENDING && rc >= 0 && !any; t++) {
        rc = cm_kv_scan(txn, t, NULL, 0, any_row, &any);
    }
    cm_kv_abort(txn);
    *empty = !any;
    return rc < 0 ? rc : 0;
}

struct ids_ctx {
    int (*cb)(void *arg, uint32_t tenant, uint64_t object);
    void *arg;
    int err;
};

/* 1 = stop the scan. */
static int
ids_group(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct ids_ctx *c = arg;
    size_t pos = 0;
    struct gw_meta_member e;
    int rc;

    if (klen < 4) {
        c->err = CM_E_PROTO;
        return 1;
    }
    while ((rc = gw_meta_group_next(v, vlen, &pos, &e)) == 1) {
        struct gw_layout l;

        if (gw_meta_decode(e.val, e.vlen, &l) != 0) {
            c->err = CM_E_PROTO;
            return 1;
        }
        if (!gw_layout_record_only(&l) && (c->err = c->cb(c->arg, cm_get_be32(k), l.object)) != 0) {
            return 1;
        }
    }
    if (rc < 0) {
        c->err = rc;
        return 1;
    }
    return 0;
}

int
gw_meta_scan_ids(struct gw_meta *m, int (*cb)(void *arg, uint32_t tenant, uint64_t object),
                 void *arg)
{
    struct ids_ctx c = {cb, arg, 0};
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(txn, T_OBJECTS, NULL, 0, ids_group, &c);
    cm_kv_abort(txn);
    return rc < 0 ? rc : c.err;
}

struct tenant_ctx {
    uint32_t found;
    int any;
};

static int
first_tenant(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct tenant_ctx *c = arg;

    (void)v;
    (void)vlen;
    if (klen >= 4) {
        c->found = cm_get_be32(k);
        c->any = 1;
    }
    return 1;
}

int
gw_meta_tenants(struct gw_meta *m, void (*cb)(void *arg, uint32_t tenant), void *arg)
{
    struct cm_kv_txn *txn;
    uint32_t next[2] = {0, 0};
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    /* Skip from tenant to tenant: one seek per tenant, not per object. */
    for (;;) {
        uint32_t best = 0;
        int have = 0;
        for (int t = 0; t < 2; t++) {
            struct tenant_ctx c = {0, 0};
            uint8_t gk[4];
            if (next[t] == UINT32_MAX) {
                continue;
            }
            cm_put_be32(gk, next[t]);
            rc = cm_kv_scan(txn, t == 0 ? T_OBJECTS : T_TOMBS, gk, 4, first_tenant, &c);
            if (rc < 0) {
                goto out;
            }
            if (c.any && (!have || c.found < best)) {
                best = c.found;
                have = 1;
            }
            if (!c.any) {
                next[t] = UINT32_MAX;
            }
        }
        if (!have) {
            break;
        }
        cb(arg, best);
        if (best == UINT32_MAX) {
            break;
        }
        next[0] = next[0] == UINT32_MAX ? UINT32_MAX : best + 1;
        next[1] = next[1] == UINT32_MAX ? UINT32_MAX : best + 1;
    }
    rc = 0;
out:
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_state_load(struct gw_meta *m, char **json, size_t *len)
{
    struct cm_kv_txn *txn;
    const void *v;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_get(txn, T_STATE, "last", 4, &v, &vlen);
    if (rc == 0) {
        char *s = cm_malloc(vlen + 1);
        memcpy(s, v, vlen);
        s[vlen] = '\0';
        *json = s;
        *len = vlen;
    }
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_state_save(struct gw_meta *m, const char *json, size_t len)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 1, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_put(txn, T_STATE, "last", 4, json, len);
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}

int
gw_meta_mark_get(struct gw_meta *m, const char *name, uint64_t *v)
{
    struct cm_kv_txn *txn;
    const void *val;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_get(txn, T_STATE, name, strlen(name), &val, &vlen);
    if (rc == 0) {
        rc = vlen == 8 ? 0 : CM_E_PROTO;
    }
    if (rc == 0) {
        *v = cm_get_le64(val);
    }
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_mark_set(struct gw_meta *m, const char *name, uint64_t v)
{
    struct cm_kv_txn *txn;
    uint8_t b[8];
    int rc = cm_kv_begin(m->kv, 1, &txn);

    if (rc != 0) {
        return rc;
    }
    cm_put_le64(b, v);
    rc = cm_kv_put(txn, T_STATE, name, strlen(name), b, sizeof(b));
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}
