/*
 * fuzz_s3_route.c - the S3 front door's request parsers on arbitrary
 * input: the router (method, Host, path, query), x-amz-copy-source, HTTP
 * dates, entity-tag lists and the conditional headers, stored headers.
 *
 * Input: NUL-separated fields: method, host, path, query, a header value.
 * Properties checked beyond "no crash, no overrun": a route that succeeds
 * names a valid bucket and a key that is valid as a native key and begins
 * with "bucket/" (a decoded key from a body: "bucket/" and that key); a parsed HTTP date formats
 * back to a date that parses to the same second; a matching If-Match never fails the conditions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "gw_parse.h"
#include "gw_s3_route.h"

#define FAILS() __builtin_trap()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_route(const struct gw_s3_route *r)
{
    char key[GW_KEY_MAX];
    size_t klen;

    if (r->op < 0 || r->op >= GW_S3_OP_COUNT) {
        FAILS();
    }
    if (r->blen > 0 && !gw_s3_bucket_name_ok(r->bucket, r->blen)) {
        FAILS();
    }
    if (r->klen > 0) {
        if (r->klen <= r->blen + 1 || memcmp(r->key, r->bucket, r->blen) != 0 ||
            r->key[r->blen] != '/' || !gw_utf8_clean(r->key, r->klen)) {
            FAILS();
        }
        /* encoded again byte for byte, it is the same native key */
        {
            char enc[3 * GW_KEY_MAX];
            size_t n = 0;
            static const char hex[] = "0123456789ABCDEF";

            for (size_t i = 0; i < r->klen; i++) {
                enc[n++] = '%';
                enc[n++] = hex[(unsigned char)r->key[i] >> 4];
                enc[n++] = hex[(unsigned char)r->key[i] & 15];
            }
            if (gw_parse_key(enc, n, key, &klen, NULL) != 0 || klen != r->klen ||
                memcmp(key, r->key, klen) != 0) {
                FAILS();
            }
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *f[5] = {"GET", "", "/", "", ""};
    struct gw_s3_route r;
    struct gw_s3_target t;
    const char *why;
    size_t i, nf = 0, start = 0;
    int64_t when, again;
    char date[32];

    memcpy(buf, data, size);
    buf[size] = '\0';
    for (i = 0; i <= size && nf < 5; i++) {
        if (i == size || buf[i] == '\0') {
            buf[i] = '\0';
            f[nf++] = buf + start;
            start = i + 1;
        }
    }
    t = (struct gw_s3_target){.method = f[0],
                              .host = f[1][0] != '\0' ? f[1] : NULL,
                              .domain = "s3.localhost",
                              .path = f[2],
                              .path_len = strlen(f[2]),
                              .query = f[3],
                              .query_len = strlen(f[3]),
                              .copy_source = f[4][0] != '\0'};
    if (gw_s3_route(&t, &r, &why) == GW_S3_OK) {
        check_route(&r);
    }
    if (gw_s3_copy_source(f[4], &r, &why) == GW_S3_OK) {
        r.op = GW_S3_OP_COPY_OBJECT;
        check_route(&r);
    }
    if (gw_s3_native_key("bkt", 3, f[4], strlen(f[4]), &r, &why) == GW_S3_OK) {
        r.op = GW_S3_OP_DELETE_OBJECT;
        check_route(&r);
        if (r.klen != 4 + strlen(f[4]) || memcmp(r.key + 4, f[4], r.klen - 4) != 0) {
            FAILS();
        }
    }
    if (gw_s3_http_date(f[4], &when) == 0) {
        gw_s3_http_date_fmt(when, date);
        if (gw_s3_http_date(date, &again) != 0 || again != when) {
            FAILS();
        }
    }
    {
        struct gw_s3_cond_hdrs h = {f[3], f[4], f[4], f[3]};
        char etag[64];

        (void)gw_s3_conditions(&h, "\"0123\"", 1000000, size & 1);
        (void)gw_s3_etag_list_match(f[4], "\"abc\"");
        /* the list that names the ETag itself matches it */
        if (strlen(f[4]) < 60 && strchr(f[4], '"') == NULL && strchr(f[4], ',') == NULL &&
            strchr(f[4], ' ') == NULL && strchr(f[4], '\t') == NULL && f[4][0] != '\0' &&
            strncmp(f[4], "W/", 2) != 0) {
            snprintf(etag, sizeof(etag), "\"%s\"", f[4]);
            h = (struct gw_s3_cond_hdrs){etag, NULL, NULL, f[3]};
            if (gw_s3_conditions(&h, etag, 5, 0) != GW_S3_COND_OK) {
                FAILS();
            }
        }
    }
    {
        struct cm_buf b;
        size_t meta = 0;

        cm_buf_init(&b);
        (void)gw_s3_hdrs_add(&b, &meta, f[3], f[4]);
        (void)gw_s3_hdrs_add(&b, &meta, f[1], f[2]);
        if (b.len > GW_S3_HDRS_MAX) {
            FAILS();
        }
        cm_buf_fini(&b);
    }
    {
        uint64_t v;

        if (gw_s3_parse_uint(f[4], 10000, &v) == 0 && v > 10000) {
            FAILS();
        }
    }
    free(buf);
    return 0;
}
