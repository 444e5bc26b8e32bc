/*
 * cm_httpc.c - HTTP client (the only file including <curl/curl.h>):
 * control requests, the s3 COS backend's SigV4 requests
 * (CURLOPT_AWS_SIGV4), and the gateway's forwarded requests (the
 * asynchronous client: libcurl's multi interface, every transfer on one
 * thread, a pool of connections reused across them).
 *
 * Each thread keeps one easy handle (reset between requests), so its
 * connection cache lives on and a COS worker's puts reuse one connection
 * (a TLS handshake per chunk would cost more than the chunk). The handle
 * is freed when the thread exits. curl_global_init is not thread-safe, so
 * it runs exactly once under pthread_once. CURLOPT_NOSIGNAL keeps libcurl
 * from using SIGALRM for DNS timeouts in threaded daemons.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_httpc.h"
#include "cm_log.h"

#define HTTPC_MAX_BODY ((size_t)64 << 20)

static pthread_once_t httpc_once = PTHREAD_ONCE_INIT;
static CURLcode httpc_init_rc;
static pthread_key_t httpc_handle_key;

static void
httpc_handle_free(void *h)
{
    curl_easy_cleanup(h);
}

static void
httpc_global_init(void)
{
    httpc_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (httpc_init_rc == CURLE_OK && pthread_key_create(&httpc_handle_key, httpc_handle_free)) {
        httpc_init_rc = CURLE_FAILED_INIT;
    }
}

/* This thread's handle, reset; NULL if none can be had. */
static CURL *
httpc_handle(void)
{
    CURL *c = pthread_getspecific(httpc_handle_key);

    if (c != NULL) {
        curl_easy_reset(c);
        return c;
    }
    c = curl_easy_init();
    if (c != NULL && pthread_setspecific(httpc_handle_key, c) != 0) {
        curl_easy_cleanup(c);
        c = NULL;
    }
    return c;
}

struct httpc_sink {
    struct cm_buf buf;
    size_t max;
    int overflow;
    /* the asynchronous client's: the request's on_body, once */
    const struct cm_httpc_req *req;
    CURL *c;
    struct cm_httpc_pause *pause; /* NULL: the blocking client */
    int asked, started, paused;
    int abort_rc; /* on_body's error */
    /* a body of known length of CM_BIG_MIN or more (asynchronous client):
     * one buffer of that size, from cm_malloc_big */
    char *big;
    size_t big_len, big_cap;
};

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct httpc_sink *s = userdata;
    size_t n = size * nmemb;

    if (!s->started && s->pause != NULL) { /* the body's first bytes */
        curl_off_t len = -1;

        curl_easy_getinfo(s->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
        if (!s->asked && s->req->on_body != NULL) {
            int rc =
                s->req->on_body(s->req->cb_arg, len >= 0 ? (uint64_t)len : UINT64_MAX, s->pause);

            s->asked = 1;
            if (rc < 0) {
                s->abort_rc = rc;
                return 0; /* makes curl fail the transfer */
            }
            if (rc == 1) {
                s->paused = 1;
                return CURL_WRITEFUNC_PAUSE; /* this data comes again once resumed */
            }
        }
        s->started = 1;
        /* Once, its size: no copies as it grows, huge pages, and the
         * big-buffer cache for whoever frees it with cm_free_big. */
        if (len >= (curl_off_t)CM_BIG_MIN && (size_t)len <= s->max) {
            s->big = cm_malloc_big((size_t)len + 1);
            s->big_cap = (size_t)len;
        }
    }
    if (s->big != NULL) {
        if (s->big_len + n > s->big_cap) {
            s->overflow = 1;
            return 0;
        }
        memcpy(s->big + s->big_len, ptr, n);
        s->big_len += n;
        return n;
    }
    if (s->buf.len + n > s->max) {
        s->overflow = 1;
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    cm_buf_append(&s->buf, ptr, n);
    return n;
}

/* One header line of the answer ("Name: value\r\n"; the status line and
 * the blank line have no colon and are skipped). */
static size_t
on_header(char *ptr, size_t size, size_t nitems, void *userdata)
{
    const struct cm_httpc_req *req = userdata;
    size_t n = size * nitems, nlen, v = 0;
    const char *colon = memchr(ptr, ':', n);

    if (colon == NULL || colon == ptr) {
        return n;
    }
    nlen = (size_t)(colon - ptr);
    v = nlen + 1;
    while (v < n && (ptr[v] == ' ' || ptr[v] == '\t')) {
        v++;
    }
    size_t end = n;
    while (end > v && (ptr[end - 1] == '\r' || ptr[end - 1] == '\n' || ptr[end - 1] == ' ')) {
        end--;
    }
    req->on_header(req->cb_arg, ptr, nlen, ptr + v, end - v);
    return n;
}

static int
curl_err(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return CM_E_TIMEOUT;
    case CURLE_PEER_FAILED_VERIFICATION:
        return -EACCES;
    default:
        return -EIO;
    }
}

static struct curl_slist *
slist_add(struct curl_slist *l, const char *line)
{
    struct curl_slist *h = curl_slist_append(l, line);

    return h != NULL ? h : l;
}

/* A new connection of a request with dead_peer_ms: keepalive probes every
 * second while it waits, and a peer that acknowledges neither them nor
 * data for dead_peer_ms is given up (TCP_USER_TIMEOUT rules both: with it
 * set, the kernel ignores the keepalive probe count). */
static int
on_socket(void *arg, curl_socket_t fd, curlsocktype purpose)
{
    const struct cm_httpc_req *req = arg;
    int one = 1;
    unsigned int ms = (unsigned int)req->dead_peer_ms;

    if (purpose == CURLSOCKTYPE_IPCXN) {
        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof(one));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof(one));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
    }
    return CURL_SOCKOPT_OK;
}

/* Sets c up for req, answers into sink; returns the header list to free
 * once the transfer is done (after unhooking it from c). */
static struct curl_slist *
setup(CURL *c, const struct cm_httpc_req *req, struct httpc_sink *sink)
{
    struct curl_slist *hdrs = NULL;

    sink->max = req->max_body > 0 ? req->max_body : HTTPC_MAX_BODY;
    sink->overflow = 0;
    sink->req = req;
    sink->c = c;
    sink->asked = sink->started = sink->paused = sink->abort_rc = 0;
    sink->big = NULL;
    sink->big_len = sink->big_cap = 0;
    cm_buf_init(&sink->buf);
    /* "Expect: 100-continue" would add a round trip to every request with
     * a body (curl adds it past 1 MiB); signed requests keep curl's header
     * set, which their signature covers. */
    if (req->aws_sigv4 == NULL) {
        hdrs = slist_add(hdrs, "Expect:");
    }
    for (const char *const *h = req->headers; h != NULL && *h != NULL; h++) {
        hdrs = slist_add(hdrs, *h);
    }
    if (req->body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    curl_easy_setopt(c, CURLOPT_URL, req->url);
    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(req->method, "GET") == 0 && req->body == NULL) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    }
    if (req->aws_sigv4 != NULL) {
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, req->aws_sigv4);
        curl_easy_setopt(c, CURLOPT_USERNAME, req->user != NULL ? req->user : "");
        curl_easy_setopt(c, CURLOPT_PASSWORD, req->secret != NULL ? req->secret : "");
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (req->timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
    }
    if (req->connect_timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)req->connect_timeout_ms);
    }
    if (req->dead_peer_ms > 0) {
        curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, on_socket);
        curl_easy_setopt(c, CURLOPT_SOCKOPTDATA, (void *)req);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    if (req->on_header != NULL) {
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, (void *)req);
    }
    return hdrs;
}

/* The error of a transfer that ended with rc. */
static int
finish_rc(const struct httpc_sink *sink, CURLcode rc)
{
    return sink->abort_rc ? sink->abort_rc : sink->overflow ? CM_E_TOOBIG : curl_err(rc);
}

/* The outcome of c's transfer (rc) into out; releases sink and hdrs. */
static int
finish(CURL *c, CURLcode rc, const struct cm_httpc_req *req, struct httpc_sink *sink,
       struct curl_slist *hdrs, struct cm_httpc_resp *out)
{
    long status = 0;
    int ret = 0;

    memset(out, 0, sizeof(*out));
    if (rc != CURLE_OK) {
        ret = finish_rc(sink, rc);
        CM_DEBUG("httpc: %s %s failed: %s", req->method, req->url, curl_easy_strerror(rc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        out->status = (int)status;
        if (sink->big != NULL) {
            sink->big[sink->big_len] = '\0';
            out->body = sink->big;
            out->len = sink->big_len;
            sink->big = NULL;
        } else {
            out->body = cm_buf_take(&sink->buf, &out->len);
        }
    }
    cm_free_big(sink->big);
    sink->big = NULL;
    /* The handle may outlive the call: it must not point at our headers. */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    cm_buf_fini(&sink->buf);
    curl_slist_free_all(hdrs);
    return ret;
}

static int
global_init(void)
{
    pthread_once(&httpc_once, httpc_global_init);
    return httpc_init_rc == CURLE_OK ? 0 : -EIO;
}

int
cm_httpc_do(const struct cm_httpc_req *req, struct cm_httpc_resp *out)
{
    struct httpc_sink sink = {.pause = NULL};
    struct curl_slist *hdrs;
    CURL *c;

    memset(out, 0, sizeof(*out));
    if (global_init() != 0) {
        return -EIO;
    }
    if (req->method == NULL || req->url == NULL) {
        return CM_E_BADARG;
    }
    c = httpc_handle();
    if (c == NULL) {
        return -ENOMEM;
    }
    hdrs = setup(c, req, &sink);
    return finish(c, curl_easy_perform(c), req, &sink, hdrs, out);
}

/* ---- the asynchronous client: libcurl's multi interface on one thread ---- */

struct httpc_xfer {
    const struct cm_httpc_req *req;
    cm_httpc_done_fn done;
    void *arg;
    CURL *c;
    struct httpc_sink sink;
    struct curl_slist *hdrs;
    /* paused by on_body: a transfer curl ended meanwhile (its timeout)
     * waits for its resume before it is finished */
    int ended;
    CURLcode result;
    int resume_rc;
    struct httpc_xfer *next; /* the queue's, or the resumed list's */
};

struct cm_httpc_async {
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t mu; /* guards queue, resumed, stop */
    struct httpc_xfer *queue, **tail;
    struct httpc_xfer *resumed;
    int stop;
    /* the thread's */
    size_t running;  /* transfers not finished: in the multi, or paused */
    CURL *spare[64]; /* easy handles kept for reuse */
    size_t nspare;
};

/* x's transfer is over: curl's result, or rc < 0 (a resume's, or the
 * client stopping). Its done runs; x is freed; its handle is kept. */
static void
xfer_finish(struct cm_httpc_async *a, struct httpc_xfer *x, CURLcode result, int rc)
{
    struct cm_httpc_resp resp;

    if (!x->ended) {
        curl_multi_remove_handle(a->multi, x->c);
    }
    a->running--;
    if (finish(x->c, result, x->req, &x->sink, x->hdrs, &resp) == 0 && rc == 0) {
        x->done(x->arg, 0, &resp);
    } else {
        x->done(x->arg, rc < 0 ? rc : finish_rc(&x->sink, result), &resp);
    }
    cm_httpc_resp_fini(&resp);
    if (a->nspare < sizeof(a->spare) / sizeof(a->spare[0])) {
        a->spare[a->nspare++] = x->c; /* keeps nothing but its caches */
    } else {
        curl_easy_cleanup(x->c);
    }
    free(x);
}

/* Starts the queued transfers (or ends them, when stopping) and takes
 * the resumed ones. */
static void
take_work(struct cm_httpc_async *a, int *stop)
{
    struct httpc_xfer *q, *r;

    pthread_mutex_lock(&a->mu);
    q = a->queue;
    a->queue = NULL;
    a->tail = &a->queue;
    r = a->resumed;
    a->resumed = NULL;
    *stop = a->stop;
    pthread_mutex_unlock(&a->mu);
    while (q != NULL) {
        struct httpc_xfer *x = q;
        struct cm_httpc_resp resp = {0};

        q = x->next;
        x->c = a->nspare > 0 ? a->spare[--a->nspare] : curl_easy_init();
        if (*stop || x->c == NULL) {
            if (x->c != NULL) {
                curl_easy_cleanup(x->c);
            }
            x->done(x->arg, *stop ? -ECANCELED : -ENOMEM, &resp);
            free(x);
            continue;
        }
        curl_easy_reset(x->c);
        x->hdrs = setup(x->c, x->req, &x->sink);
        x->sink.pause = (struct cm_httpc_pause *)x;
        curl_easy_setopt(x->c, CURLOPT_PRIVATE, x);
        curl_multi_add_handle(a->multi, x->c);
        a->running++;
    }
    while (r != NULL) {
        struct httpc_xfer *x = r;

        r = x->next;
        x->sink.paused = 0;
        if (x->ended || x->resume_rc < 0) {
            xfer_finish(a, x, x->ended ? x->result : CURLE_OK, x->resume_rc);
        } else {
            curl_easy_pause(x->c, CURLPAUSE_CONT);
        }
    }
}

static void *
async_main(void *arg)
{
    struct cm_httpc_async *a = arg;

    for (;;) {
        struct CURLMsg *m;
        int still, left, stop;

        take_work(a, &stop);
        if (stop && a->running == 0) {
            break;
        }
        curl_multi_perform(a->multi, &still);
        while ((m = curl_multi_info_read(a->multi, &left)) != NULL) {
            struct httpc_xfer *x = NULL;

            if (m->msg != CURLMSG_DONE) {
                continue;
            }
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (x->sink.paused) {
                /* Its resume is still to come, and it holds x: finished then. */
                curl_multi_remove_handle(a->multi, x->c);
                x->ended = 1;
                x->result = m->data.result;
                continue;
            }
            xfer_finish(a, x, m->data.result, 0);
        }
        curl_multi_poll(a->multi, NULL, 0, 1000, NULL);
    }
    while (a->nspare > 0) {
        curl_easy_cleanup(a->spare[--a->nspare]);
    }
    return NULL;
}

int
cm_httpc_async_create(struct cm_httpc_async **out)
{
    struct cm_httpc_async *a;
    int rc;

    if (global_init() != 0) {
        return -EIO;
    }
    a = cm_calloc(1, sizeof(*a));
    a->multi = curl_multi_init();
    if (a->multi == NULL) {
        free(a);
        return -ENOMEM;
    }
    a->tail = &a->queue;
    pthread_mutex_init(&a->mu, NULL);
    rc = pthread_create(&a->thread, NULL, async_main, a);
    if (rc != 0) {
        curl_multi_cleanup(a->multi);
        pthread_mutex_destroy(&a->mu);
        free(a);
        return -rc;
    }
    *out = a;
    return 0;
}

void
cm_httpc_async_destroy(struct cm_httpc_async *a)
{
    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_mutex_unlock(&a->mu);
    curl_multi_wakeup(a->multi);
    pthread_join(a->thread, NULL);
    curl_multi_cleanup(a->multi);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

int
cm_httpc_async_do(struct cm_httpc_async *a, const struct cm_httpc_req *req, cm_httpc_done_fn done,
                  void *arg)
{
    struct httpc_xfer *x;

    if (req->method == NULL || req->url == NULL) {
        return CM_E_BADARG;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return -ENOMEM;
    }
    x->req = req;
    x->done = done;
    x->arg = arg;
    pthread_mutex_lock(&a->mu);
    if (a->stop) {
        pthread_mutex_unlock(&a->mu);
        free(x);
        return -ECANCELED;
    }
    *a->tail = x;
    a->tail = &x->next;
    pthread_mutex_unlock(&a->mu);
    curl_multi_wakeup(a->multi);
    return 0;
}

void
cm_httpc_async_resume(struct cm_httpc_async *a, struct cm_httpc_pause *p, int rc)
{
    struct httpc_xfer *x = (struct httpc_xfer *)p;

    pthread_mutex_lock(&a->mu);
    x->resume_rc = rc;
    x->next = a->resumed;
    a->resumed = x;
    pthread_mutex_unlock(&a->mu);
    curl_multi_wakeup(a->multi);
}

int
cm_httpc_request(const char *method, const char *url, const char *token, const char *body,
                 int timeout_ms, struct cm_httpc_resp *out)
{
    const char *hdrs[3] = {NULL};
    char auth[1024];
    struct cm_httpc_req req = {
        .method = method,
        .url = url,
        .headers = hdrs,
        .body = body,
        .body_len = body != NULL ? strlen(body) : 0,
        .connect_timeout_ms = timeout_ms,
        .timeout_ms = timeout_ms,
        .max_body = HTTPC_MAX_BODY,
    };
    int n, nh = 0;

    memset(out, 0, sizeof(*out));
    if (token != NULL) {
        n = snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        if (n < 0 || (size_t)n >= sizeof(auth)) {
            return CM_E_BADARG;
        }
        hdrs[nh++] = auth;
    }
    if (body != NULL) {
        hdrs[nh++] = "Content-Type: application/json";
    }
    return cm_httpc_do(&req, out);
}

void
cm_httpc_resp_fini(struct cm_httpc_resp *r)
{
    if (r == NULL) {
        return;
    }
    cm_free_big(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 0;
}

void
cm_httpc_escape(struct cm_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            cm_buf_append(b, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};

            cm_buf_append(b, e, 3);
        }
    }
}
