/*
 * test_rebuild.c - unit.gateway.rebuild: --rebuild-meta (gateway/gw_rebuild.c)
 * over synthetic insertion logs in an fs COS.
 *
 * Cases by hand (the highest version wins; a tombstone wins its own
 * version; a deleted key keeps later versions above it; duplicates; a
 * record or layout that does not decode never wins; a torn batch is
 * skipped whole; other COS objects are left alone), then random histories
 * spread over random batches in random order, checked against the rule
 * applied by brute force, with 1 and 4 readers.
 */
#include "t_check.h"

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_ilog.h"
#include "cm_log.h"
#include "gw_meta.h"
#include "gw_rebuild.h"

static struct cm_cos *cos;
static uint64_t next_seq = 1;

static struct gw_layout
mk_layout(uint32_t tenant, uint64_t object, uint64_t version)
{
    struct gw_layout l;

    memset(&l, 0, sizeof(l));
    l.tenant = tenant;
    l.object = object;
    l.version = version;
    l.size = object % 5000;
    l.etag = object * 31;
    l.k = 1;
    l.m = 2;
    l.chunk_size = (uint32_t)l.size;
    l.nstripes = 1;
    l.holders[0] = 1;
    l.holders[1] = 2;
    l.holders[2] = 3;
    l.persisted = 7;
    return l;
}

/* A META record's bytes, whatever they are, appended to b. */
static void
add_raw(struct cm_buf *b, const void *p, size_t len)
{
    struct cm_ilog_rec r = {.kind = CM_ILOG_META, .data = p, .data_len = (uint32_t)len};

    cm_ilog_add(b, &r);
}

/* One META record appended to b. */
static void
add_meta(struct cm_buf *b, uint8_t kind, uint32_t tenant, const char *key, uint64_t version,
         uint64_t object)
{
    struct gw_layout l = mk_layout(tenant, object, version);
    uint32_t tags[3] = {0x100001, 0x200002, (uint32_t)object};
    uint8_t rec[256], pay[2048];
    struct gw_mrec m = {
        .kind = kind, .tenant = tenant, .key = key, .klen = strlen(key), .version = version};

    l.tags = tags;
    if (kind == GW_MREC_VERSION) {
        m.rec = rec;
        m.rec_len = gw_meta_encode(&l, rec);
    }
    CHECK(gw_mrec_len(&m) <= sizeof(pay));
    gw_mrec_encode(&m, pay);
    add_raw(b, pay, gw_mrec_len(&m));
}

/* A batch of node's, under the next sequence number. */
static void
begin(struct cm_buf *b, uint32_t node)
{
    cm_ilog_begin(b, node, next_seq++);
}

/* Seals b and stores it under its name (less cut bytes: torn). */
static void
put_batch(struct cm_buf *b, size_t cut)
{
    char name[CM_ILOG_NAME_MAX];

    cm_ilog_end(b);
    cm_ilog_name(name, sizeof(name), cm_get_le32((uint8_t *)b->p + 8),
                 cm_get_le64((uint8_t *)b->p + 16));
    CHECK_EQ_INT(cm_cos_put(cos, name, b->p, b->len - cut), 0);
}

static struct gw_meta *
fresh_meta(const char *root, const char *name)
{
    char dir[4096];
    struct gw_meta *m;

    snprintf(dir, sizeof(dir), "%s/%s", root, name);
    CHECK_EQ_INT(gw_meta_open(dir, 64u << 20, &m), 0);
    return m;
}

/* The live version's object of (tenant, key), or 0 when it has none. */
static uint64_t
live(struct gw_meta *m, uint32_t tenant, const char *key, uint64_t *version)
{
    struct gw_layout l;
    int rc = gw_meta_get(m, tenant, key, strlen(key), &l);
    uint64_t obj;

    if (rc == CM_E_NOTFOUND) {
        return 0;
    }
    CHECK_EQ_INT(rc, 0);
    *version = l.version;
    obj = l.object;
    CHECK(l.tags != NULL && l.tags[2] == (uint32_t)obj); /* format 2 kept */
    CHECK(l.holders[1] == 2 && l.size == obj % 5000);
    gw_layout_fini(&l);
    return obj;
}

/* The version the next PUT of key gets. */
static uint64_t
next_version(struct gw_meta *m, uint32_t tenant, const char *key)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(tenant, 999999, 0), old;
    int had_old;

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, key, strlen(key), &l, &old, &had_old), 0);
    gw_meta_batch_abort(b);
    return l.version;
}

static void
test_cases(const char *root)
{
    struct cm_buf b;
    struct gw_meta *m;
    struct gw_rebuild_stats st;
    uint64_t v = 0;

    cm_buf_init(&b);
    /* node 1: a's v1, v3; b's v2; c's tombstone 1; e's v1 */
    begin(&b, 1);
    add_meta(&b, GW_MREC_VERSION, 1, "a", 1, 101);
    add_meta(&b, GW_MREC_VERSION, 1, "a", 3, 103);
    add_meta(&b, GW_MREC_VERSION, 1, "b", 2, 202);
    add_meta(&b, GW_MREC_TOMB, 1, "c", 1, 0);
    add_meta(&b, GW_MREC_VERSION, 1, "e", 1, 501);
    cm_ilog_add(&b,
                &(struct cm_ilog_rec){.kind = CM_ILOG_CHUNK, .tag = 5, .tenant = 1, .object = 101});
    put_batch(&b, 0);
    /* node 2: a's v2 (older, read later), b's tombstone 2, c's v2, d's
     * tombstone 4, a copy of a's v3, tenant 2's a */
    begin(&b, 2);
    add_meta(&b, GW_MREC_VERSION, 1, "a", 2, 102);
    add_meta(&b, GW_MREC_TOMB, 1, "b", 2, 0);
    add_meta(&b, GW_MREC_VERSION, 1, "c", 2, 302);
    add_meta(&b, GW_MREC_TOMB, 1, "d", 4, 0);
    add_meta(&b, GW_MREC_VERSION, 1, "a", 3, 103);
    add_meta(&b, GW_MREC_VERSION, 2, "a", 9, 909);
    /* e's v5 whose layout record is garbage: never wins */
    {
        uint8_t pay[64];
        struct gw_mrec bad = {.kind = GW_MREC_VERSION,
                              .tenant = 1,
                              .key = "e",
                              .klen = 1,
                              .version = 5,
                              .rec = (const uint8_t *)"junk",
                              .rec_len = 4};
        gw_mrec_encode(&bad, pay);
        add_raw(&b, pay, gw_mrec_len(&bad));
        add_raw(&b, "\x09garbage", 8); /* not a META record */
    }
    put_batch(&b, 0);
    /* a torn batch: its f's v1 is not read */
    begin(&b, 3);
    add_meta(&b, GW_MREC_VERSION, 1, "f", 1, 601);
    put_batch(&b, 1);
    /* what else is in the COS is no concern */
    CHECK_EQ_INT(cm_cos_put(cos, "ilog/n3/notalog", "x", 1), 0);
    CHECK_EQ_INT(cm_cos_put(cos, "t1/0000000000000065.0.0", "chunk", 5), 0);
    cm_buf_fini(&b);

    m = fresh_meta(root, "cases");
    CHECK_EQ_INT(gw_rebuild_meta(cos, m, 2, &st), 0);
    CHECK_EQ_INT(st.batches, 3);
    CHECK_EQ_INT(st.bad_batches, 1);
    CHECK_EQ_INT(st.records, 13);
    CHECK_EQ_INT(st.bad_records, 2);
    CHECK_EQ_INT(st.versions, 4);   /* a, c, e, tenant 2's a */
    CHECK_EQ_INT(st.tombstones, 2); /* b, d */
    CHECK_EQ_INT(live(m, 1, "a", &v), 103);
    CHECK_EQ_INT(v, 3);
    CHECK_EQ_INT(live(m, 1, "b", &v), 0); /* tombstone 2 beats version 2 */
    CHECK_EQ_INT(live(m, 1, "c", &v), 302);
    CHECK_EQ_INT(v, 2);
    CHECK_EQ_INT(live(m, 1, "d", &v), 0);
    CHECK_EQ_INT(live(m, 1, "e", &v), 501);
    CHECK_EQ_INT(live(m, 1, "f", &v), 0);
    CHECK_EQ_INT(live(m, 2, "a", &v), 909);
    CHECK_EQ_INT(v, 9);
    /* versions keep growing past what was logged, deletes included */
    CHECK_EQ_INT(next_version(m, 1, "a"), 4);
    CHECK_EQ_INT(next_version(m, 1, "b"), 3);
    CHECK_EQ_INT(next_version(m, 1, "d"), 5);
    {
        int empty = 1;
        CHECK_EQ_INT(gw_meta_is_empty(m, &empty), 0);
        CHECK(!empty);
    }
    gw_meta_close(m);
    printf("ok cases\n");
}

/* ---- random histories against the rule by brute force ---- */

#define NKEYS 60
#define MAXREC 4000

struct rrec {
    uint8_t kind;
    uint32_t tenant;
    char key[8];
    uint64_t version, object;
};

static void
test_random(const char *root)
{
    static struct rrec recs[MAXREC];
    size_t n = 0;
    char sub[64];

    /* Every key's history: versions growing, a delete now and then
     * (tombstone of the live version); each record logged 1 to 3 times. */
    for (int k = 0; k < NKEYS; k++) {
        uint64_t ver = 0;
        int alive = 0;
        int steps = (int)t_range(1, 12);
        for (int s = 0; s < steps && n + 3 < MAXREC; s++) {
            struct rrec r = {.tenant = 20 + (uint32_t)(k % 3)};
            snprintf(r.key, sizeof(r.key), "k%d", k);
            if (alive && t_range(0, 3) == 0) {
                r.kind = GW_MREC_TOMB;
                r.version = ver;
                alive = 0;
            } else {
                r.kind = GW_MREC_VERSION;
                r.version = ++ver;
                r.object = 100000 * (uint64_t)(k + 1) + ver;
                alive = 1;
            }
            if (t_range(0, 4) == 0) {
                continue; /* never logged (the buffer still had it) */
            }
            for (int c = (int)t_range(1, 3); c > 0; c--) {
                recs[n++] = r;
            }
        }
    }
    /* shuffled into batches of random nodes */
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)t_range(0, (int)i - 1);
        struct rrec t = recs[i - 1];
        recs[i - 1] = recs[j];
        recs[j] = t;
    }
    for (size_t i = 0; i < n;) {
        struct cm_buf b;
        size_t take = (size_t)t_range(1, 40);
        cm_buf_init(&b);
        begin(&b, (uint32_t)t_range(0, 5));
        for (size_t j = 0; j < take && i < n; j++, i++) {
            add_meta(&b, recs[i].kind, recs[i].tenant, recs[i].key, recs[i].version,
                     recs[i].object);
        }
        put_batch(&b, 0);
        cm_buf_fini(&b);
    }
    for (int threads = 1; threads <= 4; threads += 3) {
        struct gw_rebuild_stats st;
        struct gw_meta *m;
        snprintf(sub, sizeof(sub), "random%d", threads);
        m = fresh_meta(root, sub);
        CHECK_EQ_INT(gw_rebuild_meta(cos, m, threads, &st), 0);
        CHECK_EQ_INT(st.bad_records, 0);
        for (int k = 0; k < NKEYS; k++) {
            struct rrec best = {0};
            int any = 0;
            char key[8];
            uint32_t tenant = 20 + (uint32_t)(k % 3);
            uint64_t v = 0, obj;
            snprintf(key, sizeof(key), "k%d", k);
            for (size_t i = 0; i < n; i++) {
                const struct rrec *r = &recs[i];
                if (r->tenant != tenant || strcmp(r->key, key) != 0) {
                    continue;
                }
                if (!any || r->version > best.version ||
                    (r->version == best.version && r->kind == GW_MREC_TOMB)) {
                    best = *r;
                    any = 1;
                }
            }
            obj = live(m, tenant, key, &v);
            if (!any || best.kind == GW_MREC_TOMB) {
                CHECK_EQ_INT(obj, 0);
                if (any) {
                    CHECK_EQ_INT(next_version(m, tenant, key), best.version + 1);
                }
            } else {
                CHECK_EQ_INT(obj, best.object);
                CHECK_EQ_INT(v, best.version);
            }
        }
        gw_meta_close(m);
    }
    printf("ok random: %zu records\n", n);
}

int
main(void)
{
    char *dir, cosdir[4096];

    cm_log_init("test", CM_LOG_ERROR);
    t_seed();
    dir = t_tmpdir();
    snprintf(cosdir, sizeof(cosdir), "%s/cos", dir);
    CHECK_EQ_INT(cm_cos_open(cosdir, &cos), 0);
    test_cases(dir);
    /* the random histories get a COS of their own */
    cm_cos_close(cos);
    snprintf(cosdir, sizeof(cosdir), "%s/cos2", dir);
    CHECK_EQ_INT(cm_cos_open(cosdir, &cos), 0);
    test_random(dir);
    cm_cos_close(cos);
    t_rmtree(dir);
    printf("PASS\n");
    return 0;
}
