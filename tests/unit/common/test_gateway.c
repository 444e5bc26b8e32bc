/* test_gateway.c - the rules for a gateway's id and URLs. */
#include <string.h>

#include "t_check.h"

#include "cm_gateway.h"

static int
gw_ok(const char *s)
{
    return cm_gateway_id_valid(s, strlen(s));
}

static int
url_ok(const char *s)
{
    return cm_gateway_url_valid(s, strlen(s));
}

static void
test_gateway(void)
{
    char id[66], url[130];

    memset(id, 'g', 64);
    id[64] = '\0';
    CHECK(gw_ok("127.0.0.1:9300"));
    CHECK(gw_ok("gw-1.example_A"));
    CHECK(gw_ok(id));
    id[64] = 'g';
    id[65] = '\0';
    CHECK(!gw_ok(id));
    CHECK(!gw_ok(""));
    CHECK(!gw_ok("a b"));
    CHECK(!gw_ok("a/b"));
    CHECK(!gw_ok("a\"b"));
    CHECK(!gw_ok("\xc3\xa9"));
    CHECK(!cm_gateway_id_valid("ab\0c", 4));
    CHECK(!cm_gateway_id_valid(NULL, 0));

    CHECK(url_ok("http://127.0.0.1:9300"));
    CHECK(url_ok("https://gw.example/s3?x=1"));
    CHECK(url_ok("http://[::1]:9300"));
    CHECK(!url_ok(""));
    CHECK(!url_ok("http://"));
    CHECK(!url_ok("https://"));
    CHECK(!url_ok("ftp://x"));
    CHECK(!url_ok("HTTP://x"));
    CHECK(!url_ok("127.0.0.1:9300"));
    CHECK(!url_ok("http://a b"));
    CHECK(!url_ok("http://a\"b"));
    CHECK(!url_ok("http://a'b"));
    CHECK(!url_ok("http://a\\b"));
    CHECK(!url_ok("http://a\tb"));
    CHECK(!url_ok("http://a\x7f"));
    CHECK(!url_ok("http://\xc3\xa9"));
    CHECK(!cm_gateway_url_valid("http://a\0b", 10));
    memcpy(url, "http://", 7);
    memset(url + 7, 'u', 120);
    url[127] = '\0';
    CHECK(url_ok(url)); /* 127 characters */
    url[127] = 'u';
    url[128] = '\0';
    CHECK(!url_ok(url));
}

int
main(void)
{
    test_gateway();
    return 0;
}
