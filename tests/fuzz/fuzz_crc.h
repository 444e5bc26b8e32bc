/*
 * fuzz_crc.h - CRCs made right, so a fuzzer gets past them.
 *
 * A mutated frame almost never keeps a valid CRC, so the checks that come
 * after the CRC would only ever see the seeds. The targets therefore parse
 * some inputs with their CRCs rewritten first. A stream that was valid is
 * left as it was.
 */
#ifndef FUZZ_CRC_H
#define FUZZ_CRC_H

#include <stddef.h>
#include <stdint.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_wire.h"

/*
 * Walks buf as a stream of node-protocol frames, the way a reader does
 * (header, then data_len payload bytes), and rewrites each whole header's
 * CRC; with fix_data also the payload CRC of each payload that is whole
 * (before the header CRC, which covers it). Stops at a header that is cut.
 */
static inline void
fuzz_fix_frames(uint8_t *buf, size_t len, int fix_data)
{
    size_t off = 0;

    while (len - off >= CM_WIRE_HDR_LEN) {
        uint8_t *h = buf + off;
        uint32_t dlen = cm_get_le32(h + 48);

        off += CM_WIRE_HDR_LEN;
        if (fix_data && dlen <= len - off) {
            cm_put_le32(h + 52, cm_crc32c(0, buf + off, dlen));
        }
        cm_put_le32(h + 60, cm_crc32c(0, h, 60));
        if (dlen > len - off) {
            break;
        }
        off += dlen;
    }
}

#endif
