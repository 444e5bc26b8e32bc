/*
 * gw_handover.c - moving a tenant's metadata to another gateway (see
 * gw_handover.h).
 *
 * The owner's steps run on the hand-over thread, one pass every
 * PASS_MS: jobs (tenants being frozen, before their records leave the
 * store) and outbox entries (records out, on their way). Frozen is the
 * union of both, kept as a small sorted array the fronts read under the
 * mutex; a count read without it keeps the common case, nothing frozen,
 * at one atomic load per request.
 */
#include "gw_handover.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_token.h"
#include "gw_grace.h"
#include "gw_meta.h"
#include "gw_migrate.h"
#include "gw_parse.h"
#include "gw_state.h"

#define PASS_MS 200
#define RETRY_MS 1000       /* between tries of a send or report that failed */
#define POSTPONE_MS 5000    /* after a freeze that timed out, before the next */
#define RECV_MAX 8          /* bundles taken in at once */
#define RECV_QUIET_MS 30000 /* a bundle waits this long for the requests in */
#define HURRY_MS 3000       /* state polls in a hurry after a hand-over's step */

/* A tenant being frozen here, its records still in the store. */
struct job {
    uint32_t tenant;
    char to[GW_ID_MAX + 1];
    uint64_t since_ns;
    atomic_int quiet; /* the requests in at the freeze are all out */
    int cancelled;    /* freed once quiet (the grace still names it) */
    struct job *next;
};

/* An outbox entry as this run knows it. */
struct sent {
    uint32_t tenant;
    int stage; /* 0 bundle to send, 1 controller to tell, 2 told */
    uint64_t next_ns;
    struct sent *next;
};

struct gw_handover {
    struct gw_handover_cfg cfg;
    struct gw_meta *meta;
    struct gw_state *state;
    struct gw_grace *requests;
    struct gw_migrate *migrate;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* monotonic */
    int stop, started;
    pthread_t thread;
    uint32_t *frozen; /* sorted */
    size_t nfrozen;
    uint32_t receiving[RECV_MAX]; /* tenants whose bundle is being taken in */
    size_t nreceiving;
    atomic_size_t nfrozen_any;   /* nfrozen + nreceiving */
    uint64_t postponed_until_ns; /* no new freeze before (per gateway: moves are rare) */

    /* thread only */
    struct job *jobs;
    struct sent *sent;
    char token[256];
    int have_token;

    uint64_t changes; /* of the frozen set, and bundles taken in (mu) */
    /* figures (mu) */
    uint64_t out_total, in_total, postponed_total, failed_sends_total;
};

/* ---- the frozen set ---- */

static int
u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

int
gw_handover_frozen(struct gw_handover *h, uint32_t tenant)
{
    int hit;

    if (h == NULL || atomic_load_explicit(&h->nfrozen_any, memory_order_acquire) == 0) {
        return 0;
    }
    pthread_mutex_lock(&h->mu);
    hit = bsearch(&tenant, h->frozen, h->nfrozen, sizeof(*h->frozen), u32_cmp) != NULL;
    for (size_t i = 0; i < h->nreceiving && !hit; i++) {
        hit = h->receiving[i] == tenant;
    }
    pthread_mutex_unlock(&h->mu);
    return hit;
}

/* The frozen set from the jobs and the outbox entries (thread). */
static void
refreeze(struct gw_handover *h)
{
    size_t n = 0;
    uint32_t *v;

    for (struct job *j = h->jobs; j != NULL; j = j->next) {
        if (!j->cancelled) {
            n++;
        }
    }
    for (struct sent *s = h->sent; s != NULL; s = s->next) {
        n++;
    }
    v = cm_calloc(n + 1, sizeof(*v));
    n = 0;
    for (struct job *j = h->jobs; j != NULL; j = j->next) {
        if (!j->cancelled) {
            v[n++] = j->tenant;
        }
    }
    for (struct sent *s = h->sent; s != NULL; s = s->next) {
        v[n++] = s->tenant;
    }
    qsort(v, n, sizeof(*v), u32_cmp);
    pthread_mutex_lock(&h->mu);
    free(h->frozen);
    h->frozen = v;
    h->nfrozen = n;
    h->changes++;
    atomic_store_explicit(&h->nfrozen_any, n + h->nreceiving, memory_order_release);
    pthread_mutex_unlock(&h->mu);
}

uint64_t
gw_handover_moves(struct gw_handover *h)
{
    uint64_t v;

    if (h == NULL) {
        return 0;
    }
    pthread_mutex_lock(&h->mu);
    v = h->changes * 2 + (h->nfrozen + h->nreceiving > 0);
    pthread_mutex_unlock(&h->mu);
    return v;
}

/* ---- the owner's steps ---- */

static void
quiet_run(void *arg)
{
    struct job *j = arg;

    atomic_store(&j->quiet, 1);
}

static struct sent *
sent_find(struct gw_handover *h, uint32_t tenant)
{
    for (struct sent *s = h->sent; s != NULL; s = s->next) {
        if (s->tenant == tenant) {
            return s;
        }
    }
    return NULL;
}

static struct job *
job_find(struct gw_handover *h, uint32_t tenant)
{
    for (struct job *j = h->jobs; j != NULL; j = j->next) {
        if (j->tenant == tenant && !j->cancelled) {
            return j;
        }
    }
    return NULL;
}

static const char *
token(struct gw_handover *h)
{
    if (!h->have_token && h->cfg.token_file != NULL) {
        h->have_token = cm_token_load(h->cfg.token_file, 0, h->token, sizeof(h->token)) == 0;
    }
    return h->have_token ? h->token : NULL;
}

/* The bundle to its next owner: 0 once it has it. */
static int
send_bundle(struct gw_handover *h, const struct gw_snap *snap, uint32_t tenant, const char *to,
            const void *bundle, size_t len)
{
    const struct gw_peer *p = NULL;
    char url[GW_URL_MAX + 64], auth[300];
    const char *hdrs[3] = {auth, "Content-Type: application/octet-stream", NULL};
    struct cm_httpc_req req = {0};
    struct cm_httpc_resp resp = {0};
    int rc;

    for (size_t i = 0; i < snap->npeers; i++) {
        if (strcmp(snap->peers[i].id, to) == 0) {
            p = &snap->peers[i];
        }
    }
    if (p == NULL || p->url[0] == '\0') {
        CM_WARN("hand-over waits: the controller has no address of gateway=%s tenant=%u", to,
                tenant);
        return -ENOENT;
    }
    snprintf(url, sizeof(url), "%s/v1/internal/tenants/%u/handover", p->url, tenant);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token(h) != NULL ? h->token : "");
    req.method = "POST";
    req.url = url;
    req.headers = hdrs;
    req.body = bundle;
    req.body_len = len;
    req.connect_timeout_ms = h->cfg.timeout_ms;
    req.timeout_ms = h->cfg.timeout_ms;
    req.dead_peer_ms = 3000;
    rc = cm_httpc_do(&req, &resp);
    if (rc == 0 && resp.status == 409) {
        CM_INFO("hand-over: gateway=%s owns tenant=%u already", to, tenant);
    } else if (rc == 0 && resp.status != 204) {
        CM_WARN("hand-over refused gateway=%s tenant=%u status=%d body=%.200s", to, tenant,
                resp.status, resp.body != NULL ? resp.body : "");
        if (resp.status == 401) {
            h->have_token = 0;
        }
        rc = -EPROTO;
    } else if (rc != 0) {
        CM_WARN("hand-over not sent gateway=%s tenant=%u err=%s", to, tenant, cm_errname(rc));
    }
    cm_httpc_resp_fini(&resp);
    return rc;
}

/* The controller told that to owns tenant now: 0 once it agreed. */
static int
report_moved(struct gw_handover *h, uint32_t tenant, const char *to)
{
    char path[64], url[512];
    struct cm_httpc_resp resp = {0};
    struct cm_buf body;
    int rc;

    snprintf(path, sizeof(path), "/v1/internal/tenants/%u/moved", tenant);
    gw_controller_url(h->cfg.controller, path, url, sizeof(url));
    cm_buf_init(&body);
    cm_buf_printf(&body, "{\"from\":\"%s\",\"to\":\"%s\"}", h->cfg.self, to); /* ids: no quotes */
    rc = cm_httpc_request("POST", url, token(h), body.p, h->cfg.timeout_ms, &resp);
    cm_buf_fini(&body);
    if (rc == 0 && resp.status != 204) {
        CM_WARN("controller refused the hand-over tenant=%u to=%s status=%d body=%.200s", tenant,
                to, resp.status, resp.body != NULL ? resp.body : "");
        if (resp.status == 401) {
            h->have_token = 0;
        }
        rc = -EPROTO;
    }
    cm_httpc_resp_fini(&resp);
    return rc;
}

struct outbox_pass {
    struct gw_handover *h;
    const struct gw_snap *snap;
    uint64_t now;
    int changed;
};

/* One outbox entry's next step. */
static void
outbox_step(void *arg, uint32_t tenant, const char *to, const void *bundle, size_t len)
{
    struct outbox_pass *op = arg;
    struct gw_handover *h = op->h;
    const struct gw_tenant *t = gw_snap_tenant(op->snap, tenant);
    struct sent *s = sent_find(h, tenant);

    if (s == NULL) {
        s = cm_calloc(1, sizeof(*s));
        s->tenant = tenant;
        s->next = h->sent;
        h->sent = s;
        op->changed = 1;
        CM_INFO("tenant frozen: its metadata is on its way tenant=%u to=%s", tenant, to);
    }
    if (t == NULL || strcmp(t->owner, h->cfg.self) != 0) {
        /* the controller made another gateway the owner (or the tenant is
         * gone): the records are there, the requests go there */
        int rc = gw_meta_handover_done(h->meta, tenant);

        if (rc != 0) {
            CM_WARN("cannot drop a hand-over's outbox entry tenant=%u err=%s", tenant,
                    cm_errname(rc));
            return;
        }
        CM_INFO("tenant handed over tenant=%u owner=%s", tenant, t != NULL ? t->owner : "-");
        s->stage = -1; /* dropped below */
        op->changed = 1;
        return;
    }
    if (s->stage == 2 || op->now < s->next_ns) {
        return;
    }
    if (s->stage == 0) {
        if (send_bundle(h, op->snap, tenant, to, bundle, len) != 0) {
            s->next_ns = op->now + (uint64_t)RETRY_MS * 1000000u;
            pthread_mutex_lock(&h->mu);
            h->failed_sends_total++;
            pthread_mutex_unlock(&h->mu);
            return;
        }
        CM_INFO("hand-over sent tenant=%u to=%s bytes=%zu", tenant, to, len);
        s->stage = 1;
    }
    if (report_moved(h, tenant, to) != 0) {
        s->next_ns = op->now + (uint64_t)RETRY_MS * 1000000u;
        return;
    }
    s->stage = 2; /* the next state names the new owner: polled for at once */
    gw_state_hurry(h->state, HURRY_MS);
}

static void
outbox_pass(struct gw_handover *h, const struct gw_snap *snap, uint64_t now)
{
    struct outbox_pass op = {h, snap, now, 0};
    struct sent **pp;
    int rc = gw_meta_handover_outbox(h->meta, outbox_step, &op);

    if (rc != 0) {
        CM_WARN("cannot read the hand-over outbox err=%s", cm_errname(rc));
        return;
    }
    for (pp = &h->sent; *pp != NULL;) {
        if ((*pp)->stage < 0) {
            struct sent *s = *pp;
            *pp = s->next;
            free(s);
        } else {
            pp = &(*pp)->next;
        }
    }
    if (op.changed) {
        refreeze(h);
    }
}

/* 1 when the migration has moved every version where the state's rows
 * want it (a version it has yet to move would stay where it is: the next
 * owner's migration only moves what rows changed since its own pass). */
static int
migrated(struct gw_handover *h, const struct gw_snap *snap)
{
    struct gw_migrate_progress p;

    if (h->migrate == NULL) {
        return 1;
    }
    gw_migrate_progress(h->migrate, &p);
    return !p.running && p.done_epoch >= snap->placement_epoch;
}

/* The jobs' next steps, and new jobs for the moves the state asks for. */
static void
job_pass(struct gw_handover *h, const struct gw_snap *snap, uint64_t now)
{
    struct job **jp;
    int changed = 0;

    for (size_t i = 0; i < snap->ntenants; i++) {
        const struct gw_tenant *t = &snap->tenants[i];
        struct job *j;

        if (t->moving_to[0] == '\0' || strcmp(t->owner, h->cfg.self) != 0 ||
            strcmp(t->moving_to, h->cfg.self) == 0 || job_find(h, t->id) != NULL ||
            sent_find(h, t->id) != NULL || now < h->postponed_until_ns) {
            continue;
        }
        j = cm_calloc(1, sizeof(*j));
        j->tenant = t->id;
        snprintf(j->to, sizeof(j->to), "%s", t->moving_to);
        j->since_ns = now;
        atomic_init(&j->quiet, 0);
        j->next = h->jobs;
        h->jobs = j;
        refreeze(h); /* before the grace: a request that enters after it sees the freeze */
        if (gw_grace_defer(h->requests, quiet_run, j) != 0) {
            atomic_store(&j->quiet, 1); /* no memory: the next freeze tries again */
            j->cancelled = 1;
        }
        CM_INFO("tenant move asked: freezing tenant=%u to=%s", t->id, t->moving_to);
        changed = 1;
    }
    for (jp = &h->jobs; *jp != NULL;) {
        struct job *j = *jp;
        const struct gw_tenant *t = gw_snap_tenant(snap, j->tenant);
        int quiet = atomic_load(&j->quiet);
        uint32_t groups = 0;
        int rc;

        if (!j->cancelled &&
            (t == NULL || strcmp(t->owner, h->cfg.self) != 0 || strcmp(t->moving_to, j->to) != 0)) {
            CM_INFO("tenant move called off: thawed tenant=%u", j->tenant);
            j->cancelled = 1;
            changed = 1;
        }
        if (!j->cancelled && quiet && migrated(h, snap)) {
            rc = gw_meta_handover_out(h->meta, j->tenant, j->to, &groups);
            if (rc == 0 || rc == -EEXIST) {
                CM_INFO("tenant metadata out of the store tenant=%u to=%s groups=%u ms=%.0f",
                        j->tenant, j->to, groups, (double)(now - j->since_ns) / 1e6);
                pthread_mutex_lock(&h->mu);
                h->out_total++;
                pthread_mutex_unlock(&h->mu);
                j->cancelled = 1; /* the outbox holds it frozen from here */
                changed = 1;
            } else if (rc != -EBUSY) {
                CM_WARN("tenant metadata cannot leave the store tenant=%u err=%s", j->tenant,
                        cm_errname(rc));
            }
        }
        if (!j->cancelled && now - j->since_ns > (uint64_t)h->cfg.drain_ms * 1000000u) {
            CM_WARN("tenant move waits: versions still pending or migrating after %d ms, thawed "
                    "for %d ms tenant=%u to=%s",
                    h->cfg.drain_ms, POSTPONE_MS, j->tenant, j->to);
            pthread_mutex_lock(&h->mu);
            h->postponed_total++;
            pthread_mutex_unlock(&h->mu);
            h->postponed_until_ns = now + (uint64_t)POSTPONE_MS * 1000000u;
            j->cancelled = 1;
            changed = 1;
        }
        if (j->cancelled && quiet) {
            *jp = j->next;
            free(j);
        } else {
            jp = &j->next;
        }
    }
    if (changed) {
        outbox_pass(h, snap, now); /* an entry just made goes out at once */
        refreeze(h);
    }
}

static void *
handover_main(void *arg)
{
    struct gw_handover *h = arg;

    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        struct gw_snap *s;
        uint64_t now;

        pthread_mutex_unlock(&h->mu);
        s = gw_state_snap(h->state);
        now = cm_now_ns();
        outbox_pass(h, s, now);
        job_pass(h, s, now);
        gw_snap_unref(s);
        pthread_mutex_lock(&h->mu);
        if (!h->stop) {
            cm_cond_wait_until(&h->cv, &h->mu, cm_now_ns() + (uint64_t)PASS_MS * 1000000u);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- the next owner's end ---- */

/* The requests of the tenant being taken in, gone (refs: the waiter and
 * the grace's action). */
struct recv_quiet {
    struct gw_handover *h;
    atomic_int refs;
    int fired; /* h->mu */
};

static void
recv_quiet_put(struct recv_quiet *q)
{
    if (atomic_fetch_sub(&q->refs, 1) == 1) {
        free(q);
    }
}

static void
recv_quiet_run(void *arg)
{
    struct recv_quiet *q = arg;

    pthread_mutex_lock(&q->h->mu);
    q->fired = 1;
    pthread_cond_broadcast(&q->h->cv);
    pthread_mutex_unlock(&q->h->mu);
    recv_quiet_put(q);
}

static void
recv_thaw(struct gw_handover *h, uint32_t tenant)
{
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nreceiving; i++) {
        if (h->receiving[i] == tenant) {
            h->receiving[i] = h->receiving[--h->nreceiving];
            atomic_fetch_sub_explicit(&h->nfrozen_any, 1, memory_order_release);
            break;
        }
    }
    h->changes++;
    pthread_mutex_unlock(&h->mu);
}

/* Freezes tenant here, then waits out the requests in (which may be the
 * tenant's, served here if this gateway owns it already): 0 (recv_thaw
 * once done), or -EBUSY (too many at once, or the same tenant twice),
 * -ENOMEM, CM_E_TIMEOUT, thawed. */
static int
recv_freeze(struct gw_handover *h, uint32_t tenant)
{
    struct recv_quiet *q = cm_calloc(1, sizeof(*q));
    uint64_t until = cm_now_ns() + (uint64_t)RECV_QUIET_MS * 1000000u;
    int rc = 0;

    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nreceiving; i++) {
        rc = h->receiving[i] == tenant ? -EBUSY : rc;
    }
    if (rc == 0 && h->nreceiving == RECV_MAX) {
        rc = -EBUSY;
    }
    if (rc != 0) {
        pthread_mutex_unlock(&h->mu);
        free(q);
        return rc;
    }
    h->receiving[h->nreceiving++] = tenant;
    h->changes++;
    atomic_fetch_add_explicit(&h->nfrozen_any, 1, memory_order_release);
    pthread_mutex_unlock(&h->mu);
    q->h = h;
    atomic_init(&q->refs, 2);
    if (gw_grace_defer(h->requests, recv_quiet_run, q) != 0) {
        free(q);
        recv_thaw(h, tenant);
        return -ENOMEM;
    }
    pthread_mutex_lock(&h->mu);
    while (!q->fired && cm_now_ns() < until) {
        cm_cond_wait_until(&h->cv, &h->mu, until);
    }
    rc = q->fired ? 0 : CM_E_TIMEOUT;
    pthread_mutex_unlock(&h->mu);
    recv_quiet_put(q);
    if (rc != 0) {
        recv_thaw(h, tenant);
    }
    return rc;
}

int
gw_handover_receive(struct gw_handover *h, uint32_t tenant, const char *auth, const void *body,
                    size_t len, const char **why)
{
    char tok[256];
    const char *given;
    size_t glen;
    uint32_t got, groups;
    struct gw_snap *s;
    const struct gw_tenant *t;
    int rc, owned;

    if (h->cfg.token_file == NULL || cm_token_load(h->cfg.token_file, 0, tok, sizeof(tok)) != 0 ||
        gw_parse_bearer(auth, &given, &glen) != 0 || glen != strlen(tok) ||
        !cm_ct_equal(given, tok, glen)) {
        *why = "the admin token is required";
        return 401;
    }
    if (gw_meta_bundle_check(body, len, &got) != 0 || got != tenant) {
        *why = "not a metadata bundle of this tenant";
        return 400;
    }
    /* A bundle sent again after the move (its sender restarted before it
     * saw the move done) must not overwrite what this gateway wrote since
     * it owns the tenant: the tenant's requests here are refused and those
     * in waited out before its ownership is looked at. */
    if (recv_freeze(h, tenant) != 0) {
        *why = "busy taking this tenant in: retry";
        return 503;
    }
    s = gw_state_snap(h->state);
    t = gw_snap_tenant(s, tenant);
    owned = t != NULL && strcmp(t->owner, h->cfg.self) == 0;
    gw_snap_unref(s);
    if (owned) {
        recv_thaw(h, tenant);
        *why = "this gateway owns the tenant already";
        return 409;
    }
    rc = gw_meta_handover_in(h->meta, body, len, &got, &groups);
    recv_thaw(h, tenant);
    if (rc != 0) {
        CM_ERROR("cannot store a tenant's metadata tenant=%u err=%s", tenant, cm_errname(rc));
        *why = "the metadata store failed, see the gateway log";
        return 500;
    }
    pthread_mutex_lock(&h->mu);
    h->in_total++;
    pthread_mutex_unlock(&h->mu);
    CM_INFO("tenant metadata taken in tenant=%u groups=%u bytes=%zu", tenant, groups, len);
    gw_state_hurry(h->state, HURRY_MS); /* the owner reports the move next */
    return 204;
}

/* ---- life cycle ---- */

int
gw_handover_create(const struct gw_handover_cfg *cfg, struct gw_meta *meta, struct gw_state *state,
                   struct gw_migrate *migrate, struct gw_grace *requests, struct gw_handover **out)
{
    struct gw_handover *h = cm_calloc(1, sizeof(*h));
    pthread_condattr_t ca;

    h->cfg = *cfg;
    h->meta = meta;
    h->state = state;
    h->migrate = migrate;
    h->requests = requests;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&h->nfrozen_any, 0);
    *out = h;
    return 0;
}

/* Outbox entries freeze their tenants from the start, before a request
 * is served. */
static void
load_one(void *arg, uint32_t tenant, const char *to, const void *bundle, size_t len)
{
    struct gw_handover *h = arg;
    struct sent *s = cm_calloc(1, sizeof(*s));

    (void)bundle;
    s->tenant = tenant;
    s->next = h->sent;
    h->sent = s;
    CM_INFO("tenant frozen: its metadata is on its way tenant=%u to=%s bytes=%zu", tenant, to, len);
}

int
gw_handover_start(struct gw_handover *h)
{
    int rc = gw_meta_handover_outbox(h->meta, load_one, h);

    if (rc != 0) {
        return rc;
    }
    refreeze(h);
    rc = pthread_create(&h->thread, NULL, handover_main, h);
    if (rc != 0) {
        return -rc;
    }
    h->started = 1;
    return 0;
}

void
gw_handover_stop(struct gw_handover *h)
{
    if (h == NULL || !h->started) {
        return;
    }
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    h->started = 0;
}

void
gw_handover_destroy(struct gw_handover *h)
{
    if (h == NULL) {
        return;
    }
    gw_handover_stop(h);
    /* a job whose grace has not run is still named by it: left (the grace
     * is destroyed after, without running it) */
    for (struct job *j = h->jobs, *n; j != NULL; j = n) {
        n = j->next;
        if (atomic_load(&j->quiet)) {
            free(j);
        }
    }
    for (struct sent *s = h->sent, *n; s != NULL; s = n) {
        n = s->next;
        free(s);
    }
    free(h->frozen);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void
gw_handover_metrics(struct gw_handover *h, struct cm_buf *b)
{
    uint64_t v[5];

    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&h->mu);
    v[0] = h->nfrozen + h->nreceiving;
    v[1] = h->out_total;
    v[2] = h->in_total;
    v[3] = h->postponed_total;
    v[4] = h->failed_sends_total;
    pthread_mutex_unlock(&h->mu);
#define HANDOVER_FAMILY_(name, type, help, x)                                                      \
    cm_prom_family(b, "shoal_gateway_handover_" name, type, help);                                 \
    cm_prom_u64(b, "shoal_gateway_handover_" name, NULL, x);
    HANDOVER_FAMILY_("frozen_tenants", "gauge",
                     "Tenants whose requests are refused here while their metadata moves "
                     "between gateways",
                     v[0])
    HANDOVER_FAMILY_("out_total", "counter",
                     "Tenants whose metadata left this gateway's store for another gateway", v[1])
    HANDOVER_FAMILY_("in_total", "counter", "Tenant metadata bundles taken in from another gateway",
                     v[2])
    HANDOVER_FAMILY_("postponed_total", "counter",
                     "Tenant moves thawed and retried later: versions still pending or migrating",
                     v[3])
    HANDOVER_FAMILY_("send_failures_total", "counter",
                     "Metadata bundles the next owner did not take (retried)", v[4])
#undef HANDOVER_FAMILY_
}
