/*
 * cm_hmap.c - intrusive chained hash map; see cm_hmap.h.
 */
#include <stdlib.h>

#include "cm_buf.h"
#include "cm_hmap.h"

void
cm_hmap_init(struct cm_hmap *m, size_t nentries)
{
    size_t nb = 16;

    while (nb < nentries) {
        nb *= 2;
    }
    m->b = cm_calloc(nb, sizeof(*m->b));
    m->mask = nb - 1;
    m->n = 0;
}

void
cm_hmap_free(struct cm_hmap *m)
{
    free(m->b);
    m->b = NULL;
    m->mask = 0;
    m->n = 0;
}

/* Out of memory leaves the table as it is: longer chains, never a failed
 * add (callers serve requests with it). */
static void
hmap_grow(struct cm_hmap *m)
{
    size_t oldn = m->mask + 1;
    struct cm_hnode **old = m->b, **b = calloc(2 * oldn, sizeof(*b));

    if (b == NULL) {
        return; /* out of memory: the table works on, with longer chains */
    }
    m->b = b;
    m->mask = 2 * oldn - 1;
    for (size_t i = 0; i < oldn; i++) {
        while (old[i] != NULL) {
            struct cm_hnode *n = old[i];
            struct cm_hnode **head = &m->b[(n->hash >> 16) & m->mask];

            old[i] = n->next;
            n->next = *head;
            *head = n;
        }
    }
    free(old);
}

void
cm_hmap_add(struct cm_hmap *m, struct cm_hnode *n, uint64_t hash)
{
    struct cm_hnode **head;

    if (m->n > m->mask) {
        hmap_grow(m);
    }
    head = &m->b[(hash >> 16) & m->mask];
    n->hash = hash;
    n->next = *head;
    *head = n;
    m->n++;
}

void
cm_hmap_del(struct cm_hmap *m, struct cm_hnode *n)
{
    struct cm_hnode **pp = &m->b[(n->hash >> 16) & m->mask];

    while (*pp != NULL && *pp != n) {
        pp = &(*pp)->next;
    }
    if (*pp != NULL) {
        *pp = n->next;
        n->next = NULL;
        m->n--;
    }
}

void
cm_hmap_each(struct cm_hmap *m, void (*fn)(void *arg, struct cm_hnode *n), void *arg)
{
    for (size_t i = 0; i <= m->mask; i++) {
        struct cm_hnode *n = m->b[i];

        while (n != NULL) {
            struct cm_hnode *next = n->next;

            fn(arg, n);
            n = next;
        }
    }
}

int
cm_hmap_walk(const struct cm_hmap *m, size_t *pos, size_t limit,
             void (*fn)(void *arg, struct cm_hnode *n), void *arg)
{
    size_t seen = 0;

    while (*pos <= m->mask && seen < limit) {
        size_t len = 0;

        for (struct cm_hnode *n = m->b[*pos]; n != NULL; n = n->next) {
            len++;
        }
        if (seen > 0 && seen + len > limit) {
            break;
        }
        for (struct cm_hnode *n = m->b[*pos]; n != NULL; n = n->next) {
            fn(arg, n);
        }
        seen += len;
        (*pos)++;
    }
    return *pos <= m->mask;
}
