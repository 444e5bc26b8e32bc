/*
 * test_cost.c - prices and bills: the default table, a --prices file and
 * its refusals (path:line and why), memory GB-seconds and counter folding
 * by hand, the bill against hand-computed sums, the store records round
 * trip and their refusals, and the JSON of GET /v1/tenants/{name}/cost.
 */
#include "t_check.h"

#include <errno.h>
#include <jansson.h>

#include "cm_err.h"
#include "ctl_api_impl.h"
#include "ctl_cost.h"
#include "ctl_model.h"

static char *
write_file(const char *dir, const char *text)
{
    char *path;
    FILE *f;

    CHECK(asprintf(&path, "%s/prices.conf", dir) > 0);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

static void
test_prices(const char *dir)
{
    struct ctl_prices p;
    char err[256], *path;

    ctl_prices_default(&p);
    CHECK(p.v[CTL_P_GB_SECOND] == 0.0000166667);
    CHECK(p.v[CTL_P_REQUEST] == 0.0000002);
    CHECK(p.v[CTL_P_PUT_1000] == 0.005);
    CHECK(p.v[CTL_P_GET_1000] == 0.0004);
    CHECK(p.v[CTL_P_DELETE_1000] == 0.0);
    CHECK(p.v[CTL_P_STORAGE_GB_MONTH] == 0.023);
    CHECK_EQ_STR(ctl_price_name(CTL_P_GB_SECOND), "lambda_gb_second");
    CHECK(ctl_price_name(CTL_NPRICES) == NULL);
    CHECK(ctl_price_help(CTL_P_PUT_1000) != NULL);

    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get_per_1000", "0.001"), 0);
    CHECK(p.v[CTL_P_GET_1000] == 0.001);
    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get_per_1000", "-1"), CM_E_BADARG);
    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get_per_1000", "nan"), CM_E_BADARG);
    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get_per_1000", ""), CM_E_BADARG);
    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get_per_1000", "1e999"), CM_E_BADARG);
    CHECK_EQ_INT(ctl_prices_set(&p, "s3_get", "1"), CM_E_NOTFOUND);
    CHECK(p.v[CTL_P_GET_1000] == 0.001);

    /* A file: comments, blank lines, a later line wins, the rest default. */
    path = write_file(dir, "# arm64 prices\n\nlambda_gb_second = 0.0000133334\n"
                           "lambda_request = 0.0000002 # per request\n"
                           "lambda_gb_second = 0.0000133334\n");
    CHECK_EQ_INT(ctl_prices_load(path, &p, err, sizeof(err)), 0);
    CHECK(p.v[CTL_P_GB_SECOND] == 0.0000133334);
    CHECK(p.v[CTL_P_GET_1000] == 0.0004); /* defaults under the file */
    free(path);

    path = write_file(dir, "lambda_gb_second = 1\ns3_put = 0.005\n");
    CHECK_EQ_INT(ctl_prices_load(path, &p, err, sizeof(err)), CM_E_NOTFOUND);
    CHECK(strstr(err, "prices.conf:2: unknown price 's3_put'") != NULL);
    free(path);
    path = write_file(dir, "s3_put_per_1000 = cheap\n");
    CHECK(ctl_prices_load(path, &p, err, sizeof(err)) < 0);
    CHECK(strstr(err, "prices.conf:1: s3_put_per_1000 must be a number >= 0") != NULL);
    free(path);
    path = write_file(dir, "lambda_request\n");
    CHECK(ctl_prices_load(path, &p, err, sizeof(err)) < 0);
    CHECK(strstr(err, "prices.conf:1: expected name = value") != NULL);
    free(path);
    CHECK(ctl_prices_load("/nonexistent/prices", &p, err, sizeof(err)) == -ENOENT);
    CHECK(strstr(err, "cannot read /nonexistent/prices") != NULL);
}

static void
test_totals(void)
{
    struct ctl_cost_totals t = {0};
    struct ctl_cost_counters a = {{0}}, b = {{0}};
    struct ctl_cost_bill bill;
    struct ctl_prices p;

    /* 4 GiB for 2.5 s, then 512 MiB for 1 ms. */
    ctl_cost_add_memory(&t, 4ull << 30, 2500000000ull);
    CHECK_NEAR(t.memory_gb_seconds, 10.0, 1e-12);
    ctl_cost_add_memory(&t, 512ull << 20, 1000000ull);
    CHECK_NEAR(t.memory_gb_seconds, 10.0005, 1e-12);

    a.v[CTL_CC_WARMUPS] = 10;
    a.v[CTL_CC_COS_GETS] = 100;
    ctl_cost_fold(&t, NULL, &a); /* first sight: all of it */
    CHECK_EQ_INT(t.c.v[CTL_CC_WARMUPS], 10);
    b = a;
    b.v[CTL_CC_WARMUPS] = 15;
    b.v[CTL_CC_COS_GET_BYTES] = 4096;
    ctl_cost_fold(&t, &a, &b); /* growth only */
    CHECK_EQ_INT(t.c.v[CTL_CC_WARMUPS], 15);
    CHECK_EQ_INT(t.c.v[CTL_CC_COS_GETS], 100);
    CHECK_EQ_INT(t.c.v[CTL_CC_COS_GET_BYTES], 4096);
    a = b;
    b.v[CTL_CC_WARMUPS] = 3; /* went down: the counters restarted */
    b.v[CTL_CC_COS_GETS] = 101;
    ctl_cost_fold(&t, &a, &b);
    CHECK_EQ_INT(t.c.v[CTL_CC_WARMUPS], 18);
    CHECK_EQ_INT(t.c.v[CTL_CC_COS_GETS], 201);
    CHECK_EQ_INT(t.c.v[CTL_CC_COS_GET_BYTES], 8192);

    t.c.v[CTL_CC_RECOVERIES] = 2;
    t.c.v[CTL_CC_COS_PUTS] = 3000;
    t.c.v[CTL_CC_COS_DELETES] = 50;
    t.c.v[CTL_CC_COS_PUT_BYTES] = 1000;
    ctl_prices_default(&p);
    ctl_cost_bill(&p, &t, &bill);
    CHECK_EQ_INT(bill.invocations, 20);
    CHECK_EQ_INT(bill.cos_requests, 3000 + 201 + 50);
    CHECK_EQ_INT(bill.cos_bytes, 8192 + 1000);
    CHECK_EQ_STR(bill.item[CTL_B_MEMORY].name, "memory");
    CHECK_EQ_STR(bill.item[CTL_B_MEMORY].unit, "GB-s");
    CHECK_NEAR(bill.item[CTL_B_MEMORY].usd, 10.0005 * 0.0000166667, 1e-15);
    CHECK_NEAR(bill.item[CTL_B_INVOCATIONS].usd, 20 * 0.0000002, 1e-15);
    CHECK_NEAR(bill.item[CTL_B_COS_PUT].usd, 3 * 0.005, 1e-15);
    CHECK_NEAR(bill.item[CTL_B_COS_GET].usd, 201 * 0.0004 / 1000, 1e-15);
    CHECK_NEAR(bill.item[CTL_B_COS_GET].unit_usd, 0.0000004, 1e-18);
    CHECK(bill.item[CTL_B_COS_DELETE].usd == 0.0);
    CHECK_NEAR(bill.usd, 10.0005 * 0.0000166667 + 20 * 0.0000002 + 0.015 + 201 * 0.0000004, 1e-15);
}

static void
test_records(void)
{
    struct ctl_cost_tenant_rec t = {7, {12.5, {{1, 2, 3, 4, 5, 6, 7}}}, 1000, 42, 2000}, t2;
    uint32_t ids[2] = {3, 9};
    struct ctl_cost_counters last[2] = {{{1, 0, 0, 0, 0, 0, 9}}, {{0, 5, 0, 0, 0, 0, 0}}};
    struct ctl_cost_node_rec n = {4, 77, 2, ids, last}, n2;
    static const char *const bad[] = {
        "",
        "[]",
        "{\"memory_gb_seconds\":\"x\"}",
        "{\"memory_gb_seconds\":-1}",
        "{\"counters\":{\"warmups\":-1}}",
        "{\"counters\":[]}",
        "{\"gen\":1.5}",
        "{\"gen\":-2}",
    };
    static const char *const badn[] = {
        "{}",
        "{\"tenants\":[]}",
        "{\"tenants\":{\"x\":{}}}",
        "{\"tenants\":{\"01\":{}}}",
        "{\"tenants\":{\"4294967295\":{}}}",
        "{\"tenants\":{\"3\":{\"cos_puts\":\"1\"}}}",
        "{\"incarnation\":-1,\"tenants\":{}}",
    };
    char *text = ctl_cost_tenant_encode(&t);

    CHECK(text != NULL);
    CHECK_EQ_INT(ctl_cost_tenant_decode(7, text, strlen(text), &t2), 0);
    CHECK(memcmp(&t, &t2, sizeof(t)) == 0);
    free(text);
    CHECK_EQ_INT(ctl_cost_tenant_decode(0, "{}", 2, &t2), CM_E_CONFIG); /* id 0 is no tenant */
    CHECK_EQ_INT(ctl_cost_tenant_decode(3, "{}", 2, &t2), 0);           /* all optional */
    CHECK(t2.tenant == 3 && t2.t.memory_gb_seconds == 0 && t2.gen == 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(ctl_cost_tenant_decode(1, bad[i], strlen(bad[i]), &t2), CM_E_CONFIG);
    }
    text = ctl_cost_node_encode(&n);
    CHECK(text != NULL);
    CHECK_EQ_INT(ctl_cost_node_decode(4, text, strlen(text), &n2), 0);
    CHECK(n2.node == 4 && n2.incarnation == 77 && n2.n == 2);
    CHECK(n2.tenants[0] == 3 && n2.tenants[1] == 9);
    CHECK(memcmp(n2.last, last, sizeof(last)) == 0);
    ctl_cost_node_rec_fini(&n2);
    free(text);
    for (size_t i = 0; i < sizeof(badn) / sizeof(badn[0]); i++) {
        CHECK_EQ_INT(ctl_cost_node_decode(1, badn[i], strlen(badn[i]), &n2), CM_E_CONFIG);
        ctl_cost_node_rec_fini(&n2);
    }
}

static double
num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    CHECK(json_is_number(v));
    return json_number_value(v);
}

static void
test_json(void)
{
    struct ctl_prices p;
    struct ctl_tenant t = {.id = 5};
    struct ctl_sms_pool_view v = {.tenant = 5, .cost_age_ms = 60000};
    json_t *j, *items, *e;
    double sum = 0;
    size_t i;

    snprintf(t.name, sizeof(t.name), "alpha");
    ctl_prices_default(&p);
    p.v[CTL_P_GET_1000] = 1.0;
    v.cost.memory_gb_seconds = 3600;
    v.cost.c.v[CTL_CC_WARMUPS] = 100;
    v.cost.c.v[CTL_CC_RECOVERIES] = 1;
    v.cost.c.v[CTL_CC_COS_PUTS] = 2000;
    v.cost.c.v[CTL_CC_COS_GETS] = 500;
    v.cost.c.v[CTL_CC_COS_PUT_BYTES] = 1 << 20;
    v.cost.c.v[CTL_CC_COS_GET_BYTES] = 1 << 10;
    j = ctl_pool_render_cost(&p, &t, &v, 1800000060000ull);
    CHECK(j != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "name")), "alpha");
    CHECK_EQ_INT(num(j, "id"), 5);
    CHECK_NEAR(num(j, "memory_gb_seconds"), 3600, 1e-9);
    CHECK_EQ_INT(num(j, "invocations"), 101);
    CHECK_EQ_INT(num(j, "cos_requests"), 2500);
    CHECK_EQ_INT(num(j, "cos_bytes"), (1 << 20) + (1 << 10));
    CHECK_NEAR(num(j, "usd"), 3600 * 0.0000166667 + 101 * 0.0000002 + 2 * 0.005 + 0.5, 1e-12);
    CHECK_EQ_INT(num(j, "since_ms"), 1800000000000ull);
    CHECK_EQ_INT(num(j, "warmups"), 100);
    CHECK_EQ_INT(num(j, "cos_get_bytes"), 1024);
    CHECK_NEAR(num(json_object_get(j, "prices"), "s3_get_per_1000"), 1.0, 0);
    CHECK_NEAR(num(json_object_get(j, "prices"), "s3_storage_gb_month"), 0.023, 0);
    items = json_object_get(j, "breakdown");
    CHECK_EQ_INT(json_array_size(items), CTL_B_N);
    json_array_foreach(items, i, e)
    {
        CHECK(json_is_string(json_object_get(e, "item")));
        CHECK(json_is_string(json_object_get(e, "unit")));
        CHECK_NEAR(num(e, "usd"), num(e, "quantity") * num(e, "unit_usd"), 1e-15);
        sum += num(e, "usd");
    }
    CHECK_NEAR(sum, num(j, "usd"), 1e-12);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(items, 3), "item")), "cos_get");
    CHECK_NEAR(num(json_array_get(items, 3), "usd"), 0.5, 1e-12);
    json_decref(j);
}

int
main(void)
{
    char *dir = t_tmpdir();

    test_prices(dir);
    test_totals();
    test_records();
    test_json();
    t_rmtree(dir);
    printf("ok\n");
    return 0;
}
