/*
 * ctl_api.h - the controller's HTTP face (private to controller/): the
 * admin API of API.md, the internal API of docs/internal-api.md, /healthz
 * and /metrics, on one listener.
 *
 *   client ──HTTP──▶ cm_http thread ──headers: auth (401 before the body)
 *                                   └─request: route ──▶ ctl_state (write)
 *                                                    └──▶ ctl_snapshot ─▶ JSON
 *
 * Threads: handlers run on the cm_http threads and answer synchronously;
 * ctl_api_start/stop from the main thread.
 */
#ifndef CTL_API_H
#define CTL_API_H

struct ctl_api;
struct ctl_prices;
struct ctl_sms;
struct ctl_pp;
struct ctl_state;
struct ctl_wa;

struct ctl_api_cfg {
    const char *listen; /* borrowed for the call */
    unsigned threads;
    const char *token;               /* admin token, copied */
    struct ctl_pp *pp;               /* placement (ctl_pp.h); borrowed, must outlive the api */
    struct ctl_wa *wa;               /* weight allocation; borrowed, must outlive the api */
    struct ctl_sms *sms;             /* the pools' windows; borrowed, must outlive the api */
    const struct ctl_prices *prices; /* copied; NULL: the defaults */
};

/* st is borrowed and must outlive the api. */
int ctl_api_start(struct ctl_state *st, const struct ctl_api_cfg *cfg, struct ctl_api **out);
/* Stops the listener (in-flight requests finish), frees. NULL is a no-op. */
void ctl_api_stop(struct ctl_api *a);

#endif
