/*
 * test_fns_ilog.c - the insertion log: the batch codec (round trip of
 * every kind, CRC, every truncation, unknown kinds skipped, names) and the
 * log's state (what a replay recoveries, liveness, the deletion rule oldest
 * first, carrying forward, kills only once the killing batch is durable,
 * failed writes handed out again, META waiters, the grouping of records
 * into batches: linger, bound, flush).
 */
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_ilog.h"
#include "fns_ilog.h"

static size_t
meta_rec(uint8_t *out, uint8_t kind, uint32_t tenant, const char *key, uint64_t version)
{
    size_t kl = strlen(key), n = 0;

    out[n++] = kind;
    cm_put_le32(out + n, tenant);
    n += 4;
    cm_put_le16(out + n, (uint16_t)kl);
    n += 2;
    memcpy(out + n, key, kl);
    n += kl;
    cm_put_le64(out + n, version);
    n += 8;
    if (kind == 3) { /* a moved version's record: its gen, then as kind 1 */
        cm_put_le32(out + n, 7);
        n += 4;
    }
    if (kind == 1 || kind == 3) {
        cm_put_le32(out + n, 3);
        memcpy(out + n + 4, "LAY", 3);
        n += 7;
    }
    return n;
}

/*
 * An appended log object: batches back to back, found one after the other
 * by cm_ilog_batch_len. Cut anywhere (a node killed mid-append), the walk
 * finds exactly the batches wholly inside the cut; the torn one opens as
 * CM_E_CRC or is not found at all.
 */
static void
test_appended(void)
{
    struct cm_ilog_rec del = {.kind = CM_ILOG_DELETE, .tenant = 3, .index = 8, .object = 5};
    struct cm_ilog_iter it;
    struct cm_buf b, obj;
    size_t ends[3], at;
    uint64_t seq;

    cm_buf_init(&b);
    cm_buf_init(&obj);
    for (int i = 0; i < 3; i++) {
        cm_ilog_begin(&b, 4, (uint64_t)(10 + i));
        for (int j = 0; j <= i; j++) {
            cm_ilog_add(&b, &del);
        }
        cm_ilog_end(&b);
        cm_buf_append(&obj, b.p, b.len);
        ends[i] = obj.len;
    }
    for (size_t cut = 0; cut <= obj.len; cut++) {
        const uint8_t *p = (const uint8_t *)obj.p;
        size_t want = cut >= ends[2] ? 3 : cut >= ends[1] ? 2 : cut >= ends[0] ? 1 : 0, good = 0;
        size_t bl;

        at = 0;
        while ((bl = cm_ilog_batch_len(p + at, cut - at)) > 0 &&
               cm_ilog_open(p + at, bl, NULL, &seq, &it) == 0) {
            CHECK(seq == 10 + good);
            good++;
            at += bl;
        }
        CHECK(good == want && at == (want ? ends[want - 1] : 0));
    }
    cm_buf_fini(&b);
    cm_buf_fini(&obj);
}

static void
test_codec(void)
{
    struct cm_buf b;
    struct cm_ilog_rec r[4] = {
        {.kind = CM_ILOG_CHUNK,
         .tag = 0x123456,
         .tenant = 3,
         .index = 7,
         .object = 0xabcdef01,
         .version = 2,
         .len = 1000,
         .seg = 9,
         .off = 128,
         .blob_len = 1008},
        {.kind = CM_ILOG_DELETE, .tenant = 3, .index = 8, .object = 0xabcdef02, .version = 0},
        {.kind = CM_ILOG_META},
        {.kind = CM_ILOG_INSTANCE, .tag = 0x200001, .tenant = 4, .gen = 77, .state = 2},
    };
    uint8_t meta[64];
    struct cm_ilog_iter it;
    struct cm_ilog_rec got;
    uint32_t node;
    uint64_t seq;
    char name[CM_ILOG_NAME_MAX];
    int i;

    r[2].data_len = (uint32_t)meta_rec(meta, 1, 3, "k/1", 5);
    r[2].data = meta;
    cm_buf_init(&b);
    cm_ilog_begin(&b, 12, 0x42);
    for (i = 0; i < 4; i++) {
        cm_ilog_add(&b, &r[i]);
    }
    cm_ilog_end(&b);
    CHECK(b.len == CM_ILOG_HDR_LEN + cm_ilog_rec_size(&r[0]) + cm_ilog_rec_size(&r[1]) +
                       cm_ilog_rec_size(&r[2]) + cm_ilog_rec_size(&r[3]));
    CHECK(cm_ilog_open((uint8_t *)b.p, b.len, &node, &seq, &it) == 0 && node == 12 && seq == 0x42);
    for (i = 0; i < 4; i++) {
        CHECK(cm_ilog_next(&it, &got) == 1 && got.kind == r[i].kind);
        CHECK(got.tag == r[i].tag && got.tenant == r[i].tenant && got.index == r[i].index);
        CHECK(got.object == r[i].object && got.version == r[i].version && got.len == r[i].len);
        CHECK(got.seg == r[i].seg && got.off == r[i].off && got.blob_len == r[i].blob_len);
        CHECK(got.gen == r[i].gen && got.state == r[i].state);
        CHECK(got.data_len == r[i].data_len);
        CHECK(r[i].data == NULL || memcmp(got.data, r[i].data, got.data_len) == 0);
    }
    CHECK(cm_ilog_next(&it, &got) == 0);

    /* Every cut and every flipped bit is refused. */
    for (size_t cut = 0; cut < b.len; cut++) {
        CHECK(cm_ilog_open((uint8_t *)b.p, cut, NULL, NULL, &it) == CM_E_CRC);
    }
    for (size_t bit = 0; bit < b.len * 8; bit += 7) {
        b.p[bit / 8] ^= (char)(1 << (bit % 8));
        CHECK(cm_ilog_open((uint8_t *)b.p, b.len, NULL, NULL, &it) == CM_E_CRC);
        b.p[bit / 8] ^= (char)(1 << (bit % 8));
    }
    /* A known kind with a body of another length is bad even with a right CRC. */
    cm_put_le32((uint8_t *)b.p + CM_ILOG_HDR_LEN + 4, CM_ILOG_CHUNK_LEN - 4);
    cm_ilog_end(&b);
    CHECK(cm_ilog_open((uint8_t *)b.p, b.len, NULL, NULL, &it) == CM_E_CRC);

    /* A kind from a newer writer is skipped by its length. */
    {
        struct cm_ilog_rec odd = {.kind = 9, .data = (const uint8_t *)"xyz", .data_len = 3};

        cm_ilog_begin(&b, 1, 1);
        cm_ilog_add(&b, &odd);
        cm_ilog_add(&b, &r[1]);
        cm_ilog_end(&b);
        CHECK(cm_ilog_open((uint8_t *)b.p, b.len, NULL, NULL, &it) == 0);
        CHECK(cm_ilog_next(&it, &got) == 1 && got.kind == CM_ILOG_DELETE);
        CHECK(cm_ilog_next(&it, &got) == 0);
    }
    /* An empty batch is a batch; seq 0 is not. */
    cm_ilog_begin(&b, 1, 1);
    cm_ilog_end(&b);
    CHECK(cm_ilog_open((uint8_t *)b.p, b.len, NULL, NULL, &it) == 0 &&
          cm_ilog_next(&it, &got) == 0);
    cm_ilog_begin(&b, 1, 0);
    cm_ilog_end(&b);
    CHECK(cm_ilog_open((uint8_t *)b.p, b.len, NULL, NULL, &it) == CM_E_CRC);
    cm_buf_fini(&b);

    cm_ilog_name(name, sizeof(name), 7, 0x1f);
    CHECK_EQ_STR(name, "ilog/n7/000000000000001f");
    CHECK(cm_ilog_parse_name(name, 7, &seq) == 0 && seq == 0x1f);
    CHECK(cm_ilog_parse_name(name, 8, &seq) == CM_E_BADARG);
    CHECK(cm_ilog_parse_name("ilog/n7/000000000000001F", 7, &seq) == CM_E_BADARG);
    CHECK(cm_ilog_parse_name("ilog/n7/0000000000000000", 7, &seq) == CM_E_BADARG);
    CHECK(cm_ilog_parse_name("ilog/n7/00000000000001f", 7, &seq) == CM_E_BADARG);
}

static struct fns_key
key(uint32_t t, uint64_t o)
{
    return (struct fns_key){.tenant = t, .object = o, .index = 0, .version = 0};
}

/* Writes the pending batch (must be one) and returns a copy of its bytes. */
static uint8_t *
flush(struct fns_ilog *x, size_t *len, uint64_t *seq, size_t *nwait)
{
    const uint8_t *buf;
    void **w;
    uint8_t *copy;

    CHECK(fns_ilog_take(x, 0, &buf, len, seq) == 1);
    copy = malloc(*len);
    memcpy(copy, buf, *len);
    *nwait = fns_ilog_done(x, 1, &w);
    free(w);
    return copy;
}

struct count {
    size_t n;
};

static void
count_cb(void *arg, const struct fns_ilog_chunk *c)
{
    (void)c;
    ((struct count *)arg)->n++;
}

static size_t
chunks_of(struct fns_ilog *x, uint32_t tag)
{
    struct count c = {0};

    fns_ilog_each_chunk(x, tag, count_cb, &c);
    return c.n;
}

static void
test_state(void)
{
    struct fns_ilog *x, *y;
    struct fns_ilog_loc loc = {.seg = 3, .off = 64, .blob_len = 108};
    struct fns_ilog_stats st;
    struct fns_key k1 = key(1, 1), k2 = key(1, 2), k3 = key(1, 3);
    uint8_t *obj[8], meta[64];
    size_t len[8], nw;
    uint64_t seq[8], s;
    const uint8_t *buf;
    size_t blen;
    void **w;
    int marker;

    fns_ilog_create(5, &x);
    fns_ilog_replayed(x);
    CHECK(fns_ilog_take(x, 0, &buf, &blen, &s) == 0); /* nothing pending */
    fns_ilog_add_instance(x, 0x100001, 1, 0, POL_SMS_WARM);
    fns_ilog_add_chunk(x, 0x100001, &k1, 100, &loc);
    fns_ilog_add_chunk(x, 0x100001, &k2, 100, &loc);
    CHECK(fns_ilog_add_meta(x, (const uint8_t *)"junk", 4, NULL) == CM_E_BADARG);
    CHECK(fns_ilog_add_meta(x, meta, meta_rec(meta, 1, 1, "a", 1), &marker) == 0);
    CHECK(fns_ilog_pending(x) == 4);
    obj[0] = flush(x, &len[0], &seq[0], &nw);
    CHECK(seq[0] == 1 && nw == 1 && fns_ilog_pending(x) == 0);
    fns_ilog_stats(x, &st);
    CHECK(st.objects == 1 && st.records == 4 && st.live == 4 && st.chunks == 2 && st.metas == 1);

    /* A failed write is handed out again, with the same bytes. */
    fns_ilog_add_delete(x, &k3); /* never logged: nothing appended */
    CHECK(fns_ilog_pending(x) == 0);
    fns_ilog_add_delete(x, &k1);
    CHECK(fns_ilog_add_meta(x, meta, meta_rec(meta, 2, 1, "a", 2), &marker) == 0);
    CHECK(fns_ilog_take(x, 0, &buf, &blen, &s) == 1 && s == 2);
    CHECK(fns_ilog_take(x, 0, &buf, &blen, &s) == 0); /* one in flight */
    CHECK(fns_ilog_done(x, 0, &w) == 0 && w == NULL);
    /* The kills wait for durability: the first object is still all live. */
    fns_ilog_stats(x, &st);
    CHECK(st.live == 4 && fns_ilog_find(x, &k1) == NULL);
    obj[1] = flush(x, &len[1], &seq[1], &nw);
    CHECK(seq[1] == 2 && nw == 1);
    fns_ilog_stats(x, &st);
    CHECK(st.live == 4 - 2 + 1 && st.metas == 1); /* k1 and meta v1 died; the tombstone lives */
    CHECK(!fns_ilog_deletable(x, &s));            /* instance, k2 live in object 1 */

    /* A recovery: k2 moves to a new tag, the old tag is released. */
    fns_ilog_add_instance(x, 0x100002, 1, 0, POL_SMS_ACTIVE);
    fns_ilog_add_chunk(x, 0x100002, &k2, 100, &loc);
    fns_ilog_add_instance(x, 0x100001, 1, 0, POL_SMS_RELEASED);
    CHECK(chunks_of(x, 0x100002) == 1 && chunks_of(x, 0x100001) == 0);
    obj[2] = flush(x, &len[2], &seq[2], &nw);
    /* Every record of object 1 is dead now: it goes; object 2 keeps the
     * tombstone. */
    CHECK(fns_ilog_deletable(x, &s) && s == 1);
    CHECK(!fns_ilog_deletable(x, &s));

    /* A replay of what is left gives the same state. */
    fns_ilog_create(5, &y);
    CHECK(fns_ilog_replay(y, seq[0] + 99, obj[1], len[1]) ==
          CM_E_CRC); /* name and header disagree */
    CHECK(fns_ilog_replay(y, seq[1], obj[1], len[1]) == 0);
    CHECK(fns_ilog_replay(y, seq[2], obj[2], len[2]) == 0);
    CHECK(fns_ilog_replay(y, seq[1], obj[1], len[1]) == CM_E_CRC); /* out of order */
    fns_ilog_replayed(y);
    CHECK(chunks_of(y, 0x100002) == 1 && fns_ilog_find(y, &k2) != NULL);
    CHECK(fns_ilog_find(y, &k2)->loc.seg == 3 && fns_ilog_find(y, &k2)->loc.blob_len == 108);
    CHECK(fns_ilog_find(y, &k1) == NULL);
    fns_ilog_stats(y, &st);
    CHECK(st.metas == 1 && st.objects == 2);
    /* The next batch follows the newest. */
    fns_ilog_add_delete(y, &k2);
    CHECK(fns_ilog_take(y, 0, &buf, &blen, &s) == 1 && s == seq[2] + 1);
    (void)fns_ilog_done(y, 1, &w);
    free(w);
    fns_ilog_destroy(y);

    /* Replay of a log whose instance was released: its chunks die. */
    fns_ilog_create(5, &y);
    CHECK(fns_ilog_replay(y, seq[0], obj[0], len[0]) == 0);
    fns_ilog_replayed(y);
    CHECK(chunks_of(y, 0x100001) == 2);
    fns_ilog_add_instance(y, 0x100001, 1, 0, POL_SMS_RELEASED);
    CHECK(chunks_of(y, 0x100001) == 0);
    fns_ilog_destroy(y);

    for (int i = 0; i < 3; i++) {
        free(obj[i]);
    }
    fns_ilog_destroy(x);
    fns_ilog_destroy(NULL);
}

/* Long-lived records do not pin the log: the oldest object is carried. */
static void
test_carry(void)
{
    struct fns_ilog *x;
    struct fns_ilog_loc loc = {0};
    struct fns_ilog_stats st;
    uint8_t *obj[64];
    size_t len[64], nw, n = 0, deleted = 0;
    uint64_t seq[64], s;
    struct fns_key kept = key(2, 1);

    fns_ilog_create(1, &x);
    fns_ilog_replayed(x);
    fns_ilog_add_instance(x, 0x300001, 2, 0, POL_SMS_ACTIVE);
    fns_ilog_add_chunk(x, 0x300001, &kept, 10, &loc);
    for (int i = 0; i < 6; i++) { /* 1 live of 8: carried */
        struct fns_key k = key(2, 100 + (uint64_t)i);

        fns_ilog_add_chunk(x, 0x300001, &k, 10, &loc);
    }
    obj[n] = flush(x, &len[n], &seq[n], &nw);
    n++;
    for (int i = 0; i < 6; i++) {
        struct fns_key k = key(2, 100 + (uint64_t)i);

        fns_ilog_add_delete(x, &k);
    }
    obj[n] = flush(x, &len[n], &seq[n], &nw);
    n++;
    CHECK(!fns_ilog_deletable(x, &s)); /* 2 of 8 live: the instance and `kept` */
    CHECK(fns_ilog_carry_due(x, &s) && s == seq[0]);
    CHECK(!fns_ilog_carry_due(x, &s)); /* one at a time */
    fns_ilog_carry(x, seq[0], obj[0], len[0]);
    CHECK(fns_ilog_pending(x) == 2);
    CHECK(!fns_ilog_deletable(x, &s)); /* not before the copies are durable */
    /* ... and not read back again while they are pending (a batch that
     * lingers made that a read per loop turn). */
    CHECK(!fns_ilog_carry_due(x, &s));
    obj[n] = flush(x, &len[n], &seq[n], &nw);
    n++;
    while (fns_ilog_deletable(x, &s)) {
        deleted++;
    }
    CHECK(deleted == 2); /* the carried object, and the one of deletes behind it */
    fns_ilog_stats(x, &st);
    CHECK(st.objects == 1 && st.live == 2 && st.carried == 1);
    CHECK(fns_ilog_find(x, &kept) != NULL && fns_ilog_find(x, &kept)->seq == seq[2]);
    /* A carry whose read failed is simply due again. */
    CHECK(!fns_ilog_carry_due(x, &s)); /* all live */
    for (size_t i = 0; i < n; i++) {
        free(obj[i]);
    }
    fns_ilog_destroy(x);
}

/* Random histories: a replay of the surviving objects always recoveries the
 * live state the writer had, whatever was deleted on the way. */
static void
test_random(void)
{
    struct fns_ilog *x, *y;
    struct fns_ilog_loc loc = {0};
    uint8_t *obj[4096];
    size_t len[4096], nw, nobj = 0, first = 0;
    uint64_t seq[4096], s;
    uint32_t tags[4] = {0x400001, 0x400002, 0x400003, 0x400004};
    int live_tag[4] = {0};

    fns_ilog_create(2, &x);
    fns_ilog_replayed(x);
    for (int round = 0; round < 600 && nobj < 4096; round++) {
        for (int i = 0; i < 8; i++) {
            uint32_t op = (uint32_t)(t_rand() % 10), t = (uint32_t)(t_rand() % 4);
            struct fns_key k = key(3, t_rand() % 40);

            loc.off = (uint32_t)t_rand();
            if (op < 5 && live_tag[t]) {
                fns_ilog_add_chunk(x, tags[t], &k, 10, &loc);
            } else if (op < 7) {
                fns_ilog_add_delete(x, &k);
            } else if (op < 8) {
                fns_ilog_add_instance(x, tags[t], 3, 0, POL_SMS_RELEASED);
                live_tag[t] = 0;
            } else {
                fns_ilog_add_instance(x, tags[t], 3, 0, POL_SMS_ACTIVE);
                live_tag[t] = 1;
            }
        }
        if (fns_ilog_carry_due(x, &s)) {
            size_t i = first;

            while (i < nobj && seq[i] != s) {
                i++;
            }
            CHECK(i < nobj);
            fns_ilog_carry(x, s, obj[i], len[i]);
        }
        if (fns_ilog_pending(x) > 0) {
            obj[nobj] = flush(x, &len[nobj], &seq[nobj], &nw);
            nobj++;
        }
        while (fns_ilog_deletable(x, &s)) {
            CHECK(first < nobj && seq[first] == s); /* oldest first */
            free(obj[first]);
            obj[first++] = NULL;
        }
    }
    fns_ilog_create(2, &y);
    for (size_t i = first; i < nobj; i++) {
        CHECK(fns_ilog_replay(y, seq[i], obj[i], len[i]) == 0);
    }
    fns_ilog_replayed(y);
    for (uint64_t o = 0; o < 40; o++) {
        struct fns_key k = key(3, o);
        const struct fns_ilog_chunk *a = fns_ilog_find(x, &k), *b = fns_ilog_find(y, &k);

        CHECK((a == NULL) == (b == NULL));
        CHECK(a == NULL || (a->tag == b->tag && a->loc.off == b->loc.off));
    }
    for (int t = 0; t < 4; t++) {
        CHECK(chunks_of(x, tags[t]) == chunks_of(y, tags[t]));
    }
    for (size_t i = first; i < nobj; i++) {
        free(obj[i]);
    }
    CHECK(nobj - first < 200); /* dead objects went */
    fns_ilog_destroy(x);
    fns_ilog_destroy(y);
}

/* Grouping: a batch waits out its linger from its oldest record's first
 * look, goes at once when full or flushed, and gathers what comes while
 * the batch before is in flight; a failed write goes again at once. */
static void
test_linger(void)
{
    const uint64_t ms = 1000000u, t0 = 5000 * ms;
    struct fns_ilog *x;
    struct fns_ilog_loc loc = {.seg = 1, .off = 0, .blob_len = 10};
    struct fns_ilog_stats st;
    const uint8_t *buf;
    size_t blen;
    uint64_t s;
    void **w;

    fns_ilog_create(4, &x);
    fns_ilog_replayed(x);
    fns_ilog_set_linger(x, 20 * ms, 8);
    CHECK(fns_ilog_wait(x, t0) == UINT64_MAX); /* nothing pending */
    fns_ilog_add_instance(x, 0x100001, 1, 0, POL_SMS_ACTIVE);
    CHECK(fns_ilog_wait(x, t0) == 20 * ms); /* the linger starts here */
    CHECK(fns_ilog_take(x, t0 + 5 * ms, &buf, &blen, &s) == 0);
    for (uint64_t o = 0; o < 3; o++) {
        struct fns_key k = key(1, o);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
    }
    /* Later records do not restart the oldest one's linger. */
    CHECK(fns_ilog_wait(x, t0 + 12 * ms) == 8 * ms);
    CHECK(fns_ilog_take(x, t0 + 19 * ms, &buf, &blen, &s) == 0);
    CHECK(fns_ilog_take(x, t0 + 20 * ms, &buf, &blen, &s) == 1 && s == 1);
    /* Records added while it is in flight: their linger runs meanwhile. */
    {
        struct fns_key k = key(1, 10);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
    }
    CHECK(fns_ilog_wait(x, t0 + 21 * ms) == UINT64_MAX); /* the done looks again */
    CHECK(fns_ilog_take(x, t0 + 45 * ms, &buf, &blen, &s) == 0);
    CHECK(fns_ilog_done(x, 1, &w) == 0);
    CHECK(fns_ilog_wait(x, t0 + 46 * ms) == 0); /* seen at 21 ms: due since 41 */
    CHECK(fns_ilog_take(x, t0 + 46 * ms, &buf, &blen, &s) == 1 && s == 2);
    /* A failed write goes again at once, with the same seq. */
    CHECK(fns_ilog_done(x, 0, &w) == 0);
    CHECK(fns_ilog_take(x, t0 + 46 * ms, &buf, &blen, &s) == 1 && s == 2);
    CHECK(fns_ilog_done(x, 1, &w) == 0);
    /* A full batch (8 records) goes without waiting. */
    for (uint64_t o = 20; o < 27; o++) {
        struct fns_key k = key(1, o);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
        CHECK(fns_ilog_take(x, t0 + 50 * ms, &buf, &blen, &s) == 0);
    }
    {
        struct fns_key k = key(1, 27);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
    }
    CHECK(fns_ilog_wait(x, t0 + 50 * ms) == 0);
    CHECK(fns_ilog_take(x, t0 + 50 * ms, &buf, &blen, &s) == 1 && s == 3);
    CHECK(fns_ilog_done(x, 1, &w) == 0);
    /* A flush sends a young batch; with nothing pending it is a no-op. */
    fns_ilog_flush(x);
    CHECK(fns_ilog_wait(x, t0 + 51 * ms) == UINT64_MAX);
    {
        struct fns_key k = key(1, 40);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
    }
    CHECK(fns_ilog_take(x, t0 + 51 * ms, &buf, &blen, &s) == 0);
    fns_ilog_flush(x);
    CHECK(fns_ilog_take(x, t0 + 51 * ms, &buf, &blen, &s) == 1 && s == 4);
    CHECK(fns_ilog_done(x, 1, &w) == 0);
    /* ... and the next batch lingers again. */
    {
        struct fns_key k = key(1, 41);

        fns_ilog_add_chunk(x, 0x100001, &k, 10, &loc);
    }
    CHECK(fns_ilog_take(x, t0 + 52 * ms, &buf, &blen, &s) == 0);
    CHECK(fns_ilog_wait(x, t0 + 52 * ms) == 20 * ms);
    fns_ilog_stats(x, &st);
    CHECK(st.batches_written == 4 && st.records_written == 1 + 3 + 1 + 8 + 1);
    fns_ilog_destroy(x);
}

/* A gateway's frame of records back to back: all go into the pending
 * batch with one waiter, or none when any part of the run is not a record. */
static void
test_meta_run(void)
{
    struct fns_ilog *x;
    struct fns_ilog_stats st;
    uint8_t run[256];
    size_t n = 0, len, nw;
    uint64_t seq;
    int marker;

    fns_ilog_create(6, &x);
    fns_ilog_replayed(x);
    n += meta_rec(run + n, 1, 1, "a", 1);
    n += meta_rec(run + n, 2, 1, "b", 4);
    n += meta_rec(run + n, 1, 2, "a", 2);
    for (size_t cut = 1; cut < n; cut++) { /* a torn run is refused whole */
        CHECK(fns_ilog_add_meta(x, run, cut, &marker) == CM_E_BADARG || cut == 23 || cut == 39);
    }
    CHECK(fns_ilog_pending(x) == 3); /* the two whole prefixes: "a", then "a" and "b" */
    free(flush(x, &len, &seq, &nw));
    CHECK(nw == 2);
    run[n] = 9; /* a record of no known kind after three good ones */
    CHECK(fns_ilog_add_meta(x, run, n + 1, &marker) == CM_E_BADARG);
    CHECK(fns_ilog_add_meta(x, run, 0, &marker) == CM_E_BADARG);
    CHECK(fns_ilog_pending(x) == 0);
    CHECK(fns_ilog_add_meta(x, run, n, &marker) == 0);
    CHECK(fns_ilog_pending(x) == 3);
    free(flush(x, &len, &seq, &nw));
    CHECK(nw == 1); /* one answer for the frame */
    fns_ilog_stats(x, &st);
    CHECK(st.metas == 3); /* (1, a), (1, b), (2, a): the newest record of each key */
    fns_ilog_destroy(x);
}

/* A moved version's record (kind 3): its head parsed with its gen, every
 * cut refused; logged like the others, and it replaces its version's
 * earlier record as the live one of its key. */
static void
test_meta_moved(void)
{
    struct fns_ilog *x;
    struct fns_ilog_stats st;
    struct fns_meta_head h;
    uint8_t rec[64];
    size_t n = meta_rec(rec, 3, 4, "key", 9), len, nw;
    uint64_t seq;
    int marker;

    CHECK(n == 7 + 3 + 8 + 4 + 4 + 3);
    CHECK(fns_ilog_meta_parse(rec, n, &h) == 0);
    CHECK(h.kind == 3 && h.tenant == 4 && h.key_len == 3 && memcmp(h.key, "key", 3) == 0);
    CHECK(h.version == 9 && h.gen == 7);
    for (size_t cut = 0; cut < n; cut++) {
        CHECK(fns_ilog_meta_parse(rec, cut, &h) == CM_E_BADARG);
    }
    CHECK(fns_ilog_meta_parse(rec, n + 1, &h) == CM_E_BADARG);
    fns_ilog_create(6, &x);
    fns_ilog_replayed(x);
    CHECK(fns_ilog_add_meta(x, rec, meta_rec(rec, 1, 4, "key", 9), &marker) == 0);
    free(flush(x, &len, &seq, &nw));
    fns_ilog_stats(x, &st);
    CHECK(st.metas == 1 && st.live == 1);
    CHECK(fns_ilog_add_meta(x, rec, meta_rec(rec, 3, 4, "key", 9), &marker) == 0);
    free(flush(x, &len, &seq, &nw));
    fns_ilog_stats(x, &st);
    CHECK(st.metas == 1 && st.live == 1); /* the kind 1 record died */
    fns_ilog_destroy(x);
}

int
main(void)
{
    t_seed();
    test_codec();
    test_appended();
    test_state();
    test_meta_run();
    test_meta_moved();
    test_carry();
    test_linger();
    test_random();
    return 0;
}
