/*
 * gw_s3_err.h - the S3 error codes the S3 front door answers with (private
 * to gateway/): code, HTTP status and default message in one X-macro list,
 * so the enum and the table never drift apart.
 *
 * The S3 modules (gw_s3_sig, gw_s3_chunked, gw_s3_cksum, gw_s3_xml) return
 * these rather than the CM_E_* space because the client sees the exact code:
 * aws-cli, boto3 and rclone branch on it (retry on SlowDown and
 * RequestTimeTooSkewed, fix the clock, re-sign...). Pure; any thread.
 */
#ifndef GW_S3_ERR_H
#define GW_S3_ERR_H

/* X(name, code, http status, default message) */
#define GW_S3_ERRORS(X)                                                                            \
    X(ACCESS_DENIED, "AccessDenied", 403, "Access Denied")                                         \
    X(AUTH_HEADER_MALFORMED, "AuthorizationHeaderMalformed", 400,                                  \
      "The authorization header is malformed.")                                                    \
    X(AUTH_QUERY_ERROR, "AuthorizationQueryParametersError", 400,                                  \
      "The query-string authentication parameters are malformed.")                                 \
    X(BAD_DIGEST, "BadDigest", 400,                                                                \
      "The Content-MD5 or checksum value that you specified did not match what the server "        \
      "received.")                                                                                 \
    X(BUCKET_EXISTS, "BucketAlreadyExists", 409,                                                   \
      "The requested bucket name is not available. Please select a different name and try "        \
      "again.")                                                                                    \
    X(BUCKET_OWNED, "BucketAlreadyOwnedByYou", 409,                                                \
      "Your previous request to create the named bucket succeeded and you already own it.")        \
    X(BUCKET_NOT_EMPTY, "BucketNotEmpty", 409, "The bucket you tried to delete is not empty.")     \
    X(ENTITY_TOO_LARGE, "EntityTooLarge", 400,                                                     \
      "Your proposed upload exceeds the maximum allowed size.")                                    \
    X(ENTITY_TOO_SMALL, "EntityTooSmall", 400,                                                     \
      "Your proposed upload is smaller than the minimum allowed object size.")                     \
    X(INCOMPLETE_BODY, "IncompleteBody", 400,                                                      \
      "You did not provide the number of bytes specified by the Content-Length HTTP header.")      \
    X(INTERNAL, "InternalError", 500, "We encountered an internal error. Please try again.")       \
    X(INVALID_ACCESS_KEY, "InvalidAccessKeyId", 403,                                               \
      "The AWS Access Key Id you provided does not exist in our records.")                         \
    X(INVALID_ARGUMENT, "InvalidArgument", 400, "Invalid Argument")                                \
    X(INVALID_BUCKET_NAME, "InvalidBucketName", 400, "The specified bucket is not valid.")         \
    X(INVALID_DIGEST, "InvalidDigest", 400,                                                        \
      "The Content-MD5 or checksum value that you specified is not valid.")                        \
    X(INVALID_PART, "InvalidPart", 400,                                                            \
      "One or more of the specified parts could not be found. The part may not have been "         \
      "uploaded, or the specified entity tag may not match the part's entity tag.")                \
    X(INVALID_PART_NUMBER, "InvalidPartNumber", 416,                                               \
      "The requested partnumber is not satisfiable")                                               \
    X(INVALID_PART_ORDER, "InvalidPartOrder", 400,                                                 \
      "The list of parts was not in ascending order. Parts must be ordered by part number.")       \
    X(INVALID_RANGE, "InvalidRange", 416, "The requested range is not satisfiable")                \
    X(INVALID_REQUEST, "InvalidRequest", 400, "Invalid Request")                                   \
    X(INVALID_URI, "InvalidURI", 400, "Couldn't parse the specified URI.")                         \
    X(KEY_TOO_LONG, "KeyTooLongError", 400, "Your key is too long.")                               \
    X(MALFORMED_TRAILER, "MalformedTrailerError", 400,                                             \
      "The request contained trailing data that was not well-formed or did not conform to our "    \
      "published schema.")                                                                         \
    X(MALFORMED_XML, "MalformedXML", 400,                                                          \
      "The XML you provided was not well-formed or did not validate against our published "        \
      "schema.")                                                                                   \
    X(MAX_MESSAGE_LENGTH, "MaxMessageLengthExceeded", 400, "Your request was too big.")            \
    X(METADATA_TOO_LARGE, "MetadataTooLarge", 400,                                                 \
      "Your metadata headers exceed the maximum allowed metadata size.")                           \
    X(METHOD_NOT_ALLOWED, "MethodNotAllowed", 405,                                                 \
      "The specified method is not allowed against this resource.")                                \
    X(MISSING_CONTENT_LENGTH, "MissingContentLength", 411,                                         \
      "You must provide the Content-Length HTTP header.")                                          \
    X(NO_SUCH_BUCKET, "NoSuchBucket", 404, "The specified bucket does not exist")                  \
    X(NO_SUCH_KEY, "NoSuchKey", 404, "The specified key does not exist.")                          \
    X(NO_SUCH_UPLOAD, "NoSuchUpload", 404,                                                         \
      "The specified multipart upload does not exist. The upload ID may be invalid, or the "       \
      "upload may have been aborted or completed.")                                                \
    X(NOT_IMPLEMENTED, "NotImplemented", 501,                                                      \
      "A header you provided implies functionality that is not implemented.")                      \
    X(NOT_MODIFIED, "NotModified", 304, "Not Modified")                                            \
    X(PRECONDITION_FAILED, "PreconditionFailed", 412,                                              \
      "At least one of the pre-conditions you specified did not hold")                             \
    X(REQUEST_TIMEOUT, "RequestTimeout", 400,                                                      \
      "Your socket connection to the server was not read from or written to within the timeout "   \
      "period.")                                                                                   \
    X(TIME_SKEWED, "RequestTimeTooSkewed", 403,                                                    \
      "The difference between the request time and the current time is too large.")                \
    X(SERVICE_UNAVAILABLE, "ServiceUnavailable", 503, "Please reduce your request rate.")          \
    X(SIGNATURE_MISMATCH, "SignatureDoesNotMatch", 403,                                            \
      "The request signature we calculated does not match the signature you provided. Check "      \
      "your key and signing method.")                                                              \
    X(SLOW_DOWN, "SlowDown", 503, "Please reduce your request rate.")                              \
    X(TOO_MANY_BUCKETS, "TooManyBuckets", 400,                                                     \
      "You have attempted to create more buckets than allowed.")                                   \
    X(SHA256_MISMATCH, "XAmzContentSHA256Mismatch", 400,                                           \
      "The provided 'x-amz-content-sha256' header does not match what was computed.")

enum gw_s3_err {
    GW_S3_OK = 0,
#define GW_S3_ERR_ENUM_(name, code, status, msg) GW_S3_E_##name,
    GW_S3_ERRORS(GW_S3_ERR_ENUM_)
#undef GW_S3_ERR_ENUM_
        GW_S3_E_COUNT_
};

/* "NoSuchKey"...; "" for GW_S3_OK and out-of-range values. Static strings. */
const char *gw_s3_err_code(enum gw_s3_err e);
/* The HTTP status: 200 for GW_S3_OK, 500 for out-of-range values. */
int gw_s3_err_status(enum gw_s3_err e);
/* The default one-line message; static. */
const char *gw_s3_err_message(enum gw_s3_err e);

#endif
