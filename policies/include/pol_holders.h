/*
 * pol_holders.h - holder choice: which node each position of a new
 * version's stripes goes to, and where a position moves when its holder
 * fails before every chunk of it is persisted.
 *
 *   gateway PUT / move ──choose(view, holders)──▶ holders[j] for every position not fixed
 *                       (placement row, usable nodes,
 *                        positions fixed / moving)
 *
 * A version has n = k + m positions (1 + m copies when k == 1); every
 * stripe's chunk j lives on holders[j]. The placement row is the
 * partition's preferred node ids in order (the controller's); the usable
 * nodes are the directory's nodes the gateway can reach now.
 *
 * Policies decide, the engine acts: no I/O, no threads, no locks, no clock.
 * One instance is NOT thread-safe (the gateway calls it from its engine
 * thread only). Registered in one explicit list (pol_holders.c); today
 * "row": the row where its nodes are usable, else the least-used usable
 * node stands in.
 */
#ifndef POL_HOLDERS_H
#define POL_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

/* The policy the gateway runs. */
#define POL_HOLDERS_DEFAULT "row"

/* Every pointer is borrowed for the call. */
struct pol_holders_view {
    const uint32_t *row; /* placement row: position j prefers row[j] */
    size_t nrow;
    const uint32_t *usable; /* usable node ids, directory order, distinct */
    size_t nusable;
    uint32_t n;         /* positions (k + m), at most 64 */
    uint32_t min_nodes; /* fewer usable nodes: refuse (k for a new
                         * version, 1 to move a stored chunk) */
    uint64_t fixed;     /* bit j: holders[j] stays */
    uint64_t moving;    /* bit j (not fixed): holders[j] failed, avoid it */
};

struct pol_holders; /* one policy instance; opaque */

struct pol_holders_ops {
    const char *name;
    /* *out is caller-owned (destroy it). 0 or -ENOMEM. */
    int (*create)(struct pol_holders **out);
    void (*destroy)(struct pol_holders *p); /* NULL is a no-op */
    /* holders[n] (in/out): chooses holders[j] for every position not in
     * v->fixed. 0, or CM_E_UNAVAIL (fewer than min_nodes usable nodes, or
     * no node but the one a moving position must avoid): then holders is
     * left as it was. */
    int (*choose)(struct pol_holders *p, const struct pol_holders_view *v, uint32_t *holders);
};

/* The registered policy called name, or NULL. Result is static. */
const struct pol_holders_ops *pol_holders_find(const char *name);
/* The registry (static array of n entries). */
const struct pol_holders_ops *const *pol_holders_list(size_t *n);

#endif
