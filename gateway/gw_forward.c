/*
 * gw_forward.c - requests sent on to the gateway that owns their tenant
 * (see gw_forward.h).
 */
#include "gw_forward.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_err.h"
#include "cm_http.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "gw_state.h"

#define FORWARD_CONNECT_MS 2000
#define FORWARD_TIMEOUT_MS 120000 /* the whole exchange: a large object both ways */
#define FORWARD_DEAD_MS 3000      /* an owner whose host acknowledges nothing this long is gone */
#define FORWARD_MAX_HEADERS 128

struct gw_forward {
    char self[GW_ID_MAX + 1];
    uint64_t max_body;
    struct cm_httpc_async *client;
    atomic_uint_fast64_t forwarded, failed, running;
};

/* What a job needs while its request is out. */
struct fwd_out {
    struct gw_forward *fw;
    struct gw_fwd_job *j;
    struct cm_httpc_req req;
    struct cm_buf url, lines; /* lines: "Name: value\0" each */
    const char *hv[FORWARD_MAX_HEADERS + 1];
    int ctype, accept; /* the client sent them */
};

static int
name_in(const char *name, size_t len, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Headers that belong to one connection, not to the request: never sent
 * on, nor passed back (with those the relay sets itself). */
static int
hop_by_hop(const char *name, size_t len)
{
    static const char *const names[] = {
        "Connection", "Keep-Alive",     "Transfer-Encoding", "TE",           "Upgrade",
        "Expect",     "Content-Length", "Proxy-Connection",  "X-Request-Id", GW_FORWARDED_BY,
    };

    return name_in(name, len, names, sizeof(names) / sizeof(names[0]));
}

/* Answer headers the relay sets itself. */
static int
relay_own(const char *name, size_t len)
{
    static const char *const names[] = {"Date", "x-amz-request-id", "x-amz-id-2"};

    return name_in(name, len, names, sizeof(names) / sizeof(names[0]));
}

/* "name: value" ("name;" for an empty value: how libcurl sends one) or,
 * drop, "name:" (libcurl then leaves out its own such header). */
static void
add_line(struct fwd_out *o, const char *name, const char *value, int drop)
{
    cm_buf_printf(&o->lines, "%s%s%s", name, drop ? ":" : value[0] != '\0' ? ": " : ";", value);
    cm_buf_append(&o->lines, "", 1);
}

static int
add_request_header(void *arg, const char *name, const char *value)
{
    struct fwd_out *o = arg;

    if (hop_by_hop(name, strlen(name))) {
        return 0;
    }
    o->ctype |= strcasecmp(name, "Content-Type") == 0;
    o->accept |= strcasecmp(name, "Accept") == 0;
    add_line(o, name, value, 0);
    return 0;
}

static void
on_answer_header(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
    struct gw_fwd_job *j = arg;

    if (nlen == 12 && strncasecmp(name, "Content-Type", 12) == 0) {
        snprintf(j->ctype, sizeof(j->ctype), "%.*s", (int)vlen, value);
        return;
    }
    if (nlen == 14 && strncasecmp(name, "Content-Length", 14) == 0) {
        j->clen = strtoull(value, NULL, 10);
        return;
    }
    if (hop_by_hop(name, nlen) || relay_own(name, nlen)) {
        return;
    }
    cm_buf_append(&j->hdrs, name, nlen);
    cm_buf_append(&j->hdrs, "", 1);
    cm_buf_append(&j->hdrs, value, vlen);
    cm_buf_append(&j->hdrs, "", 1);
}

static int
on_answer_body(void *arg, uint64_t length, struct cm_httpc_pause *p)
{
    struct gw_fwd_job *j = arg;

    if (j->on_body == NULL) {
        return 0;
    }
    j->pause = p;
    return j->on_body(j, length);
}

static void
out_free(struct fwd_out *o)
{
    cm_buf_fini(&o->url);
    cm_buf_fini(&o->lines);
    free(o);
}

/* The owner answered, or could not be asked (the client's thread). */
static void
answered(void *arg, int rc, struct cm_httpc_resp *resp)
{
    struct fwd_out *o = arg;
    struct gw_forward *fw = o->fw;
    struct gw_fwd_job *j = o->j;

    if (rc == 0) {
        j->status = resp->status;
        j->body = resp->body;
        j->len = resp->len;
        resp->body = NULL;
        atomic_fetch_add(&fw->forwarded, 1);
    } else {
        CM_WARN("forward failed method=%s to=%s req=%s err=%s", o->req.method, j->base, j->reqid,
                cm_errname(rc));
        atomic_fetch_add(&fw->failed, 1);
    }
    atomic_fetch_sub(&fw->running, 1);
    out_free(o);
    j->done(j, rc);
}

int
gw_forward_create(const char *self, uint64_t max_body, struct gw_forward **out)
{
    struct gw_forward *fw = cm_calloc(1, sizeof(*fw));
    int rc = cm_httpc_async_create(&fw->client);

    if (rc != 0) {
        free(fw);
        return rc;
    }
    snprintf(fw->self, sizeof(fw->self), "%s", self);
    fw->max_body = max_body;
    *out = fw;
    return 0;
}

void
gw_forward_destroy(struct gw_forward *fw)
{
    if (fw == NULL) {
        return;
    }
    cm_httpc_async_destroy(fw->client);
    free(fw);
}

void
gw_forward_submit(struct gw_forward *fw, struct gw_fwd_job *j)
{
    struct cm_http_req *r = j->r;
    const char *method = cm_http_method(r), *qs = cm_http_query_string(r);
    struct fwd_out *o = calloc(1, sizeof(*o));
    size_t blen = 0, nl = 0;
    const void *body = cm_http_body(r, &blen);
    int rc;

    cm_buf_init(&j->hdrs);
    j->status = 0;
    j->ctype[0] = '\0';
    j->clen = 0;
    j->body = NULL;
    j->len = 0;
    j->pause = NULL;
    if (o == NULL) {
        j->done(j, -ENOMEM);
        return;
    }
    o->fw = fw;
    o->j = j;
    cm_buf_init(&o->url);
    cm_buf_init(&o->lines);
    cm_buf_printf(&o->url, "%s%s%s%s", j->base, cm_http_path(r), qs[0] != '\0' ? "?" : "", qs);
    cm_http_headers_each(r, add_request_header, o);
    add_line(o, "X-Request-Id", j->reqid, 0);
    add_line(o, GW_FORWARDED_BY, fw->self, 0);
    /* libcurl would add its own defaults, which the owner would store
     * (Content-Type) or see unsigned: an empty value drops them. */
    if (!o->ctype) {
        add_line(o, "Content-Type", "", 1);
    }
    if (!o->accept) {
        add_line(o, "Accept", "", 1);
    }
    for (size_t off = 0; off < o->lines.len && nl < FORWARD_MAX_HEADERS; nl++) {
        o->hv[nl] = o->lines.p + off;
        off += strlen(o->hv[nl]) + 1;
    }
    o->hv[nl] = NULL;
    if (body == NULL && (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)) {
        body = ""; /* sends Content-Length: 0 */
    }
    o->req = (struct cm_httpc_req){
        .method = method,
        .url = o->url.p,
        .headers = o->hv,
        .body = body,
        .body_len = blen,
        .connect_timeout_ms = FORWARD_CONNECT_MS,
        .timeout_ms = FORWARD_TIMEOUT_MS,
        .dead_peer_ms = FORWARD_DEAD_MS,
        .max_body = fw->max_body,
        .on_header = on_answer_header,
        .on_body = on_answer_body,
        .cb_arg = j,
    };
    atomic_fetch_add(&fw->running, 1);
    rc = cm_httpc_async_do(fw->client, &o->req, answered, o);
    if (rc != 0) {
        atomic_fetch_sub(&fw->running, 1);
        out_free(o);
        j->done(j, rc);
    }
}

void
gw_forward_resume(struct gw_forward *fw, struct gw_fwd_job *j, int rc)
{
    cm_httpc_async_resume(fw->client, j->pause, rc);
}

void
gw_fwd_job_pass_headers(struct gw_fwd_job *j)
{
    for (size_t off = 0; off < j->hdrs.len;) {
        const char *name = j->hdrs.p + off;
        const char *value = name + strlen(name) + 1;

        cm_http_add_header(j->r, name, value);
        off = (size_t)(value - j->hdrs.p) + strlen(value) + 1;
    }
}

void
gw_fwd_job_fini(struct gw_fwd_job *j)
{
    cm_buf_fini(&j->hdrs);
    cm_free_big(j->body);
    j->body = NULL;
}

void
gw_forward_stats(struct gw_forward *fw, struct gw_forward_stats *out)
{
    out->forwarded = atomic_load(&fw->forwarded);
    out->failed = atomic_load(&fw->failed);
    out->running = atomic_load(&fw->running);
}
