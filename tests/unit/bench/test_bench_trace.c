/* Unit tests: the --trace CSV parser (bench_trace.c). */
#include <string.h>

#include "t_check.h"

#include "bench.h"

static struct bn_tenant tenants[2];

static int
parse(struct bn_trace *tr, const char *csv, char *err, size_t cap)
{
    return bn_trace_parse(tr, csv, strlen(csv), tenants, 2, err, cap);
}

static const char *
key(const struct bn_trace *tr, size_t i, char *buf, size_t cap)
{
    const struct bn_trace_ent *e = &tr->ent[i];
    CHECK(e->klen < cap && e->key + e->klen <= tr->keys_len);
    memcpy(buf, tr->keys + e->key, e->klen);
    buf[e->klen] = '\0';
    return buf;
}

static void
test_good(void)
{
    struct bn_trace tr;
    char err[160], k[128];
    const char *csv = "t,tenant,op,key,size\n"
                      "0,reg-a,PUT,layers/sha256-ab,4MiB\n"
                      "0.25,b,PUT,cfg.json,1500\n"
                      "\n"
                      "0.25,reg-a,GET,layers/sha256-ab,\n"
                      "1.5,b,GET,cfg.json,1500\n"
                      "2,b,DELETE,cfg.json,\n"
                      "3,reg-a,GET,a b?c%d\xc3\xa9,7\n";
    /* a space is not allowed: that last line must fail, as line 8 */
    CHECK(parse(&tr, csv, err, sizeof(err)) != 0);
    CHECK(strncmp(err, "line 8:", 7) == 0);
    CHECK(tr.n == 0 && tr.ent == NULL && tr.keys == NULL);

    csv = "t,tenant,op,key,size\r\n"
          "0,reg-a,PUT,layers/sha256-ab,4MiB\r\n"
          "0.25,b,PUT,cfg.json,1500\r\n"
          "\r\n"
          "0.25,reg-a,GET,layers/sha256-ab,\r\n"
          "1.5,b,GET,cfg.json,1500\r\n"
          "2,b,DELETE,cfg.json,\r\n"
          "3,reg-a,GET,a+b?c%d\xc3\xa9#,7"; /* no final newline */
    CHECK(parse(&tr, csv, err, sizeof(err)) == 0);
    CHECK_EQ_INT(tr.n, 6);
    CHECK(tr.max_put == 4u << 20);
    CHECK(tr.ent[0].t == 0 && tr.ent[0].tenant == 0 && tr.ent[0].op == BN_OP_PUT);
    CHECK(tr.ent[0].size == 4u << 20);
    CHECK_EQ_STR(key(&tr, 0, k, sizeof(k)), "layers/sha256-ab");
    CHECK(tr.ent[1].tenant == 1 && tr.ent[1].size == 1500);
    CHECK(tr.ent[2].op == BN_OP_GET && tr.ent[2].size == 0 && tr.ent[2].t == 0.25);
    CHECK(tr.ent[3].op == BN_OP_GET && tr.ent[3].size == 0); /* size ignored for GET */
    CHECK(tr.ent[4].op == BN_OP_DELETE && tr.ent[4].t == 2);
    CHECK_EQ_STR(key(&tr, 4, k, sizeof(k)), "cfg.json");
    CHECK_EQ_STR(key(&tr, 5, k, sizeof(k)), "a%2Bb%3Fc%25d%C3%A9%23");
    bn_trace_fini(&tr);
    CHECK(tr.ent == NULL && tr.n == 0);

    /* A header alone is an empty trace, not an error. */
    CHECK(parse(&tr, "t,tenant,op,key,size\n", err, sizeof(err)) == 0 && tr.n == 0);
    bn_trace_fini(&tr);

    /* Longest key: 1024 bytes, all encoded. */
    static char big[2048];
    int n = snprintf(big, sizeof(big), "t,tenant,op,key,size\n1,b,GET,");
    memset(big + n, '!', BN_TRACE_KEY_MAX);
    strcpy(big + n + BN_TRACE_KEY_MAX, ",\n");
    CHECK(parse(&tr, big, err, sizeof(err)) == 0 && tr.n == 1);
    CHECK(tr.ent[0].klen == 3 * BN_TRACE_KEY_MAX);
    bn_trace_fini(&tr);
    memset(big + n, 'x', BN_TRACE_KEY_MAX + 1);
    strcpy(big + n + BN_TRACE_KEY_MAX + 1, ",\n");
    CHECK(parse(&tr, big, err, sizeof(err)) != 0 && strstr(err, "key") != NULL);
}

static void
test_bad(void)
{
    static const struct {
        const char *csv;
        const char *err; /* a substring of the reason */
    } bad[] = {
        {"", "empty"},
        {"t,tenant,op,key\n", "line 1"},
        {"time,tenant,op,key,size\n0,b,GET,k,\n", "line 1"},
        {"0,b,GET,k,\n", "line 1"},
        {"t,tenant,op,key,size\n0,b,GET,k\n", "line 2: want 5 fields"},
        {"t,tenant,op,key,size\n0,b,GET,k,,\n", "line 2: want 5 fields"},
        {"t,tenant,op,key,size\n0,c,GET,k,\n", "line 2: tenant 'c'"},
        {"t,tenant,op,key,size\n0,b,get,k,\n", "line 2: bad op"},
        {"t,tenant,op,key,size\n0,b,HEAD,k,\n", "bad op"},
        {"t,tenant,op,key,size\n-1,b,GET,k,\n", "bad t"},
        {"t,tenant,op,key,size\nx,b,GET,k,\n", "bad t"},
        {"t,tenant,op,key,size\n1e8,b,GET,k,\n", "bad t"},
        {"t,tenant,op,key,size\n2,b,GET,k,\n1,b,GET,k,\n", "line 3: t goes back"},
        {"t,tenant,op,key,size\n0,b,PUT,k,\n", "bad size"},
        {"t,tenant,op,key,size\n0,b,PUT,k,2GiB\n", "bad size"},
        {"t,tenant,op,key,size\n0,b,GET,k,lots\n", "bad size"},
        {"t,tenant,op,key,size\n0,b,GET,,\n", "bad key"},
        {"t,tenant,op,key,size\n0,b,GET,a\"b,\n", "bad key"},
        {"t,tenant,op,key,size\n0,b,GET,a\tb,\n", "bad key"},
        {"t,tenant,op,key,size\n0,b,GET,a\x7f,\n", "bad key"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct bn_trace tr;
        char err[160];
        int rc = parse(&tr, bad[i].csv, err, sizeof(err));
        if (rc == 0 || strstr(err, bad[i].err) == NULL) {
            fprintf(stderr, "trace %zu: rc=%d err='%s', want '%s'\n", i, rc, err, bad[i].err);
        }
        CHECK(rc != 0 && strstr(err, bad[i].err) != NULL);
        CHECK(tr.n == 0 && tr.ent == NULL && tr.keys == NULL);
    }
    /* Only len bytes count: the rest of the buffer is not read. */
    struct bn_trace tr;
    char err[160];
    const char buf[] = "t,tenant,op,key,size\n0,b,GET,k,\nX";
    CHECK(bn_trace_parse(&tr, buf, sizeof(buf) - 1, tenants, 2, err, sizeof(err)) != 0);
    CHECK(strstr(err, "line 3") != NULL);
    CHECK(bn_trace_parse(&tr, buf, sizeof(buf) - 2, tenants, 2, err, sizeof(err)) == 0);
    CHECK(tr.n == 1);
    bn_trace_fini(&tr);
}

int
main(void)
{
    bn_tenant_defaults(&tenants[0]);
    bn_tenant_defaults(&tenants[1]);
    strcpy(tenants[0].name, "reg-a");
    strcpy(tenants[1].name, "b");
    test_good();
    test_bad();
    return 0;
}
