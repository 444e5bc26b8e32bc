/*
 * fns_store.c - the instance table, the chunk index and the cache space;
 * see fns_store.h. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_wire.h"
#include "fns_store.h"

#define FNS_INC_MASK 0xfffffu
#define FNS_INC_PER_START 4096u /* incarnations a slot may use per node start before the next's */

struct fns_store {
    struct fns_slot *slot;
    uint32_t nslots, live;
    uint64_t inst_bytes;
    uint64_t used, nchunks;
    uint64_t cache_budget, evictions;
    struct pol_lru cache;
    struct cm_hmap index; /* chunks by fns_key_hash */
};

static uint32_t
fns_inc_next(uint32_t inc)
{
    inc = (inc + 1) & FNS_INC_MASK;
    return inc == 0 ? 1 : inc;
}

int
fns_store_create(const struct fns_store_cfg *cfg, struct fns_store **out)
{
    struct fns_store *s;
    uint64_t n;
    uint32_t i;

    *out = NULL;
    n = cfg->inst_bytes > 0 ? cfg->capacity / cfg->inst_bytes : 0;
    if (n == 0 || n > FNS_STORE_SLOTS_MAX) {
        return CM_E_BADARG;
    }
    s = cm_calloc(1, sizeof(*s));
    s->nslots = (uint32_t)n;
    s->inst_bytes = cfg->inst_bytes;
    s->cache_budget = cfg->cache_bytes;
    s->slot = cm_calloc(n, sizeof(*s->slot));
    for (i = 0; i < s->nslots; i++) {
        /* 0 is never an incarnation: slot 0's would make tag 0 ("any"). */
        s->slot[i].inc = fns_inc_next((cfg->node_inc * FNS_INC_PER_START - 1) & FNS_INC_MASK);
    }
    pol_lru_init(&s->cache);
    cm_hmap_init(&s->index, 1024);
    *out = s;
    return 0;
}

static void
fns_store_drop(void *arg, struct cm_hnode *n)
{
    struct fns_chunk *c = CM_CONTAINER_OF(n, struct fns_chunk, hn);

    (void)arg;
    c->instance = -1;
    c->iprev = c->inext = NULL;
    c->lru.prev = c->lru.next = NULL;
    fns_chunk_unref(c);
}

void
fns_store_destroy(struct fns_store *s)
{
    if (s == NULL) {
        return;
    }
    cm_hmap_each(&s->index, fns_store_drop, NULL);
    cm_hmap_free(&s->index);
    free(s->slot);
    free(s);
}

uint32_t
fns_store_nslots(const struct fns_store *s)
{
    return s->nslots;
}

uint64_t
fns_store_inst_bytes(const struct fns_store *s)
{
    return s->inst_bytes;
}

struct fns_slot *
fns_store_slot(struct fns_store *s, uint32_t i)
{
    return &s->slot[i];
}

uint32_t
fns_store_tag(const struct fns_store *s, uint32_t i)
{
    return CM_WIRE_TAG(i, s->slot[i].inc);
}

int
fns_store_tag_live(const struct fns_store *s, uint32_t tag, uint32_t *slot)
{
    uint32_t i = CM_WIRE_TAG_SLOT(tag);

    if (tag == 0 || i >= s->nslots || !s->slot[i].live || s->slot[i].inc != CM_WIRE_TAG_INC(tag)) {
        return 0;
    }
    *slot = i;
    return 1;
}

struct fns_chunk *
fns_store_get(struct fns_store *s, const struct fns_key *key)
{
    uint64_t h = fns_key_hash(key);

    for (struct cm_hnode *n = cm_hmap_first(&s->index, h); n; n = cm_hmap_next(n, h)) {
        struct fns_chunk *c = CM_CONTAINER_OF(n, struct fns_chunk, hn);

        if (fns_key_eq(&c->key, key)) {
            return c;
        }
    }
    return NULL;
}

/* c joins instance i (c is indexed). */
static void
fns_store_link(struct fns_store *s, struct fns_chunk *c, uint32_t i)
{
    struct fns_slot *in = &s->slot[i];

    c->instance = (int)i;
    c->tag = fns_store_tag(s, i);
    c->iprev = NULL;
    c->inext = in->head;
    if (in->head != NULL) {
        in->head->iprev = c;
    }
    in->head = c;
    in->used += c->len;
    in->nchunks++;
    s->used += c->len;
    s->nchunks++;
}

/* c leaves its instance (it keeps c->tag: where it was). */
static void
fns_store_unlink(struct fns_store *s, struct fns_chunk *c)
{
    struct fns_slot *in = &s->slot[c->instance];

    if (c->iprev != NULL) {
        c->iprev->inext = c->inext;
    } else {
        in->head = c->inext;
    }
    if (c->inext != NULL) {
        c->inext->iprev = c->iprev;
    }
    c->iprev = c->inext = NULL;
    in->used -= c->len;
    in->nchunks--;
    s->used -= c->len;
    s->nchunks--;
    c->instance = -1;
}

/* c leaves the index (it is in no instance and not cached). */
static void
fns_store_unindex(struct fns_store *s, struct fns_chunk *c)
{
    cm_hmap_del(&s->index, &c->hn);
    fns_chunk_unref(c);
}

void
fns_store_uncache(struct fns_store *s, struct fns_chunk *c)
{
    if (!pol_lru_linked(&c->lru)) {
        return;
    }
    pol_lru_remove(&s->cache, &c->lru);
    if (c->instance < 0) {
        fns_store_unindex(s, c);
    }
}

int
fns_store_open(struct fns_store *s, uint32_t tenant, uint64_t gen, uint32_t *slot)
{
    for (uint32_t i = 0; i < s->nslots; i++) {
        struct fns_slot *in = &s->slot[i];

        if (!in->live) {
            uint32_t inc = in->inc;

            *in = (struct fns_slot){
                .inc = inc, .live = 1, .tenant = tenant, .gen = gen, .state = POL_SMS_WARM};
            s->live++;
            *slot = i;
            return 0;
        }
    }
    return -ENOSPC;
}

/* Every chunk leaves instance i; those not cached leave the index. */
static void
fns_store_empty(struct fns_store *s, uint32_t i)
{
    struct fns_chunk *c;

    while ((c = s->slot[i].head) != NULL) {
        fns_store_unlink(s, c);
        if (!pol_lru_linked(&c->lru)) {
            fns_store_unindex(s, c);
        }
    }
}

void
fns_store_release(struct fns_store *s, uint32_t slot)
{
    struct fns_slot *in = &s->slot[slot];
    uint32_t inc;

    if (!in->live) {
        return;
    }
    fns_store_empty(s, slot);
    inc = fns_inc_next(in->inc);
    *in = (struct fns_slot){.inc = inc};
    s->live--;
}

uint32_t
fns_store_reclaim(struct fns_store *s, uint32_t slot)
{
    struct fns_slot *in = &s->slot[slot];
    uint32_t old = fns_store_tag(s, slot);

    fns_store_empty(s, slot);
    in->inc = fns_inc_next(in->inc);
    in->lost = 1;
    in->prev_tag = old;
    in->put_bytes = 0;
    return old;
}

int
fns_store_put(struct fns_store *s, struct fns_chunk *c, uint32_t slot)
{
    struct fns_chunk *old = fns_store_get(s, &c->key);
    struct fns_slot *in;

    if (slot >= s->nslots || !s->slot[slot].live) {
        return CM_E_BADARG;
    }
    in = &s->slot[slot];
    if (old == c) {
        if (c->instance == (int)slot) {
            return 0;
        }
        if (in->used + c->len > s->inst_bytes) {
            return -ENOSPC;
        }
        if (c->instance >= 0) {
            fns_store_unlink(s, c);
        }
        if (pol_lru_linked(&c->lru)) {
            pol_lru_remove(&s->cache, &c->lru);
        }
        fns_store_link(s, c, slot);
        return 0;
    }
    /* The old copy's room counts as free if it is in the same instance. */
    if (in->used - (old != NULL && old->instance == (int)slot ? old->len : 0) + c->len >
        s->inst_bytes) {
        return -ENOSPC;
    }
    if (old != NULL) {
        if (old->instance >= 0) {
            fns_store_unlink(s, old);
        }
        if (pol_lru_linked(&old->lru)) {
            pol_lru_remove(&s->cache, &old->lru);
        }
        fns_store_unindex(s, old);
    }
    fns_chunk_ref(c);
    cm_hmap_add(&s->index, &c->hn, fns_key_hash(&c->key));
    fns_store_link(s, c, slot);
    return 0;
}

int
fns_store_del(struct fns_store *s, const struct fns_key *key, int *slot)
{
    struct fns_chunk *c = fns_store_get(s, key);

    if (slot != NULL) {
        *slot = -1;
    }
    if (c == NULL) {
        return CM_E_NOTFOUND;
    }
    if (c->instance >= 0) {
        if (slot != NULL) {
            *slot = c->instance;
        }
        fns_store_unlink(s, c);
    }
    if (pol_lru_linked(&c->lru)) {
        pol_lru_remove(&s->cache, &c->lru);
    }
    fns_store_unindex(s, c);
    return 0;
}

int
fns_store_cache(struct fns_store *s, struct fns_chunk *c)
{
    struct fns_chunk *old = fns_store_get(s, &c->key);
    struct pol_lru_node *victim;
    int kept = 1;

    if (old != NULL && old != c) {
        return -ENOSPC; /* another chunk holds the key */
    }
    if (c->len > s->cache_budget) {
        return -ENOSPC;
    }
    if (old == NULL) {
        fns_chunk_ref(c);
        cm_hmap_add(&s->index, &c->hn, fns_key_hash(&c->key));
        c->instance = -1;
    }
    pol_lru_insert(&s->cache, &c->lru, c->len);
    while ((victim = pol_lru_evict(&s->cache, s->cache_budget)) != NULL) {
        struct fns_chunk *v = CM_CONTAINER_OF(victim, struct fns_chunk, lru);

        s->evictions++;
        kept &= v != c;
        if (v->instance < 0) {
            fns_store_unindex(s, v);
        }
    }
    return kept ? 0 : -ENOSPC;
}

void
fns_store_cache_touch(struct fns_store *s, struct fns_chunk *c)
{
    pol_lru_touch(&s->cache, &c->lru);
}

uint64_t
fns_store_used(const struct fns_store *s)
{
    return s->used;
}

uint64_t
fns_store_cache_bytes(const struct fns_store *s)
{
    return pol_lru_bytes(&s->cache);
}

uint64_t
fns_store_cache_budget(const struct fns_store *s)
{
    return s->cache_budget;
}

uint64_t
fns_store_cache_chunks(const struct fns_store *s)
{
    return pol_lru_len(&s->cache);
}

uint64_t
fns_store_evictions(const struct fns_store *s)
{
    return s->evictions;
}

uint64_t
fns_store_nchunks(const struct fns_store *s)
{
    return s->nchunks;
}

uint32_t
fns_store_live(const struct fns_store *s)
{
    return s->live;
}

int
fns_store_walk_keys(struct fns_store *s, size_t *pos, size_t limit,
                    void (*fn)(void *arg, const struct fns_key *key), void *arg)
{
    return fns_keys_walk(&s->index, FNS_KEY_OFF(struct fns_chunk), pos, limit, fn, arg);
}
