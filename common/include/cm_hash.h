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

/* ---- keyed primitives: HMAC-SHA256, AES-256-GCM, random bytes ---- */

/* HMAC-SHA256 (RFC 2104) of data under key (any length). */
void cm_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, uint8_t out[32]);
/* in[n] as lowercase hex into out[2n+1] (NUL-terminated). */
void cm_hex(const void *in, size_t n, char *out);
/* n cryptographically random bytes into buf: 0 or -errno. */
int cm_random_bytes(void *buf, size_t n);

#define CM_AEAD_KEY_LEN 32
#define CM_AEAD_NONCE_LEN 12
#define CM_AEAD_TAG_LEN 16
/*
 * AES-256-GCM. Seal encrypts pt[len] into ct[len] (the same buffer is
 * fine) and authenticates it with aad[aadlen]; a (key, nonce) pair must
 * never seal twice. Open reverses it: 0, or CM_E_CRC when the tag does not
 * match (another key, nonce or aad, or altered bytes), pt then zeroed.
 * -ENOMEM or CM_E_BADARG (over 2 GiB) otherwise. Any thread.
 */
int cm_aead_seal(const uint8_t key[CM_AEAD_KEY_LEN], const uint8_t nonce[CM_AEAD_NONCE_LEN],
                 const void *aad, size_t aadlen, const void *pt, size_t len, void *ct,
                 uint8_t tag[CM_AEAD_TAG_LEN]);
int cm_aead_open(const uint8_t key[CM_AEAD_KEY_LEN], const uint8_t nonce[CM_AEAD_NONCE_LEN],
                 const void *aad, size_t aadlen, const void *ct, size_t len,
                 const uint8_t tag[CM_AEAD_TAG_LEN], void *pt);

#endif
