/*
 * pol_wa_cycle.c - the widest cycle of a small dense directed graph: the
 * cycle whose narrowest edge is widest (a maximum-bottleneck cycle). WA
 * pushes weight around it (pol_wa_pisces.c).
 *
 * Its width is the largest capacity tau at which the edges >= tau still
 * hold a cycle, and "is there a cycle" only gets easier as tau falls. So
 * the search tests candidate widths like a quickselect: take a pivot among
 * the capacities left, keep those above it if the edges >= pivot hold a
 * cycle, else those below. That is O(n^2) expected partitioning plus
 * O(log n) depth-first cycle checks of O(n^2) each, against O(n^3) for a
 * maximum-bottleneck Dijkstra from every vertex back to itself.
 *
 * Pure and single-threaded; the scratch belongs to one caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_wa_impl.h"

int
pol_wa_cyc_init(struct pol_wa_cyc *c, size_t n)
{
    /* +1: never malloc(0), so NULL always means out of memory. */
    c->n = n;
    c->vals = malloc(n * n * sizeof(*c->vals) + 1);
    c->stk = malloc(n * sizeof(*c->stk) + 1);
    c->nxt = malloc(n * sizeof(*c->nxt) + 1);
    c->state = malloc(n + 1);
    if (c->vals == NULL || c->stk == NULL || c->nxt == NULL || c->state == NULL) {
        pol_wa_cyc_fini(c);
        return -ENOMEM;
    }
    return 0;
}

void
pol_wa_cyc_fini(struct pol_wa_cyc *c)
{
    free(c->vals);
    free(c->stk);
    free(c->nxt);
    free(c->state);
    memset(c, 0, sizeof(*c));
}

/* 1 if the edges of capacity >= tau (and > 0) hold a cycle; it is then in
 * cyc. Iterative depth-first search: a grey successor closes a cycle, and
 * the grey vertices from it to the top of the stack are that cycle. */
static int
pol_wa_find_cycle(struct pol_wa_cyc *c, const double *cap, double tau, size_t *cyc, size_t *len)
{
    size_t s, n = c->n;

    memset(c->state, 0, n);
    for (s = 0; s < n; s++) {
        size_t sp = 0;

        if (c->state[s] != 0) {
            continue;
        }
        c->stk[sp++] = s;
        c->state[s] = 1;
        c->nxt[s] = 0;
        while (sp > 0) {
            size_t v = c->stk[sp - 1], x = c->nxt[v];

            while (x < n && !(cap[v * n + x] >= tau && cap[v * n + x] > 0.0)) {
                x++;
            }
            if (x == n) {
                c->state[v] = 2;
                sp--;
                continue;
            }
            c->nxt[v] = x + 1;
            if (c->state[x] == 1) {
                size_t k = sp - 1;

                while (c->stk[k] != x) {
                    k--;
                }
                *len = sp - k;
                memcpy(cyc, &c->stk[k], *len * sizeof(*cyc));
                return 1;
            }
            if (c->state[x] == 0) {
                c->state[x] = 1;
                c->nxt[x] = 0;
                c->stk[sp++] = x;
            }
        }
    }
    return 0;
}

double
pol_wa_widest_cycle(struct pol_wa_cyc *c, const double *cap, double floor_cap, size_t *cyc,
                    size_t *len)
{
    size_t i, j, m = 0, nn = c->n * c->n;
    double best = floor_cap;

    *len = 0;
    if (!pol_wa_find_cycle(c, cap, floor_cap, cyc, len)) {
        return 0.0;
    }
    for (i = 0; i < nn; i++) {
        if (cap[i] > best) {
            c->vals[m++] = cap[i];
        }
    }
    /* Invariant: the edges >= best hold a cycle; the width is best or one
     * of vals[0..m), all of which are > best. */
    while (m > 0) {
        double piv = c->vals[m / 2];
        int up = pol_wa_find_cycle(c, cap, piv, cyc, len);

        if (up) {
            best = piv;
        }
        for (i = 0, j = 0; i < m; i++) {
            if (up ? c->vals[i] > piv : c->vals[i] < piv) {
                c->vals[j++] = c->vals[i];
            }
        }
        m = j;
    }
    pol_wa_find_cycle(c, cap, best, cyc, len);
    /* The cycle found at best has every edge >= best; none wider exists,
     * so its narrowest edge is best itself unless best is floor_cap. */
    for (i = 0; i < *len; i++) {
        double e = cap[cyc[i] * c->n + cyc[(i + 1) % *len]];

        best = i == 0 || e < best ? e : best;
    }
    return best;
}
