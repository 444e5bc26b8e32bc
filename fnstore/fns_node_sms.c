/*
 * fns_node_sms.c - the SMS window on this node (pol_sms.h), between the
 * request pipeline, the instance table (fns_store.h), the insertion log
 * (fns_ilog.h) and parallel recovery (fns_recover.h):
 *
 *   PUT ──place──▶ an instance of the pool's current generation (OPEN_NEW:
 *                  a free slot opens, WARM; its instance record is logged)
 *   GET hit ──on_read──▶ compacted into the current generation, or, from a
 *                  DEGRADED instance, a hot copy in the cache space
 *   GET miss ──▶ CM_E_STALE (tag of a lost instance) │ wait for its recovery,
 *                  promoted │ COS reload ──on_read(NOWHERE)──▶ re-admitted or cached
 *   heartbeat answer ──▶ sms config, pool generations, decisions (state,
 *                  generation, warm-ups), reclaims
 *   reclaim ──▶ memory gone, incarnation + 1; ACTIVE/WARM: recovered in place
 *                  from the log's chunk records by R helpers; DEGRADED: released
 *
 * A recovery first logs the new instance and its chunks under the new tag
 * (same COS locations) and the old tag's release, so what the log says
 * an instance holds is always one tag's records, and a crash mid-recovery
 * recovers it again after the restart. Until the controller's "sms" block
 * is heard the node runs "static" with every slot allowed to one pool,
 * never releases an instance holding data, and gives an emptied one's
 * slot back at once (it holds nothing to lose).
 *
 * The controller's orders and --reclaim-rate are in fns_node_sms_orders.c.
 *
 * Threads: the loop thread, but fns_node_sms_orders (any: under mu).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_time.h"
#include "cm_wire.h"
#include "fns_cos.h"
#include "fns_ilog.h"
#include "fns_loop.h"
#include "fns_node_impl.h"
#include "fns_pack.h"
#include "fns_recover.h"
#include "fns_store.h"

#define FNS_RECOVER_DEPTH                                                                          \
    2 /* loads in flight per helper: a promoted chunk waits for at most this many */

struct fns_pool *
fns_pool_of(struct fns_node *n, uint32_t tenant)
{
    uint64_t h = cm_hmix64(tenant);
    struct fns_pool *p;

    for (struct cm_hnode *hn = cm_hmap_first(&n->pools, h); hn; hn = cm_hmap_next(hn, h)) {
        p = CM_CONTAINER_OF(hn, struct fns_pool, hn);
        if (p->tenant == tenant) {
            return p;
        }
    }
    p = cm_calloc(1, sizeof(*p));
    p->tenant = tenant;
    cm_hmap_add(&n->pools, &p->hn, h);
    return p;
}

struct fns_node_cost *
fns_node_cost_of(struct fns_node *n, uint32_t tenant)
{
    struct fns_tstat *ts = fns_node_tstat(n, tenant);

    ts->cost.tenant = tenant;
    return &ts->cost;
}

static int
fns_node_sms_static(const struct fns_node *n)
{
    return strcmp(n->sms_ops->name, "static") == 0;
}

/* The view of tenant's pool on this node (n->view, n->view_slot). */
static struct pol_sms_view
fns_node_sms_view(struct fns_node *n, uint32_t tenant)
{
    struct pol_sms_view v = {.gen = fns_pool_of(n, tenant)->gen, .inst = n->view};
    uint32_t ns = fns_store_nslots(n->store);

    for (uint32_t i = 0; i < ns; i++) {
        struct fns_slot *sl = fns_store_slot(n->store, i);

        if (sl->live && sl->tenant == tenant) {
            n->view[v.ninst] = (struct pol_sms_inst){.gen = sl->gen,
                                                     .state = sl->state,
                                                     .lost = sl->lost,
                                                     .used = sl->used,
                                                     .put_bytes = sl->put_bytes,
                                                     .read_bytes = sl->read_bytes,
                                                     .read_chunks = sl->read_chunks,
                                                     .warm_ns = sl->warm_ns};
            n->view_slot[v.ninst++] = i;
        }
    }
    v.can_open = ns - fns_store_live(n->store);
    return v;
}

/* The view index of slot, or POL_SMS_NOWHERE. */
static size_t
fns_node_sms_index(const struct fns_node *n, const struct pol_sms_view *v, int slot)
{
    for (size_t i = 0; i < v->ninst; i++) {
        if ((int)n->view_slot[i] == slot) {
            return i;
        }
    }
    return POL_SMS_NOWHERE;
}

void
fns_node_log_instance(struct fns_node *n, uint32_t slot)
{
    struct fns_slot *sl = fns_store_slot(n->store, slot);

    fns_ilog_add_instance(n->ilog, fns_store_tag(n->store, slot), sl->tenant, sl->gen, sl->state);
}

int
fns_node_sms_place(struct fns_node *n, uint32_t tenant, uint32_t len, uint32_t *slot)
{
    for (int tries = 0; tries < 2; tries++) {
        struct pol_sms_view v = fns_node_sms_view(n, tenant);
        size_t idx;
        int rc = n->sms_ops->place(n->sms, &v, len, cm_now_ns(), &idx);

        if (rc == 0) {
            *slot = n->view_slot[idx];
            return 0;
        }
        if (rc != POL_SMS_OPEN_NEW) {
            return rc;
        }
        if (fns_store_open(n->store, tenant, v.gen, slot) != 0) {
            return -ENOSPC;
        }
        fns_store_slot(n->store, *slot)->warm_ns = cm_now_ns();
        fns_node_log_instance(n, *slot);
        n->sst.opened++;
    }
    return -ENOSPC;
}

void
fns_node_sms_placed(struct fns_node *n, struct fns_chunk *c, uint32_t slot)
{
    struct fns_slot *sl = fns_store_slot(n->store, slot);

    sl->put_bytes += c->len;
    sl->warm_ns = cm_now_ns();
    if (sl->state == POL_SMS_WARM) {
        sl->state = POL_SMS_ACTIVE;
    }
}

/* Where c's persisted bytes are in COS: 0 and *loc, or CM_E_NOTFOUND. */
static int
fns_node_cos_loc(struct fns_node *n, const struct fns_chunk *c, struct fns_ilog_loc *loc)
{
    const struct fns_ilog_chunk *e = fns_ilog_find(n->ilog, &c->key);
    struct fns_pack_loc pl;

    if (!c->persisted) {
        return CM_E_NOTFOUND; /* its write's reap logs it */
    }
    if (e != NULL) {
        *loc = e->loc;
    } else if (fns_pack_index_get(n->pack, &c->key, &pl) == 0) {
        *loc = (struct fns_ilog_loc){.seg = pl.seg, .off = pl.off, .blob_len = pl.len};
    } else {
        *loc = (struct fns_ilog_loc){0};
    }
    return 0;
}

/* c (indexed, or not yet) goes to an instance of the pool's current
 * generation; logged there when persisted. 0, or an error (c unmoved). */
static int
fns_node_sms_admit(struct fns_node *n, struct fns_chunk *c)
{
    struct fns_ilog_loc loc;
    uint32_t slot;
    int rc = fns_node_sms_place(n, c->key.tenant, c->len, &slot);

    if (rc == 0) {
        rc = fns_store_put(n->store, c, slot);
    }
    if (rc != 0) {
        return rc;
    }
    fns_node_sms_placed(n, c, slot);
    if (fns_node_cos_loc(n, c, &loc) == 0) {
        fns_ilog_add_chunk(n->ilog, c->tag, &c->key, c->len, &loc);
        fns_node_ilog_kick(n);
    }
    return 0;
}

void
fns_node_sms_hit(struct fns_node *n, struct fns_chunk *c)
{
    struct pol_sms_view v = fns_node_sms_view(n, c->key.tenant);
    uint64_t now = cm_now_ns();
    size_t i = fns_node_sms_index(n, &v, c->instance);
    struct fns_slot *sl;

    if (i == POL_SMS_NOWHERE) { /* in the cache space only */
        n->sst.cache_hits++;
        fns_store_cache_touch(n->store, c);
        if (n->sms_ops->on_read(n->sms, &v, POL_SMS_NOWHERE, c->len, now) == 1 &&
            fns_node_sms_admit(n, c) == 0) {
            n->sst.readmissions++;
        }
        return;
    }
    sl = fns_store_slot(n->store, (uint32_t)c->instance);
    sl->read_bytes += c->len;
    sl->read_chunks++;
    sl->warm_ns = now;
    if (n->sms_ops->on_read(n->sms, &v, i, c->len, now) == 1) {
        if (fns_node_sms_admit(n, c) == 0) {
            n->sst.compactions++;
            n->sst.compaction_bytes += c->len;
        }
        return;
    }
    if (sl->state == POL_SMS_DEGRADED && !fns_store_cached(c) &&
        fns_store_cache(n->store, c) == 0) {
        n->sst.cache_inserts++; /* a hot copy: its instance is not recovered if lost */
    }
}

/* The recovery figures go out now, not at the next tick: they are how a
 * recovery's progress is watched. */
static void
fns_node_sms_progress(struct fns_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->pub_sst.recovery_chunks = n->sst.recovery_chunks;
    n->pub_sst.recovery_bytes = n->sst.recovery_bytes;
    n->pub_sst.recoveries = n->sst.recoveries;
    n->pub_sst.recovery_running = fns_recover_running(n->rec);
    n->pub_sst.recovery_ns = n->sst.recovery_ns;
    n->pub_sst.reclaimed = n->sst.reclaimed;
    n->pub_sst.stale = n->sst.stale;
    pthread_mutex_unlock(&n->mu);
}

/* Helpers load their next items. */
static void
fns_node_sms_pump(struct fns_node *n)
{
    if (n->destroying) {
        return;
    }
    for (uint32_t h = 0; h < fns_recover_helpers(n->rec); h++) {
        struct fns_recover_item *it;

        while ((it = fns_recover_next(n->rec, h)) != NULL) {
            struct fns_cos_job *job = cm_calloc(1, sizeof(*job));

            job->op = FNS_COS_READ;
            job->key = it->key;
            job->arg = it;
            it->load_ns = cm_now_ns();
            if (it->loc.seg != 0) {
                job->loc = (struct fns_pack_loc){
                    .seg = it->loc.seg, .off = it->loc.off, .len = it->loc.blob_len};
            }
            fns_cos_submit(n->recpool, job);
        }
    }
}

void
fns_node_sms_miss(struct fns_node *n, struct fns_req *req, const struct fns_key *key)
{
    uint32_t tag = req->hdr.incarnation, slot;
    int stale = tag != 0 && !fns_store_tag_live(n->store, tag, &slot);
    struct fns_recover_item *it = fns_recover_find(n->rec, key);

    if (stale && !(req->hdr.flags & CM_WF_COS_OK)) {
        if (it != NULL) {
            fns_recover_promote(n->rec, it, NULL); /* asked first */
            fns_node_sms_pump(n);
        }
        n->sst.stale++;
        fns_node_sms_progress(n);
        fns_node_answer(n, req, CM_E_STALE, 0, NULL);
        return;
    }
    if (it != NULL) {
        fns_recover_promote(n->rec, it, req);
        fns_node_sms_pump(n);
        return;
    }
    fns_node_reload(n, req, key);
}

void
fns_node_sms_reloaded(struct fns_node *n, struct fns_chunk *c, const struct fns_pack_loc *loc)
{
    struct pol_sms_view v = fns_node_sms_view(n, c->key.tenant);
    struct fns_ilog_loc il = {.seg = loc->seg, .off = loc->off, .blob_len = loc->len};
    uint32_t slot;

    if (n->sms_ops->on_read(n->sms, &v, POL_SMS_NOWHERE, c->len, cm_now_ns()) == 1 &&
        fns_node_sms_place(n, c->key.tenant, c->len, &slot) == 0 &&
        fns_store_put(n->store, c, slot) == 0) {
        fns_node_sms_placed(n, c, slot);
        fns_ilog_add_chunk(n->ilog, c->tag, &c->key, c->len, &il);
        fns_node_ilog_kick(n);
        n->sst.readmissions++;
        return;
    }
    if (fns_store_cache(n->store, c) == 0) {
        n->sst.cache_inserts++;
    }
}

/* GETs that waited on a recovery run again (the item is gone). */
static void
fns_node_sms_rerun(struct fns_node *n, void **waiters, size_t nw)
{
    for (size_t i = 0; i < nw; i++) {
        struct fns_req *req = waiters[i];
        struct fns_key key = {.tenant = req->hdr.tenant,
                              .index = req->hdr.index,
                              .object = req->hdr.object,
                              .version = req->hdr.obj_version};
        struct fns_chunk *c = fns_store_get(n->store, &key);

        if (c != NULL) {
            req->tag = c->instance >= 0 ? c->tag : 0;
            fns_node_answer(n, req, 0, fns_persisted_flag(c) | CM_WF_FROM_COS, c);
        } else {
            req->hdr.flags |= CM_WF_COS_OK; /* it already waited: no STALE now */
            fns_node_sms_miss(n, req, &key);
        }
    }
    free(waiters);
}

void
fns_node_sms_release(struct fns_node *n, uint32_t slot)
{
    void **waiters;
    size_t nw = fns_recover_drop_slot(n->rec, slot, &waiters);
    uint32_t tag = fns_store_tag(n->store, slot);

    fns_ilog_add_instance(n->ilog, tag, fns_store_slot(n->store, slot)->tenant, 0,
                          POL_SMS_RELEASED);
    fns_store_release(n->store, slot);
    n->sst.released++;
    fns_node_ilog_kick(n);
    fns_node_sms_rerun(n, waiters, nw);
    fns_node_publish(n);
}

void
fns_node_sms_deleted(struct fns_node *n, const struct fns_key *key, int slot)
{
    struct fns_slot *sl;

    fns_ilog_add_delete(n->ilog, key);
    fns_node_ilog_kick(n);
    if (slot < 0 || !fns_node_sms_static(n)) {
        return;
    }
    sl = fns_store_slot(n->store, (uint32_t)slot);
    if (sl->nchunks == 0 && !sl->lost) {
        fns_node_sms_release(n, (uint32_t)slot);
    }
}

void
fns_node_sms_persisted(struct fns_node *n, struct fns_chunk *c, const struct fns_pack_loc *loc,
                       int undeleted)
{
    struct fns_ilog_loc il = {.seg = loc->seg, .off = loc->off, .blob_len = loc->len};
    struct fns_chunk *cur = fns_store_get(n->store, &c->key);
    uint32_t slot = CM_WIRE_TAG_SLOT(c->tag);
    struct fns_slot *sl;

    if (cur == c && c->instance >= 0) {
        fns_ilog_add_chunk(n->ilog, c->tag, &c->key, c->len, &il);
        fns_node_ilog_kick(n);
        return;
    }
    if (cur != NULL || !undeleted || c->tag == 0 || slot >= fns_store_nslots(n->store) ||
        fns_store_tag(n->store, slot) == c->tag) {
        return; /* replaced, deleted, or only in the cache space */
    }
    /* Its instance was reclaimed before the write landed: the bytes are
     * right here, so the recovered instance (its slot's) takes them now. */
    sl = fns_store_slot(n->store, slot);
    if (sl->live && sl->tenant == c->key.tenant && fns_store_put(n->store, c, slot) == 0) {
        fns_ilog_add_chunk(n->ilog, c->tag, &c->key, c->len, &il);
        fns_node_ilog_kick(n);
        fns_node_publish(n);
    }
}

/* ---- merges -------------------------------------------------------------- */

#define FNS_MERGE_TRIES 8 /* per pool and round: candidates whose chunks did not pack */

static int
fns_node_len_desc(const void *a, const void *b)
{
    const struct fns_chunk *x = *(struct fns_chunk *const *)a;
    const struct fns_chunk *y = *(struct fns_chunk *const *)b;

    return x->len < y->len ? 1 : x->len > y->len ? -1 : 0;
}

/* Empties v->inst[from] into the others of its generation if every chunk
 * finds room (merge_to, largest first; the dry run adds to n->view's used)
 * and releases it: 1, else 0 with nothing moved (or, were a put to fail
 * after the dry run, the instance kept with what it still holds). A moved
 * chunk's hot copy in the cache space goes (fns_store_put). */
static int
fns_node_sms_merge_one(struct fns_node *n, const struct pol_sms_view *v, size_t from)
{
    uint32_t slot = n->view_slot[from];
    struct fns_slot *sl = fns_store_slot(n->store, slot);
    struct fns_chunk **cs = cm_malloc((sl->nchunks + 1) * sizeof(*cs));
    uint32_t *to = cm_malloc((sl->nchunks + 1) * sizeof(*to));
    size_t nc = 0, idx;
    int ok = 1;

    for (struct fns_chunk *c = sl->head; c != NULL; c = c->inext) {
        cs[nc++] = c;
    }
    qsort(cs, nc, sizeof(*cs), fns_node_len_desc);
    for (size_t i = 0; i < nc && ok; i++) {
        ok = n->sms_ops->merge_to(n->sms, v, from, cs[i]->len, &idx) == 0;
        if (ok) {
            n->view[idx].used += cs[i]->len;
            to[i] = n->view_slot[idx];
        }
    }
    for (size_t i = 0; i < nc && ok; i++) {
        struct fns_ilog_loc loc;

        /* Room was checked: a failure would leave a chunk behind, so the
         * instance is then kept. */
        ok = fns_store_put(n->store, cs[i], to[i]) == 0;
        if (ok && fns_node_cos_loc(n, cs[i], &loc) == 0) {
            fns_ilog_add_chunk(n->ilog, cs[i]->tag, &cs[i]->key, cs[i]->len, &loc);
        }
    }
    if (ok) {
        n->sst.merges++;
        n->sst.merge_chunks += nc;
        fns_node_sms_release(n, slot); /* logs, publishes */
    }
    free(cs);
    free(to);
    return ok;
}

static void
fns_node_sms_merge_pool(void *arg, struct cm_hnode *hn)
{
    struct fns_node *n = arg;
    uint32_t tenant = CM_CONTAINER_OF(hn, struct fns_pool, hn)->tenant, skip[FNS_MERGE_TRIES];
    size_t nskip = 0, from;

    while (nskip < FNS_MERGE_TRIES) {
        struct pol_sms_view v = fns_node_sms_view(n, tenant);

        /* A candidate whose chunks did not pack is neither source nor
         * target this round. */
        for (size_t i = 0; i < nskip; i++) {
            size_t j = fns_node_sms_index(n, &v, (int)skip[i]);

            if (j != POL_SMS_NOWHERE) {
                n->view[j].lost = 1;
            }
        }
        if (n->sms_ops->merge_from(n->sms, &v, cm_now_ns(), &from) != 1) {
            return;
        }
        if (!fns_node_sms_merge_one(n, &v, from)) {
            skip[nskip++] = n->view_slot[from];
        }
    }
}

void
fns_node_sms_merge(struct fns_node *n)
{
    if (n->sms_heard) {
        cm_hmap_each(&n->pools, fns_node_sms_merge_pool, n);
    }
}

/* ---- recovery ------------------------------------------------------------ */

struct fns_recover_list {
    struct fns_ilog_chunk *c; /* copies */
    size_t n, cap;
};

static void
fns_node_recover_collect(void *arg, const struct fns_ilog_chunk *c)
{
    struct fns_recover_list *b = arg;

    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->c = cm_realloc(b->c, b->cap * sizeof(*b->c));
    }
    b->c[b->n++] = *c;
}

/* slot (lost) recovers what the log holds under old_tag: its records move
 * to the slot's tag, then helpers load them. Returns the chunk count (0:
 * nothing to recover, the slot is no longer lost). */
static size_t
fns_node_recover_inst(struct fns_node *n, uint32_t slot, uint32_t old_tag)
{
    struct fns_slot *sl = fns_store_slot(n->store, slot);
    uint32_t tag = fns_store_tag(n->store, slot);
    struct fns_recover_list b = {0};

    fns_node_log_instance(n, slot);
    fns_ilog_each_chunk(n->ilog, old_tag, fns_node_recover_collect, &b);
    if (fns_recover_running(n->rec) == 0) {
        memset(n->rtrace, 0, fns_recover_helpers(n->rec) * sizeof(*n->rtrace));
        n->rtrace_ns = cm_now_ns();
    }
    fns_recover_begin(n->rec, slot, tag, cm_now_ns());
    for (size_t i = 0; i < b.n; i++) {
        fns_ilog_add_chunk(n->ilog, tag, &b.c[i].key, b.c[i].len, &b.c[i].loc);
        (void)fns_recover_add(n->rec, slot, &b.c[i].key, b.c[i].len, &b.c[i].loc);
    }
    fns_ilog_add_instance(n->ilog, old_tag, sl->tenant, sl->gen, POL_SMS_RELEASED);
    free(b.c);
    if (b.n > 0) {
        fns_node_cost_of(n, sl->tenant)->recoveries++;
        n->sst.recoveries++;
    }
    if (fns_recover_left(n->rec, slot) == 0) {
        sl->lost = 0;
        sl->prev_tag = 0;
    }
    CM_INFO("instance recovery slot=%u tag=%x from=%x tenant=%u chunks=%zu helpers=%u", slot, tag,
            old_tag, sl->tenant, b.n, fns_recover_helpers(n->rec));
    fns_node_ilog_kick(n);
    fns_node_sms_pump(n);
    return b.n;
}

/* Reclaims slot as a FaaS provider would: its memory is gone. */
void
fns_node_sms_reclaim(struct fns_node *n, uint32_t slot)
{
    struct fns_slot *sl = fns_store_slot(n->store, slot);
    void **waiters;
    size_t nw;
    uint32_t old;

    if (!sl->live) {
        return;
    }
    n->sst.reclaimed++;
    CM_INFO("instance reclaimed slot=%u tag=%x tenant=%u state=%s chunks=%u", slot,
            fns_store_tag(n->store, slot), sl->tenant, pol_sms_state_name(sl->state), sl->nchunks);
    if (sl->state == POL_SMS_DEGRADED) {
        fns_node_sms_release(n, slot); /* not recovered: its chunks are read from COS */
        return;
    }
    nw = fns_recover_drop_slot(n->rec, slot, &waiters);
    old = fns_store_reclaim(n->store, slot);
    (void)fns_node_recover_inst(n, slot, old);
    fns_node_publish(n);
    fns_node_sms_progress(n);
    fns_node_sms_rerun(n, waiters, nw);
}

/* Each helper's loads, their mean submit-to-reap time and when its last
 * one was reaped, since the recoveries began: a helper that lags, or
 * loads that wait, show here. */
static void
fns_node_recover_trace(struct fns_node *n)
{
    char line[1024];
    size_t off = 0;

    for (uint32_t h = 0; h < fns_recover_helpers(n->rec) && off < sizeof(line) - 64; h++) {
        const struct fns_rec_trace *t = &n->rtrace[h];

        off += (size_t)snprintf(line + off, sizeof(line) - off, " h%u=%llu/%.1fms/%.0fms", h,
                                (unsigned long long)t->loads,
                                t->loads ? (double)t->wait_ns / (double)t->loads / 1e6 : 0.0,
                                t->last_ns ? (double)(t->last_ns - n->rtrace_ns) / 1e6 : 0.0);
    }
    CM_INFO("recovery helpers (loads/mean load/last at):%s", line);
}

void
fns_node_sms_recovered(struct fns_node *n, struct fns_cos_job *job)
{
    struct fns_recover_item *it = job->arg;
    const struct fns_ilog_chunk *e = fns_ilog_find(n->ilog, &job->key);
    uint32_t slot = it->slot, tag = it->tag, live;
    struct fns_node_cost *cost = fns_node_cost_of(n, job->key.tenant);
    void **waiters;
    size_t nw;
    int done;

    if (job->status == 0) {
        cost->cos_gets++;
        cost->cos_get_bytes += fns_chunk_blob_len(job->chunk);
        job->chunk->persisted = 1;
        /* Still what the instance holds: not deleted, re-put or moved. */
        if (e != NULL && e->tag == tag && e->loc.seg == it->loc.seg && e->loc.off == it->loc.off &&
            fns_store_tag_live(n->store, tag, &live) && live == slot &&
            fns_store_get(n->store, &job->key) == NULL &&
            fns_store_put(n->store, job->chunk, slot) == 0) {
            n->sst.recovery_chunks++;
            n->sst.recovery_bytes += job->chunk->len;
        }
    } else if (job->status != CM_E_NOTFOUND) {
        CM_WARN("recovery read failed tenant=%u object=%llx index=%u err=%s", job->key.tenant,
                (unsigned long long)job->key.object, job->key.index, cm_errname(job->status));
    }
    if (it->state == FNS_RECOVER_LOADING) {
        struct fns_rec_trace *t = &n->rtrace[it->helper];
        uint64_t now = cm_now_ns();

        t->loads++;
        t->wait_ns += now - it->load_ns;
        t->last_ns = now;
    }
    nw = fns_recover_finish(n->rec, it, &waiters, &done);
    if (done && fns_recover_running(n->rec) == 0) {
        fns_node_recover_trace(n);
    }
    if (done) {
        struct fns_slot *sl = fns_store_slot(n->store, slot);

        n->sst.recovery_ns += cm_now_ns() - fns_recover_began(n->rec, slot);
        sl->lost = 0;
        sl->prev_tag = 0;
        CM_INFO("instance recovered slot=%u tag=%x chunks=%u bytes=%llu", slot, tag, sl->nchunks,
                (unsigned long long)sl->used);
    }
    fns_node_publish(n);
    fns_node_sms_progress(n);
    fns_node_sms_rerun(n, waiters, nw);
    fns_node_sms_pump(n);
}

struct fns_restart {
    struct fns_ilog_inst *in;
    size_t n, cap;
};

static void
fns_node_restart_collect(void *arg, const struct fns_ilog_inst *in)
{
    struct fns_restart *r = arg;

    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->in = cm_realloc(r->in, r->cap * sizeof(*r->in));
    }
    r->in[r->n++] = *in;
}

void
fns_node_sms_restart(struct fns_node *n)
{
    struct fns_restart r = {0};
    uint32_t slot;

    fns_ilog_each_instance(n->ilog, fns_node_restart_collect, &r);
    for (size_t i = 0; i < r.n; i++) {
        struct fns_ilog_inst *in = &r.in[i];

        /* A lost degraded instance is not recovered; one that finds no slot
         * (a smaller node) is let go the same way: its chunks stay in COS. */
        if (in->state == POL_SMS_DEGRADED ||
            fns_store_open(n->store, in->tenant, in->gen, &slot) != 0) {
            if (in->state != POL_SMS_DEGRADED) {
                CM_WARN("no slot to recover instance tag=%x tenant=%u: released", in->tag,
                        in->tenant);
            }
            fns_ilog_add_instance(n->ilog, in->tag, in->tenant, in->gen, POL_SMS_RELEASED);
            continue;
        }
        struct fns_slot *sl = fns_store_slot(n->store, slot);

        sl->state = POL_SMS_ACTIVE;
        sl->lost = 1;
        sl->prev_tag = in->tag;
        sl->warm_ns = cm_now_ns();
        if (fns_node_recover_inst(n, slot, in->tag) == 0) {
            fns_node_sms_release(n, slot); /* it held nothing */
        }
    }
    free(r.in);
}

/* ---- life cycle and figures ---------------------------------------------- */

int
fns_node_sms_create(struct fns_node *n)
{
    struct fns_store_cfg sc = {.capacity = n->cfg.capacity,
                               .inst_bytes = n->cfg.inst_bytes,
                               .cache_bytes = n->cfg.cache_bytes,
                               .node_inc = n->cfg.incarnation};
    uint32_t ns;
    int rc;

    rc = fns_store_create(&sc, &n->store);
    if (rc != 0) {
        CM_ERROR("cannot divide the capacity into instances capacity=%llu instance_size=%llu "
                 "(1 to %u instances)",
                 (unsigned long long)n->cfg.capacity, (unsigned long long)n->cfg.inst_bytes,
                 FNS_STORE_SLOTS_MAX);
        return CM_E_CONFIG;
    }
    ns = fns_store_nslots(n->store);
    n->sms_ops = pol_sms_find("static");
    n->sms_cfg = (struct pol_sms_cfg){.inst_bytes = n->cfg.inst_bytes, .max_instances = ns};
    rc = n->sms_ops->create(&n->sms_cfg, &n->sms);
    if (rc != 0) {
        return rc;
    }
    n->view = cm_calloc(ns, sizeof(*n->view));
    n->view_slot = cm_calloc(ns, sizeof(*n->view_slot));
    fns_recover_create(n->cfg.recovery_helpers, FNS_RECOVER_DEPTH, ns, &n->rec);
    n->rtrace = cm_calloc(fns_recover_helpers(n->rec), sizeof(*n->rtrace));
    n->rng = cm_random_u64();
    n->ev_orders = fns_loop_ev_new(n->loop, fns_node_sms_orders_cb, n);
    n->ev_reclaim = fns_loop_ev_new(n->loop, fns_node_sms_reclaim_cb, n);
    if (n->cfg.reclaim_rate > 0) {
        fns_node_reclaim_arm(n);
    }
    return 0;
}

static void
fns_node_pool_free(void *arg, struct cm_hnode *hn)
{
    (void)arg;
    free(CM_CONTAINER_OF(hn, struct fns_pool, hn));
}

void
fns_node_sms_destroy(struct fns_node *n)
{
    if (n->sms_ops != NULL) {
        n->sms_ops->destroy(n->sms);
    }
    fns_recover_destroy(n->rec);
    free(n->rtrace);
    fns_store_destroy(n->store);
    cm_hmap_each(&n->pools, fns_node_pool_free, NULL);
    cm_hmap_free(&n->pools);
    free(n->view);
    free(n->view_slot);
    fns_sms_orders_free(n->orders);
    free(n->isnap);
    free(n->csnap);
}

static void
fns_node_cost_snap(void *arg, struct cm_hnode *hn)
{
    struct fns_node *n = arg;
    struct fns_tstat *ts = CM_CONTAINER_OF(hn, struct fns_tstat, hn);

    n->csnap[n->ncsnap] = ts->cost;
    n->csnap[n->ncsnap++].tenant = ts->tenant;
}

void
fns_node_sms_report(struct fns_node *n)
{
    uint32_t ns = fns_store_nslots(n->store);
    struct fns_node_sms_stats *st = &n->sst;
    struct fns_ilog_stats ls;
    uint64_t now = cm_now_ns();

    st->inst_bytes = fns_store_inst_bytes(n->store);
    st->slots = ns;
    memset(st->instances, 0, sizeof(st->instances));
    st->lost = 0;
    st->recovery_running = fns_recover_running(n->rec);
    st->recovery_helpers = fns_recover_helpers(n->rec);
    st->cache_bytes = fns_store_cache_bytes(n->store);
    st->cache_budget = fns_store_cache_budget(n->store);
    st->cache_chunks = fns_store_cache_chunks(n->store);
    st->cache_evictions = fns_store_evictions(n->store);
    st->memory_bytes = (uint64_t)fns_store_live(n->store) * st->inst_bytes;
    st->heard = n->sms_heard;
    st->policy = n->sms_ops->name;
    fns_ilog_stats(n->ilog, &ls);
    st->ilog_objects = ls.objects;
    st->ilog_records = ls.records;
    st->ilog_live = ls.live;
    st->ilog_batches = ls.batches_written;
    st->ilog_bytes = ls.bytes_written;
    st->ilog_deleted = ls.objects_deleted;
    st->ilog_carried = ls.carried;
    st->ilog_pending = fns_ilog_pending(n->ilog);
    st->metas = ls.metas;

    pthread_mutex_lock(&n->mu);
    n->isnap = cm_realloc(n->isnap, ns * sizeof(*n->isnap));
    n->nisnap = 0;
    for (uint32_t s = 0; s < ns; s++) {
        struct fns_slot *sl = fns_store_slot(n->store, s);

        if (!sl->live) {
            continue;
        }
        st->instances[sl->state]++;
        st->lost += sl->lost != 0;
        n->isnap[n->nisnap++] = (struct fns_node_inst){.slot = s,
                                                       .tag = fns_store_tag(n->store, s),
                                                       .tenant = sl->tenant,
                                                       .gen = sl->gen,
                                                       .state = sl->state,
                                                       .lost = sl->lost,
                                                       .used = sl->used,
                                                       .put_bytes = sl->put_bytes,
                                                       .read_bytes = sl->read_bytes,
                                                       .read_chunks = sl->read_chunks,
                                                       .warm_ns = sl->warm_ns};
    }
    n->pub_sst = *st;
    /* Recoveries still running count their time so far. */
    for (uint32_t s = 0; s < ns; s++) {
        if (fns_recover_left(n->rec, s) > 0) {
            n->pub_sst.recovery_ns += now - fns_recover_began(n->rec, s);
        }
    }
    n->csnap = cm_realloc(n->csnap, (n->tstats.n + 1) * sizeof(*n->csnap));
    n->ncsnap = 0;
    cm_hmap_each(&n->tstats, fns_node_cost_snap, n);
    pthread_mutex_unlock(&n->mu);
}

size_t
fns_node_instances(struct fns_node *n, struct fns_node_inst **out)
{
    size_t cnt;

    *out = NULL;
    pthread_mutex_lock(&n->mu);
    cnt = n->nisnap;
    if (cnt > 0) {
        *out = cm_malloc(cnt * sizeof(**out));
        memcpy(*out, n->isnap, cnt * sizeof(**out));
    }
    pthread_mutex_unlock(&n->mu);
    return cnt;
}

size_t
fns_node_costs(struct fns_node *n, struct fns_node_cost **out)
{
    size_t cnt;

    *out = NULL;
    pthread_mutex_lock(&n->mu);
    cnt = n->ncsnap;
    if (cnt > 0) {
        *out = cm_malloc(cnt * sizeof(**out));
        memcpy(*out, n->csnap, cnt * sizeof(**out));
    }
    pthread_mutex_unlock(&n->mu);
    return cnt;
}
