/*
 * cm_http.c - HTTP/1.1 server over libmicrohttpd (the only file that
 * includes <microhttpd.h>).
 *
 *   MHD thread:  call 1 (headers)  -> headers() may answer early, or
 *                                     suspend until cm_http_proceed/respond
 *                call 2..n (body)  -> appended to r->body (bounded)
 *                last call         -> request(): respond, or suspend
 *   any thread:  cm_http_respond() -> stores the response, resumes
 *   MHD thread:  call after resume -> queues the stored response
 *
 * Responses are always queued on a later call than the first: queueing on
 * the first call makes libmicrohttpd 0.9.75 close the connection.
 *
 * The URL is left %-encoded (a no-op unescape callback) so callers see
 * exactly what the client sent (a %00 or %2F in a key matters); query
 * values are decoded here on demand. The request line's target is kept as
 * sent (the URI log callback, which also allocates the request), for
 * callers that sign or verify it.
 *
 * Invariant: r->lock guards the answer, suspend_wanted, suspended, held; a
 * suspended request is never freed by MHD (it is not polled), so the thread
 * that responds owns the only live reference until it resumes it.
 */
#include "cm_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_config.h"
#include "cm_err.h"
#include "cm_log.h"

/* Per-connection memory of libmicrohttpd, and how much its read buffer
 * grows when full. An upload arrives in reads of about half the pool (a
 * recv and an epoll_wait each), but libmicrohttpd zeroes the whole pool
 * before every request on a kept-alive connection. 32 KiB (measured in
 * docs/benchmarks.md): against 64 KiB a 1 KiB GET costs the gateway ~7%
 * less CPU, and a 10 MiB PUT the same within the noise. (On a VM where
 * each system call trapped to the hypervisor, 64 KiB had saved 10 MiB PUTs
 * 14% of their CPU.) */
#define HTTP_CONN_MEMORY ((size_t)32 << 10)
#define HTTP_READ_INCREMENT ((size_t)16 << 10)

struct cm_http_kv {
    struct cm_http_kv *next;
    char *value;
};

/* Room for a typical answer's headers inside the request: no allocation. */
#define HTTP_HDRS_INLINE 320

struct cm_http_server {
    struct MHD_Daemon *d;
    struct cm_http_handlers h;
    void *arg;
    uint64_t max_body;
    atomic_int active;   /* requests between their first call and completion */
    atomic_int stopping; /* answers close their connection */
};

struct cm_http_req {
    struct cm_http_server *srv;
    struct MHD_Connection *conn;
    int begun;          /* the first access call came */
    char *uri;          /* the request target as sent */
    const char *method; /* borrowed from MHD for the request's life */
    const char *path;
    char *body;
    size_t body_len, body_cap;
    size_t body_room; /* cm_http_reserve_body() */
    int dispatched;   /* request() has been called */
    int early;        /* answered before the body was read */
    int held;         /* suspended by headers(): no body read yet */
    void *user;
    void (*done_fn)(void *arg); /* cm_http_on_done */
    void *done_arg;
    struct cm_http_kv *query_cache; /* decoded query values handed out */

    pthread_mutex_t lock;
    int suspend_wanted;
    int suspended;

    /* The answer, as recorded by whichever thread responds. The HTTP thread
     * that sends it builds the libmicrohttpd response (queue_stored), so the
     * response's allocations are made and freed on one thread. */
    int answered;
    int head; /* cm_http_respond_head(): announce resp_len, no body */
    unsigned status;
    char *resp_body; /* cm_free_big'd once sent, unless resp_static */
    int resp_static;
    uint64_t resp_len;
    char *hdrs; /* "name\0value\0" pairs in the order added */
    size_t hdrs_len, hdrs_cap;
    char hdrs_inline[HTTP_HDRS_INLINE];
};

static size_t
http_unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
    return strlen(s);
}

static void
kv_free(struct cm_http_kv *kv)
{
    while (kv != NULL) {
        struct cm_http_kv *next = kv->next;
        free(kv->value);
        free(kv);
        kv = next;
    }
}

static void
req_free(struct cm_http_req *r)
{
    if (r == NULL) {
        return;
    }
    if (r->answered && !r->resp_static) {
        cm_free_big(r->resp_body); /* answered, never sent */
    }
    if (r->hdrs != r->hdrs_inline) {
        free(r->hdrs);
    }
    kv_free(r->query_cache);
    free(r->uri);
    cm_free_big(r->body);
    pthread_mutex_destroy(&r->lock);
    if (r->done_fn != NULL) {
        r->done_fn(r->done_arg);
    }
    free(r);
}

static void
http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
               enum MHD_RequestTerminationCode toe)
{
    struct cm_http_server *s = cls;

    if (*con_cls != NULL) {
        req_free(*con_cls);
        *con_cls = NULL;
        atomic_fetch_sub(&s->active, 1);
    }
}

/* Strict decimal, no sign, no suffix. */
static int
parse_len(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (s == NULL || *s == '\0') {
        return CM_E_BADARG;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) {
            return CM_E_BADARG;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

static void
respond_error(struct cm_http_req *r, int status, const char *code, const char *msg)
{
    struct cm_buf b;
    size_t len;
    char *body;

    cm_buf_init(&b);
    cm_buf_printf(&b, "{\"error\":\"%s\",\"message\":\"%s\"}", code, msg);
    body = cm_buf_take(&b, &len);
    cm_http_respond(r, status, "application/json", body, len, CM_HTTP_FREE);
}

static ssize_t
head_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR; /* never called for HEAD */
}

/* The stored answer as a libmicrohttpd response; takes the body. */
static struct MHD_Response *
build_response(struct cm_http_req *r)
{
    struct MHD_Response *resp;

    if (r->head) {
        resp = MHD_create_response_from_callback(r->resp_len, 4096, head_reader, NULL, NULL);
    } else if (r->resp_static) {
        resp = MHD_create_response_from_buffer((size_t)r->resp_len, r->resp_body,
                                               MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback((size_t)r->resp_len, r->resp_body,
                                                                  cm_free_big);
    }
    if (resp == NULL) {
        if (!r->resp_static) {
            cm_free_big(r->resp_body);
        }
        r->resp_body = NULL;
        return NULL; /* out of memory: the caller drops the connection */
    }
    r->resp_body = NULL;
    for (size_t off = 0; off < r->hdrs_len;) {
        const char *name = r->hdrs + off;
        const char *value = name + strlen(name) + 1;

        MHD_add_response_header(resp, name, value);
        off = (size_t)(value + strlen(value) + 1 - r->hdrs);
    }
    if (atomic_load(&r->srv->stopping)) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    return resp;
}

static enum MHD_Result
queue_stored(struct cm_http_req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    int answered;

    pthread_mutex_lock(&r->lock);
    answered = r->answered;
    r->answered = 0;
    pthread_mutex_unlock(&r->lock);
    if (!answered) {
        return MHD_YES; /* woken without an answer: keep waiting */
    }
    resp = build_response(r);
    if (resp == NULL) {
        return MHD_NO; /* out of memory: this request fails, the process goes on */
    }
    ret = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/*
 * An answer decided before the body was read. Without a body the answer
 * waits for the next call (keep-alive stays on). With one, it goes out now:
 * the client may be waiting for "100 Continue" or still sending, and
 * libmicrohttpd then closes the connection instead of reading a body
 * nobody wants.
 */
static enum MHD_Result
answer_early(struct cm_http_req *r)
{
    uint64_t cl = 0;
    int has_body = cm_http_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL ||
                   (cm_http_content_length(r, &cl) == 0 && cl > 0);

    r->early = 1;
    return has_body ? queue_stored(r) : MHD_YES;
}

/* After headers() let the request go on: room for its body. */
static enum MHD_Result
accept_body(struct cm_http_req *r)
{
    struct cm_http_server *s = r->srv;
    uint64_t cl;

    if (cm_http_content_length(r, &cl) == 0) {
        if (cl > s->max_body) {
            respond_error(r, 413, "too_large", "request body too large");
            return answer_early(r);
        }
        if (cl > 0) {
            size_t cap = r->body_room > cl ? r->body_room : (size_t)cl;

            r->body = cm_malloc_big(cap);
            if (r->body == NULL) {
                respond_error(r, 503, "unavailable", "out of memory for the request body");
                return answer_early(r);
            }
            r->body_cap = cap;
        }
    }
    return MHD_YES;
}

/* A request begins: libmicrohttpd hands what this returns to every later
 * call as its request context (also when the request then fails to
 * parse: http_completed frees it either way). */
static void *
http_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct cm_http_server *s = cls;
    struct cm_http_req *r = cm_calloc(1, sizeof(*r));

    r->srv = s;
    r->conn = c;
    r->uri = cm_strdup(uri != NULL ? uri : "");
    pthread_mutex_init(&r->lock, NULL);
    atomic_fetch_add(&s->active, 1);
    return r;
}

static enum MHD_Result
http_first_call(struct cm_http_server *s, struct MHD_Connection *c, const char *url,
                const char *method, void **con_cls)
{
    struct cm_http_req *r = *con_cls;
    int early;

    if (r == NULL) {
        r = http_uri_log(s, url, c);
        *con_cls = r;
    }
    r->begun = 1;
    r->conn = c;
    r->method = method;
    r->path = url;

    if (s->h.headers == NULL) {
        return accept_body(r);
    }
    early = s->h.headers(s->arg, r);
    pthread_mutex_lock(&r->lock);
    early = early || r->answered; /* answered from another thread meanwhile */
    if (!early && r->suspend_wanted) {
        /* No body is read until cm_http_proceed; libmicrohttpd calls again
         * (as a first call) once resumed. */
        r->suspend_wanted = 0;
        r->suspended = 1;
        r->held = 1;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&r->lock);
    if (early) {
        return answer_early(r);
    }
    return r->held ? MHD_YES : accept_body(r);
}

static int
body_append(struct cm_http_req *r, const char *data, size_t n)
{
    if (r->body_len + n > r->srv->max_body) {
        return CM_E_TOOBIG;
    }
    if (r->body_len + n > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;

        while (cap < r->body_len + n) {
            cap *= 2;
        }
        char *body = realloc(r->body, cap); /* sized by the client: fails alone */

        if (body == NULL) {
            return -ENOMEM;
        }
        r->body = body;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    return 0;
}

static enum MHD_Result
http_dispatch(struct cm_http_req *r)
{
    struct cm_http_server *s = r->srv;
    int suspend = 0;

    r->dispatched = 1;
    s->h.request(s->arg, r);

    pthread_mutex_lock(&r->lock);
    if (!r->answered && r->suspend_wanted) {
        r->suspended = 1;
        MHD_suspend_connection(r->conn);
        suspend = 1;
    }
    pthread_mutex_unlock(&r->lock);
    if (suspend) {
        return MHD_YES;
    }
    if (!r->answered) {
        CM_ERROR("http handler returned without an answer method=%s path=%s", r->method, r->path);
        respond_error(r, 500, "internal", "no response");
    }
    return queue_stored(r);
}

static enum MHD_Result
http_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
            const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct cm_http_server *s = cls;
    struct cm_http_req *r = *con_cls;

    if (r == NULL || !r->begun) {
        return http_first_call(s, c, url, method, con_cls);
    }
    if (r->held) {
        /* Resumed: answered (early), or go on. The call may already carry
         * the first bytes of the body: they are taken below, since
         * libmicrohttpd calls again only when more bytes arrive, and a
         * client that has sent its whole body sends none (the request
         * then hung until the connection timeout). */
        int answered;
        enum MHD_Result ret;

        pthread_mutex_lock(&r->lock);
        r->held = 0;
        answered = r->answered;
        pthread_mutex_unlock(&r->lock);
        if (answered) {
            return answer_early(r);
        }
        ret = accept_body(r);
        if (ret != MHD_YES || r->early || *upload_data_size == 0) {
            return ret;
        }
    }
    if (r->early) {
        /* Swallow a small body so the connection can be kept alive. */
        if (*upload_data_size > 0 && r->body_len + *upload_data_size <= 65536) {
            r->body_len += *upload_data_size;
            *upload_data_size = 0;
            return MHD_YES;
        }
        return queue_stored(r);
    }
    if (*upload_data_size > 0) {
        int rc = body_append(r, upload_data, *upload_data_size);

        if (rc != 0) {
            r->early = 1;
            if (rc == CM_E_TOOBIG) {
                respond_error(r, 413, "too_large", "request body too large");
            } else {
                respond_error(r, 503, "unavailable", "out of memory for the request body");
            }
            return queue_stored(r);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!r->dispatched) {
        return http_dispatch(r);
    }
    return queue_stored(r); /* resumed */
}

/* Accept policy: none once stopping. */
static enum MHD_Result
http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct cm_http_server *s = cls;

    (void)addr;
    (void)addrlen;
    return atomic_load(&s->stopping) ? MHD_NO : MHD_YES;
}

int
cm_http_start(const struct cm_http_cfg *cfg, const struct cm_http_handlers *h, void *arg,
              struct cm_http_server **out)
{
    struct cm_http_server *s;
    struct sockaddr_in sa;
    char host[64];
    uint16_t port;
    unsigned threads = cfg->threads ? cfg->threads : 2;
    int err;

    err = cm_parse_addr(cfg->addr, host, sizeof(host), &port);
    if (err != 0) {
        return err;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        return CM_E_BADARG;
    }
    s = cm_calloc(1, sizeof(*s));
    s->h = *h;
    s->arg = arg;
    s->max_body = cfg->max_body;
    atomic_init(&s->active, 0);
    atomic_init(&s->stopping, 0);
    s->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO,
        0, http_accept, s, http_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, 20000u,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 60u,
        MHD_OPTION_NOTIFY_COMPLETED, http_completed, s, MHD_OPTION_URI_LOG_CALLBACK, http_uri_log,
        s, MHD_OPTION_UNESCAPE_CALLBACK, http_unescape_none, NULL,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY,
        MHD_OPTION_CONNECTION_MEMORY_INCREMENT, HTTP_READ_INCREMENT, MHD_OPTION_END);
    if (s->d == NULL) {
        err = errno ? -errno : -EADDRINUSE;
        CM_ERROR("http listen failed addr=%s err=%s", cfg->addr, cm_strerror(err));
        free(s);
        return err;
    }
    *out = s;
    return 0;
}

void
cm_http_stop(struct cm_http_server *s, int timeout_ms)
{
    int waited;

    if (s == NULL) {
        return;
    }
    /* No new connections (http_accept closes them as they come);
     * requests already begun (still uploading, running or suspended)
     * finish, and their answers close the connection. Not
     * MHD_quiesce_daemon: with epoll worker threads it races with the
     * workers' own removal of the listening socket from their epoll sets
     * and aborts the process ("Failed to remove listen FD from epoll
     * set"), which a controller stopped under tests did. */
    atomic_store(&s->stopping, 1);
    for (waited = 0; waited < timeout_ms && atomic_load(&s->active) > 0; waited += 10) {
        usleep(10000);
    }
    if (atomic_load(&s->active) > 0) {
        CM_WARN("http stop with requests in flight n=%d", atomic_load(&s->active));
    }
    MHD_stop_daemon(s->d);
    free(s);
}

const char *
cm_http_method(const struct cm_http_req *r)
{
    return r->method;
}

const char *
cm_http_path(const struct cm_http_req *r)
{
    return r->path;
}

/* application/x-www-form-urlencoded value decoding; a bad escape is kept
 * as is. A %00 ends the value (C strings). */
static char *
query_decode(const char *raw)
{
    char *out = cm_malloc(strlen(raw) + 1);
    char *o = out;

    for (const char *p = raw; *p != '\0'; p++) {
        if (*p == '+') {
            *o++ = ' ';
        } else if (*p == '%' && cm_hexval(p[1]) >= 0 && cm_hexval(p[2]) >= 0) {
            *o++ = (char)(cm_hexval(p[1]) * 16 + cm_hexval(p[2]));
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

const char *
cm_http_query(const struct cm_http_req *cr, const char *name)
{
    struct cm_http_req *r = (struct cm_http_req *)cr; /* caches decoded values */
    struct cm_http_kv *kv;
    const char *raw;
    int present;

    present = MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name),
                                            &raw, NULL) == MHD_YES;
    if (!present) {
        return NULL;
    }
    kv = cm_calloc(1, sizeof(*kv));
    kv->value = query_decode(raw != NULL ? raw : "");
    pthread_mutex_lock(&r->lock);
    kv->next = r->query_cache;
    r->query_cache = kv;
    pthread_mutex_unlock(&r->lock);
    return kv->value;
}

const char *
cm_http_query_string(const struct cm_http_req *r)
{
    const char *q = r->uri != NULL ? strchr(r->uri, '?') : NULL;

    return q != NULL ? q + 1 : "";
}

struct each_ctx {
    int (*cb)(void *arg, const char *name, const char *value);
    void *arg;
};

static enum MHD_Result
each_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct each_ctx *e = cls;

    return e->cb(e->arg, key, value != NULL ? value : "") == 0 ? MHD_YES : MHD_NO;
}

void
cm_http_headers_each(const struct cm_http_req *r,
                     int (*cb)(void *arg, const char *name, const char *value), void *arg)
{
    struct each_ctx e = {cb, arg};

    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, each_header, &e);
}

const char *
cm_http_header(const struct cm_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int
cm_http_content_length(const struct cm_http_req *r, uint64_t *len)
{
    const char *v = cm_http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);

    if (v == NULL || parse_len(v, len) != 0) {
        return -ENOENT;
    }
    return 0;
}

const void *
cm_http_body(const struct cm_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body;
}

void
cm_http_reserve_body(struct cm_http_req *r, size_t room)
{
    r->body_room = room;
}

void *
cm_http_take_body(struct cm_http_req *r, size_t *len, size_t *cap)
{
    void *b = r->body;

    *len = r->body_len;
    *cap = r->body_cap;
    r->body = NULL;
    r->body_len = 0;
    r->body_cap = 0;
    return b;
}

void
cm_http_set_user(struct cm_http_req *r, void *user)
{
    r->user = user;
}

void *
cm_http_user(const struct cm_http_req *r)
{
    return r->user;
}

/* Appends a header to the answer; r->lock held. */
static void
hdr_append(struct cm_http_req *r, const char *name, const char *value)
{
    size_t nl = strlen(name) + 1, vl = strlen(value) + 1;

    if (r->hdrs == NULL) {
        r->hdrs = r->hdrs_inline;
        r->hdrs_cap = sizeof(r->hdrs_inline);
    }
    if (r->hdrs_len + nl + vl > r->hdrs_cap) {
        size_t cap = 2 * (r->hdrs_len + nl + vl);
        char *h = cm_malloc(cap);

        memcpy(h, r->hdrs, r->hdrs_len);
        if (r->hdrs != r->hdrs_inline) {
            free(r->hdrs);
        }
        r->hdrs = h;
        r->hdrs_cap = cap;
    }
    memcpy(r->hdrs + r->hdrs_len, name, nl);
    memcpy(r->hdrs + r->hdrs_len + nl, value, vl);
    r->hdrs_len += nl + vl;
}

void
cm_http_add_header(struct cm_http_req *r, const char *name, const char *value)
{
    pthread_mutex_lock(&r->lock);
    hdr_append(r, name, value);
    pthread_mutex_unlock(&r->lock);
}

void
cm_http_suspend(struct cm_http_req *r)
{
    pthread_mutex_lock(&r->lock);
    r->suspend_wanted = 1;
    pthread_mutex_unlock(&r->lock);
}

void
cm_http_on_done(struct cm_http_req *r, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&r->lock);
    r->done_fn = fn;
    r->done_arg = arg;
    pthread_mutex_unlock(&r->lock);
}

void
cm_http_proceed(struct cm_http_req *r)
{
    int resume = 0;

    pthread_mutex_lock(&r->lock);
    r->suspend_wanted = 0; /* headers() still runs: it will not suspend */
    if (r->suspended) {
        r->suspended = 0;
        resume = 1;
    }
    pthread_mutex_unlock(&r->lock);
    if (resume) {
        MHD_resume_connection(r->conn);
    }
}

/* Records the answer and resumes r if it waits for one; the HTTP thread
 * then queues it (queue_stored). body per resp_static. */
static void
store_response(struct cm_http_req *r, int status, const char *content_type, int head, void *body,
               int is_static, uint64_t len)
{
    int resumed = 0;

    pthread_mutex_lock(&r->lock);
    if (r->answered) {
        CM_ERROR("http second response dropped status=%d path=%s", status, r->path);
        pthread_mutex_unlock(&r->lock);
        if (!is_static) {
            cm_free_big(body);
        }
        return;
    }
    if (content_type != NULL) {
        hdr_append(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    }
    r->answered = 1;
    r->head = head;
    r->status = (unsigned)status;
    r->resp_body = body;
    r->resp_static = is_static;
    r->resp_len = len;
    if (r->suspended) {
        r->suspended = 0;
        resumed = 1;
    }
    pthread_mutex_unlock(&r->lock);
    if (resumed) {
        /* Only this thread could resume r, and r can't be freed before it
         * is resumed. */
        MHD_resume_connection(r->conn);
    }
}

void
cm_http_respond(struct cm_http_req *r, int status, const char *content_type, void *body, size_t len,
                enum cm_http_mem mem)
{
    if (mem == CM_HTTP_COPY) {
        void *copy = len ? cm_malloc(len) : NULL;

        if (len) {
            memcpy(copy, body, len);
        }
        body = copy;
    }
    store_response(r, status, content_type, 0, body, mem == CM_HTTP_STATIC, len);
}

void
cm_http_respond_head(struct cm_http_req *r, int status, const char *content_type, uint64_t len)
{
    store_response(r, status, content_type, 1, NULL, 1, len);
}
