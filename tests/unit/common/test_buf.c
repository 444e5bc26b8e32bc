/* test_buf.c - growth, printf, take. */
#include "t_common.h"

#include "cm_buf.h"

int
main(void)
{
    struct cm_buf b;
    char *p, big[1000];
    size_t len;
    int i;

    cm_buf_init(&b);
    p = cm_buf_take(&b, &len);
    CHECK(p != NULL && len == 0 && p[0] == '\0');
    free(p);

    cm_buf_append(&b, "ab", 2);
    cm_buf_printf(&b, "-%d-%s", 42, "x");
    CHECK_EQ_STR(b.p, "ab-42-x");
    CHECK_EQ_INT(b.len, 7);
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (i = 0; i < 50; i++) {
        cm_buf_printf(&b, "%s", big);
    }
    CHECK_EQ_INT(b.len, 7 + 50 * 999);
    CHECK_EQ_INT(strlen(b.p), b.len);
    cm_buf_append(&b, NULL, 0);
    p = cm_buf_take(&b, &len);
    CHECK_EQ_INT(len, 7 + 50 * 999);
    CHECK(b.p == NULL && b.len == 0);
    free(p);
    cm_buf_fini(&b);

    p = cm_strdup("hello");
    CHECK_EQ_STR(p, "hello");
    free(p);
    p = cm_calloc(4, 4);
    CHECK(p[15] == 0);
    p = cm_realloc(p, 100);
    free(p);
    return 0;
}
