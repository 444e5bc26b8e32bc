/*
 * bench.h - private interfaces of shoal-bench, the multi-tenant load generator.
 *
 *   argv/--config/--tenants-file          bench_main.c   (CLI, orchestration, output)
 *        |  struct bn_tenant[] (bench_spec.c parses each "--tenant" spec,
 *        |  bench_sched.c a rate=/conc= schedule; bench_trace.c a --trace CSV)
 *        v
 *   bn_run_phase() x {load, run}          bench_net.c    (the only libevent user)
 *        |  one pthread per --threads, each with its own event_base and its
 *        |  share of every tenant's connections; closed loop (conc) or open
 *        |  loop (Poisson rate, latency from the intended send time)
 *        v
 *   struct bn_stats per (tenant, thread)  bench_hist.c   (log-linear histogram)
 *        |  merged by the main thread after the threads are joined
 *        v
 *   table / --json / --series CSV         bench_report.c (fairness: MMR, Jain)
 *
 * Pure modules (bench_spec.c, bench_sched.c, bench_trace.c, bench_rand.c,
 * bench_hist.c, bench_report.c) do no I/O besides the report's FILE*, and are
 * unit tested and fuzzed.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- histogram (bench_hist.c) ------------------------------------------ */

/*
 * Log-linear buckets over nanoseconds: values below 2^BN_HIST_SUB_BITS are
 * exact, above that each power of two is split into 2^BN_HIST_SUB_BITS
 * buckets, so a bucket is at most 1/128 (0.8%) of its value wide. Values
 * above 2^BN_HIST_MAX_BITS ns (~137 s) are clamped into the last bucket.
 */
#define BN_HIST_SUB_BITS 7
#define BN_HIST_MAX_BITS 37
#define BN_HIST_BUCKETS ((BN_HIST_MAX_BITS - BN_HIST_SUB_BITS + 1) << BN_HIST_SUB_BITS)

struct bn_hist {
    uint64_t count;
    uint64_t sum; /* ns, for the mean */
    uint64_t max; /* ns, exact */
    uint64_t b[BN_HIST_BUCKETS];
};

void bn_hist_reset(struct bn_hist *h);
void bn_hist_record(struct bn_hist *h, uint64_t ns);
void bn_hist_merge(struct bn_hist *dst, const struct bn_hist *src);
/* Nearest-rank percentile (p in [0,100]); the bucket's midpoint, 0 if empty. */
uint64_t bn_hist_percentile(const struct bn_hist *h, double p);
unsigned bn_hist_index(uint64_t ns);
uint64_t bn_hist_bucket_mid(unsigned idx);

/* ---- random numbers and key choice (bench_rand.c) ---------------------- */

struct bn_rng {
    uint64_t s[4];
};

void bn_rng_seed(struct bn_rng *r, uint64_t seed);
uint64_t bn_rng_next(struct bn_rng *r);
double bn_rng_double(struct bn_rng *r); /* [0, 1) */
/* Exponential gap with mean 1/rate, in ns. */
uint64_t bn_rng_exp_ns(struct bn_rng *r, double rate_per_s);
uint64_t bn_fnv64(uint64_t v);

/*
 * YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record
 * synthetic databases"): rank 0 is the most popular. theta == 0 is uniform.
 * Immutable after init, so one zipf may be shared by every thread.
 */
struct bn_zipf {
    uint64_t n;
    double theta, zetan, zeta2, alpha, eta;
};

/* 1 <= n, 0 <= theta < 1. Computing zeta(n) is O(n). */
int bn_zipf_init(struct bn_zipf *z, uint64_t n, double theta);
uint64_t bn_zipf_rank(const struct bn_zipf *z, struct bn_rng *r);
/* Scrambled like YCSB: fnv64(rank) mod n, so hot keys are spread out. */
uint64_t bn_zipf_key(const struct bn_zipf *z, struct bn_rng *r);

/* ---- load schedules (bench_sched.c) --------------------------------------- */

/*
 * A tenant's rate (open loop) or concurrency (closed loop) over time, t in
 * seconds from the start of the run phase (the start of warmup):
 *   step:T=V/T=V/...   V from time T on (the first T is 0)
 *   ramp:T=V/T=V/...   linear between the points, flat after the last
 *   burst:base=B/peak=P/every=E/for=D[/at=A]   P in [A+kE, A+kE+D), else B
 *   sine:min=L/max=H/period=P[/phase=F]   L + (H-L)(1-cos(2pi(t/P+F)))/2,
 *                                          so it starts at L when F = 0
 * Times take ms, s, m or h (bare numbers are seconds).
 */
#define BN_SCHED_POINTS 64
#define BN_SCHED_TEXT 512
#define BN_SCHED_VMAX 1e8
#define BN_SCHED_TMAX 1e7 /* seconds */

enum bn_sched_kind { BN_SCHED_NONE, BN_SCHED_STEP, BN_SCHED_RAMP, BN_SCHED_BURST, BN_SCHED_SINE };

struct bn_sched {
    enum bn_sched_kind kind;
    unsigned npts;               /* step, ramp */
    double t[BN_SCHED_POINTS];   /* seconds, strictly increasing, t[0] == 0 */
    double v[BN_SCHED_POINTS];   /* >= 0 */
    double lo, hi;               /* burst base/peak, sine min/max */
    double period, width, shift; /* burst every/for/at (s); sine period (s), phase (0..1) */
    char text[BN_SCHED_TEXT];    /* as given, for the reports */
};

/* "KIND:..." as above; s borrowed, no NUL needed. 0 or -EINVAL with a reason in err. */
int bn_sched_parse(struct bn_sched *s, const char *v, size_t len, char *err, size_t cap);
/* The scheduled value at t seconds (t < 0 counts as 0). */
double bn_sched_at(const struct bn_sched *s, double t);
/* Largest value the schedule takes (> 0 after a successful parse). */
double bn_sched_max(const struct bn_sched *s);
/* Mean value over [a, b] (a < b), by sampling; a point value when a == b. */
double bn_sched_mean(const struct bn_sched *s, double a, double b);
/* "500ms", "20s", "2m", "1h", "3.5" (seconds); 0 <= result <= BN_SCHED_TMAX. */
int bn_parse_duration(const char *s, size_t len, double *secs);

/* ---- tenant specs (bench_spec.c) ---------------------------------------- */

#define BN_NAME_MAX 64
#define BN_KEY_MAX 256
#define BN_MAX_TENANTS 256

enum bn_loop { BN_LOOP_CLOSED, BN_LOOP_OPEN };

struct bn_tenant {
    char name[BN_NAME_MAX];
    char key[BN_KEY_MAX];
    double weight; /* > 0; only used by the fairness figures */
    enum bn_loop loop;
    unsigned conc;     /* closed loop: outstanding requests */
    double rate;       /* open loop: requests/s over all threads */
    unsigned conns;    /* open loop: connection pool size */
    uint64_t size_min; /* PUT body bytes, drawn uniformly in [min, max] */
    uint64_t size_max;
    double read;   /* fraction of GETs, [0, 1] */
    uint64_t keys; /* key space size */
    double zipf;   /* theta, [0, 1) */
    unsigned set;  /* BN_SET_* bits: which fields the spec gave */
    /* rate= or conc= given as a schedule; rate/conc then hold its peak */
    struct bn_sched sched;
};

enum {
    BN_SET_READ = 1u << 0,
    BN_SET_ZIPF = 1u << 1,
    BN_SET_LOOP = 1u << 2,
};

#define BN_DEFAULT_CONC 16
#define BN_DEFAULT_CONNS 64
#define BN_DEFAULT_SIZE 1024
#define BN_DEFAULT_KEYS 1000
#define BN_DEFAULT_ZIPF 0.99
#define BN_MAX_SIZE (1ull << 30)

/* Fills defaults (weight 1, conc 16, size 1KiB, read 0.5, keys 1000, zipf 0.99). */
void bn_tenant_defaults(struct bn_tenant *t);
/*
 * Parses "name=N,key=K[,weight=W][,conc=C|rate=R][,conns=N][,size=S[-S]]
 * [,read=F][,keys=K][,zipf=T]" over defaults already in *t; C and R may be
 * schedules (see bn_sched_parse). s is borrowed and need not be
 * NUL-terminated. 0, or -EINVAL with a one-line reason in err (cap bytes,
 * always NUL-terminated when cap > 0).
 */
int bn_tenant_parse(struct bn_tenant *t, const char *s, size_t len, char *err, size_t cap);
/* "1024", "1KiB", "4k", "1MiB"... (K/M/G = 1000s, KiB/MiB/GiB = 1024s). */
int bn_parse_size(const char *s, size_t len, uint64_t *out);
/* Strict decimal/float parsers over (s, len); 0 or -EINVAL. */
int bn_parse_u64(const char *s, size_t len, uint64_t *out);
int bn_parse_double(const char *s, size_t len, double *out);
/* YCSB core workloads: 'a' 0.5, 'b' 0.95, 'c' 1.0 read; -EINVAL otherwise. */
int bn_workload_read(const char *name, double *read);
/* snprintf into err (cap bytes) when cap > 0: the parsers' one-line reasons. */
void bn_seterr(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- trace replay (bench_trace.c) --------------------------------------- */

enum bn_op { BN_OP_GET, BN_OP_PUT, BN_OP_DELETE };

#define BN_TRACE_KEY_MAX 1024 /* bytes of a key as written in the trace */
#define BN_TRACE_MAX_ENTRIES (1u << 28)
#define BN_TRACE_TMAX 1e7 /* seconds */

struct bn_trace_ent {
    double t;        /* seconds from the start of the run phase, non-decreasing */
    uint32_t tenant; /* index into the tenants given to bn_trace_parse */
    uint32_t op;     /* enum bn_op */
    uint64_t size;   /* PUT body bytes; 0 for GET and DELETE */
    uint64_t key;    /* offset of the key in keys[], percent-encoded for a URL path */
    uint32_t klen;
};

struct bn_trace {
    struct bn_trace_ent *ent; /* n, owned */
    size_t n;
    char *keys; /* owned; encoded keys back to back, not NUL-terminated */
    size_t keys_len;
    uint64_t max_put; /* largest PUT size */
};

/*
 * Parses a CSV trace "t,tenant,op,key,size" (that header first; then one
 * request a line; empty lines skipped; t non-decreasing; op GET, PUT or
 * DELETE; key 1..1024 bytes of 0x21..0xff but ',' and '"'; size required for
 * PUT, optional and ignored otherwise). Tenants are looked up by name in
 * tenants[0..n) (borrowed). buf is borrowed and need not be NUL-terminated.
 * On success *tr owns its arrays (bn_trace_fini); on failure it is empty and
 * err says "line N: why".
 */
int bn_trace_parse(struct bn_trace *tr, const char *buf, size_t len,
                   const struct bn_tenant *tenants, size_t ntenants, char *err, size_t cap);
void bn_trace_fini(struct bn_trace *tr);

/*
 * "http://host:port/path" -> host (cap bytes), port, path (pcap bytes,
 * "/" when absent). Only plain http; the host must be an IPv4 literal or
 * "localhost". 0 or -EINVAL.
 */
int bn_parse_url(const char *url, char *host, size_t cap, uint16_t *port, char *path, size_t pcap);

/* ---- statistics -------------------------------------------------------- */

#define BN_STATUS_MAX 600
/* Pseudo statuses for failures without an HTTP status (kept in status[]). */
enum {
    BN_ERR_CONN = 0,    /* connect failed, reset, closed mid-request */
    BN_ERR_TIMEOUT = 1, /* no full response within --timeout */
    BN_ERR_PROTO = 2,   /* unparsable response */
    BN_ERR_BACKLOG = 3, /* open loop: arrival dropped, queue over its bound */
};

/* Per-second sample of one (tenant, thread); latency as sparse buckets. */
struct bn_sec {
    uint64_t ops, errors, bytes;
    uint32_t nb; /* number of (idx, count) pairs */
    uint32_t *idx;
    uint64_t *cnt;
};

struct bn_stats {
    uint64_t ops;                    /* successful (2xx) requests */
    uint64_t reads, writes, deletes; /* successful, by kind */
    uint64_t bytes;                  /* body bytes of successful requests, both ways */
    uint64_t errors;
    uint64_t misses; /* trace replay: 404 of a GET/DELETE, not an error (also in status[404]) */
    uint64_t status[BN_STATUS_MAX]; /* every completed request by status */
    struct bn_hist hist;            /* latency of successful requests */
};

void bn_stats_merge(struct bn_stats *dst, const struct bn_stats *src);
/* Name of a status slot: "404", "conn", "timeout"...; buf for numbers. */
const char *bn_status_name(unsigned st, char *buf, size_t cap);
int bn_status_is_error(unsigned st);

/* ---- the run (bench_net.c) ---------------------------------------------- */

struct bn_target {
    char host[128];
    uint16_t port;
};

enum bn_phase { BN_PHASE_LOAD, BN_PHASE_RUN };

struct bn_run_cfg {
    const struct bn_tenant *tenants; /* borrowed */
    size_t ntenants;
    const struct bn_target *targets; /* borrowed; connections round-robin */
    size_t ntargets;
    int url_mode; /* plain GET of url_path, no auth */
    const char *url_path;
    const char *prefix; /* key prefix, URL-safe */
    unsigned threads;
    double warmup_s, duration_s, timeout_s;
    uint64_t seed;
    int series;                   /* keep per-second samples */
    const struct bn_trace *trace; /* borrowed; replay it instead of the tenants' loops */
    double trace_speed;           /* trace time is divided by this */
};

/* Results of one phase: stats[tenant] merged over threads. */
struct bn_result {
    size_t ntenants;
    struct bn_stats *stats; /* ntenants, owned */
    double elapsed_s;       /* measured interval (run) or load wall time */
    size_t nsec;            /* per-second samples (warmup + duration) */
    struct bn_sec *sec;     /* ntenants * nsec, merged, owned */
    uint32_t warmup_secs;
};

struct bn_runner;

/* Builds threads, event bases and connections. *out is caller-owned. */
int bn_runner_create(const struct bn_run_cfg *cfg, struct bn_runner **out);
void bn_runner_destroy(struct bn_runner *r); /* NULL is a no-op */
/* Runs one phase on all threads and joins them; res is caller's storage. */
int bn_runner_phase(struct bn_runner *r, enum bn_phase phase, struct bn_result *res);
void bn_result_fini(struct bn_result *res);

/* ---- output (bench_report.c) ------------------------------------------- */

struct bn_fair {
    double min_max; /* min(x_i) / max(x_i), x_i = ops/s / weight */
    double jain;    /* (sum x)^2 / (n sum x^2) */
};

void bn_fairness(const double *thr, const double *weight, size_t n, struct bn_fair *out);
void bn_report_table(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *load,
                     const struct bn_result *run);
void bn_report_json(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *load,
                    const struct bn_result *run);
int bn_report_series(FILE *f, const struct bn_run_cfg *cfg, const struct bn_result *run);

#endif
