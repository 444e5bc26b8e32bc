/*
 * fns_node_replay.c - startup: the node's packed-chunk index rebuilt from
 * its COS segments (seg/n<id>/<seq>), replayed in sequence order, record by
 * record, each record's tombstones before its chunks, so a chunk deleted
 * after it was packed does not come back; a segment's records end at the
 * first that does not check (a torn append). Segments left empty are
 * deleted; packing then resumes above the newest sequence, in a new
 * segment (one with a torn tail is never appended to).
 *
 * A COS that does not answer (down, restarting) is waited for, for the
 * listings and for each object listed: the node must not come up without
 * the chunks its segments and its insertion log name.
 *
 * Threads: runs in fns_node_create, before the loop and the COS workers have
 * anything to do; its COS calls are synchronous.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_err.h"
#include "cm_log.h"
#include "fns_cos.h"
#include "fns_node_impl.h"
#include "fns_pack.h"

/* Listings and reads of this node's objects tried at start (one a second)
 * before it gives up. */
#define FNS_REPLAY_TRIES 60

struct seq_list {
    const char *kind;
    uint32_t node;
    uint64_t *seqs;
    size_t n, cap;
};

static int
fns_node_seq_found(void *arg, const char *name)
{
    struct seq_list *l = arg;
    uint64_t seq;

    if (cm_cos_seq_parse(name, l->kind, l->node, &seq) == 0) {
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->seqs = cm_realloc(l->seqs, l->cap * sizeof(*l->seqs));
        }
        l->seqs[l->n++] = seq;
    }
    return 0;
}

int
fns_node_cos_final(int rc)
{
    return rc == 0 || rc == CM_E_NOTFOUND || rc == CM_E_BADARG || rc == -EACCES;
}

static int
fns_node_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int
fns_node_list_seqs(struct fns_node *n, const char *kind, uint64_t **seqs, size_t *count)
{
    struct seq_list l = {.kind = kind, .node = n->cfg.id};
    char prefix[64];
    int rc;

    snprintf(prefix, sizeof(prefix), "%s/n%u/", kind, n->cfg.id);
    /* A COS that is down or restarting while the node starts is waited for
     * (the backend already retried each call): the node must not come up
     * without its indexes, nor give up on an outage. */
    for (int attempt = 1;; attempt++) {
        l.n = 0;
        rc = cm_cos_list(n->cos, prefix, fns_node_seq_found, &l);
        if (fns_node_cos_final(rc) || attempt >= FNS_REPLAY_TRIES) {
            break;
        }
        CM_WARN("cos objects not listable yet, waiting prefix=%s attempt=%d err=%s", prefix,
                attempt, cm_errname(rc));
        sleep(1);
    }
    if (rc != 0 && rc != CM_E_NOTFOUND) {
        CM_ERROR("cannot list cos objects prefix=%s err=%s", prefix, cm_errname(rc));
        free(l.seqs);
        return rc;
    }
    if (l.n > 1) {
        qsort(l.seqs, l.n, sizeof(*l.seqs), fns_node_cmp_u64);
    }
    *seqs = l.seqs;
    *count = l.n;
    return 0;
}

int
fns_node_replay_get(struct fns_node *n, const char *name, void **buf, size_t *len)
{
    int rc;

    /* Skipping an object listed but not readable for now (the COS went
     * down or is restarting) would bring the node up without the chunks
     * it names, as if they had never been written. */
    for (int attempt = 1;; attempt++) {
        rc = cm_cos_get(n->cos, name, buf, len);
        if (fns_node_cos_final(rc) || attempt >= FNS_REPLAY_TRIES) {
            return rc;
        }
        CM_WARN("cos object not readable yet, waiting name=%s attempt=%d err=%s", name, attempt,
                cm_errname(rc));
        sleep(1);
    }
}

static void
fns_node_delete_seg_now(void *arg, uint64_t seq)
{
    struct fns_node *n = arg;
    char name[FNS_PACK_NAME_MAX];

    fns_pack_name(name, sizeof(name), n->cfg.id, seq);
    (void)cm_cos_delete(n->cos, name);
}

struct replay_seg {
    struct fns_node *n;
    uint64_t seq;
};

/* Applies one record of a segment to the index: its tombstones, then its
 * chunks. A segment they empty goes now: later records and segments can
 * only add chunks of their own. */
static int
fns_node_replay_record(void *arg, const struct fns_pack_ent *ents, size_t ne,
                       const struct fns_key *tombs, size_t nt)
{
    struct replay_seg *r = arg;
    uint64_t from, emptied;
    size_t i;

    for (i = 0; i < nt; i++) {
        emptied = fns_pack_index_del(r->n->pack, &tombs[i], &from);
        if (from != 0) {
            fns_pack_index_hold(r->n->pack, r->seq, from);
        }
        if (emptied != 0) {
            fns_node_delete_seg_now(r->n, emptied);
        }
    }
    for (i = 0; i < ne; i++) {
        struct fns_pack_loc loc = {.seg = r->seq, .off = ents[i].off, .len = ents[i].len};

        emptied = fns_pack_index_put(r->n->pack, &ents[i].key, &loc);
        if (emptied != 0) {
            fns_node_delete_seg_now(r->n, emptied);
        }
    }
    return 0;
}

/* Applies one segment to the index, record by record, up to the first that
 * does not check (a torn tail: the append a kill interrupted, never
 * acknowledged). 0, or the COS error that outlasted the wait (the node
 * does not start). */
static int
fns_node_replay_one(struct fns_node *n, uint64_t seq)
{
    char name[FNS_PACK_NAME_MAX];
    struct replay_seg r = {n, seq};
    size_t len, good;
    void *blob;
    int rc;

    fns_pack_name(name, sizeof(name), n->cfg.id, seq);
    rc = fns_node_replay_get(n, name, &blob, &len);
    if (!fns_node_cos_final(rc)) {
        CM_ERROR("cos segment not readable, giving up name=%s err=%s", name, cm_errname(rc));
        return rc;
    }
    if (rc != 0 || len == 0) {
        free(blob);
        CM_ERROR("cos segment unreadable, kept name=%s err=%s", name, cm_errname(rc));
        return 0;
    }
    good = fns_pack_scan(blob, len, fns_node_replay_record, &r);
    free(blob);
    if (good == 0) {
        CM_ERROR("cos segment unreadable, kept name=%s err=%s", name, cm_errname(CM_E_CRC));
        return 0;
    }
    fns_pack_index_add_seg(n->pack, seq); /* (one of tombstones only) */
    if (good < len) {
        CM_WARN("cos segment torn tail ignored name=%s good=%zu bytes=%zu", name, good, len);
    }
    return 0;
}

int
fns_node_replay(struct fns_node *n)
{
    uint64_t *seqs = NULL;
    size_t count = 0, i;
    int rc = fns_node_list_seqs(n, "seg", &seqs, &count);

    if (rc != 0) {
        return rc;
    }
    for (i = 0; i < count && rc == 0; i++) {
        rc = fns_node_replay_one(n, seqs[i]);
    }
    if (rc != 0) {
        free(seqs);
        return rc;
    }
    fns_pack_index_drop_empty(n->pack, fns_node_delete_seg_now, n);
    CM_INFO("cos segments replayed segments=%zu live=%zu chunks=%zu", count,
            fns_pack_index_segments(n->pack), fns_pack_index_chunks(n->pack));
    fns_cos_set_packing(n->pool, n->cfg.id, count ? seqs[count - 1] + 1 : 1, n->cfg.cos_linger_ms,
                        (size_t)n->cfg.cos_segment_max);
    free(seqs);
    return 0;
}
