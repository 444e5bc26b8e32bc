/*
 * cm_httpc.h - a blocking HTTP client (the libcurl adapter): control
 * traffic, and the s3 COS backend's SigV4 requests. Call from background
 * threads only. Thread-safe; each thread keeps one connection cache, so
 * a thread's requests to one server reuse their connection.
 */
#ifndef CM_HTTPC_H
#define CM_HTTPC_H

#include <stddef.h>

struct cm_httpc_resp {
    int status; /* HTTP status */
    char *body; /* malloc'd, NUL-terminated, transferred to the caller */
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
    size_t max_body; /* an answer body past this fails with CM_E_TOOBIG; 0: 64 MiB */
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

struct cm_buf;
/* Appends s to b percent-encoded: all but A-Z a-z 0-9 - _ . ~ (RFC 3986's
 * unreserved set, as a URL query value or SigV4's canonical query wants). */
void cm_httpc_escape(struct cm_buf *b, const char *s);

#endif
