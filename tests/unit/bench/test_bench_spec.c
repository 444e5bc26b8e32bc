/* Unit tests: tenant spec, size, workload and URL parsers (bench_spec.c). */
#include <string.h>

#include "t_check.h"

#include "bench.h"

static int
parse(struct bn_tenant *t, const char *s)
{
    char err[160];
    bn_tenant_defaults(t);
    return bn_tenant_parse(t, s, strlen(s), err, sizeof(err));
}

static void
test_full(void)
{
    struct bn_tenant t;
    CHECK(parse(&t, "name=alpha-1,key=k3y_ABC.z,weight=2.5,conc=8,size=1KiB-64KiB,"
                       "read=0.95,keys=5000,zipf=0") == 0);
    CHECK(strcmp(t.name, "alpha-1") == 0);
    CHECK(strcmp(t.key, "k3y_ABC.z") == 0);
    CHECK(t.weight == 2.5);
    CHECK(t.loop == BN_LOOP_CLOSED && t.conc == 8);
    CHECK(t.size_min == 1024 && t.size_max == 65536);
    CHECK(t.read == 0.95 && (t.set & BN_SET_READ));
    CHECK(t.keys == 5000);
    CHECK(t.zipf == 0 && (t.set & BN_SET_ZIPF));

    CHECK(parse(&t, "name=b,key=x,rate=2500.5,conns=12,size=4096") == 0);
    CHECK(t.loop == BN_LOOP_OPEN && t.rate == 2500.5 && t.conns == 12);
    CHECK(t.size_min == 4096 && t.size_max == 4096);
}

static void
test_defaults(void)
{
    struct bn_tenant t;
    CHECK(parse(&t, "key=abc,name=t") == 0);
    CHECK(t.weight == 1.0 && t.conc == BN_DEFAULT_CONC && t.loop == BN_LOOP_CLOSED);
    CHECK(t.size_min == BN_DEFAULT_SIZE && t.keys == BN_DEFAULT_KEYS);
    CHECK(t.zipf == BN_DEFAULT_ZIPF && t.read == 0.5 && t.set == 0);
}

static void
test_errors(void)
{
    struct bn_tenant t;
    char err[160];
    static const char *bad[] = {
        "",
        "name=a",                     /* no key */
        "key=a",                      /* no name */
        "name=A,key=k",               /* upper case name */
        "name=-a,key=k",              /* leading dash */
        "name=a,key=k,conc=4,rate=5", /* exclusive */
        "name=a,key=k,rate=5,conc=4",
        "name=a,key=k,conc=0",
        "name=a,key=k,conc=-1",
        "name=a,key=k,rate=0",
        "name=a,key=k,rate=nan",
        "name=a,key=k,weight=0",
        "name=a,key=k,weight=10001",
        "name=a,key=k,read=1.5",
        "name=a,key=k,zipf=1",
        "name=a,key=k,zipf=inf",
        "name=a,key=k,size=64KiB-1KiB",
        "name=a,key=k,size=2GiB",
        "name=a,key=k,size=1XB",
        "name=a,key=k,size=",
        "name=a,key=k,keys=0",
        "name=a,key=k,",
        "name=a,,key=k",
        "name=a,key=k,color=red",
        "name=a,key=k k",
        "name=a,key=",
        "=a,key=k",
        "name=a,key=k,conc=99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bn_tenant_defaults(&t);
        int rc = bn_tenant_parse(&t, bad[i], strlen(bad[i]), err, sizeof(err));
        if (rc == 0) {
            fprintf(stderr, "accepted bad spec '%s'\n", bad[i]);
        }
        CHECK(rc != 0);
        CHECK(strlen(err) > 0);
    }
    /* Not NUL-terminated input: only len bytes count. */
    const char buf[] = "name=a,key=kXXXX";
    bn_tenant_defaults(&t);
    CHECK(bn_tenant_parse(&t, buf, 12, err, sizeof(err)) == 0);
    CHECK(strcmp(t.key, "k") == 0);
}

static void
test_size_workload_url(void)
{
    uint64_t v;
    CHECK(bn_parse_size("1KiB", 4, &v) == 0 && v == 1024);
    CHECK(bn_parse_size("1k", 2, &v) == 0 && v == 1000);
    CHECK(bn_parse_size("10MiB", 5, &v) == 0 && v == 10u << 20);
    CHECK(bn_parse_size("100MB", 5, &v) == 0 && v == 100000000u);
    CHECK(bn_parse_size("1GiB", 4, &v) == 0 && v == 1u << 30);
    CHECK(bn_parse_size("12", 2, &v) == 0 && v == 12);
    CHECK(bn_parse_size("KiB", 3, &v) != 0);
    CHECK(bn_parse_size("1 KiB", 5, &v) != 0);

    double r;
    CHECK(bn_workload_read("a", &r) == 0 && r == 0.5);
    CHECK(bn_workload_read("B", &r) == 0 && r == 0.95);
    CHECK(bn_workload_read("c", &r) == 0 && r == 1.0);
    CHECK(bn_workload_read("d", &r) != 0);
    CHECK(bn_workload_read("", &r) != 0);

    char host[64], path[64];
    uint16_t port;
    CHECK(bn_parse_url("http://127.0.0.1:8080/file", host, sizeof(host), &port, path,
                          sizeof(path)) == 0);
    CHECK(strcmp(host, "127.0.0.1") == 0 && port == 8080 && strcmp(path, "/file") == 0);
    CHECK(bn_parse_url("http://localhost", host, sizeof(host), &port, path, sizeof(path)) == 0);
    CHECK(port == 80 && strcmp(path, "/") == 0);
    CHECK(bn_parse_url("https://a:1/", host, sizeof(host), &port, path, sizeof(path)) != 0);
    CHECK(bn_parse_url("http://a:0/", host, sizeof(host), &port, path, sizeof(path)) != 0);
    CHECK(bn_parse_url("http://a:70000/", host, sizeof(host), &port, path, sizeof(path)) != 0);
    CHECK(bn_parse_url("http://:80/", host, sizeof(host), &port, path, sizeof(path)) != 0);
    CHECK(bn_parse_url("http://a/b c", host, sizeof(host), &port, path, sizeof(path)) != 0);
}

int
main(void)
{
    test_full();
    test_defaults();
    test_errors();
    test_size_workload_url();
    return 0;
}
