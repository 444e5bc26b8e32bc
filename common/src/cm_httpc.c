/*
 * cm_httpc.c - blocking HTTP client (the only file including
 * <curl/curl.h>): control requests, and the s3 COS backend's SigV4
 * requests (CURLOPT_AWS_SIGV4).
 *
 * Each thread keeps one easy handle (reset between requests), so its
 * connection cache lives on and a COS worker's puts reuse one connection
 * (a TLS handshake per chunk would cost more than the chunk). The handle
 * is freed when the thread exits. curl_global_init is not thread-safe, so
 * it runs exactly once under pthread_once. CURLOPT_NOSIGNAL keeps libcurl
 * from using SIGALRM for DNS timeouts in threaded daemons.
 */
#include <errno.h>
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
};

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct httpc_sink *s = userdata;
    size_t n = size * nmemb;

    if (s->buf.len + n > s->max) {
        s->overflow = 1;
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    cm_buf_append(&s->buf, ptr, n);
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

int
cm_httpc_do(const struct cm_httpc_req *req, struct cm_httpc_resp *out)
{
    struct curl_slist *hdrs = NULL;
    struct httpc_sink sink = {.max = req->max_body > 0 ? req->max_body : HTTPC_MAX_BODY};
    CURL *c;
    CURLcode rc;
    long status = 0;
    int ret = 0;

    memset(out, 0, sizeof(*out));
    pthread_once(&httpc_once, httpc_global_init);
    if (httpc_init_rc != CURLE_OK) {
        return -EIO;
    }
    if (req->method == NULL || req->url == NULL) {
        return CM_E_BADARG;
    }
    c = httpc_handle();
    if (c == NULL) {
        return -ENOMEM;
    }
    cm_buf_init(&sink.buf);
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
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        ret = sink.overflow ? CM_E_TOOBIG : curl_err(rc);
        CM_DEBUG("httpc: %s %s failed: %s", req->method, req->url, curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    out->status = (int)status;
    out->body = cm_buf_take(&sink.buf, &out->len);
out:
    /* The handle outlives the call: it must not point at our headers. */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    cm_buf_fini(&sink.buf);
    curl_slist_free_all(hdrs);
    return ret;
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
    free(r->body);
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
