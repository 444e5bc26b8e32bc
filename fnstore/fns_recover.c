/*
 * fns_recover.c - the order of parallel recovery; see fns_recover.h.
 * Items are found by key (cm_hmap) and queued per helper (intrusive
 * doubly linked lists, so a promotion is O(1)).
 */
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "fns_recover.h"

struct rec_helper {
    struct fns_recover_item *head, *tail;
    uint32_t loading;
};

struct rec_slot {
    uint64_t left, began_ns;
    uint32_t tag;
};

struct fns_recover {
    uint32_t nh, depth, nslots, running;
    struct rec_helper *h;
    struct rec_slot *slot;
    struct cm_hmap items;
};

void
fns_recover_create(uint32_t helpers, uint32_t depth, uint32_t nslots, struct fns_recover **out)
{
    struct fns_recover *r = cm_calloc(1, sizeof(*r));

    r->nh = helpers ? helpers : 1;
    r->depth = depth ? depth : 1;
    r->nslots = nslots;
    r->h = cm_calloc(r->nh, sizeof(*r->h));
    r->slot = cm_calloc(nslots ? nslots : 1, sizeof(*r->slot));
    cm_hmap_init(&r->items, 256);
    *out = r;
}

static void
rec_item_free(void *arg, struct cm_hnode *n)
{
    struct fns_recover_item *it = CM_CONTAINER_OF(n, struct fns_recover_item, hn);

    (void)arg;
    free(it->waiters);
    free(it);
}

void
fns_recover_destroy(struct fns_recover *r)
{
    if (r == NULL) {
        return;
    }
    cm_hmap_each(&r->items, rec_item_free, NULL);
    cm_hmap_free(&r->items);
    free(r->h);
    free(r->slot);
    free(r);
}

uint32_t
fns_recover_helpers(const struct fns_recover *r)
{
    return r->nh;
}

uint32_t
fns_recover_helper_of(const struct fns_recover *r, const struct fns_key *key)
{
    return (uint32_t)(fns_key_hash(key) % r->nh);
}

void
fns_recover_begin(struct fns_recover *r, uint32_t slot, uint32_t tag, uint64_t now_ns)
{
    struct rec_slot *s = &r->slot[slot];

    if (s->left == 0 || s->tag != tag) {
        s->began_ns = now_ns;
    }
    s->tag = tag;
}

static void
rec_unqueue(struct rec_helper *h, struct fns_recover_item *it)
{
    if (it->prev != NULL) {
        it->prev->next = it->next;
    } else {
        h->head = it->next;
    }
    if (it->next != NULL) {
        it->next->prev = it->prev;
    } else {
        h->tail = it->prev;
    }
    it->prev = it->next = NULL;
}

static void
rec_push_front(struct rec_helper *h, struct fns_recover_item *it)
{
    it->prev = NULL;
    it->next = h->head;
    if (h->head != NULL) {
        h->head->prev = it;
    } else {
        h->tail = it;
    }
    h->head = it;
}

static void
rec_push_back(struct rec_helper *h, struct fns_recover_item *it)
{
    it->next = NULL;
    it->prev = h->tail;
    if (h->tail != NULL) {
        h->tail->next = it;
    } else {
        h->head = it;
    }
    h->tail = it;
}

struct fns_recover_item *
fns_recover_find(struct fns_recover *r, const struct fns_key *key)
{
    uint64_t hash = fns_key_hash(key);

    for (struct cm_hnode *n = cm_hmap_first(&r->items, hash); n; n = cm_hmap_next(n, hash)) {
        struct fns_recover_item *it = CM_CONTAINER_OF(n, struct fns_recover_item, hn);

        if (fns_key_eq(&it->key, key)) {
            return it;
        }
    }
    return NULL;
}

int
fns_recover_add(struct fns_recover *r, uint32_t slot, const struct fns_key *key, uint32_t len,
                const struct fns_ilog_loc *loc)
{
    struct fns_recover_item *it;

    if (fns_recover_find(r, key) != NULL) {
        return CM_E_EXISTS;
    }
    it = cm_calloc(1, sizeof(*it));
    it->key = *key;
    it->len = len;
    it->loc = *loc;
    it->slot = slot;
    it->tag = r->slot[slot].tag;
    it->helper = fns_recover_helper_of(r, key);
    it->state = FNS_RECOVER_QUEUED;
    cm_hmap_add(&r->items, &it->hn, fns_key_hash(key));
    rec_push_back(&r->h[it->helper], it);
    if (r->slot[slot].left++ == 0) {
        r->running++;
    }
    return 0;
}

void
fns_recover_promote(struct fns_recover *r, struct fns_recover_item *it, void *waiter)
{
    if (it->state == FNS_RECOVER_QUEUED && r->h[it->helper].head != it) {
        rec_unqueue(&r->h[it->helper], it);
        rec_push_front(&r->h[it->helper], it);
    }
    if (waiter != NULL) {
        if (it->nwait == it->capwait) {
            it->capwait = it->capwait ? 2 * it->capwait : 2;
            it->waiters = cm_realloc(it->waiters, it->capwait * sizeof(*it->waiters));
        }
        it->waiters[it->nwait++] = waiter;
    }
}

struct fns_recover_item *
fns_recover_next(struct fns_recover *r, uint32_t h)
{
    struct rec_helper *hp = &r->h[h];
    struct fns_recover_item *it = hp->head;

    if (it == NULL || hp->loading >= r->depth) {
        return NULL;
    }
    rec_unqueue(hp, it);
    it->state = FNS_RECOVER_LOADING;
    hp->loading++;
    return it;
}

/* One item of slot fewer: 1 if it was the last. */
static int
rec_slot_dec(struct fns_recover *r, uint32_t slot)
{
    if (r->slot[slot].left == 0 || --r->slot[slot].left > 0) {
        return 0;
    }
    r->running--;
    return 1;
}

size_t
fns_recover_finish(struct fns_recover *r, struct fns_recover_item *it, void ***waiters,
                   int *slot_done)
{
    size_t n = it->nwait;

    if (it->state == FNS_RECOVER_LOADING) {
        r->h[it->helper].loading--;
    } else {
        rec_unqueue(&r->h[it->helper], it);
    }
    cm_hmap_del(&r->items, &it->hn);
    *slot_done = it->tag == r->slot[it->slot].tag && rec_slot_dec(r, it->slot);
    *waiters = it->waiters;
    free(it);
    return n;
}

size_t
fns_recover_drop_slot(struct fns_recover *r, uint32_t slot, void ***waiters)
{
    size_t n = 0, cap = 0;

    *waiters = NULL;
    for (uint32_t h = 0; h < r->nh; h++) {
        struct fns_recover_item *it = r->h[h].head, *next;

        for (; it != NULL; it = next) {
            next = it->next;
            if (it->slot != slot) {
                continue;
            }
            if (it->nwait > 0) {
                if (n + it->nwait > cap) {
                    cap = 2 * (n + it->nwait);
                    *waiters = cm_realloc(*waiters, cap * sizeof(**waiters));
                }
                memcpy(*waiters + n, it->waiters, it->nwait * sizeof(**waiters));
                n += it->nwait;
            }
            rec_unqueue(&r->h[h], it);
            cm_hmap_del(&r->items, &it->hn);
            free(it->waiters);
            free(it);
        }
    }
    if (r->slot[slot].left > 0) {
        r->running--;
    }
    r->slot[slot].left = 0;
    r->slot[slot].tag = 0; /* items still loading no longer count */
    return n;
}

uint32_t
fns_recover_running(const struct fns_recover *r)
{
    return r->running;
}

uint64_t
fns_recover_left(const struct fns_recover *r, uint32_t slot)
{
    return r->slot[slot].left;
}

uint64_t
fns_recover_began(const struct fns_recover *r, uint32_t slot)
{
    return r->slot[slot].began_ns;
}
