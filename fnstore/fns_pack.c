/*
 * fns_pack.c - COS segment format and the packed-chunk index; see fns_pack.h.
 *
 * The index is two chained hash tables that double when full: chunks by
 * key, and segments by sequence number with their count of indexed chunks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_pack.h"

#define PACK_VERSION 1u

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
fns_pack_encode(uint8_t *out, const struct fns_pack_ent *ents, size_t nent,
                const struct fns_key *tombs, size_t ntomb)
{
    size_t hl = fns_pack_hdr_len(nent, ntomb);
    uint8_t *p = out + FNS_PACK_FIXED;

    cm_put_le32(out, FNS_PACK_MAGIC);
    cm_put_le32(out + 4, PACK_VERSION);
    cm_put_le32(out + 8, (uint32_t)nent);
    cm_put_le32(out + 12, (uint32_t)ntomb);
    cm_put_le32(out + 16, (uint32_t)hl);
    cm_put_le32(out + 20, 0);
    for (size_t i = 0; i < nent; i++, p += FNS_PACK_ENT_LEN) {
        put_key(p, &ents[i].key);
        cm_put_le32(p + 24, ents[i].off);
        cm_put_le32(p + 28, ents[i].len);
    }
    for (size_t i = 0; i < ntomb; i++, p += FNS_PACK_TOMB_LEN) {
        put_key(p, &tombs[i]);
    }
    cm_put_le32(out + 20, cm_crc32c(0, out, hl));
}

int
fns_pack_decode(const uint8_t *buf, size_t len, uint64_t seg_len, struct fns_pack_ent **ents,
                size_t *nent, struct fns_key **tombs, size_t *ntomb)
{
    uint8_t fixed[FNS_PACK_FIXED];
    uint64_t n, t, hl;
    const uint8_t *p;

    *ents = NULL;
    *tombs = NULL;
    *nent = *ntomb = 0;
    if (len < FNS_PACK_FIXED || cm_get_le32(buf) != FNS_PACK_MAGIC ||
        cm_get_le32(buf + 4) != PACK_VERSION) {
        return CM_E_CRC;
    }
    n = cm_get_le32(buf + 8);
    t = cm_get_le32(buf + 12);
    hl = cm_get_le32(buf + 16);
    if (hl != FNS_PACK_FIXED + n * FNS_PACK_ENT_LEN + t * FNS_PACK_TOMB_LEN || hl > len ||
        hl > seg_len) {
        return CM_E_CRC;
    }
    memcpy(fixed, buf, sizeof(fixed));
    cm_put_le32(fixed + 20, 0);
    if (cm_crc32c(cm_crc32c(0, fixed, sizeof(fixed)), buf + FNS_PACK_FIXED,
                  hl - FNS_PACK_FIXED) != cm_get_le32(buf + 20)) {
        return CM_E_CRC;
    }
    *ents = n ? cm_malloc(n * sizeof(**ents)) : NULL;
    *tombs = t ? cm_malloc(t * sizeof(**tombs)) : NULL;
    p = buf + FNS_PACK_FIXED;
    for (size_t i = 0; i < n; i++, p += FNS_PACK_ENT_LEN) {
        struct fns_pack_ent *e = &(*ents)[i];

        get_key(p, &e->key);
        e->off = cm_get_le32(p + 24);
        e->len = cm_get_le32(p + 28);
        if (e->off < hl || (uint64_t)e->off + e->len > seg_len) {
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
    return 0;
}

void
fns_pack_name(char *buf, size_t cap, uint32_t node, uint64_t seq)
{
    snprintf(buf, cap, "seg/n%" PRIu32 "/%016" PRIx64, node, seq);
}

int
fns_pack_parse_name(const char *name, uint32_t node, uint64_t *seq)
{
    char want[FNS_PACK_NAME_MAX];
    size_t pl;
    uint64_t v = 0;

    snprintf(want, sizeof(want), "seg/n%" PRIu32 "/", node);
    pl = strlen(want);
    if (strncmp(name, want, pl) != 0 || strlen(name + pl) != 16) {
        return CM_E_BADARG;
    }
    for (const char *c = name + pl; *c; c++) {
        int d = (*c >= '0' && *c <= '9') ? *c - '0' : (*c >= 'a' && *c <= 'f') ? *c - 'a' + 10 : -1;

        if (d < 0) {
            return CM_E_BADARG;
        }
        v = v << 4 | (uint64_t)d;
    }
    if (v == 0) {
        return CM_E_BADARG;
    }
    *seq = v;
    return 0;
}

/* ---- index ------------------------------------------------------------- */

struct pack_ent {
    struct pack_ent *next;
    struct fns_key key;
    struct fns_pack_loc loc;
};

struct pack_seg {
    struct pack_seg *next;
    uint64_t seq;
    uint64_t live;
};

struct fns_pack_index {
    struct pack_ent **ents;
    size_t emask, nents;
    struct pack_seg **segs;
    size_t smask, nsegs;
};

static size_t
seg_bucket(const struct fns_pack_index *x, uint64_t seq)
{
    return (size_t)((seq * 0x9e3779b97f4a7c15ull) >> 32) & x->smask;
}

struct fns_pack_index *
fns_pack_index_create(void)
{
    struct fns_pack_index *x = cm_calloc(1, sizeof(*x));

    x->emask = 255;
    x->ents = cm_calloc(x->emask + 1, sizeof(*x->ents));
    x->smask = 63;
    x->segs = cm_calloc(x->smask + 1, sizeof(*x->segs));
    return x;
}

void
fns_pack_index_destroy(struct fns_pack_index *x)
{
    if (x == NULL) {
        return;
    }
    for (size_t i = 0; i <= x->emask; i++) {
        while (x->ents[i] != NULL) {
            struct pack_ent *e = x->ents[i];

            x->ents[i] = e->next;
            free(e);
        }
    }
    for (size_t i = 0; i <= x->smask; i++) {
        while (x->segs[i] != NULL) {
            struct pack_seg *s = x->segs[i];

            x->segs[i] = s->next;
            free(s);
        }
    }
    free(x->ents);
    free(x->segs);
    free(x);
}

static void
grow_ents(struct fns_pack_index *x)
{
    size_t oldn = x->emask + 1;
    struct pack_ent **old = x->ents;

    x->emask = 2 * oldn - 1;
    x->ents = cm_calloc(2 * oldn, sizeof(*x->ents));
    for (size_t i = 0; i < oldn; i++) {
        while (old[i] != NULL) {
            struct pack_ent *e = old[i];
            size_t b = fns_key_hash(&e->key) & x->emask;

            old[i] = e->next;
            e->next = x->ents[b];
            x->ents[b] = e;
        }
    }
    free(old);
}

static void
grow_segs(struct fns_pack_index *x)
{
    size_t oldn = x->smask + 1;
    struct pack_seg **old = x->segs;

    x->smask = 2 * oldn - 1;
    x->segs = cm_calloc(2 * oldn, sizeof(*x->segs));
    for (size_t i = 0; i < oldn; i++) {
        while (old[i] != NULL) {
            struct pack_seg *s = old[i];
            size_t b = seg_bucket(x, s->seq);

            old[i] = s->next;
            s->next = x->segs[b];
            x->segs[b] = s;
        }
    }
    free(old);
}

static struct pack_seg *
seg_get(struct fns_pack_index *x, uint64_t seq, int create)
{
    struct pack_seg *s = x->segs[seg_bucket(x, seq)];

    while (s != NULL && s->seq != seq) {
        s = s->next;
    }
    if (s == NULL && create) {
        size_t b;

        if (x->nsegs > x->smask) {
            grow_segs(x);
        }
        b = seg_bucket(x, seq);
        s = cm_calloc(1, sizeof(*s));
        s->seq = seq;
        s->next = x->segs[b];
        x->segs[b] = s;
        x->nsegs++;
    }
    return s;
}

static void
seg_forget(struct fns_pack_index *x, uint64_t seq)
{
    struct pack_seg **pp = &x->segs[seg_bucket(x, seq)];

    while (*pp != NULL && (*pp)->seq != seq) {
        pp = &(*pp)->next;
    }
    if (*pp != NULL) {
        struct pack_seg *s = *pp;

        *pp = s->next;
        free(s);
        x->nsegs--;
    }
}

/* One chunk fewer in seq: returns seq if that emptied it (then forgotten). */
static uint64_t
seg_unref(struct fns_pack_index *x, uint64_t seq)
{
    struct pack_seg *s = seg_get(x, seq, 0);

    if (s == NULL || --s->live > 0) {
        return 0;
    }
    seg_forget(x, seq);
    return seq;
}

void
fns_pack_index_add_seg(struct fns_pack_index *x, uint64_t seg)
{
    (void)seg_get(x, seg, 1);
}

static struct pack_ent **
ent_find(const struct fns_pack_index *x, const struct fns_key *key)
{
    struct pack_ent **pp = &x->ents[fns_key_hash(key) & x->emask];

    while (*pp != NULL && !fns_key_eq(&(*pp)->key, key)) {
        pp = &(*pp)->next;
    }
    return pp;
}

uint64_t
fns_pack_index_put(struct fns_pack_index *x, const struct fns_key *key,
                   const struct fns_pack_loc *loc)
{
    struct pack_ent **pp = ent_find(x, key);

    seg_get(x, loc->seg, 1)->live++; /* first: a same-segment replace never empties it */
    if (*pp != NULL) {
        uint64_t old = (*pp)->loc.seg;

        (*pp)->loc = *loc;
        return seg_unref(x, old);
    }
    if (x->nents > x->emask) {
        grow_ents(x);
        pp = ent_find(x, key);
    }
    *pp = cm_calloc(1, sizeof(**pp));
    (*pp)->key = *key;
    (*pp)->loc = *loc;
    x->nents++;
    return 0;
}

int
fns_pack_index_get(const struct fns_pack_index *x, const struct fns_key *key,
                   struct fns_pack_loc *loc)
{
    struct pack_ent *e = *ent_find(x, key);

    if (e == NULL) {
        return CM_E_NOTFOUND;
    }
    *loc = e->loc;
    return 0;
}

uint64_t
fns_pack_index_del(struct fns_pack_index *x, const struct fns_key *key, int *found)
{
    struct pack_ent **pp = ent_find(x, key);
    struct pack_ent *e = *pp;
    uint64_t seq;

    *found = e != NULL;
    if (e == NULL) {
        return 0;
    }
    *pp = e->next;
    x->nents--;
    seq = e->loc.seg;
    free(e);
    return seg_unref(x, seq);
}

int
fns_pack_index_drop_if_empty(struct fns_pack_index *x, uint64_t seg)
{
    struct pack_seg *s = seg_get(x, seg, 0);

    if (s == NULL || s->live > 0) {
        return 0;
    }
    seg_forget(x, seg);
    return 1;
}

void
fns_pack_index_drop_empty(struct fns_pack_index *x, void (*fn)(void *arg, uint64_t seg), void *arg)
{
    for (size_t i = 0; i <= x->smask; i++) {
        struct pack_seg **pp = &x->segs[i];

        while (*pp != NULL) {
            struct pack_seg *s = *pp;

            if (s->live > 0) {
                pp = &s->next;
                continue;
            }
            *pp = s->next;
            x->nsegs--;
            fn(arg, s->seq);
            free(s);
        }
    }
}

size_t
fns_pack_index_chunks(const struct fns_pack_index *x)
{
    return x->nents;
}

size_t
fns_pack_index_segments(const struct fns_pack_index *x)
{
    return x->nsegs;
}
