/*
 * fuzz_ilog.c - libFuzzer target for the insertion-log codec
 * (common/src/cm_ilog.c): batches read back from COS, and the META
 * payloads inside them, are untrusted bytes.
 *
 * A batch is opened twice: as it came, and with its CRC made right, so
 * the record walk behind the CRC sees more than the seeds. Every record
 * handed out lies inside the batch; a batch of known kinds that reads to
 * its end re-encodes to the same bytes; every META payload that decodes
 * re-encodes to itself. Nothing may crash or read outside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_ilog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
meta_check(const uint8_t *p, size_t len)
{
    struct cm_meta_rec m;
    uint8_t *again;

    if (cm_meta_decode(p, len, &m) != 0) {
        return;
    }
    if (cm_meta_len(&m) != len || m.klen == 0) {
        abort();
    }
    again = malloc(len);
    cm_meta_encode(&m, again);
    if (memcmp(again, p, len) != 0) {
        abort();
    }
    free(again);
}

static void
batch_check(const uint8_t *data, size_t size)
{
    struct cm_ilog_reader r;
    struct cm_ilog_rec rec;
    struct cm_buf b;
    int rc, known = 1;

    if (cm_ilog_open(&r, data, size) != 0) {
        return;
    }
    cm_buf_init(&b);
    cm_ilog_init(&b, r.node, r.seq);
    while ((rc = cm_ilog_next(&r, &rec)) == 1) {
        if (rec.data < data || rec.data + rec.len > data + size) {
            abort();
        }
        if (rec.kind == CM_ILOG_CHUNK) {
            cm_ilog_add_chunk(&b, &rec.chunk);
        } else if (rec.kind == CM_ILOG_DEL) {
            cm_ilog_add_del(&b, &rec.chunk);
        } else if (rec.kind == CM_ILOG_META) {
            cm_ilog_add_meta(&b, rec.data, rec.len);
            meta_check(rec.data, rec.len);
        } else {
            known = 0;
        }
    }
    if (rc == 0 && known) {
        cm_ilog_seal(&b);
        if (b.len != size || memcmp(b.p, data, size) != 0) {
            abort();
        }
    }
    cm_buf_fini(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    uint32_t crc;

    meta_check(data, size);
    batch_check(data, size);
    if (size < CM_ILOG_HDR_LEN) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    cm_put_le32(copy, CM_ILOG_MAGIC);
    cm_put_le32(copy + 24, (uint32_t)(size - CM_ILOG_HDR_LEN));
    crc = cm_crc32c(0, copy, 28);
    cm_put_le32(copy + 28, cm_crc32c(crc, copy + CM_ILOG_HDR_LEN, size - CM_ILOG_HDR_LEN));
    batch_check(copy, size);
    free(copy);
    return 0;
}
