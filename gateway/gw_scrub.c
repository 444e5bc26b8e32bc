/*
 * gw_scrub.c - the scrub thread and its passes (see gw_scrub.h).
 *
 * The engine answers on its own thread: each answer is put in the slot
 * (under mu) and the thread, waiting on cv, takes it. One request is out
 * at a time. A node's candidates are kept sorted by (tenant, object,
 * index) for the next pass, with a grace token that fires once the
 * readers in at the end of the pass are gone.
 *
 * Locks: mu guards stop, the slot and the figures; never held across a
 * call into the engine, the store or the grace.
 */
#include "gw_scrub.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "gw_engine.h"
#include "gw_grace.h"
#include "gw_handover.h"
#include "gw_meta.h"
#include "gw_state.h"

#define DEL_BATCH 1024
#define DEL_PAUSE_MS 20

/* Fires once the readers in when it was deferred are gone; freed by the
 * last of the grace and the scrub to let go of it. */
struct scrub_token {
    atomic_int refs;
    atomic_int fired;
};

/* A node's candidates of the last pass it was listed in. */
struct scrub_node {
    uint32_t node;
    struct cm_wire_note *prev;
    size_t nprev;
};

/* A sorted array of version ids. */
struct vids {
    struct gw_vid *v;
    size_t n, cap;
};

/* A growing array of chunk records. */
struct recs {
    struct cm_wire_note *v;
    size_t n, cap;
};

struct gw_scrub {
    struct gw_scrub_cfg cfg;
    struct gw_meta *meta;
    struct gw_engine *e;
    struct gw_grace *grace;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC: stop, an answer */
    pthread_t thread;
    int started;
    /* under mu */
    int stop;
    int answered;
    struct gw_census census;
    int list_status;
    size_t list_n;
    uint64_t list_next;
    uint64_t passes, listed, unreferenced, deleted, refused, failed;
    uint64_t pass_ns; /* the last pass's time, DELs' pauses included */
    /* the thread's */
    uint8_t *page; /* CM_WIRE_LIST_MAX records */
    struct scrub_token *token; /* armed at the end of the last pass that could */
    int armed;                 /* a token was ever armed */
    struct scrub_node *nodes;
    size_t nnodes;
};

/* ---- ordering ---- */

static int
vid_cmp(const void *a, const void *b)
{
    const struct gw_vid *x = a, *y = b;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    return x->object < y->object ? -1 : x->object > y->object;
}

static int
rec_cmp(const void *a, const void *b)
{
    const struct cm_wire_note *x = a, *y = b;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    if (x->object != y->object) {
        return x->object < y->object ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

static int
vids_has(const struct vids *r, uint32_t tenant, uint64_t object)
{
    struct gw_vid k = {.object = object, .tenant = tenant};

    return r->n > 0 && bsearch(&k, r->v, r->n, sizeof(k), vid_cmp) != NULL;
}

/* v (n of *cap size-byte elements used) with room for one more: v, or
 * where it moved; NULL when out of memory (v stays). */
static void *
room(void *v, size_t n, size_t *cap, size_t size)
{
    if (n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 256;

        v = realloc(v, ncap * size);
        *cap = v != NULL ? ncap : *cap;
    }
    return v;
}

static int
vids_add(void *arg, uint32_t tenant, uint64_t object)
{
    struct vids *r = arg;
    struct gw_vid *v = room(r->v, r->n, &r->cap, sizeof(*v));

    if (v == NULL) {
        return -ENOMEM;
    }
    r->v = v;
    r->v[r->n++] = (struct gw_vid){.object = object, .tenant = tenant};
    return 0;
}

static int
recs_add(struct recs *r, const struct cm_wire_note *x)
{
    struct cm_wire_note *v = room(r->v, r->n, &r->cap, sizeof(*v));

    if (v == NULL) {
        return -ENOMEM;
    }
    r->v = v;
    r->v[r->n++] = *x;
    return 0;
}

/* Sorts r and drops repeats. */
static void
recs_unique(struct recs *r)
{
    size_t w = 0;

    if (r->n > 0) {
        qsort(r->v, r->n, sizeof(*r->v), rec_cmp);
    }
    for (size_t i = 0; i < r->n; i++) {
        if (w == 0 || rec_cmp(&r->v[w - 1], &r->v[i]) != 0) {
            r->v[w++] = r->v[i];
        }
    }
    r->n = w;
}

/* ---- the engine's answers, and waiting for them ---- */

static void
token_put(struct scrub_token *t)
{
    if (t != NULL && atomic_fetch_sub(&t->refs, 1) == 1) {
        free(t);
    }
}

static void
token_fire(void *arg)
{
    struct scrub_token *t = arg;

    atomic_store(&t->fired, 1);
    token_put(t);
}

static int
wait_locked(struct gw_scrub *s, uint64_t deadline_ns)
{
    if (!s->stop) {
        cm_cond_wait_until(&s->cv, &s->mu, deadline_ns);
    }
    return s->stop;
}

static void
answered_unlock(struct gw_scrub *s)
{
    s->answered = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void
census_cb(void *arg, struct gw_census *c)
{
    struct gw_scrub *s = arg;

    pthread_mutex_lock(&s->mu);
    s->census = *c;
    answered_unlock(s);
}

static void
list_cb(void *arg, int status, const uint8_t *recs, size_t n, uint64_t next)
{
    struct gw_scrub *s = arg;

    (void)recs; /* s->page */
    pthread_mutex_lock(&s->mu);
    s->list_status = status;
    s->list_n = n;
    s->list_next = next;
    answered_unlock(s);
}

/* Waits for the answer of the request just posted (rc: the post's). The
 * answer always comes, stop or not: it writes into the scrub. */
static int
await(struct gw_scrub *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    while (rc == 0 && !s->answered) {
        pthread_cond_wait(&s->cv, &s->mu);
    }
    s->answered = 0;
    rc = rc == 0 && s->stop ? -ECANCELED : rc;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* R: the store's ids and the engine's (c, taken). 0 or an error. */
static int
referenced(struct gw_scrub *s, struct gw_census *c, struct vids *r)
{
    int rc = gw_meta_scan_ids(s->meta, vids_add, r);

    for (size_t i = 0; rc == 0 && i < c->nids; i++) {
        rc = vids_add(r, c->ids[i].tenant, c->ids[i].object);
    }
    free(c->ids);
    c->ids = NULL;
    if (rc == 0 && r->n > 0) {
        qsort(r->v, r->n, sizeof(*r->v), vid_cmp);
    }
    return rc;
}

/* Lists node: *listed gets the count of its records of tenants this
 * gateway collects (snap; NULL: all), out those not in r1. */
static int
list_node(struct gw_scrub *s, uint32_t node, const struct gw_snap *snap, const struct vids *r1,
          uint64_t *listed, struct recs *out)
{
    uint64_t cursor = 0;

    while (cursor != CM_WIRE_LIST_END) {
        int rc = await(s, gw_engine_list(s->e, node, cursor, s->page,
                                         CM_WIRE_LIST_MAX * CM_WIRE_NOTE_LEN, list_cb, s));
        if (rc == 0) {
            rc = s->list_status;
        }
        for (size_t i = 0; rc == 0 && i < s->list_n; i++) {
            struct cm_wire_note x;

            cm_wire_note_decode(s->page + i * CM_WIRE_NOTE_LEN, &x);
            if (snap != NULL && !gw_snap_collects(snap, x.tenant, s->cfg.self)) {
                continue; /* another gateway's tenant: not ours to judge */
            }
            ++*listed;
            if (!vids_has(r1, x.tenant, x.object)) {
                rc = recs_add(out, &x);
            }
        }
        if (rc != 0) {
            return rc;
        }
        cursor = s->list_next;
    }
    return 0;
}

static struct scrub_node *
node_state(struct gw_scrub *s, uint32_t node)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].node == node) {
            return &s->nodes[i];
        }
    }
    struct scrub_node *v = realloc(s->nodes, (s->nnodes + 1) * sizeof(*v));
    if (v == NULL) {
        return NULL;
    }
    s->nodes = v;
    v[s->nnodes] = (struct scrub_node){.node = node};
    return &v[s->nnodes++];
}

/* DELs the records of c also in prev, DEL_BATCH at a time; the count. */
static uint64_t
delete_both(struct gw_scrub *s, uint32_t node, const struct recs *c, const struct scrub_node *prev)
{
    struct cm_wire_note batch[DEL_BATCH];
    size_t nb = 0;
    uint64_t n = 0;

    for (size_t i = 0; i <= c->n; i++) {
        int stop = 0;

        if (i < c->n && prev->nprev > 0 &&
            bsearch(&c->v[i], prev->prev, prev->nprev, sizeof(*prev->prev), rec_cmp) != NULL) {
            batch[nb++] = c->v[i];
        }
        if (nb == DEL_BATCH || (i == c->n && nb > 0)) {
            if (gw_engine_del_chunks(s->e, node, batch, nb) == 0) {
                n += nb;
            }
            nb = 0;
            pthread_mutex_lock(&s->mu);
            stop = wait_locked(s, cm_now_ns() + DEL_PAUSE_MS * 1000000ull);
            pthread_mutex_unlock(&s->mu);
        }
        if (stop) {
            break;
        }
    }
    return n;
}

/* ---- a pass ---- */

struct pass_node {
    uint32_t node;
    int ok;
    uint64_t listed;
    struct recs s; /* not in R1, then not in R2 either */
};

static void
pass(struct gw_scrub *s)
{
    struct vids r1 = {0}, r2 = {0};
    struct pass_node *pn = NULL;
    size_t npn = 0;
    uint64_t listed = 0, unref = 0, deleted = 0, refused = 0, failed = 0;
    /* A token armed and fired; none yet: the first pass (nothing to delete) */
    int fired = s->token != NULL ? atomic_load(&s->token->fired) : !s->armed;
    uint64_t t0 = cm_now_ns();
    /* Taken before the census: a tenant newer than it is nobody's here. */
    struct gw_snap *snap = s->cfg.state != NULL ? gw_state_snap(s->cfg.state) : NULL;
    uint64_t moves = gw_handover_moves(s->cfg.handover);
    int moved = 0;
    int rc = await(s, gw_engine_census(s->e, census_cb, s));

    if (rc == 0 && (rc = s->census.status) == 0) {
        npn = s->census.nnodes;
        pn = calloc(npn + 1, sizeof(*pn));
        for (size_t i = 0; pn != NULL && i < npn; i++) {
            pn[i].node = s->census.nodes[i];
        }
        free(s->census.nodes);
        if (pn == NULL) {
            free(s->census.ids);
            rc = -ENOMEM;
        } else {
            rc = referenced(s, &s->census, &r1);
        }
    }
    for (size_t i = 0; rc == 0 && i < npn; i++) {
        int lr = list_node(s, pn[i].node, snap, &r1, &pn[i].listed, &pn[i].s);

        pn[i].ok = lr == 0;
        if (lr == -ECANCELED || lr == -ENOMEM) {
            rc = lr;
        } else if (lr != 0) {
            failed++;
            CM_WARN("scrub list failed node=%u err=%s", pn[i].node, cm_errname(lr));
        }
    }
    if (rc == 0 && (rc = await(s, gw_engine_census(s->e, census_cb, s))) == 0 &&
        (rc = s->census.status) == 0) {
        free(s->census.nodes);
        rc = referenced(s, &s->census, &r2);
    }
    if (rc == 0 && ((moves & 1) || gw_handover_moves(s->cfg.handover) != moves)) {
        /* a tenant moved under this pass: what it found unreferenced may
         * be the moving tenant's, and the next pass must not take it as
         * found twice */
        CM_INFO("scrub pass judges nothing: a tenant was moving between gateways");
        for (size_t i = 0; i < s->nnodes; i++) {
            free(s->nodes[i].prev);
            s->nodes[i].prev = NULL;
            s->nodes[i].nprev = 0;
        }
        moved = 1;
    }
    for (size_t i = 0; rc == 0 && !moved && i < npn; i++) {
        struct pass_node *p = &pn[i];
        struct scrub_node *st;
        size_t w = 0;
        uint64_t nunref = 0;

        if (!p->ok) {
            continue;
        }
        for (size_t j = 0; j < p->s.n; j++) {
            if (!vids_has(&r2, p->s.v[j].tenant, p->s.v[j].object)) {
                p->s.v[w++] = p->s.v[j];
            }
        }
        p->s.n = nunref = w;
        listed += p->listed;
        recs_unique(&p->s);
        if (2 * nunref > p->listed) {
            refused++;
            CM_ERROR("scrub left node alone node=%u listed=%llu unreferenced=%llu: the "
                     "metadata store does not name most of its chunks (a lost store? "
                     "see --rebuild-meta)",
                     p->node, (unsigned long long)p->listed, (unsigned long long)nunref);
            continue;
        }
        unref += p->s.n;
        if ((st = node_state(s, p->node)) == NULL) {
            rc = -ENOMEM;
            break;
        }
        if (fired) {
            deleted += delete_both(s, p->node, &p->s, st);
            free(st->prev);
            st->prev = p->s.v;
            st->nprev = p->s.n;
            p->s.v = NULL;
        }
    }
    if (rc == 0 && (fired || s->token == NULL)) {
        /* The next deletes wait for the GETs in now. Without a token (out
         * of memory) none happen; the next pass tries again. */
        struct scrub_token *t = malloc(sizeof(*t));

        token_put(s->token);
        s->token = t;
        s->armed = 1;
        if (t != NULL) {
            atomic_init(&t->refs, 2);
            atomic_init(&t->fired, 0);
            if (gw_grace_defer(s->grace, token_fire, t) != 0) {
                token_put(t);
                token_put(t);
                s->token = NULL;
            }
        }
    }
    if (rc != 0 && rc != -ECANCELED) {
        CM_WARN("scrub pass failed err=%s", cm_errname(rc));
    } else if (rc == 0 && (unref > 0 || refused > 0)) {
        CM_INFO("scrub pass listed=%llu unreferenced=%llu deleted=%llu refused=%llu",
                (unsigned long long)listed, (unsigned long long)unref, (unsigned long long)deleted,
                (unsigned long long)refused);
    }
    pthread_mutex_lock(&s->mu);
    s->passes += rc == 0;
    if (rc == 0) {
        s->listed = listed;
        s->unreferenced = unref;
        s->pass_ns = cm_now_ns() - t0;
    }
    s->deleted += deleted;
    s->refused += refused;
    s->failed += failed;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; pn != NULL && i < npn; i++) {
        free(pn[i].s.v);
    }
    free(pn);
    free(r1.v);
    free(r2.v);
    gw_snap_unref(snap);
}

static void *
scrub_main(void *arg)
{
    struct gw_scrub *s = arg;
    uint64_t next = cm_now_ns() + (uint64_t)s->cfg.interval_ms * 1000000u;

    for (;;) {
        int stop;

        pthread_mutex_lock(&s->mu);
        while (!(stop = wait_locked(s, next)) && cm_now_ns() < next) {
        }
        pthread_mutex_unlock(&s->mu);
        if (stop) {
            break;
        }
        pass(s);
        next = cm_now_ns() + (uint64_t)s->cfg.interval_ms * 1000000u;
    }
    return NULL;
}

/* ---- life cycle and figures ---- */

int
gw_scrub_create(const struct gw_scrub_cfg *cfg, struct gw_meta *meta, struct gw_engine *e,
                struct gw_grace *grace, struct gw_scrub **out)
{
    struct gw_scrub *s = calloc(1, sizeof(*s));
    pthread_condattr_t ca;

    if (s == NULL || (s->page = malloc(CM_WIRE_LIST_MAX * CM_WIRE_NOTE_LEN)) == NULL) {
        free(s);
        return -ENOMEM;
    }
    s->cfg = *cfg;
    s->meta = meta;
    s->e = e;
    s->grace = grace;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = s;
    return 0;
}

int
gw_scrub_start(struct gw_scrub *s)
{
    int rc;

    if (s->cfg.interval_ms <= 0) {
        return 0;
    }
    rc = pthread_create(&s->thread, NULL, scrub_main, s);
    if (rc != 0) {
        return -rc;
    }
    s->started = 1;
    return 0;
}

void
gw_scrub_stop(struct gw_scrub *s)
{
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        s->started = 0;
    }
}

void
gw_scrub_destroy(struct gw_scrub *s)
{
    if (s == NULL) {
        return;
    }
    gw_scrub_stop(s);
    token_put(s->token);
    for (size_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].prev);
    }
    free(s->nodes);
    free(s->page);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void
gw_scrub_metrics(struct gw_scrub *s, struct cm_buf *out)
{
    uint64_t v[6], ns;

    pthread_mutex_lock(&s->mu);
    v[0] = s->passes;
    v[1] = s->listed;
    v[2] = s->unreferenced;
    v[3] = s->deleted;
    v[4] = s->refused;
    v[5] = s->failed;
    ns = s->pass_ns;
    pthread_mutex_unlock(&s->mu);
#define SCRUB_FAMILY_(name, type, help, x)                                                         \
    cm_prom_family(out, "shoal_gateway_scrub_" name, type, help);                                  \
    cm_prom_u64(out, "shoal_gateway_scrub_" name, NULL, x);
    SCRUB_FAMILY_("passes_total", "counter", "Orphan chunk scrub passes ended", v[0])
    SCRUB_FAMILY_("listed_chunks", "gauge", "Chunk records the nodes listed in the last pass", v[1])
    SCRUB_FAMILY_("unreferenced_chunks", "gauge",
                  "Chunks the last pass found that no version names", v[2])
    SCRUB_FAMILY_("deleted_chunks_total", "counter",
                  "Orphan chunks deleted (unreferenced in two passes)", v[3])
    SCRUB_FAMILY_("refused_total", "counter",
                  "Node lists left alone: most of their chunks unreferenced (a lost store?)", v[4])
    SCRUB_FAMILY_("failed_total", "counter", "Node chunk lists that failed", v[5])
#undef SCRUB_FAMILY_
    cm_prom_family(out, "shoal_gateway_scrub_pass_seconds", "gauge",
                   "Time the last scrub pass took, its DELs' pauses included");
    cm_prom_double(out, "shoal_gateway_scrub_pass_seconds", NULL, (double)ns / 1e9);
}
