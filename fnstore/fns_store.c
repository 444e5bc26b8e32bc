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
    struct cm_hmap index; /* chunks by fns_key_hash */
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
    free(s->inst);
    free(s);
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
    struct fns_chunk *old = fns_store_get(s, &c->key);
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
        cm_hmap_del(&s->index, &old->hn);
        fns_chunk_unref(old);
    }
    cm_hmap_add(&s->index, &c->hn, fns_key_hash(&c->key));
    return 0;
}

int
fns_store_del(struct fns_store *s, const struct fns_key *key)
{
    struct fns_chunk *c = fns_store_get(s, key);

    if (c == NULL) {
        return CM_E_NOTFOUND;
    }
    cm_hmap_del(&s->index, &c->hn);
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
