/*
 * cm_wire.c - encoding of the node protocol: the 64-byte frame header,
 * PERSISTED records, chunk names. Decoding is cm_frame.c's.
 *
 * Fields are packed byte by byte in little-endian order, never by casting
 * a struct, so the layout is the same on every host and compiler.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_wire.h"

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
