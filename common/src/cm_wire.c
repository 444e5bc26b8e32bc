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

#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"

#define WF_KNOWN (CM_WF_PERSISTED | CM_WF_COS_SYNC | CM_WF_FROM_COS)

static void
put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void
put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t
get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int
op_valid(uint8_t op)
{
    uint8_t base = op & (uint8_t)~CM_OP_RESPONSE;

    return base >= CM_OP_PING && base <= CM_OP_STAT;
}

void
cm_wire_encode_hdr(const struct cm_wire_hdr *h, uint8_t *out)
{
    put32(out + 0, CM_WIRE_MAGIC);
    out[4] = CM_WIRE_VERSION;
    out[5] = h->op;
    put16(out + 6, h->flags);
    put32(out + 8, (uint32_t)h->status);
    put32(out + 12, h->tenant);
    put64(out + 16, h->req_id);
    put64(out + 24, h->object);
    put64(out + 32, h->obj_version);
    put32(out + 40, h->index);
    put32(out + 44, h->incarnation);
    put32(out + 48, h->data_len);
    put32(out + 52, h->data_crc);
    put32(out + 56, 0);
    put32(out + 60, cm_crc32c(0, out, 60));
}

int
cm_wire_decode_hdr(const uint8_t *buf, size_t len, uint32_t max_data, struct cm_wire_hdr *out)
{
    struct cm_wire_hdr h;

    if (len < CM_WIRE_HDR_LEN) {
        return -EAGAIN;
    }
    if (get32(buf) != CM_WIRE_MAGIC || buf[4] != CM_WIRE_VERSION) {
        return CM_E_PROTO;
    }
    if (get32(buf + 60) != cm_crc32c(0, buf, 60)) {
        return CM_E_CRC;
    }
    h.op = buf[5];
    h.flags = get16(buf + 6);
    h.status = (int32_t)get32(buf + 8);
    h.tenant = get32(buf + 12);
    h.req_id = get64(buf + 16);
    h.object = get64(buf + 24);
    h.obj_version = get64(buf + 32);
    h.index = get32(buf + 40);
    h.incarnation = get32(buf + 44);
    h.data_len = get32(buf + 48);
    h.data_crc = get32(buf + 52);
    if (!op_valid(h.op) || (h.flags & ~WF_KNOWN) != 0 || get32(buf + 56) != 0) {
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
    int n = snprintf(buf, cap, "t%" PRIu32 "/%016" PRIx64 "/%" PRIu64 ".%" PRIu32, tenant, object,
                     obj_version, index);

    if (n < 0 || (size_t)n >= cap) {
        return -ENAMETOOLONG;
    }
    return 0;
}
