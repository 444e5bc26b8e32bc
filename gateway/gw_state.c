/*
 * gw_state.c - controller state polling (see gw_state.h); the snapshots
 * it swaps in are parsed and read in gw_snap.c.
 *
 * Threads: one background thread (state_main) polls, parses, swaps the
 * snapshot under st->mu, saves the JSON to gw_meta and purges the objects
 * of tenants that disappeared. Readers take a reference under st->mu and
 * drop it with an atomic decrement; the last reference frees.
 *
 * Refreshes: a request whose key is unknown waits for a poll that begins
 * after it asked (gw_state_refresh). Such polls come at most every
 * REFRESH_GAP_MS and give up after REFRESH_TIMEOUT_MS; only this thread
 * polls, so one is in flight at most. Once a poll failed, requests do not
 * wait until one succeeds again: with the controller down, unknown keys
 * are refused at once instead of each costing a timeout.
 *
 * Invariants: st->cur is never NULL. A purge runs only on a state fresh
 * from the controller whose epoch is not older than any seen before (a
 * controller that lost its data would otherwise erase every tenant).
 */
#include "gw_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_token.h"
#include "gw_meta.h"
#include "gw_s3_sig.h"

#define PURGE_BATCH 256
#define REFRESH_GAP_MS 200     /* between the starts of polls asked by requests */
#define REFRESH_TIMEOUT_MS 500 /* a poll someone waits for */
#define HURRY_GAP_MS 50        /* between the starts of polls in a hurry (gw_state_hurry) */

struct gw_state {
    struct gw_state_cfg cfg;
    char *url; /* the poll's, with this gateway's id and URLs */
    char token[256];
    int have_token;
    struct gw_meta *meta;
    struct gw_engine *engine;

    pthread_mutex_t mu; /* guards cur, stop, running, stats, the waiters */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    struct gw_snap *cur;
    int stop;
    int running; /* the thread polls: refreshes can be had */
    int started;
    struct gw_state_wait *waiting, **waiting_tail; /* asked since the last poll began */
    uint64_t hurry_until_ns;                       /* polls HURRY_GAP_MS apart until then */
    pthread_t thread;
    struct gw_state_stats stats;

    /* state thread only */
    char *last_body;
    uint64_t max_epoch;
    int fresh; /* cur came from the controller (not the cache) */
};

/* ---- the state thread ---- */

struct gw_snap *
gw_state_snap(struct gw_state *st)
{
    struct gw_snap *s;

    pthread_mutex_lock(&st->mu);
    s = st->cur;
    gw_snap_ref(s);
    pthread_mutex_unlock(&st->mu);
    return s;
}

/* The tenants' weights, for the engine's replica selection. */
static void
set_weights(struct gw_engine *e, const struct gw_snap *s)
{
    uint32_t *ids = cm_calloc(s->ntenants + 1, sizeof(*ids));
    double *w = cm_calloc(s->ntenants + 1, sizeof(*w));

    for (size_t i = 0; i < s->ntenants; i++) { /* sorted by id */
        ids[i] = s->tenants[i].id;
        w[i] = s->tenants[i].weight;
    }
    gw_engine_set_weights(e, ids, w, s->ntenants);
    free(ids);
    free(w);
}

static void
install(struct gw_state *st, struct gw_snap *s)
{
    struct gw_snap *old;

    pthread_mutex_lock(&st->mu);
    old = st->cur;
    st->cur = s;
    st->stats.epoch = s->epoch;
    pthread_mutex_unlock(&st->mu);
    gw_snap_unref(old);
    if (st->engine != NULL) {
        gw_engine_set_nodes(st->engine, s->nodes, s->nnodes);
        set_weights(st->engine, s);
    }
}

struct purge_list {
    struct gw_layout *v;
    size_t n, cap;
};

static void
purge_add(void *arg, const struct gw_layout *l)
{
    struct purge_list *pl = arg;

    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? pl->cap * 2 : 64;
        pl->v = cm_realloc(pl->v, pl->cap * sizeof(*pl->v));
    }
    pl->v[pl->n++] = *l;
}

static int
stopping(struct gw_state *st)
{
    int s;

    pthread_mutex_lock(&st->mu);
    s = st->stop;
    pthread_mutex_unlock(&st->mu);
    return s;
}

static void
purge_tenant(struct gw_state *st, uint32_t tenant)
{
    uint64_t total = 0;
    int left = 1;

    CM_INFO("purging objects of deleted tenant tenant=%u", tenant);
    while (left && !stopping(st)) {
        struct purge_list pl = {NULL, 0, 0};
        struct gw_meta_batch *b;
        int rc = gw_meta_batch_begin(st->meta, &b);
        if (rc == 0) {
            rc = gw_meta_purge(b, tenant, PURGE_BATCH, purge_add, &pl, &left);
            if (rc == 0) {
                rc = gw_meta_batch_commit(b);
            } else {
                gw_meta_batch_abort(b);
            }
        }
        if (rc != 0) {
            CM_WARN("tenant purge failed tenant=%u err=%s", tenant, cm_errname(rc));
            free(pl.v);
            return;
        }
        for (size_t i = 0; i < pl.n; i++) {
            if (st->engine != NULL) {
                gw_engine_delete(st->engine, &pl.v[i], 0);
            }
        }
        total += pl.n;
        free(pl.v);
    }
    pthread_mutex_lock(&st->mu);
    st->stats.tenants_purged++;
    st->stats.objects_purged += total;
    pthread_mutex_unlock(&st->mu);
    CM_INFO("purged deleted tenant tenant=%u objects=%llu", tenant, (unsigned long long)total);
}

struct gone_ctx {
    const struct gw_snap *snap;
    uint32_t *ids;
    size_t n, cap;
};

static void
gone_one(void *arg, uint32_t tenant)
{
    struct gone_ctx *c = arg;

    if (gw_snap_tenant(c->snap, tenant) != NULL) {
        return;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->ids = cm_realloc(c->ids, c->cap * sizeof(*c->ids));
    }
    c->ids[c->n++] = tenant;
}

static void
purge_gone(struct gw_state *st, const struct gw_snap *s)
{
    struct gone_ctx c = {s, NULL, 0, 0};

    if (gw_meta_tenants(st->meta, gone_one, &c) != 0) {
        free(c.ids);
        return;
    }
    for (size_t i = 0; i < c.n; i++) {
        purge_tenant(st, c.ids[i]);
    }
    free(c.ids);
}

void
gw_controller_url(const char *c, const char *path, char *url, size_t cap)
{
    if (strncmp(c, "http://", 7) == 0 || strncmp(c, "https://", 8) == 0) {
        size_t n = strlen(c);
        while (n > 0 && c[n - 1] == '/') {
            n--;
        }
        snprintf(url, cap, "%.*s%s", (int)n, c, path);
    } else {
        snprintf(url, cap, "http://%s%s", c, path);
    }
}

static void
build_url(struct gw_state *st)
{
    char base[256];
    struct cm_buf b;

    gw_controller_url(st->cfg.controller, "/v1/internal/state", base, sizeof(base));
    cm_buf_init(&b);
    cm_buf_printf(&b, "%s", base);
    if (st->cfg.self != NULL) {
        cm_buf_printf(&b, "?gateway=");
        cm_httpc_escape(&b, st->cfg.self);
        cm_buf_printf(&b, "&url=");
        cm_httpc_escape(&b, st->cfg.url);
        if (st->cfg.s3_url != NULL) {
            cm_buf_printf(&b, "&s3_url=");
            cm_httpc_escape(&b, st->cfg.s3_url);
        }
    }
    st->url = cm_buf_take(&b, NULL);
}

/* One poll with timeout_ms. Returns the new snapshot (a reference) when
 * the objects of deleted tenants are to be purged by it, else NULL. */
static struct gw_snap *
poll_once(struct gw_state *st, int timeout_ms)
{
    struct cm_httpc_resp resp = {0};
    struct gw_snap *s, *purge = NULL;
    const char *why = NULL;
    int rc, up = 0;

    if (!st->have_token && st->cfg.token_file != NULL) {
        st->have_token = cm_token_load(st->cfg.token_file, 0, st->token, sizeof(st->token)) == 0;
    }
    rc = cm_httpc_request("GET", st->url, st->have_token ? st->token : NULL, NULL, timeout_ms,
                          &resp);
    if (rc != 0 || resp.status != 200) {
        if (rc == 0 && resp.status == 401) {
            st->have_token = 0; /* the token file may have been rewritten */
        }
        CM_DEBUG("state poll failed url=%s err=%s status=%d", st->url, rc ? cm_errname(rc) : "http",
                 rc ? 0 : resp.status);
        goto out;
    }
    up = 1;
    if (st->last_body != NULL && strcmp(st->last_body, resp.body) == 0 && st->fresh) {
        goto out;
    }
    rc = gw_snap_parse(resp.body, resp.len, &s, &why);
    if (rc != 0) {
        CM_WARN("bad controller state, keeping the last one reason=\"%s\"", why);
        up = 0;
        goto out;
    }
    if (s->epoch != st->stats.epoch || !st->fresh) {
        CM_INFO("state epoch=%llu tenants=%zu nodes=%zu partitions=%u",
                (unsigned long long)s->epoch, s->ntenants, s->nnodes, s->partitions);
    }
    /* Cached before it is used: what is done on a state (a hand-over's
     * outbox entry dropped once it names the new owner) must not be undone
     * by a restart on an older one. */
    rc = gw_meta_state_save(st->meta, resp.body, resp.len);
    if (rc != 0) {
        CM_WARN("cannot cache controller state err=%s", cm_errname(rc));
    }
    install(st, s);
    free(st->last_body);
    st->last_body = cm_strdup(resp.body);
    st->fresh = 1;
    if (s->epoch < st->max_epoch) {
        CM_WARN("controller epoch went backwards, not purging epoch=%llu seen=%llu",
                (unsigned long long)s->epoch, (unsigned long long)st->max_epoch);
    } else {
        st->max_epoch = s->epoch;
        gw_snap_ref(s);
        purge = s;
    }
out:
    pthread_mutex_lock(&st->mu);
    st->stats.controller_up = up;
    if (up) {
        st->stats.polls_ok++;
    } else {
        st->stats.polls_failed++;
    }
    pthread_mutex_unlock(&st->mu);
    cm_httpc_resp_fini(&resp);
    return purge;
}

/* Lets the requests in list go on (each runs against the current state). */
static void
wake_waiters(struct gw_state_wait *list)
{
    while (list != NULL) {
        struct gw_state_wait *w = list;

        list = w->next; /* w may be gone once its fn ran */
        w->fn(w);
    }
}

/* Under st->mu: the waiters asked so far, off the list. */
static struct gw_state_wait *
take_waiters_locked(struct gw_state *st)
{
    struct gw_state_wait *list = st->waiting;

    st->waiting = NULL;
    st->waiting_tail = &st->waiting;
    return list;
}

/* Under st->mu: until stopped, the periodic poll is due (poll_ms after the
 * last ended), or a refresh is asked and REFRESH_GAP_MS have passed since
 * the last poll began. */
static void
wait_next_poll_locked(struct gw_state *st, uint64_t began)
{
    uint64_t periodic = cm_now_ns() + (uint64_t)st->cfg.poll_ms * 1000000u;
    uint64_t refresh = began + (uint64_t)REFRESH_GAP_MS * 1000000u;
    uint64_t hurry = began + (uint64_t)HURRY_GAP_MS * 1000000u;

    while (!st->stop) {
        uint64_t now = cm_now_ns();
        uint64_t until = st->waiting != NULL && refresh < periodic ? refresh : periodic;

        if (now < st->hurry_until_ns && hurry < until) {
            until = hurry;
        }
        struct timespec ts;

        if (now >= until) {
            break;
        }
        ts = cm_deadline(CLOCK_MONOTONIC, until - now);
        (void)pthread_cond_timedwait(&st->cv, &st->mu, &ts);
    }
}

static void *
state_main(void *arg)
{
    struct gw_state *st = arg;

    pthread_mutex_lock(&st->mu);
    while (!st->stop) {
        /* This poll begins after they asked: it is theirs. */
        struct gw_state_wait *waiters = take_waiters_locked(st);
        uint64_t began = cm_now_ns();
        int timeout = st->cfg.timeout_ms;
        struct gw_snap *purge;

        if (waiters != NULL && timeout > REFRESH_TIMEOUT_MS) {
            timeout = REFRESH_TIMEOUT_MS;
        }
        pthread_mutex_unlock(&st->mu);
        purge = poll_once(st, timeout);
        if (waiters != NULL) {
            pthread_mutex_lock(&st->mu);
            st->stats.refreshes++;
            pthread_mutex_unlock(&st->mu);
        }
        wake_waiters(waiters);
        if (purge != NULL) {
            purge_gone(st, purge);
            gw_snap_unref(purge);
        }
        pthread_mutex_lock(&st->mu);
        wait_next_poll_locked(st, began);
    }
    st->running = 0;
    struct gw_state_wait *left = take_waiters_locked(st);
    pthread_mutex_unlock(&st->mu);
    wake_waiters(left); /* refused against the last state */
    return NULL;
}

void
gw_state_hurry(struct gw_state *st, int ms)
{
    uint64_t until = cm_now_ns() + (uint64_t)ms * 1000000u;

    pthread_mutex_lock(&st->mu);
    if (until > st->hurry_until_ns) {
        st->hurry_until_ns = until;
    }
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

int
gw_state_refresh(struct gw_state *st, struct gw_state_wait *w)
{
    int rc = -EAGAIN;

    pthread_mutex_lock(&st->mu);
    /* Not once a poll failed (until one succeeds); before the first, yes. */
    if (st->running &&
        (st->stats.controller_up || st->stats.polls_ok + st->stats.polls_failed == 0)) {
        w->next = NULL;
        *st->waiting_tail = w;
        st->waiting_tail = &w->next;
        pthread_cond_signal(&st->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
gw_state_create(const struct gw_state_cfg *cfg, struct gw_meta *meta, struct gw_engine *e,
                struct gw_state **out)
{
    struct gw_state *st = cm_calloc(1, sizeof(*st));
    pthread_condattr_t ca;
    char *json = NULL;
    size_t len = 0;
    int rc;

    st->cfg = *cfg;
    if (st->cfg.poll_ms <= 0) {
        st->cfg.poll_ms = 1000;
    }
    if (st->cfg.timeout_ms <= 0) {
        st->cfg.timeout_ms = 2000;
    }
    st->meta = meta;
    st->engine = e;
    st->waiting_tail = &st->waiting;
    pthread_mutex_init(&st->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st->cv, &ca);
    pthread_condattr_destroy(&ca);
    build_url(st);
    st->cur = gw_snap_empty();
    rc = gw_meta_state_load(meta, &json, &len);
    if (rc == 0) {
        struct gw_snap *s;
        const char *why = NULL;
        if (gw_snap_parse(json, len, &s, &why) == 0) {
            CM_INFO("loaded cached state epoch=%llu tenants=%zu nodes=%zu",
                    (unsigned long long)s->epoch, s->ntenants, s->nnodes);
            st->max_epoch = s->epoch;
            st->last_body = json;
            json = NULL;
            install(st, s);
        } else {
            CM_WARN("ignoring bad cached state reason=\"%s\"", why);
        }
    } else if (rc != CM_E_NOTFOUND) {
        CM_WARN("cannot read cached state err=%s", cm_errname(rc));
    }
    free(json);
    *out = st;
    return 0;
}

int
gw_state_start(struct gw_state *st)
{
    int rc;

    pthread_mutex_lock(&st->mu);
    st->running = 1;
    pthread_mutex_unlock(&st->mu);
    rc = pthread_create(&st->thread, NULL, state_main, st);
    if (rc != 0) {
        pthread_mutex_lock(&st->mu);
        st->running = 0;
        pthread_mutex_unlock(&st->mu);
        return -rc;
    }
    st->started = 1;
    return 0;
}

void
gw_state_stop(struct gw_state *st)
{
    if (st->started) {
        pthread_mutex_lock(&st->mu);
        st->stop = 1;
        pthread_cond_signal(&st->cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
        st->started = 0;
    }
}

void
gw_state_destroy(struct gw_state *st)
{
    if (st == NULL) {
        return;
    }
    gw_state_stop(st);
    gw_snap_unref(st->cur);
    free(st->last_body);
    free(st->url);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

void
gw_state_stats(struct gw_state *st, struct gw_state_stats *out)
{
    pthread_mutex_lock(&st->mu);
    *out = st->stats;
    pthread_mutex_unlock(&st->mu);
}
