/*
 * test_aead.c - the keyed primitives of cm_hash.h: HMAC-SHA256 against RFC
 * 4231, AES-256-GCM against the GCM specification's test case 16, and
 * every way an opened box must refuse (key, nonce, aad, ciphertext, tag).
 */
#include "t_check.h"

#include "cm_err.h"
#include "cm_hash.h"

static void
unhex(const char *h, uint8_t *out, size_t n)
{
    CHECK(strlen(h) == 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;

        CHECK(sscanf(h + 2 * i, "%2x", &v) == 1);
        out[i] = (uint8_t)v;
    }
}

static void
check_hmac(const void *key, size_t klen, const char *data, const char *want)
{
    uint8_t mac[32];
    char hex[65];

    cm_hmac_sha256(key, klen, data, strlen(data), mac);
    cm_hex(mac, sizeof(mac), hex);
    CHECK_EQ_STR(hex, want);
}

static void
test_hmac(void)
{
    uint8_t k1[20], k6[131];

    memset(k1, 0x0b, sizeof(k1));
    memset(k6, 0xaa, sizeof(k6));
    check_hmac(k1, sizeof(k1), "Hi There",
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac("Jefe", 4, "what do ya want for nothing?",
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* A key longer than the block is hashed first. */
    check_hmac(k6, sizeof(k6), "Test Using Larger Than Block-Size Key - Hash Key First",
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* GCM specification (McGrew, Viega), test case 16: AES-256, 96-bit IV, aad. */
#define TC_KEY "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
#define TC_IV "cafebabefacedbaddecaf888"
#define TC_PT                                                                                      \
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e24"     \
    "49a6b525b16aedf5aa0de657ba637b39"
#define TC_AAD "feedfacedeadbeeffeedfacedeadbeefabaddad2"
#define TC_CT                                                                                      \
    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b10"     \
    "56828838c5f61e6393ba7a0abcc9f662"
#define TC_TAG "76fc6ece0f4e1768cddf8853bb2d551b"

static void
test_gcm_vector(void)
{
    uint8_t key[32], iv[12], pt[60], aad[20], ct[60], tag[16], out[60], buf[60];
    char hex[121];

    unhex(TC_KEY, key, sizeof(key));
    unhex(TC_IV, iv, sizeof(iv));
    unhex(TC_PT, pt, sizeof(pt));
    unhex(TC_AAD, aad, sizeof(aad));
    CHECK_EQ_INT(cm_aead_seal(key, iv, aad, sizeof(aad), pt, sizeof(pt), ct, tag), 0);
    cm_hex(ct, sizeof(ct), hex);
    CHECK_EQ_STR(hex, TC_CT);
    cm_hex(tag, sizeof(tag), hex);
    CHECK_EQ_STR(hex, TC_TAG);
    CHECK_EQ_INT(cm_aead_open(key, iv, aad, sizeof(aad), ct, sizeof(ct), tag, out), 0);
    CHECK(memcmp(out, pt, sizeof(pt)) == 0);
    /* In place, both ways. */
    memcpy(buf, pt, sizeof(pt));
    CHECK_EQ_INT(cm_aead_seal(key, iv, aad, sizeof(aad), buf, sizeof(buf), buf, tag), 0);
    CHECK(memcmp(buf, ct, sizeof(ct)) == 0);
    CHECK_EQ_INT(cm_aead_open(key, iv, aad, sizeof(aad), buf, sizeof(buf), tag, buf), 0);
    CHECK(memcmp(buf, pt, sizeof(pt)) == 0);
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* Flipping any one bit of anything that went into the box must fail it. */
static void
test_refusals(void)
{
    uint8_t key[32], nonce[12], aad[9] = "tenant-7", pt[40], ct[40], tag[16], out[40];
    uint8_t k2[32], n2[12], a2[9], c2[40], t2[16];

    t_seed();
    for (size_t i = 0; i < sizeof(key); i++) {
        key[i] = (uint8_t)t_rand();
    }
    CHECK_EQ_INT(cm_random_bytes(nonce, sizeof(nonce)), 0);
    CHECK_EQ_INT(cm_random_bytes(pt, sizeof(pt)), 0);
    CHECK_EQ_INT(cm_aead_seal(key, nonce, aad, sizeof(aad), pt, sizeof(pt), ct, tag), 0);
    CHECK(memcmp(ct, pt, sizeof(pt)) != 0);
    for (int round = 0; round < 200; round++) {
        int what = (int)(t_rand() % 5);
        uint64_t bit = t_rand();

        memcpy(k2, key, sizeof(key));
        memcpy(n2, nonce, sizeof(nonce));
        memcpy(a2, aad, sizeof(aad));
        memcpy(c2, ct, sizeof(ct));
        memcpy(t2, tag, sizeof(tag));
        switch (what) {
        case 0:
            k2[bit % 32] ^= (uint8_t)(1u << (bit >> 8) % 8);
            break;
        case 1:
            n2[bit % 12] ^= (uint8_t)(1u << (bit >> 8) % 8);
            break;
        case 2:
            a2[bit % 9] ^= (uint8_t)(1u << (bit >> 8) % 8);
            break;
        case 3:
            c2[bit % 40] ^= (uint8_t)(1u << (bit >> 8) % 8);
            break;
        default:
            t2[bit % 16] ^= (uint8_t)(1u << (bit >> 8) % 8);
            break;
        }
        memset(out, 0x55, sizeof(out));
        CHECK_EQ_INT(cm_aead_open(k2, n2, a2, sizeof(a2), c2, sizeof(c2), t2, out), CM_E_CRC);
        CHECK(all_zero(out, sizeof(out)));
    }
    /* A shorter aad (a prefix) is another aad. */
    CHECK_EQ_INT(cm_aead_open(key, nonce, aad, sizeof(aad) - 1, ct, sizeof(ct), tag, out),
                 CM_E_CRC);
    CHECK_EQ_INT(cm_aead_open(key, nonce, aad, sizeof(aad), ct, sizeof(ct), tag, out), 0);
    CHECK(memcmp(out, pt, sizeof(pt)) == 0);
    /* No aad and no plaintext: the tag alone still authenticates. */
    CHECK_EQ_INT(cm_aead_seal(key, nonce, NULL, 0, NULL, 0, NULL, tag), 0);
    CHECK_EQ_INT(cm_aead_open(key, nonce, NULL, 0, NULL, 0, tag, NULL), 0);
    tag[0] ^= 1;
    CHECK_EQ_INT(cm_aead_open(key, nonce, NULL, 0, NULL, 0, tag, NULL), CM_E_CRC);
}

int
main(void)
{
    uint8_t a[32], b[32];

    test_hmac();
    test_gcm_vector();
    test_refusals();
    CHECK_EQ_INT(cm_random_bytes(a, sizeof(a)), 0);
    CHECK_EQ_INT(cm_random_bytes(b, sizeof(b)), 0);
    CHECK(memcmp(a, b, sizeof(a)) != 0);
    CHECK_EQ_INT(cm_random_bytes(a, 0), 0);
    return 0;
}
