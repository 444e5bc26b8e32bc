/*
 * fns_store.h - the node's chunk memory: function instances and the chunk
 * index (private to fnstore/).
 *
 * A node hosts a fixed number of function instances, each with an equal
 * share of --capacity. An instance is free or belongs to one tenant's pool;
 * a tenant's chunks are appended to an instance of its pool with room, else
 * to a free instance that then joins the pool; an instance that empties
 * returns to the free list. A chunk larger than an instance, or with no
 * room anywhere, is refused with -ENOSPC (no eviction: every chunk in the
 * storage partition is placed, not cached).
 *
 * Index: chained hash table on (tenant, object, version, index), doubling
 * at load factor 1. The store holds one reference on every chunk in it.
 *
 * Threads: NOT thread-safe; fnstore calls it from its event-loop thread
 * only. Invariants: used == sum of instance used == sum of len of indexed
 * chunks; an instance with nchunks == 0 has tenant pool "free".
 */
#ifndef FNS_STORE_H
#define FNS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "fns_chunk.h"

struct fns_store;

struct fns_instance_info {
    uint32_t id;
    int owned;       /* 0: free */
    uint32_t tenant; /* owning pool when owned */
    uint64_t capacity, used;
    uint32_t nchunks;
};

/* capacity bytes split evenly over ninstances >= 1. *out is caller-owned. */
int fns_store_create(uint64_t capacity, uint32_t ninstances, struct fns_store **out);
void fns_store_destroy(struct fns_store *s); /* NULL is a no-op; unrefs every chunk */

/* The chunk under key (borrowed: ref it to keep it), or NULL. */
struct fns_chunk *fns_store_get(struct fns_store *s, const struct fns_key *key);
/*
 * Inserts c (the store takes its own reference; the caller keeps its own),
 * replacing any chunk under the same key. 0, or -ENOSPC when it does not
 * fit (then the store is unchanged).
 */
int fns_store_put(struct fns_store *s, struct fns_chunk *c);
/* Removes key; 0 or CM_E_NOTFOUND. */
int fns_store_del(struct fns_store *s, const struct fns_key *key);

uint64_t fns_store_used(const struct fns_store *s);
uint64_t fns_store_capacity(const struct fns_store *s);
uint64_t fns_store_nchunks(const struct fns_store *s);
uint32_t fns_store_ninstances(const struct fns_store *s);
/* Info of instance i < ninstances. */
void fns_store_instance(const struct fns_store *s, uint32_t i, struct fns_instance_info *out);

#endif
