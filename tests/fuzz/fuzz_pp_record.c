/* fuzz_pp_record.c - the store record of a tenant's placement rows
 * (controller/ctl_pp.c, ctl_pp_decode). A record it takes must have rows of
 * distinct node ids within the width, and must encode back to a record that
 * decodes to the same rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_pp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same(const struct ctl_pp_trows *a, const struct ctl_pp_trows *b)
{
    size_t slots = (size_t)a->parts * a->width;

    return a->width == b->width && a->k == b->k && a->parts == b->parts &&
           memcmp(a->len, b->len, a->parts * sizeof(*a->len)) == 0 &&
           memcmp(a->ids, b->ids, slots * sizeof(*a->ids)) == 0 &&
           memcmp(a->row_epoch, b->row_epoch, a->parts * sizeof(*a->row_epoch)) == 0 &&
           memcmp(a->by_hash, b->by_hash, a->parts * sizeof(*a->by_hash)) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ctl_pp_trows r, r2;
    size_t len;
    char *text;

    if (ctl_pp_decode(7, (const char *)data, size, &r) != 0) {
        return 0;
    }
    if (r.width == 0 || r.width > POL_PP_MAX_WIDTH || r.k == 0 || r.k > r.width || r.parts == 0) {
        abort();
    }
    for (uint32_t p = 0; p < r.parts; p++) {
        if (r.len[p] > r.width || r.by_hash[p] > 1) {
            abort();
        }
        for (uint32_t i = 0; i < r.len[p]; i++) {
            for (uint32_t j = 0; j < i; j++) {
                if (r.ids[(size_t)p * r.width + i] == r.ids[(size_t)p * r.width + j]) {
                    abort();
                }
            }
        }
    }
    text = ctl_pp_encode(&r, &len);
    if (text == NULL || ctl_pp_decode(7, text, len, &r2) != 0 || !same(&r, &r2)) {
        abort();
    }
    free(text);
    ctl_pp_trows_fini(&r);
    ctl_pp_trows_fini(&r2);
    return 0;
}
