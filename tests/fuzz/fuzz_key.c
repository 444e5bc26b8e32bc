/* fuzz_key.c - gw_parse_key on arbitrary bytes; checks the invariants of
 * every accepted key (length, clean UTF-8, no "." / ".." segment, and that
 * re-encoding every byte as %XX parses back to the same key). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[GW_KEY_MAX], again[GW_KEY_MAX];
    char *enc;
    size_t n = 0, n2 = 0;
    const char *why = NULL;

    if (gw_parse_key((const char *)data, size, out, &n, &why) != 0) {
        if (why == NULL) {
            abort();
        }
        return 0;
    }
    if (n == 0 || n > GW_KEY_MAX || !gw_utf8_clean(out, n) || memchr(out, '\0', n) != NULL) {
        abort();
    }
    for (size_t s = 0; s < n;) {
        size_t e = s;
        while (e < n && out[e] != '/') {
            e++;
        }
        if ((e - s == 1 && out[s] == '.') || (e - s == 2 && out[s] == '.' && out[s + 1] == '.')) {
            abort();
        }
        s = e + 1;
    }
    enc = malloc(3 * n + 1);
    if (enc == NULL) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(enc + 3 * i, 4, "%%%02X", (unsigned char)out[i]);
    }
    if (gw_parse_key(enc, 3 * n, again, &n2, NULL) != 0 || n2 != n || memcmp(again, out, n) != 0) {
        abort();
    }
    free(enc);
    return 0;
}
