/*
 * cm_http.h - HTTP/1.1 server (the libmicrohttpd adapter; the only file
 * that includes <microhttpd.h> is common/src/cm_http.c).
 *
 * Request life:
 *   headers(r)  on an HTTP thread once the headers are in, before the body:
 *               return 0 to read the body, or respond now (e.g. 401, 411,
 *               413) and return 1. May be NULL. It may also call
 *               cm_http_suspend(r) and return 0: no body is read until
 *               some thread calls cm_http_proceed(r) (then request()
 *               follows) or answers r (early, as if headers() had).
 *   request(r)  once the whole body is buffered: respond now, or call
 *               cm_http_suspend(r) and respond later from any thread.
 *   The request object lives until the response has been sent or the
 *   client went away; after cm_http_respond*() the handler must not touch r.
 *   A client that disconnects while suspended: the response is still
 *   accepted and dropped.
 *
 * Runs a pool of `threads` epoll threads (one epoll thread stalls past
 * ~128 connections in libmicrohttpd 0.9.75). Answers on the second handler
 * call, so keep-alive stays on.
 */
#ifndef CM_HTTP_H
#define CM_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct cm_http_server;
struct cm_http_req;

struct cm_http_handlers {
    int (*headers)(void *arg, struct cm_http_req *r);
    void (*request)(void *arg, struct cm_http_req *r);
};

struct cm_http_cfg {
    const char *addr;   /* "127.0.0.1:9300", borrowed for the call */
    unsigned threads;   /* 0 = 2 */
    uint64_t max_body;  /* larger Content-Length -> 413 before reading */
    unsigned timeout_s; /* idle connection timeout; 0 = 60 */
};

int cm_http_start(const struct cm_http_cfg *cfg, const struct cm_http_handlers *h, void *arg,
                  struct cm_http_server **out);
/* Stops accepting connections; requests already begun (uploading, running
 * or suspended) finish within timeout_ms, their connections then closed;
 * frees s. Suspended requests must still be answered by their owners. */
void cm_http_stop(struct cm_http_server *s, int timeout_ms);

/* Accessors: borrowed strings valid while r lives. */
const char *cm_http_method(const struct cm_http_req *r);
const char *cm_http_path(const struct cm_http_req *r); /* raw, still %-encoded, no query */
const char *cm_http_query(const struct cm_http_req *r, const char *name); /* decoded or NULL */
/* The query string exactly as on the request line, after '?' ("" if none). */
const char *cm_http_query_string(const struct cm_http_req *r);
const char *cm_http_header(const struct cm_http_req *r, const char *name); /* NULL if absent */
/* Calls cb for every request header in the order received (name as sent,
 * value; borrowed for the call) until cb returns non-zero. */
void cm_http_headers_each(const struct cm_http_req *r,
                          int (*cb)(void *arg, const char *name, const char *value), void *arg);
/* 0 and *len when the client sent Content-Length; -ENOENT otherwise. */
int cm_http_content_length(const struct cm_http_req *r, uint64_t *len);
/* The buffered body (borrowed), or NULL with *len = 0. */
const void *cm_http_body(const struct cm_http_req *r, size_t *len);
/* From headers(): the body buffer gets room for at least room bytes (more
 * than Content-Length), so that whoever takes it can extend it in place. */
void cm_http_reserve_body(struct cm_http_req *r, size_t room);
/* Transfers the body buffer to the caller (cm_free_big); the request keeps none.
 * *cap: bytes the buffer has room for (>= *len). */
void *cm_http_take_body(struct cm_http_req *r, size_t *len, size_t *cap);
void cm_http_set_user(struct cm_http_req *r, void *user); /* borrowed */
/* fn(arg) runs once r is gone: its response sent, or its connection
 * closed; on the HTTP thread that frees r. One per request; set before
 * the answer. */
void cm_http_on_done(struct cm_http_req *r, void (*fn)(void *arg), void *arg);
void *cm_http_user(const struct cm_http_req *r);

/* Adds a response header (copied). Before cm_http_respond*(). */
void cm_http_add_header(struct cm_http_req *r, const char *name, const char *value);
void cm_http_suspend(struct cm_http_req *r);
/* Any thread, for a request suspended in headers(): read its body. */
void cm_http_proceed(struct cm_http_req *r);

enum cm_http_mem {
    CM_HTTP_COPY,   /* body copied */
    CM_HTTP_FREE,   /* body transferred; freed with cm_free_big when sent */
    CM_HTTP_STATIC, /* body borrowed for the process lifetime */
};
/* Thread-safe once r is suspended. For HEAD requests the body is not sent
 * but its length is announced. */
void cm_http_respond(struct cm_http_req *r, int status, const char *content_type, void *body,
                     size_t len, enum cm_http_mem mem);
/* A bodiless answer announcing Content-Length: len (for HEAD). */
void cm_http_respond_head(struct cm_http_req *r, int status, const char *content_type,
                          uint64_t len);

#endif
