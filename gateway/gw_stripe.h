/*
 * gw_stripe.h - an object version's stripes (private to gateway/): their
 * geometry, wire indexes and position masks, the RS encode of a PUT's
 * bytes with the CRC of every chunk, and the decode of one stripe.
 *
 *   object bytes ──geometry──▶ chunk_size, nstripes
 *               ──encode────▶ etag, padded last stripe, parity, CRC32C per wire index
 *   any k chunks of a stripe ──decode──▶ the others
 *
 * Pure: no I/O, no threads, no clock, no locks. Only encode allocates (the
 * parity, a padded copy of the last stripe when the caller's buffer has no
 * room, the CRCs). Any thread; a struct gw_stripes belongs to one caller.
 *
 * Layout (gw_engine.h): stripe s is k data chunks of chunk_size bytes,
 * object bytes s*k*chunk_size on, then m parity chunks; position j of
 * every stripe lives on holders[j] with wire index s * (k + m) + j. With
 * k == 1 the m "parity" chunks are copies of the data chunk.
 */
#ifndef GW_STRIPE_H
#define GW_STRIPE_H

#include <stdint.h>

#include "gw_engine.h"

struct cm_ec;

#define GW_BIT(j) (1ull << (j))

/* Positions per stripe: k + m. */
static inline uint32_t
gw_stripe_n(const struct gw_layout *l)
{
    return (uint32_t)(l->k + l->m);
}

/* The mask of every position. */
static inline uint64_t
gw_stripe_all(const struct gw_layout *l)
{
    return gw_stripe_n(l) >= 64 ? ~0ull : GW_BIT(gw_stripe_n(l)) - 1;
}

/* The wire index of position j of stripe s. */
static inline uint32_t
gw_stripe_index(const struct gw_layout *l, uint32_t s, uint32_t j)
{
    return s * gw_stripe_n(l) + j;
}

/*
 * Geometry of a size-byte object (size > 0, 1 <= k): as few stripes as
 * max_chunk (0: 1 MiB; at most CM_WIRE_MAX_DATA) allows, then chunks just
 * big enough for them; erasure-coded chunks (k > 1) are rounded up to 64
 * bytes (the code's vector width) unless that would leave the last stripe
 * without object bytes. Chunks of max_chunk each would pad the last stripe
 * to a whole one: a 10 MiB object at RS(4+2) would take 18 MiB of chunks
 * instead of 15.
 */
void gw_stripe_geometry(uint32_t max_chunk, uint32_t k, uint64_t size, uint64_t *chunk_size,
                        uint64_t *nstripes);

/* Bytes a PUT's buffer needs for the last stripe to be padded in place:
 * size rounded up to whole stripes (size itself when 0 or k < 1). */
uint64_t gw_stripe_room(uint32_t max_chunk, uint32_t k, uint64_t size);

/* A PUT's bytes, ready to send. */
struct gw_stripes {
    uint8_t *data;   /* the object bytes, padded in place when there was room */
    uint8_t *tail;   /* else a padded copy of the last stripe (data is not) */
    uint8_t *parity; /* position k + i of stripe s at (i * nstripes + s) * chunk_size */
    uint32_t *crc;   /* CRC32C of every chunk, per wire index */
    uint64_t bytes;  /* held by data (padding included), tail and parity */
};

/*
 * Lays out, encodes and checksums a PUT. l: tenant, size, k (1..CM_EC_MAX_K)
 * and m set; fills chunk_size, nstripes, etag (and persisted, full, when
 * size is 0). st->data: size bytes of object in a buffer of cap >= size
 * bytes (owned by st from now on, see gw_stripes_fini). ec: the code for
 * (k, m) when k > 1 and m > 0 (borrowed), else unused. 0, CM_E_BADARG (no
 * ec where one is needed), CM_E_TOOBIG (more wire indexes than fit
 * 32 bits) or -ENOMEM; on failure st still owns what it holds.
 */
int gw_stripe_encode(struct gw_stripes *st, struct gw_layout *l, const struct cm_ec *ec,
                     uint32_t max_chunk, uint64_t cap);

/* Chunk j of stripe s (chunk_size bytes; borrowed from st). */
const uint8_t *gw_stripe_chunk(const struct gw_stripes *st, const struct gw_layout *l, uint32_t s,
                               uint32_t j);

/* Frees every buffer st holds, the object bytes included (cm_free_big). */
void gw_stripes_fini(struct gw_stripes *st);

/*
 * One stripe of l: chunks[n] are chunk_size-byte buffers or NULL. Every
 * position not in present whose buffer is not NULL is rebuilt from the
 * present ones (a copy when k == 1, else the decode of ec, the code for
 * (k, m), borrowed; may be NULL when nothing is to be rebuilt). 0,
 * CM_E_UNAVAIL (fewer than k present) or CM_E_BADARG (no ec where one is
 * needed).
 */
int gw_stripe_decode(const struct gw_layout *l, const struct cm_ec *ec, uint8_t *const *chunks,
                     uint64_t present);

#endif
