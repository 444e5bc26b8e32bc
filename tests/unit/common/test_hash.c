/* test_hash.c - SHA-256 known vectors, random hex, XXH64 vectors. */
#include <ctype.h>

#include "t_check.h"

#include "cm_hash.h"

int
main(void)
{
    char out[65], hex[129], hex2[129];
    int i;

    cm_sha256_hex("abc", 3, out);
    CHECK_EQ_STR(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cm_sha256_hex("", 0, out);
    CHECK_EQ_STR(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    CHECK_EQ_INT(cm_random_hex(hex, 64), 0);
    CHECK_EQ_INT(strlen(hex), 128);
    for (i = 0; i < 128; i++) {
        CHECK(isxdigit((unsigned char)hex[i]) && !isupper((unsigned char)hex[i]));
    }
    CHECK_EQ_INT(cm_random_hex(hex2, 64), 0);
    CHECK(strcmp(hex, hex2) != 0);
    CHECK_EQ_INT(cm_random_hex(hex2, 0), 0);
    CHECK_EQ_STR(hex2, "");
    CHECK(cm_random_u64() != cm_random_u64());

    /* XXH64 reference values */
    CHECK(cm_hash64("", 0, 0) == 0xEF46DB3751D8E999ull);
    CHECK(cm_hash64("a", 1, 0) == 0xD24EC4F1A98C6E5Bull);
    CHECK(cm_hash64("abc", 3, 0) == 0x44BC2CF5AD770999ull);
    CHECK(cm_hash64("abc", 3, 1) != cm_hash64("abc", 3, 0));
    {
        const char *s = "Nobody inspects the spammish repetition";
        CHECK(cm_hash64(s, strlen(s), 0) == 0xFBCEA83C8A378BF1ull);
    }
    return 0;
}
