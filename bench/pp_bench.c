/*
 * pp_bench.c - shoal-ppbench: the partition placement policies (pol_pp.h)
 * on synthetic clusters, re-placing a load-blind rendezvous ("hash")
 * placement: the MILP (restricted to the partitions that must move, and
 * the full model) against its greedy fallback.
 *
 *   shoal-ppbench [--sizes 8x64,32x1024,64x4096] [--runs 5] [--time-limit-ms 2000]
 *                 [--max-binaries 4096] [--full-max-parts 1024] [--seed 1]
 *                 [--load-req 0.8] [--load-bytes 0.7] [--zipf 0.9]
 *
 * Each run is a fresh instance (seed + run): 4 tenants with weights 1, 1, 2,
 * 4 and different mixes (small reads on 1+2 copies, large objects on 4+2
 * stripes), each spreading its demand over its partitions by Zipf (which
 * partition gets which rank is shuffled), in all --load-req of u x the
 * cluster's request capacity and --load-bytes of its byte capacity (u =
 * 0.9, so DRF scales nobody down); resident sizes uniform in 64 MiB - 1 GiB.
 * The current placement is "hash". Reported per size and policy: the
 * median solve time, bytes moved, partitions moved, max utilisation per
 * resource and free partitions (milp's model); how many runs ended within
 * capacity, hit the solver's time limit, and were answered by greedy
 * instead. "milp, full model" lifts --max-binaries (sizes up to
 * --full-max-parts partitions). Wall time is what GLPK's time limit counts;
 * CPU time (the process's) shows the work when the machine is shared.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cm_config.h"
#include "cm_hash.h"
#include "pol_pp.h"

struct ppb_cfg {
    const char *sizes;
    int runs;
    int time_limit_ms;
    int max_binaries;
    int full_max_parts;
    uint64_t seed;
    double load_req, load_bytes, zipf;
};

#define T struct ppb_cfg
static const struct cm_opt opts[] = {
    CM_OPT_STR(T, sizes, "8x64,32x1024,64x4096",
               "cluster sizes, NODESxPARTITIONS, comma-separated"),
    CM_OPT_INT(T, runs, "5", 1, 101, "instances per size (medians over them)"),
    CM_OPT_INT(T, time_limit_ms, "2000", 1, 600000, "milp's budget per placement"),
    CM_OPT_INT(T, max_binaries, "4096", 1, 1 << 30,
               "milp: model size before it re-places only what must move"),
    CM_OPT_INT(T, full_max_parts, "1024", 0, 1 << 20,
               "also run milp with the full model up to this many partitions"),
    CM_OPT_DBL(T, load_req, "0.8", 0.01, 2, "demand, share of u x the cluster's request capacity"),
    CM_OPT_DBL(T, load_bytes, "0.7", 0.01, 2, "demand, share of u x the cluster's byte capacity"),
    CM_OPT_DBL(T, zipf, "0.9", 0, 3, "Zipf exponent of the partitions' popularity"),
    CM_OPT_U64(T, seed, "1", 0, 1ull << 62, "first instance's seed"),
};
#undef T

#define NTENANTS 4

/* Tenant mixes: weight, share of the cluster's request and byte demand, k, m. */
static const struct {
    double weight, req, bytes;
    uint32_t k, m;
} mix[NTENANTS] = {
    {1, 0.40, 0.05, 1, 2}, /* small reads */
    {1, 0.10, 0.50, 4, 2}, /* large objects */
    {2, 0.20, 0.25, 4, 2}, /* mixed */
    {4, 0.30, 0.20, 1, 2}, /* small, heavier weight */
};

struct inst {
    struct pol_pp_node *nodes;
    struct pol_pp_part *parts;
    struct pol_pp_tenant tenants[NTENANTS];
    uint32_t *cur, *cur_len, *rows, *len;
    double *share;
    struct pol_pp_view v;
};

static double
now_ms(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void
inst_free(struct inst *s)
{
    free(s->nodes);
    free(s->parts);
    free(s->cur);
    free(s->cur_len);
    free(s->rows);
    free(s->len);
    free(s->share);
}

static int
inst_make(struct inst *s, uint32_t nn, uint32_t np, uint64_t seed, const struct ppb_cfg *cfg)
{
    const double u = 0.9, cap_req = 50e3, cap_bytes = 1.25e9;
    struct bn_rng rng;
    uint32_t per = np / NTENANTS, *ids;
    size_t slots = 0;

    memset(s, 0, sizeof(*s));
    bn_rng_seed(&rng, seed);
    s->nodes = calloc(nn, sizeof(*s->nodes));
    s->parts = calloc(np, sizeof(*s->parts));
    ids = calloc(nn, sizeof(*ids));
    if (s->nodes == NULL || s->parts == NULL || ids == NULL) {
        free(ids);
        return -1;
    }
    for (uint32_t n = 0; n < nn; n++) {
        s->nodes[n] = (struct pol_pp_node){.id = n, .up = 1, .cap = {cap_req, cap_bytes}};
        ids[n] = n;
    }
    for (uint32_t t = 0; t < NTENANTS; t++) {
        double zeta = 0.0;

        s->tenants[t] = (struct pol_pp_tenant){.id = t + 1, .weight = mix[t].weight};
        for (uint32_t i = 0; i < per; i++) {
            zeta += 1.0 / pow(i + 1, cfg->zipf);
            s->parts[t * per + i].id = i;
        }
        /* Which partition has which popularity rank: a fresh shuffle. */
        for (uint32_t i = per; i > 1; i--) {
            uint32_t j = (uint32_t)(bn_rng_next(&rng) % i), x = s->parts[t * per + i - 1].id;

            s->parts[t * per + i - 1].id = s->parts[t * per + j].id;
            s->parts[t * per + j].id = x;
        }
        for (uint32_t i = 0; i < per; i++) {
            struct pol_pp_part *p = &s->parts[t * per + i];
            double z = 1.0 / pow(i + 1, cfg->zipf) / zeta, jitter = 0.8 + 0.4 * bn_rng_double(&rng);

            p->tenant = t + 1;
            p->k = mix[t].k;
            p->width = mix[t].k + mix[t].m;
            p->demand[POL_PP_REQ] = cfg->load_req * u * nn * cap_req * mix[t].req * z * jitter;
            p->demand[POL_PP_BYTES] =
                cfg->load_bytes * u * nn * cap_bytes * mix[t].bytes * z * jitter;
            p->resident_bytes = (64ull << 20) + (uint64_t)(bn_rng_double(&rng) * (960ull << 20));
            slots += p->width;
        }
    }
    s->cur = calloc(slots, sizeof(*s->cur));
    s->rows = calloc(slots, sizeof(*s->rows));
    s->share = calloc(slots, sizeof(*s->share));
    s->cur_len = calloc(np, sizeof(*s->cur_len));
    s->len = calloc(np, sizeof(*s->len));
    if (s->cur == NULL || s->rows == NULL || s->share == NULL || s->cur_len == NULL ||
        s->len == NULL) {
        free(ids);
        return -1;
    }
    slots = 0;
    for (uint32_t p = 0; p < np; p++) {
        s->cur_len[p] = (uint32_t)pol_pp_hash_row(cm_hash64, 0, s->parts[p].tenant, s->parts[p].id,
                                                  ids, nn, s->parts[p].width, s->cur + slots);
        slots += s->parts[p].width;
    }
    free(ids);
    s->v = (struct pol_pp_view){.nodes = s->nodes,
                                .nnodes = nn,
                                .parts = s->parts,
                                .nparts = per * NTENANTS,
                                .tenants = s->tenants,
                                .ntenants = NTENANTS,
                                .cur_rows = s->cur,
                                .cur_len = s->cur_len,
                                .headroom = u,
                                .hash64 = cm_hash64};
    return 0;
}

struct sample {
    double ms, cpu_ms, gib, util[POL_PP_NRES];
    uint32_t parts_moved, free_parts;
    int feasible, time_limited, fallback;
};

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof(*x), cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* One policy on one instance. */
static int
measure(struct inst *s, const char *policy, uint32_t max_binaries, uint32_t budget_ms,
        struct sample *out)
{
    const struct pol_pp_ops *ops = pol_pp_find(policy);
    struct pol_pp_cfg cfg = {.max_binaries = max_binaries};
    struct pol_pp_out o = {.rows = s->rows, .share = s->share, .len = s->len};
    struct pol_pp *pp;
    double t0, c0;
    int rc;

    if (ops == NULL || ops->create(&cfg, &pp) != 0) {
        return -1;
    }
    t0 = now_ms(CLOCK_MONOTONIC);
    c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
    rc = ops->place(pp, &s->v, budget_ms, &o);
    out->ms = now_ms(CLOCK_MONOTONIC) - t0;
    out->cpu_ms = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    ops->destroy(pp);
    if (rc != 0) {
        fprintf(stderr, "shoal-ppbench: %s: error %d\n", policy, rc);
        return -1;
    }
    out->gib = (double)o.stats.bytes_moved / (double)(1ull << 30);
    out->util[0] = o.stats.max_util[0];
    out->util[1] = o.stats.max_util[1];
    out->parts_moved = o.stats.parts_moved;
    out->free_parts = o.stats.free_parts;
    out->feasible = o.stats.feasible;
    out->time_limited = o.stats.time_limited;
    out->fallback = strcmp(o.stats.solver, policy) != 0;
    return 0;
}

static void
report(uint32_t nn, uint32_t np, const char *label, struct sample *x, int n)
{
    double ms[101], cpu[101], gib[101], ur[101], ub[101], pm[101], fp[101];
    int feasible = 0, tl = 0, fb = 0;

    for (int i = 0; i < n; i++) {
        ms[i] = x[i].ms;
        cpu[i] = x[i].cpu_ms;
        gib[i] = x[i].gib;
        ur[i] = x[i].util[0];
        ub[i] = x[i].util[1];
        pm[i] = x[i].parts_moved;
        fp[i] = x[i].free_parts;
        feasible += x[i].feasible;
        tl += x[i].time_limited;
        fb += x[i].fallback;
    }
    printf("| %u x %u | %s | %.1f | %.1f | %.1f | %.0f | %.3f | %.3f | %d/%d | %d/%d | %d/%d | "
           "%.0f |\n",
           nn, np, label, median(ms, n), median(cpu, n), median(gib, n), median(pm, n),
           median(ur, n), median(ub, n), feasible, n, tl, n, fb, n, median(fp, n));
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    struct ppb_cfg cfg;
    const char *p;

    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &cfg, argc, argv, "shoal-ppbench",
                   "Partition placement: milp (GLPK) vs its greedy fallback vs hash, re-placing\n"
                   "a hash placement of Zipf-loaded partitions; medians over --runs instances.");
    printf("| nodes x partitions | policy | wall ms | CPU ms | moved GiB | partitions moved | max "
           "util "
           "req | max util bytes | within capacity | time limit hit | fallback | free "
           "partitions |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (p = cfg.sizes; *p != '\0';) {
        unsigned nn, np;
        int used = 0;
        struct sample hs[101], gs[101], ms[101], fs[101];
        int full;

        if (sscanf(p, "%ux%u%n", &nn, &np, &used) != 2 || nn < 1 || np < NTENANTS || nn > 4096 ||
            np > (1u << 20)) {
            fprintf(stderr, "shoal-ppbench: bad size in --sizes: %s\n", p);
            return 2;
        }
        p += used + (p[used] == ',');
        full = np <= (unsigned)cfg.full_max_parts && (uint64_t)np * nn > (uint64_t)cfg.max_binaries;
        for (int r = 0; r < cfg.runs; r++) {
            struct inst s;

            if (inst_make(&s, nn, np, cfg.seed + (uint64_t)r, &cfg) != 0 ||
                measure(&s, "hash", 0, 0, &hs[r]) != 0 ||
                measure(&s, "greedy", 0, 0, &gs[r]) != 0 ||
                measure(&s, "milp", (uint32_t)cfg.max_binaries, (uint32_t)cfg.time_limit_ms,
                        &ms[r]) != 0 ||
                (full &&
                 measure(&s, "milp", UINT32_MAX, (uint32_t)cfg.time_limit_ms, &fs[r]) != 0)) {
                inst_free(&s);
                return 1;
            }
            inst_free(&s);
        }
        report(nn, np, "hash (as placed)", hs, cfg.runs);
        report(nn, np, "greedy", gs, cfg.runs);
        report(nn, np, "milp", ms, cfg.runs);
        if (full) {
            report(nn, np, "milp, full model", fs, cfg.runs);
        }
    }
    return 0;
}
