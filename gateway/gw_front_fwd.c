/*
 * gw_front_fwd.c - the fronts' side of requests for tenants another
 * gateway owns (gw_forward.h carries them): where a tenant's requests go,
 * the admission of a large answer, and the relay of the owner's answer
 * or the 503 when it cannot be had, in the tenant API's words (JSON) and
 * in S3's (XML).
 *
 * Threads: the HTTP threads (and the state thread after a refresh) send;
 * the forward thread answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_hmap.h"
#include "cm_http.h"
#include "gw_admit.h"
#include "gw_forward.h"
#include "gw_grace.h"
#include "gw_handover.h"
#include "gw_front_impl.h"
#include "gw_s3_impl.h"
#include "gw_state.h"

/* ---- both fronts ---- */

int
gw_front_elsewhere(const struct gw_front *f, const struct gw_snap *s, const struct gw_tenant *t,
                   const struct gw_peer **peer)
{
    *peer = NULL;
    return gw_snap_home(s, t, f->cfg.self, peer) != GW_HOME_HERE;
}

int
gw_front_hold(struct gw_front *f, uint32_t tenant, struct gw_grace_bucket **ticket)
{
    /* Entered before the check: a hand-over's grace, deferred after its
     * freeze, then waits for every request that did not see it. */
    *ticket = gw_grace_enter(f->served);
    if (gw_handover_frozen(f->handover, tenant)) {
        gw_front_release(f, ticket);
        return 1;
    }
    return 0;
}

void
gw_front_release(struct gw_front *f, struct gw_grace_bucket **ticket)
{
    if (*ticket != NULL) {
        gw_grace_exit(f->served, *ticket);
        *ticket = NULL;
    }
}

int
gw_front_forwarded(struct cm_http_req *r)
{
    return cm_http_header(r, GW_FORWARDED_BY) != NULL;
}

/* A large answer's admission came (the admission thread). */
static void
fwd_admitted(void *arg, struct gw_admit_ticket *t, int status)
{
    struct gw_fwd_job *j = arg;

    if (status == 0) {
        gw_front_admitted(j->r, t);
    }
    gw_forward_resume(j->front->forward, j, status == 0 ? 0 : CM_E_BUSY);
}

/* An answer of length bytes waits for its share of --inflight-bytes
 * before it is taken in, as a GET's result does here (the forward
 * thread). A request that holds a share already (a large PUT) answers
 * with a few bytes. */
static int
fwd_body(struct gw_fwd_job *j, uint64_t length)
{
    struct gw_front *f = j->front;
    int rc;

    if (length == UINT64_MAX || !gw_front_admits(f, length) || cm_http_user(j->r) != NULL) {
        return 0;
    }
    rc = gw_front_admit(f, j->r, j->tenant, length, GW_ADMIT_READ, fwd_admitted, j);
    return rc > 0 ? 0 : rc == 0 ? 1 : -ENOMEM;
}

void
gw_front_forward(struct gw_front *f, struct gw_fwd_job *j, uint32_t tenant)
{
    j->front = f;
    j->tenant = tenant;
    j->on_body = fwd_body;
    gw_forward_submit(f->forward, j);
}

/* ---- the tenant API ---- */

/* The answer for a request that cannot be sent to its tenant's owner. */
static void
fail_unowned(struct req *q, const char *msg)
{
    cm_http_add_header(q->r, "Retry-After", "1");
    gw_req_fail(q, 503, "unavailable", msg);
}

struct req_fwd {
    struct gw_fwd_job job;
    struct req *q;
};

/* The owner answered, or could not be asked (a forward thread). */
static void
req_forwarded(struct gw_fwd_job *j, int rc)
{
    struct req_fwd *w = CM_CONTAINER_OF(j, struct req_fwd, job);
    struct req *q = w->q;
    const char *ctype = j->ctype[0] != '\0' ? j->ctype : NULL;

    if (rc == -ECANCELED) {
        fail_unowned(q, "gateway is shutting down");
    } else if (rc == CM_E_BUSY) {
        fail_unowned(q, "too many large requests in flight, retry later");
    } else if (rc != 0) {
        fail_unowned(q, "the gateway that owns this tenant did not answer");
    } else {
        gw_fwd_job_pass_headers(j);
        q->bytes = j->len;
        if (strcmp(q->method, "HEAD") == 0) {
            gw_req_reply_head(q, j->status, ctype, j->clen);
        } else {
            gw_req_reply(q, j->status, ctype, j->body, j->len, CM_HTTP_FREE);
            j->body = NULL;
        }
    }
    gw_fwd_job_fini(j);
    free(w);
}

void
gw_req_forward(struct req *q, const struct gw_peer *peer)
{
    struct req_fwd *w;

    if (peer == NULL) {
        fail_unowned(q, "the gateway that owns this tenant is not known yet");
        return;
    }
    if (gw_front_forwarded(q->r)) {
        fail_unowned(q, "forwarded to a gateway that does not own this tenant");
        return;
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        fail_unowned(q, "gateway out of memory, retry later");
        return;
    }
    w->q = q;
    w->job.r = q->r;
    snprintf(w->job.base, sizeof(w->job.base), "%s", peer->url);
    w->job.reqid = q->id;
    w->job.done = req_forwarded;
    gw_req_suspend(q);
    gw_front_forward(q->f, &w->job, q->tenant);
}

/* ---- the S3 API ---- */

struct s3_fwd {
    struct gw_fwd_job job;
    struct s3_req *q;
};

/* The owner answered, or could not be asked (a forward thread). */
static void
s3_forwarded(struct gw_fwd_job *j, int rc)
{
    struct s3_fwd *w = CM_CONTAINER_OF(j, struct s3_fwd, job);
    struct s3_req *q = w->q;
    const char *ctype = j->ctype[0] != '\0' ? j->ctype : NULL;

    if (rc == -ECANCELED) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE, "the gateway is shutting down");
    } else if (rc == CM_E_BUSY) {
        s3_fail(q, GW_S3_E_SLOW_DOWN, "too many large requests in flight: retry later");
    } else if (rc != 0) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE,
                "the gateway that owns this access key's tenant did not answer");
    } else {
        gw_fwd_job_pass_headers(j);
        q->bytes = j->len;
        if (strcmp(q->method, "HEAD") == 0) {
            s3_reply_head(q, j->status, ctype, j->clen);
        } else {
            s3_reply(q, j->status, ctype, j->body, j->len, CM_HTTP_FREE);
            j->body = NULL;
        }
    }
    gw_fwd_job_fini(j);
    free(w);
}

void
s3_forward(struct s3_req *q, const struct gw_peer *peer)
{
    struct s3_fwd *w;

    if (peer == NULL || peer->s3_url[0] == '\0') {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE,
                "the gateway that owns this access key's tenant is not known yet");
        return;
    }
    if (gw_front_forwarded(q->r)) {
        s3_fail(q, GW_S3_E_SERVICE_UNAVAILABLE,
                "forwarded to a gateway that does not own this access key's tenant");
        return;
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        s3_fail(q, GW_S3_E_SLOW_DOWN, "gateway out of memory, retry later");
        return;
    }
    w->q = q;
    w->job.r = q->r;
    snprintf(w->job.base, sizeof(w->job.base), "%s", peer->s3_url);
    w->job.reqid = q->id;
    w->job.done = s3_forwarded;
    s3_suspend(q);
    gw_front_forward(q->f, &w->job, q->tenant);
}
