/* fuzz_cos_url.c - the s3 COS backend's parsers (common/src/cm_cos_s3p.c).
 * The first byte picks one: 'u' (or anything else) the URL parser, 'l'
 * the ListBucketResult reader, 'e' the error reader (status from the next
 * two bytes). Checks what each promises: a URL it takes has every field in
 * range, one it refuses has a one-line reason; listed keys fit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_cos_int.h"
#include "cm_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
on_key(void *arg, const char *key)
{
    size_t *n = arg;

    if (strlen(key) > CM_S3_KEY_MAX) {
        abort();
    }
    return ++*n > 100000;
}

static void
check_url(const char *s)
{
    struct cm_s3_url u;
    char err[160];

    memset(&u, 0x5a, sizeof(u));
    if (cm_s3_url_parse(s, &u, err, sizeof(err)) != 0) {
        if (strncmp(err, "cos url: ", 9) != 0 || strchr(err, '\n') != NULL) {
            abort();
        }
        return;
    }
    if (u.port < 1 || u.port > 65535 || (u.sig != CM_S3_SIG_V2 && u.sig != CM_S3_SIG_V4) ||
        (u.tls != 0 && u.tls != 1) || memchr(u.host, '\0', sizeof(u.host)) == NULL ||
        u.host[0] == '\0' || strlen(u.bucket) < 3 || strlen(u.bucket) > 63 ||
        memchr(u.region, '\0', sizeof(u.region)) == NULL ||
        memchr(u.prefix, '\0', sizeof(u.prefix)) == NULL ||
        (u.prefix[0] != '\0' && !cm_cos_name_valid(u.prefix))) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char next[CM_S3_KEY_MAX + 1];
    char *s;
    size_t n = 0;
    int tr;

    if (size < 1) {
        return 0;
    }
    s = malloc(size);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    switch (data[0]) {
    case 'l':
        if (cm_s3_list_parse(s, size - 1, on_key, &n, &tr, next) == 0 &&
            strlen(next) > CM_S3_KEY_MAX) {
            abort();
        }
        break;
    case 'e':
        if (size >= 3) {
            int rc = cm_s3_http_err(100 + (data[1] << 8 | data[2]) % 500, s + 2, size - 3);

            if (rc > 0) {
                abort();
            }
        }
        break;
    default:
        check_url(s);
        break;
    }
    free(s);
    return 0;
}
