/* test_meta.c - unit.gateway.meta: the layout record (formats 1 and 2,
 * tags, the size limit), META records, and the LMDB metadata tables checked against a
 * brute-force model (versions, LIST order, long-key groups, pending
 * versions and tombstones, engine reports, restores for --rebuild-meta,
 * purge, state cache, reopen). */
#include "t_check.h"

#include "cm_bytes.h"
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

/* A format-1 record as the gateway wrote it before tags existed. */
static size_t
encode_fmt1(const struct gw_layout *l, uint8_t *buf)
{
    struct gw_layout t = *l;

    t.tags = NULL;
    return gw_meta_encode(&t, buf);
}

static void
test_codec(void)
{
    uint8_t *buf = malloc(GW_META_REC_LIMIT);
    struct gw_layout l = mk_layout(3, 99, 0), d;
    uint32_t tags[9];
    size_t n;

    CHECK(buf != NULL);
    l.version = 5;
    /* no tags: format 1, every tag unknown */
    n = gw_meta_encode(&l, buf);
    CHECK_EQ_INT(n, gw_meta_rec_len(&l));
    CHECK_EQ_INT(n, 56 + 4 * 3);
    CHECK_EQ_INT(buf[0], 1);
    CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
    CHECK(d.tags == NULL && gw_layout_tag(&d, 4) == 0);
    CHECK(memcmp(&l, &d, sizeof(l)) == 0);
    CHECK_EQ_INT(gw_meta_decode(buf, n - 1, &d), CM_E_PROTO);
    CHECK_EQ_INT(gw_meta_decode(buf, n + 4, &d), CM_E_PROTO);
    buf[0] = 9;
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);

    /* tags: format 2, one u32 per chunk after the holders, by wire index */
    for (int i = 0; i < 9; i++) {
        tags[i] = 0x100000u * (uint32_t)i + 7;
    }
    l.tags = tags;
    n = gw_meta_encode(&l, buf);
    CHECK_EQ_INT(n, 56 + 4 * 3 + 4 * 9);
    CHECK_EQ_INT(buf[0], 2);
    CHECK_EQ_INT(cm_get_le32(buf + 56 + 12 + 4 * 5), tags[5]);
    CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
    CHECK(d.tags != NULL && d.tags != tags);
    CHECK(memcmp(d.tags, tags, sizeof(tags)) == 0);
    CHECK_EQ_INT(gw_layout_tag(&d, 8), tags[8]);
    free(d.tags);
    d.tags = tags;
    CHECK(memcmp(&l, &d, sizeof(l)) == 0);
    CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
    gw_layout_fini(&d);
    CHECK(d.tags == NULL);
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), 0); /* tags skipped */
    CHECK(d.tags == NULL && d.object == 99 && d.holders[2] == 12);
    for (size_t cut = 0; cut < n; cut++) {
        CHECK_EQ_INT(gw_meta_decode(buf, cut, &d), CM_E_PROTO);
    }
    CHECK_EQ_INT(gw_meta_decode(buf, n + 4, &d), CM_E_PROTO);
    buf[0] = 1; /* format 1 with tags after it: the length gives it away */
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);
    buf[0] = 2;
    cm_put_le32(buf + 12, 4); /* a stripe more than the tags say */
    CHECK_EQ_INT(gw_meta_decode(buf, n, &d), CM_E_PROTO);

    /* an old record decodes with every tag unknown */
    n = encode_fmt1(&l, buf);
    CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
    CHECK(d.tags == NULL && d.nstripes == 3);

    /* 1 GiB at 4+2 with 1 MiB chunks: 256 stripes, tags kept (6,224 bytes) */
    {
        struct gw_layout g = mk_layout(1, 5, 1);
        uint32_t *gt = calloc(256 * 6, sizeof(*gt));
        CHECK(gt != NULL);
        g.k = 4;
        g.m = 2;
        g.nstripes = 256;
        g.tags = gt;
        gt[256 * 6 - 1] = 42;
        n = gw_meta_encode(&g, buf);
        printf("layout record of 1 GiB at 4+2, 1 MiB chunks: %zu bytes\n", n);
        CHECK_EQ_INT(n, 56 + 4 * 6 + 4 * 256 * 6);
        CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
        CHECK_EQ_INT(d.tags[256 * 6 - 1], 42);
        gw_layout_fini(&d);
        /* past the limit: format 1 (tags unknown), never an oversized member */
        free(gt);
        g.nstripes = 4000;
        g.tags = gt = calloc(4000 * 6, sizeof(*gt));
        CHECK(gt != NULL);
        CHECK_EQ_INT(gw_meta_rec_len(&g), 56 + 4 * 6);
        n = gw_meta_encode(&g, buf);
        CHECK_EQ_INT(buf[0], 1);
        CHECK_EQ_INT(gw_meta_decode_tags(buf, n, &d), 0);
        CHECK(d.tags == NULL && d.nstripes == 4000);
        free(gt);
    }
    CHECK(!gw_layout_persisted(&l));
    l.persisted = 7;
    CHECK(gw_layout_persisted(&l));

    /* gw_layout_copy gives the copy its own array */
    l.tags = tags;
    CHECK_EQ_INT(gw_layout_copy(&d, &l), 0);
    CHECK(d.tags != tags && memcmp(d.tags, tags, sizeof(tags)) == 0);
    gw_layout_fini(&d);
    l.tags = NULL;
    CHECK_EQ_INT(gw_layout_copy(&d, &l), 0);
    CHECK(d.tags == NULL);
    free(buf);
    printf("ok codec\n");
}

/* META records: the contract's bytes both ways, every cut refused, which
 * one is newer. */
static void
test_mrec(void)
{
    uint8_t rec[100], buf[300];
    struct gw_mrec m, d;

    for (size_t i = 0; i < sizeof(rec); i++) {
        rec[i] = (uint8_t)i;
    }
    m = (struct gw_mrec){.kind = GW_MREC_VERSION,
                         .tenant = 7,
                         .key = "a/b",
                         .klen = 3,
                         .version = 42,
                         .rec = rec,
                         .rec_len = sizeof(rec)};
    CHECK_EQ_INT(gw_mrec_len(&m), 1 + 4 + 2 + 3 + 8 + 4 + 100);
    gw_mrec_encode(&m, buf);
    CHECK(buf[0] == 1 && cm_get_le32(buf + 1) == 7 && cm_get_le16(buf + 5) == 3);
    CHECK(memcmp(buf + 7, "a/b", 3) == 0 && cm_get_le64(buf + 10) == 42);
    CHECK(cm_get_le32(buf + 18) == 100 && memcmp(buf + 22, rec, 100) == 0);
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m), &d), 0);
    CHECK(d.kind == GW_MREC_VERSION && d.tenant == 7 && d.klen == 3 && d.version == 42);
    CHECK(memcmp(d.key, "a/b", 3) == 0 && d.rec_len == 100 && memcmp(d.rec, rec, 100) == 0);
    for (size_t cut = 0; cut < gw_mrec_len(&m); cut++) {
        CHECK_EQ_INT(gw_mrec_decode(buf, cut, &d), CM_E_PROTO);
    }
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m) + 1, &d), CM_E_PROTO);

    m.kind = GW_MREC_TOMB;
    CHECK_EQ_INT(gw_mrec_len(&m), 1 + 4 + 2 + 3 + 8);
    gw_mrec_encode(&m, buf);
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m), &d), 0);
    CHECK(d.kind == GW_MREC_TOMB && d.version == 42 && d.rec == NULL && d.rec_len == 0);
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m) + 4, &d), CM_E_PROTO);
    buf[0] = 3;
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m), &d), CM_E_PROTO);
    buf[0] = GW_MREC_TOMB;
    cm_put_le16(buf + 5, 0);
    CHECK_EQ_INT(gw_mrec_decode(buf, gw_mrec_len(&m) - 3, &d), CM_E_PROTO); /* empty key */

    struct gw_mrec v5 = {.kind = GW_MREC_VERSION, .version = 5};
    struct gw_mrec v6 = {.kind = GW_MREC_VERSION, .version = 6};
    struct gw_mrec t5 = {.kind = GW_MREC_TOMB, .version = 5};
    CHECK(gw_mrec_newer(&v6, &v5) && !gw_mrec_newer(&v5, &v6));
    CHECK(gw_mrec_newer(&t5, &v5) && !gw_mrec_newer(&v5, &t5));
    CHECK(gw_mrec_newer(&v6, &t5) && !gw_mrec_newer(&t5, &v6));
    CHECK(!gw_mrec_newer(&v5, &v5) && !gw_mrec_newer(&t5, &t5));
    printf("ok meta records\n");
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
    uint32_t tenant; /* only its rows: the other tests leave theirs */
    uint64_t objects[16];
    uint64_t versions[16];
    int tomb[16];
    uint8_t m[16];
    uint32_t tag1[16];
    size_t n;
};

static void
pend_cb(void *arg, const struct gw_pending *pe)
{
    struct pend *p = arg;

    if (pe->lay->tenant == p->tenant && p->n < 16) {
        p->objects[p->n] = pe->lay->object;
        p->versions[p->n] = pe->lay->version;
        p->tomb[p->n] = pe->tomb;
        p->m[p->n] = pe->lay->m;
        p->tag1[p->n] = pe->tomb ? 0 : gw_layout_tag(pe->lay, 1);
        p->n++;
    }
}

static size_t
scan(struct gw_meta *m, struct pend *p, uint32_t tenant)
{
    memset(p, 0, sizeof(*p));
    p->tenant = tenant;
    CHECK_EQ_INT(gw_meta_scan_pending(m, pend_cb, p), 0);
    return p->n;
}

/* Applies one engine report in its own transaction; returns stale. */
static int
report(struct gw_meta *m, const struct gw_layout *l, enum gw_report what)
{
    struct gw_meta_batch *b;
    int stale = -1;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_update(b, l, what, &stale), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK(stale == 0 || stale == 1);
    return stale;
}

static void
test_pending(struct gw_meta *m)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(9, 5000, 0), old, got;
    struct pend p;
    uint32_t tags[9] = {0}, tags2[9] = {0};
    int had_old;

    tags[1] = 0x00300005;
    l.tags = tags;
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p1", 2, &l, &old, &had_old), 0);
    l = mk_layout(9, 5001, 1); /* persisted at once: pending all the same */
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, &old, &had_old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(scan(m, &p, 9), 2);
    CHECK(p.objects[0] == 5000 && !p.tomb[0] && p.tag1[0] == 0x00300005);
    CHECK(p.objects[1] == 5001 && !p.tomb[1] && p.tag1[1] == 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK(got.tags != NULL && got.tags[1] == 0x00300005);
    gw_layout_fini(&got);

    /* CHANGED: a new holder, its tags and one more persisted chunk are
     * stored; still pending */
    l = mk_layout(9, 5000, 0);
    l.holders[1] = 77;
    l.persisted = 3;
    tags2[1] = 0x00400009;
    l.tags = tags2;
    CHECK_EQ_INT(report(m, &l, GW_REPORT_CHANGED), 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK_EQ_INT(got.holders[1], 77);
    CHECK_EQ_INT(got.persisted, 3);
    CHECK_EQ_INT(got.version, 1);
    CHECK_EQ_INT(gw_layout_tag(&got, 1), 0x00400009);
    gw_layout_fini(&got);
    CHECK_EQ_INT(scan(m, &p, 9), 2);
    /* a report without tags keeps the stored ones */
    l.tags = NULL;
    CHECK_EQ_INT(report(m, &l, GW_REPORT_CHANGED), 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK_EQ_INT(gw_layout_tag(&got, 1), 0x00400009);
    gw_layout_fini(&got);

    /* DONE with the same holders and tags: leaves pending, the record is
     * kept as written (its bits count only while pending) */
    l.persisted = 7;
    l.tags = tags2;
    CHECK_EQ_INT(report(m, &l, GW_REPORT_DONE), 0);
    CHECK_EQ_INT(scan(m, &p, 9), 1);
    CHECK_EQ_INT(p.objects[0], 5001);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p1", 2, &got), 0);
    CHECK_EQ_INT(got.holders[1], 77);
    CHECK_EQ_INT(got.persisted, 3);
    gw_layout_fini(&got);
    CHECK_EQ_INT(report(m, &l, GW_REPORT_DONE), 1); /* done already */

    /* DONE with a moved holder: stored and leaves pending */
    l = mk_layout(9, 5003, 0);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p3", 2, &l, &old, &had_old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    l.holders[2] = 88;
    l.persisted = 7;
    CHECK_EQ_INT(report(m, &l, GW_REPORT_DONE), 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p3", 2, &got), 0);
    CHECK_EQ_INT(got.holders[2], 88);
    CHECK_EQ_INT(got.persisted, 7);
    gw_layout_fini(&got);

    /* p2 replaced: its old object's report is stale, and pending holds the
     * new version only */
    l = mk_layout(9, 5002, 1);
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, "p2", 2, &l, &old, &had_old), 0);
    CHECK_EQ_INT(had_old, 1);
    CHECK_EQ_INT(old.object, 5001);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    l = mk_layout(9, 5001, 1);
    CHECK_EQ_INT(report(m, &l, GW_REPORT_DONE), 1);
    CHECK_EQ_INT(scan(m, &p, 9), 1);
    CHECK_EQ_INT(p.objects[0], 5002);
    l = mk_layout(9, 5002, 1);
    CHECK_EQ_INT(report(m, &l, GW_REPORT_DONE), 0);
    CHECK_EQ_INT(scan(m, &p, 9), 0);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p2", 2, &got), 0);
    CHECK_EQ_INT(got.object, 5002);
    CHECK_EQ_INT(got.version, 2);

    /* a delete: its tombstone is pending until its record is logged */
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_delete(b, 9, "p3", 2, &old), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(scan(m, &p, 9), 1);
    CHECK(p.tomb[0] && p.objects[0] == 5003 && p.versions[0] == 1 && p.m[0] == 1);
    l = (struct gw_layout){.tenant = 9, .object = 5003, .version = 1};
    CHECK_EQ_INT(report(m, &l, GW_REPORT_TOMB), 0);
    CHECK_EQ_INT(scan(m, &p, 9), 0);
    CHECK_EQ_INT(report(m, &l, GW_REPORT_TOMB), 1);
    CHECK_EQ_INT(gw_meta_get(m, 9, "p3", 2, &got), CM_E_NOTFOUND);
    printf("ok pending\n");
}

/* --rebuild-meta's writes: a version as logged, a tombstone that keeps
 * versions above it; neither pending. */
static void
test_restore(struct gw_meta *m)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(11, 7000, 1), got;
    struct pend p;
    uint32_t tags[9] = {0};

    tags[8] = 0xfff00001;
    l.version = 17;
    l.tags = tags;
    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_restore(b, "r1", 2, &l), 0);
    CHECK_EQ_INT(gw_meta_restore_tomb(b, 11, "r2", 2, 40), 0);
    CHECK_EQ_INT(gw_meta_batch_commit(b), 0);
    CHECK_EQ_INT(scan(m, &p, 11), 0);
    CHECK_EQ_INT(gw_meta_get(m, 11, "r1", 2, &got), 0);
    CHECK(got.version == 17 && got.object == 7000 && gw_layout_tag(&got, 8) == 0xfff00001);
    gw_layout_fini(&got);
    CHECK_EQ_INT(gw_meta_get(m, 11, "r2", 2, &got), CM_E_NOTFOUND);
    do_put(m, 11, "r1", 2, 7001, 18, 1);
    do_put(m, 11, "r2", 2, 7002, 41, 0);
    CHECK_EQ_INT(do_delete(m, 11, "r1", 2), 0);
    CHECK_EQ_INT(do_delete(m, 11, "r2", 2), 0);
    printf("ok restore\n");
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
    /* 1, 2 and 11 have tombstones only; 5..7 objects; 9 objects */
    CHECK_EQ_INT(ts.n, 7);
    CHECK_EQ_INT(ts.ids[0], 1);
    CHECK_EQ_INT(ts.ids[1], 2);
    CHECK_EQ_INT(ts.ids[5], 9);
    CHECK_EQ_INT(ts.ids[6], 11);
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
    CHECK_EQ_INT(ts.n, 6);
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
    test_mrec();
    CHECK_EQ_INT(gw_meta_open(dir, 64u << 20, &m), 0);
    {
        /* a store of its own: what --rebuild-meta may write over */
        char sub[4096];
        struct gw_meta *e;
        int empty = 0;
        snprintf(sub, sizeof(sub), "%s/empty", dir);
        CHECK_EQ_INT(gw_meta_open(sub, 16u << 20, &e), 0);
        CHECK_EQ_INT(gw_meta_is_empty(e, &empty), 0);
        CHECK(empty);
        CHECK_EQ_INT(gw_meta_state_save(e, "{}", 2), 0);
        CHECK_EQ_INT(gw_meta_is_empty(e, &empty), 0);
        CHECK(empty); /* the cached state alone is not metadata */
        do_put(e, 1, "e", 1, 1, 1, 0);
        CHECK_EQ_INT(gw_meta_is_empty(e, &empty), 0);
        CHECK(!empty);
        gw_meta_close(e);
    }
    test_versions(m);
    test_batch(m);
    test_model(m);
    test_pending(m);
    test_restore(m);
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
