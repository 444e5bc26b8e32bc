/*
 * gw_s3_impl.h - what the S3 front door's files share (private to them):
 *
 *   gw_s3_front.c   listener handlers, routing, SigV4 auth, answers and
 *                   errors, request bodies, the copy worker
 *   gw_s3_obj.c     PutObject, GetObject/HeadObject, DeleteObject(s),
 *                   CopyObject, and storing a new version (also parts)
 *   gw_s3_list.c    buckets (List, Create, Delete, Head, Location) and
 *                   ListObjects v1/v2
 *   gw_s3_mpu.c     multipart uploads
 *   gw_s3_mpu_list.c  ListParts, ListMultipartUploads
 *
 * A struct s3_req lives from routing to its answer (s3_reply/s3_fail free
 * it once answered); while suspended it is counted in the front's
 * inflight, like the tenant API's requests, so shutdown drains both.
 */
#ifndef GW_S3_IMPL_H
#define GW_S3_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "cm_buf.h"
#include "cm_http.h"
#include "gw_commit.h"
#include "gw_front_impl.h"
#include "gw_meta.h"
#include "gw_s3.h"
#include "gw_s3_cksum.h"
#include "gw_s3_err.h"
#include "gw_s3_route.h"
#include "gw_s3_sig.h"
#include "gw_s3_xml.h"
#include "gw_state.h"

struct gw_s3_keycache;
struct gw_grace_bucket;
struct s3_req;

struct gw_s3 {
    struct gw_s3_cfg cfg;
    struct gw_front *f;
    struct gw_s3_keycache *keys; /* SigV4 signing keys, shared by the HTTP threads */
    /* The copy worker: CopyObject and UploadPartCopy hash and encode the
     * bytes they read here, not on the engine thread; it also sweeps the
     * uploads for expiry. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    struct s3_req *jobs, **jobs_tail;
    int stop;
    pthread_t worker;
};

#define S3_UPLOAD_ID_LEN GW_META_UPLOAD_ID_LEN /* hex */
#define S3_MIN_PART (5u << 20)
#define S3_BUCKET_KEY_MAX (2 + GW_S3_BUCKET_MAX) /* gw_meta_bucket_key */

struct s3_req {
    struct gw_s3 *s3;
    struct gw_front *f;
    struct cm_http_req *r;
    char id[17]; /* x-amz-request-id */
    char method[8];
    int async;      /* suspended: counted in f->inflight */
    int in_headers; /* checks before the body is read */
    int refreshed;  /* its access key was looked up again after a state refresh */
    struct gw_state_wait wait;
    struct gw_snap *snap; /* from auth to the answer: the tenant below lives in it */
    const struct gw_tenant *t;
    uint32_t tenant;
    uint64_t t0, bytes;
    struct gw_s3_route rt;
    struct gw_s3_auth auth;
    /* reads */
    struct gw_grace_bucket *served; /* served here (gw_front_hold) */
    struct gw_grace_bucket *grace;  /* in the grace period from before the layout read */
    struct gw_meta_obj *obj;
    uint64_t off, len;
    int partial;
    /* writes: the commit op, and what a CALL op's apply found */
    struct gw_commit_op commit;
    enum gw_s3_err err;
    const char *err_msg;
    struct cm_buf hdrs; /* the headers a new version keeps */
    struct gw_meta_attrs attrs;
    char *if_match;    /* PutObject's If-Match (owned), or NULL */
    int if_none_match; /* PutObject's If-None-Match: * */
    char upload_id[S3_UPLOAD_ID_LEN + 1];
    unsigned part;
    char part_key[GW_META_PART_KEY_LEN];
    size_t part_klen;
    /* the internal key of the record-only version an op puts (a bucket's,
     * an upload's), for gw_engine_committed */
    char ikey[S3_BUCKET_KEY_MAX];
    size_t iklen;
    /* an operation's own state, freed with the request */
    void *x;
    void (*x_free)(void *x);
    /* the copy worker's queue */
    void (*job)(struct s3_req *q);
    struct s3_req *next_job;
};

/* ---- gw_s3_front.c ---- */

/* Answers q and frees it (body per mem, as cm_http_respond). */
void s3_reply(struct s3_req *q, int status, const char *ctype, void *body, size_t len,
              enum cm_http_mem mem);
void s3_reply_xml(struct s3_req *q, int status, struct cm_buf *b); /* takes b's bytes */
void s3_reply_head(struct s3_req *q, int status, const char *ctype, uint64_t len);
/* An S3 error (XML body; none for HEAD); msg NULL: the code's default. */
void s3_fail(struct s3_req *q, enum gw_s3_err e, const char *msg);
/* The answer for an engine, committer or store error (SlowDown for BUSY). */
void s3_fail_rc(struct s3_req *q, int rc);
/* q is answered later, from another thread. */
void s3_suspend(struct s3_req *q);
/* gw_front_fwd.c: sends q on to peer, the gateway that owns its tenant
 * (NULL, or one without an S3 API: ServiceUnavailable), and answers it
 * with what comes back. */
struct gw_peer;
void s3_forward(struct s3_req *q, const struct gw_peer *peer);
/* The header callback of the SigV4 and body checks (arg: the cm_http_req). */
const char *s3_hdr(void *arg, const char *lname);
/* A query parameter of q (decoded as SigV4 does) into out[cap]: 1, 0 absent, -1 too long. */
int s3_query(struct s3_req *q, const char *name, char *out, size_t cap);
/*
 * q's body, taken from cm_http (out: TRANSFERRED, cm_free_big; NULL when
 * empty), aws-chunked decoded in place, with every check the request asks
 * for (signed SHA-256, Content-MD5, x-amz-checksum-*, the chunk
 * signatures and trailer): GW_S3_OK with *len, *cap and its MD5 (md5 may
 * be NULL), or the error (*why).
 */
enum gw_s3_err s3_body(struct s3_req *q, char **out, size_t *len, size_t *cap, uint8_t md5[16],
                       const char **why);
/* Queues q's commit op as COMMIT_CALL with apply and done. */
void s3_commit(struct s3_req *q,
               int (*apply)(struct gw_meta_batch *b, struct gw_commit_op *op,
                            const struct gw_snap *s),
               void (*done)(struct gw_commit_op *op));
/* q from its commit op (in apply and done). */
struct s3_req *s3_of(struct gw_commit_op *op);
/* apply's refusal of the op before it wrote anything: q->err and op->rc. */
int s3_refuse(struct gw_commit_op *op, enum gw_s3_err e, const char *msg);
/* In done: the answer for an op that failed (q->err, tenant gone, store error). */
void s3_fail_commit(struct s3_req *q);
/* Runs fn(q) on the copy worker (q suspended). */
void s3_queue_job(struct s3_req *q, void (*fn)(struct s3_req *q));
/* The S3 ETag of a version: MD5, "MD5-N", or the native CRC-64 for a
 * version written by the tenant API. */
void s3_etag(const struct gw_layout *l, const struct gw_meta_attrs *a, char out[GW_S3_ETAG_MAX]);
/* The owner of q's buckets and objects: the tenant. */
void s3_owner(struct s3_req *q, struct gw_s3_xml_owner *o, char id[16]);
/* Bucket b exists for q's tenant: 0, CM_E_NOTFOUND, or the store's error;
 * its creation time in *created_ms (may be NULL). */
int s3_bucket_get(struct s3_req *q, const char *b, size_t blen, uint64_t *created_ms);
/* Likewise inside a commit (the check that counts). */
int s3_bucket_in(struct gw_meta_batch *b, uint32_t tenant, const char *bucket, size_t blen);

/* ---- gw_s3_obj.c ---- */

/* PutObject and UploadPart before their body: 0 to read it, or answered. */
int s3_put_headers(struct s3_req *q);
void s3_put_object(struct s3_req *q); /* PutObject, UploadPart */
void s3_get_object(struct s3_req *q); /* GetObject, HeadObject */
void s3_delete_object(struct s3_req *q);
void s3_delete_objects(struct s3_req *q);
void s3_copy_object(struct s3_req *q); /* CopyObject, UploadPartCopy */
/* The headers a new version keeps, from q's request into q->hdrs: 0, or
 * answered (MetadataTooLarge, InvalidArgument). */
int s3_collect_hdrs(struct s3_req *q);
/*
 * Stores body[len] (TRANSFERRED, room for cap) as a new version of q's
 * object or part, with q->attrs (md5 set by the caller) and q->hdrs; the
 * answer is the ETag (and for a copy, the copy result). On any thread
 * but the engine's.
 */
void s3_store(struct s3_req *q, void *body, uint64_t len, uint64_t cap);

/* ---- gw_s3_list.c ---- */

void s3_list_buckets(struct s3_req *q);
void s3_create_bucket(struct s3_req *q);
void s3_delete_bucket(struct s3_req *q);
void s3_head_bucket(struct s3_req *q); /* HeadBucket, GetBucketLocation */
void s3_list_objects(struct s3_req *q);

/* ---- gw_s3_mpu.c ---- */

void s3_create_mpu(struct s3_req *q);
void s3_complete_mpu(struct s3_req *q);
void s3_abort_mpu(struct s3_req *q);
/* UploadPart's and UploadPartCopy's partNumber and uploadId, and that the
 * upload exists for q's object: 0, or answered. Sets q->upload_id,
 * q->part, q->part_key. */
int s3_part_target(struct s3_req *q);
/* In a commit: the upload exists and is q's object's (else NoSuchUpload). */
int s3_upload_in(struct gw_meta_batch *b, struct s3_req *q, struct gw_commit_op *op);
/* DeleteBucket: deletes the uploads in progress in q's bucket in b, their
 * parts' versions appended to olds (gw_meta_old, caller frees). */
int s3_abort_bucket_uploads(struct gw_meta_batch *b, struct s3_req *q, struct cm_buf *olds);
/* The copy worker's sweep: aborts every upload of every tenant begun
 * more than cfg.upload_expiry_ms ago, a commit at a time. */
void s3_expire_uploads(struct gw_s3 *s3);
#define S3_PART_KEY_LEN GW_META_PART_KEY_LEN
#define S3_UPLOAD_KEY_LEN (2 + S3_UPLOAD_ID_LEN)
#define S3_PART_PREFIX_LEN (S3_PART_KEY_LEN - 5) /* "\0p<upload id>/" */
/* What gw_s3_mpu_list.c shares of the uploads: an upload from its
 * version (CM_E_PROTO when l is not one); the internal key of part n of
 * upload id (out: GW_META_PART_KEY_LEN, *len set); a part key's number;
 * q's uploadId parameter into q->upload_id (0, or answered); that upload
 * existing for q's object, in its own read (0, or answered). */
/* An upload, as its record-only version keeps it (borrowed). */
struct s3_upload {
    uint64_t created_ms;
    const char *key; /* native: the object's */
    size_t klen;
    const char *hdrs;
    size_t hlen;
};
int s3_upload_from(const struct gw_layout *l, const struct gw_meta_attrs *a, struct s3_upload *u);
void s3_part_key(const char *id, unsigned n, char out[GW_META_PART_KEY_LEN], size_t *len);
unsigned s3_part_no(const char *k);
int s3_upload_param(struct s3_req *q);
int s3_upload_check(struct s3_req *q);

/* ---- gw_s3_mpu_list.c ---- */

void s3_list_parts(struct s3_req *q);
void s3_list_uploads(struct s3_req *q);

#endif
