/*
 * fns_store.h - the node's chunk memory (private to fnstore/): the
 * instance table, the chunk index and the cache space.
 *
 * Instance table. --capacity is divided into slots of --instance-size
 * bytes (at most FNS_STORE_SLOTS_MAX). A slot is free or holds one
 * instance: a tenant's pool's function instance with a generation, an
 * SMS state (pol_sms.h) and a storage partition of inst_bytes that chunks
 * are placed in (never evicted). Every slot has an incarnation (20 bits,
 * never 0); an instance is named on the wire by its tag,
 * CM_WIRE_TAG(slot, incarnation). The incarnation changes whenever the
 * slot's instance is released or reclaimed, so a tag names one instance
 * and is not reused for a long time: a slot's first incarnation is
 * derived from the node's (bumped at every start), 4096 apart per start.
 *
 *   free ──open──▶ WARM ─▶ ACTIVE ─▶ DEGRADED ──release──▶ free (inc+1)
 *                     └────reclaim: memory gone, inc+1, same pool, lost──┘
 *
 * Index: one chained hash table on the chunk key (fns_key). A chunk in it
 * is in an instance (c->instance >= 0), in the cache space (c->lru
 * linked), or in both (a hot copy). The store holds one reference on
 * every chunk in it.
 *
 * Cache space: copies of chunks kept for late reads and bursts, counted
 * apart from the instances (cache_bytes), evicted least recently used
 * (pol_lru) whenever over its budget.
 *
 * Threads: NOT thread-safe; the node's loop thread only. Invariants: a
 * slot's used == the sum of its chunks' len; used == the sum over slots;
 * a free slot holds no chunk; every indexed chunk is in an instance or
 * cached.
 */
#ifndef FNS_STORE_H
#define FNS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "fns_chunk.h"
#include "pol_lru.h"
#include "pol_sms.h"

#define FNS_STORE_SLOTS_MAX 4096u /* slot ids fit a tag's 12 bits */

struct fns_store;

/* One slot. Read anywhere on the loop thread; the counters (put_bytes,
 * read_*, warm_ns) are the caller's to update, the rest the store's. */
struct fns_slot {
    uint32_t inc; /* current incarnation, 1..2^20-1 */
    int live;     /* holds an instance */
    uint32_t tenant;
    uint64_t gen;
    enum pol_sms_state state;
    int lost;          /* reclaimed: memory gone, not yet recovered */
    uint32_t prev_tag; /* while lost: the tag of the instance it replaces */
    uint64_t used;     /* bytes of its chunks */
    uint32_t nchunks;
    uint64_t put_bytes, read_bytes, read_chunks; /* pol_sms_inst */
    uint64_t warm_ns;                            /* last invocation */
    struct fns_chunk *head;                      /* its chunks */
};

struct fns_store_cfg {
    uint64_t capacity;   /* instance memory: floor(capacity / inst_bytes) slots, >= 1 */
    uint64_t inst_bytes; /* > 0 */
    uint64_t cache_bytes;
    uint32_t node_inc; /* the node's incarnation: first slot incarnations */
};

/* 0 and *out (caller-owned), or CM_E_BADARG (no slot, or more than
 * FNS_STORE_SLOTS_MAX). */
int fns_store_create(const struct fns_store_cfg *cfg, struct fns_store **out);
void fns_store_destroy(struct fns_store *s); /* NULL is a no-op; unrefs every chunk */

uint32_t fns_store_nslots(const struct fns_store *s);
uint64_t fns_store_inst_bytes(const struct fns_store *s);
/* Slot i < nslots (borrowed; loop thread). */
struct fns_slot *fns_store_slot(struct fns_store *s, uint32_t i);
/* The tag of slot i's current incarnation. */
uint32_t fns_store_tag(const struct fns_store *s, uint32_t i);
/* 1 if tag names slot's current incarnation and an instance is there
 * (*slot set), else 0 (a tag of another incarnation, or out of range). */
int fns_store_tag_live(const struct fns_store *s, uint32_t tag, uint32_t *slot);

/* Opens an instance of tenant's pool in generation gen, state WARM, in a
 * free slot (the lowest): 0 and *slot, or -ENOSPC. */
int fns_store_open(struct fns_store *s, uint32_t tenant, uint64_t gen, uint32_t *slot);
/* Releases slot's instance: every chunk leaves it (one only in it leaves
 * the index), the incarnation changes, the slot is free. */
void fns_store_release(struct fns_store *s, uint32_t slot);
/* Reclaims slot's instance: its memory is gone (chunks leave as on
 * release) and its incarnation changes, but the slot keeps the instance
 * (tenant, generation, state) with lost = 1 and prev_tag = the old tag, to
 * be recovered. Returns the old tag. */
uint32_t fns_store_reclaim(struct fns_store *s, uint32_t slot);

/* The chunk under key (borrowed: ref it to keep it), or NULL. */
struct fns_chunk *fns_store_get(struct fns_store *s, const struct fns_key *key);
/*
 * Places c in slot's instance (the store takes its own reference; the
 * caller keeps its own). Another chunk under the same key leaves the
 * store first. c already indexed (cached, or in another instance) moves:
 * it leaves its old instance and the cache space. 0, or -ENOSPC when it
 * does not fit in slot (then the store is unchanged), CM_E_BADARG for a
 * free slot.
 */
int fns_store_put(struct fns_store *s, struct fns_chunk *c, uint32_t slot);
/* Removes key from instance and cache alike; 0 or CM_E_NOTFOUND. *slot
 * (may be NULL): the instance it was in, or -1. */
int fns_store_del(struct fns_store *s, const struct fns_key *key, int *slot);

/*
 * Keeps c in the cache space (a copy when c is in an instance too; c not
 * indexed yet is indexed, replacing nothing: the key must be free or c),
 * then evicts least recently used chunks while over budget (c too, when
 * it alone is over). 0, or -ENOSPC when c was not kept.
 */
int fns_store_cache(struct fns_store *s, struct fns_chunk *c);
/* A read of c from the cache space: it becomes the most recent. */
void fns_store_cache_touch(struct fns_store *s, struct fns_chunk *c);
static inline int
fns_store_cached(const struct fns_chunk *c)
{
    return pol_lru_linked(&c->lru);
}
/* Drops c's cache copy (c stays if in an instance). */
void fns_store_uncache(struct fns_store *s, struct fns_chunk *c);

/* The keys of the indexed chunks, a stretch at a time (cm_hmap_walk: *pos
 * 0 to start; 1 while more are left). */
int fns_store_walk_keys(struct fns_store *s, size_t *pos, size_t limit,
                        void (*fn)(void *arg, const struct fns_key *key), void *arg);

uint64_t fns_store_used(const struct fns_store *s);        /* bytes in instances */
uint64_t fns_store_cache_bytes(const struct fns_store *s); /* bytes in the cache space */
uint64_t fns_store_cache_budget(const struct fns_store *s);
uint64_t fns_store_cache_chunks(const struct fns_store *s);
uint64_t fns_store_evictions(const struct fns_store *s); /* cache chunks evicted, ever */
uint64_t fns_store_nchunks(const struct fns_store *s);   /* chunks in instances */
uint32_t fns_store_live(const struct fns_store *s);      /* instances (slots not free) */

#endif
