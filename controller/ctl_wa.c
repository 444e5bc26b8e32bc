/*
 * ctl_wa.c - the WA loop: views from the state, the policy's step, the
 * invariant check, and the local weight matrix the heartbeats are answered
 * with (see ctl_wa.h for the contract and the threads).
 *
 * The WA thread copies what it needs out of the state (a snapshot and the
 * cells, each under the state mutex), runs the step with no lock held, and
 * swaps the new matrix in under wa.mu, which guards only the matrix in
 * force, the stats and the kick counters. Lock order: never wa.mu and the
 * state mutex together.
 */
#include "ctl_wa.h"

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
#include "ctl_state.h"

/* The relative error of a row or column sum a step may leave. */
#define CTL_WA_TOL 1e-6
/* How long a kick waits for its projection. */
#define CTL_WA_KICK_WAIT_NS 1000000000ull

struct ctl_wa {
    struct ctl_state *st; /* borrowed */
    const struct pol_wa_ops *ops;
    struct pol_wa *pol; /* the stepping thread's alone */
    uint64_t interval_ns;
    pthread_t thread;
    int started;

    pthread_mutex_t mu;
    pthread_cond_t wake; /* the WA thread: a kick or stop */
    pthread_cond_t done; /* kickers: a projection is in force */
    int stop;
    uint64_t kicks, kicks_done;
    struct ctl_wa_matrix cur;
    uint64_t cur_ns; /* when cur was made; 0: never */
    struct ctl_wa_stats stats;
};

/* ---- the matrix ---- */

void
ctl_wa_matrix_fini(struct ctl_wa_matrix *m)
{
    free(m->tenants);
    free(m->gw);
    free(m->nodes);
    free(m->w);
    memset(m, 0, sizeof(*m));
}

/* Position of id in ids[n] (increasing), or SIZE_MAX. */
static size_t
find_id(const uint32_t *ids, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ids[mid] < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && ids[lo] == id ? lo : SIZE_MAX;
}

static double
round12(double x)
{
    char b[32];

    snprintf(b, sizeof(b), "%.12g", x);
    return strtod(b, NULL);
}

double
ctl_wa_matrix_get(const struct ctl_wa_matrix *m, uint32_t tenant, uint32_t node, double W)
{
    size_t t = find_id(m->tenants, m->ntenants, tenant);
    size_t n = find_id(m->nodes, m->nnodes, node);
    double w;

    if (t == SIZE_MAX || n == SIZE_MAX) {
        return W;
    }
    w = m->w[t * m->nnodes + n];
    if (m->gw[t] != W) {
        w *= W / m->gw[t];
    }
    return round12(w);
}

/* m's arrays for T tenants and N nodes, uninitialised. */
static void
matrix_alloc(struct ctl_wa_matrix *m, size_t T, size_t N)
{
    m->ntenants = T;
    m->nnodes = N;
    m->tenants = cm_malloc(T * sizeof(*m->tenants) + 1);
    m->gw = cm_malloc(T * sizeof(*m->gw) + 1);
    m->nodes = cm_malloc(N * sizeof(*m->nodes) + 1);
    m->w = cm_malloc(T * N * sizeof(*m->w) + 1);
}

static void
matrix_copy(struct ctl_wa_matrix *dst, const struct ctl_wa_matrix *src)
{
    size_t T = src->ntenants, N = src->nnodes;

    matrix_alloc(dst, T, N);
    if (T > 0) { /* an empty matrix has NULL arrays */
        memcpy(dst->tenants, src->tenants, T * sizeof(*dst->tenants));
        memcpy(dst->gw, src->gw, T * sizeof(*dst->gw));
    }
    if (N > 0) {
        memcpy(dst->nodes, src->nodes, N * sizeof(*dst->nodes));
    }
    if (T * N > 0) {
        memcpy(dst->w, src->w, T * N * sizeof(*dst->w));
    }
}

/* ---- the view ---- */

void
ctl_wa_input_build(const struct ctl_snapshot *s, const struct ctl_cell *cells, size_t ncells,
                   const struct ctl_wa_matrix *cur, int measure, uint64_t now_ns,
                   struct ctl_wa_input *out)
{
    size_t T = s->ntenants, N = s->nnodes;
    uint32_t *tids = cm_malloc(T * sizeof(*tids) + 1);
    size_t *cur_n = cm_malloc(N * sizeof(*cur_n) + 1);

    memset(out, 0, sizeof(*out));
    out->tenants = cm_calloc(T + 1, sizeof(*out->tenants));
    out->nodes = cm_calloc(N + 1, sizeof(*out->nodes));
    out->w = cm_malloc(T * N * sizeof(*out->w) + 1);
    for (size_t t = 0; t < T; t++) {
        out->tenants[t].id = s->tenants[t].t.id;
        out->tenants[t].weight = s->tenants[t].t.weight;
        tids[t] = s->tenants[t].t.id;
    }
    for (size_t n = 0; n < N; n++) {
        out->nodes[n].id = s->nodes[n].n.id;
        out->nodes[n].up = s->nodes[n].up;
        cur_n[n] = find_id(cur->nodes, cur->nnodes, s->nodes[n].n.id);
    }
    for (size_t t = 0; t < T; t++) {
        size_t ct = find_id(cur->tenants, cur->ntenants, tids[t]);

        for (size_t n = 0; n < N; n++) {
            out->w[t * N + n] =
                ct != SIZE_MAX && cur_n[n] != SIZE_MAX ? cur->w[ct * cur->nnodes + cur_n[n]] : NAN;
        }
    }
    if (measure) {
        out->cells = cm_calloc(T * N + 1, sizeof(*out->cells));
        /* Both lists are in node id order: walk them together. */
        for (size_t k = 0, n = 0; k < ncells; k++) {
            const struct ctl_cell *c = &cells[k];
            size_t t;

            while (n < N && s->nodes[n].n.id < c->node) {
                n++;
            }
            if (n == N) {
                break;
            }
            t = find_id(tids, T, c->tenant);
            if (s->nodes[n].n.id != c->node || !s->nodes[n].up || t == SIZE_MAX ||
                !isfinite(c->demand) || !isfinite(c->served) || !isfinite(c->wait)) {
                continue;
            }
            out->cells[t * N + n].demand = fmax(0.0, c->demand);
            out->cells[t * N + n].served = fmax(0.0, c->served);
            out->cells[t * N + n].wait = fmax(0.0, c->wait);
        }
    }
    out->v.ntenants = T;
    out->v.nnodes = N;
    out->v.tenants = out->tenants;
    out->v.nodes = out->nodes;
    out->v.cells = out->cells;
    out->v.w = out->w;
    out->v.now_ns = now_ns;
    free(tids);
    free(cur_n);
}

void
ctl_wa_input_fini(struct ctl_wa_input *in)
{
    free(in->tenants);
    free(in->nodes);
    free(in->cells);
    free(in->w);
    memset(in, 0, sizeof(*in));
}

/* ---- one step ---- */

void
ctl_wa_run(const struct pol_wa_ops *ops, struct pol_wa *pol, const struct ctl_wa_input *in,
           struct ctl_wa_matrix *out, struct ctl_wa_result *res)
{
    const struct pol_wa_view *v = &in->v;
    size_t T = v->ntenants, N = v->nnodes;

    memset(res, 0, sizeof(*res));
    matrix_alloc(out, T, N);
    for (size_t t = 0; t < T; t++) {
        out->tenants[t] = v->tenants[t].id;
        out->gw[t] = v->tenants[t].weight;
    }
    for (size_t n = 0; n < N; n++) {
        out->nodes[n] = v->nodes[n].id;
    }
    res->rc = ops->step(pol, v, out->w, &res->stats);
    res->error =
        res->rc == 0 ? pol_wa_invariant_error(v, out->w, pol_wa_cfg_of(pol)->floor_frac) : 1.0;
    if (res->rc == 0 && res->error <= CTL_WA_TOL) {
        return;
    }
    res->fallback = 1;
    memset(&res->stats, 0, sizeof(res->stats));
    for (size_t t = 0; t < T; t++) {
        for (size_t n = 0; n < N; n++) {
            out->w[t * N + n] = v->tenants[t].weight;
        }
    }
}

/* ---- the loop ---- */

int
ctl_wa_create(struct ctl_state *st, const struct ctl_wa_cfg *cfg, struct ctl_wa **out)
{
    const struct pol_wa_ops *ops = pol_wa_find(cfg->policy);
    struct ctl_wa *wa;
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (ops == NULL || cfg->interval_ns == 0) {
        return CM_E_BADARG;
    }
    wa = cm_calloc(1, sizeof(*wa));
    rc = ops->create(NULL, &wa->pol);
    if (rc < 0) {
        free(wa);
        return rc;
    }
    wa->st = st;
    wa->ops = ops;
    wa->interval_ns = cfg->interval_ns;
    wa->stats.age_ms = -1;
    pthread_mutex_init(&wa->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wa->wake, &ca);
    pthread_cond_init(&wa->done, &ca);
    pthread_condattr_destroy(&ca);
    *out = wa;
    return 0;
}

const char *
ctl_wa_policy(const struct ctl_wa *wa)
{
    return wa->ops->name;
}

/* One step on the calling thread (the WA thread, or a test without it). */
void
ctl_wa_step(struct ctl_wa *wa, uint64_t now_ns, int measure)
{
    struct ctl_snapshot s;
    struct ctl_cell *cells = NULL;
    struct ctl_wa_matrix cur = {0}, next = {0};
    struct ctl_wa_input in;
    struct ctl_wa_result res;
    size_t ncells = 0;
    uint64_t t0 = cm_now_ns();

    pthread_mutex_lock(&wa->mu);
    matrix_copy(&cur, &wa->cur);
    pthread_mutex_unlock(&wa->mu);
    ctl_state_snapshot(wa->st, now_ns, &s);
    if (measure) {
        ncells = ctl_state_cells(wa->st, &cells);
    }
    ctl_wa_input_build(&s, cells, ncells, &cur, measure, now_ns, &in);
    ctl_wa_run(wa->ops, wa->pol, &in, &next, &res);
    if (res.fallback) {
        CM_ERROR("wa step broken, weights even policy=%s rc=%s invariant_error=%g tenants=%zu "
                 "nodes=%zu",
                 wa->ops->name, res.rc < 0 ? cm_strerror(res.rc) : "0", res.error, in.v.ntenants,
                 in.v.nnodes);
    } else if (res.stats.projected) {
        CM_DEBUG("wa weights projected onto the invariants policy=%s", wa->ops->name);
    }
    CM_DEBUG("wa step policy=%s full=%d tenants=%zu nodes=%zu cycles=%u moved=%.4g "
             "max_mismatch=%.4g",
             wa->ops->name, measure, in.v.ntenants, in.v.nnodes, res.stats.cycles, res.stats.moved,
             res.stats.max_mismatch);

    pthread_mutex_lock(&wa->mu);
    ctl_wa_matrix_fini(&wa->cur);
    wa->cur = next;
    wa->cur_ns = now_ns;
    wa->stats.error = res.fallback ? 0.0 : res.error;
    wa->stats.fallbacks += (uint64_t)res.fallback;
    if (measure) {
        wa->stats.steps++;
        wa->stats.cycles_total += res.stats.cycles;
        wa->stats.moved_total += res.stats.moved;
        wa->stats.last = res.stats;
        wa->stats.last_seconds = (double)(cm_now_ns() - t0) / 1e9;
    } else {
        wa->stats.projections++;
    }
    pthread_mutex_unlock(&wa->mu);

    ctl_wa_input_fini(&in);
    ctl_wa_matrix_fini(&cur);
    ctl_snapshot_fini(&s);
    free(cells);
}

static void *
wa_main(void *arg)
{
    struct ctl_wa *wa = arg;
    uint64_t next = cm_now_ns();

    pthread_mutex_lock(&wa->mu);
    while (!wa->stop) {
        uint64_t now = cm_now_ns(), kicks = wa->kicks;
        int full = now >= next;

        if (!full && kicks == wa->kicks_done) {
            struct timespec ts = cm_deadline(CLOCK_MONOTONIC, next - now);

            pthread_cond_timedwait(&wa->wake, &wa->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&wa->mu);
        ctl_wa_step(wa, now, full);
        if (full) {
            /* On the interval's grid, but never a burst after a stall. */
            next += wa->interval_ns;
            if (next <= now) {
                next = now + wa->interval_ns;
            }
        }
        pthread_mutex_lock(&wa->mu);
        wa->kicks_done = kicks;
        pthread_cond_broadcast(&wa->done);
    }
    pthread_mutex_unlock(&wa->mu);
    return NULL;
}

int
ctl_wa_start(struct ctl_wa *wa)
{
    int rc = pthread_create(&wa->thread, NULL, wa_main, wa);

    if (rc != 0) {
        return -rc;
    }
    wa->started = 1;
    CM_INFO("wa started policy=%s interval_ms=%llu", wa->ops->name,
            (unsigned long long)(wa->interval_ns / 1000000));
    return 0;
}

void
ctl_wa_kick(struct ctl_wa *wa)
{
    struct timespec ts;
    uint64_t mine;

    if (wa == NULL || !wa->started) {
        return;
    }
    ts = cm_deadline(CLOCK_MONOTONIC, CTL_WA_KICK_WAIT_NS);
    pthread_mutex_lock(&wa->mu);
    mine = ++wa->kicks;
    pthread_cond_signal(&wa->wake);
    while (wa->kicks_done < mine && !wa->stop) {
        if (pthread_cond_timedwait(&wa->done, &wa->mu, &ts) == ETIMEDOUT) {
            CM_WARN("wa kick not answered within 1 s; the next step applies it");
            break;
        }
    }
    pthread_mutex_unlock(&wa->mu);
}

void
ctl_wa_destroy(struct ctl_wa *wa)
{
    if (wa == NULL) {
        return;
    }
    if (wa->started) {
        pthread_mutex_lock(&wa->mu);
        wa->stop = 1;
        pthread_cond_broadcast(&wa->wake);
        pthread_cond_broadcast(&wa->done);
        pthread_mutex_unlock(&wa->mu);
        pthread_join(wa->thread, NULL);
    }
    wa->ops->destroy(wa->pol);
    ctl_wa_matrix_fini(&wa->cur);
    pthread_cond_destroy(&wa->wake);
    pthread_cond_destroy(&wa->done);
    pthread_mutex_destroy(&wa->mu);
    free(wa);
}

void
ctl_wa_column(struct ctl_wa *wa, uint32_t node, const uint32_t *tenants, const double *W, size_t n,
              double *out)
{
    pthread_mutex_lock(&wa->mu);
    for (size_t i = 0; i < n; i++) {
        out[i] = ctl_wa_matrix_get(&wa->cur, tenants[i], node, W[i]);
    }
    pthread_mutex_unlock(&wa->mu);
}

void
ctl_wa_read(struct ctl_wa *wa, uint64_t now_ns, struct ctl_wa_matrix *m, struct ctl_wa_stats *stats)
{
    pthread_mutex_lock(&wa->mu);
    matrix_copy(m, &wa->cur);
    *stats = wa->stats;
    stats->age_ms = wa->cur_ns == 0        ? -1
                    : now_ns >= wa->cur_ns ? (int64_t)((now_ns - wa->cur_ns) / 1000000)
                                           : 0;
    pthread_mutex_unlock(&wa->mu);
}
