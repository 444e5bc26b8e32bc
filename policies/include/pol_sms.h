/*
 * pol_sms.h - the elastic memory of a tenant's pool (the SMS window):
 * which function instances hold its chunks, how long each is kept, when it
 * is warmed up, and where each new or re-read chunk goes.
 *
 *   controller, every tick (each GC interval, and faster for warm-ups)
 *     view of one pool (all its instances) ──tick──▶ per instance: state, generation, warm-up due
 *                                                    pool: generation, instances to open, figures
 *   storage node, per chunk (event-loop thread)
 *     view of the pool on this node ──place(bytes)──▶ instance index | OPEN_NEW | -ENOSPC
 *     view of the pool on this node ──on_read(instance)──▶ compact into the newest or not
 *   storage node, after the controller's orders
 *     view of the pool on this node ──merge_from / merge_to──▶ an old instance emptied into
 *                                                             others of its generation
 *
 * Words. An instance has a fixed size (cfg.inst_bytes) and belongs to one
 * tenant's pool on one node. A generation is the number of a GC interval:
 * the pool's current generation v->gen began at v->gen_start_ns and lasts
 * cfg.interval_ns. An instance's generation is the interval in which it
 * was opened, or the last one in which it was still being filled (a tick
 * that opens a new generation carries instances that were written during
 * the ending interval and still have room into it, as InfiniStore's bucket
 * rotation does, so a new interval need not open a new instance on every
 * node). Its age is v->gen - its generation. With G = M + N:
 *
 *   age 0 .. M-1  WARM (holds nothing yet) or ACTIVE   warm-up every warm_active_ns
 *   age M .. G-1  DEGRADED                             warm-up every warm_degraded_ns;
 *                                                      lost: released, not rebuilt
 *   age >= G      RELEASED (memory freed, the chunks stay in COS)
 *
 * An instance of an older generation that holds nothing is released at the
 * next tick (nothing in it can age, nothing is placed in it again), also
 * one all of whose chunks were compacted out or deleted: it held only
 * dead copies, and need not wait for age G.
 *
 * Placement. New chunks go only to instances of the current generation
 * (best fit: the fullest that has room); when none has room, OPEN_NEW: the
 * caller opens an instance in v->gen on this node and asks again. A chunk
 * read from an instance of age >= compact_age (A) is compacted: copied into
 * the current generation (wherever place() says) and removed from the old
 * instance, so a re-read chunk gets a new life and cold chunks age out with
 * their instance. A chunk read after its instance was released (a late
 * read, served from the cache space or COS) is back in the working set: it
 * is re-admitted into the current generation the same way.
 *
 * Merges. Deletes (a re-PUT retires the old version) and compactions
 * leave holes in instances of older generations that nothing fills again:
 * only the current generation is written. On a node, an instance of an
 * older generation whose chunks fit in the room of the others of its
 * generation there is merged into them (merge_from picks it, merge_to
 * places each of its chunks, largest first, best fit) and released: the
 * chunks keep their generation, so they age out exactly when they would
 * have, and the pool holds one instance less. Only the instances' chunk
 * lists move; the node logs the chunks under their new tags.
 *
 * A < G trades memory against reads that miss memory. A chunk moves at
 * most once per A intervals and its old copy is freed at most G - A
 * intervals later, so over time old copies hold at most (G - A) / A of the
 * working set, and at any moment a chunk has at most ceil(G / A) - 1 old
 * copies. A chunk read at least once every G - A intervals never leaves
 * memory; one not read for G intervals always does. The default, A late
 * in the window (15 of 18), keeps old copies within 20 %; InfiniStore's
 * A = M keeps chunks read less often, for up to (G - M) / M (200 %) more;
 * A = 17 of 18 keeps them within 6 %, but a chunk stays in memory only if
 * it is read in the last interval before its instance is released. The
 * controller's --compact-age sets A.
 *
 * Working set (tick's report): the bytes stored (v->inst[i].used) in the
 * pool's instances that this tick leaves unreleased, i.e. the distinct
 * chunks written, or moved by a read, into an instance that was still
 * being filled during one of the last G intervals. A chunk is stored once:
 * compaction removes the old copy. What the view cannot tell: chunks read
 * late and kept only in the cache space (not in the count), and, in an
 * instance carried over many intervals by a slow trickle of writes, chunks
 * written longer ago (in the count).
 *
 * Pool memory = instances not released x inst_bytes = working set + holes
 * (chunks deleted or moved out of instances not yet released, less what
 * merges give back: at most the share above for moves) + room never
 * filled (an instance sealed because a chunk did not fit keeps less than
 * one chunk of room; per node, the current generation's instances being
 * filled, and one instance per pause in the pool's writes on that node
 * within the window).
 *
 * Policies decide, callers act: no I/O, no threads, no locks, no clock
 * (now_ns is passed in, any monotonic origin, the same for a given view's
 * warm_ns and gen_start_ns). place, on_read and merge_to allocate nothing
 * and take O(instances in the view). The ops only read a policy instance (its
 * configuration): threads may share one between create and destroy; each
 * call's view and outputs are its caller's.
 *
 * Registered in one explicit list (pol_sms.c): "sms" (the window) and
 * "static" (InfiniCache's fixed pool: every instance active and warmed up
 * forever, never released, chunks placed wherever there is room, never
 * compacted; the pool opens instances as chunks arrive, up to
 * cfg.max_instances per node, and never shrinks).
 */
#ifndef POL_SMS_H
#define POL_SMS_H

#include <stddef.h>
#include <stdint.h>

/* The policy the controller and the nodes run. */
#define POL_SMS_DEFAULT "sms"

/* Defaults, used for a cfg field left 0 (InfiniStore's, but the size). */
#define POL_SMS_INTERVAL_DEFAULT (600ull * 1000000000ull) /* ns: 10 min */
#define POL_SMS_ACTIVE_DEFAULT 6                          /* M intervals */
#define POL_SMS_DEGRADED_DEFAULT 12                       /* N intervals */
#define POL_SMS_WARM_ACTIVE_DIV 10  /* warm_active_ns = interval / 10 (1 min) */
#define POL_SMS_WARM_DEGRADED_DIV 2 /* warm_degraded_ns = interval / 2 (5 min) */
#define POL_SMS_INST_BYTES_DEFAULT (64ull << 20)
#define POL_SMS_MIN_GROUP_DEFAULT 1

/* Bounds (CM_E_BADARG beyond them). */
#define POL_SMS_INTERVAL_MIN 1000000ull /* ns: 1 ms */
#define POL_SMS_INTERVALS_MAX 100000    /* M, N, compact_age */
#define POL_SMS_MIN_GROUP_MAX 4096

struct pol_sms_cfg {
    uint64_t interval_ns;        /* GC interval, >= POL_SMS_INTERVAL_MIN */
    uint32_t active_intervals;   /* M >= 1 */
    uint32_t degraded_intervals; /* N >= 1 */
    uint64_t warm_active_ns;     /* warm-up period of WARM and ACTIVE instances */
    uint64_t warm_degraded_ns;   /* of DEGRADED instances */
    uint64_t inst_bytes;         /* storage partition of one instance */
    /* Instances a new generation starts with across the pool's nodes when
     * the pool is writing (InfiniStore adds a group of k + m): see
     * pol_sms_tick.open_instances. */
    uint32_t min_group;
    /* A: minimum age (intervals) of an instance a read chunk is compacted
     * out of, >= 1; A >= M + N never compacts. 0: the smallest A >= M
     * with (G - A) / A <= 1/5, but at most G - 1 (15 for 6 + 12; for a
     * short window, G - 1). M reproduces InfiniStore (more reads kept,
     * up to (G - M) / M of the working set in old copies). */
    uint32_t compact_age;
    /* Instances of one pool on one node, counting only those not released:
     * "sms": a cap (0 = none beyond v->can_open); "static": the fixed pool
     * size per node, > 0. */
    uint32_t max_instances;
};

enum pol_sms_state {
    POL_SMS_WARM = 0, /* opened in the current generation, holds nothing yet */
    POL_SMS_ACTIVE,   /* young: new and compacted chunks go to the newest */
    POL_SMS_DEGRADED, /* old: warmed up less often, not rebuilt when lost */
    POL_SMS_RELEASED, /* memory freed; reads go to the cache space or COS */
    POL_SMS_NSTATES
};

/* Why tick released an instance. */
enum pol_sms_reason {
    POL_SMS_KEPT = 0,
    POL_SMS_AGED,  /* age reached M + N */
    POL_SMS_EMPTY, /* older generation, nothing stored: apply only if it is
                    * still empty (a chunk may have arrived since the view) */
    POL_SMS_LOST,  /* degraded and its memory was lost: not rebuilt */
};

/* One instance as its node reports it. */
struct pol_sms_inst {
    uint64_t gen;             /* its generation (<= the view's) */
    enum pol_sms_state state; /* as last decided (a new instance: WARM) */
    int lost;                 /* memory gone (reclaimed, node restarted), not yet rebuilt */
    uint64_t used;            /* bytes its chunks take in its storage partition */
    uint64_t put_bytes;       /* placed into it (writes, compactions) since it joined gen */
    uint64_t read_bytes;      /* read from it in the last interval (reports only) */
    uint64_t read_chunks;     /* likewise */
    uint64_t warm_ns;         /* last invocation: a warm-up or a request it served */
};

/* A view of one pool: all its instances (tick), or those on one node
 * (place, on_read). Every pointer is borrowed for the call. */
struct pol_sms_view {
    uint64_t gen;          /* the pool's current generation (nodes: as last heard) */
    uint64_t gen_start_ns; /* tick: when gen began (a new pool: gen 0, now) */
    const struct pol_sms_inst *inst;
    size_t ninst;
    uint32_t can_open; /* place, on_read: instances the node may still open for it */
};

/* tick's decision for view instance i (caller's array of v->ninst). */
struct pol_sms_decision {
    enum pol_sms_state state;
    uint64_t gen;               /* > the view's: carried into the new generation */
    int warm_up;                /* 1: warm it up now (then its warm_ns = now) */
    enum pol_sms_reason reason; /* RELEASED by this tick: why; else KEPT */
};

/* tick's decisions about the pool, and its figures after the decisions. */
struct pol_sms_tick {
    uint64_t gen, gen_start_ns; /* the pool's generation from now on */
    uint32_t opened;            /* intervals the window moved (0: same generation) */
    /* Instances to open now in gen, on distinct nodes of the pool that have
     * no instance of gen with room: a pool that wrote in the ending
     * interval starts the new one with min_group instances with room.
     * Optional: nodes open instances themselves when place() says so. */
    uint32_t open_instances;
    uint64_t next_ns; /* tick again by then: the next warm-up or rollover */

    uint32_t instances;         /* not released */
    uint32_t active, degraded;  /* of those (WARM counts as active) */
    uint32_t released;          /* released by this tick */
    uint32_t warm_ups;          /* warm-ups due now */
    uint64_t memory_bytes;      /* instances x inst_bytes */
    uint64_t working_set_bytes; /* see the file comment */
    uint64_t read_bytes;        /* read from the pool in the last interval */
};

/* place(): 0 with *idx, OPEN_NEW, CM_E_TOOBIG, -ENOSPC or CM_E_BADARG. */
#define POL_SMS_OPEN_NEW 1
/* on_read(): the chunk is in none of the pool's instances on the node. */
#define POL_SMS_NOWHERE ((size_t)-1)

struct pol_sms; /* one policy instance; opaque */

struct pol_sms_ops {
    const char *name;
    /* cfg is borrowed (NULL = all defaults); *out is caller-owned (destroy
     * it). 0, CM_E_BADARG (a field out of bounds) or -ENOMEM. */
    int (*create)(const struct pol_sms_cfg *cfg, struct pol_sms **out);
    void (*destroy)(struct pol_sms *p); /* NULL is a no-op */
    /*
     * The window at now_ns for one pool: d[v->ninst] and t are the
     * caller's. The caller applies d[i] to the instance it reported as
     * v->inst[i] (matching its id and incarnation: ignore a decision for an
     * instance replaced since), resets put_bytes of instances whose
     * generation changed and every read count when t->opened, and stores
     * t->gen and t->gen_start_ns as the pool's. The same view at the same
     * now gives the same answer. 0, or CM_E_BADARG (NULL, an instance in
     * an unknown state) with d and t untouched.
     */
    int (*tick)(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                struct pol_sms_decision *d, struct pol_sms_tick *t);
    /*
     * Where a chunk of bytes goes on this node: 0 with *idx (an instance of
     * v that has room), POL_SMS_OPEN_NEW (open an instance in generation
     * v->gen, state WARM, and ask again), -ENOSPC (no room and none may be
     * opened), CM_E_TOOBIG (larger than an instance), CM_E_BADARG.
     */
    int (*place)(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t bytes,
                 uint64_t now_ns, size_t *idx);
    /*
     * A chunk of bytes was just read from v->inst[i] (or from COS for it,
     * when that instance is lost), or, i == POL_SMS_NOWHERE, from the cache
     * space or COS because it is in no instance (a late read): 1 to place
     * it in the current generation (place() says where; then remove any
     * old copy), 0 to leave it, CM_E_BADARG. Never 1 when place() would
     * answer -ENOSPC, nor for an instance of the current generation or a
     * released one. A node may keep a one-off late read in the cache space
     * only and ask on the next read of it (a cache hit).
     */
    int (*on_read)(const struct pol_sms *p, const struct pol_sms_view *v, size_t i, uint64_t bytes,
                   uint64_t now_ns);
    /*
     * Which instance of the pool on this node to merge into others of its
     * generation: 1 with *from, the least used of the instances of a
     * generation older than v->gen, neither lost nor released, holding
     * chunks, whose used bytes fit in the room of merge_to's targets for
     * it; 0 for none; CM_E_BADARG. The caller then asks merge_to for each
     * of its chunks, largest first, adding each chunk's bytes to the
     * chosen instance's used in its view; if every chunk found a place it
     * moves them and releases *from, else it moves nothing (chunk sizes
     * may not pack; the caller leaves that one out of its next question).
     * O(n^2) in the view's instances.
     */
    int (*merge_from)(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                      size_t *from);
    /*
     * Where a chunk of bytes of v->inst[from] goes in a merge: 0 with *idx
     * (best fit: the fullest other instance of the same generation,
     * neither lost, released nor empty, with room), -ENOSPC, CM_E_BADARG.
     */
    int (*merge_to)(const struct pol_sms *p, const struct pol_sms_view *v, size_t from,
                    uint64_t bytes, size_t *idx);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_sms_ops *pol_sms_find(const char *name);
/* The registry (static array of n entries), e.g. for --help. */
const struct pol_sms_ops *const *pol_sms_list(size_t *n);

/* The effective configuration (defaults filled in); borrowed from p. */
const struct pol_sms_cfg *pol_sms_cfg_of(const struct pol_sms *p);
/* The name of a state ("warm", "active", "degraded", "released"), or "?". */
const char *pol_sms_state_name(enum pol_sms_state s);

#endif
