/* fns_test.h - tiny check macros for the fnstore unit tests. */
#ifndef FNS_TEST_H
#define FNS_TEST_H

#include <stdio.h>

static int fns_test_failures;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                  \
            fns_test_failures++;                                                                   \
        }                                                                                          \
    } while (0)

#define TEST_DONE()                                                                                \
    do {                                                                                           \
        if (fns_test_failures != 0) {                                                              \
            fprintf(stderr, "%d failure(s)\n", fns_test_failures);                                 \
            return 1;                                                                              \
        }                                                                                          \
        printf("ok\n");                                                                            \
        return 0;                                                                                  \
    } while (0)

#endif
