/*
 * gw_meta_handover.c - a tenant's metadata leaving this store for another
 * gateway's, and arriving in it (see gw_meta.h, "hand-over").
 *
 * Leaving is one write transaction: the tenant's objects and tombs groups
 * are copied into a *bundle*, deleted, and the bundle is kept in the state
 * table under "\0h" + tenant u32 BE, with the id of the gateway it goes
 * to: an outbox entry. From that commit on the metadata is in exactly one
 * place here, the outbox, until the receiver has it; a kill -9 between the
 * two loses nothing, and a store that has no record of the tenant cannot
 * serve it by mistake (the front refuses a tenant in the outbox).
 *
 * Bundle, little-endian:
 *
 *   "SHM1" | tenant u32 | n u32 | n x (table u8 (0 objects, 1 tombs) |
 *   klen u16 | group key | vlen u32 | group) | crc32c u32 of all before
 *
 * Groups come in table order, then key order, strictly ascending.
 * Arriving replaces whatever the store held of the tenant, so a bundle
 * sent twice lands once.
 */
#include "gw_meta_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_kv.h"

#define MAGIC "SHM1"
#define OUTBOX_KEY_LEN 6

static void
outbox_key(uint32_t tenant, uint8_t out[OUTBOX_KEY_LEN])
{
    out[0] = '\0';
    out[1] = 'h';
    cm_put_be32(out + 2, tenant);
}

/* ---- the bundle ---- */

/* One group of a bundle (pointers into it). */
struct bgroup {
    int table;
    const uint8_t *key, *val;
    size_t klen, vlen;
};

/* The next group at *pos: 1, 0 at the end of the groups, CM_E_PROTO. */
static int
bgroup_next(const uint8_t *b, size_t end, size_t *pos, struct bgroup *g)
{
    size_t p = *pos;

    if (p == end) {
        return 0;
    }
    if (end - p < 3) {
        return CM_E_PROTO;
    }
    g->table = b[p];
    g->klen = (size_t)b[p + 1] | (size_t)b[p + 2] << 8;
    p += 3;
    if (end - p < g->klen + 4) {
        return CM_E_PROTO;
    }
    g->key = b + p;
    p += g->klen;
    g->vlen = cm_get_le32(b + p);
    p += 4;
    if (end - p < g->vlen) {
        return CM_E_PROTO;
    }
    g->val = b + p;
    *pos = p + g->vlen;
    return 1;
}

/* A group as the store would hold it: every member maps to gk, members
 * ascend, objects decode as versions of tenant, tombs are 8 bytes. */
static int
group_check(uint32_t tenant, const struct bgroup *g)
{
    size_t pos = 0;
    struct gw_meta_member e, prev = {0};
    uint8_t gk[GROUP_KEY_MAX];
    int rc, n = 0;

    while ((rc = gw_meta_group_next(g->val, g->vlen, &pos, &e)) == 1) {
        if (e.klen == 0 || e.klen > GW_KEY_MAX ||
            gw_meta_group_key(tenant, e.key, e.klen, gk) != g->klen ||
            memcmp(gk, g->key, g->klen) != 0 ||
            (n > 0 && gw_meta_keycmp(prev.key, prev.klen, e.key, e.klen) >= 0)) {
            return CM_E_PROTO;
        }
        if (g->table == 0) {
            struct gw_layout l;

            if (gw_meta_decode(e.val, e.vlen, &l) != 0 || l.tenant != tenant) {
                return CM_E_PROTO;
            }
        } else if (e.vlen != 8) {
            return CM_E_PROTO;
        }
        prev = e;
        n++;
    }
    return rc < 0 || n == 0 ? CM_E_PROTO : 0;
}

int
gw_meta_bundle_check(const void *bundle, size_t len, uint32_t *tenant)
{
    const uint8_t *b = bundle;
    size_t pos = 12, end;
    struct bgroup g, prev = {0};
    uint32_t n, seen = 0;
    int rc;

    if (len < 16 || memcmp(b, MAGIC, 4) != 0) {
        return CM_E_PROTO;
    }
    end = len - 4;
    if (cm_crc32c(0, b, end) != cm_get_le32(b + end)) {
        return CM_E_PROTO;
    }
    *tenant = cm_get_le32(b + 4);
    n = cm_get_le32(b + 8);
    while ((rc = bgroup_next(b, end, &pos, &g)) == 1) {
        if (g.table > 1 || g.klen < 4 || g.klen > GROUP_KEY_MAX || cm_get_be32(g.key) != *tenant ||
            (seen > 0 &&
             (g.table < prev.table ||
              (g.table == prev.table && gw_meta_keycmp((const char *)prev.key, prev.klen,
                                                       (const char *)g.key, g.klen) >= 0))) ||
            group_check(*tenant, &g) != 0) {
            return CM_E_PROTO;
        }
        prev = g;
        seen++;
    }
    return rc < 0 || seen != n ? CM_E_PROTO : 0;
}

struct out_ctx {
    uint32_t tenant;
    int table;
    struct cm_buf *bundle;
    struct cm_buf keys; /* klen u16 LE | key, for the deletes */
    uint32_t n;
};

static int
out_collect(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct out_ctx *c = arg;
    uint8_t h[4];

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    h[0] = (uint8_t)c->table;
    h[1] = (uint8_t)klen;
    h[2] = (uint8_t)(klen >> 8);
    cm_buf_append(&c->keys, h + 1, 2);
    cm_buf_append(&c->keys, k, klen);
    if (c->bundle != NULL) {
        cm_buf_append(c->bundle, h, 3);
        cm_buf_append(c->bundle, k, klen);
        cm_put_le32(h, (uint32_t)vlen);
        cm_buf_append(c->bundle, h, 4);
        cm_buf_append(c->bundle, v, vlen);
    }
    c->n++;
    return 0;
}

struct pend_ctx {
    uint32_t tenant;
    struct cm_buf keys; /* klen u8 | key (8 or 16 bytes) */
};

static int
pend_collect(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pend_ctx *c = arg;
    uint8_t n = (uint8_t)klen;

    if ((klen == 8 || klen == 16) && vlen >= 4 && cm_get_be32(v) == c->tenant) {
        cm_buf_append(&c->keys, &n, 1);
        cm_buf_append(&c->keys, k, klen);
    }
    return 0;
}

/*
 * tenant's entries in pending: *live counts those still to be done (a
 * tombstone, or a version that is its key's live one); the others, stale
 * (a version replaced or deleted since, which a restart no longer tracks
 * and nothing will drop), are deleted, and so are all of them with all.
 */
static int
pending_sweep(struct cm_kv_txn *txn, uint32_t tenant, int all, size_t *live)
{
    struct pend_ctx c = {tenant, {0}};
    size_t pos = 0;
    int rc;

    *live = 0;
    cm_buf_init(&c.keys);
    rc = cm_kv_scan(txn, T_PENDING, NULL, 0, pend_collect, &c);
    while (rc == 0 && pos < c.keys.len) {
        const uint8_t *k = (const uint8_t *)c.keys.p + pos + 1;
        size_t klen = (uint8_t)c.keys.p[pos];
        const void *v;
        const uint8_t *rec;
        size_t vlen, rlen;
        struct gw_layout l;
        int stale = 1;

        pos += 1 + klen;
        if (!all && klen == 16) {
            stale = 0;
        } else if (!all && cm_kv_get(txn, T_PENDING, k, klen, &v, &vlen) == 0 &&
                   gw_meta_group_get(txn, T_OBJECTS, tenant, (const char *)v + 4, vlen - 4, &rec,
                                     &rlen) == 0 &&
                   gw_meta_decode(rec, rlen, &l) == 0 &&
                   l.object == ((uint64_t)cm_get_be32(k) << 32 | cm_get_be32(k + 4))) {
            stale = 0;
        }
        if (stale) {
            rc = cm_kv_del(txn, T_PENDING, k, klen);
        } else {
            ++*live;
        }
    }
    cm_buf_fini(&c.keys);
    return rc;
}

/* The tenant's groups of both tables deleted; copied into bundle first (its
 * header and CRC added) unless it is NULL. */
static int
take_groups(struct cm_kv_txn *txn, uint32_t tenant, struct cm_buf *bundle, uint32_t *groups)
{
    struct out_ctx c = {tenant, 0, bundle, {0}, 0};
    uint8_t start[4], h[12];
    int rc = 0;

    if (bundle != NULL) {
        memcpy(h, MAGIC, 4);
        cm_put_le32(h + 4, tenant);
        cm_buf_append(bundle, h, 12);
    }
    cm_put_be32(start, tenant);
    cm_buf_init(&c.keys);
    for (c.table = 0; c.table < 2 && rc == 0; c.table++) {
        size_t pos = 0;

        c.keys.len = 0;
        rc = cm_kv_scan(txn, c.table == 0 ? T_OBJECTS : T_TOMBS, start, 4, out_collect, &c);
        rc = rc < 0 ? rc : 0;
        while (rc == 0 && pos < c.keys.len) {
            const uint8_t *kp = (const uint8_t *)c.keys.p + pos;
            size_t klen = (size_t)kp[0] | (size_t)kp[1] << 8;

            rc = cm_kv_del(txn, c.table == 0 ? T_OBJECTS : T_TOMBS, kp + 2, klen);
            pos += 2 + klen;
        }
    }
    cm_buf_fini(&c.keys);
    if (bundle != NULL) {
        cm_put_le32((uint8_t *)bundle->p + 8, c.n);
        cm_put_le32(h, cm_crc32c(0, bundle->p, bundle->len));
        cm_buf_append(bundle, h, 4);
    }
    *groups = c.n;
    return rc;
}

int
gw_meta_handover_out(struct gw_meta *m, uint32_t tenant, const char *to, uint32_t *groups)
{
    struct cm_kv_txn *txn;
    struct cm_buf v;
    uint8_t key[OUTBOX_KEY_LEN], idlen;
    const void *old;
    size_t oldlen;
    int rc;

    if (strlen(to) > GW_META_GATEWAY_MAX) {
        return CM_E_BADARG;
    }
    idlen = (uint8_t)strlen(to);
    if ((rc = cm_kv_begin(m->kv, 1, &txn)) != 0) {
        return rc;
    }
    outbox_key(tenant, key);
    rc = cm_kv_get(txn, T_STATE, key, sizeof(key), &old, &oldlen);
    if (rc == 0) {
        rc = -EEXIST; /* handed out already: its bundle goes as it is */
    } else if (rc == CM_E_NOTFOUND) {
        size_t live;

        rc = pending_sweep(txn, tenant, 0, &live);
        rc = rc == 0 && live > 0 ? -EBUSY : rc;
    }
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    cm_buf_init(&v);
    cm_buf_append(&v, &idlen, 1);
    cm_buf_append(&v, to, idlen);
    {
        struct cm_buf bundle;

        cm_buf_init(&bundle);
        rc = take_groups(txn, tenant, &bundle, groups);
        cm_buf_append(&v, bundle.p, bundle.len);
        cm_buf_fini(&bundle);
    }
    if (rc == 0) {
        rc = cm_kv_put(txn, T_STATE, key, sizeof(key), v.p, v.len);
    }
    cm_buf_fini(&v);
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}

struct outbox_ctx {
    void (*cb)(void *arg, uint32_t tenant, const char *to, const void *bundle, size_t len);
    void *arg;
};

static int
outbox_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct outbox_ctx *c = arg;
    const uint8_t *kp = k, *vp = v;
    char to[GW_META_GATEWAY_MAX + 1];

    if (klen != OUTBOX_KEY_LEN || kp[0] != '\0' || kp[1] != 'h') {
        return 1;
    }
    if (vlen < 1 || vp[0] > GW_META_GATEWAY_MAX || vlen < 1u + vp[0]) {
        return 0; /* not one of ours: left alone */
    }
    memcpy(to, vp + 1, vp[0]);
    to[vp[0]] = '\0';
    c->cb(c->arg, cm_get_be32(kp + 2), to, vp + 1 + vp[0], vlen - 1 - vp[0]);
    return 0;
}

int
gw_meta_handover_outbox(struct gw_meta *m,
                        void (*cb)(void *arg, uint32_t tenant, const char *to, const void *bundle,
                                   size_t len),
                        void *arg)
{
    struct cm_kv_txn *txn;
    struct outbox_ctx c = {cb, arg};
    const uint8_t start[2] = {'\0', 'h'};
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(txn, T_STATE, start, sizeof(start), outbox_one, &c);
    cm_kv_abort(txn);
    return rc < 0 ? rc : 0;
}

int
gw_meta_handover_done(struct gw_meta *m, uint32_t tenant)
{
    struct cm_kv_txn *txn;
    uint8_t key[OUTBOX_KEY_LEN];
    int rc = cm_kv_begin(m->kv, 1, &txn);

    if (rc != 0) {
        return rc;
    }
    outbox_key(tenant, key);
    rc = cm_kv_del(txn, T_STATE, key, sizeof(key));
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc == CM_E_NOTFOUND ? 0 : rc;
    }
    return cm_kv_commit(txn);
}

int
gw_meta_handover_in(struct gw_meta *m, const void *bundle, size_t len, uint32_t *tenant,
                    uint32_t *groups)
{
    const uint8_t *b = bundle;
    struct cm_kv_txn *txn;
    size_t pos = 12;
    struct bgroup g;
    uint32_t discard;
    int rc = gw_meta_bundle_check(bundle, len, tenant);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_begin(m->kv, 1, &txn);
    if (rc != 0) {
        return rc;
    }
    /* What the store held of the tenant goes first: an earlier bundle of
     * the same hand-over, or the tenant's records from a time it was here
     * before, and what pending still named of them. */
    rc = take_groups(txn, *tenant, NULL, &discard);
    if (rc == 0) {
        size_t live;

        rc = pending_sweep(txn, *tenant, 1, &live);
    }
    *groups = 0;
    while (rc == 0 && bgroup_next(b, len - 4, &pos, &g) == 1) {
        rc = cm_kv_put(txn, g.table == 0 ? T_OBJECTS : T_TOMBS, g.key, g.klen, g.val, g.vlen);
        ++*groups;
    }
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}
