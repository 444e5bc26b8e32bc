/* test_meta.c - unit.gateway.meta: the LMDB metadata tables, checked
 * against a brute-force model (versions, LIST order, long-key groups,
 * pending, purge, state cache, reopen). */
#include "t_check.h"

#include "cm_err.h"
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
    struct gw_layout l = mk_layout(tenant, object, 1), old;
    int had_old = -1;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, key, klen, &l, &old, &had_old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(l.version, want_version);
    CHECK_EQ_INT(had_old, want_old);
    if (had_old) {
        CHECK_EQ_INT(old.version, want_version - 1);
    }
}

static int
do_delete(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen)
{
    struct gw_meta_batch *b;
    struct gw_layout old;
    int rc;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    rc = gw_meta_delete(b, tenant, key, klen, &old);
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
    n = gw_meta_encode(&l, buf);
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
    struct gw_layout l, old;
    int had_old;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    for (int i = 0; i < 5; i++) {
        l = mk_layout(1, 200 + (uint64_t)i, 1);
        CHECK_EQ_INT(gw_meta_put(b, "batch", 5, &l, &old, &had_old), 0);
        CHECK_EQ_INT(l.version, i + 1);
        CHECK_EQ_INT(had_old, i > 0);
    }
    CHECK_EQ_INT(gw_meta_delete(b, 1, "batch", 5, &old), 0);
    CHECK_EQ_INT(old.object, 204);
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
    struct gw_layout l = mk_layout(9, 5000, 0), old, got;
    struct pend p = {{0}, 0};
    int had_old, stale;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p1", 2, &l, &old, &had_old), 0);
    l = mk_layout(9, 5001, 0);
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, &old, &had_old), 0);
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
    CHECK_EQ_INT(gw_meta_put(b, "p3", 2, &l, &old, &had_old), 0);
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
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, &old, &had_old), 0);
    CHECK_EQ_INT(had_old, 1);
    CHECK_EQ_INT(old.object, 5001);
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
    gw_meta_close(m);
    gw_meta_close(NULL);
    t_rmtree(dir);
    printf("ok\n");
    return 0;
}
