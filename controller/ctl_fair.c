/* ctl_fair.c - MMR, Jain's index and weight shares (see ctl_fair.h). */
#include "ctl_fair.h"

#include <string.h>

void
ctl_fair_compute(const struct ctl_fair_in *in, size_t n, double *alloc, struct ctl_fair_out *out)
{
    double wsum = 0.0, xmin = 0.0, xmax = 0.0, sum = 0.0, sq = 0.0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        wsum += in[i].weight;
    }
    for (size_t i = 0; i < n; i++) {
        double x;

        alloc[i] = wsum > 0.0 ? in[i].weight / wsum : 0.0;
        if (!(in[i].demand > 0.0) || !(in[i].weight > 0.0)) {
            continue;
        }
        x = in[i].served / in[i].weight;
        if (out->active == 0 || x < xmin) {
            xmin = x;
        }
        if (out->active == 0 || x > xmax) {
            xmax = x;
        }
        sum += x;
        sq += x * x;
        out->active++;
    }
    if (out->active >= 2 && xmax > 0.0) {
        out->mmr_valid = 1;
        out->mmr = xmin / xmax;
    }
    if (out->active >= 1 && sq > 0.0) {
        out->jain_valid = 1;
        out->jain = (sum * sum) / ((double)out->active * sq);
    }
}
