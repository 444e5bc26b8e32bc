/*
 * cm_httpc.c - blocking HTTP client for control traffic (the only file
 * including <curl/curl.h>).
 *
 * One easy handle per call: control requests are rare, and a handle per
 * call keeps the client trivially thread-safe. curl_global_init is not
 * thread-safe, so it runs exactly once under pthread_once. CURLOPT_NOSIGNAL
 * keeps libcurl from using SIGALRM for DNS timeouts in threaded daemons.
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

#define HTTPC_MAX_BODY ((size_t)64 << 20) /* control answers are small */

static pthread_once_t httpc_once = PTHREAD_ONCE_INIT;
static CURLcode httpc_init_rc;

static void
httpc_global_init(void)
{
    httpc_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct cm_buf *b = userdata;
    size_t n = size * nmemb;

    if (b->len + n > HTTPC_MAX_BODY) {
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    cm_buf_append(b, ptr, n);
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
    default:
        return -EIO;
    }
}

int
cm_httpc_request(const char *method, const char *url, const char *token, const char *body,
                 int timeout_ms, struct cm_httpc_resp *out)
{
    struct curl_slist *hdrs = NULL, *h;
    struct cm_buf resp;
    char auth[1024];
    CURL *c = NULL;
    CURLcode rc;
    long status = 0;
    int ret = 0, n;

    memset(out, 0, sizeof(*out));
    cm_buf_init(&resp);
    pthread_once(&httpc_once, httpc_global_init);
    if (httpc_init_rc != CURLE_OK) {
        return -EIO;
    }
    if (method == NULL || url == NULL) {
        return CM_E_BADARG;
    }
    c = curl_easy_init();
    if (c == NULL) {
        return -ENOMEM;
    }
    /* "Expect: 100-continue" would add a round trip to every POST. */
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (token != NULL) {
        n = snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        if (n < 0 || (size_t)n >= sizeof(auth)) {
            ret = CM_E_BADARG;
            goto out;
        }
        h = curl_slist_append(hdrs, auth);
        hdrs = h != NULL ? h : hdrs;
    }
    if (body != NULL) {
        h = curl_slist_append(hdrs, "Content-Type: application/json");
        hdrs = h != NULL ? h : hdrs;
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") == 0 && body == NULL) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        ret = curl_err(rc);
        CM_DEBUG("httpc: %s %s failed: %s", method, url, curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    out->status = (int)status;
    out->body = cm_buf_take(&resp, &out->len);
out:
    cm_buf_fini(&resp);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return ret;
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
