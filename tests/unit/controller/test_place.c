/*
 * test_place.c - rendezvous placement: rows are distinct and deterministic,
 * match a brute-force sort of every node's score, and adding or removing
 * a node moves only the rows it enters or leaves; a node leaving a row is
 * replaced at its position only (ctl_place_replace).
 */
#include "t_check.h"

#include "ctl_place.h"

#define MAXN 64

struct scored {
    uint64_t s;
    uint32_t id;
};

static int
cmp_scored(const void *a, const void *b)
{
    const struct scored *x = a, *y = b;

    if (x->s != y->s) {
        return x->s > y->s ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

static size_t
brute(uint32_t t, uint32_t p, const uint32_t *nodes, size_t n, size_t width, uint32_t *out)
{
    struct scored sc[MAXN];
    size_t k = n < width ? n : width;

    for (size_t i = 0; i < n; i++) {
        sc[i].s = ctl_place_score(t, p, nodes[i]);
        sc[i].id = nodes[i];
    }
    qsort(sc, n, sizeof(sc[0]), cmp_scored);
    for (size_t i = 0; i < k; i++) {
        out[i] = sc[i].id;
    }
    return k;
}

/* n distinct random ids. */
static void
random_nodes(uint32_t *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int dup;

        do {
            nodes[i] = (uint32_t)t_range(0, 200);
            dup = 0;
            for (size_t j = 0; j < i; j++) {
                dup |= nodes[j] == nodes[i];
            }
        } while (dup);
    }
}

static void
test_brute_force(void)
{
    uint32_t nodes[MAXN], shuffled[MAXN], a[MAXN], b[MAXN], c[MAXN];

    for (int iter = 0; iter < 3000; iter++) {
        size_t n = (size_t)t_range(0, 40), width = (size_t)t_range(1, 12);
        uint32_t t = (uint32_t)t_rand(), p = (uint32_t)t_range(0, 255);
        size_t ka, kb, kc;

        random_nodes(nodes, n);
        ka = ctl_place_row(t, p, nodes, n, width, a);
        kb = brute(t, p, nodes, n, width, b);
        CHECK_EQ_INT(ka, kb);
        CHECK_EQ_INT(ka, n < width ? n : width);
        for (size_t i = 0; i < ka; i++) {
            CHECK_EQ_INT(a[i], b[i]);
            for (size_t j = 0; j < i; j++) {
                CHECK(a[i] != a[j]);
            }
        }
        /* Same answer whatever order the node list comes in. */
        memcpy(shuffled, nodes, n * sizeof(nodes[0]));
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)t_range(0, (int)i - 1);
            uint32_t x = shuffled[i - 1];

            shuffled[i - 1] = shuffled[j];
            shuffled[j] = x;
        }
        kc = ctl_place_row(t, p, shuffled, n, width, c);
        CHECK_EQ_INT(kc, ka);
        CHECK(memcmp(a, c, ka * sizeof(a[0])) == 0);
    }
}

static void
test_fixed_values(void)
{
    uint32_t nodes[6] = {0, 1, 2, 3, 4, 5}, a[6], b[6];

    /* Deterministic across calls and processes (pure function of ids). */
    CHECK_EQ_INT(ctl_place_score(1, 2, 3), ctl_place_score(1, 2, 3));
    CHECK(ctl_place_score(1, 2, 3) != ctl_place_score(1, 2, 4));
    CHECK(ctl_place_score(1, 2, 3) != ctl_place_score(2, 1, 3));
    CHECK_EQ_INT(ctl_place_row(7, 3, nodes, 6, 6, a), 6);
    CHECK_EQ_INT(ctl_place_row(7, 3, nodes, 6, 6, b), 6);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    CHECK_EQ_INT(ctl_place_row(7, 3, nodes, 0, 6, a), 0);
    CHECK_EQ_INT(ctl_place_row(7, 3, nodes, 6, 0, a), 0);
    /* A prefix of a wider row. */
    CHECK_EQ_INT(ctl_place_row(7, 3, nodes, 6, 3, b), 3);
    ctl_place_row(7, 3, nodes, 6, 6, a);
    CHECK(memcmp(a, b, 3 * sizeof(a[0])) == 0);
}

static int
contains(const uint32_t *row, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (row[i] == id) {
            return 1;
        }
    }
    return 0;
}

/* Adding node 1000 to 20 nodes: a row changes only if the new node enters
 * it, then exactly one old holder leaves and the others keep their order. */
static void
test_stability(void)
{
    enum { N = 20, W = 6, ROWS = 4000 };
    uint32_t nodes[N + 1], before[W], after[W], rest[W];
    size_t changed = 0;

    for (uint32_t i = 0; i < N; i++) {
        nodes[i] = i;
    }
    nodes[N] = 1000;
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t t = 1 + r / 16, p = r % 16;
        size_t nr = 0;

        ctl_place_row(t, p, nodes, N, W, before);
        ctl_place_row(t, p, nodes, N + 1, W, after);
        if (memcmp(before, after, sizeof(before)) == 0) {
            CHECK(!contains(after, W, 1000));
            continue;
        }
        changed++;
        CHECK(contains(after, W, 1000));
        for (size_t i = 0; i < W; i++) {
            if (after[i] != 1000) {
                rest[nr++] = after[i];
            }
        }
        CHECK_EQ_INT(nr, W - 1);
        /* The old row minus its last member, in order. */
        CHECK(memcmp(rest, before, (W - 1) * sizeof(rest[0])) == 0);
    }
    /* Expected fraction W / (N + 1) = 0.286. */
    fprintf(stderr, "rows moved by adding a node: %zu of %d\n", changed, ROWS);
    CHECK(changed > ROWS * 20 / 100);
    CHECK(changed < ROWS * 37 / 100);

    /* Removing node 5: only rows that held it change. */
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t t = 1 + r / 16, p = r % 16, less[N - 1];
        size_t k = 0;

        for (uint32_t i = 0; i < N; i++) {
            if (i != 5) {
                less[k++] = i;
            }
        }
        ctl_place_row(t, p, nodes, N, W, before);
        ctl_place_row(t, p, less, N - 1, W, after);
        if (!contains(before, W, 5)) {
            CHECK(memcmp(before, after, sizeof(before)) == 0);
        }
    }
}

/* Load spread: with 8 nodes and width 6, every node holds a fair number of
 * the (tenant, partition) slots. */
static void
test_balance(void)
{
    enum { N = 8, W = 6 };
    uint32_t nodes[N], row[W];
    unsigned count[N] = {0};

    for (uint32_t i = 0; i < N; i++) {
        nodes[i] = i;
    }
    for (uint32_t t = 1; t <= 64; t++) {
        for (uint32_t p = 0; p < 16; p++) {
            ctl_place_row(t, p, nodes, N, W, row);
            count[row[0]]++;
        }
    }
    for (int i = 0; i < N; i++) {
        /* 1024 primaries over 8 nodes: 128 each, allow +-40%. */
        CHECK(count[i] > 77 && count[i] < 179);
    }
}

/* Random rows with some of their nodes leaving: only the leaving nodes'
 * positions change; each goes to the best-scoring node left that the row
 * does not hold (brute force over the candidates), up nodes first; the
 * row stays distinct. */
static void
test_replace(void)
{
    for (int iter = 0; iter < 2000; iter++) {
        uint32_t nodes[MAXN], keep[MAXN], row[MAXN], was[MAXN];
        uint8_t up[MAXN];
        size_t n = (size_t)t_range(2, 24), width = (size_t)t_range(1, 9), nkeep = 0, len;
        uint32_t t = (uint32_t)t_range(0, 50), p = (uint32_t)t_range(0, 64);

        random_nodes(nodes, n);
        len = ctl_place_row(t, p, nodes, n, width, row);
        memcpy(was, row, len * sizeof(*row));
        for (size_t i = 0; i < n; i++) {
            if (t_range(0, 4) > 0) {
                up[nkeep] = (uint8_t)(t_range(0, 3) > 0);
                keep[nkeep++] = nodes[i];
            }
        }
        size_t replaced = ctl_place_replace(t, p, row, len, keep, up, nkeep), counted = 0;

        for (size_t j = 0; j < len; j++) {
            int kept = 0;

            for (size_t i = 0; i < nkeep; i++) {
                kept |= keep[i] == was[j];
            }
            if (kept) {
                CHECK_EQ_INT((int)row[j], (int)was[j]); /* a member's position stays */
                continue;
            }
            /* The best candidate: not in the row before this position was
             * replaced (the earlier replacements and every later old node
             * count), up first, then the score. */
            long best = -1;

            for (size_t i = 0; i < nkeep; i++) {
                int held = 0;

                for (size_t q = 0; q < len; q++) {
                    held |= (q < j ? row[q] : was[q]) == keep[i];
                }
                if (held) {
                    continue;
                }
                if (best < 0 || up[i] > up[best] ||
                    (up[i] == up[best] &&
                     (ctl_place_score(t, p, keep[i]) > ctl_place_score(t, p, keep[best]) ||
                      (ctl_place_score(t, p, keep[i]) == ctl_place_score(t, p, keep[best]) &&
                       keep[i] < keep[best])))) {
                    best = (long)i;
                }
            }
            if (best < 0) {
                CHECK_EQ_INT((int)row[j], (int)was[j]); /* nothing left to take it */
            } else {
                CHECK_EQ_INT((int)row[j], (int)keep[best]);
                counted++;
            }
        }
        CHECK_EQ_INT((int)replaced, (int)counted);
        for (size_t a = 0; a < len; a++) {
            for (size_t b = a + 1; b < len; b++) {
                CHECK(row[a] != row[b]);
            }
        }
    }
}

int
main(void)
{
    t_seed();
    test_fixed_values();
    test_brute_force();
    test_stability();
    test_balance();
    test_replace();
    fprintf(stderr, "ok\n");
    return 0;
}
