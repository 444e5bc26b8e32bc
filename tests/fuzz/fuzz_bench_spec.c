/*
 * fuzz_bench_spec.c - libFuzzer target for shoal-bench's tenant spec (with
 * its rate/conc schedules), size, duration and URL parsers. Invariants
 * checked on success: name and key are NUL-terminated and within bounds,
 * size_min <= size_max, fields in range, a schedule stays in [0, its peak]
 * and its peak is what rate/conc say.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_sched(const struct bn_tenant *t)
{
    const struct bn_sched *s = &t->sched;
    if (s->kind == BN_SCHED_NONE) {
        return;
    }
    double peak = bn_sched_max(s);
    double want = t->loop == BN_LOOP_OPEN ? t->rate : (double)t->conc;
    if (!(peak > 0) || peak > BN_SCHED_VMAX || strlen(s->text) >= BN_SCHED_TEXT ||
        (t->loop == BN_LOOP_OPEN ? want != peak : fabs(want - peak) > 0.5)) {
        abort();
    }
    /* Around the points and edges, and far out. */
    double ts[] = {-1, 0, 0.001, 0.5, 1, 2.5, 9.99, 10, 59.5, 60, 3600.25, 1e6, BN_SCHED_TMAX};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        double v = bn_sched_at(s, ts[i]);
        double m = bn_sched_mean(s, ts[i], ts[i] + 1);
        if (!(v >= 0 && v <= peak * (1 + 1e-12)) || !(m >= 0 && m <= peak * (1 + 1e-12))) {
            abort();
        }
    }
}

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
        check_sched(&t);
    }
    if (strlen(err) >= sizeof(err)) {
        abort();
    }

    uint64_t v;
    (void)bn_parse_size(s, size, &v);
    double secs;
    if (bn_parse_duration(s, size, &secs) == 0 && !(secs >= 0 && secs <= BN_SCHED_TMAX)) {
        abort();
    }

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
