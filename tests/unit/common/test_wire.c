/*
 * test_wire.c - the frame header's byte layout, PERSISTED records and chunk
 * names (decoding is tested with the frame reader, test_frame.c).
 */
#include "t_check.h"

#include "cm_ec.h"
#include "cm_wire.h"

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
    test_chunk_name();
    test_note();
    return 0;
}
