/* test_model.c - tenant-name, weight, EC and address checks; key minting. */
#include "t_check.h"

#include <math.h>

#include "cm_hash.h"
#include "ctl_model.h"

static int
name_ok(const char *s)
{
    return ctl_valid_name(s, strlen(s));
}

static void
test_names(void)
{
    char longest[64], too_long[65];

    memset(longest, 'a', 63);
    longest[63] = '\0';
    memset(too_long, 'a', 64);
    too_long[64] = '\0';
    CHECK(name_ok("a"));
    CHECK(name_ok("0"));
    CHECK(name_ok("demo"));
    CHECK(name_ok("tenant-1"));
    CHECK(name_ok("a-"));
    CHECK(name_ok("9lives"));
    CHECK(name_ok(longest));
    CHECK(!name_ok(""));
    CHECK(!name_ok(too_long));
    CHECK(!name_ok("-a"));
    CHECK(!name_ok("Demo"));
    CHECK(!name_ok("DEMO"));
    CHECK(!name_ok("a_b"));
    CHECK(!name_ok("a.b"));
    CHECK(!name_ok("a b"));
    CHECK(!name_ok("a/b"));
    CHECK(!name_ok("a%20"));
    CHECK(!name_ok("\xc3\xa9t\xc3\xa9"));
    CHECK(!ctl_valid_name("ab\0c", 4));
    CHECK(!ctl_valid_name(NULL, 0));
}

static void
test_weights(void)
{
    CHECK(ctl_valid_weight(1));
    CHECK(ctl_valid_weight(0.001));
    CHECK(ctl_valid_weight(10000));
    CHECK(ctl_valid_weight(1e-300));
    CHECK(!ctl_valid_weight(0));
    CHECK(!ctl_valid_weight(-0.0));
    CHECK(!ctl_valid_weight(-1));
    CHECK(!ctl_valid_weight(10000.0001));
    CHECK(!ctl_valid_weight(strtod("1e309", NULL)));
    CHECK(!ctl_valid_weight(INFINITY));
    CHECK(!ctl_valid_weight(-INFINITY));
    CHECK(!ctl_valid_weight(NAN));
}

static void
test_ec_addr(void)
{
    CHECK(ctl_valid_ec(4, 2));
    CHECK(ctl_valid_ec(1, 0));
    CHECK(ctl_valid_ec(CM_EC_MAX_K, CM_EC_MAX_M));
    CHECK(!ctl_valid_ec(0, 2));
    CHECK(!ctl_valid_ec(4, -1));
    CHECK(!ctl_valid_ec(CM_EC_MAX_K + 1, 0));
    CHECK(!ctl_valid_ec(4, CM_EC_MAX_M + 1));
    CHECK(ctl_valid_addr("127.0.0.1:9500", 14));
    CHECK(!ctl_valid_addr("127.0.0.1", 9));
    CHECK(!ctl_valid_addr("", 0));
    CHECK(!ctl_valid_addr("a b:1", 5));
    CHECK(!ctl_valid_addr("a\"b:1", 5));
}

static void
test_keys(void)
{
    char k1[CTL_KEY_LEN + 1], k2[CTL_KEY_LEN + 1], h1[65], h2[65], h[65];

    CHECK_EQ_INT(ctl_key_new(k1, h1), 0);
    CHECK_EQ_INT(ctl_key_new(k2, h2), 0);
    CHECK_EQ_INT(strlen(k1), 51);
    CHECK(strncmp(k1, "sk_", 3) == 0);
    for (int i = 3; i < 51; i++) {
        CHECK((k1[i] >= '0' && k1[i] <= '9') || (k1[i] >= 'a' && k1[i] <= 'f'));
    }
    CHECK(strcmp(k1, k2) != 0);
    cm_sha256_hex(k1, strlen(k1), h);
    CHECK_EQ_STR(h, h1);
    CHECK(strcmp(h1, h2) != 0);
}

int
main(void)
{
    test_names();
    test_weights();
    test_ec_addr();
    test_keys();
    fprintf(stderr, "ok\n");
    return 0;
}
