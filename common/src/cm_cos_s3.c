/*
 * cm_cos_s3.c - the "s3" backend of the COS (cm_cos.h); the only file
 * including <libs3.h>.
 *
 *   cm_cos_put/get/... ──▶ s3_call (retries, backoff) ──▶ v2_attempt (libs3, SigV2)
 *                                                      └─▶ v4_attempt (cm_httpc, SigV4)
 *
 * Object NAME is the key PREFIX/NAME of the bucket, addressed path-style
 * (http[s]://HOST:PORT/BUCKET/KEY: S3-compatible servers on an address
 * need it). A put is one PUT of the whole object, durable once the
 * service answered 200, so a batch is its puts and has no sync of its own.
 * A ranged get is a Range GET (416, a range past the end, is 0 bytes; a
 * range of 0 bytes is a HEAD); a listing pages through ListObjects by
 * marker, and its names are handed to the callback only once a page has
 * arrived whole, so a retried page never repeats one.
 *
 * Timeouts and retries: each attempt has a deadline (timeout_ms) and must
 * connect within connect_timeout_ms. libs3 2.0 sets neither, so a v2
 * attempt runs on this thread's libs3 request context, which we drive
 * ourselves and drop at the deadline; there "connected" means the first
 * sign of progress (the body starts to go out, or answer headers arrive).
 * An attempt that failed transiently (cm_cos_transient) is tried again
 * after cm_cos_backoff_ms, up to `tries` attempts; a 4xx never is. libs3
 * does not give the HTTP status: an S3 error code or status it does not
 * know (ServiceUnavailable, 502, 504 among them) is taken as transient.
 *
 * A libs3 2.0 flaw: for a PUT that waited for "100 Continue", it keeps
 * 100 as the status and reads a final answer without a body as success.
 * S3 sends every error with an XML body, which libs3 reads right, and
 * refuses early (before the 100) what it refuses for the request itself;
 * a proxy in front that answers a bare 5xx after the 100 would fool the
 * v2 path (sig=v4 reads the real status).
 *
 * Thread-safe: the state is read-only after open but for the jitter
 * generator (atomic); each thread has its own libs3 context and curl
 * handle. libs3 2.0 does not check the server's TLS certificate
 * (sig=v2&tls=1); libcurl does (sig=v4).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <libs3.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_cos_int.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_httpc.h"
#include "cm_log.h"
#include "cm_time.h"

#define S3_GET_MAX ((size_t)1 << 30)
#define S3_LIST_PAGE 1000
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_state {
    struct cm_s3_url u;
    struct cm_cos_opts o;
    char *id, *secret;
    atomic_uint_fast64_t rng;
    char hostport[300]; /* v2: libs3's host name */
    S3BucketContext bc; /* v2 */
    char base[400];     /* v4: scheme://host:port/bucket */
    char provider[64];  /* v4: aws:amz:REGION:s3 */
};

enum s3_op { S3_PUT, S3_GET, S3_HEAD, S3_DEL, S3_LIST };
static const char *const s3_op_names[] = {"put", "get", "head", "delete", "list"};

/* One operation: what to do, and what came back. */
struct s3_call {
    enum s3_op op;
    const char *key;  /* the whole key; LIST: the key prefix */
    const void *data; /* PUT */
    size_t len;
    int ranged; /* GET of [off, off + want) */
    uint64_t off;
    size_t want;
    const char *marker; /* LIST: list after this key ("" from the start) */
    struct cm_buf out;  /* GET: the bytes; LIST: keys, each NUL-terminated */
    int truncated;      /* LIST */
    char next[CM_S3_KEY_MAX + 1];
    char why[160]; /* the service's message of the last failure */
};

static uint64_t
s3_rand(struct s3_state *st)
{
    uint64_t z = atomic_fetch_add(&st->rng, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void
s3_sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int
s3_key(const struct s3_state *st, const char *name, char *buf, size_t cap)
{
    int n = st->u.prefix[0] != '\0' ? snprintf(buf, cap, "%s/%s", st->u.prefix, name)
                                    : snprintf(buf, cap, "%s", name);

    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static void
add_key(struct s3_call *call, const char *key)
{
    cm_buf_append(&call->out, key, strlen(key) + 1);
}

/* ---- SigV2: libs3 ---- */

static pthread_once_t v2_once = PTHREAD_ONCE_INIT;
static S3Status v2_init_status;
static pthread_key_t v2_ctx_key;

static void
v2_ctx_free(void *ctx)
{
    S3_destroy_request_context(ctx);
}

/* libs3 initializes libcurl too; curl_global_init is thread-safe in the
 * libcurl we build with (7.84+), so cm_httpc's own once does not race it. */
static void
v2_init(void)
{
    v2_init_status = S3_initialize("shoal", S3_INIT_ALL, NULL);
    if (v2_init_status == S3StatusOK && pthread_key_create(&v2_ctx_key, v2_ctx_free) != 0) {
        v2_init_status = S3StatusInternalError;
    }
}

struct v2_call {
    struct s3_call *call;
    S3Status status;
    int done;
    int progressed; /* the connection is up: body going out or answer headers in */
    size_t sent;
    int overflow;
    int have_len; /* the answer's Content-Length came (a 2xx answer) */
    uint64_t want_len;
    uint64_t received; /* body bytes of a get, kept or not */
};

static S3Status
v2_props(const S3ResponseProperties *p, void *arg)
{
    struct v2_call *vc = arg;

    vc->progressed = 1;
    vc->have_len = 1;
    vc->want_len = p->contentLength;
    return S3StatusOK;
}

static void
v2_complete(S3Status status, const S3ErrorDetails *e, void *arg)
{
    struct v2_call *vc = arg;

    vc->status = status;
    vc->done = 1;
    if (status != S3StatusOK) {
        snprintf(vc->call->why, sizeof(vc->call->why), "%s%s%s", S3_get_status_name(status),
                 e != NULL && e->message != NULL ? ": " : "",
                 e != NULL && e->message != NULL ? e->message : "");
    }
}

static int
v2_put_data(int size, char *buf, void *arg)
{
    struct v2_call *vc = arg;
    size_t n = vc->call->len - vc->sent;

    vc->progressed = 1;
    if (size < 0) {
        return -1;
    }
    if (n > (size_t)size) {
        n = (size_t)size;
    }
    memcpy(buf, (const char *)vc->call->data + vc->sent, n);
    vc->sent += n;
    return (int)n;
}

static S3Status
v2_get_data(int size, const char *buf, void *arg)
{
    struct v2_call *vc = arg;
    size_t max = vc->call->ranged ? vc->call->want : S3_GET_MAX;

    vc->progressed = 1;
    if (size < 0) {
        return S3StatusAbortedByCallback;
    }
    vc->received += (uint64_t)size;
    if (vc->call->out.len + (size_t)size > max) {
        /* More than the range: a server that took "bytes=0-0" for the
         * whole object (s3rver does). From offset 0 the first bytes are
         * still the range; from elsewhere there is no telling. */
        if (!vc->call->ranged || vc->call->off != 0) {
            vc->overflow = 1;
            return S3StatusAbortedByCallback;
        }
        size = (int)(max - vc->call->out.len);
    }
    cm_buf_append(&vc->call->out, buf, (size_t)size);
    return S3StatusOK;
}

static S3Status
v2_list_data(int truncated, const char *next, int n, const S3ListBucketContent *c, int np,
             const char **prefixes, void *arg)
{
    struct v2_call *vc = arg;
    struct s3_call *call = vc->call;
    int i;

    (void)np;
    (void)prefixes;
    vc->progressed = 1;
    call->truncated = truncated;
    for (i = 0; i < n; i++) {
        if (strlen(c[i].key) <= CM_S3_KEY_MAX) {
            add_key(call, c[i].key);
            snprintf(call->next, sizeof(call->next), "%s", c[i].key);
        }
    }
    if (next != NULL && next[0] != '\0' && strlen(next) <= CM_S3_KEY_MAX) {
        snprintf(call->next, sizeof(call->next), "%s", next);
    }
    return S3StatusOK;
}

static int
v2_err(S3Status s)
{
    switch (s) {
    case S3StatusOK:
        return 0;
    case S3StatusErrorNoSuchKey:
    case S3StatusHttpErrorNotFound:
        return CM_E_NOTFOUND;
    case S3StatusErrorNoSuchBucket:
        return CM_E_CONFIG;
    case S3StatusErrorAccessDenied:
    case S3StatusErrorAccountProblem:
    case S3StatusErrorInvalidAccessKeyId:
    case S3StatusErrorSignatureDoesNotMatch:
    case S3StatusErrorExpiredToken:
    case S3StatusErrorInvalidToken:
    case S3StatusErrorRequestTimeTooSkewed:
    case S3StatusHttpErrorForbidden:
    case S3StatusServerFailedVerification:
        return -EACCES;
    case S3StatusErrorRequestTimeout:
    case S3StatusInterrupted:
        return CM_E_TIMEOUT;
    case S3StatusNameLookupError:
    case S3StatusFailedToConnect:
        return -ECONNREFUSED;
    case S3StatusConnectionFailed:
    case S3StatusInternalError: /* also every curl error libs3 does not name */
        return -EIO;
    case S3StatusErrorInternalError: /* 500 */
    case S3StatusErrorSlowDown:      /* 503 */
    case S3StatusErrorUnknown:       /* a code libs3 does not know */
    case S3StatusHttpErrorUnknown:   /* a status libs3 does not know */
        return -EAGAIN;
    case S3StatusOutOfMemory:
        return -ENOMEM;
    case S3StatusAbortedByCallback:
        return CM_E_TOOBIG;
    default:
        return -EPROTO;
    }
}

/* This thread's libs3 request context (NULL if none can be had). */
static S3RequestContext *
v2_ctx(void)
{
    S3RequestContext *ctx = pthread_getspecific(v2_ctx_key);

    if (ctx == NULL && S3_create_request_context(&ctx) == S3StatusOK &&
        pthread_setspecific(v2_ctx_key, ctx) != 0) {
        S3_destroy_request_context(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* Drives ctx until vc is done or a deadline passes: then the context
 * (and with it the connection) is dropped, and libs3 completes the
 * request as interrupted. */
static void
v2_drive(struct s3_state *st, S3RequestContext *ctx, struct v2_call *vc)
{
    uint64_t t0 = cm_now_ns();
    uint64_t end = t0 + (uint64_t)st->o.timeout_ms * 1000000u;
    uint64_t conn_end = t0 + (uint64_t)st->o.connect_timeout_ms * 1000000u;
    int running = 1, maxfd, timed_out = 0;

    while (!vc->done) {
        fd_set r, w, x;
        int64_t wait_ms;
        uint64_t now;

        if (S3_runonce_request_context(ctx, &running) != S3StatusOK || vc->done || !running) {
            break;
        }
        now = cm_now_ns();
        if (now >= end || (!vc->progressed && now >= conn_end)) {
            timed_out = 1;
            break;
        }
        FD_ZERO(&r);
        FD_ZERO(&w);
        FD_ZERO(&x);
        maxfd = -1;
        if (S3_get_request_context_fdsets(ctx, &r, &w, &x, &maxfd) != S3StatusOK) {
            break;
        }
        wait_ms = S3_get_request_context_timeout(ctx);
        if (wait_ms < 0 || wait_ms > 100) {
            wait_ms = 100;
        }
        if ((uint64_t)wait_ms * 1000000u > end - now) {
            wait_ms = (int64_t)((end - now) / 1000000u) + 1;
        }
        if (maxfd < 0) {
            /* No socket yet (or none select can watch): nap briefly. */
            s3_sleep_ms(wait_ms < 5 ? (uint32_t)wait_ms : 5);
        } else {
            struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)(wait_ms % 1000) * 1000};
            (void)select(maxfd + 1, &r, &w, &x, &tv);
        }
    }
    if (!vc->done) {
        pthread_setspecific(v2_ctx_key, NULL);
        S3_destroy_request_context(ctx); /* completes vc as interrupted */
        vc->done = 1;
        /* Interrupted reads as a timeout; a context that broke is a failed transfer. */
        vc->status = timed_out ? S3StatusInterrupted : S3StatusConnectionFailed;
        snprintf(vc->call->why, sizeof(vc->call->why), "%s",
                 !timed_out       ? "libs3 request context failed"
                 : vc->progressed ? "timed out"
                                  : "connect timed out");
    }
}

static int
v2_attempt(struct s3_state *st, struct s3_call *call)
{
    S3RequestContext *ctx = v2_ctx();
    struct v2_call vc = {.call = call};
    S3ResponseHandler rh = {v2_props, v2_complete};
    int rc;

    if (ctx == NULL) {
        return -ENOMEM;
    }
    switch (call->op) {
    case S3_PUT: {
        S3PutObjectHandler h = {rh, v2_put_data};
        S3_put_object(&st->bc, call->key, call->len, NULL, ctx, &h, &vc);
        break;
    }
    case S3_GET: {
        S3GetObjectHandler h = {rh, v2_get_data};
        /* byteCount 0 means "to the end": a ranged get always asks for >0. */
        S3_get_object(&st->bc, call->key, NULL, call->ranged ? call->off : 0,
                      call->ranged ? call->want : 0, ctx, &h, &vc);
        break;
    }
    case S3_HEAD:
        S3_head_object(&st->bc, call->key, ctx, &rh, &vc);
        break;
    case S3_DEL:
        S3_delete_object(&st->bc, call->key, ctx, &rh, &vc);
        break;
    case S3_LIST: {
        S3ListBucketHandler h = {rh, v2_list_data};
        S3_list_bucket(&st->bc, call->key, call->marker[0] ? call->marker : NULL, NULL,
                       S3_LIST_PAGE, ctx, &h, &vc);
        break;
    }
    }
    v2_drive(st, ctx, &vc);
    if (call->op == S3_GET && vc.status == S3StatusErrorInvalidRange) {
        call->out.len = 0; /* the range starts past the end */
        return 0;
    }
    rc = vc.overflow ? CM_E_TOOBIG : v2_err(vc.status);
    if (call->op == S3_PUT && rc == 0 && vc.sent != call->len) {
        rc = -EIO;
    }
    /* libs3 takes a transfer cut short (CURLE_PARTIAL_FILE) for success. */
    if (call->op == S3_GET && rc == 0 && (!vc.have_len || vc.received != vc.want_len)) {
        snprintf(call->why, sizeof(call->why), "got %llu of %llu bytes",
                 (unsigned long long)vc.received, (unsigned long long)vc.want_len);
        rc = -EIO;
    }
    return rc;
}

/* ---- SigV4: libcurl through cm_httpc ---- */

static int
v4_list_key(void *arg, const char *key)
{
    add_key(arg, key);
    return 0;
}

static int
v4_attempt(struct s3_state *st, struct s3_call *call)
{
    static const char *const methods[] = {"PUT", "GET", "HEAD", "DELETE", "GET"};
    struct cm_httpc_resp resp;
    struct cm_buf url;
    char sha_hdr[100], sha[65], range[80];
    const char *hdrs[4] = {sha_hdr, NULL, NULL, NULL};
    struct cm_httpc_req req = {
        .method = methods[call->op],
        .headers = hdrs,
        .aws_sigv4 = st->provider,
        .user = st->id,
        .secret = st->secret,
        .connect_timeout_ms = st->o.connect_timeout_ms,
        .timeout_ms = st->o.timeout_ms,
        .max_body = S3_GET_MAX,
    };
    int rc;

    cm_buf_init(&url);
    cm_buf_append(&url, st->base, strlen(st->base));
    if (call->op == S3_LIST) {
        /* Parameters in canonical (sorted) order: curl signs the query as given. */
        cm_buf_printf(&url, "?");
        if (call->marker[0] != '\0') {
            cm_buf_printf(&url, "marker=");
            cm_httpc_escape(&url, call->marker);
            cm_buf_printf(&url, "&");
        }
        cm_buf_printf(&url, "max-keys=%d&prefix=", S3_LIST_PAGE);
        cm_httpc_escape(&url, call->key);
    } else {
        cm_buf_printf(&url, "/%s", call->key); /* names need no escaping */
    }
    req.url = url.p;
    if (call->op == S3_PUT) {
        cm_sha256_hex(call->data, call->len, sha);
        req.body = call->data != NULL ? call->data : "";
        req.body_len = call->len;
        hdrs[1] = "Content-Type: application/octet-stream";
    } else {
        memcpy(sha, S3_EMPTY_SHA256, sizeof(sha));
    }
    snprintf(sha_hdr, sizeof(sha_hdr), "x-amz-content-sha256: %s", sha);
    if (call->op == S3_GET && call->ranged) {
        snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)call->off,
                 (unsigned long long)(call->off + call->want - 1));
        hdrs[1] = range;
    }
    rc = cm_httpc_do(&req, &resp);
    cm_buf_fini(&url);
    if (rc != 0) {
        snprintf(call->why, sizeof(call->why), "%s", cm_strerror(rc));
        return rc;
    }
    if (resp.status < 200 || resp.status >= 300) {
        rc = cm_s3_http_err(resp.status, resp.body, resp.len);
        if (call->op == S3_GET && resp.status == 416) {
            rc = 0; /* the range starts past the end */
        } else if (call->op == S3_DEL && rc == CM_E_NOTFOUND) {
            rc = 0;
        } else {
            snprintf(call->why, sizeof(call->why), "HTTP %d %.120s", resp.status,
                     resp.body != NULL ? resp.body : "");
        }
    } else if (call->op == S3_GET) {
        size_t off = 0, n = resp.len;

        /* The whole object (200), or more than the range from offset 0 (a
         * server that took "bytes=0-0" for everything, as s3rver does):
         * cut the range out. */
        if (call->ranged && (resp.status == 200 || (n > call->want && call->off == 0))) {
            off = call->off < resp.len ? (size_t)call->off : resp.len;
            n = resp.len - off < call->want ? resp.len - off : call->want;
        } else if (call->ranged && n > call->want) {
            rc = -EPROTO;
        }
        if (rc == 0) {
            cm_buf_append(&call->out, resp.body + off, n);
        }
    } else if (call->op == S3_LIST) {
        rc = cm_s3_list_parse(resp.body, resp.len, v4_list_key, call, &call->truncated, call->next);
    }
    cm_httpc_resp_fini(&resp);
    return rc;
}

/* ---- operations: attempts and retries ---- */

static int
s3_call(struct s3_state *st, struct s3_call *call)
{
    unsigned attempt;
    uint32_t wait;
    int rc;

    for (attempt = 0;; attempt++) {
        call->out.len = 0;
        call->truncated = 0;
        call->next[0] = '\0';
        call->why[0] = '\0';
        rc = st->u.sig == CM_S3_SIG_V2 ? v2_attempt(st, call) : v4_attempt(st, call);
        if (rc == 0 || rc == CM_E_NOTFOUND) {
            return rc;
        }
        if (!cm_cos_transient(rc) || attempt + 1 >= (unsigned)st->o.tries) {
            break;
        }
        wait = cm_cos_backoff_ms(attempt, (uint32_t)st->o.backoff_ms,
                                 (uint32_t)st->o.backoff_cap_ms, s3_rand(st));
        CM_WARN("cos: s3 %s failed, retrying key=%s try=%u err=%s wait_ms=%u why=\"%s\"",
                s3_op_names[call->op], call->key, attempt + 1, cm_errname(rc), wait, call->why);
        s3_sleep_ms(wait);
    }
    CM_WARN("cos: s3 %s failed key=%s tries=%u err=%s why=\"%s\"", s3_op_names[call->op], call->key,
            attempt + 1, cm_errname(rc), call->why);
    return rc;
}

static int
s3_put(void *state, const char *name, const void *data, size_t len)
{
    struct s3_state *st = state;
    char key[CM_S3_KEY_MAX + 1];
    struct s3_call call = {.op = S3_PUT, .key = key, .data = data, .len = len};
    int rc = s3_key(st, name, key, sizeof(key));

    if (rc == 0) {
        cm_buf_init(&call.out);
        rc = s3_call(st, &call);
        cm_buf_fini(&call.out);
    }
    return rc;
}

/* A get of the whole object (ranged 0) or of [off, off + len). */
static int
s3_get_common(struct s3_state *st, const char *name, int ranged, uint64_t off, size_t len,
              void **data, size_t *got)
{
    char key[CM_S3_KEY_MAX + 1];
    struct s3_call call = {.op = S3_GET, .key = key, .ranged = ranged, .off = off, .want = len};
    int rc = s3_key(st, name, key, sizeof(key));

    if (rc != 0) {
        return rc;
    }
    if (ranged && len == 0) {
        call.op = S3_HEAD; /* nothing to read: only whether it exists */
    }
    cm_buf_init(&call.out);
    rc = s3_call(st, &call);
    if (rc == 0) {
        *data = cm_buf_take(&call.out, got);
    }
    cm_buf_fini(&call.out);
    return rc;
}

static int
s3_get(void *state, const char *name, void **data, size_t *len)
{
    return s3_get_common(state, name, 0, 0, 0, data, len);
}

static int
s3_get_range(void *state, const char *name, uint64_t off, size_t len, void **data, size_t *got)
{
    return s3_get_common(state, name, 1, off, len, data, got);
}

static int
s3_del(void *state, const char *name)
{
    struct s3_state *st = state;
    char key[CM_S3_KEY_MAX + 1];
    struct s3_call call = {.op = S3_DEL, .key = key};
    int rc = s3_key(st, name, key, sizeof(key));

    if (rc == 0) {
        cm_buf_init(&call.out);
        rc = s3_call(st, &call);
        cm_buf_fini(&call.out);
    }
    return rc == CM_E_NOTFOUND ? 0 : rc;
}

static int
s3_list(void *state, const char *prefix, int (*cb)(void *arg, const char *name), void *arg)
{
    struct s3_state *st = state;
    char kprefix[CM_S3_KEY_MAX + 2], marker[CM_S3_KEY_MAX + 1] = "";
    struct s3_call call = {.op = S3_LIST, .key = kprefix, .marker = marker};
    size_t skip = st->u.prefix[0] != '\0' ? strlen(st->u.prefix) + 1 : 0;
    int rc;

    if (st->u.prefix[0] != '\0') {
        snprintf(kprefix, sizeof(kprefix), "%s/%s", st->u.prefix, prefix);
    } else {
        snprintf(kprefix, sizeof(kprefix), "%s", prefix);
    }
    cm_buf_init(&call.out);
    for (;;) {
        rc = s3_call(st, &call);
        if (rc != 0) {
            break;
        }
        for (size_t off = 0; off < call.out.len && rc == 0;) {
            const char *key = call.out.p + off;
            size_t kl = strlen(key);

            off += kl + 1;
            if (kl > skip && strncmp(key, kprefix, strlen(kprefix)) == 0 &&
                cm_cos_name_valid(key + skip)) {
                rc = cb(arg, key + skip);
            }
        }
        if (rc != 0 || !call.truncated) {
            break;
        }
        if (call.next[0] == '\0' || strcmp(call.next, marker) <= 0) {
            CM_WARN("cos: s3 listing does not advance prefix=%s marker=%s", kprefix, marker);
            rc = CM_E_PROTO;
            break;
        }
        memcpy(marker, call.next, sizeof(marker));
    }
    cm_buf_fini(&call.out);
    return rc;
}

static int
s3_open(const char *url, const struct cm_cos_opts *opts, void **state)
{
    struct s3_state *st;
    char err[200];
    int rc;

    st = cm_calloc(1, sizeof(*st));
    rc = cm_s3_url_parse(url, &st->u, err, sizeof(err));
    if (rc != 0) {
        CM_ERROR("cos: %s", err);
        free(st);
        return rc;
    }
    st->o = *opts;
    st->id = cm_strdup(getenv("AWS_ACCESS_KEY_ID"));
    st->secret = cm_strdup(getenv("AWS_SECRET_ACCESS_KEY"));
    atomic_init(&st->rng, opts->seed != 0 ? opts->seed : cm_now_ns() ^ cm_wall_ms());
    snprintf(st->base, sizeof(st->base), "%s://%s:%d/%s", st->u.tls ? "https" : "http", st->u.host,
             st->u.port, st->u.bucket);
    snprintf(st->provider, sizeof(st->provider), "aws:amz:%s:s3", st->u.region);
    snprintf(st->hostport, sizeof(st->hostport), "%s:%d", st->u.host, st->u.port);
    st->bc.hostName = st->hostport;
    st->bc.bucketName = st->u.bucket;
    st->bc.protocol = st->u.tls ? S3ProtocolHTTPS : S3ProtocolHTTP;
    st->bc.uriStyle = S3UriStylePath;
    st->bc.accessKeyId = st->id;
    st->bc.secretAccessKey = st->secret;
    if (st->u.sig == CM_S3_SIG_V2) {
        pthread_once(&v2_once, v2_init);
        if (v2_init_status != S3StatusOK) {
            CM_ERROR("cos: libs3 init failed: %s", S3_get_status_name(v2_init_status));
            free(st->id);
            free(st->secret);
            free(st);
            return -EIO;
        }
    }
    CM_INFO("cos: s3 host=%s port=%d bucket=%s prefix=%s sig=v%d tls=%d", st->u.host, st->u.port,
            st->u.bucket, st->u.prefix, st->u.sig, st->u.tls);
    *state = st;
    return 0;
}

static void
s3_close(void *state)
{
    struct s3_state *st = state;

    free(st->id);
    free(st->secret);
    free(st);
}

const struct cm_cos_ops cm_cos_s3_ops = {
    .open = s3_open,
    .close = s3_close,
    .put = s3_put,
    .get = s3_get,
    .get_range = s3_get_range,
    .del = s3_del,
    .list = s3_list,
};
