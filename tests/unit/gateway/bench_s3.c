/*
 * bench_s3.c - what the S3 building blocks cost on one core: a SigV4
 * verification (with and without the key cache), aws-chunked decoding
 * (signed chunks; an unsigned CRC32 trailer), a body's checks, and parsing
 * a CompleteMultipartUpload of 10000 parts. Label perf; prints one line
 * per figure, in CPU time.
 */
#include <strings.h>

#include "t_check.h"

#include "cm_hash.h"
#include "gw_s3_chunked.h"
#include "gw_s3_cksum.h"
#include "gw_s3_sig.h"
#include "gw_s3_xml.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const get_hdrs[][2] = {
    {"host", "examplebucket.s3.amazonaws.com"},
    {"range", "bytes=0-9"},
    {"x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"x-amz-date", "20130524T000000Z"},
    {"authorization",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
};

static const char *
hdr(void *arg, const char *lname)
{
    (void)arg;
    for (size_t i = 0; i < sizeof(get_hdrs) / sizeof(get_hdrs[0]); i++) {
        if (strcasecmp(get_hdrs[i][0], lname) == 0) {
            return get_hdrs[i][1];
        }
    }
    return NULL;
}

static const char *
trailer_hdr(void *arg, const char *lname)
{
    (void)arg;
    return strcmp(lname, "x-amz-trailer") == 0 ? "x-amz-checksum-crc32" : NULL;
}

static int
secret_of(void *arg, const char *akid, char *secret, size_t cap)
{
    (void)arg;
    (void)akid;
    snprintf(secret, cap, "%s", SECRET);
    return 0;
}

static enum gw_s3_err
drop(void *arg, const void *p, size_t n)
{
    (void)arg;
    (void)p;
    (void)n;
    return GW_S3_OK;
}

static void
bench_verify(struct gw_s3_keycache *cache, const char *what)
{
    struct gw_s3_req req = {.method = "GET", .path = "/test.txt", .path_len = 9, .hdr = hdr};
    struct gw_s3_verify_opts o = {.secret = secret_of, .now = 1369353600, .cache = cache};
    struct gw_s3_auth a;
    int n = 20000;
    double t = now_s();

    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(gw_s3_verify(&req, &o, &a, NULL), GW_S3_OK);
    }
    printf("verify (%s): %.2f us/request\n", what, (now_s() - t) / n * 1e6);
}

/* 64 MiB as aws-chunked with chunks of chunk bytes, decoded. */
static void
bench_chunked(enum gw_s3_payload mode, size_t chunk, const char *what)
{
    const size_t total = 64u << 20;
    struct gw_s3_auth a;
    struct cm_buf body;
    char prev[65], line[128];
    uint8_t *data = malloc(chunk);
    struct gw_s3_chunked *c;
    struct gw_s3_ck ck;
    double t;

    memset(&a, 0, sizeof(a));
    a.payload = mode;
    snprintf(a.amz_date, sizeof(a.amz_date), "20130524T000000Z");
    snprintf(a.scope, sizeof(a.scope), "20130524/us-east-1/s3/aws4_request");
    memset(a.signature, 'a', 64);
    gw_s3_signing_key(SECRET, "20130524", "us-east-1", a.signing_key);
    memcpy(prev, a.signature, 65);
    t_fill(data, chunk);
    cm_buf_init(&body);
    gw_s3_ck_init(&ck, GW_S3_CK_CRC32);
    for (size_t off = 0; off <= total; off += chunk) {
        size_t n = off == total ? 0 : chunk;
        if (mode == GW_S3_PAYLOAD_STREAMING) {
            char sts[400], h[65];
            uint8_t mac[32];
            cm_sha256_hex(data, n, h);
            snprintf(sts, sizeof(sts),
                     "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n"
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n%s",
                     a.amz_date, a.scope, prev, h);
            cm_hmac_sha256(a.signing_key, 32, sts, strlen(sts), mac);
            cm_hex(mac, 32, prev);
            snprintf(line, sizeof(line), "%zx;chunk-signature=%s\r\n", n, prev);
        } else {
            snprintf(line, sizeof(line), "%zx\r\n", n);
        }
        cm_buf_append(&body, line, strlen(line));
        if (n > 0) {
            cm_buf_append(&body, data, n);
            cm_buf_append(&body, "\r\n", 2);
            gw_s3_ck_update(&ck, data, n);
        }
    }
    if (mode == GW_S3_PAYLOAD_UNSIGNED_TRAILER) {
        char v[GW_S3_CK_B64_MAX];
        gw_s3_ck_value(&ck, v);
        cm_buf_printf(&body, "x-amz-checksum-crc32:%s\r\n", v);
    }
    cm_buf_append(&body, "\r\n", 2);
    t = now_s();
    CHECK_EQ_INT(gw_s3_chunked_create(&a, trailer_hdr, NULL, 0, drop, NULL, &c, NULL), GW_S3_OK);
    for (size_t off = 0; off < body.len; off += 256 << 10) {
        size_t n = body.len - off < (256 << 10) ? body.len - off : (256 << 10);
        CHECK_EQ_INT(gw_s3_chunked_feed(c, body.p + off, n, NULL), GW_S3_OK);
    }
    CHECK_EQ_INT(gw_s3_chunked_finish(c, NULL), GW_S3_OK);
    t = now_s() - t;
    printf("aws-chunked (%s): %.0f MB/s\n", what, (double)total / t / 1e6);
    gw_s3_chunked_destroy(c);
    cm_buf_fini(&body);
    gw_s3_ck_fini(&ck);
    free(data);
}

/* A signed PUT body's checks: SHA-256, MD5 (the ETag) and a CRC32 header. */
static const char *
crc_hdr(void *arg, const char *lname)
{
    return strcmp(lname, "x-amz-checksum-crc32") == 0 ? arg : NULL;
}

static void
bench_body(void)
{
    const size_t total = 64u << 20, piece = 256u << 10;
    uint8_t *data = malloc(piece);
    struct gw_s3_auth a;
    struct gw_s3_body b;
    struct gw_s3_ck ck;
    struct cm_digest *sha = cm_digest_create(CM_DIGEST_SHA256);
    char crc[GW_S3_CK_B64_MAX], etag[GW_S3_ETAG_MAX];
    double t;

    t_fill(data, piece);
    memset(&a, 0, sizeof(a));
    a.payload = GW_S3_PAYLOAD_SIGNED;
    gw_s3_ck_init(&ck, GW_S3_CK_CRC32);
    for (size_t off = 0; off < total; off += piece) {
        cm_digest_update(sha, data, piece);
        gw_s3_ck_update(&ck, data, piece);
    }
    cm_digest_final(sha, a.payload_sha256);
    gw_s3_ck_value(&ck, crc);
    t = now_s();
    CHECK_EQ_INT(gw_s3_body_init(&b, &a, crc_hdr, crc, NULL), GW_S3_OK);
    for (size_t off = 0; off < total; off += piece) {
        gw_s3_body_update(&b, data, piece);
    }
    CHECK_EQ_INT(gw_s3_body_finish(&b, NULL, etag, NULL), GW_S3_OK);
    t = now_s() - t;
    printf("body checks (SHA-256 + MD5 + CRC32): %.0f MB/s\n", (double)total / t / 1e6);
    gw_s3_body_fini(&b);
    gw_s3_ck_fini(&ck);
    cm_digest_destroy(sha);
    free(data);
}

static void
bench_xml(void)
{
    struct gw_s3_xml_complete c;
    struct cm_buf b;
    double t;

    cm_buf_init(&b);
    cm_buf_printf(&b, "<CompleteMultipartUpload xmlns=\"" GW_S3_XML_NS "\">");
    for (int i = 1; i <= GW_S3_MAX_PARTS; i++) {
        cm_buf_printf(&b, "<Part><ETag>\"%032x\"</ETag><PartNumber>%d</PartNumber></Part>", i, i);
    }
    cm_buf_printf(&b, "</CompleteMultipartUpload>");
    t = now_s();
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(gw_s3_xml_parse_complete(b.p, b.len, &c, NULL), GW_S3_OK);
        gw_s3_xml_complete_free(&c);
    }
    printf("CompleteMultipartUpload of 10000 parts (%zu bytes): %.2f ms\n", b.len,
           (now_s() - t) / 10 * 1e3);
    cm_buf_fini(&b);
}

int
main(void)
{
    struct gw_s3_keycache *cache = gw_s3_keycache_create(64);

    t_seed();
    bench_verify(NULL, "derive the key");
    bench_verify(cache, "key cache");
    gw_s3_keycache_destroy(cache);
    bench_chunked(GW_S3_PAYLOAD_STREAMING, 64 << 10, "signed 64 KiB chunks");
    bench_chunked(GW_S3_PAYLOAD_STREAMING, 1 << 20, "signed 1 MiB chunks");
    bench_chunked(GW_S3_PAYLOAD_UNSIGNED_TRAILER, 1 << 20, "unsigned 1 MiB chunks, CRC32");
    bench_body();
    bench_xml();
    return 0;
}
