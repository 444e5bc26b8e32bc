/*
 * fuzz_pack.c - libFuzzer target for the COS segment record parser and the
 * scan of a segment's records.
 *
 * A segment read back from COS is untrusted bytes, and an appended one may
 * end in a torn record. Whatever decodes must describe blobs inside its
 * record and (version 2) re-encode to the same header; everything else
 * must be refused with CM_E_CRC and nothing allocated. A scan must stop
 * inside the input and hand out only blobs inside it. Each input is
 * checked twice: as it came, and with its first record's CRCs made right,
 * so the checks behind the CRCs see more than the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t scan_size;

static int
scan_record(void *arg, const struct fns_pack_ent *ents, size_t ne, const struct fns_key *tombs,
            size_t nt)
{
    (void)arg;
    if ((ne > 0 && ents == NULL) || (nt > 0 && tombs == NULL)) {
        abort();
    }
    for (size_t i = 0; i < ne; i++) {
        if ((uint64_t)ents[i].off + ents[i].len > scan_size) {
            abort();
        }
    }
    return 0;
}

static void
check(const uint8_t *data, size_t size)
{
    struct fns_pack_ent *ents;
    struct fns_key *tombs;
    size_t ne, nt, hl, rl;
    uint8_t *again;
    int rc;

    scan_size = size;
    if (fns_pack_scan(data, size, scan_record, NULL) > size) {
        abort();
    }
    rc = fns_pack_decode(data, size, &ents, &ne, &tombs, &nt, &rl);
    if (rc != 0) {
        if (rc != CM_E_CRC || ents != NULL || tombs != NULL || ne != 0 || nt != 0) {
            abort();
        }
        return;
    }
    if (rl > size) {
        abort();
    }
    for (size_t i = 0; i < ne; i++) {
        if ((uint64_t)ents[i].off + ents[i].len > rl) {
            abort();
        }
    }
    if (cm_get_le32(data + 4) != 1) { /* version 2: the same header again */
        hl = fns_pack_hdr_len(ne, nt);
        if (hl > rl) {
            abort();
        }
        again = malloc(rl);
        memcpy(again, data, rl);
        memset(again, 0, hl);
        fns_pack_encode(again, rl, ents, ne, tombs, nt);
        if (memcmp(again, data, hl) != 0) {
            abort();
        }
        free(again);
    }
    free(ents);
    free(tombs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    uint32_t hl, rl;

    check(data, size);
    if (size < FNS_PACK_FIXED_V1) {
        return 0;
    }
    hl = cm_get_le32(data + 16); /* the length the header CRC covers */
    if (hl < FNS_PACK_FIXED_V1 || hl > size) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    if (cm_get_le32(data + 4) != 1 && hl >= FNS_PACK_FIXED) {
        rl = cm_get_le32(data + 24);
        if (rl >= hl && rl <= size) {
            cm_put_le32(copy + 28, cm_crc32c(0, copy + hl, rl - hl));
        }
    }
    cm_put_le32(copy + 20, 0);
    cm_put_le32(copy + 20, cm_crc32c(0, copy, hl));
    check(copy, size);
    free(copy);
    return 0;
}
