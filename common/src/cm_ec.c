/*
 * cm_ec.c - Reed-Solomon coding and CRCs (the only file including ISA-L).
 *
 * The code is systematic: the (k+m) x k encode matrix is ISA-L's Cauchy
 * matrix, identity on top, so any k rows are invertible. Decoding picks k
 * surviving chunks, inverts their k x k submatrix (which maps survivors
 * back to data), then derives one coefficient row per chunk to rebuild:
 * a row of the inverse for data, the parity row times the inverse for
 * parity. A cm_ec is read-only after cm_ec_create, hence thread-safe.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>

#include "cm_buf.h"
#include "cm_ec.h"
#include "cm_err.h"

struct cm_ec {
    int k, m;
    uint8_t matrix[CM_EC_MAX_CHUNKS * CM_EC_MAX_K]; /* (k+m) x k */
    uint8_t tables[CM_EC_MAX_K * CM_EC_MAX_M * 32]; /* expanded parity rows */
};

/* ec_encode_data takes an int length; stay well below INT_MAX per call. */
#define EC_SEGMENT (1u << 30)

int
cm_ec_create(int k, int m, struct cm_ec **out)
{
    struct cm_ec *ec;

    *out = NULL;
    if (k < 1 || k > CM_EC_MAX_K || m < 0 || m > CM_EC_MAX_M) {
        return CM_E_BADARG;
    }
    ec = cm_calloc(1, sizeof(*ec));
    ec->k = k;
    ec->m = m;
    gf_gen_cauchy1_matrix(ec->matrix, k + m, k);
    if (m > 0) {
        ec_init_tables(k, m, ec->matrix + k * k, ec->tables);
    }
    *out = ec;
    return 0;
}

void
cm_ec_destroy(struct cm_ec *ec)
{
    free(ec);
}

int
cm_ec_k(const struct cm_ec *ec)
{
    return ec->k;
}

int
cm_ec_m(const struct cm_ec *ec)
{
    return ec->m;
}

static void
run_tables(size_t len, int k, int rows, uint8_t *tables, uint8_t **src, uint8_t **dst)
{
    uint8_t *s[CM_EC_MAX_K], *d[CM_EC_MAX_CHUNKS];
    size_t off, n;
    int i;

    for (off = 0; off < len; off += n) {
        n = len - off < EC_SEGMENT ? len - off : EC_SEGMENT;
        for (i = 0; i < k; i++) {
            s[i] = src[i] + off;
        }
        for (i = 0; i < rows; i++) {
            d[i] = dst[i] + off;
        }
        ec_encode_data((int)n, k, rows, tables, s, d);
    }
}

void
cm_ec_encode(const struct cm_ec *ec, size_t len, const uint8_t *const *data, uint8_t *const *parity)
{
    uint8_t *src[CM_EC_MAX_K], *dst[CM_EC_MAX_M];
    int i;

    if (ec->m == 0 || len == 0) {
        return;
    }
    /* ISA-L's prototypes are not const-correct; it only reads data. */
    for (i = 0; i < ec->k; i++) {
        src[i] = (uint8_t *)(uintptr_t)data[i];
    }
    for (i = 0; i < ec->m; i++) {
        dst[i] = parity[i];
    }
    run_tables(len, ec->k, ec->m, (uint8_t *)ec->tables, src, dst);
}

int
cm_ec_decode(const struct cm_ec *ec, size_t len, uint8_t *const *chunks, const uint8_t *present)
{
    uint8_t sub[CM_EC_MAX_K * CM_EC_MAX_K], inv[CM_EC_MAX_K * CM_EC_MAX_K];
    uint8_t coef[CM_EC_MAX_CHUNKS * CM_EC_MAX_K];
    uint8_t *tables = NULL;
    uint8_t *src[CM_EC_MAX_K], *dst[CM_EC_MAX_CHUNKS];
    int k = ec->k, n = ec->k + ec->m;
    int surv[CM_EC_MAX_K];
    int nsurv = 0, nrebuild = 0, i, j, r, ret = 0;

    for (i = 0; i < n && nsurv < k; i++) {
        if (present[i] && chunks[i] != NULL) {
            surv[nsurv++] = i;
        }
    }
    if (nsurv < k) {
        return CM_E_UNAVAIL;
    }
    for (r = 0; r < k; r++) {
        memcpy(sub + r * k, ec->matrix + surv[r] * k, (size_t)k);
        src[r] = chunks[surv[r]];
    }
    if (gf_invert_matrix(sub, inv, k) != 0) {
        /* Cannot happen with a Cauchy matrix; guards a corrupted ec. */
        return -EIO;
    }
    for (i = 0; i < n; i++) {
        if (present[i] || chunks[i] == NULL) {
            continue;
        }
        if (i < k) {
            memcpy(coef + nrebuild * k, inv + i * k, (size_t)k);
        } else {
            for (j = 0; j < k; j++) {
                uint8_t c = 0;
                for (r = 0; r < k; r++) {
                    c ^= gf_mul(ec->matrix[i * k + r], inv[r * k + j]);
                }
                coef[nrebuild * k + j] = c;
            }
        }
        dst[nrebuild++] = chunks[i];
    }
    if (nrebuild == 0 || len == 0) {
        goto out;
    }
    tables = cm_malloc((size_t)k * (size_t)nrebuild * 32);
    ec_init_tables(k, nrebuild, coef, tables);
    run_tables(len, k, nrebuild, tables, src, dst);
out:
    free(tables);
    return ret;
}

/*
 * ISA-L's crc32_iscsi neither pre- nor post-inverts, so the standard
 * CRC32C (init ~0, final xor ~0) is ~crc32_iscsi(buf, len, ~0). Inverting
 * on the way in and out makes cm_crc32c(0, ...) standard and chainable.
 */
uint32_t
cm_crc32c(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    size_t n;

    crc = ~crc;
    while (len > 0) {
        n = len < EC_SEGMENT ? len : EC_SEGMENT;
        crc = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, crc);
        p += n;
        len -= n;
    }
    return ~crc;
}

/* crc32_gzip_refl inverts on the way in and out, as zlib's crc32() does. */
uint32_t
cm_crc32(uint32_t crc, const void *buf, size_t len)
{
    return crc32_gzip_refl(crc, buf, len);
}

/* crc64_ecma_refl inverts internally: 0 starts a fresh CRC-64/XZ. */
uint64_t
cm_crc64(uint64_t crc, const void *buf, size_t len)
{
    return crc64_ecma_refl(crc, buf, len);
}
