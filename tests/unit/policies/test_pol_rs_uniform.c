/* test_pol_rs_uniform.c - unit tests of the RS registry, the hedge budget and the uniform
 * policy. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_err.h"
#include "pol_rs.h"
#include "rs_view.h"
#include "t_check.h"

static const struct pol_rs_ops *ops;
static struct pol_rs *rs;

static uint64_t
choose(const struct pol_rs_view *v, uint64_t rand)
{
    uint64_t ask = ~0ull;
    CHECK_EQ_INT(ops->choose(rs, v, 5, rand, &ask), 0);
    /* Never a position that is not a usable candidate. */
    CHECK((ask & ~(v->usable & ~(v->present | v->out | v->failed | v->excl))) == 0);
    return ask;
}

static void
test_registry(void)
{
    size_t n, i;
    const struct pol_rs_ops *const *all = pol_rs_list(&n);
    struct pol_rs *x = (struct pol_rs *)&n;

    CHECK(pol_rs_find(POL_RS_DEFAULT) != NULL);
    CHECK(pol_rs_find("uniform") != NULL);
    CHECK(pol_rs_find("nope") == NULL);
    CHECK(pol_rs_find(NULL) == NULL);
    CHECK(n >= 1);
    for (i = 0; i < n; i++) {
        CHECK(pol_rs_find(all[i]->name) == all[i]);
    }
    CHECK_EQ_INT(pol_rs_find("uniform")->create(NULL, &x), CM_E_BADARG);
    CHECK(x == NULL);
    pol_rs_find("uniform")->destroy(NULL);
}

/* RS(4+2): the wanted data chunks, then the lowest positions up to k. */
static void
test_stripes(void)
{
    struct pol_rs_view v = view(4, 2, B(1) | B(2));

    CHECK_EQ_INT(choose(&v, 0), B(1) | B(2));
    v.out = B(1) | B(2);
    CHECK_EQ_INT(choose(&v, 0), 0); /* covered: nothing more */
    /* Chunk 2 erred: k holders in all, data chunks before parity. */
    v.out = B(1);
    v.failed = B(2);
    CHECK_EQ_INT(choose(&v, 0), B(0) | B(3) | B(4));
    /* Chunk 1 is slow instead: one more (its answer still counts). */
    v = view(4, 2, B(1) | B(2));
    v.out = B(1) | B(2);
    v.slow = B(1);
    CHECK_EQ_INT(choose(&v, 0), B(0) | B(3) | B(4));
    v.present = B(2);
    v.out = B(1) | B(0) | B(3);
    v.slow = B(1);
    CHECK_EQ_INT(choose(&v, 0), B(4));
    /* A wanted holder that is unreachable is never asked. */
    v = view(4, 2, 0xf);
    v.usable &= ~B(1);
    CHECK_EQ_INT(choose(&v, 0), B(0) | B(2) | B(3) | B(4));
    /* Nothing left to ask. */
    v = view(4, 2, 0xf);
    v.failed = 0x3f;
    CHECK_EQ_INT(choose(&v, 0), 0);
    /* A rebuild: the position itself is excluded; any k others. */
    v = view(4, 2, B(5));
    v.excl = B(5);
    CHECK_EQ_INT(choose(&v, 0), 0xf);
    v = view(4, 2, B(1));
    v.excl = B(1) | B(3);
    CHECK_EQ_INT(choose(&v, 0), B(0) | B(2) | B(4) | B(5));
}

/* 1+m copies: one copy, uniform over the usable ones, from rand. */
static void
test_copies(void)
{
    int count[4] = {0};
    struct pol_rs_view v = view(1, 3, B(0));
    uint64_t r, ask;

    for (r = 0; r < 4000; r++) {
        ask = choose(&v, r);
        CHECK_EQ_INT(__builtin_popcountll(ask), 1);
        count[__builtin_ctzll(ask)]++;
    }
    CHECK_EQ_INT(count[0], 1000);
    CHECK_EQ_INT(count[3], 1000);
    v.usable = B(0) | B(2);
    for (r = 0; r < 4; r++) {
        CHECK_EQ_INT(choose(&v, r), r % 2 ? B(2) : B(0));
    }
    /* One copy on its way: nothing more; slow: another. */
    v = view(1, 3, B(0));
    v.out = B(2);
    CHECK_EQ_INT(choose(&v, 1), 0);
    v.slow = B(2);
    ask = choose(&v, 1);
    CHECK(ask == B(0) || ask == B(1) || ask == B(3));
    v.failed = B(0) | B(1) | B(3);
    CHECK_EQ_INT(choose(&v, 1), 0);
}

/* Random views: what is asked covers the read or exhausts the holders. */
static void
test_random_views(void)
{
    for (int t = 0; t < 20000; t++) {
        struct pol_rs_view v = random_view();
        uint8_t k = v.k;
        uint64_t ask = choose(&v, t_rand());
        uint64_t coming = (v.out & ~v.slow) | ask;
        uint64_t left = v.usable & ~(v.present | v.out | v.failed | v.excl | ask);
        uint64_t missing = v.want & ~v.present;
        int have = __builtin_popcountll(v.present | coming);
        CHECK((k > 1 && (missing & ~coming) == 0) || have >= k || left == 0);
        /* Beyond the wanted chunks, never more than k on their way. */
        CHECK((ask & ~missing) == 0 || have <= k);
    }
}

/* Slow: holders asked before the deadline, once it passes; later ones never. */
static void
test_overdue(void)
{
    struct pol_rs_view v = view(4, 2, 0xf);
    uint64_t next = 1;

    v.out = 0xf;
    for (int j = 0; j < 4; j++) {
        asked[j] = v.start_ns;
    }
    CHECK_EQ_INT(ops->overdue(rs, &v, v.start_ns + 100 * MS, &next), 0);
    CHECK_EQ_INT(next, v.start_ns + 200 * MS);
    CHECK_EQ_INT(ops->overdue(rs, &v, v.start_ns + 200 * MS, &next), 0xf);
    CHECK_EQ_INT(next, 0);
    /* Chunk 4 asked after an error at 50 ms: slow with the first ones. */
    v.present = B(0);
    v.out = B(1) | B(4);
    asked[4] = v.start_ns + 50 * MS;
    CHECK_EQ_INT(ops->overdue(rs, &v, v.start_ns + 201 * MS, &next), B(1) | B(4));
    /* Chunk 5 asked after the deadline (a hedge) never counts slow. */
    v.out = B(1) | B(4) | B(5);
    v.slow = B(1) | B(4);
    asked[5] = v.start_ns + 210 * MS;
    CHECK_EQ_INT(ops->overdue(rs, &v, v.start_ns + 900 * MS, &next), 0);
    CHECK_EQ_INT(next, 0);
    /* on_send / on_done: nothing to keep. */
    ops->on_send(rs, 7, 10, 4096, v.start_ns);
    ops->on_done(rs, 7, 10, 4096, MS, POL_RS_ANSWERED, v.start_ns + MS);

    struct pol_rs_cfg never = {.slow_ns = 0};
    struct pol_rs *r0;
    CHECK_EQ_INT(ops->create(&never, &r0), 0);
    v.out = 0xf;
    v.slow = 0;
    CHECK_EQ_INT(ops->overdue(r0, &v, v.start_ns + 3600000 * MS, &next), 0);
    CHECK_EQ_INT(next, 0);
    ops->destroy(r0);
}

/* Hedges within ratio of the GETs sent, a burst at most (where it starts). */
static void
test_budget(void)
{
    struct pol_rs_budget b;
    int hedged = 0;

    pol_rs_budget_init(&b, 0.1);
    for (int i = 0; i < 64; i++) {
        hedged += __builtin_popcountll(pol_rs_budget_take(&b, 0x1));
    }
    CHECK_EQ_INT(hedged, (int)POL_RS_BUDGET_BURST);
    CHECK_EQ_INT(pol_rs_budget_take(&b, 0x6), 0);
    for (int i = 0; i < 9; i++) {
        pol_rs_budget_sent(&b);
    }
    CHECK_EQ_INT(pol_rs_budget_take(&b, 0x6), 0); /* 0.9 of a token */
    pol_rs_budget_sent(&b);
    CHECK_EQ_INT(pol_rs_budget_take(&b, 0x6), 0x2); /* one token: the lowest */
    CHECK_EQ_INT(pol_rs_budget_take(&b, 0x4), 0);
    for (int i = 0; i < 1000; i++) { /* a long quiet time fills only the burst */
        pol_rs_budget_sent(&b);
    }
    hedged = __builtin_popcountll(pol_rs_budget_take(&b, ~0ull));
    CHECK_EQ_INT(hedged, (int)POL_RS_BUDGET_BURST);
    /* Steady overload (every GET overdue): one hedge per ten GETs. */
    hedged = 0;
    for (int i = 0; i < 1000; i++) {
        pol_rs_budget_sent(&b);
        hedged += __builtin_popcountll(pol_rs_budget_take(&b, 0x1));
    }
    CHECK(hedged >= 99 && hedged <= 100);
}

int
main(void)
{
    struct pol_rs_cfg cfg = {.slow_ns = 200 * MS};

    t_seed();
    test_registry();
    test_budget();
    ops = pol_rs_find("uniform");
    CHECK_EQ_INT(ops->create(&cfg, &rs), 0);
    test_stripes();
    test_copies();
    test_random_views();
    test_overdue();
    ops->destroy(rs);
    printf("ok\n");
    return 0;
}
