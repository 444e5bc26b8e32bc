/*
 * ec_bench.c - shoal-ecbench: single-core throughput of cm_ec encode and
 * decode (after losing m chunks) against memcpy of the same bytes.
 *
 *   shoal-ecbench [--k K --m M] [--size BYTES] [--seconds S] [--json]
 *                 [--config FILE]
 *
 * With no --k/--m it runs RS(4+2) and RS(10+2). Throughput is object bytes
 * (k data chunks) per second, so encode and memcpy compare directly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_config.h"
#include "cm_ec.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct ecb_cfg {
    int k, m;
    uint64_t size;
    double seconds;
    int json;
};

#define T struct ecb_cfg
static const struct cm_opt opts[] = {
    CM_OPT_INT(T, k, "0", 0, CM_EC_MAX_K, "data chunks (0: RS(4+2) and RS(10+2))"),
    CM_OPT_INT(T, m, "0", 0, CM_EC_MAX_M, "parity chunks (with --k)"),
    CM_OPT_U64(T, size, "1MiB", 1, 1ull << 30, "object size"),
    CM_OPT_DBL(T, seconds, "1", 0.001, 600, "time per measurement"),
    CM_OPT_BOOL(T, json, "false", "one JSON object per line instead of a table"),
};
#undef T

struct res {
    double enc, dec, cpy; /* bytes/s of object data */
};

static int
run_one(int k, int m, size_t size, double secs, struct res *out)
{
    struct cm_ec *ec = NULL;
    int rc = cm_ec_create(k, m, &ec);
    if (rc != 0) {
        return rc;
    }
    size_t len = (size + (size_t)k - 1) / (size_t)k;
    uint8_t *chunks[CM_EC_MAX_CHUNKS];
    uint8_t *saved[CM_EC_MAX_CHUNKS];
    uint8_t present[CM_EC_MAX_CHUNKS];
    uint8_t *src = malloc(size), *dst = malloc(size);
    rc = -1;
    if (src == NULL || dst == NULL) {
        goto out;
    }
    memset(chunks, 0, sizeof(chunks));
    memset(saved, 0, sizeof(saved));
    for (int i = 0; i < k + m; i++) {
        chunks[i] = malloc(len);
        saved[i] = malloc(len);
        if (chunks[i] == NULL || saved[i] == NULL) {
            goto out;
        }
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < k; i++) {
        for (size_t j = 0; j < len; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunks[i][j] = (uint8_t)x;
        }
    }
    for (size_t j = 0; j < size; j++) {
        src[j] = (uint8_t)(j * 31u);
    }

    long iters = 0;
    double t0 = now_s(), t;
    do {
        cm_ec_encode(ec, len, (const uint8_t *const *)chunks, chunks + k);
        iters++;
    } while ((t = now_s()) - t0 < secs);
    out->enc = (double)iters * (double)len * k / (t - t0);

    for (int i = 0; i < k + m; i++) {
        memcpy(saved[i], chunks[i], len);
    }
    /* Lose the first m data chunks: the costliest case (data to rebuild). */
    iters = 0;
    t0 = now_s();
    do {
        for (int i = 0; i < k + m; i++) {
            present[i] = i >= m;
        }
        if (cm_ec_decode(ec, len, chunks, present) != 0) {
            goto out;
        }
        iters++;
    } while ((t = now_s()) - t0 < secs);
    out->dec = (double)iters * (double)len * k / (t - t0);
    /* Verify once with the lost chunks really gone. */
    for (int i = 0; i < m; i++) {
        memset(chunks[i], 0xa5, len);
        present[i] = 0;
    }
    if (cm_ec_decode(ec, len, chunks, present) != 0) {
        goto out;
    }
    for (int i = 0; i < k + m; i++) {
        if (memcmp(saved[i], chunks[i], len) != 0) {
            fprintf(stderr, "shoal-ecbench: decode mismatch in chunk %d\n", i);
            goto out;
        }
    }

    iters = 0;
    t0 = now_s();
    do {
        memcpy(dst, src, size);
        __asm__ volatile("" : : "r"(dst) : "memory");
        src[iters % size]++;
        iters++;
    } while ((t = now_s()) - t0 < secs);
    out->cpy = (double)iters * (double)size / (t - t0);
    rc = 0;

out:
    for (int i = 0; i < k + m; i++) {
        free(chunks[i]);
        free(saved[i]);
    }
    free(src);
    free(dst);
    cm_ec_destroy(ec);
    return rc;
}

int
main(int argc, char **argv)
{
    struct ecb_cfg cfg;
    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &cfg, argc, argv, "shoal-ecbench",
                   "Single-core Reed-Solomon (cm_ec) encode and decode-after-losing-m-chunks\n"
                   "throughput vs memcpy of the same bytes, one code or RS(4+2) and RS(10+2).");
    int k = cfg.k, m = cfg.m, json = cfg.json;
    if ((k == 0) != (m == 0)) {
        fprintf(stderr, "shoal-ecbench: give both --k and --m\n");
        return 2;
    }
    int codes[2][2] = {{4, 2}, {10, 2}};
    int ncodes = 2;
    if (k != 0) {
        codes[0][0] = k;
        codes[0][1] = m;
        ncodes = 1;
    }
    if (!json) {
        printf("%-8s %10s %12s %12s %12s %8s %8s\n", "code", "size", "encode MB/s", "decode MB/s",
               "memcpy MB/s", "enc/cpy", "dec/cpy");
    }
    for (int i = 0; i < ncodes; i++) {
        struct res r;
        if (run_one(codes[i][0], codes[i][1], (size_t)cfg.size, cfg.seconds, &r) != 0) {
            fprintf(stderr, "shoal-ecbench: RS(%d+%d) failed\n", codes[i][0], codes[i][1]);
            return 1;
        }
        if (json) {
            printf("{\"k\":%d,\"m\":%d,\"size\":%ld,\"encode_mb_s\":%.1f,\"decode_mb_s\":%.1f,"
                   "\"memcpy_mb_s\":%.1f}\n",
                   codes[i][0], codes[i][1], (long)cfg.size, r.enc / 1e6, r.dec / 1e6, r.cpy / 1e6);
        } else {
            char name[16];
            snprintf(name, sizeof(name), "RS(%d+%d)", codes[i][0], codes[i][1]);
            printf("%-8s %10ld %12.0f %12.0f %12.0f %8.2f %8.2f\n", name, (long)cfg.size,
                   r.enc / 1e6, r.dec / 1e6, r.cpy / 1e6, r.enc / r.cpy, r.dec / r.cpy);
        }
    }
    return 0;
}
