/*
 * test_s3_sig.c - SigV4 verification against AWS's published examples (the
 * S3 API reference, "Signature Calculations for the Authorization Header"
 * and "Authenticating Requests: Using Query Parameters": their canonical
 * requests, strings to sign and signatures, reproduced exactly), then
 * canonicalisation rules on hand-written canonical requests, every refusal,
 * the time windows and the signing-key cache.
 */
#include <ctype.h>
#include <errno.h>
#include <strings.h>

#include "t_check.h"
#include "t_hdrs.h"

#include "cm_err.h"
#include "cm_hash.h"
#include "gw_s3_sig.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T0 1369353600 /* 2013-05-24T00:00:00Z */
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SCOPE "20130524/us-east-1/s3/aws4_request"

static const char *current_secret = SECRET;
static int secret_calls;

static int
secret_of(void *arg, const char *akid, char *secret, size_t cap)
{
    (void)arg;
    secret_calls++;
    if (strcmp(akid, AKID) != 0) {
        return CM_E_NOTFOUND;
    }
    snprintf(secret, cap, "%s", current_secret);
    return 0;
}

static struct gw_s3_keycache *cache;

static enum gw_s3_err
verify_at(const char *method, const char *path, const char *query, struct t_hdrs *h, int64_t now,
          struct gw_s3_auth *auth, struct gw_s3_sig_detail *d)
{
    struct gw_s3_req req = {
        .method = method,
        .path = path,
        .path_len = strlen(path),
        .query = query,
        .query_len = query != NULL ? strlen(query) : 0,
        .hdr = t_hdr_get,
        .hdr_arg = h,
    };
    struct gw_s3_verify_opts o = {
        .secret = secret_of, .secret_arg = NULL, .region = NULL, .now = now, .cache = cache};

    return gw_s3_verify(&req, &o, auth, d);
}

static enum gw_s3_err
verify(const char *method, const char *path, const char *query, struct t_hdrs *h,
       struct gw_s3_auth *auth)
{
    return verify_at(method, path, query, h, T0, auth, NULL);
}

/* The signature of a canonical request written out by hand: the test's own
 * string to sign over gw_s3_signing_key (which the AWS vectors pin down). */
static void
sign_canonical(const char *canonical, const char *amz_date, char out[65])
{
    char sts[512], hex[65];
    uint8_t key[32], sig[32];

    cm_sha256_hex(canonical, strlen(canonical), hex);
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%.8s/us-east-1/s3/aws4_request\n%s", amz_date,
             amz_date, hex);
    gw_s3_signing_key(current_secret, "20130524", "us-east-1", key);
    cm_hmac_sha256(key, 32, sts, strlen(sts), sig);
    cm_hex(sig, 32, out);
}

static char authz_buf[8][512];
static int authz_next;

static const char *
authz(const char *signed_headers, const char *sig)
{
    char *b = authz_buf[authz_next++ % 8];

    snprintf(b, 512, "AWS4-HMAC-SHA256 Credential=" AKID "/" SCOPE ",SignedHeaders=%s,Signature=%s",
             signed_headers, sig);
    return b;
}

/* ---- AWS's examples ---- */

/* "Example: GET Object": the first 10 bytes of test.txt. */
static void
get_object_headers(struct t_hdrs *h)
{
    t_hdr_set(h, "Host", "examplebucket.s3.amazonaws.com");
    t_hdr_set(h, "Range", "bytes=0-9");
    t_hdr_set(h, "x-amz-content-sha256", EMPTY);
    t_hdr_set(h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void
test_get_object(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;
    char *bad;

    get_object_headers(&h);
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("GET", "/test.txt", NULL, &h, T0, &a, &d), GW_S3_OK);
    CHECK_EQ_STR(d.canonical.p, "GET\n"
                                "/test.txt\n"
                                "\n"
                                "host:examplebucket.s3.amazonaws.com\n"
                                "range:bytes=0-9\n"
                                "x-amz-content-sha256:" EMPTY "\n"
                                "x-amz-date:20130524T000000Z\n"
                                "\n"
                                "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY);
    CHECK_EQ_STR(d.to_sign.p,
                 "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                 "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    gw_s3_sig_detail_fini(&d);
    CHECK_EQ_STR(a.access_key, AKID);
    CHECK_EQ_STR(a.region, "us-east-1");
    CHECK_EQ_STR(a.scope, SCOPE);
    CHECK_EQ_STR(a.amz_date, "20130524T000000Z");
    CHECK_EQ_INT(a.request_time, T0);
    CHECK_EQ_INT(a.presigned, 0);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_SIGNED);
    {
        uint8_t e[32];
        cm_sha256("", 0, e);
        CHECK(memcmp(a.payload_sha256, e, 32) == 0);
    }
    CHECK_EQ_STR(a.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    CHECK(gw_s3_header_signed(&a, "range"));
    CHECK(gw_s3_header_signed(&a, "host"));
    CHECK(!gw_s3_header_signed(&a, "x-amz-meta-a"));
    CHECK(!gw_s3_header_signed(&a, "ran"));

    /* whatever is signed, changed, fails */
    CHECK_EQ_INT(verify("HEAD", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    CHECK_EQ_INT(verify("GET", "/test.txt2", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    CHECK_EQ_INT(verify("GET", "/test.txt", "x=1", &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    t_hdr_set(&h, "Range", "bytes=0-8");
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    t_hdr_set(&h, "Range", "  bytes=0-9 ");
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
    t_hdr_set(&h, "x-amz-date", "20130524T000001Z");
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    /* an unsigned header may change */
    t_hdr_set(&h, "User-Agent", "anything");
    CHECK_EQ_INT(verify("GET", "/test.txt", "", &h, &a), GW_S3_OK);
    /* one flipped hex digit of the signature, and upper-case hex (same bytes) */
    bad = strdup(t_hdr_get(&h, "authorization"));
    bad[strlen(bad) - 1] = '0';
    t_hdr_set(&h, "Authorization", bad);
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    bad[strlen(bad) - 1] = '1';
    for (char *p = strstr(bad, "Signature=") + 10; *p; p++) {
        *p = (char)toupper((unsigned char)*p);
    }
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
    /* spaces after the commas, components in another order */
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 "
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41, "
              " Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,  "
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date");
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
    free(bad);
}

static void
test_put_object(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;
    char hex[65];

    cm_sha256_hex("Welcome to Amazon S3.", 21, hex);
    CHECK_EQ_STR(hex, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    t_hdr_set(&h, "Host", "examplebucket.s3.amazonaws.com");
    t_hdr_set(&h, "Date", "Fri, 24 May 2013 00:00:00 GMT");
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(&h, "x-amz-storage-class", "REDUCED_REDUNDANCY");
    t_hdr_set(&h, "x-amz-content-sha256", hex);
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
              "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("PUT", "/test%24file.text", NULL, &h, T0, &a, &d), GW_S3_OK);
    CHECK_EQ_STR(d.canonical.p, "PUT\n"
                                "/test%24file.text\n"
                                "\n"
                                "date:Fri, 24 May 2013 00:00:00 GMT\n"
                                "host:examplebucket.s3.amazonaws.com\n"
                                "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4"
                                "b4e99e42034a8b803f8b072\n"
                                "x-amz-date:20130524T000000Z\n"
                                "x-amz-storage-class:REDUCED_REDUNDANCY\n"
                                "\n"
                                "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
                                "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b07"
                                "2");
    CHECK_EQ_STR(d.to_sign.p,
                 "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                 "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
    gw_s3_sig_detail_fini(&d);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_SIGNED);
    {
        uint8_t want[32];
        cm_sha256("Welcome to Amazon S3.", 21, want);
        CHECK(memcmp(a.payload_sha256, want, 32) == 0);
    }
    /* the same key sent unencoded, or with lowercase hex, is the same request */
    CHECK_EQ_INT(verify("PUT", "/test$file.text", NULL, &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("PUT", "/test%24file%2etext", NULL, &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("PUT", "/test%2524file.text", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    CHECK_EQ_INT(verify("PUT", "/test%24file.text", NULL, &h, &a), GW_S3_OK);
    /* with x-amz-date gone, the Date header gives the time (here unchanged) */
    t_hdr_del(&h, "x-amz-date");
    CHECK_EQ_INT(verify("PUT", "/test%24file.text", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
}

static void
test_bucket_examples(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;

    t_hdr_set(&h, "Host", "examplebucket.s3.amazonaws.com");
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(&h, "x-amz-content-sha256", EMPTY);
    /* GET Bucket Lifecycle: a parameter without a value */
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
              "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("GET", "/", "lifecycle", &h, T0, &a, &d), GW_S3_OK);
    CHECK(strncmp(d.canonical.p, "GET\n/\nlifecycle=\nhost:", 22) == 0);
    CHECK_EQ_INT(verify("GET", "/", "lifecycle=", &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("GET", "", "lifecycle", &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("GET", "/", "policy", &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    /* GET Bucket (List Objects): parameters sorted */
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
              "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    CHECK_EQ_INT(verify_at("GET", "/", "max-keys=2&prefix=J", &h, T0, &a, &d), GW_S3_OK);
    CHECK(strncmp(d.canonical.p, "GET\n/\nmax-keys=2&prefix=J\n", 26) == 0);
    CHECK_EQ_INT(verify("GET", "/", "prefix=J&max-keys=2", &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("GET", "/", "prefix=%4a&&max-keys=2&", &h, &a), GW_S3_OK);
    CHECK_EQ_INT(verify("GET", "/", "prefix=K&max-keys=2", &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    gw_s3_sig_detail_fini(&d);
}

#define PRESIGN_Q                                                                                  \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-" \
    "1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders="   \
    "host"
#define PRESIGN_SIG "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void
test_presigned(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;
    const char *q = PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG;

    t_hdr_set(&h, "Host", "examplebucket.s3.amazonaws.com");
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0 + 100, &a, &d), GW_S3_OK);
    CHECK_EQ_STR(d.canonical.p, "GET\n/test.txt\n" PRESIGN_Q
                                "\nhost:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD");
    CHECK_EQ_STR(d.to_sign.p,
                 "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                 "3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04");
    gw_s3_sig_detail_fini(&d);
    CHECK_EQ_INT(a.presigned, 1);
    CHECK_EQ_INT(a.expires, T0 + 86400);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_UNSIGNED);
    CHECK_EQ_STR(a.access_key, AKID);
    /* the window: valid through its last second, from 15 minutes early */
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0 + 86400, &a, NULL), GW_S3_OK);
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0 + 86401, &a, &d), GW_S3_E_ACCESS_DENIED);
    CHECK_EQ_STR(d.why, "Request has expired");
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0 - 900, &a, NULL), GW_S3_OK);
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0 - 901, &a, &d), GW_S3_E_ACCESS_DENIED);
    CHECK_EQ_STR(d.why, "Request is not valid yet");
    gw_s3_sig_detail_fini(&d);
    /* the signature may sit anywhere in the query; other parameters are signed */
    CHECK_EQ_INT(verify_at("GET", "/test.txt", "X-Amz-Signature=" PRESIGN_SIG "&" PRESIGN_Q, &h, T0,
                           &a, NULL),
                 GW_S3_OK);
    CHECK_EQ_INT(verify_at("GET", "/test.txt", PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG "&a=b", &h,
                           T0, &a, NULL),
                 GW_S3_E_SIGNATURE_MISMATCH);
    t_hdr_set(&h, "Host", "otherbucket.s3.amazonaws.com");
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0, &a, NULL), GW_S3_E_SIGNATURE_MISMATCH);
    t_hdr_set(&h, "Host", "examplebucket.s3.amazonaws.com");
    /* an Authorization header as well */
    t_hdr_set(&h, "Authorization", "AWS4-HMAC-SHA256 Credential=x");
    CHECK_EQ_INT(verify_at("GET", "/test.txt", q, &h, T0, &a, NULL), GW_S3_E_INVALID_ARGUMENT);
    t_hdr_del(&h, "Authorization");
    /* malformed parameters */
    {
        static const char *const bad[] = {
            "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"
            "east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=0&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=-5&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-"
            "Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=range&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130525%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
            PRESIGN_Q "&X-Amz-Signature=abc",
            PRESIGN_Q,
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            CHECK_EQ_INT(verify("GET", "/test.txt", bad[i], &h, &a), GW_S3_E_AUTH_QUERY_ERROR);
        }
    }
    /* a streaming payload cannot ride on a presigned URL */
    {
        char canonical[1024], sig[65], q2[1024];
        const char *pq =
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus"
            "-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-"
            "SignedHeaders=host%3Bx-amz-content-sha256";

        t_hdr_set(&h, "x-amz-content-sha256",
                  "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
        snprintf(canonical, sizeof(canonical),
                 "PUT\n/k\n%s\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:%s\n\n"
                 "host;x-amz-content-sha256\n%s",
                 pq, t_hdr_get(&h, "x-amz-content-sha256"), t_hdr_get(&h, "x-amz-content-sha256"));
        sign_canonical(canonical, "20130524T000000Z", sig);
        snprintf(q2, sizeof(q2), "%s&X-Amz-Signature=%s", pq, sig);
        CHECK_EQ_INT(verify("PUT", "/k", q2, &h, &a), GW_S3_OK);
        CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_SIGNED);
        t_hdr_set(&h, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
        CHECK_EQ_INT(verify("PUT", "/k", q2, &h, &a), GW_S3_E_INVALID_REQUEST);
    }
}

/* The headers of AWS's chunked-upload examples: the seed signatures. */
static void
chunked_headers(struct t_hdrs *h, int trailer)
{
    t_hdr_set(h, "Host", "s3.amazonaws.com");
    t_hdr_set(h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(h, "x-amz-storage-class", "REDUCED_REDUNDANCY");
    t_hdr_set(h, "Content-Encoding", "aws-chunked");
    t_hdr_set(h, "x-amz-decoded-content-length", "66560");
    if (!trailer) {
        t_hdr_set(h, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
        t_hdr_set(h, "Content-Length", "66824");
        t_hdr_set(h, "Authorization",
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                  "aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-"
                  "sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature="
                  "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    } else {
        t_hdr_set(h, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER");
        t_hdr_set(h, "x-amz-trailer", "x-amz-checksum-crc32c");
        t_hdr_set(
            h, "Authorization",
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request,SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
            "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,Signature="
            "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
    }
}

static void
test_chunked_seed(void)
{
    struct t_hdrs h = {0}, h2 = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;

    chunked_headers(&h, 0);
    gw_s3_sig_detail_init(&d);
    CHECK_EQ_INT(verify_at("PUT", "/examplebucket/chunkObject.txt", NULL, &h, T0, &a, &d),
                 GW_S3_OK);
    CHECK_EQ_STR(d.to_sign.p,
                 "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                 "cee3fed04b70f867d036f722359b0b1f2f0e5dc0efadbc082b76c4c60e316455");
    gw_s3_sig_detail_fini(&d);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_STREAMING);
    CHECK_EQ_STR(a.signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    chunked_headers(&h2, 1);
    CHECK_EQ_INT(verify("PUT", "/examplebucket/chunkObject.txt", NULL, &h2, &a), GW_S3_OK);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_STREAMING_TRAILER);
    CHECK_EQ_STR(a.signature, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
}

/* ---- canonical forms, on hand-written canonical requests ---- */

static void
test_canonical(void)
{
    struct cm_buf b;
    static const struct {
        const char *in, *want;
    } uris[] = {
        {"", "/"},
        {"/", "/"},
        {"/bucket/a%20b%2Fc%7e$", "/bucket/a%20b/c~%24"},
        {"/a%2520b", "/a%2520b"},         /* a literal "%20" is not decoded twice */
        {"/./a/../b//c", "/./a/../b//c"}, /* S3 does not normalise */
        {"/a+b", "/a%2Bb"},
        {"/%", "/%25"},
        {"/%4", "/%254"},
        {"/%zz", "/%25zz"},
        {"/%41", "/A"},
        {"/\xc3\xa9", "/%C3%A9"},
    };
    static const struct {
        const char *in, *want;
        int presigned;
    } queries[] = {
        {"", "", 0},
        {"b=2&a=z&a=y&c&d=%7e&e=a+b&f=%2F", "a=y&a=z&b=2&c=&d=~&e=a%2Bb&f=%2F", 0},
        {"&&x=1&&", "x=1", 0},
        {"prefix=a%20b&delimiter=/", "delimiter=%2F&prefix=a%20b", 0},
        {"X-Amz-Signature=00&a=1", "a=1", 1},
        {"X-Amz-Signature=00&a=1", "X-Amz-Signature=00&a=1", 0},
        {"a=%3D%26&a==", "a=%3D&a=%3D%26", 0},
        {"aa=1&a=2&a-=3", "a=2&a-=3&aa=1", 0},
    };

    cm_buf_init(&b);
    for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
        b.len = 0;
        gw_s3_canonical_uri(&b, uris[i].in, strlen(uris[i].in));
        cm_buf_append(&b, "", 0);
        CHECK_EQ_STR(b.p, uris[i].want);
    }
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
        b.len = 0;
        CHECK_EQ_INT(
            gw_s3_canonical_query(&b, queries[i].in, strlen(queries[i].in), queries[i].presigned),
            0);
        cm_buf_append(&b, "", 0);
        CHECK_EQ_STR(b.p, queries[i].want);
    }
    {
        char q[GW_S3_QUERY_PARAMS_MAX * 4 + 8];
        size_t n = 0;
        for (int i = 0; i <= GW_S3_QUERY_PARAMS_MAX; i++) {
            n += (size_t)snprintf(q + n, sizeof(q) - n, "%s%c", i ? "&" : "", 'a' + i % 26);
        }
        b.len = 0;
        CHECK_EQ_INT(gw_s3_canonical_query(&b, q, n, 0), CM_E_TOOBIG);
        b.len = 0;
        CHECK_EQ_INT(gw_s3_canonical_query(&b, q, n - 2, 0), 0);
    }
    cm_buf_fini(&b);
}

/* A request whose canonical form is written out by hand must verify. */
static enum gw_s3_err
verify_handmade(const char *method, const char *path, const char *query, struct t_hdrs *h,
                const char *signed_headers, const char *canonical, struct gw_s3_auth *a)
{
    char sig[65];

    sign_canonical(canonical, "20130524T000000Z", sig);
    t_hdr_set(h, "Authorization", authz(signed_headers, sig));
    return verify(method, path, query, h, a);
}

static void
test_handmade(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;

    t_hdr_set(&h, "Host", "b.example:9310");
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(&h, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    t_hdr_set(&h, "x-amz-meta-a", " \t x   y \t z  ");
    t_hdr_set(&h, "x-amz-meta-empty", "");
    CHECK_EQ_INT(verify_handmade("PUT", "/k%20%2F~.txt", "uploadId=a%2Bb&partNumber=3", &h,
                                 "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-"
                                 "absent;x-amz-meta-empty",
                                 "PUT\n/k%20/~.txt\npartNumber=3&uploadId=a%2Bb\n"
                                 "host:b.example:9310\n"
                                 "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"
                                 "x-amz-date:20130524T000000Z\n"
                                 "x-amz-meta-a:x y z\n"
                                 "x-amz-meta-absent:\n"
                                 "x-amz-meta-empty:\n"
                                 "\n"
                                 "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-"
                                 "absent;x-amz-meta-empty\n"
                                 "UNSIGNED-PAYLOAD",
                                 &a),
                 GW_S3_OK);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_UNSIGNED);
    CHECK(gw_s3_header_signed(&a, "x-amz-meta-a"));
    /* a client that signed its own (unusual) encoding of the path: as sent */
    CHECK_EQ_INT(verify_handmade("GET", "/a%2fb+c", NULL, &h,
                                 "host;x-amz-content-sha256;x-amz-date",
                                 "GET\n/a%2fb+c\n\nhost:b.example:9310\n"
                                 "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"
                                 "x-amz-date:20130524T000000Z\n\n"
                                 "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD",
                                 &a),
                 GW_S3_OK);
    /* the Date header when there is no x-amz-date */
    h.n = 0;
    t_hdr_set(&h, "Host", "h");
    t_hdr_set(&h, "Date", "Fri, 24 May 2013 00:00:00 GMT");
    t_hdr_set(&h, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    CHECK_EQ_INT(verify_handmade("PUT", "/k", NULL, &h, "date;host;x-amz-content-sha256",
                                 "PUT\n/k\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:h\n"
                                 "x-amz-content-sha256:STREAMING-UNSIGNED-PAYLOAD-TRAILER\n\n"
                                 "date;host;x-amz-content-sha256\n"
                                 "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                                 &a),
                 GW_S3_OK);
    CHECK_EQ_INT(a.payload, GW_S3_PAYLOAD_UNSIGNED_TRAILER);
    CHECK_EQ_STR(a.amz_date, "20130524T000000Z");
    t_hdr_set(&h, "Date", "Fri, 24 May 2013 00:00:00 UTC");
    CHECK_EQ_INT(verify("PUT", "/k", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
    t_hdr_set(&h, "Date", "Fri, 30 Feb 2013 00:00:00 GMT");
    CHECK_EQ_INT(verify("PUT", "/k", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
}

/* ---- refusals ---- */

static void
test_refusals(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;
    static const char *const malformed[] = {
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=abc",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2013052/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524//s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=Host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;;x-amz-content-sha256,Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256,Signature=" EMPTY ",Signature=" EMPTY,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256,Signature=" EMPTY ",Extra=1",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256,Signature",
        /* the credential's date is not the request's */
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130523/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY,
    };

    t_hdr_set(&h, "Host", "h");
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(&h, "x-amz-content-sha256", EMPTY);
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
    CHECK_EQ_INT(verify("GET", "/", "AWSAccessKeyId=x&Signature=y&Expires=1", &h, &a),
                 GW_S3_E_INVALID_REQUEST);
    t_hdr_set(&h, "Authorization", "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_REQUEST);
    t_hdr_set(&h, "Authorization", "Bearer abc");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_ARGUMENT);
    t_hdr_set(&h, "Authorization", "AWS4-HMAC-SHA256X Credential=x");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_AUTH_HEADER_MALFORMED);
    gw_s3_sig_detail_init(&d);
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        t_hdr_set(&h, "Authorization", malformed[i]);
        d.why = NULL;
        CHECK_EQ_INT(verify_at("GET", "/", NULL, &h, T0, &a, &d), GW_S3_E_AUTH_HEADER_MALFORMED);
        CHECK(d.why != NULL);
    }
    gw_s3_sig_detail_fini(&d);
    t_hdr_set(&h, "Authorization", authz("host;x-amz-content-sha256;x-amz-date", EMPTY));
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    /* an unknown key, before the signature is looked at */
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIDUNKNOWN/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" EMPTY);
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_ACCESS_KEY);
    /* a region other than the configured one */
    {
        struct gw_s3_req req = {
            .method = "GET", .path = "/", .path_len = 1, .hdr = t_hdr_get, .hdr_arg = &h};
        struct gw_s3_verify_opts o = {.secret = secret_of, .region = "eu-west-1", .now = T0};

        t_hdr_set(&h, "Authorization", authz("host;x-amz-content-sha256;x-amz-date", EMPTY));
        CHECK_EQ_INT(gw_s3_verify(&req, &o, &a, NULL), GW_S3_E_AUTH_HEADER_MALFORMED);
        o.region = "us-east-1";
        CHECK_EQ_INT(gw_s3_verify(&req, &o, &a, NULL), GW_S3_E_SIGNATURE_MISMATCH);
    }
    /* x-amz-content-sha256: required, one of the known forms */
    t_hdr_set(&h, "x-amz-content-sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_ARGUMENT);
    t_hdr_set(&h, "x-amz-content-sha256", "abc");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_ARGUMENT);
    t_hdr_del(&h, "x-amz-content-sha256");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_INVALID_REQUEST);
    /* the date */
    t_hdr_set(&h, "x-amz-content-sha256", EMPTY);
    t_hdr_set(&h, "x-amz-date", "20130524T000000");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
    t_hdr_set(&h, "x-amz-date", "20130532T000000Z");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
    t_hdr_del(&h, "x-amz-date");
    CHECK_EQ_INT(verify("GET", "/", NULL, &h, &a), GW_S3_E_ACCESS_DENIED);
}

/* The clock: 15 minutes either way, then RequestTimeTooSkewed, checked
 * before the key is even looked up. */
static void
test_skew(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    char canonical[512], sig[65];

    t_hdr_set(&h, "Host", "h");
    t_hdr_set(&h, "x-amz-date", "20130524T000000Z");
    t_hdr_set(&h, "x-amz-content-sha256", EMPTY);
    snprintf(canonical, sizeof(canonical),
             "GET\n/\n\nhost:h\nx-amz-content-sha256:%s\nx-amz-date:20130524T000000Z\n\n"
             "host;x-amz-content-sha256;x-amz-date\n%s",
             EMPTY, EMPTY);
    sign_canonical(canonical, "20130524T000000Z", sig);
    t_hdr_set(&h, "Authorization", authz("host;x-amz-content-sha256;x-amz-date", sig));
    CHECK_EQ_INT(verify_at("GET", "/", NULL, &h, T0 + 900, &a, NULL), GW_S3_OK);
    CHECK_EQ_INT(verify_at("GET", "/", NULL, &h, T0 - 900, &a, NULL), GW_S3_OK);
    secret_calls = 0;
    CHECK_EQ_INT(verify_at("GET", "/", NULL, &h, T0 + 901, &a, NULL), GW_S3_E_TIME_SKEWED);
    CHECK_EQ_INT(verify_at("GET", "/", NULL, &h, T0 - 901, &a, NULL), GW_S3_E_TIME_SKEWED);
    CHECK_EQ_INT(secret_calls, 0);
}

/* The cache gives the same keys, and a rotated secret is not served from it. */
static void
test_cache(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    uint8_t k1[32];

    CHECK(gw_s3_keycache_create(0) == NULL);
    CHECK(gw_s3_keycache_create(65537) == NULL);
    gw_s3_keycache_destroy(NULL);
    cache = gw_s3_keycache_create(3);
    CHECK(cache != NULL);
    get_object_headers(&h);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
    }
    gw_s3_signing_key(SECRET, "20130524", "us-east-1", k1);
    CHECK(memcmp(a.signing_key, k1, 32) == 0);
    current_secret = "rotated";
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
    current_secret = SECRET;
    CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
    gw_s3_keycache_destroy(cache);
    cache = NULL;
}

/* Date keys (what a gateway gets from the controller instead of secrets):
 * kDate = HMAC("AWS4" + secret, date) verifies exactly as the secret does;
 * an unknown key and a date without a date key are refused; a changed
 * date key misses the cache, and entries derived from secrets and from
 * date keys never stand in for one another. */
static const char *date_key_secret = SECRET;
static const char *date_key_date = "20130524";
static int date_key_calls;

static int
date_key_of(void *arg, const char *akid, const char *date, uint8_t kdate[32])
{
    char k0[128];

    (void)arg;
    date_key_calls++;
    if (strcmp(akid, AKID) != 0) {
        return CM_E_NOTFOUND;
    }
    if (strcmp(date, date_key_date) != 0) {
        return -ERANGE;
    }
    snprintf(k0, sizeof(k0), "AWS4%s", date_key_secret);
    cm_hmac_sha256(k0, strlen(k0), date, strlen(date), kdate);
    return 0;
}

static enum gw_s3_err
verify_date_key(struct t_hdrs *h, struct gw_s3_auth *a, struct gw_s3_sig_detail *d)
{
    struct gw_s3_req req = {
        .method = "GET", .path = "/test.txt", .path_len = 9, .hdr = t_hdr_get, .hdr_arg = h};
    struct gw_s3_verify_opts o = {
        .date_key = date_key_of, .region = NULL, .now = T0, .cache = cache};

    return gw_s3_verify(&req, &o, a, d);
}

static void
test_date_keys(void)
{
    struct t_hdrs h = {0};
    struct gw_s3_auth a;
    struct gw_s3_sig_detail d;
    uint8_t k1[32], kdate[32];

    get_object_headers(&h);
    gw_s3_signing_key(SECRET, "20130524", "us-east-1", k1);
    for (int pass = 0; pass < 2; pass++) {
        cache = pass == 0 ? NULL : gw_s3_keycache_create(4);
        date_key_calls = 0;
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(verify_date_key(&h, &a, NULL), GW_S3_OK);
            CHECK(memcmp(a.signing_key, k1, 32) == 0);
        }
        CHECK_EQ_INT(date_key_calls, 3); /* looked up every time: it may change */
        /* kDate of the secret gives the same chain */
        CHECK_EQ_INT(date_key_of(NULL, AKID, "20130524", kdate), 0);
        {
            uint8_t k2[32];
            gw_s3_signing_key_from_date(kdate, "us-east-1", k2);
            CHECK(memcmp(k1, k2, 32) == 0);
        }
        /* a changed date key (the secret was rotated) misses the cache */
        date_key_secret = "rotated";
        CHECK_EQ_INT(verify_date_key(&h, &a, NULL), GW_S3_E_SIGNATURE_MISMATCH);
        date_key_secret = SECRET;
        CHECK_EQ_INT(verify_date_key(&h, &a, NULL), GW_S3_OK);
        /* the secret path and the date key path share the cache safely */
        CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_OK);
        CHECK(memcmp(a.signing_key, k1, 32) == 0);
        current_secret = "rotated";
        CHECK_EQ_INT(verify("GET", "/test.txt", NULL, &h, &a), GW_S3_E_SIGNATURE_MISMATCH);
        CHECK_EQ_INT(verify_date_key(&h, &a, NULL), GW_S3_OK);
        current_secret = SECRET;
        /* no date key for the credential date */
        date_key_date = "20130523";
        gw_s3_sig_detail_init(&d);
        CHECK_EQ_INT(verify_date_key(&h, &a, &d), GW_S3_E_ACCESS_DENIED);
        CHECK(d.why != NULL && strstr(d.why, "outside") != NULL);
        gw_s3_sig_detail_fini(&d);
        date_key_date = "20130524";
        gw_s3_keycache_destroy(cache);
        cache = NULL;
    }
    /* an unknown key */
    t_hdr_set(&h, "Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIDUNKNOWN/20130524/us-east-1/s3/aws4_request,"
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" EMPTY);
    CHECK_EQ_INT(verify_date_key(&h, &a, NULL), GW_S3_E_INVALID_ACCESS_KEY);
}

static void
test_dates(void)
{
    int64_t t;

    CHECK_EQ_INT(gw_s3_parse_amz_date("19700101T000000Z", &t), 0);
    CHECK_EQ_INT(t, 0);
    CHECK_EQ_INT(gw_s3_parse_amz_date("20130524T000000Z", &t), 0);
    CHECK_EQ_INT(t, T0);
    CHECK_EQ_INT(gw_s3_parse_amz_date("20240229T235959Z", &t), 0);
    CHECK_EQ_INT(t, 1709251199);
    CHECK_EQ_INT(gw_s3_parse_amz_date("21000301T000000Z", &t), 0);
    CHECK_EQ_INT(t, 4107542400);
    CHECK_EQ_INT(gw_s3_parse_amz_date("20230229T000000Z", &t), -1);
    CHECK_EQ_INT(gw_s3_parse_amz_date("21000229T000000Z", &t), -1);
    CHECK_EQ_INT(gw_s3_parse_amz_date("20130524T240000Z", &t), -1);
    CHECK_EQ_INT(gw_s3_parse_amz_date("20130524 000000Z", &t), -1);
    CHECK_EQ_INT(gw_s3_parse_amz_date("2013052aT000000Z", &t), -1);
    CHECK_EQ_INT(gw_s3_parse_amz_date(NULL, &t), -1);
}

int
main(void)
{
    t_seed();
    test_get_object();
    test_put_object();
    test_bucket_examples();
    test_presigned();
    test_chunked_seed();
    test_canonical();
    test_handmade();
    test_refusals();
    test_skew();
    test_cache();
    test_date_keys();
    test_dates();
    return 0;
}
