/*
 * bench_rebuild.c - what --rebuild-meta (gateway/gw_rebuild.c) takes: the
 * insertion logs of six nodes in an fs COS, holding the META records of N
 * objects as gateways send them (each record on 3 nodes; 80% of objects
 * 1+2 copies, 20% 4+2 of 10 stripes with their tags; a fifth overwritten
 * once, a twentieth deleted), 64 records a batch; then the store rebuilt
 * from them with 1 and with 8 readers, timed (wall clock: it is I/O).
 * Label perf. N: BENCH_OBJECTS (default 100000); the COS and the stores go
 * under BENCH_DIR (default a temp dir).
 */
#include "t_check.h"

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_ilog.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_meta.h"
#include "gw_rebuild.h"

#define NNODES 6
#define PER_BATCH 64
#define COPIES 3

struct node_log {
    struct cm_buf b;
    uint64_t seq;
    size_t nrec;
};

static struct node_log logs[NNODES];
static struct cm_cos *tcos;
static uint64_t batches, records, bytes;

static void
flush(uint32_t node)
{
    struct node_log *lg = &logs[node];
    char name[CM_ILOG_NAME_MAX];

    if (lg->nrec == 0) {
        return;
    }
    cm_ilog_end(&lg->b);
    cm_ilog_name(name, sizeof(name), node, lg->seq);
    CHECK_EQ_INT(cm_cos_put(tcos, name, lg->b.p, lg->b.len), 0);
    batches++;
    bytes += lg->b.len;
    lg->nrec = 0;
    cm_ilog_begin(&lg->b, node, ++lg->seq);
}

/* One META record onto COPIES nodes' logs. */
static void
log_record(const struct gw_mrec *m, uint32_t first)
{
    static uint8_t pay[8192];
    struct cm_ilog_rec r = {.kind = CM_ILOG_META, .data = pay};

    r.data_len = (uint32_t)gw_mrec_len(m);
    gw_mrec_encode(m, pay);
    for (uint32_t c = 0; c < COPIES; c++) {
        uint32_t node = (first + c) % NNODES;
        cm_ilog_add(&logs[node].b, &r);
        records++;
        if (++logs[node].nrec == PER_BATCH) {
            flush(node);
        }
    }
}

static void
log_object(uint64_t i, uint64_t version, int tomb)
{
    static uint32_t tags[10 * 6];
    static uint8_t rec[1024];
    char key[32];
    struct gw_layout l = {.tenant = 1 + (uint32_t)(i % 8),
                          .object = i * 2654435761u + version,
                          .version = version,
                          .etag = i,
                          .persisted = 63};
    struct gw_mrec m = {.kind = tomb ? GW_MREC_TOMB : GW_MREC_VERSION,
                        .tenant = l.tenant,
                        .key = key,
                        .version = version};

    snprintf(key, sizeof(key), "bench/%08llu", (unsigned long long)i);
    m.klen = strlen(key);
    if (i % 5 == 0) {
        l.k = 4;
        l.m = 2;
        l.nstripes = 10;
        l.chunk_size = 1 << 20;
        l.size = 40ull << 20;
    } else {
        l.k = 1;
        l.m = 2;
        l.nstripes = 1;
        l.chunk_size = 50000;
        l.size = 50000;
    }
    for (uint32_t j = 0; j < (uint32_t)(l.k + l.m); j++) {
        l.holders[j] = (uint32_t)((i + j) % NNODES);
    }
    for (size_t t = 0; t < gw_layout_nchunks(&l); t++) {
        tags[t] = (uint32_t)(t << 20 | 7);
    }
    l.tags = tags;
    if (!tomb) {
        m.rec = rec;
        m.rec_len = gw_meta_encode(&l, NULL, rec);
    }
    log_record(&m, l.holders[0]);
}

int
main(void)
{
    const char *env = getenv("BENCH_OBJECTS"), *root = getenv("BENCH_DIR");
    uint64_t n = env ? strtoull(env, NULL, 10) : 100000;
    char *dir = root ? strdup(root) : t_tmpdir(), path[4096];

    cm_log_init("bench", CM_LOG_WARN);
    snprintf(path, sizeof(path), "%s/cos", dir);
    CHECK_EQ_INT(cm_cos_open(path, &tcos), 0);
    for (uint32_t i = 0; i < NNODES; i++) {
        cm_buf_init(&logs[i].b);
        logs[i].seq = 1;
        cm_ilog_begin(&logs[i].b, i, 1);
    }
    for (uint64_t i = 0; i < n; i++) {
        log_object(i, 1, 0);
        if (i % 5 == 1) {
            log_object(i, 2, 0);
        }
        if (i % 20 == 3) {
            log_object(i, 1, 1);
        }
    }
    for (uint32_t i = 0; i < NNODES; i++) {
        flush(i);
        cm_buf_fini(&logs[i].b);
    }
    printf("logs: %llu objects, %llu records in %llu batches, %.1f MB\n", (unsigned long long)n,
           (unsigned long long)records, (unsigned long long)batches, (double)bytes / 1e6);
    for (int threads = 1; threads <= 8; threads += 7) {
        struct gw_rebuild_stats st;
        struct gw_meta *m;
        uint64_t t0;
        double s;

        snprintf(path, sizeof(path), "%s/meta%d", dir, threads);
        CHECK_EQ_INT(gw_meta_open(path, 4ull << 30, &m), 0);
        t0 = cm_now_ns();
        CHECK_EQ_INT(gw_rebuild_meta(tcos, m, threads, NULL, &st), 0);
        s = (double)(cm_now_ns() - t0) / 1e9;
        gw_meta_close(m);
        CHECK_EQ_INT(st.versions + st.tombstones, n);
        CHECK_EQ_INT(st.records, records);
        printf("rebuild readers=%d: %llu versions, %llu tombstones from %llu records in %.2f s "
               "(reading %.2f s, storing %.2f s; %.0f records/s, %.0f objects/s)\n",
               threads, (unsigned long long)st.versions, (unsigned long long)st.tombstones,
               (unsigned long long)st.records, s, (double)st.read_ns / 1e9,
               (double)st.store_ns / 1e9, (double)st.records / s, (double)n / s);
    }
    cm_cos_close(tcos);
    if (!root) {
        t_rmtree(dir);
    }
    return 0;
}
