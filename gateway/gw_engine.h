/*
 * gw_engine.h - the gateway's chunk data path (private to gateway/).
 *
 *   HTTP thread ──put/get──▶ engine (libevent thread, one pipelined
 *                            connection per node) ──wire──▶ shoal-fnstore
 *                ◀─callback─
 *
 * The engine owns: connections to nodes, erasure coding, holder choice and
 * fallback to parity, and the persistent buffer (each new object's bytes
 * stay here until every chunk reports persisted in COS; a chunk whose
 * holder dies first is stored again on another node). It owns no
 * metadata: the front keeps layouts in LMDB and is told of changes.
 *
 * Layout of an object version: nstripes stripes; stripe s is k data chunks
 * of chunk_size bytes plus m parity chunks. There are as few stripes as
 * max_chunk allows and chunks just big enough for them (erasure-coded ones
 * rounded up to 64 bytes), so the zero padding at the end is small;
 * chunk j of every stripe (its position) lives on holders[j], with wire
 * index s * (k + m) + j. k == 1 means 1+m whole copies (small objects): then
 * every "parity" chunk is a copy of the data chunk.
 *
 * Decisions are policies (policies/): which holders a read asks and when
 * one is slow (pol_rs.h, chosen by cfg.rs), where a new version's chunks
 * go (pol_holders.h). Files: gw_engine.c (this API), gw_read.c (reads),
 * gw_pbuf.c (the persistent buffer), gw_census.c (the scrub's view),
 * gw_stripe.c (layout and coding).
 *
 * Out of memory fails the request it serves, never the process: its
 * callback gets -ENOMEM (the front answers 503). Work with no caller
 * waiting (a buffered chunk's resend, a STAT, a rebuild) retries at the
 * next poll; a delete or track that cannot even be queued is logged and
 * dropped.
 *
 * Threads: every function may be called from any thread. Callbacks run
 * on the engine thread: do not block in them. The one exception: a put or
 * get that cannot even be queued (out of memory) calls back with -ENOMEM
 * on the caller's thread, before returning.
 */
#ifndef GW_ENGINE_H
#define GW_ENGINE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_ec.h"

#define GW_MAX_HOLDERS CM_EC_MAX_CHUNKS

struct gw_layout {
    uint32_t tenant;
    uint64_t object;   /* random, unique per stored version */
    uint64_t version;  /* X-Shoal-Version; set by the front at commit */
    uint64_t size;     /* object bytes */
    uint64_t etag;     /* CRC64 of the object bytes */
    uint8_t k, m;
    uint32_t chunk_size;
    uint32_t nstripes; /* 0 for an empty object */
    uint32_t holders[GW_MAX_HOLDERS]; /* node ids, k + m of them */
    uint64_t persisted; /* bit j: every chunk of position j is in COS */
    /* The instance tag (CM_WIRE_TAG) each chunk was placed in, by wire
     * index: gw_layout_nchunks() of them, 0 = unknown; NULL: all unknown.
     * Reads send them so that a node answers STALE at once for a chunk
     * whose instance is gone. A layout value does not own the array: a
     * struct copy shares it and must not outlive its owner. A layout that
     * holds an array of its own (gw_layout_copy, gw_meta_decode_tags)
     * releases it with gw_layout_fini. */
    uint32_t *tags;
};

/* Chunks of the version: nstripes * (k + m). */
static inline size_t
gw_layout_nchunks(const struct gw_layout *l)
{
    return (size_t)l->nstripes * ((size_t)l->k + l->m);
}

/* The tag of wire index idx (< gw_layout_nchunks), 0 when unknown. */
static inline uint32_t
gw_layout_tag(const struct gw_layout *l, uint32_t idx)
{
    return l->tags != NULL ? l->tags[idx] : 0;
}

/* *dst = *src, with a tag array of dst's own (NULL when src has none).
 * 0, or -ENOMEM: then dst is a copy whose tags are unknown (NULL). */
static inline int
gw_layout_copy(struct gw_layout *dst, const struct gw_layout *src)
{
    *dst = *src;
    if (src->tags == NULL) {
        return 0;
    }
    dst->tags = malloc(gw_layout_nchunks(src) * sizeof(*src->tags));
    if (dst->tags == NULL) {
        return -ENOMEM;
    }
    memcpy(dst->tags, src->tags, gw_layout_nchunks(src) * sizeof(*src->tags));
    return 0;
}

/* Frees the tag array l owns; tags become unknown. */
static inline void
gw_layout_fini(struct gw_layout *l)
{
    free(l->tags);
    l->tags = NULL;
}

struct gw_node {
    uint32_t id;
    char addr[64]; /* "127.0.0.1:9500" */
    int up;        /* controller's view; the engine also tracks its own */
    int draining;  /* being removed (controller): read from it, put nothing new there */
};

struct pol_rs_ops;

struct gw_engine_cfg {
    uint32_t max_chunk;     /* bytes per chunk at most (stripe = k * this) */
    int io_timeout_ms;      /* a chunk op that takes longer failed */
    int slow_ms;            /* a GET holder slower than this: ask parity too */
    int hedge_pct;          /* holders marked slow: at most this % of chunk GETs
                               sent (pol_rs_budget); 0: no bound */
    int persist_poll_ms;    /* how often pending chunks are STATed */
    int redrive_after_ms;   /* unpersisted chunk on an unreachable holder */
    /* Replica selection for reads (static, e.g. from pol_rs_find); NULL:
     * POL_RS_DEFAULT. The engine creates its own instance. */
    const struct pol_rs_ops *rs;
};

struct gw_engine;

/* What a layout report says. */
enum gw_report {
    /* Holders or tags changed (a position moved or was stored again): the
     * front stores them if (tenant, object) is still a live version. */
    GW_REPORT_CHANGED,
    /* The version left the persistent buffer: every chunk is persisted and
     * its META record is logged. The front stores holders and tags if they
     * changed, and drops the version from pending. */
    GW_REPORT_DONE,
    /* The tombstone META record of (tenant, object, version) is logged:
     * the front drops it from pending. Only those fields are set. */
    GW_REPORT_TOMB,
};

/* layout is borrowed for the call, its tags included. */
typedef void (*gw_layout_cb)(void *arg, const struct gw_layout *layout, enum gw_report what);

/* cfg is copied. 0, -ENOMEM, or the loop's failure to start. */
int gw_engine_create(const struct gw_engine_cfg *cfg, gw_layout_cb on_layout, void *arg,
                     struct gw_engine **out);
void gw_engine_destroy(struct gw_engine *e); /* NULL is a no-op */

/* Replaces the node directory (copied). */
void gw_engine_set_nodes(struct gw_engine *e, const struct gw_node *nodes, size_t n);

/* Replaces the tenants' weights (copied): ids[n] ascending, weights[n] > 0
 * (others count as absent). Reads tell the RS policy each tenant's over the
 * least of them (pol_rs_view.weight); an absent tenant's is 1. */
void gw_engine_set_weights(struct gw_engine *e, const uint32_t *ids, const double *weights,
                           size_t n);

/* Bytes a PUT's data buffer needs for the engine to zero-pad the last
 * stripe in place instead of copying it: size rounded up to whole stripes. */
uint64_t gw_engine_put_room(const struct gw_engine *e, uint8_t k, uint64_t size);

/*
 * Stores data[size] for tenant as a new object. data is TRANSFERRED (freed
 * with cm_free_big once persisted or on failure); it has room for cap >= size
 * bytes (see gw_engine_put_room). placement: the partition's
 * preferred node ids (borrowed for the call), in order; holder j is
 * placement[j] when it is up, else another up node (distinct while there
 * are enough). k == 1 stores 1+m whole copies. cb runs once: status 0 with
 * the layout (borrowed for the call; version 0, persisted bits so far) once
 * every chunk is in node memory; CM_E_UNAVAIL when fewer than k nodes are
 * reachable; CM_E_BUSY when a node answered "queue full"; -ENOMEM.
 * freed (may be NULL) runs once when data is freed: every chunk persisted
 * (or the object dropped) and no socket still sending it, or the put
 * failed; on the engine's thread, or the caller's when the put cannot
 * start. The admission of large PUTs holds their bytes until then.
 */
typedef void (*gw_put_cb)(void *arg, int status, const struct gw_layout *layout);
void gw_engine_put(struct gw_engine *e, uint32_t tenant, const uint32_t *placement, size_t nplace,
                   uint8_t k, uint8_t m, void *data, uint64_t size, uint64_t cap, gw_put_cb cb,
                   void *arg, void (*freed)(void *arg), void *freed_arg);

/*
 * Reads bytes [off, off + len) of the object (len may be 0). Fetches data
 * chunks from their holders, replacing a holder that errs, answers STALE
 * (the chunk's instance is gone) or is slower than slow_ms by parity
 * (decode) or another copy. Stale holders are asked again, flagged
 * CM_WF_COS_OK (reload from COS), only when too few other chunks are left.
 * layout is borrowed for the call (its tags are copied). cb runs once with a buffer of len bytes
 * (TRANSFERRED: release with cm_free_big), or a negative status
 * (CM_E_UNAVAIL, CM_E_BUSY, -ENOMEM).
 */
typedef void (*gw_get_cb)(void *arg, int status, void *buf, size_t len);
void gw_engine_get(struct gw_engine *e, const struct gw_layout *layout, uint64_t off,
                   uint64_t len, gw_get_cb cb, void *arg);

/* Deletes every chunk of layout after delay_ms (so readers that loaded the
 * old layout can finish). Best effort; fire and forget. */
void gw_engine_delete(struct gw_engine *e, const struct gw_layout *layout, int delay_ms);

/*
 * META records (gw_meta.h, gw_mrec): what a gateway that lost its metadata
 * rebuilds it from (shoal-gateway --rebuild-meta). A version's record goes out once
 * it is committed and every chunk is persisted, a tombstone once a DELETE
 * is committed, each to m + 1 distinct nodes (the version's holders in
 * position order first, then other usable nodes), which log it in COS
 * before they answer. A node that stays unreachable for redrive_after_ms
 * is replaced; other failures are sent again at the next poll. A node that
 * answers CM_E_PROTO keeps no log: the record counts as sent there
 * (meta_unlogged).
 */

/*
 * The front committed layout (tenant, object, version set) as the live
 * version of key, with attrs (what the version record keeps beside the
 * layout, gw_meta.h; may be NULL); all copied. The version stays in the
 * persistent buffer until its META record is logged, then it is reported
 * GW_REPORT_DONE. A record-only version (k = 0: a composite, a bucket, an
 * upload, which the buffer never held) has its record sent at once, and
 * is reported GW_REPORT_DONE once it is logged.
 */
struct gw_meta_attrs;
void gw_engine_committed(struct gw_engine *e, const struct gw_layout *layout,
                         const struct gw_meta_attrs *attrs, const char *key, size_t klen);

/* A DELETE of key was committed; layout is the deleted version (tenant,
 * object, version, m, holders; borrowed). Sends its tombstone record and
 * reports GW_REPORT_TOMB once it is logged. Also used at start for the
 * tombstones still pending (holders unknown: nstripes and k 0). */
void gw_engine_tombstone(struct gw_engine *e, const struct gw_layout *layout, const char *key,
                         size_t klen);

/* A migration committed a move of a stored version: sends its record again
 * (MOVED, gen: the pass's placement epoch) with the layout and attrs as
 * stored now (all copied), so that --rebuild-meta finds the new holders.
 * logged(arg, 0) runs on the engine's thread once m + 1 nodes logged it;
 * logged(arg, rc < 0) instead when it cannot be sent (out of memory, the
 * engine stopping), possibly on the caller's thread. */
void gw_engine_relog(struct gw_engine *e, const struct gw_layout *layout,
                     const struct gw_meta_attrs *attrs, const char *key, size_t klen, uint32_t gen,
                     void (*logged)(void *arg, int rc), void *arg);

/* After a restart: a committed version still pending (layout, attrs and
 * key copied). Keeps polling it until every chunk is persisted, rebuilding
 * (by decoding from other holders) chunks whose holder is gone, then sends
 * its META record and reports GW_REPORT_DONE. A record-only version: as
 * gw_engine_committed. */
void gw_engine_track(struct gw_engine *e, const struct gw_layout *layout,
                     const struct gw_meta_attrs *attrs, const char *key, size_t klen);

/*
 * Migration: moves the positions in mask of a stored version (layout
 * borrowed for the call; all its chunks persisted) to the nodes to[j], j
 * in mask. Each moving chunk is read from its current holder (rebuilt by
 * decoding when that read fails), PUT to its new holder and tracked until
 * persisted there, as the persistent buffer tracks a version after a
 * restart; a new holder that becomes unreachable is replaced (holder
 * policy). cb runs once: 0 with the new layout (borrowed for the call:
 * holders, every persisted bit set) once every moved chunk is in COS;
 * -EBUSY (the version is still buffered or already moving), CM_E_UNAVAIL
 * (a new holder is not usable), -ECANCELED (its delete came first, or the
 * engine stopped) or -ENOMEM. Nothing is committed or deleted: that is
 * the caller's. CM_E_BADARG (a bad layout or mask) on the caller's thread.
 */
typedef void (*gw_move_cb)(void *arg, int status, const struct gw_layout *layout);
void gw_engine_move(struct gw_engine *e, const struct gw_layout *layout, uint64_t mask,
                    const uint32_t *to, gw_move_cb cb, void *arg);
/* For a clean stop, once no request is left: fires every delayed delete
 * now and waits up to timeout_ms for the chunk DELs in flight to be
 * answered (those kept for a holder that is down stay kept, and are lost
 * with the engine). Any thread but the engine's. The DELs still in flight
 * at the end. */
size_t gw_engine_flush_deletes(struct gw_engine *e, int timeout_ms);
/* Deletes the chunks of the positions in mask from layout's holders but
 * not their COS objects (CM_WF_KEEP_COS): what a moved version left on the
 * nodes it moved away from. Fire and forget. */
void gw_engine_drop(struct gw_engine *e, const struct gw_layout *layout, uint64_t mask);

/*
 * The scrub's view of the engine (gw_census.c; gw_scrub.c). Each posts
 * onto the engine thread and answers there; -ENOMEM when it cannot be
 * posted (then nothing happens and cb will not run).
 *
 * gw_engine_census: cb gets the ids of every version the engine holds
 * (being put, buffered, tracked, moved, read, or waiting for a delayed
 * delete) and of the usable nodes, arrays the receiver frees; or status
 * -ENOMEM and none.
 * gw_engine_list: cb gets one page of node's chunks from cursor
 * (CM_OP_LIST, cm_wire.h) written to buf (cap bytes, borrowed
 * until cb): the status (a transport error or the node's), n records
 * (cm_wire_note encoded) and the next cursor.
 * gw_engine_del_chunks: DELs n chunks of node (memory and COS), each kept
 * and sent again until the node takes it, as a delete's (recs copied).
 */
struct gw_vid {
    uint64_t object;
    uint32_t tenant;
};
struct gw_census {
    int status;
    struct gw_vid *ids;
    size_t nids;
    uint32_t *nodes;
    size_t nnodes;
};
typedef void (*gw_census_cb)(void *arg, struct gw_census *c);
int gw_engine_census(struct gw_engine *e, gw_census_cb cb, void *arg);
typedef void (*gw_list_cb)(void *arg, int status, const uint8_t *recs, size_t n, uint64_t next);
int gw_engine_list(struct gw_engine *e, uint32_t node, uint64_t cursor, uint8_t *buf, size_t cap,
                   gw_list_cb cb, void *arg);
struct cm_wire_note;
int gw_engine_del_chunks(struct gw_engine *e, uint32_t node, const struct cm_wire_note *recs,
                         size_t n);

struct gw_engine_stats {
    uint64_t buffered_bytes;   /* persistent buffer */
    uint64_t buffered_objects;
    uint64_t redriven_chunks;  /* total */
    uint64_t parity_reads;     /* total GET stripes served by decoding */
    uint64_t persist_notes;    /* total chunks a node announced persisted */
    uint64_t persist_stats;    /* total STATs sent (notices lost or late) */
    uint64_t stale_chunks;     /* total chunk GETs answered STALE */
    uint64_t late_reads;       /* total chunk GETs sent again with CM_WF_COS_OK */
    uint64_t hedges;           /* total holders marked slow (read around) */
    uint64_t hedges_denied;    /* total overdue holders the budget kept waiting */
    uint64_t meta_records;     /* total META records logged by a node */
    uint64_t meta_unlogged;    /* total META records refused by a node without a log */
    uint64_t meta_waiting;     /* versions and tombstones whose record is not logged yet */
    uint64_t dels_waiting;     /* chunk DELs kept for holders that did not take them */
    uint64_t dels_resent;      /* total chunk DELs sent again */
    uint64_t dels_dropped;     /* total chunk DELs given up (over the bound, or at stop) */
};
void gw_engine_stats(struct gw_engine *e, struct gw_engine_stats *out);

struct cm_buf;
/* Appends the engine's Prometheus families to out (any thread):
 *   shoal_gateway_info{rs}                         1, the RS policy in use
 *   shoal_gateway_rs_window{tenant,node}           its window (chunk GETs)
 *   shoal_gateway_rs_rtt_seconds{tenant,node}      its RTT estimate
 *   shoal_gateway_rs_base_rtt_seconds{tenant,node} its base RTT
 * The per (tenant, node) figures are those the policy keeps (none for
 * "uniform"), as of the last chunk GET that ended at least a second after
 * the previous snapshot. */
void gw_engine_metrics(struct gw_engine *e, struct cm_buf *out);

#endif
