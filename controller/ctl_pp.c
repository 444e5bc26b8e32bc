/*
 * ctl_pp.c - placement rows as persisted state (see ctl_pp.h): the rows in
 * memory, in tenant order, kept in line with the tenants of each state
 * snapshot (hash rows for a new tenant, short hash rows made again, the
 * rows of a tenant gone dropped), written to ctl_store with the placement
 * epoch; and the life cycle of struct ctl_pp (create loads the stored
 * rows; destroy stops the loop thread first).
 *
 * Invariants (ctl_pp.h's): memory and disk change together under pp->mu,
 * disk first, and the epoch grows by one with each write that changes rows.
 *
 * Threads: any thread; the rows are under pp->mu.
 *
 * Naming: do_x() expects pp->mu held; x() takes it; ctl_pp_x_locked() is a
 * do_x() the other ctl_pp*.c files call (ctl_pp_impl.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_place.h"
#include "ctl_pp_impl.h"
#include "ctl_state.h"
#include "ctl_store.h"

/* ---- rows ---- */

struct ctl_pp_trows *
ctl_pp_find_locked(struct ctl_pp *pp, uint32_t tenant)
{
    size_t lo = 0, hi = pp->nt;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (pp->t[mid].tenant == tenant) {
            return &pp->t[mid];
        }
        if (pp->t[mid].tenant < tenant) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Replaces or inserts r (transferred) in tenant order. */
static void
do_put(struct ctl_pp *pp, struct ctl_pp_trows *r)
{
    struct ctl_pp_trows *cur = ctl_pp_find_locked(pp, r->tenant);
    size_t i = 0;

    if (cur != NULL) {
        ctl_pp_trows_fini(cur);
        *cur = *r;
        return;
    }
    while (i < pp->nt && pp->t[i].tenant < r->tenant) {
        i++;
    }
    pp->t = cm_realloc(pp->t, (pp->nt + 1) * sizeof(*pp->t));
    memmove(&pp->t[i + 1], &pp->t[i], (pp->nt - i) * sizeof(*pp->t));
    pp->t[i] = *r;
    pp->nt++;
}

static void
do_drop(struct ctl_pp *pp, uint32_t tenant)
{
    struct ctl_pp_trows *cur = ctl_pp_find_locked(pp, tenant);
    size_t i;

    if (cur == NULL) {
        return;
    }
    i = (size_t)(cur - pp->t);
    ctl_pp_trows_fini(cur);
    memmove(cur, cur + 1, (pp->nt - i - 1) * sizeof(*cur));
    pp->nt--;
}

/* Writes puts[nput] (their row epochs already set) and the drops with
 * epoch + 1, then applies them (puts transferred on success, freed on
 * failure). 0 or the store's error. */
int
ctl_pp_write_locked(struct ctl_pp *pp, struct ctl_pp_trows *puts, size_t nput,
                    const uint32_t *drops, size_t ndrop, const char *solver)
{
    struct ctl_store_prec *recs = cm_calloc(nput + ndrop + 1, sizeof(*recs));
    char **texts = cm_calloc(nput + 1, sizeof(*texts));
    int rc = 0;

    for (size_t i = 0; i < nput && rc == 0; i++) {
        texts[i] = ctl_pp_encode(&puts[i], &recs[i].len);
        recs[i].tenant = puts[i].tenant;
        recs[i].text = texts[i];
        rc = texts[i] == NULL ? -ENOMEM : 0;
    }
    for (size_t i = 0; i < ndrop; i++) {
        recs[nput + i].tenant = drops[i];
    }
    if (rc == 0) {
        rc = ctl_store_put_placement(pp->store, recs, nput + ndrop, pp->epoch + 1, solver);
    }
    for (size_t i = 0; i < nput; i++) {
        free(texts[i]);
        if (rc == 0) {
            do_put(pp, &puts[i]);
        } else {
            ctl_pp_trows_fini(&puts[i]);
        }
    }
    free(texts);
    free(recs);
    if (rc < 0) {
        CM_ERROR("placement not stored err=%s", cm_strerror(rc));
        return rc;
    }
    for (size_t i = 0; i < ndrop; i++) {
        do_drop(pp, drops[i]);
    }
    pp->epoch++;
    snprintf(pp->solver, sizeof(pp->solver), "%s", solver);
    return 0;
}

/* The hash row of (tenant, p) over ids into r's row p; 1 if it changed. */
static int
hash_row(struct ctl_pp_trows *r, uint32_t p, const uint32_t *ids, size_t nids)
{
    uint32_t row[POL_PP_MAX_WIDTH];
    size_t n = ctl_place_row(r->tenant, p, ids, nids, r->width, row);
    uint32_t *dst = &r->ids[(size_t)p * r->width];

    if (n == r->len[p] && memcmp(dst, row, n * sizeof(*row)) == 0) {
        return 0;
    }
    memcpy(dst, row, n * sizeof(*row));
    r->len[p] = (uint32_t)n;
    return 1;
}

/* The member nodes of s (not draining or removed), with their up flags. */
static size_t
member_ids(const struct ctl_snapshot *s, uint32_t *ids, uint8_t *up)
{
    size_t n = 0;

    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].n.retire == CTL_NODE_MEMBER) {
            up[n] = (uint8_t)(s->nodes[i].up != 0);
            ids[n++] = s->nodes[i].n.id;
        }
    }
    return n;
}

/* 1 if row p of r names a node that ids[n] does not list. */
static int
names_other(const struct ctl_pp_trows *r, uint32_t p, const uint32_t *ids, size_t n)
{
    for (uint32_t j = 0; j < r->len[p]; j++) {
        int in = 0;

        for (size_t i = 0; i < n && !in; i++) {
            in = ids[i] == r->ids[(size_t)p * r->width + j];
        }
        if (!in) {
            return 1;
        }
    }
    return 0;
}

/* Whether row p of r must change: a short hash row with more members
 * known, or (gone: some node is no member) a position on such a node. */
static int
row_stale(const struct ctl_pp_trows *r, uint32_t p, const uint32_t *ids, size_t n, int gone)
{
    return (r->by_hash[p] && r->len[p] < r->width && n > r->len[p]) ||
           (gone && names_other(r, p, ids, n));
}

int
ctl_pp_sync_locked(struct ctl_pp *pp, const struct ctl_snapshot *s)
{
    uint32_t *ids = cm_calloc(s->nnodes + 1, sizeof(*ids));
    uint8_t *up = cm_calloc(s->nnodes + 1, sizeof(*up));
    struct ctl_pp_trows *puts = cm_calloc(s->ntenants + 1, sizeof(*puts));
    uint32_t *drops = cm_calloc(pp->nt + 1, sizeof(*drops));
    size_t nput = 0, ndrop = 0, nids;
    int rc = 0;

    if (s->epoch < pp->synced) {
        goto out; /* an older snapshot than one already applied */
    }
    nids = member_ids(s, ids, up);
    pp->draining = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        pp->draining |= s->nodes[i].n.retire == CTL_NODE_DRAINING;
    }
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        uint32_t width = (uint32_t)(t->ec_k + t->ec_m);
        struct ctl_pp_trows *cur = ctl_pp_find_locked(pp, t->id), *r = &puts[nput];
        int changed = 0;

        if (width > POL_PP_MAX_WIDTH) {
            continue;
        }
        if (cur != NULL) {
            cur->seen = s->epoch > cur->seen ? s->epoch : cur->seen;
            for (uint32_t p = 0; p < cur->parts && !changed; p++) {
                changed = row_stale(cur, p, ids, nids, nids < s->nnodes);
            }
            if (!changed) {
                continue;
            }
            ctl_pp_trows_copy(r, cur);
            changed = 0;
            for (uint32_t p = 0; p < r->parts; p++) {
                int moved = 0;

                if (r->by_hash[p] && r->len[p] < width && nids > r->len[p]) {
                    moved = hash_row(r, p, ids, nids);
                } else if (nids < s->nnodes && names_other(r, p, ids, nids)) {
                    /* Only the leaving node's positions move. */
                    moved = ctl_place_replace(r->tenant, p, &r->ids[(size_t)p * r->width],
                                              r->len[p], ids, up, nids) > 0;
                }
                if (moved) {
                    r->row_epoch[p] = pp->epoch + 1;
                    changed = 1;
                }
            }
        } else {
            ctl_pp_trows_alloc(r, t->id, width, (uint32_t)t->ec_k, pp->cfg.partitions);
            r->seen = s->epoch;
            for (uint32_t p = 0; p < r->parts; p++) {
                hash_row(r, p, ids, nids);
                r->row_epoch[p] = pp->epoch + 1;
                r->by_hash[p] = 1;
            }
            changed = 1;
            CM_INFO("placement rows made tenant=%u partitions=%u width=%u nodes=%zu", t->id,
                    r->parts, width, nids);
        }
        if (changed) {
            nput++;
        } else {
            ctl_pp_trows_fini(r);
        }
    }
    for (size_t i = 0; i < pp->nt; i++) {
        const struct ctl_pp_trows *r = &pp->t[i];
        int present = 0;

        for (size_t j = 0; j < s->ntenants && !present; j++) {
            present = s->tenants[j].t.id == r->tenant;
        }
        if (!present && r->seen < s->epoch) {
            drops[ndrop++] = r->tenant;
        }
    }
    if (nput + ndrop > 0) {
        rc = ctl_pp_write_locked(pp, puts, nput, drops, ndrop, pp->solver);
        if (rc == 0) {
            CM_INFO("placement synced tenants_changed=%zu tenants_dropped=%zu epoch=%llu", nput,
                    ndrop, (unsigned long long)pp->epoch);
        }
    }
    if (rc == 0) {
        pp->synced = s->epoch;
    }
out:
    free(ids);
    free(up);
    free(puts);
    free(drops);
    return rc;
}

/* Copies the rows of s's tenants; a tenant without stored rows (s is older
 * than a sync that dropped it) gets hash rows made on the spot. */
void
ctl_pp_copy_locked(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out)
{
    uint32_t *ids = cm_calloc(s->nnodes + 1, sizeof(*ids));
    uint8_t *up = cm_calloc(s->nnodes + 1, sizeof(*up));
    size_t nids = member_ids(s, ids, up);

    memset(out, 0, sizeof(*out));
    out->epoch = pp->epoch;
    snprintf(out->solver, sizeof(out->solver), "%s", pp->solver);
    out->t = cm_calloc(s->ntenants + 1, sizeof(*out->t));
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct ctl_tenant *t = &s->tenants[i].t;
        const struct ctl_pp_trows *cur = ctl_pp_find_locked(pp, t->id);
        struct ctl_pp_trows *r = &out->t[out->n];
        uint32_t width = (uint32_t)(t->ec_k + t->ec_m);

        if (cur != NULL) {
            ctl_pp_trows_copy(r, cur);
        } else if (width <= POL_PP_MAX_WIDTH) {
            ctl_pp_trows_alloc(r, t->id, width, (uint32_t)t->ec_k, pp->cfg.partitions);
            for (uint32_t p = 0; p < r->parts; p++) {
                hash_row(r, p, ids, nids);
                r->by_hash[p] = 1;
            }
        } else {
            continue;
        }
        out->n++;
    }
    free(ids);
    free(up);
}

int
ctl_pp_rows(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out)
{
    int rc;

    pthread_mutex_lock(&pp->mu);
    rc = ctl_pp_sync_locked(pp, s);
    ctl_pp_copy_locked(pp, s, out);
    pthread_mutex_unlock(&pp->mu);
    return rc;
}

void
ctl_pp_rows_fini(struct ctl_pp_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        ctl_pp_trows_fini(&r->t[i]);
    }
    free(r->t);
    memset(r, 0, sizeof(*r));
}

/* ---- life cycle ---- */

static int
load_cb(void *arg, uint32_t tenant, const char *text, size_t len)
{
    struct ctl_pp *pp = arg;
    struct ctl_pp_trows r;

    if (ctl_pp_decode(tenant, text, len, &r) < 0) {
        CM_ERROR("store bad placement record tenant=%u", tenant);
        return CM_E_CONFIG;
    }
    if (r.parts != pp->cfg.partitions) {
        CM_WARN("placement rows dropped: partition count changed tenant=%u old=%u new=%u", tenant,
                r.parts, pp->cfg.partitions);
        ctl_pp_trows_fini(&r);
        return 0;
    }
    do_put(pp, &r);
    return 0;
}

int
ctl_pp_create(struct ctl_store *store, struct ctl_state *st, const struct ctl_pp_cfg *cfg,
              struct ctl_pp **out)
{
    struct ctl_pp *pp = cm_calloc(1, sizeof(*pp));
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    pp->store = store;
    pp->st = st;
    pp->cfg = *cfg;
    pp->cfg.policy = NULL;
    pp->ops = pol_pp_find(cfg->policy);
    if (pp->ops == NULL || cfg->partitions == 0 || cfg->partitions > CTL_PP_MAX_PARTS ||
        !(cfg->headroom > 0 && cfg->headroom <= 1) || !(cfg->nominal_ops > 0) ||
        !(cfg->nominal_bytes > 0)) {
        free(pp);
        return CM_E_CONFIG;
    }
    pp->tcfg.headroom = cfg->headroom;
    pp->tcfg.checks = cfg->checks;
    pp->tcfg.cooldown_ms = cfg->cooldown_ms;
    pthread_mutex_init(&pp->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pp->cv, &ca);
    pthread_cond_init(&pp->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    rc = pp->ops->create(NULL, &pp->pol);
    if (rc == 0) {
        rc = ctl_store_load_placement(store, &pp->epoch, pp->solver, sizeof(pp->solver), load_cb,
                                      pp);
    }
    if (rc < 0) {
        ctl_pp_destroy(pp);
        return rc;
    }
    if (pp->solver[0] == '\0') {
        snprintf(pp->solver, sizeof(pp->solver), "hash");
    }
    CM_INFO("placement loaded policy=%s tenants=%zu epoch=%llu solver=%s", pp->ops->name, pp->nt,
            (unsigned long long)pp->epoch, pp->solver);
    *out = pp;
    return 0;
}

void
ctl_pp_destroy(struct ctl_pp *pp)
{
    int started;

    if (pp == NULL) {
        return;
    }
    pthread_mutex_lock(&pp->mu);
    started = pp->started;
    pp->stop = 1;
    pthread_cond_broadcast(&pp->cv);
    pthread_cond_broadcast(&pp->done_cv);
    pthread_mutex_unlock(&pp->mu);
    if (started) {
        pthread_join(pp->thread, NULL);
    }
    for (size_t i = 0; i < pp->nt; i++) {
        ctl_pp_trows_fini(&pp->t[i]);
    }
    free(pp->t);
    for (size_t i = 0; i < pp->ngw; i++) {
        free(pp->gw[i].d);
    }
    free(pp->gw);
    if (pp->ops != NULL) {
        pp->ops->destroy(pp->pol);
    }
    pthread_cond_destroy(&pp->cv);
    pthread_cond_destroy(&pp->done_cv);
    pthread_mutex_destroy(&pp->mu);
    free(pp);
}

const char *
ctl_pp_policy(const struct ctl_pp *pp)
{
    return pp->ops->name;
}
