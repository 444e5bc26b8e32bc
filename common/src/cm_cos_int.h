/*
 * cm_cos_int.h - what the COS front end (cm_cos.c) shares with its
 * backends (cm_cos_fs.c, cm_cos_s3.c) and with the pure parts of the s3
 * backend (cm_cos_s3p.c: URL, answers, backoff), which tests and fuzz
 * targets call directly. Private to common.
 */
#ifndef CM_COS_INT_H
#define CM_COS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cm_cos.h"

#define CM_COS_NAME_MAX 512
#define CM_S3_PREFIX_MAX 256
#define CM_S3_KEY_MAX (CM_S3_PREFIX_MAX + 1 + CM_COS_NAME_MAX)

/* A backend: url already checked by its parser; opts complete (defaults
 * filled in). Every call gets names the front end validated. */
struct cm_cos_ops {
    int (*open)(const char *url, const struct cm_cos_opts *opts, void **state);
    void (*close)(void *state);
    int (*put)(void *state, const char *name, const void *data, size_t len);
    /* NULL: the front end loops over put. */
    void (*put_batch)(void *state, struct cm_cos_item *items, size_t n);
    int (*get)(void *state, const char *name, void **data, size_t *len);
    int (*get_range)(void *state, const char *name, uint64_t off, size_t len, void **data,
                     size_t *got);
    int (*del)(void *state, const char *name);
    /* NULL where the backend cannot append (cm_cos_append). */
    int (*append)(void *state, const char *name, const void *data, size_t len, uint64_t *off);
    void (*append_end)(void *state, const char *name);
    int (*list)(void *state, const char *prefix, int (*cb)(void *arg, const char *name), void *arg);
};

extern const struct cm_cos_ops cm_cos_fs_ops;
extern const struct cm_cos_ops cm_cos_s3_ops;

/* The object name rules of cm_cos.h (1 when name follows them). */
int cm_cos_name_valid(const char *name);
/* The same rules for the complete segments of a prefix ("" is valid). */
int cm_cos_prefix_valid(const char *prefix);

/* ---- s3 backend, pure parts (cm_cos_s3p.c) ---- */

enum { CM_S3_SIG_V2 = 2, CM_S3_SIG_V4 = 4 };

struct cm_s3_url {
    char host[256]; /* as written: a name, an IPv4 address or "[v6]" */
    int port;       /* as written, else 443 (tls) or 80 */
    char bucket[64];
    char prefix[CM_S3_PREFIX_MAX + 1]; /* "" or segments without a slash at either end */
    int sig;                           /* CM_S3_SIG_V2 or _V4 (default v4) */
    char region[33];                   /* default us-east-1 */
    int tls;                           /* default 1 */
};

/* s3://HOST[:PORT]/BUCKET[/PREFIX][?sig=v2|v4&region=R&tls=0|1]. 0, or
 * CM_E_BADARG with a one-line reason in err (errlen > 0). */
int cm_s3_url_parse(const char *url, struct cm_s3_url *out, char *err, size_t errlen);

/* The wait before retry number attempt (0 = the first retry): base_ms
 * doubled per attempt up to cap_ms, then "equal jitter": half of it fixed,
 * the other half scaled by rnd (any 64-bit value), so retries of many
 * workers spread out but none comes back at once. */
uint32_t cm_cos_backoff_ms(unsigned attempt, uint32_t base_ms, uint32_t cap_ms, uint64_t rnd);
/* 1 when a failed COS call may succeed if tried again: a timeout, no
 * connection, a broken transfer, or the service's 5xx / slow-down. */
int cm_cos_transient(int rc);
/* An S3 answer's status (not 2xx or 416, which callers handle) as our
 * error: 404 CM_E_NOTFOUND (NoSuchBucket: CM_E_CONFIG), 401/403 -EACCES,
 * 408 or RequestTimeout CM_E_TIMEOUT, 429 and 5xx -EAGAIN, other 4xx
 * -EPROTO. body (may be NULL) is the S3 error XML. */
int cm_s3_http_err(int status, const char *body, size_t len);
/* Calls cb(arg, key) for each <Key> of a ListBucketResult (XML entities
 * decoded; a key over CM_S3_KEY_MAX is skipped); *truncated from
 * <IsTruncated>; *next gets the key to list after (NextMarker, else the
 * last key; "" when none). 0, cb's non-zero, or CM_E_PROTO if xml is not
 * a ListBucketResult. */
int cm_s3_list_parse(const char *xml, size_t len, int (*cb)(void *arg, const char *key), void *arg,
                     int *truncated, char next[CM_S3_KEY_MAX + 1]);

#endif
