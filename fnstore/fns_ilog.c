/*
 * fns_ilog.c - the insertion log's state; see fns_ilog.h.
 *
 * Three indexes of the live records (chunks by key, instances by tag,
 * metas by tenant and key), the log objects oldest first with their
 * record and live counts, the pending batch and the one in flight. A
 * record superseded in a batch not yet durable is "killed" when that batch
 * becomes durable: the batch carries the sequence numbers of what it kills.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_ilog.h"
#include "fns_ilog.h"

struct ilog_obj {
    uint64_t seq;
    uint32_t nrec, live;
};

struct ilog_meta {
    struct cm_hnode hn;
    uint32_t tenant;
    uint16_t klen;
    uint8_t kind;
    uint64_t version, seq;
    uint32_t gen;
    uint8_t key[];
};

struct ilog_batch {
    struct cm_buf buf;
    uint64_t seq;
    uint32_t nrec, live;
    uint64_t *kills;
    size_t nkills, capkills;
    void **waiters;
    size_t nwait, capwait;
};

struct fns_ilog {
    uint32_t node;
    struct cm_hmap chunks, insts, metas;
    struct ilog_obj *objs; /* objs[head..n): the log objects, oldest first */
    size_t head, n, cap;
    struct ilog_batch pending, flight;
    int in_flight, flight_failed;
    int replaying; /* kills apply at once */
    /* The object being carried forward (read back), and the newest one
     * carried: its records are pending again, so it dies with their batch
     * and is not carried (read) again meanwhile. */
    uint64_t carrying, carried;
    /* Grouping (fns_ilog_set_linger): the pending batch is due once
     * linger_ns have passed since `since` (the first take or wait that saw
     * its oldest record; timing once set), at max_records, or when flushed. */
    uint64_t linger_ns, since;
    uint32_t max_records;
    int timing, flush;
    struct fns_ilog_stats st;
};

void
fns_ilog_create(uint32_t node, struct fns_ilog **out)
{
    struct fns_ilog *x = cm_calloc(1, sizeof(*x));

    x->node = node;
    cm_hmap_init(&x->chunks, 1024);
    cm_hmap_init(&x->insts, 64);
    cm_hmap_init(&x->metas, 256);
    cm_buf_init(&x->pending.buf);
    cm_buf_init(&x->flight.buf);
    x->pending.seq = 1;
    cm_ilog_begin(&x->pending.buf, node, 1);
    *out = x;
}

static void
ilog_free_node(void *arg, struct cm_hnode *n)
{
    (void)arg;
    free(n); /* every record embeds its node first */
}

static void
ilog_batch_fini(struct ilog_batch *b)
{
    cm_buf_fini(&b->buf);
    free(b->kills);
    free(b->waiters);
}

void
fns_ilog_destroy(struct fns_ilog *x)
{
    if (x == NULL) {
        return;
    }
    cm_hmap_each(&x->chunks, ilog_free_node, NULL);
    cm_hmap_each(&x->insts, ilog_free_node, NULL);
    cm_hmap_each(&x->metas, ilog_free_node, NULL);
    cm_hmap_free(&x->chunks);
    cm_hmap_free(&x->insts);
    cm_hmap_free(&x->metas);
    ilog_batch_fini(&x->pending);
    ilog_batch_fini(&x->flight);
    free(x->objs);
    free(x);
}

/* ---- log objects -------------------------------------------------------- */

static struct ilog_obj *
ilog_obj(struct fns_ilog *x, uint64_t seq)
{
    size_t lo = x->head, hi = x->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (x->objs[mid].seq == seq) {
            return &x->objs[mid];
        }
        if (x->objs[mid].seq < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static void
ilog_obj_push(struct fns_ilog *x, uint64_t seq, uint32_t nrec, uint32_t live)
{
    if (x->n == x->cap) {
        if (x->head > 0) { /* slide down what the deletes left */
            memmove(x->objs, x->objs + x->head, (x->n - x->head) * sizeof(*x->objs));
            x->n -= x->head;
            x->head = 0;
        }
        if (x->n == x->cap) {
            x->cap = x->cap ? 2 * x->cap : 64;
            x->objs = cm_realloc(x->objs, x->cap * sizeof(*x->objs));
        }
    }
    x->objs[x->n++] = (struct ilog_obj){.seq = seq, .nrec = nrec, .live = live};
    x->st.objects++;
    x->st.records += nrec;
    x->st.live += live;
}

/* A record of batch seq is dead: now (durable, or a replay), or once the
 * pending batch is durable. */
static void
ilog_kill(struct fns_ilog *x, uint64_t seq)
{
    struct ilog_batch *b = &x->pending;

    if (!x->replaying) {
        if (b->nkills == b->capkills) {
            b->capkills = b->capkills ? 2 * b->capkills : 64;
            b->kills = cm_realloc(b->kills, b->capkills * sizeof(*b->kills));
        }
        b->kills[b->nkills++] = seq;
        return;
    }
    struct ilog_obj *o = ilog_obj(x, seq);

    if (o != NULL && o->live > 0) {
        o->live--;
        x->st.live--;
    }
}

/* A live record was added to batch seq. */
static void
ilog_live(struct fns_ilog *x, uint64_t seq)
{
    struct ilog_obj *o;

    if (!x->replaying) {
        x->pending.live++;
    } else if ((o = ilog_obj(x, seq)) != NULL) {
        o->live++;
        x->st.live++;
    }
}

/* ---- the indexes -------------------------------------------------------- */

static struct fns_ilog_chunk *
ilog_chunk(const struct fns_ilog *x, const struct fns_key *key)
{
    uint64_t h = fns_key_hash(key);

    for (struct cm_hnode *n = cm_hmap_first(&x->chunks, h); n; n = cm_hmap_next(n, h)) {
        struct fns_ilog_chunk *c = CM_CONTAINER_OF(n, struct fns_ilog_chunk, hn);

        if (fns_key_eq(&c->key, key)) {
            return c;
        }
    }
    return NULL;
}

static struct fns_ilog_inst *
ilog_inst(const struct fns_ilog *x, uint32_t tag)
{
    uint64_t h = cm_hmix64(tag);

    for (struct cm_hnode *n = cm_hmap_first(&x->insts, h); n; n = cm_hmap_next(n, h)) {
        struct fns_ilog_inst *in = CM_CONTAINER_OF(n, struct fns_ilog_inst, hn);

        if (in->tag == tag) {
            return in;
        }
    }
    return NULL;
}

static uint64_t
ilog_meta_hash(uint32_t tenant, const uint8_t *key, uint16_t klen)
{
    return cm_hash64(key, klen, tenant);
}

static struct ilog_meta *
ilog_meta(const struct fns_ilog *x, uint32_t tenant, const uint8_t *key, uint16_t klen)
{
    uint64_t h = ilog_meta_hash(tenant, key, klen);

    for (struct cm_hnode *n = cm_hmap_first(&x->metas, h); n; n = cm_hmap_next(n, h)) {
        struct ilog_meta *m = CM_CONTAINER_OF(n, struct ilog_meta, hn);

        if (m->tenant == tenant && m->klen == klen && memcmp(m->key, key, klen) == 0) {
            return m;
        }
    }
    return NULL;
}

static void
ilog_chunk_drop(struct fns_ilog *x, struct fns_ilog_chunk *c)
{
    ilog_kill(x, c->seq);
    cm_hmap_del(&x->chunks, &c->hn);
    free(c);
}

/* Applies one record written in batch seq to the indexes. */
static void
ilog_apply(struct fns_ilog *x, const struct cm_ilog_rec *r, uint64_t seq)
{
    struct fns_key key = {
        .tenant = r->tenant, .index = r->index, .object = r->object, .version = r->version};
    struct fns_ilog_chunk *c;
    struct fns_ilog_inst *in;

    switch (r->kind) {
    case CM_ILOG_CHUNK:
        /* Its instance's record may be older than the object it was in
         * (since superseded and deleted) or newer: a release is what ends
         * a tag's chunks, and it comes after every record of them. */
        c = ilog_chunk(x, &key);
        if (c != NULL) {
            ilog_kill(x, c->seq);
        } else {
            c = cm_calloc(1, sizeof(*c));
            c->key = key;
            cm_hmap_add(&x->chunks, &c->hn, fns_key_hash(&key));
        }
        c->tag = r->tag;
        c->len = r->len;
        c->loc = (struct fns_ilog_loc){.seg = r->seg, .off = r->off, .blob_len = r->blob_len};
        c->seq = seq;
        ilog_live(x, seq);
        return;
    case CM_ILOG_DELETE:
        if ((c = ilog_chunk(x, &key)) != NULL) {
            ilog_chunk_drop(x, c);
        }
        return;
    case CM_ILOG_INSTANCE:
        in = ilog_inst(x, r->tag);
        if (in != NULL) {
            ilog_kill(x, in->seq);
        }
        if (r->state == POL_SMS_RELEASED || r->state >= POL_SMS_NSTATES) {
            if (in != NULL) {
                cm_hmap_del(&x->insts, &in->hn);
                free(in);
            }
            fns_ilog_each_chunk(x, r->tag, NULL, NULL); /* NULL fn: drops them */
            return;
        }
        if (in == NULL) {
            in = cm_calloc(1, sizeof(*in));
            in->tag = r->tag;
            cm_hmap_add(&x->insts, &in->hn, cm_hmix64(r->tag));
        }
        in->tenant = r->tenant;
        in->gen = r->gen;
        in->state = (enum pol_sms_state)r->state;
        in->seq = seq;
        ilog_live(x, seq);
        return;
    case CM_ILOG_META: {
        struct fns_meta_head h;
        struct ilog_meta *m;

        if (fns_ilog_meta_parse(r->data, r->data_len, &h) != 0) {
            return; /* kept in its object, never live */
        }
        m = ilog_meta(x, h.tenant, h.key, h.key_len);
        if (m != NULL && (m->version > h.version || (m->version == h.version && m->kind != 2 &&
                                                     h.kind != 2 && m->gen > h.gen))) {
            return; /* an older version, or an older move of it, arriving late */
        }
        if (m != NULL) {
            ilog_kill(x, m->seq);
        } else {
            m = cm_calloc(1, sizeof(*m) + h.key_len);
            m->tenant = h.tenant;
            m->klen = h.key_len;
            memcpy(m->key, h.key, h.key_len);
            cm_hmap_add(&x->metas, &m->hn, ilog_meta_hash(h.tenant, h.key, h.key_len));
        }
        m->kind = h.kind;
        m->version = h.version;
        m->gen = h.gen;
        m->seq = seq;
        ilog_live(x, seq);
        return;
    }
    default:
        return;
    }
}

/* Appends r to the pending batch and applies it. */
static void
ilog_append(struct fns_ilog *x, const struct cm_ilog_rec *r)
{
    cm_ilog_add(&x->pending.buf, r);
    x->pending.nrec++;
    ilog_apply(x, r, x->pending.seq);
}

/* ---- records ------------------------------------------------------------ */

static void
ilog_key_rec(struct cm_ilog_rec *r, const struct fns_key *key)
{
    r->tenant = key->tenant;
    r->index = key->index;
    r->object = key->object;
    r->version = key->version;
}

void
fns_ilog_add_chunk(struct fns_ilog *x, uint32_t tag, const struct fns_key *key, uint32_t len,
                   const struct fns_ilog_loc *loc)
{
    struct cm_ilog_rec r = {.kind = CM_ILOG_CHUNK,
                            .tag = tag,
                            .len = len,
                            .seg = loc->seg,
                            .off = loc->off,
                            .blob_len = loc->blob_len};

    ilog_key_rec(&r, key);
    ilog_append(x, &r);
}

void
fns_ilog_add_delete(struct fns_ilog *x, const struct fns_key *key)
{
    struct cm_ilog_rec r = {.kind = CM_ILOG_DELETE};

    if (ilog_chunk(x, key) == NULL) {
        return;
    }
    ilog_key_rec(&r, key);
    ilog_append(x, &r);
}

void
fns_ilog_add_instance(struct fns_ilog *x, uint32_t tag, uint32_t tenant, uint64_t gen,
                      enum pol_sms_state state)
{
    struct cm_ilog_rec r = {.kind = CM_ILOG_INSTANCE,
                            .tag = tag,
                            .tenant = tenant,
                            .gen = gen,
                            .state = (uint32_t)state};

    ilog_append(x, &r);
}

int
fns_ilog_meta_parse(const uint8_t *data, size_t len, struct fns_meta_head *h)
{
    size_t head;

    memset(h, 0, sizeof(*h));
    if (len < 7 || data[0] < 1 || data[0] > 3) {
        return CM_E_BADARG;
    }
    h->key_len = cm_get_le16(data + 5);
    head = 7u + h->key_len + 8u + (data[0] == 3 ? 4u : 0u);
    if (h->key_len == 0 || len < head || (data[0] == 2 && len != head) ||
        (data[0] != 2 && (len < head + 4 || cm_get_le32(data + head) != len - head - 4))) {
        return CM_E_BADARG;
    }
    h->kind = data[0];
    h->tenant = cm_get_le32(data + 1);
    h->key = data + 7;
    h->version = cm_get_le64(data + 7 + h->key_len);
    h->gen = data[0] == 3 ? cm_get_le32(data + 7 + h->key_len + 8) : 0;
    return 0;
}

/* The length of the meta record data starts with (kind 1: its layout's
 * length follows key and version; kind 3: a gen, then the same; kind 2:
 * key and version only), or 0 when what is there cannot be one. */
static size_t
meta_span(const uint8_t *data, size_t len)
{
    size_t head;

    if (len < 7) {
        return 0;
    }
    head = 7u + cm_get_le16(data + 5) + 8u + (data[0] == 3 ? 4u : 0u);
    if (data[0] == 2) {
        return head <= len ? head : 0;
    }
    if (head + 4 > len) {
        return 0;
    }
    size_t rec_len = cm_get_le32(data + head);
    return rec_len <= len - head - 4 ? head + 4 + rec_len : 0;
}

int
fns_ilog_add_meta(struct fns_ilog *x, const uint8_t *data, size_t len, void *waiter)
{
    struct ilog_batch *b = &x->pending;
    size_t at, n;
    struct fns_meta_head h;

    for (at = 0; at < len; at += n) {
        n = meta_span(data + at, len - at);
        if (n == 0 || fns_ilog_meta_parse(data + at, n, &h) != 0) {
            return CM_E_BADARG;
        }
    }
    if (len == 0) {
        return CM_E_BADARG;
    }
    for (at = 0; at < len; at += n) {
        n = meta_span(data + at, len - at);
        struct cm_ilog_rec r = {.kind = CM_ILOG_META, .data = data + at, .data_len = (uint32_t)n};
        ilog_append(x, &r);
    }
    if (waiter != NULL) {
        if (b->nwait == b->capwait) {
            b->capwait = b->capwait ? 2 * b->capwait : 16;
            b->waiters = cm_realloc(b->waiters, b->capwait * sizeof(*b->waiters));
        }
        b->waiters[b->nwait++] = waiter;
    }
    return 0;
}

const struct fns_ilog_chunk *
fns_ilog_find(const struct fns_ilog *x, const struct fns_key *key)
{
    return ilog_chunk(x, key);
}

struct ilog_each {
    struct fns_ilog *x;
    uint32_t tag;
    void (*fn)(void *arg, const struct fns_ilog_chunk *c);
    void *arg;
};

static void
ilog_each_chunk_cb(void *arg, struct cm_hnode *n)
{
    struct ilog_each *e = arg;
    struct fns_ilog_chunk *c = CM_CONTAINER_OF(n, struct fns_ilog_chunk, hn);

    if (c->tag != e->tag) {
        return;
    }
    if (e->fn != NULL) {
        e->fn(e->arg, c);
    } else {
        ilog_chunk_drop(e->x, c);
    }
}

void
fns_ilog_each_chunk(struct fns_ilog *x, uint32_t tag,
                    void (*fn)(void *arg, const struct fns_ilog_chunk *c), void *arg)
{
    struct ilog_each e = {x, tag, fn, arg};

    cm_hmap_each(&x->chunks, ilog_each_chunk_cb, &e);
}

int
fns_ilog_walk_keys(struct fns_ilog *x, size_t *pos, size_t limit,
                   void (*fn)(void *arg, const struct fns_key *key), void *arg)
{
    return fns_keys_walk(&x->chunks, FNS_KEY_OFF(struct fns_ilog_chunk), pos, limit, fn, arg);
}

struct ilog_each_inst {
    void (*fn)(void *arg, const struct fns_ilog_inst *in);
    void *arg;
};

static void
ilog_each_inst_cb(void *arg, struct cm_hnode *n)
{
    struct ilog_each_inst *e = arg;

    e->fn(e->arg, CM_CONTAINER_OF(n, struct fns_ilog_inst, hn));
}

void
fns_ilog_each_instance(struct fns_ilog *x, void (*fn)(void *arg, const struct fns_ilog_inst *in),
                       void *arg)
{
    struct ilog_each_inst e = {fn, arg};

    cm_hmap_each(&x->insts, ilog_each_inst_cb, &e);
}

/* ---- replay ------------------------------------------------------------- */

int
fns_ilog_replay(struct fns_ilog *x, uint64_t seq, const uint8_t *buf, size_t len)
{
    struct cm_ilog_iter it;
    struct cm_ilog_rec r;
    uint32_t node, nrec = 0;
    uint64_t got;

    if (cm_ilog_open(buf, len, &node, &got, &it) != 0 || node != x->node || got != seq ||
        seq == UINT64_MAX || /* no batch could follow it */
        (x->n > x->head && x->objs[x->n - 1].seq >= seq)) {
        return CM_E_CRC;
    }
    x->replaying = 1;
    ilog_obj_push(x, seq, 0, 0);
    while (cm_ilog_next(&it, &r)) {
        nrec++;
        ilog_apply(x, &r, seq);
    }
    x->objs[x->n - 1].nrec = nrec;
    x->st.records += nrec;
    x->replaying = 0;
    return 0;
}

void
fns_ilog_replayed(struct fns_ilog *x)
{
    uint64_t next = x->n > x->head ? x->objs[x->n - 1].seq + 1 : 1;

    x->pending.seq = next;
    cm_ilog_begin(&x->pending.buf, x->node, next);
}

/* ---- writing ------------------------------------------------------------ */

void
fns_ilog_set_linger(struct fns_ilog *x, uint64_t linger_ns, uint32_t max_records)
{
    x->linger_ns = linger_ns;
    x->max_records = max_records;
}

void
fns_ilog_flush(struct fns_ilog *x)
{
    x->flush = x->pending.nrec > 0;
}

/* The pending batch's linger starts at the first look that sees a record
 * (it runs while the batch before is in flight). */
static void
ilog_stamp(struct fns_ilog *x, uint64_t now)
{
    if (!x->timing && x->pending.nrec > 0) {
        x->since = now;
        x->timing = 1;
    }
}

/* Whether the pending batch (stamped, records pending) may go at now. */
static int
ilog_due(const struct fns_ilog *x, uint64_t now)
{
    return x->flush || x->linger_ns == 0 ||
           (x->max_records != 0 && x->pending.nrec >= x->max_records) ||
           (now >= x->since && now - x->since >= x->linger_ns);
}

uint64_t
fns_ilog_wait(struct fns_ilog *x, uint64_t now)
{
    ilog_stamp(x, now);
    if (x->in_flight || x->pending.nrec == 0) {
        return UINT64_MAX; /* the batch's done, or the next record, looks again */
    }
    return ilog_due(x, now) ? 0 : x->since + x->linger_ns - now;
}

int
fns_ilog_take(struct fns_ilog *x, uint64_t now, const uint8_t **buf, size_t *len, uint64_t *seq)
{
    struct ilog_batch b;

    ilog_stamp(x, now);
    if (x->in_flight && !x->flight_failed) {
        return 0;
    }
    if (!x->in_flight) {
        if (x->pending.nrec == 0 || !ilog_due(x, now)) {
            return 0;
        }
        x->timing = x->flush = 0;
        cm_ilog_end(&x->pending.buf);
        b = x->flight;
        x->flight = x->pending;
        x->pending = b;
        x->pending.nrec = x->pending.live = 0;
        x->pending.nkills = x->pending.nwait = 0;
        x->pending.seq = x->flight.seq + 1;
        cm_ilog_begin(&x->pending.buf, x->node, x->pending.seq);
        x->in_flight = 1;
    }
    x->flight_failed = 0;
    *buf = (const uint8_t *)x->flight.buf.p;
    *len = x->flight.buf.len;
    *seq = x->flight.seq;
    return 1;
}

size_t
fns_ilog_done(struct fns_ilog *x, int ok, void ***waiters)
{
    struct ilog_batch *b = &x->flight;
    size_t n;

    *waiters = NULL;
    if (!x->in_flight) {
        return 0;
    }
    if (!ok) {
        x->flight_failed = 1;
        return 0;
    }
    ilog_obj_push(x, b->seq, b->nrec, b->live);
    x->replaying = 1; /* the kills are durable now */
    for (size_t i = 0; i < b->nkills; i++) {
        ilog_kill(x, b->kills[i]);
    }
    x->replaying = 0;
    x->st.batches_written++;
    x->st.records_written += b->nrec;
    x->st.bytes_written += b->buf.len;
    n = b->nwait;
    if (n > 0) {
        *waiters = cm_malloc(n * sizeof(**waiters));
        memcpy(*waiters, b->waiters, n * sizeof(**waiters));
    }
    b->nwait = b->nkills = 0;
    x->in_flight = 0;
    return n;
}

int
fns_ilog_deletable(struct fns_ilog *x, uint64_t *seq)
{
    struct ilog_obj *o;

    if (x->head == x->n) {
        return 0;
    }
    o = &x->objs[x->head];
    if (o->live > 0 || o->seq == x->carrying) {
        return 0;
    }
    *seq = o->seq;
    x->st.objects--;
    x->st.records -= o->nrec;
    x->st.objects_deleted++;
    x->head++;
    return 1;
}

int
fns_ilog_carry_due(struct fns_ilog *x, uint64_t *seq)
{
    struct ilog_obj *o;

    if (x->head == x->n || x->carrying != 0) {
        return 0;
    }
    o = &x->objs[x->head];
    if (o->live == 0 || o->seq <= x->carried ||
        ((uint64_t)o->live * 4 > o->nrec && x->st.records <= 2 * x->st.live + FNS_ILOG_SLACK)) {
        return 0;
    }
    x->carrying = o->seq;
    *seq = o->seq;
    return 1;
}

/* Whether r, a record of object seq, is still the live one. */
static int
ilog_still_live(const struct fns_ilog *x, const struct cm_ilog_rec *r, uint64_t seq)
{
    struct fns_key key = {
        .tenant = r->tenant, .index = r->index, .object = r->object, .version = r->version};
    const struct fns_ilog_chunk *c;
    const struct fns_ilog_inst *in;
    const struct ilog_meta *m;
    struct fns_meta_head h;

    switch (r->kind) {
    case CM_ILOG_CHUNK:
        c = ilog_chunk(x, &key);
        return c != NULL && c->seq == seq && c->tag == r->tag && c->loc.seg == r->seg &&
               c->loc.off == r->off && c->loc.blob_len == r->blob_len && c->len == r->len;
    case CM_ILOG_INSTANCE:
        in = ilog_inst(x, r->tag);
        return in != NULL && in->seq == seq && in->gen == r->gen && (uint32_t)in->state == r->state;
    case CM_ILOG_META:
        if (fns_ilog_meta_parse(r->data, r->data_len, &h) != 0) {
            return 0;
        }
        m = ilog_meta(x, h.tenant, h.key, h.key_len);
        return m != NULL && m->seq == seq && m->version == h.version && m->kind == h.kind &&
               m->gen == h.gen;
    default:
        return 0;
    }
}

void
fns_ilog_carry(struct fns_ilog *x, uint64_t seq, const uint8_t *buf, size_t len)
{
    struct cm_ilog_iter it;
    struct cm_ilog_rec r;

    if (x->carrying != seq) {
        return;
    }
    x->carrying = 0;
    if (buf == NULL || cm_ilog_open(buf, len, NULL, NULL, &it) != 0) {
        return;
    }
    while (cm_ilog_next(&it, &r)) {
        if (ilog_still_live(x, &r, seq)) {
            ilog_append(x, &r);
        }
    }
    x->carried = seq;
    x->st.carried++;
}

void
fns_ilog_stats(const struct fns_ilog *x, struct fns_ilog_stats *out)
{
    *out = x->st;
    out->chunks = x->chunks.n;
    out->metas = x->metas.n;
}

size_t
fns_ilog_pending(const struct fns_ilog *x)
{
    return x->pending.nrec + (x->in_flight ? x->flight.nrec : 0);
}
