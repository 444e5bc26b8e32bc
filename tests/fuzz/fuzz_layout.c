/*
 * fuzz_layout.c - libFuzzer target for what --rebuild-meta parses out of
 * COS (gateway/gw_meta_rec.c): META records and the version records inside
 * them (format 3: tags, commit time, MD5, stored headers, parts, an
 * upload's object; formats 1 and 2, both readings of 2), also as the META
 * records of a log batch (common/src/cm_ilog.c, whose CRC is made right
 * so the walk is reached).
 *
 * A format 3 record that decodes re-encodes to the same bytes from what
 * the decoders give (its tags, its attributes); a format 1 or 2 record
 * re-encodes as format 3 to the same layout. A record's tag array has
 * exactly one tag per chunk, its stored headers end in NUL, a
 * composite's part numbers ascend. A META record that decodes re-encodes
 * to itself. Nothing may crash, leak or read outside the input.
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
same_layout(const struct gw_layout *a, const struct gw_layout *b)
{
    if (a->tenant != b->tenant || a->object != b->object || a->version != b->version ||
        a->size != b->size || a->etag != b->etag || a->k != b->k || a->m != b->m ||
        a->chunk_size != b->chunk_size || a->nstripes != b->nstripes ||
        a->persisted != b->persisted ||
        memcmp(a->holders, b->holders, sizeof(a->holders[0]) * ((size_t)a->k + a->m)) != 0) {
        abort();
    }
}

static void
layout_check(const uint8_t *p, size_t len)
{
    struct gw_layout l, plain, back;
    struct gw_meta_attrs a;
    uint8_t *again;
    size_t n;

    if (gw_meta_decode_tags(p, len, &l) != 0) {
        if (l.tags != NULL) {
            abort();
        }
        return;
    }
    if (gw_meta_decode(p, len, &plain) != 0 || plain.tags != NULL ||
        gw_meta_decode_attrs(p, len, &plain, &a) != 0) {
        abort();
    }
    if ((a.hdrs != NULL && a.hdrs[a.hdrs_len - 1] != '\0') ||
        (a.nparts > 0 && (!gw_layout_record_only(&l) || a.upload == NULL)) ||
        (l.tags != NULL && gw_layout_nchunks(&l) == 0)) {
        abort();
    }
    for (uint32_t i = 1; i < a.nparts; i++) {
        if (gw_meta_part_no(&a, i) <= gw_meta_part_no(&a, i - 1)) {
            abort();
        }
    }
    n = gw_meta_rec_len(&l, &a);
    if (p[0] == 3 && n != len) {
        abort(); /* format 3 carries every tag it had, and all the rest */
    }
    again = malloc(n);
    gw_meta_encode(&l, &a, again);
    if (p[0] == 3 && memcmp(again, p, len) != 0) {
        abort();
    }
    if (gw_meta_decode(again, n, &back) != 0) {
        abort();
    }
    same_layout(&l, &back);
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
    if (m.kind != GW_MREC_TOMB) { /* a version's record, or a moved one's */
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
