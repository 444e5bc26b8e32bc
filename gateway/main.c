/*
 * main.c - shoal-gateway: flags, start-up and orderly shutdown.
 *
 * Start:    meta (LMDB) -> with --rebuild-meta: the store rebuilt from the
 *           nodes' insertion logs in --cos (gw_rebuild.c) -> front
 *           (committer) -> engine -> state (cached controller state, then
 *           polling) -> track pending layouts and tombstones -> migration
 *           and demand reports -> S3 front door -> HTTP (tenant API, then
 *           S3).
 * Shutdown (SIGTERM/SIGINT, waited for with sigwait on the main thread):
 *           stop both HTTP listeners (in-flight requests finish) -> drain
 *           -> stop the S3 front door's copy worker -> stop polling and
 *           demand reports -> stop migrating -> flush commits -> destroy
 *           the engine -> stop the committer -> close LMDB.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_http.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_token.h"
#include "gw_demand.h"
#include "gw_engine.h"
#include "gw_front.h"
#include "gw_handover.h"
#include "gw_meta.h"
#include "gw_migrate.h"
#include "gw_rebuild.h"
#include "gw_s3.h"
#include "gw_scrub.h"
#include "gw_state.h"
#include "pol_rs.h"

struct gw_cfg {
    const char *listen;
    const char *gateway_id;
    const char *advertise_url;
    const char *advertise_s3_url;
    const char *s3_listen;
    const char *s3_domain;
    const char *s3_region;
    int s3_upload_expiry_ms;
    const char *controller;
    const char *admin_token_file;
    const char *data_dir;
    const char *log_level;
    const char *rs;
    const char *cos;
    uint64_t max_object_size;
    uint64_t small_threshold;
    uint64_t max_chunk;
    uint64_t meta_map_size;
    uint64_t buffer_cache;
    uint64_t migrate_rate;
    uint64_t inflight_bytes;
    uint64_t admit_min_bytes;
    int admit_wait_ms;
    int threads;
    int io_timeout_ms;
    int slow_ms;
    int hedge_budget;
    int persist_poll_ms;
    int redrive_after_ms;
    int state_poll_ms;
    int delete_delay_ms;
    int scrub_interval_ms;
    int rebuild_meta;
    int rebuild_threads;
    int force;
};

#define T struct gw_cfg
static const struct cm_opt opts[] = {
    CM_OPT_STR(T, listen, "127.0.0.1:9300", "address to serve the tenant API on"),
    CM_OPT_STR(T, s3_listen, "127.0.0.1:9310", "address to serve the S3 API on (empty: none)"),
    CM_OPT_STR(T, gateway_id, NULL,
               "this gateway's id: the controller gives it tenants to own, by this id (default: "
               "the one kept in --data-dir since its first start, else --listen)"),
    CM_OPT_STR(T, advertise_url, NULL,
               "the URL other gateways send this gateway's tenants' requests to (default: "
               "http://<--listen>)"),
    CM_OPT_STR(T, advertise_s3_url, NULL,
               "the URL other gateways send S3 requests for this gateway's tenants to (default: "
               "http://<--s3-listen>)"),
    CM_OPT_STR(T, s3_domain, "s3.localhost",
               "virtual-hosted S3 buckets: a Host of BUCKET.<this> names the bucket (empty: "
               "path-style only)"),
    CM_OPT_STR(T, s3_region, "us-east-1", "the region S3 clients are told buckets are in"),
    CM_OPT_INT(T, s3_upload_expiry_ms, "86400000", 0, 2147483647,
               "an S3 multipart upload begun longer ago is aborted, its parts deleted (0: never)"),
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
    CM_OPT_U64(T, migrate_rate, "32MiB", 1024, 1ull << 40,
               "chunk bytes per second moved to new holders when placement rows change"),
    CM_OPT_U64(T, inflight_bytes, "64MiB", 0, 1ull << 40,
               "object bytes of large GETs and PUTs in flight, gateway-wide (0: no bound)"),
    CM_OPT_U64(T, admit_min_bytes, "1MiB", 0, 1ull << 40,
               "GETs and PUTs this large or larger wait for --inflight-bytes"),
    CM_OPT_INT(T, admit_wait_ms, "1500", 1, 600000,
               "a large request waiting longer for admission gets 503 and Retry-After"),
    CM_OPT_INT(T, threads, "4", 1, 256, "HTTP threads"),
    CM_OPT_INT(T, io_timeout_ms, "5000", 1, 600000, "a chunk operation slower than this failed"),
    CM_OPT_INT(T, slow_ms, "200", 0, 600000,
               "a GET holder slower than this: read parity too (0: never, only after an error)"),
    CM_OPT_INT(T, hedge_budget, "10", 0, 100,
               "holders read around for slowness: at most this % of chunk GETs (0: no bound)"),
    CM_OPT_STR(T, rs, POL_RS_DEFAULT, "replica selection for reads (policy name)"),
    CM_OPT_INT(T, persist_poll_ms, "200", 1, 600000, "how often unpersisted chunks are checked"),
    CM_OPT_INT(T, redrive_after_ms, "3000", 1, 3600000,
               "store an unpersisted chunk again after its holder is gone this long"),
    CM_OPT_INT(T, state_poll_ms, "500", 10, 600000,
               "controller state poll interval (a rotated-away key works at most this long)"),
    CM_OPT_INT(T, delete_delay_ms, "0", 0, 3600000,
               "extra wait before deleting a replaced or deleted version's chunks, after the "
               "GETs that may read them are answered"),
    CM_OPT_INT(T, scrub_interval_ms, "3600000", 0, 86400000,
               "time between passes of the orphan chunk scrub; a chunk no version names is "
               "deleted once two passes find it (0: no scrub)"),
    CM_OPT_BOOL(T, rebuild_meta, "false",
                "rebuild the metadata store from the META records in the nodes' insertion logs "
                "in --cos, then serve"),
    CM_OPT_STR(T, cos, NULL,
               "the nodes' COS, for --rebuild-meta (a directory, fs:/dir or s3://HOST/BUCKET; "
               "s3 credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"),
    CM_OPT_INT(T, rebuild_threads, "8", 1, 64, "--rebuild-meta: log objects read at once"),
    CM_OPT_BOOL(T, force, "false",
                "--rebuild-meta: replace a metadata store that is not empty (else refused)"),
};
#undef T

/*
 * This gateway's id into out: --gateway-id (flag), else the one stored in
 * <dir>/gateway-id at an earlier start, else --listen; stored there when
 * it is new, so the id stays with the metadata it names (a restart on
 * another address still owns its tenants). 0, or a negative errno.
 */
static int
gateway_id(const char *flag, const char *listen, const char *dir, char out[GW_ID_MAX + 1])
{
    char path[PATH_MAX], tmp[PATH_MAX], stored[GW_ID_MAX + 2] = "";
    FILE *f;
    int fd, rc = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s/gateway-id", dir) >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/gateway-id.tmp", dir) >= sizeof(tmp)) {
        return -ENAMETOOLONG;
    }
    if ((f = fopen(path, "re")) != NULL) {
        if (fgets(stored, sizeof(stored), f) == NULL) {
            stored[0] = '\0';
        }
        fclose(f);
        stored[strcspn(stored, "\r\n")] = '\0';
    } else if (errno != ENOENT) {
        return -errno;
    }
    snprintf(out, GW_ID_MAX + 1, "%s", flag != NULL ? flag : stored[0] != '\0' ? stored : listen);
    if (strcmp(out, stored) == 0) {
        return 0;
    }
    if (stored[0] != '\0') {
        CM_WARN("gateway id changed was=%s id=%s: the tenants the old id owns stay its own, and "
                "this store's objects of them are not served here",
                stored, out);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || dprintf(fd, "%s\n", out) < 0 || fsync(fd) != 0 || rename(tmp, path) != 0) {
        rc = -errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

/* url, or http://<addr> when url is NULL, into out, without trailing
 * slashes; 0, or -1 when it is not a URL the controller takes
 * (cm_gateway_url_valid). */
static int
advertised(const char *url, const char *addr, char out[GW_URL_MAX])
{
    int n = url != NULL ? snprintf(out, GW_URL_MAX, "%s", url)
                        : snprintf(out, GW_URL_MAX, "http://%s", addr);
    const char *sep = strstr(out, "://");
    int keep = sep != NULL ? (int)(sep - out) + 3 : 0;

    if (n < 0 || n >= GW_URL_MAX) {
        return -1;
    }
    while (n > keep && out[n - 1] == '/') {
        out[--n] = '\0';
    }
    return cm_gateway_url_valid(out, (size_t)n) ? 0 : -1;
}

static void
die(const char *what, int rc)
{
    fprintf(stderr, "shoal-gateway: %s: %s\n", what, cm_strerror(rc));
    exit(1);
}

/* The flags --rebuild-meta needs, before anything starts: 0, or exits 2. */
static void
rebuild_check(const struct gw_cfg *cfg)
{
    char why[256];

    if (!cfg->rebuild_meta) {
        if (cfg->force) {
            fprintf(stderr, "shoal-gateway: --force is for --rebuild-meta\n");
            exit(2);
        }
        return;
    }
    if (cfg->cos == NULL || cfg->cos[0] == '\0') {
        fprintf(stderr, "shoal-gateway: --rebuild-meta needs --cos (the nodes' COS)\n");
        exit(2);
    }
    if (cm_cos_url_check(cfg->cos, why, sizeof(why)) != 0) {
        fprintf(stderr, "shoal-gateway: --cos: %s\n", why);
        exit(2);
    }
}

/* --rebuild-meta keeps the records of the tenants this gateway owns, and
 * of those the controller does not list (deleted: purged at the first
 * poll), not those another gateway owns. */
struct rebuild_owners {
    struct gw_snap *snap;
    const char *self;
};

static int
rebuild_keep(void *arg, uint32_t tenant)
{
    struct rebuild_owners *o = arg;
    const struct gw_tenant *t = gw_snap_tenant(o->snap, tenant);
    const struct gw_peer *peer;

    return t == NULL || gw_snap_home(o->snap, t, o->self, &peer) == GW_HOME_HERE;
}

/* The controller's state, once, for rebuild_keep; NULL (with a warning:
 * every tenant's records are kept) when it cannot be had. */
static struct gw_snap *
rebuild_state(const struct gw_cfg *cfg)
{
    char url[512], token[256];
    struct cm_httpc_resp resp = {0};
    struct gw_snap *s = NULL;
    const char *why = "";
    int have_token = cfg->admin_token_file != NULL &&
                     cm_token_load(cfg->admin_token_file, 0, token, sizeof(token)) == 0;
    int rc;

    gw_controller_url(cfg->controller, "/v1/internal/state", url, sizeof(url));
    rc = cm_httpc_request("GET", url, have_token ? token : NULL, NULL, 5000, &resp);
    if (rc != 0 || resp.status != 200 || gw_snap_parse(resp.body, resp.len, &s, &why) != 0) {
        CM_WARN("rebuild-meta keeps every tenant's records: no controller state to tell which "
                "other gateways own url=%s err=%s status=%d %s",
                url, rc != 0 ? cm_errname(rc) : "-", rc != 0 ? 0 : resp.status, why);
        s = NULL;
    }
    cm_httpc_resp_fini(&resp);
    return s;
}

/*
 * --rebuild-meta: refuses a store that holds metadata unless --force (then
 * its files are removed and it starts empty), rebuilds it from the logs in
 * --cos, and reports what it found. *meta may be reopened.
 */
static void
rebuild(const struct gw_cfg *cfg, const char *self, const char *metadir, struct gw_meta **meta)
{
    struct rebuild_owners owners = {rebuild_state(cfg), self};
    struct gw_rebuild_filter filter = {rebuild_keep, &owners};
    static const char *const files[] = {"data.mdb", "lock.mdb", "redo.log"};
    struct gw_rebuild_stats st;
    struct cm_cos *cos = NULL;
    char path[PATH_MAX + 16];
    uint64_t t0;
    int empty = 0, rc;

    rc = gw_meta_is_empty(*meta, &empty);
    if (rc != 0) {
        die("cannot read the metadata store", rc);
    }
    if (!empty && !cfg->force) {
        fprintf(stderr,
                "shoal-gateway: --rebuild-meta: the metadata store %s is not empty "
                "(--force replaces it)\n",
                metadir);
        exit(2);
    }
    if (!empty) {
        CM_WARN("rebuild-meta replaces the metadata store dir=%s", metadir);
        gw_meta_close(*meta);
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", metadir, files[i]);
            if (unlink(path) != 0 && errno != ENOENT) {
                die("cannot remove the old metadata store", -errno);
            }
        }
        rc = gw_meta_open(metadir, (size_t)cfg->meta_map_size, meta);
        if (rc != 0) {
            die("cannot open the metadata store", rc);
        }
    }
    rc = cm_cos_open(cfg->cos, &cos);
    if (rc != 0) {
        die("cannot open the COS", rc);
    }
    t0 = cm_now_ns();
    rc = gw_rebuild_meta(cos, *meta, cfg->rebuild_threads, owners.snap != NULL ? &filter : NULL,
                         &st);
    cm_cos_close(cos);
    gw_snap_unref(owners.snap);
    if (rc != 0) {
        die("cannot rebuild the metadata store (it is incomplete: run again)", rc);
    }
    CM_INFO("rebuild-meta done versions=%llu tombstones=%llu multipart_left_out=%llu "
            "parts_left_out=%llu records=%llu other_gateways_records=%llu batches=%llu "
            "bad_records=%llu bad_batches=%llu seconds=%.3f read_seconds=%.3f store_seconds=%.3f",
            (unsigned long long)st.versions, (unsigned long long)st.tombstones,
            (unsigned long long)st.broken, (unsigned long long)st.orphan_parts,
            (unsigned long long)st.records, (unsigned long long)st.others,
            (unsigned long long)st.batches, (unsigned long long)st.bad_records,
            (unsigned long long)st.bad_batches, (double)(cm_now_ns() - t0) / 1e9,
            (double)st.read_ns / 1e9, (double)st.store_ns / 1e9);
}

int
main(int argc, char **argv)
{
    struct gw_cfg cfg;
    struct gw_meta *meta = NULL;
    struct gw_front *front = NULL;
    struct gw_engine *engine = NULL;
    struct gw_state *state = NULL;
    struct gw_migrate *migrate = NULL;
    struct gw_demand *demand = NULL;
    struct gw_scrub *scrub = NULL;
    struct gw_handover *handover = NULL;
    struct cm_http_server *http = NULL, *s3http = NULL;
    struct gw_s3 *s3 = NULL;
    enum cm_log_level level;
    char metadir[PATH_MAX];
    char self_url[GW_URL_MAX], self_s3_url[GW_URL_MAX], self[GW_ID_MAX + 1];
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
    if (cfg.gateway_id != NULL && !cm_gateway_id_valid(cfg.gateway_id, strlen(cfg.gateway_id))) {
        fprintf(stderr, "shoal-gateway: bad --gateway-id '%s' (1 to %d of A-Z a-z 0-9 . _ : -)\n",
                cfg.gateway_id, GW_ID_MAX);
        return 2;
    }
    if (advertised(cfg.advertise_url, cfg.listen, self_url) != 0 ||
        (cfg.s3_listen[0] != '\0' &&
         advertised(cfg.advertise_s3_url, cfg.s3_listen, self_s3_url) != 0)) {
        fprintf(stderr,
                "shoal-gateway: --advertise-url and --advertise-s3-url take an http:// or "
                "https:// URL of at most %d characters\n",
                GW_URL_MAX - 1);
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
    rebuild_check(&cfg);
    cm_log_init("gateway", level);
    rc = gateway_id(cfg.gateway_id, cfg.listen, cfg.data_dir, self);
    if (rc != 0 || !cm_gateway_id_valid(self, strlen(self))) {
        fprintf(stderr, "shoal-gateway: no usable gateway id (%s/gateway-id: %s)\n", cfg.data_dir,
                rc != 0 ? cm_strerror(rc) : "not 1 to 64 of A-Z a-z 0-9 . _ : -");
        return 2;
    }
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
    if (cfg.rebuild_meta) {
        rebuild(&cfg, self, metadir, &meta);
    }
    struct gw_front_cfg fcfg = {
        .self = self,
        .max_object_size = cfg.max_object_size,
        .small_threshold = cfg.small_threshold,
        .delete_delay_ms = cfg.delete_delay_ms,
        .admit = {cfg.inflight_bytes, cfg.admit_min_bytes, (uint64_t)cfg.admit_wait_ms * 1000000u},
    };
    rc = gw_front_create(&fcfg, meta, &front);
    if (rc != 0) {
        die("cannot start the committer", rc);
    }
    struct gw_engine_cfg ecfg = {
        .max_chunk = (uint32_t)cfg.max_chunk,
        .io_timeout_ms = cfg.io_timeout_ms,
        .slow_ms = cfg.slow_ms,
        .hedge_pct = cfg.hedge_budget,
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
        .self = self,
        .url = self_url,
        .s3_url = cfg.s3_listen[0] != '\0' ? self_s3_url : NULL,
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
    struct gw_migrate_cfg mcfg = {
        .rate = cfg.migrate_rate, .self = self, .served = gw_front_served(front)};
    rc = gw_migrate_create(&mcfg, meta, state, engine, gw_front_committer(front),
                           gw_front_grace(front), &migrate);
    if (rc == 0) {
        rc = gw_migrate_start(migrate);
    }
    if (rc != 0) {
        die("cannot start the migration", rc);
    }
    struct gw_demand_cfg dcfg = {
        .controller = cfg.controller,
        .token_file = cfg.admin_token_file,
        .name = self,
        .period_ms = 1000,
        .timeout_ms = 2000,
    };
    rc = gw_demand_create(&dcfg, state, migrate, &demand);
    if (rc == 0) {
        rc = gw_demand_start(demand);
    }
    if (rc != 0) {
        die("cannot start the demand reports", rc);
    }
    gw_front_attach_pp(front, demand, migrate);
    struct gw_handover_cfg hocfg = {
        .self = self,
        .controller = cfg.controller,
        .token_file = cfg.admin_token_file,
        .timeout_ms = 30000,
        .drain_ms = 10000,
    };
    rc = gw_handover_create(&hocfg, meta, state, migrate, gw_front_served(front), &handover);
    if (rc == 0) {
        rc = gw_handover_start(handover);
    }
    if (rc != 0) {
        die("cannot start the tenant hand-overs", rc);
    }
    gw_front_attach_handover(front, handover);
    struct gw_scrub_cfg sccfg = {
        .interval_ms = cfg.scrub_interval_ms, .state = state, .self = self, .handover = handover};
    rc = gw_scrub_create(&sccfg, meta, engine, gw_front_grace(front), &scrub);
    if (rc == 0) {
        rc = gw_scrub_start(scrub);
    }
    if (rc != 0) {
        die("cannot start the scrub", rc);
    }
    gw_front_attach_scrub(front, scrub);
    struct cm_http_cfg hcfg = {
        .addr = cfg.listen,
        .threads = (unsigned)cfg.threads,
        .max_body = cfg.max_object_size,
    };
    rc = cm_http_start(&hcfg, &gw_front_handlers, front, &http);
    if (rc != 0) {
        die("cannot listen", rc);
    }
    if (cfg.s3_listen != NULL && cfg.s3_listen[0] != '\0') {
        struct gw_s3_cfg s3cfg = {.domain = cfg.s3_domain,
                                  .region = cfg.s3_region,
                                  .upload_expiry_ms = cfg.s3_upload_expiry_ms};
        struct cm_http_cfg s3hcfg = {
            .addr = cfg.s3_listen,
            .threads = (unsigned)cfg.threads,
            .max_body = gw_s3_max_body(cfg.max_object_size),
        };

        rc = gw_s3_create(&s3cfg, front, &s3);
        if (rc != 0) {
            die("cannot start the S3 front door", rc);
        }
        rc = cm_http_start(&s3hcfg, &gw_s3_handlers, s3, &s3http);
        if (rc != 0) {
            die("cannot listen for S3", rc);
        }
    }
    CM_INFO("listening addr=%s s3=%s controller=%s data_dir=%s rs=%s gateway=%s", cfg.listen,
            s3http != NULL ? cfg.s3_listen : "-", cfg.controller, cfg.data_dir, rs->name, self);

    while (sigwait(&sigs, &sig) != 0) {
    }
    CM_INFO("shutting down signal=%d", sig);
    /* In-flight requests, uploads included, finish before anything stops. */
    cm_http_stop(http, 2 * cfg.io_timeout_ms + 1000);
    cm_http_stop(s3http, 2 * cfg.io_timeout_ms + 1000);
    gw_front_drain(front, 2 * cfg.io_timeout_ms + 1000);
    gw_s3_destroy(s3); /* runs the copies it holds, while the engine is up */
    gw_state_stop(state);
    gw_front_attach_pp(front, NULL, NULL);
    gw_front_attach_scrub(front, NULL);
    gw_demand_destroy(demand);
    gw_scrub_stop(scrub);
    gw_handover_stop(handover);
    gw_migrate_stop(migrate);
    gw_front_quiesce(front);
    gw_migrate_detach(migrate);
    /* The requests are answered (or given up on): the deletes they held
     * back and those still delayed go now, rather than be left behind as
     * orphans. */
    size_t left = gw_engine_flush_deletes(engine, 2000);
    if (left > 0) {
        CM_WARN("gateway stopping: chunk deletes not answered in 2 s count=%zu", left);
    }
    gw_engine_destroy(engine);
    gw_front_destroy(front);
    gw_migrate_destroy(migrate);
    gw_scrub_destroy(scrub);
    gw_handover_destroy(handover);
    gw_state_destroy(state);
    gw_meta_close(meta);
    CM_INFO("stopped");
    return 0;
}
