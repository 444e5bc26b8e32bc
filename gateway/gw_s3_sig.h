/*
 * gw_s3_sig.h - AWS Signature Version 4 verification for the S3 front door
 * (private to gateway/): the Authorization header and presigned URLs.
 *
 *   request view ──▶ parse Authorization / X-Amz-* query ──▶ time checks
 *     ──▶ secret(access key), or its date key ──▶ canonical request ──▶ string to sign
 *     ──▶ HMAC with the signing key (cached per key, date, region)
 *     ──▶ constant-time compare ──▶ OK + struct gw_s3_auth
 *
 * What S3 signs, and so what is rebuilt here: the method; the path
 * percent-decoded then encoded once as AWS's UriEncode does ('/' kept, no
 * dot-segment or slash normalisation, no double encoding); the query
 * parameters decoded, re-encoded, sorted by name then value; the headers
 * named in SignedHeaders, values trimmed and inner runs of spaces/tabs
 * collapsed; the SignedHeaders list; and x-amz-content-sha256 (or
 * UNSIGNED-PAYLOAD for a presigned URL). If the path as sent differs from
 * its canonical encoding (a client that encodes differently), the path as
 * sent is tried as well: both decode to the same key.
 *
 * Pure apart from the caller's callbacks: no I/O, no clock (now is passed
 * in). gw_s3_verify may run on any thread at once; a key cache is shared
 * and locks inside. Depends on libc, cm_hash.h (OpenSSL) and cm_buf.h.
 */
#ifndef GW_S3_SIG_H
#define GW_S3_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"
#include "gw_s3_err.h"

#define GW_S3_AKID_MAX 128   /* access key id bytes */
#define GW_S3_SECRET_MAX 128 /* secret access key bytes */
#define GW_S3_REGION_MAX 64  /* region name bytes */
#define GW_S3_SCOPE_MAX                                                                            \
    (8 + 1 + GW_S3_REGION_MAX + 1 + 2 + 1 + 12) /* date/region/s3/aws4_request */
#define GW_S3_SIGNED_HEADERS_MAX 2048           /* the SignedHeaders list */
#define GW_S3_SKEW_MAX 900                      /* seconds between the request's time and ours */
#define GW_S3_PRESIGN_MAX 604800                /* the longest X-Amz-Expires: 7 days */
#define GW_S3_QUERY_PARAMS_MAX 128              /* query parameters in a signed request */

/*
 * A request header by lowercase name: its value (NUL-terminated, valid until
 * gw_s3_verify returns), or NULL when absent. Header names are matched
 * case-insensitively by the HTTP layer (cm_http_header fits as is).
 */
typedef const char *(*gw_s3_hdr_fn)(void *arg, const char *lname);

/* The request as received. Everything is borrowed for the call only. */
struct gw_s3_req {
    const char *method; /* "GET", "PUT"... as on the request line */
    const char *path;   /* raw, still percent-encoded, without the query */
    size_t path_len;
    const char *query; /* raw, after '?' (NULL or "" when there is none) */
    size_t query_len;
    gw_s3_hdr_fn hdr;
    void *hdr_arg;
};

/*
 * The secret of access key akid, copied NUL-terminated into secret[cap]
 * (cap = GW_S3_SECRET_MAX + 1): 0, or CM_E_NOTFOUND (the client gets
 * InvalidAccessKeyId); any other negative value gives InternalError. Called
 * at most once per gw_s3_verify, on the caller's thread.
 */
typedef int (*gw_s3_secret_fn)(void *arg, const char *akid, char *secret, size_t cap);

/*
 * Or, where only the controller holds secrets: the date key of access key
 * akid for the credential date (YYYYMMDD), kDate = HMAC-SHA256("AWS4" +
 * secret, date), copied into kdate: 0; CM_E_NOTFOUND (InvalidAccessKeyId);
 * -ERANGE when the key has none for that date (AccessDenied); any other
 * negative value gives InternalError. Called at most once per gw_s3_verify,
 * on the caller's thread.
 */
typedef int (*gw_s3_date_key_fn)(void *arg, const char *akid, const char *date, uint8_t kdate[32]);

struct gw_s3_keycache;

struct gw_s3_verify_opts {
    /* Exactly one of secret and date_key. */
    gw_s3_secret_fn secret;
    void *secret_arg;
    gw_s3_date_key_fn date_key;
    void *date_key_arg;
    const char *region;           /* the scope's region must be this; NULL accepts any */
    int64_t now;                  /* unix seconds */
    struct gw_s3_keycache *cache; /* shared, may be NULL (derive the key every time) */
};

/* What the body is, per x-amz-content-sha256. */
enum gw_s3_payload {
    GW_S3_PAYLOAD_SIGNED,            /* hex SHA-256: the body must hash to auth.payload_sha256 */
    GW_S3_PAYLOAD_UNSIGNED,          /* UNSIGNED-PAYLOAD (also every presigned URL) */
    GW_S3_PAYLOAD_STREAMING,         /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD: signed aws-chunked */
    GW_S3_PAYLOAD_STREAMING_TRAILER, /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    GW_S3_PAYLOAD_UNSIGNED_TRAILER,  /* STREAMING-UNSIGNED-PAYLOAD-TRAILER: aws-chunked, no sigs */
};

/* A verified request. Plain data: copy it freely. */
struct gw_s3_auth {
    char access_key[GW_S3_AKID_MAX + 1];
    char region[GW_S3_REGION_MAX + 1];
    char scope[GW_S3_SCOPE_MAX + 1]; /* YYYYMMDD/region/s3/aws4_request */
    char amz_date[17];               /* YYYYMMDDTHHMMSSZ, the signed request time */
    int64_t request_time;            /* the same, unix seconds */
    int presigned;                   /* query-string authentication */
    int64_t expires;                 /* presigned: the last valid second; else 0 */
    /* The request signature: the seed of aws-chunked chunk signatures. */
    char signature[65];
    uint8_t signing_key[32];
    enum gw_s3_payload payload;
    uint8_t payload_sha256[32];                        /* GW_S3_PAYLOAD_SIGNED */
    char signed_headers[GW_S3_SIGNED_HEADERS_MAX + 1]; /* "host;x-amz-date;..." */
};

/*
 * Why a request was refused, for the error body and the log (all optional).
 * AWS returns the canonical request and the string to sign with
 * SignatureDoesNotMatch so that a client author can find the difference;
 * they hold nothing secret. Init with gw_s3_sig_detail_init, release with
 * gw_s3_sig_detail_fini.
 */
struct gw_s3_sig_detail {
    const char *why;         /* static one-line reason; NULL = the code's default message */
    struct cm_buf canonical; /* the canonical request, once one was built */
    struct cm_buf to_sign;   /* the string to sign, likewise */
    char access_key[GW_S3_AKID_MAX + 1]; /* when parsed ("" otherwise) */
};
void gw_s3_sig_detail_init(struct gw_s3_sig_detail *d);
void gw_s3_sig_detail_fini(struct gw_s3_sig_detail *d);

/*
 * Verifies the request's SigV4 signature (Authorization header or
 * presigned query). GW_S3_OK and *out filled, or the S3 error to answer:
 *   AccessDenied              no credentials, expired or not-yet-valid
 *                             presigned URL, bad or missing date
 *   InvalidRequest            Signature Version 2, no x-amz-content-sha256,
 *                             a streaming payload on a presigned URL
 *   InvalidArgument           another Authorization scheme, both header and
 *                             query credentials, a bad x-amz-content-sha256
 *   AuthorizationHeaderMalformed / AuthorizationQueryParametersError
 *                             unparsable credentials, scope, SignedHeaders
 *                             (host and, in the header, x-amz-content-sha256
 *                             must be signed), X-Amz-Expires out of 1..7 days
 *   InvalidAccessKeyId        the secret (or date key) callback does not know the key
 *   RequestTimeTooSkewed      header time more than 15 minutes from now
 *   SignatureDoesNotMatch
 * detail may be NULL. The body is not read: the payload mode in *out says
 * what the caller must check (gw_s3_body, gw_s3_chunked).
 */
enum gw_s3_err gw_s3_verify(const struct gw_s3_req *req, const struct gw_s3_verify_opts *opts,
                            struct gw_s3_auth *out, struct gw_s3_sig_detail *detail);

/* 1 if header lname (lowercase) is in the verified request's SignedHeaders.
 * The front door uses it to refuse acting on unsigned x-amz-* headers. */
int gw_s3_header_signed(const struct gw_s3_auth *auth, const char *lname);

/* kSigning = HMAC chain over "AWS4"+secret, date (YYYYMMDD), region, "s3",
 * "aws4_request". */
void gw_s3_signing_key(const char *secret, const char *date, const char *region, uint8_t out[32]);
/* The same chain from kDate on: kRegion, kService, kSigning. */
void gw_s3_signing_key_from_date(const uint8_t kdate[32], const char *region, uint8_t out[32]);

/*
 * The canonical forms S3 signs (exposed for tests and the fuzz targets):
 * appends to b the canonical URI of a raw path (empty -> "/"), and the
 * canonical query string of a raw query, leaving out X-Amz-Signature when
 * presigned. The query form fails with CM_E_TOOBIG past
 * GW_S3_QUERY_PARAMS_MAX parameters (b then holds a prefix).
 */
void gw_s3_canonical_uri(struct cm_buf *b, const char *path, size_t len);
int gw_s3_canonical_query(struct cm_buf *b, const char *query, size_t len, int presigned);

/*
 * The first query parameter named name (decoded as SigV4 decodes: %XX,
 * '+' is a plus) in q[len], copied decoded into out[cap] NUL-terminated:
 * 1, 0 when absent, -1 when longer than cap - 1 or holding a NUL.
 */
int gw_s3_query_get(const char *q, size_t len, const char *name, char *out, size_t cap);

/* Exactly 2 * n hex digits (either case) s[len] into out[n]: 0, or -1. */
int gw_s3_unhex(const char *s, size_t len, uint8_t *out, size_t n);

/* "YYYYMMDDTHHMMSSZ" -> unix seconds: 0, or -1 if malformed. */
int gw_s3_parse_amz_date(const char *s, int64_t *out);

/* Shared by gw_s3_sig.c and gw_s3_canon.c: an RFC 3986 unreserved byte
 * (what AWS's UriEncode leaves alone); n decimal digits at s into *out
 * (0, or -1 on anything else); a Date header (an HTTP date) as the ISO
 * 8601 basic form amz[17] the string to sign has (0, or -1). */
int gw_s3_unreserved(unsigned char c);
int gw_s3_digits(const char *s, int n, int *out);
int gw_s3_amz_of_http_date(const char *s, char amz[17]);

/*
 * A cache of signing keys per (access key, date, region): the HMACs of
 * the derivation are skipped for a client's second and later requests of
 * the day. An entry also holds the secret (or date key) it was derived
 * from, so a rotated secret misses. Shared by any number of threads (one mutex).
 * slots: 1..65536 (rounded up to a power of two). Caller owns the cache.
 */
struct gw_s3_keycache *gw_s3_keycache_create(unsigned slots);
void gw_s3_keycache_destroy(struct gw_s3_keycache *c); /* NULL is a no-op */

#endif
