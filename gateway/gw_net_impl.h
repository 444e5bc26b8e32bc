/*
 * gw_net_impl.h - what the three files behind gw_net.h share (private to
 * them; everyone else uses gw_net.h):
 *
 *   gw_loop.c   the loop thread, the posted-command queue, timers
 *   gw_nodes.c  the node directory and each node's health
 *   gw_conn.c   one node's connection: connect, backoff, suspect, frames,
 *               requests in flight
 *
 * Only gw_loop.c and gw_conn.c see libevent. Everything here runs on the
 * loop thread, except the post queue (under lock).
 */
#ifndef GW_NET_IMPL_H
#define GW_NET_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_engine.h"
#include "gw_net.h"

struct event;
struct event_base;
struct gw_conn;
struct gw_post;

struct gw_net {
    struct event_base *base;
    pthread_t thread;
    pthread_mutex_t lock; /* guards the posts only */
    struct gw_post *posts_head, *posts_tail;
    int wake_pending; /* under lock: wake_fd was written since the last drain */
    int wake_fd;      /* eventfd: posts from other threads wake the loop */
    struct event *wake;
    struct event *tick;
    struct event *kick; /* runs gw_nodes_maintain soon (a send found its node idle) */
    int io_timeout_ms;
    uint64_t next_req_id;
    struct gw_conn **conns; /* the directory, in the controller's order */
    size_t nconns;
    gw_net_note_fn on_note;
    void *note_arg;
    gw_net_rtt_fn on_rtt;
    void *rtt_arg;
};

/*
 * One node: its directory entry and health (gw_nodes.c reads them, the
 * connection keeps them) and its connection's own state (gw_conn.c).
 * Health: up is the controller's word; healthy turns 0 when the connection
 * fails and 1 when the node answers; a node is usable when up, healthy and
 * past suspect_until; down_since is when it stopped being reachable.
 */
struct gw_conn_health {
    uint32_t id;
    char addr[64];
    int up;
    int draining; /* being removed: reads only, no new chunks */
    int healthy;
    uint64_t suspect_until, down_since;
};

/* gw_loop.c */
#define GW_TICK_MS 20
/* Runs gw_nodes_maintain soon, outside the caller's stack. */
void gw_loop_kick(struct gw_net *n);

/* gw_nodes.c */
/* Connects idle nodes and times out stuck connections (every tick, kick). */
void gw_nodes_maintain(struct gw_net *n);
/* Drops every connection without completing its requests (shutdown). */
void gw_nodes_clear(struct gw_net *n);

/* gw_conn.c */
struct gw_conn *gw_conn_new(struct gw_net *n, const struct gw_node *node);
/* Drops every request without completing it (shutdown, node removed). */
void gw_conn_free(struct gw_conn *c);
struct gw_conn_health *gw_conn_health(struct gw_conn *c);
/* Closes the connection and fails its requests with err; retried with backoff. */
void gw_conn_fail(struct gw_conn *c, int err);
/* The address changed: reconnect now (its requests fail). */
void gw_conn_readdress(struct gw_conn *c, const char *addr);
/* Connects when idle and due, fails a connection stuck past the I/O timeout. */
void gw_conn_maintain(struct gw_conn *c, uint64_t now);
/* Queues one request (see gw_net_send); connects an idle connection. */
int gw_conn_send(struct gw_conn *c, const struct gw_net_send *s, struct gw_net_req **out);

#endif
