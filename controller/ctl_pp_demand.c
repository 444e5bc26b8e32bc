/*
 * ctl_pp_demand.c - what gateways report to placement (POST
 * /v1/internal/demand, about once a second): each one's demand per
 * (tenant, partition) and its migration progress, kept as its latest report;
 * the demand summed over the fresh gateways for the loop, and the status
 * figures.
 *
 * A gateway silent longer than gw_timeout_ms counts for nothing (its last
 * report stays until it reports again). A gateway that has not finished a
 * migration pass at the current placement epoch counts as migrating. A
 * tenant's demand counts its requests in flight as well
 * (ctl_pp_demand_scale).
 *
 * Threads: any thread; the reports are under pp->mu (ctl_pp_impl.h).
 *
 * Naming: do_x() expects pp->mu held; ctl_pp_x_locked() likewise, for the
 * loop.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_pp_impl.h"

int
ctl_pp_cmp_demand(const void *a, const void *b)
{
    const struct ctl_pp_demand *x = a, *y = b;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

int
ctl_pp_report(struct ctl_pp *pp, const struct ctl_pp_report *r, uint64_t now_ns)
{
    struct ctl_pp_gw *g = NULL;
    size_t nlen = r->gateway != NULL ? strlen(r->gateway) : 0;

    if (nlen == 0 || nlen > CTL_PP_GW_MAX) {
        return CM_E_BADARG;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (!(r->d[i].req >= 0) || !(r->d[i].bytes >= 0) || !(r->d[i].inflight >= 0) ||
            !isfinite(r->d[i].req) || !isfinite(r->d[i].bytes) || !isfinite(r->d[i].inflight)) {
            return CM_E_BADARG;
        }
    }
    pthread_mutex_lock(&pp->mu);
    for (size_t i = 0; i < pp->ngw; i++) {
        if (strcmp(pp->gw[i].name, r->gateway) == 0) {
            g = &pp->gw[i];
        }
    }
    if (g == NULL) {
        pp->gw = cm_realloc(pp->gw, (pp->ngw + 1) * sizeof(*pp->gw));
        g = &pp->gw[pp->ngw++];
        memset(g, 0, sizeof(*g));
        memcpy(g->name, r->gateway, nlen);
        CM_INFO("gateway reports demand gateway=%s", g->name);
    }
    free(g->d);
    g->d = cm_calloc(r->n + 1, sizeof(*g->d));
    if (r->n > 0) {
        memcpy(g->d, r->d, r->n * sizeof(*g->d)); /* an empty report may have no array */
    }
    g->n = r->n;
    qsort(g->d, g->n, sizeof(*g->d), ctl_pp_cmp_demand);
    g->mig = r->mig;
    g->seen_ns = now_ns;
    pthread_mutex_unlock(&pp->mu);
    return 0;
}

static int
do_fresh(const struct ctl_pp *pp, const struct ctl_pp_gw *g, uint64_t now_ns)
{
    return now_ns - g->seen_ns <= (uint64_t)pp->cfg.gw_timeout_ms * 1000000u;
}

/* The fresh gateways' demand summed per (tenant, partition), sorted. */
struct ctl_pp_demand *
ctl_pp_demand_locked(const struct ctl_pp *pp, uint64_t now_ns, size_t *n)
{
    struct ctl_pp_demand *all;
    size_t total = 0, k = 0;

    for (size_t i = 0; i < pp->ngw; i++) {
        total += do_fresh(pp, &pp->gw[i], now_ns) ? pp->gw[i].n : 0;
    }
    all = cm_calloc(total + 1, sizeof(*all));
    for (size_t i = 0; i < pp->ngw; i++) {
        if (do_fresh(pp, &pp->gw[i], now_ns)) {
            memcpy(&all[k], pp->gw[i].d, pp->gw[i].n * sizeof(*all));
            k += pp->gw[i].n;
        }
    }
    qsort(all, total, sizeof(*all), ctl_pp_cmp_demand);
    k = 0;
    for (size_t i = 0; i < total; i++) {
        if (k > 0 && ctl_pp_cmp_demand(&all[k - 1], &all[i]) == 0) {
            all[k - 1].req += all[i].req;
            all[k - 1].bytes += all[i].bytes;
            all[k - 1].resident_bytes += all[i].resident_bytes;
            all[k - 1].inflight += all[i].inflight;
        } else {
            all[k++] = all[i];
        }
    }
    *n = k;
    return all;
}

/* Rows changed after placement epoch e. */
static uint64_t
do_rows_since(const struct ctl_pp *pp, uint64_t e)
{
    uint64_t n = 0;

    for (size_t i = 0; i < pp->nt; i++) {
        for (uint32_t p = 0; p < pp->t[i].parts; p++) {
            n += pp->t[i].row_epoch[p] > e;
        }
    }
    return n;
}

/* Migration over the fresh gateways. A gateway that has not finished the
 * current epoch counts at least the partitions changed since the epoch it
 * finished (it may not even have seen the new rows yet). */
void
ctl_pp_migration_locked(const struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out)
{
    for (size_t i = 0; i < pp->ngw; i++) {
        const struct ctl_pp_gw *g = &pp->gw[i];
        uint64_t moving = g->mig.moving_partitions;

        if (!do_fresh(pp, g, now_ns)) {
            continue;
        }
        out->gateways++;
        if (g->mig.done_epoch < pp->epoch) {
            uint64_t since = do_rows_since(pp, g->mig.done_epoch);

            out->migrating = 1;
            moving = moving > since ? moving : since;
        }
        out->migrating |= moving > 0;
        out->moving_partitions += moving;
        out->bytes_to_move += g->mig.bytes_to_move;
        out->bytes_moved += g->mig.bytes_moved;
        out->bytes_moved_total += g->mig.bytes_moved_total;
    }
}

int
ctl_pp_reported_locked(const struct ctl_pp *pp, const char *name, uint64_t now_ns)
{
    for (size_t i = 0; i < pp->ngw; i++) {
        if (strcmp(pp->gw[i].name, name) == 0) {
            return do_fresh(pp, &pp->gw[i], now_ns);
        }
    }
    return 0;
}

void
ctl_pp_status(struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out)
{
    struct ctl_pp_demand *dem;
    size_t n;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&pp->mu);
    out->epoch = pp->epoch;
    snprintf(out->policy, sizeof(out->policy), "%s", pp->ops->name);
    snprintf(out->solver, sizeof(out->solver), "%s", pp->solver);
    ctl_pp_migration_locked(pp, now_ns, out);
    out->max_util = pp->max_util;
    out->over_checks = pp->trig.over;
    out->replacements = pp->replacements;
    out->checks = pp->nchecks;
    out->last_solve_ms = pp->last_solve_ms;
    out->last_moved_bytes = pp->last_moved_bytes;
    out->last_parts_moved = pp->last_parts_moved;
    dem = ctl_pp_demand_locked(pp, now_ns, &n);
    ctl_pp_demand_scale(dem, n, pp->cfg.latency_ms);
    for (size_t i = 0; i < n; i++) {
        out->demand_req += dem[i].req;
        out->demand_bytes += dem[i].bytes;
    }
    free(dem);
    pthread_mutex_unlock(&pp->mu);
}

void
ctl_pp_demand_scale(struct ctl_pp_demand *d, size_t n, uint32_t latency_ms)
{
    for (size_t i = 0, j; latency_ms > 0 && i < n; i = j) {
        double req = 0, inflight = 0, scale;

        for (j = i; j < n && d[j].tenant == d[i].tenant; j++) {
            req += d[j].req;
            inflight += d[j].inflight;
        }
        scale = req > 0 ? inflight * 1000.0 / latency_ms / req : 0;
        for (size_t k = i; k < j; k++) {
            if (req <= 0) {
                d[k].req = d[k].inflight * 1000.0 / latency_ms;
            } else if (scale > 1) {
                d[k].req *= scale;
                d[k].bytes *= scale;
            }
        }
    }
}
