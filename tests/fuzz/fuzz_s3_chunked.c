/* fuzz_s3_chunked.c - the aws-chunked decoder (gateway/gw_s3_chunked.c).
 *
 * Input: a flags byte, a split byte, then the body. Flags: bits 0-1 the
 * payload (0 signed chunks, 1 signed chunks + trailer, 2-3 unsigned
 * trailer), bit 2 re-sign (chunk and trailer signatures and the trailer
 * checksum made right, walking the body as a decoder would, so the checks
 * behind them are reached), bits 3-5 the x-amz-trailer algorithm (0 none),
 * bit 6 an x-amz-decoded-content-length of 7 * the split byte, bit 7 a
 * 4 KiB limit on the decoded size.
 *
 * Checked: the body decoded in one piece and in pieces (sizes from the
 * split byte) gives the same outcome and the same bytes; the decoded count
 * is what the sink got; a re-signed body that decodes has exactly the data
 * the walk saw. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_hash.h"
#include "gw_s3_chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct hdrs {
    char declen[24];
    const char *trailer;
    int have_len;
};

static const char *
hdr(void *arg, const char *lname)
{
    struct hdrs *h = arg;

    if (strcmp(lname, "x-amz-trailer") == 0) {
        return h->trailer;
    }
    if (strcmp(lname, "x-amz-decoded-content-length") == 0 && h->have_len) {
        return h->declen;
    }
    return NULL;
}

static enum gw_s3_err
sink(void *arg, const void *p, size_t len)
{
    cm_buf_append(arg, p, len);
    return GW_S3_OK;
}

static void
sign(const struct gw_s3_auth *a, char prev[65], const char *prefix, const char *rest)
{
    char sts[512];
    uint8_t mac[32];
    int n =
        snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", prefix, a->amz_date, a->scope, prev, rest);

    cm_hmac_sha256(a->signing_key, 32, sts, (size_t)n, mac);
    cm_hex(mac, 32, prev);
}

/* Rewrites signatures and the trailer checksum in place (lengths kept);
 * the data it walked over goes to walked. */
static void
resign(const struct gw_s3_auth *a, enum gw_s3_ck_alg alg, char *b, size_t len,
       struct cm_buf *walked)
{
    char prev[65];
    size_t off = 0;
    struct gw_s3_ck ck;

    memcpy(prev, a->signature, 65);
    gw_s3_ck_init(&ck, alg);
    while (off < len) {
        char *eol = memchr(b + off, '\n', len - off), *semi, *sig;
        uint64_t n = 0;
        size_t i;

        if (eol == NULL) {
            break;
        }
        for (i = off; i < (size_t)(eol - b) && cm_hexval((unsigned char)b[i]) >= 0 && i - off < 15;
             i++) {
            n = n << 4 | (uint64_t)cm_hexval((unsigned char)b[i]);
        }
        semi = memchr(b + off, ';', (size_t)(eol - b) - off);
        sig = semi != NULL && (size_t)(eol - semi) >= 17 + 64 ? semi + 17
                                                              : NULL; /* ;chunk-signature= */
        off = (size_t)(eol - b) + 1;
        if (n > len - off) {
            break;
        }
        if (sig != NULL) {
            char rest[140], h[65];
            cm_sha256_hex(b + off, (size_t)n, h);
            snprintf(rest, sizeof(rest), EMPTY "\n%s", h);
            sign(a, prev, "AWS4-HMAC-SHA256-PAYLOAD", rest);
            memcpy(sig, prev, 64);
        }
        gw_s3_ck_update(&ck, b + off, (size_t)n);
        cm_buf_append(walked, b + off, (size_t)n);
        if (n == 0) {
            /* the trailer: the checksum's value, then its signature */
            struct cm_buf canon;
            char val[GW_S3_CK_B64_MAX];
            size_t vl = gw_s3_ck_value(&ck, val);

            cm_buf_init(&canon);
            while (off < len) {
                char *e = memchr(b + off, '\n', len - off), *colon;
                size_t l;

                if (e == NULL) {
                    break;
                }
                l = (size_t)(e - b) - off;
                l -= l > 0 && b[off + l - 1] == '\r';
                colon = memchr(b + off, ':', l);
                if (colon != NULL && alg != GW_S3_CK_NONE &&
                    gw_s3_ck_alg_of_header(b + off, (size_t)(colon - b) - off) == alg &&
                    (size_t)(b + off + l - colon - 1) == vl) {
                    memcpy(colon + 1, val, vl);
                    cm_buf_printf(&canon, "%s:%s\n", gw_s3_ck_header_name(alg), val);
                }
                if (colon != NULL && (size_t)(colon - b) - off == 23 &&
                    strncasecmp(b + off, "x-amz-trailer-signature", 23) == 0 &&
                    (size_t)(b + off + l - colon - 1) == 64) {
                    char h[65];
                    cm_sha256_hex(canon.p != NULL ? canon.p : "", canon.len, h);
                    sign(a, prev, "AWS4-HMAC-SHA256-TRAILER", h);
                    memcpy(colon + 1, prev, 64);
                }
                off = (size_t)(e - b) + 1;
            }
            cm_buf_fini(&canon);
            break;
        }
        off += (size_t)n + 2;
    }
    gw_s3_ck_fini(&ck);
}

static enum gw_s3_err
run(const struct gw_s3_auth *a, struct hdrs *h, uint64_t max, const char *b, size_t len,
    size_t piece, struct cm_buf *out, uint64_t *decoded)
{
    struct gw_s3_chunked *c;
    enum gw_s3_err e, e2;
    size_t off = 0;

    e = gw_s3_chunked_create(a, hdr, h, max, sink, out, &c, NULL);
    if (e != GW_S3_OK) {
        return e;
    }
    while (off < len && e == GW_S3_OK) {
        size_t n = piece == 0 || piece > len - off ? len - off : piece;
        e = gw_s3_chunked_feed(c, b + off, n, NULL);
        off += n;
    }
    e2 = gw_s3_chunked_finish(c, NULL);
    if (e != GW_S3_OK && e2 != e) {
        abort(); /* errors are sticky */
    }
    *decoded = gw_s3_chunked_decoded(c);
    if (*decoded != out->len) {
        abort();
    }
    gw_s3_chunked_destroy(c);
    return e2;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum gw_s3_payload modes[4] = {
        GW_S3_PAYLOAD_STREAMING, GW_S3_PAYLOAD_STREAMING_TRAILER, GW_S3_PAYLOAD_UNSIGNED_TRAILER,
        GW_S3_PAYLOAD_UNSIGNED_TRAILER};
    struct gw_s3_auth a;
    struct hdrs h;
    struct cm_buf o1, o2, walked;
    enum gw_s3_err e1, e2;
    enum gw_s3_ck_alg alg;
    uint64_t d1, d2, max;
    uint8_t flags, split;
    char *b;
    size_t len;

    if (size < 2) {
        return 0;
    }
    flags = data[0];
    split = data[1];
    len = size - 2;
    memset(&a, 0, sizeof(a));
    a.payload = modes[flags & 3];
    snprintf(a.amz_date, sizeof(a.amz_date), "20130524T000000Z");
    snprintf(a.scope, sizeof(a.scope), "20130524/us-east-1/s3/aws4_request");
    snprintf(a.signature, sizeof(a.signature),
             "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    memset(a.signing_key, 0x5a, 32);
    memset(&h, 0, sizeof(h));
    alg = (enum gw_s3_ck_alg)((flags >> 3) & 7);
    alg = alg > GW_S3_CK_SHA256 ? GW_S3_CK_NONE : alg;
    h.trailer = alg != GW_S3_CK_NONE ? gw_s3_ck_header_name(alg) : NULL;
    h.have_len = (flags & 64) != 0;
    snprintf(h.declen, sizeof(h.declen), "%u", 7u * split);
    max = (flags & 128) ? 4096 : 0;

    b = malloc(len + 1);
    memcpy(b, data + 2, len);
    cm_buf_init(&walked);
    if (flags & 4) {
        resign(&a, alg, b, len, &walked);
    }
    cm_buf_init(&o1);
    cm_buf_init(&o2);
    e1 = run(&a, &h, max, b, len, 0, &o1, &d1);
    e2 = run(&a, &h, max, b, len, 1 + split % 97, &o2, &d2);
    if (e1 != e2 ||
        (e1 == GW_S3_OK && (o1.len != o2.len || (o1.len > 0 && memcmp(o1.p, o2.p, o1.len) != 0)))) {
        abort(); /* the outcome does not depend on how the bytes arrive */
    }
    if (e1 == GW_S3_OK && (flags & 4) && a.payload != GW_S3_PAYLOAD_UNSIGNED_TRAILER &&
        (o1.len != walked.len || (o1.len > 0 && memcmp(o1.p, walked.p, o1.len) != 0))) {
        abort(); /* signed chunks decode to what was signed */
    }
    cm_buf_fini(&o1);
    cm_buf_fini(&o2);
    cm_buf_fini(&walked);
    free(b);
    return 0;
}
