/*
 * main.c - shoal-fnstore: a storage node hosting function instances.
 *
 * Main thread: parse config, open the COS, bump the incarnation, start the
 * metrics server and the heartbeat thread, then run the node's event loop
 * until SIGTERM/SIGINT, and tear down in reverse order.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_wire.h"
#include "fns_heartbeat.h"
#include "fns_incarn.h"
#include "fns_metrics.h"
#include "fns_node.h"
#include "pol_fq.h"

struct fns_cfg {
    int id;
    const char *listen;
    const char *metrics_listen;
    const char *controller;
    const char *admin_token_file;
    const char *cos;
    const char *data_dir;
    uint64_t capacity;
    uint64_t instance_size;
    const char *cache_bytes;
    double reclaim_rate;
    int recovery_helpers;
    int cos_threads;
    int cos_linger_ms;
    uint64_t cos_segment_max;
    const char *sched;
    int queue_limit;
    double cap_ops;
    uint64_t cap_bytes;
    int max_dispatched;
    uint64_t max_dispatched_bytes;
    uint64_t max_chunk;
    const char *log_level;
    int heartbeat_ms;
    uint64_t arena_segment; /* --arena-segment, the arena's slab size (the flag kept its name) */
    int arena_keep;
};

static const struct cm_opt fns_opts[] = {
    CM_OPT_INT(struct fns_cfg, id, "0", 0, 1000000, "node id (unique in the cluster)"),
    CM_OPT_STR(struct fns_cfg, listen, "127.0.0.1:9500", "data (wire protocol) address"),
    CM_OPT_STR(struct fns_cfg, metrics_listen, "127.0.0.1:9600",
               "metrics HTTP address (/metrics, /healthz); empty disables"),
    CM_OPT_STR(struct fns_cfg, controller, "127.0.0.1:9400",
               "controller address for heartbeats; empty disables"),
    CM_OPT_STR(struct fns_cfg, admin_token_file, "", "admin token file for the controller"),
    CM_OPT_STR(struct fns_cfg, cos, NULL,
               "COS: a directory, fs:/dir, or s3://HOST:PORT/BUCKET[/PREFIX]?sig=v2|v4&region=R"
               "&tls=0|1 (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) (required)"),
    CM_OPT_STR(struct fns_cfg, data_dir, "",
               "node state directory (incarnation); empty keeps it in the COS"),
    CM_OPT_U64(struct fns_cfg, capacity, "1GiB", 1, 1ull << 44,
               "instance memory in bytes: capacity / instance-size instance slots (1 to 4096)"),
    CM_OPT_U64(struct fns_cfg, instance_size, "64MiB", 4096, 1ull << 40,
               "memory of one function instance (its storage partition); larger chunks are "
               "refused"),
    CM_OPT_STR(struct fns_cfg, cache_bytes, "",
               "cache space for late reads and hot copies, apart from --capacity "
               "(empty: capacity / 8; 0: none)"),
    CM_OPT_DBL(struct fns_cfg, reclaim_rate, "0", 0, 1e6,
               "instances reclaimed per minute at random, as a FaaS provider would (0 = none)"),
    CM_OPT_INT(struct fns_cfg, recovery_helpers, "4", 1, 256,
               "threads that recover a lost instance from COS in parallel"),
    CM_OPT_INT(struct fns_cfg, cos_threads, "4", 1, 256, "COS worker threads"),
    CM_OPT_INT(struct fns_cfg, cos_linger_ms, "20", 0, 10000,
               "how long small chunk writes gather into one COS segment (ms)"),
    CM_OPT_U64(struct fns_cfg, cos_segment_max, "4MiB", 1, 1ull << 30,
               "where COS can append (fs): a segment's size past which the next starts"),
    CM_OPT_STR(struct fns_cfg, sched, POL_FQ_DEFAULT,
               "fair-queue scheduler: drfq (DRR token-based DRF over requests and bytes), "
               "drr (DRR on request count) or fifo"),
    CM_OPT_INT(struct fns_cfg, queue_limit, "1024", 0, 1 << 24,
               "queued requests per tenant before CM_E_BUSY (0 = unlimited)"),
    CM_OPT_DBL(struct fns_cfg, cap_ops, "0", 0, 1e9, "emulated requests/s cap (0 = off)"),
    CM_OPT_U64(struct fns_cfg, cap_bytes, "0", 0, 1ull << 40, "emulated bytes/s cap (0 = off)"),
    CM_OPT_INT(struct fns_cfg, max_dispatched, "64", 0, 1 << 24,
               "requests dispatched and not yet answered (answers count until written); "
               "more wait in the fair queue (0 = no bound)"),
    CM_OPT_U64(struct fns_cfg, max_dispatched_bytes, "8MiB", 0, 1ull << 40,
               "bytes of the requests dispatched and not yet answered, answers until written "
               "(0 = no bound)"),
    CM_OPT_U64(struct fns_cfg, max_chunk, "64MiB", 1, CM_WIRE_MAX_DATA, "largest chunk accepted"),
    CM_OPT_STR(struct fns_cfg, log_level, "info", "debug | info | warn | error"),
    CM_OPT_INT(struct fns_cfg, heartbeat_ms, "1000", 10, 600000, "heartbeat interval"),
    CM_OPT_U64(struct fns_cfg, arena_segment, "8MiB", 0, 1ull << 30,
               "chunk memory segment size, a multiple of 2MiB (0 = malloc per chunk)"),
    CM_OPT_INT(struct fns_cfg, arena_keep, "16", 0, 1 << 20,
               "empty chunk memory segments kept for reuse"),
};

static void
fns_usage_error(const char *msg)
{
    fprintf(stderr, "shoal-fnstore: %s\n", msg);
    exit(2);
}

/* Exits 2 naming the schedulers there are. */
static void
fns_sched_error(const char *name)
{
    struct cm_buf b;
    size_t n;
    const struct pol_fq_ops *const *l = pol_fq_list(&n);

    cm_buf_init(&b);
    cm_buf_printf(&b, "--sched: unknown scheduler '%s' (one of:", name);
    for (size_t i = 0; i < n; i++) {
        cm_buf_printf(&b, " %s", l[i]->name);
    }
    cm_buf_printf(&b, ")");
    fns_usage_error(b.p);
}

int
main(int argc, char **argv)
{
    struct fns_cfg cfg = {0};
    struct fns_node_cfg ncfg = {0};
    struct fns_heartbeat_cfg hbcfg = {0};
    struct cm_cos *cos = NULL;
    struct fns_node *node = NULL;
    struct fns_metrics *metrics = NULL;
    struct fns_heartbeat *hb = NULL;
    struct fns_node_stats st;
    enum cm_log_level level;
    uint32_t incarnation = 0;
    uint64_t cache_bytes = 0;
    char addr[96], errbuf[256];
    int rc, status = 1;

    cm_config_load(fns_opts, sizeof(fns_opts) / sizeof(fns_opts[0]), &cfg, argc, argv,
                   "shoal-fnstore", "storage node hosting function instances (chunk memory)");
    if (cm_log_parse_level(cfg.log_level, &level) != 0) {
        fns_usage_error("--log-level must be debug, info, warn or error");
    }
    if (cfg.cos == NULL || cfg.cos[0] == '\0') {
        fns_usage_error("--cos is required");
    }
    if (cm_cos_url_check(cfg.cos, errbuf, sizeof(errbuf)) != 0) {
        fns_usage_error(errbuf);
    }
    if (pol_fq_find(cfg.sched) == NULL) {
        fns_sched_error(cfg.sched);
    }
    if (cfg.arena_segment % FNS_ARENA_SLAB_UNIT != 0) {
        fns_usage_error("--arena-segment must be a multiple of 2MiB");
    }
    if (cfg.capacity / cfg.instance_size < 1 || cfg.capacity / cfg.instance_size > 4096) {
        fns_usage_error("--capacity / --instance-size must be 1 to 4096 instances");
    }
    if (cfg.cache_bytes[0] == '\0') {
        cache_bytes = cfg.capacity / 8;
    } else if (cm_parse_u64(cfg.cache_bytes, &cache_bytes) != 0) {
        fns_usage_error("--cache-bytes must be a size such as 128MiB");
    }
    cm_log_init("fnstore", level);
    signal(SIGPIPE, SIG_IGN);
    cm_malloc_tune_reuse();

    rc = cm_cos_open(cfg.cos, &cos);
    if (rc != 0) {
        CM_ERROR("cannot open cos url=%s err=%s", cfg.cos, cm_errname(rc));
        goto out;
    }
    rc = fns_incarnation_bump(cfg.data_dir, cos, (uint32_t)cfg.id, &incarnation);
    if (rc != 0) {
        CM_ERROR("cannot bump incarnation data_dir=%s err=%s", cfg.data_dir, cm_errname(rc));
        goto out;
    }
    ncfg.id = (uint32_t)cfg.id;
    ncfg.listen = cfg.listen;
    ncfg.capacity = cfg.capacity;
    ncfg.inst_bytes = cfg.instance_size;
    ncfg.cache_bytes = cache_bytes;
    ncfg.reclaim_rate = cfg.reclaim_rate;
    ncfg.recovery_helpers = (uint32_t)cfg.recovery_helpers;
    ncfg.max_chunk = (uint32_t)cfg.max_chunk;
    ncfg.queue_limit = (uint32_t)cfg.queue_limit;
    ncfg.cap_ops = cfg.cap_ops;
    ncfg.cap_bytes = (double)cfg.cap_bytes;
    ncfg.max_dispatched = (uint32_t)cfg.max_dispatched;
    ncfg.max_dispatched_bytes = cfg.max_dispatched_bytes;
    ncfg.sched = cfg.sched;
    ncfg.cos_threads = cfg.cos_threads;
    ncfg.cos_linger_ms = cfg.cos_linger_ms;
    ncfg.cos_segment_max = cfg.cos_segment_max;
    ncfg.incarnation = incarnation;
    ncfg.handle_signals = 1;
    ncfg.arena_slab = cfg.arena_segment;
    ncfg.arena_keep = (uint32_t)cfg.arena_keep;
    rc = fns_node_create(&ncfg, cos, &node);
    if (rc != 0) {
        goto out;
    }
    if (cfg.metrics_listen != NULL && cfg.metrics_listen[0] != '\0') {
        rc = fns_metrics_start(cfg.metrics_listen, node, &metrics);
        if (rc != 0) {
            goto out;
        }
    }
    fns_node_stats(node, &st);
    {
        const char *colon = strrchr(cfg.listen, ':');
        int hostlen = colon != NULL ? (int)(colon - cfg.listen) : 0;

        snprintf(addr, sizeof(addr), "%.*s:%u", hostlen > 0 ? hostlen : 9,
                 hostlen > 0 ? cfg.listen : "127.0.0.1", st.port);
    }
    hbcfg.controller = cfg.controller;
    hbcfg.token_file = cfg.admin_token_file;
    hbcfg.addr = addr;
    hbcfg.metrics_addr = cfg.metrics_listen != NULL ? cfg.metrics_listen : "";
    hbcfg.interval_ms = cfg.heartbeat_ms;
    rc = fns_heartbeat_create(&hbcfg, node, &hb);
    if (rc != 0) {
        CM_ERROR("cannot start heartbeat err=%s", cm_errname(rc));
        goto out;
    }
    rc = fns_node_run(node);
    if (rc == 0) {
        status = 0;
    }
out:
    fns_heartbeat_destroy(hb);
    fns_metrics_stop(metrics);
    fns_node_destroy(node);
    cm_cos_close(cos);
    if (status == 0) {
        CM_INFO("stopped");
    }
    return status;
}
