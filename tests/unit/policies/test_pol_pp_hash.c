/*
 * test_pol_pp_hash.c - the "hash" PP policy: the rows the controller has
 * always published (golden rows computed by the rendezvous code before it
 * moved into policies/), equal to a brute-force sort of the scores, distinct,
 * min(width, nodes) long, deaf to node state and current rows; the view
 * checks; the registry.
 */
#include "t_check.h"

#include <math.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "pol_pp.h"

#define MAXN 48

static const struct pol_pp_ops *hash_ops;

/* One-tenant-per-partition views over nodes[0..n). */
struct fixture {
    struct pol_pp_node nodes[MAXN];
    struct pol_pp_part parts[64];
    struct pol_pp_tenant tenants[64];
    uint32_t cur[64 * POL_PP_MAX_WIDTH], cur_len[64];
    struct pol_pp_view v;
    uint32_t rows[64 * POL_PP_MAX_WIDTH], len[64];
    double share[64 * POL_PP_MAX_WIDTH];
    struct pol_pp_out out;
};

static void
fixture_init(struct fixture *f, const uint32_t *ids, size_t n)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < n; i++) {
        f->nodes[i].id = ids[i];
        f->nodes[i].up = 1;
        f->nodes[i].cap[POL_PP_REQ] = 1000;
        f->nodes[i].cap[POL_PP_BYTES] = 1e9;
    }
    f->v.nodes = f->nodes;
    f->v.nnodes = n;
    f->v.parts = f->parts;
    f->v.tenants = f->tenants;
    f->v.headroom = 0.9;
    f->v.hash64 = cm_hash64;
    f->out.rows = f->rows;
    f->out.len = f->len;
    f->out.share = f->share;
}

/* Partition i of the view: (tenant, id, width), weight 1, some demand. */
static void
fixture_part(struct fixture *f, uint32_t tenant, uint32_t id, uint32_t width)
{
    size_t i = f->v.nparts++;

    f->parts[i] = (struct pol_pp_part){.tenant = tenant,
                                       .id = id,
                                       .width = width,
                                       .k = 1,
                                       .demand = {10, 1e6},
                                       .resident_bytes = 1000};
    for (size_t t = 0; t < f->v.ntenants; t++) {
        if (f->tenants[t].id == tenant) {
            return;
        }
    }
    f->tenants[f->v.ntenants++] = (struct pol_pp_tenant){.id = tenant, .weight = 1.0};
}

static int
place(struct fixture *f)
{
    struct pol_pp *pp;
    int rc;

    CHECK_EQ_INT(hash_ops->create(NULL, &pp), 0);
    rc = hash_ops->place(pp, &f->v, 1000, &f->out);
    hash_ops->destroy(pp);
    return rc;
}

/* Rows computed by controller/ctl_place.c before placement became a policy
 * (node list {3,9,1,7,5,0,8,2,6,4}, cm_hash64, seed 0). */
static void
test_golden(void)
{
    static const uint32_t ids[10] = {3, 9, 1, 7, 5, 0, 8, 2, 6, 4};
    static const struct {
        uint32_t t, p, width, row[10];
    } gold[] = {
        {1, 0, 6, {5, 4, 9, 0, 7, 6}},
        {1, 1, 6, {4, 0, 7, 5, 6, 3}},
        {2, 0, 3, {0, 3, 5}},
        {7, 3, 6, {4, 7, 3, 1, 2, 5}},
        {42, 17, 4, {4, 6, 9, 1}},
        {1000, 255, 8, {5, 6, 4, 7, 2, 0, 1, 8}},
        {5, 9, 1, {7}},
        {123456, 7, 10, {0, 2, 4, 5, 6, 8, 7, 9, 3, 1}},
    };
    static struct fixture f;
    size_t nslots = 0;

    fixture_init(&f, ids, 10);
    for (size_t g = 0; g < sizeof(gold) / sizeof(gold[0]); g++) {
        uint32_t row[10];

        CHECK_EQ_INT(
            pol_pp_hash_row(cm_hash64, 0, gold[g].t, gold[g].p, ids, 10, gold[g].width, row),
            gold[g].width);
        CHECK(memcmp(row, gold[g].row, gold[g].width * sizeof(row[0])) == 0);
        fixture_part(&f, gold[g].t, gold[g].p, gold[g].width);
    }
    /* Through the policy: the same rows, slot layout, a copy's even share. */
    CHECK_EQ_INT(place(&f), 0);
    CHECK_EQ_STR(f.out.stats.solver, "hash");
    for (size_t g = 0; g < sizeof(gold) / sizeof(gold[0]); g++) {
        CHECK_EQ_INT(f.len[g], gold[g].width);
        CHECK(memcmp(f.rows + nslots, gold[g].row, gold[g].width * sizeof(uint32_t)) == 0);
        for (uint32_t j = 0; j < gold[g].width; j++) {
            CHECK_NEAR(f.share[nslots + j], 1.0 / gold[g].width, 1e-12);
        }
        nslots += gold[g].width;
    }
    CHECK_EQ_INT(pol_pp_slots(&f.v), nslots);
    /* A different seed is a different placement. */
    f.v.hash_seed = 1;
    CHECK_EQ_INT(place(&f), 0);
    CHECK(memcmp(f.rows, gold[0].row, 6 * sizeof(uint32_t)) != 0 ||
          memcmp(f.rows + 6, gold[1].row, 6 * sizeof(uint32_t)) != 0);
}

/* 1 if node a ranks before node b for (t, p): higher score, then lower id. */
static int
outranks(uint32_t t, uint32_t p, uint32_t a, uint32_t b)
{
    uint64_t sa = pol_pp_hash_score(cm_hash64, 0, t, p, a),
             sb = pol_pp_hash_score(cm_hash64, 0, t, p, b);

    return sa > sb || (sa == sb && a < b);
}

/* Random node sets, widths and node states: every row is min(width, nodes)
 * long, in strictly descending rank, and outranks every node left out (so it
 * is the top of the ranking, and distinct); marking nodes down or giving
 * current rows changes nothing. */
static void
test_brute_force(void)
{
    static struct fixture f, g;

    for (int iter = 0; iter < 300; iter++) {
        uint32_t ids[MAXN];
        size_t n = (size_t)t_range(1, MAXN), nslots = 0;

        for (size_t i = 0; i < n; i++) {
            int dup;

            do {
                ids[i] = (uint32_t)t_rand();
                dup = 0;
                for (size_t j = 0; j < i; j++) {
                    dup |= ids[j] == ids[i];
                }
            } while (dup);
        }
        fixture_init(&f, ids, n);
        for (int p = 0; p < 20; p++) {
            fixture_part(&f, (uint32_t)t_range(0, 5), (uint32_t)t_rand(), (uint32_t)t_range(1, 12));
        }
        CHECK_EQ_INT(place(&f), 0);
        for (size_t p = 0; p < f.v.nparts; p++) {
            const uint32_t *row = f.rows + nslots;
            uint32_t t = f.parts[p].tenant, pid = f.parts[p].id;
            size_t w = f.parts[p].width < n ? f.parts[p].width : n;

            CHECK_EQ_INT(f.len[p], w);
            for (size_t j = 1; j < w; j++) {
                CHECK(outranks(t, pid, row[j - 1], row[j]));
            }
            for (size_t i = 0; i < n; i++) {
                size_t j = 0;

                while (j < w && row[j] != ids[i]) {
                    j++;
                }
                CHECK(j < w || outranks(t, pid, row[w - 1], ids[i]));
            }
            nslots += f.parts[p].width;
        }
        /* Node state and current rows do not move a hash row. */
        g = f;
        g.v.nodes = g.nodes;
        g.v.parts = g.parts;
        g.v.tenants = g.tenants;
        g.out.rows = g.rows;
        g.out.len = g.len;
        g.out.share = g.share;
        for (size_t i = 0; i < n; i++) {
            g.nodes[i].up = t_range(0, 1);
        }
        g.nodes[0].up = 1;
        memset(g.cur_len, 0, sizeof(g.cur_len));
        g.v.cur_rows = g.cur;
        g.v.cur_len = g.cur_len;
        CHECK_EQ_INT(place(&g), 0);
        CHECK(memcmp(f.rows, g.rows, nslots * sizeof(f.rows[0])) == 0);
        CHECK(memcmp(f.len, g.len, f.v.nparts * sizeof(f.len[0])) == 0);
        /* Nothing was placed before: every holder is new. */
        {
            uint64_t want = 0;

            for (size_t p = 0; p < f.v.nparts; p++) {
                want += (uint64_t)f.len[p] * f.parts[p].resident_bytes;
            }
            CHECK_EQ_INT(g.out.stats.bytes_moved, want);
            CHECK_EQ_INT(g.out.stats.parts_moved, f.v.nparts);
        }
    }
}

/* Rows already in place move nothing; one changed row costs its holders. */
static void
test_moves(void)
{
    static const uint32_t ids[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    static struct fixture f;
    size_t nslots;

    fixture_init(&f, ids, 8);
    for (uint32_t p = 0; p < 16; p++) {
        fixture_part(&f, 1 + p % 3, p, 3 + p % 4);
    }
    CHECK_EQ_INT(place(&f), 0);
    nslots = pol_pp_slots(&f.v);
    memcpy(f.cur, f.rows, nslots * sizeof(f.cur[0]));
    memcpy(f.cur_len, f.len, sizeof(f.cur_len));
    f.v.cur_rows = f.cur;
    f.v.cur_len = f.cur_len;
    CHECK_EQ_INT(place(&f), 0);
    CHECK_EQ_INT(f.out.stats.bytes_moved, 0);
    CHECK_EQ_INT(f.out.stats.parts_moved, 0);
    /* Partition 0 (width 3) had a holder swapped for an unknown node. */
    f.cur[1] = 99;
    CHECK_EQ_INT(place(&f), 0);
    CHECK_EQ_INT(f.out.stats.bytes_moved, 1000);
    CHECK_EQ_INT(f.out.stats.parts_moved, 1);
    /* Load is measured all the same: 16 partitions' even shares. */
    CHECK(f.out.stats.max_util[POL_PP_REQ] > 0.0);
    CHECK(f.out.stats.max_util[POL_PP_REQ] <= 16 * 10 / 1000.0);
}

static void
test_bad_views(void)
{
    static const uint32_t ids[4] = {1, 2, 3, 4};
    static struct fixture f;
    struct pol_pp_view ok;

    fixture_init(&f, ids, 4);
    fixture_part(&f, 1, 0, 3);
    fixture_part(&f, 2, 0, 3);
    ok = f.v;
    CHECK_EQ_INT(place(&f), 0);

    f.v.hash64 = NULL;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.v = ok;
    f.v.headroom = 0.0;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.v.headroom = 1.5;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.v.headroom = NAN;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.v = ok;
    f.nodes[1].id = 1; /* duplicate id */
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.nodes[1].id = 2;
    f.nodes[2].cap[POL_PP_BYTES] = 0.0; /* an up node needs capacity */
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.nodes[2].up = 0; /* a down one need not */
    CHECK_EQ_INT(place(&f), 0);
    f.nodes[2].up = 1;
    f.nodes[2].cap[POL_PP_BYTES] = 1e9;
    f.parts[0].width = 0;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].width = POL_PP_MAX_WIDTH + 1;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].width = 3;
    f.parts[0].k = 4;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].k = 1;
    f.parts[0].demand[POL_PP_REQ] = -1.0;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].demand[POL_PP_REQ] = INFINITY;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].demand[POL_PP_REQ] = 1.0;
    f.parts[0].tenant = 77; /* no weight for it */
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.parts[0].tenant = 1;
    f.tenants[0].weight = 0.0;
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.tenants[0].weight = 1.0;
    f.v.cur_rows = f.cur; /* without cur_len */
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.v.cur_len = f.cur_len;
    f.cur_len[1] = 4; /* longer than the width */
    CHECK_EQ_INT(place(&f), CM_E_BADARG);
    f.cur_len[1] = 0;
    CHECK_EQ_INT(place(&f), 0);
    /* No node at all: nowhere to put partitions. */
    f.v.nnodes = 0;
    CHECK_EQ_INT(place(&f), CM_E_UNAVAIL);
    f.v.nparts = 0;
    CHECK_EQ_INT(place(&f), 0);
    CHECK_EQ_INT(hash_ops->place(NULL, NULL, 0, &f.out), CM_E_BADARG);
}

static void
test_registry(void)
{
    const struct pol_pp_ops *const *all;
    size_t n;

    all = pol_pp_list(&n);
    CHECK_EQ_INT(n, 3);
    for (size_t i = 0; i < n; i++) {
        CHECK(pol_pp_find(all[i]->name) == all[i]);
    }
    CHECK(pol_pp_find("hash") != NULL);
    CHECK(pol_pp_find("milp") != NULL);
    CHECK(pol_pp_find("greedy") != NULL);
    CHECK(pol_pp_find("random") == NULL);
    CHECK(pol_pp_find(NULL) == NULL);
}

int
main(void)
{
    t_seed();
    hash_ops = pol_pp_find("hash");
    CHECK(hash_ops != NULL);
    test_registry();
    test_golden();
    test_brute_force();
    test_moves();
    test_bad_views();
    fprintf(stderr, "ok\n");
    return 0;
}
