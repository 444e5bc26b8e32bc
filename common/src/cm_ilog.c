/*
 * cm_ilog.c - the insertion log's batch format; see cm_ilog.h. Pure.
 */
#include <string.h>

#include "cm_bytes.h"
#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_ilog.h"

#define ILOG_VERSION 1u

void
cm_ilog_begin(struct cm_buf *b, uint32_t node, uint64_t seq)
{
    uint8_t h[CM_ILOG_HDR_LEN] = {0};

    cm_put_le32(h, CM_ILOG_MAGIC);
    cm_put_le32(h + 4, ILOG_VERSION);
    cm_put_le32(h + 8, node);
    cm_put_le64(h + 16, seq);
    b->len = 0;
    cm_buf_append(b, h, sizeof(h));
}

static uint32_t
ilog_body_len(const struct cm_ilog_rec *r)
{
    switch (r->kind) {
    case CM_ILOG_CHUNK:
        return CM_ILOG_CHUNK_LEN;
    case CM_ILOG_DELETE:
        return CM_ILOG_DELETE_LEN;
    case CM_ILOG_INSTANCE:
        return CM_ILOG_INSTANCE_LEN;
    default:
        return r->data_len;
    }
}

size_t
cm_ilog_rec_size(const struct cm_ilog_rec *r)
{
    return CM_ILOG_REC_HDR_LEN + ilog_body_len(r);
}

static void
put_key(uint8_t *p, const struct cm_ilog_rec *r)
{
    cm_put_le32(p, r->tenant);
    cm_put_le32(p + 4, r->index);
    cm_put_le64(p + 8, r->object);
    cm_put_le64(p + 16, r->version);
}

static void
get_key(const uint8_t *p, struct cm_ilog_rec *r)
{
    r->tenant = cm_get_le32(p);
    r->index = cm_get_le32(p + 4);
    r->object = cm_get_le64(p + 8);
    r->version = cm_get_le64(p + 16);
}

void
cm_ilog_add(struct cm_buf *b, const struct cm_ilog_rec *r)
{
    uint8_t h[CM_ILOG_REC_HDR_LEN + CM_ILOG_CHUNK_LEN] = {0};
    uint32_t bl = ilog_body_len(r);
    uint8_t *p = h + CM_ILOG_REC_HDR_LEN;

    h[0] = r->kind;
    cm_put_le32(h + 4, bl);
    switch (r->kind) {
    case CM_ILOG_CHUNK:
        cm_put_le32(p, r->tag);
        put_key(p + 4, r);
        cm_put_le32(p + 28, r->len);
        cm_put_le64(p + 32, r->seg);
        cm_put_le32(p + 40, r->off);
        cm_put_le32(p + 44, r->blob_len);
        break;
    case CM_ILOG_DELETE:
        put_key(p, r);
        break;
    case CM_ILOG_INSTANCE:
        cm_put_le32(p, r->tag);
        cm_put_le32(p + 4, r->tenant);
        cm_put_le64(p + 8, r->gen);
        cm_put_le32(p + 16, r->state);
        break;
    default:
        cm_buf_append(b, h, CM_ILOG_REC_HDR_LEN);
        if (r->data_len > 0) {
            cm_buf_append(b, r->data, r->data_len);
        }
        goto counted;
    }
    cm_buf_append(b, h, CM_ILOG_REC_HDR_LEN + bl);
counted:
    cm_put_le32((uint8_t *)b->p + 12, cm_get_le32((uint8_t *)b->p + 12) + 1);
}

void
cm_ilog_end(struct cm_buf *b)
{
    uint8_t *p = (uint8_t *)b->p;

    cm_put_le32(p + 24, (uint32_t)b->len);
    cm_put_le32(p + 28, 0);
    cm_put_le32(p + 28, cm_crc32c(0, p, b->len));
}

/* Decodes the record at it->p (its framing already checked). */
static void
ilog_decode(const uint8_t *h, struct cm_ilog_rec *r)
{
    const uint8_t *p = h + CM_ILOG_REC_HDR_LEN;

    memset(r, 0, sizeof(*r));
    r->kind = h[0];
    switch (r->kind) {
    case CM_ILOG_CHUNK:
        r->tag = cm_get_le32(p);
        get_key(p + 4, r);
        r->len = cm_get_le32(p + 28);
        r->seg = cm_get_le64(p + 32);
        r->off = cm_get_le32(p + 40);
        r->blob_len = cm_get_le32(p + 44);
        break;
    case CM_ILOG_DELETE:
        get_key(p, r);
        break;
    case CM_ILOG_INSTANCE:
        r->tag = cm_get_le32(p);
        r->tenant = cm_get_le32(p + 4);
        r->gen = cm_get_le64(p + 8);
        r->state = cm_get_le32(p + 16);
        break;
    default:
        r->data = p;
        r->data_len = cm_get_le32(h + 4);
        break;
    }
}

size_t
cm_ilog_batch_len(const uint8_t *buf, size_t len)
{
    uint32_t bl;

    if (len < CM_ILOG_HDR_LEN || cm_get_le32(buf) != CM_ILOG_MAGIC) {
        return 0;
    }
    bl = cm_get_le32(buf + 24);
    return bl >= CM_ILOG_HDR_LEN && bl <= len ? bl : 0;
}

int
cm_ilog_open(const uint8_t *buf, size_t len, uint32_t *node, uint64_t *seq, struct cm_ilog_iter *it)
{
    uint8_t fixed[CM_ILOG_HDR_LEN];
    const uint8_t *p, *end;
    uint32_t nrec, i;

    if (len < CM_ILOG_HDR_LEN || cm_get_le32(buf) != CM_ILOG_MAGIC ||
        cm_get_le32(buf + 4) != ILOG_VERSION || cm_get_le32(buf + 24) != len ||
        cm_get_le64(buf + 16) == 0) {
        return CM_E_CRC;
    }
    memcpy(fixed, buf, sizeof(fixed));
    cm_put_le32(fixed + 28, 0);
    if (cm_crc32c(cm_crc32c(0, fixed, sizeof(fixed)), buf + CM_ILOG_HDR_LEN,
                  len - CM_ILOG_HDR_LEN) != cm_get_le32(buf + 28)) {
        return CM_E_CRC;
    }
    nrec = cm_get_le32(buf + 12);
    p = buf + CM_ILOG_HDR_LEN;
    end = buf + len;
    for (i = 0; i < nrec; i++) {
        uint32_t bl;
        struct cm_ilog_rec r = {0};

        if ((size_t)(end - p) < CM_ILOG_REC_HDR_LEN || p[1] != 0 || p[2] != 0 || p[3] != 0) {
            return CM_E_CRC;
        }
        bl = cm_get_le32(p + 4);
        r.kind = p[0];
        r.data_len = bl;
        if ((size_t)(end - p) - CM_ILOG_REC_HDR_LEN < bl || ilog_body_len(&r) != bl) {
            return CM_E_CRC;
        }
        p += CM_ILOG_REC_HDR_LEN + bl;
    }
    if (p != end) {
        return CM_E_CRC;
    }
    if (node != NULL) {
        *node = cm_get_le32(buf + 8);
    }
    if (seq != NULL) {
        *seq = cm_get_le64(buf + 16);
    }
    it->p = buf + CM_ILOG_HDR_LEN;
    it->end = end;
    it->left = nrec;
    return 0;
}

int
cm_ilog_next(struct cm_ilog_iter *it, struct cm_ilog_rec *r)
{
    while (it->left > 0) {
        const uint8_t *h = it->p;

        it->left--;
        it->p += CM_ILOG_REC_HDR_LEN + cm_get_le32(h + 4);
        if (h[0] >= CM_ILOG_CHUNK && h[0] <= CM_ILOG_INSTANCE) {
            ilog_decode(h, r);
            return 1;
        }
    }
    return 0;
}

void
cm_ilog_name(char *buf, size_t cap, uint32_t node, uint64_t seq)
{
    cm_cos_seq_name(buf, cap, "ilog", node, seq);
}

int
cm_ilog_parse_name(const char *name, uint32_t node, uint64_t *seq)
{
    return cm_cos_seq_parse(name, "ilog", node, seq);
}
