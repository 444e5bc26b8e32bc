/*
 * fuzz_pack.c - libFuzzer target for the COS segment header parser.
 *
 * A segment read back from COS is untrusted bytes. Whatever decodes must
 * describe blobs inside the segment and re-encode to the same header;
 * everything else must be refused with CM_E_CRC and nothing allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "fns_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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
        return 0;
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
    return 0;
}
