/*
 * fuzz_pack.c - libFuzzer target for the COS segment header parser.
 *
 * A segment read back from COS is untrusted bytes. Whatever decodes must
 * describe blobs inside the segment and re-encode to the same header;
 * everything else must be refused with CM_E_CRC and nothing allocated.
 * Each input is decoded twice: as it came, and with its header CRC made
 * right, so the checks behind the CRC see more than the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const uint8_t *data, size_t size)
{
    struct fns_pack_ent *ents;
    struct fns_key *tombs;
    size_t ne, nt, hl;
    uint8_t *again;
    int rc;

    rc = fns_pack_decode(data, size, size, &ents, &ne, &tombs, &nt);
    if (rc != 0) {
        if (rc != CM_E_CRC || ents != NULL || tombs != NULL || ne != 0 || nt != 0) {
            abort();
        }
        return;
    }
    hl = fns_pack_hdr_len(ne, nt);
    if (hl > size) {
        abort();
    }
    for (size_t i = 0; i < ne; i++) {
        if (ents[i].off < hl || (uint64_t)ents[i].off + ents[i].len > size) {
            abort();
        }
    }
    again = malloc(hl);
    fns_pack_encode(again, ents, ne, tombs, nt);
    if (memcmp(again, data, hl) != 0) {
        abort();
    }
    free(again);
    free(ents);
    free(tombs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    uint32_t hl;

    check(data, size);
    if (size < FNS_PACK_FIXED) {
        return 0;
    }
    hl = cm_get_le32(data + 16); /* the length the CRC covers */
    if (hl < FNS_PACK_FIXED || hl > size) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    cm_put_le32(copy + 20, 0);
    cm_put_le32(copy + 20, cm_crc32c(0, copy, hl));
    check(copy, size);
    free(copy);
    return 0;
}
