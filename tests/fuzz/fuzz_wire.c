/*
 * fuzz_wire.c - libFuzzer target for the node protocol framing.
 *
 * Treats the input as a byte stream from a peer and parses it the way a
 * connection does: decode a header, skip its payload, repeat; stop at the
 * first error or when more bytes are needed. Every header that decodes
 * must re-encode to the exact same 64 bytes (decode accepts only what
 * encode can produce), and every error must be one the contract allows.
 * Each input is parsed twice: as it came, and with its header CRCs made
 * right (fuzz_crc.h), where no CRC error may come back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_wire.h"
#include "fuzz_crc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small cap so payload skipping is exercised by short inputs too. */
#define FUZZ_MAX_DATA 4096

/* Field by field: struct padding is not part of the value. */
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
parse(const uint8_t *data, size_t size, int crcs_fixed)
{
    uint8_t again[CM_WIRE_HDR_LEN];
    struct cm_wire_hdr h, h2;
    size_t off = 0;
    int rc;

    while (off < size) {
        rc = cm_wire_decode_hdr(data + off, size - off, FUZZ_MAX_DATA, &h);
        if (rc != 0) {
            if (rc != -EAGAIN && rc != CM_E_PROTO && (rc != CM_E_CRC || crcs_fixed)) {
                abort();
            }
            if (rc == -EAGAIN && size - off >= CM_WIRE_HDR_LEN) {
                abort();
            }
            break;
        }
        if (h.data_len > FUZZ_MAX_DATA) {
            abort();
        }
        cm_wire_encode_hdr(&h, again);
        if (memcmp(again, data + off, CM_WIRE_HDR_LEN) != 0) {
            abort();
        }
        if (cm_wire_decode_hdr(again, sizeof(again), FUZZ_MAX_DATA, &h2) != 0 || !hdr_eq(&h, &h2)) {
            abort();
        }
        off += CM_WIRE_HDR_LEN;
        if (size - off < h.data_len) {
            break; /* payload still incomplete: a real reader waits */
        }
        off += h.data_len;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);

    parse(data, size, 0);
    memcpy(copy, data, size);
    fuzz_fix_frames(copy, size, 0);
    parse(copy, size, 1);
    free(copy);
    return 0;
}
