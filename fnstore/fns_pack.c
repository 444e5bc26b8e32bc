/*
 * fns_pack.c - COS segment format and the packed-chunk index; see fns_pack.h.
 *
 * The index is two cm_hmap tables: chunks by key, and segments by sequence
 * number with their count of indexed chunks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_hmap.h"
#include "fns_pack.h"

#define PACK_VERSION 2u

/* ---- format ------------------------------------------------------------ */

size_t
fns_pack_hdr_len(size_t nent, size_t ntomb)
{
    return FNS_PACK_FIXED + nent * FNS_PACK_ENT_LEN + ntomb * FNS_PACK_TOMB_LEN;
}

static void
put_key(uint8_t *p, const struct fns_key *k)
{
    cm_put_le32(p, k->tenant);
    cm_put_le32(p + 4, k->index);
    cm_put_le64(p + 8, k->object);
    cm_put_le64(p + 16, k->version);
}

static void
get_key(const uint8_t *p, struct fns_key *k)
{
    k->tenant = cm_get_le32(p);
    k->index = cm_get_le32(p + 4);
    k->object = cm_get_le64(p + 8);
    k->version = cm_get_le64(p + 16);
}

void
fns_pack_encode(uint8_t *rec, size_t rec_len, const struct fns_pack_ent *ents, size_t nent,
                const struct fns_key *tombs, size_t ntomb)
{
    size_t hl = fns_pack_hdr_len(nent, ntomb);
    uint8_t *p = rec + FNS_PACK_FIXED;

    cm_put_le32(rec, FNS_PACK_MAGIC);
    cm_put_le32(rec + 4, PACK_VERSION);
    cm_put_le32(rec + 8, (uint32_t)nent);
    cm_put_le32(rec + 12, (uint32_t)ntomb);
    cm_put_le32(rec + 16, (uint32_t)hl);
    cm_put_le32(rec + 20, 0);
    cm_put_le32(rec + 24, (uint32_t)rec_len);
    cm_put_le32(rec + 28, cm_crc32c(0, rec + hl, rec_len - hl));
    for (size_t i = 0; i < nent; i++, p += FNS_PACK_ENT_LEN) {
        put_key(p, &ents[i].key);
        cm_put_le32(p + 24, ents[i].off);
        cm_put_le32(p + 28, ents[i].len);
    }
    for (size_t i = 0; i < ntomb; i++, p += FNS_PACK_TOMB_LEN) {
        put_key(p, &tombs[i]);
    }
    cm_put_le32(rec + 20, cm_crc32c(0, rec, hl));
}

int
fns_pack_decode(const uint8_t *buf, size_t len, struct fns_pack_ent **ents, size_t *nent,
                struct fns_key **tombs, size_t *ntomb, size_t *rec_len)
{
    uint8_t fixed[FNS_PACK_FIXED];
    uint64_t n, t, hl, fl, rl;
    uint32_t version;
    const uint8_t *p;

    *ents = NULL;
    *tombs = NULL;
    *nent = *ntomb = 0;
    *rec_len = 0;
    if (len < FNS_PACK_FIXED_V1 || cm_get_le32(buf) != FNS_PACK_MAGIC) {
        return CM_E_CRC;
    }
    version = cm_get_le32(buf + 4);
    fl = version == 1 ? FNS_PACK_FIXED_V1 : FNS_PACK_FIXED;
    if ((version != 1 && version != PACK_VERSION) || len < fl) {
        return CM_E_CRC;
    }
    n = cm_get_le32(buf + 8);
    t = cm_get_le32(buf + 12);
    hl = cm_get_le32(buf + 16);
    rl = version == 1 ? len : cm_get_le32(buf + 24);
    if (hl != fl + n * FNS_PACK_ENT_LEN + t * FNS_PACK_TOMB_LEN || hl > rl || rl > len) {
        return CM_E_CRC;
    }
    memcpy(fixed, buf, fl);
    cm_put_le32(fixed + 20, 0);
    if (cm_crc32c(cm_crc32c(0, fixed, fl), buf + fl, hl - fl) != cm_get_le32(buf + 20) ||
        (version != 1 && cm_crc32c(0, buf + hl, rl - hl) != cm_get_le32(buf + 28))) {
        return CM_E_CRC;
    }
    *ents = n ? cm_malloc(n * sizeof(**ents)) : NULL;
    *tombs = t ? cm_malloc(t * sizeof(**tombs)) : NULL;
    p = buf + fl;
    for (size_t i = 0; i < n; i++, p += FNS_PACK_ENT_LEN) {
        struct fns_pack_ent *e = &(*ents)[i];

        get_key(p, &e->key);
        e->off = cm_get_le32(p + 24);
        e->len = cm_get_le32(p + 28);
        if (e->off < hl || (uint64_t)e->off + e->len > rl) {
            free(*ents);
            free(*tombs);
            *ents = NULL;
            *tombs = NULL;
            return CM_E_CRC;
        }
    }
    for (size_t i = 0; i < t; i++, p += FNS_PACK_TOMB_LEN) {
        get_key(p, &(*tombs)[i]);
    }
    *nent = n;
    *ntomb = t;
    *rec_len = rl;
    return 0;
}

size_t
fns_pack_scan(const uint8_t *buf, size_t len,
              int (*fn)(void *arg, const struct fns_pack_ent *ents, size_t nent,
                        const struct fns_key *tombs, size_t ntomb),
              void *arg)
{
    size_t at = 0;

    while (at < len) {
        struct fns_pack_ent *ents;
        struct fns_key *tombs;
        size_t ne, nt, rl;
        int stop;

        if (fns_pack_decode(buf + at, len - at, &ents, &ne, &tombs, &nt, &rl) != 0 ||
            at + rl > UINT32_MAX) { /* (locations are 32-bit) */
            free(ents);
            free(tombs);
            break;
        }
        for (size_t i = 0; i < ne; i++) {
            ents[i].off += (uint32_t)at;
        }
        stop = fn(arg, ents, ne, tombs, nt);
        free(ents);
        free(tombs);
        at += rl;
        if (stop) {
            break;
        }
    }
    return at;
}

void
fns_pack_name(char *buf, size_t cap, uint32_t node, uint64_t seq)
{
    cm_cos_seq_name(buf, cap, "seg", node, seq);
}

int
fns_pack_parse_name(const char *name, uint32_t node, uint64_t *seq)
{
    return cm_cos_seq_parse(name, "seg", node, seq);
}

/* ---- index ------------------------------------------------------------- */

struct pack_ent {
    struct cm_hnode hn;
    struct fns_key key;
    struct fns_pack_loc loc;
};

struct pack_seg {
    struct cm_hnode hn;
    uint64_t seq;
    uint64_t live;
    uint64_t *targets; /* older segments its tombstones kill chunks in */
    uint32_t ntargets, cap;
    int held; /* empty, kept for its tombstones: on x->held */
    struct pack_seg *hprev, *hnext;
};

struct fns_pack_index {
    struct cm_hmap ents; /* by fns_key_hash */
    struct cm_hmap segs; /* by cm_hmix64(seq) */
    struct pack_seg *held; /* empty segments whose tombstones still matter */
    size_t nheld;
    uint64_t open; /* the segment appended to (0: none); it and newer ones stay */
};

struct fns_pack_index *
fns_pack_index_create(void)
{
    struct fns_pack_index *x = cm_calloc(1, sizeof(*x));

    cm_hmap_init(&x->ents, 256);
    cm_hmap_init(&x->segs, 64);
    return x;
}

static void
free_ent(void *arg, struct cm_hnode *n)
{
    (void)arg;
    free(CM_CONTAINER_OF(n, struct pack_ent, hn));
}

static void
free_seg(void *arg, struct cm_hnode *n)
{
    struct pack_seg *s = CM_CONTAINER_OF(n, struct pack_seg, hn);

    (void)arg;
    free(s->targets);
    free(s);
}

void
fns_pack_index_destroy(struct fns_pack_index *x)
{
    if (x == NULL) {
        return;
    }
    cm_hmap_each(&x->ents, free_ent, NULL);
    cm_hmap_each(&x->segs, free_seg, NULL);
    cm_hmap_free(&x->ents);
    cm_hmap_free(&x->segs);
    free(x);
}

static struct pack_seg *
seg_get(struct fns_pack_index *x, uint64_t seq, int create)
{
    uint64_t h = cm_hmix64(seq);
    struct pack_seg *s;

    for (struct cm_hnode *n = cm_hmap_first(&x->segs, h); n; n = cm_hmap_next(n, h)) {
        s = CM_CONTAINER_OF(n, struct pack_seg, hn);
        if (s->seq == seq) {
            return s;
        }
    }
    if (!create) {
        return NULL;
    }
    s = cm_calloc(1, sizeof(*s));
    s->seq = seq;
    cm_hmap_add(&x->segs, &s->hn, h);
    return s;
}

static void
held_add(struct fns_pack_index *x, struct pack_seg *s)
{
    if (s->held) {
        return;
    }
    s->held = 1;
    s->hprev = NULL;
    s->hnext = x->held;
    if (x->held != NULL) {
        x->held->hprev = s;
    }
    x->held = s;
    x->nheld++;
}

static void
held_remove(struct fns_pack_index *x, struct pack_seg *s)
{
    if (!s->held) {
        return;
    }
    if (s->hprev != NULL) {
        s->hprev->hnext = s->hnext;
    } else {
        x->held = s->hnext;
    }
    if (s->hnext != NULL) {
        s->hnext->hprev = s->hprev;
    }
    s->held = 0;
    x->nheld--;
}

static void
seg_forget(struct fns_pack_index *x, struct pack_seg *s)
{
    held_remove(x, s);
    cm_hmap_del(&x->segs, &s->hn);
    free(s->targets);
    free(s);
}

/* Empty, not appended to any more, and no segment its tombstones kill
 * chunks in is left (targets already gone are dropped from the list on
 * the way). */
static int
seg_droppable(struct fns_pack_index *x, struct pack_seg *s)
{
    uint32_t i = 0;

    if (s->live > 0 || (x->open != 0 && s->seq >= x->open)) {
        return 0;
    }
    while (i < s->ntargets) {
        if (seg_get(x, s->targets[i], 0) != NULL) {
            return 0;
        }
        s->targets[i] = s->targets[--s->ntargets];
    }
    return 1;
}

/* seq is empty now: forgets it and returns seq when it can go, else keeps
 * it on the held list and returns 0. */
static uint64_t
seg_emptied(struct fns_pack_index *x, struct pack_seg *s)
{
    uint64_t seq = s->seq;

    if (seg_droppable(x, s)) {
        seg_forget(x, s);
        return seq;
    }
    held_add(x, s);
    return 0;
}

/* One chunk fewer in seq: returns seq if that emptied it and it can go. */
static uint64_t
seg_unref(struct fns_pack_index *x, uint64_t seq)
{
    struct pack_seg *s = seg_get(x, seq, 0);

    if (s == NULL || --s->live > 0) {
        return 0;
    }
    return seg_emptied(x, s);
}

int
fns_pack_index_open(struct fns_pack_index *x, uint64_t seg)
{
    if (seg <= x->open) {
        return 0;
    }
    x->open = seg;
    return 1;
}

void
fns_pack_index_add_seg(struct fns_pack_index *x, uint64_t seg)
{
    (void)seg_get(x, seg, 1);
}

void
fns_pack_index_hold(struct fns_pack_index *x, uint64_t seg, uint64_t target)
{
    struct pack_seg *s;

    if (target == seg || seg_get(x, target, 0) == NULL) {
        return; /* nothing left for the tombstone to kill */
    }
    s = seg_get(x, seg, 1);
    for (uint32_t i = 0; i < s->ntargets; i++) {
        if (s->targets[i] == target) {
            return;
        }
    }
    if (s->ntargets == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->targets = cm_realloc(s->targets, s->cap * sizeof(*s->targets));
    }
    s->targets[s->ntargets++] = target;
}

static struct pack_ent *
ent_find(const struct fns_pack_index *x, const struct fns_key *key, uint64_t h)
{
    for (struct cm_hnode *n = cm_hmap_first(&x->ents, h); n; n = cm_hmap_next(n, h)) {
        struct pack_ent *e = CM_CONTAINER_OF(n, struct pack_ent, hn);

        if (fns_key_eq(&e->key, key)) {
            return e;
        }
    }
    return NULL;
}

uint64_t
fns_pack_index_put(struct fns_pack_index *x, const struct fns_key *key,
                   const struct fns_pack_loc *loc)
{
    uint64_t h = fns_key_hash(key);
    struct pack_ent *e = ent_find(x, key, h);
    struct pack_seg *s = seg_get(x, loc->seg, 1);

    s->live++; /* first: a same-segment replace never empties it */
    held_remove(x, s);
    if (e != NULL) {
        uint64_t old = e->loc.seg;

        e->loc = *loc;
        return seg_unref(x, old);
    }
    e = cm_calloc(1, sizeof(*e));
    e->key = *key;
    e->loc = *loc;
    cm_hmap_add(&x->ents, &e->hn, h);
    return 0;
}

int
fns_pack_index_get(const struct fns_pack_index *x, const struct fns_key *key,
                   struct fns_pack_loc *loc)
{
    struct pack_ent *e = ent_find(x, key, fns_key_hash(key));

    if (e == NULL) {
        return CM_E_NOTFOUND;
    }
    *loc = e->loc;
    return 0;
}

uint64_t
fns_pack_index_del(struct fns_pack_index *x, const struct fns_key *key, uint64_t *from)
{
    struct pack_ent *e = ent_find(x, key, fns_key_hash(key));

    *from = 0;
    if (e == NULL) {
        return 0;
    }
    *from = e->loc.seg;
    cm_hmap_del(&x->ents, &e->hn);
    free(e);
    return seg_unref(x, *from);
}

int
fns_pack_index_drop_if_empty(struct fns_pack_index *x, uint64_t seg)
{
    struct pack_seg *s = seg_get(x, seg, 0);

    return s != NULL && s->live == 0 && seg_emptied(x, s) != 0;
}

size_t
fns_pack_index_drop_held(struct fns_pack_index *x, void (*fn)(void *arg, uint64_t seg), void *arg)
{
    size_t dropped = 0;
    int again = 1;

    while (again) { /* dropping one may free another that held on to it */
        struct pack_seg *s, *next;

        again = 0;
        for (s = x->held; s != NULL; s = next) {
            uint64_t seq = s->seq;

            next = s->hnext;
            if (seg_droppable(x, s)) {
                seg_forget(x, s);
                fn(arg, seq);
                dropped++;
                again = 1;
            }
        }
    }
    return dropped;
}

static void
hold_if_empty(void *arg, struct cm_hnode *n)
{
    struct pack_seg *s = CM_CONTAINER_OF(n, struct pack_seg, hn);

    if (s->live == 0) {
        held_add(arg, s);
    }
}

void
fns_pack_index_drop_empty(struct fns_pack_index *x, void (*fn)(void *arg, uint64_t seg), void *arg)
{
    cm_hmap_each(&x->segs, hold_if_empty, x);
    (void)fns_pack_index_drop_held(x, fn, arg);
}

size_t
fns_pack_index_held(const struct fns_pack_index *x)
{
    return x->nheld;
}

size_t
fns_pack_index_chunks(const struct fns_pack_index *x)
{
    return x->ents.n;
}

size_t
fns_pack_index_segments(const struct fns_pack_index *x)
{
    return x->segs.n;
}

int
fns_pack_index_walk_keys(const struct fns_pack_index *x, size_t *pos, size_t limit,
                         void (*fn)(void *arg, const struct fns_key *key), void *arg)
{
    return fns_keys_walk(&x->ents, FNS_KEY_OFF(struct pack_ent), pos, limit, fn, arg);
}
