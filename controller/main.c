/*
 * main.c - shoal-controller: config, token, store, state, weight
 * allocation, the pools' windows, HTTP, and the tick loop.
 *
 * Threads: main (config, then a signal/tick loop: liveness, the pools'
 * windows, the cost totals saved every SAVE_MS), the WA thread
 * (ctl_wa.h), the placement loop (ctl_pp.h), the cm_http pool (all
 * requests). SIGTERM/SIGINT are blocked in every thread and taken by
 * sigtimedwait in main, which then stops HTTP (in-flight requests finish),
 * then placement and WA, saves the cost totals and closes the store
 * (every other write was already synced).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cm_config.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_token.h"
#include "ctl_api.h"
#include "ctl_cost.h"
#include "ctl_pp.h"
#include "ctl_s3keys.h"
#include "ctl_sms.h"
#include "ctl_state.h"
#include "ctl_store.h"
#include "ctl_wa.h"
#include "pol_wa.h"

#define TICK_MS 100
#define SAVE_MS 10000 /* cost totals and windows go to the store this often */

struct ctl_cfg {
    const char *listen;
    const char *data_dir;
    const char *admin_token_file;
    const char *secrets_key_file;
    int rotate_secrets_key;
    int partitions;
    int ec_k;
    int ec_m;
    int node_timeout_ms;
    int http_threads;
    const char *wa;
    int wa_interval_ms;
    const char *log_level;
    const char *pool;
    int gc_interval;
    int active_intervals;
    int degraded_intervals;
    int compact_age;
    int static_instances;
    const char *prices;
    const char *pp;
    int pp_interval_ms;
    int pp_checks;
    int pp_cooldown_ms;
    int pp_budget_ms;
    double pp_headroom;
    int pp_latency_ms;
};

static const struct cm_opt opts[] = {
    CM_OPT_STR(struct ctl_cfg, listen, "127.0.0.1:9400", "admin/control HTTP address"),
    CM_OPT_STR(struct ctl_cfg, data_dir, NULL, "state directory (LMDB); required"),
    CM_OPT_STR(struct ctl_cfg, admin_token_file, NULL,
               "admin token file, created (mode 0600) if absent; default DATA_DIR/admin.token"),
    CM_OPT_STR(struct ctl_cfg, secrets_key_file, NULL,
               "master key sealing tenants' S3 secrets, created (mode 0600) if absent; refused "
               "if group or others may read it; default secrets.key beside DATA_DIR"),
    CM_OPT_BOOL(struct ctl_cfg, rotate_secrets_key, "false",
                "re-seal every S3 secret under a new master key written to the secrets key "
                "file, then exit; the controller must be stopped"),
    CM_OPT_INT(struct ctl_cfg, partitions, "16", 1, 65536, "partitions per tenant"),
    CM_OPT_INT(struct ctl_cfg, ec_k, "4", 1, CM_EC_MAX_K, "data chunks of new tenants"),
    CM_OPT_INT(struct ctl_cfg, ec_m, "2", 0, CM_EC_MAX_M, "parity chunks of new tenants"),
    CM_OPT_INT(struct ctl_cfg, node_timeout_ms, "3000", 100, 3600000,
               "a node not heard from this long is down"),
    CM_OPT_INT(struct ctl_cfg, http_threads, "2", 1, 64, "HTTP server threads"),
    CM_OPT_STR(struct ctl_cfg, wa, "pisces",
               "weight allocation: pisces (local weights follow demand) or even (every node "
               "gets the global weights)"),
    CM_OPT_INT(struct ctl_cfg, wa_interval_ms, "1000", 100, 60000,
               "weight allocation runs this often on the nodes' reports"),
    CM_OPT_STR(struct ctl_cfg, log_level, "info", "debug, info, warn or error"),
    CM_OPT_STR(struct ctl_cfg, pool, POL_SMS_DEFAULT,
               "elastic memory of the tenants' pools: sms (the sliding window) or static (a "
               "fixed pool per node)"),
    CM_OPT_INT(struct ctl_cfg, gc_interval, "600", 1, 86400,
               "GC interval in seconds: one generation of a pool's window"),
    CM_OPT_INT(struct ctl_cfg, active_intervals, "6", 1, POL_SMS_INTERVALS_MAX,
               "intervals an instance stays active (M)"),
    CM_OPT_INT(struct ctl_cfg, degraded_intervals, "12", 1, POL_SMS_INTERVALS_MAX,
               "intervals it then stays degraded before it is released (N)"),
    CM_OPT_INT(struct ctl_cfg, compact_age, "0", 0, POL_SMS_INTERVALS_MAX,
               "a chunk read from an instance this many intervals old moves to the newest (A); "
               "larger keeps fewer old copies, M + N or more never moves; 0: the smallest A >= "
               "M with (M + N - A) / A <= 1/5, at most M + N - 1"),
    CM_OPT_INT(struct ctl_cfg, static_instances, "0", 0, CTL_SMS_SLOTS,
               "--pool static: instances per tenant pool per node; 0: each node's instance "
               "slots shared evenly by the tenants"),
    CM_OPT_STR(struct ctl_cfg, prices, NULL,
               "price table for tenant cost, 'name = value' lines in USD (docs/operations.md); "
               "default: AWS Lambda and S3 list prices"),
    CM_OPT_STR(struct ctl_cfg, pp, "milp",
               "partition placement policy: milp (re-place when a node cannot serve its fair "
               "share) or hash (never re-place)"),
    CM_OPT_INT(struct ctl_cfg, pp_interval_ms, "5000", 100, 3600000,
               "how often placement checks the nodes' fair-share load"),
    CM_OPT_INT(struct ctl_cfg, pp_checks, "3", 1, 1000,
               "consecutive checks a node must be over the headroom before a re-placement"),
    CM_OPT_INT(struct ctl_cfg, pp_cooldown_ms, "60000", 0, 86400000,
               "quiet time after a re-placement and after its migration finished"),
    CM_OPT_INT(struct ctl_cfg, pp_budget_ms, "2000", 0, 600000,
               "time limit of the placement solver"),
    CM_OPT_DBL(struct ctl_cfg, pp_headroom, "0.9", 0.05, 1.0,
               "share of a node's capacity placement may fill (u)"),
    CM_OPT_INT(struct ctl_cfg, pp_latency_ms, "100", 0, 600000,
               "requests slower than this count as unmet demand (in flight / this; 0: off)"),
};

/* File scope: cm_config's strings live for the process and stay reachable. */
static struct ctl_cfg cfg;

/* One process per data dir: LMDB would let two share it, but each would
 * hold its own copy of the state (and a key rotation must not run under a
 * live controller). The lock lives as long as the process. */
static int
lock_data_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int rc = -errno;

        CM_ERROR("data dir unusable%s dir=%s err=%s",
                 rc == -EWOULDBLOCK ? " (another shoal-controller uses it)" : "", dir,
                 cm_strerror(rc));
        if (fd >= 0) {
            close(fd);
        }
        return rc;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct ctl_store *store = NULL;
    struct ctl_state *st = NULL;
    struct ctl_sms *sms = NULL;
    struct ctl_api *api = NULL;
    struct ctl_pp *pp = NULL;
    struct ctl_wa *wa = NULL;
    struct ctl_state_cfg scfg;
    struct ctl_sms_cfg scfg_sms;
    struct ctl_prices prices;
    char perr[512];
    uint64_t saved_ns;
    int sms_loaded = 0;
    struct ctl_pp_cfg pcfg;
    struct ctl_wa_cfg wcfg;
    struct ctl_api_cfg acfg;
    struct ctl_s3master master;
    enum cm_log_level level;
    char token[512], token_path[4096], key_path[4096];
    sigset_t sigs;
    int rc, code = 1;

    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &cfg, argc, argv, "shoal-controller",
                   "Shoal control plane: tenants, weights, nodes, placement, admin API.");
    if (cm_log_parse_level(cfg.log_level, &level) < 0) {
        fprintf(stderr, "shoal-controller: bad --log-level %s\n", cfg.log_level);
        return 2;
    }
    if (pol_wa_find(cfg.wa) == NULL) {
        fprintf(stderr, "shoal-controller: unknown --wa %s (pisces or even)\n", cfg.wa);
        return 2;
    }
    if (cfg.data_dir == NULL || cfg.data_dir[0] == '\0') {
        fprintf(stderr, "shoal-controller: --data-dir is required\n");
        return 2;
    }
    if (pol_sms_find(cfg.pool) == NULL) {
        fprintf(stderr, "shoal-controller: unknown --pool %s (sms or static)\n", cfg.pool);
        return 2;
    }
    ctl_prices_default(&prices);
    if (cfg.prices != NULL && cfg.prices[0] != '\0' &&
        ctl_prices_load(cfg.prices, &prices, perr, sizeof(perr)) < 0) {
        fprintf(stderr, "shoal-controller: --prices: %s\n", perr);
        return 2;
    }
    if (pol_pp_find(cfg.pp) == NULL) {
        size_t n;
        const struct pol_pp_ops *const *all = pol_pp_list(&n);

        fprintf(stderr, "shoal-controller: --pp: unknown policy '%s' (known:", cfg.pp);
        for (size_t i = 0; i < n; i++) {
            fprintf(stderr, " %s", all[i]->name);
        }
        fprintf(stderr, ")\n");
        return 2;
    }
    cm_log_init("controller", level);

    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    rc = ctl_store_open(cfg.data_dir, &store);
    if (rc < 0 || (rc = lock_data_dir(cfg.data_dir)) < 0) {
        goto out;
    }
    snprintf(token_path, sizeof(token_path), "%s",
             cfg.admin_token_file != NULL ? cfg.admin_token_file : "");
    if (token_path[0] == '\0') {
        snprintf(token_path, sizeof(token_path), "%s/admin.token", cfg.data_dir);
    }
    rc = cm_token_load(token_path, 1, token, sizeof(token));
    if (rc < 0) {
        CM_ERROR("admin token unusable path=%s err=%s", token_path, cm_strerror(rc));
        goto out;
    }
    scfg.partitions = (uint32_t)cfg.partitions;
    scfg.ec_k = cfg.ec_k;
    scfg.ec_m = cfg.ec_m;
    scfg.node_timeout_ns = (uint64_t)cfg.node_timeout_ms * 1000000u;
    if (cfg.secrets_key_file != NULL && cfg.secrets_key_file[0] != '\0') {
        snprintf(key_path, sizeof(key_path), "%s", cfg.secrets_key_file);
    } else {
        ctl_s3_default_key_path(cfg.data_dir, key_path, sizeof(key_path));
    }
    if (cfg.rotate_secrets_key) {
        code = ctl_s3_rotate(store, key_path) < 0 ? 1 : 0;
        goto out;
    }
    rc = ctl_s3_master_load(key_path, &master);
    if (rc < 0) {
        goto out;
    }
    scfg.s3_master = &master;
    rc = ctl_state_create(store, &scfg, &st);
    explicit_bzero(&master, sizeof(master));
    if (rc < 0) {
        char newkey[4200];

        snprintf(newkey, sizeof(newkey), "%s.new", key_path);
        CM_ERROR("state load failed dir=%s secrets_key_file=%s err=%s%s", cfg.data_dir, key_path,
                 cm_strerror(rc),
                 access(newkey, F_OK) == 0
                     ? " (a --rotate-secrets-key was interrupted: run it again to finish it)"
                     : "");
        goto out;
    }
    wcfg.policy = cfg.wa;
    wcfg.interval_ns = (uint64_t)cfg.wa_interval_ms * 1000000u;
    rc = ctl_wa_create(st, &wcfg, &wa);
    if (rc < 0 || (rc = ctl_wa_start(wa)) < 0) {
        CM_ERROR("weight allocation failed to start wa=%s err=%s", cfg.wa, cm_strerror(rc));
        goto out;
    }
    scfg_sms.policy = cfg.pool;
    scfg_sms.interval_ns = (uint64_t)cfg.gc_interval * 1000000000ull;
    scfg_sms.active = (uint32_t)cfg.active_intervals;
    scfg_sms.degraded = (uint32_t)cfg.degraded_intervals;
    scfg_sms.compact_age = (uint32_t)cfg.compact_age;
    scfg_sms.static_instances = (uint32_t)cfg.static_instances;
    scfg_sms.node_timeout_ns = scfg.node_timeout_ns;
    rc = ctl_sms_create(&scfg_sms, &sms);
    if (rc < 0) {
        CM_ERROR("pool setup failed pool=%s err=%s", cfg.pool, cm_strerror(rc));
        goto out;
    }
    rc = ctl_sms_load(sms, store, cm_now_ns(), cm_wall_ms());
    if (rc < 0) {
        CM_ERROR("pool state load failed dir=%s err=%s", cfg.data_dir, cm_strerror(rc));
        goto out;
    }
    sms_loaded = 1;
    memset(&pcfg, 0, sizeof(pcfg));
    pcfg.policy = cfg.pp;
    pcfg.partitions = (uint32_t)cfg.partitions;
    pcfg.headroom = cfg.pp_headroom;
    pcfg.interval_ms = (uint32_t)cfg.pp_interval_ms;
    pcfg.checks = (uint32_t)cfg.pp_checks;
    pcfg.cooldown_ms = (uint32_t)cfg.pp_cooldown_ms;
    pcfg.budget_ms = (uint32_t)cfg.pp_budget_ms;
    pcfg.gw_timeout_ms = 5000;
    pcfg.latency_ms = (uint32_t)cfg.pp_latency_ms;
    pcfg.nominal_ops = 100000;
    pcfg.nominal_bytes = 1073741824.0;
    rc = ctl_pp_create(store, st, &pcfg, &pp);
    if (rc < 0) {
        CM_ERROR("placement load failed err=%s", cm_strerror(rc));
        goto out;
    }
    acfg.listen = cfg.listen;
    acfg.pp = pp;
    acfg.threads = (unsigned)cfg.http_threads;
    acfg.token = token;
    acfg.sms = sms;
    acfg.prices = &prices;
    acfg.wa = wa;
    rc = ctl_api_start(st, &acfg, &api);
    if (rc < 0 || (rc = ctl_pp_start(pp)) < 0) {
        goto out;
    }
    CM_INFO("started listen=%s data_dir=%s token_file=%s secrets_key_file=%s wa=%s pp=%s "
            "pool=%s gc_interval=%d active_intervals=%d degraded_intervals=%d compact_age=%d "
            "prices=%s version=%s",
            cfg.listen, cfg.data_dir, token_path, key_path, cfg.wa, cfg.pp, cfg.pool,
            cfg.gc_interval, cfg.active_intervals, cfg.degraded_intervals, cfg.compact_age,
            cfg.prices != NULL && cfg.prices[0] != '\0' ? cfg.prices : "default", SHOAL_VERSION);

    saved_ns = cm_now_ns();
    for (;;) {
        struct timespec ts = {0, TICK_MS * 1000000L};
        int sig = sigtimedwait(&sigs, NULL, &ts);

        if (sig == SIGTERM || sig == SIGINT) {
            CM_INFO("stopping signal=%s", sig == SIGTERM ? "TERM" : "INT");
            break;
        }
        ctl_state_tick(st, cm_now_ns());
        ctl_sms_run(sms, cm_now_ns());
        if (cm_now_ns() - saved_ns >= SAVE_MS * 1000000ull) {
            saved_ns = cm_now_ns();
            rc = ctl_sms_save(sms, store, saved_ns, cm_wall_ms());
            if (rc < 0) {
                CM_WARN("cost totals not saved err=%s", cm_strerror(rc));
            }
        }
    }
    code = 0;
out:
    ctl_api_stop(api);
    ctl_pp_destroy(pp);
    ctl_wa_destroy(wa);
    if (sms_loaded && (rc = ctl_sms_save(sms, store, cm_now_ns(), cm_wall_ms())) < 0) {
        CM_ERROR("cost totals not saved at exit err=%s", cm_strerror(rc));
        code = 1;
    }
    ctl_sms_destroy(sms);
    ctl_state_destroy(st);
    ctl_store_close(store);
    explicit_bzero(token, sizeof(token));
    if (code == 0) {
        CM_INFO("stopped");
    }
    return code;
}
