/*
 * test_wire.c - frame header encode/decode: round trip, every single-bit
 * corruption of the header is rejected, truncation asks for more bytes,
 * limits on data_len, and chunk names.
 */
#include <errno.h>

#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"

static void
random_hdr(struct cm_wire_hdr *h)
{
    static const uint8_t ops[] = {CM_OP_PING, CM_OP_PUT,  CM_OP_GET,
                                  CM_OP_DEL,  CM_OP_STAT, CM_OP_PERSISTED};

    memset(h, 0, sizeof(*h));
    h->op = ops[t_range(0, 5)] | (t_range(0, 1) ? CM_OP_RESPONSE : 0);
    h->flags = (uint16_t)(t_rand() & (CM_WF_PERSISTED | CM_WF_COS_SYNC | CM_WF_FROM_COS |
                                       CM_WF_NOTIFY));
    h->status = t_range(0, 1) ? 0 : -(int32_t)t_range(1, 1011);
    h->tenant = (uint32_t)t_rand();
    h->req_id = t_rand();
    h->object = t_rand();
    h->obj_version = t_rand();
    h->index = (uint32_t)t_rand();
    h->incarnation = (uint32_t)t_rand();
    h->data_len = (uint32_t)(t_rand() % (CM_WIRE_MAX_DATA + 1));
    h->data_crc = (uint32_t)t_rand();
}

static int
hdr_eq(const struct cm_wire_hdr *a, const struct cm_wire_hdr *b)
{
    return a->op == b->op && a->flags == b->flags && a->status == b->status &&
           a->tenant == b->tenant && a->req_id == b->req_id && a->object == b->object &&
           a->obj_version == b->obj_version && a->index == b->index &&
           a->incarnation == b->incarnation && a->data_len == b->data_len &&
           a->data_crc == b->data_crc;
}

static void
test_layout(void)
{
    struct cm_wire_hdr h = {0};
    uint8_t b[CM_WIRE_HDR_LEN];

    h.op = CM_OP_PUT;
    h.flags = CM_WF_COS_SYNC;
    h.status = -2;
    h.tenant = 0x01020304;
    h.req_id = 0x1112131415161718ull;
    h.data_len = 5;
    cm_wire_encode_hdr(&h, b);
    CHECK(memcmp(b, "SHOL", 4) == 0);
    CHECK_EQ_INT(b[4], CM_WIRE_VERSION);
    CHECK_EQ_INT(b[5], CM_OP_PUT);
    CHECK_EQ_INT(b[6], CM_WF_COS_SYNC);
    CHECK_EQ_INT(b[7], 0);
    CHECK(b[8] == 0xfe && b[9] == 0xff && b[10] == 0xff && b[11] == 0xff);
    CHECK(b[12] == 0x04 && b[15] == 0x01);
    CHECK(b[16] == 0x18 && b[23] == 0x11);
    CHECK_EQ_INT(b[48], 5);
    CHECK(b[56] == 0 && b[57] == 0 && b[58] == 0 && b[59] == 0);
    CHECK_EQ_INT((uint32_t)b[60] | (uint32_t)b[61] << 8 | (uint32_t)b[62] << 16 |
                     (uint32_t)b[63] << 24,
                 cm_crc32c(0, b, 60));
}

static void
test_round_trip_and_corruption(void)
{
    struct cm_wire_hdr h, d;
    uint8_t b[CM_WIRE_HDR_LEN], c[CM_WIRE_HDR_LEN];
    size_t len;
    int i, byte, bit, rc;

    for (i = 0; i < 200; i++) {
        random_hdr(&h);
        cm_wire_encode_hdr(&h, b);
        CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), CM_WIRE_MAX_DATA, &d), 0);
        CHECK(hdr_eq(&h, &d));
        /* decode ignores bytes after the header (they are the payload) */
        for (len = 0; len < CM_WIRE_HDR_LEN; len++) {
            CHECK_EQ_INT(cm_wire_decode_hdr(b, len, CM_WIRE_MAX_DATA, &d), -EAGAIN);
        }
        /* every single-bit flip anywhere in the header is caught */
        for (byte = 0; byte < CM_WIRE_HDR_LEN; byte++) {
            for (bit = 0; bit < 8; bit++) {
                memcpy(c, b, sizeof(c));
                c[byte] ^= (uint8_t)(1u << bit);
                rc = cm_wire_decode_hdr(c, sizeof(c), CM_WIRE_MAX_DATA, &d);
                CHECK(rc == CM_E_PROTO || rc == CM_E_CRC);
            }
            /* and any whole-byte change too */
            memcpy(c, b, sizeof(c));
            c[byte] ^= (uint8_t)t_range(1, 255);
            rc = cm_wire_decode_hdr(c, sizeof(c), CM_WIRE_MAX_DATA, &d);
            CHECK(rc == CM_E_PROTO || rc == CM_E_CRC);
        }
    }
}

/* Re-seals a tampered header with a valid CRC, so the semantic checks run. */
static int
decode_resealed(uint8_t *b, uint32_t max)
{
    struct cm_wire_hdr d;
    uint32_t crc = cm_crc32c(0, b, 60);

    b[60] = (uint8_t)crc;
    b[61] = (uint8_t)(crc >> 8);
    b[62] = (uint8_t)(crc >> 16);
    b[63] = (uint8_t)(crc >> 24);
    return cm_wire_decode_hdr(b, CM_WIRE_HDR_LEN, max, &d);
}

static void
test_semantic_checks(void)
{
    struct cm_wire_hdr h = {0}, d;
    uint8_t b[CM_WIRE_HDR_LEN];

    h.op = CM_OP_GET;
    h.data_len = 1000;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 1000, &d), 0);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 999, &d), CM_E_PROTO);

    h.data_len = CM_WIRE_MAX_DATA + 1;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), UINT32_MAX, &d), CM_E_PROTO);

    h.data_len = 0;
    h.op = 0;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 0, &d), CM_E_PROTO);
    h.op = CM_OP_PERSISTED + 1;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 0, &d), CM_E_PROTO);
    h.op = 0x40 | CM_OP_GET;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 0, &d), CM_E_PROTO);
    h.op = CM_OP_GET;
    h.flags = 1u << 5;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_wire_decode_hdr(b, sizeof(b), 0, &d), CM_E_PROTO);

    h.flags = 0;
    cm_wire_encode_hdr(&h, b);
    b[57] = 1; /* reserved */
    CHECK_EQ_INT(decode_resealed(b, 0), CM_E_PROTO);
    cm_wire_encode_hdr(&h, b);
    b[4] = CM_WIRE_VERSION + 1;
    CHECK_EQ_INT(decode_resealed(b, 0), CM_E_PROTO);
    cm_wire_encode_hdr(&h, b);
    b[0] = 'X';
    CHECK_EQ_INT(decode_resealed(b, 0), CM_E_PROTO);
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(decode_resealed(b, 0), 0);
}

static void
test_chunk_name(void)
{
    char buf[128];

    CHECK_EQ_INT(cm_chunk_name(buf, sizeof(buf), 3, 0xab12, 7, 2), 0);
    CHECK_EQ_STR(buf, "t3/000000000000ab12.7.2");
    CHECK_EQ_INT(cm_chunk_name(buf, sizeof(buf), UINT32_MAX, UINT64_MAX, UINT64_MAX, UINT32_MAX),
                 0);
    CHECK_EQ_STR(buf, "t4294967295/ffffffffffffffff.18446744073709551615.4294967295");
    CHECK(cm_chunk_name(buf, 10, 3, 0xab12, 7, 2) < 0);
}

static void
test_note(void)
{
    struct cm_wire_note n = {.tenant = 0x01020304u, .index = 0x0a0b0c0du,
                             .object = 0x1122334455667788ull};
    struct cm_wire_note d;
    uint8_t b[CM_WIRE_NOTE_LEN];
    static const uint8_t want[CM_WIRE_NOTE_LEN] = {4, 3, 2, 1, 0x0d, 0x0c, 0x0b, 0x0a,
                                                   0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22,
                                                   0x11};

    cm_wire_note_encode(&n, b);
    CHECK(memcmp(b, want, sizeof(b)) == 0);
    cm_wire_note_decode(b, &d);
    CHECK_EQ_INT(d.tenant, n.tenant);
    CHECK_EQ_INT(d.index, n.index);
    CHECK(d.object == n.object);
}

int
main(void)
{
    t_seed();
    test_layout();
    test_round_trip_and_corruption();
    test_semantic_checks();
    test_chunk_name();
    test_note();
    return 0;
}
