/* fuzz_range.c - gw_parse_range: the first 8 bytes are the object size,
 * the rest the header value. A satisfiable range must lie inside the
 * object and be non-empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t osize = 0, off = 0, len = 0;
    char *hdr;

    if (size < 8) {
        return 0;
    }
    memcpy(&osize, data, 8);
    if (data[0] & 1) {
        osize %= 4096; /* small objects reach the edge cases */
    }
    hdr = malloc(size - 8 + 1);
    if (hdr == NULL) {
        return 0;
    }
    memcpy(hdr, data + 8, size - 8);
    hdr[size - 8] = '\0';
    switch (gw_parse_range(hdr, osize, &off, &len)) {
    case GW_RANGE_OK:
        if (len == 0 || off >= osize || len > osize - off) {
            abort();
        }
        break;
    case GW_RANGE_UNSAT:
    case GW_RANGE_BAD:
        break;
    case GW_RANGE_NONE:
        abort(); /* only for a NULL header */
    }
    free(hdr);
    return 0;
}
