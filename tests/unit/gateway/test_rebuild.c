/*
 * test_rebuild.c - unit.gateway.rebuild: --rebuild-meta (gateway/gw_rebuild.c)
 * over synthetic insertion logs in an fs COS.
 *
 * Cases by hand (the highest version wins; a tombstone wins its own
 * version; a deleted key keeps later versions above it; duplicates; a
 * record or layout that does not decode never wins; a torn batch is
 * skipped whole; other COS objects are left alone), then random histories
 * (moves among them: MOVED records of a higher gen) spread over random
 * batches in random order, checked against the rule
 * applied by brute force, with 1 and 4 readers; then what the S3 front
 * door keeps (buckets, uploads, parts, multipart objects whole or left
 * out, their attributes).
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
#include "gw_s3_cksum.h"

static struct cm_cos *tcos;
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

/* One META record appended to b; a MOVED one (gen > 0) names holder
 * 10 + gen first, where the others name 1. */
static void
add_meta_gen(struct cm_buf *b, uint8_t kind, uint32_t tenant, const char *key, uint64_t version,
             uint64_t object, uint32_t gen)
{
    struct gw_layout l = mk_layout(tenant, object, version);
    uint32_t tags[3] = {0x100001, 0x200002, (uint32_t)object};
    uint8_t rec[256], pay[2048];
    struct gw_mrec m = {.kind = kind,
                        .tenant = tenant,
                        .key = key,
                        .klen = strlen(key),
                        .version = version,
                        .gen = gen};

    l.tags = tags;
    if (gen > 0) {
        l.holders[0] = 10 + gen;
    }
    if (kind != GW_MREC_TOMB) {
        m.rec = rec;
        m.rec_len = gw_meta_encode(&l, NULL, rec);
    }
    CHECK(gw_mrec_len(&m) <= sizeof(pay));
    gw_mrec_encode(&m, pay);
    add_raw(b, pay, gw_mrec_len(&m));
}

static void
add_meta(struct cm_buf *b, uint8_t kind, uint32_t tenant, const char *key, uint64_t version,
         uint64_t object)
{
    add_meta_gen(b, kind, tenant, key, version, object, 0);
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
    CHECK_EQ_INT(cm_cos_put(tcos, name, b->p, b->len - cut), 0);
}

static int
keep_tenant_1(void *arg, uint32_t tenant)
{
    (void)arg;
    return tenant == 1;
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
static uint32_t live_holder0; /* the first holder of the last version live found */

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
    live_holder0 = l.holders[0];
    CHECK(l.tags != NULL && l.tags[2] == (uint32_t)obj); /* tags kept */
    CHECK(l.holders[1] == 2 && l.size == obj % 5000);
    gw_layout_fini(&l);
    return obj;
}

/* The version the next PUT of key gets. */
static uint64_t
next_version(struct gw_meta *m, uint32_t tenant, const char *key)
{
    struct gw_meta_batch *b;
    struct gw_layout l = mk_layout(tenant, 999999, 0);
    struct gw_meta_old old = {0};

    CHECK_EQ_INT(gw_meta_batch_begin(m, &b), 0);
    CHECK_EQ_INT(gw_meta_put(b, key, strlen(key), &l, NULL, &old), 0);
    gw_meta_old_reset(&old);
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
    CHECK_EQ_INT(cm_cos_put(tcos, "ilog/n3/notalog", "x", 1), 0);
    CHECK_EQ_INT(cm_cos_put(tcos, "t1/0000000000000065.0.0", "chunk", 5), 0);
    cm_buf_fini(&b);

    m = fresh_meta(root, "cases");
    CHECK_EQ_INT(gw_rebuild_meta(tcos, m, 2, NULL, &st), 0);
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

    /* Only tenant 1's: tenant 2's records are another gateway's. */
    {
        struct gw_rebuild_filter only1 = {keep_tenant_1, NULL};

        m = fresh_meta(root, "cases-filtered");
        CHECK_EQ_INT(gw_rebuild_meta(tcos, m, 2, &only1, &st), 0);
        CHECK_EQ_INT(st.others, 1);
        CHECK_EQ_INT(st.versions, 3); /* a, c, e */
        CHECK_EQ_INT(live(m, 1, "a", &v), 103);
        CHECK_EQ_INT(live(m, 2, "a", &v), 0);
        gw_meta_close(m);
    }
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
    uint32_t gen; /* MOVED */
};

static void
test_random(const char *root)
{
    static struct rrec recs[MAXREC];
    size_t n = 0;
    char sub[64];

    /* Every key's history: versions growing, a move now and then (the
     * live version's record again, a higher gen), a delete now and then
     * (tombstone of the live version); each record logged 1 to 3 times. */
    for (int k = 0; k < NKEYS; k++) {
        uint64_t ver = 0;
        uint32_t gen = 0;
        int alive = 0;
        int steps = (int)t_range(1, 12);
        for (int s = 0; s < steps && n + 3 < MAXREC; s++) {
            struct rrec r = {.tenant = 20 + (uint32_t)(k % 3)};
            snprintf(r.key, sizeof(r.key), "k%d", k);
            if (alive && t_range(0, 3) == 0) {
                r.kind = GW_MREC_TOMB;
                r.version = ver;
                alive = 0;
            } else if (alive && t_range(0, 2) == 0) {
                r.kind = GW_MREC_MOVED;
                r.version = ver;
                r.object = 100000 * (uint64_t)(k + 1) + ver;
                r.gen = gen += (uint32_t)t_range(1, 3);
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
            add_meta_gen(&b, recs[i].kind, recs[i].tenant, recs[i].key, recs[i].version,
                         recs[i].object, recs[i].gen);
        }
        put_batch(&b, 0);
        cm_buf_fini(&b);
    }
    for (int threads = 1; threads <= 4; threads += 3) {
        struct gw_rebuild_stats st;
        struct gw_meta *m;
        snprintf(sub, sizeof(sub), "random%d", threads);
        m = fresh_meta(root, sub);
        CHECK_EQ_INT(gw_rebuild_meta(tcos, m, threads, NULL, &st), 0);
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
                    (r->version == best.version && best.kind != GW_MREC_TOMB &&
                     (r->kind == GW_MREC_TOMB || r->gen > best.gen))) {
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
                CHECK_EQ_INT(live_holder0, best.gen > 0 ? 10 + best.gen : 1); /* the newest move */
            }
        }
        gw_meta_close(m);
    }
    printf("ok random: %zu records\n", n);
}

/* ---- the S3 front door's versions ---- */

/* One META record of key (klen bytes) with l and a appended to b. */
static void
add_rec(struct cm_buf *b, uint8_t kind, const char *key, size_t klen, const struct gw_layout *l,
        const struct gw_meta_attrs *a)
{
    static uint8_t rec[GW_META_REC_LIMIT], pay[GW_META_REC_LIMIT + 2048];
    struct gw_mrec m = {.kind = kind,
                        .tenant = l->tenant,
                        .key = key,
                        .klen = klen,
                        .version = l->version};

    if (kind == GW_MREC_VERSION) {
        m.rec = rec;
        m.rec_len = gw_meta_encode(l, a, rec);
    }
    gw_mrec_encode(&m, pay);
    add_raw(b, pay, gw_mrec_len(&m));
}

static struct gw_layout
record_only(uint32_t tenant, uint64_t object, uint64_t version)
{
    struct gw_layout l;

    memset(&l, 0, sizeof(l));
    l.tenant = tenant;
    l.object = object;
    l.version = version;
    l.m = 2;
    return l;
}

/* A part: a 1+2 version with etag and size of its own. */
static void
add_part(struct cm_buf *b, const char *up, unsigned n, uint64_t object, uint64_t version)
{
    char pk[GW_META_PART_KEY_LEN];
    struct gw_layout l = mk_layout(30, object, version);
    uint32_t tags[3] = {0x100001, 0x200002, (uint32_t)object};

    l.tags = tags;
    add_rec(b, GW_MREC_VERSION, pk, gw_meta_part_key(up, n, pk), &l, NULL);
}

/* A composite of up's parts nums[n] as add_part logged them (objects[i]). */
static void
add_composite(struct cm_buf *b, const char *key, uint64_t version, const char *up,
              const unsigned *nums, const uint64_t *objects, uint32_t n)
{
    struct gw_layout c = record_only(30, 9000 + version, version);
    struct gw_meta_attrs a = {.mtime_ms = 1700000000000ull + version, .has_md5 = 1};
    uint8_t pn[8];

    for (uint32_t i = 0; i < n; i++) {
        struct gw_layout p = mk_layout(30, objects[i], 1);

        c.etag = i == 0 ? p.etag : gw_s3_crc64_combine(c.etag, p.etag, p.size);
        c.size += p.size;
        cm_put_le16(pn + 2 * i, (uint16_t)nums[i]);
    }
    memset(a.md5, 0x5a, 16);
    a.hdrs = "content-type\0application/zip\0x-amz-meta-who\0me\0";
    a.hdrs_len = 47;
    a.upload = up;
    a.parts = pn;
    a.nparts = n;
    add_rec(b, GW_MREC_VERSION, key, strlen(key), &c, &a);
}

static void
test_s3(const char *root)
{
    static const char U1[] = "00000000000000000000000000000001", U2[] = "00000000000000000000000000000002",
                      U3[] = "00000000000000000000000000000003", U4[] = "00000000000000000000000000000004",
                      U5[] = "00000000000000000000000000000005";
    const unsigned n13[2] = {1, 3}, n12[2] = {1, 2};
    const uint64_t o13[2] = {2001, 2003}, o12[2] = {3001, 3002}, o1[1] = {4002};
    char k[64];
    size_t kl;
    struct cm_buf b;
    struct gw_meta *m;
    struct gw_meta_obj *obj = malloc(sizeof(*obj));
    struct gw_rebuild_stats st;
    struct gw_layout l;
    struct gw_meta_attrs a = {.mtime_ms = 77};
    uint64_t v = 0;

    CHECK(obj != NULL);
    cm_buf_init(&b);
    begin(&b, 1);
    /* buckets: one live, one deleted */
    l = record_only(30, 1, 1);
    add_rec(&b, GW_MREC_VERSION, k, gw_meta_bucket_key("photos", 6, k), &l, &a);
    l = record_only(30, 2, 1);
    kl = gw_meta_bucket_key("old", 3, k);
    add_rec(&b, GW_MREC_VERSION, k, kl, &l, &a);
    add_rec(&b, GW_MREC_TOMB, k, kl, &l, NULL);
    /* an upload in progress and its parts */
    l = record_only(30, 3, 1);
    a.target = "photos/up";
    a.target_len = 9;
    add_rec(&b, GW_MREC_VERSION, k, gw_meta_upload_key(U1, k), &l, &a);
    add_part(&b, U1, 1, 1001, 1);
    add_part(&b, U1, 2, 1002, 1);
    /* a completed upload: parts 1 and 3 listed, 2 left out, the upload's
     * tombstone not logged */
    l = record_only(30, 4, 1);
    add_rec(&b, GW_MREC_VERSION, k, gw_meta_upload_key(U2, k), &l, &a);
    a.target = NULL;
    a.target_len = 0;
    add_part(&b, U2, 1, 2001, 1);
    add_part(&b, U2, 2, 2002, 1);
    put_batch(&b, 0);
    begin(&b, 2);
    add_part(&b, U2, 3, 2003, 1);
    add_composite(&b, "photos/big", 2, U2, n13, o13, 2);
    /* a composite whose second part was never logged */
    add_part(&b, U3, 1, 3001, 1);
    add_composite(&b, "photos/broken", 5, U3, n12, o12, 2);
    /* a composite completed from a part version that was not logged: the
     * log has the one before it */
    add_part(&b, U4, 1, 4001, 1);
    add_composite(&b, "photos/stale", 1, U4, n12, o1, 1);
    /* an aborted upload: its parts end with it */
    l = record_only(30, 5, 1);
    a.target = "photos/gone";
    a.target_len = 11;
    kl = gw_meta_upload_key(U5, k);
    add_rec(&b, GW_MREC_VERSION, k, kl, &l, &a);
    add_rec(&b, GW_MREC_TOMB, k, kl, &l, NULL);
    add_part(&b, U5, 1, 5001, 1);
    /* a single S3 version with its MD5 and headers */
    l = mk_layout(30, 6001, 3);
    a = (struct gw_meta_attrs){.mtime_ms = 1700000000999ull, .has_md5 = 1};
    memset(a.md5, 0x11, 16);
    a.hdrs = "x-amz-meta-k\0v\0";
    a.hdrs_len = 15;
    add_rec(&b, GW_MREC_VERSION, "photos/a.txt", 12, &l, &a);
    put_batch(&b, 0);
    cm_buf_fini(&b);

    m = fresh_meta(root, "s3");
    CHECK_EQ_INT(gw_rebuild_meta(tcos, m, 2, NULL, &st), 0);
    CHECK_EQ_INT(st.bad_records, 0);
    CHECK_EQ_INT(st.broken, 2);       /* photos/broken, photos/stale */
    CHECK_EQ_INT(st.orphan_parts, 4); /* U2/2, U3/1, U4/1, U5/1 */
    /* buckets */
    CHECK_EQ_INT(gw_meta_get_obj(m, 30, k, gw_meta_bucket_key("photos", 6, k), obj), 0);
    CHECK(gw_layout_record_only(&obj->lay) && obj->a.mtime_ms == 77);
    gw_meta_obj_fini(obj);
    kl = gw_meta_bucket_key("old", 3, k);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, kl, &l), CM_E_NOTFOUND);
    {
        struct gw_meta_batch *bt;
        struct gw_meta_old old = {0};
        l = record_only(30, 0, 0);
        CHECK_EQ_INT(gw_meta_batch_begin(m, &bt), 0);
        CHECK_EQ_INT(gw_meta_put(bt, k, kl, &l, NULL, &old), 0);
        CHECK_EQ_INT(l.version, 2); /* a bucket's name counts on */
        gw_meta_batch_abort(bt);
    }
    /* the upload in progress, whole */
    CHECK_EQ_INT(gw_meta_get_obj(m, 30, k, gw_meta_upload_key(U1, k), obj), 0);
    CHECK(obj->a.target_len == 9 && memcmp(obj->a.target, "photos/up", 9) == 0);
    gw_meta_obj_fini(obj);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_part_key(U1, 2, k), &l), 0);
    CHECK_EQ_INT(l.object, 1002);
    gw_layout_fini(&l);
    /* the multipart object, whole, with what S3 keeps; its upload and the
     * part it left out are not back */
    CHECK_EQ_INT(gw_meta_get_obj(m, 30, "photos/big", 10, obj), 0);
    CHECK_EQ_INT(obj->a.nparts, 2);
    CHECK(obj->parts[0].object == 2001 && obj->parts[1].object == 2003);
    CHECK(obj->lay.version == 2 && obj->a.has_md5 && obj->a.md5[3] == 0x5a);
    CHECK(obj->a.mtime_ms == 1700000000002ull && obj->a.hdrs_len == 47);
    CHECK(memcmp(obj->a.hdrs + 29, "x-amz-meta-who", 14) == 0);
    CHECK_EQ_INT(obj->lay.size, obj->parts[0].size + obj->parts[1].size);
    CHECK(gw_layout_tag(&obj->parts[1], 2) == 2003); /* parts keep their tags */
    gw_meta_obj_fini(obj);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_upload_key(U2, k), &l), CM_E_NOTFOUND);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_part_key(U2, 2, k), &l), CM_E_NOTFOUND);
    /* left out, its version still counted; its parts gone */
    CHECK_EQ_INT(live(m, 30, "photos/broken", &v), 0);
    CHECK_EQ_INT(next_version(m, 30, "photos/broken"), 6);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_part_key(U3, 1, k), &l), CM_E_NOTFOUND);
    CHECK_EQ_INT(live(m, 30, "photos/stale", &v), 0);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_part_key(U4, 1, k), &l), CM_E_NOTFOUND);
    CHECK_EQ_INT(gw_meta_get(m, 30, k, gw_meta_part_key(U5, 1, k), &l), CM_E_NOTFOUND);
    /* a single version with its attributes */
    CHECK_EQ_INT(gw_meta_get_obj(m, 30, "photos/a.txt", 12, obj), 0);
    CHECK(obj->lay.object == 6001 && obj->a.mtime_ms == 1700000000999ull);
    CHECK(obj->a.has_md5 && obj->a.md5[0] == 0x11 && obj->a.hdrs_len == 15);
    gw_meta_obj_fini(obj);
    gw_meta_close(m);
    free(obj);
    printf("ok s3\n");
}

int
main(void)
{
    char *dir, cosdir[4096];

    cm_log_init("test", CM_LOG_ERROR);
    t_seed();
    dir = t_tmpdir();
    snprintf(cosdir, sizeof(cosdir), "%s/cos", dir);
    CHECK_EQ_INT(cm_cos_open(cosdir, &tcos), 0);
    test_cases(dir);
    /* the random histories get a COS of their own */
    cm_cos_close(tcos);
    snprintf(cosdir, sizeof(cosdir), "%s/cos2", dir);
    CHECK_EQ_INT(cm_cos_open(cosdir, &tcos), 0);
    test_random(dir);
    cm_cos_close(tcos);
    snprintf(cosdir, sizeof(cosdir), "%s/cos3", dir);
    CHECK_EQ_INT(cm_cos_open(cosdir, &tcos), 0);
    test_s3(dir);
    cm_cos_close(tcos);
    t_rmtree(dir);
    printf("PASS\n");
    return 0;
}
