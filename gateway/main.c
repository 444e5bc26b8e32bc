/*
 * main.c - shoal-gateway: flags, start-up and orderly shutdown.
 *
 * Start:    meta (LMDB) -> front (committer) -> engine -> state (cached
 *           controller state, then polling) -> track pending layouts ->
 *           HTTP.
 * Shutdown (SIGTERM/SIGINT, waited for with sigwait on the main thread):
 *           stop HTTP (in-flight requests finish) -> stop polling ->
 *           flush commits -> destroy the engine -> stop the committer ->
 *           close LMDB.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"
#include "cm_http.h"
#include "cm_log.h"
#include "gw_engine.h"
#include "gw_front.h"
#include "gw_meta.h"
#include "gw_state.h"
#include "pol_rs.h"

struct gw_cfg {
    const char *listen;
    const char *controller;
    const char *admin_token_file;
    const char *data_dir;
    const char *log_level;
    const char *rs;
    uint64_t max_object_size;
    uint64_t small_threshold;
    uint64_t max_chunk;
    uint64_t meta_map_size;
    uint64_t buffer_cache;
    int threads;
    int io_timeout_ms;
    int slow_ms;
    int persist_poll_ms;
    int redrive_after_ms;
    int state_poll_ms;
    int delete_delay_ms;
};

#define T struct gw_cfg
static const struct cm_opt opts[] = {
    CM_OPT_STR(T, listen, "127.0.0.1:9300", "address to serve the tenant API on"),
    CM_OPT_STR(T, controller, "127.0.0.1:9400", "controller address (host:port or URL)"),
    CM_OPT_STR(T, admin_token_file, NULL, "admin token file shared with the controller"),
    CM_OPT_STR(T, data_dir, NULL, "directory for the metadata store (required)"),
    CM_OPT_STR(T, log_level, "info", "debug, info, warn or error"),
    CM_OPT_U64(T, max_object_size, "1GiB", 0, 1ull << 40, "largest object accepted (413 above)"),
    CM_OPT_U64(T, small_threshold, "256KiB", 0, 1ull << 40,
               "objects smaller than this are stored as 1+m whole copies"),
    CM_OPT_U64(T, max_chunk, "1MiB", 4096, 1ull << 30, "largest chunk (stripe = k chunks)"),
    CM_OPT_U64(T, meta_map_size, "4GiB", 1 << 20, 1ull << 40, "LMDB map size of the metadata"),
    CM_OPT_U64(T, buffer_cache, "256MiB", 0, 1ull << 40,
               "freed body and result buffers kept for reuse (0: off)"),
    CM_OPT_INT(T, threads, "4", 1, 256, "HTTP threads"),
    CM_OPT_INT(T, io_timeout_ms, "5000", 1, 600000, "a chunk operation slower than this failed"),
    CM_OPT_INT(T, slow_ms, "200", 0, 600000,
               "a GET holder slower than this: read parity too (0: never, only after an error)"),
    CM_OPT_STR(T, rs, POL_RS_DEFAULT, "replica selection for reads (policy name)"),
    CM_OPT_INT(T, persist_poll_ms, "200", 1, 600000, "how often unpersisted chunks are checked"),
    CM_OPT_INT(T, redrive_after_ms, "3000", 1, 3600000,
               "store an unpersisted chunk again after its holder is gone this long"),
    CM_OPT_INT(T, state_poll_ms, "500", 10, 600000,
               "controller state poll interval (a rotated-away key works at most this long)"),
    CM_OPT_INT(T, delete_delay_ms, "0", 0, 3600000,
               "extra wait before deleting a replaced or deleted version's chunks, after the "
               "GETs that may read them are answered"),
};
#undef T

static void
die(const char *what, int rc)
{
    fprintf(stderr, "shoal-gateway: %s: %s\n", what, cm_strerror(rc));
    exit(1);
}

int
main(int argc, char **argv)
{
    struct gw_cfg cfg;
    struct gw_meta *meta = NULL;
    struct gw_front *front = NULL;
    struct gw_engine *engine = NULL;
    struct gw_state *state = NULL;
    struct cm_http_server *http = NULL;
    enum cm_log_level level;
    char metadir[PATH_MAX];
    sigset_t sigs;
    int rc, sig = 0;

    memset(&cfg, 0, sizeof(cfg));
    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &cfg, argc, argv, "shoal-gateway",
                   "the Shoal tenant-facing HTTP gateway");
    if (cfg.data_dir == NULL || cfg.data_dir[0] == '\0') {
        fprintf(stderr, "shoal-gateway: --data-dir is required\n");
        return 2;
    }
    if (cm_log_parse_level(cfg.log_level, &level) != 0) {
        fprintf(stderr, "shoal-gateway: bad --log-level '%s'\n", cfg.log_level);
        return 2;
    }
    const struct pol_rs_ops *rs = pol_rs_find(cfg.rs);
    if (rs == NULL) {
        size_t n;
        const struct pol_rs_ops *const *all = pol_rs_list(&n);
        fprintf(stderr, "shoal-gateway: --rs: unknown policy '%s' (known:", cfg.rs);
        for (size_t i = 0; i < n; i++) {
            fprintf(stderr, " %s", all[i]->name);
        }
        fprintf(stderr, ")\n");
        return 2;
    }
    cm_log_init("gateway", level);
    if ((size_t)snprintf(metadir, sizeof(metadir), "%s/meta", cfg.data_dir) >= sizeof(metadir)) {
        fprintf(stderr, "shoal-gateway: --data-dir too long\n");
        return 2;
    }

    /* Every thread inherits the blocked set; main takes the signals. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    cm_malloc_tune_reuse();
    cm_big_cache_set((size_t)cfg.buffer_cache);

    rc = gw_meta_open(metadir, (size_t)cfg.meta_map_size, &meta);
    if (rc != 0) {
        die("cannot open the metadata store", rc);
    }
    struct gw_front_cfg fcfg = {
        .max_object_size = cfg.max_object_size,
        .small_threshold = cfg.small_threshold,
        .delete_delay_ms = cfg.delete_delay_ms,
    };
    rc = gw_front_create(&fcfg, meta, &front);
    if (rc != 0) {
        die("cannot start the committer", rc);
    }
    struct gw_engine_cfg ecfg = {
        .max_chunk = (uint32_t)cfg.max_chunk,
        .io_timeout_ms = cfg.io_timeout_ms,
        .slow_ms = cfg.slow_ms,
        .persist_poll_ms = cfg.persist_poll_ms,
        .redrive_after_ms = cfg.redrive_after_ms,
        .rs = rs,
    };
    rc = gw_engine_create(&ecfg, gw_front_on_layout, front, &engine);
    if (rc != 0) {
        die("cannot start the engine", rc);
    }
    struct gw_state_cfg scfg = {
        .controller = cfg.controller,
        .token_file = cfg.admin_token_file,
        .poll_ms = cfg.state_poll_ms,
        .timeout_ms = cfg.state_poll_ms < 2000 ? 2000 : cfg.state_poll_ms,
    };
    rc = gw_state_create(&scfg, meta, engine, &state);
    if (rc != 0) {
        die("cannot load the cluster state", rc);
    }
    gw_front_attach(front, engine, state);
    rc = gw_state_start(state);
    if (rc != 0) {
        die("cannot start the state poller", rc);
    }
    struct cm_http_cfg hcfg = {
        .addr = cfg.listen,
        .threads = (unsigned)cfg.threads,
        .max_body = cfg.max_object_size,
    };
    rc = cm_http_start(&hcfg, &gw_front_handlers, front, &http);
    if (rc != 0) {
        die("cannot listen", rc);
    }
    CM_INFO("listening addr=%s controller=%s data_dir=%s rs=%s", cfg.listen, cfg.controller,
            cfg.data_dir, rs->name);

    while (sigwait(&sigs, &sig) != 0) {
    }
    CM_INFO("shutting down signal=%d", sig);
    /* In-flight requests, uploads included, finish before anything stops. */
    cm_http_stop(http, 2 * cfg.io_timeout_ms + 1000);
    gw_front_drain(front, 2 * cfg.io_timeout_ms + 1000);
    gw_state_stop(state);
    gw_front_quiesce(front);
    gw_engine_destroy(engine);
    gw_front_destroy(front);
    gw_state_destroy(state);
    gw_meta_close(meta);
    CM_INFO("stopped");
    return 0;
}
