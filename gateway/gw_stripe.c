/*
 * gw_stripe.c - stripe geometry, encode and decode (see gw_stripe.h).
 *
 * Invariant after a successful encode: every chunk gw_stripe_chunk returns
 * is chunk_size readable bytes, zero past the object's end, and crc[] holds
 * the CRC32C of each (a copy's CRC is its data chunk's).
 */
#include "gw_stripe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"

#define GW_DEFAULT_MAX_CHUNK (1u << 20)

void
gw_stripe_geometry(uint32_t max_chunk, uint32_t k, uint64_t size, uint64_t *chunk_size,
                   uint64_t *nstripes)
{
    uint64_t mc = max_chunk ? max_chunk : GW_DEFAULT_MAX_CHUNK;
    if (mc > CM_WIRE_MAX_DATA) {
        mc = CM_WIRE_MAX_DATA;
    }
    uint64_t ns = (size + k * mc - 1) / (k * mc);
    uint64_t cs = (size + ns * k - 1) / (ns * k);
    uint64_t aligned = (cs + 63) & ~(uint64_t)63;
    if (k > 1 && aligned <= mc && (ns - 1) * k * aligned < size) {
        cs = aligned;
    }
    *chunk_size = cs;
    *nstripes = ns;
}

uint64_t
gw_stripe_room(uint32_t max_chunk, uint32_t k, uint64_t size)
{
    uint64_t cs, ns;
    if (size == 0 || k < 1) {
        return size;
    }
    gw_stripe_geometry(max_chunk, k, size, &cs, &ns);
    return ns * k * cs;
}

const uint8_t *
gw_stripe_chunk(const struct gw_stripes *st, const struct gw_layout *l, uint32_t s, uint32_t j)
{
    size_t cs = l->chunk_size;
    if (j >= l->k) {
        if (l->k > 1) {
            return st->parity + ((size_t)(j - l->k) * l->nstripes + s) * cs;
        }
        j = 0;
    }
    if (st->tail && s == l->nstripes - 1) {
        return st->tail + (size_t)j * cs;
    }
    return st->data + ((size_t)s * l->k + j) * cs;
}

/* Pads the last stripe: in place when the buffer has room, else in a copy. */
static int
stripe_pad(struct gw_stripes *st, uint64_t size, uint64_t ns, uint64_t sb, uint64_t cap)
{
    st->bytes = size;
    if (ns * sb <= cap) {
        memset(st->data + size, 0, ns * sb - size);
        st->bytes = ns * sb;
        return 0;
    }
    uint64_t start = (ns - 1) * sb;
    st->tail = cm_malloc_big(sb);
    if (!st->tail) {
        return -ENOMEM;
    }
    memcpy(st->tail, st->data + start, size - start);
    memset(st->tail + (size - start), 0, sb - (size - start));
    st->bytes += sb;
    return 0;
}

int
gw_stripe_encode(struct gw_stripes *st, struct gw_layout *l, const struct cm_ec *ec,
                 uint32_t max_chunk, uint64_t cap)
{
    uint64_t size = l->size;
    uint32_t k = l->k, n = gw_stripe_n(l);
    l->etag = cm_crc64(0, st->data, (size_t)size);
    if (size == 0) {
        l->chunk_size = 0;
        l->nstripes = 0;
        l->persisted = gw_stripe_all(l);
        return 0;
    }
    uint64_t cs, ns;
    gw_stripe_geometry(max_chunk, k, size, &cs, &ns);
    if (ns * n > UINT32_MAX) {
        return CM_E_TOOBIG;
    }
    if (k > 1 && l->m > 0 && !ec) {
        return CM_E_BADARG;
    }
    l->chunk_size = (uint32_t)cs;
    l->nstripes = (uint32_t)ns;
    st->crc = malloc(ns * n * sizeof(*st->crc));
    if (!st->crc || stripe_pad(st, size, ns, cs * k, cap) < 0) {
        return -ENOMEM;
    }
    if (k > 1 && l->m > 0) {
        st->parity = cm_malloc_big((size_t)l->m * ns * cs);
        if (!st->parity) {
            return -ENOMEM;
        }
        st->bytes += (uint64_t)l->m * ns * cs;
    }
    for (uint32_t s = 0; s < ns; s++) {
        const uint8_t *d[CM_EC_MAX_K];
        uint8_t *p[CM_EC_MAX_M];
        for (uint32_t j = 0; j < k; j++) {
            d[j] = gw_stripe_chunk(st, l, s, j);
        }
        if (st->parity) {
            for (uint32_t i = 0; i < l->m; i++) {
                p[i] = (uint8_t *)gw_stripe_chunk(st, l, s, k + i);
            }
            cm_ec_encode(ec, cs, d, p);
        }
        for (uint32_t j = 0; j < n; j++) {
            uint32_t c = (j < k || k > 1) ? cm_crc32c(0, gw_stripe_chunk(st, l, s, j), cs)
                                          : st->crc[gw_stripe_index(l, s, 0)];
            st->crc[gw_stripe_index(l, s, j)] = c;
        }
    }
    return 0;
}

void
gw_stripes_fini(struct gw_stripes *st)
{
    cm_free_big(st->data);
    cm_free_big(st->parity);
    cm_free_big(st->tail);
    free(st->crc);
    memset(st, 0, sizeof(*st));
}

int
gw_stripe_decode(const struct gw_layout *l, const struct cm_ec *ec, uint8_t *const *chunks,
                 uint64_t present)
{
    uint32_t n = gw_stripe_n(l);
    if (__builtin_popcountll(present & gw_stripe_all(l)) < l->k) {
        return CM_E_UNAVAIL;
    }
    if (l->k == 1) {
        const uint8_t *src = chunks[__builtin_ctzll(present)];
        for (uint32_t i = 0; i < n; i++) {
            if (chunks[i] && !(present & GW_BIT(i))) {
                memcpy(chunks[i], src, l->chunk_size);
            }
        }
        return 0;
    }
    uint8_t have[GW_MAX_HOLDERS];
    int missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        have[i] = (present & GW_BIT(i)) != 0;
        missing |= chunks[i] && !have[i];
    }
    if (!missing) {
        return 0;
    }
    if (!ec) {
        return CM_E_BADARG;
    }
    return cm_ec_decode(ec, l->chunk_size, chunks, have);
}
