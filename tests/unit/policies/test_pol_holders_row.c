/* test_pol_holders_row.c - unit tests of the holders registry and the row policy. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cm_err.h"
#include "pol_holders.h"
#include "t_check.h"

static const struct pol_holders_ops *ops;
static struct pol_holders *p;

static int
choose(const uint32_t *row, size_t nrow, const uint32_t *usable, size_t nusable, uint32_t n,
       uint32_t min_nodes, uint64_t fixed, uint64_t moving, uint32_t *holders)
{
    struct pol_holders_view v = {
        .row = row,
        .nrow = nrow,
        .usable = usable,
        .nusable = nusable,
        .n = n,
        .min_nodes = min_nodes,
        .fixed = fixed,
        .moving = moving,
    };
    return ops->choose(p, &v, holders);
}

static void
test_registry(void)
{
    size_t n, i;
    const struct pol_holders_ops *const *all = pol_holders_list(&n);

    CHECK(pol_holders_find(POL_HOLDERS_DEFAULT) != NULL);
    CHECK(pol_holders_find("row") != NULL);
    CHECK(pol_holders_find("nope") == NULL);
    CHECK(pol_holders_find(NULL) == NULL);
    for (i = 0; i < n; i++) {
        CHECK(pol_holders_find(all[i]->name) == all[i]);
    }
    pol_holders_find("row")->destroy(NULL);
}

static void
test_row_and_stand_ins(void)
{
    const uint32_t row[] = {10, 11, 12, 13, 14, 15};
    const uint32_t dir[] = {9, 10, 11, 12, 13, 14, 15, 16};
    const uint32_t no12[] = {9, 10, 11, 13, 14, 15, 16};
    uint32_t h[6] = {0};

    /* Row honoured when usable, whatever the directory's order. */
    CHECK_EQ_INT(choose(row, 6, dir, 8, 6, 4, 0, 0, h), 0);
    for (int j = 0; j < 6; j++) {
        CHECK_EQ_INT(h[j], row[j]);
    }
    /* 12 unusable: the least-used usable node stands in (unused 9 first,
     * directory order), the rest of the row stays. */
    CHECK_EQ_INT(choose(row, 6, no12, 7, 6, 4, 0, 0, h), 0);
    const uint32_t want[] = {10, 11, 9, 13, 14, 15};
    for (int j = 0; j < 6; j++) {
        CHECK_EQ_INT(h[j], want[j]);
    }
    /* A row naming one node twice: the second position gets a stand-in. */
    const uint32_t dup[] = {10, 10, 11};
    CHECK_EQ_INT(choose(dup, 3, dir, 8, 3, 2, 0, 0, h), 0);
    CHECK(h[0] == 10 && h[1] == 9 && h[2] == 11);
    /* A short row: the positions past it get stand-ins. */
    CHECK_EQ_INT(choose(row, 2, dir, 8, 4, 2, 0, 0, h), 0);
    CHECK(h[0] == 10 && h[1] == 11 && h[2] == 9 && h[3] == 12);
}

static void
test_few_nodes(void)
{
    const uint32_t row[] = {10, 11, 12, 13, 14, 15};
    const uint32_t three[] = {12, 20, 21};
    uint32_t h[6] = {1, 2, 3, 4, 5, 6};

    /* Fewer usable nodes than k: refused, holders untouched. */
    CHECK_EQ_INT(choose(row, 6, three, 3, 6, 4, 0, 0, h), CM_E_UNAVAIL);
    for (int j = 0; j < 6; j++) {
        CHECK_EQ_INT(h[j], j + 1);
    }
    CHECK_EQ_INT(choose(row, 6, three, 0, 6, 1, 0, 0, h), CM_E_UNAVAIL);
    /* k of them but fewer than k+m: every node used, evenly. */
    CHECK_EQ_INT(choose(row, 6, three, 3, 6, 3, 0, 0, h), 0);
    int use[3] = {0};
    for (int j = 0; j < 6; j++) {
        for (int i = 0; i < 3; i++) {
            use[i] += h[j] == three[i];
        }
    }
    CHECK(use[0] == 2 && use[1] == 2 && use[2] == 2);
    CHECK_EQ_INT(h[2], 12); /* its row node, usable */
}

static void
test_moves(void)
{
    const uint32_t row[] = {10, 11, 12, 13, 14, 15};
    const uint32_t dir[] = {10, 11, 12, 13, 14, 15, 16, 17};
    uint32_t h[6] = {10, 11, 12, 13, 14, 15};

    /* Position 2's holder failed but still looks usable: it moves to an
     * unused node, the others stay. */
    CHECK_EQ_INT(choose(row, 6, dir, 8, 6, 4, 0x3f & ~4ull, 4, h), 0);
    CHECK_EQ_INT(h[2], 16);
    CHECK(h[0] == 10 && h[1] == 11 && h[3] == 13 && h[4] == 14 && h[5] == 15);
    /* Moving again from 16: never back to 16, and 12 (its row node) is
     * usable and unused again, so it takes it. */
    CHECK_EQ_INT(choose(row, 6, dir, 8, 6, 1, 0x3f & ~4ull, 4, h), 0);
    CHECK_EQ_INT(h[2], 12);
    /* From 12 when every other node holds a position: the least used
     * other than 12 (all hold one: the row's first). */
    CHECK_EQ_INT(choose(row, 6, dir, 6, 6, 1, 0x3f & ~4ull, 4, h), 0);
    CHECK_EQ_INT(h[2], 10);
    /* The only usable node is the one it leaves: refused. */
    const uint32_t only[] = {10};
    h[2] = 10;
    CHECK_EQ_INT(choose(row, 6, only, 1, 6, 1, 0x3f & ~4ull, 4, h), CM_E_UNAVAIL);
    CHECK_EQ_INT(h[2], 10);
    /* Without moving, a position may keep (choose again) the same node. */
    CHECK_EQ_INT(choose(row, 6, only, 1, 6, 1, 0x3f & ~4ull, 0, h), 0);
    CHECK_EQ_INT(h[2], 10);
}

/* Random rows and directories against the rules. */
static void
test_random(void)
{
    for (int t = 0; t < 5000; t++) {
        uint32_t n = (uint32_t)t_range(1, 12), nrow = (uint32_t)t_range(0, 12);
        uint32_t row[12], usable[16], h[12];
        size_t nusable = 0;
        for (uint32_t j = 0; j < nrow; j++) {
            row[j] = (uint32_t)t_range(0, 19);
        }
        for (uint32_t id = 0; id < 16; id++) {
            if (t_range(0, 2) != 0) {
                usable[nusable++] = id;
            }
        }
        uint32_t min_nodes = (uint32_t)t_range(1, (int)n);
        memset(h, 0xff, sizeof(h));
        int rc = choose(row, nrow, usable, nusable, n, min_nodes, 0, 0, h);
        if (nusable < min_nodes) {
            CHECK_EQ_INT(rc, CM_E_UNAVAIL);
            continue;
        }
        CHECK_EQ_INT(rc, 0);
        int use[16] = {0}, lo = 1 << 30, hi = 0;
        for (uint32_t j = 0; j < n; j++) {
            CHECK(h[j] < 16);
            use[h[j]]++;
        }
        for (size_t i = 0; i < nusable; i++) {
            lo = use[usable[i]] < lo ? use[usable[i]] : lo;
            hi = use[usable[i]] > hi ? use[usable[i]] : hi;
        }
        for (uint32_t id = 0; id < 16; id++) {
            int ok = 0;
            for (size_t i = 0; i < nusable; i++) {
                ok |= usable[i] == id;
            }
            CHECK(ok || use[id] == 0); /* usable nodes only */
        }
        CHECK(hi - lo <= 1);           /* spread evenly */
        CHECK(nusable < n || hi == 1); /* distinct while possible */
        for (uint32_t j = 0; j < n && j < nrow; j++) {
            int first = 1, ok = 0;
            for (uint32_t x = 0; x < j; x++) {
                first &= row[x] != row[j];
            }
            for (size_t i = 0; i < nusable; i++) {
                ok |= usable[i] == row[j];
            }
            CHECK(!first || !ok || h[j] == row[j]); /* the row where it can */
        }
    }
}

int
main(void)
{
    t_seed();
    test_registry();
    ops = pol_holders_find("row");
    CHECK_EQ_INT(ops->create(&p), 0);
    test_row_and_stand_ins();
    test_few_nodes();
    test_moves();
    test_random();
    ops->destroy(p);
    printf("ok\n");
    return 0;
}
