/*
 * fq_bench.c - shoal-fqbench: the cost of one FQ scheduling cycle
 * (enqueue + dequeue + complete) against the number of backlogged tenants.
 *
 *   shoal-fqbench [--tenants N] [--depth D] [--ops N] [--runs R] [--sched NAME]
 *                 [--max-ratio X] [--json]
 *
 * Every tenant keeps `depth` requests waiting; a cycle dequeues one,
 * completes it with its bytes and enqueues it again, so the scheduler stays
 * saturated with every tenant backlogged. Sizes are 0-64 KiB from a fixed
 * pseudo-random sequence; one request in four is a GET of unknown size (the
 * policy estimates it). With no --tenants it runs 10, 1000 and 100000
 * tenants, with no --sched every registered policy. It prints the median,
 * min and max ns per cycle over the runs and the tenant visits per dequeue;
 * --max-ratio exits 1 when a policy's median at the most tenants is more
 * than that many times its median at the fewest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_config.h"
#include "pol_fq.h"

struct fqb_cfg {
    uint64_t tenants;
    int depth;
    uint64_t ops;
    int runs;
    const char *sched;
    double max_ratio;
    int json;
};

#define T struct fqb_cfg
static const struct cm_opt opts[] = {
    CM_OPT_U64(T, tenants, "0", 0, 10000000, "backlogged tenants (0: 10, 1000 and 100000)"),
    CM_OPT_INT(T, depth, "2", 1, 64, "requests waiting per tenant"),
    CM_OPT_U64(T, ops, "1000000", 1, 1ull << 34, "timed cycles per run"),
    CM_OPT_INT(T, runs, "5", 1, 101, "runs per point (the median is reported)"),
    CM_OPT_STR(T, sched, "", "one policy (empty: every registered one)"),
    CM_OPT_DBL(T, max_ratio, "0", 0, 1e6, "fail if ns/cycle grows more than this (0: never)"),
    CM_OPT_BOOL(T, json, "false", "one JSON object per line instead of a table"),
};
#undef T

struct fqb_req {
    struct pol_fq_item fq;
    uint64_t bytes;
};

struct fqb_res {
    double med, min, max, visits;
};

static double
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* One run: ns per cycle, or a negative value on failure. */
static double
run_one(const struct pol_fq_ops *ops, struct fqb_req *r, size_t nreq, uint64_t cycles,
        double *visits)
{
    struct pol_fq_cfg cfg = {0};
    struct pol_fq *q = NULL;
    struct pol_fq_item *it;
    uint64_t i, v0;
    double t0, t1;
    size_t j;

    if (ops->create(&cfg, &q) != 0) {
        return -1;
    }
    for (j = 0; j < nreq; j++) {
        if (ops->enqueue(q, &r[j].fq, 0) != 0) {
            ops->destroy(q);
            return -1;
        }
    }
    /* One pass untimed: every tenant record and item touched once. */
    for (j = 0; j < nreq; j++) {
        it = ops->dequeue(q, j);
        ops->complete(q, it, ((struct fqb_req *)(void *)it)->bytes, j);
        ops->enqueue(q, it, j);
    }
    v0 = pol_fq_visits(q);
    t0 = now_ns();
    for (i = 0; i < cycles; i++) {
        it = ops->dequeue(q, i);
        ops->complete(q, it, ((struct fqb_req *)(void *)it)->bytes, i);
        ops->enqueue(q, it, i);
    }
    t1 = now_ns();
    *visits = (double)(pol_fq_visits(q) - v0) / (double)cycles;
    ops->destroy(q);
    return (t1 - t0) / (double)cycles;
}

static int
bench_point(const struct fqb_cfg *c, const struct pol_fq_ops *ops, uint64_t tenants,
            struct fqb_res *out)
{
    size_t nreq = (size_t)tenants * (size_t)c->depth, j;
    struct fqb_req *r = calloc(nreq, sizeof(*r));
    double *ns = calloc((size_t)c->runs, sizeof(*ns));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int k, rc = -1;

    if (r == NULL || ns == NULL) {
        goto out;
    }
    for (j = 0; j < nreq; j++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r[j].fq.tenant = (uint32_t)(j % tenants);
        r[j].bytes = x % (64 * 1024 + 1);
        r[j].fq.flags = POL_FQ_GET | (j % 4 == 0 ? POL_FQ_UNSIZED : 0);
        r[j].fq.est_bytes = r[j].bytes;
    }
    for (k = 0; k < c->runs; k++) {
        ns[k] = run_one(ops, r, nreq, c->ops, &out->visits);
        if (ns[k] < 0) {
            fprintf(stderr, "shoal-fqbench: %s failed\n", ops->name);
            goto out;
        }
    }
    qsort(ns, (size_t)c->runs, sizeof(*ns), cmp_double);
    out->med = ns[c->runs / 2];
    out->min = ns[0];
    out->max = ns[c->runs - 1];
    rc = 0;
out:
    free(r);
    free(ns);
    return rc;
}

int
main(int argc, char **argv)
{
    static const uint64_t dflt[] = {10, 1000, 100000};
    struct fqb_cfg c;
    const struct pol_fq_ops *const *all;
    const struct pol_fq_ops *one;
    const uint64_t *tn = dflt;
    size_t npol, ntn = sizeof(dflt) / sizeof(dflt[0]), p, i;
    struct fqb_res res = {0}, first = {0};
    int bad = 0;

    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &c, argc, argv, "shoal-fqbench",
                   "ns per FQ enqueue+dequeue+complete with N backlogged tenants, per policy");
    all = pol_fq_list(&npol);
    if (c.sched[0] != '\0') {
        one = pol_fq_find(c.sched);
        if (one == NULL) {
            fprintf(stderr, "shoal-fqbench: unknown policy %s\n", c.sched);
            return 2;
        }
        all = &one;
        npol = 1;
    }
    if (c.tenants != 0) {
        tn = &c.tenants;
        ntn = 1;
    }
    if (!c.json) {
        printf("%-6s %8s %10s %10s %10s %12s\n", "policy", "tenants", "ns/cycle", "min", "max",
               "visits/deq");
    }
    for (p = 0; p < npol; p++) {
        for (i = 0; i < ntn; i++) {
            if (bench_point(&c, all[p], tn[i], &res) != 0) {
                return 1;
            }
            if (c.json) {
                printf("{\"policy\":\"%s\",\"tenants\":%llu,\"depth\":%d,\"ns_per_cycle\":%.1f,"
                       "\"min\":%.1f,\"max\":%.1f,\"visits_per_dequeue\":%.3f,\"runs\":%d}\n",
                       all[p]->name, (unsigned long long)tn[i], c.depth, res.med, res.min, res.max,
                       res.visits, c.runs);
            } else {
                printf("%-6s %8llu %10.1f %10.1f %10.1f %12.3f\n", all[p]->name,
                       (unsigned long long)tn[i], res.med, res.min, res.max, res.visits);
            }
            fflush(stdout);
            if (i == 0) {
                first = res;
            } else if (c.max_ratio > 0 && res.med > c.max_ratio * first.med) {
                fprintf(stderr, "shoal-fqbench: %s at %llu tenants: %.1f ns, over %g x %.1f\n",
                        all[p]->name, (unsigned long long)tn[i], res.med, c.max_ratio, first.med);
                bad = 1;
            }
        }
    }
    return bad;
}
