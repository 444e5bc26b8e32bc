/*
 * test_ilog.c - unit.common.ilog: insertion-log batches and META payloads
 * (common/src/cm_ilog.c): random batches read back record for record,
 * every cut and every flipped byte refused, unknown kinds handed over,
 * names, META payloads both ways, and which record is newer.
 */
#include "t_check.h"

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_ilog.h"

static void
rand_chunk(struct cm_ilog_chunk *c)
{
    c->tag = (uint32_t)t_rand();
    c->tenant = (uint32_t)t_rand();
    c->object = t_rand();
    c->obj_version = t_rand() % 3;
    c->index = (uint32_t)t_rand();
    c->length = (uint32_t)t_rand();
    c->seg = t_rand() % 2 ? t_rand() : 0;
    c->off = (uint32_t)t_rand();
    c->blob_len = (uint32_t)t_rand();
}

static int
same_key(const struct cm_ilog_chunk *a, const struct cm_ilog_chunk *b)
{
    return a->tenant == b->tenant && a->object == b->object && a->obj_version == b->obj_version &&
           a->index == b->index;
}

/* A random batch read back exactly; its records are remembered in recs. */
struct want {
    uint8_t kind;
    struct cm_ilog_chunk c;
    uint8_t meta[64];
    size_t mlen;
};

static void
test_roundtrip(void)
{
    for (int round = 0; round < 200; round++) {
        struct want w[40];
        int n = (int)(t_rand() % 40);
        struct cm_buf b;
        struct cm_ilog_reader r;
        struct cm_ilog_rec rec;
        uint32_t node = (uint32_t)t_rand();
        uint64_t seq = t_rand();

        cm_buf_init(&b);
        cm_ilog_init(&b, node, seq);
        for (int i = 0; i < n; i++) {
            w[i].kind = (uint8_t)(1 + t_rand() % 3);
            rand_chunk(&w[i].c);
            if (w[i].kind == CM_ILOG_CHUNK) {
                cm_ilog_add_chunk(&b, &w[i].c);
            } else if (w[i].kind == CM_ILOG_DEL) {
                cm_ilog_add_del(&b, &w[i].c);
            } else {
                w[i].mlen = t_rand() % sizeof(w[i].meta);
                for (size_t j = 0; j < w[i].mlen; j++) {
                    w[i].meta[j] = (uint8_t)t_rand();
                }
                cm_ilog_add_meta(&b, w[i].meta, w[i].mlen);
            }
        }
        cm_ilog_seal(&b);
        CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
        CHECK(r.node == node && r.seq == seq);
        for (int i = 0; i < n; i++) {
            CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
            CHECK_EQ_INT(rec.kind, w[i].kind);
            if (w[i].kind == CM_ILOG_CHUNK) {
                CHECK(memcmp(&rec.chunk, &w[i].c, sizeof(rec.chunk)) == 0);
            } else if (w[i].kind == CM_ILOG_DEL) {
                CHECK(same_key(&rec.chunk, &w[i].c));
            } else {
                CHECK_EQ_INT(rec.len, w[i].mlen);
                CHECK(rec.len == 0 || memcmp(rec.data, w[i].meta, rec.len) == 0);
            }
        }
        CHECK_EQ_INT(cm_ilog_next(&r, &rec), 0);
        CHECK_EQ_INT(cm_ilog_next(&r, &rec), 0);

        /* Every cut and every altered byte is refused at open. */
        for (size_t cut = 0; cut < b.len; cut += 1 + t_rand() % 7) {
            CHECK(cm_ilog_open(&r, b.p, cut) < 0);
        }
        for (int k = 0; k < 20; k++) {
            size_t at = t_rand() % b.len;
            uint8_t bit = (uint8_t)(1u << (t_rand() % 8));
            b.p[at] ^= (char)bit;
            CHECK(cm_ilog_open(&r, b.p, b.len) < 0);
            b.p[at] ^= (char)bit;
        }
        CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
        cm_buf_fini(&b);
    }
    printf("ok roundtrip, cuts, flips\n");
}

/* A CRC made right over a body whose records lie is still refused; a kind
 * this code does not know is handed over whole. */
static void
test_structure(void)
{
    struct cm_buf b;
    struct cm_ilog_reader r;
    struct cm_ilog_rec rec;
    struct cm_ilog_chunk c;
    uint8_t *h;

    rand_chunk(&c);
    cm_buf_init(&b);
    cm_ilog_init(&b, 3, 9);
    cm_ilog_add_chunk(&b, &c);
    cm_ilog_add_meta(&b, "xyz", 3);
    cm_ilog_seal(&b);
    h = (uint8_t *)b.p;

    /* one record more than the body holds */
    cm_put_le32(h + 12, 3);
    cm_ilog_seal(&b);
    CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), CM_E_PROTO);
    /* one fewer: bytes left over */
    cm_put_le32(h + 12, 1);
    cm_ilog_seal(&b);
    CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), CM_E_PROTO);
    /* a chunk record of the wrong length */
    cm_put_le32(h + 12, 2);
    cm_put_le32(h + CM_ILOG_HDR_LEN + 1, CM_ILOG_CHUNK_LEN - 1);
    cm_ilog_seal(&b);
    CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), CM_E_PROTO);
    /* an unknown kind: handed over with its bytes */
    cm_put_le32(h + CM_ILOG_HDR_LEN + 1, CM_ILOG_CHUNK_LEN);
    h[CM_ILOG_HDR_LEN] = 77;
    cm_ilog_seal(&b);
    CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), 0);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
    CHECK(rec.kind == 77 && rec.len == CM_ILOG_CHUNK_LEN);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 1);
    CHECK(rec.kind == CM_ILOG_META && rec.len == 3 && memcmp(rec.data, "xyz", 3) == 0);
    CHECK_EQ_INT(cm_ilog_next(&r, &rec), 0);
    /* a newer version of the format */
    cm_put_le32(h + 4, CM_ILOG_VERSION + 1);
    cm_ilog_seal(&b);
    CHECK_EQ_INT(cm_ilog_open(&r, b.p, b.len), CM_E_PROTO);
    cm_buf_fini(&b);
    printf("ok structure\n");
}

static void
test_names(void)
{
    char name[CM_ILOG_NAME_MAX];
    uint32_t node;
    uint64_t seq;

    cm_ilog_name(name, sizeof(name), 12, 0xabcdef);
    CHECK_EQ_STR(name, "ilog/n12/0000000000abcdef");
    CHECK_EQ_INT(cm_ilog_parse_name(name, &node, &seq), 0);
    CHECK(node == 12 && seq == 0xabcdef);
    cm_ilog_name(name, sizeof(name), UINT32_MAX, UINT64_MAX);
    CHECK_EQ_INT(cm_ilog_parse_name(name, &node, &seq), 0);
    CHECK(node == UINT32_MAX && seq == UINT64_MAX);
    const char *bad[] = {"ilog/n/0000000000abcdef",   "ilog/n01/0000000000abcdef",
                         "ilog/n1/0000000000ABCDEF",  "ilog/n1/000000000abcdef",
                         "ilog/n1/0000000000abcdef0", "ilog/x1/0000000000abcdef",
                         "seg/n1/0000000000abcdef",   "ilog/n4294967296/0000000000abcdef",
                         "ilog/n1-0000000000abcdef",  "ilog/n1/0000000000abcdeg"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(cm_ilog_parse_name(bad[i], &node, &seq), CM_E_BADARG);
    }
    printf("ok names\n");
}

static void
test_meta(void)
{
    uint8_t rec[100], buf[300];
    struct cm_meta_rec m, d;

    for (size_t i = 0; i < sizeof(rec); i++) {
        rec[i] = (uint8_t)i;
    }
    m = (struct cm_meta_rec){.kind = CM_META_VERSION,
                             .tenant = 7,
                             .key = "a/b",
                             .klen = 3,
                             .version = 42,
                             .rec = rec,
                             .rec_len = sizeof(rec)};
    CHECK_EQ_INT(cm_meta_len(&m), 1 + 4 + 2 + 3 + 8 + 4 + 100);
    cm_meta_encode(&m, buf);
    /* the contract's bytes, field by field */
    CHECK(buf[0] == 1 && cm_get_le32(buf + 1) == 7 && cm_get_le16(buf + 5) == 3);
    CHECK(memcmp(buf + 7, "a/b", 3) == 0 && cm_get_le64(buf + 10) == 42);
    CHECK(cm_get_le32(buf + 18) == 100 && memcmp(buf + 22, rec, 100) == 0);
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m), &d), 0);
    CHECK(d.kind == CM_META_VERSION && d.tenant == 7 && d.klen == 3 && d.version == 42);
    CHECK(memcmp(d.key, "a/b", 3) == 0 && d.rec_len == 100 && memcmp(d.rec, rec, 100) == 0);
    for (size_t cut = 0; cut < cm_meta_len(&m); cut++) {
        CHECK_EQ_INT(cm_meta_decode(buf, cut, &d), CM_E_PROTO);
    }
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m) + 1, &d), CM_E_PROTO);

    m.kind = CM_META_TOMB;
    CHECK_EQ_INT(cm_meta_len(&m), 1 + 4 + 2 + 3 + 8);
    cm_meta_encode(&m, buf);
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m), &d), 0);
    CHECK(d.kind == CM_META_TOMB && d.version == 42 && d.rec == NULL && d.rec_len == 0);
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m) + 4, &d), CM_E_PROTO);
    buf[0] = 3;
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m), &d), CM_E_PROTO);
    buf[0] = CM_META_TOMB;
    cm_put_le16(buf + 5, 0);
    CHECK_EQ_INT(cm_meta_decode(buf, cm_meta_len(&m) - 3, &d), CM_E_PROTO); /* empty key */

    /* newer: the higher version; at the same version the tombstone */
    struct cm_meta_rec v5 = {.kind = CM_META_VERSION, .version = 5};
    struct cm_meta_rec v6 = {.kind = CM_META_VERSION, .version = 6};
    struct cm_meta_rec t5 = {.kind = CM_META_TOMB, .version = 5};
    CHECK(cm_meta_newer(&v6, &v5) && !cm_meta_newer(&v5, &v6));
    CHECK(cm_meta_newer(&t5, &v5) && !cm_meta_newer(&v5, &t5));
    CHECK(cm_meta_newer(&v6, &t5) && !cm_meta_newer(&t5, &v6));
    CHECK(!cm_meta_newer(&v5, &v5) && !cm_meta_newer(&t5, &t5));
    printf("ok meta payloads\n");
}

int
main(void)
{
    t_seed();
    test_roundtrip();
    test_structure();
    test_names();
    test_meta();
    printf("PASS\n");
    return 0;
}
