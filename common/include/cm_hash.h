/* cm_hash.h - SHA-256 and randomness (the OpenSSL libcrypto adapter). */
#ifndef CM_HASH_H
#define CM_HASH_H

#include <stddef.h>
#include <stdint.h>

/* out: 64 hex chars + NUL. */
void cm_sha256_hex(const void *data, size_t len, char out[65]);
/* Cryptographically random bytes as lowercase hex: nbytes*2 chars + NUL. */
int cm_random_hex(char *out, size_t nbytes);
/* Unpredictable ids and picks, not secrets: a per-thread generator seeded
 * from the kernel once. */
uint64_t cm_random_u64(void);
/* A fast non-cryptographic 64-bit hash (for partitions, rendezvous). */
uint64_t cm_hash64(const void *data, size_t len, uint64_t seed);

#endif
