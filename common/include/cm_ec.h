/*
 * cm_ec.h - Reed-Solomon erasure coding and checksums (the ISA-L adapter).
 *
 * A struct cm_ec is immutable after creation and may be shared by any
 * number of threads. Buffers need no alignment.
 */
#ifndef CM_EC_H
#define CM_EC_H

#include <stddef.h>
#include <stdint.h>

#define CM_EC_MAX_K 32
#define CM_EC_MAX_M 8
#define CM_EC_MAX_CHUNKS (CM_EC_MAX_K + CM_EC_MAX_M)

struct cm_ec;

/* 1 <= k <= CM_EC_MAX_K, 0 <= m <= CM_EC_MAX_M. *out is caller-owned. */
int cm_ec_create(int k, int m, struct cm_ec **out);
void cm_ec_destroy(struct cm_ec *ec); /* NULL is a no-op */
int cm_ec_k(const struct cm_ec *ec);
int cm_ec_m(const struct cm_ec *ec);

/* data[k] (borrowed, len bytes each) -> parity[m] (caller's buffers). */
void cm_ec_encode(const struct cm_ec *ec, size_t len, const uint8_t *const *data,
                  uint8_t *const *parity);

/*
 * chunks[k+m]: present[i] != 0 marks chunks[i] as holding valid bytes; every
 * missing chunk whose chunks[i] is non-NULL is rebuilt into that buffer
 * (data and parity alike). Needs at least k present: else CM_E_UNAVAIL.
 */
int cm_ec_decode(const struct cm_ec *ec, size_t len, uint8_t *const *chunks,
                 const uint8_t *present);

/* CRC-32 as in zlib and gzip (IEEE, reflected), chainable: start with crc = 0. */
uint32_t cm_crc32(uint32_t crc, const void *buf, size_t len);
/* CRC32C (Castagnoli), chainable: start with crc = 0. */
uint32_t cm_crc32c(uint32_t crc, const void *buf, size_t len);
/* CRC64 (ECMA, reflected), chainable: start with crc = 0. Used for ETags. */
uint64_t cm_crc64(uint64_t crc, const void *buf, size_t len);

#endif
