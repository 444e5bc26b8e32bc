/* Unit tests: fairness figures, status naming and the --series targets (bench_report.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "bench.h"

static void
test_fairness(void)
{
    struct bn_fair f;
    double thr[3] = {100, 200, 300}, w[3] = {1, 2, 3};
    bn_fairness(thr, w, 3, &f);
    CHECK(fabs(f.min_max - 1) < 1e-12 && fabs(f.jain - 1) < 1e-12);

    double thr2[2] = {100, 100}, w2[2] = {1, 2};
    bn_fairness(thr2, w2, 2, &f);
    CHECK(fabs(f.min_max - 0.5) < 1e-12);
    CHECK(fabs(f.jain - 0.9) < 1e-12);

    double thr3[4] = {0, 0, 0, 40}, w3[4] = {1, 1, 1, 1};
    bn_fairness(thr3, w3, 4, &f);
    CHECK(f.min_max == 0 && fabs(f.jain - 0.25) < 1e-12);

    bn_fairness(thr3, w3, 0, &f);
    CHECK(f.min_max == 0 && f.jain == 0);
}

static void
test_status(void)
{
    char b[16];
    CHECK(strcmp(bn_status_name(BN_ERR_CONN, b, sizeof(b)), "conn") == 0);
    CHECK(strcmp(bn_status_name(BN_ERR_TIMEOUT, b, sizeof(b)), "timeout") == 0);
    CHECK(strcmp(bn_status_name(429, b, sizeof(b)), "429") == 0);
    CHECK(bn_status_is_error(BN_ERR_CONN) && bn_status_is_error(404));
    CHECK(!bn_status_is_error(200) && !bn_status_is_error(201));
}

/* Runs bn_report_series over an empty run and returns column `col` of each row. */
static size_t
series_column(const struct bn_run_cfg *cfg, struct bn_result *run, int col, double *out, size_t cap)
{
    char *text = NULL;
    size_t len = 0, n = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    CHECK(bn_report_series(f, cfg, run) == 0);
    fclose(f);
    static const char head[] =
        "second,phase,tenant,ops_per_s,mb_per_s,errors,p50_us,p99_us,target\n";
    CHECK(strncmp(text, head, sizeof(head) - 1) == 0);
    for (char *line = strchr(text, '\n') + 1; *line != '\0' && n < cap; n++) {
        char *p = line;
        for (int i = 0; i < col; i++) {
            p = strchr(p, ',') + 1;
        }
        out[n] = strtod(p, NULL);
        line = strchr(line, '\n') + 1;
    }
    free(text);
    return n;
}

static void
test_series_target(void)
{
    static struct bn_tenant t[2];
    struct bn_sec sec[8];
    struct bn_run_cfg cfg;
    struct bn_result run;
    char err[160];
    double v[16];

    bn_tenant_defaults(&t[0]);
    bn_tenant_defaults(&t[1]);
    const char *a = "name=a,key=k,rate=step:0=10/1.5s=30", *b = "name=b,key=k,conc=4";
    CHECK(bn_tenant_parse(&t[0], a, strlen(a), err, sizeof(err)) == 0);
    CHECK(bn_tenant_parse(&t[1], b, strlen(b), err, sizeof(err)) == 0);
    memset(&cfg, 0, sizeof(cfg));
    cfg.tenants = t;
    cfg.ntenants = 2;
    cfg.warmup_s = 0.5; /* series second s covers run time [s - 0.5, s + 0.5) */
    memset(sec, 0, sizeof(sec));
    memset(&run, 0, sizeof(run));
    run.ntenants = 2;
    run.nsec = 4;
    run.sec = sec;
    run.warmup_secs = 1;
    run.elapsed_s = 2.5;
    /* Rows go second by second, tenants a, b in each. */
    CHECK_EQ_INT(series_column(&cfg, &run, 8, v, 16), 8);
    CHECK_NEAR(v[0], 5, 1e-9); /* half a second of 10/s */
    CHECK_NEAR(v[1], 2, 1e-9); /* conc 4 for half a second */
    CHECK_NEAR(v[2], 10, 1e-9);
    CHECK_NEAR(v[4], 30, 1e-9);
    CHECK_NEAR(v[6], 30, 1e-9);
    CHECK_NEAR(v[3], 4, 1e-9);
    CHECK_NEAR(v[7], 4, 1e-9);

    /* A trace asks for the requests it sends in each second (at speed 2). */
    struct bn_trace tr;
    const char *csv = "t,tenant,op,key,size\n0.2,a,GET,x,\n1.2,a,PUT,x,1\n1.8,b,GET,x,\n"
                      "1.8,a,GET,x,\n5,a,GET,x,\n";
    CHECK(bn_trace_parse(&tr, csv, strlen(csv), t, 2, err, sizeof(err)) == 0);
    cfg.trace = &tr;
    cfg.trace_speed = 2;
    CHECK_EQ_INT(series_column(&cfg, &run, 8, v, 16), 8);
    CHECK(v[0] == 1 && v[1] == 0 && v[2] == 2 && v[3] == 1 && v[4] == 0 && v[6] == 1);
    /* Seconds past the end of the run only show when they saw answers. */
    run.elapsed_s = 1;
    CHECK_EQ_INT(series_column(&cfg, &run, 2, v, 16), 4);
    sec[3 * 2 + 1].ops = 3;
    CHECK_EQ_INT(series_column(&cfg, &run, 3, v, 16), 5);
    CHECK(v[4] == 3);
    bn_trace_fini(&tr);
}

int
main(void)
{
    test_fairness();
    test_status();
    test_series_target();
    return 0;
}
