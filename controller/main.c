/*
 * main.c - shoal-controller: config, token, store, state, HTTP, and the
 * liveness tick.
 *
 * Threads: main (config, then a signal/tick loop), the cm_http pool
 * (all requests). SIGTERM/SIGINT are blocked in every thread and taken
 * by sigtimedwait in main, which then stops HTTP (in-flight requests
 * finish) and closes the store (every write was already synced).
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
#include "ctl_s3keys.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define TICK_MS 100

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
    const char *log_level;
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
    CM_OPT_STR(struct ctl_cfg, log_level, "info", "debug, info, warn or error"),
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
    struct ctl_api *api = NULL;
    struct ctl_state_cfg scfg;
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
    if (cfg.data_dir == NULL || cfg.data_dir[0] == '\0') {
        fprintf(stderr, "shoal-controller: --data-dir is required\n");
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
    acfg.listen = cfg.listen;
    acfg.threads = (unsigned)cfg.http_threads;
    acfg.token = token;
    rc = ctl_api_start(st, &acfg, &api);
    if (rc < 0) {
        goto out;
    }
    CM_INFO("started listen=%s data_dir=%s token_file=%s secrets_key_file=%s version=%s",
            cfg.listen, cfg.data_dir, token_path, key_path, SHOAL_VERSION);

    for (;;) {
        struct timespec ts = {0, TICK_MS * 1000000L};
        int sig = sigtimedwait(&sigs, NULL, &ts);

        if (sig == SIGTERM || sig == SIGINT) {
            CM_INFO("stopping signal=%s", sig == SIGTERM ? "TERM" : "INT");
            break;
        }
        ctl_state_tick(st, cm_now_ns());
    }
    code = 0;
out:
    ctl_api_stop(api);
    ctl_state_destroy(st);
    ctl_store_close(store);
    explicit_bzero(token, sizeof(token));
    if (code == 0) {
        CM_INFO("stopped");
    }
    return code;
}
