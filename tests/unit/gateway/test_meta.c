/* test_meta.c - unit.gateway.meta: the LMDB metadata tables, checked
 * against a brute-force model (versions, LIST order, long-key groups,
 * pending, purge, state cache, reopen). */
#include "t_check.h"

#include "cm_err.h"
#include "cm_time.h"
#include "gw_meta.h"
#include "gw_parse.h"

#define NKEYS 400

struct mkey {
    uint32_t tenant;
    char key[GW_KEY_MAX];
    size_t klen;
    int live;
    uint64_t version, object;
};

static struct mkey model[NKEYS];
static size_t nmodel;

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen;
}

static int
mkey_cmp(const void *x, const void *y)
{
    const struct mkey *a = *(const struct mkey *const *)x, *b = *(const struct mkey *const *)y;

    return keycmp(a->key, a->klen, b->key, b->klen);
}

static struct gw_layout
mk_layout(uint32_t tenant, uint64_t object, int persisted_all)
{
    struct gw_layout l;

    memset(&l, 0, sizeof(l));
    l.tenant = tenant;
    l.object = object;
    l.size = object * 7;
    l.etag = object ^ 0xabcdefull;
    l.k = 2;
    l.m = 1;
    l.chunk_size = 4096;
    l.nstripes = 3;
    for (int j = 0; j < 3; j++) {
        l.holders[j] = (uint32_t)(10 + j);
    }
    l.persisted = persisted_all ? 7 : 1;
    return l;
}

static void
do_put(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen, uint64_t object,
       uint64_t want_version, int want_old)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(tenant, object, 1);
    struct gw_meta_old old = {0};

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, key, klen, &l, NULL, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(l.version, want_version);
    CHECK_EQ_INT(old.had, want_old);
    if (old.had) {
        CHECK_EQ_INT(old.lay.version, want_version - 1);
    }
    gw_meta_old_reset(&old);
}

static int
do_delete(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen)
{
    struct gw_meta_batch *b;
    struct gw_meta_old old = {0};
    int rc;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    rc = gw_meta_delete(b, tenant, key, klen, &old);
    CHECK_EQ_INT(old.had, rc == 0);
    gw_meta_old_reset(&old);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    return rc;
}

static void
test_codec(void)
{
    uint8_t buf[GW_META_REC_MAX];
    struct gw_layout l = mk_layout(3, 99, 0), d;
    size_t n;

    l.version = 5;
    n = gw_meta_encode(&l, NULL, buf);
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), 0);
    CHECK(memcmp(&l, &d, sizeof(l)) == 0);
    CHECK_EQ_INT(gw_meta_decode(buf, n - 1, &d), CM_E_PROTO);
    buf[0] = 9;
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);
    CHECK(!gw_layout_persisted(&l));
    l.persisted = 7;
    CHECK(gw_layout_persisted(&l));
}

static void
test_versions(struct gw_meta *m)
{
    struct gw_layout l;

    do_put(m, 1, "k", 1, 100, 1, 0);
    do_put(m, 1, "k", 1, 101, 2, 1);
    CHECK_EQ_INT(gw_meta_get(m, 1, "k", 1, &l), 0);
    CHECK_EQ_INT(l.object, 101);
    CHECK_EQ_INT(l.version, 2);
    CHECK_EQ_INT(gw_meta_get(m, 2, "k", 1, &l), CM_E_NOTFOUND);
    CHECK_EQ_INT(do_delete(m, 1, "k", 1), 0);
    CHECK_EQ_INT(gw_meta_get(m, 1, "k", 1, &l), CM_E_NOTFOUND);
    CHECK_EQ_INT(do_delete(m, 1, "k", 1), CM_E_NOTFOUND);
    do_put(m, 1, "k", 1, 102, 3, 0); /* monotonic across the delete */
    do_put(m, 2, "k", 1, 103, 1, 0); /* another tenant's namespace */
    CHECK_EQ_INT(do_delete(m, 1, "k", 1), 0);
    CHECK_EQ_INT(do_delete(m, 2, "k", 1), 0);
}

/* Many ops in one batch behave as in sequence. */
static void
test_batch(struct gw_meta *m)
{
    struct gw_meta_batch *b;
    struct gw_layout l;
    struct gw_meta_old old = {0};

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    for (int i = 0; i < 5; i++) {
        l = mk_layout(1, 200 + (uint64_t)i, 1);
        CHECK_EQ_INT(gw_meta_put(b, "batch", 5, &l, NULL, &old), 0);
        CHECK_EQ_INT(l.version, i + 1);
        CHECK_EQ_INT(old.had, i > 0);
    }
    CHECK_EQ_INT(gw_meta_delete(b, 1, "batch", 5, &old), 0);
    CHECK_EQ_INT(old.lay.object, 204);
    gw_meta_batch_abort(b);
    CHECK_EQ_INT(gw_meta_get(m, 1, "batch", 5, &l), CM_E_NOTFOUND);
}

struct collect {
    const struct mkey *got[NKEYS + 1];
    size_t n;
};

static void
collect_cb(void *arg, const char *key, size_t klen, const struct gw_layout *l)
{
    struct collect *c = arg;

    for (size_t i = 0; i < nmodel; i++) {
        if (model[i].live && model[i].tenant == l->tenant && model[i].klen == klen &&
            memcmp(model[i].key, key, klen) == 0) {
            CHECK_EQ_INT(l->object, model[i].object);
            CHECK_EQ_INT(l->version, model[i].version);
            CHECK(c->n < NKEYS);
            c->got[c->n++] = &model[i];
            return;
        }
    }
    fprintf(stderr, "listed an unknown key of %zu bytes\n", klen);
    CHECK(0);
}

static void
check_list(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
           size_t alen, unsigned limit)
{
    const struct mkey *want[NKEYS];
    size_t nw = 0, take;
    struct collect c;
    int more = -1;

    for (size_t i = 0; i < nmodel; i++) {
        const struct mkey *k = &model[i];
        if (!k->live || k->tenant != tenant || k->klen < plen ||
            memcmp(k->key, prefix, plen) != 0) {
            continue;
        }
        if (after != NULL && keycmp(k->key, k->klen, after, alen) <= 0) {
            continue;
        }
        want[nw++] = k;
    }
    qsort(want, nw, sizeof(want[0]), mkey_cmp);
    take = nw < limit ? nw : limit;
    c.n = 0;
    CHECK_EQ_INT(gw_meta_list(m, tenant, prefix, plen, after, alen, limit, collect_cb, &c, &more),
                 0);
    CHECK_EQ_INT(c.n, take);
    for (size_t i = 0; i < take; i++) {
        CHECK(c.got[i] == want[i]);
    }
    CHECK_EQ_INT(more, nw > limit);
}

static void
rand_key(char *out, size_t *len)
{
    static const char alpha[] = "ab/.\xc3\xa9";
    size_t n;

    if (t_range(0, 5) == 0) {
        /* long keys that share their first 480+ bytes: one group */
        n = (size_t)t_range(478, GW_KEY_MAX);
        memset(out, 'L', n);
        for (size_t i = 479; i < n; i++) {
            out[i] = "xyz"[t_range(0, 2)];
        }
    } else {
        n = (size_t)t_range(1, 5);
        for (size_t i = 0; i < n; i++) {
            out[i] = alpha[t_range(0, 3)];
        }
    }
    *len = n;
}

static void
test_model(struct gw_meta *m)
{
    uint64_t object = 1000;

    nmodel = 0;
    for (int step = 0; step < 1500; step++) {
        char key[GW_KEY_MAX];
        size_t klen, i;
        uint32_t tenant = (uint32_t)t_range(5, 7);
        struct mkey *k = NULL;

        rand_key(key, &klen);
        for (i = 0; i < nmodel; i++) {
            if (model[i].tenant == tenant && model[i].klen == klen &&
                memcmp(model[i].key, key, klen) == 0) {
                k = &model[i];
                break;
            }
        }
        if (k == NULL) {
            if (nmodel == NKEYS) {
                continue;
            }
            k = &model[nmodel++];
            memset(k, 0, sizeof(*k));
            k->tenant = tenant;
            memcpy(k->key, key, klen);
            k->klen = klen;
        }
        if (t_range(0, 3) == 0) {
            int rc = do_delete(m, tenant, key, klen);
            CHECK_EQ_INT(rc, k->live ? 0 : CM_E_NOTFOUND);
            k->live = 0;
        } else {
            do_put(m, tenant, key, klen, ++object, k->version + 1, k->live);
            k->version++;
            k->object = object;
            k->live = 1;
        }
    }
    for (int q = 0; q < 300; q++) {
        char p[GW_KEY_MAX], a[GW_KEY_MAX];
        size_t plen = 0, alen = 0;
        uint32_t tenant = (uint32_t)t_range(4, 8);
        int use_after = t_range(0, 1);

        if (t_range(0, 1)) {
            rand_key(p, &plen);
            plen = (size_t)t_range(0, (int)plen);
        }
        if (use_after) {
            rand_key(a, &alen);
            alen = (size_t)t_range(0, (int)alen);
        }
        check_list(m, tenant, p, plen, use_after ? a : NULL, alen, (unsigned)t_range(1, NKEYS + 2));
    }
    /* paging with `after` = last key walks every key once */
    for (uint32_t tenant = 5; tenant <= 7; tenant++) {
        check_list(m, tenant, "", 0, NULL, 0, 3);
        check_list(m, tenant, "L", 1, NULL, 0, 1000);
    }
}

struct pend {
    uint64_t objects[16];
    size_t n;
};

static void
pend_cb(void *arg, const struct gw_layout *l)
{
    struct pend *p = arg;

    if (p->n < 16) {
        p->objects[p->n++] = l->object;
    }
}

/* Applies one layout report of a live object in its own transaction. */
static void
update_live(struct gw_meta *m, const struct gw_layout *l)
{
    struct gw_meta_batch *b;
    int stale = -1;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_update(b, l, &stale), 0);
    CHECK_EQ_INT(stale, 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
}

static void
test_pending(struct gw_meta *m)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(9, 5000, 0), got;
    struct gw_meta_old old = {0};
    struct pend p = {{0}, 0};
    int stale;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p1", 2, &l, NULL, &old), 0);
    l = mk_layout(9, 5001, 0);
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, NULL, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 2);

    /* a new holder and one more persisted chunk: stored, still pending */
    l = mk_layout(9, 5000, 0);
    l.holders[1] = 77;
    l.persisted = 3;
    update_live(m, &l);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK_EQ_INT(got.holders[1], 77);
    CHECK_EQ_INT(got.persisted, 3);
    CHECK_EQ_INT(got.version, 1);

    /* fully persisted, same holders: leaves pending, the record is kept
     * as written (its bits count only while pending) */
    l.persisted = 7;
    update_live(m, &l);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 1);
    CHECK_EQ_INT(p.objects[0], 5001);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK_EQ_INT(got.holders[1], 77);
    CHECK_EQ_INT(got.persisted, 3);

    /* fully persisted with a moved holder: stored and leaves pending */
    l = mk_layout(9, 5003, 0);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p3", 2, &l, NULL, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    l.holders[2] = 88;
    l.persisted = 7;
    update_live(m, &l);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p3", 2, &got), 0);
    CHECK_EQ_INT(got.holders[2], 88);
    CHECK_EQ_INT(got.persisted, 7);

    /* p2 replaced: its old object's update is stale and pending empties */
    l = mk_layout(9, 5002, 1);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, NULL, &old), 0);
    CHECK_EQ_INT(old.had, 1);
    CHECK_EQ_INT(old.lay.object, 5001);
    l = mk_layout(9, 5001, 1);
    CHECK_EQ_INT(gw_meta_update(b, &l, &stale), 0);
    CHECK_EQ_INT(stale, 1);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p2", 2, &got), 0);
    CHECK_EQ_INT(got.object, 5002);
}

struct tenants {
    uint32_t ids[32];
    size_t n;
};

static void
tenant_cb(void *arg, uint32_t t)
{
    struct tenants *ts = arg;

    CHECK(ts->n < 32);
    ts->ids[ts->n++] = t;
}

static void
count_cb(void *arg, const struct gw_layout *l)
{
    (*(size_t *)arg)++;
}

static void
test_purge(struct gw_meta *m)
{
    struct tenants ts = {{0}, 0};
    struct gw_meta_batch *b;
    size_t purged = 0, expect = 0;
    int left = 1, rounds = 0;
    struct gw_layout l;

    CHECK_EQ_INT(gw_meta_tenants(m, tenant_cb, &ts), 0);
    /* 1 and 2 have tombstones only; 5..7 objects; 9 objects */
    CHECK_EQ_INT(ts.n, 6);
    CHECK_EQ_INT(ts.ids[0], 1);
    CHECK_EQ_INT(ts.ids[1], 2);
    CHECK_EQ_INT(ts.ids[5], 9);
    for (size_t i = 0; i < nmodel; i++) {
        expect += model[i].tenant == 6 && model[i].live;
    }
    while (left) {
        CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
        CHECK_EQ_INT(gw_meta_purge(b, 6, 7, count_cb, &purged, &left), 0);
        CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
        CHECK(++rounds < 1000);
    }
    CHECK_EQ_INT(purged, expect);
    for (size_t i = 0; i < nmodel; i++) {
        if (model[i].tenant == 6) {
            CHECK_EQ_INT(gw_meta_get(m, 6, model[i].key, model[i].klen, &l), CM_E_NOTFOUND);
            model[i].live = 0;
        }
    }
    ts.n = 0;
    CHECK_EQ_INT(gw_meta_tenants(m, tenant_cb, &ts), 0);
    CHECK_EQ_INT(ts.n, 5);
    check_list(m, 5, "", 0, NULL, 0, 1000);
    check_list(m, 7, "", 0, NULL, 0, 1000);
}

/* Format 2: what S3 keeps round-trips; format 1 records still read; torn
 * or inconsistent records are refused. */
static void
test_codec_v2(void)
{
    uint8_t buf[GW_META_REC_MAX], v1[56 + 12];
    struct gw_layout l = mk_layout(3, 99, 0), d;
    struct gw_meta_attrs a = {0}, da;
    static const char hdrs[] = "content-type\0text/plain\0x-amz-meta-a\0b\0";
    size_t n;

    a.mtime_ms = 1700000000123ull;
    a.has_md5 = 1;
    memset(a.md5, 0xab, 16);
    a.hdrs = hdrs;
    a.hdrs_len = sizeof(hdrs) - 1;
    n = gw_meta_encode(&l, &a, buf);
    CHECK_EQ_INT(gw_meta_decode_attrs(buf, n, &d, &da), 0);
    CHECK(memcmp(&l, &d, sizeof(l)) == 0);
    CHECK_EQ_INT(da.mtime_ms, a.mtime_ms);
    CHECK_EQ_INT(da.has_md5, 1);
    CHECK(memcmp(da.md5, a.md5, 16) == 0);
    CHECK_EQ_INT(da.nparts, 0);
    CHECK_EQ_INT(da.hdrs_len, a.hdrs_len);
    CHECK(memcmp(da.hdrs, hdrs, a.hdrs_len) == 0);
    for (size_t cut = 0; cut < n; cut++) {
        CHECK_EQ_INT(gw_meta_decode_attrs(buf, cut, &d, &da), CM_E_PROTO);
    }
    buf[3] |= 4; /* an unknown flag */
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);

    /* a composite: no holders, a part count */
    memset(&l, 0, sizeof(l));
    l.tenant = 3;
    l.object = 77;
    l.size = 123456789;
    l.etag = 5;
    a.nparts = 12;
    a.hdrs = NULL;
    a.hdrs_len = 0;
    n = gw_meta_encode(&l, &a, buf);
    CHECK_EQ_INT(gw_meta_decode_attrs(buf, n, &d, &da), 0);
    CHECK(gw_layout_composite(&d));
    CHECK_EQ_INT(da.nparts, 12);
    CHECK_EQ_INT(d.size, 123456789);
    CHECK(da.hdrs == NULL);
    a.nparts = 0; /* a composite of nothing */
    n = gw_meta_encode(&l, &a, buf);
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);

    /* format 1, as earlier gateways wrote it */
    l = mk_layout(4, 1234, 1);
    l.version = 9;
    memset(v1, 0, sizeof(v1));
    v1[0] = 1;
    v1[1] = 2;
    v1[2] = 1;
    v1[4] = 4;
    v1[9] = 16; /* chunk_size 4096 */
    v1[12] = 3;
    v1[16] = 1234 & 0xff;
    v1[17] = 1234 >> 8;
    v1[24] = 9;
    memcpy(v1 + 32, &l.size, 8); /* little-endian host */
    memcpy(v1 + 40, &l.etag, 8);
    v1[48] = 7;
    for (int j = 0; j < 3; j++) {
        v1[56 + 4 * j] = (uint8_t)(10 + j);
    }
    CHECK_EQ_INT(gw_meta_decode_attrs(v1, sizeof(v1), &d, &da), 0);
    CHECK(memcmp(&l, &d, sizeof(l)) == 0);
    CHECK_EQ_INT(da.mtime_ms, 0);
    CHECK_EQ_INT(da.has_md5, 0);
    v1[1] = 0; /* format 1 has no composites */
    CHECK_EQ_INT(gw_meta_decode(v1, sizeof(v1) - 8, &d), CM_E_PROTO);
}

static void
put_attrs(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen, struct gw_layout *l,
          const struct gw_meta_attrs *a, struct gw_meta_old *old)
{
    struct gw_meta_batch *b;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    l->tenant = tenant;
    CHECK_EQ_INT(gw_meta_put(b, key, klen, l, a, old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
}

struct keys {
    char k[16][64];
    size_t n;
};

static int
keys_cb(void *arg, const char *key, size_t klen, const struct gw_layout *l,
        const struct gw_meta_attrs *a)
{
    struct keys *ks = arg;

    CHECK(ks->n < 16 && klen < 64);
    memcpy(ks->k[ks->n], key, klen);
    ks->k[ks->n][klen] = '\0';
    ks->n++;
    return 0;
}

/*
 * Internal keys and composite versions: parts put under internal keys are
 * invisible to LIST, their deletes leave no tombstone; a composite takes
 * them over in order (their pending entries move to cpending, where layout
 * reports find them), and its replacement, delete or purge hands every
 * part back for deletion.
 */
static void
test_composite(struct gw_meta *m)
{
    const uint32_t T = 20;
    const char *pk[3] = {"\0u1/00001", "\0u1/00002", "\0u1/00003"};
    size_t pkl[3] = {9, 9, 9};
    struct gw_meta_attrs a = {0};
    struct gw_meta_old old = {0};
    struct gw_meta_obj obj;
    struct gw_meta_batch *b;
    struct gw_layout l, got;
    struct keys ks = {0};
    struct pend p = {{0}, 0};
    uint64_t before = cm_wall_ms();
    int stale;

    /* three parts, the second not yet persisted */
    for (int i = 0; i < 3; i++) {
        l = mk_layout(T, 7000 + (uint64_t)i, i != 1);
        a.has_md5 = 1;
        memset(a.md5, i + 1, 16);
        CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
        l.tenant = T;
        CHECK_EQ_INT(gw_meta_put(b, pk[i], pkl[i], &l, &a, &old), 0);
        CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    }
    put_attrs(m, T, "b/visible", 9, &l, NULL, &old);
    CHECK_EQ_INT(gw_meta_scan(m, T, "", 0, NULL, 0, keys_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 1);
    CHECK_EQ_STR(ks.k[0], "b/visible");
    ks.n = 0;
    CHECK_EQ_INT(gw_meta_scan(m, T, "\0u1/", 4, NULL, 0, keys_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 3);
    {
        struct gw_meta_attrs ga;

        CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
        CHECK_EQ_INT(gw_meta_batch_get(b, T, pk[1], pkl[1], &got, &ga), 0);
        CHECK_EQ_INT(got.object, 7001);
        CHECK(ga.has_md5 && ga.md5[0] == 2);
        CHECK(ga.mtime_ms >= before && ga.mtime_ms <= cm_wall_ms());
        gw_meta_batch_abort(b);
    }

    /* complete: the object is the three parts, in order */
    memset(&l, 0, sizeof(l));
    l.tenant = T;
    l.size = 3 * 7001 * 7;
    l.etag = 42;
    a.has_md5 = 1;
    memset(a.md5, 0xee, 16);
    a.hdrs = "content-type\0a/b\0";
    a.hdrs_len = 17;
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put_composite(b, "b/obj", 5, &l, &a, pk, pkl, 3, &old), 0);
    CHECK_EQ_INT(old.had, 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK(gw_layout_composite(&l));
    CHECK_EQ_INT(l.version, 1);
    CHECK_EQ_INT(gw_meta_get_obj(m, T, "b/obj", 5, &obj), 0);
    CHECK_EQ_INT(obj.a.nparts, 3);
    CHECK_EQ_INT(obj.lay.object, l.object);
    CHECK_EQ_INT(obj.lay.size, l.size);
    CHECK_EQ_INT(obj.a.hdrs_len, 17);
    CHECK(memcmp(obj.a.hdrs, "content-type\0a/b\0", 17) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(obj.parts[i].object, 7000 + (uint64_t)i);
        CHECK_EQ_INT(obj.parts[i].k, 2);
    }
    gw_meta_obj_fini(&obj);
    ks.n = 0;
    CHECK_EQ_INT(gw_meta_scan(m, T, "\0u1/", 4, NULL, 0, keys_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 0); /* the parts left the objects table */
    /* the unpersisted part is tracked as a part now */
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 1);
    CHECK_EQ_INT(p.objects[0], 7001);
    l = mk_layout(T, 7001, 0);
    l.holders[0] = 99;
    l.persisted = 7;
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_update(b, &l, &stale), 0);
    CHECK_EQ_INT(stale, 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 0);
    CHECK_EQ_INT(gw_meta_get_obj(m, T, "b/obj", 5, &obj), 0);
    CHECK_EQ_INT(obj.parts[1].holders[0], 99);
    gw_meta_obj_fini(&obj);

    /* replaced by a single version: every part comes back */
    l = mk_layout(T, 7100, 1);
    put_attrs(m, T, "b/obj", 5, &l, NULL, &old);
    CHECK_EQ_INT(old.had, 1);
    CHECK_EQ_INT(old.nparts, 3);
    CHECK_EQ_INT(old.parts[2].object, 7002);
    CHECK_EQ_INT(l.version, 2);
    gw_meta_old_reset(&old);

    /* a composite again, then deleted */
    l = mk_layout(T, 7200, 0);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, pk[0], pkl[0], &l, NULL, &old), 0);
    memset(&l, 0, sizeof(l));
    l.tenant = T;
    l.size = 7200 * 7;
    CHECK_EQ_INT(gw_meta_put_composite(b, "b/obj", 5, &l, NULL, pk, pkl, 1, &old), 0);
    CHECK_EQ_INT(old.had, 1);
    CHECK_EQ_INT(old.nparts, 0);
    CHECK_EQ_INT(old.lay.object, 7100);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 1);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_delete(b, T, "b/obj", 5, &old), 0);
    CHECK_EQ_INT(old.nparts, 1);
    CHECK_EQ_INT(old.parts[0].object, 7200);
    /* a report for the deleted part is stale */
    l = mk_layout(T, 7200, 1);
    CHECK_EQ_INT(gw_meta_update(b, &l, &stale), 0);
    CHECK_EQ_INT(stale, 1);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    gw_meta_old_reset(&old);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 0);

    /* a missing part refuses the composite */
    memset(&l, 0, sizeof(l));
    l.tenant = T;
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put_composite(b, "b/obj", 5, &l, NULL, pk, pkl, 1, &old), CM_E_NOTFOUND);
    gw_meta_batch_abort(b);
    gw_meta_old_reset(&old);

    /* internal keys leave no tombstone: a new part starts at version 1 */
    l = mk_layout(T, 7300, 1);
    put_attrs(m, T, "\0u2/00001", 9, &l, NULL, &old);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_delete(b, T, "\0u2/00001", 9, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    l = mk_layout(T, 7301, 1);
    put_attrs(m, T, "\0u2/00001", 9, &l, NULL, &old);
    CHECK_EQ_INT(l.version, 1);
}

static int
aux_cb(void *arg, const char *name, size_t nlen, const void *val, size_t vlen)
{
    struct keys *ks = arg;

    CHECK(ks->n < 16 && nlen < 64);
    memcpy(ks->k[ks->n], name, nlen);
    ks->k[ks->n][nlen] = '\0';
    ks->n++;
    return 0;
}

/* Buckets and uploads: a value per (tenant, name), in name order, purged
 * with their tenant; a tenant with only buckets is still a tenant. */
static void
test_aux(struct gw_meta *m)
{
    struct gw_meta_batch *b;
    struct keys ks = {0};
    struct cm_buf v;
    const void *bv;
    size_t blen;
    int left;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_BUCKETS, 30, "zeta", 4, "1", 1, 0), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_BUCKETS, 30, "alpha", 5, "2", 1, 0), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_BUCKETS, 30, "alpha", 5, "3", 1, 0), CM_E_EXISTS);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_BUCKETS, 31, "alpha", 5, "4", 1, 0), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_UPLOADS, 30, "up", 2, "u", 1, 0), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_put(b, GW_META_UPLOADS, 30, "up", 2, "v", 1, 1), 0);
    CHECK_EQ_INT(gw_meta_batch_aux_get(b, GW_META_UPLOADS, 30, "up", 2, &bv, &blen), 0);
    CHECK(blen == 1 && *(const char *)bv == 'v');
    CHECK_EQ_INT(gw_meta_batch_aux_del(b, GW_META_BUCKETS, 30, "none", 4), CM_E_NOTFOUND);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(gw_meta_aux_scan(m, GW_META_BUCKETS, 30, aux_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 2);
    CHECK_EQ_STR(ks.k[0], "alpha");
    CHECK_EQ_STR(ks.k[1], "zeta");
    cm_buf_init(&v);
    CHECK_EQ_INT(gw_meta_aux_get(m, GW_META_BUCKETS, 31, "alpha", 5, &v), 0);
    CHECK(v.len == 1 && v.p[0] == '4');
    CHECK_EQ_INT(gw_meta_aux_get(m, GW_META_BUCKETS, 31, "zeta", 4, &v), CM_E_NOTFOUND);
    cm_buf_fini(&v);
    {
        struct tenants ts = {{0}, 0};
        int seen30 = 0, seen31 = 0;

        CHECK_EQ_INT(gw_meta_tenants(m, tenant_cb, &ts), 0);
        for (size_t i = 0; i < ts.n; i++) {
            seen30 += ts.ids[i] == 30;
            seen31 += ts.ids[i] == 31;
        }
        CHECK(seen30 == 1 && seen31 == 1);
    }
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_purge(b, 30, 100, NULL, NULL, &left), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(left, 0);
    ks.n = 0;
    CHECK_EQ_INT(gw_meta_aux_scan(m, GW_META_BUCKETS, 30, aux_cb, &ks), 0);
    CHECK_EQ_INT(gw_meta_aux_scan(m, GW_META_UPLOADS, 30, aux_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 0);
    CHECK_EQ_INT(gw_meta_aux_scan(m, GW_META_BUCKETS, 31, aux_cb, &ks), 0);
    CHECK_EQ_INT(ks.n, 1);
}

/* A composite's parts go to the purge callback; the record does not. */
static void
test_purge_composite(struct gw_meta *m)
{
    const char *pk[2] = {"\0u9/00001", "\0u9/00002"};
    size_t pkl[2] = {9, 9}, purged = 0;
    struct gw_meta_old old = {0};
    struct gw_meta_batch *b;
    struct gw_layout l;
    struct pend p = {{0}, 0};
    int left;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    for (int i = 0; i < 2; i++) {
        l = mk_layout(40, 8000 + (uint64_t)i, 0);
        CHECK_EQ_INT(gw_meta_put(b, pk[i], pkl[i], &l, NULL, &old), 0);
    }
    memset(&l, 0, sizeof(l));
    l.tenant = 40;
    CHECK_EQ_INT(gw_meta_put_composite(b, "x/y", 3, &l, NULL, pk, pkl, 2, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 2);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_purge(b, 40, 100, count_cb, &purged, &left), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(purged, 2);
    p.n = 0;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, &p), 0);
    CHECK_EQ_INT(p.n, 0);
    CHECK_EQ_INT(gw_meta_get(m, 40, "x/y", 3, &l), CM_E_NOTFOUND);
}

static void
test_state(struct gw_meta *m)
{
    char *json = NULL;
    size_t len = 0;

    CHECK_EQ_INT(gw_meta_state_load(m, &json, &len), CM_E_NOTFOUND);
    CHECK_EQ_INT(gw_meta_state_save(m, "{\"epoch\":1}", 11), 0);
    CHECK_EQ_INT(gw_meta_state_save(m, "{\"epoch\":2}", 11), 0);
    CHECK_EQ_INT(gw_meta_state_load(m, &json, &len), 0);
    CHECK_EQ_INT(len, 11);
    CHECK_EQ_STR(json, "{\"epoch\":2}");
    free(json);
}

int
main(void)
{
    char *dir;
    struct gw_meta *m;
    struct gw_layout l;

    t_seed();
    dir = t_tmpdir();
    test_codec();
    test_codec_v2();
    CHECK_EQ_INT(gw_meta_open(dir, 64u << 20, &m), 0);
    test_versions(m);
    test_batch(m);
    test_model(m);
    test_pending(m);
    test_state(m);
    gw_meta_close(m);

    /* everything survives a reopen */
    CHECK_EQ_INT(gw_meta_open(dir, 64u << 20, &m), 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p2", 2, &l), 0);
    CHECK_EQ_INT(l.object, 5002);
    do_put(m, 1, "k", 1, 9999, 4, 0);
    for (uint32_t tenant = 5; tenant <= 7; tenant++) {
        check_list(m, tenant, "", 0, NULL, 0, 1000);
    }
    test_purge(m);
    test_composite(m);
    test_aux(m);
    test_purge_composite(m);
    gw_meta_close(m);
    gw_meta_close(NULL);
    t_rmtree(dir);
    printf("ok\n");
    return 0;
}
