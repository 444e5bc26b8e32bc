/*
 * gw_forward.h - requests for tenants another gateway owns, sent on to
 * that gateway (private to gateway/).
 *
 *   HTTP thread ──gw_forward_submit (r suspended, body buffered)──▶
 *   forward thread (libcurl's multi interface: every forwarded request at
 *   once, over connections kept open to each owner) ──▶ owner gateway
 *   forward thread ──job->done (status, headers, body)──▶ the front answers r
 *
 * The request goes out as it came in: method, path and query exactly as
 * on its request line, its headers but the hop-by-hop ones (an S3
 * request's signature covers Host and its x-amz- headers, so the owner
 * verifies it as the client signed it), its body, and
 * X-Shoal-Forwarded-By naming this gateway: the owner never sends such a
 * request on again.
 *
 * Threads: submit from any thread; done runs on the forward thread, or
 * in submit when the request cannot go out.
 */
#ifndef GW_FORWARD_H
#define GW_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "cm_buf.h"

struct cm_http_req;
struct cm_httpc_pause;
struct gw_forward;
struct gw_front;

#define GW_FORWARDED_BY "X-Shoal-Forwarded-By"

struct gw_fwd_job {
    /* set by the caller */
    struct cm_http_req *r; /* suspended; answered by done, not before */
    char base[128];        /* the owner's URL, "http://host:port" */
    const char *reqid;     /* sent as X-Request-Id; borrowed until done */
    /* rc 0: the owner answered (below); else CM_E_TIMEOUT, -ECONNREFUSED,
     * -EIO, CM_E_TOOBIG, -ENOMEM, -ECANCELED (the gateway stops) or what
     * gw_forward_resume was given */
    void (*done)(struct gw_fwd_job *j, int rc);
    /* May be NULL. Once the owner's answer has a body to come, of length
     * bytes (UINT64_MAX: not told), before it is kept: 0 to take it now,
     * 1 to wait for gw_forward_resume (exactly once; it may come before
     * this returns), a negative code to end with it. The forward thread. */
    int (*on_body)(struct gw_fwd_job *j, uint64_t length);
    struct gw_front *front; /* on_body's (gw_front_forward) */
    uint32_t tenant;
    /* the owner's answer, for done */
    int status;
    char ctype[128];    /* its Content-Type ("" if none) */
    uint64_t clen;      /* its Content-Length (a HEAD's announced length) */
    struct cm_buf hdrs; /* the other headers to pass on, "Name\0value\0" pairs */
    char *body;         /* cm_free_big; done takes it or leaves it to gw_fwd_job_fini */
    size_t len;
    struct cm_httpc_pause *pause; /* the forwarder's, while on_body waits */
};

/* self: this gateway's id; answers larger than max_body fail. */
int gw_forward_create(const char *self, uint64_t max_body, struct gw_forward **out);
/* Stops the forward thread once the requests out are answered; those not
 * yet sent get done(-ECANCELED). NULL is a no-op. */
void gw_forward_destroy(struct gw_forward *fw);
/* j is borrowed until its done has run. */
void gw_forward_submit(struct gw_forward *fw, struct gw_fwd_job *j);
/* The body on_body waited for: taken (rc 0), or the request ended with
 * rc (negative), which done gets. Any thread. */
void gw_forward_resume(struct gw_forward *fw, struct gw_fwd_job *j, int rc);
/* Adds the owner's headers to j->r (before the answer). */
void gw_fwd_job_pass_headers(struct gw_fwd_job *j);
void gw_fwd_job_fini(struct gw_fwd_job *j);

struct gw_forward_stats {
    uint64_t forwarded, failed; /* answered by the owner / not */
    uint64_t running;           /* out now */
};
void gw_forward_stats(struct gw_forward *fw, struct gw_forward_stats *out);

#endif
