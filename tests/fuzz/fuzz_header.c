/* fuzz_header.c - Authorization (Bearer), the LIST query parameters and
 * X-Request-Id. Input: up to four NUL-separated fields: authorization,
 * prefix, after, limit (a missing field is absent). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *f[4] = {NULL, NULL, NULL, NULL};
    struct gw_list_query q;
    const char *tok, *why;
    size_t toklen, nf = 0;
    char *buf = malloc(size + 1);

    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (size_t i = 0, s = 0; i <= size && nf < 4; i++) {
        if (i == size || buf[i] == '\0') {
            f[nf++] = buf + s;
            s = i + 1;
        }
    }
    if (f[0] != NULL && gw_parse_bearer(f[0], &tok, &toklen) == 0) {
        if (toklen == 0 || tok < f[0] || tok + toklen > f[0] + strlen(f[0])) {
            abort();
        }
        for (size_t i = 0; i < toklen; i++) {
            if (tok[i] == ' ' || tok[i] == '\t' || tok[i] == '\0') {
                abort();
            }
        }
    }
    if (gw_parse_list_query(f[1], f[2], f[3], &q, &why) == 0) {
        if (q.limit == 0 || q.limit > GW_LIST_MAX || q.prefix == NULL ||
            q.prefix_len > GW_KEY_MAX || (q.after != NULL && q.after_len > GW_KEY_MAX)) {
            abort();
        }
    } else if (why == NULL) {
        abort();
    }
    if (f[0] != NULL && gw_reqid_ok(f[0]) && strlen(f[0]) > GW_REQID_MAX) {
        abort();
    }
    free(buf);
    return 0;
}
