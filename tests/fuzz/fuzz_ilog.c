/*
 * fuzz_ilog.c - libFuzzer target for the insertion log's batch parser.
 *
 * A log object read back from COS is untrusted bytes. A batch that opens
 * must walk to its end without reading past it, and one made only of
 * known records must encode again to the same bytes; everything else is
 * refused with CM_E_CRC. Whatever opens is then replayed into a node's log
 * state and carried forward, which must not crash either. An object may
 * hold batches back to back: the walk over them by cm_ilog_batch_len must
 * stay inside the input and end. The input is also a gateway's META frame
 * (records back to back): taken whole or refused, it must log what it
 * says and read back. Each input is tried twice: as it came, and with its
 * CRC made right.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_ilog.h"
#include "fns_ilog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const uint8_t *data, size_t size)
{
    struct cm_ilog_iter it;
    struct cm_ilog_rec r;
    struct cm_buf b;
    struct fns_ilog *x;
    uint32_t node, nrec, known = 0;
    uint64_t seq;
    const uint8_t *wb;
    size_t wl;
    void **w;
    size_t at = 0, bl;

    fns_ilog_create(1, &x);
    fns_ilog_replayed(x);
    if (fns_ilog_add_meta(x, data, size, &x) == 0) {
        if (fns_ilog_pending(x) == 0 || !fns_ilog_take(x, 0, &wb, &wl, &seq) ||
            cm_ilog_open(wb, wl, NULL, NULL, &it) != 0) {
            abort(); /* a frame taken is logged, and reads back */
        }
        nrec = 0;
        while (cm_ilog_next(&it, &r)) {
            if (r.kind != CM_ILOG_META) {
                abort();
            }
            known += r.data_len;
            nrec++;
        }
        if (known != size || nrec != fns_ilog_pending(x)) {
            abort(); /* every byte of the frame is in one of its records */
        }
        known = 0;
        if (fns_ilog_done(x, 1, &w) != 1 || w[0] != (void *)&x) {
            abort();
        }
        free(w);
    } else if (fns_ilog_pending(x) != 0) {
        abort(); /* refused whole */
    }
    fns_ilog_destroy(x);

    while ((bl = cm_ilog_batch_len(data + at, size - at)) > 0) {
        if (bl < CM_ILOG_HDR_LEN || bl > size - at) {
            abort();
        }
        (void)cm_ilog_open(data + at, bl, NULL, NULL, &it);
        at += bl;
    }
    if (cm_ilog_open(data, size, &node, &seq, &it) != 0) {
        return;
    }
    nrec = cm_get_le32(data + 12);
    cm_buf_init(&b);
    cm_ilog_begin(&b, node, seq);
    while (cm_ilog_next(&it, &r)) {
        if (r.data != NULL && (r.data < data || r.data + r.data_len > data + size)) {
            abort();
        }
        cm_ilog_add(&b, &r);
        known++;
    }
    if (known > nrec) {
        abort();
    }
    cm_ilog_end(&b);
    if (known == nrec && (b.len != size || memcmp(b.p, data, size) != 0)) {
        abort();
    }
    cm_buf_fini(&b);

    fns_ilog_create(node, &x);
    if (fns_ilog_replay(x, seq, data, size) != 0) {
        if (seq != UINT64_MAX) {
            abort(); /* it opened, and a batch can follow it */
        }
        fns_ilog_destroy(x);
        return;
    }
    fns_ilog_replayed(x);
    if (fns_ilog_carry_due(x, &seq)) {
        fns_ilog_carry(x, seq, data, size);
    }
    if (fns_ilog_take(x, 0, &wb, &wl, &seq) && cm_ilog_open(wb, wl, NULL, NULL, &it) != 0) {
        abort(); /* what the node writes must read back */
    }
    (void)fns_ilog_done(x, 1, &w);
    free(w);
    while (fns_ilog_deletable(x, &seq)) {
    }
    fns_ilog_destroy(x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    uint32_t len;

    check(data, size);
    if (size < CM_ILOG_HDR_LEN) {
        return 0;
    }
    copy = malloc(size);
    memcpy(copy, data, size);
    len = (uint32_t)size;
    cm_put_le32(copy + 24, len);
    cm_put_le32(copy + 28, 0);
    cm_put_le32(copy + 28, cm_crc32c(0, copy, size));
    check(copy, size);
    free(copy);
    return 0;
}
