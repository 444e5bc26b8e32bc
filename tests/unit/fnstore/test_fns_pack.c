/*
 * test_fns_pack.c - COS segment format (round trip, every corruption
 * refused) and the packed-chunk index (replace, delete, empty segments).
 */
#include <stdlib.h>
#include <string.h>

#include "t_check.h"

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_pack.h"

static struct fns_key
key(uint32_t tenant, uint64_t object, uint32_t index)
{
    struct fns_key k = {.tenant = tenant, .index = index, .object = object, .version = 0};
    return k;
}

/* A record of the given chunks (blob bytes: their index, repeated) and
 * tombstones, at the end of buf (*len grows by the record). */
static void
add_record(uint8_t *buf, size_t *len, struct fns_pack_ent *ents, size_t ne,
           const struct fns_key *tombs, size_t nt)
{
    size_t rl = fns_pack_hdr_len(ne, nt);
    uint8_t *rec = buf + *len;

    for (size_t i = 0; i < ne; i++) {
        ents[i].off = (uint32_t)rl;
        memset(rec + rl, (int)ents[i].key.index, ents[i].len);
        rl += ents[i].len;
    }
    fns_pack_encode(rec, rl, ents, ne, tombs, nt);
    *len += rl;
}

static void
test_format(void)
{
    struct fns_pack_ent ents[3] = {
        {key(1, 10, 0), 0, 100}, {key(2, 20, 1), 0, 7}, {key(1, 30, 2), 0, 0}};
    struct fns_key tombs[2] = {key(9, 90, 0), key(9, 91, 4)};
    size_t hl = fns_pack_hdr_len(3, 2), len = 0, ne, nt, rl;
    struct fns_pack_ent *de;
    struct fns_key *dt;
    uint8_t *seg = calloc(1, 4096);

    CHECK(hl == FNS_PACK_FIXED + 3 * FNS_PACK_ENT_LEN + 2 * FNS_PACK_TOMB_LEN);
    add_record(seg, &len, ents, 3, tombs, 2);
    CHECK(len == hl + 107);
    CHECK(fns_pack_decode(seg, len, &de, &ne, &dt, &nt, &rl) == 0 && rl == len);
    CHECK(ne == 3 && nt == 2);
    for (size_t i = 0; de != NULL && i < ne; i++) {
        CHECK(fns_key_eq(&de[i].key, &ents[i].key) && de[i].off == ents[i].off &&
              de[i].len == ents[i].len);
    }
    CHECK(dt != NULL && fns_key_eq(&dt[1], &tombs[1]));
    free(de);
    free(dt);
    /* a record followed by more bytes decodes alone */
    CHECK(fns_pack_decode(seg, len + 100, &de, &ne, &dt, &nt, &rl) == 0 && rl == len);
    free(de);
    free(dt);
    /* any flipped byte (header or blob), a short buffer: refused */
    for (size_t i = 0; i < len; i++) {
        seg[i] ^= 0x40;
        CHECK(fns_pack_decode(seg, len, &de, &ne, &dt, &nt, &rl) == CM_E_CRC);
        CHECK(de == NULL && dt == NULL && ne == 0 && nt == 0);
        seg[i] ^= 0x40;
    }
    CHECK(fns_pack_decode(seg, len - 1, &de, &ne, &dt, &nt, &rl) == CM_E_CRC);
    CHECK(fns_pack_decode(seg, hl, &de, &ne, &dt, &nt, &rl) == CM_E_CRC);
    free(seg);
    /* an empty record (tombstones only) is valid */
    seg = calloc(1, FNS_PACK_FIXED);
    fns_pack_encode(seg, FNS_PACK_FIXED, NULL, 0, NULL, 0);
    CHECK(fns_pack_decode(seg, FNS_PACK_FIXED, &de, &ne, &dt, &nt, &rl) == 0);
    CHECK(ne == 0 && nt == 0 && de == NULL && dt == NULL && rl == FNS_PACK_FIXED);
    free(seg);
}

/* A version 1 segment (one record, no record length): still read, to its end. */
static void
test_format_v1(void)
{
    uint8_t seg[FNS_PACK_FIXED_V1 + FNS_PACK_ENT_LEN + 5] = {0};
    struct fns_pack_ent *de;
    struct fns_key *dt, k = key(3, 33, 1);
    size_t ne, nt, rl;

    cm_put_le32(seg, FNS_PACK_MAGIC);
    cm_put_le32(seg + 4, 1);
    cm_put_le32(seg + 8, 1);
    cm_put_le32(seg + 16, FNS_PACK_FIXED_V1 + FNS_PACK_ENT_LEN);
    cm_put_le32(seg + 24, k.tenant);
    cm_put_le32(seg + 28, k.index);
    cm_put_le64(seg + 32, k.object);
    cm_put_le32(seg + 48, FNS_PACK_FIXED_V1 + FNS_PACK_ENT_LEN);
    cm_put_le32(seg + 52, 5);
    cm_put_le32(seg + 20, cm_crc32c(0, seg, FNS_PACK_FIXED_V1 + FNS_PACK_ENT_LEN));
    CHECK(fns_pack_decode(seg, sizeof(seg), &de, &ne, &dt, &nt, &rl) == 0);
    CHECK(rl == sizeof(seg) && ne == 1 && nt == 0 && fns_key_eq(&de[0].key, &k) &&
          de[0].off == FNS_PACK_FIXED_V1 + FNS_PACK_ENT_LEN && de[0].len == 5);
    free(de);
    CHECK(fns_pack_decode(seg, sizeof(seg) - 1, &de, &ne, &dt, &nt, &rl) == CM_E_CRC);
}

struct scanned {
    size_t records, chunks, tombs;
    uint32_t last_off;
};

static int
count_record(void *arg, const struct fns_pack_ent *ents, size_t ne, const struct fns_key *tombs,
             size_t nt)
{
    struct scanned *s = arg;

    (void)tombs;
    s->records++;
    s->chunks += ne;
    s->tombs += nt;
    if (ne > 0) {
        s->last_off = ents[ne - 1].off;
    }
    return 0;
}

/*
 * An appended segment: three records back to back. Cut at every length
 * (a node killed while it appended), a scan takes exactly the records
 * wholly inside the cut, with offsets from the segment's start, and
 * stops; a record damaged in the middle ends the scan there, however good
 * what follows.
 */
static void
test_torn_tail(void)
{
    struct fns_pack_ent e1[2] = {{key(1, 1, 1), 0, 40}, {key(1, 2, 2), 0, 9}};
    struct fns_pack_ent e2[1] = {{key(1, 3, 3), 0, 33}};
    struct fns_pack_ent e3[3] = {{key(1, 4, 4), 0, 1}, {key(1, 5, 5), 0, 2}, {key(1, 6, 6), 0, 3}};
    struct fns_key t2[1] = {key(1, 1, 1)}; /* kills a chunk of the first record */
    uint8_t *seg = calloc(1, 4096), *cut;
    size_t len = 0, ends[3];
    struct scanned s;

    add_record(seg, &len, e1, 2, NULL, 0);
    ends[0] = len;
    add_record(seg, &len, e2, 1, t2, 1);
    ends[1] = len;
    add_record(seg, &len, e3, 3, NULL, 0);
    ends[2] = len;
    memset(&s, 0, sizeof(s));
    CHECK(fns_pack_scan(seg, len, count_record, &s) == len);
    CHECK(s.records == 3 && s.chunks == 6 && s.tombs == 1);
    CHECK(s.last_off == ends[1] + e3[2].off && seg[s.last_off] == 6);
    for (size_t at = 0; at <= len; at++) {
        size_t want = at >= ends[2] ? 3 : at >= ends[1] ? 2 : at >= ends[0] ? 1 : 0;

        cut = malloc(at + 1);
        memcpy(cut, seg, at);
        memset(&s, 0, sizeof(s));
        CHECK(fns_pack_scan(cut, at, count_record, &s) == (want ? ends[want - 1] : 0));
        CHECK(s.records == want);
        free(cut);
    }
    /* garbage after the last good record, and a record damaged inside */
    memset(seg + len, 0x5a, 100);
    memset(&s, 0, sizeof(s));
    CHECK(fns_pack_scan(seg, len + 100, count_record, &s) == len && s.records == 3);
    seg[ends[0] + e2[0].off + 5] ^= 1;
    memset(&s, 0, sizeof(s));
    CHECK(fns_pack_scan(seg, len, count_record, &s) == ends[0] && s.records == 1);
    free(seg);
}

static void
test_names(void)
{
    char buf[FNS_PACK_NAME_MAX];
    uint64_t seq = 0;

    fns_pack_name(buf, sizeof(buf), 3, 0x1a2b);
    CHECK(strcmp(buf, "seg/n3/0000000000001a2b") == 0);
    CHECK(fns_pack_parse_name(buf, 3, &seq) == 0 && seq == 0x1a2b);
    CHECK(fns_pack_parse_name(buf, 4, &seq) != 0);
    CHECK(fns_pack_parse_name("seg/n3/000000000000001G", 3, &seq) != 0);
    CHECK(fns_pack_parse_name("seg/n3/0000000000000000", 3, &seq) != 0);
    CHECK(fns_pack_parse_name("seg/n3/01", 3, &seq) != 0);
    CHECK(fns_pack_parse_name("seg/n31/0000000000000001", 3, &seq) != 0);
}

static void
note_dropped(void *arg, uint64_t seg)
{
    uint64_t *d = arg;

    d[0]++;
    d[1] = seg;
}

static void
test_index(void)
{
    struct fns_pack_index *x = fns_pack_index_create();
    struct fns_pack_loc loc, a = {1, 24, 10}, b = {2, 24, 10}, c = {2, 34, 10};
    struct fns_key k1 = key(1, 1, 0), k2 = key(1, 2, 0), k3 = key(1, 3, 0);
    uint64_t from;

    CHECK(fns_pack_index_get(x, &k1, &loc) == CM_E_NOTFOUND);
    CHECK(fns_pack_index_put(x, &k1, &a) == 0);
    CHECK(fns_pack_index_put(x, &k2, &b) == 0);
    CHECK(fns_pack_index_put(x, &k3, &c) == 0);
    CHECK(fns_pack_index_get(x, &k2, &loc) == 0 && loc.seg == 2 && loc.off == 24);
    CHECK(fns_pack_index_chunks(x) == 3 && fns_pack_index_segments(x) == 2);
    /* k1 written again into segment 2: segment 1 is left empty */
    CHECK(fns_pack_index_put(x, &k1, &c) == 1);
    CHECK(fns_pack_index_segments(x) == 1 && fns_pack_index_chunks(x) == 3);
    /* same-segment replace keeps it */
    CHECK(fns_pack_index_put(x, &k1, &b) == 0);
    CHECK(fns_pack_index_del(x, &k2, &from) == 0 && from == 2);
    CHECK(fns_pack_index_del(x, &k2, &from) == 0 && from == 0);
    CHECK(fns_pack_index_del(x, &k3, &from) == 0 && from == 2);
    CHECK(fns_pack_index_del(x, &k1, &from) == 2 && from == 2);
    CHECK(fns_pack_index_segments(x) == 0 && fns_pack_index_chunks(x) == 0);
    /* known segments without chunks */
    fns_pack_index_add_seg(x, 7);
    CHECK(fns_pack_index_drop_if_empty(x, 7) == 1 && fns_pack_index_drop_if_empty(x, 7) == 0);
    /* many keys: growth keeps every entry */
    for (uint64_t i = 0; i < 5000; i++) {
        struct fns_key k = key(2, i, (uint32_t)(i % 6));
        struct fns_pack_loc l = {100 + i / 64, (uint32_t)(i % 64), 1};

        CHECK(fns_pack_index_put(x, &k, &l) == 0);
    }
    fns_pack_index_add_seg(x, 9999);
    CHECK(fns_pack_index_chunks(x) == 5000);
    for (uint64_t i = 0; i < 5000; i += 7) {
        struct fns_key k = key(2, i, (uint32_t)(i % 6));

        CHECK(fns_pack_index_get(x, &k, &loc) == 0 && loc.seg == 100 + i / 64);
    }
    uint64_t dropped[4] = {0};
    fns_pack_index_drop_empty(x, note_dropped, dropped);
    CHECK(dropped[0] == 1 && dropped[1] == 9999);
    CHECK(fns_pack_index_segments(x) == (5000 + 63) / 64);
    fns_pack_index_destroy(x);
}

/* A segment whose tombstones kill chunks of an older one that is still
 * there is held when it empties, and goes (in a chain) once that one does. */
static void
test_hold(void)
{
    struct fns_pack_index *x = fns_pack_index_create();
    struct fns_pack_loc a = {1, 24, 10}, a2 = {1, 34, 10}, b = {2, 24, 10}, c = {3, 24, 10};
    struct fns_key ka = key(1, 1, 0), ka2 = key(1, 2, 0), kb = key(1, 3, 0), kc = key(1, 4, 0);
    uint64_t from, dropped[2] = {0};

    CHECK(fns_pack_index_put(x, &ka, &a) == 0 && fns_pack_index_put(x, &ka2, &a2) == 0);
    CHECK(fns_pack_index_del(x, &ka, &from) == 0 && from == 1); /* tombstone -> 1 */
    CHECK(fns_pack_index_put(x, &kb, &b) == 0);
    fns_pack_index_hold(x, 2, 1);                               /* segment 2 carried it */
    CHECK(fns_pack_index_del(x, &kb, &from) == 0 && from == 2); /* tombstone -> 2 */
    CHECK(fns_pack_index_held(x) == 1 && fns_pack_index_segments(x) == 2);
    CHECK(fns_pack_index_drop_if_empty(x, 2) == 0);
    CHECK(fns_pack_index_put(x, &kc, &c) == 0);
    fns_pack_index_hold(x, 3, 2);  /* segment 3 carried kb's */
    fns_pack_index_hold(x, 3, 3);  /* itself: ignored */
    fns_pack_index_hold(x, 3, 99); /* gone already: ignored */
    CHECK(fns_pack_index_del(x, &kc, &from) == 0 && from == 3);
    CHECK(fns_pack_index_held(x) == 2);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 0);
    /* the last chunk of 1 goes: 1, then 2 and 3 in a chain */
    CHECK(fns_pack_index_del(x, &ka2, &from) == 1 && from == 1);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 2 && dropped[0] == 2);
    CHECK(fns_pack_index_segments(x) == 0 && fns_pack_index_held(x) == 0);
    /* a chunk put into a held segment unholds it (replay order) */
    CHECK(fns_pack_index_put(x, &ka, &a) == 0 && fns_pack_index_put(x, &kb, &b) == 0);
    fns_pack_index_hold(x, 2, 1);
    CHECK(fns_pack_index_del(x, &kb, &from) == 0 && fns_pack_index_held(x) == 1);
    CHECK(fns_pack_index_put(x, &kb, &b) == 0 && fns_pack_index_held(x) == 0);
    CHECK(fns_pack_index_del(x, &kb, &from) == 0 && fns_pack_index_held(x) == 1);
    /* drop_empty after a replay: the held one stays while 1 lives */
    fns_pack_index_add_seg(x, 5);
    dropped[0] = 0;
    fns_pack_index_drop_empty(x, note_dropped, dropped);
    CHECK(dropped[0] == 1 && dropped[1] == 5 && fns_pack_index_segments(x) == 2);
    fns_pack_index_destroy(x);
}

/* Appended segments: the one appended to stays however empty it gets,
 * and goes once records go to a newer one (and its tombstones' targets
 * are gone); segments wholly dead are then reclaimed one delete each. */
static void
test_open(void)
{
    struct fns_pack_index *x = fns_pack_index_create();
    struct fns_pack_loc a = {1, 32, 10}, b = {1, 42, 10}, c = {2, 32, 10};
    struct fns_key k1 = key(1, 1, 0), k2 = key(1, 2, 0), k3 = key(1, 3, 0);
    uint64_t from, dropped[2] = {0};

    CHECK(fns_pack_index_open(x, 1) == 1 && fns_pack_index_open(x, 1) == 0);
    CHECK(fns_pack_index_put(x, &k1, &a) == 0 && fns_pack_index_put(x, &k2, &b) == 0);
    CHECK(fns_pack_index_del(x, &k1, &from) == 0 && from == 1);
    CHECK(fns_pack_index_del(x, &k2, &from) == 0 && from == 1); /* empty, still appended to */
    CHECK(fns_pack_index_drop_if_empty(x, 1) == 0);
    CHECK(fns_pack_index_segments(x) == 1 && fns_pack_index_held(x) == 1);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 0);
    /* the next segment opens: 1 goes */
    CHECK(fns_pack_index_put(x, &k3, &c) == 0);
    CHECK(fns_pack_index_open(x, 2) == 1);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 1 && dropped[1] == 1);
    CHECK(fns_pack_index_open(x, 1) == 0); /* never back */
    /* a tombstone in 3 for k3 of 2: 3 waits for 2, 2 for the mark */
    CHECK(fns_pack_index_del(x, &k3, &from) == 0 && from == 2);
    fns_pack_index_hold(x, 3, 2);
    CHECK(fns_pack_index_open(x, 3) == 1);
    CHECK(fns_pack_index_drop_if_empty(x, 3) == 0);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 1 && dropped[1] == 2);
    CHECK(fns_pack_index_segments(x) == 1 && fns_pack_index_held(x) == 1);
    CHECK(fns_pack_index_open(x, 4) == 1);
    CHECK(fns_pack_index_drop_held(x, note_dropped, dropped) == 1 && dropped[1] == 3);
    CHECK(dropped[0] == 3 && fns_pack_index_segments(x) == 0 && fns_pack_index_held(x) == 0);
    fns_pack_index_destroy(x);
}

/*
 * Random runs against a reference model of what a node does with the
 * index: segments written in order carry new chunks (some replacing older
 * ones) and the pending tombstones; deletes queue tombstones; every
 * segment the index gives up is deleted, then held ones are re-checked.
 * Checked at every deletion: the segment holds no live chunk, and every
 * segment its tombstones point into is already deleted. At the end, with
 * every chunk deleted and the last tombstones written, nothing is left.
 */
#define M_KEYS 64
#define M_SEGS 400

struct model {
    struct fns_pack_index *x;
    uint64_t where[M_KEYS];   /* segment of key i, 0 = not stored */
    uint8_t gone[M_SEGS + 2]; /* segment deleted */
    uint64_t targets[M_SEGS + 2][M_KEYS];
    int ntargets[M_SEGS + 2];
    uint64_t tomb_seg[M_KEYS * 4]; /* pending tombstones: their segments */
    int ntombs;
    uint64_t next;
};

static void
model_deleted(void *arg, uint64_t seg)
{
    struct model *m = arg;

    CHECK(seg >= 1 && seg < m->next && !m->gone[seg]);
    for (int i = 0; i < M_KEYS; i++) {
        CHECK(m->where[i] != seg); /* no live chunk in it */
    }
    for (int i = 0; i < m->ntargets[seg]; i++) {
        CHECK(m->gone[m->targets[seg][i]]); /* its tombstones no longer matter */
    }
    m->gone[seg] = 1;
}

static void
model_drop(struct model *m, uint64_t seg)
{
    if (seg != 0) {
        model_deleted(m, seg);
        (void)fns_pack_index_drop_held(m->x, model_deleted, m);
    }
}

/* Writes the next segment: n chunks (new keys or replacements) and the
 * pending tombstones. */
static void
model_write(struct model *m, unsigned n)
{
    uint64_t seg = m->next++;

    fns_pack_index_add_seg(m->x, seg);
    for (int i = 0; i < m->ntombs; i++) {
        fns_pack_index_hold(m->x, seg, m->tomb_seg[i]);
        m->targets[seg][m->ntargets[seg]++] = m->tomb_seg[i];
    }
    m->ntombs = 0;
    for (unsigned j = 0; j < n; j++) {
        int k = rand() % M_KEYS;
        struct fns_key kk = key(9, (uint64_t)k, 0);
        struct fns_pack_loc loc = {seg, 24 + 10 * j, 10};

        m->where[k] = seg;
        model_drop(m, fns_pack_index_put(m->x, &kk, &loc));
    }
    if (fns_pack_index_drop_if_empty(m->x, seg)) {
        model_drop(m, seg);
    }
}

static void
model_del(struct model *m, int k)
{
    struct fns_key kk = key(9, (uint64_t)k, 0);
    uint64_t from, emptied = fns_pack_index_del(m->x, &kk, &from);

    CHECK(from == m->where[k]);
    m->where[k] = 0;
    if (from != 0 && m->ntombs < M_KEYS * 4) {
        m->tomb_seg[m->ntombs++] = from;
    }
    model_drop(m, emptied);
}

static void
test_hold_model(void)
{
    for (unsigned run = 0; run < 50; run++) {
        struct model *m = calloc(1, sizeof(*m));

        srand(run + 1);
        m->x = fns_pack_index_create();
        m->next = 1;
        while (m->next < M_SEGS) {
            int op = rand() % 4;

            if (op == 0 || m->ntombs >= M_KEYS * 3) {
                model_write(m, (unsigned)(rand() % 4)); /* 0: tombstones alone */
            } else {
                model_del(m, rand() % M_KEYS);
            }
        }
        for (int k = 0; k < M_KEYS; k++) {
            model_del(m, k);
        }
        model_write(m, 0);
        CHECK(fns_pack_index_segments(m->x) == 0 && fns_pack_index_held(m->x) == 0);
        for (uint64_t sgm = 1; sgm < m->next; sgm++) {
            CHECK(m->gone[sgm]);
        }
        fns_pack_index_destroy(m->x);
        free(m);
    }
}

int
main(void)
{
    test_format();
    test_format_v1();
    test_torn_tail();
    test_names();
    test_index();
    test_hold();
    test_open();
    test_hold_model();
    return 0;
}
