/*
 * bench_main.c - shoal-bench's command line, config file and phase order:
 * parse flags (and read a --trace) -> (--load) PUT every key -> warmup +
 * duration -> report.
 *
 * One option table drives the flags, the --config file and --help. It is
 * our own rather than cm_config's because --tenant repeats.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cm_config.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "0"
#endif

#define PROG "shoal-bench"

volatile sig_atomic_t bn_interrupted;

struct cfg {
    const char *gateway;
    const char *tenants_file;
    const char *workload;
    int load;
    double warmup;
    double duration;
    unsigned threads;
    const char *series;
    int json;
    const char *url;
    unsigned conc;
    double rate;
    unsigned conns;
    double timeout;
    const char *prefix;
    uint64_t seed;
    const char *log_level;
    const char *trace;
    double trace_speed;

    uint64_t given; /* bit i: opts[i] came from the command line or a config file */
    struct bn_tenant tenants[BN_MAX_TENANTS];
    size_t ntenants;
};

enum otype { O_STR, O_UINT, O_DBL, O_BOOL, O_TENANT, O_CONFIG, O_HELP, O_VERSION };

struct opt {
    const char *name;
    enum otype type;
    size_t off;
    double lo, hi;
    const char *def;
    const char *help;
};

#define OFF(f) offsetof(struct cfg, f)

static const struct opt opts[] = {
    {"tenant", O_TENANT, 0, 0, 0, NULL,
     "tenant spec (repeatable): name=N,key=K[,weight=W][,conc=C|rate=R][,conns=N]"
     "[,size=S|S-S][,read=F][,keys=K][,zipf=T]; C and R may be schedules"},
    {"tenants-file", O_STR, OFF(tenants_file), 0, 0, NULL,
     "file with one tenant spec per line ('#' comments)"},
    {"gateway", O_STR, OFF(gateway), 0, 0, "http://127.0.0.1:9300",
     "gateway URL(s), comma-separated; connections are spread round-robin"},
    {"workload", O_STR, OFF(workload), 0, 0, NULL,
     "YCSB preset for tenants without read=: a (50% read), b (95%), c (100%)"},
    {"load", O_BOOL, OFF(load), 0, 1, "false", "PUT every key of every tenant before the run"},
    {"warmup", O_DBL, OFF(warmup), 0, 86400, "2", "seconds of load before measuring"},
    {"duration", O_DBL, OFF(duration), 0.1, 86400, "10", "seconds measured"},
    {"threads", O_UINT, OFF(threads), 1, 64, NULL,
     "event-loop threads (default: online cores); connections are split among them"},
    {"series", O_STR, OFF(series), 0, 0, NULL,
     "write a per-second, per-tenant CSV time series to FILE"},
    {"json", O_BOOL, OFF(json), 0, 1, "false", "print the results as one JSON object"},
    {"url", O_STR, OFF(url), 0, 0, NULL,
     "generic mode: plain GETs of http://HOST:PORT/PATH, no auth, no tenants"},
    {"conc", O_UINT, OFF(conc), 1, 100000, "64", "--url: connections, one request each"},
    {"rate", O_DBL, OFF(rate), 0, 1e8, "0",
     "--url: open loop at this many requests/s (Poisson) instead of closed loop"},
    {"conns", O_UINT, OFF(conns), 1, 100000, "64", "--url --rate: connection pool size"},
    {"timeout", O_DBL, OFF(timeout), 0.001, 3600, "30",
     "seconds before a request counts as a timeout error"},
    {"prefix", O_STR, OFF(prefix), 0, 0, "bench/", "object key prefix (keys are PREFIX<n>)"},
    {"seed", O_UINT, OFF(seed), 0, 1.8e19, "1", "random seed (keys, sizes, arrivals)"},
    {"trace", O_STR, OFF(trace), 0, 0, NULL,
     "replay a CSV trace 't,tenant,op,key,size' instead of the tenants' loops"},
    {"trace-speed", O_DBL, OFF(trace_speed), 0.001, 1e6, "1",
     "--trace: replay this many times faster than the trace's clock"},
    {"log-level", O_STR, OFF(log_level), 0, 0, "info", "debug | info | warn | error"},
    {"config", O_CONFIG, 0, 0, 0, NULL, "read options from FILE (lines 'name = value')"},
    {"help", O_HELP, 0, 0, 0, NULL, "print this help and exit"},
    {"version", O_VERSION, 0, 0, 0, NULL, "print the version and exit"},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(NOPTS <= 64, "struct cfg's given has one bit per option");

static int log_min = 1; /* 0 debug, 1 info, 2 warn, 3 error */

static void blog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
blog(int level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < log_min) {
        return;
    }
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s bench ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line)) {
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        n = m < 0 ? n : (n + m >= (int)sizeof(line) - 1 ? (int)sizeof(line) - 2 : n + m);
    }
    va_end(ap);
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* Nowhere left to report it. */
    }
}

static void usage_exit(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
usage_exit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void
print_help(void)
{
    printf("usage: %s [--tenant SPEC]... [options]\n"
           "       %s --url http://HOST:PORT/PATH [--conc N | --rate R] [options]\n\n"
           "Multi-tenant load generator for the Shoal gateway (PUT/GET /v1/objects/{key}\n"
           "with 'Authorization: Bearer KEY'). Each tenant runs a closed loop (conc=C\n"
           "requests outstanding) or an open loop (rate=R requests/s, Poisson arrivals,\n"
           "latency counted from the intended send time). Prints per-tenant ops/s, MB/s,\n"
           "p50/p90/p99/p99.9 latency, errors by status, and fairness over tenants.\n\n"
           "options:\n",
           PROG, PROG);
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];
        const char *arg = o->type == O_BOOL || o->type == O_HELP || o->type == O_VERSION
                              ? ""
                              : (o->type == O_TENANT ? " SPEC" : " V");
        char flag[40];
        snprintf(flag, sizeof(flag), "--%s%s", o->name, arg);
        printf("  %-22s %s", flag, o->help);
        if (o->def != NULL) {
            printf(" [%s]", o->def);
        }
        putchar('\n');
    }
    printf("\ntenant spec fields:\n"
           "  name=N      tenant name [a-z0-9][a-z0-9-]{0,62} (required)\n"
           "  key=K       bearer key, visible ASCII without ',' (required)\n"
           "  weight=W    expected share, for the fairness figures [1]\n"
           "  conc=C      closed loop with C outstanding requests [%d]\n"
           "  rate=R      open loop at R requests/s (exclusive with conc)\n"
           "  conns=N     open loop connection pool [%d]\n"
           "  size=S      PUT size, fixed (1KiB) or uniform range (1KiB-64KiB) [1KiB]\n"
           "  read=F      fraction of GETs, 0..1 [--workload, else 0.5]\n"
           "  keys=K      number of keys [%d]\n"
           "  zipf=T      Zipfian theta over the keys, 0 = uniform [%.2f]\n\n"
           "schedules (as C or R; time from the start of warmup; ms, s, m, h):\n"
           "  step:0s=100/20s=400/40s=100             V from time T on\n"
           "  ramp:0s=100/60s=1000                    linear between the points\n"
           "  burst:base=100/peak=1000/every=10s/for=2s[/at=5s]\n"
           "  sine:min=100/max=1000/period=60s[/phase=0.5]   starts at min (phase 0)\n\n"
           "--trace FILE: CSV with header t,tenant,op,key,size (t seconds from the start,\n"
           "  op GET|PUT|DELETE, size bytes for PUT); each tenant needs a --tenant spec\n"
           "  (name, key, weight, conns). Sent at their times on the tenant's conns;\n"
           "  a 404 of a GET/DELETE is a miss, not an error. Ends when all are answered.\n\n"
           "examples:\n"
           "  %s --tenant name=a,key=$KA,conc=32 --tenant name=b,key=$KB,weight=2,conc=32 \\\n"
           "      --workload b --load --duration 30 --series ts.csv\n"
           "  %s --tenant name=a,key=$KA,rate=5000,size=4KiB-64KiB --json\n"
           "  %s --tenant name=a,key=$KA,rate=burst:base=100/peak=1000/every=10s/for=2s \\\n"
           "      --duration 60 --series ts.csv\n"
           "  %s --tenant name=a,key=$KA --trace day.csv --trace-speed 2 --json\n"
           "  %s --url http://127.0.0.1:8080/1k --conc 100 --threads 2 --duration 10\n",
           BN_DEFAULT_CONC, BN_DEFAULT_CONNS, BN_DEFAULT_KEYS, BN_DEFAULT_ZIPF, PROG, PROG, PROG,
           PROG, PROG);
}

static void load_config_file(struct cfg *c, const char *path);

static void
add_tenant(struct cfg *c, const char *spec, size_t len, const char *where)
{
    char err[160];
    if (c->ntenants == BN_MAX_TENANTS) {
        usage_exit("too many tenants (max %d)", BN_MAX_TENANTS);
    }
    struct bn_tenant *t = &c->tenants[c->ntenants];
    bn_tenant_defaults(t);
    if (bn_tenant_parse(t, spec, len, err, sizeof(err)) != 0) {
        usage_exit("%s: %s", where, err);
    }
    for (size_t i = 0; i < c->ntenants; i++) {
        if (strcmp(c->tenants[i].name, t->name) == 0) {
            usage_exit("%s: duplicate tenant '%s'", where, t->name);
        }
    }
    c->ntenants++;
}

static void
set_opt(struct cfg *c, const struct opt *o, const char *v, const char *where)
{
    char *p = (char *)c + o->off;
    uint64_t u;
    double d;

    if (strcmp(where, "default") != 0) {
        c->given |= 1ull << (o - opts);
    }
    switch (o->type) {
    case O_STR:
        /* Every string option is owned: later values replace earlier ones. */
        free(*(char **)p);
        *(const char **)p = strdup(v);
        if (*(const char **)p == NULL) {
            usage_exit("out of memory");
        }
        break;
    case O_UINT:
        if (bn_parse_u64(v, strlen(v), &u) != 0 || (double)u < o->lo || (double)u > o->hi) {
            usage_exit("%s: bad value '%s' for --%s (%g..%g)", where, v, o->name, o->lo, o->hi);
        }
        if (o->off == OFF(seed)) {
            *(uint64_t *)p = u;
        } else {
            *(unsigned *)p = (unsigned)u;
        }
        break;
    case O_DBL:
        if (bn_parse_double(v, strlen(v), &d) != 0 || d < o->lo || d > o->hi) {
            usage_exit("%s: bad value '%s' for --%s (%g..%g)", where, v, o->name, o->lo, o->hi);
        }
        *(double *)p = d;
        break;
    case O_BOOL:
        if (strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "1") == 0) {
            *(int *)p = 1;
        } else if (strcmp(v, "false") == 0 || strcmp(v, "no") == 0 || strcmp(v, "0") == 0) {
            *(int *)p = 0;
        } else {
            usage_exit("%s: bad boolean '%s' for --%s", where, v, o->name);
        }
        break;
    case O_TENANT:
        add_tenant(c, v, strlen(v), where);
        break;
    case O_CONFIG:
        load_config_file(c, v);
        break;
    case O_HELP:
    case O_VERSION:
        break;
    }
}

static const struct opt *
find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const char *n = opts[i].name;
        if (strlen(n) != len) {
            continue;
        }
        size_t j = 0;
        while (j < len && (name[j] == n[j] || (name[j] == '_' && n[j] == '-'))) {
            j++;
        }
        if (j == len) {
            return &opts[i];
        }
    }
    return NULL;
}

static char *
trim(char *s)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) {
        s[--n] = '\0';
    }
    return s;
}

static int
config_setting(void *arg, const char *name, const char *value, const char *where)
{
    const struct opt *o;

    if (name == NULL) {
        usage_exit("%s: want 'name = value'", where);
    }
    o = find_opt(name, strlen(name));
    if (o == NULL || o->type == O_HELP || o->type == O_VERSION || o->type == O_CONFIG) {
        usage_exit("%s: unknown option '%s'", where, name);
    }
    set_opt(arg, o, value, where);
    return 0;
}

static void
load_config_file(struct cfg *c, const char *path)
{
    int rc = cm_config_read_file(path, config_setting, c);

    if (rc != 0) {
        usage_exit("cannot open config %s: %s", path, strerror(-rc));
    }
}

static void
load_tenants_file(struct cfg *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        usage_exit("cannot open tenants file %s: %s", path, strerror(errno));
    }
    char line[4096], where[512];
    unsigned lineno = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        char *s = trim(line);
        if (*s == '\0' || *s == '#') {
            continue;
        }
        add_tenant(c, s, strlen(s), where);
    }
    fclose(f);
}

static void
parse_args(struct cfg *c, int argc, char **argv)
{
    for (size_t i = 0; i < NOPTS; i++) {
        if (opts[i].def != NULL && opts[i].type != O_TENANT) {
            set_opt(c, &opts[i], opts[i].def, "default");
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = ncpu < 1 ? 1u : (ncpu > 64 ? 64u : (unsigned)ncpu);

    /* --config first, so flags override the file wherever they appear. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            load_config_file(c, argv[i + 1]);
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            load_config_file(c, argv[i] + 9);
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            usage_exit("unexpected argument '%s'", a);
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *o = find_opt(name, nl);
        if (o == NULL) {
            usage_exit("unknown flag '--%.*s'", (int)nl, name);
        }
        if (o->type == O_HELP) {
            print_help();
            exit(0);
        }
        if (o->type == O_VERSION) {
            printf("%s %s\n", PROG, SHOAL_VERSION);
            exit(0);
        }
        const char *v;
        if (eq != NULL) {
            v = eq + 1;
        } else if (o->type == O_BOOL) {
            v = "true";
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            usage_exit("--%s needs a value", o->name);
        }
        if (o->type == O_CONFIG) {
            continue;
        }
        set_opt(c, o, v, "command line");
    }
}

static size_t
parse_targets(const char *list, struct bn_target *out, size_t cap)
{
    size_t n = 0;
    char *dup = strdup(list);
    char *save = NULL;
    if (dup == NULL) {
        usage_exit("out of memory");
    }
    for (char *tok = strtok_r(dup, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char path[8];
        if (n == cap) {
            usage_exit("too many gateways (max %zu)", cap);
        }
        if (bn_parse_url(tok, out[n].host, sizeof(out[n].host), &out[n].port, path, sizeof(path)) !=
                0 ||
            strcmp(path, "/") != 0) {
            usage_exit("bad gateway URL '%s' (want http://IP:PORT)", tok);
        }
        n++;
    }
    free(dup);
    if (n == 0) {
        usage_exit("no gateway given");
    }
    return n;
}

static void
cfg_fini(struct cfg *c)
{
    for (size_t i = 0; i < NOPTS; i++) {
        if (opts[i].type == O_STR) {
            char **p = (char **)((char *)c + opts[i].off);
            free(*p);
            *p = NULL;
        }
    }
}

/* Reads and parses --trace over the tenants; sets trace-mode defaults. */
static void
load_trace(struct cfg *c, struct bn_trace *tr)
{
    char err[200];
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    FILE *f = fopen(c->trace, "r");

    if (f == NULL || buf == NULL) {
        usage_exit("cannot read trace %s: %s", c->trace, strerror(errno));
    }
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (nb == NULL) {
                usage_exit("cannot read trace %s: out of memory", c->trace);
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (ferror(f)) {
        usage_exit("cannot read trace %s: %s", c->trace, strerror(errno));
    }
    fclose(f);
    if (c->load) {
        usage_exit("--trace is exclusive with --load");
    }
    for (size_t i = 0; i < c->ntenants; i++) {
        if (c->tenants[i].set & BN_SET_LOOP) {
            usage_exit(
                "--trace: tenant '%s': conc= and rate= do not apply, the trace sets the load",
                c->tenants[i].name);
        }
    }
    if (bn_trace_parse(tr, buf, len, c->tenants, c->ntenants, err, sizeof(err)) != 0) {
        usage_exit("trace %s: %s", c->trace, err);
    }
    free(buf);
    /* Replay from the trace's t = 0 on, and until every request is answered. */
    if (!(c->given & (1ull << (find_opt("warmup", 6) - opts)))) {
        c->warmup = 0;
    }
    if (!(c->given & (1ull << (find_opt("duration", 8) - opts)))) {
        double span = tr->n ? tr->ent[tr->n - 1].t / c->trace_speed : 0;
        c->duration = (span > c->warmup ? span - c->warmup : 0) + c->timeout;
    }
    blog(1, "trace file=%s requests=%zu speed=%g", c->trace, tr->n, c->trace_speed);
}

static void
on_signal(int sig)
{
    bn_interrupted = 1;
}

int
main(int argc, char **argv)
{
    static struct cfg c;
    static struct bn_target targets[64];
    static char url_path[2048];
    struct bn_trace trace = {0};
    struct bn_run_cfg rc;
    struct bn_runner *runner = NULL;
    struct bn_result load, run;
    int have_load = 0, have_run = 0, status = 1;

    parse_args(&c, argc, argv);
    if (strcmp(c.log_level, "debug") == 0) {
        log_min = 0;
    } else if (strcmp(c.log_level, "info") == 0) {
        log_min = 1;
    } else if (strcmp(c.log_level, "warn") == 0) {
        log_min = 2;
    } else if (strcmp(c.log_level, "error") == 0) {
        log_min = 3;
    } else {
        usage_exit("bad --log-level '%s'", c.log_level);
    }
    if (c.tenants_file != NULL) {
        load_tenants_file(&c, c.tenants_file);
    }
    double wread = 0;
    if (c.workload != NULL && bn_workload_read(c.workload, &wread) != 0) {
        usage_exit("bad --workload '%s' (want a, b or c)", c.workload);
    }
    for (const char *p = c.prefix; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/')) {
            usage_exit("bad --prefix: only [A-Za-z0-9-_.~/] allowed");
        }
    }
    if (strlen(c.prefix) > 200) {
        usage_exit("--prefix too long");
    }

    memset(&rc, 0, sizeof(rc));
    if (c.url != NULL) {
        if (c.ntenants > 0 || c.load || c.trace != NULL) {
            usage_exit("--url is exclusive with --tenant, --tenants-file, --load and --trace");
        }
        if (bn_parse_url(c.url, targets[0].host, sizeof(targets[0].host), &targets[0].port,
                         url_path, sizeof(url_path)) != 0) {
            usage_exit("bad --url '%s' (want http://IP:PORT/PATH)", c.url);
        }
        struct bn_tenant *t = &c.tenants[0];
        bn_tenant_defaults(t);
        snprintf(t->name, sizeof(t->name), "url");
        t->conc = c.conc;
        t->conns = c.conns;
        if (c.rate > 0) {
            t->loop = BN_LOOP_OPEN;
            t->rate = c.rate;
        }
        t->read = 1;
        t->keys = 1;
        t->zipf = 0;
        t->size_min = t->size_max = 0;
        c.ntenants = 1;
        rc.url_mode = 1;
        rc.url_path = url_path;
        rc.ntargets = 1;
    } else {
        if (c.ntenants == 0) {
            usage_exit("no tenants: give --tenant SPEC, --tenants-file F or --url URL");
        }
        rc.ntargets = parse_targets(c.gateway, targets, sizeof(targets) / sizeof(targets[0]));
        for (size_t i = 0; i < c.ntenants; i++) {
            if (c.workload != NULL && !(c.tenants[i].set & BN_SET_READ)) {
                c.tenants[i].read = wread;
            }
        }
        if (c.trace != NULL) {
            load_trace(&c, &trace);
            rc.trace = &trace;
            rc.trace_speed = c.trace_speed;
        }
    }
    rc.tenants = c.tenants;
    rc.ntenants = c.ntenants;
    rc.targets = targets;
    rc.prefix = c.prefix;
    rc.threads = c.threads;
    rc.warmup_s = c.warmup;
    rc.duration_s = c.duration;
    rc.timeout_s = c.timeout;
    rc.seed = c.seed;
    rc.series = c.series != NULL;

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int err = bn_runner_create(&rc, &runner);
    if (err != 0) {
        blog(3, "setup failed err=%s", strerror(-err));
        goto out;
    }
    if (c.load) {
        uint64_t keys = 0;
        for (size_t i = 0; i < c.ntenants; i++) {
            keys += c.tenants[i].keys;
        }
        blog(1, "load start tenants=%zu keys=%llu", c.ntenants, (unsigned long long)keys);
        err = bn_runner_phase(runner, BN_PHASE_LOAD, &load);
        have_load = 1;
        if (err != 0) {
            blog(3, "load failed err=%s", strerror(-err));
            goto out;
        }
        blog(1, "load done secs=%.2f", load.elapsed_s);
    }
    if (!bn_interrupted) {
        blog(1, "run start tenants=%zu threads=%u warmup=%g duration=%g", c.ntenants, c.threads,
             c.warmup, c.duration);
        err = bn_runner_phase(runner, BN_PHASE_RUN, &run);
        have_run = 1;
        if (err != 0) {
            blog(3, "run failed err=%s", strerror(-err));
            goto out;
        }
        blog(1, "run done secs=%.2f%s", run.elapsed_s, bn_interrupted ? " interrupted=1" : "");
    }
    if (!have_run) {
        goto out;
    }
    if (c.json) {
        bn_report_json(stdout, &rc, have_load ? &load : NULL, &run);
    } else {
        bn_report_table(stdout, &rc, have_load ? &load : NULL, &run);
    }
    fflush(stdout);
    if (c.series != NULL) {
        FILE *f = fopen(c.series, "w");
        if (f == NULL || bn_report_series(f, &rc, &run) != 0) {
            blog(3, "cannot write series file=%s err=%s", c.series, strerror(errno));
            if (f != NULL) {
                fclose(f);
            }
            goto out;
        }
        if (fclose(f) != 0) {
            blog(3, "cannot write series file=%s err=%s", c.series, strerror(errno));
            goto out;
        }
    }
    status = 0;

out:
    if (have_load) {
        bn_result_fini(&load);
    }
    if (have_run) {
        bn_result_fini(&run);
    }
    bn_runner_destroy(runner);
    bn_trace_fini(&trace);
    cfg_fini(&c);
    return status;
}
