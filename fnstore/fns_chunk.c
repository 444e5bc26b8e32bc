/*
 * fns_chunk.c - refcounted chunks and their COS blob trailer. Any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_wire.h"
#include "fns_arena.h"
#include "fns_chunk.h"

struct fns_chunk *
fns_chunk_adopt(const struct fns_key *key, uint8_t *data, uint32_t len, uint32_t crc)
{
    struct fns_chunk *c = cm_calloc(1, sizeof(*c));

    atomic_init(&c->refs, 1);
    c->key = *key;
    c->len = len;
    c->crc = crc;
    c->data = data;
    c->instance = -1;
    cm_put_le32(data + len, crc);
    cm_put_le32(data + len + 4, FNS_CHUNK_MAGIC);
    return c;
}

int
fns_chunk_from_blob(const struct fns_key *key, void *blob, size_t bloblen, struct fns_chunk **out)
{
    uint8_t *p = blob;
    size_t len;
    uint32_t crc;

    *out = NULL;
    if (bloblen < FNS_CHUNK_TAIL || bloblen - FNS_CHUNK_TAIL > CM_WIRE_MAX_DATA) {
        free(blob);
        return CM_E_CRC;
    }
    len = bloblen - FNS_CHUNK_TAIL;
    crc = cm_get_le32(p + len);
    if (cm_get_le32(p + len + 4) != FNS_CHUNK_MAGIC || cm_crc32c(0, p, len) != crc) {
        free(blob);
        return CM_E_CRC;
    }
    *out = fns_chunk_adopt(key, p, (uint32_t)len, crc);
    return 0;
}

void
fns_chunk_view_init(struct fns_chunk *v, struct fns_chunk *of,
                    void (*release)(struct fns_chunk *view))
{
    memset(v, 0, sizeof(*v));
    atomic_init(&v->refs, 1);
    fns_chunk_ref(of);
    v->key = of->key;
    v->len = of->len;
    v->crc = of->crc;
    v->data = of->data;
    v->instance = -1;
    v->of = of;
    v->release = release;
}

void
fns_chunk_ref(struct fns_chunk *c)
{
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void
fns_chunk_unref(struct fns_chunk *c)
{
    if (c == NULL) {
        return;
    }
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
        if (c->release != NULL) {
            struct fns_chunk *of = c->of;

            c->release(c);
            fns_chunk_unref(of);
            return;
        }
        fns_arena_free(c->data);
        free(c);
    }
}

int
fns_key_name(const struct fns_key *k, char *buf, size_t cap)
{
    return cm_chunk_name(buf, cap, k->tenant, k->object, k->version, k->index);
}

uint64_t
fns_key_hash(const struct fns_key *k)
{
    uint64_t h = k->object * 0x9e3779b97f4a7c15ull;

    h ^= (k->version + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    h ^= ((uint64_t)k->tenant << 32 | k->index) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

int
fns_key_eq(const struct fns_key *a, const struct fns_key *b)
{
    return a->tenant == b->tenant && a->index == b->index && a->object == b->object &&
           a->version == b->version;
}

struct keys_walk {
    ptrdiff_t off;
    void (*fn)(void *arg, const struct fns_key *key);
    void *arg;
};

static void
keys_walk_cb(void *arg, struct cm_hnode *n)
{
    struct keys_walk *w = arg;

    w->fn(w->arg, (const struct fns_key *)(const void *)((const char *)n + w->off));
}

int
fns_keys_walk(const struct cm_hmap *m, ptrdiff_t key_off, size_t *pos, size_t limit,
              void (*fn)(void *arg, const struct fns_key *key), void *arg)
{
    struct keys_walk w = {key_off, fn, arg};

    return cm_hmap_walk(m, pos, limit, keys_walk_cb, &w);
}
