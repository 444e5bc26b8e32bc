/*
 * pol_lru.h - the order in which a node's cache space gives up chunks, and
 * how many bytes it holds. The cache space keeps copies of hot chunks (for
 * bursts) and chunks of released instances (for late reads); it is counted
 * apart from the instances' storage partitions and evicted least recently
 * used first whenever it is over its byte budget.
 *
 *   cached chunk ──insert/touch──▶ [ most recent ... least recent ] ──evict(budget)──▶ victim
 *
 * Intrusive: the caller embeds a struct pol_lru_node in each cached item and
 * finds items by its own index (the node's chunk index), so there is one
 * index, nothing is allocated and no key is hashed twice; "the key" of
 * every call below is that node. Every call is O(1): it links or unlinks
 * at most one node (pol_lru.steps counts those, for tests).
 *
 * A node is unlinked when zeroed or after remove/evict; the list never
 * owns the items (it neither frees them nor reads past the node). NOT
 * thread-safe: the caller serializes every call on one list.
 */
#ifndef POL_LRU_H
#define POL_LRU_H

#include <stddef.h>
#include <stdint.h>

struct pol_lru_node {
    struct pol_lru_node *prev, *next; /* private; NULL when unlinked */
    uint64_t bytes;                   /* as inserted */
};

struct pol_lru {
    struct pol_lru_node head; /* head.next: most recent; head.prev: least */
    uint64_t bytes;           /* sum of bytes of the linked nodes */
    size_t len;               /* linked nodes */
    uint64_t steps;           /* nodes linked, moved or unlinked, ever */
};

/* l is the caller's storage; empty afterwards. Nothing to finish. */
void pol_lru_init(struct pol_lru *l);
/* 1 if n is in a list. */
int pol_lru_linked(const struct pol_lru_node *n);
/* n (borrowed, the caller's until removed or evicted) becomes the most
 * recent, counted as bytes; an n already in l is re-counted and touched. */
void pol_lru_insert(struct pol_lru *l, struct pol_lru_node *n, uint64_t bytes);
/* n becomes the most recent; no-op when n is not linked. */
void pol_lru_touch(struct pol_lru *l, struct pol_lru_node *n);
/* Unlinks n; no-op when n is not linked. */
void pol_lru_remove(struct pol_lru *l, struct pol_lru_node *n);
/* While l holds more than budget bytes: unlinks and returns the least
 * recent node (back to the caller, to drop its item). NULL once l is
 * within budget. Call in a loop. */
struct pol_lru_node *pol_lru_evict(struct pol_lru *l, uint64_t budget);
/* The least recent node (still linked), or NULL. */
struct pol_lru_node *pol_lru_oldest(const struct pol_lru *l);
uint64_t pol_lru_bytes(const struct pol_lru *l);
size_t pol_lru_len(const struct pol_lru *l);

#endif
