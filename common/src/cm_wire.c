/*
 * cm_wire.c - the 64-byte frame header of the node protocol.
 *
 * Fields are packed byte by byte in little-endian order, never by casting
 * a struct, so the layout is the same on every host and compiler. Decode
 * checks everything a peer could get wrong before a single field is
 * trusted: magic and version first (so garbage reads as PROTO), then the
 * header CRC, then the semantic checks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"

#define WF_KNOWN \
    (CM_WF_PERSISTED | CM_WF_COS_SYNC | CM_WF_FROM_COS | CM_WF_NOTIFY)

static int
op_valid(uint8_t op)
{
    uint8_t base = op & (uint8_t)~CM_OP_RESPONSE;

    return base >= CM_OP_PING && base <= CM_OP_PERSISTED;
}

void
cm_wire_encode_hdr(const struct cm_wire_hdr *h, uint8_t *out)
{
    cm_put_le32(out + 0, CM_WIRE_MAGIC);
    out[4] = CM_WIRE_VERSION;
    out[5] = h->op;
    cm_put_le16(out + 6, h->flags);
    cm_put_le32(out + 8, (uint32_t)h->status);
    cm_put_le32(out + 12, h->tenant);
    cm_put_le64(out + 16, h->req_id);
    cm_put_le64(out + 24, h->object);
    cm_put_le64(out + 32, h->obj_version);
    cm_put_le32(out + 40, h->index);
    cm_put_le32(out + 44, h->incarnation);
    cm_put_le32(out + 48, h->data_len);
    cm_put_le32(out + 52, h->data_crc);
    cm_put_le32(out + 56, 0);
    cm_put_le32(out + 60, cm_crc32c(0, out, 60));
}

int
cm_wire_decode_hdr(const uint8_t *buf, size_t len, uint32_t max_data, struct cm_wire_hdr *out)
{
    struct cm_wire_hdr h;

    if (len < CM_WIRE_HDR_LEN) {
        return -EAGAIN;
    }
    if (cm_get_le32(buf) != CM_WIRE_MAGIC || buf[4] != CM_WIRE_VERSION) {
        return CM_E_PROTO;
    }
    if (cm_get_le32(buf + 60) != cm_crc32c(0, buf, 60)) {
        return CM_E_CRC;
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
    if (!op_valid(h.op) || (h.flags & ~WF_KNOWN) != 0 || cm_get_le32(buf + 56) != 0) {
        return CM_E_PROTO;
    }
    /* 0 means "no lower limit than the hard cap": an all-empty peer is useless. */
    if (max_data == 0 || max_data > CM_WIRE_MAX_DATA) {
        max_data = CM_WIRE_MAX_DATA;
    }
    if (h.data_len > max_data) {
        return CM_E_PROTO;
    }
    *out = h;
    return 0;
}

int
cm_chunk_name(char *buf, size_t cap, uint32_t tenant, uint64_t object, uint64_t obj_version,
              uint32_t index)
{
    int n = snprintf(buf, cap, "t%" PRIu32 "/%016" PRIx64 ".%" PRIu64 ".%" PRIu32, tenant, object,
                     obj_version, index);

    if (n < 0 || (size_t)n >= cap) {
        return -ENAMETOOLONG;
    }
    return 0;
}

void
cm_wire_note_encode(const struct cm_wire_note *n, uint8_t *out)
{
    cm_put_le32(out, n->tenant);
    cm_put_le32(out + 4, n->index);
    cm_put_le64(out + 8, n->object);
}

void
cm_wire_note_decode(const uint8_t *in, struct cm_wire_note *out)
{
    out->tenant = cm_get_le32(in);
    out->index = cm_get_le32(in + 4);
    out->object = cm_get_le64(in + 8);
}
