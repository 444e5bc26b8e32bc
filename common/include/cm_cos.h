/*
 * cm_cos.h - the cloud object store (COS) every chunk is persisted in.
 *
 * Backends: "fs" (a local directory: write to a temp file, fsync, rename,
 * fsync the directory, so no partial object is ever visible; a batch syncs
 * the file system once before and once after its renames; appends go to a
 * file kept open, each synced with fdatasync) and "s3" (an S3 service,
 * path-style: SigV2 through libs3, SigV4 through libcurl; a put is durable
 * once the service answered 200, so a batch is its puts; no appends).
 * All calls block: run them on worker threads. A cm_cos is thread-safe.
 *
 * s3 calls time out (connect_timeout_ms, timeout_ms) and retry what may
 * pass (timeouts, no connection, 5xx, slow-down) with capped exponential
 * backoff and jitter, up to `tries` attempts; never a 4xx. What still
 * fails returns its error: callers that must not lose a write retry it.
 *
 * Names: 1..512 bytes of [A-Za-z0-9._-/], no empty, "." or ".." segment.
 */
#ifndef CM_COS_H
#define CM_COS_H

#include <stddef.h>
#include <stdint.h>

struct cm_cos;

/* Per-open settings of the s3 backend; 0 in a field takes its default. */
struct cm_cos_opts {
    int connect_timeout_ms; /* connect (v4); no sign of progress (v2): 5000 */
    int timeout_ms;         /* one attempt, whole: 60000 */
    int tries;              /* attempts of a transient failure: 6 */
    int backoff_ms;         /* first retry wait (half of it jittered), doubling: 100 */
    int backoff_cap_ms;     /* longest wait: 5000 */
    uint64_t seed;          /* jitter; 0: seeded from the clock */
};

/*
 * url: "fs:/abs/dir" or a plain directory path (created if absent), or
 * "s3://HOST[:PORT]/BUCKET[/PREFIX][?sig=v2|v4&region=R&tls=0|1]"
 * (defaults sig=v4, region=us-east-1, tls=1, port 443 or 80), with the
 * credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Opening
 * checks the url and credentials, not the service. opts may be NULL.
 */
int cm_cos_open(const char *url, struct cm_cos **out);
int cm_cos_open_opts(const char *url, const struct cm_cos_opts *opts, struct cm_cos **out);
/* What cm_cos_open would refuse, without opening: 0, or CM_E_BADARG /
 * CM_E_CONFIG (a missing credential) with a one-line reason in err. */
int cm_cos_url_check(const char *url, char *err, size_t errlen);
void cm_cos_close(struct cm_cos *cos); /* NULL is a no-op */

int cm_cos_put(struct cm_cos *cos, const char *name, const void *data, size_t len);

struct cm_cos_item {
    const char *name; /* borrowed */
    const void *data; /* borrowed */
    size_t len;
    int rc; /* out: what cm_cos_put would have returned */
};
/* Puts n objects, each as by cm_cos_put, sharing the syncs (fs: two
 * syncfs() per batch instead of two fsync() per object; the atomicity and
 * durability of each put are unchanged). Results in items[i].rc. */
void cm_cos_put_batch(struct cm_cos *cos, struct cm_cos_item *items, size_t n);
/* *data is malloc'd and transferred to the caller; CM_E_NOTFOUND if absent. */
int cm_cos_get(struct cm_cos *cos, const char *name, void **data, size_t *len);
/* Bytes [off, off + len) of an object (fewer if it ends first): *data is
 * malloc'd and transferred, *got says how many; CM_E_NOTFOUND if absent. */
int cm_cos_get_range(struct cm_cos *cos, const char *name, uint64_t off, size_t len, void **data,
                     size_t *got);
/*
 * Appends. Where the backend can (cm_cos_can_append: fs), cm_cos_append
 * adds len bytes at the end of object name (created if absent) and returns
 * once they are durable, with *off where they start; the bytes before stay
 * as they were, and get/get_range see the new ones once it returns. One
 * thread at a time appends to a name. A failed append may leave part of
 * its bytes at the end: append to that object no more (start another).
 * Readers of such objects must find where the good bytes end (records
 * with lengths and checksums). cm_cos_append_end says no more appends to
 * name come (what the backend keeps open for them goes); a delete of name
 * ends them too. Backends that cannot append answer -EOPNOTSUPP: write an
 * object per batch there instead.
 */
int cm_cos_can_append(const struct cm_cos *cos);
int cm_cos_append(struct cm_cos *cos, const char *name, const void *data, size_t len,
                  uint64_t *off);
void cm_cos_append_end(struct cm_cos *cos, const char *name);
/* Removing a missing object is not an error. */
int cm_cos_delete(struct cm_cos *cos, const char *name);
/* Calls cb for every name starting with prefix (any order); cb returns
 * non-zero to stop, which cm_cos_list then returns. */
int cm_cos_list(struct cm_cos *cos, const char *prefix, int (*cb)(void *arg, const char *name),
                void *arg);

/* A node's numbered objects (segments, insertion log batches): the name
 * "<kind>/n<node>/<seq as 16 lower-case hex digits>"; parse gives 0 and
 * *seq (never 0) for such a name, else CM_E_BADARG. */
void cm_cos_seq_name(char *buf, size_t cap, const char *kind, uint32_t node, uint64_t seq);
int cm_cos_seq_parse(const char *name, const char *kind, uint32_t node, uint64_t *seq);

#endif
