/*
 * cm_httpc.h - HTTP clients (the libcurl adapter).
 *
 * The blocking one (cm_httpc_do): control traffic and the s3 COS
 * backend's SigV4 requests. Call from background threads only.
 * Thread-safe; each thread keeps one connection cache, so a thread's
 * requests to one server reuse their connection.
 *
 * The asynchronous one (cm_httpc_async_*): the gateway's requests for
 * another gateway's tenants, any number in flight on one thread.
 */
#ifndef CM_HTTPC_H
#define CM_HTTPC_H

#include <stddef.h>
#include <stdint.h>

struct cm_httpc_pause;

struct cm_httpc_resp {
    int status; /* HTTP status */
    /* NUL-terminated, transferred to the caller: malloc'd (free), or from
     * the asynchronous client maybe cm_malloc_big'd (cm_free_big) */
    char *body;
    size_t len;
};

/* One request; every pointer is borrowed for the call. */
struct cm_httpc_req {
    const char *method;         /* GET, HEAD, PUT, POST, PATCH, DELETE */
    const char *url;            /* absolute */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; NULL: none */
    const void *body;           /* NULL: none */
    size_t body_len;
    /* Non-NULL: sign with AWS Signature V4 for this provider string, e.g.
     * "aws:amz:us-east-1:s3", with user (key id) and secret. */
    const char *aws_sigv4;
    const char *user, *secret;
    int connect_timeout_ms, timeout_ms; /* 0: none */
    /* > 0: a peer whose kernel acknowledges nothing for about this long
     * (what is sent, or keepalive probes while the answer is awaited) is
     * gone: the request fails then (-EIO), however long a live peer may
     * take to answer. A host cut off sends no reset, so without this a
     * request on a kept-alive connection waits out timeout_ms. */
    int dead_peer_ms;
    size_t max_body; /* an answer body past this fails with CM_E_TOOBIG; 0: 64 MiB */
    /* Non-NULL: called for each header line of the answer, name and value
     * trimmed (borrowed for the call; not NUL-terminated). */
    void (*on_header)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
    /* Non-NULL, asynchronous client only: called once, before the first
     * byte of the answer's body is kept, with its Content-Length
     * (UINT64_MAX when it has none). Returns 0 to go on; 1 to pause the
     * transfer until p is handed to cm_httpc_async_resume (exactly once,
     * from any thread; it may be before this returns); or a negative code
     * that ends the request with it. */
    int (*on_body)(void *arg, uint64_t length, struct cm_httpc_pause *p);
    void *cb_arg; /* on_header's and on_body's */
};

/*
 * Returns 0 when an HTTP answer came back (any status); else
 * -ECONNREFUSED (no connection), CM_E_TIMEOUT, -EIO (the transfer broke),
 * -EACCES (the server's TLS certificate was refused), CM_E_TOOBIG.
 */
int cm_httpc_do(const struct cm_httpc_req *req, struct cm_httpc_resp *out);

/*
 * method "GET"/"POST"/"PATCH"/"DELETE"; url absolute; token adds
 * "Authorization: Bearer <token>" when non-NULL; body (JSON) may be NULL.
 * timeout_ms bounds the connect and the whole request. Errors as cm_httpc_do.
 */
int cm_httpc_request(const char *method, const char *url, const char *token, const char *body,
                     int timeout_ms, struct cm_httpc_resp *out);
void cm_httpc_resp_fini(struct cm_httpc_resp *r);

/*
 * An asynchronous client: one thread runs every request handed to it at
 * once, over a pool of connections it keeps open. Requests to one server
 * are not limited in number: the caller bounds them.
 */
struct cm_httpc_async;
/* rc as cm_httpc_do's, or -ECANCELED (the client stops); resp (rc 0) is
 * the caller's to take from during the call (its body may be taken:
 * set resp->body to NULL). Runs on the client's thread. */
typedef void (*cm_httpc_done_fn)(void *arg, int rc, struct cm_httpc_resp *resp);
int cm_httpc_async_create(struct cm_httpc_async **out);
/* Stops the client: requests not yet started end with -ECANCELED, those
 * running finish first (bounded by their timeouts). NULL is a no-op. */
void cm_httpc_async_destroy(struct cm_httpc_async *a);
/* req (every pointer in it) is borrowed until done has run. 0, or
 * -ECANCELED / -ENOMEM / CM_E_BADARG without done. Any thread. */
int cm_httpc_async_do(struct cm_httpc_async *a, const struct cm_httpc_req *req,
                      cm_httpc_done_fn done, void *arg);
/* Goes on with a transfer on_body paused (rc 0), or ends its request
 * with rc (negative): its done follows, with rc. Any thread. */
void cm_httpc_async_resume(struct cm_httpc_async *a, struct cm_httpc_pause *p, int rc);

struct cm_buf;
/* Appends s to b percent-encoded: all but A-Z a-z 0-9 - _ . ~ (RFC 3986's
 * unreserved set, as a URL query value or SigV4's canonical query wants). */
void cm_httpc_escape(struct cm_buf *b, const char *s);

#endif
