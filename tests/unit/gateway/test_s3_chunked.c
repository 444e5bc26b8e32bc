/*
 * test_s3_chunked.c - the aws-chunked decoder: AWS's two published chunked
 * uploads (66560 bytes of 'a' as 64 KiB + 1 KiB, with and without a signed
 * CRC32C trailer: the exact chunk and trailer signatures of the S3 docs) fed
 * in random pieces; botocore's unsigned-trailer framing; random bodies in
 * every mode and algorithm; every kind of corruption and truncation.
 */
#include "t_check.h"
#include "t_hdrs.h"

#include "cm_hash.h"
#include "gw_s3_chunked.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SEED_TRAILER "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"

/* What a verified request of AWS's examples gives the decoder. */
static void
example_auth(struct gw_s3_auth *a, enum gw_s3_payload mode, const char *seed)
{
    memset(a, 0, sizeof(*a));
    a->payload = mode;
    snprintf(a->amz_date, sizeof(a->amz_date), "20130524T000000Z");
    snprintf(a->scope, sizeof(a->scope), "20130524/us-east-1/s3/aws4_request");
    snprintf(a->signature, sizeof(a->signature), "%s", seed);
    gw_s3_signing_key(SECRET, "20130524", "us-east-1", a->signing_key);
}

/* ---- the test's own encoder (checked against AWS's signatures below) ---- */

struct enc {
    const struct gw_s3_auth *a;
    char prev[65];
    int sigs;
    struct cm_buf out;
};

static void
enc_init(struct enc *e, const struct gw_s3_auth *a)
{
    e->a = a;
    e->sigs = a->payload != GW_S3_PAYLOAD_UNSIGNED_TRAILER;
    memcpy(e->prev, a->signature, 65);
    cm_buf_init(&e->out);
}

static void
enc_sign(struct enc *e, const char *prefix, const char *hash_hex)
{
    char sts[512];
    uint8_t sig[32];

    snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", prefix, e->a->amz_date, e->a->scope, e->prev,
             hash_hex);
    cm_hmac_sha256(e->a->signing_key, 32, sts, strlen(sts), sig);
    cm_hex(sig, 32, e->prev);
}

static void
enc_chunk(struct enc *e, const void *data, size_t n)
{
    if (e->sigs) {
        char h[65], rest[140];
        cm_sha256_hex(data, n, h);
        snprintf(rest, sizeof(rest), EMPTY "\n%s", h);
        enc_sign(e, "AWS4-HMAC-SHA256-PAYLOAD", rest);
        cm_buf_printf(&e->out, "%zx;chunk-signature=%s\r\n", n, e->prev);
    } else {
        cm_buf_printf(&e->out, "%zx\r\n", n);
    }
    if (n > 0) {
        cm_buf_append(&e->out, data, n);
        cm_buf_append(&e->out, "\r\n", 2);
    }
}

/* The final chunk, the trailer line (may be NULL) and the end. */
static void
enc_end(struct enc *e, const char *trailer)
{
    enc_chunk(e, "", 0);
    if (trailer != NULL) {
        cm_buf_printf(&e->out, "%s\r\n", trailer);
    }
    if (e->sigs && e->a->payload == GW_S3_PAYLOAD_STREAMING_TRAILER) {
        char canon[128], h[65];
        snprintf(canon, sizeof(canon), "%s%s", trailer != NULL ? trailer : "",
                 trailer != NULL ? "\n" : "");
        cm_sha256_hex(canon, strlen(canon), h);
        enc_sign(e, "AWS4-HMAC-SHA256-TRAILER", h);
        cm_buf_printf(&e->out, "x-amz-trailer-signature:%s\r\n", e->prev);
    }
    cm_buf_append(&e->out, "\r\n", 2);
}

/* ---- running the decoder ---- */

struct sink {
    struct cm_buf got;
    uint64_t fail_after; /* return SlowDown past this many bytes (0: never) */
};

static enum gw_s3_err
sink_fn(void *arg, const void *data, size_t len)
{
    struct sink *s = arg;

    cm_buf_append(&s->got, data, len);
    if (s->fail_after != 0 && s->got.len > s->fail_after) {
        return GW_S3_E_SLOW_DOWN;
    }
    return GW_S3_OK;
}

/* Feeds body in random pieces (max_piece 0: all at once); the first error
 * of feed or finish. */
static enum gw_s3_err
decode(const struct gw_s3_auth *a, struct t_hdrs *h, const char *body, size_t len, size_t max_piece,
       uint64_t max_decoded, struct sink *s, char ck[GW_S3_CK_B64_MAX], enum gw_s3_ck_alg *alg)
{
    struct gw_s3_chunked *c;
    enum gw_s3_err e;
    const char *why = "unset";
    size_t off = 0;

    s->got.len = 0;
    e = gw_s3_chunked_create(a, t_hdr_get, h, max_decoded, sink_fn, s, &c, &why);
    if (e != GW_S3_OK) {
        CHECK(why != NULL && c == NULL);
        return e;
    }
    CHECK(why == NULL);
    while (off < len) {
        size_t n = max_piece == 0 ? len - off : (size_t)t_range(1, (int)max_piece);

        n = n > len - off ? len - off : n;
        e = gw_s3_chunked_feed(c, body + off, n, &why);
        if (e != GW_S3_OK) {
            /* sticky, with a reason unless the sink chose the error */
            CHECK_EQ_INT(gw_s3_chunked_feed(c, "0", 1, NULL), e);
            CHECK_EQ_INT(gw_s3_chunked_finish(c, NULL), e);
            CHECK(why != NULL || e == GW_S3_E_SLOW_DOWN || e == GW_S3_E_ENTITY_TOO_LARGE);
            gw_s3_chunked_destroy(c);
            return e;
        }
        off += n;
    }
    e = gw_s3_chunked_finish(c, &why);
    CHECK((e == GW_S3_OK) == (why == NULL));
    CHECK_EQ_INT(gw_s3_chunked_decoded(c), s->got.len);
    if (ck != NULL) {
        *alg = gw_s3_chunked_checksum(c, ck);
    }
    gw_s3_chunked_destroy(c);
    return e;
}

/* ---- AWS's examples ---- */

static const char *const doc_sigs[3] = {
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};
static const char *const doc_trailer_sigs[3] = {
    "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
    "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
    "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
};
#define DOC_TRAILER_SIG "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"

static char aaa[65536];

/* The body exactly as the docs print it. */
static void
doc_body(struct cm_buf *b, int trailer)
{
    const char *const *sigs = trailer ? doc_trailer_sigs : doc_sigs;

    cm_buf_init(b);
    cm_buf_printf(b, "10000;chunk-signature=%s\r\n", sigs[0]);
    cm_buf_append(b, aaa, 65536);
    cm_buf_printf(b, "\r\n400;chunk-signature=%s\r\n", sigs[1]);
    cm_buf_append(b, aaa, 1024);
    cm_buf_printf(b, "\r\n0;chunk-signature=%s\r\n", sigs[2]);
    if (trailer) {
        cm_buf_printf(b, "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:%s\r\n",
                      DOC_TRAILER_SIG);
    }
    cm_buf_append(b, "\r\n", 2);
}

static void
check_aaa(const struct sink *s)
{
    CHECK_EQ_INT(s->got.len, 66560);
    for (size_t i = 0; i < 66560; i++) {
        CHECK(s->got.p[i] == 'a');
    }
}

static void
test_doc_example(void)
{
    struct gw_s3_auth a;
    struct t_hdrs h = {0};
    struct sink s = {0};
    struct cm_buf b;
    struct enc e;
    char ck[GW_S3_CK_B64_MAX];
    enum gw_s3_ck_alg alg;

    memset(aaa, 'a', sizeof(aaa));
    cm_buf_init(&s.got);
    example_auth(&a, GW_S3_PAYLOAD_STREAMING, SEED);
    doc_body(&b, 0);
    CHECK_EQ_INT(b.len, 66824); /* the example's Content-Length */
    /* the test's encoder makes the very same bytes */
    enc_init(&e, &a);
    enc_chunk(&e, aaa, 65536);
    enc_chunk(&e, aaa, 1024);
    enc_end(&e, NULL);
    CHECK_EQ_INT(e.out.len, b.len);
    CHECK(memcmp(e.out.p, b.p, b.len) == 0);
    cm_buf_fini(&e.out);

    t_hdr_set(&h, "x-amz-decoded-content-length", "66560");
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, ck, &alg), GW_S3_OK);
    check_aaa(&s);
    CHECK_EQ_INT(alg, GW_S3_CK_NONE);
    CHECK_EQ_STR(ck, "");
    for (int i = 0; i < 20; i++) {
        size_t piece = i < 5 ? (size_t)t_range(1, 3) : (size_t)t_range(1, 70000);
        CHECK_EQ_INT(decode(&a, &h, b.p, b.len, piece, 0, &s, NULL, NULL), GW_S3_OK);
        check_aaa(&s);
    }
    /* not the seed of this request */
    example_auth(&a, GW_S3_PAYLOAD_STREAMING, SEED_TRAILER);
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_SIGNATURE_MISMATCH);
    CHECK_EQ_INT(s.got.len, 65536); /* the first chunk went out before its check */
    example_auth(&a, GW_S3_PAYLOAD_STREAMING, SEED);
    /* the limits */
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 66560, &s, NULL, NULL), GW_S3_OK);
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 66559, &s, NULL, NULL), GW_S3_E_ENTITY_TOO_LARGE);
    CHECK_EQ_INT(s.got.len, 65536);
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 65535, &s, NULL, NULL), GW_S3_E_ENTITY_TOO_LARGE);
    CHECK_EQ_INT(s.got.len, 0);
    h.kv[1] = "66561";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_INCOMPLETE_BODY);
    h.kv[1] = "66559";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_INVALID_REQUEST);
    h.kv[1] = "6656O";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_INVALID_REQUEST);
    h.n = 0;
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_OK);
    /* the sink's own error */
    s.fail_after = 1000;
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 100, 0, &s, NULL, NULL), GW_S3_E_SLOW_DOWN);
    s.fail_after = 0;
    cm_buf_fini(&b);

    /* with the signed CRC32C trailer */
    example_auth(&a, GW_S3_PAYLOAD_STREAMING_TRAILER, SEED_TRAILER);
    doc_body(&b, 1);
    enc_init(&e, &a);
    enc_chunk(&e, aaa, 65536);
    enc_chunk(&e, aaa, 1024);
    enc_end(&e, "x-amz-checksum-crc32c:sOO8/Q==");
    CHECK_EQ_INT(e.out.len, b.len);
    CHECK(memcmp(e.out.p, b.p, b.len) == 0);
    cm_buf_fini(&e.out);
    t_hdr_set(&h, "x-amz-trailer", "x-amz-checksum-crc32c");
    t_hdr_set(&h, "x-amz-decoded-content-length", "66560");
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(
            decode(&a, &h, b.p, b.len, i == 0 ? 0 : (size_t)t_range(1, 300), 0, &s, ck, &alg),
            GW_S3_OK);
        check_aaa(&s);
        CHECK_EQ_INT(alg, GW_S3_CK_CRC32C);
        CHECK_EQ_STR(ck, "sOO8/Q==");
    }
    /* the trailer must be the declared one */
    h.kv[1] = "x-amz-checksum-crc32";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_MALFORMED_TRAILER);
    h.kv[1] = "x-amz-checksum-md5";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_INVALID_REQUEST);
    h.kv[1] = " x-amz-checksum-crc32c ";
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_OK);
    cm_buf_fini(&b);
    cm_buf_fini(&s.got);
}

/* Every byte of the framing and every signature matters; every prefix is
 * incomplete. */
static void
test_corruption(void)
{
    struct gw_s3_auth a;
    struct t_hdrs h = {0};
    struct sink s = {0};
    struct cm_buf b;
    size_t data1 = 88, data2 = 88 + 65536 + 2 + 86;

    cm_buf_init(&s.got);
    example_auth(&a, GW_S3_PAYLOAD_STREAMING_TRAILER, SEED_TRAILER);
    doc_body(&b, 1);
    t_hdr_set(&h, "x-amz-trailer", "x-amz-checksum-crc32c");
    t_hdr_set(&h, "x-amz-decoded-content-length", "66560");
    CHECK(b.p[data1 - 1] == '\n' && b.p[data1] == 'a' && b.p[data1 + 65536] == '\r');
    CHECK(b.p[data2 - 1] == '\n' && b.p[data2] == 'a' && b.p[data2 + 1024] == '\r');
    {
        /* (offset, what the flip gives) */
        const struct {
            size_t at;
            enum gw_s3_err want;
        } flips[] = {
            {0, GW_S3_E_SIGNATURE_MISMATCH},            /* "10000" -> "00000": a final chunk */
            {1, GW_S3_E_INVALID_REQUEST},               /* "11000": past the decoded length */
            {5, GW_S3_E_INCOMPLETE_BODY},               /* ";chunk-signature" */
            {30, GW_S3_E_SIGNATURE_MISMATCH},           /* chunk 1's signature */
            {data1 + 1000, GW_S3_E_SIGNATURE_MISMATCH}, /* chunk 1's data */
            {data1 + 65536, GW_S3_E_INCOMPLETE_BODY},   /* its CR */
            {data1 + 65537, GW_S3_E_INCOMPLETE_BODY},   /* its LF */
            {data2 + 1023, GW_S3_E_SIGNATURE_MISMATCH}, /* chunk 2's last byte */
            {data2 - 3, GW_S3_E_SIGNATURE_MISMATCH},    /* chunk 2's signature */
            {data2 + 1024 + 2 + 40, GW_S3_E_SIGNATURE_MISMATCH}, /* the final signature */
            {b.len - 50, GW_S3_E_SIGNATURE_MISMATCH},            /* the trailer signature */
            {b.len - 110, GW_S3_E_MALFORMED_TRAILER},            /* the trailer's name */
            {b.len - 2, GW_S3_E_INCOMPLETE_BODY},                /* the last CR */
            {b.len - 1, GW_S3_E_INCOMPLETE_BODY},                /* the last LF */
        };
        for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
            char saved = b.p[flips[i].at];

            b.p[flips[i].at] = saved == '0' ? '1' : saved == 'a' ? 'b' : '0';
            CHECK_EQ_INT(decode(&a, &h, b.p, b.len, (size_t)t_range(0, 5000), 0, &s, NULL, NULL),
                         flips[i].want);
            b.p[flips[i].at] = saved;
        }
        /* the checksum value: a wrong CRC32C, then a malformed one */
        {
            char *v = strstr(b.p + data2, "sOO8/Q==");
            CHECK(v != NULL);
            v[0] = 't';
            CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_BAD_DIGEST);
            v[0] = '*';
            CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_BAD_DIGEST);
            v[0] = 's';
        }
    }
    /* truncated anywhere: never OK */
    for (size_t cut = 0; cut < b.len; cut += (cut < 200 || cut > b.len - 400) ? 1 : 997) {
        CHECK(decode(&a, &h, b.p, cut, 0, 0, &s, NULL, NULL) != GW_S3_OK);
    }
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_OK);
    /* and nothing may follow the end */
    cm_buf_append(&b, "\r\n", 2);
    CHECK_EQ_INT(decode(&a, &h, b.p, b.len, 0, 0, &s, NULL, NULL), GW_S3_E_INCOMPLETE_BODY);
    cm_buf_fini(&b);
    cm_buf_fini(&s.got);
}

/* Framing errors on small hand-written bodies, unsigned so that each
 * line is reached. */
static void
test_framing(void)
{
    static const struct {
        const char *body;
        const char *trailer; /* x-amz-trailer */
        enum gw_s3_err want;
    } v[] = {
        {"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n", "x-amz-checksum-crc32",
         GW_S3_OK},
        {"3\r\nabc\r\n0\r\nX-Amz-Checksum-CRC32 :  NSRBwg== \r\n\r\n", "x-amz-checksum-crc32",
         GW_S3_E_MALFORMED_TRAILER}, /* a space before the colon is part of the name */
        {"3\r\nabc\r\n0\r\nX-Amz-Checksum-CRC32:  NSRBwg== \r\n\r\n", "x-amz-checksum-crc32",
         GW_S3_OK},
        {"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwA==\r\n\r\n", "x-amz-checksum-crc32",
         GW_S3_E_BAD_DIGEST},
        {"3\r\nabc\r\n0\r\n\r\n", "x-amz-checksum-crc32", GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n", NULL, GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\n\r\n", NULL, GW_S3_OK}, /* botocore without a checksum */
        {"0\r\n\r\n", NULL, GW_S3_OK},
        {"00003\r\nabc\r\n0\r\n\r\n", NULL, GW_S3_OK},
        {"A\r\n0123456789\r\n0\r\n\r\n", NULL, GW_S3_OK},
        {"a\r\n0123456789\r\n0\r\n\r\n", NULL, GW_S3_OK},
        {"3;chunk-signature=" EMPTY "\r\nabc\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3 \r\nabc\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"+3\r\nabc\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\nabc\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\r\nabc\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabcd\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nab\r\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\n0\r\n\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\r\n0\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\r\n0\r\n\r", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"1000000000000000\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"fffffffffffffff\r\nabc", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\r\n0\r\n\r\n3\r\nabc\r\n", NULL, GW_S3_E_INCOMPLETE_BODY},
        {"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n",
         "x-amz-checksum-crc32", GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\nnocolon\r\n\r\n", NULL, GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\n:x\r\n\r\n", NULL, GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\nx-amz-trailer-signature:" EMPTY "\r\n\r\n", NULL,
         GW_S3_E_MALFORMED_TRAILER},
        {"3\r\nabc\r\n0\r\nx-amz-meta-a:b\r\n\r\n", NULL, GW_S3_E_MALFORMED_TRAILER},
    };
    struct gw_s3_auth a;
    struct sink s = {0};
    char ck[GW_S3_CK_B64_MAX];
    enum gw_s3_ck_alg alg;

    cm_buf_init(&s.got);
    memset(&a, 0, sizeof(a));
    a.payload = GW_S3_PAYLOAD_UNSIGNED_TRAILER;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct t_hdrs h = {0};
        enum gw_s3_err got;

        if (v[i].trailer != NULL) {
            t_hdr_set(&h, "x-amz-trailer", v[i].trailer);
        }
        for (int piece = 0; piece <= 3; piece++) {
            got = decode(&a, &h, v[i].body, strlen(v[i].body), (size_t)piece, 0, &s, ck, &alg);
            if (got != v[i].want) {
                fprintf(stderr, "case %zu piece %d: got %d want %d\n", i, piece, got, v[i].want);
            }
            CHECK_EQ_INT(got, v[i].want);
        }
        if (got == GW_S3_OK) {
            CHECK(s.got.len == 0 || s.got.len == 3 || s.got.len == 10);
            CHECK_EQ_INT(alg, v[i].trailer != NULL ? GW_S3_CK_CRC32 : GW_S3_CK_NONE);
        }
    }
    /* a line too long */
    {
        char body[400];
        struct t_hdrs h = {0};

        memset(body, '0', sizeof(body));
        CHECK_EQ_INT(decode(&a, &h, body, sizeof(body), 7, 0, &s, NULL, NULL),
                     GW_S3_E_INCOMPLETE_BODY);
        memcpy(body, "0\r\nx-amz-checksum-crc32:", 24);
        t_hdr_set(&h, "x-amz-trailer", "x-amz-checksum-crc32");
        CHECK_EQ_INT(decode(&a, &h, body, sizeof(body), 0, 0, &s, NULL, NULL),
                     GW_S3_E_INCOMPLETE_BODY);
    }
    /* not a streaming payload */
    {
        struct gw_s3_chunked *c = (struct gw_s3_chunked *)&a;
        struct t_hdrs h = {0};

        a.payload = GW_S3_PAYLOAD_SIGNED;
        CHECK_EQ_INT(gw_s3_chunked_create(&a, t_hdr_get, &h, 0, NULL, NULL, &c, NULL),
                     GW_S3_E_INVALID_REQUEST);
        CHECK(c == NULL);
        a.payload = GW_S3_PAYLOAD_UNSIGNED;
        CHECK_EQ_INT(gw_s3_chunked_create(&a, t_hdr_get, &h, 0, NULL, NULL, &c, NULL),
                     GW_S3_E_INVALID_REQUEST);
        gw_s3_chunked_destroy(NULL);
    }
    cm_buf_fini(&s.got);
}

/* Random bodies in every mode, every trailer algorithm, random chunk sizes
 * and random pieces: what comes out is what went in. */
static void
test_random(void)
{
    static const enum gw_s3_payload modes[] = {
        GW_S3_PAYLOAD_STREAMING, GW_S3_PAYLOAD_STREAMING_TRAILER, GW_S3_PAYLOAD_UNSIGNED_TRAILER};
    static uint8_t data[300000];
    struct sink s = {0};

    cm_buf_init(&s.got);
    for (int round = 0; round < 60; round++) {
        struct gw_s3_auth a;
        struct t_hdrs h = {0};
        struct enc e;
        enum gw_s3_payload mode = modes[round % 3];
        enum gw_s3_ck_alg ckalg = (enum gw_s3_ck_alg)(round / 3 % 6), got_alg;
        size_t len = (size_t)t_range(0, (int)sizeof(data)), off = 0;
        char declen[24], trailer[128], want_ck[GW_S3_CK_B64_MAX], ck[GW_S3_CK_B64_MAX];
        struct gw_s3_ck c;

        t_fill(data, len);
        example_auth(&a, mode, SEED);
        t_fill(a.signing_key, 32);
        if (mode == GW_S3_PAYLOAD_STREAMING) {
            ckalg = GW_S3_CK_NONE;
        }
        gw_s3_ck_init(&c, ckalg);
        gw_s3_ck_update(&c, data, len);
        gw_s3_ck_value(&c, want_ck);
        gw_s3_ck_fini(&c);
        enc_init(&e, &a);
        while (off < len) {
            size_t n = (size_t)t_range(1, 100000);
            n = n > len - off ? len - off : n;
            enc_chunk(&e, data + off, n);
            off += n;
        }
        snprintf(trailer, sizeof(trailer), "%s:%s", gw_s3_ck_header_name(ckalg), want_ck);
        enc_end(&e, ckalg != GW_S3_CK_NONE ? trailer : NULL);
        snprintf(declen, sizeof(declen), "%zu", len);
        t_hdr_set(&h, "x-amz-decoded-content-length", declen);
        if (ckalg != GW_S3_CK_NONE) {
            t_hdr_set(&h, "x-amz-trailer", gw_s3_ck_header_name(ckalg));
        }
        CHECK_EQ_INT(
            decode(&a, &h, e.out.p, e.out.len, (size_t)t_range(0, 20000), 0, &s, ck, &got_alg),
            GW_S3_OK);
        CHECK_EQ_INT(s.got.len, len);
        CHECK(len == 0 || memcmp(s.got.p, data, len) == 0);
        CHECK_EQ_INT(got_alg, ckalg);
        CHECK_EQ_STR(ck, ckalg != GW_S3_CK_NONE ? want_ck : "");
        /* one flipped data byte: signed modes catch it by signature, the
         * unsigned one by its checksum (if it has one) */
        if (len > 0) {
            size_t at = e.out.len - 3 - (size_t)t_range(0, (int)(e.out.len / 2));
            enum gw_s3_err r;

            e.out.p[at] ^= 0x01; /* never a case change, which hex and names ignore */
            r = decode(&a, &h, e.out.p, e.out.len, 0, 0, &s, NULL, NULL);
            CHECK(r != GW_S3_OK ||
                  (mode == GW_S3_PAYLOAD_UNSIGNED_TRAILER && ckalg == GW_S3_CK_NONE));
        }
        cm_buf_fini(&e.out);
    }
    cm_buf_fini(&s.got);
}

int
main(void)
{
    t_seed();
    test_doc_example();
    test_corruption();
    test_framing();
    test_random();
    return 0;
}
