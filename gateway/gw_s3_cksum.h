/*
 * gw_s3_cksum.h - what an S3 request body must match, and S3 ETags
 * (private to gateway/).
 *
 *   gw_s3_ck      one "flexible checksum" (x-amz-checksum-crc32, -crc32c,
 *                 -crc64nvme, -sha1, -sha256): streaming, base64 values as
 *                 S3 sends and expects them.
 *   gw_s3_body    a request body's checks in one pass: the signed payload's
 *                 SHA-256 (x-amz-content-sha256), Content-MD5, an
 *                 x-amz-checksum-* header, and the MD5 that makes the ETag.
 *                 For an aws-chunked body it runs on the decoded bytes
 *                 (gw_s3_chunked checks the trailer checksum itself).
 *   ETags         "<md5 hex>" of a single PUT; "<md5 of the parts' binary
 *                 MD5s>-N" of a multipart upload, both quoted.
 *
 * botocore >= 1.36 (under boto3 1.36 and aws-cli 1.37) sends a CRC32 by
 * default on every upload: over http as an x-amz-checksum-crc32 header
 * with a signed payload, over https as an aws-chunked trailer (seen in
 * unit.gateway.s3_botocore). CRC64NVME is S3's own full-object checksum;
 * clients send it when asked to.
 *
 * Pure: no I/O, no globals. A struct belongs to one thread at a time.
 */
#ifndef GW_S3_CKSUM_H
#define GW_S3_CKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "gw_s3_err.h"
#include "gw_s3_sig.h"

struct cm_digest;

enum gw_s3_ck_alg {
    GW_S3_CK_NONE,
    GW_S3_CK_CRC32,
    GW_S3_CK_CRC32C,
    GW_S3_CK_CRC64NVME,
    GW_S3_CK_SHA1,
    GW_S3_CK_SHA256,
};
#define GW_S3_CK_B64_MAX 45 /* base64 of the longest (SHA-256) + NUL */

/* "CRC32", "crc32c"... (x-amz-checksum-algorithm, x-amz-sdk-checksum-algorithm)
 * in any case; GW_S3_CK_NONE if unknown. */
enum gw_s3_ck_alg gw_s3_ck_alg_parse(const char *name, size_t len);
/* "x-amz-checksum-crc32"... in any case (a header or trailer name). */
enum gw_s3_ck_alg gw_s3_ck_alg_of_header(const char *name, size_t len);
const char *gw_s3_ck_alg_name(enum gw_s3_ck_alg alg);    /* "CRC32"; "" for NONE */
const char *gw_s3_ck_header_name(enum gw_s3_ck_alg alg); /* "x-amz-checksum-crc32" */

struct gw_s3_ck {
    enum gw_s3_ck_alg alg;
    uint64_t crc;
    struct cm_digest *d; /* the SHA algorithms */
    size_t value_len;    /* 0 until gw_s3_ck_value */
    char value[GW_S3_CK_B64_MAX];
};
/* GW_S3_CK_NONE is valid: updates do nothing and the value is "". */
void gw_s3_ck_init(struct gw_s3_ck *ck, enum gw_s3_ck_alg alg);
void gw_s3_ck_fini(struct gw_s3_ck *ck);
void gw_s3_ck_update(struct gw_s3_ck *ck, const void *data, size_t len);
/* The base64 value, after the last update (later updates are ignored); its
 * length. */
size_t gw_s3_ck_value(struct gw_s3_ck *ck, char out[GW_S3_CK_B64_MAX]);
/* 1 if the client's base64 value b64[len] equals ours; malformed base64 or
 * the wrong length for the algorithm is 0. */
int gw_s3_ck_matches(struct gw_s3_ck *ck, const char *b64, size_t len);

/* Standard base64 with padding: out needs 4 * ((n + 2) / 3) + 1. Returns
 * the length written (NUL not counted). */
size_t gw_s3_b64_encode(const void *in, size_t n, char *out);
/* Strict decoding (standard alphabet, padding required, no whitespace):
 * the decoded length, or -1 if malformed or longer than cap. */
long gw_s3_b64_decode(const char *in, size_t len, uint8_t *out, size_t cap);

/*
 * CRC-64/XZ (cm_crc64, the native ETag) of A followed by B, from the CRCs
 * of A and B and B's length: a multipart object's native ETag without
 * reading its bytes again.
 */
uint64_t gw_s3_crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

#define GW_S3_ETAG_MAX 48 /* "\"" 32 hex "-" 5 digits "\"" NUL, rounded up */
/* "\"<32 hex>\"" */
void gw_s3_etag(const uint8_t md5[16], char out[GW_S3_ETAG_MAX]);
/* md5s: nparts * 16 bytes, the parts' MD5s in part order (nparts >= 1). */
void gw_s3_etag_multipart(const uint8_t *md5s, size_t nparts, char out[GW_S3_ETAG_MAX]);
/* The MD5 in a part's ETag, quoted or not, any case: 0, or -1. */
int gw_s3_etag_md5(const char *etag, size_t len, uint8_t md5[16]);

struct gw_s3_body {
    struct cm_digest *md5;
    struct cm_digest *sha256; /* NULL unless the payload is signed */
    uint8_t want_sha256[32];
    int want_md5_set;
    uint8_t want_md5[16];
    struct gw_s3_ck ck; /* alg NONE when no x-amz-checksum-* header */
    char want_ck[GW_S3_CK_B64_MAX];
    size_t want_ck_len;
    uint64_t len;
};

/*
 * Reads what the body must match from the request: the verified auth (its
 * payload SHA-256 when GW_S3_PAYLOAD_SIGNED; may be NULL), Content-MD5 and
 * at most one x-amz-checksum-* header (through hdr). GW_S3_OK, or:
 *   InvalidDigest    Content-MD5 is not the base64 of 16 bytes
 *   InvalidRequest   a checksum header is malformed, or several are set
 * *why (may be NULL) gets a static reason. b must be released with
 * gw_s3_body_fini either way.
 */
enum gw_s3_err gw_s3_body_init(struct gw_s3_body *b, const struct gw_s3_auth *auth,
                               gw_s3_hdr_fn hdr, void *hdr_arg, const char **why);
void gw_s3_body_update(struct gw_s3_body *b, const void *data, size_t len);
/*
 * After the last byte: GW_S3_OK with the body's MD5 (md5 may be NULL) and
 * its ETag, or XAmzContentSHA256Mismatch, or BadDigest (Content-MD5 or the
 * checksum header).
 */
enum gw_s3_err gw_s3_body_finish(struct gw_s3_body *b, uint8_t md5[16], char etag[GW_S3_ETAG_MAX],
                                 const char **why);
void gw_s3_body_fini(struct gw_s3_body *b);

#endif
