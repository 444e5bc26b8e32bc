/*
 * gw_s3_route.h - the pure parsers of the S3 front door's requests
 * (private to gateway/): which operation a request is and on what bucket
 * and key (path-style and virtual-hosted), bucket names, the conditional
 * headers and HTTP dates, x-amz-copy-source, stored headers, numbers.
 *
 *   method + Host + raw path + raw query ──gw_s3_route──▶ op, bucket,
 *   native key "bucket/key"
 *
 * Key mapping: the S3 object `key` in bucket `b` is the native object
 * `b/key`, so every S3 key is a valid native key (gw_parse_key's rules:
 * 1..1024 bytes with the bucket, clean UTF-8, no "." or ".." segment).
 *
 * No I/O, no allocation but through a caller's cm_buf, no clock, no
 * globals: any thread; each is fuzzed (tests/fuzz/fuzz_s3_route.c).
 * Depends on libc, cm_buf, gw_parse, gw_s3_err and gw_s3_sig (query
 * parameters are decoded as SigV4 decodes them: gw_s3_query_get).
 */
#ifndef GW_S3_ROUTE_H
#define GW_S3_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"
#include "gw_parse.h"
#include "gw_s3_err.h"

/* X(name, metrics label) */
#define GW_S3_OPS(X)                                                                               \
    X(LIST_BUCKETS, "list_buckets")                                                                \
    X(CREATE_BUCKET, "create_bucket")                                                              \
    X(DELETE_BUCKET, "delete_bucket")                                                              \
    X(HEAD_BUCKET, "head_bucket")                                                                  \
    X(GET_BUCKET_LOCATION, "get_bucket_location")                                                  \
    X(LIST_OBJECTS, "list_objects")                                                                \
    X(LIST_UPLOADS, "list_multipart_uploads")                                                      \
    X(DELETE_OBJECTS, "delete_objects")                                                            \
    X(PUT_OBJECT, "put_object")                                                                    \
    X(COPY_OBJECT, "copy_object")                                                                  \
    X(GET_OBJECT, "get_object")                                                                    \
    X(HEAD_OBJECT, "head_object")                                                                  \
    X(DELETE_OBJECT, "delete_object")                                                              \
    X(CREATE_MPU, "create_multipart_upload")                                                       \
    X(UPLOAD_PART, "upload_part")                                                                  \
    X(UPLOAD_PART_COPY, "upload_part_copy")                                                        \
    X(COMPLETE_MPU, "complete_multipart_upload")                                                   \
    X(ABORT_MPU, "abort_multipart_upload")                                                         \
    X(LIST_PARTS, "list_parts")

enum gw_s3_op {
    GW_S3_OP_NONE = -1, /* refused before it was known */
#define GW_S3_OP_ENUM_(name, label) GW_S3_OP_##name,
    GW_S3_OPS(GW_S3_OP_ENUM_)
#undef GW_S3_OP_ENUM_
        GW_S3_OP_COUNT
};
extern const char *const gw_s3_op_names[GW_S3_OP_COUNT];

#define GW_S3_BUCKET_MAX 63

/* 1 if name[len] is a bucket name S3 accepts: 3..63 of [a-z0-9.-],
 * beginning and ending with a letter or digit, no "..", ".-" or "-.", not
 * an IPv4 address, not "xn--..." nor "...-s3alias". */
int gw_s3_bucket_name_ok(const char *name, size_t len);

struct gw_s3_target {
    const char *method;
    const char *host;   /* the Host header, NULL if none */
    const char *domain; /* the virtual-hosted base, e.g. "s3.localhost"; NULL: path-style only */
    const char *path;   /* raw, %-encoded, without the query */
    size_t path_len;
    const char *query; /* raw, after '?' */
    size_t query_len;
    int copy_source; /* x-amz-copy-source is set */
};

struct gw_s3_route {
    enum gw_s3_op op;
    int virtual_host;
    char bucket[GW_S3_BUCKET_MAX + 1]; /* "" for the service (ListBuckets) */
    size_t blen;
    char key[GW_KEY_MAX]; /* native key "bucket/key"; klen 0 when no object is named */
    size_t klen;
};

/*
 * The operation of a request and what it names. GW_S3_OK, or:
 *   InvalidBucketName   a malformed bucket in the path or Host
 *   InvalidURI          a key gw_parse_key refuses (*why says how)
 *   KeyTooLongError     "bucket/key" over GW_KEY_MAX bytes
 *   MethodNotAllowed    a method the resource does not take
 *   NotImplemented      a sub-resource we do not serve (?acl, ?tagging...)
 * *why (may be NULL) gets a static reason.
 */
enum gw_s3_err gw_s3_route(const struct gw_s3_target *t, struct gw_s3_route *out, const char **why);

/*
 * A decoded S3 key (as an XML body names it) in bucket as a native key
 * into out (bucket, key). GW_S3_OK, or KeyTooLongError, or
 * InvalidArgument for a key the native API could not name (*why).
 */
enum gw_s3_err gw_s3_native_key(const char *bucket, size_t blen, const char *key, size_t klen,
                                struct gw_s3_route *out, const char **why);

/* A decimal number 0..max, digits only: 0, or -1. */
int gw_s3_parse_uint(const char *s, uint64_t max, uint64_t *out);

/* An HTTP date (IMF-fixdate, RFC 850 or asctime) to unix seconds: 0, or -1. */
int gw_s3_http_date(const char *s, int64_t *out);
/* Unix seconds as IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"). */
void gw_s3_http_date_fmt(int64_t t, char out[32]);

/* 1 if etag (quoted, as in the ETag header) is in the If-Match or
 * If-None-Match list (entity tags, weak or strong, or "*"). */
int gw_s3_etag_list_match(const char *list, const char *etag);

enum gw_s3_cond {
    GW_S3_COND_OK,
    GW_S3_COND_NOT_MODIFIED, /* 304 */
    GW_S3_COND_FAILED,       /* 412 PreconditionFailed */
};
struct gw_s3_cond_hdrs {
    const char *if_match, *if_none_match, *if_modified_since, *if_unmodified_since;
};
/*
 * RFC 7232's order as S3 applies it, against a version's ETag (quoted) and
 * Last-Modified (unix seconds): If-Match (else If-Unmodified-Since) may
 * fail; then If-None-Match (else If-Modified-Since) gives 304 on a GET or
 * HEAD. copy: x-amz-copy-source-if-*, where every failure is 412.
 * Unparsable dates are ignored.
 */
enum gw_s3_cond gw_s3_conditions(const struct gw_s3_cond_hdrs *h, const char *etag, int64_t mtime_s,
                                 int copy);

/*
 * x-amz-copy-source: "[/]bucket/key", %-encoded, optionally followed by
 * "?versionId=null" (the only version there is). out gets the source's
 * bucket and native key. GW_S3_OK, or InvalidArgument, InvalidBucketName
 * or KeyTooLongError with *why.
 */
enum gw_s3_err gw_s3_copy_source(const char *hdr, struct gw_s3_route *out, const char **why);

/*
 * The response headers an object keeps, as "name\0value\0" pairs in blob:
 * Content-Type, Content-Encoding, Content-Disposition, Content-Language,
 * Cache-Control, Expires and every x-amz-meta-* (names lowercased);
 * Content-Encoding without its aws-chunked token (the request's framing,
 * dropped as S3 drops it; nothing kept when nothing else is left). Call
 * for each request header; others are ignored. GW_S3_OK, or
 * MetadataTooLarge (user metadata over 2 KB, or the blob over
 * GW_S3_HDRS_MAX), InvalidArgument (a value with a control character).
 */
#define GW_S3_META_MAX 2048
#define GW_S3_HDRS_MAX 4096
enum gw_s3_err gw_s3_hdrs_add(struct cm_buf *blob, size_t *meta_bytes, const char *name,
                              const char *value);

#endif
