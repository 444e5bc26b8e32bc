/* test_hash.c - SHA-256, MD5, SHA-1 and HMAC-SHA256 known vectors, streaming
 * digests against one-shot ones, random hex, XXH64 and CRC-64/NVME vectors. */
#include <ctype.h>

#include "t_check.h"

#include "cm_hash.h"

static void
check_hex(const uint8_t *md, size_t n, const char *want)
{
    char hex[2 * CM_DIGEST_MAX + 1];

    cm_hex(md, n, hex);
    CHECK_EQ_STR(hex, want);
}

/* RFC 4231 test cases 1, 2, 6 (a key longer than the block) and 7. */
static void
test_hmac(void)
{
    uint8_t key[131], md[32];
    const char *d6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    const char *d7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm.";

    memset(key, 0x0b, 20);
    cm_hmac_sha256(key, 20, "Hi There", 8, md);
    check_hex(md, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    cm_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, md);
    check_hex(md, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(key, 0xaa, sizeof(key));
    cm_hmac_sha256(key, 131, d6, strlen(d6), md);
    check_hex(md, 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    cm_hmac_sha256(key, 131, d7, strlen(d7), md);
    check_hex(md, 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
    /* an empty key and message */
    cm_hmac_sha256("", 0, "", 0, md);
    check_hex(md, 32, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void
test_digests(void)
{
    static const struct {
        enum cm_digest_alg alg;
        const char *in, *want;
    } v[] = {
        {CM_DIGEST_MD5, "", "d41d8cd98f00b204e9800998ecf8427e"},
        {CM_DIGEST_MD5, "abc", "900150983cd24fb0d6963f7d28e17f72"},
        {CM_DIGEST_SHA1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {CM_DIGEST_SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {CM_DIGEST_SHA256, "abc",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    };
    uint8_t md[CM_DIGEST_MAX], md2[CM_DIGEST_MAX];
    static uint8_t buf[100000];

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct cm_digest *d = cm_digest_create(v[i].alg);
        size_t n = cm_digest_once(v[i].alg, v[i].in, strlen(v[i].in), md);

        CHECK_EQ_INT(n, cm_digest_len(v[i].alg));
        check_hex(md, n, v[i].want);
        /* byte by byte, then again after the implicit restart */
        for (int round = 0; round < 2; round++) {
            for (const char *p = v[i].in; *p != '\0'; p++) {
                cm_digest_update(d, p, 1);
            }
            CHECK_EQ_INT(cm_digest_final(d, md2), n);
            CHECK(memcmp(md, md2, n) == 0);
        }
        cm_digest_destroy(d);
    }
    /* random splits of a long input agree with one shot, for every algorithm */
    t_fill(buf, sizeof(buf));
    for (int alg = CM_DIGEST_MD5; alg <= CM_DIGEST_SHA256; alg++) {
        struct cm_digest *d = cm_digest_create((enum cm_digest_alg)alg);
        size_t off = 0, n = cm_digest_once((enum cm_digest_alg)alg, buf, sizeof(buf), md);

        while (off < sizeof(buf)) {
            size_t step = (size_t)t_range(0, 5000);
            step = step > sizeof(buf) - off ? sizeof(buf) - off : step;
            cm_digest_update(d, buf + off, step);
            off += step;
        }
        CHECK_EQ_INT(cm_digest_final(d, md2), n);
        CHECK(memcmp(md, md2, n) == 0);
        cm_digest_destroy(d);
    }
    cm_digest_destroy(NULL);
    cm_sha256("abc", 3, md);
    check_hex(md, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* CRC-64/NVME: the catalogue's check value, chaining, and a bitwise
 * reference over random inputs (the slicing tables against the definition). */
static uint64_t
crc64nvme_bitwise(const uint8_t *p, size_t n)
{
    uint64_t c = ~0ull;

    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) {
            c = (c >> 1) ^ ((c & 1) ? 0x9a6c9329ac4bc9b5ull : 0);
        }
    }
    return ~c;
}

static void
test_crc64nvme(void)
{
    uint8_t buf[1000];

    CHECK(cm_crc64nvme(0, "123456789", 9) == 0xae8b14860a799888ull);
    CHECK(cm_crc64nvme(0, "", 0) == 0);
    CHECK(cm_crc64nvme(cm_crc64nvme(0, "1234", 4), "56789", 5) == 0xae8b14860a799888ull);
    for (int i = 0; i < 200; i++) {
        size_t n = (size_t)t_range(0, (int)sizeof(buf)), cut = n ? (size_t)t_range(0, (int)n) : 0;

        t_fill(buf, n);
        CHECK(cm_crc64nvme(0, buf, n) == crc64nvme_bitwise(buf, n));
        CHECK(cm_crc64nvme(cm_crc64nvme(0, buf, cut), buf + cut, n - cut) ==
              crc64nvme_bitwise(buf, n));
    }
}

int
main(void)
{
    t_seed();
    test_hmac();
    test_digests();
    test_crc64nvme();
    CHECK(cm_ct_equal("abcd", "abcd", 4));
    CHECK(!cm_ct_equal("abcd", "abce", 4));
    CHECK(cm_ct_equal("x", "y", 0));

    char out[65], hex[129], hex2[129];
    int i;
    cm_sha256_hex("abc", 3, out);
    CHECK_EQ_STR(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cm_sha256_hex("", 0, out);
    CHECK_EQ_STR(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    CHECK_EQ_INT(cm_random_hex(hex, 64), 0);
    CHECK_EQ_INT(strlen(hex), 128);
    for (i = 0; i < 128; i++) {
        CHECK(isxdigit((unsigned char)hex[i]) && !isupper((unsigned char)hex[i]));
    }
    CHECK_EQ_INT(cm_random_hex(hex2, 64), 0);
    CHECK(strcmp(hex, hex2) != 0);
    CHECK_EQ_INT(cm_random_hex(hex2, 0), 0);
    CHECK_EQ_STR(hex2, "");
    CHECK(cm_random_u64() != cm_random_u64());

    /* XXH64 reference values */
    CHECK(cm_hash64("", 0, 0) == 0xEF46DB3751D8E999ull);
    CHECK(cm_hash64("a", 1, 0) == 0xD24EC4F1A98C6E5Bull);
    CHECK(cm_hash64("abc", 3, 0) == 0x44BC2CF5AD770999ull);
    CHECK(cm_hash64("abc", 3, 1) != cm_hash64("abc", 3, 0));
    {
        const char *s = "Nobody inspects the spammish repetition";
        CHECK(cm_hash64(s, strlen(s), 0) == 0xFBCEA83C8A378BF1ull);
    }
    return 0;
}
