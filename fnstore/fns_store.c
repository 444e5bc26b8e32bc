/*
 * fns_store.c - instances and the chunk index; see fns_store.h.
 * Event-loop thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "fns_store.h"

struct fns_store {
    struct fns_instance_info *inst;
    uint32_t ninst;
    uint64_t capacity, used, nchunks;
    struct fns_chunk **buckets;
    size_t nbuckets; /* power of two */
};

int
fns_store_create(uint64_t capacity, uint32_t ninstances, struct fns_store **out)
{
    struct fns_store *s;
    uint32_t i;

    *out = NULL;
    if (ninstances == 0) {
        return CM_E_BADARG;
    }
    s = cm_calloc(1, sizeof(*s));
    s->ninst = ninstances;
    s->capacity = capacity;
    s->inst = cm_calloc(ninstances, sizeof(*s->inst));
    for (i = 0; i < ninstances; i++) {
        s->inst[i].id = i;
        s->inst[i].capacity = capacity / ninstances;
    }
    s->nbuckets = 1024;
    s->buckets = cm_calloc(s->nbuckets, sizeof(*s->buckets));
    *out = s;
    return 0;
}

void
fns_store_destroy(struct fns_store *s)
{
    size_t i;
    struct fns_chunk *c, *next;

    if (s == NULL) {
        return;
    }
    for (i = 0; i < s->nbuckets; i++) {
        for (c = s->buckets[i]; c != NULL; c = next) {
            next = c->hnext;
            c->hnext = NULL;
            c->instance = -1;
            fns_chunk_unref(c);
        }
    }
    free(s->buckets);
    free(s->inst);
    free(s);
}

static struct fns_chunk **
fns_store_slot(struct fns_store *s, const struct fns_key *key)
{
    struct fns_chunk **pp = &s->buckets[fns_key_hash(key) & (s->nbuckets - 1)];

    while (*pp != NULL && !fns_key_eq(&(*pp)->key, key)) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

struct fns_chunk *
fns_store_get(struct fns_store *s, const struct fns_key *key)
{
    return *fns_store_slot(s, key);
}

static void
fns_store_grow(struct fns_store *s)
{
    size_t n = s->nbuckets * 2, i;
    struct fns_chunk **b = cm_calloc(n, sizeof(*b));
    struct fns_chunk *c, *next;

    for (i = 0; i < s->nbuckets; i++) {
        for (c = s->buckets[i]; c != NULL; c = next) {
            size_t j = fns_key_hash(&c->key) & (n - 1);

            next = c->hnext;
            c->hnext = b[j];
            b[j] = c;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

/* An instance of tenant's pool with room for len, else a free one, else -1. */
static int
fns_store_place(struct fns_store *s, uint32_t tenant, uint64_t len)
{
    uint32_t i;
    int free_inst = -1;

    for (i = 0; i < s->ninst; i++) {
        struct fns_instance_info *in = &s->inst[i];

        if (in->owned && in->tenant == tenant && in->capacity - in->used >= len) {
            return (int)i;
        }
        if (!in->owned && free_inst < 0 && in->capacity >= len) {
            free_inst = (int)i;
        }
    }
    return free_inst;
}

static void
fns_store_account(struct fns_store *s, struct fns_chunk *c, int inst)
{
    struct fns_instance_info *in = &s->inst[inst];

    in->owned = 1;
    in->tenant = c->key.tenant;
    in->used += c->len;
    in->nchunks++;
    s->used += c->len;
    s->nchunks++;
    c->instance = inst;
}

static void
fns_store_unaccount(struct fns_store *s, struct fns_chunk *c)
{
    struct fns_instance_info *in = &s->inst[c->instance];

    in->used -= c->len;
    in->nchunks--;
    if (in->nchunks == 0) {
        in->owned = 0;
        in->tenant = 0;
    }
    s->used -= c->len;
    s->nchunks--;
    c->instance = -1;
}

int
fns_store_put(struct fns_store *s, struct fns_chunk *c)
{
    struct fns_chunk **pp = fns_store_slot(s, &c->key);
    struct fns_chunk *old = *pp;
    int inst, old_inst = -1;

    if (old == c) {
        return 0;
    }
    if (old != NULL) {
        /* Free the old copy's space first; put it back if c does not fit. */
        old_inst = old->instance;
        fns_store_unaccount(s, old);
    }
    inst = fns_store_place(s, c->key.tenant, c->len);
    if (inst < 0) {
        if (old != NULL) {
            fns_store_account(s, old, old_inst);
        }
        return -ENOSPC;
    }
    fns_chunk_ref(c);
    fns_store_account(s, c, inst);
    if (old != NULL) {
        c->hnext = old->hnext;
        *pp = c;
        old->hnext = NULL;
        fns_chunk_unref(old);
        return 0;
    }
    c->hnext = NULL;
    *pp = c;
    if (s->nchunks > s->nbuckets) {
        fns_store_grow(s);
    }
    return 0;
}

int
fns_store_del(struct fns_store *s, const struct fns_key *key)
{
    struct fns_chunk **pp = fns_store_slot(s, key);
    struct fns_chunk *c = *pp;

    if (c == NULL) {
        return CM_E_NOTFOUND;
    }
    *pp = c->hnext;
    c->hnext = NULL;
    fns_store_unaccount(s, c);
    fns_chunk_unref(c);
    return 0;
}

uint64_t
fns_store_used(const struct fns_store *s)
{
    return s->used;
}

uint64_t
fns_store_capacity(const struct fns_store *s)
{
    return s->capacity;
}

uint64_t
fns_store_nchunks(const struct fns_store *s)
{
    return s->nchunks;
}

uint32_t
fns_store_ninstances(const struct fns_store *s)
{
    return s->ninst;
}

void
fns_store_instance(const struct fns_store *s, uint32_t i, struct fns_instance_info *out)
{
    *out = s->inst[i];
}
