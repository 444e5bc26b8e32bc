/*
 * fns_ctl.h - the node's control-plane client: a background thread that
 * heartbeats the controller (POST /v1/internal/heartbeat, see
 * docs/internal-api.md) and applies the local weights it answers with.
 *
 * A controller that is down is tolerated: one log line per state change
 * (reachable <-> unreachable), the data path keeps serving. Thread: its
 * own; create/destroy from the main thread.
 */
#ifndef FNS_CTL_H
#define FNS_CTL_H

struct fns_node;
struct fns_ctl;

struct fns_ctl_cfg {
    const char *controller;   /* "host:port" or "http://..."; "" disables; copied */
    const char *token_file;   /* admin token file or NULL/""; copied */
    const char *addr;         /* this node's data address; copied */
    const char *metrics_addr; /* copied */
    int interval_ms;
};

/* node borrowed until destroy. */
int fns_ctl_create(const struct fns_ctl_cfg *cfg, struct fns_node *node, struct fns_ctl **out);
void fns_ctl_destroy(struct fns_ctl *c); /* NULL is a no-op; stops and joins */

/* For tests: the JSON body of one heartbeat (malloc'd, transferred). */
char *fns_ctl_heartbeat_json(struct fns_node *node, const char *addr, const char *metrics_addr);
/* For tests: applies an answer body; 0 or CM_E_PROTO. */
int fns_ctl_apply_answer(struct fns_node *node, const char *body);

#endif
