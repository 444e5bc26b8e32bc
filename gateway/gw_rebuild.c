/*
 * gw_rebuild.c - the metadata store rebuilt from the insertion logs
 * (gw_rebuild.h).
 *
 *   list "ilog/" ─▶ names ─▶ readers (nthreads, each the next name):
 *     get, cm_ilog_open (CRC), every CM_ILOG_META ─▶ fold (mutex):
 *     per (tenant, key) the newest record ─▶ sorted by (tenant, key)
 *     ─▶ links: multipart objects whole or left out, parts kept only
 *     with them or with their upload ─▶ LMDB, a transaction per
 *     GW_REBUILD_TXN keys
 *
 * Owns the names, the map of newest records and the reader threads, all
 * for the one call. A record that does not decode, or whose layout record
 * does not, is counted and left out before it can win over a good one.
 */
#include "gw_rebuild.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_hmap.h"
#include "cm_ilog.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_meta.h"
#include "gw_parse.h"
#include "gw_s3_cksum.h"

#define GW_REBUILD_TXN 1024
#define GW_REBUILD_THREADS_MAX 64

/* The newest record of one (tenant, key). */
struct newest {
    struct cm_hnode hn;
    uint32_t tenant;
    uint8_t kind;      /* GW_MREC_VERSION (a MOVED record too) or GW_MREC_TOMB */
    uint8_t part_kept; /* a part a whole composite names */
    uint64_t version;
    uint32_t gen; /* of a MOVED record; 0 otherwise */
    uint8_t *rec; /* VERSION: the layout record */
    size_t rec_len;
    size_t klen;
    char key[];
};

struct rebuild {
    struct cm_cos *cos;
    char **names;
    size_t nnames, cap;
    atomic_size_t next;
    pthread_mutex_t mu; /* map, stats, err */
    struct cm_hmap map;
    size_t nkeys;
    struct gw_rebuild_stats st;
    int err;
    const struct gw_rebuild_filter *filter; /* may be NULL */
};

static int
list_one(void *arg, const char *name)
{
    struct rebuild *r = arg;
    uint64_t node = 0, seq;
    const char *p = name + sizeof("ilog/n") - 1;

    if (strncmp(name, "ilog/n", sizeof("ilog/n") - 1) != 0) {
        return 0;
    }
    for (; *p >= '0' && *p <= '9' && node <= UINT32_MAX; p++) {
        node = node * 10 + (uint64_t)(*p - '0');
    }
    if (node > UINT32_MAX || cm_ilog_parse_name(name, (uint32_t)node, &seq) != 0) {
        return 0; /* not a log batch */
    }
    if (r->nnames == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->names = cm_realloc(r->names, r->cap * sizeof(*r->names));
    }
    r->names[r->nnames++] = cm_strdup(name);
    return 0;
}

/* A META record worth keeping: it decodes, and so does its layout. */
static int
usable(const struct gw_mrec *m)
{
    struct gw_layout l;

    if (m->klen > GW_KEY_MAX) {
        return 0;
    }
    if (m->kind == GW_MREC_TOMB) {
        return 1;
    }
    return gw_meta_decode(m->rec, m->rec_len, &l) == 0 && l.tenant == m->tenant && l.object != 0;
}

/* Keeps m if it is the newest of its key so far (r->mu held). */
static void
fold_locked(struct rebuild *r, const struct gw_mrec *m)
{
    uint64_t h = cm_hash64(m->key, m->klen, m->tenant);
    struct newest *e = NULL;
    struct gw_mrec cur;

    for (struct cm_hnode *n = cm_hmap_first(&r->map, h); n; n = cm_hmap_next(n, h)) {
        struct newest *x = CM_CONTAINER_OF(n, struct newest, hn);
        if (x->tenant == m->tenant && x->klen == m->klen && memcmp(x->key, m->key, m->klen) == 0) {
            e = x;
            break;
        }
    }
    if (e == NULL) {
        e = cm_calloc(1, sizeof(*e) + m->klen);
        e->tenant = m->tenant;
        e->klen = m->klen;
        memcpy(e->key, m->key, m->klen);
        cm_hmap_add(&r->map, &e->hn, h);
        r->nkeys++;
    } else {
        cur = (struct gw_mrec){.kind = e->kind, .version = e->version, .gen = e->gen};
        if (!gw_mrec_newer(m, &cur)) {
            return;
        }
        free(e->rec);
        e->rec = NULL;
        e->rec_len = 0;
    }
    e->kind = m->kind == GW_MREC_TOMB ? GW_MREC_TOMB : GW_MREC_VERSION;
    e->version = m->version;
    e->gen = m->gen;
    if (m->kind != GW_MREC_TOMB) {
        e->rec = cm_malloc(m->rec_len);
        memcpy(e->rec, m->rec, m->rec_len);
        e->rec_len = m->rec_len;
    }
}

/* Reads one log object's batches into the map. 0, or a COS error other
 * than an object gone meanwhile (compacted away: what it said is in a
 * newer one). */
static int
read_batch(struct rebuild *r, const char *name)
{
    struct cm_ilog_iter it;
    struct cm_ilog_rec rec;
    void *buf = NULL;
    size_t len = 0, at = 0, bl;
    int rc = cm_cos_get(r->cos, name, &buf, &len);

    if (rc == CM_E_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        CM_ERROR("rebuild-meta cannot read name=%s err=%s", name, cm_errname(rc));
        return rc;
    }
    pthread_mutex_lock(&r->mu);
    do {
        bl = cm_ilog_batch_len((const uint8_t *)buf + at, len - at);
        rc = bl > 0 ? cm_ilog_open((const uint8_t *)buf + at, bl, NULL, NULL, &it) : CM_E_CRC;
        r->st.batches++;
        if (rc != 0) {
            /* torn (an append a kill cut short: nothing after it was
             * acknowledged) or altered: the rest of the object is skipped */
            r->st.bad_batches++;
            CM_WARN("rebuild-meta skips a log batch name=%s at=%zu err=%s", name, at,
                    cm_errname(rc));
            break;
        }
        while (cm_ilog_next(&it, &rec) == 1) {
            struct gw_mrec m;
            if (rec.kind != CM_ILOG_META) {
                continue;
            }
            r->st.records++;
            if (gw_mrec_decode(rec.data, rec.data_len, &m) != 0 || !usable(&m)) {
                r->st.bad_records++;
                continue;
            }
            if (r->filter != NULL && !r->filter->keep(r->filter->arg, m.tenant)) {
                r->st.others++;
                continue;
            }
            fold_locked(r, &m);
        }
        at += bl;
    } while (at < len);
    pthread_mutex_unlock(&r->mu);
    free(buf);
    return 0;
}

static void *
reader_main(void *arg)
{
    struct rebuild *r = arg;

    for (;;) {
        size_t i = atomic_fetch_add(&r->next, 1);
        int rc;

        if (i >= r->nnames) {
            return NULL;
        }
        rc = read_batch(r, r->names[i]);
        if (rc != 0) {
            pthread_mutex_lock(&r->mu);
            r->err = r->err ? r->err : rc;
            pthread_mutex_unlock(&r->mu);
            atomic_store(&r->next, r->nnames); /* the others stop too */
            return NULL;
        }
    }
}

struct collect {
    struct newest **v;
    size_t n;
};

static void
collect_one(void *arg, struct cm_hnode *n)
{
    struct collect *c = arg;

    c->v[c->n++] = CM_CONTAINER_OF(n, struct newest, hn);
}

/* Store order: tenant, then key bytes (a shorter key first). */
static int
newest_cmp(const void *a, const void *b)
{
    const struct newest *x = *(struct newest *const *)a, *y = *(struct newest *const *)b;
    int c;

    if (x->tenant != y->tenant) {
        return x->tenant < y->tenant ? -1 : 1;
    }
    c = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);
    if (c != 0) {
        return c;
    }
    return x->klen < y->klen ? -1 : x->klen > y->klen;
}

/* ---- multipart objects and uploads ---- */

static struct newest *
find(struct rebuild *r, uint32_t tenant, const char *key, size_t klen)
{
    uint64_t h = cm_hash64(key, klen, tenant);

    for (struct cm_hnode *n = cm_hmap_first(&r->map, h); n; n = cm_hmap_next(n, h)) {
        struct newest *x = CM_CONTAINER_OF(n, struct newest, hn);
        if (x->tenant == tenant && x->klen == klen && memcmp(x->key, key, klen) == 0) {
            return x;
        }
    }
    return NULL;
}

/* A live version record of e's (tenant, key) that is not record-only:
 * its layout into *l. */
static int
live_chunks(const struct newest *e, struct gw_layout *l)
{
    return e != NULL && e->kind == GW_MREC_VERSION &&
           gw_meta_decode(e->rec, e->rec_len, l) == 0 && !gw_layout_record_only(l);
}

/* Turns e into what it deleted: kept out, versions above it. */
static void
drop(struct newest *e)
{
    e->kind = GW_MREC_TOMB;
    free(e->rec);
    e->rec = NULL;
    e->rec_len = 0;
}

/*
 * A composite comes back only whole: every part it names a live version
 * whose sizes add up to its size and whose CRC-64s combine into its own
 * (a part replaced later than its upload's last logged record, or not
 * logged yet, would give other bytes). Its parts are then kept, and its
 * upload, if its tombstone was not logged, dropped. A part comes back only
 * with a whole composite or with its live upload.
 */
static void
links(struct rebuild *r, struct newest **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct newest *e = v[i];
        struct gw_layout l, p;
        struct gw_meta_attrs a;
        uint64_t size = 0, crc = 0;
        uint32_t j;

        if (e->kind != GW_MREC_VERSION ||
            gw_meta_decode_attrs(e->rec, e->rec_len, &l, &a) != 0 || a.nparts == 0) {
            continue;
        }
        for (j = 0; j < a.nparts; j++) {
            char pk[GW_META_PART_KEY_LEN];
            size_t pklen = gw_meta_part_key(a.upload, gw_meta_part_no(&a, j), pk);

            if (!live_chunks(find(r, e->tenant, pk, pklen), &p)) {
                break;
            }
            crc = j == 0 ? p.etag : gw_s3_crc64_combine(crc, p.etag, p.size);
            size += p.size;
        }
        if (j < a.nparts || size != l.size || crc != l.etag) {
            CM_WARN("rebuild-meta leaves out a multipart object whose parts were not all logged "
                    "tenant=%u version=%llu parts=%u",
                    e->tenant, (unsigned long long)e->version, a.nparts);
            r->st.broken++;
            drop(e);
            continue;
        }
        for (j = 0; j < a.nparts; j++) {
            char pk[GW_META_PART_KEY_LEN];
            size_t pklen = gw_meta_part_key(a.upload, gw_meta_part_no(&a, j), pk);

            find(r, e->tenant, pk, pklen)->part_kept = 1;
        }
        {
            char uk[2 + GW_META_UPLOAD_ID_LEN];
            size_t uklen = gw_meta_upload_key(a.upload, uk);
            struct newest *u = find(r, e->tenant, uk, uklen);

            if (u != NULL && u->kind == GW_MREC_VERSION) {
                drop(u); /* completed: its tombstone was not logged */
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct newest *e = v[i], *u;
        char uk[2 + GW_META_UPLOAD_ID_LEN];

        if (e->kind != GW_MREC_VERSION || e->part_kept || e->klen != GW_META_PART_KEY_LEN ||
            e->key[0] != '\0' || e->key[1] != 'p') {
            continue;
        }
        u = find(r, e->tenant, uk, gw_meta_upload_key(e->key + 2, uk));
        if (u == NULL || u->kind != GW_MREC_VERSION) {
            r->st.orphan_parts++;
            drop(e); /* its upload ended, its composite is gone or left out */
        }
    }
}

static int
store_one(struct gw_meta_batch *b, const struct newest *e, struct gw_rebuild_stats *st)
{
    struct gw_layout l;
    struct gw_meta_attrs a;
    int rc;

    if (e->kind == GW_MREC_TOMB) {
        st->tombstones++;
        return gw_meta_restore_tomb(b, e->tenant, e->key, e->klen, e->version);
    }
    rc = gw_meta_decode_tags(e->rec, e->rec_len, &l);
    if (rc == 0) {
        rc = gw_meta_decode_attrs(e->rec, e->rec_len, &(struct gw_layout){0}, &a);
    }
    if (rc != 0) {
        gw_layout_fini(&l);
        return rc; /* checked when read: only -ENOMEM is left */
    }
    l.version = e->version;
    rc = gw_meta_restore(b, e->key, e->klen, &l, &a);
    gw_layout_fini(&l);
    st->versions++;
    return rc;
}

/* Writes the map in key order, GW_REBUILD_TXN keys a transaction. */
static int
store(struct rebuild *r, struct gw_meta *meta)
{
    struct collect c = {cm_calloc(r->nkeys + 1, sizeof(*c.v)), 0};
    struct gw_meta_batch *b = NULL;
    int rc = 0;

    cm_hmap_each(&r->map, collect_one, &c);
    qsort(c.v, c.n, sizeof(*c.v), newest_cmp);
    links(r, c.v, c.n);
    for (size_t i = 0; i < c.n && rc == 0; i++) {
        if (b == NULL && (rc = gw_meta_batch_begin(meta, &b)) != 0) {
            break;
        }
        rc = store_one(b, c.v[i], &r->st);
        if (rc != 0) {
            gw_meta_batch_abort(b);
            b = NULL;
        } else if ((i + 1) % GW_REBUILD_TXN == 0 || i + 1 == c.n) {
            rc = gw_meta_batch_commit(b);
            b = NULL;
        }
    }
    free(c.v);
    return rc;
}

static void
free_one(void *arg, struct cm_hnode *n)
{
    struct newest *e = CM_CONTAINER_OF(n, struct newest, hn);

    (void)arg;
    free(e->rec);
    free(e);
}

int
gw_rebuild_meta(struct cm_cos *cos, struct gw_meta *meta, int nthreads,
                const struct gw_rebuild_filter *filter, struct gw_rebuild_stats *out)
{
    struct rebuild r = {.cos = cos, .filter = filter};
    pthread_t th[GW_REBUILD_THREADS_MAX];
    int started = 0, rc;

    nthreads = nthreads < 1                        ? 1
               : nthreads > GW_REBUILD_THREADS_MAX ? GW_REBUILD_THREADS_MAX
                                                   : nthreads;
    uint64_t t0 = cm_now_ns(), t1;

    pthread_mutex_init(&r.mu, NULL);
    cm_hmap_init(&r.map, 1024);
    atomic_init(&r.next, 0);
    rc = cm_cos_list(cos, "ilog/", list_one, &r);
    if (rc != 0) {
        CM_ERROR("rebuild-meta cannot list the logs err=%s", cm_errname(rc));
    }
    for (int i = 0; rc == 0 && i < nthreads && (size_t)i < r.nnames; i++) {
        if (pthread_create(&th[i], NULL, reader_main, &r) != 0) {
            break; /* the ones started read everything */
        }
        started++;
    }
    if (rc == 0 && started == 0) {
        reader_main(&r);
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
    }
    if (rc == 0) {
        rc = r.err;
    }
    t1 = cm_now_ns();
    r.st.read_ns = t1 - t0;
    if (rc == 0) {
        rc = store(&r, meta);
    }
    r.st.store_ns = cm_now_ns() - t1;
    *out = r.st;
    cm_hmap_each(&r.map, free_one, NULL);
    cm_hmap_free(&r.map);
    for (size_t i = 0; i < r.nnames; i++) {
        free(r.names[i]);
    }
    free(r.names);
    pthread_mutex_destroy(&r.mu);
    return rc;
}
