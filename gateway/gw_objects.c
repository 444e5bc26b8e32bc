/*
 * gw_objects.c - the object handlers of the tenant API (see gw_front_impl.h):
 * GET and HEAD (layout read on the HTTP thread, chunks by the engine), PUT
 * (engine, then the committer), DELETE (the committer), LIST (one LMDB
 * read transaction), and what the committer's answers set off: deleting
 * the chunks of replaced and deleted versions once no GET can still read
 * them (gw_grace).
 *
 * Large GETs and PUTs (--admit-min-bytes and up) enter the engine through
 * the admission queue (gw_admit.c): a GET before its chunks are read, a
 * PUT as soon as its headers are in, before its body is read (the
 * connection is held meanwhile: the body waits in the client and the
 * kernel, not in the gateway).
 *
 * Threads: handlers on HTTP threads (or on the state thread, for a request
 * that waited for a state refresh); get_done and put_done on the engine
 * thread; commit_done on the committer; get_admitted and put_admitted on
 * the admission thread (gw_admit.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_admit.h"
#include "gw_demand.h"
#include "gw_front_impl.h"
#include "gw_grace.h"
#include "gw_meta.h"
#include "gw_oread.h"
#include "gw_state.h"
#include "gw_stripe.h"

uint8_t
gw_front_put_k(const struct gw_front *f, const struct gw_tenant *t, uint64_t size)
{
    return size < f->cfg.small_threshold ? 1 : t->k;
}

/* The PUT checks that must happen before the body is read. */
static int
put_precheck(struct req *q)
{
    uint64_t clen;

    if (cm_http_content_length(q->r, &clen) != 0) {
        gw_req_fail(q, 411, "length_required", "PUT needs a Content-Length");
        return -1;
    }
    if (clen > q->f->cfg.max_object_size) {
        gw_req_fail(q, 413, "too_large", "object larger than max_object_size");
        return -1;
    }
    q->bytes = clen;
    return 0;
}

/* ---- admission of large requests (gw_admit.c) ---- */

int
gw_front_admits(const struct gw_front *f, uint64_t bytes)
{
    return f->cfg.admit.max_bytes != 0 && bytes >= f->cfg.admit.min_bytes;
}

void
gw_front_admitted(struct cm_http_req *r, struct gw_admit_ticket *t)
{
    if (t != NULL) {
        cm_http_on_done(r, gw_admit_done, t);
        cm_http_set_user(r, t);
    }
}

int
gw_front_admit(struct gw_front *f, struct cm_http_req *r, uint32_t tenant, uint64_t bytes,
               int write, gw_admit_cb cb, void *arg)
{
    struct gw_admit_ticket *t;
    int rc = gw_admit_enter(f->admit, tenant, bytes, write, cm_now_ns(), cb, arg, &t);

    if (rc > 0) {
        gw_front_admitted(r, t);
    }
    return rc;
}

struct gw_admit_ticket *
gw_front_ticket_hold(struct cm_http_req *r)
{
    struct gw_admit_ticket *t = cm_http_user(r);

    gw_admit_hold(t);
    return t;
}

/* The answer to a large request that waited --admit-wait-ms in vain, or
 * that found no memory for its ticket. */
static void
admit_fail(struct req *q)
{
    cm_http_add_header(q->r, "Retry-After", "1");
    gw_req_fail(q, 503, "unavailable", "too many large requests in flight, retry later");
}

/* Enters q (suspended) with bytes (write: gw_admit_enter's); 1: go on
 * now, 0: waits and cb(arg) follows (it may run before this returns), -1:
 * answered 503. */
static int
admit(struct req *q, uint64_t bytes, int write, gw_admit_cb cb, void *arg)
{
    int rc;

    gw_req_suspend(q); /* before: the admission may come at once, elsewhere */
    rc = gw_front_admit(q->f, q->r, q->tenant, bytes, write, cb, arg);
    if (rc < 0) {
        admit_fail(q);
        return -1;
    }
    return rc;
}

/* A large PUT admitted after a wait, its body not read yet: it can come
 * now (as in put_headers), or the PUT is answered 503 unread. */
static void
put_admitted(void *arg, struct gw_admit_ticket *t, int status)
{
    struct req *q = arg;

    if (status != 0) {
        admit_fail(q);
        return;
    }
    gw_front_admitted(q->r, t);
    gw_req_proceed(q);
}

int
gw_obj_put_headers(struct req *q, const struct gw_tenant *t)
{
    if (put_precheck(q) != 0) {
        return -1;
    }
    /* Room to pad the last stripe in place: the engine need not copy it. */
    cm_http_reserve_body(
        q->r, gw_engine_put_room(q->f->engine, gw_front_put_k(q->f, t, q->bytes), q->bytes));
    if (!gw_front_admits(q->f, q->bytes)) {
        return 0;
    }
    /* Its ticket is held until the answer is sent and the engine freed
     * its bytes (persisted): the body, its stripes and the persistent
     * buffer are all under the bound (the last as buffered bytes, which
     * only writes wait for). */
    switch (admit(q, q->bytes, GW_ADMIT_WRITE, put_admitted, q)) {
    case 1:
        return 0;
    case 0:
        return 1;
    default:
        return -1;
    }
}

/* ---- GET / HEAD ---- */

void
gw_front_note_read(struct gw_front *f, uint32_t tenant, const char *key, size_t klen,
                   const struct gw_layout *l, uint64_t off, uint64_t len, uint64_t got,
                   uint64_t t0)
{
    if (f->demand != NULL && l->nstripes > 0 && len > 0) {
        /* What the read asked of the nodes: k chunks (one copy) per stripe. */
        uint64_t sb = (uint64_t)l->k * l->chunk_size;
        uint64_t stripes = sb ? (off + len - 1) / sb - off / sb + 1 : 1;
        gw_demand_note(f->demand, tenant, key, klen, stripes * l->k, got, cm_now_ns() - t0);
    }
}

void
gw_front_note_write(struct gw_front *f, uint32_t tenant, const char *key, size_t klen,
                    const struct gw_layout *l, uint64_t t0)
{
    if (f->demand != NULL) {
        uint64_t chunks = (uint64_t)l->nstripes * gw_stripe_n(l);
        gw_demand_note(f->demand, tenant, key, klen, chunks, chunks * l->chunk_size,
                       cm_now_ns() - t0);
    }
}

static void
get_done(void *arg, int status, void *buf, size_t len)
{
    struct req *q = arg;

    gw_front_note_read(q->f, q->tenant, q->key, q->klen, &q->lay, q->off, q->len,
                       status == 0 ? len : 0, q->t0);
    if (status != 0) {
        cm_free_big(buf);
        gw_req_fail_status(q, status);
        return;
    }
    if (len != q->len) {
        cm_free_big(buf);
        CM_ERROR("engine returned a short read req=%s tenant=%u want=%llu got=%zu", q->id,
                 q->tenant, (unsigned long long)q->len, len);
        gw_req_fail(q, 500, "internal", "internal error, see the gateway log");
        return;
    }
    q->bytes = len;
    gw_req_etag_version(q, &q->lay);
    cm_http_add_header(q->r, "Accept-Ranges", "bytes");
    if (q->partial) {
        char cr[96];
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                 (unsigned long long)(q->off + q->len - 1), (unsigned long long)q->lay.size);
        cm_http_add_header(q->r, "Content-Range", cr);
    }
    gw_req_reply(q, q->partial ? 206 : 200, "application/octet-stream", buf, len, CM_HTTP_FREE);
}

static void
get_admitted(void *arg, struct gw_admit_ticket *t, int status)
{
    struct req *q = arg;

    if (status != 0) {
        admit_fail(q);
        return;
    }
    gw_front_admitted(q->r, t);
    gw_oread(q->f->engine, &q->lay, q->parts, q->nparts, q->off, q->len, get_done, q);
}

void
gw_obj_get(struct req *q)
{
    struct gw_front *f = q->f;
    const char *range = cm_http_header(q->r, "Range");
    struct gw_meta_obj *obj = malloc(sizeof(*obj));
    char cr[96];
    int rc;

    if (q->kind == REQ_GET) {
        q->grace = gw_grace_enter(f->grace); /* before the read: see gw_front_retire() */
    }
    rc = obj == NULL ? -ENOMEM : gw_meta_get_obj(f->meta, q->tenant, q->key, q->klen, obj);
    if (obj != NULL) {
        q->lay = obj->lay;
        q->parts = obj->parts; /* q owns them now */
        q->nparts = obj->a.nparts;
        free(obj);
    }
    if (rc == CM_E_NOTFOUND) {
        gw_req_fail(q, 404, "not_found", "no such object");
        return;
    }
    if (rc != 0) {
        gw_req_fail_status(q, rc);
        return;
    }
    switch (gw_parse_range(range, q->lay.size, &q->off, &q->len)) {
    case GW_RANGE_NONE:
        q->off = 0;
        q->len = q->lay.size;
        break;
    case GW_RANGE_OK:
        q->partial = 1;
        break;
    case GW_RANGE_UNSAT:
        snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)q->lay.size);
        cm_http_add_header(q->r, "Content-Range", cr);
        gw_req_fail(q, 416, "range_not_satisfiable", "range outside the object");
        return;
    case GW_RANGE_BAD:
        gw_req_fail(q, 400, "bad_request", "bad Range header (one bytes=a-b range)");
        return;
    }
    if (q->kind == REQ_HEAD || q->len == 0) {
        gw_req_etag_version(q, &q->lay);
        cm_http_add_header(q->r, "Accept-Ranges", "bytes");
        if (q->partial) {
            snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)q->off,
                     (unsigned long long)(q->off + q->len - 1), (unsigned long long)q->lay.size);
            cm_http_add_header(q->r, "Content-Range", cr);
        }
        if (q->kind == REQ_HEAD) {
            gw_req_reply_head(q, q->partial ? 206 : 200, "application/octet-stream", q->len);
        } else {
            gw_req_reply(q, 200, "application/octet-stream", NULL, 0, CM_HTTP_STATIC);
        }
        return;
    }
    if (admit(q, q->len, GW_ADMIT_READ, get_admitted, q) > 0) {
        gw_oread(f->engine, &q->lay, q->parts, q->nparts, q->off, q->len, get_done, q);
    }
}

/* ---- PUT / DELETE: the committer answers ---- */

struct retired {
    struct gw_front *f;
    struct gw_meta_old old;
};

static void
retire_run(void *arg)
{
    struct retired *r = arg;

    if (!gw_layout_record_only(&r->old.lay)) {
        gw_engine_delete(r->f->engine, &r->old.lay, r->f->cfg.delete_delay_ms);
    }
    for (uint32_t i = 0; i < r->old.nparts; i++) {
        gw_engine_delete(r->f->engine, &r->old.parts[i], r->f->cfg.delete_delay_ms);
    }
    gw_meta_old_reset(&r->old);
    free(r);
}

/* The commit happened before this call, and a GET enters before it reads:
 * a GET that enters later reads the new layout. Out of memory, the chunks
 * stay (orphans, as when the gateway stops before their delete). */
void
gw_front_retire(struct gw_front *f, struct gw_meta_old *old)
{
    struct retired *r;

    if (old->had && old->key != NULL) {
        /* a delete: its tombstone goes to the nodes' insertion logs */
        gw_engine_tombstone(f->engine, &old->lay, old->key, old->klen);
    }
    if (!old->had || (gw_layout_record_only(&old->lay) && old->nparts == 0)) {
        gw_meta_old_reset(old);
        return;
    }
    r = malloc(sizeof(*r));
    if (r != NULL) {
        r->f = f;
        r->old = *old;
        memset(old, 0, sizeof(*old)); /* r owns the parts */
    }
    if (r == NULL || gw_grace_defer(f->grace, retire_run, r) != 0) {
        CM_WARN("old version left undeleted object=%016llx tenant=%u err=ENOMEM",
                (unsigned long long)(r != NULL ? r->old.lay.object : old->lay.object),
                r != NULL ? r->old.lay.tenant : old->lay.tenant);
        if (r != NULL) {
            gw_meta_old_reset(&r->old);
            free(r);
        } else {
            gw_meta_old_reset(old);
        }
    }
}

/* The committer's answer to a PUT or DELETE (committer thread). */
static void
commit_done(struct gw_commit_op *op)
{
    struct req *q = CM_CONTAINER_OF(op, struct req, commit);
    struct gw_front *f = q->f;
    struct gw_meta_old old = op->old; /* op is freed with q, once q is answered */

    memset(&op->old, 0, sizeof(op->old));
    if (op->rc != 0) {
        gw_meta_old_reset(&old);
    }

    if (op->kind == COMMIT_DELETE && op->rc == 0) {
        gw_req_reply(q, 204, NULL, NULL, 0, CM_HTTP_STATIC);
    } else if (op->kind == COMMIT_DELETE && op->rc == CM_E_NOTFOUND) {
        gw_req_fail(q, 404, "not_found", "no such object");
    } else if (op->rc == 0) {
        gw_engine_committed(f->engine, &op->lay, &op->attrs, q->key, q->klen);
        gw_req_etag_version(q, &op->lay);
        gw_req_reply(q, 201, NULL, NULL, 0, CM_HTTP_STATIC);
    } else {
        if (op->kind == COMMIT_PUT) {
            gw_engine_delete(f->engine, &op->lay, 0);
        }
        if (op->rc == GW_COMMIT_TENANT_GONE) {
            gw_req_fail(q, 401, "unauthorized", "tenant was deleted");
        } else {
            gw_req_fail_status(q, op->rc);
        }
    }
    gw_front_retire(f, &old);
}

static void
put_done(void *arg, int status, const struct gw_layout *layout)
{
    struct req *q = arg;

    if (status != 0) {
        gw_req_fail_status(q, status);
        return;
    }
    gw_front_note_write(q->f, q->tenant, q->key, q->klen, layout, q->t0);
    q->commit.kind = COMMIT_PUT;
    q->commit.key = q->key;
    q->commit.klen = q->klen;
    /* The engine keeps changing its layout: the commit takes a copy. Out
     * of memory, the version is recorded with its tags unknown. */
    (void)gw_layout_copy(&q->commit.lay, layout);
    q->commit.lay.tenant = q->tenant;
    q->commit.done = commit_done;
    gw_commit_queue(q->f->commit, &q->commit);
}

void
gw_front_on_layout(void *arg, const struct gw_layout *layout, enum gw_report what)
{
    struct gw_front *f = arg;

    if (gw_commit_update(f->commit, layout, what) != 0) {
        CM_WARN("layout update dropped object=%016llx tenant=%u report=%d err=ENOMEM",
                (unsigned long long)layout->object, layout->tenant, (int)what);
    }
}

void
gw_obj_put(struct req *q, struct gw_snap *s, const struct gw_tenant *t)
{
    struct gw_front *f = q->f;
    const uint32_t *row;
    size_t nrow, len, cap;
    void *body;

    if (put_precheck(q) != 0) {
        return;
    }
    body = cm_http_take_body(q->r, &len, &cap);
    if (len != q->bytes) {
        cm_free_big(body);
        gw_req_fail(q, 400, "bad_request", "body shorter than Content-Length");
        return;
    }
    gw_snap_row(s, t, (uint32_t)(cm_hash64(q->key, q->klen, t->id) % s->partitions), &row, &nrow);
    if (nrow == 0) {
        cm_free_big(body);
        gw_req_fail(q, 503, "unavailable", "no storage nodes known for this partition");
        return;
    }
    if (body == NULL) {
        cap = 0;
        if ((body = malloc(1)) == NULL) { /* the engine takes ownership of a real buffer */
            gw_req_fail_status(q, -ENOMEM);
            return;
        }
    }
    gw_req_suspend(q);
    /* A large one was admitted before its body came (gw_obj_put_headers):
     * its bytes stay admitted until the engine frees them too. */
    gw_engine_put(f->engine, t->id, row, nrow, gw_front_put_k(f, t, len), t->m, body, len, cap,
                  put_done, q, gw_admit_done, gw_front_ticket_hold(q->r));
}

void
gw_obj_delete(struct req *q)
{
    q->commit.kind = COMMIT_DELETE;
    q->commit.tenant = q->tenant;
    q->commit.key = q->key;
    q->commit.klen = q->klen;
    q->commit.done = commit_done;
    gw_req_suspend(q);
    gw_commit_queue(q->f->commit, &q->commit);
}

/* ---- LIST ---- */

struct list_out {
    json_t *arr;
    int nomem; /* an entry could not be added: the listing is not whole */
    const char *last;
    size_t last_len;
    char lastbuf[GW_KEY_MAX];
};

static void
list_one(void *arg, const char *key, size_t klen, const struct gw_layout *l)
{
    struct list_out *o = arg;
    char etag[24];
    json_t *obj = json_object();

    snprintf(etag, sizeof(etag), "%016llx", (unsigned long long)l->etag);
    if (obj == NULL || json_object_set_new(obj, "key", json_stringn(key, klen)) != 0 ||
        json_object_set_new(obj, "size", json_integer((json_int_t)l->size)) != 0 ||
        json_object_set_new(obj, "etag", json_string(etag)) != 0 ||
        json_object_set_new(obj, "version", json_integer((json_int_t)l->version)) != 0) {
        json_decref(obj);
        o->nomem = 1;
        return;
    }
    if (json_array_append_new(o->arr, obj) != 0) { /* it took obj */
        o->nomem = 1;
        return;
    }
    memcpy(o->lastbuf, key, klen);
    o->last = o->lastbuf;
    o->last_len = klen;
}

void
gw_obj_list(struct req *q)
{
    struct gw_list_query lq;
    struct list_out o = {0};
    const char *why = NULL;
    json_t *root;
    char *text;
    int more = 0, rc;

    if (gw_parse_list_query(cm_http_query(q->r, "prefix"), cm_http_query(q->r, "after"),
                            cm_http_query(q->r, "limit"), &lq, &why) != 0) {
        gw_req_fail(q, 400, "bad_request", why);
        return;
    }
    o.arr = json_array();
    rc = gw_meta_list(q->f->meta, q->tenant, lq.prefix, lq.prefix_len, lq.after, lq.after_len,
                      lq.limit, list_one, &o, &more);
    if (rc != 0 || o.nomem) {
        json_decref(o.arr);
        gw_req_fail_status(q, rc != 0 ? rc : -ENOMEM);
        return;
    }
    root = json_object();
    text = NULL;
    if (root != NULL && json_object_set_new(root, "objects", o.arr) == 0 &&
        json_object_set_new(root, "next",
                            more && o.last != NULL ? json_stringn(o.last, o.last_len)
                                                   : json_null()) == 0) {
        text = json_dumps(root, JSON_COMPACT);
    } else if (root == NULL) {
        json_decref(o.arr);
    }
    json_decref(root);
    if (text == NULL) {
        gw_req_fail_status(q, -ENOMEM); /* encoding what was listed only needs memory */
        return;
    }
    gw_req_reply(q, 200, "application/json", text, strlen(text), CM_HTTP_FREE);
}
