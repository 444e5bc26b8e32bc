/* test_time.c - cm_deadline: normalized, and as far ahead as asked. */
#include "t_check.h"

#include "cm_time.h"

static uint64_t
ns_of(struct timespec ts)
{
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
main(void)
{
    static const uint64_t ahead[] = {0, 1, 999999999u, 1000000000u, 1500000000u, 7 * 1000000001ull};

    for (size_t i = 0; i < sizeof(ahead) / sizeof(ahead[0]); i++) {
        for (int c = 0; c < 2; c++) {
            clockid_t clk = c ? CLOCK_REALTIME : CLOCK_MONOTONIC;
            struct timespec before, after, d;

            clock_gettime(clk, &before);
            d = cm_deadline(clk, ahead[i]);
            clock_gettime(clk, &after);
            CHECK(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
            CHECK(ns_of(d) >= ns_of(before) + ahead[i]);
            CHECK(ns_of(d) <= ns_of(after) + ahead[i]);
        }
    }
    return 0;
}
