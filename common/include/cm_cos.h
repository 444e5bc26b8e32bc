/*
 * cm_cos.h - the cloud object store (COS) every chunk is persisted in.
 *
 * Backends: "fs" (a local directory: write to a temp file, fsync, rename,
 * fsync the directory, so no partial object is ever visible; a batch syncs
 * the file system once before and once after its renames) and "s3"
 * (libs3; later). All calls block: run them on worker threads. A cm_cos is
 * thread-safe.
 *
 * Names: 1..512 bytes of [A-Za-z0-9._-/], no empty, "." or ".." segment.
 */
#ifndef CM_COS_H
#define CM_COS_H

#include <stddef.h>
#include <stdint.h>

struct cm_cos;

/* url: "fs:/abs/dir", or a plain directory path (created if absent). */
int cm_cos_open(const char *url, struct cm_cos **out);
void cm_cos_close(struct cm_cos *cos); /* NULL is a no-op */

int cm_cos_put(struct cm_cos *cos, const char *name, const void *data, size_t len);

struct cm_cos_item {
    const char *name;  /* borrowed */
    const void *data;  /* borrowed */
    size_t len;
    int rc;            /* out: what cm_cos_put would have returned */
};
/* Puts n objects, each as by cm_cos_put, sharing the syncs (fs: two
 * syncfs() per batch instead of two fsync() per object; the atomicity and
 * durability of each put are unchanged). Results in items[i].rc. */
void cm_cos_put_batch(struct cm_cos *cos, struct cm_cos_item *items, size_t n);
/* *data is malloc'd and transferred to the caller; CM_E_NOTFOUND if absent. */
int cm_cos_get(struct cm_cos *cos, const char *name, void **data, size_t *len);
/* Bytes [off, off + len) of an object (fewer if it ends first): *data is
 * malloc'd and transferred, *got says how many; CM_E_NOTFOUND if absent. */
int cm_cos_get_range(struct cm_cos *cos, const char *name, uint64_t off, size_t len,
                     void **data, size_t *got);
/* Removing a missing object is not an error. */
int cm_cos_delete(struct cm_cos *cos, const char *name);
/* Calls cb for every name starting with prefix (any order); cb returns
 * non-zero to stop, which cm_cos_list then returns. */
int cm_cos_list(struct cm_cos *cos, const char *prefix,
                int (*cb)(void *arg, const char *name), void *arg);

#endif
