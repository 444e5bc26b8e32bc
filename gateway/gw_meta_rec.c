/*
 * gw_meta_rec.c - the records of the gateway's metadata (see gw_meta.h):
 * the version record, the objects table's values and the rec of a META
 * record, and the META record the nodes' insertion logs hold. Pure
 * codecs, no I/O; fuzzed by fuzz_layout.
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
 */
#include "gw_meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_bytes.h"
#include "cm_err.h"

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
gw_meta_decode_full(const void *buf, size_t len, struct gw_layout *out, struct gw_meta_attrs *attrs)
{
    return decode(buf, len, out, attrs, 1);
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
    return 1 + 4 + 2 + m->klen + 8 + (m->kind == GW_MREC_MOVED ? 4 : 0) +
           (m->kind != GW_MREC_TOMB ? 4 + m->rec_len : 0);
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
    out += 8;
    if (m->kind == GW_MREC_MOVED) {
        cm_put_le32(out, m->gen);
        out += 4;
    }
    if (m->kind != GW_MREC_TOMB) {
        cm_put_le32(out, (uint32_t)m->rec_len);
        if (m->rec_len > 0) {
            memcpy(out + 4, m->rec, m->rec_len);
        }
    }
}

int
gw_mrec_decode(const void *buf, size_t len, struct gw_mrec *out)
{
    const uint8_t *p = buf;
    size_t klen, at;
    uint32_t gen = 0;

    memset(out, 0, sizeof(*out));
    if (len < 7 || p[0] < GW_MREC_VERSION || p[0] > GW_MREC_MOVED) {
        return CM_E_PROTO;
    }
    klen = cm_get_le16(p + 5);
    if (klen == 0 || len - 7 < klen + 8) {
        return CM_E_PROTO;
    }
    at = 7 + klen + 8;
    if (p[0] == GW_MREC_MOVED) {
        if (len - at < 4) {
            return CM_E_PROTO;
        }
        gen = cm_get_le32(p + at);
        at += 4;
    }
    if (p[0] == GW_MREC_TOMB ? at != len : len - at < 4 || len - at - 4 != cm_get_le32(p + at)) {
        return CM_E_PROTO;
    }
    out->kind = p[0];
    out->gen = gen;
    out->tenant = cm_get_le32(p + 1);
    out->key = (const char *)p + 7;
    out->klen = klen;
    out->version = cm_get_le64(p + 7 + klen);
    if (out->kind != GW_MREC_TOMB) {
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
    if (a->kind == GW_MREC_TOMB || b->kind == GW_MREC_TOMB) {
        return a->kind == GW_MREC_TOMB && b->kind != GW_MREC_TOMB;
    }
    return a->gen > b->gen;
}

int
gw_layout_persisted(const struct gw_layout *l)
{
    unsigned n = (unsigned)l->k + l->m;
    uint64_t full = n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;

    return (l->persisted & full) == full;
}
