/*
 * gw_meta.c - object metadata in LMDB (see gw_meta.h).
 *
 * LMDB keys are at most 511 bytes but object keys reach 1024, so the
 * objects and tombs tables are keyed by a *group key*: tenant u32 BE
 * followed by the first GW_META_INLINE bytes of the object key. Its value
 * is the *group*: the members, one per object key that maps to it, sorted
 * by full key:
 *
 *   member := klen u16 LE | key[klen] | vlen u16 LE | value[vlen]
 *
 * Keys shorter than GW_META_INLINE have a group of their own. Ordering
 * holds: comparing two group keys bytewise orders their keys as the full
 * keys would be ordered (a key that is a prefix of another sorts first both
 * ways), and inside a group the members are sorted. So a LIST is one cursor
 * scan, and all operations stay O(group size), which is 1 except for many
 * long keys sharing their first 480 bytes.
 *
 * Version record (value in objects), little-endian. Format 3 (written):
 *   0 fmt=3 u8 | 1 k u8 | 2 m u8 | 3 sections u8 | 4 tenant u32 |
 *   8 chunk_size u32 | 12 nstripes u32 | 16 object | 24 version | 32 size |
 *   40 etag | 48 persisted | 56 mtime_ms (u64 each) |
 *   64 holders u32[k+m] (none when k = 0: a record-only version) |
 *   then, for each bit of sections in this order, len u16 | body[len]:
 *     bit 0 tags    u32[nstripes*(k+m)] by wire index (0 = unknown); k > 0
 *     bit 1 md5     16 bytes
 *     bit 2 hdrs    "name\0value\0"..., 1..GW_META_HDRS_MAX bytes
 *     bit 3 parts   upload id (32 hex) | part numbers u16[n], ascending,
 *                   1..GW_META_PARTS_MAX of them: a composite; k = 0
 *     bit 4 target  the key an upload makes, 1..GW_KEY_MAX bytes; k = 0
 * A record-only version has chunk_size, nstripes and persisted 0, and
 * parts, target or neither (a bucket). Format 1 (read only) is the first
 * 56 bytes followed by the holders: k > 0, no tags, no commit time.
 * Format 2 (read only) is either of two records written before format 3
 * joined them (see fmt2_tags): format 1 and the tags, or the 64 bytes
 * above, the holders, an MD5 and stored headers. The decoder takes
 * nothing else: unknown formats or section bits, lengths that do not
 * match, trailing bytes.
 *
 * Threads: see gw_meta.h. Invariants: pending holds exactly the objects
 * that are a live version of their key and that the engine has not
 * reported done (every chunk persisted and the META record logged; stale
 * entries are tolerated on read and dropped on update), and the deletes
 * whose tombstone record is not logged. A record's persisted bits count
 * only while its object is pending: an object leaves pending without its
 * record being rewritten, so a record outside pending may still show the
 * bits it was written with. A live composite's parts are live at their
 * keys (gw_meta_put's caller checks; nothing but a delete or a
 * replacement of the composite, or a purge, removes them).
 */
#include "gw_meta.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_kv.h"
#include "cm_time.h"
#include "gw_parse.h"

#define GW_META_INLINE 480
#define GROUP_KEY_MAX (4 + GW_META_INLINE)

enum { T_OBJECTS, T_TOMBS, T_PENDING, T_STATE, T_COUNT };
static const char *const table_names[T_COUNT] = {"objects", "tombs", "pending", "state"};

struct gw_meta {
    struct cm_kv *kv;
};

struct gw_meta_batch {
    struct cm_kv_txn *txn;
    uint64_t now_ms;
};

static uint64_t
get_be64(const uint8_t *p)
{
    return (uint64_t)cm_get_be32(p) << 32 | cm_get_be32(p + 4);
}

/* ---- internal keys ---- */

size_t
gw_meta_bucket_key(const char *name, size_t nlen, char *out)
{
    out[0] = '\0';
    out[1] = 'b';
    memcpy(out + 2, name, nlen);
    return 2 + nlen;
}

size_t
gw_meta_upload_key(const char *id, char *out)
{
    out[0] = '\0';
    out[1] = 'u';
    memcpy(out + 2, id, GW_META_UPLOAD_ID_LEN);
    return 2 + GW_META_UPLOAD_ID_LEN;
}

size_t
gw_meta_part_key(const char *id, unsigned n, char *out)
{
    char num[8];

    out[0] = '\0';
    out[1] = 'p';
    memcpy(out + 2, id, GW_META_UPLOAD_ID_LEN);
    snprintf(num, sizeof(num), "/%05u", n % 100000);
    memcpy(out + 2 + GW_META_UPLOAD_ID_LEN, num, 6);
    return GW_META_PART_KEY_LEN;
}

/* Keys named by an upload id: never written again once deleted. */
static int
once_key(const char *key, size_t klen)
{
    return klen >= 2 && key[0] == '\0' && (key[1] == 'u' || key[1] == 'p');
}

/* ---- records ---- */

#define REC_HDR1 56 /* format 1, format 2 with tags */
#define REC_HDR 64  /* format 3, format 2 with attributes */

enum {
    SEC_TAGS = 1,
    SEC_MD5 = 2,
    SEC_HDRS = 4,
    SEC_PARTS = 8,
    SEC_TARGET = 16,
    SEC_ALL = 31,
};

static unsigned
rec_holders(const struct gw_layout *l)
{
    return l->k == 0 ? 0 : (unsigned)l->k + l->m;
}

/* The record's length and its sections: the tags only when they fit. */
static size_t
rec_plan(const struct gw_layout *l, const struct gw_meta_attrs *a, uint8_t *secs)
{
    size_t len = REC_HDR + 4 * (size_t)rec_holders(l);
    uint8_t s = 0;

    if (a != NULL && a->has_md5) {
        s |= SEC_MD5;
        len += 2 + 16;
    }
    if (a != NULL && a->hdrs_len > 0) {
        s |= SEC_HDRS;
        len += 2 + a->hdrs_len;
    }
    if (a != NULL && l->k == 0 && a->nparts > 0) {
        s |= SEC_PARTS;
        len += 2 + GW_META_UPLOAD_ID_LEN + 2 * (size_t)a->nparts;
    }
    if (a != NULL && l->k == 0 && a->target_len > 0) {
        s |= SEC_TARGET;
        len += 2 + a->target_len;
    }
    if (l->tags != NULL && l->k > 0 && gw_layout_nchunks(l) > 0 &&
        gw_layout_nchunks(l) <= (GW_META_REC_LIMIT - 2 - len) / 4) {
        s |= SEC_TAGS;
        len += 2 + 4 * gw_layout_nchunks(l);
    }
    *secs = s;
    return len;
}

size_t
gw_meta_rec_len(const struct gw_layout *l, const struct gw_meta_attrs *a)
{
    uint8_t secs;

    return rec_plan(l, a, &secs);
}

static size_t
sec_put(uint8_t *buf, size_t p, const void *body, size_t len)
{
    cm_put_le16(buf + p, (uint16_t)len);
    memcpy(buf + p + 2, body, len);
    return p + 2 + len;
}

size_t
gw_meta_encode(const struct gw_layout *l, const struct gw_meta_attrs *a, uint8_t *buf)
{
    uint8_t secs;
    size_t len = rec_plan(l, a, &secs), p = REC_HDR;
    int ro = gw_layout_record_only(l);

    memset(buf, 0, REC_HDR);
    buf[0] = 3;
    buf[1] = l->k;
    buf[2] = l->m;
    buf[3] = secs;
    cm_put_le32(buf + 4, l->tenant);
    cm_put_le32(buf + 8, ro ? 0 : l->chunk_size);
    cm_put_le32(buf + 12, ro ? 0 : l->nstripes);
    cm_put_le64(buf + 16, l->object);
    cm_put_le64(buf + 24, l->version);
    cm_put_le64(buf + 32, l->size);
    cm_put_le64(buf + 40, l->etag);
    cm_put_le64(buf + 48, ro ? 0 : l->persisted);
    cm_put_le64(buf + 56, a != NULL ? a->mtime_ms : 0);
    for (unsigned j = 0; j < rec_holders(l) && j < GW_MAX_HOLDERS; j++, p += 4) {
        cm_put_le32(buf + p, l->holders[j]);
    }
    if (secs & SEC_TAGS) {
        cm_put_le16(buf + p, (uint16_t)(4 * gw_layout_nchunks(l)));
        p += 2;
        for (size_t i = 0; i < gw_layout_nchunks(l); i++, p += 4) {
            cm_put_le32(buf + p, l->tags[i]);
        }
    }
    if (secs & SEC_MD5) {
        p = sec_put(buf, p, a->md5, 16);
    }
    if (secs & SEC_HDRS) {
        p = sec_put(buf, p, a->hdrs, a->hdrs_len);
    }
    if (secs & SEC_PARTS) {
        cm_put_le16(buf + p, (uint16_t)(GW_META_UPLOAD_ID_LEN + 2 * (size_t)a->nparts));
        memcpy(buf + p + 2, a->upload, GW_META_UPLOAD_ID_LEN);
        memcpy(buf + p + 2 + GW_META_UPLOAD_ID_LEN, a->parts, 2 * (size_t)a->nparts);
        p += 2 + GW_META_UPLOAD_ID_LEN + 2 * (size_t)a->nparts;
    }
    if (secs & SEC_TARGET) {
        p = sec_put(buf, p, a->target, a->target_len);
    }
    (void)len; /* p == len */
    return p;
}

/* Stored headers: name\0value\0 pairs. */
static int
hdrs_ok(const uint8_t *h, size_t len)
{
    size_t nuls = 0;

    if (len == 0 || len > GW_META_HDRS_MAX || h[len - 1] != '\0') {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        nuls += h[i] == '\0';
    }
    return nuls % 2 == 0;
}

static int
parts_ok(const uint8_t *b, size_t len)
{
    unsigned prev = 0;

    if (len < GW_META_UPLOAD_ID_LEN + 2 || (len - GW_META_UPLOAD_ID_LEN) % 2 != 0 ||
        (len - GW_META_UPLOAD_ID_LEN) / 2 > GW_META_PARTS_MAX) {
        return 0;
    }
    for (size_t i = 0; i < GW_META_UPLOAD_ID_LEN; i++) {
        if (!((b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'f'))) {
            return 0;
        }
    }
    for (size_t i = GW_META_UPLOAD_ID_LEN; i < len; i += 2) {
        unsigned n = cm_get_le16(b + i);

        if (n <= prev || n > GW_META_PARTS_MAX) {
            return 0;
        }
        prev = n;
    }
    return 1;
}

static void
decode_fixed(const uint8_t *p, struct gw_layout *out)
{
    out->k = p[1];
    out->m = p[2];
    out->tenant = cm_get_le32(p + 4);
    out->chunk_size = cm_get_le32(p + 8);
    out->nstripes = cm_get_le32(p + 12);
    out->object = cm_get_le64(p + 16);
    out->version = cm_get_le64(p + 24);
    out->size = cm_get_le64(p + 32);
    out->etag = cm_get_le64(p + 40);
    out->persisted = cm_get_le64(p + 48);
}

/* The sections of a format 3 record after its holders (at pos): 0 with
 * *a filled and *tags_at the tags' offset (0: none), or CM_E_PROTO. */
static int
decode_sections(const uint8_t *p, size_t len, size_t pos, const struct gw_layout *l,
                struct gw_meta_attrs *a, size_t *tags_at)
{
    uint8_t secs = p[3];

    *tags_at = 0;
    for (unsigned bit = 1; bit <= SEC_TARGET; bit <<= 1) {
        const uint8_t *body;
        size_t sl;

        if (!(secs & bit)) {
            continue;
        }
        if (len - pos < 2) {
            return CM_E_PROTO;
        }
        sl = cm_get_le16(p + pos);
        pos += 2;
        if (len - pos < sl) {
            return CM_E_PROTO;
        }
        body = p + pos;
        switch (bit) {
        case SEC_TAGS:
            if (gw_layout_nchunks(l) == 0 || sl != 4 * gw_layout_nchunks(l)) {
                return CM_E_PROTO;
            }
            *tags_at = pos;
            break;
        case SEC_MD5:
            if (sl != 16) {
                return CM_E_PROTO;
            }
            a->has_md5 = 1;
            memcpy(a->md5, body, 16);
            break;
        case SEC_HDRS:
            if (!hdrs_ok(body, sl)) {
                return CM_E_PROTO;
            }
            a->hdrs = (const char *)body;
            a->hdrs_len = sl;
            break;
        case SEC_PARTS:
            if (!parts_ok(body, sl)) {
                return CM_E_PROTO;
            }
            a->upload = (const char *)body;
            a->parts = body + GW_META_UPLOAD_ID_LEN;
            a->nparts = (uint32_t)((sl - GW_META_UPLOAD_ID_LEN) / 2);
            break;
        default: /* SEC_TARGET */
            if (sl == 0 || sl > GW_KEY_MAX) {
                return CM_E_PROTO;
            }
            a->target = (const char *)body;
            a->target_len = sl;
            break;
        }
        pos += sl;
    }
    return pos == len ? 0 : CM_E_PROTO;
}

/*
 * Format 2 was written twice: after format 1's holders, the tags (the
 * tags reading, REC_HDR1), or from a 64-byte header with the commit time,
 * the holders, then flag 1 md5 | flag 2 hlen u16, hdrs (the attributes
 * reading, REC_HDR; its composites kept their parts in a table this store
 * no longer has, so only k > 0 reads). Each returns 0 when buf has
 * exactly that shape: *tags_at set, or *a filled. The attributes reading
 * always had a commit time, in 2020..2100; at 56 the tags reading has two
 * node ids, which make one only when the second is 367 or more: so a record
 * that fits both shapes (no flags, nstripes * (k + m) = 2) is told, and
 * how a cut tags record is not taken for the other.
 */
#define FMT2_MS_MIN 1577836800000ULL
#define FMT2_MS_MAX 4102444800000ULL

static int
fmt2_tags(const uint8_t *p, size_t len, size_t *tags_at)
{
    unsigned n = (unsigned)p[1] + p[2];
    uint64_t chunks = (uint64_t)cm_get_le32(p + 12) * n;

    if (p[1] == 0 || p[3] != 0 || n > GW_MAX_HOLDERS || chunks == 0 ||
        len != REC_HDR1 + 4 * (uint64_t)n + 4 * chunks) {
        return CM_E_PROTO;
    }
    *tags_at = REC_HDR1 + 4 * (size_t)n;
    return 0;
}

static int
fmt2_attrs(const uint8_t *p, size_t len, struct gw_meta_attrs *a)
{
    unsigned n = (unsigned)p[1] + p[2];
    size_t pos = REC_HDR + 4 * (size_t)n, hl;

    memset(a, 0, sizeof(*a));
    if (len < pos || p[1] == 0 || n > GW_MAX_HOLDERS || (p[3] & ~3) != 0) {
        return CM_E_PROTO;
    }
    a->mtime_ms = cm_get_le64(p + 56);
    if (a->mtime_ms < FMT2_MS_MIN || a->mtime_ms >= FMT2_MS_MAX) {
        return CM_E_PROTO;
    }
    if (p[3] & 1) {
        if (len - pos < 16) {
            return CM_E_PROTO;
        }
        a->has_md5 = 1;
        memcpy(a->md5, p + pos, 16);
        pos += 16;
    }
    if (p[3] & 2) {
        if (len - pos < 2) {
            return CM_E_PROTO;
        }
        hl = cm_get_le16(p + pos);
        pos += 2;
        if (len - pos < hl || !hdrs_ok(p + pos, hl)) {
            return CM_E_PROTO;
        }
        a->hdrs = (const char *)p + pos;
        a->hdrs_len = hl;
        pos += hl;
    }
    return pos == len ? 0 : CM_E_PROTO;
}

/* Decodes a record: attrs (may be NULL) into buf; with_tags: the tags
 * into a malloc'd array. */
static int
decode(const void *buf, size_t len, struct gw_layout *out, struct gw_meta_attrs *attrs,
       int with_tags)
{
    const uint8_t *p = buf;
    struct gw_meta_attrs a;
    size_t base, tags_at = 0;
    unsigned n;

    memset(out, 0, sizeof(*out));
    memset(&a, 0, sizeof(a));
    if (len < REC_HDR1 || len > GW_META_REC_LIMIT) {
        return CM_E_PROTO;
    }
    decode_fixed(p, out);
    n = (unsigned)p[1] + p[2];
    if (p[0] == 1) {
        if (p[1] == 0 || p[3] != 0 || n > GW_MAX_HOLDERS || len != REC_HDR1 + 4 * (size_t)n) {
            goto bad;
        }
        base = REC_HDR1;
    } else if (p[0] == 2) {
        if (fmt2_attrs(p, len, &a) == 0) {
            base = REC_HDR;
        } else if (fmt2_tags(p, len, &tags_at) == 0) {
            memset(&a, 0, sizeof(a));
            base = REC_HDR1;
        } else {
            goto bad;
        }
    } else if (p[0] == 3 && len >= REC_HDR && (p[3] & ~SEC_ALL) == 0 &&
               !((p[3] & SEC_PARTS) && (p[3] & SEC_TARGET))) {
        if (p[1] == 0) {
            n = 0;
            if (p[2] > CM_EC_MAX_M || out->chunk_size != 0 || out->nstripes != 0 ||
                out->persisted != 0 || (p[3] & SEC_TAGS)) {
                goto bad;
            }
        } else if (n > GW_MAX_HOLDERS || (p[3] & (SEC_PARTS | SEC_TARGET))) {
            goto bad;
        }
        base = REC_HDR;
        if (len - base < 4 * (size_t)n) {
            goto bad;
        }
        a.mtime_ms = cm_get_le64(p + 56);
        if (decode_sections(p, len, base + 4 * (size_t)n, out, &a, &tags_at) != 0) {
            goto bad;
        }
    } else {
        goto bad;
    }
    for (unsigned j = 0; j < n; j++) {
        out->holders[j] = cm_get_le32(p + base + 4 * j);
    }
    if (attrs != NULL) {
        *attrs = a;
    }
    if (with_tags && tags_at != 0) {
        out->tags = malloc(gw_layout_nchunks(out) * sizeof(*out->tags));
        if (out->tags == NULL) {
            return -ENOMEM;
        }
        for (size_t i = 0; i < gw_layout_nchunks(out); i++) {
            out->tags[i] = cm_get_le32(p + tags_at + 4 * i);
        }
    }
    return 0;
bad:
    memset(out, 0, sizeof(*out));
    return CM_E_PROTO;
}

int
gw_meta_decode(const void *buf, size_t len, struct gw_layout *out)
{
    return decode(buf, len, out, NULL, 0);
}

int
gw_meta_decode_tags(const void *buf, size_t len, struct gw_layout *out)
{
    return decode(buf, len, out, NULL, 1);
}

int
gw_meta_decode_attrs(const void *buf, size_t len, struct gw_layout *out,
                     struct gw_meta_attrs *attrs)
{
    return decode(buf, len, out, attrs, 0);
}

int
gw_meta_attrs_dup(const struct gw_meta_attrs *a, struct gw_meta_attrs *out, void **mem)
{
    size_t np = 2 * (size_t)a->nparts, up = a->nparts > 0 ? GW_META_UPLOAD_ID_LEN : 0;
    size_t total = a->hdrs_len + up + np + a->target_len;
    char *m;

    *out = *a;
    *mem = NULL;
    if (total == 0) {
        return 0;
    }
    m = malloc(total);
    if (m == NULL) {
        return -ENOMEM;
    }
    *mem = m;
    if (a->hdrs_len > 0) {
        memcpy(m, a->hdrs, a->hdrs_len);
        out->hdrs = m;
        m += a->hdrs_len;
    }
    if (a->nparts > 0) {
        memcpy(m, a->upload, up);
        out->upload = m;
        memcpy(m + up, a->parts, np);
        out->parts = (const uint8_t *)m + up;
        m += up + np;
    }
    if (a->target_len > 0) {
        memcpy(m, a->target, a->target_len);
        out->target = m;
    }
    return 0;
}

/* ---- META records ---- */

size_t
gw_mrec_len(const struct gw_mrec *m)
{
    return 1 + 4 + 2 + m->klen + 8 + (m->kind == GW_MREC_VERSION ? 4 + m->rec_len : 0);
}

void
gw_mrec_encode(const struct gw_mrec *m, uint8_t *out)
{
    out[0] = m->kind;
    cm_put_le32(out + 1, m->tenant);
    cm_put_le16(out + 5, (uint16_t)m->klen);
    memcpy(out + 7, m->key, m->klen);
    out += 7 + m->klen;
    cm_put_le64(out, m->version);
    if (m->kind == GW_MREC_VERSION) {
        cm_put_le32(out + 8, (uint32_t)m->rec_len);
        if (m->rec_len > 0) {
            memcpy(out + 12, m->rec, m->rec_len);
        }
    }
}

int
gw_mrec_decode(const void *buf, size_t len, struct gw_mrec *out)
{
    const uint8_t *p = buf;
    size_t klen, at;

    memset(out, 0, sizeof(*out));
    if (len < 7 || (p[0] != GW_MREC_VERSION && p[0] != GW_MREC_TOMB)) {
        return CM_E_PROTO;
    }
    klen = cm_get_le16(p + 5);
    if (klen == 0 || len - 7 < klen + 8) {
        return CM_E_PROTO;
    }
    at = 7 + klen + 8;
    if (p[0] == GW_MREC_TOMB ? at != len : len - at < 4 || len - at - 4 != cm_get_le32(p + at)) {
        return CM_E_PROTO;
    }
    out->kind = p[0];
    out->tenant = cm_get_le32(p + 1);
    out->key = (const char *)p + 7;
    out->klen = klen;
    out->version = cm_get_le64(p + 7 + klen);
    if (out->kind == GW_MREC_VERSION) {
        out->rec = p + at + 4;
        out->rec_len = len - at - 4;
    }
    return 0;
}

int
gw_mrec_newer(const struct gw_mrec *a, const struct gw_mrec *b)
{
    if (a->version != b->version) {
        return a->version > b->version;
    }
    return a->kind == GW_MREC_TOMB && b->kind != GW_MREC_TOMB;
}

int
gw_layout_persisted(const struct gw_layout *l)
{
    unsigned n = (unsigned)l->k + l->m;
    uint64_t full = n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;

    return (l->persisted & full) == full;
}

void
gw_meta_old_reset(struct gw_meta_old *old)
{
    free(old->parts);
    free(old->key);
    memset(old, 0, sizeof(*old));
}

/* ---- groups ---- */

static size_t
group_key(uint32_t tenant, const char *key, size_t klen, uint8_t *out)
{
    size_t n = klen < GW_META_INLINE ? klen : GW_META_INLINE;

    cm_put_be32(out, tenant);
    memcpy(out + 4, key, n);
    return 4 + n;
}

struct member {
    const char *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
};

/* Iterates a group: 1 with *e filled, 0 at the end, CM_E_PROTO if torn. */
static int
group_next(const uint8_t *b, size_t blen, size_t *pos, struct member *e)
{
    size_t p = *pos;

    if (p == blen) {
        return 0;
    }
    if (blen - p < 2) {
        return CM_E_PROTO;
    }
    e->klen = (size_t)b[p] | (size_t)b[p + 1] << 8;
    p += 2;
    if (blen - p < e->klen + 2) {
        return CM_E_PROTO;
    }
    e->key = (const char *)b + p;
    p += e->klen;
    e->vlen = (size_t)b[p] | (size_t)b[p + 1] << 8;
    p += 2;
    if (blen - p < e->vlen) {
        return CM_E_PROTO;
    }
    e->val = b + p;
    p += e->vlen;
    *pos = p;
    return 1;
}

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static void
group_append(struct cm_buf *out, const char *key, size_t klen, const void *val, size_t vlen)
{
    uint8_t h[2];

    h[0] = (uint8_t)klen;
    h[1] = (uint8_t)(klen >> 8);
    cm_buf_append(out, h, 2);
    cm_buf_append(out, key, klen);
    h[0] = (uint8_t)vlen;
    h[1] = (uint8_t)(vlen >> 8);
    cm_buf_append(out, h, 2);
    cm_buf_append(out, val, vlen);
}

/* Finds key in its group of table: 0 with *val and *vlen borrowed (txn), or
 * CM_E_NOTFOUND. */
static int
group_get(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
          const uint8_t **val, size_t *vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = group_key(tenant, key, klen, gk);
    const void *b;
    size_t blen, pos = 0;
    struct member e;
    int rc;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0) {
        return rc;
    }
    while ((rc = group_next(b, blen, &pos, &e)) == 1) {
        if (keycmp(e.key, e.klen, key, klen) == 0) {
            *val = e.val;
            *vlen = e.vlen;
            return 0;
        }
    }
    return rc < 0 ? rc : CM_E_NOTFOUND;
}

/* Sets (val != NULL) or removes key in its group. Removing an absent key is
 * CM_E_NOTFOUND. */
static int
group_set(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key, size_t klen,
          const void *val, size_t vlen)
{
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen = group_key(tenant, key, klen, gk);
    const void *b = NULL;
    size_t blen = 0, pos = 0;
    struct cm_buf nb;
    struct member e;
    int rc, done = 0, found = 0;

    rc = cm_kv_get(txn, table, gk, gklen, &b, &blen);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    cm_buf_init(&nb);
    if (rc == 0) {
        while ((rc = group_next(b, blen, &pos, &e)) == 1) {
            int c = keycmp(e.key, e.klen, key, klen);
            if (c == 0) {
                found = 1;
                continue;
            }
            if (c > 0 && !done) {
                if (val != NULL) {
                    group_append(&nb, key, klen, val, vlen);
                }
                done = 1;
            }
            group_append(&nb, e.key, e.klen, e.val, e.vlen);
        }
        if (rc < 0) {
            goto out;
        }
    }
    if (!done && val != NULL) {
        group_append(&nb, key, klen, val, vlen);
    }
    if (val == NULL && !found) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (nb.len == 0) {
        rc = cm_kv_del(txn, table, gk, gklen);
    } else {
        rc = cm_kv_put(txn, table, gk, gklen, nb.p, nb.len);
    }
out:
    cm_buf_fini(&nb);
    return rc;
}

/* ---- open / close ---- */

int
gw_meta_open(const char *dir, size_t map_size, struct gw_meta **out)
{
    struct gw_meta *m = cm_calloc(1, sizeof(*m));
    /* Every acknowledged PUT waits for a commit: one flush, not two. */
    int rc = cm_kv_open(dir, map_size, table_names, T_COUNT, CM_KV_REDO, &m->kv);

    if (rc != 0) {
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void
gw_meta_close(struct gw_meta *m)
{
    if (m == NULL) {
        return;
    }
    cm_kv_close(m->kv);
    free(m);
}

/* ---- reads ---- */

int
gw_meta_get(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen, struct gw_layout *out)
{
    struct cm_kv_txn *txn;
    const uint8_t *v;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = gw_meta_decode_tags(v, vlen, out);
    }
    cm_kv_abort(txn);
    return rc;
}

/* The layouts of the parts a (a composite's) names, tags included, into
 * *out (calloc'd): 0, CM_E_PROTO (a part missing), -ENOMEM. */
static int
parts_read(struct cm_kv_txn *txn, uint32_t tenant, const struct gw_meta_attrs *a,
           struct gw_layout **out)
{
    struct gw_layout *v = calloc(a->nparts, sizeof(*v));
    int rc = v == NULL ? -ENOMEM : 0;

    for (uint32_t i = 0; rc == 0 && i < a->nparts; i++) {
        char pk[GW_META_PART_KEY_LEN];
        size_t pklen = gw_meta_part_key(a->upload, gw_meta_part_no(a, i), pk);
        const uint8_t *pv;
        size_t pvlen;

        rc = group_get(txn, T_OBJECTS, tenant, pk, pklen, &pv, &pvlen);
        if (rc == 0) {
            rc = gw_meta_decode_tags(pv, pvlen, &v[i]);
        }
        if (rc == 0 && gw_layout_record_only(&v[i])) {
            rc = CM_E_PROTO;
        }
        rc = rc == CM_E_NOTFOUND ? CM_E_PROTO : rc;
    }
    if (rc != 0 && v != NULL) {
        for (uint32_t i = 0; i < a->nparts; i++) {
            gw_layout_fini(&v[i]);
        }
        free(v);
        v = NULL;
    }
    *out = v;
    return rc;
}

int
gw_meta_get_obj(struct gw_meta *m, uint32_t tenant, const char *key, size_t klen,
                struct gw_meta_obj *out)
{
    struct cm_kv_txn *txn;
    const uint8_t *v;
    size_t vlen;
    int rc;

    memset(&out->lay, 0, sizeof(out->lay));
    memset(&out->a, 0, sizeof(out->a));
    out->parts = NULL;
    rc = cm_kv_begin(m->kv, 0, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = decode(v, vlen, &out->lay, &out->a, 1);
    }
    if (rc == 0 && out->a.nparts > 0) {
        rc = parts_read(txn, tenant, &out->a, &out->parts);
    }
    if (rc == 0 && out->a.hdrs != NULL) {
        memcpy(out->hdrs, out->a.hdrs, out->a.hdrs_len);
        out->a.hdrs = out->hdrs;
    }
    if (rc == 0 && out->a.target != NULL) {
        memcpy(out->target, out->a.target, out->a.target_len);
        out->a.target = out->target;
    }
    out->a.upload = NULL; /* they point into the transaction's pages */
    out->a.parts = NULL;
    cm_kv_abort(txn);
    return rc;
}

void
gw_meta_obj_fini(struct gw_meta_obj *o)
{
    gw_layout_fini(&o->lay);
    for (uint32_t i = 0; o->parts != NULL && i < o->a.nparts; i++) {
        gw_layout_fini(&o->parts[i]);
    }
    free(o->parts);
    o->parts = NULL;
}

struct scan_ctx {
    uint32_t tenant;
    const char *prefix;
    size_t plen;
    const char *after;
    size_t alen;
    gw_meta_scan_cb cb;
    void *arg;
    int err;
};

/* 1 = stop the scan. */
static int
scan_group(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct scan_ctx *c = arg;
    size_t pos = 0;
    struct member e;
    int rc;

    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    while ((rc = group_next(v, vlen, &pos, &e)) == 1) {
        struct gw_layout l;
        struct gw_meta_attrs a;

        if (c->after != NULL && keycmp(e.key, e.klen, c->after, c->alen) <= 0) {
            continue;
        }
        if (e.klen < c->plen || memcmp(e.key, c->prefix, c->plen) != 0) {
            if (keycmp(e.key, e.klen, c->prefix, c->plen) > 0) {
                return 1; /* past every key with the prefix */
            }
            continue;
        }
        if (e.klen > 0 && e.key[0] == '\0' && (c->plen == 0 || c->prefix[0] != '\0')) {
            continue; /* internal, not asked for */
        }
        if (gw_meta_decode_attrs(e.val, e.vlen, &l, &a) != 0) {
            c->err = CM_E_PROTO;
            return 1;
        }
        if (c->cb(c->arg, e.key, e.klen, &l, &a) != 0) {
            return 1;
        }
    }
    if (rc < 0) {
        c->err = rc;
        return 1;
    }
    return 0;
}

static int
scan_txn(struct cm_kv_txn *txn, uint32_t tenant, const char *prefix, size_t plen, const char *after,
         size_t alen, gw_meta_scan_cb cb, void *arg)
{
    struct scan_ctx c = {tenant, prefix, plen, after, alen, cb, arg, 0};
    uint8_t gk[GROUP_KEY_MAX];
    size_t gklen;
    int rc;

    if (after != NULL && keycmp(after, alen, prefix, plen) > 0) {
        gklen = group_key(tenant, after, alen, gk);
    } else {
        gklen = group_key(tenant, prefix, plen, gk);
    }
    rc = cm_kv_scan(txn, T_OBJECTS, gk, gklen, scan_group, &c);
    return rc < 0 ? rc : c.err;
}

int
gw_meta_scan(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
             size_t alen, gw_meta_scan_cb cb, void *arg)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = scan_txn(txn, tenant, prefix, plen, after, alen, cb, arg);
    cm_kv_abort(txn);
    return rc;
}

struct list_ctx {
    unsigned limit, n;
    gw_meta_list_cb cb;
    void *arg;
    int more;
};

static int
list_one(void *arg, const char *key, size_t klen, const struct gw_layout *l,
         const struct gw_meta_attrs *a)
{
    struct list_ctx *c = arg;

    (void)a;
    if (c->n == c->limit) {
        c->more = 1;
        return 1;
    }
    c->cb(c->arg, key, klen, l);
    c->n++;
    return 0;
}

int
gw_meta_list(struct gw_meta *m, uint32_t tenant, const char *prefix, size_t plen, const char *after,
             size_t alen, unsigned limit, gw_meta_list_cb cb, void *arg, int *more)
{
    struct list_ctx c = {limit, 0, cb, arg, 0};
    int rc = gw_meta_scan(m, tenant, prefix, plen, after, alen, list_one, &c);

    if (rc == 0) {
        *more = c.more;
    }
    return rc;
}

struct pending_ctx {
    struct cm_kv_txn *txn;
    void (*cb)(void *arg, const struct gw_pending *p);
    void *arg;
    int err;
};

static int
pending_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct pending_ctx *c = arg;
    const uint8_t *rec;
    size_t rlen;
    struct gw_layout l;
    struct gw_meta_attrs a;
    struct gw_pending p = {0};
    int rc;

    if (klen == 16 && vlen >= 6) { /* a tombstone */
        memset(&l, 0, sizeof(l));
        l.object = get_be64(k);
        l.version = get_be64((const uint8_t *)k + 8);
        l.tenant = cm_get_be32(v);
        l.m = ((const uint8_t *)v)[4];
        p.tomb = 1;
        p.key = (const char *)v + 5;
        p.klen = vlen - 5;
        p.lay = &l;
        c->cb(c->arg, &p);
        return 0;
    }
    if (klen != 8 || vlen < 5 ||
        group_get(c->txn, T_OBJECTS, cm_get_be32(v), (const char *)v + 4, vlen - 4, &rec, &rlen) !=
            0) {
        return 0;
    }
    rc = decode(rec, rlen, &l, &a, 1);
    if (rc == -ENOMEM) {
        c->err = rc;
        return 1;
    }
    if (rc == 0 && l.object == get_be64(k)) {
        p.key = (const char *)v + 4;
        p.klen = vlen - 4;
        p.lay = &l;
        p.attrs = &a;
        c->cb(c->arg, &p);
    }
    gw_layout_fini(&l);
    return 0;
}

int
gw_meta_scan_pending(struct gw_meta *m, void (*cb)(void *arg, const struct gw_pending *p),
                     void *arg)
{
    struct pending_ctx c = {NULL, cb, arg, 0};
    int rc = cm_kv_begin(m->kv, 0, &c.txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_scan(c.txn, T_PENDING, NULL, 0, pending_one, &c);
    cm_kv_abort(c.txn);
    return rc < 0 ? rc : c.err;
}

static int
any_row(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    (void)k;
    (void)klen;
    (void)v;
    (void)vlen;
    *(int *)arg = 1;
    return 1;
}

int
gw_meta_is_empty(struct gw_meta *m, int *empty)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 0, &txn), any = 0;

    if (rc != 0) {
        return rc;
    }
    for (int t = T_OBJECTS; t <= T_PENDING && rc >= 0 && !any; t++) {
        rc = cm_kv_scan(txn, t, NULL, 0, any_row, &any);
    }
    cm_kv_abort(txn);
    *empty = !any;
    return rc < 0 ? rc : 0;
}

struct tenant_ctx {
    uint32_t found;
    int any;
};

static int
first_tenant(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct tenant_ctx *c = arg;

    (void)v;
    (void)vlen;
    if (klen >= 4) {
        c->found = cm_get_be32(k);
        c->any = 1;
    }
    return 1;
}

int
gw_meta_tenants(struct gw_meta *m, void (*cb)(void *arg, uint32_t tenant), void *arg)
{
    struct cm_kv_txn *txn;
    uint32_t next[2] = {0, 0};
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    /* Skip from tenant to tenant: one seek per tenant, not per object. */
    for (;;) {
        uint32_t best = 0;
        int have = 0;
        for (int t = 0; t < 2; t++) {
            struct tenant_ctx c = {0, 0};
            uint8_t gk[4];
            if (next[t] == UINT32_MAX) {
                continue;
            }
            cm_put_be32(gk, next[t]);
            rc = cm_kv_scan(txn, t == 0 ? T_OBJECTS : T_TOMBS, gk, 4, first_tenant, &c);
            if (rc < 0) {
                goto out;
            }
            if (c.any && (!have || c.found < best)) {
                best = c.found;
                have = 1;
            }
            if (!c.any) {
                next[t] = UINT32_MAX;
            }
        }
        if (!have) {
            break;
        }
        cb(arg, best);
        if (best == UINT32_MAX) {
            break;
        }
        next[0] = next[0] == UINT32_MAX ? UINT32_MAX : best + 1;
        next[1] = next[1] == UINT32_MAX ? UINT32_MAX : best + 1;
    }
    rc = 0;
out:
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_state_load(struct gw_meta *m, char **json, size_t *len)
{
    struct cm_kv_txn *txn;
    const void *v;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_get(txn, T_STATE, "last", 4, &v, &vlen);
    if (rc == 0) {
        char *s = cm_malloc(vlen + 1);
        memcpy(s, v, vlen);
        s[vlen] = '\0';
        *json = s;
        *len = vlen;
    }
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_state_save(struct gw_meta *m, const char *json, size_t len)
{
    struct cm_kv_txn *txn;
    int rc = cm_kv_begin(m->kv, 1, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_put(txn, T_STATE, "last", 4, json, len);
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}

int
gw_meta_mark_get(struct gw_meta *m, const char *name, uint64_t *v)
{
    struct cm_kv_txn *txn;
    const void *val;
    size_t vlen;
    int rc = cm_kv_begin(m->kv, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = cm_kv_get(txn, T_STATE, name, strlen(name), &val, &vlen);
    if (rc == 0) {
        rc = vlen == 8 ? 0 : CM_E_PROTO;
    }
    if (rc == 0) {
        *v = cm_get_le64(val);
    }
    cm_kv_abort(txn);
    return rc;
}

int
gw_meta_mark_set(struct gw_meta *m, const char *name, uint64_t v)
{
    struct cm_kv_txn *txn;
    uint8_t b[8];
    int rc = cm_kv_begin(m->kv, 1, &txn);

    if (rc != 0) {
        return rc;
    }
    cm_put_le64(b, v);
    rc = cm_kv_put(txn, T_STATE, name, strlen(name), b, sizeof(b));
    if (rc != 0) {
        cm_kv_abort(txn);
        return rc;
    }
    return cm_kv_commit(txn);
}

/* ---- writes ---- */

int
gw_meta_batch_begin(struct gw_meta *m, struct gw_meta_batch **out)
{
    struct gw_meta_batch *b = cm_calloc(1, sizeof(*b));
    int rc = cm_kv_begin(m->kv, 1, &b->txn);

    if (rc != 0) {
        free(b);
        return rc;
    }
    b->now_ms = cm_wall_ms();
    *out = b;
    return 0;
}

int
gw_meta_batch_commit(struct gw_meta_batch *b)
{
    int rc = cm_kv_commit(b->txn);

    free(b);
    return rc;
}

void
gw_meta_batch_abort(struct gw_meta_batch *b)
{
    if (b == NULL) {
        return;
    }
    cm_kv_abort(b->txn);
    free(b);
}

uint64_t
gw_meta_batch_time(const struct gw_meta_batch *b)
{
    return b->now_ms;
}

int
gw_meta_batch_get(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                  struct gw_layout *out, struct gw_meta_attrs *attrs)
{
    const uint8_t *v;
    size_t vlen;
    int rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);

    return rc != 0 ? rc : gw_meta_decode_attrs(v, vlen, out, attrs);
}

int
gw_meta_batch_scan(struct gw_meta_batch *b, uint32_t tenant, const char *prefix, size_t plen,
                   gw_meta_scan_cb cb, void *arg)
{
    return scan_txn(b->txn, tenant, prefix, plen, NULL, 0, cb, arg);
}

static int
pending_set(struct cm_kv_txn *txn, uint64_t object, uint32_t tenant, const char *key, size_t klen)
{
    uint8_t k[8], v[4 + GW_KEY_MAX];

    cm_put_be64(k, object);
    cm_put_be32(v, tenant);
    memcpy(v + 4, key, klen);
    return cm_kv_put(txn, T_PENDING, k, 8, v, 4 + klen);
}

static int
pending_del(struct cm_kv_txn *txn, uint64_t object)
{
    uint8_t k[8];
    int rc;

    cm_put_be64(k, object);
    rc = cm_kv_del(txn, T_PENDING, k, 8);
    return rc == CM_E_NOTFOUND ? 0 : rc;
}

/* A deleted version whose tombstone record is to go: (object, version). */
static int
tomb_set(struct cm_kv_txn *txn, const struct gw_layout *old, const char *key, size_t klen)
{
    uint8_t k[16], v[5 + GW_KEY_MAX];

    cm_put_be64(k, old->object);
    cm_put_be64(k + 8, old->version);
    cm_put_be32(v, old->tenant);
    v[4] = old->m;
    memcpy(v + 5, key, klen);
    return cm_kv_put(txn, T_PENDING, k, 16, v, 5 + klen);
}

/* Stores l's record (with a, which may point into the pages this write
 * replaces: it is encoded first) under key in objects. */
static int
record_set(struct cm_kv_txn *txn, const char *key, size_t klen, const struct gw_layout *l,
           const struct gw_meta_attrs *a)
{
    size_t rlen = gw_meta_rec_len(l, a);
    uint8_t *rec = malloc(rlen);
    int rc;

    if (rec == NULL) {
        return -ENOMEM;
    }
    gw_meta_encode(l, a, rec);
    rc = group_set(txn, T_OBJECTS, l->tenant, key, klen, rec, rlen);
    free(rec);
    return rc;
}

/*
 * The version l (decoded with a, whose strings point into the pages the
 * writes below may move) leaves the store: its pending entry, and for a
 * composite its parts with theirs, which go to *old with l.
 */
static int
version_drop(struct cm_kv_txn *txn, const struct gw_layout *l, const struct gw_meta_attrs *a,
             struct gw_meta_old *old)
{
    char id[GW_META_UPLOAD_ID_LEN];
    uint8_t *nums = NULL;
    uint32_t n = a->nparts;
    int rc = 0;

    gw_meta_old_reset(old);
    old->had = 1;
    old->lay = *l;
    old->lay.tags = NULL;
    if (n > 0) {
        memcpy(id, a->upload, sizeof(id));
        nums = malloc(2 * (size_t)n);
        old->parts = calloc(n, sizeof(*old->parts));
        if (nums == NULL || old->parts == NULL) {
            free(nums);
            return -ENOMEM;
        }
        memcpy(nums, a->parts, 2 * (size_t)n);
    }
    rc = pending_del(txn, l->object);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        char pk[GW_META_PART_KEY_LEN];
        size_t pklen = gw_meta_part_key(id, cm_get_le16(nums + 2 * (size_t)i), pk);
        const uint8_t *pv;
        size_t pvlen;
        struct gw_layout *p = &old->parts[old->nparts];

        rc = group_get(txn, T_OBJECTS, l->tenant, pk, pklen, &pv, &pvlen);
        if (rc == CM_E_NOTFOUND) {
            rc = 0; /* not in a consistent store: nothing to give back */
            continue;
        }
        if (rc == 0) {
            rc = gw_meta_decode(pv, pvlen, p);
        }
        if (rc == 0) {
            old->nparts++;
            rc = group_set(txn, T_OBJECTS, l->tenant, pk, pklen, NULL, 0);
        }
        if (rc == 0) {
            rc = pending_del(txn, p->object);
        }
    }
    free(nums);
    return rc;
}

/* The version key had before a put (to *old) and the new version number:
 * the current one's, or the tombstone's (then dropped), plus one. */
static int
put_prepare(struct cm_kv_txn *txn, uint32_t tenant, const char *key, size_t klen,
            struct gw_meta_old *old, uint64_t *version)
{
    const uint8_t *v;
    size_t vlen;
    uint64_t base = 0;
    int rc;

    gw_meta_old_reset(old);
    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_get(txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        struct gw_layout cur;
        struct gw_meta_attrs a;

        rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
        if (rc == 0) {
            base = cur.version;
            rc = version_drop(txn, &cur, &a, old);
        }
    } else if (rc == CM_E_NOTFOUND) {
        rc = group_get(txn, T_TOMBS, tenant, key, klen, &v, &vlen);
        if (rc == 0 && vlen == 8) {
            base = cm_get_le64(v);
            rc = group_set(txn, T_TOMBS, tenant, key, klen, NULL, 0);
        }
        if (rc == CM_E_NOTFOUND) {
            rc = 0;
        }
    }
    *version = base + 1;
    return rc;
}

int
gw_meta_put(struct gw_meta_batch *b, const char *key, size_t klen, struct gw_layout *l,
            const struct gw_meta_attrs *attrs, struct gw_meta_old *old)
{
    int rc;

    if (gw_layout_record_only(l)) {
        l->chunk_size = l->nstripes = 0;
        l->persisted = 0;
        while (l->object == 0) {
            l->object = cm_random_u64();
        }
    }
    rc = put_prepare(b->txn, l->tenant, key, klen, old, &l->version);
    if (rc == 0) {
        rc = record_set(b->txn, key, klen, l, attrs);
    }
    if (rc == 0) {
        rc = pending_set(b->txn, l->object, l->tenant, key, klen);
    }
    return rc;
}

int
gw_meta_delete(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
               struct gw_meta_old *old)
{
    const uint8_t *v;
    size_t vlen;
    uint8_t ver[8];
    struct gw_layout cur;
    struct gw_meta_attrs a;
    int rc;

    gw_meta_old_reset(old);
    rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc != 0) {
        return rc;
    }
    rc = gw_meta_decode_attrs(v, vlen, &cur, &a);
    if (rc == 0) {
        rc = version_drop(b->txn, &cur, &a, old);
    }
    if (rc == 0) {
        rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    }
    if (rc == 0 && !once_key(key, klen)) {
        cm_put_le64(ver, cur.version);
        rc = group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
    }
    if (rc == 0) {
        rc = tomb_set(b->txn, &cur, key, klen);
    }
    if (rc == 0) {
        old->key = malloc(klen);
        if (old->key == NULL) {
            return -ENOMEM;
        }
        memcpy(old->key, key, klen);
        old->klen = klen;
    }
    return rc;
}

static int
same_tags(const struct gw_layout *a, const struct gw_layout *b)
{
    if (b->tags == NULL) {
        return 1; /* nothing new to store */
    }
    return a->tags != NULL &&
           memcmp(a->tags, b->tags, gw_layout_nchunks(a) * sizeof(*a->tags)) == 0;
}

/* cur (decoded with a from key's record) with l's holders, persisted bits
 * and, when l has them, tags, stored again. */
static int
record_relayout(struct cm_kv_txn *txn, const char *key, size_t klen, struct gw_layout *cur,
                const struct gw_meta_attrs *a, const struct gw_layout *l)
{
    uint32_t *own = cur->tags;
    int rc;

    memcpy(cur->holders, l->holders, sizeof(cur->holders));
    cur->persisted = l->persisted;
    if (l->tags != NULL) {
        cur->tags = l->tags; /* borrowed for the encode */
    }
    rc = record_set(txn, key, klen, cur, a);
    cur->tags = own;
    return rc;
}

int
gw_meta_update(struct gw_meta_batch *b, const struct gw_layout *l, enum gw_report what, int *stale)
{
    uint8_t pk[16];
    char key[GW_KEY_MAX];
    const void *pv;
    const uint8_t *v;
    size_t pvlen, vlen, klen;
    uint32_t tenant;
    struct gw_layout cur = {0};
    struct gw_meta_attrs a;
    int rc;

    *stale = 1;
    cm_put_be64(pk, l->object);
    if (what == GW_REPORT_TOMB) {
        cm_put_be64(pk + 8, l->version);
        rc = cm_kv_del(b->txn, T_PENDING, pk, 16);
        *stale = rc == CM_E_NOTFOUND;
        return rc == CM_E_NOTFOUND ? 0 : rc;
    }
    rc = cm_kv_get(b->txn, T_PENDING, pk, 8, &pv, &pvlen);
    if (rc == CM_E_NOTFOUND) {
        return 0; /* replaced, deleted or done already */
    }
    if (rc != 0) {
        return rc;
    }
    if (pvlen < 5 || pvlen > 4 + GW_KEY_MAX) {
        return pending_del(b->txn, l->object);
    }
    tenant = cm_get_be32(pv);
    klen = pvlen - 4;
    memcpy(key, (const char *)pv + 4, klen);
    rc = group_get(b->txn, T_OBJECTS, tenant, key, klen, &v, &vlen);
    if (rc == 0) {
        rc = decode(v, vlen, &cur, &a, 1);
    }
    if (rc == CM_E_NOTFOUND || (rc == 0 && cur.object != l->object)) {
        gw_layout_fini(&cur);
        return pending_del(b->txn, l->object);
    }
    if (rc != 0) {
        return rc;
    }
    if (l->k != cur.k || l->m != cur.m || l->nstripes != cur.nstripes) {
        gw_layout_fini(&cur);
        return CM_E_BADARG;
    }
    /* DONE with holders and tags as written: leaving pending says it all
     * (the record's persisted bits count only while pending). A
     * record-only version has nothing to store. */
    if (!gw_layout_record_only(&cur) &&
        (what == GW_REPORT_CHANGED || !same_tags(&cur, l) ||
         memcmp(cur.holders, l->holders, sizeof(cur.holders[0]) * (cur.k + cur.m)) != 0)) {
        rc = record_relayout(b->txn, key, klen, &cur, &a, l);
    }
    gw_layout_fini(&cur);
    if (rc == 0 && what == GW_REPORT_DONE) {
        rc = pending_del(b->txn, l->object);
    }
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_move(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
             int *stale)
{
    const uint8_t *v;
    size_t vlen;
    struct gw_layout cur;
    struct gw_meta_attrs a;
    int rc = group_get(b->txn, T_OBJECTS, l->tenant, key, klen, &v, &vlen);

    *stale = 1;
    if (rc == 0) {
        rc = decode(v, vlen, &cur, &a, 1);
    }
    if (rc == CM_E_NOTFOUND) {
        return 0; /* deleted since */
    }
    if (rc != 0) {
        return rc;
    }
    if (cur.object != l->object) {
        gw_layout_fini(&cur);
        return 0; /* replaced since */
    }
    if (gw_layout_record_only(&cur) || l->k != cur.k || l->m != cur.m ||
        l->nstripes != cur.nstripes) {
        gw_layout_fini(&cur);
        return CM_E_BADARG;
    }
    /* the moved positions' new tags come with l */
    rc = record_relayout(b->txn, key, klen, &cur, &a, l);
    gw_layout_fini(&cur);
    if (rc == 0) {
        *stale = 0;
    }
    return rc;
}

int
gw_meta_restore(struct gw_meta_batch *b, const char *key, size_t klen, const struct gw_layout *l,
                const struct gw_meta_attrs *attrs)
{
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_set(b->txn, T_TOMBS, l->tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    return record_set(b->txn, key, klen, l, attrs);
}

int
gw_meta_restore_tomb(struct gw_meta_batch *b, uint32_t tenant, const char *key, size_t klen,
                     uint64_t version)
{
    uint8_t ver[8];
    int rc;

    if (klen == 0 || klen > GW_KEY_MAX) {
        return CM_E_BADARG;
    }
    rc = group_set(b->txn, T_OBJECTS, tenant, key, klen, NULL, 0);
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        return rc;
    }
    if (once_key(key, klen)) {
        return 0;
    }
    cm_put_le64(ver, version);
    return group_set(b->txn, T_TOMBS, tenant, key, klen, ver, 8);
}

struct purge_ctx {
    uint32_t tenant;
    unsigned max, n;
    struct cm_buf group_keys; /* concatenated: u16 len | group key */
    int left;
};

static int
purge_collect(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
    struct purge_ctx *c = arg;
    uint8_t h[2];

    (void)v;
    (void)vlen;
    if (klen < 4 || cm_get_be32(k) != c->tenant) {
        return 1;
    }
    if (c->n == c->max) {
        c->left = 1;
        return 1;
    }
    h[0] = (uint8_t)klen;
    h[1] = (uint8_t)(klen >> 8);
    cm_buf_append(&c->group_keys, h, 2);
    cm_buf_append(&c->group_keys, k, klen);
    c->n++;
    return 0;
}

/* The versions of one objects group leave pending; their chunks go to cb.
 * A composite's parts are versions of their own keys: purged as any. */
static int
purge_group(struct gw_meta_batch *b, const uint8_t *gk, size_t gklen,
            void (*cb)(void *arg, const struct gw_layout *l), void *arg)
{
    const void *bv;
    size_t blen, bpos = 0;
    uint8_t *copy;
    struct member e;
    int rc = cm_kv_get(b->txn, T_OBJECTS, gk, gklen, &bv, &blen);

    if (rc != 0) {
        return rc;
    }
    /* writes below may move the page bv points into */
    copy = cm_malloc(blen + 1);
    memcpy(copy, bv, blen);
    while (rc == 0 && group_next(copy, blen, &bpos, &e) == 1) {
        struct gw_layout l;

        if (gw_meta_decode(e.val, e.vlen, &l) != 0) {
            continue;
        }
        rc = pending_del(b->txn, l.object);
        if (rc == 0 && cb != NULL && !gw_layout_record_only(&l)) {
            cb(arg, &l);
        }
    }
    free(copy);
    return rc;
}

int
gw_meta_purge(struct gw_meta_batch *b, uint32_t tenant, unsigned max,
              void (*cb)(void *arg, const struct gw_layout *l), void *arg, int *left)
{
    uint8_t start[4];
    int rc = 0;

    *left = 0;
    cm_put_be32(start, tenant);
    for (int t = T_OBJECTS; t <= T_TOMBS; t++) {
        struct purge_ctx c = {tenant, max, 0, {NULL, 0, 0}, 0};
        size_t pos = 0;

        cm_buf_init(&c.group_keys);
        rc = cm_kv_scan(b->txn, t, start, 4, purge_collect, &c);
        if (rc < 0) {
            cm_buf_fini(&c.group_keys);
            return rc;
        }
        rc = 0;
        while (pos < c.group_keys.len && rc == 0) {
            const uint8_t *gp = (const uint8_t *)c.group_keys.p + pos;
            size_t gklen = (size_t)gp[0] | (size_t)gp[1] << 8;

            pos += 2 + gklen;
            if (t == T_OBJECTS) {
                rc = purge_group(b, gp + 2, gklen, cb, arg);
            }
            if (rc == 0) {
                rc = cm_kv_del(b->txn, t, gp + 2, gklen);
            }
        }
        cm_buf_fini(&c.group_keys);
        if (rc != 0) {
            return rc;
        }
        *left |= c.left;
    }
    return 0;
}
