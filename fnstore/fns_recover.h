/*
 * fns_recover.h - the order of parallel recovery (no I/O, no threads):
 * which chunk each of R helpers loads next, the chunk asked for first.
 *
 *   lost instance ──add(chunks its log records name)──▶ helper h = hash(key) mod R
 *        GET of a chunk still queued ──promote──▶ the front of its helper's queue
 *   helper h ──next(h)──▶ item (at most `depth` loading per helper) ──finish──▶ waiters
 *
 * Each helper takes only its share (fns_key_hash(key) mod R == h), in
 * queue order, so R helpers read COS in parallel and a read of a chunk
 * not loaded yet waits behind at most `depth` loads of its helper. Items
 * remember the slot they are recovered into and that slot's tag, so a slot
 * released or reclaimed again meanwhile drops them.
 *
 * Threads: NOT thread-safe; the node's loop thread only (the helpers are
 * COS worker threads that get one item at a time from it).
 */
#ifndef FNS_RECOVER_H
#define FNS_RECOVER_H

#include <stddef.h>
#include <stdint.h>

#include "cm_hmap.h"
#include "fns_chunk.h"
#include "fns_ilog.h"

enum fns_recover_state { FNS_RECOVER_QUEUED, FNS_RECOVER_LOADING };

struct fns_recover_item {
    struct cm_hnode hn;
    struct fns_key key;
    uint32_t len;
    struct fns_ilog_loc loc;
    uint32_t slot, tag; /* where it is recovered, and that instance's tag */
    uint32_t helper;
    enum fns_recover_state state;
    uint64_t load_ns; /* the caller's: when its load was submitted */
    struct fns_recover_item *prev, *next; /* its helper's queue while QUEUED */
    void **waiters;                       /* opaque, returned by finish */
    size_t nwait, capwait;
};

struct fns_recover;

/* helpers >= 1, depth >= 1 (loads in flight per helper), nslots slots.
 * *out caller-owned. */
void fns_recover_create(uint32_t helpers, uint32_t depth, uint32_t nslots,
                        struct fns_recover **out);
void fns_recover_destroy(struct fns_recover *r); /* NULL is a no-op; waiters are dropped */

uint32_t fns_recover_helpers(const struct fns_recover *r);
/* The helper that loads key. */
uint32_t fns_recover_helper_of(const struct fns_recover *r, const struct fns_key *key);

/* Starts (or extends) the recovery of slot, whose instance has tag, at
 * now_ns: every chunk added next goes there. */
void fns_recover_begin(struct fns_recover *r, uint32_t slot, uint32_t tag, uint64_t now_ns);
/* Queues a chunk for slot (begun). 0, or CM_E_EXISTS when key is queued or
 * loading already. */
int fns_recover_add(struct fns_recover *r, uint32_t slot, const struct fns_key *key, uint32_t len,
                    const struct fns_ilog_loc *loc);
/* The item of key, or NULL. */
struct fns_recover_item *fns_recover_find(struct fns_recover *r, const struct fns_key *key);
/* A read wants item: it goes to the front of its helper's queue (when
 * still queued), and waiter (may be NULL) comes back from finish. */
void fns_recover_promote(struct fns_recover *r, struct fns_recover_item *item, void *waiter);
/* Helper h's next item (LOADING from now), or NULL when none is queued or
 * depth are loading. */
struct fns_recover_item *fns_recover_next(struct fns_recover *r, uint32_t h);
/*
 * item finished loading (any outcome): it is forgotten. *waiters
 * (malloc'd, transferred, NULL when none) gets its waiters; returns their
 * count. *slot_done: 1 when that was the last chunk of its slot's recovery.
 */
size_t fns_recover_finish(struct fns_recover *r, struct fns_recover_item *item, void ***waiters,
                          int *slot_done);
/* Drops slot's queued items (their waiters appended to *waiters, count
 * returned); items loading finish normally, for a slot that moved on. */
size_t fns_recover_drop_slot(struct fns_recover *r, uint32_t slot, void ***waiters);

/* Recoveries under way (slots with items left). */
uint32_t fns_recover_running(const struct fns_recover *r);
/* Items left for slot, and when its recovery began. */
uint64_t fns_recover_left(const struct fns_recover *r, uint32_t slot);
uint64_t fns_recover_began(const struct fns_recover *r, uint32_t slot);

#endif
