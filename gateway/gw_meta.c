/*
 * gw_meta.c - object metadata in LMDB (see gw_meta.h).
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
 * Layout record (value in objects), little-endian:
 *   0 fmt u8 (1 or 2) | 1 k u8 | 2 m u8 | 3 pad | 4 tenant u32 | 8 chunk_size u32 |
 *   12 nstripes u32 | 16 object | 24 version | 32 size | 40 etag |
 *   48 persisted (u64 each) | 56 holders u32[k+m] |
 *   format 2: tags u32[nstripes * (k+m)], by wire index (0 = unknown)
 * A later format appends after the tags, so each format's decoder is the
 * last one's plus a section.
 *
 * Threads: see gw_meta.h. Invariants: pending holds exactly the objects
 * that are a live version of their key and that the engine has not
 * reported done (every chunk persisted and the META record logged; stale
 * entries are tolerated on read and dropped on update), and the deletes
 * whose tombstone record is not logged. A record's persisted bits count
 * only while its object is pending: an object leaves pending without its
 * record being rewritten, so a record outside pending may still show the
 * bits it was written with.
 */
#include "gw_meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_kv.h"
#include "gw_parse.h"

#define GW_META_INLINE 480
#define GROUP_KEY_MAX (4 + GW_META_INLINE)

enum { T_OBJECTS, T_TOMBS, T_PENDING, T_STATE, T_COUNT };
static const char *const table_names[T_COUNT] = {"objects", "tombs", "pending", "state"};

struct gw_meta {
    struct cm_kv *kv;
};

struct gw_meta_batch {
    struct cm_kv_txn *txn;
};

#define REC_HDR 56

size_t
gw_meta_rec_len(const struct gw_layout *l)
{
    size_t base = REC_HDR + 4 * ((size_t)l->k + l->m);

    if (l->tags != NULL && gw_layout_nchunks(l) <= (GW_META_REC_LIMIT - base) / 4) {
        return base + 4 * gw_layout_nchunks(l);
    }
    return base;
}

size_t
gw_meta_encode(const struct gw_layout *l, uint8_t *buf)
{
    unsigned n = (unsigned)l->k + l->m;
    size_t len = gw_meta_rec_len(l), base = REC_HDR + 4 * (size_t)n;

    memset(buf, 0, REC_HDR);
    buf[0] = len > base ? 2 : 1;
    buf[1] = l->k;
    buf[2] = l->m;
    cm_put_le32(buf + 4, l->tenant);
    cm_put_le32(buf + 8, l->chunk_size);
    cm_put_le32(buf + 12, l->nstripes);
    cm_put_le64(buf + 16, l->object);
    cm_put_le64(buf + 24, l->version);
    cm_put_le64(buf + 32, l->size);
    cm_put_le64(buf + 40, l->etag);
    cm_put_le64(buf + 48, l->persisted);
    for (unsigned j = 0; j < n && j < GW_MAX_HOLDERS; j++) {
        cm_put_le32(buf + REC_HDR + 4 * j, l->holders[j]);
    }
    for (size_t i = 0; base + 4 * i < len; i++) {
        cm_put_le32(buf + base + 4 * i, l->tags[i]);
    }
    return len;
}

/* Decodes a record; with_tags: format 2's tags into a malloc'd array. */
static int
decode(const void *buf, size_t len, struct gw_layout *out, int with_tags)
{
    const uint8_t *p = buf;
    unsigned n;
    size_t base;

    memset(out, 0, sizeof(*out));
    if (len < REC_HDR || len > GW_META_REC_LIMIT || (p[0] != 1 && p[0] != 2)) {
        return CM_E_PROTO;
    }
    n = (unsigned)p[1] + p[2];
    base = REC_HDR + 4 * (size_t)n;
    if (p[1] == 0 || p[3] != 0 || n > GW_MAX_HOLDERS) {
        return CM_E_PROTO;
    }
    out->k = p[1];
    out->m = p[2];
    out->tenant = cm_get_le32(p + 4);
    out->chunk_size = cm_get_le32(p + 8);
    out->nstripes = cm_get_le32(p + 12);
    /* format 1: holders only; format 2: one tag per chunk after them (an
     * empty object has none: it is written as format 1) */
    if (len != base + (p[0] == 2 ? 4 * (uint64_t)gw_layout_nchunks(out) : 0) ||
        (p[0] == 2 && gw_layout_nchunks(out) == 0)) {
        memset(out, 0, sizeof(*out));
        return CM_E_PROTO;
    }
    out->object = cm_get_le64(p + 16);
    out->version = cm_get_le64(p + 24);
    out->size = cm_get_le64(p + 32);
    out->etag = cm_get_le64(p + 40);
    out->persisted = cm_get_le64(p + 48);
    for (unsigned j = 0; j < n; j++) {
        out->holders[j] = cm_get_le32(p + REC_HDR + 4 * j);
    }
    if (with_tags && p[0] == 2 && gw_layout_nchunks(out) > 0) {
        out->tags = malloc(gw_layout_nchunks(out) * sizeof(*out->tags));
        if (out->tags == NULL) {
            return -ENOMEM;
        }
        for (size_t i = 0; i < gw_layout_nchunks(out); i++) {
            out->tags[i] = cm_get_le32(p + base + 4 * i);
        }
    }
    return 0;
}

int
gw_meta_decode(const void *buf, size_t len, struct gw_layout *out)
{
    return decode(buf, len, out, 0);
}

int
gw_meta_decode_tags(const void *buf, size_t len, struct gw_layout *out)
{
    return decode(buf, len, out, 1);
}

/* ---- META records ---- */

size_t
gw_mrec_len(const struct gw_mrec *m)
{
    return 1 + 4 + 2 + m->klen + 8 + (m->kind == GW_MREC_VERSION ? 4 + m->rec_len : 0);
}

void
gw_mrec_encode(const struct gw_mrec *m, uint8_t *out)
{
    out[0] = m->kind;
    cm_put_le32(out + 1, m->tenant);
    cm_put_le16(out + 5, (uint16_t)m->klen);
    memcpy(out + 7, m->key, m->klen);
    out += 7 + m->klen;
    cm_put_le64(out, m->version);
    if (m->kind == GW_MREC_VERSION) {
        cm_put_le32(out + 8, (uint32_t)m->rec_len);
        if (m->rec_len > 0) {
            memcpy(out + 12, m->rec, m->rec_len);
        }
    }
}

int
gw_mrec_decode(const void *buf, size_t len, struct gw_mrec *out)
{
    const uint8_t *p = buf;
    size_t klen, at;

    memset(out, 0, sizeof(*out));
    if (len < 7 || (p[0] != GW_MREC_VERSION && p[0] != GW_MREC_TOMB)) {
        return CM_E_PROTO;
    }
    klen = cm_get_le16(p + 5);
    if (klen == 0 || len - 7 < klen + 8) {
        return CM_E_PROTO;
    }
    at = 7 + klen + 8;
    if (p[0] == GW_MREC_TOMB ? at != len : len - at < 4 || len - at - 4 != cm_get_le32(p + at)) {
        return CM_E_PROTO;
    }
    out->kind = p[0];
    out->tenant = cm_get_le32(p + 1);
    out->key = (const char *)p + 7;
    out->klen = klen;
    out->version = cm_get_le64(p + 7 + klen);
    if (out->kind == GW_MREC_VERSION) {
        out->rec = p + at + 4;
        out->rec_len = len - at - 4;
    }
    return 0;
}

int
gw_mrec_newer(const struct gw_mrec *a, const struct gw_mrec *b)
{
    if (a->version != b->version) {
        return a->version > b->version;
    }
    return a->kind == GW_MREC_TOMB && b->kind != GW_MREC_TOMB;
}

int
gw_layout_persisted(const struct gw_layout *l)
{
    unsigned n = (unsigned)l->k + l->m;
    uint64_t full = n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;

    return (l->persisted & full) == full;
}

/* ---- groups ---- */

static size_t
group_key(uint32_t tenant, const char *key, size_t klen, uint8_t *out)
{
    size_t n = klen < GW_META_INLINE ? klen : GW_META_INLINE;

    cm_put_be32(out, tenant);
    memcpy(out + 4, key, n);
    return 4 + n;
}

struct member {
    const char *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
};

/* Iterates a group: 1 with *e filled, 0 at the end, CM_E_PROTO if torn. */
static int
group_next(const uint8_t *b, size_t blen, size_t *pos, struct member *e)
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

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
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
static int
group_get(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
          const uint8_t **val, size_t *vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = group_key(tenant, key, klen, gk);
    const void *b;
    size_t blen, pos = 0;
    struct member e;
    int rc;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0) {
        return rc;
    }
    while ((rc = group_next(b, blen, &pos, &e)) == 1) {
        if (keycmp(e.key, e.klen, key, klen) == 0) {
            *val = e.val;
            *vlen = e.vlen;
            return 0;
        }
    }
    return rc < 0 ? rc : CM_E_NOTFOUND;
}

/* Sets (val != NULL) or removes key in its group. Removing an absent key is
 * CM_E_NOTFOUND. */
static int
group_set(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
          const void *val, size_t vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = group_key(tenant, key, klen, gk);
    const void *b = NULL;
    size_t blen = 0, pos = 0;
    struct cm_buf nb;
    struct member e;
    int rc, done = 0, found = 0;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    cm_buf_init(&nb);
    if (rc == 0) {
        while ((rc = group_next(b, blen, &pos, &e)) == 1) {
            int c = keycmp(e.key, e.klen, key, klen);
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
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_tags(v, vlen, out);
    }
    cm_kv_abort(txn);
    return rc;
}

struct list_ctx {
    uint32_t tenant;
    const char *prefix;
    size_t plen;
    const char *after;
    size_t alen;
    unsigned limit, n;
    gw_meta_list_cb cb;
    void *arg;
    int more;
    int err;
};

/* 1 = stop the scan. */
static int
list_group(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct list_ctx *c = arg;
    size_t pos = 0;
    struct member e;
    int rc;

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    while ((rc = group_next(v, vlen, &pos, &e)) == 1) {
        struct gw_layout l;
        if (c->after != NULL && keycmp(e.key, e.klen, c->after, c->alen) <= 0) {
            continue;
        }
        if (e.klen < c->plen || memcmp(e.key, c->prefix, c->plen) != 0) {
            if (keycmp(e.key, e.klen, c->prefix, c->plen) > 0) {
                return 1; /* past every key with the prefix */
            }
            continue;
        }
        if (c->n == c->limit) {
            c->more = 1;
            return 1;
        }
        if (gw_meta_decode(e.val, e.vlen, &l) != 0) {
            c->err = CM_E_PROTO;
            return 1;
        }
        c->cb(c->arg, e.key, e.klen, &l);
        c->n++;
    }
    if (rc < 0) {
        c->err = rc;
        return 1;
    }
    return 0;
}

int
gw_meta_list(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
             size_t alen, unsigned limit, gw_meta_list_cb cb, void *arg, int *more)
{
    struct list_ctx c = {tenant, prefix, plen, after, alen, limit, 0, cb, arg, 0, 0};
    struct cm_kv_txn *txn;
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen;
    int rc;

    if (after != NULL && keycmp(after, alen, prefix, plen) > 0) {
        gklen = group_key(tenant, after, alen, gk);
    } else {
        gklen = group_key(tenant, prefix, plen, gk);
    }
    rc = cm_kv_begin(m->kv, 0, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(txn, T_OBJECTS, gk, gklen, list_group, &c);
    cm_kv_abort(txn);
    if (rc < 0) {
        return rc;
    }
    *more = c.more;
    return c.err;
}

struct pending_ctx {
    struct cm_kv_txn *txn;
    void (*cb)(void *arg, const struct gw_pending *p);
    void *arg;
    int err;
};

static uint64_t
get_be64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static int
pending_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pending_ctx *c = arg;
    const uint8_t *rec;
    size_t rlen;
    struct gw_layout l;
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
        group_get(c->txn, T_OBJECTS, cm_get_be32(v), (const char *)v + 4, vlen - 4, &rec, &rlen) !=
            0) {
        return 0;
    }
    rc = gw_meta_decode_tags(rec, rlen, &l);
    if (rc == -ENOMEM) {
        c->err = rc;
        return 1;
    }
    if (rc == 0 && l.object == get_be64(k)) {
        p.key = (const char *)v + 4;
        p.klen = vlen - 4;
        p.lay = &l;
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

struct tenant_ctx {
    uint32_t found;
    int any;
};

static int
first_tenant(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct tenant_ctx *c = arg;

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

/* ---- writes ---- */

int
gw_meta_batch_begin(struct gw_meta *m, struct gw_meta_batch **out)
{
    struct gw_meta_batch *b = cm_calloc(1, sizeof(*b));
    int rc = cm_kv_begin(m->kv, 1, &b->txn);

    if (rc != 0) {
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

int
gw_meta_batch_commit(struct gw_meta_batch *b)
{
    int rc = cm_kv_commit(b->txn);

    free(b);
    return rc;
}

void
gw_meta_batch_abort(struct gw_meta_batch *b)
{
    if (b == NULL) {
        return;
    }
    cm_kv_abort(b->txn);
    free(b);
}

static int
pending_set(struct cm_kv_txn *txn, uint64_t object, uint32_t tenant, const char *key, size_t klen)
{
    uint8_t k[8], v[4 + GW_KEY_MAX];

    cm_put_be64(k, object);
    cm_put_be32(v, tenant);
    memcpy(v + 4, key, klen);
    return cm_kv_put(txn, T_PENDING, k, 8, v, 4 + klen);
}

static int
pending_del(struct cm_kv_txn *txn, uint64_t object)
{
    uint8_t k[8];
    int rc;

    cm_put_be64(k, object);
    rc = cm_kv_del(txn, T_PENDING, k, 8);
    return rc == CM_E_NOTFOUND ? 0 : rc;
}

/* A deleted version whose tombstone record is to go: (object, version). */
static int
tomb_set(struct cm_kv_txn *txn, const struct gw_layout *old, const char *key, size_t klen)
{
    uint8_t k[16], v[5 + GW_KEY_MAX];

    cm_put_be64(k, old->object);
    cm_put_be64(k + 8, old->version);
    cm_put_be32(v, old->tenant);
    v[4] = old->m;
    memcpy(v + 5, key, klen);
    return cm_kv_put(txn, T_PENDING, k, 16, v, 5 + klen);
}

/* Stores l's record under key in objects. */
static int
record_set(struct cm_kv_txn *txn, const char *key, size_t klen, const struct gw_layout *l)
{
    size_t rlen = gw_meta_rec_len(l);
    uint8_t *rec = cm_malloc(rlen);
    int rc;

    gw_meta_encode(l, rec);
    rc = group_set(txn, T_OBJECTS, l->tenant, key, klen, rec, rlen);
    free(rec);
    return rc;
}

int
gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
            struct gw_layout *old, int *had_old)
{
    const uint8_t *v;
    size_t vlen;
    uint64_t base = 0;
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    *had_old = 0;
    rc = group_get(b->txn, T_OBJECTS, l->tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode(v, vlen, old);
        if (rc != 0) {
            return rc;
        }
        *had_old = 1;
        base = old->version;
        rc = pending_del(b->txn, old->object);
        if (rc != 0) {
            return rc;
        }
    } else if (rc == CM_E_NOTFOUND) {
        rc = group_get(b->txn, T_TOMBS, l->tenant, key, klen, &v, &vlen);
        if (rc == 0 && vlen == 8) {
            base = cm_get_le64(v);
            rc = group_set(b->txn, T_TOMBS, l->tenant, key, klen, NULL, 0);
        }
        if (rc != 0 && rc != CM_E_NOTFOUND) {
            return rc;
        }
    } else {
        return rc;
    }
    l->version = base + 1;
    rc = record_set(b->txn, key, klen, l);
    if (rc == 0) {
        rc = pending_set(b->txn, l->object, l->tenant, key, klen);
    }
    return rc;
}

int
gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
               struct gw_layout *old)
{
    const uint8_t *v;
    size_t vlen;
    uint8_t ver[8];
    int rc;

    rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_decode(v, vlen, old);
    if (rc != 0) {
        return rc;
    }
    cm_put_le64(ver, old->version);
    rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    if (rc == 0) {
        rc = group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
    }
    if (rc == 0) {
        rc = pending_del(b->txn, old->object);
    }
    if (rc == 0) {
        rc = tomb_set(b->txn, old, key, klen);
    }
    return rc;
}

static int
same_tags(const struct gw_layout *a, const struct gw_layout *b)
{
    if (b->tags == NULL) {
        return 1; /* nothing new to store */
    }
    return a->tags != NULL &&
           memcmp(a->tags, b->tags, gw_layout_nchunks(a) * sizeof(*a->tags)) == 0;
}

int
gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, enum gw_report what, int *stale)
{
    uint8_t pk[16];
    char key[GW_KEY_MAX];
    const void *pv;
    const uint8_t *v;
    size_t pvlen, vlen, klen;
    uint32_t tenant;
    struct gw_layout cur = {0};
    uint32_t *own;
    int rc;

    *stale = 1;
    cm_put_be64(pk, l->object);
    if (what == GW_REPORT_TOMB) {
        cm_put_be64(pk + 8, l->version);
        rc = cm_kv_del(b->txn, T_PENDING, pk, 16);
        *stale = rc == CM_E_NOTFOUND;
        return rc == CM_E_NOTFOUND ? 0 : rc;
    }
    rc = cm_kv_get(b->txn, T_PENDING, pk, 8, &pv, &pvlen);
    if (rc == CM_E_NOTFOUND) {
        return 0; /* replaced, deleted or done already */
    }
    if (rc != 0) {
        return rc;
    }
    if (pvlen < 5 || pvlen > 4 + GW_KEY_MAX) {
        return pending_del(b->txn, l->object);
    }
    tenant = cm_get_be32(pv);
    klen = pvlen - 4;
    memcpy(key, (const char *)pv + 4, klen);
    rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_tags(v, vlen, &cur);
    }
    if (rc == CM_E_NOTFOUND || (rc == 0 && cur.object != l->object)) {
        gw_layout_fini(&cur);
        return pending_del(b->txn, l->object);
    }
    if (rc != 0) {
        return rc;
    }
    if (l->k != cur.k || l->m != cur.m || l->nstripes != cur.nstripes) {
        gw_layout_fini(&cur);
        return CM_E_BADARG;
    }
    /* DONE with holders and tags as written: leaving pending says it all
     * (the record's persisted bits count only while pending). */
    if (what == GW_REPORT_CHANGED || !same_tags(&cur, l) ||
        memcmp(cur.holders, l->holders, sizeof(cur.holders[0]) * (cur.k + cur.m)) != 0) {
        memcpy(cur.holders, l->holders, sizeof(cur.holders));
        cur.persisted = l->persisted;
        own = cur.tags;
        if (l->tags != NULL) {
            cur.tags = l->tags; /* borrowed for the encode */
        }
        rc = record_set(b->txn, key, klen, &cur);
        cur.tags = own;
    }
    gw_layout_fini(&cur);
    if (rc == 0 && what == GW_REPORT_DONE) {
        rc = pending_del(b->txn, l->object);
    }
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_move(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
             int *stale)
{
    const uint8_t *v;
    size_t vlen;
    struct gw_layout cur;
    uint32_t *own;
    int rc = group_get(b->txn, T_OBJECTS, l->tenant, key, klen, &v, &vlen);

    *stale = 1;
    if (rc == 0) {
        rc = gw_meta_decode_tags(v, vlen, &cur);
    }
    if (rc == CM_E_NOTFOUND) {
        return 0; /* deleted since */
    }
    if (rc != 0) {
        return rc;
    }
    if (cur.object != l->object) {
        gw_layout_fini(&cur);
        return 0; /* replaced since */
    }
    if (l->k != cur.k || l->m != cur.m || l->nstripes != cur.nstripes) {
        gw_layout_fini(&cur);
        return CM_E_BADARG;
    }
    memcpy(cur.holders, l->holders, sizeof(cur.holders));
    cur.persisted = l->persisted;
    own = cur.tags;
    if (l->tags != NULL) {
        cur.tags = l->tags; /* borrowed for the encode: the moved positions' new tags */
    }
    rc = record_set(b->txn, key, klen, &cur);
    cur.tags = own;
    gw_layout_fini(&cur);
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_restore(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l)
{
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_set(b->txn, T_TOMBS, l->tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    return record_set(b->txn, key, klen, l);
}

int
gw_meta_restore_tomb(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                     uint64_t version)
{
    uint8_t ver[8];
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    cm_put_le64(ver, version);
    return group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
}

struct purge_ctx {
    uint32_t tenant;
    unsigned max, n;
    struct cm_buf group_keys; /* concatenated: u16 len | group key */
    int left;
};

static int
purge_collect(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct purge_ctx *c = arg;
    uint8_t h[2];

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    if (c->n == c->max) {
        c->left = 1;
        return 1;
    }
    h[0] = (uint8_t)klen;
    h[1] = (uint8_t)(klen >> 8);
    cm_buf_append(&c->group_keys, h, 2);
    cm_buf_append(&c->group_keys, k, klen);
    c->n++;
    return 0;
}

int
gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
              void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left)
{
    uint8_t start[4];
    int rc = 0;

    *left = 0;
    cm_put_be32(start, tenant);
    for (int t = T_OBJECTS; t <= T_TOMBS; t++) {
        struct purge_ctx c = {tenant, max, 0, {NULL, 0, 0}, 0};
        size_t pos = 0;

        cm_buf_init(&c.group_keys);
        rc = cm_kv_scan(b->txn, t, start, 4, purge_collect, &c);
        if (rc < 0) {
            cm_buf_fini(&c.group_keys);
            return rc;
        }
        rc = 0;
        while (pos < c.group_keys.len && rc == 0) {
            const uint8_t *gp = (const uint8_t *)c.group_keys.p + pos;
            size_t gklen = (size_t)gp[0] | (size_t)gp[1] << 8;
            const void *bv;
            size_t blen;

            pos += 2 + gklen;
            if (t == T_OBJECTS) {
                uint8_t *copy = NULL;
                size_t bpos = 0;
                struct member e;
                rc = cm_kv_get(b->txn, t, gp + 2, gklen, &bv, &blen);
                if (rc == 0) {
                    /* writes below may move the page bv points into */
                    copy = cm_malloc(blen + 1);
                    memcpy(copy, bv, blen);
                }
                while (rc == 0 && group_next(copy, blen, &bpos, &e) == 1) {
                    struct gw_layout l;
                    if (gw_meta_decode(e.val, e.vlen, &l) == 0) {
                        rc = pending_del(b->txn, l.object);
                        if (cb != NULL) {
                            cb(arg, &l);
                        }
                    }
                }
                free(copy);
            }
            if (rc == 0) {
                rc = cm_kv_del(b->txn, t, gp + 2, gklen);
            }
        }
        cm_buf_fini(&c.group_keys);
        if (rc != 0) {
            return rc;
        }
        *left |= c.left;
    }
    return 0;
}
