/*
 * cm_frame.c - the frame reader of the node protocol; see cm_frame.h.
 *
 * States: HEADER (waiting for 64 header bytes, `cut` of them held in
 * `part` when a feed ended inside one), PAYLOAD (hdr checked, `got` of its
 * data_len bytes consumed into dst or skipped), BAD (err set for good).
 * A header that arrives whole in one feed is decoded in place.
 *
 * Fields are read byte by byte in little-endian order, never by casting a
 * struct, so the layout is the same on every host and compiler.
 */
#include <string.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_frame.h"

#define WF_KNOWN                                                                                   \
    (CM_WF_PERSISTED | CM_WF_COS_SYNC | CM_WF_FROM_COS | CM_WF_NOTIFY | CM_WF_COS_OK |            \
     CM_WF_KEEP_COS)

enum { ST_HEADER, ST_PAYLOAD, ST_BAD };

static const char *const why_names[] = {
#define CM_FRAME_WHY_NAME_(name, text) text,
    CM_FRAME_WHYS(CM_FRAME_WHY_NAME_)
#undef CM_FRAME_WHY_NAME_
};

const char *
cm_frame_why_name(enum cm_frame_why why)
{
    if ((size_t)why >= sizeof(why_names) / sizeof(why_names[0])) {
        return "unknown";
    }
    return why_names[why];
}

static int
op_valid(uint8_t op)
{
    uint8_t base = op & (uint8_t)~CM_OP_RESPONSE;

    return base >= CM_OP_PING && base <= CM_OP_LIST;
}

static int
bad(enum cm_frame_why *why, enum cm_frame_why w)
{
    if (why != NULL) {
        *why = w;
    }
    return w == CM_FRAME_WHY_HDR_CRC ? CM_E_CRC : CM_E_PROTO;
}

int
cm_frame_decode_hdr(const uint8_t *buf, uint32_t max_data, struct cm_wire_hdr *out,
                    enum cm_frame_why *why)
{
    struct cm_wire_hdr h;

    if (cm_get_le32(buf) != CM_WIRE_MAGIC) {
        return bad(why, CM_FRAME_WHY_MAGIC);
    }
    if (buf[4] != CM_WIRE_VERSION) {
        return bad(why, CM_FRAME_WHY_VERSION);
    }
    if (cm_get_le32(buf + 60) != cm_crc32c(0, buf, 60)) {
        return bad(why, CM_FRAME_WHY_HDR_CRC);
    }
    h.op = buf[5];
    h.flags = cm_get_le16(buf + 6);
    h.status = (int32_t)cm_get_le32(buf + 8);
    h.tenant = cm_get_le32(buf + 12);
    h.req_id = cm_get_le64(buf + 16);
    h.object = cm_get_le64(buf + 24);
    h.obj_version = cm_get_le64(buf + 32);
    h.index = cm_get_le32(buf + 40);
    h.incarnation = cm_get_le32(buf + 44);
    h.data_len = cm_get_le32(buf + 48);
    h.data_crc = cm_get_le32(buf + 52);
    if (!op_valid(h.op)) {
        return bad(why, CM_FRAME_WHY_OP);
    }
    if ((h.flags & ~WF_KNOWN) != 0) {
        return bad(why, CM_FRAME_WHY_FLAGS);
    }
    if (cm_get_le32(buf + 56) != 0) {
        return bad(why, CM_FRAME_WHY_RESERVED);
    }
    /* 0 means "no lower limit than the hard cap": an all-empty peer is useless. */
    if (max_data == 0 || max_data > CM_WIRE_MAX_DATA) {
        max_data = CM_WIRE_MAX_DATA;
    }
    if (h.data_len > max_data) {
        return bad(why, CM_FRAME_WHY_OVERSIZE);
    }
    *out = h;
    return 0;
}

void
cm_frame_init(struct cm_frame *f, uint32_t max_data, enum cm_frame_mode mode)
{
    memset(f, 0, sizeof(*f));
    f->max_data = max_data;
    f->mode = (uint8_t)mode;
    f->state = ST_HEADER;
}

static int
fail(struct cm_frame *f, int err)
{
    f->state = ST_BAD;
    f->err = err;
    return err;
}

/* A whole header at p: check it and start its payload. */
static int
take_header(struct cm_frame *f, const uint8_t *p)
{
    int rc = cm_frame_decode_hdr(p, f->max_data, &f->hdr, &f->why);

    if (rc != 0) {
        return fail(f, rc);
    }
    if (f->mode == CM_FRAME_RESPONSES && !(f->hdr.op & CM_OP_RESPONSE)) {
        f->why = CM_FRAME_WHY_NOT_RESPONSE;
        return fail(f, CM_E_PROTO);
    }
    f->state = ST_PAYLOAD;
    f->dst = NULL;
    f->got = 0;
    f->status = 0;
    return CM_FRAME_HEADER;
}

int
cm_frame_feed(struct cm_frame *f, const uint8_t *buf, size_t len, size_t *used)
{
    size_t n;

    *used = 0;
    if (f->state == ST_BAD) {
        return f->err;
    }
    if (f->state == ST_HEADER) {
        if (f->cut == 0 && len >= CM_WIRE_HDR_LEN) {
            *used = CM_WIRE_HDR_LEN;
            return take_header(f, buf);
        }
        n = CM_WIRE_HDR_LEN - f->cut;
        n = len < n ? len : n;
        if (n > 0) {
            memcpy(f->part + f->cut, buf, n);
        }
        f->cut = (uint8_t)(f->cut + n);
        *used = n;
        if (f->cut < CM_WIRE_HDR_LEN) {
            return CM_FRAME_MORE;
        }
        f->cut = 0;
        return take_header(f, f->part);
    }
    n = f->hdr.data_len - f->got;
    n = len < n ? len : n;
    if (n > 0 && f->dst != NULL) {
        memcpy(f->dst + f->got, buf, n);
    }
    f->got += (uint32_t)n;
    *used = n;
    if (f->got < f->hdr.data_len) {
        return CM_FRAME_MORE;
    }
    if (f->dst != NULL && cm_crc32c(0, f->dst, f->hdr.data_len) != f->hdr.data_crc) {
        f->status = CM_E_CRC;
    }
    f->state = ST_HEADER;
    return CM_FRAME_END;
}

void
cm_frame_payload_to(struct cm_frame *f, uint8_t *dst)
{
    if (f->state == ST_PAYLOAD) {
        f->dst = dst;
    }
}

uint8_t *
cm_frame_room(const struct cm_frame *f, size_t *room)
{
    if (f->state != ST_PAYLOAD || f->dst == NULL || f->got >= f->hdr.data_len) {
        *room = 0;
        return NULL;
    }
    *room = f->hdr.data_len - f->got;
    return f->dst + f->got;
}

void
cm_frame_wrote(struct cm_frame *f, size_t n)
{
    f->got += (uint32_t)n;
}

int
cm_frame_eof(struct cm_frame *f)
{
    if (f->state == ST_BAD) {
        return f->err;
    }
    if (f->state == ST_PAYLOAD || f->cut > 0) {
        f->why = CM_FRAME_WHY_TRUNCATED;
        return fail(f, CM_E_PROTO);
    }
    return 0;
}
