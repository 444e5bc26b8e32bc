/*
 * gw_demand.c - demand counts per (tenant, partition) and their reporter
 * thread (see gw_demand.h).
 *
 * Counts live in an open-addressing table keyed by (tenant, partition),
 * under one mutex held for a probe and two adds per request. Each report
 * turns the counts since the last into rates folded into an EWMA
 * (ALPHA per report: about two reports of memory) and sends the entries
 * whose rate or resident bytes are not nil.
 */
#include "gw_demand.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_token.h"
#include "gw_migrate.h"
#include "gw_state.h"

#define ALPHA 0.5
#define MIN_RATE 0.01 /* below: not reported */

struct dem_entry {
    uint64_t key;         /* tenant << 32 | partition; 0 = empty (tenant ids start at 1) */
    uint64_t reqs, bytes; /* since the last report */
    uint64_t lat_ns;      /* latencies summed, since the last report */
    double req_rate, byte_rate, inflight;
};

struct gw_demand {
    struct gw_demand_cfg cfg;
    char name[128];
    char url[256];
    struct gw_state *state; /* borrowed */
    struct gw_migrate *mig; /* borrowed, may be NULL */
    pthread_mutex_t mu;     /* the table, stop */
    pthread_cond_t cv;
    struct dem_entry *tab;
    size_t cap, used; /* cap a power of two */
    atomic_uint partitions;
    int stop, started;
    pthread_t thread;
    /* reporter thread only */
    char token[256];
    int have_token;
    uint64_t last_ns;
    /* figures */
    atomic_uint_fast64_t reports, failed, entries;
};

uint32_t
gw_demand_partition(const char *key, size_t klen, uint32_t tenant, uint32_t partitions)
{
    return (uint32_t)(cm_hash64(key, klen, tenant) % (partitions ? partitions : 1));
}

/* The entry of key, inserted if new (the table grows at half full). */
static struct dem_entry *
slot(struct gw_demand *d, uint64_t key)
{
    size_t i;

    if (2 * (d->used + 1) > d->cap) {
        struct dem_entry *old = d->tab;
        size_t ocap = d->cap;

        d->cap = d->cap ? 2 * d->cap : 256;
        d->tab = cm_calloc(d->cap, sizeof(*d->tab));
        d->used = 0;
        for (size_t j = 0; j < ocap; j++) {
            if (old[j].key != 0) {
                *slot(d, old[j].key) = old[j];
            }
        }
        free(old);
    }
    i = (size_t)cm_hmix64(key) & (d->cap - 1);
    while (d->tab[i].key != 0 && d->tab[i].key != key) {
        i = (i + 1) & (d->cap - 1);
    }
    if (d->tab[i].key == 0) {
        d->tab[i].key = key;
        d->used++;
    }
    return &d->tab[i];
}

void
gw_demand_note(struct gw_demand *d, uint32_t tenant, const char *key, size_t klen, uint64_t reqs,
               uint64_t bytes, uint64_t latency_ns)
{
    struct dem_entry *e;
    uint32_t p;

    if (d == NULL || tenant == 0) {
        return;
    }
    p = gw_demand_partition(key, klen, tenant, atomic_load(&d->partitions));
    pthread_mutex_lock(&d->mu);
    e = slot(d, (uint64_t)tenant << 32 | p);
    e->reqs += reqs;
    e->bytes += bytes;
    e->lat_ns += latency_ns;
    pthread_mutex_unlock(&d->mu);
}

static const struct gw_resident *
find_resident(const struct gw_resident *r, size_t n, uint64_t key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k = (uint64_t)r[mid].tenant << 32 | r[mid].partition;

        if (k == key) {
            return &r[mid];
        }
        if (k < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Folds the counts into rates and writes the report's body into b. */
static void
build_report(struct gw_demand *d, struct cm_buf *b)
{
    struct gw_resident *res = NULL;
    size_t nres = d->mig != NULL ? gw_migrate_resident(d->mig, &res) : 0, n = 0;
    uint64_t now = cm_now_ns();
    double dt = d->last_ns ? (double)(now - d->last_ns) / 1e9 : 0;
    struct gw_migrate_progress pr;
    unsigned char *sent = cm_calloc(nres + 1, 1);

    memset(&pr, 0, sizeof(pr));
    if (d->mig != NULL) {
        gw_migrate_progress(d->mig, &pr);
    }
    d->last_ns = now;
    cm_buf_printf(b, "{\"gateway\":\"%s\",\"demand\":[", d->name);
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->cap; i++) {
        struct dem_entry *e = &d->tab[i];
        const struct gw_resident *r;

        if (e->key == 0) {
            continue;
        }
        if (dt > 0) {
            e->req_rate = ALPHA * ((double)e->reqs / dt) + (1 - ALPHA) * e->req_rate;
            e->byte_rate = ALPHA * ((double)e->bytes / dt) + (1 - ALPHA) * e->byte_rate;
            e->inflight = ALPHA * ((double)e->lat_ns / 1e9 / dt) + (1 - ALPHA) * e->inflight;
        }
        e->reqs = e->bytes = e->lat_ns = 0;
        r = find_resident(res, nres, e->key);
        if (r != NULL) {
            sent[r - res] = 1;
        }
        if (e->req_rate < MIN_RATE && r == NULL) {
            continue;
        }
        cm_buf_printf(b, "%s[%u,%u,%.3f,%.1f,%llu,%.3f]", n++ ? "," : "", (unsigned)(e->key >> 32),
                      (unsigned)(e->key & 0xffffffffu), e->req_rate, e->byte_rate,
                      (unsigned long long)(r != NULL ? r->bytes : 0), e->inflight);
    }
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < nres; i++) {
        if (!sent[i]) {
            cm_buf_printf(b, "%s[%u,%u,0,0,%llu,0]", n++ ? "," : "", res[i].tenant,
                          res[i].partition, (unsigned long long)res[i].bytes);
        }
    }
    atomic_store(&d->entries, n);
    cm_buf_printf(b,
                  "],\"migrate\":{\"done_epoch\":%llu,\"moving_partitions\":%llu,"
                  "\"bytes_to_move\":%llu,\"bytes_moved\":%llu,\"bytes_moved_total\":%llu}}",
                  (unsigned long long)pr.done_epoch, (unsigned long long)pr.moving_partitions,
                  (unsigned long long)pr.bytes_to_move, (unsigned long long)pr.bytes_moved,
                  (unsigned long long)pr.bytes_moved_total);
    free(sent);
    free(res);
}

static void
report(struct gw_demand *d)
{
    struct cm_httpc_resp resp = {0};
    struct gw_snap *s = gw_state_snap(d->state);
    struct cm_buf b;
    int rc;

    atomic_store(&d->partitions, s->partitions);
    gw_snap_unref(s);
    cm_buf_init(&b);
    build_report(d, &b);
    if (!d->have_token && d->cfg.token_file != NULL) {
        d->have_token = cm_token_load(d->cfg.token_file, 0, d->token, sizeof(d->token)) == 0;
    }
    rc = cm_httpc_request("POST", d->url, d->have_token ? d->token : NULL, b.p, d->cfg.timeout_ms,
                          &resp);
    if (rc != 0 || resp.status != 200) {
        if (rc == 0 && resp.status == 401) {
            d->have_token = 0;
        }
        atomic_fetch_add(&d->failed, 1);
        CM_DEBUG("demand report failed url=%s err=%s status=%d", d->url,
                 rc ? cm_errname(rc) : "http", rc ? 0 : resp.status);
    } else {
        atomic_fetch_add(&d->reports, 1);
    }
    cm_httpc_resp_fini(&resp);
    cm_buf_fini(&b);
}

static void *
demand_main(void *arg)
{
    struct gw_demand *d = arg;

    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        struct timespec ts = cm_deadline(CLOCK_MONOTONIC, (uint64_t)d->cfg.period_ms * 1000000u);

        (void)pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        if (d->stop) {
            break;
        }
        pthread_mutex_unlock(&d->mu);
        report(d);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int
gw_demand_create(const struct gw_demand_cfg *cfg, struct gw_state *state, struct gw_migrate *mig,
                 struct gw_demand **out)
{
    struct gw_demand *d = cm_calloc(1, sizeof(*d));
    pthread_condattr_t ca;

    d->cfg = *cfg;
    if (d->cfg.period_ms <= 0) {
        d->cfg.period_ms = 1000;
    }
    if (d->cfg.timeout_ms <= 0) {
        d->cfg.timeout_ms = 2000;
    }
    /* The name goes into JSON as is: keep it to characters that need no
     * escaping. */
    snprintf(d->name, sizeof(d->name), "%s", cfg->name != NULL ? cfg->name : "gateway");
    for (char *c = d->name; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
            *c = '_';
        }
    }
    d->name[64] = '\0';
    d->cfg.name = NULL;
    gw_controller_url(cfg->controller, "/v1/internal/demand", d->url, sizeof(d->url));
    d->state = state;
    d->mig = mig;
    atomic_init(&d->partitions, 1);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    {
        struct gw_snap *s = gw_state_snap(state);

        atomic_store(&d->partitions, s->partitions);
        gw_snap_unref(s);
    }
    *out = d;
    return 0;
}

int
gw_demand_start(struct gw_demand *d)
{
    int rc = pthread_create(&d->thread, NULL, demand_main, d);

    if (rc != 0) {
        return -rc;
    }
    d->started = 1;
    return 0;
}

void
gw_demand_destroy(struct gw_demand *d)
{
    if (d == NULL) {
        return;
    }
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stop = 1;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
    }
    free(d->tab);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void
gw_demand_metrics(struct gw_demand *d, struct cm_buf *out)
{
    cm_prom_family(out, "shoal_gateway_demand_reports_total", "counter",
                   "Demand reports the controller accepted");
    cm_prom_u64(out, "shoal_gateway_demand_reports_total", NULL, atomic_load(&d->reports));
    cm_prom_family(out, "shoal_gateway_demand_reports_failed_total", "counter",
                   "Demand reports that did not reach the controller");
    cm_prom_u64(out, "shoal_gateway_demand_reports_failed_total", NULL, atomic_load(&d->failed));
    cm_prom_family(out, "shoal_gateway_demand_partitions", "gauge",
                   "(tenant, partition) entries in the last demand report");
    cm_prom_u64(out, "shoal_gateway_demand_partitions", NULL, atomic_load(&d->entries));
}
