/* cm_time.h - clocks. Policies never read these: time is passed in. */
#ifndef CM_TIME_H
#define CM_TIME_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t
cm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time ns from now on clock clk, as pthread_cond_timedwait wants it
 * (CLOCK_REALTIME, or the clock set with pthread_condattr_setclock). */
static inline struct timespec
cm_deadline(clockid_t clk, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ns += (uint64_t)ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* Waits on cv (its clock CLOCK_MONOTONIC; mu held) until signalled or
 * cm_now_ns() reaches deadline_ns; at once when it has. */
static inline void
cm_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns)
{
    uint64_t now = cm_now_ns();

    if (now < deadline_ns) {
        struct timespec ts = cm_deadline(CLOCK_MONOTONIC, deadline_ns - now);

        (void)pthread_cond_timedwait(cv, mu, &ts);
    }
}

static inline uint64_t
cm_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
