/*
 * test_balance.c - unit.controller.balance: the gateway rebalance plan
 * (ctl_balance.c): tenants without load spread by count; loads even out
 * with the heaviest tenant moved first; a move that would not lower the
 * larger side is not made; gateways that are down neither give nor take;
 * max bounds the plan; and on random cases every move lowers the larger of
 * its two sides, the plan ends where no single move would, and it never
 * loops (a bound far above what any case needs).
 */
#include "t_check.h"

#include "ctl_balance.h"

#define MAXT 64

/* The sums of cost after the plan, per gateway, as the planner counts. */
static void
apply(const struct ctl_balance_gw *g, size_t ng, const struct ctl_balance_tenant *t, size_t nt,
      const struct ctl_balance_move *mv, size_t n, size_t *count)
{
    const char *owner[MAXT];

    for (size_t i = 0; i < nt; i++) {
        owner[i] = t[i].owner;
    }
    for (size_t k = 0; k < n; k++) {
        CHECK(strcmp(owner[mv[k].tenant], g[mv[k].from].id) == 0);
        CHECK(g[mv[k].from].up && g[mv[k].to].up);
        owner[mv[k].tenant] = g[mv[k].to].id;
    }
    for (size_t j = 0; j < ng; j++) {
        count[j] = 0;
        for (size_t i = 0; i < nt; i++) {
            count[j] += strcmp(owner[i], g[j].id) == 0;
        }
    }
}

static void
test_counts(void)
{
    struct ctl_balance_gw g[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
    struct ctl_balance_tenant t[7];
    struct ctl_balance_move mv[16];
    size_t n, count[3];

    for (int i = 0; i < 7; i++) {
        t[i] = (struct ctl_balance_tenant){"a", 0};
    }
    n = ctl_balance_plan(g, 3, t, 7, mv, 16);
    CHECK_EQ_INT(n, 4);
    apply(g, 3, t, 7, mv, n, count);
    CHECK(count[0] == 3 && count[1] == 2 && count[2] == 2);
    /* already even: nothing */
    t[0].owner = t[1].owner = "b";
    t[2].owner = t[3].owner = "c";
    CHECK_EQ_INT(ctl_balance_plan(g, 3, t, 7, mv, 16), 0);
    /* max bounds the plan */
    for (int i = 0; i < 7; i++) {
        t[i].owner = "a";
    }
    CHECK_EQ_INT(ctl_balance_plan(g, 3, t, 7, mv, 2), 2);
}

static void
test_loads(void)
{
    struct ctl_balance_gw g[2] = {{"a", 1}, {"b", 1}};
    /* one heavy tenant, three light ones, all on a */
    struct ctl_balance_tenant t[4] = {{"a", 0.6}, {"a", 0.1}, {"a", 0.1}, {"a", 0.1}};
    struct ctl_balance_move mv[8];
    size_t n = ctl_balance_plan(g, 2, t, 4, mv, 8);

    /* the heavy one goes first; the light ones stay with nothing else */
    CHECK(n >= 1);
    CHECK_EQ_INT(mv[0].tenant, 0);
    CHECK_EQ_INT(mv[0].to, 1);
    CHECK_EQ_INT(n, 1);
    /* a single tenant: moving it only moves the problem */
    CHECK_EQ_INT(ctl_balance_plan(g, 2, t, 1, mv, 8), 0);
}

static void
test_down(void)
{
    struct ctl_balance_gw g[3] = {{"a", 1}, {"b", 0}, {"c", 1}};
    struct ctl_balance_tenant t[6] = {{"a", 0}, {"a", 0}, {"a", 0}, {"a", 0}, {"b", 0}, {"", 0}};
    struct ctl_balance_move mv[8];
    size_t n = ctl_balance_plan(g, 3, t, 6, mv, 8), count[3];

    apply(g, 3, t, 6, mv, n, count);
    CHECK_EQ_INT(n, 2);
    CHECK(count[0] == 2 && count[1] == 1 && count[2] == 2); /* b's tenant stays at b */
    for (size_t k = 0; k < n; k++) {
        CHECK(mv[k].tenant < 4);
    }
    /* every gateway down: nothing */
    g[0].up = g[2].up = 0;
    CHECK_EQ_INT(ctl_balance_plan(g, 3, t, 6, mv, 8), 0);
}

static void
test_random(void)
{
    static const char *ids[4] = {"g0", "g1", "g2", "g3"};

    for (int round = 0; round < 2000; round++) {
        struct ctl_balance_gw g[4];
        struct ctl_balance_tenant t[MAXT];
        struct ctl_balance_move mv[4096];
        size_t ng = 2 + t_rand() % 3, nt = 1 + t_rand() % MAXT, n;
        double sum[4] = {0}, total = 0, even;

        for (size_t j = 0; j < ng; j++) {
            g[j] = (struct ctl_balance_gw){ids[j], t_rand() % 5 != 0};
        }
        for (size_t i = 0; i < nt; i++) {
            t[i].owner = ids[t_rand() % ng];
            t[i].load = t_rand() % 3 == 0 ? 0 : (double)(t_rand() % 1000) / 1000.0;
            total += t[i].load;
        }
        n = ctl_balance_plan(g, ng, t, nt, mv, 4096);
        CHECK(n < 4096); /* it ends by itself */
        even = total > 0 ? 0.01 * total / (double)nt : 1.0;
        for (size_t i = 0; i < nt; i++) {
            for (size_t j = 0; j < ng; j++) {
                if (g[j].up && strcmp(t[i].owner, g[j].id) == 0) {
                    sum[j] += t[i].load + even;
                }
            }
        }
        for (size_t k = 0; k < n; k++) {
            double c = t[mv[k].tenant].load + even;
            double before = sum[mv[k].from] > sum[mv[k].to] ? sum[mv[k].from] : sum[mv[k].to];

            sum[mv[k].from] -= c;
            sum[mv[k].to] += c;
            CHECK(sum[mv[k].from] < before && sum[mv[k].to] < before);
        }
        /* at the end no tenant of the costliest up gateway would fit */
        {
            size_t hi = 4, lo = 4;

            for (size_t j = 0; j < ng; j++) {
                if (g[j].up) {
                    hi = hi == 4 || sum[j] > sum[hi] ? j : hi;
                    lo = lo == 4 || sum[j] < sum[lo] ? j : lo;
                }
            }
            if (hi != 4 && hi != lo) {
                const char *owner[MAXT];

                for (size_t i = 0; i < nt; i++) {
                    owner[i] = t[i].owner;
                }
                for (size_t k = 0; k < n; k++) {
                    owner[mv[k].tenant] = g[mv[k].to].id;
                }
                for (size_t i = 0; i < nt; i++) {
                    if (strcmp(owner[i], g[hi].id) == 0) {
                        CHECK(t[i].load + even >= (sum[hi] - sum[lo]) * (1 - 1e-9));
                    }
                }
            }
        }
    }
}

int
main(void)
{
    t_seed();
    test_counts();
    test_loads();
    test_down();
    test_random();
    printf("ok\n");
    return 0;
}
