/*
 * cm_ilog.c - the insertion-log batch and META payload codec (cm_ilog.h).
 *
 * Pure. The writer appends to a cm_buf (aborting on out of memory, like
 * every cm_buf); the reader checks the CRC once at open and then only
 * walks lengths, so a torn or altered batch is refused before any record
 * is handed out.
 */
#include "cm_ilog.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"

void
cm_ilog_name(char *buf, size_t cap, uint32_t node, uint64_t seq)
{
    snprintf(buf, cap, CM_ILOG_PREFIX "n%" PRIu32 "/%016" PRIx64, node, seq);
}

int
cm_ilog_parse_name(const char *name, uint32_t *node, uint64_t *seq)
{
    const char *p = name;
    uint64_t n = 0, v = 0;
    int digits = 0;

    if (strncmp(p, CM_ILOG_PREFIX "n", sizeof(CM_ILOG_PREFIX)) != 0) {
        return CM_E_BADARG;
    }
    p += sizeof(CM_ILOG_PREFIX);
    if (p[0] == '0' && p[1] != '/') {
        return CM_E_BADARG; /* a leading zero: one name per node */
    }
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        n = n * 10 + (uint64_t)(*p - '0');
        if (n > UINT32_MAX) {
            return CM_E_BADARG;
        }
    }
    if (digits == 0 || *p++ != '/' || strlen(p) != 16) {
        return CM_E_BADARG;
    }
    for (; *p; p++) {
        int d = cm_hexval(*p);

        if (d < 0 || (*p >= 'A' && *p <= 'F')) { /* names are lower case */
            return CM_E_BADARG;
        }
        v = v << 4 | (uint64_t)d;
    }
    *node = (uint32_t)n;
    *seq = v;
    return 0;
}

/* ---- writer ---- */

void
cm_ilog_init(struct cm_buf *b, uint32_t node, uint64_t seq)
{
    uint8_t h[CM_ILOG_HDR_LEN] = {0};

    cm_put_le32(h, CM_ILOG_MAGIC);
    cm_put_le32(h + 4, CM_ILOG_VERSION);
    cm_put_le32(h + 8, node);
    cm_put_le64(h + 16, seq);
    b->len = 0;
    cm_buf_append(b, h, sizeof(h));
}

static void
add_rec(struct cm_buf *b, uint8_t kind, const void *payload, size_t len)
{
    uint8_t h[CM_ILOG_REC_HDR];
    uint8_t *hdr = (uint8_t *)b->p;

    h[0] = kind;
    cm_put_le32(h + 1, (uint32_t)len);
    cm_put_le32(hdr + 12, cm_get_le32(hdr + 12) + 1);
    cm_buf_append(b, h, sizeof(h));
    cm_buf_append(b, payload, len);
}

static void
put_key(uint8_t *p, const struct cm_ilog_chunk *c)
{
    cm_put_le32(p, c->tenant);
    cm_put_le64(p + 4, c->object);
    cm_put_le64(p + 12, c->obj_version);
    cm_put_le32(p + 20, c->index);
}

static void
get_key(const uint8_t *p, struct cm_ilog_chunk *c)
{
    c->tenant = cm_get_le32(p);
    c->object = cm_get_le64(p + 4);
    c->obj_version = cm_get_le64(p + 12);
    c->index = cm_get_le32(p + 20);
}

void
cm_ilog_add_chunk(struct cm_buf *b, const struct cm_ilog_chunk *c)
{
    uint8_t p[CM_ILOG_CHUNK_LEN];

    cm_put_le32(p, c->tag);
    put_key(p + 4, c);
    cm_put_le32(p + 28, c->length);
    cm_put_le64(p + 32, c->seg);
    cm_put_le32(p + 40, c->off);
    cm_put_le32(p + 44, c->blob_len);
    add_rec(b, CM_ILOG_CHUNK, p, sizeof(p));
}

void
cm_ilog_add_del(struct cm_buf *b, const struct cm_ilog_chunk *c)
{
    uint8_t p[CM_ILOG_DEL_LEN];

    put_key(p, c);
    add_rec(b, CM_ILOG_DEL, p, sizeof(p));
}

void
cm_ilog_add_meta(struct cm_buf *b, const void *payload, size_t len)
{
    add_rec(b, CM_ILOG_META, payload, len);
}

void
cm_ilog_seal(struct cm_buf *b)
{
    uint8_t *h = (uint8_t *)b->p;
    uint32_t crc;

    cm_put_le32(h + 24, (uint32_t)(b->len - CM_ILOG_HDR_LEN));
    crc = cm_crc32c(0, h, 28);
    cm_put_le32(h + 28, cm_crc32c(crc, h + CM_ILOG_HDR_LEN, b->len - CM_ILOG_HDR_LEN));
}

/* ---- reader ---- */

int
cm_ilog_open(struct cm_ilog_reader *r, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t body, crc;

    memset(r, 0, sizeof(*r));
    if (len < CM_ILOG_HDR_LEN || cm_get_le32(p) != CM_ILOG_MAGIC) {
        return CM_E_CRC;
    }
    body = cm_get_le32(p + 24);
    if (body != len - CM_ILOG_HDR_LEN) {
        return CM_E_CRC;
    }
    crc = cm_crc32c(0, p, 28);
    if (cm_crc32c(crc, p + CM_ILOG_HDR_LEN, body) != cm_get_le32(p + 28)) {
        return CM_E_CRC;
    }
    if (cm_get_le32(p + 4) != CM_ILOG_VERSION) {
        return CM_E_PROTO;
    }
    r->p = p;
    r->end = len;
    r->pos = CM_ILOG_HDR_LEN;
    r->left = cm_get_le32(p + 12);
    r->node = cm_get_le32(p + 8);
    r->seq = cm_get_le64(p + 16);
    return 0;
}

int
cm_ilog_next(struct cm_ilog_reader *r, struct cm_ilog_rec *out)
{
    const uint8_t *p;
    size_t len;

    if (r->left == 0) {
        return r->pos == r->end ? 0 : CM_E_PROTO;
    }
    if (r->end - r->pos < CM_ILOG_REC_HDR) {
        return CM_E_PROTO;
    }
    p = r->p + r->pos;
    len = cm_get_le32(p + 1);
    if (r->end - r->pos - CM_ILOG_REC_HDR < len) {
        return CM_E_PROTO;
    }
    memset(out, 0, sizeof(*out));
    out->kind = p[0];
    out->data = p + CM_ILOG_REC_HDR;
    out->len = len;
    if ((out->kind == CM_ILOG_CHUNK && len != CM_ILOG_CHUNK_LEN) ||
        (out->kind == CM_ILOG_DEL && len != CM_ILOG_DEL_LEN)) {
        return CM_E_PROTO;
    }
    if (out->kind == CM_ILOG_CHUNK) {
        out->chunk.tag = cm_get_le32(out->data);
        get_key(out->data + 4, &out->chunk);
        out->chunk.length = cm_get_le32(out->data + 28);
        out->chunk.seg = cm_get_le64(out->data + 32);
        out->chunk.off = cm_get_le32(out->data + 40);
        out->chunk.blob_len = cm_get_le32(out->data + 44);
    } else if (out->kind == CM_ILOG_DEL) {
        get_key(out->data, &out->chunk);
    }
    r->pos += CM_ILOG_REC_HDR + len;
    r->left--;
    return 1;
}

/* ---- META payloads ---- */

size_t
cm_meta_len(const struct cm_meta_rec *m)
{
    return 1 + 4 + 2 + m->klen + 8 + (m->kind == CM_META_VERSION ? 4 + m->rec_len : 0);
}

void
cm_meta_encode(const struct cm_meta_rec *m, uint8_t *out)
{
    out[0] = m->kind;
    cm_put_le32(out + 1, m->tenant);
    cm_put_le16(out + 5, (uint16_t)m->klen);
    memcpy(out + 7, m->key, m->klen);
    out += 7 + m->klen;
    cm_put_le64(out, m->version);
    if (m->kind == CM_META_VERSION) {
        cm_put_le32(out + 8, (uint32_t)m->rec_len);
        if (m->rec_len > 0) {
            memcpy(out + 12, m->rec, m->rec_len);
        }
    }
}

int
cm_meta_decode(const void *buf, size_t len, struct cm_meta_rec *out)
{
    const uint8_t *p = buf;
    size_t klen, at;

    memset(out, 0, sizeof(*out));
    if (len < 7 || (p[0] != CM_META_VERSION && p[0] != CM_META_TOMB)) {
        return CM_E_PROTO;
    }
    klen = cm_get_le16(p + 5);
    if (klen == 0 || len - 7 < klen + 8) {
        return CM_E_PROTO;
    }
    at = 7 + klen + 8;
    out->kind = p[0];
    out->tenant = cm_get_le32(p + 1);
    out->key = (const char *)p + 7;
    out->klen = klen;
    out->version = cm_get_le64(p + 7 + klen);
    if (out->kind == CM_META_TOMB) {
        return at == len ? 0 : CM_E_PROTO;
    }
    if (len - at < 4 || len - at - 4 != cm_get_le32(p + at)) {
        return CM_E_PROTO;
    }
    out->rec = p + at + 4;
    out->rec_len = len - at - 4;
    return 0;
}

int
cm_meta_newer(const struct cm_meta_rec *a, const struct cm_meta_rec *b)
{
    if (a->version != b->version) {
        return a->version > b->version;
    }
    return a->kind == CM_META_TOMB && b->kind != CM_META_TOMB;
}
