/*
 * ctl_state_gw.c - gateways and the tenants they own, in the state (see
 * ctl_state.h; ctl_state_impl.h for what it shares with ctl_state.c).
 *
 * Each tenant is owned by one gateway (its metadata lives there; the
 * others forward to it). The registry of gateways that polled is memory
 * only; ownership is stored with the tenant. It changes only by a move:
 * an admin asks for one (moving_to, stored), the owner sees it in its
 * poll, hands the metadata to the new gateway and reports that it did;
 * only that report changes the owner, since only the old owner knows
 * when the metadata has left it. Nothing moves by itself: a gateway that
 * is down keeps its tenants and gets no new ones, and a move asked of it
 * waits until it is up again.
 *
 * Naming: do_x() expects st->mu held; x() takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_log.h"
#include "ctl_state.h"
#include "ctl_state_impl.h"
#include "ctl_store.h"

static struct gw_rec *
do_find_gw(struct ctl_state *st, const char *id)
{
    size_t lo = 0, hi = st->ngws;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->gws[mid].id, id);

        if (c == 0) {
            return &st->gws[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static int
gw_up(const struct gw_rec *g, uint64_t now_ns)
{
    return now_ns - g->last_seen_ns <= CTL_GW_UP_NS;
}

/* Tenants each registered gateway owns, in st->gws order (caller frees). */
static size_t *
do_owned_counts(struct ctl_state *st)
{
    size_t *n = cm_calloc(st->ngws + 1, sizeof(*n));

    for (size_t i = 0; i < st->ntenants; i++) {
        const struct gw_rec *g =
            st->tenants[i].gateway[0] != '\0' ? do_find_gw(st, st->tenants[i].gateway) : NULL;

        if (g != NULL) {
            n[g - st->gws]++;
        }
    }
    return n;
}

/* The up gateway that owns the fewest tenants, the smallest id among equals
 * (gws is in id order), or NULL when none is up. */
static struct gw_rec *
do_least_loaded(struct ctl_state *st, const size_t *owned, uint64_t now_ns)
{
    struct gw_rec *best = NULL;

    for (size_t i = 0; i < st->ngws; i++) {
        if (gw_up(&st->gws[i], now_ns) && (best == NULL || owned[i] < owned[best - st->gws])) {
            best = &st->gws[i];
        }
    }
    return best;
}

/* Gives every unassigned tenant an owner (do_least_loaded, counting each
 * assignment as it goes), all in one store write and one epoch bump. */
static int
do_assign_tenants(struct ctl_state *st, uint64_t now_ns)
{
    struct ctl_tenant *nt;
    size_t *owned, *idx, n = 0, first = 0;
    int rc = 0;

    /* Every poll comes here: the usual answer is that all have an owner. */
    while (first < st->ntenants && st->tenants[first].gateway[0] != '\0') {
        first++;
    }
    if (first == st->ntenants) {
        return 0;
    }
    owned = do_owned_counts(st);
    nt = cm_calloc(st->ntenants, sizeof(*nt));
    idx = cm_calloc(st->ntenants, sizeof(*idx));
    for (size_t i = first; i < st->ntenants; i++) {
        struct gw_rec *g;

        if (st->tenants[i].gateway[0] != '\0' || (g = do_least_loaded(st, owned, now_ns)) == NULL) {
            continue;
        }
        nt[n] = st->tenants[i];
        memcpy(nt[n].gateway, g->id, sizeof(g->id));
        owned[g - st->gws]++;
        idx[n++] = i;
    }
    if (n > 0) {
        rc = ctl_store_put_tenants(st->store, nt, n, st->epoch + 1, st->next_tenant_id);
    }
    if (n > 0 && rc == 0) {
        st->epoch++;
        for (size_t k = 0; k < n; k++) {
            st->tenants[idx[k]] = nt[k];
            CM_INFO("tenant assigned tenant=%u gateway=%s epoch=%llu", nt[k].id, nt[k].gateway,
                    (unsigned long long)st->epoch);
        }
    }
    free(owned);
    free(nt);
    free(idx);
    return rc;
}

/* The record of gateway id, inserted (id order, zeroed but for the id) if
 * new; NULL when new and the registry is full. */
static struct gw_rec *
do_gw_entry(struct ctl_state *st, const char *id, int *created)
{
    size_t i = 0;

    while (i < st->ngws && strcmp(st->gws[i].id, id) < 0) {
        i++;
    }
    *created = !(i < st->ngws && strcmp(st->gws[i].id, id) == 0);
    if (*created) {
        if (st->ngws >= CTL_GW_REGISTRY_MAX) {
            return NULL;
        }
        st->gws = cm_realloc(st->gws, (st->ngws + 1) * sizeof(*st->gws));
        memmove(&st->gws[i + 1], &st->gws[i], (st->ngws - i) * sizeof(*st->gws));
        memset(&st->gws[i], 0, sizeof(st->gws[i]));
        snprintf(st->gws[i].id, sizeof(st->gws[i].id), "%s", id);
        st->ngws++;
    }
    return &st->gws[i];
}

int
ctl_state_gateway_poll(struct ctl_state *st, const char *id, const char *url, const char *s3_url,
                       uint64_t now_ns)
{
    struct gw_rec *g;
    int created, rc = 0;

    s3_url = s3_url != NULL ? s3_url : "";
    if (id == NULL || !cm_gateway_id_valid(id, strlen(id)) || url == NULL ||
        !cm_gateway_url_valid(url, strlen(url)) ||
        (s3_url[0] != '\0' && !cm_gateway_url_valid(s3_url, strlen(s3_url)))) {
        return CM_E_BADARG;
    }
    pthread_mutex_lock(&st->mu);
    now_ns = ctl_do_clock(st, now_ns);
    g = do_gw_entry(st, id, &created);
    if (g == NULL) {
        rc = -ENOSPC;
        goto out;
    }
    if (created || strcmp(g->url, url) != 0 || strcmp(g->s3_url, s3_url) != 0) {
        if (!created && gw_up(g, now_ns)) {
            /* A restart on another address looks the same, once. */
            CM_WARN("gateway polled from a new URL while up gateway=%s url=%s was=%s: if two "
                    "gateways share this id, each takes the other's tenants for its own; give "
                    "each its own --gateway-id",
                    id, url, g->url);
        }
        snprintf(g->url, sizeof(g->url), "%s", url);
        snprintf(g->s3_url, sizeof(g->s3_url), "%s", s3_url);
        ctl_do_bump_epoch(st);
        CM_INFO("gateway %s gateway=%s url=%s s3_url=%s epoch=%llu",
                created ? "registered" : "updated", g->id, g->url, g->s3_url,
                (unsigned long long)st->epoch);
    }
    g->last_seen_ns = now_ns;
    if (do_assign_tenants(st, now_ns) < 0) {
        CM_WARN("tenants not assigned, retried at the next poll gateway=%s", id);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

void
ctl_do_pick_owner(struct ctl_state *st, uint64_t now_ns, char *gateway)
{
    size_t *owned = do_owned_counts(st);
    const struct gw_rec *g = do_least_loaded(st, owned, now_ns);

    free(owned);
    gateway[0] = '\0';
    if (g != NULL) {
        memcpy(gateway, g->id, sizeof(g->id));
    }
}

void
ctl_do_snapshot_gateways(struct ctl_state *st, uint64_t now_ns, struct ctl_snapshot *out)
{
    size_t *owned = do_owned_counts(st);

    out->ngateways = st->ngws;
    out->gateways = cm_calloc(st->ngws + 1, sizeof(*out->gateways));
    for (size_t i = 0; i < st->ngws; i++) {
        const struct gw_rec *g = &st->gws[i];
        struct ctl_gateway_view *gv = &out->gateways[i];

        memcpy(gv->id, g->id, sizeof(gv->id));
        memcpy(gv->url, g->url, sizeof(gv->url));
        memcpy(gv->s3_url, g->s3_url, sizeof(gv->s3_url));
        gv->up = gw_up(g, now_ns);
        gv->seen_ms_ago = (int64_t)((now_ns - g->last_seen_ns) / 1000000);
        gv->tenants = owned[i];
    }
    free(owned);
}

/* The tenant with id id (tenants are in id order), or NULL. */
static struct ctl_tenant *
do_find_tenant_id(struct ctl_state *st, uint32_t id)
{
    size_t lo = 0, hi = st->ntenants;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (st->tenants[mid].id == id) {
            return &st->tenants[mid];
        }
        if (st->tenants[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

int
ctl_state_tenant_move(struct ctl_state *st, const char *name, const char *to, uint64_t now_ns,
                      struct ctl_tenant *out)
{
    struct ctl_tenant *t, nt;
    const struct gw_rec *g;
    int rc = 0;

    if (!cm_gateway_id_valid(to, strlen(to))) {
        return CM_E_BADARG;
    }
    pthread_mutex_lock(&st->mu);
    now_ns = ctl_do_clock(st, now_ns);
    t = ctl_do_find_tenant(st, name);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    /* It gets an owner at the next poll; a move before that would race it. */
    if (t->gateway[0] == '\0') {
        rc = -EAGAIN;
        goto out;
    }
    nt = *t;
    if (strcmp(to, t->gateway) == 0) {
        nt.moving_to[0] = '\0';
    } else {
        /* A gateway that is not up would take the metadata and not serve. */
        g = do_find_gw(st, to);
        if (g == NULL || !gw_up(g, now_ns)) {
            rc = g == NULL ? -ENXIO : -EHOSTDOWN;
            goto out;
        }
        snprintf(nt.moving_to, sizeof(nt.moving_to), "%s", to);
    }
    if (strcmp(nt.moving_to, t->moving_to) != 0) {
        rc = ctl_do_update_tenant(st, t, &nt);
        if (rc < 0) {
            goto out;
        }
        if (t->moving_to[0] != '\0') {
            CM_INFO("tenant move asked tenant=%u from=%s to=%s epoch=%llu", t->id, t->gateway,
                    t->moving_to, (unsigned long long)st->epoch);
        } else {
            CM_INFO("tenant move cancelled tenant=%u gateway=%s epoch=%llu", t->id, t->gateway,
                    (unsigned long long)st->epoch);
        }
    }
    if (out != NULL) {
        *out = *t;
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int
ctl_state_tenant_moved(struct ctl_state *st, uint32_t id, const char *from, const char *to)
{
    struct ctl_tenant *t, nt;
    int rc = 0;

    if (!cm_gateway_id_valid(from, strlen(from)) || !cm_gateway_id_valid(to, strlen(to)) ||
        strcmp(from, to) == 0) {
        return CM_E_BADARG;
    }
    pthread_mutex_lock(&st->mu);
    t = do_find_tenant_id(st, id);
    if (t == NULL) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (strcmp(t->gateway, to) == 0) {
        goto out; /* the answer to an earlier report was lost */
    }
    if (strcmp(t->gateway, from) != 0) {
        rc = CM_E_STALE;
        goto out;
    }
    /* The report wins over moving_to: whatever was asked since, the
     * metadata is at to now, and only to can serve the tenant. */
    nt = *t;
    snprintf(nt.gateway, sizeof(nt.gateway), "%s", to);
    nt.moving_to[0] = '\0';
    rc = ctl_do_update_tenant(st, t, &nt);
    if (rc == 0) {
        CM_INFO("tenant moved tenant=%u from=%s to=%s epoch=%llu", id, from, to,
                (unsigned long long)st->epoch);
    }
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}
