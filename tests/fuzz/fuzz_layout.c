/*
 * fuzz_layout.c - libFuzzer target for what --rebuild-meta parses out of
 * COS (gateway/gw_meta.c): META records and the layout records inside
 * them (formats 1 and 2), also as the META records of a log batch
 * (common/src/cm_ilog.c, whose CRC is made right so the walk is reached).
 *
 * A layout that decodes re-encodes to the same bytes when its format is
 * 2 or has no tags to carry; its tag array has exactly one tag per chunk;
 * a META record that decodes re-encodes to itself. Nothing may crash,
 * leak or read outside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_ilog.h"
#include "gw_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
layout_check(const uint8_t *p, size_t len)
{
    struct gw_layout l, plain;
    uint8_t *again;

    if (gw_meta_decode_tags(p, len, &l) != 0) {
        if (l.tags != NULL) {
            abort();
        }
        return;
    }
    if (gw_meta_decode(p, len, &plain) != 0 || plain.tags != NULL) {
        abort();
    }
    if (gw_meta_rec_len(&l) != len) {
        abort(); /* format 2 carries every tag, format 1 none */
    }
    again = malloc(len);
    gw_meta_encode(&l, again);
    if (memcmp(again, p, len) != 0) {
        abort();
    }
    free(again);
    gw_layout_fini(&l);
}

static void
mrec_check(const uint8_t *p, size_t len)
{
    struct gw_mrec m;
    uint8_t *again;

    if (gw_mrec_decode(p, len, &m) != 0) {
        return;
    }
    if (gw_mrec_len(&m) != len || m.klen == 0) {
        abort();
    }
    again = malloc(len);
    gw_mrec_encode(&m, again);
    if (memcmp(again, p, len) != 0) {
        abort();
    }
    free(again);
    if (m.kind == GW_MREC_VERSION) {
        layout_check(m.rec, m.rec_len);
    }
}

static void
batch_check(const uint8_t *p, size_t len)
{
    struct cm_ilog_iter it;
    struct cm_ilog_rec r;

    if (cm_ilog_open(p, len, NULL, NULL, &it) != 0) {
        return;
    }
    while (cm_ilog_next(&it, &r) == 1) {
        if (r.kind == CM_ILOG_META) {
            mrec_check(r.data, r.data_len);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;

    layout_check(data, size);
    mrec_check(data, size);
    if (size < CM_ILOG_HDR_LEN) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    cm_put_le32(copy, CM_ILOG_MAGIC);
    cm_put_le32(copy + 24, (uint32_t)size);
    cm_put_le32(copy + 28, 0);
    cm_put_le32(copy + 28, cm_crc32c(0, copy, size));
    batch_check(copy, size);
    free(copy);
    return 0;
}
