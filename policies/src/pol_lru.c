/*
 * pol_lru.c - a circular doubly linked list through the caller's nodes,
 * with a byte count (see pol_lru.h). Invariants: l->len linked nodes,
 * their bytes sum to l->bytes; a node is linked iff its next is non-NULL.
 */
#include "pol_lru.h"

void
pol_lru_init(struct pol_lru *l)
{
    l->head.prev = l->head.next = &l->head;
    l->head.bytes = 0;
    l->bytes = 0;
    l->len = 0;
    l->steps = 0;
}

int
pol_lru_linked(const struct pol_lru_node *n)
{
    return n->next != NULL;
}

static void
pol_lru_unlink(struct pol_lru *l, struct pol_lru_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
    l->bytes -= n->bytes;
    l->len--;
}

static void
pol_lru_link_first(struct pol_lru *l, struct pol_lru_node *n)
{
    n->prev = &l->head;
    n->next = l->head.next;
    l->head.next->prev = n;
    l->head.next = n;
    l->bytes += n->bytes;
    l->len++;
    l->steps++;
}

void
pol_lru_insert(struct pol_lru *l, struct pol_lru_node *n, uint64_t bytes)
{
    if (pol_lru_linked(n)) {
        pol_lru_unlink(l, n);
    }
    n->bytes = bytes;
    pol_lru_link_first(l, n);
}

void
pol_lru_touch(struct pol_lru *l, struct pol_lru_node *n)
{
    if (pol_lru_linked(n) && l->head.next != n) {
        pol_lru_unlink(l, n);
        pol_lru_link_first(l, n);
    }
}

void
pol_lru_remove(struct pol_lru *l, struct pol_lru_node *n)
{
    if (pol_lru_linked(n)) {
        pol_lru_unlink(l, n);
        l->steps++;
    }
}

struct pol_lru_node *
pol_lru_evict(struct pol_lru *l, uint64_t budget)
{
    struct pol_lru_node *n = pol_lru_oldest(l);

    if (n == NULL || l->bytes <= budget) {
        return NULL;
    }
    pol_lru_unlink(l, n);
    l->steps++;
    return n;
}

struct pol_lru_node *
pol_lru_oldest(const struct pol_lru *l)
{
    return l->len > 0 ? l->head.prev : NULL;
}

uint64_t
pol_lru_bytes(const struct pol_lru *l)
{
    return l->bytes;
}

size_t
pol_lru_len(const struct pol_lru *l)
{
    return l->len;
}
