/*
 * bench_report.c - statistics merging, fairness figures and the three output
 * forms: the human table (stdout), --json (one object on stdout) and the
 * --series CSV. Runs on the main thread after the load threads are joined.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void
bn_stats_merge(struct bn_stats *dst, const struct bn_stats *src)
{
    dst->ops += src->ops;
    dst->reads += src->reads;
    dst->writes += src->writes;
    dst->deletes += src->deletes;
    dst->bytes += src->bytes;
    dst->errors += src->errors;
    dst->misses += src->misses;
    for (unsigned i = 0; i < BN_STATUS_MAX; i++) {
        dst->status[i] += src->status[i];
    }
    bn_hist_merge(&dst->hist, &src->hist);
}

const char *
bn_status_name(unsigned st, char *buf, size_t cap)
{
    switch (st) {
    case BN_ERR_CONN:
        return "conn";
    case BN_ERR_TIMEOUT:
        return "timeout";
    case BN_ERR_PROTO:
        return "protocol";
    case BN_ERR_BACKLOG:
        return "backlog";
    default:
        snprintf(buf, cap, "%u", st);
        return buf;
    }
}

int
bn_status_is_error(unsigned st)
{
    return st < 200 || st >= 300;
}

void
bn_fairness(const double *thr, const double *weight, size_t n, struct bn_fair *out)
{
    double mn = INFINITY, mx = 0, sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        double x = thr[i] / weight[i];
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        sum += x;
        sq += x * x;
    }
    out->min_max = (n == 0 || mx <= 0) ? 0 : mn / mx;
    out->jain = (n == 0 || sq <= 0) ? 0 : sum * sum / ((double)n * sq);
}

static double
rate(uint64_t v, double secs)
{
    return secs > 0 ? (double)v / secs : 0;
}

static double
us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static void
fairness_of(const struct bn_run_cfg *cfg, const struct bn_result *run, struct bn_fair *f)
{
    size_t n = run->ntenants;
    double *thr = calloc(n ? n : 1, sizeof(*thr));
    double *w = calloc(n ? n : 1, sizeof(*w));
    if (thr == NULL || w == NULL) {
        memset(f, 0, sizeof(*f));
        free(thr);
        free(w);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        thr[i] = rate(run->stats[i].ops, run->elapsed_s);
        w[i] = cfg->tenants[i].weight;
    }
    bn_fairness(thr, w, n, f);
    free(thr);
    free(w);
}

static void
fmt_lat(char *buf, size_t cap, uint64_t ns)
{
    if (ns >= 10000000ull) {
        snprintf(buf, cap, "%.0fms", (double)ns / 1e6);
    } else if (ns >= 1000000ull) {
        snprintf(buf, cap, "%.2fms", (double)ns / 1e6);
    } else {
        snprintf(buf, cap, "%.0fus", (double)ns / 1e3);
    }
}

/* Error statuses, then the trace's misses (404s that are not errors). */
static void
errors_line(FILE *f, const struct bn_stats *s)
{
    char nb[16];
    int first = 1;
    for (unsigned st = 0; st < BN_STATUS_MAX; st++) {
        uint64_t n = s->status[st] - (st == 404 ? s->misses : 0);
        if (n == 0 || !bn_status_is_error(st)) {
            continue;
        }
        fprintf(f, "%s%s=%llu", first ? "" : " ", bn_status_name(st, nb, sizeof(nb)),
                (unsigned long long)n);
        first = 0;
    }
    if (s->misses > 0) {
        fprintf(f, "%smisses=%llu", first ? "" : " ", (unsigned long long)s->misses);
        first = 0;
    }
    if (first) {
        fputs("-", f);
    }
}

void
bn_report_table(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *load,
                const struct bn_result *run)
{
    if (load != NULL) {
        fprintf(f, "load: %.2f s\n", load->elapsed_s);
        for (size_t i = 0; i < load->ntenants; i++) {
            const struct bn_stats *s = &load->stats[i];
            fprintf(f, "  %-16s puts=%llu ops/s=%.0f MB/s=%.1f errors: ", cfg->tenants[i].name,
                    (unsigned long long)s->ops, rate(s->ops, load->elapsed_s),
                    rate(s->bytes, load->elapsed_s) / 1e6);
            errors_line(f, s);
            fputc('\n', f);
        }
    }
    fprintf(f, "run: %.2f s measured, %u threads\n", run->elapsed_s, cfg->threads);
    fprintf(f, "%-16s %6s %10s %9s %9s %9s %9s %9s %9s  %s\n", "tenant", "weight", "ops/s", "MB/s",
            "p50", "p90", "p99", "p99.9", "max", "errors");
    uint64_t tops = 0, tbytes = 0, terr = 0;
    for (size_t i = 0; i < run->ntenants; i++) {
        const struct bn_stats *s = &run->stats[i];
        char p[5][16];
        fmt_lat(p[0], sizeof(p[0]), bn_hist_percentile(&s->hist, 50));
        fmt_lat(p[1], sizeof(p[1]), bn_hist_percentile(&s->hist, 90));
        fmt_lat(p[2], sizeof(p[2]), bn_hist_percentile(&s->hist, 99));
        fmt_lat(p[3], sizeof(p[3]), bn_hist_percentile(&s->hist, 99.9));
        fmt_lat(p[4], sizeof(p[4]), s->hist.max);
        fprintf(f, "%-16s %6g %10.0f %9.2f %9s %9s %9s %9s %9s  ", cfg->tenants[i].name,
                cfg->tenants[i].weight, rate(s->ops, run->elapsed_s),
                rate(s->bytes, run->elapsed_s) / 1e6, p[0], p[1], p[2], p[3], p[4]);
        errors_line(f, s);
        fputc('\n', f);
        tops += s->ops;
        tbytes += s->bytes;
        terr += s->errors;
    }
    fprintf(f, "%-16s %6s %10.0f %9.2f  errors=%llu\n", "total", "", rate(tops, run->elapsed_s),
            rate(tbytes, run->elapsed_s) / 1e6, (unsigned long long)terr);
    if (run->ntenants > 1) {
        struct bn_fair fr;
        fairness_of(cfg, run, &fr);
        fprintf(f, "fairness (ops/s / weight): min/max=%.3f jain=%.3f\n", fr.min_max, fr.jain);
    }
}

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

/* JSON has no inf/nan: print them as 0. */
static void
json_num(FILE *f, double v)
{
    fprintf(f, "%.6g", isfinite(v) ? v : 0.0);
}

static void
json_stats(FILE *f, const struct bn_stats *s, double secs)
{
    char nb[16];
    fprintf(f,
            "\"ops\":%llu,\"reads\":%llu,\"writes\":%llu,\"deletes\":%llu,\"bytes\":%llu,"
            "\"ops_per_s\":",
            (unsigned long long)s->ops, (unsigned long long)s->reads, (unsigned long long)s->writes,
            (unsigned long long)s->deletes, (unsigned long long)s->bytes);
    json_num(f, rate(s->ops, secs));
    fputs(",\"mb_per_s\":", f);
    json_num(f, rate(s->bytes, secs) / 1e6);
    fputs(",\"latency_us\":{", f);
    static const struct {
        const char *name;
        double p;
    } ps[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        fprintf(f, "\"%s\":", ps[i].name);
        json_num(f, us(bn_hist_percentile(&s->hist, ps[i].p)));
        fputc(',', f);
    }
    fputs("\"mean\":", f);
    json_num(f, s->hist.count ? us(s->hist.sum) / (double)s->hist.count : 0);
    fputs(",\"max\":", f);
    json_num(f, us(s->hist.max));
    fprintf(f, "},\"errors\":%llu,\"misses\":%llu,\"status\":{", (unsigned long long)s->errors,
            (unsigned long long)s->misses);
    int first = 1;
    for (unsigned st = 0; st < BN_STATUS_MAX; st++) {
        if (s->status[st] == 0) {
            continue;
        }
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", bn_status_name(st, nb, sizeof(nb)),
                (unsigned long long)s->status[st]);
        first = 0;
    }
    fputc('}', f);
}

void
bn_report_json(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *load,
               const struct bn_result *run)
{
    fprintf(f, "{\"mode\":\"%s\",\"threads\":%u,\"warmup_s\":", cfg->url_mode ? "url" : "tenants",
            cfg->threads);
    json_num(f, cfg->warmup_s);
    fputs(",\"duration_s\":", f);
    json_num(f, cfg->duration_s);
    fputs(",\"elapsed_s\":", f);
    json_num(f, run->elapsed_s);
    if (load != NULL) {
        fputs(",\"load\":{\"elapsed_s\":", f);
        json_num(f, load->elapsed_s);
        fputs(",\"tenants\":[", f);
        for (size_t i = 0; i < load->ntenants; i++) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            json_str(f, cfg->tenants[i].name);
            fputc(',', f);
            json_stats(f, &load->stats[i], load->elapsed_s);
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs(",\"tenants\":[", f);
    struct bn_stats *tot = calloc(1, sizeof(*tot));
    for (size_t i = 0; i < run->ntenants; i++) {
        const struct bn_tenant *t = &cfg->tenants[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, t->name);
        fputs(",\"weight\":", f);
        json_num(f, t->weight);
        if (cfg->trace != NULL) {
            fprintf(f, ",\"loop\":\"trace\",\"conns\":%u", t->conns);
        } else if (t->loop == BN_LOOP_CLOSED) {
            fprintf(f, ",\"loop\":\"closed\",\"conc\":%u", t->conc);
        } else {
            fprintf(f, ",\"loop\":\"open\",\"conns\":%u,\"rate\":", t->conns);
            json_num(f, t->rate);
        }
        if (cfg->trace == NULL && t->sched.kind != BN_SCHED_NONE) {
            fputs(",\"sched\":", f);
            json_str(f, t->sched.text);
        }
        if (!cfg->url_mode && cfg->trace == NULL) {
            fprintf(f, ",\"size_min\":%llu,\"size_max\":%llu,\"read\":",
                    (unsigned long long)t->size_min, (unsigned long long)t->size_max);
            json_num(f, t->read);
            fprintf(f, ",\"keys\":%llu,\"zipf\":", (unsigned long long)t->keys);
            json_num(f, t->zipf);
        }
        fputc(',', f);
        json_stats(f, &run->stats[i], run->elapsed_s);
        fputc('}', f);
        if (tot != NULL) {
            bn_stats_merge(tot, &run->stats[i]);
        }
    }
    fputs("]", f);
    if (tot != NULL) {
        fputs(",\"total\":{", f);
        json_stats(f, tot, run->elapsed_s);
        fputc('}', f);
        free(tot);
    }
    struct bn_fair fr;
    fairness_of(cfg, run, &fr);
    fputs(",\"fairness\":{\"min_max_ratio\":", f);
    json_num(f, fr.min_max);
    fputs(",\"jain\":", f);
    json_num(f, fr.jain);
    fputs("}}\n", f);
}

/*
 * What tenant i was asked to do in series second s, which covers run-phase
 * time [a, a + 1): requests sent by the trace, else the mean scheduled rate
 * or concurrency (the fixed one without a schedule). Time before the run
 * phase asks for nothing.
 */
static double
target_of(const struct bn_run_cfg *cfg, const uint64_t *trace_counts, size_t nsec, size_t i,
          size_t s, double a)
{
    const struct bn_tenant *t = &cfg->tenants[i];
    double lo = a > 0 ? a : 0, b = a + 1;

    if (trace_counts != NULL) {
        return (double)trace_counts[i * nsec + s];
    }
    if (b <= lo) {
        return 0;
    }
    if (t->sched.kind != BN_SCHED_NONE) {
        return bn_sched_mean(&t->sched, lo, b) * (b - lo);
    }
    return (t->loop == BN_LOOP_OPEN ? t->rate : (double)t->conc) * (b - lo);
}

int
bn_report_series(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *run)
{
    /* Series second s starts at run-phase time s - off. */
    double off = (double)run->warmup_secs - cfg->warmup_s;
    struct bn_hist *h = malloc(sizeof(*h));
    uint64_t *counts = NULL;
    if (h == NULL) {
        return -1;
    }
    if (cfg->trace != NULL) {
        counts = calloc(run->ntenants * run->nsec + 1, sizeof(*counts));
        if (counts == NULL) {
            free(h);
            return -1;
        }
        for (size_t k = 0; k < cfg->trace->n; k++) {
            const struct bn_trace_ent *e = &cfg->trace->ent[k];
            double x = e->t / cfg->trace_speed + off;
            if (x < (double)run->nsec) {
                counts[e->tenant * run->nsec + (size_t)x]++;
            }
        }
    }
    fputs("second,phase,tenant,ops_per_s,mb_per_s,errors,p50_us,p99_us,target\n", f);
    for (size_t s = 0; s < run->nsec; s++) {
        for (size_t i = 0; i < run->ntenants; i++) {
            const struct bn_sec *x = &run->sec[i * run->nsec + s];
            bn_hist_reset(h);
            for (uint32_t b = 0; b < x->nb; b++) {
                h->b[x->idx[b]] += x->cnt[b];
                h->count += x->cnt[b];
            }
            /* Per-second max is unknown: let percentiles use bucket midpoints. */
            h->max = UINT64_MAX;
            /* Seconds after the end (a trace done early, Ctrl-C) only when they saw answers. */
            if (x->ops == 0 && x->errors == 0 &&
                (double)s >= run->warmup_secs + ceil(run->elapsed_s)) {
                continue;
            }
            fprintf(f, "%zu,%s,%s,%llu,%.3f,%llu,%.1f,%.1f,%.6g\n", s,
                    s < run->warmup_secs ? "warmup" : "run", cfg->tenants[i].name,
                    (unsigned long long)x->ops, (double)x->bytes / 1e6,
                    (unsigned long long)x->errors, us(bn_hist_percentile(h, 50)),
                    us(bn_hist_percentile(h, 99)),
                    target_of(cfg, counts, run->nsec, i, s, (double)s - off));
        }
    }
    free(counts);
    free(h);
    return ferror(f) ? -1 : 0;
}
