/*
 * gw_s3_xml.h - the S3 XML the front door speaks (private to gateway/):
 * a writer for its responses and errors, and a parser for the two request
 * bodies it acts on (CompleteMultipartUpload, Delete).
 *
 * Writer: appends to a cm_buf; every string is escaped (& < > " ' and the
 * control characters), times are ISO 8601 UTC with milliseconds as S3
 * writes them. With url_encode (the request's encoding-type=url, which
 * aws-cli always asks for when listing) the key-like fields are
 * percent-encoded as S3 does, so that any key survives XML 1.0.
 *
 * Parser: tolerant of whitespace, comments, processing instructions, CDATA,
 * namespaces (prefixes and xmlns are ignored: elements match by local
 * name) and entity and character references; refuses DTDs (no entity
 * expansion), bytes XML forbids, unbalanced tags, and documents over
 * GW_S3_XML_BODY_MAX bytes, GW_S3_XML_DEPTH_MAX deep or with more elements
 * than the operation allows. Unknown elements are skipped.
 *
 * Pure; any thread; strings are borrowed for the call unless said.
 */
#ifndef GW_S3_XML_H
#define GW_S3_XML_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"
#include "gw_s3_err.h"

#define GW_S3_XML_NS "http://s3.amazonaws.com/doc/2006-03-01/"
#define GW_S3_XML_BODY_MAX (4u << 20) /* a request body the parser accepts */
#define GW_S3_XML_DEPTH_MAX 16
#define GW_S3_MAX_PARTS 10000 /* parts of a multipart upload */
#define GW_S3_MAX_DELETE 1000 /* keys of one DeleteObjects */

/* ---- writer primitives ---- */

/* The XML declaration and <root xmlns="GW_S3_XML_NS"> (no xmlns if ns is 0). */
void gw_s3_xml_begin(struct cm_buf *b, const char *root, int ns);
void gw_s3_xml_open(struct cm_buf *b, const char *name);  /* <name> */
void gw_s3_xml_close(struct cm_buf *b, const char *name); /* </name> */
/* <name>escaped value</name>; a NULL value writes nothing. */
void gw_s3_xml_text(struct cm_buf *b, const char *name, const char *value);
/* Likewise, percent-encoded first when url_encode. */
void gw_s3_xml_key(struct cm_buf *b, const char *name, const char *value, int url_encode);
void gw_s3_xml_u64(struct cm_buf *b, const char *name, uint64_t v);
void gw_s3_xml_bool(struct cm_buf *b, const char *name, int v);
/* <name>2009-10-12T17:50:30.000Z</name> from unix milliseconds. */
void gw_s3_xml_time(struct cm_buf *b, const char *name, int64_t unix_ms);
/* s[len] escaped for element content or an attribute. */
void gw_s3_xml_escape(struct cm_buf *b, const char *s, size_t len);

/* ---- responses ---- */

struct gw_s3_xml_field {
    const char *name, *value;
};

/*
 * <Error><Code/><Message/>[<Resource/>]<RequestId/>[extra...]</Error>: the
 * code's text and default message come from gw_s3_err.h (message NULL);
 * resource and request_id may be NULL. extra adds elements S3 adds for some
 * codes (BucketName, Key, StringToSign, CanonicalRequest, ...).
 */
void gw_s3_xml_error(struct cm_buf *b, enum gw_s3_err code, const char *message,
                     const char *resource, const char *request_id,
                     const struct gw_s3_xml_field *extra, size_t nextra);

struct gw_s3_xml_owner {
    const char *id, *display_name;
};

struct gw_s3_xml_bucket {
    const char *name;
    int64_t created_ms;
};
/* ListAllMyBucketsResult (GET /). */
void gw_s3_xml_list_buckets(struct cm_buf *b, const struct gw_s3_xml_owner *owner,
                            const struct gw_s3_xml_bucket *v, size_t n);

struct gw_s3_xml_object {
    const char *key;
    int64_t mtime_ms;
    const char *etag; /* quoted, as in the ETag header */
    uint64_t size;
    const char *storage_class; /* NULL: STANDARD */
};

/* ListBucketResult, v1 (GET /bucket) or v2 (list-type=2). */
struct gw_s3_xml_list {
    int v2;
    const char *bucket;
    const char *prefix;             /* "" when absent */
    const char *delimiter;          /* NULL when absent */
    const char *marker;             /* v1: "" when absent */
    const char *next_marker;        /* v1: only with a delimiter and a truncated page, else NULL */
    const char *start_after;        /* v2, NULL when absent */
    const char *continuation_token; /* v2, NULL when absent */
    const char *next_continuation_token; /* v2, NULL unless truncated */
    unsigned max_keys;
    int truncated;
    int url_encode;
    const struct gw_s3_xml_owner *owner; /* NULL: no Owner (v1 always has one in S3) */
    const struct gw_s3_xml_object *objects;
    size_t nobjects;
    const char *const *prefixes; /* CommonPrefixes */
    size_t nprefixes;
};
void gw_s3_xml_list_objects(struct cm_buf *b, const struct gw_s3_xml_list *l);

void gw_s3_xml_initiate_mpu(struct cm_buf *b, const char *bucket, const char *key,
                            const char *upload_id);
void gw_s3_xml_complete_mpu(struct cm_buf *b, const char *location, const char *bucket,
                            const char *key, const char *etag);

struct gw_s3_xml_part {
    unsigned number;
    int64_t mtime_ms;
    const char *etag;
    uint64_t size;
};
struct gw_s3_xml_parts {
    const char *bucket, *key, *upload_id;
    const struct gw_s3_xml_owner *owner; /* also the Initiator; may be NULL */
    unsigned part_marker, next_part_marker, max_parts;
    int truncated;
    const struct gw_s3_xml_part *parts;
    size_t nparts;
};
/* ListPartsResult */
void gw_s3_xml_list_parts(struct cm_buf *b, const struct gw_s3_xml_parts *p);

struct gw_s3_xml_upload {
    const char *key, *upload_id;
    int64_t initiated_ms;
};
struct gw_s3_xml_uploads {
    const char *bucket;
    const char *key_marker, *upload_id_marker;           /* "" when absent */
    const char *next_key_marker, *next_upload_id_marker; /* NULL unless truncated */
    const char *prefix;                                  /* "" when absent */
    const char *delimiter;                               /* NULL when absent */
    unsigned max_uploads;
    int truncated;
    int url_encode;
    const struct gw_s3_xml_owner *owner; /* may be NULL */
    const struct gw_s3_xml_upload *uploads;
    size_t nuploads;
    const char *const *prefixes;
    size_t nprefixes;
};
/* ListMultipartUploadsResult */
void gw_s3_xml_list_uploads(struct cm_buf *b, const struct gw_s3_xml_uploads *u);

/* CopyObjectResult, or CopyPartResult for UploadPartCopy. */
void gw_s3_xml_copy_result(struct cm_buf *b, int part, const char *etag, int64_t mtime_ms);

struct gw_s3_xml_deleted {
    const char *key;
    enum gw_s3_err err;  /* GW_S3_OK: deleted */
    const char *message; /* NULL: the code's default */
};
/* DeleteResult: quiet leaves out the keys that were deleted. */
void gw_s3_xml_delete_result(struct cm_buf *b, const struct gw_s3_xml_deleted *v, size_t n,
                             int quiet);

/* LocationConstraint (GetBucketLocation): empty for us-east-1, as S3. */
void gw_s3_xml_location(struct cm_buf *b, const char *region);

/* ---- request bodies ---- */

struct gw_s3_xml_cpart {
    unsigned number;  /* 1..GW_S3_MAX_PARTS */
    const char *etag; /* trimmed, surrounding quotes removed */
};
struct gw_s3_xml_complete {
    struct gw_s3_xml_cpart *parts; /* strictly ascending numbers */
    size_t nparts;                 /* >= 1 */
    char *mem_;
};

/*
 * CompleteMultipartUpload's body: <CompleteMultipartUpload><Part>
 * <PartNumber>N</PartNumber><ETag>"..."</ETag></Part>...  GW_S3_OK and *out
 * (strings owned by out, until gw_s3_xml_complete_free), or MalformedXML,
 * InvalidPartOrder (numbers not strictly ascending), MaxMessageLengthExceeded;
 * *why (may be NULL) gets a static reason. out is always safe to free.
 */
enum gw_s3_err gw_s3_xml_parse_complete(const char *body, size_t len,
                                        struct gw_s3_xml_complete *out, const char **why);
void gw_s3_xml_complete_free(struct gw_s3_xml_complete *c);

struct gw_s3_xml_dobj {
    const char *key; /* as sent, not trimmed, not empty */
    size_t key_len;
    const char *version_id; /* NULL when absent */
};
struct gw_s3_xml_delete {
    int quiet;
    struct gw_s3_xml_dobj *objects;
    size_t nobjects; /* 1..GW_S3_MAX_DELETE */
    char *mem_;
};

/* DeleteObjects' body: <Delete>[<Quiet>true</Quiet>]<Object><Key>k</Key>
 * [<VersionId>v</VersionId>]</Object>...  As gw_s3_xml_parse_complete. */
enum gw_s3_err gw_s3_xml_parse_delete(const char *body, size_t len, struct gw_s3_xml_delete *out,
                                      const char **why);
void gw_s3_xml_delete_free(struct gw_s3_xml_delete *d);

#endif
