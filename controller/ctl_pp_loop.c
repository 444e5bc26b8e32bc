/*
 * ctl_pp_loop.c - the re-placement loop (see ctl_pp.h): its thread, the
 * check it runs every interval, the trigger's hysteresis, the fair-share
 * utilisation it measures, and rebalance requests.
 *
 * The loop thread wakes every interval (or at once for a rebalance): it
 * takes a state snapshot, syncs the rows with it, copies the rows and the
 * summed demand under the mutex, then builds a pol_pp view and measures the
 * current fair-share utilisation with no lock held. When the trigger says
 * so (or a rebalance asked), the policy runs, still with no lock held; its
 * rows are committed only for partitions whose row did not change
 * meanwhile, in one store transaction with the new epoch.
 *
 * Threads: pp_main is the loop thread (ctl_pp_start); ctl_pp_rebalance
 * blocks an HTTP thread until the loop answers; the pure parts (trigger,
 * utilisation, acceptance) run on any thread. pp->pol is the loop thread's
 * alone, and no lock is held while it runs.
 *
 * Naming: do_x() expects pp->mu held.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "ctl_pp_impl.h"
#include "ctl_state.h"

#define REBALANCE_SLACK_MS 10000u
#define RETIRE_NS (500ull * 1000000ull) /* draining nodes looked at this often */

/* ---- pure parts: the trigger, the utilisation, acceptance ---- */

int
ctl_pp_trig_step(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, double max_util,
                 int migrating, uint64_t now_ms)
{
    if (migrating) {
        t->over = 0;
        if (t->quiet_until_ms < now_ms + c->cooldown_ms) {
            t->quiet_until_ms = now_ms + c->cooldown_ms;
        }
        return 0;
    }
    if (now_ms < t->quiet_until_ms) {
        t->over = 0;
        return 0;
    }
    t->over = max_util > c->headroom ? t->over + 1 : 0;
    if (t->over >= (c->checks > 0 ? c->checks : 1)) {
        t->over = 0;
        return 1;
    }
    return 0;
}

void
ctl_pp_trig_tried(struct ctl_pp_trig *t, const struct ctl_pp_trig_cfg *c, uint64_t now_ms)
{
    t->over = 0;
    t->quiet_until_ms = now_ms + c->cooldown_ms;
}

static long
node_index(const struct pol_pp_view *v, uint32_t id)
{
    for (size_t n = 0; n < v->nnodes; n++) {
        if (v->nodes[n].id == id) {
            return (long)n;
        }
    }
    return -1;
}

int
ctl_pp_util(const struct pol_pp_view *v, double *max_util)
{
    double *frac, *load;
    size_t off = 0;
    int rc;

    *max_util = 0;
    if (v->cur_rows == NULL || v->nnodes == 0) {
        return 0;
    }
    frac = cm_calloc(v->ntenants + 1, sizeof(*frac));
    rc = pol_pp_drf(v, frac);
    if (rc != 0) {
        free(frac);
        return rc;
    }
    load = cm_calloc(v->nnodes * POL_PP_NRES, sizeof(*load));
    for (size_t p = 0; p < v->nparts; p++) {
        const struct pol_pp_part *pt = &v->parts[p];
        long hold[POL_PP_MAX_WIDTH];
        size_t c = 0, ti = 0;

        while (ti < v->ntenants && v->tenants[ti].id != pt->tenant) {
            ti++;
        }
        for (uint32_t i = 0; i < v->cur_len[p] && i < pt->width; i++) {
            long n = node_index(v, v->cur_rows[off + i]);
            int dup = 0;

            for (size_t q = 0; q < c; q++) {
                dup |= hold[q] == n;
            }
            if (n >= 0 && v->nodes[n].up && !dup) {
                hold[c++] = n;
            }
        }
        off += pt->width;
        if (c == 0 || ti == v->ntenants) {
            continue;
        }
        /* The up holders in slot order: with a data holder down, the next
         * position stands in for it in reads. */
        for (size_t q = 0; q < c; q++) {
            double sh = pol_pp_slot_share(pt->k, (uint32_t)c, (uint32_t)q);

            for (int r = 0; r < POL_PP_NRES; r++) {
                load[(size_t)hold[q] * POL_PP_NRES + r] += pt->demand[r] * frac[ti] * sh;
            }
        }
    }
    for (size_t n = 0; n < v->nnodes; n++) {
        for (int r = 0; r < POL_PP_NRES && v->nodes[n].up; r++) {
            double u = load[n * POL_PP_NRES + r] / v->nodes[n].cap[r];

            *max_util = fmax(*max_util, u);
        }
    }
    free(load);
    free(frac);
    return 0;
}

int
ctl_pp_accept(double util_before, const struct pol_pp_stats *after, double headroom)
{
    double a = fmax(after->max_util[POL_PP_REQ], after->max_util[POL_PP_BYTES]);

    if (after->parts_moved == 0 || util_before <= headroom) {
        return 0;
    }
    return a <= headroom || a < util_before - 0.05;
}

/* ---- the loop ---- */

/* What one check works on, copied under the mutex. */
struct pp_check {
    struct ctl_snapshot s;
    struct ctl_pp_rows rows;
    struct ctl_pp_demand *dem;
    size_t ndem;
    int migrating;
    int unreported; /* a gateway that owns tenants is down or sends no report */
    /* the view */
    struct pol_pp_node *nodes;
    struct pol_pp_tenant *tenants;
    struct pol_pp_part *parts;
    uint32_t *cur, *cur_len;
    struct pol_pp_view v;
};

static void
check_fini(struct pp_check *c)
{
    ctl_snapshot_fini(&c->s);
    ctl_pp_rows_fini(&c->rows);
    free(c->dem);
    free(c->nodes);
    free(c->tenants);
    free(c->parts);
    free(c->cur);
    free(c->cur_len);
}

/* The positions that serve p's reads, as pol_pp_part.k: an object under
 * the gateway's small threshold is 1+m whole copies in slots 0..m, so a
 * partition whose mean request is that small is read from those m+1
 * positions, not from its k data positions (a k+m tenant's hot small object
 * otherwise looks like load on slot k-1, and milp moves copies for it). A
 * partition with nothing answered yet (a backlog, no bytes) keeps k. */
static uint32_t
read_positions(const struct ctl_pp_trows *r, const struct ctl_pp_demand *d)
{
    uint32_t m = r->width - r->k;

    if (r->k > 1 && m >= 1 && d->bytes > 0.0 && d->bytes < CTL_PP_SMALL_BYTES * d->req) {
        return m + 1;
    }
    return r->k;
}

static const struct ctl_pp_demand *
find_demand(const struct pp_check *c, uint32_t tenant, uint32_t p)
{
    struct ctl_pp_demand key = {.tenant = tenant, .partition = p};

    return c->ndem ? bsearch(&key, c->dem, c->ndem, sizeof(key), ctl_pp_cmp_demand) : NULL;
}

static void
check_view(struct ctl_pp *pp, struct pp_check *c)
{
    size_t nparts = 0, slots = 0, k = 0, off = 0;

    c->nodes = cm_calloc(c->s.nnodes + 1, sizeof(*c->nodes));
    for (size_t i = 0; i < c->s.nnodes; i++) {
        const struct ctl_node_view *nv = &c->s.nodes[i];
        struct pol_pp_node *n = &c->nodes[i];

        n->id = nv->n.id;
        n->up = nv->up && nv->n.retire == CTL_NODE_MEMBER; /* nothing is placed on the others */
        n->cap[POL_PP_REQ] = nv->cap_ops > 0 ? nv->cap_ops : pp->cfg.nominal_ops;
        n->cap[POL_PP_BYTES] = nv->cap_bytes > 0 ? nv->cap_bytes : pp->cfg.nominal_bytes;
    }
    c->tenants = cm_calloc(c->s.ntenants + 1, sizeof(*c->tenants));
    for (size_t i = 0; i < c->s.ntenants; i++) {
        c->tenants[i].id = c->s.tenants[i].t.id;
        c->tenants[i].weight = c->s.tenants[i].t.weight;
    }
    for (size_t i = 0; i < c->rows.n; i++) {
        nparts += c->rows.t[i].parts;
        slots += (size_t)c->rows.t[i].parts * c->rows.t[i].width;
    }
    c->parts = cm_calloc(nparts + 1, sizeof(*c->parts));
    c->cur = cm_calloc(slots + 1, sizeof(*c->cur));
    c->cur_len = cm_calloc(nparts + 1, sizeof(*c->cur_len));
    for (size_t i = 0; i < c->rows.n; i++) {
        const struct ctl_pp_trows *r = &c->rows.t[i];

        for (uint32_t p = 0; p < r->parts; p++, k++) {
            const struct ctl_pp_demand *d = find_demand(c, r->tenant, p);
            struct pol_pp_part *pt = &c->parts[k];

            pt->tenant = r->tenant;
            pt->id = p;
            pt->width = r->width;
            pt->k = r->k;
            /* An empty partition costs a byte to move, so it moves only
             * when it must (a free move would churn rows for nothing). */
            pt->resident_bytes = 1;
            if (d != NULL) {
                pt->demand[POL_PP_REQ] = d->req;
                pt->demand[POL_PP_BYTES] = d->bytes;
                pt->resident_bytes = d->resident_bytes > 0 ? d->resident_bytes : 1;
                pt->k = read_positions(r, d);
            }
            memcpy(&c->cur[off], &r->ids[(size_t)p * r->width], r->len[p] * sizeof(*c->cur));
            c->cur_len[k] = r->len[p];
            off += r->width;
        }
    }
    c->v.nodes = c->nodes;
    c->v.nnodes = c->s.nnodes;
    c->v.parts = c->parts;
    c->v.nparts = nparts;
    c->v.tenants = c->tenants;
    c->v.ntenants = c->s.ntenants;
    c->v.cur_rows = c->cur;
    c->v.cur_len = c->cur_len;
    c->v.headroom = pp->cfg.headroom;
}

/* Commits out's rows where they differ from c's and the live row is still
 * c's. 0 (*changed set) or a store error. */
static int
do_commit(struct ctl_pp *pp, const struct pp_check *c, const struct pol_pp_out *out,
          const char *solver, int *changed)
{
    struct ctl_pp_trows *puts = cm_calloc(c->rows.n + 1, sizeof(*puts));
    size_t nput = 0, k = 0, off = 0;
    int rc = 0;

    *changed = 0;
    for (size_t i = 0; i < c->rows.n; i++) {
        const struct ctl_pp_trows *was = &c->rows.t[i];
        const struct ctl_pp_trows *live = ctl_pp_find_locked(pp, was->tenant);
        struct ctl_pp_trows *r = &puts[nput];
        int any = 0;

        for (uint32_t p = 0; p < was->parts; p++, k++, off += was->width) {
            const uint32_t *old = &was->ids[(size_t)p * was->width];
            const uint32_t *nrow = &out->rows[off];

            if (out->len[k] == was->len[p] && memcmp(old, nrow, was->len[p] * sizeof(*old)) == 0) {
                continue;
            }
            if (live == NULL || live->parts != was->parts || live->len[p] != was->len[p] ||
                memcmp(&live->ids[(size_t)p * was->width], old, was->len[p] * sizeof(*old)) != 0) {
                continue; /* changed meanwhile: this answer is about another row */
            }
            if (!any) {
                ctl_pp_trows_copy(r, live);
                any = 1;
            }
            r->row_epoch[p] = pp->epoch + 1;
            r->by_hash[p] = 0;
            memcpy(&r->ids[(size_t)p * r->width], nrow, out->len[k] * sizeof(*nrow));
            r->len[p] = out->len[k];
            CM_DEBUG("partition placed tenant=%u partition=%u epoch=%llu", r->tenant, p,
                     (unsigned long long)(pp->epoch + 1));
        }
        nput += any;
    }
    if (nput > 0) {
        rc = ctl_pp_write_locked(pp, puts, nput, NULL, 0, solver);
        *changed = rc == 0;
    }
    free(puts);
    return rc;
}

/* 1 if some row of rows names node. */
static int
rows_name(const struct ctl_pp_rows *rows, uint32_t node)
{
    for (size_t i = 0; i < rows->n; i++) {
        const struct ctl_pp_trows *r = &rows->t[i];

        for (uint32_t p = 0; p < r->parts; p++) {
            for (uint32_t j = 0; j < r->len[p]; j++) {
                if (r->ids[(size_t)p * r->width + j] == node) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* A draining node is removed once no row names it and the gateways have
 * moved their chunks off it: every gateway that owns tenants reports (one
 * down or not heard from would migrate later, and until then its versions
 * still name the node), and none is migrating. */
static void
retire_drained(struct ctl_pp *pp, const struct pp_check *c)
{
    for (size_t i = 0; i < c->s.nnodes && !c->migrating && !c->unreported; i++) {
        const struct ctl_node_view *nv = &c->s.nodes[i];

        if (nv->n.retire == CTL_NODE_DRAINING && !rows_name(&c->rows, nv->n.id)) {
            int rc = ctl_state_node_removed(pp->st, nv->n.id);

            if (rc < 0) {
                CM_ERROR("node not removed node=%u err=%s", nv->n.id, cm_strerror(rc));
            }
        }
    }
}

/* The first part of a check: a snapshot, the rows synced with it and
 * copied, the demand and whether a gateway migrates; then the removal of
 * drained nodes. Returns the sync's result. */
static int
check_prepare(struct ctl_pp *pp, uint64_t now_ns, struct pp_check *c)
{
    struct ctl_pp_status ms;
    int rc;

    memset(c, 0, sizeof(*c));
    memset(&ms, 0, sizeof(ms));
    ctl_state_snapshot(pp->st, now_ns, &c->s);
    pthread_mutex_lock(&pp->mu);
    rc = ctl_pp_sync_locked(pp, &c->s);
    ctl_pp_copy_locked(pp, &c->s, &c->rows);
    c->dem = ctl_pp_demand_locked(pp, now_ns, &c->ndem);
    ctl_pp_demand_scale(c->dem, c->ndem, pp->cfg.latency_ms);
    ctl_pp_migration_locked(pp, now_ns, &ms);
    c->migrating = ms.migrating;
    for (size_t i = 0; i < c->s.ngateways; i++) {
        const struct ctl_gateway_view *g = &c->s.gateways[i];

        c->unreported |= g->tenants > 0 && !(g->up && ctl_pp_reported_locked(pp, g->id, now_ns));
    }
    pthread_mutex_unlock(&pp->mu);
    if (rc == 0) {
        retire_drained(pp, c);
    }
    return rc;
}

/* One check; manual: a rebalance asked for it. res (may be NULL) gets the
 * outcome. */
static void
check_once(struct ctl_pp *pp, int manual, struct ctl_pp_result *res)
{
    struct pp_check c;
    struct ctl_pp_result r;
    uint64_t now_ns = cm_now_ns(), now_ms = now_ns / 1000000u;
    double util = 0;
    int place, rc;

    memset(&r, 0, sizeof(r));
    r.rc = check_prepare(pp, now_ns, &c);
    check_view(pp, &c);
    rc = ctl_pp_util(&c.v, &util);
    if (rc != 0 && r.rc == 0) {
        r.rc = rc;
    }
    r.util_before = r.util_after = util;
    pthread_mutex_lock(&pp->mu);
    pp->nchecks++;
    pp->max_util = util;
    place =
        rc == 0 && (ctl_pp_trig_step(&pp->trig, &pp->tcfg, util, c.migrating, now_ms) || manual);
    r.epoch = pp->epoch;
    pthread_mutex_unlock(&pp->mu);
    snprintf(r.solver, sizeof(r.solver), "%s", pp->ops->name);
    if (!place || strcmp(pp->ops->name, "hash") == 0) {
        goto out;
    }

    size_t slots = pol_pp_slots(&c.v);
    struct pol_pp_out o = {
        .rows = cm_calloc(slots + 1, sizeof(uint32_t)),
        .len = cm_calloc(c.v.nparts + 1, sizeof(uint32_t)),
    };
    uint64_t t0 = cm_now_ns();

    rc = pp->ops->place(pp->pol, &c.v, pp->cfg.budget_ms, &o);
    r.solve_ms = (double)(cm_now_ns() - t0) / 1e6;
    if (rc == 0) {
        snprintf(r.solver, sizeof(r.solver), "%s", o.stats.solver);
        r.parts_moved = o.stats.parts_moved;
        r.bytes_moved = o.stats.bytes_moved;
        r.util_after = fmax(o.stats.max_util[POL_PP_REQ], o.stats.max_util[POL_PP_BYTES]);
    }
    pthread_mutex_lock(&pp->mu);
    if (rc == 0 && ctl_pp_accept(util, &o.stats, pp->cfg.headroom)) {
        rc = do_commit(pp, &c, &o, o.stats.solver, &r.changed);
    }
    if (r.changed) {
        pp->replacements++;
        pp->last_moved_bytes = r.bytes_moved;
        pp->last_parts_moved = r.parts_moved;
    } else {
        r.util_after = util;
    }
    pp->last_solve_ms = r.solve_ms;
    r.epoch = pp->epoch;
    ctl_pp_trig_tried(&pp->trig, &pp->tcfg, now_ms);
    pthread_mutex_unlock(&pp->mu);
    r.rc = rc;
    CM_INFO("placement solved manual=%d solver=%s solve_ms=%.1f util_before=%.3f util_after=%.3f "
            "partitions_moved=%u bytes_moved=%llu committed=%d epoch=%llu err=%s",
            manual, r.solver, r.solve_ms, util, r.util_after, r.parts_moved,
            (unsigned long long)r.bytes_moved, r.changed, (unsigned long long)r.epoch,
            rc ? cm_errname(rc) : "none");
    free(o.rows);
    free(o.len);
out:
    check_fini(&c);
    if (res != NULL) {
        *res = r;
    }
}

static void *
pp_main(void *arg)
{
    struct ctl_pp *pp = arg;
    uint64_t next = cm_now_ns() + (uint64_t)pp->cfg.interval_ms * 1000000u;

    pthread_mutex_lock(&pp->mu);
    while (!pp->stop) {
        uint64_t now = cm_now_ns();
        int manual = pp->asked > pp->answered;
        uint64_t want = pp->asked;
        struct ctl_pp_result res;

        if (!manual && now < next) {
            /* A node being removed is looked at more often than placement:
             * `node remove --wait` returns soon after its chunks moved. */
            uint64_t until = pp->draining && next - now > RETIRE_NS ? now + RETIRE_NS : next;
            struct timespec ts = cm_deadline(CLOCK_MONOTONIC, until - now);

            if (pthread_cond_timedwait(&pp->cv, &pp->mu, &ts) == ETIMEDOUT && until < next) {
                struct pp_check c;

                pthread_mutex_unlock(&pp->mu);
                (void)check_prepare(pp, cm_now_ns(), &c);
                check_fini(&c);
                pthread_mutex_lock(&pp->mu);
            }
            continue;
        }
        pthread_mutex_unlock(&pp->mu);
        check_once(pp, manual, &res);
        next = cm_now_ns() + (uint64_t)pp->cfg.interval_ms * 1000000u;
        pthread_mutex_lock(&pp->mu);
        if (manual) {
            pp->answer = res;
            pp->answered = want;
            pthread_cond_broadcast(&pp->done_cv);
        }
    }
    pthread_mutex_unlock(&pp->mu);
    return NULL;
}

void
ctl_pp_rebalance(struct ctl_pp *pp, struct ctl_pp_result *out)
{
    uint64_t want, until;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&pp->mu);
    if (!pp->started) {
        pthread_mutex_unlock(&pp->mu);
        out->rc = CM_E_UNAVAIL;
        return;
    }
    want = ++pp->asked;
    pthread_cond_signal(&pp->cv);
    until = cm_now_ns() + (uint64_t)(pp->cfg.budget_ms + REBALANCE_SLACK_MS) * 1000000u;
    while (pp->answered < want && !pp->stop && cm_now_ns() < until) {
        struct timespec ts = cm_deadline(CLOCK_MONOTONIC, until - cm_now_ns());

        (void)pthread_cond_timedwait(&pp->done_cv, &pp->mu, &ts);
    }
    if (pp->answered >= want) {
        *out = pp->answer;
    } else {
        out->rc = CM_E_TIMEOUT;
        out->epoch = pp->epoch;
    }
    pthread_mutex_unlock(&pp->mu);
}

int
ctl_pp_start(struct ctl_pp *pp)
{
    int rc = pthread_create(&pp->thread, NULL, pp_main, pp);

    if (rc != 0) {
        return -rc;
    }
    pthread_mutex_lock(&pp->mu);
    pp->started = 1;
    pthread_mutex_unlock(&pp->mu);
    return 0;
}
