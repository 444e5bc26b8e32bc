/*
 * test_migrate.c - unit.gateway.migrate: which positions of a version move
 * to follow its partition's row (gw_migrate_plan), on hand-made cases and
 * against the rule checked position by position on random ones.
 */
#include "t_check.h"

#include "gw_migrate.h"
#include "gw_stripe.h"

static struct gw_layout
layout(uint8_t k, uint8_t m, const uint32_t *holders)
{
    struct gw_layout l = {
        .tenant = 1, .object = 7, .k = k, .m = m, .nstripes = 1, .chunk_size = 64};

    for (int j = 0; j < k + m; j++) {
        l.holders[j] = holders[j];
    }
    return l;
}

static void
test_cases(void)
{
    static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint32_t to[GW_MAX_HOLDERS];

    /* On its row: nothing moves. */
    {
        uint32_t h[] = {1, 2, 3};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, h, 3, all, 8, to), 0);
    }
    /* One position off its row, target up: that one. */
    {
        uint32_t h[] = {1, 2, 3}, row[] = {1, 5, 3};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 3, all, 8, to), 2);
        CHECK_EQ_INT((int)to[1], 5);
    }
    /* Target down: it waits. */
    {
        uint32_t h[] = {1, 2, 3}, row[] = {1, 5, 3}, up[] = {1, 2, 3};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 3, up, 3, to), 0);
    }
    /* A swap: both move, the stripe stays on distinct nodes. */
    {
        uint32_t h[] = {1, 2}, row[] = {2, 1};
        struct gw_layout l = layout(1, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 2, all, 8, to), 3);
        CHECK_EQ_INT((int)to[0], 2);
        CHECK_EQ_INT((int)to[1], 1);
    }
    /* Position 0 would go to 2, which position 1 keeps because its own
     * target (9) is down: neither moves. */
    {
        uint32_t h[] = {1, 2, 3}, row[] = {2, 9, 3};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 3, all, 8, to), 0);
    }
    /* ... and the chain stops at the first blocked move only: position 2
     * moves on its own. */
    {
        uint32_t h[] = {1, 2, 3}, row[] = {2, 9, 4};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 3, all, 8, to), 4);
        CHECK_EQ_INT((int)to[2], 4);
    }
    /* Copies (k = 1) of a wider row: only the first 1 + m entries count. */
    {
        uint32_t h[] = {4, 5, 0}, row[] = {4, 5, 6, 7, 0, 1};
        struct gw_layout l = layout(1, 2, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 6, all, 8, to), 4);
        CHECK_EQ_INT((int)to[2], 6);
    }
    /* A row shorter than the stripe (fewer nodes were known): the rest stay. */
    {
        uint32_t h[] = {1, 2, 3}, row[] = {4};
        struct gw_layout l = layout(2, 1, h);
        CHECK_EQ_INT((int)gw_migrate_plan(&l, row, 1, all, 8, to), 1);
        CHECK_EQ_INT((int)to[0], 4);
    }
}

/* Random layouts and rows: every move the plan makes follows the rule,
 * the result never puts two positions on one node, and a move it leaves
 * out has a reason (off row, down target, or a target kept by another). */
static void
test_random(void)
{
    for (int it = 0; it < 20000; it++) {
        uint32_t nodes = (uint32_t)t_range(2, 10), up[16], nup = 0, row[GW_MAX_HOLDERS];
        uint32_t h[GW_MAX_HOLDERS], to[GW_MAX_HOLDERS], fin[GW_MAX_HOLDERS];
        uint8_t k = (uint8_t)t_range(1, 4), m = (uint8_t)t_range(0, 2);
        uint32_t n = k + m;
        size_t nrow = (size_t)t_range(0, (int)n + 2);
        int upset[16] = {0};

        if (n > nodes) {
            continue;
        }
        for (uint32_t i = 0; i < nodes; i++) {
            if (t_range(0, 4) > 0) {
                up[nup++] = i;
                upset[i] = 1;
            }
        }
        /* Distinct holders and a row of distinct nodes. */
        for (uint32_t j = 0; j < n; j++) {
            int dup;
            do {
                h[j] = (uint32_t)t_range(0, (int)nodes - 1);
                dup = 0;
                for (uint32_t x = 0; x < j; x++) {
                    dup |= h[x] == h[j];
                }
            } while (dup);
        }
        if (nrow > nodes) {
            nrow = nodes;
        }
        for (size_t j = 0; j < nrow; j++) {
            int dup;
            do {
                row[j] = (uint32_t)t_range(0, (int)nodes - 1);
                dup = 0;
                for (size_t x = 0; x < j; x++) {
                    dup |= row[x] == row[j];
                }
            } while (dup);
        }
        struct gw_layout l = layout(k, m, h);
        uint64_t mask = gw_migrate_plan(&l, row, nrow, up, nup, to);

        for (uint32_t j = 0; j < n; j++) {
            fin[j] = (mask & GW_BIT(j)) ? to[j] : h[j];
            if (mask & GW_BIT(j)) {
                CHECK(j < nrow && h[j] != row[j] && to[j] == row[j] && upset[row[j]]);
            }
        }
        for (uint32_t j = 0; j < n; j++) {
            for (uint32_t x = j + 1; x < n; x++) {
                CHECK(fin[j] != fin[x]);
            }
            if (!(mask & GW_BIT(j)) && j < nrow && h[j] != row[j] && upset[row[j]]) {
                int taken = 0;
                for (uint32_t x = 0; x < n; x++) {
                    taken |= x != j && fin[x] == row[j];
                }
                CHECK(taken);
            }
        }
    }
}

int
main(void)
{
    t_seed();
    test_cases();
    test_random();
    return 0;
}
