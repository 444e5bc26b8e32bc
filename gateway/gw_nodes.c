/*
 * gw_nodes.c - the engine's node directory: which nodes there are, their
 * connections (gw_conn.c), and whether each is usable for new requests.
 *
 * Owns the array of connections, in the order the controller lists the
 * nodes. A node is usable when the controller says it is up, its
 * connection has not failed since it last answered, and the suspect time
 * after a failure is over. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_net_impl.h"

static struct gw_conn *
conn_find(struct gw_net *n, uint32_t id)
{
    for (size_t i = 0; i < n->nconns; i++) {
        if (gw_conn_health(n->conns[i])->id == id) {
            return n->conns[i];
        }
    }
    return NULL;
}

void
gw_nodes_maintain(struct gw_net *n)
{
    uint64_t now = cm_now_ns();
    for (size_t i = 0; i < n->nconns; i++) {
        gw_conn_maintain(n->conns[i], now);
    }
}

void
gw_nodes_clear(struct gw_net *n)
{
    for (size_t i = 0; i < n->nconns; i++) {
        gw_conn_free(n->conns[i]);
    }
    free(n->conns);
    n->conns = NULL;
    n->nconns = 0;
}

static int
kept(struct gw_conn *const *next, size_t nn, const struct gw_conn *c)
{
    for (size_t j = 0; j < nn; j++) {
        if (next[j] == c) {
            return 1;
        }
    }
    return 0;
}

void
gw_net_set_nodes(struct gw_net *n, const struct gw_node *nodes, size_t count)
{
    struct gw_conn **next = calloc(count ? count : 1, sizeof(*next));
    if (!next) {
        CM_ERROR("gateway set_nodes err=ENOMEM");
        return;
    }
    size_t nn = 0;
    for (size_t i = 0; i < count; i++) {
        struct gw_conn *c = conn_find(n, nodes[i].id);
        int dup = 0;
        for (size_t j = 0; j < nn; j++) {
            dup |= gw_conn_health(next[j])->id == nodes[i].id;
        }
        if (dup) {
            continue;
        }
        if (c) {
            struct gw_conn_health *h = gw_conn_health(c);
            if (strncmp(h->addr, nodes[i].addr, sizeof(h->addr)) != 0) {
                gw_conn_readdress(c, nodes[i].addr);
            }
            if (h->up && !nodes[i].up) {
                if (h->down_since == 0) {
                    h->down_since = cm_now_ns();
                }
            }
            h->up = nodes[i].up;
            h->draining = nodes[i].draining;
        } else {
            c = gw_conn_new(n, &nodes[i]);
            if (!c) {
                continue;
            }
        }
        next[nn++] = c;
    }
    /* Connections of removed nodes fail their requests, then go. */
    struct gw_conn **old = n->conns;
    size_t nold = n->nconns;
    for (size_t i = 0; i < nold; i++) {
        if (!kept(next, nn, old[i])) {
            gw_conn_health(old[i])->up = 0;
            gw_conn_fail(old[i], CM_E_UNAVAIL);
        }
    }
    n->conns = next;
    n->nconns = nn;
    for (size_t i = 0; i < nold; i++) {
        if (!kept(next, nn, old[i])) {
            gw_conn_free(old[i]);
        }
    }
    free(old);
    gw_loop_kick(n);
}

static int
usable(struct gw_conn *c, uint64_t now)
{
    if (!c) {
        return 0;
    }
    const struct gw_conn_health *h = gw_conn_health(c);
    return h->up && h->healthy && now >= h->suspect_until;
}

int
gw_net_node_usable(struct gw_net *n, uint32_t id)
{
    return usable(conn_find(n, id), cm_now_ns());
}

int
gw_net_node_placeable(struct gw_net *n, uint32_t id)
{
    struct gw_conn *c = conn_find(n, id);
    return usable(c, cm_now_ns()) && !gw_conn_health(c)->draining;
}

int
gw_net_node_known(struct gw_net *n, uint32_t id)
{
    return conn_find(n, id) != NULL;
}

uint64_t
gw_net_node_down_since(struct gw_net *n, uint32_t id)
{
    struct gw_conn *c = conn_find(n, id);
    if (!c) {
        return 1; /* unknown: long gone */
    }
    const struct gw_conn_health *h = gw_conn_health(c);
    if (!h->up || !h->healthy) {
        return h->down_since ? h->down_since : 1;
    }
    return 0;
}

size_t
gw_net_node_ids(struct gw_net *n, uint32_t *ids, size_t cap)
{
    size_t i;
    for (i = 0; i < n->nconns && i < cap; i++) {
        ids[i] = gw_conn_health(n->conns[i])->id;
    }
    return i;
}

int
gw_net_send(struct gw_net *n, uint32_t node, const struct gw_net_send *s, struct gw_net_req **out)
{
    struct gw_conn *c = conn_find(n, node);
    if (!usable(c, cm_now_ns())) {
        return CM_E_UNAVAIL;
    }
    return gw_conn_send(c, s, out);
}
