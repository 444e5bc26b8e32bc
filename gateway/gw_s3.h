/*
 * gw_s3.h - the S3-compatible front door of the gateway (private to
 * gateway/): a second cm_http listener (--s3-listen) whose requests are
 * signed with SigV4 by tenants' S3 access keys and run through the same
 * engine, committer and metadata as the tenant API (gw_front.h), under the
 * tenant that owns the key. See docs/s3.md.
 *
 * Threads: the handlers run on the S3 listener's cm_http threads; engine
 * callbacks on the engine thread; commits on the committer; a copy's
 * bytes are hashed and encoded on the front door's copy worker, which also
 * expires abandoned multipart uploads. create and destroy from the main
 * thread.
 */
#ifndef GW_S3_H
#define GW_S3_H

#include "cm_http.h"

struct gw_front;
struct gw_s3;

struct gw_s3_cfg {
    const char *domain; /* virtual-hosted buckets: "<bucket>.<domain>"; NULL or "": none */
    const char *region; /* GetBucketLocation's answer; "" or "us-east-1": empty */
    int upload_expiry_ms; /* an upload begun longer ago is aborted; 0: never */
};

/* f is borrowed and must outlive the front door (cfg's strings too). */
int gw_s3_create(const struct gw_s3_cfg *cfg, struct gw_front *f, struct gw_s3 **out);
/* After the listener stopped and the front drained. NULL is a no-op. */
void gw_s3_destroy(struct gw_s3 *s);
/* The cm_http handlers; their arg is the front door. */
extern const struct cm_http_handlers gw_s3_handlers;
/* The request body the listener must accept: an aws-chunked encoding of
 * an object of max_object bytes. */
uint64_t gw_s3_max_body(uint64_t max_object);

#endif
