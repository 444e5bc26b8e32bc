/*
 * fns_chunk.h - a chunk in node memory: refcounted, immutable bytes.
 *
 * A chunk is shared by the store's index, COS jobs and responses being
 * sent (evbuffer references), so a DEL can drop it from the index while a
 * send or a COS write still reads it; the last unref frees it. refs is
 * atomic (COS worker threads unref); every other field except `persisted`
 * and the store links is immutable after fns_chunk_adopt.
 *
 * data has FNS_CHUNK_TAIL spare bytes after len: the COS blob is the chunk
 * bytes followed by an 8-byte trailer (CRC32C LE u32, magic "SHCK" LE u32),
 * written in place so a COS write needs no copy.
 *
 * A view (fns_chunk_view_init) shows the bytes of another chunk, which it
 * keeps referenced, from storage its owner embeds elsewhere: its last unref
 * calls the owner's release instead of freeing. The node sends answers as
 * views so it learns when an answer's payload has left the connection.
 */
#ifndef FNS_CHUNK_H
#define FNS_CHUNK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_hmap.h"
#include "pol_lru.h"

#define FNS_CHUNK_TAIL 8u
#define FNS_CHUNK_MAGIC 0x4b434853u /* "SHCK" read little-endian */

struct fns_key {
    uint32_t tenant;
    uint32_t index;
    uint64_t object;
    uint64_t version;
};

struct fns_chunk {
    atomic_uint refs;
    struct fns_key key;
    uint32_t len;
    uint32_t crc;  /* CRC32C of data[0, len) */
    uint8_t *data; /* len + FNS_CHUNK_TAIL bytes, freed with fns_arena_free */
    /* Event-loop thread only: */
    int persisted;                   /* the COS copy of these bytes is durable */
    struct cm_hnode hn;              /* store index (in an instance, the cache space, or both) */
    int instance;                    /* the store's instance slot, -1 when in none */
    uint32_t tag;                    /* the tag of the instance it was last placed in (0: none) */
    struct fns_chunk *iprev, *inext; /* the chunks of its instance */
    struct pol_lru_node lru;         /* in the cache space when linked */
    /* Views only (NULL otherwise): the chunk shown, and the owner's hook. */
    struct fns_chunk *of;
    void (*release)(struct fns_chunk *view);
};

/*
 * A chunk owning data (TRANSFERRED: malloc'd or fns_arena_alloc'd, with at
 * least len + FNS_CHUNK_TAIL bytes); crc must be the CRC32C of data[0, len). Writes
 * the trailer. Returns the chunk with one reference (the caller's).
 */
struct fns_chunk *fns_chunk_adopt(const struct fns_key *key, uint8_t *data, uint32_t len,
                                  uint32_t crc);
/*
 * A chunk from a COS blob (TRANSFERRED, malloc'd, bloblen bytes): checks the
 * trailer and the CRC. 0 and *out (one reference); CM_E_CRC when the blob is
 * short, the magic is wrong or the CRC does not match (blob freed).
 */
int fns_chunk_from_blob(const struct fns_key *key, void *blob, size_t bloblen,
                        struct fns_chunk **out);
/* The COS blob of c: data, len + FNS_CHUNK_TAIL bytes (borrowed from c). */
static inline size_t
fns_chunk_blob_len(const struct fns_chunk *c)
{
    return (size_t)c->len + FNS_CHUNK_TAIL;
}

/*
 * Makes v (caller's storage) a view of of's bytes with one reference (the
 * caller's); of gains a reference, dropped after release(v) runs on the
 * last unref of v. release runs on the thread of that unref and may free
 * v's storage.
 */
void fns_chunk_view_init(struct fns_chunk *v, struct fns_chunk *of,
                         void (*release)(struct fns_chunk *view));
void fns_chunk_ref(struct fns_chunk *c);
void fns_chunk_unref(struct fns_chunk *c); /* NULL is a no-op; any thread */

/* COS name of a key (cm_chunk_name). */
int fns_key_name(const struct fns_key *k, char *buf, size_t cap);
uint64_t fns_key_hash(const struct fns_key *k);
int fns_key_eq(const struct fns_key *a, const struct fns_key *b);
/* The keys of a map's records, a stretch at a time (cm_hmap_walk): each
 * record holds its key key_off bytes after its cm_hnode. */
int fns_keys_walk(const struct cm_hmap *m, ptrdiff_t key_off, size_t *pos, size_t limit,
                  void (*fn)(void *arg, const struct fns_key *key), void *arg);
/* key_off of a record type with members hn and key. */
#define FNS_KEY_OFF(type) ((ptrdiff_t)offsetof(type, key) - (ptrdiff_t)offsetof(type, hn))

#endif
