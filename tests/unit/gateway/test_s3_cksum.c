/*
 * test_s3_cksum.c - S3 flexible checksums (values as botocore computes
 * them), base64 both ways (strict decoding), ETags of single and multipart
 * uploads (against Python's hashlib), and a body's checks: the signed
 * payload's SHA-256, Content-MD5 and x-amz-checksum-* headers.
 */
#include "t_check.h"
#include "t_hdrs.h"

#include "cm_ec.h"
#include "cm_hash.h"
#include "gw_s3_cksum.h"

static void
check_value(enum gw_s3_ck_alg alg, const char *in, const char *want)
{
    struct gw_s3_ck ck;
    char out[GW_S3_CK_B64_MAX];
    size_t n = strlen(in), cut = n / 2;

    gw_s3_ck_init(&ck, alg);
    gw_s3_ck_update(&ck, in, cut);
    gw_s3_ck_update(&ck, in + cut, n - cut);
    CHECK_EQ_INT(gw_s3_ck_value(&ck, out), strlen(want));
    CHECK_EQ_STR(out, want);
    gw_s3_ck_update(&ck, "more", 4); /* ignored once the value is out */
    CHECK_EQ_INT(gw_s3_ck_value(&ck, out), strlen(want));
    CHECK_EQ_STR(out, want);
    CHECK(gw_s3_ck_matches(&ck, want, strlen(want)));
    gw_s3_ck_fini(&ck);
}

static void
test_checksums(void)
{
    struct gw_s3_ck ck;
    char out[GW_S3_CK_B64_MAX];

    check_value(GW_S3_CK_CRC32, "abc", "NSRBwg==");
    check_value(GW_S3_CK_CRC32C, "", "AAAAAA==");
    check_value(GW_S3_CK_CRC64NVME, "123456789", "rosUhgp5mIg=");
    check_value(GW_S3_CK_SHA1, "abc", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
    check_value(GW_S3_CK_SHA256, "abc", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    {
        /* AWS's trailer example: CRC32C of 66560 'a's */
        static char a[66560];
        memset(a, 'a', sizeof(a));
        gw_s3_ck_init(&ck, GW_S3_CK_CRC32C);
        gw_s3_ck_update(&ck, a, sizeof(a));
        gw_s3_ck_value(&ck, out);
        CHECK_EQ_STR(out, "sOO8/Q==");
        gw_s3_ck_fini(&ck);
    }
    gw_s3_ck_init(&ck, GW_S3_CK_CRC32);
    gw_s3_ck_update(&ck, "abc", 3);
    CHECK(!gw_s3_ck_matches(&ck, "NSRBwh==", 8)); /* non-zero bits under the padding */
    CHECK(!gw_s3_ck_matches(&ck, "NSRBwg", 6));   /* no padding */
    CHECK(!gw_s3_ck_matches(&ck, "NSRBwgAA", 8)); /* 6 bytes */
    CHECK(!gw_s3_ck_matches(&ck, "NSRBwA==", 8)); /* another value */
    CHECK(!gw_s3_ck_matches(&ck, " NSRBwg=", 8));
    gw_s3_ck_fini(&ck);
    gw_s3_ck_init(&ck, GW_S3_CK_NONE);
    gw_s3_ck_update(&ck, "abc", 3);
    CHECK_EQ_INT(gw_s3_ck_value(&ck, out), 0);
    CHECK_EQ_STR(out, "");
    CHECK(!gw_s3_ck_matches(&ck, "", 0));
    gw_s3_ck_fini(&ck);

    CHECK_EQ_INT(gw_s3_ck_alg_parse("CRC32", 5), GW_S3_CK_CRC32);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("crc32c", 6), GW_S3_CK_CRC32C);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("CRC64NVME", 9), GW_S3_CK_CRC64NVME);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("SHA1", 4), GW_S3_CK_SHA1);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("sha256", 6), GW_S3_CK_SHA256);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("MD5", 3), GW_S3_CK_NONE);
    CHECK_EQ_INT(gw_s3_ck_alg_parse("CRC3", 4), GW_S3_CK_NONE);
    CHECK_EQ_INT(gw_s3_ck_alg_of_header("X-Amz-Checksum-CRC32", 20), GW_S3_CK_CRC32);
    CHECK_EQ_INT(gw_s3_ck_alg_of_header("x-amz-checksum-crc32", 19), GW_S3_CK_NONE);
    CHECK_EQ_STR(gw_s3_ck_header_name(GW_S3_CK_CRC64NVME), "x-amz-checksum-crc64nvme");
    CHECK_EQ_STR(gw_s3_ck_alg_name(GW_S3_CK_SHA256), "SHA256");
    CHECK_EQ_STR(gw_s3_ck_alg_name((enum gw_s3_ck_alg)99), "");
}

static void
test_base64(void)
{
    static const char *const v[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    static const char *const bad[] = {"Zg=",  "Zg",       "Z===",  "====", "Zm9v=", "Zm=v",
                                      "Zh==", "Zm9vYmF=", "Zm9\n", "Zm-v", "Zm_v"};
    char out[64];
    uint8_t dec[64];

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        CHECK_EQ_INT(gw_s3_b64_encode(v[i][0], strlen(v[i][0]), out), strlen(v[i][1]));
        CHECK_EQ_STR(out, v[i][1]);
        CHECK_EQ_INT(gw_s3_b64_decode(v[i][1], strlen(v[i][1]), dec, sizeof(dec)), strlen(v[i][0]));
        CHECK(memcmp(dec, v[i][0], strlen(v[i][0])) == 0);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(gw_s3_b64_decode(bad[i], strlen(bad[i]), dec, sizeof(dec)), -1);
    }
    CHECK_EQ_INT(gw_s3_b64_decode("Zm9vYmFy", 8, dec, 5), -1);
    CHECK_EQ_INT(gw_s3_b64_decode("Zm9vYmE=", 8, dec, 5), 5);
    for (int i = 0; i < 500; i++) {
        uint8_t raw[40], back[40];
        size_t n = (size_t)t_range(0, 40);

        t_fill(raw, n);
        gw_s3_b64_encode(raw, n, out);
        CHECK_EQ_INT(gw_s3_b64_decode(out, strlen(out), back, sizeof(back)), n);
        CHECK(memcmp(raw, back, n) == 0);
    }
}

static void
test_etags(void)
{
    uint8_t md5s[32], md[CM_DIGEST_MAX];
    char etag[GW_S3_ETAG_MAX];

    cm_digest_once(CM_DIGEST_MD5, "hello", 5, md);
    memcpy(md5s, md, 16);
    cm_digest_once(CM_DIGEST_MD5, "world", 5, md);
    memcpy(md5s + 16, md, 16);
    gw_s3_etag(md5s, etag);
    CHECK_EQ_STR(etag, "\"5d41402abc4b2a76b9719d911017c592\"");
    gw_s3_etag_multipart(md5s, 2, etag);
    CHECK_EQ_STR(etag, "\"065947336a2f2a95ba8899f3675c3be6-2\"");
    gw_s3_etag_multipart(md5s, 1, etag);
    CHECK_EQ_STR(etag, "\"62109206880d38a4010a98e11243924a-1\"");
    {
        static uint8_t many[10000 * 16];
        memset(many, 7, sizeof(many));
        gw_s3_etag_multipart(many, 10000, etag);
        CHECK(strlen(etag) == 2 + 32 + 6);
        CHECK(strcmp(etag + 33, "-10000\"") == 0);
    }
    CHECK_EQ_INT(gw_s3_etag_md5("\"5d41402abc4b2a76b9719d911017c592\"", 34, md), 0);
    CHECK(memcmp(md, md5s, 16) == 0);
    CHECK_EQ_INT(gw_s3_etag_md5("5D41402ABC4B2A76B9719D911017C592", 32, md), 0);
    CHECK(memcmp(md, md5s, 16) == 0);
    CHECK_EQ_INT(gw_s3_etag_md5("\"5d41402abc4b2a76b9719d911017c59\"", 33, md), -1);
    CHECK_EQ_INT(gw_s3_etag_md5("5d41402abc4b2a76b9719d911017c59g", 32, md), -1);
    CHECK_EQ_INT(gw_s3_etag_md5("\"065947336a2f2a95ba8899f3675c3be6-2\"", 36, md), -1);
}

static enum gw_s3_err
body_run(const struct gw_s3_auth *auth, struct t_hdrs *h, const char *data, char etag[],
         enum gw_s3_err *init_err)
{
    struct gw_s3_body b;
    enum gw_s3_err e;
    size_t n = strlen(data);

    *init_err = gw_s3_body_init(&b, auth, t_hdr_get, h, NULL);
    if (*init_err != GW_S3_OK) {
        gw_s3_body_fini(&b);
        return *init_err;
    }
    for (size_t i = 0; i < n; i++) {
        gw_s3_body_update(&b, data + i, 1);
    }
    CHECK_EQ_INT(b.len, n);
    e = gw_s3_body_finish(&b, NULL, etag, NULL);
    gw_s3_body_fini(&b);
    return e;
}

static void
test_body(void)
{
    struct gw_s3_auth auth;
    struct t_hdrs h = {0};
    char etag[GW_S3_ETAG_MAX];
    enum gw_s3_err ie;
    uint8_t md[CM_DIGEST_MAX];

    memset(&auth, 0, sizeof(auth));
    auth.payload = GW_S3_PAYLOAD_SIGNED;
    cm_sha256("Welcome to Amazon S3.", 21, auth.payload_sha256);
    CHECK_EQ_INT(body_run(&auth, &h, "Welcome to Amazon S3.", etag, &ie), GW_S3_OK);
    cm_digest_once(CM_DIGEST_MD5, "Welcome to Amazon S3.", 21, md);
    {
        char want[GW_S3_ETAG_MAX];
        gw_s3_etag(md, want);
        CHECK_EQ_STR(etag, want);
    }
    CHECK_EQ_INT(body_run(&auth, &h, "Welcome to Amazon S3!", etag, &ie), GW_S3_E_SHA256_MISMATCH);
    auth.payload = GW_S3_PAYLOAD_UNSIGNED;
    CHECK_EQ_INT(body_run(&auth, &h, "Welcome to Amazon S3!", etag, &ie), GW_S3_OK);
    CHECK_EQ_INT(body_run(NULL, &h, "", etag, &ie), GW_S3_OK);
    CHECK_EQ_STR(etag, "\"d41d8cd98f00b204e9800998ecf8427e\"");

    /* Content-MD5 */
    h.kv[0] = "Content-MD5";
    h.kv[1] = "1B2M2Y8AsgTpgAmY7PhCfg==";
    h.n = 1;
    CHECK_EQ_INT(body_run(NULL, &h, "", etag, &ie), GW_S3_OK);
    CHECK_EQ_INT(body_run(NULL, &h, "x", etag, &ie), GW_S3_E_BAD_DIGEST);
    h.kv[1] = "1B2M2Y8AsgTpgAmY7PhCfg";
    CHECK_EQ_INT(body_run(NULL, &h, "", etag, &ie), GW_S3_E_INVALID_DIGEST);
    h.kv[1] = "d41d8cd98f00b204e9800998ecf8427e";
    CHECK_EQ_INT(body_run(NULL, &h, "", etag, &ie), GW_S3_E_INVALID_DIGEST);

    /* one x-amz-checksum-* header, as botocore sends over http */
    h.kv[0] = "x-amz-checksum-crc32";
    h.kv[1] = "NSRBwg==";
    CHECK_EQ_INT(body_run(NULL, &h, "abc", etag, &ie), GW_S3_OK);
    CHECK_EQ_INT(body_run(NULL, &h, "abd", etag, &ie), GW_S3_E_BAD_DIGEST);
    h.kv[0] = "x-amz-checksum-sha256";
    h.kv[1] = "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=";
    CHECK_EQ_INT(body_run(NULL, &h, "abc", etag, &ie), GW_S3_OK);
    h.kv[1] = "NSRBwg==";
    CHECK_EQ_INT(body_run(NULL, &h, "abc", etag, &ie), GW_S3_E_INVALID_REQUEST);
    h.kv[2] = "x-amz-checksum-crc32";
    h.kv[3] = "NSRBwg==";
    h.kv[1] = "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=";
    h.n = 2;
    CHECK_EQ_INT(body_run(NULL, &h, "abc", etag, &ie), GW_S3_E_INVALID_REQUEST);
    /* all three checks at once, the SHA-256 first */
    h.kv[0] = "Content-MD5";
    h.kv[1] = "kAFQmDzST7DWlj99KOF/cg==";
    auth.payload = GW_S3_PAYLOAD_SIGNED;
    cm_sha256("abc", 3, auth.payload_sha256);
    CHECK_EQ_INT(body_run(&auth, &h, "abc", etag, &ie), GW_S3_OK);
    CHECK_EQ_STR(etag, "\"900150983cd24fb0d6963f7d28e17f72\"");
    CHECK_EQ_INT(body_run(&auth, &h, "abd", etag, &ie), GW_S3_E_SHA256_MISMATCH);
}

/* The CRC of a concatenation from the CRCs of its pieces, against CRCs of
 * the whole over random splits (empty pieces and odd lengths included). */
static void
test_crc64_combine(void)
{
    static uint8_t buf[70000];

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (uint8_t)t_rand();
    }
    CHECK_EQ_INT(cm_crc64(0, "123456789", 9), 0x995dc9bbdf1939faull); /* CRC-64/XZ check */
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)t_rand() % sizeof(buf), a = n ? (size_t)t_rand() % (n + 1) : 0;
        uint64_t whole = cm_crc64(0, buf, n);
        uint64_t ca = cm_crc64(0, buf, a), cb = cm_crc64(0, buf + a, n - a);

        CHECK_EQ_INT(gw_s3_crc64_combine(ca, cb, n - a), whole);
    }
    /* three pieces, chained */
    {
        uint64_t c = cm_crc64(0, buf, 100);

        c = gw_s3_crc64_combine(c, cm_crc64(0, buf + 100, 5000), 5000);
        c = gw_s3_crc64_combine(c, cm_crc64(0, buf + 5100, 1), 1);
        CHECK_EQ_INT(c, cm_crc64(0, buf, 5101));
    }
}

int
main(void)
{
    t_seed();
    test_checksums();
    test_base64();
    test_etags();
    test_crc64_combine();
    test_body();
    return 0;
}
