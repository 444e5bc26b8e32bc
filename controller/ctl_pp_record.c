/*
 * ctl_pp_record.c - one tenant's placement rows (struct ctl_pp_trows): their
 * arrays, and the record ctl_store keeps of them in its "placement" table
 * (JSON: {width, k, rows, row_epochs, by_hash}; see ctl_pp.h).
 *
 * A record decodes only with rows of distinct node ids within its width and
 * no more rows than CTL_PP_MAX_PARTS; other members (older records' "shares")
 * are ignored.
 *
 * Pure: no lock, no I/O, any thread, on rows the caller owns.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "ctl_pp_impl.h"

void
ctl_pp_trows_fini(struct ctl_pp_trows *r)
{
    if (r == NULL) {
        return;
    }
    free(r->len);
    free(r->ids);
    free(r->row_epoch);
    free(r->by_hash);
    memset(r, 0, sizeof(*r));
}

void
ctl_pp_trows_alloc(struct ctl_pp_trows *r, uint32_t tenant, uint32_t width, uint32_t k,
                   uint32_t parts)
{
    memset(r, 0, sizeof(*r));
    r->tenant = tenant;
    r->width = width;
    r->k = k;
    r->parts = parts;
    r->len = cm_calloc(parts, sizeof(*r->len));
    r->ids = cm_calloc((size_t)parts * width, sizeof(*r->ids));
    r->row_epoch = cm_calloc(parts, sizeof(*r->row_epoch));
    r->by_hash = cm_calloc(parts, sizeof(*r->by_hash));
}

void
ctl_pp_trows_copy(struct ctl_pp_trows *dst, const struct ctl_pp_trows *src)
{
    ctl_pp_trows_alloc(dst, src->tenant, src->width, src->k, src->parts);
    memcpy(dst->len, src->len, src->parts * sizeof(*src->len));
    memcpy(dst->ids, src->ids, (size_t)src->parts * src->width * sizeof(*src->ids));
    memcpy(dst->row_epoch, src->row_epoch, src->parts * sizeof(*src->row_epoch));
    memcpy(dst->by_hash, src->by_hash, src->parts * sizeof(*src->by_hash));
    dst->seen = src->seen;
}

char *
ctl_pp_encode(const struct ctl_pp_trows *r, size_t *len)
{
    json_t *rows = json_array(), *ep = json_array(), *bh = json_array(), *j;
    char *text;

    for (uint32_t p = 0; p < r->parts; p++) {
        json_t *row = json_array();

        for (uint32_t i = 0; i < r->len[p]; i++) {
            json_array_append_new(row, json_integer(r->ids[(size_t)p * r->width + i]));
        }
        json_array_append_new(rows, row);
        json_array_append_new(ep, json_integer((json_int_t)r->row_epoch[p]));
        json_array_append_new(bh, json_integer(r->by_hash[p]));
    }
    j = json_pack("{s:I, s:I, s:o, s:o, s:o}", "width", (json_int_t)r->width, "k",
                  (json_int_t)r->k, "rows", rows, "row_epochs", ep, "by_hash", bh);
    text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text != NULL) {
        *len = strlen(text);
    }
    return text;
}

/* 0 with *v from a JSON integer in [lo, hi], else -1. */
static int
json_range(json_t *x, uint64_t lo, uint64_t hi, uint64_t *v)
{
    if (!json_is_integer(x) || json_integer_value(x) < 0 || (uint64_t)json_integer_value(x) < lo ||
        (uint64_t)json_integer_value(x) > hi) {
        return -1;
    }
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

int
ctl_pp_decode(uint32_t tenant, const char *text, size_t len, struct ctl_pp_trows *r)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *rows, *ep, *bh, *row, *x;
    uint64_t width, k, v;
    size_t p, i, parts;
    int rc = CM_E_CONFIG;

    memset(r, 0, sizeof(*r));
    rows = json_object_get(j, "rows");
    ep = json_object_get(j, "row_epochs");
    bh = json_object_get(j, "by_hash");
    parts = json_array_size(rows);
    if (!json_is_object(j) ||
        json_range(json_object_get(j, "width"), 1, POL_PP_MAX_WIDTH, &width) < 0 ||
        json_range(json_object_get(j, "k"), 1, width, &k) < 0 || !json_is_array(rows) ||
        parts == 0 || parts > CTL_PP_MAX_PARTS || json_array_size(ep) != parts ||
        json_array_size(bh) != parts || !json_is_array(ep) || !json_is_array(bh)) {
        goto out;
    }
    ctl_pp_trows_alloc(r, tenant, (uint32_t)width, (uint32_t)k, (uint32_t)parts);
    json_array_foreach(rows, p, row)
    {
        if (!json_is_array(row) || json_array_size(row) > width ||
            json_range(json_array_get(ep, p), 0, UINT64_MAX >> 1, &r->row_epoch[p]) < 0 ||
            json_range(json_array_get(bh, p), 0, 1, &v) < 0) {
            goto out;
        }
        r->by_hash[p] = (uint8_t)v;
        json_array_foreach(row, i, x)
        {
            uint32_t *ids = &r->ids[p * width];

            if (json_range(x, 0, UINT32_MAX - 1, &v) < 0) {
                goto out;
            }
            for (size_t q = 0; q < i; q++) {
                if (ids[q] == v) {
                    goto out; /* a node twice in one row */
                }
            }
            ids[i] = (uint32_t)v;
        }
        r->len[p] = (uint32_t)json_array_size(row);
    }
    rc = 0;
out:
    json_decref(j);
    if (rc != 0) {
        ctl_pp_trows_fini(r);
    }
    return rc;
}
