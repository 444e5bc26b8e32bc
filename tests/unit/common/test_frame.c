/*
 * test_frame.c - the frame reader (cm_frame): header round trip, every
 * single-bit corruption rejected, each check with its own reason, and
 * streams cut at every point, with payloads copied, skipped, read straight
 * into their buffer, or abandoned halfway.
 */
#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"

static void
random_hdr(struct cm_wire_hdr *h)
{
    static const uint8_t ops[] = {CM_OP_PING, CM_OP_PUT,       CM_OP_GET,  CM_OP_DEL,
                                  CM_OP_STAT, CM_OP_PERSISTED, CM_OP_META, CM_OP_LIST};

    memset(h, 0, sizeof(*h));
    h->op = ops[t_range(0, 7)] | (t_range(0, 1) ? CM_OP_RESPONSE : 0);
    h->flags =
        (uint16_t)(t_rand() & (CM_WF_PERSISTED | CM_WF_COS_SYNC | CM_WF_FROM_COS | CM_WF_NOTIFY |
                               CM_WF_COS_OK | CM_WF_KEEP_COS));
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
test_round_trip_and_corruption(void)
{
    struct cm_wire_hdr h, d;
    uint8_t b[CM_WIRE_HDR_LEN], c[CM_WIRE_HDR_LEN];
    enum cm_frame_why why;
    int i, byte, bit, rc;

    for (i = 0; i < 200; i++) {
        random_hdr(&h);
        cm_wire_encode_hdr(&h, b);
        CHECK_EQ_INT(cm_frame_decode_hdr(b, CM_WIRE_MAX_DATA, &d, &why), 0);
        CHECK(hdr_eq(&h, &d));
        /* every single-bit flip anywhere in the header is caught */
        for (byte = 0; byte < CM_WIRE_HDR_LEN; byte++) {
            for (bit = 0; bit < 8; bit++) {
                memcpy(c, b, sizeof(c));
                c[byte] ^= (uint8_t)(1u << bit);
                rc = cm_frame_decode_hdr(c, CM_WIRE_MAX_DATA, &d, &why);
                CHECK(rc == CM_E_PROTO || rc == CM_E_CRC);
                CHECK_EQ_INT(rc == CM_E_CRC, why == CM_FRAME_WHY_HDR_CRC);
            }
            /* and any whole-byte change too */
            memcpy(c, b, sizeof(c));
            c[byte] ^= (uint8_t)t_range(1, 255);
            rc = cm_frame_decode_hdr(c, CM_WIRE_MAX_DATA, &d, NULL);
            CHECK(rc == CM_E_PROTO || rc == CM_E_CRC);
        }
    }
}

/* Re-seals a tampered header with a valid CRC, so the checks behind it run. */
static int
decode_resealed(uint8_t *b, uint32_t max, enum cm_frame_why *why)
{
    struct cm_wire_hdr d;
    uint32_t crc = cm_crc32c(0, b, 60);

    b[60] = (uint8_t)crc;
    b[61] = (uint8_t)(crc >> 8);
    b[62] = (uint8_t)(crc >> 16);
    b[63] = (uint8_t)(crc >> 24);
    return cm_frame_decode_hdr(b, max, &d, why);
}

/* Each check refuses with its own reason. */
static void
test_reasons(void)
{
    struct cm_wire_hdr h = {0}, d;
    uint8_t b[CM_WIRE_HDR_LEN];
    enum cm_frame_why why;

    h.op = CM_OP_GET;
    h.data_len = 1000;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 1000, &d, &why), 0);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 999, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_OVERSIZE);

    h.data_len = CM_WIRE_MAX_DATA + 1;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, UINT32_MAX, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_OVERSIZE);

    h.data_len = 0;
    h.op = 0;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 0, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_OP);
    h.op = CM_OP_LIST + 1;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 0, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_OP);
    h.op = 0x40 | CM_OP_GET;
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 0, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_OP);
    h.op = CM_OP_GET;
    h.flags = 1u << 15; /* no flag has that bit */
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 0, &d, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_FLAGS);

    h.flags = 0;
    cm_wire_encode_hdr(&h, b);
    b[57] = 1;
    CHECK_EQ_INT(decode_resealed(b, 0, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_RESERVED);
    cm_wire_encode_hdr(&h, b);
    b[4] = CM_WIRE_VERSION + 1;
    CHECK_EQ_INT(decode_resealed(b, 0, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_VERSION);
    cm_wire_encode_hdr(&h, b);
    b[0] = 'X';
    CHECK_EQ_INT(decode_resealed(b, 0, &why), CM_E_PROTO);
    CHECK_EQ_INT(why, CM_FRAME_WHY_MAGIC);
    cm_wire_encode_hdr(&h, b);
    b[20] ^= 1;
    CHECK_EQ_INT(cm_frame_decode_hdr(b, 0, &d, &why), CM_E_CRC);
    CHECK_EQ_INT(why, CM_FRAME_WHY_HDR_CRC);
    cm_wire_encode_hdr(&h, b);
    CHECK_EQ_INT(decode_resealed(b, 0, &why), 0);
    CHECK_EQ_STR(cm_frame_why_name(CM_FRAME_WHY_HDR_CRC), "header_crc");
    CHECK_EQ_STR(cm_frame_why_name(CM_FRAME_WHY_TRUNCATED), "truncated");
}

#define NFRAMES 3

/* Three frames (a PUT with a payload, an empty PING, a GET response with a
 * payload whose CRC is wrong) into buf; returns the stream's length. */
static size_t
make_stream(uint8_t *buf, uint8_t pay[NFRAMES][300], uint32_t lens[NFRAMES])
{
    struct cm_wire_hdr h = {0};
    size_t off = 0;

    for (int i = 0; i < NFRAMES; i++) {
        lens[i] = i == 1 ? 0 : (uint32_t)t_range(1, 300);
        t_fill(pay[i], lens[i]);
        h.op = i == 0 ? CM_OP_PUT : i == 1 ? CM_OP_PING : (CM_OP_GET | CM_OP_RESPONSE);
        h.req_id = (uint64_t)i + 1;
        h.data_len = lens[i];
        h.data_crc = lens[i] ? cm_crc32c(0, pay[i], lens[i]) ^ (i == 2 ? 1u : 0u) : 0;
        cm_wire_encode_hdr(&h, buf + off);
        off += CM_WIRE_HDR_LEN;
        memcpy(buf + off, pay[i], lens[i]);
        off += lens[i];
    }
    return off;
}

/*
 * Feeds the stream in pieces of `step` bytes. how: 0 copies payloads into
 * their buffer, 1 skips them, 2 reads them "straight from the socket"
 * (cm_frame_room/wrote), 3 copies half and then abandons the rest.
 */
static void
check_stream(size_t step, int how)
{
    uint8_t buf[NFRAMES * (CM_WIRE_HDR_LEN + 300)], pay[NFRAMES][300], dst[300];
    uint32_t lens[NFRAMES];
    size_t len = make_stream(buf, pay, lens), off = 0, used;
    struct cm_frame f;
    int n = 0, ev;

    cm_frame_init(&f, 0, CM_FRAME_ANY);
    while (off < len || n < NFRAMES) {
        size_t give = len - off < step ? len - off : step;
        uint8_t *room;
        size_t want;

        if (how == 2 && off < len && (room = cm_frame_room(&f, &want)) != NULL) {
            /* a read straight from the socket: whatever is due, in one go */
            want = want < len - off ? want : len - off;
            memcpy(room, buf + off, want);
            cm_frame_wrote(&f, want);
            off += want;
            continue;
        }
        ev = cm_frame_feed(&f, buf + off, give, &used);
        CHECK(used <= give);
        off += used;
        if (ev == CM_FRAME_MORE) {
            CHECK_EQ_INT(used, give);
            CHECK(off < len || n == NFRAMES);
            if (how == 3 && f.dst != NULL && cm_frame_room(&f, &want) != NULL) {
                cm_frame_payload_to(&f, NULL);
                CHECK(cm_frame_room(&f, &want) == NULL);
            }
            continue;
        }
        if (ev == CM_FRAME_HEADER) {
            CHECK(n < NFRAMES);
            CHECK_EQ_INT(f.hdr.req_id, n + 1);
            CHECK_EQ_INT(f.hdr.data_len, lens[n]);
            memset(dst, 0, sizeof(dst));
            cm_frame_payload_to(&f, how == 1 ? NULL : dst);
            continue;
        }
        CHECK_EQ_INT(ev, CM_FRAME_END);
        CHECK_EQ_INT(f.hdr.req_id, n + 1);
        if (how == 1 || (how == 3 && f.dst == NULL)) {
            CHECK_EQ_INT(f.status, 0); /* a skipped payload is not checked */
        } else {
            CHECK(f.dst == dst);
            CHECK(memcmp(dst, pay[n], lens[n]) == 0);
            CHECK_EQ_INT(f.status, n == 2 ? CM_E_CRC : 0);
        }
        n++;
    }
    CHECK_EQ_INT(n, NFRAMES);
    CHECK_EQ_INT(cm_frame_eof(&f), 0);
}

static void
test_streams(void)
{
    for (size_t step = 1; step <= 400; step += step < 70 ? 1 : 37) {
        for (int how = 0; how < 4; how++) {
            check_stream(step, how);
        }
    }
}

/* A stream that ends inside a header or a payload is truncated; a bad
 * stream stays bad; a client refuses requests. */
static void
test_bad_streams(void)
{
    struct cm_wire_hdr h = {.op = CM_OP_PUT, .data_len = 10};
    uint8_t b[CM_WIRE_HDR_LEN + 10] = {0};
    struct cm_frame f;
    size_t used;

    h.data_crc = cm_crc32c(0, b + CM_WIRE_HDR_LEN, 10);
    cm_wire_encode_hdr(&h, b);
    for (size_t cut = 1; cut < sizeof(b); cut++) {
        cm_frame_init(&f, 0, CM_FRAME_ANY);
        int ev = cm_frame_feed(&f, b, cut, &used);
        if (ev == CM_FRAME_HEADER) {
            ev = cm_frame_feed(&f, b + used, cut - used, &used);
        }
        CHECK_EQ_INT(ev, CM_FRAME_MORE);
        CHECK_EQ_INT(cm_frame_eof(&f), CM_E_PROTO);
        CHECK_EQ_INT(f.why, CM_FRAME_WHY_TRUNCATED);
        CHECK_EQ_INT(cm_frame_feed(&f, b, sizeof(b), &used), CM_E_PROTO);
        CHECK_EQ_INT(used, 0);
    }
    cm_frame_init(&f, 0, CM_FRAME_RESPONSES);
    CHECK_EQ_INT(cm_frame_feed(&f, b, sizeof(b), &used), CM_E_PROTO);
    CHECK_EQ_INT(f.why, CM_FRAME_WHY_NOT_RESPONSE);
    cm_frame_init(&f, 9, CM_FRAME_ANY);
    CHECK_EQ_INT(cm_frame_feed(&f, b, sizeof(b), &used), CM_E_PROTO);
    CHECK_EQ_INT(f.why, CM_FRAME_WHY_OVERSIZE);
    b[30] ^= 4;
    cm_frame_init(&f, 0, CM_FRAME_ANY);
    CHECK_EQ_INT(cm_frame_feed(&f, b, 1, &used), CM_FRAME_MORE);
    CHECK_EQ_INT(cm_frame_feed(&f, b + 1, sizeof(b) - 1, &used), CM_E_CRC);
    CHECK_EQ_INT(used, CM_WIRE_HDR_LEN - 1);
    CHECK_EQ_INT(f.why, CM_FRAME_WHY_HDR_CRC);
    CHECK_EQ_INT(cm_frame_eof(&f), CM_E_CRC);
}

int
main(void)
{
    t_seed();
    test_round_trip_and_corruption();
    test_reasons();
    test_streams();
    test_bad_streams();
    return 0;
}
