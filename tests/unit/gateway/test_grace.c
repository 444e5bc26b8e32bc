/* test_grace.c - unit.gateway.grace: deferred actions wait for exactly the
 * readers that entered before them. */
#include "t_check.h"

#include <pthread.h>
#include <stdatomic.h>

#include "gw_grace.h"

static int ran[64];

static void
mark(void *arg)
{
    ran[(intptr_t)arg]++;
}

static void
test_basic(void)
{
    struct gw_grace *g = gw_grace_create();
    struct gw_grace_bucket *a, *b, *c;
    size_t readers, waiting;

    memset(ran, 0, sizeof(ran));
    gw_grace_defer(g, mark, (void *)0); /* nobody in: at once */
    CHECK_EQ_INT(ran[0], 1);

    a = gw_grace_enter(g);
    gw_grace_defer(g, mark, (void *)1);
    CHECK_EQ_INT(ran[1], 0);
    b = gw_grace_enter(g); /* entered after 1: does not hold it */
    gw_grace_defer(g, mark, (void *)2);
    gw_grace_defer(g, mark, (void *)3); /* shares 2's bucket */
    gw_grace_counts(g, &readers, &waiting);
    CHECK_EQ_INT(readers, 2);
    CHECK_EQ_INT(waiting, 3);
    gw_grace_exit(g, a);
    CHECK_EQ_INT(ran[1], 1);
    CHECK_EQ_INT(ran[2], 0);
    CHECK_EQ_INT(ran[3], 0);
    c = gw_grace_enter(g);
    gw_grace_exit(g, b);
    CHECK_EQ_INT(ran[2], 1);
    CHECK_EQ_INT(ran[3], 1);
    gw_grace_defer(g, mark, (void *)4);
    CHECK_EQ_INT(ran[4], 0);
    CHECK_EQ_INT(gw_grace_destroy(g), 1); /* c never exited: 4 is dropped */
    CHECK_EQ_INT(ran[4], 0);
    (void)c;
}

/* Single thread, random steps, against the rule itself: an action must
 * have run exactly when no reader that entered before it is still in. */
#define M_READERS 16
#define M_ACTS 4096

static uint64_t m_defer_at[M_ACTS];
static int m_ran[M_ACTS];

static void
m_mark(void *arg)
{
    m_ran[(intptr_t)arg]++;
}

static void
test_model(void)
{
    for (int round = 0; round < 50; round++) {
        struct gw_grace *g = gw_grace_create();
        struct gw_grace_bucket *tk[M_READERS];
        uint64_t entered_at[M_READERS];
        int in[M_READERS] = {0};
        int nacts = 0;
        uint64_t now = 0;

        memset(m_ran, 0, sizeof(m_ran));
        for (int step = 0; step < 3000 && nacts < M_ACTS; step++) {
            int r = t_range(0, M_READERS - 1);

            now++;
            switch (t_range(0, 2)) {
            case 0:
                if (!in[r]) {
                    tk[r] = gw_grace_enter(g);
                    in[r] = 1;
                    entered_at[r] = now;
                }
                break;
            case 1:
                if (in[r]) {
                    in[r] = 0;
                    gw_grace_exit(g, tk[r]);
                }
                break;
            default:
                m_defer_at[nacts] = now;
                gw_grace_defer(g, m_mark, (void *)(intptr_t)nacts);
                nacts++;
                break;
            }
            for (int a = 0; a < nacts; a++) {
                int held = 0;

                for (int i = 0; i < M_READERS; i++) {
                    held |= in[i] && entered_at[i] < m_defer_at[a];
                }
                CHECK_EQ_INT(m_ran[a], !held);
            }
        }
        for (int i = 0; i < M_READERS; i++) {
            if (in[i]) {
                gw_grace_exit(g, tk[i]);
            }
        }
        for (int a = 0; a < nacts; a++) {
            CHECK_EQ_INT(m_ran[a], 1);
        }
        CHECK_EQ_INT(gw_grace_destroy(g), 0);
    }
}

/* Threads: readers stamp themselves after entering; an action checks, when
 * it runs, that no reader stamped before its defer is still in. */
#define S_THREADS 4
#define S_OPS 20000

static struct gw_grace *s_g;
static atomic_uint_fast64_t s_clock;
static atomic_uint_fast64_t s_stamp[S_THREADS]; /* 0: not in */
static atomic_int s_runs, s_bad;

static void
s_check(void *arg)
{
    uint64_t at = (uint64_t)(uintptr_t)arg;

    for (int i = 0; i < S_THREADS; i++) {
        uint64_t s = atomic_load(&s_stamp[i]);
        if (s != 0 && s < at) {
            atomic_fetch_add(&s_bad, 1);
        }
    }
    atomic_fetch_add(&s_runs, 1);
}

static void *
s_main(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t x = (uint64_t)me * 7919 + 1;

    for (int i = 0; i < S_OPS; i++) {
        struct gw_grace_bucket *t = gw_grace_enter(s_g);

        atomic_store(&s_stamp[me], atomic_fetch_add(&s_clock, 1) + 1);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if ((x >> 60) < 4) {
            gw_grace_defer(s_g, s_check, (void *)(uintptr_t)(atomic_fetch_add(&s_clock, 1) + 1));
        }
        atomic_store(&s_stamp[me], 0);
        gw_grace_exit(s_g, t);
    }
    return NULL;
}

static void
test_threads(void)
{
    pthread_t th[S_THREADS];
    size_t readers, waiting;

    s_g = gw_grace_create();
    atomic_init(&s_clock, 0);
    for (int i = 0; i < S_THREADS; i++) {
        CHECK_EQ_INT(pthread_create(&th[i], NULL, s_main, (void *)(intptr_t)i), 0);
    }
    for (int i = 0; i < S_THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    gw_grace_counts(s_g, &readers, &waiting);
    CHECK_EQ_INT(readers, 0);
    CHECK_EQ_INT(waiting, 0);
    CHECK(atomic_load(&s_runs) > 0);
    CHECK_EQ_INT(atomic_load(&s_bad), 0);
    CHECK_EQ_INT(gw_grace_destroy(s_g), 0);
}

int
main(void)
{
    t_seed();
    test_basic();
    test_model();
    test_threads();
    printf("ok\n");
    return 0;
}
