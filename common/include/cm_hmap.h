/*
 * cm_hmap.h - an intrusive chained hash map: the caller embeds a struct
 * cm_hnode in its record, hashes its own key, and compares keys itself
 * while walking one chain (cm_hmap_first / cm_hmap_next).
 *
 *   struct rec { struct cm_hnode hn; uint64_t id; };
 *   cm_hmap_add(&m, &r->hn, h);
 *   for (n = cm_hmap_first(&m, h); n; n = cm_hmap_next(n, h))
 *       if (CM_CONTAINER_OF(n, struct rec, hn)->id == id) ...
 *
 * The hash is stored in the node, so growing (doubling once there are more
 * nodes than entries) never calls back, and chains compare it first. Each
 * entry of the table heads one chain. An add never fails: when growing runs
 * out of memory the table keeps its size. Not thread-safe; the map owns its
 * entries only, never the records.
 */
#ifndef CM_HMAP_H
#define CM_HMAP_H

#include <stddef.h>
#include <stdint.h>

#define CM_CONTAINER_OF(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

struct cm_hnode {
    struct cm_hnode *next;
    uint64_t hash;
};

struct cm_hmap {
    struct cm_hnode **b;
    size_t mask; /* entries - 1 (a power of two minus one) */
    size_t n;    /* nodes */
};

/* nentries is rounded up to a power of two (at least 16). */
void cm_hmap_init(struct cm_hmap *m, size_t nentries);
void cm_hmap_free(struct cm_hmap *m); /* the entries; records are the caller's */
void cm_hmap_add(struct cm_hmap *m, struct cm_hnode *n, uint64_t hash);
/* Unlinks n (which must be in m). */
void cm_hmap_del(struct cm_hmap *m, struct cm_hnode *n);
/* Calls fn for every node (n may be unlinked by fn: the next is taken first). */
void cm_hmap_each(struct cm_hmap *m, void (*fn)(void *arg, struct cm_hnode *n), void *arg);

/*
 * Calls fn for the nodes of the entries from entry *pos on, a whole chain
 * at a time, as long as they come to at most limit nodes (at least one
 * chain, however long), and moves *pos past them: 1 while entries are
 * left, 0 at the end. A walk
 * resumed after adds (the table may have grown) sees every node that was
 * in the map for the whole walk, some perhaps twice.
 */
int cm_hmap_walk(const struct cm_hmap *m, size_t *pos, size_t limit,
                 void (*fn)(void *arg, struct cm_hnode *n), void *arg);
/* The first node with this hash, or NULL. */
static inline struct cm_hnode *
cm_hmap_first(const struct cm_hmap *m, uint64_t hash)
{
    struct cm_hnode *n = m->b[(hash >> 16) & m->mask];

    while (n != NULL && n->hash != hash) {
        n = n->next;
    }
    return n;
}

/* The next node after n with the same hash, or NULL. */
static inline struct cm_hnode *
cm_hmap_next(const struct cm_hnode *n, uint64_t hash)
{
    struct cm_hnode *x = n->next;

    while (x != NULL && x->hash != hash) {
        x = x->next;
    }
    return x;
}

/* A 64-bit mix for keys that are not well spread (ids, counters). */
static inline uint64_t
cm_hmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

#endif
