/*
 * test_ec.c - Reed-Solomon coding checked against a plain GF(2^8)
 * reference (poly 0x11d, the same Cauchy construction as ISA-L's
 * gf_gen_cauchy1_matrix), with random profiles, lengths and erasures;
 * CRC32C and CRC64 against known vectors and a bitwise reference.
 */
#include "t_check.h"

#include "cm_ec.h"
#include "cm_err.h"

static uint8_t gf_exp[512], gf_log[256];

static void
gf_init(void)
{
    int i, x = 1;

    for (i = 0; i < 255; i++) {
        gf_exp[i] = (uint8_t)x;
        gf_log[x] = (uint8_t)i;
        x <<= 1;
        if (x & 0x100) {
            x ^= 0x11d;
        }
    }
    for (i = 255; i < 512; i++) {
        gf_exp[i] = gf_exp[i - 255];
    }
}

static uint8_t
gf_mul_ref(uint8_t a, uint8_t b)
{
    if (a == 0 || b == 0) {
        return 0;
    }
    return gf_exp[gf_log[a] + gf_log[b]];
}

static uint8_t
gf_inv_ref(uint8_t a)
{
    return gf_exp[255 - gf_log[a]];
}

/* Parity row p, column j of the systematic Cauchy matrix. */
static uint8_t
cauchy(int k, int p, int j)
{
    return gf_inv_ref((uint8_t)((k + p) ^ j));
}

static void
ref_encode(int k, int m, size_t len, uint8_t **data, uint8_t **parity)
{
    int p, j;
    size_t x;

    for (p = 0; p < m; p++) {
        memset(parity[p], 0, len);
        for (j = 0; j < k; j++) {
            uint8_t c = cauchy(k, p, j);
            for (x = 0; x < len; x++) {
                parity[p][x] ^= gf_mul_ref(c, data[j][x]);
            }
        }
    }
}

static size_t
random_len(void)
{
    switch (t_range(0, 5)) {
    case 0:
        return 1;
    case 1:
        return (size_t)t_range(2, 63);
    case 2:
        return (size_t)(t_range(0, 2000) * 2 + 1); /* odd */
    case 3:
        return 4096;
    default:
        return (size_t)t_range(1, 9000);
    }
}

static void
round_trip(int k, int m, size_t len)
{
    uint8_t *orig[CM_EC_MAX_CHUNKS], *work[CM_EC_MAX_CHUNKS], *refpar[CM_EC_MAX_M];
    uint8_t present[CM_EC_MAX_CHUNKS];
    struct cm_ec *ec;
    int n = k + m, i, e, nerase, trial;

    CHECK_EQ_INT(cm_ec_create(k, m, &ec), 0);
    CHECK_EQ_INT(cm_ec_k(ec), k);
    CHECK_EQ_INT(cm_ec_m(ec), m);
    for (i = 0; i < n; i++) {
        orig[i] = malloc(len);
        work[i] = malloc(len);
        CHECK(orig[i] != NULL && work[i] != NULL);
    }
    for (i = 0; i < k; i++) {
        t_fill(orig[i], len);
    }
    for (i = 0; i < m; i++) {
        refpar[i] = malloc(len);
        t_fill(orig[k + i], len); /* encode must overwrite garbage */
    }
    cm_ec_encode(ec, len, (const uint8_t *const *)orig, orig + k);
    ref_encode(k, m, len, orig, refpar);
    for (i = 0; i < m; i++) {
        CHECK(memcmp(orig[k + i], refpar[i], len) == 0);
    }

    for (trial = 0; trial < 4; trial++) {
        nerase = t_range(0, m);
        memset(present, 1, sizeof(present));
        for (e = 0; e < nerase;) {
            i = t_range(0, n - 1);
            if (present[i]) {
                present[i] = 0;
                e++;
            }
        }
        for (i = 0; i < n; i++) {
            if (present[i]) {
                memcpy(work[i], orig[i], len);
            } else {
                memset(work[i], 0xA5, len);
            }
        }
        CHECK_EQ_INT(cm_ec_decode(ec, len, work, present), 0);
        for (i = 0; i < n; i++) {
            CHECK(memcmp(work[i], orig[i], len) == 0);
        }
        /* A missing chunk passed as NULL is simply not rebuilt. */
        if (nerase > 0) {
            uint8_t *ptrs[CM_EC_MAX_CHUNKS];
            int skipped = -1;
            for (i = 0; i < n; i++) {
                ptrs[i] = work[i];
                if (!present[i]) {
                    memset(work[i], 0xA5, len);
                    if (skipped < 0) {
                        skipped = i;
                        ptrs[i] = NULL;
                    }
                }
            }
            CHECK_EQ_INT(cm_ec_decode(ec, len, ptrs, present), 0);
            for (i = 0; i < n; i++) {
                if (i != skipped) {
                    CHECK(memcmp(work[i], orig[i], len) == 0);
                }
            }
        }
    }

    /* m + 1 erasures leave k - 1 present: unrecoverable. */
    memset(present, 1, sizeof(present));
    for (e = 0; e < m + 1;) {
        i = t_range(0, n - 1);
        if (present[i]) {
            present[i] = 0;
            e++;
        }
    }
    CHECK_EQ_INT(cm_ec_decode(ec, len, work, present), CM_E_UNAVAIL);

    for (i = 0; i < n; i++) {
        free(orig[i]);
        free(work[i]);
    }
    for (i = 0; i < m; i++) {
        free(refpar[i]);
    }
    cm_ec_destroy(ec);
}

/* Bitwise reflected CRC-32 with polynomial poly (reversed form). */
static uint32_t
crc32_ref(uint32_t poly, uint32_t crc, const uint8_t *p, size_t len)
{
    int b;

    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (b = 0; b < 8; b++) {
            crc = (crc >> 1) ^ (poly & (0u - (crc & 1)));
        }
    }
    return ~crc;
}

static uint32_t
crc32c_ref(uint32_t crc, const uint8_t *p, size_t len)
{
    return crc32_ref(0x82F63B78u, crc, p, len);
}

static void
test_crc(void)
{
    static const char v[] = "123456789";
    uint8_t buf[3000];
    size_t len, cut;
    int i;

    CHECK_EQ_INT(cm_crc32c(0, v, 9), 0xE3069283u);
    CHECK_EQ_INT(cm_crc32c(cm_crc32c(0, v, 4), v + 4, 5), 0xE3069283u);
    CHECK_EQ_INT(cm_crc32c(0, v, 0), 0);
    CHECK_EQ_INT(cm_crc32(0, v, 9), 0xCBF43926u);
    CHECK_EQ_INT(cm_crc32(cm_crc32(0, v, 3), v + 3, 6), 0xCBF43926u);
    CHECK_EQ_INT(cm_crc32(0, v, 0), 0);
    CHECK(cm_crc64(0, v, 9) == 0x995DC9BBDF1939FAull);
    CHECK(cm_crc64(cm_crc64(0, v, 2), v + 2, 7) == 0x995DC9BBDF1939FAull);
    for (i = 0; i < 200; i++) {
        len = (size_t)t_range(0, (int)sizeof(buf));
        cut = len ? (size_t)t_range(0, (int)len) : 0;
        t_fill(buf, len);
        CHECK_EQ_INT(cm_crc32c(0, buf, len), crc32c_ref(0, buf, len));
        CHECK_EQ_INT(cm_crc32c(cm_crc32c(0, buf, cut), buf + cut, len - cut),
                     crc32c_ref(0, buf, len));
        CHECK_EQ_INT(cm_crc32(cm_crc32(0, buf, cut), buf + cut, len - cut),
                     crc32_ref(0xEDB88320u, 0, buf, len));
    }
}

int
main(void)
{
    struct cm_ec *ec;
    int i;

    t_seed();
    gf_init();
    CHECK_EQ_INT(cm_ec_create(0, 1, &ec), CM_E_BADARG);
    CHECK_EQ_INT(cm_ec_create(CM_EC_MAX_K + 1, 1, &ec), CM_E_BADARG);
    CHECK_EQ_INT(cm_ec_create(4, -1, &ec), CM_E_BADARG);
    CHECK_EQ_INT(cm_ec_create(4, CM_EC_MAX_M + 1, &ec), CM_E_BADARG);
    cm_ec_destroy(NULL);

    for (i = 0; i < 300; i++) {
        round_trip(t_range(1, 12), t_range(0, 4), random_len());
    }
    round_trip(CM_EC_MAX_K, CM_EC_MAX_M, 777);
    round_trip(1, CM_EC_MAX_M, 1);
    round_trip(10, 4, 65536 + 3);
    test_crc();
    return 0;
}
