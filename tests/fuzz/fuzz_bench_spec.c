/*
 * fuzz_bench_spec.c - libFuzzer target for shoal-bench's tenant spec, size
 * and URL parsers. Invariants checked on success: name and key are
 * NUL-terminated and within bounds, size_min <= size_max, fields in range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bn_tenant t;
    char err[64];
    /* Exact-size heap copy so ASan sees reads past the end. */
    char *s = malloc(size ? size : 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data, size);

    bn_tenant_defaults(&t);
    if (bn_tenant_parse(&t, s, size, err, sizeof(err)) == 0) {
        if (strlen(t.name) == 0 || strlen(t.name) >= BN_NAME_MAX || strlen(t.key) == 0 ||
            strlen(t.key) >= BN_KEY_MAX || t.size_min > t.size_max || t.size_max > BN_MAX_SIZE ||
            !(t.weight > 0) || !(t.read >= 0 && t.read <= 1) || !(t.zipf >= 0 && t.zipf < 1) ||
            t.keys == 0 || (t.loop == BN_LOOP_OPEN && !(t.rate > 0)) ||
            (t.loop == BN_LOOP_CLOSED && t.conc == 0)) {
            abort();
        }
    }
    if (strlen(err) >= sizeof(err)) {
        abort();
    }

    uint64_t v;
    (void)bn_parse_size(s, size, &v);

    /* The URL parser takes a C string. */
    char *z = malloc(size + 1);
    if (z != NULL) {
        memcpy(z, data, size);
        z[size] = '\0';
        char host[32], path[64];
        uint16_t port;
        if (bn_parse_url(z, host, sizeof(host), &port, path, sizeof(path)) == 0) {
            if (port == 0 || strlen(host) >= sizeof(host) || path[0] != '/') {
                abort();
            }
        }
        free(z);
    }
    free(s);
    return 0;
}
