/*
 * gw_meta_write.c - the metadata store's writes (see gw_meta.h): batches,
 * puts and deletes of versions, the engine's reports, moves, restores for
 * --rebuild-meta, tenant purges. Each runs inside its batch's LMDB write
 * transaction, on the committer or the state thread. Invariants: those of
 * gw_meta.c.
 */
#include "gw_meta_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_kv.h"
#include "cm_time.h"

void
gw_meta_old_reset(struct gw_meta_old *old)
{
    free(old->parts);
    free(old->key);
    memset(old, 0, sizeof(*old));
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
    int rc = gw_meta_group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);

    return rc != 0 ? rc : gw_meta_decode_attrs(v, vlen, out, attrs);
}

int
gw_meta_batch_scan(struct gw_meta_batch *b, uint32_t tenant, const char *prefix, size_t plen,
                   gw_meta_scan_cb cb, void *arg)
{
    return gw_meta_scan_txn(b->txn, tenant, prefix, plen, NULL, 0, cb, arg);
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

/* Stores l's record (with a, which may point into the pages this write
 * replaces: it is encoded first) under key in objects. */
static int
record_set(struct cm_kv_txn *txn, const char *key, size_t klen, const struct gw_layout *l,
           const struct gw_meta_attrs *a)
{
    size_t rlen = gw_meta_rec_len(l, a);
    uint8_t *rec = malloc(rlen);
    int rc;

    if (rec == NULL) {
        return -ENOMEM;
    }
    gw_meta_encode(l, a, rec);
    rc = gw_meta_group_set(txn, T_OBJECTS, l->tenant, key, klen, rec, rlen);
    free(rec);
    return rc;
}

/*
 * The version l (decoded with a, whose strings point into the pages the
 * writes below may move) leaves the store: its pending entry, and for a
 * composite its parts with theirs, which go to *old with l.
 */
static int
version_drop(struct cm_kv_txn *txn, const struct gw_layout *l, const struct gw_meta_attrs *a,
             struct gw_meta_old *old)
{
    char id[GW_META_UPLOAD_ID_LEN];
    uint8_t *nums = NULL;
    uint32_t n = a->nparts;
    int rc = 0;

    gw_meta_old_reset(old);
    old->had = 1;
    old->lay = *l;
    old->lay.tags = NULL;
    if (n > 0) {
        memcpy(id, a->upload, sizeof(id));
        nums = malloc(2 * (size_t)n);
        old->parts = calloc(n, sizeof(*old->parts));
        if (nums == NULL || old->parts == NULL) {
            free(nums);
            return -ENOMEM;
        }
        memcpy(nums, a->parts, 2 * (size_t)n);
    }
    rc = pending_del(txn, l->object);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        char pk[GW_META_PART_KEY_LEN];
        size_t pklen = gw_meta_part_key(id, cm_get_le16(nums + 2 * (size_t)i), pk);
        const uint8_t *pv;
        size_t pvlen;
        struct gw_layout *p = &old->parts[old->nparts];

        rc = gw_meta_group_get(txn, T_OBJECTS, l->tenant, pk, pklen, &pv, &pvlen);
        if (rc == CM_E_NOTFOUND) {
            rc = 0; /* not in a consistent store: nothing to give back */
            continue;
        }
        if (rc == 0) {
            rc = gw_meta_decode(pv, pvlen, p);
        }
        if (rc == 0) {
            old->nparts++;
            rc = gw_meta_group_set(txn, T_OBJECTS, l->tenant, pk, pklen, NULL, 0);
        }
        if (rc == 0) {
            rc = pending_del(txn, p->object);
        }
    }
    free(nums);
    return rc;
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
    rc = gw_meta_group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        struct gw_layout cur;
        struct gw_meta_attrs a;

        rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
        if (rc == 0) {
            base = cur.version;
            rc = version_drop(txn, &cur, &a, old);
        }
    } else if (rc == CM_E_NOTFOUND) {
        rc = gw_meta_group_get(txn, T_TOMBS, tenant, key, klen, &v, &vlen);
        if (rc == 0 && vlen == 8) {
            base = cm_get_le64(v);
            rc = gw_meta_group_set(txn, T_TOMBS, tenant, key, klen, NULL, 0);
        }
        if (rc == CM_E_NOTFOUND) {
            rc = 0;
        }
    }
    *version = base + 1;
    return rc;
}

int
gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
            const struct gw_meta_attrs *attrs, struct gw_meta_old *old)
{
    int rc;

    if (gw_layout_record_only(l)) {
        l->chunk_size = l->nstripes = 0;
        l->persisted = 0;
        while (l->object == 0) {
            l->object = cm_random_u64();
        }
    }
    rc = put_prepare(b->txn, l->tenant, key, klen, old, &l->version);
    if (rc == 0) {
        rc = record_set(b->txn, key, klen, l, attrs);
    }
    if (rc == 0) {
        rc = pending_set(b->txn, l->object, l->tenant, key, klen);
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
    rc = gw_meta_group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
    if (rc == 0) {
        rc = version_drop(b->txn, &cur, &a, old);
    }
    if (rc == 0) {
        rc = gw_meta_group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    }
    if (rc == 0 && !gw_meta_once_key(key, klen)) {
        cm_put_le64(ver, cur.version);
        rc = gw_meta_group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
    }
    if (rc == 0) {
        rc = tomb_set(b->txn, &cur, key, klen);
    }
    if (rc == 0) {
        old->key = malloc(klen);
        if (old->key == NULL) {
            return -ENOMEM;
        }
        memcpy(old->key, key, klen);
        old->klen = klen;
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

/* cur (decoded with a from key's record) with l's holders, persisted bits
 * and, when l has them, tags, stored again. */
static int
record_relayout(struct cm_kv_txn *txn, const char *key, size_t klen, struct gw_layout *cur,
                const struct gw_meta_attrs *a, const struct gw_layout *l)
{
    uint32_t *own = cur->tags;
    int rc;

    memcpy(cur->holders, l->holders, sizeof(cur->holders));
    cur->persisted = l->persisted;
    if (l->tags != NULL) {
        cur->tags = l->tags; /* borrowed for the encode */
    }
    rc = record_set(txn, key, klen, cur, a);
    cur->tags = own;
    return rc;
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
    struct gw_meta_attrs a;
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
    rc = gw_meta_group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_full(v, vlen, &cur, &a);
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
     * (the record's persisted bits count only while pending). A
     * record-only version has nothing to store. */
    if (!gw_layout_record_only(&cur) &&
        (what == GW_REPORT_CHANGED || !same_tags(&cur, l) ||
         memcmp(cur.holders, l->holders, sizeof(cur.holders[0]) * (cur.k + cur.m)) != 0)) {
        rc = record_relayout(b->txn, key, klen, &cur, &a, l);
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
    struct gw_meta_attrs a;
    int rc = gw_meta_group_get(b->txn, T_OBJECTS, l->tenant, key, klen, &v, &vlen);

    *stale = 1;
    if (rc == 0) {
        rc = gw_meta_decode_full(v, vlen, &cur, &a);
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
    if (gw_layout_record_only(&cur) || l->k != cur.k || l->m != cur.m ||
        l->nstripes != cur.nstripes) {
        gw_layout_fini(&cur);
        return CM_E_BADARG;
    }
    /* the moved positions' new tags come with l */
    rc = record_relayout(b->txn, key, klen, &cur, &a, l);
    gw_layout_fini(&cur);
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_restore(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
                const struct gw_meta_attrs *attrs)
{
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = gw_meta_group_set(b->txn, T_TOMBS, l->tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    return record_set(b->txn, key, klen, l, attrs);
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
    rc = gw_meta_group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    if (gw_meta_once_key(key, klen)) {
        return 0;
    }
    cm_put_le64(ver, version);
    return gw_meta_group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
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

    (void)v;
    (void)vlen;
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

/* The versions of one objects group leave pending; their chunks go to cb.
 * A composite's parts are versions of their own keys: purged as any. */
static int
purge_group(struct gw_meta_batch *b, const uint8_t *gk, size_t gklen,
            void (*cb)(void *arg, const struct gw_layout *l), void *arg)
{
    const void *bv;
    size_t blen, bpos = 0;
    uint8_t *copy;
    struct gw_meta_member e;
    int rc = cm_kv_get(b->txn, T_OBJECTS, gk, gklen, &bv, &blen);

    if (rc != 0) {
        return rc;
    }
    /* writes below may move the page bv points into */
    copy = cm_malloc(blen + 1);
    memcpy(copy, bv, blen);
    while (rc == 0 && gw_meta_group_next(copy, blen, &bpos, &e) == 1) {
        struct gw_layout l;

        if (gw_meta_decode(e.val, e.vlen, &l) != 0) {
            continue;
        }
        rc = pending_del(b->txn, l.object);
        if (rc == 0 && cb != NULL && !gw_layout_record_only(&l)) {
            cb(arg, &l);
        }
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

            pos += 2 + gklen;
            if (t == T_OBJECTS) {
                rc = purge_group(b, gp + 2, gklen, cb, arg);
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
