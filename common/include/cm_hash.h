/*
 * cm_hash.h - digests, HMAC and randomness (the OpenSSL libcrypto adapter),
 * plus the checksums that need no library (XXH64, CRC-64/NVME).
 *
 * Every function may be called from any thread; a struct cm_digest belongs
 * to one thread at a time.
 */
#ifndef CM_HASH_H
#define CM_HASH_H

#include <stddef.h>
#include <stdint.h>

/* out: 64 hex chars + NUL. */
void cm_sha256_hex(const void *data, size_t len, char out[65]);
void cm_sha256(const void *data, size_t len, uint8_t out[32]);
/* HMAC-SHA256 (RFC 2104) of data under key (any length). */
void cm_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, uint8_t out[32]);
/* 1 if a[n] == b[n], else 0, in time that depends on n only (for MACs). */
int cm_ct_equal(const void *a, const void *b, size_t n);
/* in[n] as lowercase hex into out[2n+1] (NUL-terminated). */
void cm_hex(const void *in, size_t n, char *out);

/*
 * Streaming digests. MD5 and SHA-1 are here for the checksums clients send
 * (S3 ETags, x-amz-checksum-sha1), never for anything that must resist an
 * attacker.
 */
enum cm_digest_alg {
    CM_DIGEST_MD5,    /* 16 bytes */
    CM_DIGEST_SHA1,   /* 20 bytes */
    CM_DIGEST_SHA256, /* 32 bytes */
};
#define CM_DIGEST_MAX 32
struct cm_digest;
/* Caller owns the result (aborts on out-of-memory, as every small allocation). */
struct cm_digest *cm_digest_create(enum cm_digest_alg alg);
void cm_digest_destroy(struct cm_digest *d); /* NULL is a no-op */
void cm_digest_update(struct cm_digest *d, const void *data, size_t len);
/* Writes the digest to out, returns its length, and restarts d empty. */
size_t cm_digest_final(struct cm_digest *d, uint8_t out[CM_DIGEST_MAX]);
size_t cm_digest_len(enum cm_digest_alg alg);
/* One-shot: returns the digest length. */
size_t cm_digest_once(enum cm_digest_alg alg, const void *data, size_t len,
                      uint8_t out[CM_DIGEST_MAX]);

/* CRC-64/NVME (the S3 CRC64NVME checksum), chainable: start with crc = 0. */
uint64_t cm_crc64nvme(uint64_t crc, const void *buf, size_t len);
/* Cryptographically random bytes as lowercase hex: nbytes*2 chars + NUL. */
int cm_random_hex(char *out, size_t nbytes);
/* Unpredictable ids and picks, not secrets: a per-thread generator seeded
 * from the kernel once. */
uint64_t cm_random_u64(void);
/* A fast non-cryptographic 64-bit hash (for partitions, rendezvous). */
uint64_t cm_hash64(const void *data, size_t len, uint64_t seed);

/* ---- AES-256-GCM and random bytes (HMAC-SHA256 is above) ---- */

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
