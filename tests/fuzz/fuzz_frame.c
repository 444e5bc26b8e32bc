/*
 * fuzz_frame.c - libFuzzer target for the frame reader (common/src/cm_frame.c)
 * that both ends of the node protocol parse their streams with.
 *
 * Input: byte 0 picks how the stream is read, the rest is the stream.
 *   bits 0-2  bytes per feed (1 .. 260)
 *   bit 3     responses only (the gateway's mode), else any frame (the node's)
 *   bit 4     payloads read "straight from the socket" (cm_frame_room/wrote)
 *   bit 5     every other payload skipped; the others abandoned halfway
 *             when they arrive in pieces (a request cancelled mid-answer)
 *   bit 6     header CRCs made right first (fuzz_crc.h); bit 7 payload CRCs too
 *
 * Whatever the stream: every header the reader accepts re-encodes to the
 * exact 64 bytes it came from (decode accepts only what encode produces),
 * within the limit and mode; every payload that was kept holds the stream's
 * bytes and its status says whether their CRC matched; PERSISTED records
 * re-encode to their bytes; errors are the contract's, sticky, and a stream
 * whose CRCs were made right never fails a CRC; the end of the stream is
 * "truncated" exactly when it stops inside a frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"
#include "fuzz_crc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small, so oversized frames are common and payload buffers stay small. */
#define FUZZ_MAX_DATA 4096

static void
check_header(const struct cm_frame *f, const uint8_t *raw, int mode)
{
    uint8_t again[CM_WIRE_HDR_LEN];
    struct cm_wire_hdr h2;

    if (f->hdr.data_len > FUZZ_MAX_DATA ||
        (mode == CM_FRAME_RESPONSES && !(f->hdr.op & CM_OP_RESPONSE))) {
        abort();
    }
    cm_wire_encode_hdr(&f->hdr, again);
    if (memcmp(again, raw, CM_WIRE_HDR_LEN) != 0 ||
        cm_frame_decode_hdr(again, FUZZ_MAX_DATA, &h2, NULL) != 0) {
        abort();
    }
    cm_wire_encode_hdr(&h2, again); /* field by field: padding is not part of the value */
    if (memcmp(again, raw, CM_WIRE_HDR_LEN) != 0) {
        abort();
    }
}

static void
check_payload(const struct cm_frame *f, const uint8_t *raw, int crcs_fixed)
{
    uint32_t len = f->hdr.data_len;
    int crc_ok = cm_crc32c(0, raw, len) == f->hdr.data_crc;

    if (f->dst == NULL) {
        if (f->status != 0) {
            abort(); /* a skipped payload is not checked */
        }
        return;
    }
    if (memcmp(f->dst, raw, len) != 0 || f->status != (crc_ok ? 0 : CM_E_CRC) ||
        (crcs_fixed && f->status != 0)) {
        abort();
    }
    if (f->hdr.op == (CM_OP_PERSISTED | CM_OP_RESPONSE) && len % CM_WIRE_NOTE_LEN == 0) {
        for (uint32_t off = 0; off < len; off += CM_WIRE_NOTE_LEN) {
            struct cm_wire_note n;
            uint8_t again[CM_WIRE_NOTE_LEN];

            cm_wire_note_decode(f->dst + off, &n);
            cm_wire_note_encode(&n, again);
            if (memcmp(again, f->dst + off, CM_WIRE_NOTE_LEN) != 0) {
                abort();
            }
        }
    }
}

static void
parse(const uint8_t *s, size_t size, uint8_t how)
{
    static uint8_t dst[FUZZ_MAX_DATA];
    size_t step = 1 + (size_t)(how % 8) * 37, off = 0, used, room;
    int mode = how & 0x08 ? CM_FRAME_RESPONSES : CM_FRAME_ANY;
    int direct = how & 0x10, skip_some = how & 0x20, crcs_fixed = how & 0x40;
    int nframes = 0, ev = CM_FRAME_MORE, ended = 1;
    struct cm_frame f;

    cm_frame_init(&f, FUZZ_MAX_DATA, mode);
    for (;;) {
        size_t give = size - off < step ? size - off : step;
        uint8_t *p;

        if (direct && (p = cm_frame_room(&f, &room)) != NULL && give > 0) {
            give = give < room ? give : room;
            memcpy(p, s + off, give);
            cm_frame_wrote(&f, give);
            off += give;
            give = 0;
        }
        ev = cm_frame_feed(&f, s + off, give, &used);
        if (used > give) {
            abort();
        }
        off += used;
        if (ev < 0) {
            break;
        }
        if (ev == CM_FRAME_END || used > 0) {
            ended = ev == CM_FRAME_END;
        }
        if (ev == CM_FRAME_HEADER) {
            check_header(&f, s + off - CM_WIRE_HDR_LEN, mode);
            cm_frame_payload_to(&f, skip_some && nframes % 2 ? NULL : dst);
        } else if (ev == CM_FRAME_END) {
            check_payload(&f, s + off - f.hdr.data_len, crcs_fixed && (how & 0x80));
            nframes++;
        } else {
            if (used != give) {
                abort();
            }
            if (skip_some && cm_frame_room(&f, &room) != NULL && off < size) {
                cm_frame_payload_to(&f, NULL);
            }
            if (off == size) {
                break;
            }
        }
    }
    if (ev < 0) {
        if ((ev != CM_E_PROTO && ev != CM_E_CRC) ||
            (ev == CM_E_CRC) != (f.why == CM_FRAME_WHY_HDR_CRC) || (crcs_fixed && ev == CM_E_CRC) ||
            cm_frame_feed(&f, s, size, &used) != ev || used != 0) {
            abort();
        }
        return;
    }
    /* Ended right after a frame (or before any byte): a clean end. */
    if ((cm_frame_eof(&f) == 0) != (ended || size == 0) ||
        (!(ended || size == 0) && f.why != CM_FRAME_WHY_TRUNCATED)) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;

    if (size == 0) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    if (data[0] & 0x40) {
        fuzz_fix_frames(copy + 1, size - 1, data[0] & 0x80);
    }
    parse(copy + 1, size - 1, data[0]);
    free(copy);
    return 0;
}
