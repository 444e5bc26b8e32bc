/*
 * ctl_model.c - input checks and key minting for the controller's records.
 * Pure functions apart from ctl_key_new (randomness); any thread.
 */
#include "ctl_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cm_hash.h"

static int
name_char(char c, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
        return 1;
    }
    return !first && c == '-';
}

int
ctl_valid_name(const char *s, size_t len)
{
    if (s == NULL || len == 0 || len > CTL_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (!name_char(s[i], i == 0)) {
            return 0;
        }
    }
    return 1;
}

int
ctl_valid_weight(double w)
{
    return isfinite(w) && w > 0.0 && w <= CTL_WEIGHT_MAX;
}

int
ctl_valid_ec(long k, long m)
{
    return k >= 1 && k <= CM_EC_MAX_K && m >= 0 && m <= CM_EC_MAX_M;
}

int
ctl_valid_addr(const char *s, size_t len)
{
    if (s == NULL || len == 0 || len >= CTL_ADDR_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\') {
            return 0;
        }
    }
    return memchr(s, ':', len) != NULL;
}

int
ctl_key_new(char *key, char *hash)
{
    char hex[CTL_KEY_HEX + 1];
    int rc = cm_random_hex(hex, CTL_KEY_HEX / 2);

    if (rc < 0) {
        goto out;
    }
    snprintf(key, CTL_KEY_LEN + 1, "sk_%s", hex);
    cm_sha256_hex(key, CTL_KEY_LEN, hash);
out:
    return rc;
}
