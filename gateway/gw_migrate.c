/*
 * gw_migrate.c - the migration thread, its moves and their commits (see
 * gw_migrate.h).
 *
 * A pass: scan (plan every version of a changed partition) ─▶ for each
 * planned version, paced by the rate and bounded in flight: read its
 * layout again (it may have been replaced, or moved), plan again against
 * the newest rows, gw_engine_move ─▶ COMMIT_MOVE ─▶ its META record again
 * (MOVED, with the new holders: gw_engine_relog) ─▶ once logged, a drop of
 * the old chunks after the grace period. Every move ends in item_end,
 * which counts it and wakes the thread.
 *
 * Locks: m->mu guards the progress, the resident bytes, inflight and the
 * per-partition counts; it is never held across a call into the engine,
 * the committer or the store. stopping and detached are atomics read by
 * the callbacks.
 */
#include "gw_migrate.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_commit.h"
#include "gw_demand.h"
#include "gw_grace.h"
#include "gw_meta.h"
#include "gw_parse.h"
#include "gw_state.h"
#include "gw_stripe.h"

#define MARK "migrated"
#define LIST_BATCH 1000
#define IDLE_MS 500
#define BLOCKED_PASSES 30 /* passes a version may wait for a target to come up */

uint64_t
gw_migrate_plan(const struct gw_layout *l, const uint32_t *row, size_t nrow, const uint32_t *up,
                size_t nup, uint32_t *to)
{
    uint32_t n = gw_stripe_n(l), fin[GW_MAX_HOLDERS];
    uint64_t mask = 0;
    int again = 1;

    for (uint32_t j = 0; j < n; j++) {
        int is_up = 0;

        fin[j] = l->holders[j];
        for (size_t i = 0; j < nrow && i < nup && !is_up; i++) {
            is_up = up[i] == row[j];
        }
        if (j < nrow && l->holders[j] != row[j] && is_up) {
            mask |= GW_BIT(j);
            fin[j] = row[j];
        }
    }
    /* A target some other position keeps (its own move blocked) would put
     * two chunks of a stripe on one node: that move waits. Dropping a move
     * only brings back a holder the layout already had, so this ends. */
    while (again) {
        again = 0;
        for (uint32_t j = 0; j < n; j++) {
            for (uint32_t x = 0; (mask & GW_BIT(j)) && x < n; x++) {
                if (x != j && fin[x] == fin[j]) {
                    mask &= ~GW_BIT(j);
                    fin[j] = l->holders[j];
                    again = 1;
                }
            }
        }
    }
    for (uint32_t j = 0; j < n; j++) {
        if (mask & GW_BIT(j)) {
            to[j] = row[j];
        }
    }
    return mask;
}

/* One version to move; lives from the plan to item_end. */
struct mv_item {
    struct gw_migrate *m;
    struct gw_commit_op op;
    struct gw_layout old; /* before the move */
    uint64_t mask;
    uint32_t to[GW_MAX_HOLDERS];
    uint64_t bytes; /* chunk bytes the move carries */
    size_t pidx;    /* its (tenant, partition) in the pass's arrays */
    uint32_t gen;   /* its MOVED record's: the pass's placement epoch */
    size_t klen;
    char key[];
};

struct gw_migrate {
    struct gw_migrate_cfg cfg;
    struct gw_meta *meta;
    struct gw_state *state;
    struct gw_engine *engine;
    struct gw_commit *commit;
    struct gw_grace *grace;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC: stop, a move ended */
    int stop, started;
    atomic_int stopping, detached;
    /* under mu */
    int inflight;
    uint64_t pass_failed;
    struct gw_migrate_progress pr;
    size_t nres;
    struct gw_resident *res;
    size_t nparts;  /* this pass: tenants x partitions */
    uint32_t *left; /* planned moves not ended, per (tenant, partition) */
    uint8_t *stuck; /* a version there waits (buffered, blocked, failed) */
    /* the thread's */
    pthread_t thread;
    uint64_t last_scan_ns;
    uint32_t blocked_passes;
    uint64_t quiet_epoch;             /* the requests in when it came have ended */
    uint64_t quiet_asked, quiet_seen; /* under mu */
};

/* ---- the ends of a move ---- */

static void
recount_locked(struct gw_migrate *m)
{
    uint64_t n = 0;

    for (size_t i = 0; i < m->nparts; i++) {
        n += m->left[i] > 0 || m->stuck[i];
    }
    m->pr.moving_partitions = n;
}

/* status 0: moved and committed; 1: nothing to do (replaced meanwhile);
 * else the failure. */
static void
item_end(struct mv_item *it, int status)
{
    struct gw_migrate *m = it->m;

    pthread_mutex_lock(&m->mu);
    m->inflight--;
    if (it->pidx < m->nparts && m->left[it->pidx] > 0) {
        m->left[it->pidx]--;
    }
    if (status == 0) {
        m->pr.bytes_moved += it->bytes;
        m->pr.bytes_moved_total += it->bytes;
        m->pr.versions_moved_total++;
    } else if (status < 0) {
        m->pass_failed++;
        m->pr.failed_total++;
        if (it->pidx < m->nparts) {
            m->stuck[it->pidx] = 1;
        }
    }
    recount_locked(m);
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    gw_layout_fini(&it->old);
    free(it);
}

struct mv_drop {
    struct gw_migrate *m;
    struct gw_layout old;
    uint64_t mask;
};

static void
drop_run(void *arg)
{
    struct mv_drop *d = arg;

    if (!atomic_load(&d->m->detached)) {
        gw_engine_drop(d->m->engine, &d->old, d->mask);
    }
    free(d);
}

/* The moved version's MOVED record is logged, or not (any thread). Logged:
 * the old copies go once the GETs that read the old layout before the
 * commit have ended. Not (the gateway stops): they stay where they were,
 * and so does what --rebuild-meta would find from the older record. */
static void
relogged(void *arg, int rc)
{
    struct mv_drop *d = arg;

    if (rc == 0 && gw_grace_defer(d->m->grace, drop_run, d) == 0) {
        return;
    }
    CM_WARN("moved chunks left on their old holders object=%016llx tenant=%u err=%s",
            (unsigned long long)d->old.object, d->old.tenant, cm_errname(rc ? rc : -ENOMEM));
    free(d);
}

/* Sends the record of the item's version again, as committed with its new
 * holders (committer thread, after the commit), then drops the old copies
 * (relogged). A version replaced since has a record of its own. */
static void
relog(struct gw_migrate *m, struct mv_item *it, struct mv_drop *d)
{
    struct gw_meta_obj o;

    if (atomic_load(&m->detached)) {
        free(d);
        return;
    }
    if (gw_meta_get_obj(m->meta, it->old.tenant, it->key, it->klen, &o) == 0 &&
        o.lay.object == it->old.object) {
        gw_engine_relog(m->engine, &o.lay, &o.a, it->key, it->klen, it->gen, relogged, d);
    } else {
        relogged(d, 0);
    }
    gw_meta_obj_fini(&o);
}

/* The committer's answer to a COMMIT_MOVE (committer thread). */
static void
commit_done(struct gw_commit_op *op)
{
    struct mv_item *it = CM_CONTAINER_OF(op, struct mv_item, op);
    struct gw_migrate *m = it->m;

    if (op->rc == 0 && op->moved) {
        struct mv_drop *d = malloc(sizeof(*d));

        CM_DEBUG("version moved tenant=%u object=%016llx positions=%llx", op->lay.tenant,
                 (unsigned long long)op->lay.object, (unsigned long long)it->mask);
        if (d != NULL) {
            d->m = m;
            d->old = it->old;
            d->old.tags = NULL; /* it->old's, freed with it; a DEL names no instance */
            d->mask = it->mask;
            relog(m, it, d);
        } else {
            CM_WARN("moved chunks left on their old holders object=%016llx tenant=%u err=ENOMEM",
                    (unsigned long long)op->lay.object, op->lay.tenant);
        }
        gw_layout_fini(&op->lay);
        item_end(it, 0);
    } else if (op->rc == 0) {
        /* Replaced or deleted while it moved: its retire deleted the old
         * holders' chunks; the copies this move made go too. */
        if (!atomic_load(&m->detached)) {
            gw_engine_delete(m->engine, &op->lay, 0);
        }
        gw_layout_fini(&op->lay);
        item_end(it, 1);
    } else {
        CM_WARN("move not committed object=%016llx tenant=%u err=%s",
                (unsigned long long)op->lay.object, op->lay.tenant, cm_errname(op->rc));
        gw_layout_fini(&op->lay);
        item_end(it, op->rc);
    }
}

/* The engine's answer (engine thread). */
static void
move_done(void *arg, int status, const struct gw_layout *layout)
{
    struct mv_item *it = arg;
    struct gw_migrate *m = it->m;

    if (status == 0 && !atomic_load(&m->stopping)) {
        memset(&it->op, 0, sizeof(it->op));
        it->op.kind = COMMIT_MOVE;
        it->op.key = it->key;
        it->op.klen = it->klen;
        (void)gw_layout_copy(&it->op.lay, layout); /* out of memory: the tags stay as stored */
        it->op.done = commit_done;
        gw_commit_queue(m->commit, &it->op);
        return;
    }
    if (status != 0 && status != -EBUSY) {
        CM_INFO("move failed tenant=%u object=%016llx err=%s", it->old.tenant,
                (unsigned long long)it->old.object, cm_errname(status));
    }
    item_end(it, status != 0 ? status : -ECANCELED);
}

/* ---- scans ---- */

struct scan {
    struct gw_migrate *m;
    const struct gw_snap *s;
    const struct gw_tenant *t;
    size_t ti;
    int plan;      /* a pass: collect moves */
    uint64_t done; /* rows changed after this epoch move */
    uint32_t *up;
    size_t nup;
    uint64_t *res;  /* ntenants x partitions */
    uint32_t *left; /* ntenants x partitions */
    uint8_t *stuck;
    struct mv_item **items;
    size_t nitems, cap;
    uint64_t bytes;
    uint64_t blocked;
    char after[GW_KEY_MAX];
    size_t alen;
};

static uint64_t
holder_bytes(const struct gw_layout *l)
{
    return (uint64_t)l->chunk_size * l->nstripes;
}

static void
scan_cb(void *arg, const char *key, size_t klen, const struct gw_layout *l)
{
    struct scan *sc = arg;
    uint32_t p = gw_demand_partition(key, klen, sc->t->id, sc->s->partitions);
    size_t pidx = sc->ti * sc->s->partitions + p;
    const uint32_t *row;
    uint32_t to[GW_MAX_HOLDERS];
    size_t nrow;
    uint64_t mask;

    memcpy(sc->after, key, klen);
    sc->alen = klen;
    sc->res[pidx] += holder_bytes(l);
    /* An empty version, or a record-only one (a composite, whose parts
     * move at their own keys; a bucket; an upload), has nothing to move. */
    if (!sc->plan || sc->t->row_epoch[p] <= sc->done || l->nstripes == 0 ||
        gw_layout_record_only(l)) {
        return;
    }
    gw_snap_row(sc->s, sc->t, p, &row, &nrow);
    mask = gw_migrate_plan(l, row, nrow, sc->up, sc->nup, to);
    for (uint32_t j = 0; j < gw_stripe_n(l) && j < nrow && mask == 0; j++) {
        if (l->holders[j] != row[j]) {
            sc->blocked++; /* a target is down, or taken by a position that waits */
            sc->stuck[pidx] = 1;
            break;
        }
    }
    if (mask == 0) {
        return;
    }
    /* A version still in the persistent buffer (its record does not say:
     * the pending table does) is refused by the engine with -EBUSY and
     * waits for the next pass. */
    struct mv_item *it = cm_calloc(1, sizeof(*it) + klen);
    it->m = sc->m;
    it->old = *l;
    it->old.tags = NULL; /* a listing's layout carries none of its own */
    it->mask = mask;
    memcpy(it->to, to, sizeof(to));
    it->bytes = (uint64_t)__builtin_popcountll(mask) * holder_bytes(l);
    it->pidx = pidx;
    it->klen = klen;
    memcpy(it->key, key, klen);
    if (sc->nitems == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 64;
        sc->items = cm_realloc(sc->items, sc->cap * sizeof(*sc->items));
    }
    sc->items[sc->nitems++] = it;
    sc->left[pidx]++;
    sc->bytes += it->bytes;
}

static uint32_t *
up_nodes(const struct gw_snap *s, size_t *n)
{
    uint32_t *up = cm_calloc(s->nnodes + 1, sizeof(*up));

    *n = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].up) {
            up[(*n)++] = s->nodes[i].id;
        }
    }
    return up;
}

static int
stopped(struct gw_migrate *m)
{
    int s;

    pthread_mutex_lock(&m->mu);
    s = m->stop;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* Scans every tenant of s; with plan, collects the moves of partitions
 * changed after done. Publishes the resident bytes. 0 or a store error. */
static int
scan_all(struct gw_migrate *m, const struct gw_snap *s, int plan, uint64_t done, struct scan *sc)
{
    size_t n = s->ntenants * (size_t)s->partitions;
    int rc = 0;

    memset(sc, 0, sizeof(*sc));
    sc->m = m;
    sc->s = s;
    sc->plan = plan;
    sc->done = done;
    sc->up = up_nodes(s, &sc->nup);
    sc->res = cm_calloc(n + 1, sizeof(*sc->res));
    sc->left = cm_calloc(n + 1, sizeof(*sc->left));
    sc->stuck = cm_calloc(n + 1, 1);
    for (size_t ti = 0; ti < s->ntenants && rc == 0 && !stopped(m); ti++) {
        const struct gw_peer *peer;

        sc->t = &s->tenants[ti];
        sc->ti = ti;
        if (m->cfg.self != NULL && gw_snap_home(s, sc->t, m->cfg.self, &peer) != GW_HOME_HERE) {
            continue;
        }
        /* Internal keys first (the parts of multipart uploads and of the
         * composites they completed: ordinary versions, which move at
         * their own keys), then the others. */
        for (int internal = 1; internal >= 0 && rc == 0; internal--) {
            int more = 1;

            sc->alen = 0;
            while (more && rc == 0) {
                rc = gw_meta_list(m->meta, sc->t->id, "\0", (size_t)internal,
                                  sc->alen ? sc->after : NULL, sc->alen, LIST_BATCH, scan_cb, sc,
                                  &more);
            }
        }
    }
    if (rc == 0) {
        struct gw_resident *res = cm_calloc(n + 1, sizeof(*res));
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
            if (sc->res[i] > 0) {
                res[k].tenant = s->tenants[i / s->partitions].id;
                res[k].partition = (uint32_t)(i % s->partitions);
                res[k++].bytes = sc->res[i];
            }
        }
        pthread_mutex_lock(&m->mu);
        free(m->res);
        m->res = res;
        m->nres = k;
        pthread_mutex_unlock(&m->mu);
        m->last_scan_ns = cm_now_ns();
    }
    return rc;
}

static void
scan_fini(struct scan *sc)
{
    for (size_t i = 0; i < sc->nitems; i++) {
        free(sc->items[i]);
    }
    free(sc->items);
    free(sc->up);
    free(sc->res);
    free(sc->left);
    free(sc->stuck);
}

/* Waits (mu held) until deadline_ns or a wake-up; 0, or 1 when stopping. */
static int
wait_locked(struct gw_migrate *m, uint64_t deadline_ns)
{
    if (!m->stop) {
        cm_cond_wait_until(&m->cv, &m->mu, deadline_ns);
    }
    return m->stop;
}

/* Starts the move of it (transferred) if its version still needs it;
 * returns the bytes it moves. */
static uint64_t
start_one(struct gw_migrate *m, struct mv_item *it)
{
    struct gw_snap *s = gw_state_snap(m->state);
    const struct gw_tenant *t = gw_snap_tenant(s, it->old.tenant);
    struct gw_layout cur;
    const uint32_t *row;
    uint32_t *up = NULL;
    size_t nrow, nup;
    int rc = gw_meta_get(m->meta, it->old.tenant, it->key, it->klen, &cur);

    if (rc != 0 || t == NULL || cur.object != it->old.object) {
        if (rc == 0) {
            gw_layout_fini(&cur);
        }
        it->mask = 0; /* replaced or deleted since the scan: nothing to move */
    } else {
        gw_layout_fini(&it->old);
        up = up_nodes(s, &nup);
        gw_snap_row(s, t, gw_demand_partition(it->key, it->klen, t->id, s->partitions), &row,
                    &nrow);
        it->old = cur;
        it->mask = gw_migrate_plan(&cur, row, nrow, up, nup, it->to);
        it->bytes = (uint64_t)__builtin_popcountll(it->mask) * holder_bytes(&cur);
    }
    free(up);
    gw_snap_unref(s);
    uint64_t bytes = it->mask != 0 ? it->bytes : 0;

    pthread_mutex_lock(&m->mu);
    m->inflight++;
    pthread_mutex_unlock(&m->mu);
    if (it->mask == 0) {
        item_end(it, 1);
        return 0;
    }
    it->gen = (uint32_t)m->pr.target_epoch; /* this thread's to write */
    gw_engine_move(m->engine, &it->old, it->mask, it->to, move_done, it);
    return bytes;
}

/* The requests that were in at a gw_grace_defer have ended (any thread). */
static void
quiet_run(void *arg)
{
    struct gw_migrate *m = arg;

    pthread_mutex_lock(&m->mu);
    m->quiet_seen++;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* Waits (mu held) until the requests served now have ended: 0, or 1 when
 * stopping. Without memory to wait, it waits a second instead. */
static int
quiet_locked(struct gw_migrate *m)
{
    uint64_t want = ++m->quiet_asked, until = cm_now_ns() + 1000000000ull;
    int rc;

    pthread_mutex_unlock(&m->mu);
    rc = gw_grace_defer(m->cfg.served, quiet_run, m);
    pthread_mutex_lock(&m->mu);
    if (rc != 0) {
        m->quiet_seen++; /* as if it had run: quiet_seen counts every ask */
        return wait_locked(m, until);
    }
    while (m->quiet_seen < want) {
        if (wait_locked(m, cm_now_ns() + 1000000000ull)) {
            return 1;
        }
    }
    return 0;
}

/* One pass for target (s's placement epoch). 1 when everything moved. */
static int
run_pass(struct gw_migrate *m, struct gw_snap *s, uint64_t done)
{
    struct scan sc;
    uint64_t next_ns = cm_now_ns(), failed;
    size_t i = 0;
    int rc = scan_all(m, s, 1, done, &sc), clean;

    pthread_mutex_lock(&m->mu);
    m->pr.target_epoch = s->placement_epoch;
    m->pr.running = 1;
    m->pr.passes_total++;
    m->pr.bytes_to_move = sc.bytes;
    m->pr.bytes_moved = 0;
    m->pass_failed = 0;
    free(m->left);
    free(m->stuck);
    m->nparts = s->ntenants * (size_t)s->partitions;
    m->left = sc.left;
    m->stuck = sc.stuck;
    sc.left = NULL;
    sc.stuck = NULL;
    recount_locked(m);
    pthread_mutex_unlock(&m->mu);
    if (rc == 0 && sc.nitems > 0) {
        CM_INFO("migration pass epoch=%llu since=%llu versions=%zu bytes=%llu blocked=%llu",
                (unsigned long long)s->placement_epoch, (unsigned long long)done, sc.nitems,
                (unsigned long long)sc.bytes, (unsigned long long)sc.blocked);
    }
    while (rc == 0 && i < sc.nitems) {
        struct mv_item *it = sc.items[i];
        int stop;

        pthread_mutex_lock(&m->mu);
        while (!(stop = wait_locked(m, next_ns)) && cm_now_ns() < next_ns) {
        }
        while (!stop && m->inflight >= m->cfg.max_inflight) {
            stop = wait_locked(m, cm_now_ns() + 1000000000ull);
        }
        pthread_mutex_unlock(&m->mu);
        if (stop) {
            break;
        }
        sc.items[i++] = NULL;
        uint64_t bytes = start_one(m, it);
        if (m->cfg.rate > 0) {
            uint64_t now = cm_now_ns();

            next_ns = (next_ns > now ? next_ns : now) +
                      (uint64_t)((double)bytes * 1e9 / (double)m->cfg.rate);
        }
    }
    pthread_mutex_lock(&m->mu);
    while (m->inflight > 0 && !m->stop) {
        (void)wait_locked(m, cm_now_ns() + 1000000000ull);
    }
    failed = m->pass_failed;
    pthread_mutex_unlock(&m->mu);
    /* A version waiting for a target that is down holds the pass back for
     * a while: it is most likely a node restarting. */
    m->blocked_passes = sc.blocked > 0 ? m->blocked_passes + 1 : 0;
    clean = rc == 0 && i == sc.nitems && failed == 0 &&
            (sc.blocked == 0 || m->blocked_passes >= BLOCKED_PASSES);
    if (rc != 0) {
        CM_WARN("migration scan failed err=%s", cm_errname(rc));
    } else if (sc.nitems > 0 || !clean) {
        CM_INFO("migration pass ended epoch=%llu clean=%d moved_bytes=%llu failed=%llu "
                "blocked=%llu",
                (unsigned long long)s->placement_epoch, clean,
                (unsigned long long)m->pr.bytes_moved, (unsigned long long)failed,
                (unsigned long long)sc.blocked);
    }
    scan_fini(&sc);
    return clean;
}

static void *
migrate_main(void *arg)
{
    struct gw_migrate *m = arg;
    uint64_t done = 0;
    int rc = gw_meta_mark_get(m->meta, MARK, &done);

    if (rc != 0 && rc != CM_E_NOTFOUND) {
        CM_WARN("cannot read the migration mark err=%s", cm_errname(rc));
    }
    pthread_mutex_lock(&m->mu);
    m->pr.done_epoch = done;
    while (!m->stop) {
        struct gw_snap *s;
        uint64_t wait_ms = IDLE_MS;

        pthread_mutex_unlock(&m->mu);
        s = gw_state_snap(m->state);
        if (s->placement_epoch > done && m->cfg.served != NULL &&
            s->placement_epoch > m->quiet_epoch) {
            pthread_mutex_lock(&m->mu);
            int stop = quiet_locked(m);
            pthread_mutex_unlock(&m->mu);
            if (stop) {
                gw_snap_unref(s);
                pthread_mutex_lock(&m->mu);
                break;
            }
            m->quiet_epoch = s->placement_epoch;
        }
        if (s->placement_epoch > done) {
            if (run_pass(m, s, done)) {
                done = s->placement_epoch;
                rc = gw_meta_mark_set(m->meta, MARK, done);
                if (rc != 0) {
                    CM_WARN("cannot store the migration mark err=%s", cm_errname(rc));
                }
            } else {
                wait_ms = (uint64_t)m->cfg.retry_ms;
            }
            pthread_mutex_lock(&m->mu);
            m->pr.running = 0;
            m->pr.done_epoch = done;
            if (done == s->placement_epoch) {
                m->pr.moving_partitions = 0;
                m->nparts = 0;
            }
            pthread_mutex_unlock(&m->mu);
        } else if (cm_now_ns() - m->last_scan_ns >= (uint64_t)m->cfg.rescan_ms * 1000000u) {
            struct scan sc;

            (void)scan_all(m, s, 0, 0, &sc);
            scan_fini(&sc);
        }
        gw_snap_unref(s);
        pthread_mutex_lock(&m->mu);
        (void)wait_locked(m, cm_now_ns() + wait_ms * 1000000u);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- life cycle and figures ---- */

int
gw_migrate_create(const struct gw_migrate_cfg *cfg, struct gw_meta *meta, struct gw_state *state,
                  struct gw_engine *e, struct gw_commit *commit, struct gw_grace *grace,
                  struct gw_migrate **out)
{
    struct gw_migrate *m = cm_calloc(1, sizeof(*m));
    pthread_condattr_t ca;

    m->cfg = *cfg;
    if (m->cfg.max_inflight <= 0) {
        m->cfg.max_inflight = 64;
    }
    if (m->cfg.retry_ms <= 0) {
        m->cfg.retry_ms = 2000;
    }
    if (m->cfg.rescan_ms <= 0) {
        m->cfg.rescan_ms = 30000;
    }
    m->meta = meta;
    m->state = state;
    m->engine = e;
    m->commit = commit;
    m->grace = grace;
    atomic_init(&m->stopping, 0);
    atomic_init(&m->detached, 0);
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = m;
    return 0;
}

int
gw_migrate_start(struct gw_migrate *m)
{
    int rc = pthread_create(&m->thread, NULL, migrate_main, m);

    if (rc != 0) {
        return -rc;
    }
    m->started = 1;
    return 0;
}

void
gw_migrate_stop(struct gw_migrate *m)
{
    atomic_store(&m->stopping, 1);
    if (m->started) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_cond_broadcast(&m->cv);
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thread, NULL);
        m->started = 0;
    }
}

void
gw_migrate_detach(struct gw_migrate *m)
{
    atomic_store(&m->detached, 1);
}

void
gw_migrate_destroy(struct gw_migrate *m)
{
    if (m == NULL) {
        return;
    }
    gw_migrate_stop(m);
    free(m->res);
    free(m->left);
    free(m->stuck);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void
gw_migrate_progress(struct gw_migrate *m, struct gw_migrate_progress *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->pr;
    pthread_mutex_unlock(&m->mu);
}

size_t
gw_migrate_resident(struct gw_migrate *m, struct gw_resident **out)
{
    size_t n;

    pthread_mutex_lock(&m->mu);
    n = m->nres;
    *out = cm_calloc(n + 1, sizeof(**out));
    memcpy(*out, m->res, n * sizeof(**out));
    pthread_mutex_unlock(&m->mu);
    return n;
}

void
gw_migrate_metrics(struct gw_migrate *m, struct cm_buf *out)
{
    struct gw_migrate_progress p;

    gw_migrate_progress(m, &p);
#define MIG_FAMILY_(name, type, help, v)                                                           \
    cm_prom_family(out, "shoal_gateway_migrate_" name, type, help);                                \
    cm_prom_u64(out, "shoal_gateway_migrate_" name, NULL, v);
    MIG_FAMILY_("done_epoch", "gauge", "Placement epoch of the last finished migration pass",
                p.done_epoch)
    MIG_FAMILY_("target_epoch", "gauge", "Placement epoch the last migration pass worked for",
                p.target_epoch)
    MIG_FAMILY_("running", "gauge", "1 while a migration pass runs", (uint64_t)p.running)
    MIG_FAMILY_("moving_partitions", "gauge", "Partitions with versions still to move",
                p.moving_partitions)
    MIG_FAMILY_("pass_bytes", "gauge", "Chunk bytes the current or last pass found to move",
                p.bytes_to_move)
    MIG_FAMILY_("pass_moved_bytes", "gauge", "Chunk bytes the current or last pass moved",
                p.bytes_moved)
    MIG_FAMILY_("moved_bytes_total", "counter", "Chunk bytes moved to new holders",
                p.bytes_moved_total)
    MIG_FAMILY_("moved_versions_total", "counter", "Versions moved and committed",
                p.versions_moved_total)
    MIG_FAMILY_("failed_total", "counter", "Moves that failed (retried by a later pass)",
                p.failed_total)
    MIG_FAMILY_("passes_total", "counter", "Migration passes started", p.passes_total)
    MIG_FAMILY_("rate_limit_bytes", "gauge", "--migrate-rate: chunk bytes moved per second",
                m->cfg.rate)
#undef MIG_FAMILY_
}
