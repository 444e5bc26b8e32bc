/*
 * fns_ilog.h - the node's insertion log (format: cm_ilog.h): what it
 * holds, which batch to write next, and which log objects may go. No I/O:
 * the node writes, reads and deletes the objects (fns_node_ilog.c).
 *
 *   records ──add──▶ pending batch ──take──▶ in flight ──done(ok)──▶ a log object
 *   (chunk, delete,  (due after its  (one at a time, in seq order,
 *    meta, instance)  linger, when     so objects are durable in order)
 *                     full, or flushed)
 *
 * Liveness. A record is live while a replay still needs it:
 *   chunk     the newest record of its key, and its instance not released;
 *   instance  the newest record of its tag, the instance not released;
 *   meta      the highest version of its (tenant, key) in this log
 *             (a tombstone included: it is live while it is the highest);
 *   delete, and an instance's release: never counted live; they matter
 *             only while an older record they supersede is still there.
 * A record superseded by a record of a later batch dies when that batch
 * is durable (until then a crash would need it).
 *
 * Deletion rule: log objects go oldest first, each once every record in it
 * is dead. Going oldest first is what keeps deletes and releases right: a
 * delete record always outlives the records it kills. So that a few long
 * lived records (tombstones, chunks of an old but active instance) do not
 * pin the whole log, the oldest object is carried forward - its live
 * records appended again, after which it is dead - when at most a quarter
 * of its records are live, or when the log holds more than twice its live
 * records plus FNS_ILOG_SLACK.
 *
 * Threads: none of its own; the node's loop thread only.
 */
#ifndef FNS_ILOG_H
#define FNS_ILOG_H

#include <stddef.h>
#include <stdint.h>

#include "cm_hmap.h"
#include "fns_chunk.h"
#include "pol_sms.h"

#define FNS_ILOG_SLACK 1024u /* dead records tolerated before carrying forward */
/* A batch that holds this many records goes without waiting out its
 * linger: four packed segment batches' chunk records, one write. */
#define FNS_ILOG_BATCH_MAX 256u

/* Where a chunk's bytes are in COS: seg 0 is its own object. */
struct fns_ilog_loc {
    uint64_t seg;
    uint32_t off, blob_len;
};

/* The newest chunk record of a key (borrowed from the log). */
struct fns_ilog_chunk {
    struct cm_hnode hn;
    struct fns_key key;
    uint32_t tag, len;
    struct fns_ilog_loc loc;
    uint64_t seq; /* its batch */
};

/* The newest instance record of a tag not released. */
struct fns_ilog_inst {
    struct cm_hnode hn;
    uint32_t tag, tenant;
    uint64_t gen;
    enum pol_sms_state state;
    uint64_t seq;
};

struct fns_ilog_stats {
    uint64_t objects;         /* log objects in COS */
    uint64_t records, live;   /* records in them, and how many are live */
    uint64_t chunks, metas;   /* keys with a live chunk / meta record */
    uint64_t batches_written; /* since start */
    uint64_t records_written, bytes_written;
    uint64_t objects_deleted, carried;
};

struct fns_ilog;

/* *out caller-owned. */
void fns_ilog_create(uint32_t node, struct fns_ilog **out);
void fns_ilog_destroy(struct fns_ilog *x); /* NULL is a no-op */

/* Start-up: applies the log object seq (buf: its bytes, len). Call in seq
 * order, then fns_ilog_replayed. 0, or CM_E_CRC (the object is ignored). */
int fns_ilog_replay(struct fns_ilog *x, uint64_t seq, const uint8_t *buf, size_t len);
/* Batches are numbered from above the newest replayed. */
void fns_ilog_replayed(struct fns_ilog *x);

/* Records, appended to the pending batch. A chunk of tag at loc. */
void fns_ilog_add_chunk(struct fns_ilog *x, uint32_t tag, const struct fns_key *key, uint32_t len,
                        const struct fns_ilog_loc *loc);
/* key was deleted: appended only when the log holds a chunk record of it. */
void fns_ilog_add_delete(struct fns_ilog *x, const struct fns_key *key);
/* An instance's state (RELEASED: its chunk records die with it). */
void fns_ilog_add_instance(struct fns_ilog *x, uint32_t tag, uint32_t tenant, uint64_t gen,
                           enum pol_sms_state state);
/* A gateway's metadata records, one or more back to back (data copied),
 * all in the pending batch; waiter (opaque, may be NULL) comes back from
 * fns_ilog_done once that batch is durable. 0, or CM_E_BADARG, nothing
 * appended, when data is not a run of meta records (docs/internal-api.md). */
int fns_ilog_add_meta(struct fns_ilog *x, const uint8_t *data, size_t len, void *waiter);

/* The newest chunk record of key, or NULL. */
const struct fns_ilog_chunk *fns_ilog_find(const struct fns_ilog *x, const struct fns_key *key);
/* fn for every live chunk record of tag (fn must not add records). */
void fns_ilog_each_chunk(struct fns_ilog *x, uint32_t tag,
                         void (*fn)(void *arg, const struct fns_ilog_chunk *c), void *arg);
/* The keys of every live chunk record, a stretch at a time (as
 * fns_store_walk_keys). */
int fns_ilog_walk_keys(struct fns_ilog *x, size_t *pos, size_t limit,
                       void (*fn)(void *arg, const struct fns_key *key), void *arg);
/* fn for every instance not released (fn must not add records). */
void fns_ilog_each_instance(struct fns_ilog *x,
                            void (*fn)(void *arg, const struct fns_ilog_inst *in), void *arg);

/*
 * Grouping. The pending batch is due once linger_ns have passed since its
 * oldest record was first seen by fns_ilog_take or fns_ilog_wait (now, a
 * monotonic clock in ns), once it holds max_records (0: no bound), or
 * after fns_ilog_flush. Defaults 0, 0: due at once.
 */
void fns_ilog_set_linger(struct fns_ilog *x, uint64_t linger_ns, uint32_t max_records);
/* The records pending now go at the next take, however young (shutdown). */
void fns_ilog_flush(struct fns_ilog *x);
/* ns from now until the pending batch is due (0: now); UINT64_MAX when
 * nothing is pending or a batch is in flight (its done, or the next
 * record, is when to look again). */
uint64_t fns_ilog_wait(struct fns_ilog *x, uint64_t now);
/*
 * The next batch to write: 1 with *buf, *len (borrowed until
 * fns_ilog_done) and *seq when the pending batch is due and no batch is in
 * flight (a batch whose write failed is handed out again at once), else 0.
 */
int fns_ilog_take(struct fns_ilog *x, uint64_t now, const uint8_t **buf, size_t *len,
                  uint64_t *seq);
/* The batch in flight was written (ok) or not. On ok, *waiters (malloc'd,
 * transferred; NULL when none) gets its waiters; returns their count. */
size_t fns_ilog_done(struct fns_ilog *x, int ok, void ***waiters);
/* 1 and *seq (forgotten here: delete it from COS) when the oldest log
 * object is dead. */
int fns_ilog_deletable(struct fns_ilog *x, uint64_t *seq);
/* 1 and *seq when the oldest log object is due to be carried forward
 * (read it and call fns_ilog_carry; one at a time). */
int fns_ilog_carry_due(struct fns_ilog *x, uint64_t *seq);
/* Appends again the live records of log object seq (its bytes, or NULL
 * when it could not be read: tried again later). */
void fns_ilog_carry(struct fns_ilog *x, uint64_t seq, const uint8_t *buf, size_t len);

void fns_ilog_stats(const struct fns_ilog *x, struct fns_ilog_stats *out);
/* Records not yet durable (pending, or in flight). */
size_t fns_ilog_pending(const struct fns_ilog *x);

/* A meta record's head (the gateway's gw_mrec: kind 1 a version's record,
 * 2 a tombstone, 3 a version's record again after a move, with its gen). */
struct fns_meta_head {
    uint8_t kind;
    uint32_t tenant;
    const uint8_t *key; /* points into the record */
    uint16_t key_len;
    uint64_t version;
    uint32_t gen; /* kind 3; 0 otherwise */
};
/* 0 with *h, or CM_E_BADARG when data[len] is not exactly one record. */
int fns_ilog_meta_parse(const uint8_t *data, size_t len, struct fns_meta_head *h);

#endif
