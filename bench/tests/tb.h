/* tb.h - minimal assertion helpers for shoal-bench unit tests. */
#ifndef TB_H
#define TB_H

#include <stdio.h>
#include <stdlib.h>

static int tb_failed;

#define TB_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            tb_failed++;                                                                           \
        }                                                                                          \
    } while (0)

static inline int
tb_done(const char *name)
{
    if (tb_failed) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, tb_failed);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

#endif
