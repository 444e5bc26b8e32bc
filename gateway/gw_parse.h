/*
 * gw_parse.h - pure parsers of the tenant API's request pieces (private to
 * gateway/): object keys, Range, Authorization, LIST query, X-Request-Id.
 *
 * No I/O, no allocation, no globals: every function may be called from any
 * thread, and each is a libFuzzer target (tests/fuzz/fuzz_{key,range,header}.c).
 * Depends only on libc and cm_err.h.
 */
#ifndef GW_PARSE_H
#define GW_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define GW_KEY_MAX 1024  /* bytes after percent-decoding */
#define GW_LIST_MAX 1000 /* objects per LIST page (also the default) */
#define GW_REQID_MAX 64  /* longest client X-Request-Id echoed back */

/*
 * Decodes a %-encoded key (raw[rawlen], the path after "/v1/objects/") into
 * out[GW_KEY_MAX] and validates it: 1..GW_KEY_MAX bytes, valid UTF-8 (no
 * overlongs, no surrogates), no control characters (C0, DEL, C1), no "." or
 * ".." segment between slashes. '+' is a literal plus. 0 and *outlen, or
 * CM_E_BADARG with a static reason in *why (may be NULL).
 */
int gw_parse_key(const char *raw, size_t rawlen, char *out, size_t *outlen, const char **why);

/* Checks that s[len] is valid UTF-8 without control characters. 1 or 0. */
int gw_utf8_clean(const char *s, size_t len);

enum gw_range {
    GW_RANGE_NONE,  /* no Range header: the whole object */
    GW_RANGE_OK,    /* satisfiable: *off, *len set (len >= 1) */
    GW_RANGE_UNSAT, /* valid syntax, nothing of the object selected: 416 */
    GW_RANGE_BAD,   /* malformed, another unit, or several ranges: 400 */
};

/*
 * A Range header value (hdr NULL = absent) against an object of size bytes:
 * "bytes=a-b" (b clamped to size-1), "bytes=a-", "bytes=-n" (the last n
 * bytes; n > size means all). Optional whitespace around the spec. Numbers
 * too large for 64 bits saturate (so they read as "past the end").
 */
enum gw_range gw_parse_range(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

/*
 * "Bearer <token>" (scheme case-insensitive, one or more spaces, token68
 * characters, trailing whitespace ignored). *tok borrowed from hdr.
 * 0, or CM_E_BADARG for NULL/other schemes/empty or bad tokens.
 */
int gw_parse_bearer(const char *hdr, const char **tok, size_t *toklen);

struct gw_list_query {
    const char *prefix; /* borrowed, "" when absent */
    size_t prefix_len;
    const char *after; /* borrowed, NULL when absent */
    size_t after_len;
    unsigned limit; /* 1..GW_LIST_MAX */
};

/*
 * The LIST query parameters as already %-decoded by the HTTP layer (each
 * NULL when absent). prefix and after: at most GW_KEY_MAX bytes, clean
 * UTF-8; limit: decimal 1..2^32, values above GW_LIST_MAX are clamped to it
 * (as S3 does with max-keys), default GW_LIST_MAX. 0, or CM_E_BADARG with a
 * static reason in *why.
 */
int gw_parse_list_query(const char *prefix, const char *after, const char *limit,
                        struct gw_list_query *out, const char **why);

/* A client X-Request-Id worth echoing: 1..GW_REQID_MAX of [A-Za-z0-9._:-]. */
int gw_reqid_ok(const char *s);

#endif
