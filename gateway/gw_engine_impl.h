/*
 * gw_engine_impl.h - what the engine's files share (private to the engine:
 * gw_engine.c, gw_read.c, gw_pbuf.c).
 *
 *   gw_engine.c  the public API: validate, encode, post onto the loop thread
 *   gw_read.c    stripe fetches (RS policy, hedging, decode) and GETs
 *   gw_pbuf.c    the persistent buffer: PUT completion, persisted tracking,
 *                STAT polling, redrive, rebuild by decoding, delayed deletes
 *   gw_mlog.c    META records: a version's once it is committed and
 *                persisted, tombstones; their nodes, sends and retries
 *   gw_census.c  the scrub's view: the ids held, a node's chunk list
 *
 * Threads: every record here lives on the gw_net loop thread once posted;
 * only the ec cache (lock) and the stats (atomics) are touched elsewhere.
 */
#ifndef GW_ENGINE_IMPL_H
#define GW_ENGINE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cm_ec.h"
#include "cm_hmap.h"
#include "gw_engine.h"
#include "gw_meta.h"
#include "gw_stripe.h"
#include "pol_rs.h"

struct cm_wire_note;
struct gw_net;
struct gw_net_req;
struct gw_timer;
struct gw_op;
struct gw_mjob;
struct pol_holders;
struct pol_holders_ops;

#define GW_GET_PARALLEL 8
#define GW_REBUILD_PARALLEL 4

/* Doubly linked list helpers over any struct with prev/next. */
#define DL_PUSH(head, x)                                                                           \
    do {                                                                                           \
        (x)->prev = NULL;                                                                          \
        (x)->next = (head);                                                                        \
        if (head) {                                                                                \
            (head)->prev = (x);                                                                    \
        }                                                                                          \
        (head) = (x);                                                                              \
    } while (0)
#define DL_UNLINK(head, x)                                                                         \
    do {                                                                                           \
        if ((x)->prev) {                                                                           \
            (x)->prev->next = (x)->next;                                                           \
        } else {                                                                                   \
            (head) = (x)->next;                                                                    \
        }                                                                                          \
        if ((x)->next) {                                                                           \
            (x)->next->prev = (x)->prev;                                                           \
        }                                                                                          \
        (x)->prev = (x)->next = NULL;                                                              \
    } while (0)

struct gw_sfetch;
typedef void (*gw_sfetch_done_fn)(void *arg, struct gw_sfetch *f, int status);

struct gw_sfetch_ctx {
    struct gw_sfetch *f;
    uint32_t pos;
};

/* One stripe read: gets the wanted chunks, directly or by decoding. Its
 * masks are the RS policy's view (v), kept up to date in place. */
struct gw_sfetch {
    struct gw_sfetch *prev, *next;   /* owner's list */
    struct gw_sfetch *hprev, *hnext; /* the engine's held reads, while held */
    struct gw_engine *e;
    const struct gw_layout *lay; /* borrowed from the owner */
    uint32_t stripe;
    uint8_t *bufs[GW_MAX_HOLDERS]; /* caller's buffers (NULL: own[i]) */
    uint8_t *own[GW_MAX_HOLDERS];
    struct pol_rs_view v;
    uint64_t stale; /* positions answered STALE (also in v.failed until late) */
    uint64_t late;  /* stale positions asked again with CM_WF_COS_OK */
    uint64_t kept;  /* overdue positions the hedge budget kept waiting (counted) */
    uint64_t asked_ns[GW_MAX_HOLDERS];
    struct gw_net_req *reqs[GW_MAX_HOLDERS];
    struct gw_sfetch_ctx ctx[GW_MAX_HOLDERS];
    struct gw_timer *slow_timer;
    uint64_t slow_at; /* when slow_timer fires; 0: not armed */
    int nlaunch;
    int first_pos;
    int served_by_backup;
    int saw_busy;
    int saw_nomem;
    int held;
    int finished;
    gw_sfetch_done_fn done;
    void *arg;
    uint32_t pos; /* rebuild: position being rebuilt */
    uint32_t gen;
};

/* The persistent buffer's state of one position of an object. */
struct gw_position {
    uint32_t gen;
    uint32_t acked;      /* stripes acked in memory at this gen */
    uint32_t npersisted; /* stripes known persisted on the holder */
    uint32_t moves;
    uint32_t next_stripe; /* rebuild cursor */
    int rebuilding;       /* fetches in flight */
    int stat_out;
    int put_out;
    int need_move;
    int stalled; /* resend (or rebuild) from stripe 0 at the next poll */
};

enum gw_obj_state { OBJ_PUTTING, OBJ_BUFFERED, OBJ_TRACKED };

/* A new version being put or buffered, or a tracked one (no bytes). */
struct gw_obj {
    struct gw_obj *prev, *next;
    struct cm_hnode hn; /* in the engine's object map, while linked */
    struct gw_engine *e;
    int refs; /* 1 while live + 1 per payload referenced by a socket buffer */
    int linked;
    int placed;    /* holders chosen: chunks may exist on them */
    int accounted; /* bytes counted in the buffered stats */
    int init_status;
    int nomem; /* an allocation failed while putting: the put fails */
    enum gw_obj_state state;
    struct gw_layout lay;
    struct gw_stripes st; /* no data: tracked */
    uint8_t *persisted;   /* per wire index */
    uint32_t place[GW_MAX_HOLDERS];
    size_t nplace;
    struct gw_position pos[GW_MAX_HOLDERS];
    struct gw_op *ops;
    struct gw_sfetch *fetches;
    int dirty;     /* holders or tags changed since the last report */
    int committed; /* the front committed it (version, key and attrs set) */
    int meta_done; /* its META record is logged: it may leave */
    char *key;     /* once committed */
    size_t klen;
    struct gw_meta_attrs attrs; /* what its record keeps beside the layout */
    void *attrs_mem;            /* attrs' strings (owned) */
    struct gw_mjob *mjob; /* its META record on its way */
    uint64_t stat_at;     /* ns: STAT unpersisted chunks from then on */
    uint64_t stat_gap;    /* ns: wait for notices this long before STATs */
    gw_put_cb cb;
    void *cb_arg;
    void (*freed)(void *arg); /* once its bytes are freed (gw_engine_put) */
    void *freed_arg;
    /* A migration (gw_engine_move): the version's layout before the move,
     * which its moving chunks are read from, and whom to tell once. */
    struct gw_layout *src;
    uint64_t move_mask;
    gw_move_cb move_cb;
    void *move_arg;
};

struct gw_get {
    struct gw_get *prev, *next;
    struct gw_engine *e;
    struct gw_layout lay;
    uint64_t off, len;
    uint8_t *buf;
    gw_get_cb cb;
    void *arg;
    uint32_t s_next, s_end;
    int inflight;
    int status;
    struct gw_sfetch *fetches;
    uint32_t tags[]; /* lay.tags points here (allocated with the get) */
};

struct gw_del {
    struct gw_del *prev, *next;
    struct gw_engine *e;
    struct gw_layout lay;
    uint64_t mask; /* a drop (gw_engine_drop): its positions */
    int delay_ms;
    struct gw_timer *t;
};

struct gw_engine {
    struct gw_engine_cfg cfg;
    gw_layout_cb on_layout;
    void *arg;
    struct gw_net *net;
    pthread_mutex_t ec_lock;
    struct cm_ec *ecs[CM_EC_MAX_K + 1][CM_EC_MAX_M + 1];
    /* loop thread only */
    const struct pol_rs_ops *rs_ops;
    struct pol_rs *rs;
    struct pol_rs_budget hedge; /* when cfg.hedge_pct > 0 */
    const struct pol_holders_ops *holders_ops;
    struct pol_holders *holders;
    uint64_t rs_out;                         /* chunk GETs between on_send and on_done */
    struct gw_sfetch *held_head, *held_tail; /* reads the RS policy holds, oldest first */
    size_t nheld;
    struct gw_timer *kick; /* offers held reads to the policy again */
    /* The policy's per (tenant, node) state for /metrics: built on the loop
     * thread in rs_next, then swapped into rs_snap under rs_lock. */
    struct gw_rs_snap {
        struct pol_rs_peer *p;
        size_t n, cap;
    } rs_next, rs_snap;
    uint64_t rs_snap_at;
    struct gw_weight *weights; /* by tenant id ascending, over the least weight */
    size_t nweights;
    pthread_mutex_t rs_lock;
    struct gw_obj *objs;   /* buffered and tracked objects */
    struct cm_hmap objmap; /* the same by (tenant, object) */
    struct gw_get *gets;
    struct gw_del *dels;
    struct gw_redel_q *redel_qs; /* DELs kept for holders that did not take them */
    size_t nredel_qs;            /* holders with a queue (DELs kept in all: dels_waiting) */
    struct gw_redel *redels_out; /* DELs in flight that are kept if not taken */
    struct gw_mjob *mjobs;     /* META records on their way */
    struct gw_mframe *mframes; /* this loop turn's META frames, by node */
    struct gw_timer *mflush;   /* sends them */
    struct gw_timer *poll;
    int stopping;
    int warned_unlogged; /* a node without an insertion log was logged once */
    _Atomic uint64_t buffered_bytes, buffered_objects, redriven_chunks, parity_reads;
    _Atomic uint64_t persist_notes, persist_stats, stale_chunks, late_reads;
    _Atomic uint64_t hedges, hedges_denied;
    _Atomic uint64_t meta_records, meta_unlogged, meta_waiting;
    _Atomic uint64_t dels_waiting, dels_resent, dels_dropped;
    _Atomic uint64_t dels_out; /* DELs in flight that are kept if not taken */
    _Atomic int dels_fired;    /* gw_pbuf_dels_now ran (gw_engine_flush_deletes) */
};

/* gw_engine.c: the code for (k, m), created on first use; NULL when out of
 * memory. Any thread; shared until the engine is destroyed. */
struct cm_ec *gw_engine_ec(struct gw_engine *e, int k, int m);

/* A tenant's weight over the least of the tenants' (gw_engine_set_weights). */
struct gw_weight {
    uint32_t tenant;
    double rel;
};

/* gw_engine.c: tenant's weight over the least of the tenants', 1 when it
 * has none. Loop thread. */
double gw_engine_weight(const struct gw_engine *e, uint32_t tenant);

/*
 * gw_read.c. gw_sfetch_start starts reading stripe s of l (borrowed until
 * done runs or gw_sfetch_free): want and excl are position masks; bufs[i]
 * (may be NULL) receive chunk i. 0 and *out, with done to run on a later
 * loop turn, never from here; or the failure (CM_E_UNAVAIL, -ENOMEM).
 */
int gw_sfetch_start(struct gw_engine *e, const struct gw_layout *l, uint32_t s, uint64_t want,
                    uint64_t excl, uint8_t *const *bufs, gw_sfetch_done_fn done, void *arg,
                    struct gw_sfetch **out);
void gw_sfetch_free(struct gw_sfetch *f); /* NULL is a no-op; done will not run */
void gw_read_start(void *get);            /* posted by gw_engine_get */
void gw_read_kick(void *engine);          /* the kick timer */
void gw_read_stop(struct gw_engine *e);   /* fails every read (shutdown) */

/* The front's commit notice, as gw_engine_committed posts it. */
struct committed_cmd {
    struct gw_engine *e;
    uint32_t tenant;
    uint64_t object, version;
    struct gw_meta_attrs attrs;
    void *attrs_mem; /* attrs' strings (owned; the object takes them) */
    size_t klen;
    char key[];
};

/* gw_pbuf.c, gw_pbuf_del.c: posted functions, timers, and shutdown. */
void gw_pbuf_put_start(void *obj);
void gw_pbuf_track_start(void *obj);
void gw_pbuf_committed(void *cmd);        /* posted by gw_engine_committed */
void gw_pbuf_meta_done(struct gw_obj *o); /* its META record is logged */
void gw_pbuf_delete_start(void *del);
void gw_pbuf_move_start(void *obj);
void gw_pbuf_drop_start(void *del);
void gw_pbuf_poll(void *engine);
void gw_pbuf_on_note(void *engine, uint32_t node, const struct cm_wire_note *note);
void gw_pbuf_stop(struct gw_engine *e); /* fails every object, drops deletes */
void gw_obj_unref(struct gw_obj *o);
/* The live object (tenant, object), or NULL; ends o: the put callback
 * (if not yet run) gets status. */
struct gw_obj *gw_obj_find(struct gw_engine *e, uint32_t tenant, uint64_t object);
void gw_obj_finish(struct gw_obj *o, int status);
/* gw_pbuf_del.c: DELs every chunk of l; one its holder does not take is
 * kept (at most GW_REDEL_MAX) and sent again by gw_pbuf_redel_poll (from
 * the persist poll, GW_REDEL_BURST a holder) once the holder is usable;
 * gw_pbuf_redel_stop drops those kept. */
#define GW_REDEL_MAX ((size_t)1 << 20)
#define GW_REDEL_BURST ((size_t)4096)
void gw_pbuf_send_dels(struct gw_engine *e, const struct gw_layout *l);
void gw_pbuf_redel_poll(struct gw_engine *e);
void gw_pbuf_redel_stop(struct gw_engine *e);
void gw_pbuf_dels_now(void *engine); /* posted: every delayed delete fires now */
/* DELs one chunk from node (memory and COS), kept as above if not taken. */
void gw_pbuf_del_chunk(struct gw_engine *e, uint32_t node, uint32_t tenant, uint64_t object,
                       uint32_t index);

/*
 * gw_mlog.c. gw_mlog_version starts the META record of o (committed, every
 * chunk persisted): 0, or -ENOMEM (try again at the next poll);
 * gw_pbuf_meta_done runs once it is logged. gw_mlog_cancel drops one (its
 * object is finishing). gw_mlog_start is posted by gw_engine_tombstone and
 * gw_engine_committed (a record-only version); gw_mlog_poll (every persist
 * poll) resends, replaces nodes gone for redrive_after_ms and fills the
 * node set; gw_mlog_stop drops every record (pending keeps them for the
 * next start).
 */
int gw_mlog_version(struct gw_obj *o);
void gw_mlog_cancel(struct gw_mjob *j);
void gw_mlog_start(void *job);
void gw_mlog_poll(struct gw_engine *e);
void gw_mlog_stop(struct gw_engine *e);
/* The record of a tombstone, or of a record-only version (reported
 * GW_REPORT_DONE once logged), for gw_engine_tombstone and
 * gw_engine_committed to post; NULL when out of memory. Everything copied
 * (holders: the nodes to try first). */
struct gw_mjob *gw_mlog_tomb_new(struct gw_engine *e, const struct gw_layout *l, const char *key,
                                 size_t klen);
struct gw_mjob *gw_mlog_record_new(struct gw_engine *e, const struct gw_layout *l,
                                   const struct gw_meta_attrs *a, const char *key, size_t klen);
/* The MOVED record of a version a migration moved (gen: the pass's
 * placement epoch, at least 1), for gw_engine_relog to post; logged(arg,
 * 0) runs once it is logged, logged(arg, -ECANCELED) if it is dropped
 * first (the engine stops). NULL when out of memory. */
struct gw_mjob *gw_mlog_moved_new(struct gw_engine *e, const struct gw_layout *l,
                                  const struct gw_meta_attrs *a, const char *key, size_t klen,
                                  uint32_t gen, void (*logged)(void *arg, int rc), void *arg);

#endif
