/*
 * fns_heartbeat.h - the heartbeat client: a background thread that
 * heartbeats the controller (POST /v1/internal/heartbeat, see
 * docs/internal-api.md) and applies the local weights it answers with.
 *
 * A controller that is down is tolerated: one log line per state change
 * (reachable <-> unreachable), the data path keeps serving. Thread: its
 * own; create/destroy from the main thread.
 */
#ifndef FNS_HEARTBEAT_H
#define FNS_HEARTBEAT_H

struct fns_node;
struct fns_heartbeat;

struct fns_heartbeat_cfg {
    const char *controller;   /* "host:port" or "http://..."; "" disables; copied */
    const char *token_file;   /* admin token file or NULL/""; copied */
    const char *addr;         /* this node's data address; copied */
    const char *metrics_addr; /* copied */
    int interval_ms;
};

/* node borrowed until destroy. */
int fns_heartbeat_create(const struct fns_heartbeat_cfg *cfg, struct fns_node *node,
                         struct fns_heartbeat **out);
void fns_heartbeat_destroy(struct fns_heartbeat *c); /* NULL is a no-op; stops and joins */

/* For tests: the JSON body of one heartbeat (malloc'd, transferred). */
char *fns_heartbeat_json(struct fns_node *node, const char *addr, const char *metrics_addr);
/* For tests: applies an answer body; 0 or CM_E_PROTO. */
int fns_heartbeat_apply_answer(struct fns_node *node, const char *body);

#endif
