/*
 * test_metrics.c - Prometheus text lines, histogram bucketing, and the
 * per-tenant request stats (exposition and per-tenant totals, with threads).
 */
#include <pthread.h>

#include "t_check.h"

#include "cm_metrics.h"

static int
has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    const char *p = text;

    while ((p = strstr(p, line)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n') {
            return 1;
        }
        p += n;
    }
    return 0;
}

static void
test_basic(void)
{
    struct cm_buf b;

    cm_buf_init(&b);
    cm_prom_family(&b, "shoal_x_total", "counter", "Things.");
    cm_prom_u64(&b, "shoal_x_total", NULL, 5);
    cm_prom_u64(&b, "shoal_x_total", "", 6);
    cm_prom_u64(&b, "shoal_x_total", "tenant=\"3\",op=\"get\"", 18446744073709551615ull);
    cm_prom_double(&b, "shoal_g", NULL, 0.25);
    cm_prom_double(&b, "shoal_g", "a=\"b\"", 1.0 / 0.0);
    CHECK_EQ_STR(b.p, "# HELP shoal_x_total Things.\n"
                      "# TYPE shoal_x_total counter\n"
                      "shoal_x_total 5\n"
                      "shoal_x_total 6\n"
                      "shoal_x_total{tenant=\"3\",op=\"get\"} 18446744073709551615\n"
                      "shoal_g 0.25\n"
                      "shoal_g{a=\"b\"} +Inf\n");
    cm_buf_fini(&b);
}

static void
test_hist(void)
{
    struct cm_hist h = {0}, h2 = {0};
    struct cm_buf b;

    cm_hist_observe(&h, 50000);          /* 50 us -> le 0.0001 */
    cm_hist_observe(&h, 100000);         /* exactly 0.0001: le is inclusive */
    cm_hist_observe(&h, 3000000);        /* 3 ms -> le 0.005 */
    cm_hist_observe(&h, 20000000000ull); /* 20 s -> only +Inf */
    CHECK_EQ_INT(h.bucket[0], 2);
    CHECK_EQ_INT(h.bucket[5], 1);
    CHECK_EQ_INT(h.count, 4);
    cm_hist_merge(&h2, &h);
    cm_hist_merge(&h2, &h);
    CHECK_EQ_INT(h2.count, 8);
    CHECK_EQ_INT(h2.bucket[0], 4);

    cm_buf_init(&b);
    cm_prom_hist(&b, "shoal_lat_seconds", "op=\"get\"", &h);
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{op=\"get\",le=\"0.0001\"} 2"));
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{op=\"get\",le=\"0.0025\"} 2"));
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{op=\"get\",le=\"0.005\"} 3"));
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{op=\"get\",le=\"10\"} 3"));
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{op=\"get\",le=\"+Inf\"} 4"));
    CHECK(has_line(b.p, "shoal_lat_seconds_sum{op=\"get\"} 20.003150000"));
    CHECK(has_line(b.p, "shoal_lat_seconds_count{op=\"get\"} 4"));
    cm_buf_fini(&b);

    cm_buf_init(&b);
    cm_prom_hist(&b, "shoal_lat_seconds", NULL, &h);
    CHECK(has_line(b.p, "shoal_lat_seconds_bucket{le=\"1\"} 3"));
    CHECK(has_line(b.p, "shoal_lat_seconds_sum 20.003150000"));
    CHECK(has_line(b.p, "shoal_lat_seconds_count 4"));
    cm_buf_fini(&b);
}

static const char *const ops[] = {"put", "get", "delete"};

static void *
hammer(void *arg)
{
    struct cm_reqstats *rs = arg;
    int i;

    for (i = 0; i < 10000; i++) {
        cm_reqstats_record(rs, (uint32_t)(i % 50), i % 3, i % 2 ? 200 : 404, 10, 1000);
    }
    return NULL;
}

struct tot {
    uint64_t req[64], bytes[64];
    int calls;
};

static void
tenant_cb(void *arg, uint32_t tenant, uint64_t requests, uint64_t bytes)
{
    struct tot *t = arg;

    CHECK(tenant < 64);
    t->req[tenant] += requests;
    t->bytes[tenant] += bytes;
    t->calls++;
}

static void
test_reqstats(void)
{
    struct cm_reqstats *rs = cm_reqstats_create(ops, 3);
    pthread_t th[4];
    struct cm_buf b;
    struct tot t;
    const char *line, *nl;
    int i;

    cm_reqstats_record(rs, 3, 1, 200, 1000, 2000000);
    cm_reqstats_record(rs, 3, 1, 200, 500, 2000000);
    cm_reqstats_record(rs, 3, 1, 404, 0, 100000);
    cm_reqstats_record(rs, 3, 0, -1005, 0, 100000);
    cm_reqstats_record(rs, 7, 2, 204, 0, 100000);
    cm_reqstats_record(rs, 7, 9, 204, 0, 100000); /* unknown op: dropped */

    cm_buf_init(&b);
    cm_reqstats_expose(rs, "gateway", &b);
    CHECK(has_line(b.p, "# TYPE shoal_gateway_requests_total counter"));
    CHECK(has_line(b.p, "shoal_gateway_requests_total{tenant=\"3\",op=\"get\",code=\"200\"} 2"));
    CHECK(has_line(b.p, "shoal_gateway_requests_total{tenant=\"3\",op=\"get\",code=\"404\"} 1"));
    CHECK(has_line(b.p, "shoal_gateway_requests_total{tenant=\"3\",op=\"put\",code=\"-1005\"} 1"));
    CHECK(has_line(b.p, "shoal_gateway_requests_total{tenant=\"7\",op=\"delete\",code=\"204\"} 1"));
    CHECK(has_line(b.p, "# TYPE shoal_gateway_bytes_total counter"));
    CHECK(has_line(b.p, "shoal_gateway_bytes_total{tenant=\"3\",op=\"get\"} 1500"));
    CHECK(has_line(b.p, "# TYPE shoal_gateway_request_duration_seconds histogram"));
    CHECK(has_line(b.p, "shoal_gateway_request_duration_seconds_bucket{tenant=\"3\",op=\"get\","
                        "le=\"0.0025\"} 3"));
    CHECK(has_line(b.p, "shoal_gateway_request_duration_seconds_count{tenant=\"3\",op=\"get\"} 3"));
    /* every non-comment line is "name{labels} value" or "name value" */
    for (line = b.p; *line != '\0'; line = nl + 1) {
        nl = strchr(line, '\n');
        CHECK(nl != NULL);
        if (line[0] == '#') {
            CHECK(strncmp(line, "# HELP shoal_", 13) == 0 ||
                  strncmp(line, "# TYPE shoal_", 13) == 0);
            continue;
        }
        CHECK(strncmp(line, "shoal_gateway_", 14) == 0);
        CHECK(memchr(line, ' ', (size_t)(nl - line)) != NULL);
        CHECK(nl[-1] >= '0' && nl[-1] <= '9');
    }
    cm_buf_fini(&b);

    for (i = 0; i < 4; i++) {
        CHECK(pthread_create(&th[i], NULL, hammer, rs) == 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
    }
    memset(&t, 0, sizeof(t));
    cm_reqstats_tenants(rs, tenant_cb, &t);
    CHECK_EQ_INT(t.calls, 50);
    CHECK_EQ_INT(t.req[3], 4 + 4 * 200);
    CHECK_EQ_INT(t.bytes[3], 1500 + 4 * 200 * 10);
    CHECK_EQ_INT(t.req[7], 1 + 4 * 200);
    CHECK_EQ_INT(t.req[0], 4 * 200);
    cm_buf_init(&b);
    cm_reqstats_expose(rs, "fnstore", &b);
    CHECK(strstr(b.p, "shoal_fnstore_requests_total{tenant=\"49\"") != NULL);
    cm_buf_fini(&b);
    cm_reqstats_destroy(rs);
    cm_reqstats_destroy(NULL);
}

int
main(void)
{
    test_basic();
    test_hist();
    test_reqstats();
    return 0;
}
