/*
 * gw_front_impl.h - what the front's two files share (private to them):
 *
 *   gw_front.c    routing, auth, the request's life and answers, metrics
 *   gw_objects.c  the object handlers: GET/HEAD, PUT, DELETE, LIST, and the
 *                 committer's answers
 *   gw_front_fwd.c  requests for other gateways' tenants (both fronts)
 *
 * A struct req lives from routing to its answer (gw_req_* frees it once
 * answered); while suspended it is counted in the front's inflight.
 */
#ifndef GW_FRONT_IMPL_H
#define GW_FRONT_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_http.h"
#include "gw_commit.h"
#include "gw_front.h"
#include "gw_parse.h"
#include "gw_state.h"

struct gw_demand;
struct gw_forward;
struct gw_grace_bucket;
struct gw_handover;
struct gw_migrate;

/* The HTTP request kinds (metrics label op=). */
enum req_kind { REQ_PUT, REQ_GET, REQ_HEAD, REQ_DELETE, REQ_LIST, REQ_N, REQ_NONE = -1 };

struct req {
    struct gw_front *f;
    struct cm_http_req *r;
    char id[GW_REQID_MAX + 1];
    char method[8]; /* copied: r's strings die with the response */
    enum req_kind kind;
    int async;      /* suspended: counted in f->inflight */
    int in_headers; /* a PUT before its body is read */
    int refreshed;  /* its key was looked up again after a state refresh */
    struct gw_state_wait wait;
    uint32_t tenant;
    uint64_t t0;
    uint64_t bytes;
    char key[GW_KEY_MAX];
    size_t klen;
    struct gw_grace_bucket *served; /* served here (gw_front_hold) */
    /* GET */
    struct gw_grace_bucket *grace; /* in the grace period from before the layout read */
    struct gw_layout lay;
    struct gw_layout *parts; /* a composite's (owned) */
    uint32_t nparts;
    uint64_t off, len;
    int partial;
    /* PUT, DELETE */
    struct gw_commit_op commit;
};

struct gw_front {
    struct gw_front_cfg cfg;
    struct gw_meta *meta;
    struct gw_engine *engine;
    struct gw_state *state;
    struct cm_reqstats *rs;
    struct cm_reqstats *rs_s3; /* the S3 front door's requests, by S3 operation */
    struct gw_grace *grace;    /* GETs in flight vs the deletes of old versions */
    struct gw_grace *served;   /* every request served here vs a tenant's hand-over */
    struct gw_handover *handover; /* tenants moving away (may be NULL) */
    struct gw_commit *commit;
    struct gw_demand *demand;   /* placement's demand counts (may be NULL) */
    struct gw_migrate *migrate; /* for /metrics (may be NULL) */
    struct gw_scrub *scrub;     /* for /metrics (may be NULL) */
    struct gw_admit *admit;     /* large requests into the engine */
    struct gw_forward *forward; /* requests for tenants other gateways own */
    atomic_int inflight;
    atomic_int draining;
};

/* gw_front.c: answers. Each answers q and frees it; body per mem
 * (cm_http_respond). gw_req_fail's msg is a static one-liner without
 * quotes or backslashes. */
void gw_req_reply(struct req *q, int status, const char *ctype, void *body, size_t len,
                  enum cm_http_mem mem);
void gw_req_reply_head(struct req *q, int status, const char *ctype, uint64_t len);
void gw_req_fail(struct req *q, int status, const char *code, const char *msg);
/* The answer for an engine, committer or store error. */
void gw_req_fail_status(struct req *q, int rc);
/* q is answered later, from another thread. */
void gw_req_suspend(struct req *q);
/* For a PUT in headers(), from any thread: its body is read (if q was
 * suspended, q's request is let go on); frees q, which is not answered. */
void gw_req_proceed(struct req *q);
void gw_req_etag_version(struct req *q, const struct gw_layout *l);

/*
 * gw_front_fwd.c: 1 when tenant t is another gateway's (gw_snap_home), with
 * *peer that gateway (borrowed from s), or NULL when its address is not
 * known; 0 when t's requests are served here.
 */
int gw_front_elsewhere(const struct gw_front *f, const struct gw_snap *s, const struct gw_tenant *t,
                       const struct gw_peer **peer);
/* gw_front_fwd.c: sends q on to peer, the gateway that owns its tenant
 * (NULL: not known: 503), and answers it with what comes back. */
void gw_req_forward(struct req *q, const struct gw_peer *peer);
/* gw_front_fwd.c: a request of tenant to be served here enters the
 * grace period a hand-over waits out (*ticket, for gw_front_release):
 * 0; or 1 when the tenant is frozen (moving to another gateway), to be
 * answered 503 with Retry-After (no ticket). */
int gw_front_hold(struct gw_front *f, uint32_t tenant, struct gw_grace_bucket **ticket);
void gw_front_release(struct gw_front *f, struct gw_grace_bucket **ticket);
/* gw_front_fwd.c: sends j (its request suspended, its base, reqid and done
 * set) on to the gateway that owns tenant (gw_forward.h); a large answer
 * first waits for its share of --inflight-bytes, or ends with CM_E_BUSY. */
struct gw_fwd_job;
void gw_front_forward(struct gw_front *f, struct gw_fwd_job *j, uint32_t tenant);
/* gw_front_fwd.c: 1 when r came from another gateway (X-Shoal-Forwarded-By):
 * it is answered here or refused, never sent on again. */
int gw_front_forwarded(struct cm_http_req *r);

/* gw_objects.c: data chunks per stripe of a new version of size bytes
 * (small objects are stored as 1+m whole copies). */
uint8_t gw_front_put_k(const struct gw_front *f, const struct gw_tenant *t, uint64_t size);

/* gw_objects.c: what a read or a stored version of key asked of the
 * nodes, for the demand reports (off, len: the range read; got: the bytes
 * answered, 0 when it failed; t0: when the request came in, cm_now_ns).
 * A record-only version (a composite) asks nothing. */
void gw_front_note_read(struct gw_front *f, uint32_t tenant, const char *key, size_t klen,
                        const struct gw_layout *l, uint64_t off, uint64_t len, uint64_t got,
                        uint64_t t0);
void gw_front_note_write(struct gw_front *f, uint32_t tenant, const char *key, size_t klen,
                         const struct gw_layout *l, uint64_t t0);

/* gw_objects.c: for a version a commit replaced or deleted, sends the
 * tombstone of a delete (old->key set: gw_engine_tombstone) and deletes
 * its chunks (those of every part of a composite) once no GET that may
 * have read its layout is left; takes what old owns (old is reset).
 * Committer thread, after the commit. */
void gw_front_retire(struct gw_front *f, struct gw_meta_old *old);

/* gw_objects.c: admission of large requests (gw_admit.h). Whether a
 * request of bytes has to be admitted (a small one never pays for it). */
int gw_front_admits(const struct gw_front *f, uint64_t bytes);
/* Enters r (already suspended by its owner) with bytes for tenant, a read
 * or a write (GW_ADMIT_READ, GW_ADMIT_WRITE): 1: go
 * on now; 0: it waits and cb(arg, t, status) follows, possibly before
 * this returns, on the admission thread; -ENOMEM: no memory for a ticket
 * (the caller answers 503). A ticket granted now is r's
 * (gw_front_admitted); cb is to hand the t it gets to r the same way. */
int gw_front_admit(struct gw_front *f, struct cm_http_req *r, uint32_t tenant, uint64_t bytes,
                   int write, gw_admit_cb cb, void *arg);
/* t (may be NULL) becomes r's: released once r is gone (its answer sent),
 * so the bound covers the answer too; r's user pointer (cm_http_user). */
void gw_front_admitted(struct cm_http_req *r, struct gw_admit_ticket *t);
/* r's ticket with one more hold (gw_admit_hold) for the engine to release
 * once it freed the body (gw_engine_put's freed), or NULL. */
struct gw_admit_ticket *gw_front_ticket_hold(struct cm_http_req *r);

/* gw_objects.c: the handlers, q authenticated (its tenant set) and its key
 * parsed (but for LIST). s and t are borrowed for the call. */
void gw_obj_get(struct req *q); /* GET and HEAD */
/* A PUT before its body is read: the checks (411, 413), then a large
 * one's admission. 0: read the body now; -1: answered; 1: q waits,
 * suspended, and is let go on (gw_req_proceed) or answered 503 later,
 * from another thread, maybe before this returns (q is not to be used). */
int gw_obj_put_headers(struct req *q, const struct gw_tenant *t);
void gw_obj_put(struct req *q, struct gw_snap *s, const struct gw_tenant *t);
void gw_obj_delete(struct req *q);
void gw_obj_list(struct req *q);

#endif
