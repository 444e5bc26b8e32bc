/*
 * gw_s3_cksum.c - S3 checksums, base64, ETags and the request-body checks
 * (see gw_s3_cksum.h). CRC-32 and CRC32C come from the ISA-L adapter
 * (cm_ec.h), the rest from cm_hash.h.
 */
#include "gw_s3_cksum.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_hash.h"

static const struct {
    const char *name, *header;
    size_t raw; /* bytes before base64 */
} ck_algs[] = {
    [GW_S3_CK_NONE] = {"", "", 0},
    [GW_S3_CK_CRC32] = {"CRC32", "x-amz-checksum-crc32", 4},
    [GW_S3_CK_CRC32C] = {"CRC32C", "x-amz-checksum-crc32c", 4},
    [GW_S3_CK_CRC64NVME] = {"CRC64NVME", "x-amz-checksum-crc64nvme", 8},
    [GW_S3_CK_SHA1] = {"SHA1", "x-amz-checksum-sha1", 20},
    [GW_S3_CK_SHA256] = {"SHA256", "x-amz-checksum-sha256", 32},
};
#define NALGS (sizeof(ck_algs) / sizeof(ck_algs[0]))

static enum gw_s3_ck_alg
alg_lookup(const char *name, size_t len, size_t skip)
{
    for (size_t i = 1; i < NALGS; i++) {
        const char *n = ck_algs[i].header + skip;
        if (strlen(n) == len && strncasecmp(n, name, len) == 0) {
            return (enum gw_s3_ck_alg)i;
        }
    }
    return GW_S3_CK_NONE;
}

enum gw_s3_ck_alg
gw_s3_ck_alg_parse(const char *name, size_t len)
{
    return alg_lookup(name, len, strlen("x-amz-checksum-"));
}

enum gw_s3_ck_alg
gw_s3_ck_alg_of_header(const char *name, size_t len)
{
    return alg_lookup(name, len, 0);
}

const char *
gw_s3_ck_alg_name(enum gw_s3_ck_alg alg)
{
    return (unsigned)alg < NALGS ? ck_algs[alg].name : "";
}

const char *
gw_s3_ck_header_name(enum gw_s3_ck_alg alg)
{
    return (unsigned)alg < NALGS ? ck_algs[alg].header : "";
}

void
gw_s3_ck_init(struct gw_s3_ck *ck, enum gw_s3_ck_alg alg)
{
    memset(ck, 0, sizeof(*ck));
    ck->alg = (unsigned)alg < NALGS ? alg : GW_S3_CK_NONE;
    if (ck->alg == GW_S3_CK_SHA1 || ck->alg == GW_S3_CK_SHA256) {
        ck->d = cm_digest_create(ck->alg == GW_S3_CK_SHA1 ? CM_DIGEST_SHA1 : CM_DIGEST_SHA256);
    }
}

void
gw_s3_ck_fini(struct gw_s3_ck *ck)
{
    cm_digest_destroy(ck->d);
    ck->d = NULL;
}

void
gw_s3_ck_update(struct gw_s3_ck *ck, const void *data, size_t len)
{
    if (ck->value_len != 0) {
        return;
    }
    switch (ck->alg) {
    case GW_S3_CK_CRC32:
        ck->crc = cm_crc32((uint32_t)ck->crc, data, len);
        break;
    case GW_S3_CK_CRC32C:
        ck->crc = cm_crc32c((uint32_t)ck->crc, data, len);
        break;
    case GW_S3_CK_CRC64NVME:
        ck->crc = cm_crc64nvme(ck->crc, data, len);
        break;
    case GW_S3_CK_SHA1:
    case GW_S3_CK_SHA256:
        cm_digest_update(ck->d, data, len);
        break;
    case GW_S3_CK_NONE:
        break;
    }
}

/* The checksum's bytes as S3 encodes them (CRCs big-endian). */
static size_t
ck_raw(struct gw_s3_ck *ck, uint8_t raw[CM_DIGEST_MAX])
{
    switch (ck->alg) {
    case GW_S3_CK_CRC32:
    case GW_S3_CK_CRC32C:
        cm_put_be32(raw, (uint32_t)ck->crc);
        return 4;
    case GW_S3_CK_CRC64NVME:
        cm_put_be64(raw, ck->crc);
        return 8;
    case GW_S3_CK_SHA1:
    case GW_S3_CK_SHA256:
        return cm_digest_final(ck->d, raw);
    case GW_S3_CK_NONE:
        break;
    }
    return 0;
}

size_t
gw_s3_ck_value(struct gw_s3_ck *ck, char out[GW_S3_CK_B64_MAX])
{
    uint8_t raw[CM_DIGEST_MAX];

    if (ck->value_len == 0 && ck->alg != GW_S3_CK_NONE) {
        ck->value_len = gw_s3_b64_encode(raw, ck_raw(ck, raw), ck->value);
    }
    memcpy(out, ck->value, ck->value_len);
    out[ck->value_len] = '\0';
    return ck->value_len;
}

int
gw_s3_ck_matches(struct gw_s3_ck *ck, const char *b64, size_t len)
{
    uint8_t want[CM_DIGEST_MAX], got[CM_DIGEST_MAX];
    char ours[GW_S3_CK_B64_MAX];
    long n;

    if (ck->alg == GW_S3_CK_NONE) {
        return 0;
    }
    n = gw_s3_b64_decode(b64, len, want, sizeof(want));
    gw_s3_ck_value(ck, ours);
    if (n < 0 || (size_t)n != ck_algs[ck->alg].raw) {
        return 0;
    }
    gw_s3_b64_decode(ours, strlen(ours), got, sizeof(got));
    return memcmp(want, got, (size_t)n) == 0;
}

/* ---- base64 ---- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
gw_s3_b64_encode(const void *in, size_t n, char *out)
{
    const uint8_t *p = in;
    size_t i, k = 0;

    for (i = 0; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[k++] = b64chars[v >> 18];
        out[k++] = b64chars[(v >> 12) & 63];
        out[k++] = b64chars[(v >> 6) & 63];
        out[k++] = b64chars[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        out[k++] = b64chars[v >> 18];
        out[k++] = b64chars[(v >> 12) & 63];
        out[k++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
        out[k++] = '=';
    }
    out[k] = '\0';
    return k;
}

static int
b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long
gw_s3_b64_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    size_t i, k = 0;

    if (len % 4 != 0) {
        return -1;
    }
    for (i = 0; i < len; i += 4) {
        int v[4], pad = 0;
        uint32_t x;

        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)in[i + j];
            if (c == '=' && i + 4 == len && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad > 0 || (v[j] = b64val(c)) < 0) {
                return -1;
            }
        }
        x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        /* the bits under the padding must be zero: one encoding per value */
        if ((pad == 1 && (x & 0xff) != 0) || (pad == 2 && (x & 0xffff) != 0)) {
            return -1;
        }
        if (k + 3 - (size_t)pad > cap) {
            return -1;
        }
        out[k++] = (uint8_t)(x >> 16);
        if (pad < 2) {
            out[k++] = (uint8_t)(x >> 8);
        }
        if (pad < 1) {
            out[k++] = (uint8_t)x;
        }
    }
    return (long)k;
}

/* ---- CRC-64/XZ combination (zlib's crc32_combine, on 64 bits) ---- */

#define CRC64_XZ_POLY_REFL 0xc96c5795d7870f42ull

static uint64_t
gf2_times(const uint64_t *mat, uint64_t vec)
{
    uint64_t sum = 0;

    for (; vec != 0; vec >>= 1, mat++) {
        if (vec & 1) {
            sum ^= *mat;
        }
    }
    return sum;
}

static void
gf2_square(uint64_t *sq, const uint64_t *mat)
{
    for (int n = 0; n < 64; n++) {
        sq[n] = gf2_times(mat, mat[n]);
    }
}

uint64_t
gw_s3_crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    uint64_t even[64], odd[64], row = 1;

    if (len_b == 0) {
        return crc_a;
    }
    /* odd: one zero bit through the CRC register */
    odd[0] = CRC64_XZ_POLY_REFL;
    for (int n = 1; n < 64; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); /* two zero bits */
    gf2_square(odd, even); /* four */
    do {
        /* apply len_b zero bytes to crc_a, a bit of len_b at a time */
        gf2_square(even, odd);
        if (len_b & 1) {
            crc_a = gf2_times(even, crc_a);
        }
        len_b >>= 1;
        if (len_b == 0) {
            break;
        }
        gf2_square(odd, even);
        if (len_b & 1) {
            crc_a = gf2_times(odd, crc_a);
        }
        len_b >>= 1;
    } while (len_b != 0);
    return crc_a ^ crc_b;
}

/* ---- ETags ---- */

void
gw_s3_etag(const uint8_t md5[16], char out[GW_S3_ETAG_MAX])
{
    out[0] = '"';
    cm_hex(md5, 16, out + 1);
    out[33] = '"';
    out[34] = '\0';
}

void
gw_s3_etag_multipart(const uint8_t *md5s, size_t nparts, char out[GW_S3_ETAG_MAX])
{
    uint8_t md[CM_DIGEST_MAX];
    char hex[33];

    cm_digest_once(CM_DIGEST_MD5, md5s, nparts * 16, md);
    cm_hex(md, 16, hex);
    snprintf(out, GW_S3_ETAG_MAX, "\"%s-%zu\"", hex, nparts);
}

int
gw_s3_etag_md5(const char *etag, size_t len, uint8_t md5[16])
{
    if (len == 34 && etag[0] == '"' && etag[33] == '"') {
        etag++;
        len -= 2;
    }
    return gw_s3_unhex(etag, len, md5, 16);
}

/* ---- a request body's checks ---- */

enum gw_s3_err
gw_s3_body_init(struct gw_s3_body *b, const struct gw_s3_auth *auth, gw_s3_hdr_fn hdr,
                void *hdr_arg, const char **why)
{
    const char *v, *dummy;
    enum gw_s3_ck_alg found = GW_S3_CK_NONE;

    why = why != NULL ? why : &dummy;
    *why = NULL;
    memset(b, 0, sizeof(*b));
    gw_s3_ck_init(&b->ck, GW_S3_CK_NONE);
    b->md5 = cm_digest_create(CM_DIGEST_MD5);
    if (auth != NULL && auth->payload == GW_S3_PAYLOAD_SIGNED) {
        b->sha256 = cm_digest_create(CM_DIGEST_SHA256);
        memcpy(b->want_sha256, auth->payload_sha256, 32);
    }
    if ((v = hdr(hdr_arg, "content-md5")) != NULL) {
        if (gw_s3_b64_decode(v, strlen(v), b->want_md5, 16) != 16) {
            *why = "Content-MD5 is not the base64 of an MD5";
            return GW_S3_E_INVALID_DIGEST;
        }
        b->want_md5_set = 1;
    }
    for (size_t i = 1; i < NALGS; i++) {
        if ((v = hdr(hdr_arg, ck_algs[i].header)) == NULL) {
            continue;
        }
        if (found != GW_S3_CK_NONE) {
            *why = "Expecting a single x-amz-checksum- header. Multiple checksum Types are not "
                   "allowed.";
            return GW_S3_E_INVALID_REQUEST;
        }
        found = (enum gw_s3_ck_alg)i;
        b->want_ck_len = strlen(v);
        if (b->want_ck_len >= GW_S3_CK_B64_MAX ||
            gw_s3_b64_decode(v, b->want_ck_len, (uint8_t[CM_DIGEST_MAX]){0}, CM_DIGEST_MAX) !=
                (long)ck_algs[i].raw) {
            *why = "the x-amz-checksum- header is not the base64 of a value of its algorithm";
            return GW_S3_E_INVALID_REQUEST;
        }
        memcpy(b->want_ck, v, b->want_ck_len + 1);
    }
    gw_s3_ck_init(&b->ck, found);
    return GW_S3_OK;
}

void
gw_s3_body_update(struct gw_s3_body *b, const void *data, size_t len)
{
    cm_digest_update(b->md5, data, len);
    if (b->sha256 != NULL) {
        cm_digest_update(b->sha256, data, len);
    }
    gw_s3_ck_update(&b->ck, data, len);
    b->len += len;
}

enum gw_s3_err
gw_s3_body_finish(struct gw_s3_body *b, uint8_t md5[16], char etag[GW_S3_ETAG_MAX],
                  const char **why)
{
    uint8_t md[CM_DIGEST_MAX];
    const char *dummy;

    why = why != NULL ? why : &dummy;
    *why = NULL;
    if (b->sha256 != NULL) {
        cm_digest_final(b->sha256, md);
        if (!cm_ct_equal(md, b->want_sha256, 32)) {
            return GW_S3_E_SHA256_MISMATCH;
        }
    }
    cm_digest_final(b->md5, md);
    if (b->want_md5_set && memcmp(md, b->want_md5, 16) != 0) {
        *why = "The Content-MD5 you specified did not match what we received.";
        return GW_S3_E_BAD_DIGEST;
    }
    if (b->ck.alg != GW_S3_CK_NONE && !gw_s3_ck_matches(&b->ck, b->want_ck, b->want_ck_len)) {
        *why = "The checksum you specified did not match what we received.";
        return GW_S3_E_BAD_DIGEST;
    }
    if (md5 != NULL) {
        memcpy(md5, md, 16);
    }
    if (etag != NULL) {
        gw_s3_etag(md, etag);
    }
    return GW_S3_OK;
}

void
gw_s3_body_fini(struct gw_s3_body *b)
{
    cm_digest_destroy(b->md5);
    cm_digest_destroy(b->sha256);
    gw_s3_ck_fini(&b->ck);
    b->md5 = b->sha256 = NULL;
}
