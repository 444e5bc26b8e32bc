/* test_parse.c - unit.gateway.parse: keys, Range, Bearer, LIST query. */
#include "t_check.h"

#include "cm_err.h"
#include "gw_parse.h"

static int
key_ok(const char *raw, const char *want)
{
    char out[GW_KEY_MAX];
    size_t n = 0;
    const char *why = NULL;
    int rc = gw_parse_key(raw, strlen(raw), out, &n, &why);

    if (rc != 0) {
        CHECK(why != NULL);
        return 0;
    }
    CHECK(why == NULL);
    if (want != NULL) {
        CHECK_EQ_INT(n, strlen(want));
        CHECK(memcmp(out, want, n) == 0);
    }
    return 1;
}

static void
test_keys(void)
{
    char big[3 * GW_KEY_MAX + 8];

    CHECK(key_ok("a", "a"));
    CHECK(key_ok("a/b/c.txt", "a/b/c.txt"));
    CHECK(key_ok("a%2Fb", "a/b"));
    CHECK(key_ok("a%2fb", "a/b"));
    CHECK(key_ok("a+b", "a+b"));
    CHECK(key_ok("%20", " "));
    CHECK(key_ok("caf%C3%A9", "caf\xc3\xa9"));
    CHECK(key_ok("\xe2\x82\xac", "\xe2\x82\xac"));
    CHECK(key_ok("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"));
    CHECK(key_ok("...", "..."));
    CHECK(key_ok(".a/..b/c..", ".a/..b/c.."));
    CHECK(key_ok("a//b", "a//b"));
    CHECK(key_ok("/a", "/a"));

    CHECK(!key_ok("", NULL));
    CHECK(!key_ok(".", NULL));
    CHECK(!key_ok("..", NULL));
    CHECK(!key_ok("a/./b", NULL));
    CHECK(!key_ok("a/../b", NULL));
    CHECK(!key_ok("a/..", NULL));
    CHECK(!key_ok("./a", NULL));
    CHECK(!key_ok("%2E%2E", NULL));
    CHECK(!key_ok("a%2F..", NULL));
    CHECK(!key_ok("a%00b", NULL));
    CHECK(!key_ok("a%0Ab", NULL));
    CHECK(!key_ok("a%7F", NULL));
    CHECK(!key_ok("a%C2%85", NULL)); /* C1 NEL */
    CHECK(!key_ok("a\tb", NULL));
    CHECK(!key_ok("%", NULL));
    CHECK(!key_ok("%4", NULL));
    CHECK(!key_ok("a%zz", NULL));
    CHECK(!key_ok("%FF", NULL));
    CHECK(!key_ok("%C0%AF", NULL));       /* overlong '/' */
    CHECK(!key_ok("%E0%80%AF", NULL));    /* overlong */
    CHECK(!key_ok("%ED%A0%80", NULL));    /* surrogate */
    CHECK(!key_ok("%F4%90%80%80", NULL)); /* > U+10FFFF */
    CHECK(!key_ok("%C3", NULL));          /* truncated */
    CHECK(!key_ok("\xe2\x82", NULL));

    /* 1024 bytes ok, 1025 not, counting decoded bytes */
    memset(big, 'x', GW_KEY_MAX);
    big[GW_KEY_MAX] = '\0';
    CHECK(key_ok(big, NULL));
    big[GW_KEY_MAX] = 'x';
    big[GW_KEY_MAX + 1] = '\0';
    CHECK(!key_ok(big, NULL));
    for (int i = 0; i < GW_KEY_MAX; i++) {
        memcpy(big + 3 * i, "%41", 3);
    }
    big[3 * GW_KEY_MAX] = '\0';
    CHECK(key_ok(big, NULL));
    memcpy(big + 3 * GW_KEY_MAX, "%41", 4);
    CHECK(!key_ok(big, NULL));
}

static enum gw_range
rng(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    *off = *len = 12345;
    return gw_parse_range(h, size, off, len);
}

static void
test_range(void)
{
    uint64_t off, len;

    CHECK_EQ_INT(rng(NULL, 10, &off, &len), GW_RANGE_NONE);
    CHECK_EQ_INT(rng("bytes=0-4", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 0);
    CHECK_EQ_INT(len, 5);
    CHECK_EQ_INT(rng("bytes=2-2", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 2);
    CHECK_EQ_INT(len, 1);
    CHECK_EQ_INT(rng("bytes=5-", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 5);
    CHECK_EQ_INT(len, 5);
    CHECK_EQ_INT(rng("bytes=5-100", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 5);
    CHECK_EQ_INT(len, 5);
    CHECK_EQ_INT(rng("bytes=-3", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 7);
    CHECK_EQ_INT(len, 3);
    CHECK_EQ_INT(rng("bytes=-30", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 0);
    CHECK_EQ_INT(len, 10);
    CHECK_EQ_INT(rng("  Bytes= 1 - 2 ", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(off, 1);
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(rng("bytes=0-99999999999999999999999", 10, &off, &len), GW_RANGE_OK);
    CHECK_EQ_INT(len, 10);

    CHECK_EQ_INT(rng("bytes=10-", 10, &off, &len), GW_RANGE_UNSAT);
    CHECK_EQ_INT(rng("bytes=10-20", 10, &off, &len), GW_RANGE_UNSAT);
    CHECK_EQ_INT(rng("bytes=-0", 10, &off, &len), GW_RANGE_UNSAT);
    CHECK_EQ_INT(rng("bytes=0-", 0, &off, &len), GW_RANGE_UNSAT);
    CHECK_EQ_INT(rng("bytes=-5", 0, &off, &len), GW_RANGE_UNSAT);
    CHECK_EQ_INT(rng("bytes=99999999999999999999999-", 10, &off, &len), GW_RANGE_UNSAT);

    CHECK_EQ_INT(rng("", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=-", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=5-3", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=a-b", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=0-1,3-4", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("items=0-1", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=+1-2", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=1-2x", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes=--1", 10, &off, &len), GW_RANGE_BAD);
    CHECK_EQ_INT(rng("bytes = 1-2", 10, &off, &len), GW_RANGE_BAD);

    /* brute force against a reference on small sizes */
    for (uint64_t size = 0; size < 6; size++) {
        for (int a = -1; a < 8; a++) {
            for (int b = -1; b < 8; b++) {
                char h[64];
                enum gw_range want, got;
                uint64_t wo = 0, wl = 0;
                if (a < 0 && b < 0) {
                    continue;
                }
                if (a < 0) {
                    snprintf(h, sizeof(h), "bytes=-%d", b);
                    if (b == 0 || size == 0) {
                        want = GW_RANGE_UNSAT;
                    } else {
                        want = GW_RANGE_OK;
                        wl = (uint64_t)b < size ? (uint64_t)b : size;
                        wo = size - wl;
                    }
                } else if (b < 0) {
                    snprintf(h, sizeof(h), "bytes=%d-", a);
                    want = (uint64_t)a >= size ? GW_RANGE_UNSAT : GW_RANGE_OK;
                    wo = (uint64_t)a;
                    wl = size - wo;
                } else {
                    snprintf(h, sizeof(h), "bytes=%d-%d", a, b);
                    if (b < a) {
                        want = GW_RANGE_BAD;
                    } else if ((uint64_t)a >= size) {
                        want = GW_RANGE_UNSAT;
                    } else {
                        want = GW_RANGE_OK;
                        wo = (uint64_t)a;
                        wl = ((uint64_t)b < size ? (uint64_t)b : size - 1) - wo + 1;
                    }
                }
                got = rng(h, size, &off, &len);
                CHECK_EQ_INT(got, want);
                if (want == GW_RANGE_OK) {
                    CHECK_EQ_INT(off, wo);
                    CHECK_EQ_INT(len, wl);
                    CHECK(off + len <= size);
                }
            }
        }
    }
}

static void
test_bearer(void)
{
    const char *t;
    size_t n;

    CHECK_EQ_INT(gw_parse_bearer("Bearer abc123", &t, &n), 0);
    CHECK_EQ_INT(n, 6);
    CHECK(memcmp(t, "abc123", 6) == 0);
    CHECK_EQ_INT(gw_parse_bearer("bearer   a.b-c_d~e+f/g=  ", &t, &n), 0);
    CHECK_EQ_INT(n, 14);
    CHECK_EQ_INT(gw_parse_bearer("BEARER x", &t, &n), 0);
    CHECK_EQ_INT(gw_parse_bearer(NULL, &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Bearer", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Bearer ", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Bearerabc", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Basic abc", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Bearer a b", &t, &n), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_bearer("Bearer a\"b", &t, &n), CM_E_BADARG);
}

static void
test_list_query(void)
{
    struct gw_list_query q;
    const char *why;

    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, NULL, &q, &why), 0);
    CHECK_EQ_INT(q.limit, GW_LIST_MAX);
    CHECK_EQ_INT(q.prefix_len, 0);
    CHECK(q.after == NULL);
    CHECK_EQ_INT(gw_parse_list_query("a/", "a/b", "10", &q, &why), 0);
    CHECK_EQ_INT(q.limit, 10);
    CHECK_EQ_INT(q.prefix_len, 2);
    CHECK_EQ_INT(q.after_len, 3);
    CHECK_EQ_INT(gw_parse_list_query(NULL, "", "1000", &q, &why), 0);
    CHECK(q.after != NULL && q.after_len == 0);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "5000", &q, &why), 0);
    CHECK_EQ_INT(q.limit, GW_LIST_MAX);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "99999999999999999999999", &q, &why), 0);
    CHECK_EQ_INT(q.limit, GW_LIST_MAX);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "0", &q, &why), CM_E_BADARG);
    CHECK(why != NULL);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "-1", &q, &why), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "", &q, &why), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, "1x", &q, &why), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_list_query(NULL, NULL, " 1", &q, &why), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_list_query("\xff", NULL, NULL, &q, &why), CM_E_BADARG);
    CHECK_EQ_INT(gw_parse_list_query(NULL, "a\nb", NULL, &q, &why), CM_E_BADARG);
}

static void
test_reqid(void)
{
    char big[GW_REQID_MAX + 2];

    CHECK(gw_reqid_ok("abc-123_x.y:z"));
    CHECK(!gw_reqid_ok(NULL));
    CHECK(!gw_reqid_ok(""));
    CHECK(!gw_reqid_ok("a b"));
    CHECK(!gw_reqid_ok("a\r\nX-Evil: 1"));
    memset(big, 'a', sizeof(big) - 1);
    big[GW_REQID_MAX] = '\0';
    CHECK(gw_reqid_ok(big));
    big[GW_REQID_MAX] = 'a';
    big[GW_REQID_MAX + 1] = '\0';
    CHECK(!gw_reqid_ok(big));
}

int
main(void)
{
    t_seed();
    test_keys();
    test_range();
    test_bearer();
    test_list_query();
    test_reqid();
    printf("ok\n");
    return 0;
}
