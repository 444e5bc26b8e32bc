/* ctl_fair.c - water-filling fair shares, MMR and Jain's index (see ctl_fair.h). */
#include "ctl_fair.h"

#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"

struct by_ratio {
    double r; /* demand / weight */
    size_t i;
};

static int
cmp_ratio(const void *a, const void *b)
{
    double x = ((const struct by_ratio *)a)->r, y = ((const struct by_ratio *)b)->r;

    return x < y ? -1 : x > y;
}

static int
has_demand(const struct ctl_fair_in *t)
{
    return t->weight > 0.0 && t->demand > 0.0;
}

/*
 * The level L: tenants are satisfied in increasing demand / weight while
 * their demand fits under what is left shared by the weight left; the first
 * that does not fit sets L for itself and every tenant after it.
 */
static double
water_level(const struct ctl_fair_in *in, size_t n, double capacity)
{
    struct by_ratio *o = cm_calloc(n + 1, sizeof(*o));
    double left = capacity > 0.0 ? capacity : 0.0, wleft = 0.0, level = 0.0;
    size_t m = 0, k;

    for (size_t i = 0; i < n; i++) {
        if (has_demand(&in[i])) {
            o[m].r = in[i].demand / in[i].weight;
            o[m].i = i;
            wleft += in[i].weight;
            m++;
        }
    }
    qsort(o, m, sizeof(*o), cmp_ratio);
    for (k = 0; k < m; k++) {
        if (o[k].r * wleft > left) {
            level = left / wleft;
            break;
        }
        left -= in[o[k].i].demand;
        wleft -= in[o[k].i].weight;
        level = o[k].r;
    }
    free(o);
    return level;
}

void
ctl_fair_compute(const struct ctl_fair_in *in, size_t n, double capacity, double *alloc,
                 int *counted, struct ctl_fair_out *out)
{
    double xmin = 0.0, xmax = 0.0, sum = 0.0, sq = 0.0;

    memset(out, 0, sizeof(*out));
    out->level = water_level(in, n, capacity);
    for (size_t i = 0; i < n; i++) {
        double fair = out->level * in[i].weight, x;

        alloc[i] = 0.0;
        counted[i] = 0;
        if (!has_demand(&in[i])) {
            continue;
        }
        alloc[i] = in[i].demand < fair ? in[i].demand : fair;
        if (in[i].demand < (1.0 - CTL_FAIR_SLACK) * fair) {
            continue;
        }
        counted[i] = 1;
        x = in[i].served / in[i].weight;
        if (out->counted == 0 || x < xmin) {
            xmin = x;
        }
        if (out->counted == 0 || x > xmax) {
            xmax = x;
        }
        sum += x;
        sq += x * x;
        out->counted++;
    }
    if (out->counted >= 2 && xmax > 0.0) {
        out->mmr_valid = 1;
        out->mmr = xmin / xmax;
    }
    if (out->counted >= 1 && sq > 0.0) {
        out->jain_valid = 1;
        out->jain = (sum * sum) / ((double)out->counted * sq);
    }
}
