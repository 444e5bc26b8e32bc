/*
 * gw_s3_chunked.c - the aws-chunked decoder (see gw_s3_chunked.h).
 *
 *   SIZE line ──0──▶ TRAILER lines ──empty line──▶ DONE
 *      │ n > 0          ▲
 *      ▼                │ (signed: the final chunk's signature first)
 *   DATA (n bytes) ──▶ CR LF ──▶ SIZE line
 *
 * Invariants: at most GW_S3_CHUNK_LINE_MAX bytes of a line are held;
 * decoded + the current chunk's size never passes the limits (checked on
 * the size line, before its data is read); an error is sticky.
 */
#include "gw_s3_chunked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_hash.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SIG_EXT ";chunk-signature="

enum chunk_state {
    ST_SIZE,
    ST_DATA,
    ST_DATA_CR,
    ST_DATA_LF,
    ST_TRAILER,
    ST_DONE,
    ST_ERROR,
};

struct gw_s3_chunked {
    enum chunk_state st;
    int sigs;    /* chunks carry signatures */
    int trailer; /* a trailer section follows the final chunk */
    uint8_t key[32];
    char amz_date[17];
    char scope[GW_S3_SCOPE_MAX + 1];
    char prev[65]; /* the previous signature, hex */
    uint8_t chunk_sig[32];
    struct cm_digest *chunk_sha; /* signed modes */
    uint64_t remaining;          /* of the current chunk's data */
    uint64_t decoded;
    int64_t want_len; /* x-amz-decoded-content-length, -1 if absent */
    uint64_t max_decoded;
    gw_s3_sink_fn sink;
    void *sink_arg;
    enum gw_s3_ck_alg declared; /* x-amz-trailer */
    struct gw_s3_ck ck;         /* of the decoded bytes, for the declared trailer */
    int ck_seen, sig_seen, ntrailers;
    struct cm_buf trailers; /* canonical trailer lines, for the trailer signature */
    uint8_t trailer_sig[32];
    char line[GW_S3_CHUNK_LINE_MAX];
    size_t line_len;
    enum gw_s3_err err;
    const char *why;
};

static enum gw_s3_err
fail(struct gw_s3_chunked *c, enum gw_s3_err e, const char *why)
{
    c->st = ST_ERROR;
    c->err = e;
    c->why = why;
    return e;
}

enum gw_s3_err
gw_s3_chunked_create(const struct gw_s3_auth *auth, gw_s3_hdr_fn hdr, void *hdr_arg,
                     uint64_t max_decoded, gw_s3_sink_fn sink, void *sink_arg,
                     struct gw_s3_chunked **out, const char **why)
{
    struct gw_s3_chunked *c;
    const char *v, *dummy;

    why = why != NULL ? why : &dummy;
    *why = NULL;
    *out = NULL;
    if (auth->payload != GW_S3_PAYLOAD_STREAMING &&
        auth->payload != GW_S3_PAYLOAD_STREAMING_TRAILER &&
        auth->payload != GW_S3_PAYLOAD_UNSIGNED_TRAILER) {
        *why = "the payload is not aws-chunked";
        return GW_S3_E_INVALID_REQUEST;
    }
    c = cm_calloc(1, sizeof(*c));
    c->sigs = auth->payload != GW_S3_PAYLOAD_UNSIGNED_TRAILER;
    c->trailer = auth->payload != GW_S3_PAYLOAD_STREAMING;
    memcpy(c->key, auth->signing_key, 32);
    memcpy(c->amz_date, auth->amz_date, sizeof(c->amz_date));
    memcpy(c->scope, auth->scope, sizeof(c->scope));
    memcpy(c->prev, auth->signature, sizeof(c->prev));
    c->want_len = -1;
    c->max_decoded = max_decoded;
    c->sink = sink;
    c->sink_arg = sink_arg;
    cm_buf_init(&c->trailers);
    if ((v = hdr(hdr_arg, "x-amz-decoded-content-length")) != NULL) {
        size_t n = strlen(v);
        if (n == 0 || n > 18 || strspn(v, "0123456789") != n) {
            gw_s3_chunked_destroy(c);
            *why = "x-amz-decoded-content-length is not a number";
            return GW_S3_E_INVALID_REQUEST;
        }
        c->want_len = strtoll(v, NULL, 10);
    }
    if (c->trailer && (v = hdr(hdr_arg, "x-amz-trailer")) != NULL) {
        size_t s = strspn(v, " \t"), n = strlen(v + s);
        while (n > 0 && (v[s + n - 1] == ' ' || v[s + n - 1] == '\t')) {
            n--;
        }
        c->declared = gw_s3_ck_alg_of_header(v + s, n);
        if (c->declared == GW_S3_CK_NONE) {
            gw_s3_chunked_destroy(c);
            *why = "x-amz-trailer must name one x-amz-checksum- header";
            return GW_S3_E_INVALID_REQUEST;
        }
    }
    gw_s3_ck_init(&c->ck, c->declared);
    if (c->sigs) {
        c->chunk_sha = cm_digest_create(CM_DIGEST_SHA256);
    }
    *out = c;
    return GW_S3_OK;
}

void
gw_s3_chunked_destroy(struct gw_s3_chunked *c)
{
    if (c == NULL) {
        return;
    }
    cm_digest_destroy(c->chunk_sha);
    gw_s3_ck_fini(&c->ck);
    cm_buf_fini(&c->trailers);
    memset(c->key, 0, sizeof(c->key));
    free(c);
}

/* HMAC(key, prefix "\n" date "\n" scope "\n" prev "\n" rest) against want;
 * on a match prev becomes the new signature. */
static int
check_sig(struct gw_s3_chunked *c, const char *prefix, const char *rest, const uint8_t want[32])
{
    char sts[64 + 17 + GW_S3_SCOPE_MAX + 65 + 130];
    uint8_t sig[32];
    int n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", prefix, c->amz_date, c->scope, c->prev,
                     rest);

    cm_hmac_sha256(c->key, 32, sts, (size_t)n, sig);
    if (!cm_ct_equal(sig, want, 32)) {
        return 0;
    }
    cm_hex(sig, 32, c->prev);
    return 1;
}

static int
chunk_sig_ok(struct gw_s3_chunked *c)
{
    uint8_t md[CM_DIGEST_MAX];
    char rest[64 + 1 + 64 + 1];

    cm_digest_final(c->chunk_sha, md);
    memcpy(rest, EMPTY_SHA256 "\n", 65);
    cm_hex(md, 32, rest + 65);
    return check_sig(c, "AWS4-HMAC-SHA256-PAYLOAD", rest, c->chunk_sig);
}

/* A size line without its CRLF: "hex[;chunk-signature=64hex]". */
static enum gw_s3_err
size_line(struct gw_s3_chunked *c, const char *l, size_t n)
{
    uint64_t size = 0;
    size_t i = 0;
    int d;

    while (i < n && (d = cm_hexval((unsigned char)l[i])) >= 0) {
        if (i == 15) {
            return fail(c, GW_S3_E_INCOMPLETE_BODY, "an aws-chunked chunk size is too large");
        }
        size = size << 4 | (uint64_t)d;
        i++;
    }
    if (i == 0) {
        return fail(c, GW_S3_E_INCOMPLETE_BODY, "an aws-chunked size line has no hex size");
    }
    if (c->sigs) {
        if (n - i != sizeof(SIG_EXT) - 1 + 64 || memcmp(l + i, SIG_EXT, sizeof(SIG_EXT) - 1) ||
            gw_s3_unhex(l + i + sizeof(SIG_EXT) - 1, 64, c->chunk_sig, 32) != 0) {
            return fail(c, GW_S3_E_INCOMPLETE_BODY,
                        "an aws-chunked size line lacks ;chunk-signature=<64 hex>");
        }
    } else if (i != n) {
        return fail(c, GW_S3_E_INCOMPLETE_BODY, "an aws-chunked size line is not a hex size");
    }
    if (c->max_decoded != 0 && size > c->max_decoded - c->decoded) {
        return fail(c, GW_S3_E_ENTITY_TOO_LARGE, NULL);
    }
    if (c->want_len >= 0 && size > (uint64_t)c->want_len - c->decoded) {
        return fail(c, GW_S3_E_INVALID_REQUEST,
                    "the aws-chunked body holds more than x-amz-decoded-content-length bytes");
    }
    c->remaining = size;
    if (size > 0) {
        c->st = ST_DATA;
        return GW_S3_OK;
    }
    if (c->sigs && !chunk_sig_ok(c)) {
        return fail(c, GW_S3_E_SIGNATURE_MISMATCH, "the final chunk's signature does not match");
    }
    c->st = ST_TRAILER;
    return GW_S3_OK;
}

/* All trailer lines read (the empty line came): signatures and checksum. */
static enum gw_s3_err
trailer_end(struct gw_s3_chunked *c)
{
    char hex[65];

    if (c->sigs && c->trailer) {
        if (!c->sig_seen) {
            return fail(c, GW_S3_E_MALFORMED_TRAILER, "x-amz-trailer-signature is missing");
        }
        cm_sha256_hex(c->trailers.p, c->trailers.len, hex);
        if (!check_sig(c, "AWS4-HMAC-SHA256-TRAILER", hex, c->trailer_sig)) {
            return fail(c, GW_S3_E_SIGNATURE_MISMATCH, "the trailer signature does not match");
        }
    }
    if (c->declared != GW_S3_CK_NONE && !c->ck_seen) {
        return fail(c, GW_S3_E_MALFORMED_TRAILER, "the trailer named by x-amz-trailer is missing");
    }
    c->st = ST_DONE;
    return GW_S3_OK;
}

/* A trailer line without its CRLF: "name:value". */
static enum gw_s3_err
trailer_line(struct gw_s3_chunked *c, const char *l, size_t n)
{
    const char *colon = memchr(l, ':', n);
    size_t nl, vs, ve;
    enum gw_s3_ck_alg alg;

    if (!c->trailer) {
        return fail(c, GW_S3_E_INCOMPLETE_BODY,
                    "the final aws-chunked chunk is not followed by an empty line");
    }
    if (colon == NULL || colon == l || ++c->ntrailers > GW_S3_TRAILERS_MAX) {
        return fail(c, GW_S3_E_MALFORMED_TRAILER, "a trailer line is not name:value");
    }
    nl = (size_t)(colon - l);
    for (vs = nl + 1; vs < n && (l[vs] == ' ' || l[vs] == '\t'); vs++) {
    }
    for (ve = n; ve > vs && (l[ve - 1] == ' ' || l[ve - 1] == '\t'); ve--) {
    }
    if (nl == 23 && strncasecmp(l, "x-amz-trailer-signature", 23) == 0) {
        if (!c->sigs || c->sig_seen || ve - vs != 64 ||
            gw_s3_unhex(l + vs, 64, c->trailer_sig, 32) != 0) {
            return fail(c, GW_S3_E_MALFORMED_TRAILER,
                        "x-amz-trailer-signature is unexpected, repeated or not 64 hex digits");
        }
        c->sig_seen = 1;
        return GW_S3_OK;
    }
    if (c->sig_seen) {
        return fail(c, GW_S3_E_MALFORMED_TRAILER, "a trailer follows x-amz-trailer-signature");
    }
    alg = gw_s3_ck_alg_of_header(l, nl);
    if (alg == GW_S3_CK_NONE || alg != c->declared || c->ck_seen) {
        return fail(c, GW_S3_E_MALFORMED_TRAILER,
                    "a trailer that x-amz-trailer did not declare, or declared twice");
    }
    c->ck_seen = 1;
    for (size_t i = 0; i < nl; i++) {
        char ch = l[i] >= 'A' && l[i] <= 'Z' ? (char)(l[i] - 'A' + 'a') : l[i];
        cm_buf_append(&c->trailers, &ch, 1);
    }
    cm_buf_append(&c->trailers, ":", 1);
    cm_buf_append(&c->trailers, l + vs, ve - vs);
    cm_buf_append(&c->trailers, "\n", 1);
    if (!gw_s3_ck_matches(&c->ck, l + vs, ve - vs)) {
        return fail(c, GW_S3_E_BAD_DIGEST, "The checksum in the trailer did not match the data.");
    }
    return GW_S3_OK;
}

/* Gathers a CRLF-terminated line; 1 when complete (line holds it without
 * CRLF), 0 when more bytes are needed; errors are set on c. */
static int
take_line(struct gw_s3_chunked *c, const uint8_t *p, size_t len, size_t *used)
{
    size_t i = 0;

    while (i < len) {
        uint8_t b = p[i++];

        if (b == '\n') {
            *used = i;
            if (c->line_len == 0 || c->line[c->line_len - 1] != '\r') {
                fail(c, GW_S3_E_INCOMPLETE_BODY, "an aws-chunked line ends without CRLF");
                return 0;
            }
            c->line_len--;
            return 1;
        }
        if (c->line_len == sizeof(c->line) ||
            (c->line_len > 0 && c->line[c->line_len - 1] == '\r')) {
            *used = i;
            fail(c, GW_S3_E_INCOMPLETE_BODY,
                 c->line_len == sizeof(c->line) ? "an aws-chunked line is too long"
                                                : "a CR without LF in an aws-chunked line");
            return 0;
        }
        c->line[c->line_len++] = (char)b;
    }
    *used = i;
    return 0;
}

enum gw_s3_err
gw_s3_chunked_feed(struct gw_s3_chunked *c, const void *data, size_t len, const char **why)
{
    const uint8_t *p = data;
    enum gw_s3_err e = GW_S3_OK;
    const char *dummy;

    why = why != NULL ? why : &dummy;
    while (len > 0 && c->st != ST_ERROR) {
        size_t used = 0;

        switch (c->st) {
        case ST_SIZE:
        case ST_TRAILER:
            if (take_line(c, p, len, &used)) {
                size_t n = c->line_len;
                c->line_len = 0;
                if (c->st == ST_SIZE) {
                    size_line(c, c->line, n);
                } else if (n == 0) {
                    trailer_end(c);
                } else {
                    trailer_line(c, c->line, n);
                }
            }
            break;
        case ST_DATA:
            used = len < c->remaining ? len : (size_t)c->remaining;
            if (c->sigs) {
                cm_digest_update(c->chunk_sha, p, used);
            }
            gw_s3_ck_update(&c->ck, p, used);
            c->decoded += used;
            c->remaining -= used;
            if (c->sink != NULL && (e = c->sink(c->sink_arg, p, used)) != GW_S3_OK) {
                fail(c, e, NULL);
                break;
            }
            if (c->remaining == 0) {
                if (c->sigs && !chunk_sig_ok(c)) {
                    fail(c, GW_S3_E_SIGNATURE_MISMATCH, "a chunk's signature does not match");
                    break;
                }
                c->st = ST_DATA_CR;
            }
            break;
        case ST_DATA_CR:
        case ST_DATA_LF:
            used = 1;
            if (p[0] != (c->st == ST_DATA_CR ? '\r' : '\n')) {
                fail(c, GW_S3_E_INCOMPLETE_BODY,
                     "an aws-chunked chunk's data is not followed "
                     "by CRLF");
                break;
            }
            c->st = c->st == ST_DATA_CR ? ST_DATA_LF : ST_SIZE;
            break;
        case ST_DONE:
            fail(c, GW_S3_E_INCOMPLETE_BODY, "bytes after the end of the aws-chunked body");
            break;
        case ST_ERROR:
            break;
        }
        p += used;
        len -= used;
    }
    if (c->st == ST_ERROR) {
        *why = c->why;
        return c->err;
    }
    *why = NULL;
    return GW_S3_OK;
}

enum gw_s3_err
gw_s3_chunked_finish(struct gw_s3_chunked *c, const char **why)
{
    const char *dummy;

    why = why != NULL ? why : &dummy;
    if (c->st == ST_DONE && c->want_len >= 0 && c->decoded != (uint64_t)c->want_len) {
        fail(c, GW_S3_E_INCOMPLETE_BODY,
             "the aws-chunked body holds fewer than x-amz-decoded-content-length bytes");
    } else if (c->st != ST_DONE && c->st != ST_ERROR) {
        fail(c, GW_S3_E_INCOMPLETE_BODY, "the aws-chunked body ends before its final chunk");
    }
    if (c->st == ST_ERROR) {
        *why = c->why;
        return c->err;
    }
    *why = NULL;
    return GW_S3_OK;
}

uint64_t
gw_s3_chunked_decoded(const struct gw_s3_chunked *c)
{
    return c->decoded;
}

enum gw_s3_ck_alg
gw_s3_chunked_checksum(const struct gw_s3_chunked *c, char out[GW_S3_CK_B64_MAX])
{
    out[0] = '\0';
    if (c->st != ST_DONE || !c->ck_seen) {
        return GW_S3_CK_NONE;
    }
    memcpy(out, c->ck.value, c->ck.value_len);
    out[c->ck.value_len] = '\0';
    return c->ck.alg;
}
