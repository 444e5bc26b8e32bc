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
 * Version record (value in objects), little-endian. Format 2 (written):
 *   0 fmt=2 u8 | 1 k u8 | 2 m u8 | 3 flags u8 | 4 tenant u32 |
 *   8 chunk_size u32 | 12 nstripes u32 | 16 object | 24 version | 32 size |
 *   40 etag | 48 persisted | 56 mtime_ms (u64 each) | 64 holders u32[k+m] |
 *   [md5 16 bytes: flags bit 0] | [nparts u32: k == 0, composite] |
 *   [hlen u16 | hdrs[hlen]: flags bit 1]
 * Format 1 (read only) is the first 56 bytes of format 2 followed by the
 * holders: no commit time and nothing else. A composite version (k = m =
 * 0) has no chunks; composite[(object, i)] holds the layout of part i
 * (a format 2 record), i = 0..nparts-1.
 *
 * Threads: see gw_meta.h. Invariants: pending holds exactly the objects
 * that are a live version of their key and not fully persisted, cpending
 * exactly the parts of live composite versions that are not (stale
 * entries are tolerated on read and dropped on update). A record's
 * persisted bits count only while its object is pending: an object leaves
 * pending without its record being rewritten, so a record outside pending
 * may still show the bits it was written with. A composite's entries live
 * exactly as long as its record.
 */
#include "gw_meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_kv.h"
#include "cm_time.h"
#include "gw_parse.h"

#define GW_META_INLINE 480
#define GROUP_KEY_MAX (4 + GW_META_INLINE)
#define AUX_KEY_MAX (4 + GW_META_AUX_NAME_MAX)
#define REC_V1_FIXED 56
#define REC_FIXED 64
#define REC_F_MD5 1
#define REC_F_HDRS 2

enum {
    T_OBJECTS,
    T_TOMBS,
    T_PENDING,
    T_STATE,
    T_COMPOSITE,
    T_CPENDING,
    T_BUCKETS,
    T_UPLOADS,
    T_COUNT
};
static const char *const table_names[T_COUNT] = {"objects",   "tombs",    "pending", "state",
                                                 "composite", "cpending", "buckets", "uploads"};

struct gw_meta {
    struct cm_kv *kv;
};

struct gw_meta_batch {
    struct cm_kv_txn *txn;
    uint64_t now_ms;
};

static uint64_t
get_be64(const uint8_t *p)
{
    return (uint64_t)cm_get_be32(p) << 32 | cm_get_be32(p + 4);
}

static int
aux_table(enum gw_meta_aux t)
{
    return t == GW_META_BUCKETS ? T_BUCKETS : T_UPLOADS;
}

/* ---- records ---- */

size_t
gw_meta_encode(const struct gw_layout *l, const struct gw_meta_attrs *a, uint8_t *buf)
{
    unsigned n = (unsigned)l->k + l->m;
    uint8_t flags = 0;
    size_t p;

    if (n > GW_MAX_HOLDERS) {
        n = GW_MAX_HOLDERS;
    }
    memset(buf, 0, REC_FIXED);
    buf[0] = 2;
    buf[1] = l->k;
    buf[2] = l->k == 0 ? 0 : l->m;
    cm_put_le32(buf + 4, l->tenant);
    cm_put_le32(buf + 8, l->chunk_size);
    cm_put_le32(buf + 12, l->nstripes);
    cm_put_le64(buf + 16, l->object);
    cm_put_le64(buf + 24, l->version);
    cm_put_le64(buf + 32, l->size);
    cm_put_le64(buf + 40, l->etag);
    cm_put_le64(buf + 48, l->persisted);
    cm_put_le64(buf + 56, a != NULL ? a->mtime_ms : 0);
    p = REC_FIXED;
    for (unsigned j = 0; l->k != 0 && j < n; j++, p += 4) {
        cm_put_le32(buf + p, l->holders[j]);
    }
    if (a != NULL && a->has_md5) {
        flags |= REC_F_MD5;
        memcpy(buf + p, a->md5, 16);
        p += 16;
    }
    if (l->k == 0) {
        cm_put_le32(buf + p, a != NULL ? a->nparts : 0);
        p += 4;
    }
    if (a != NULL && a->hdrs_len > 0) {
        size_t hl = a->hdrs_len < GW_META_HDRS_MAX ? a->hdrs_len : GW_META_HDRS_MAX;

        flags |= REC_F_HDRS;
        cm_put_le16(buf + p, (uint16_t)hl);
        memcpy(buf + p + 2, a->hdrs, hl);
        p += 2 + hl;
    }
    buf[3] = flags;
    return p;
}

static void
decode_fixed(const uint8_t *p, struct gw_layout *out)
{
    memset(out, 0, sizeof(*out));
    out->k = p[1];
    out->m = p[2];
    out->tenant = cm_get_le32(p + 4);
    out->chunk_size = cm_get_le32(p + 8);
    out->nstripes = cm_get_le32(p + 12);
    out->object = cm_get_le64(p + 16);
    out->version = cm_get_le64(p + 24);
    out->size = cm_get_le64(p + 32);
    out->etag = cm_get_le64(p + 40);
    out->persisted = cm_get_le64(p + 48);
}

int
gw_meta_decode_attrs(const void *buf, size_t len, struct gw_layout *out,
                     struct gw_meta_attrs *attrs)
{
    const uint8_t *p = buf;
    struct gw_meta_attrs a;
    size_t pos;
    unsigned n;

    memset(&a, 0, sizeof(a));
    if (len < REC_V1_FIXED || (p[0] != 1 && p[0] != 2)) {
        return CM_E_PROTO;
    }
    n = (unsigned)p[1] + p[2];
    if (p[0] == 1) {
        if (p[1] == 0 || n > GW_MAX_HOLDERS || len != REC_V1_FIXED + 4 * (size_t)n) {
            return CM_E_PROTO;
        }
        pos = REC_V1_FIXED;
    } else {
        if (len < REC_FIXED || n > GW_MAX_HOLDERS || (p[1] == 0 && p[2] != 0) ||
            (p[3] & ~(REC_F_MD5 | REC_F_HDRS)) != 0 || len < REC_FIXED + 4 * (size_t)n) {
            return CM_E_PROTO;
        }
        a.mtime_ms = cm_get_le64(p + 56);
        pos = REC_FIXED + 4 * (size_t)n;
        if (p[3] & REC_F_MD5) {
            if (len - pos < 16) {
                return CM_E_PROTO;
            }
            a.has_md5 = 1;
            memcpy(a.md5, p + pos, 16);
            pos += 16;
        }
        if (p[1] == 0) {
            if (len - pos < 4 || (a.nparts = cm_get_le32(p + pos)) == 0) {
                return CM_E_PROTO;
            }
            pos += 4;
        }
        if (p[3] & REC_F_HDRS) {
            if (len - pos < 2) {
                return CM_E_PROTO;
            }
            a.hdrs_len = cm_get_le16(p + pos);
            pos += 2;
            if (a.hdrs_len == 0 || a.hdrs_len > GW_META_HDRS_MAX || len - pos < a.hdrs_len) {
                return CM_E_PROTO;
            }
            a.hdrs = (const char *)p + pos;
            pos += a.hdrs_len;
        }
        if (pos != len) {
            return CM_E_PROTO;
        }
        pos = REC_FIXED;
    }
    decode_fixed(p, out);
    for (unsigned j = 0; j < n; j++) {
        out->holders[j] = cm_get_le32(p + pos + 4 * j);
    }
    if (attrs != NULL) {
        *attrs = a;
    }
    return 0;
}

int
gw_meta_decode(const void *buf, size_t len, struct gw_layout *out)
{
    return gw_meta_decode_attrs(buf, len, out, NULL);
}

int
gw_layout_persisted(const struct gw_layout *l)
{
    unsigned n = (unsigned)l->k + l->m;
    uint64_t full = n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;

    return (l->persisted & full) == full;
}

void
gw_meta_old_reset(struct gw_meta_old *old)
{
    free(old->parts);
    memset(old, 0, sizeof(*old));
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

/* ---- composite parts ---- */

static void
part_key(uint64_t cid, uint32_t idx, uint8_t k[12])
{
    cm_put_be64(k, cid);
    cm_put_be32(k + 8, idx);
}

struct parts_ctx {
    uint64_t cid;
    uint32_t n, want;
    struct gw_layout *v;
    int err;
};

static int
parts_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct parts_ctx *c = arg;

    if (klen != 12 || get_be64(k) != c->cid) {
        return 1;
    }
    if (c->n == c->want || cm_get_be32((const uint8_t *)k + 8) != c->n ||
        gw_meta_decode(v, vlen, &c->v[c->n]) != 0 || gw_layout_composite(&c->v[c->n])) {
        c->err = CM_E_PROTO;
        return 1;
    }
    c->n++;
    return 0;
}

/* The n parts of composite cid, in order, into *out (malloc'd): 0,
 * CM_E_PROTO (missing or torn), -ENOMEM. */
static int
parts_read(struct cm_kv_txn *txn, uint64_t cid, uint32_t n, struct gw_layout **out)
{
    struct parts_ctx c = {cid, 0, n, NULL, 0};
    uint8_t k[12];
    int rc;

    c.v = malloc((size_t)n * sizeof(*c.v));
    if (c.v == NULL) {
        return -ENOMEM;
    }
    part_key(cid, 0, k);
    rc = cm_kv_scan(txn, T_COMPOSITE, k, sizeof(k), parts_one, &c);
    if (rc >= 0) {
        rc = c.err != 0 ? c.err : c.n != n ? CM_E_PROTO : 0;
    }
    if (rc != 0) {
        free(c.v);
        return rc;
    }
    *out = c.v;
    return 0;
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

static int
cpending_del(struct cm_kv_txn *txn, uint64_t object)
{
    uint8_t k[8];
    int rc;

    cm_put_be64(k, object);
    rc = cm_kv_del(txn, T_CPENDING, k, 8);
    return rc == CM_E_NOTFOUND ? 0 : rc;
}

/* The version rec (decoded as l) leaves the store: its pending entry, and
 * for a composite its parts and their cpending entries, which go to *old
 * with l. */
static int
version_drop(struct cm_kv_txn *txn, const struct gw_layout *l, const struct gw_meta_attrs *a,
             struct gw_meta_old *old)
{
    int rc;

    gw_meta_old_reset(old);
    old->had = 1;
    old->lay = *l;
    if (!gw_layout_composite(l)) {
        return pending_del(txn, l->object);
    }
    rc = parts_read(txn, l->object, a->nparts, &old->parts);
    if (rc != 0) {
        return rc;
    }
    old->nparts = a->nparts;
    for (uint32_t i = 0; i < a->nparts && rc == 0; i++) {
        uint8_t k[12];

        part_key(l->object, i, k);
        rc = cm_kv_del(txn, T_COMPOSITE, k, sizeof(k));
        if (rc == 0) {
            rc = cpending_del(txn, old->parts[i].object);
        }
    }
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
        rc = gw_meta_decode(v, vlen, out);
    }
    cm_kv_abort(txn);
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

    out->parts = NULL;
    rc = cm_kv_begin(m->kv, 0, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_attrs(v, vlen, &out->lay, &out->a);
    }
    if (rc == 0 && out->a.hdrs != NULL) {
        memcpy(out->hdrs, out->a.hdrs, out->a.hdrs_len);
        out->a.hdrs = out->hdrs;
    }
    if (rc == 0 && gw_layout_composite(&out->lay)) {
        rc = parts_read(txn, out->lay.object, out->a.nparts, &out->parts);
    }
    cm_kv_abort(txn);
    return rc;
}

void
gw_meta_obj_fini(struct gw_meta_obj *o)
{
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
    struct member e;
    int rc;

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    while ((rc = group_next(v, vlen, &pos, &e)) == 1) {
        struct gw_layout l;
        struct gw_meta_attrs a;

        if (c->after != NULL && keycmp(e.key, e.klen, c->after, c->alen) <= 0) {
            continue;
        }
        if (e.klen < c->plen || memcmp(e.key, c->prefix, c->plen) != 0) {
            if (keycmp(e.key, e.klen, c->prefix, c->plen) > 0) {
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

static int
scan_txn(struct cm_kv_txn *txn, uint32_t tenant, const char *prefix, size_t plen, const char *after,
         size_t alen, gw_meta_scan_cb cb, void *arg)
{
    struct scan_ctx c = {tenant, prefix, plen, after, alen, cb, arg, 0};
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen;
    int rc;

    if (after != NULL && keycmp(after, alen, prefix, plen) > 0) {
        gklen = group_key(tenant, after, alen, gk);
    } else {
        gklen = group_key(tenant, prefix, plen, gk);
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
    rc = scan_txn(txn, tenant, prefix, plen, after, alen, cb, arg);
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
    void (*cb)(void *arg, const struct gw_layout *l);
    void *arg;
};

static int
pending_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pending_ctx *c = arg;
    const uint8_t *rec;
    size_t rlen;
    struct gw_layout l;

    if (klen != 8 || vlen < 5) {
        return 0;
    }
    if (group_get(c->txn, T_OBJECTS, cm_get_be32(v), (const char *)v + 4, vlen - 4, &rec, &rlen) !=
            0 ||
        gw_meta_decode(rec, rlen, &l) != 0 || l.object != get_be64(k) || gw_layout_composite(&l)) {
        return 0;
    }
    c->cb(c->arg, &l);
    return 0;
}

static int
cpending_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pending_ctx *c = arg;
    const void *rec;
    size_t rlen;
    struct gw_layout l;

    if (klen != 8 || vlen != 12 || cm_kv_get(c->txn, T_COMPOSITE, v, 12, &rec, &rlen) != 0 ||
        gw_meta_decode(rec, rlen, &l) != 0 || l.object != get_be64(k)) {
        return 0;
    }
    c->cb(c->arg, &l);
    return 0;
}

int
gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_layout *l), void *arg)
{
    struct pending_ctx c = {NULL, cb, arg};
    int rc = cm_kv_begin(m->kv, 0, &c.txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(c.txn, T_PENDING, NULL, 0, pending_one, &c);
    if (rc >= 0) {
        rc = cm_kv_scan(c.txn, T_CPENDING, NULL, 0, cpending_one, &c);
    }
    cm_kv_abort(c.txn);
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

/* The tables keyed by tenant first. */
static const int tenant_tables[] = {T_OBJECTS, T_TOMBS, T_BUCKETS, T_UPLOADS};
#define NTENANT_TABLES (sizeof(tenant_tables) / sizeof(tenant_tables[0]))

int
gw_meta_tenants(struct gw_meta *m, void (*cb)(void *arg, uint32_t tenant), void *arg)
{
    struct cm_kv_txn *txn;
    uint32_t next[NTENANT_TABLES] = {0};
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    /* Skip from tenant to tenant: one seek per tenant, not per object. */
    for (;;) {
        uint32_t best = 0;
        int have = 0;
        for (size_t t = 0; t < NTENANT_TABLES; t++) {
            struct tenant_ctx c = {0, 0};
            uint8_t gk[4];
            if (next[t] == UINT32_MAX) {
                continue;
            }
            cm_put_be32(gk, next[t]);
            rc = cm_kv_scan(txn, tenant_tables[t], gk, 4, first_tenant, &c);
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
        for (size_t t = 0; t < NTENANT_TABLES; t++) {
            next[t] = next[t] == UINT32_MAX ? UINT32_MAX : best + 1;
        }
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

/* ---- buckets and uploads ---- */

static int
aux_key(uint32_t tenant, const char *name, size_t nlen, uint8_t *out, size_t *outlen)
{
    if (nlen > GW_META_AUX_NAME_MAX) {
        return CM_E_BADARG;
    }
    cm_put_be32(out, tenant);
    memcpy(out + 4, name, nlen);
    *outlen = 4 + nlen;
    return 0;
}

int
gw_meta_aux_get(struct gw_meta *m, enum gw_meta_aux t, uint32_t tenant, const char *name,
                size_t nlen, struct cm_buf *val)
{
    struct cm_kv_txn *txn;
    uint8_t k[AUX_KEY_MAX];
    size_t klen;
    const void *v;
    size_t vlen;
    int rc = aux_key(tenant, name, nlen, k, &klen);

    if (rc != 0 || (rc = cm_kv_begin(m->kv, 0, &txn)) != 0) {
        return rc;
    }
    rc = cm_kv_get(txn, aux_table(t), k, klen, &v, &vlen);
    if (rc == 0) {
        cm_buf_append(val, v, vlen);
    }
    cm_kv_abort(txn);
    return rc;
}

struct aux_ctx {
    uint32_t tenant;
    gw_meta_aux_cb cb;
    void *arg;
};

static int
aux_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct aux_ctx *c = arg;

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    return c->cb(c->arg, (const char *)k + 4, klen - 4, v, vlen) != 0;
}

static int
aux_scan_txn(struct cm_kv_txn *txn, enum gw_meta_aux t, uint32_t tenant, gw_meta_aux_cb cb,
             void *arg)
{
    struct aux_ctx c = {tenant, cb, arg};
    uint8_t k[4];
    int rc;

    cm_put_be32(k, tenant);
    rc = cm_kv_scan(txn, aux_table(t), k, 4, aux_one, &c);
    return rc < 0 ? rc : 0;
}

int
gw_meta_aux_scan(struct gw_meta *m, enum gw_meta_aux t, uint32_t tenant, gw_meta_aux_cb cb,
                 void *arg)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = aux_scan_txn(txn, t, tenant, cb, arg);
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_batch_aux_scan(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                       gw_meta_aux_cb cb, void *arg)
{
    return aux_scan_txn(b->txn, t, tenant, cb, arg);
}

int
gw_meta_batch_aux_get(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                      const char *name, size_t nlen, const void **val, size_t *vlen)
{
    uint8_t k[AUX_KEY_MAX];
    size_t klen;
    int rc = aux_key(tenant, name, nlen, k, &klen);

    return rc != 0 ? rc : cm_kv_get(b->txn, aux_table(t), k, klen, val, vlen);
}

int
gw_meta_batch_aux_put(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                      const char *name, size_t nlen, const void *val, size_t vlen, int replace)
{
    uint8_t k[AUX_KEY_MAX];
    size_t klen;
    const void *v;
    size_t vl;
    int rc = aux_key(tenant, name, nlen, k, &klen);

    if (rc != 0) {
        return rc;
    }
    if (!replace) {
        rc = cm_kv_get(b->txn, aux_table(t), k, klen, &v, &vl);
        if (rc != CM_E_NOTFOUND) {
            return rc == 0 ? CM_E_EXISTS : rc;
        }
    }
    return cm_kv_put(b->txn, aux_table(t), k, klen, val, vlen);
}

int
gw_meta_batch_aux_del(struct gw_meta_batch *b, enum gw_meta_aux t, uint32_t tenant,
                      const char *name, size_t nlen)
{
    uint8_t k[AUX_KEY_MAX];
    size_t klen;
    int rc = aux_key(tenant, name, nlen, k, &klen);

    return rc != 0 ? rc : cm_kv_del(b->txn, aux_table(t), k, klen);
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
    b->now_ms = cm_wall_ms();
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

uint64_t
gw_meta_batch_time(const struct gw_meta_batch *b)
{
    return b->now_ms;
}

int
gw_meta_batch_get(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                  struct gw_layout *out, struct gw_meta_attrs *attrs)
{
    const uint8_t *v;
    size_t vlen;
    int rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);

    return rc != 0 ? rc : gw_meta_decode_attrs(v, vlen, out, attrs);
}

int
gw_meta_batch_scan(struct gw_meta_batch *b, uint32_t tenant, const char *prefix, size_t plen,
                   gw_meta_scan_cb cb, void *arg)
{
    return scan_txn(b->txn, tenant, prefix, plen, NULL, 0, cb, arg);
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

/* The version key had before a put (to *old) and the new version number:
 * the current one's, or the tombstone's (then dropped), plus one. */
static int
put_prepare(struct cm_kv_txn *txn, uint32_t tenant, const char *key, size_t klen,
            struct gw_meta_old *old, uint64_t *version)
{
    const uint8_t *v;
    size_t vlen;
    uint64_t base = 0;
    int rc;

    gw_meta_old_reset(old);
    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        struct gw_layout cur;
        struct gw_meta_attrs a;

        rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
        if (rc == 0) {
            base = cur.version;
            rc = version_drop(txn, &cur, &a, old);
        }
    } else if (rc == CM_E_NOTFOUND) {
        rc = group_get(txn, T_TOMBS, tenant, key, klen, &v, &vlen);
        if (rc == 0 && vlen == 8) {
            base = cm_get_le64(v);
            rc = group_set(txn, T_TOMBS, tenant, key, klen, NULL, 0);
        }
        if (rc == CM_E_NOTFOUND) {
            rc = 0;
        }
    }
    *version = base + 1;
    return rc;
}

static int
record_put(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
           const struct gw_meta_attrs *attrs, uint32_t nparts)
{
    uint8_t *rec = malloc(GW_META_REC_MAX);
    struct gw_meta_attrs a;
    size_t rlen;
    int rc;

    if (rec == NULL) {
        return -ENOMEM;
    }
    memset(&a, 0, sizeof(a));
    if (attrs != NULL) {
        a = *attrs;
    }
    a.mtime_ms = b->now_ms;
    a.nparts = nparts;
    rlen = gw_meta_encode(l, &a, rec);
    rc = group_set(b->txn, T_OBJECTS, l->tenant, key, klen, rec, rlen);
    free(rec);
    return rc;
}

int
gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
            const struct gw_meta_attrs *attrs, struct gw_meta_old *old)
{
    int rc;

    if (gw_layout_composite(l)) {
        return CM_E_BADARG;
    }
    rc = put_prepare(b->txn, l->tenant, key, klen, old, &l->version);
    if (rc == 0) {
        rc = record_put(b, key, klen, l, attrs, 0);
    }
    if (rc == 0 && !gw_layout_persisted(l)) {
        rc = pending_set(b->txn, l->object, l->tenant, key, klen);
    }
    return rc;
}

int
gw_meta_put_composite(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
                      const struct gw_meta_attrs *attrs, const char *const *pkeys,
                      const size_t *pklens, uint32_t n, struct gw_meta_old *old)
{
    uint8_t rec[REC_FIXED + 4 * GW_MAX_HOLDERS];
    int rc;

    if (n == 0) {
        return CM_E_BADARG;
    }
    memset(l->holders, 0, sizeof(l->holders));
    l->k = l->m = 0;
    l->chunk_size = l->nstripes = 0;
    l->persisted = 0;
    do {
        l->object = cm_random_u64();
    } while (l->object == 0);
    rc = put_prepare(b->txn, l->tenant, key, klen, old, &l->version);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct gw_layout p;
        uint8_t k[12], pk[8], cv[12];

        rc = gw_meta_batch_get(b, l->tenant, pkeys[i], pklens[i], &p, NULL);
        if (rc == 0 && (gw_layout_composite(&p) || pklens[i] == 0 || pkeys[i][0] != '\0')) {
            rc = CM_E_BADARG;
        }
        if (rc != 0) {
            break;
        }
        part_key(l->object, i, k);
        rc = cm_kv_put(b->txn, T_COMPOSITE, k, sizeof(k), rec, gw_meta_encode(&p, NULL, rec));
        if (rc == 0) {
            rc = group_set(b->txn, T_OBJECTS, l->tenant, pkeys[i], pklens[i], NULL, 0);
        }
        if (rc == 0) {
            /* Persisting goes on; its reports now find the part here. */
            const void *pv;
            size_t pvlen;

            cm_put_be64(pk, p.object);
            rc = cm_kv_get(b->txn, T_PENDING, pk, 8, &pv, &pvlen);
            if (rc == 0) {
                rc = cm_kv_del(b->txn, T_PENDING, pk, 8);
                memcpy(cv, k, sizeof(cv));
                if (rc == 0) {
                    rc = cm_kv_put(b->txn, T_CPENDING, pk, 8, cv, sizeof(cv));
                }
            } else if (rc == CM_E_NOTFOUND) {
                rc = 0;
            }
        }
    }
    if (rc == 0) {
        rc = record_put(b, key, klen, l, attrs, n);
    }
    return rc;
}

int
gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
               struct gw_meta_old *old)
{
    const uint8_t *v;
    size_t vlen;
    uint8_t ver[8];
    struct gw_layout cur;
    struct gw_meta_attrs a;
    int rc;

    gw_meta_old_reset(old);
    rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
    if (rc != 0) {
        return rc;
    }
    rc = version_drop(b->txn, &cur, &a, old);
    if (rc == 0) {
        rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    }
    if (rc == 0 && klen > 0 && key[0] != '\0') {
        cm_put_le64(ver, cur.version);
        rc = group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
    }
    return rc;
}

/* A layout report for a part of a composite version (in cpending). */
static int
update_part(struct gw_meta_batch *b, const struct gw_layout *l, int *stale)
{
    uint8_t pk[8], ck[12], rec[REC_FIXED + 4 * GW_MAX_HOLDERS];
    const void *v;
    size_t vlen;
    struct gw_layout cur;
    int rc;

    cm_put_be64(pk, l->object);
    rc = cm_kv_get(b->txn, T_CPENDING, pk, 8, &v, &vlen);
    if (rc == CM_E_NOTFOUND) {
        return 0; /* replaced, deleted or already fully persisted */
    }
    if (rc != 0) {
        return rc;
    }
    if (vlen != sizeof(ck)) {
        return cpending_del(b->txn, l->object);
    }
    memcpy(ck, v, sizeof(ck));
    rc = cm_kv_get(b->txn, T_COMPOSITE, ck, sizeof(ck), &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode(v, vlen, &cur);
    }
    if (rc == CM_E_NOTFOUND || (rc == 0 && cur.object != l->object)) {
        return cpending_del(b->txn, l->object);
    }
    if (rc != 0) {
        return rc;
    }
    if (l->k != cur.k || l->m != cur.m) {
        return CM_E_BADARG;
    }
    if (!gw_layout_persisted(l) ||
        memcmp(cur.holders, l->holders, sizeof(cur.holders[0]) * (cur.k + cur.m)) != 0) {
        memcpy(cur.holders, l->holders, sizeof(cur.holders));
        cur.persisted = l->persisted;
        rc = cm_kv_put(b->txn, T_COMPOSITE, ck, sizeof(ck), rec, gw_meta_encode(&cur, NULL, rec));
    }
    if (rc == 0 && gw_layout_persisted(l)) {
        rc = cpending_del(b->txn, l->object);
    }
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, int *stale)
{
    uint8_t pk[8];
    char key[GW_KEY_MAX];
    const void *pv;
    const uint8_t *v;
    size_t pvlen, vlen, klen;
    uint32_t tenant;
    struct gw_layout cur;
    struct gw_meta_attrs a;
    int rc;

    *stale = 1;
    cm_put_be64(pk, l->object);
    rc = cm_kv_get(b->txn, T_PENDING, pk, 8, &pv, &pvlen);
    if (rc == CM_E_NOTFOUND) {
        return update_part(b, l, stale);
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
        rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
    }
    if (rc == CM_E_NOTFOUND || (rc == 0 && cur.object != l->object)) {
        return pending_del(b->txn, l->object);
    }
    if (rc != 0) {
        return rc;
    }
    if (l->k != cur.k || l->m != cur.m) {
        return CM_E_BADARG;
    }
    if (gw_layout_persisted(l) &&
        memcmp(cur.holders, l->holders, sizeof(cur.holders[0]) * (cur.k + cur.m)) == 0) {
        /* The usual report: wholly in COS, holders unchanged. Leaving
         * pending says it all; the record is not rewritten. */
        rc = pending_del(b->txn, l->object);
        *stale = rc != 0;
        return rc;
    }
    memcpy(cur.holders, l->holders, sizeof(cur.holders));
    cur.persisted = l->persisted;
    {
        uint8_t *rec = malloc(GW_META_REC_MAX);

        if (rec == NULL) {
            return -ENOMEM;
        }
        /* a.hdrs points into the page the write replaces: encode first */
        size_t rlen = gw_meta_encode(&cur, &a, rec);
        rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, rec, rlen);
        free(rec);
    }
    if (rc == 0 && gw_layout_persisted(&cur)) {
        rc = pending_del(b->txn, l->object);
    }
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
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

/* The versions of one objects group leave the store (their chunks to cb). */
static int
purge_group(struct gw_meta_batch *b, const uint8_t *gk, size_t gklen,
            void (*cb)(void *arg, const struct gw_layout *l), void *arg)
{
    const void *bv;
    size_t blen, bpos = 0;
    uint8_t *copy;
    struct member e;
    int rc = cm_kv_get(b->txn, T_OBJECTS, gk, gklen, &bv, &blen);

    if (rc != 0) {
        return rc;
    }
    /* writes below may move the page bv points into */
    copy = cm_malloc(blen + 1);
    memcpy(copy, bv, blen);
    while (rc == 0 && group_next(copy, blen, &bpos, &e) == 1) {
        struct gw_layout l;
        struct gw_meta_attrs a;
        struct gw_meta_old old = {0};

        if (gw_meta_decode_attrs(e.val, e.vlen, &l, &a) != 0) {
            continue;
        }
        rc = version_drop(b->txn, &l, &a, &old);
        for (uint32_t i = 0; rc == 0 && cb != NULL && i < old.nparts; i++) {
            cb(arg, &old.parts[i]);
        }
        if (rc == 0 && cb != NULL && !gw_layout_composite(&l)) {
            cb(arg, &l);
        }
        gw_meta_old_reset(&old);
    }
    free(copy);
    return rc;
}

int
gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
              void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left)
{
    uint8_t start[4];
    int rc = 0;

    *left = 0;
    cm_put_be32(start, tenant);
    for (size_t t = 0; t < NTENANT_TABLES; t++) {
        int table = tenant_tables[t];
        struct purge_ctx c = {tenant, max, 0, {NULL, 0, 0}, 0};
        size_t pos = 0;

        cm_buf_init(&c.group_keys);
        rc = cm_kv_scan(b->txn, table, start, 4, purge_collect, &c);
        if (rc < 0) {
            cm_buf_fini(&c.group_keys);
            return rc;
        }
        rc = 0;
        while (pos < c.group_keys.len && rc == 0) {
            const uint8_t *gp = (const uint8_t *)c.group_keys.p + pos;
            size_t gklen = (size_t)gp[0] | (size_t)gp[1] << 8;

            pos += 2 + gklen;
            if (table == T_OBJECTS) {
                rc = purge_group(b, gp + 2, gklen, cb, arg);
            }
            if (rc == 0) {
                rc = cm_kv_del(b->txn, table, gp + 2, gklen);
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
