/*
 * fuzz_bench_trace.c - libFuzzer target for shoal-bench's --trace CSV parser.
 * Invariants checked on success: times are non-decreasing and in range,
 * tenants and ops are valid, every key lies inside the key buffer and is a
 * URL path's bytes (unreserved or %XX), PUT sizes are bounded and max_put is
 * their maximum; on failure the trace is empty and the reason is one line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
unreserved(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~' || c == '/';
}

static int
upper_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct bn_tenant tenants[2];
    struct bn_trace tr;
    char err[96];

    bn_tenant_defaults(&tenants[0]);
    bn_tenant_defaults(&tenants[1]);
    strcpy(tenants[0].name, "a");
    strcpy(tenants[1].name, "reg-2");
    /* Exact-size heap copy so ASan sees reads past the end. */
    char *s = malloc(size ? size : 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data, size);
    if (bn_trace_parse(&tr, s, size, tenants, 2, err, sizeof(err)) == 0) {
        uint64_t max_put = 0;
        for (size_t i = 0; i < tr.n; i++) {
            const struct bn_trace_ent *e = &tr.ent[i];
            if (!(e->t >= 0 && e->t <= BN_TRACE_TMAX) || (i > 0 && e->t < tr.ent[i - 1].t) ||
                e->tenant >= 2 || e->op > BN_OP_DELETE || e->klen == 0 ||
                e->klen > 3 * BN_TRACE_KEY_MAX || e->key + e->klen > tr.keys_len ||
                e->size > BN_MAX_SIZE || (e->op != BN_OP_PUT && e->size != 0)) {
                abort();
            }
            const char *k = tr.keys + e->key;
            for (uint32_t j = 0; j < e->klen; j++) {
                if (unreserved(k[j])) {
                    continue;
                }
                if (k[j] != '%' || j + 2 >= e->klen || !upper_hex(k[j + 1]) ||
                    !upper_hex(k[j + 2])) {
                    abort();
                }
                j += 2;
            }
            max_put = e->size > max_put ? e->size : max_put;
        }
        if (max_put != tr.max_put) {
            abort();
        }
        bn_trace_fini(&tr);
    } else if (tr.ent != NULL || tr.keys != NULL || tr.n != 0 ||
               memchr(err, '\n', strlen(err)) != NULL) {
        abort();
    }
    free(s);
    return 0;
}
