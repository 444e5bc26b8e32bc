/*
 * gw_s3_chunked.h - the aws-chunked body decoder (private to gateway/).
 *
 * A PUT or UploadPart whose x-amz-content-sha256 is one of the STREAMING-*
 * values carries its body in aws-chunked framing (inside whatever HTTP
 * framing the connection uses):
 *
 *   signed     hex-size;chunk-signature=SIG\r\n data \r\n ...
 *              0;chunk-signature=SIG\r\n \r\n
 *   + trailer  ... 0;chunk-signature=SIG\r\n
 *              x-amz-checksum-crc32:BASE64\r\n
 *              x-amz-trailer-signature:SIG\r\n \r\n
 *   unsigned   hex-size\r\n data \r\n ... 0\r\n
 *   trailer    [x-amz-checksum-crc32:BASE64\r\n] \r\n
 *
 * Each chunk signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD\n"
 * date "\n" scope "\n" previous signature "\n" SHA256("") "\n"
 * SHA256(chunk)), chained from the request's seed signature; the trailer
 * signature is HMAC over "AWS4-HMAC-SHA256-TRAILER\n" ... previous
 * signature "\n" SHA256(the trailer lines). The trailer's checksum is
 * checked against the decoded bytes, x-amz-decoded-content-length against
 * their count.
 *
 * Bytes may arrive in pieces of any size. Decoded bytes go to the sink as
 * they arrive, before the signature of their chunk has been checked: the
 * caller must not make the object visible before gw_s3_chunked_finish
 * returns GW_S3_OK. Lines are bounded (GW_S3_CHUNK_LINE_MAX), nothing is
 * buffered beyond one line, and after the first error every call returns
 * that error. One decoder per request, one thread at a time.
 */
#ifndef GW_S3_CHUNKED_H
#define GW_S3_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

#include "gw_s3_cksum.h"
#include "gw_s3_err.h"
#include "gw_s3_sig.h"

#define GW_S3_CHUNK_LINE_MAX 256 /* a chunk header or trailer line, CRLF included */
#define GW_S3_TRAILERS_MAX 8     /* trailer lines */

struct gw_s3_chunked;

/* Receives decoded bytes; anything but GW_S3_OK stops the decoder with
 * that error (e.g. EntityTooLarge, InternalError). */
typedef enum gw_s3_err (*gw_s3_sink_fn)(void *arg, const void *data, size_t len);

/*
 * A decoder for the body of a request verified as auth (copied; its payload
 * must be a STREAMING-* mode, else InvalidRequest). Reads
 * x-amz-decoded-content-length (optional; a number) and x-amz-trailer
 * (one x-amz-checksum-* name) through hdr, during this call only.
 * max_decoded: EntityTooLarge as soon as a chunk would pass it (0: no
 * limit). sink may be NULL (bytes dropped). GW_S3_OK and *out (caller
 * owns), or InvalidRequest with a static reason in *why (may be NULL).
 */
enum gw_s3_err gw_s3_chunked_create(const struct gw_s3_auth *auth, gw_s3_hdr_fn hdr, void *hdr_arg,
                                    uint64_t max_decoded, gw_s3_sink_fn sink, void *sink_arg,
                                    struct gw_s3_chunked **out, const char **why);
void gw_s3_chunked_destroy(struct gw_s3_chunked *c); /* NULL is a no-op */

/*
 * The next len bytes of the body. GW_S3_OK, or the error to answer:
 *   SignatureDoesNotMatch   a chunk or the trailer signature is wrong
 *   IncompleteBody          framing broken (bad size line, missing CRLF,
 *                           a line too long, bytes after the end)
 *   MalformedTrailerError   a trailer line that is malformed, unknown,
 *                           repeated or not the declared one
 *   BadDigest               the trailer checksum does not match the data
 *   EntityTooLarge          past max_decoded
 *   InvalidRequest          more data than x-amz-decoded-content-length
 *   whatever the sink returned
 * *why (may be NULL) gets a static reason.
 */
enum gw_s3_err gw_s3_chunked_feed(struct gw_s3_chunked *c, const void *data, size_t len,
                                  const char **why);

/* At the end of the body: GW_S3_OK if the final chunk and trailer were
 * read and every check passed; IncompleteBody if the body stopped early
 * or decoded to fewer bytes than x-amz-decoded-content-length. */
enum gw_s3_err gw_s3_chunked_finish(struct gw_s3_chunked *c, const char **why);

/* Decoded bytes so far. */
uint64_t gw_s3_chunked_decoded(const struct gw_s3_chunked *c);

/* After a successful finish: the trailer's (verified) checksum, to keep
 * with the object; GW_S3_CK_NONE and "" when there was none. */
enum gw_s3_ck_alg gw_s3_chunked_checksum(const struct gw_s3_chunked *c, char out[GW_S3_CK_B64_MAX]);

#endif
