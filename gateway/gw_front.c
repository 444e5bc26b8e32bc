/*
 * gw_front.c - routing, auth, the request's life and answers, and the
 * metrics of the tenant API; the object handlers are gw_objects.c's.
 *
 *   HTTP thread                       engine thread        committer (gw_commit.c)
 *   ───────────                       ─────────────        ───────────────────────
 *   headers(): route, PUT auth/411/413
 *   request(): auth, key, meta read
 *     GET  ─suspend─▶ gw_engine_get ─▶ get_done: respond
 *     PUT  ─suspend─▶ gw_engine_put ─▶ put_done ─queue─▶  one LMDB write txn
 *     DELETE ─suspend──────────────────────────queue─▶  for the whole queue,
 *                                     on_layout ─queue─▶  fsync'd commit, then
 *     LIST, HEAD: answered inline                         commit_done: respond
 *                                                         201/204/404, delete
 *                                                         old chunks
 *
 * Owns: the request contexts (struct req, freed once answered, each with
 * the commit op it may need), the committer and the request stats.
 * Borrows meta, state and engine. An allocation that fails fails the
 * request it serves (503 unavailable), never the process.
 *
 * Invariants:
 *   - no HTTP thread waits on chunk I/O or on an fsync: those requests are
 *     suspended and answered from the engine or committer thread;
 *   - a PUT is acknowledged only after its layout is committed to LMDB;
 *   - a reader uses the one layout it read in one read txn; the chunks of a
 *     replaced or deleted version are deleted once every GET that began
 *     before the commit is answered (gw_grace), plus delete_delay_ms;
 *   - commit ops are applied in queue order; put_done and on_layout both
 *     queue from the engine thread, so an object's layout updates follow
 *     its commit;
 *   - the committer is the only metadata writer besides tenant purges and
 *     state saves in gw_state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_metrics.h"
#include "cm_time.h"
#include "gw_front_impl.h"
#include "gw_admit.h"
#include "gw_demand.h"
#include "gw_forward.h"
#include "gw_grace.h"
#include "gw_handover.h"
#include "gw_migrate.h"
#include "gw_meta.h"
#include "gw_s3_route.h"
#include "gw_scrub.h"
#include "gw_state.h"

#define OBJ_PREFIX "/v1/objects/"
#define OBJ_PREFIX_LEN (sizeof(OBJ_PREFIX) - 1)

static const char *const req_names[REQ_N] = {"put", "get", "head", "delete", "list"};

enum route { R_NONE, R_HEALTH, R_METRICS, R_LIST, R_OBJECT, R_HANDOVER };

/* POST /v1/internal/tenants/{id}/handover: a tenant's metadata from its
 * owner (gw_handover.h). */
#define HANDOVER_PREFIX "/v1/internal/tenants/"
#define HANDOVER_PREFIX_LEN (sizeof(HANDOVER_PREFIX) - 1)

/* ---- responses ---- */

#define NOMEM_BODY "{\"error\":\"unavailable\",\"message\":\"gateway out of memory, retry later\"}"

/* The request's context, or NULL when there is no memory for it: then r
 * is answered 503 here. */
static struct req *
req_new(struct gw_front *f, struct cm_http_req *r, enum req_kind kind)
{
    struct req *q = calloc(1, sizeof(*q));
    const char *cid = cm_http_header(r, "X-Request-Id");
    char id[GW_REQID_MAX + 1];

    if (gw_reqid_ok(cid)) {
        snprintf(id, sizeof(id), "%s", cid);
    } else {
        snprintf(id, sizeof(id), "%016llx", (unsigned long long)cm_random_u64());
    }
    if (q == NULL) {
        CM_WARN("request failed method=%s status=503 error=unavailable err=ENOMEM req=%s",
                cm_http_method(r), id);
        cm_http_add_header(r, "X-Request-Id", id);
        cm_http_respond(r, 503, "application/json", NOMEM_BODY, sizeof(NOMEM_BODY) - 1,
                        CM_HTTP_STATIC);
        return NULL;
    }
    q->f = f;
    q->r = r;
    q->kind = kind;
    snprintf(q->method, sizeof(q->method), "%s", cm_http_method(r));
    q->t0 = cm_now_ns();
    memcpy(q->id, id, sizeof(id));
    return q;
}

static void
req_done(struct req *q, int status, const char *error)
{
    struct gw_front *f = q->f;
    uint64_t ns = cm_now_ns() - q->t0;

    if (q->kind != REQ_NONE) {
        cm_reqstats_record(f->rs, q->tenant, q->kind, status, q->bytes, ns);
    }
    if (status >= 400) {
        CM_WARN("request failed op=%s method=%s status=%d error=%s tenant=%u req=%s ms=%.3f",
                q->kind != REQ_NONE ? req_names[q->kind] : "-", q->method, status,
                error != NULL ? error : "-", q->tenant, q->id, (double)ns / 1e6);
    } else {
        CM_DEBUG("request op=%s method=%s status=%d bytes=%llu tenant=%u req=%s ms=%.3f",
                 q->kind != REQ_NONE ? req_names[q->kind] : "-", q->method, status,
                 (unsigned long long)q->bytes, q->tenant, q->id, (double)ns / 1e6);
    }
    if (q->async) {
        atomic_fetch_sub(&f->inflight, 1);
    }
    if (q->grace != NULL) {
        gw_grace_exit(f->grace, q->grace);
    }
    gw_front_release(f, &q->served);
    gw_layout_fini(&q->lay);
    gw_layout_fini(&q->commit.lay);
    for (uint32_t i = 0; q->parts != NULL && i < q->nparts; i++) {
        gw_layout_fini(&q->parts[i]);
    }
    free(q->parts);
    free(q);
}

/* Answers and frees q. body per mem (see cm_http_respond). */
void
gw_req_reply(struct req *q, int status, const char *ctype, void *body, size_t len,
             enum cm_http_mem mem)
{
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond(q->r, status, ctype, body, len, mem);
    req_done(q, status, NULL);
}

void
gw_req_reply_head(struct req *q, int status, const char *ctype, uint64_t len)
{
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond_head(q->r, status, ctype, len);
    req_done(q, status, NULL);
}

/* An API error: status + {"error","message"}; msg is a static one-liner
 * without quotes or backslashes. */
void
gw_req_fail(struct req *q, int status, const char *code, const char *msg)
{
    char buf[512];
    int n = snprintf(buf, sizeof(buf), "{\"error\":\"%s\",\"message\":\"%s\"}", code, msg);

    if (status == 429) {
        cm_http_add_header(q->r, "Retry-After", "1");
    } else if (status == 401) {
        cm_http_add_header(q->r, "WWW-Authenticate", "Bearer");
    }
    cm_http_add_header(q->r, "X-Request-Id", q->id);
    cm_http_respond(q->r, status, "application/json", buf, (size_t)n, CM_HTTP_COPY);
    req_done(q, status, code);
}

void
gw_req_fail_status(struct req *q, int rc)
{
    switch (rc) {
    case CM_E_BUSY:
        gw_req_fail(q, 429, "slow_down", "tenant queue is full, retry later");
        break;
    case CM_E_UNAVAIL:
    case CM_E_TIMEOUT:
    case -ECONNREFUSED:
    case -ECONNRESET:
    case -EPIPE:
    case -EIO:
        gw_req_fail(q, 503, "unavailable", "not enough chunk holders reachable");
        break;
    case CM_E_TOOBIG:
        gw_req_fail(q, 413, "too_large", "object too large");
        break;
    case -ENOMEM:
        gw_req_fail(q, 503, "unavailable", "gateway out of memory, retry later");
        break;
    default:
        CM_ERROR("internal error req=%s tenant=%u err=%s", q->id, q->tenant, cm_errname(rc));
        gw_req_fail(q, 500, "internal", "internal error, see the gateway log");
        break;
    }
}

void
gw_req_suspend(struct req *q)
{
    if (!q->async) { /* not yet: a request that waited for a refresh is */
        q->async = 1;
        atomic_fetch_add(&q->f->inflight, 1);
    }
    cm_http_suspend(q->r);
}

void
gw_req_etag_version(struct req *q, const struct gw_layout *l)
{
    char v[40];

    snprintf(v, sizeof(v), "\"%016llx\"", (unsigned long long)l->etag);
    cm_http_add_header(q->r, "ETag", v);
    snprintf(v, sizeof(v), "%llu", (unsigned long long)l->version);
    cm_http_add_header(q->r, "X-Shoal-Version", v);
}

/* ---- routing and auth ---- */

static enum route
route_of(const char *path)
{
    if (strcmp(path, "/healthz") == 0) {
        return R_HEALTH;
    }
    if (strcmp(path, "/metrics") == 0) {
        return R_METRICS;
    }
    if (strcmp(path, "/v1/objects") == 0) {
        return R_LIST;
    }
    if (strncmp(path, OBJ_PREFIX, OBJ_PREFIX_LEN) == 0) {
        return R_OBJECT;
    }
    if (strncmp(path, HANDOVER_PREFIX, HANDOVER_PREFIX_LEN) == 0) {
        return R_HANDOVER;
    }
    return R_NONE;
}

static enum req_kind
object_kind(const char *method)
{
    if (strcmp(method, "GET") == 0) {
        return REQ_GET;
    }
    if (strcmp(method, "HEAD") == 0) {
        return REQ_HEAD;
    }
    if (strcmp(method, "PUT") == 0) {
        return REQ_PUT;
    }
    if (strcmp(method, "DELETE") == 0) {
        return REQ_DELETE;
    }
    return REQ_NONE;
}

/* Answers 404/405 for a request that names no handler; else 0 and *kind. */
static int
route_check(struct gw_front *f, struct cm_http_req *r, enum route *rt, enum req_kind *kind)
{
    const char *m = cm_http_method(r);
    struct req *q;

    *rt = route_of(cm_http_path(r));
    *kind = REQ_NONE;
    switch (*rt) {
    case R_NONE:
        if ((q = req_new(f, r, REQ_NONE)) != NULL) {
            gw_req_fail(q, 404, "not_found", "no such path");
        }
        return 1;
    case R_HEALTH:
    case R_METRICS:
        if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET, HEAD");
        break;
    case R_LIST:
        if (strcmp(m, "GET") == 0) {
            *kind = REQ_LIST;
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET");
        break;
    case R_OBJECT:
        *kind = object_kind(m);
        if (*kind != REQ_NONE) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        break;
    case R_HANDOVER:
        if (strcmp(m, "POST") == 0) {
            return 0;
        }
        cm_http_add_header(r, "Allow", "POST");
        break;
    }
    if ((q = req_new(f, r, REQ_NONE)) != NULL) {
        gw_req_fail(q, 405, "method_not_allowed", "method not allowed on this path");
    }
    return 1;
}

static void auth_resumed(struct gw_state_wait *w);

/*
 * 0 with a snapshot reference (*snap) and its tenant; 1 when the key is
 * unknown and q waits, suspended, for one state refresh (auth_resumed then
 * takes it up again, on the state thread: a key works as soon as the
 * controller made it); or -1: answered 401. Waiting costs no HTTP thread:
 * libmicrohttpd suspends the request, as it does for chunk I/O.
 */
static int
authenticate(struct req *q, struct gw_snap **snap, const struct gw_tenant **tenant)
{
    const char *tok;
    size_t toklen;
    struct gw_snap *s;
    const struct gw_tenant *t;

    if (gw_parse_bearer(cm_http_header(q->r, "Authorization"), &tok, &toklen) != 0) {
        gw_req_fail(q, 401, "unauthorized", "missing or malformed bearer key");
        return -1;
    }
    s = gw_state_snap(q->f->state);
    t = gw_snap_auth(s, tok, toklen);
    if (t == NULL) {
        gw_snap_unref(s);
        if (!q->refreshed) {
            q->refreshed = 1;
            q->wait.fn = auth_resumed;
            gw_req_suspend(q); /* before: the refresh may end at once */
            if (gw_state_refresh(q->f->state, &q->wait) == 0) {
                return 1;
            }
        }
        gw_req_fail(q, 401, "unauthorized", "unknown key");
        return -1;
    }
    q->tenant = t->id;
    *snap = s;
    *tenant = t;
    return 0;
}

static int
parse_key(struct req *q)
{
    const char *raw = cm_http_path(q->r) + OBJ_PREFIX_LEN;
    const char *why = NULL;

    if (gw_parse_key(raw, strlen(raw), q->key, &q->klen, &why) != 0) {
        gw_req_fail(q, 400, "bad_request", why);
        return -1;
    }
    return 0;
}

void
gw_req_proceed(struct req *q)
{
    if (q->async) { /* it waited: the body can come now (request() makes a new req) */
        atomic_fetch_sub(&q->f->inflight, 1);
        cm_http_proceed(q->r);
    }
    free(q);
}

/* A PUT before its body: auth, key, 411/413, admission. 1 when answered;
 * 0 when its body is to be read, now or once a refresh knew its key or
 * its bytes were admitted (q is gone then, or waiting). */
static int
put_headers(struct req *q)
{
    struct gw_snap *s;
    const struct gw_tenant *t;
    int rc = authenticate(q, &s, &t);

    if (rc != 0) {
        return rc < 0;
    }
    /* The same for a PUT to be sent on to its tenant's gateway: it is read
     * here whole first, so its bytes wait for their share here too. */
    if (parse_key(q) != 0 || (rc = gw_obj_put_headers(q, t)) < 0) {
        gw_snap_unref(s);
        return 1;
    }
    gw_snap_unref(s);
    if (rc == 0) {
        gw_req_proceed(q);
    }
    return 0; /* rc 1: waits for admission, q may be gone already */
}

static int
front_headers(void *arg, struct cm_http_req *r)
{
    struct gw_front *f = arg;
    enum route rt;
    enum req_kind kind;
    struct req *q;

    if (route_check(f, r, &rt, &kind) != 0) {
        return 1;
    }
    if (kind != REQ_PUT) {
        return 0;
    }
    if ((q = req_new(f, r, kind)) == NULL) {
        return 1;
    }
    if (atomic_load(&f->draining)) {
        gw_req_fail(q, 503, "unavailable", "gateway is shutting down");
        return 1;
    }
    q->in_headers = 1;
    return put_headers(q);
}

/* ---- health and metrics ---- */

/* Gateway figures beside the request stats: X(name, type, help). */
#define GW_FRONT_METRICS(X)                                                                        \
    X(buffered_bytes, "gauge", "Object bytes held until every chunk is persisted in COS")          \
    X(buffered_objects, "gauge", "Objects held until every chunk is persisted in COS")             \
    X(redriven_chunks_total, "counter", "Chunks stored again after their holder was lost")         \
    X(parity_reads_total, "counter", "GET stripes served by decoding parity")                      \
    X(persist_notices_total, "counter", "Chunks a node announced persisted in COS")                \
    X(persist_stats_total, "counter", "STATs sent because a persisted notice was late or lost")    \
    X(stale_chunks_total, "counter",                                                               \
      "Chunk GETs answered STALE (their instance is gone): read around")                           \
    X(late_reads_total, "counter",                                                                 \
      "Chunk GETs asked again allowed to reload from COS, too few others being left")              \
    X(hedges_total, "counter", "GET holders marked slow, to be read around (hedged)")              \
    X(hedges_denied_total, "counter",                                                              \
      "Overdue GET holders left to answer, not read around: the hedge budget was spent")           \
    X(meta_records_total, "counter", "META records logged in COS (versions, tombstones, moves)")   \
    X(meta_unlogged_total, "counter", "META records refused by nodes that keep no insertion log")  \
    X(meta_waiting, "gauge", "META records not logged yet (versions, tombstones, moved versions)") \
    X(deletes_waiting, "gauge", "Chunk DELs kept until their unreachable holder is back")          \
    X(deletes_resent_total, "counter", "Chunk DELs sent again once their holder was back")         \
    X(deletes_dropped_total, "counter",                                                            \
      "Chunk DELs given up (too many kept, or the gateway stopped): orphans")                      \
    X(buffer_cache_bytes, "gauge", "Freed big buffers kept for reuse (--buffer-cache)")            \
    X(buffer_cache_hits_total, "counter", "Big buffers taken from the cache")                      \
    X(buffer_cache_misses_total, "counter", "Big buffers allocated because none cached fit")       \
    X(inflight_requests, "gauge", "Suspended requests waiting on chunk I/O or a commit")           \
    X(retired_versions_waiting, "gauge",                                                           \
      "Replaced or deleted versions whose chunks wait for GETs")                                   \
    X(commit_batches_total, "counter", "Metadata write transactions of the group committer")       \
    X(commit_ops_total, "counter", "Metadata operations committed (puts, deletes, layouts)")       \
    X(commit_queued_ops, "gauge", "Metadata operations waiting for the group committer")           \
    X(state_epoch, "gauge", "Epoch of the controller state in use")                                \
    X(controller_up, "gauge", "1 when the last controller state poll succeeded")                   \
    X(state_polls_failed_total, "counter", "Controller state polls that failed")                   \
    X(state_refreshes_total, "counter",                                                            \
      "State polls that requests with an unknown key waited for")                                  \
    X(tenants_purged_total, "counter", "Deleted tenants whose objects were purged")                \
    X(objects_purged_total, "counter", "Objects purged with their deleted tenant")                 \
    X(forwarded_requests_total, "counter",                                                         \
      "Requests sent on to the gateway that owns their tenant, and answered by it")                \
    X(forward_failures_total, "counter",                                                           \
      "Requests for another gateway's tenant that it did not answer (503 here)")                   \
    X(forwarding_requests, "gauge", "Requests sent on to their tenant's gateway, not answered yet")

struct front_metrics {
#define GW_FM_FIELD_(name, type, help) uint64_t name;
    GW_FRONT_METRICS(GW_FM_FIELD_)
#undef GW_FM_FIELD_
};

static void
handle_metrics(struct req *q)
{
    struct gw_front *f = q->f;
    struct front_metrics v;
    struct gw_engine_stats es;
    struct gw_state_stats ss;
    struct gw_forward_stats fs;
    struct cm_buf b;
    char *text;
    size_t len;

    gw_engine_stats(f->engine, &es);
    gw_state_stats(f->state, &ss);
    v.buffered_bytes = es.buffered_bytes;
    v.buffered_objects = es.buffered_objects;
    v.redriven_chunks_total = es.redriven_chunks;
    v.parity_reads_total = es.parity_reads;
    v.persist_notices_total = es.persist_notes;
    v.persist_stats_total = es.persist_stats;
    v.stale_chunks_total = es.stale_chunks;
    v.late_reads_total = es.late_reads;
    v.hedges_total = es.hedges;
    v.hedges_denied_total = es.hedges_denied;
    v.meta_records_total = es.meta_records;
    v.meta_unlogged_total = es.meta_unlogged;
    v.meta_waiting = es.meta_waiting;
    v.deletes_waiting = es.dels_waiting;
    v.deletes_resent_total = es.dels_resent;
    v.deletes_dropped_total = es.dels_dropped;
    struct cm_big_cache_stats bc;
    cm_big_cache_stats(&bc);
    v.buffer_cache_bytes = bc.bytes;
    v.buffer_cache_hits_total = bc.hits;
    v.buffer_cache_misses_total = bc.misses;
    v.inflight_requests = (uint64_t)atomic_load(&f->inflight);
    size_t readers, waiting;
    gw_grace_counts(f->grace, &readers, &waiting);
    v.retired_versions_waiting = waiting;
    struct gw_commit_stats cs;
    gw_commit_stats(f->commit, &cs);
    v.commit_batches_total = cs.batches;
    v.commit_ops_total = cs.ops;
    v.commit_queued_ops = cs.queued;
    v.state_epoch = ss.epoch;
    v.controller_up = (uint64_t)ss.controller_up;
    v.state_polls_failed_total = ss.polls_failed;
    v.state_refreshes_total = ss.refreshes;
    gw_forward_stats(q->f->forward, &fs);
    v.forwarded_requests_total = fs.forwarded;
    v.forward_failures_total = fs.failed;
    v.forwarding_requests = fs.running;
    v.tenants_purged_total = ss.tenants_purged;
    v.objects_purged_total = ss.objects_purged;

    cm_buf_init(&b);
    cm_reqstats_expose(f->rs, "gateway", &b);
    cm_reqstats_expose(f->rs_s3, "gateway_s3", &b);
#define GW_FM_EXPOSE_(name, type, help)                                                            \
    cm_prom_family(&b, "shoal_gateway_" #name, type, help);                                        \
    cm_prom_u64(&b, "shoal_gateway_" #name, NULL, v.name);
    GW_FRONT_METRICS(GW_FM_EXPOSE_)
#undef GW_FM_EXPOSE_
    gw_engine_metrics(f->engine, &b);
    if (f->demand != NULL) {
        gw_demand_metrics(f->demand, &b);
    }
    if (f->migrate != NULL) {
        gw_migrate_metrics(f->migrate, &b);
    }
    if (f->scrub != NULL) {
        gw_scrub_metrics(f->scrub, &b);
    }
    gw_handover_metrics(f->handover, &b);
    gw_admit_expose(f->admit, &b);
    cm_prom_family(&b, "shoal_gateway_commit_duration_seconds", "histogram",
                   "Time of one metadata write transaction, fsyncs included");
    cm_prom_hist(&b, "shoal_gateway_commit_duration_seconds", NULL, &cs.time);
    text = cm_buf_take(&b, &len);
    if (q->kind == REQ_NONE && strcmp(q->method, "HEAD") == 0) {
        free(text);
        gw_req_reply_head(q, 200, "text/plain; version=0.0.4; charset=utf-8", len);
        return;
    }
    gw_req_reply(q, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, CM_HTTP_FREE);
}

/* ---- request entry ---- */

static void
handle_handover(struct req *q)
{
    const char *p = cm_http_path(q->r) + HANDOVER_PREFIX_LEN;
    const char *why = "";
    char *end;
    unsigned long id = strtoul(p, &end, 10);
    const void *body;
    size_t len;
    int status;

    if (*p < '1' || *p > '9' || id > UINT32_MAX || strcmp(end, "/handover") != 0) {
        gw_req_fail(q, 404, "not_found", "no such path");
        return;
    }
    if (q->f->handover == NULL) {
        gw_req_fail(q, 503, "unavailable", "this gateway takes no tenants");
        return;
    }
    body = cm_http_body(q->r, &len);
    status = gw_handover_receive(q->f->handover, (uint32_t)id,
                                 cm_http_header(q->r, "Authorization"), body, len, &why);
    if (status == 204) {
        gw_req_reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
        return;
    }
    if (status == 503) {
        cm_http_add_header(q->r, "Retry-After", "1");
    }
    gw_req_fail(q, status,
                status == 401   ? "unauthorized"
                : status == 400 ? "bad_request"
                : status == 409 ? "conflict"
                : status == 503 ? "unavailable"
                                : "internal",
                why);
}

/* An object or LIST request, routed: auth, then its handler. */
static void
dispatch(struct req *q)
{
    struct gw_snap *s = NULL;
    const struct gw_tenant *t = NULL;
    const struct gw_peer *peer;

    if (authenticate(q, &s, &t) != 0) {
        return;
    }
    if (gw_front_elsewhere(q->f, s, t, &peer)) {
        gw_req_forward(q, peer); /* peer's URL copied before s goes */
        gw_snap_unref(s);
        return;
    }
    if (gw_front_hold(q->f, t->id, &q->served)) {
        gw_snap_unref(s);
        cm_http_add_header(q->r, "Retry-After", "1");
        gw_req_fail(q, 503, "unavailable", "the tenant is moving to another gateway: retry");
        return;
    }
    if (q->kind == REQ_LIST) {
        gw_snap_unref(s);
        gw_obj_list(q);
        return;
    }
    if (parse_key(q) != 0) {
        gw_snap_unref(s);
        return;
    }
    switch (q->kind) {
    case REQ_GET:
    case REQ_HEAD:
        gw_snap_unref(s);
        gw_obj_get(q);
        break;
    case REQ_PUT:
        gw_obj_put(q, s, t);
        gw_snap_unref(s);
        break;
    case REQ_DELETE:
        gw_snap_unref(s);
        gw_obj_delete(q);
        break;
    default:
        gw_snap_unref(s);
        gw_req_fail(q, 405, "method_not_allowed", "method not allowed on this path");
        break;
    }
}

/* The state was refreshed for q's unknown key (state thread). */
static void
auth_resumed(struct gw_state_wait *w)
{
    struct req *q = CM_CONTAINER_OF(w, struct req, wait);

    if (q->in_headers) {
        (void)put_headers(q);
    } else {
        dispatch(q);
    }
}

static void
front_request(void *arg, struct cm_http_req *r)
{
    struct gw_front *f = arg;
    enum route rt;
    enum req_kind kind;
    struct req *q;

    if (route_check(f, r, &rt, &kind) != 0 || (q = req_new(f, r, kind)) == NULL) {
        return;
    }
    if (rt == R_HEALTH) {
        if (strcmp(q->method, "HEAD") == 0) {
            gw_req_reply_head(q, 200, "text/plain", 2);
        } else {
            gw_req_reply(q, 200, "text/plain", "ok", 2, CM_HTTP_STATIC);
        }
        return;
    }
    if (rt == R_METRICS) {
        handle_metrics(q);
        return;
    }
    if (atomic_load(&f->draining)) {
        gw_req_fail(q, 503, "unavailable", "gateway is shutting down");
        return;
    }
    if (rt == R_HANDOVER) {
        handle_handover(q);
        return;
    }
    dispatch(q);
}

const struct cm_http_handlers gw_front_handlers = {
    .headers = front_headers,
    .request = front_request,
};

/* ---- life cycle ---- */

int
gw_front_create(const struct gw_front_cfg *cfg, struct gw_meta *meta, struct gw_front **out)
{
    struct gw_front *f = cm_calloc(1, sizeof(*f));
    int rc;

    f->cfg = *cfg;
    f->meta = meta;
    f->rs = cm_reqstats_create(req_names, REQ_N);
    f->rs_s3 = cm_reqstats_create(gw_s3_op_names, GW_S3_OP_COUNT);
    f->grace = gw_grace_create();
    f->admit = gw_admit_create(&cfg->admit);
    if (f->admit == NULL || gw_admit_start(f->admit) != 0) {
        gw_admit_destroy(f->admit);
        gw_grace_destroy(f->grace);
        cm_reqstats_destroy(f->rs);
        free(f);
        return -ENOMEM;
    }
    atomic_init(&f->inflight, 0);
    atomic_init(&f->draining, 0);
    rc = gw_commit_create(meta, &f->commit);
    if (rc != 0) {
        gw_admit_destroy(f->admit);
        gw_grace_destroy(f->grace);
        cm_reqstats_destroy(f->rs);
        cm_reqstats_destroy(f->rs_s3);
        free(f);
        return rc;
    }
    rc = gw_forward_create(cfg->self != NULL ? cfg->self : "", cfg->max_object_size + (1u << 20),
                           &f->forward);
    if (rc != 0) {
        gw_front_destroy(f);
        return rc;
    }
    f->served = gw_grace_create();
    *out = f;
    return 0;
}

static void
track_one(void *arg, const struct gw_pending *p)
{
    struct gw_front *f = arg;

    if (p->tomb) {
        gw_engine_tombstone(f->engine, p->lay, p->key, p->klen);
    } else {
        gw_engine_track(f->engine, p->lay, p->attrs, p->key, p->klen);
    }
}

void
gw_front_attach(struct gw_front *f, struct gw_engine *e, struct gw_state *st)
{
    int rc;

    f->engine = e;
    f->state = st;
    gw_commit_set_state(f->commit, st);
    rc = gw_meta_scan_pending(f->meta, track_one, f);
    if (rc != 0) {
        CM_WARN("cannot scan pending objects err=%s", cm_errname(rc));
    }
}

void
gw_front_attach_pp(struct gw_front *f, struct gw_demand *d, struct gw_migrate *m)
{
    f->demand = d;
    f->migrate = m;
}

void
gw_front_attach_handover(struct gw_front *f, struct gw_handover *h)
{
    f->handover = h;
}

struct gw_grace *
gw_front_served(struct gw_front *f)
{
    return f->served;
}

void
gw_front_attach_scrub(struct gw_front *f, struct gw_scrub *s)
{
    f->scrub = s;
}

struct gw_commit *
gw_front_committer(struct gw_front *f)
{
    return f->commit;
}

struct gw_grace *
gw_front_grace(struct gw_front *f)
{
    return f->grace;
}

void
gw_front_drain(struct gw_front *f, int timeout_ms)
{
    uint64_t deadline = cm_now_ns() + (uint64_t)timeout_ms * 1000000u;

    atomic_store(&f->draining, 1);
    while (atomic_load(&f->inflight) > 0 && cm_now_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&f->inflight) > 0) {
        CM_WARN("shutting down with requests in flight n=%d", atomic_load(&f->inflight));
    }
}

void
gw_front_quiesce(struct gw_front *f)
{
    gw_commit_quiesce(f->commit);
}

void
gw_front_destroy(struct gw_front *f)
{
    if (f == NULL) {
        return;
    }
    gw_forward_destroy(f->forward);
    gw_commit_destroy(f->commit);
    gw_admit_destroy(f->admit);
    if (f->served != NULL) {
        (void)gw_grace_destroy(f->served); /* a hand-over's wait, if any: moot */
    }
    size_t dropped = gw_grace_destroy(f->grace);
    if (dropped > 0) {
        CM_WARN("old versions left undeleted at shutdown (GETs never answered) n=%zu", dropped);
    }
    cm_reqstats_destroy(f->rs);
    cm_reqstats_destroy(f->rs_s3);
    free(f);
}
