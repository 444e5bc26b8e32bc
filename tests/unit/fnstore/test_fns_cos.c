/* test_fns_cos.c - the COS worker pool against a real COS: fs in a temp dir,
 * or the empty store SHOAL_TEST_COS_URL names (an s3rver of
 * tests/integration/s3rver.py). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_check.h"

#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_cos.h"

static atomic_int notified;

static void
on_done(void *arg)
{
    atomic_fetch_add(&notified, 1);
}

static struct fns_cos_job *
job(enum fns_cos_op op, uint32_t index, struct fns_chunk *c, uint64_t tag)
{
    struct fns_cos_job *j = calloc(1, sizeof(*j));

    j->op = op;
    j->key = (struct fns_key){.tenant = 1, .index = index, .object = 0x42, .version = 1};
    if (c != NULL) {
        fns_chunk_ref(c);
        j->chunk = c;
    }
    j->tag = tag;
    return j;
}

/* Waits until n jobs are finished; returns them in finish order. */
static int
collect(struct fns_cos *p, struct fns_cos_job **out, int n)
{
    int got = 0, spins = 0;
    struct fns_cos_job *j;

    while (got < n && spins++ < 2000) {
        for (j = fns_cos_reap(p); j != NULL; j = j->next) {
            out[got++] = j;
        }
        if (got < n) {
            usleep(5000);
        }
    }
    return got;
}

static void
free_jobs(struct fns_cos_job **js, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        fns_chunk_unref(js[i]->chunk);
        free(js[i]->tomb_targets);
        free(js[i]);
    }
}

struct seen {
    size_t records, last_nent, last_ntomb;
    struct fns_key last_tomb;
};

static int
see_record(void *arg, const struct fns_pack_ent *ents, size_t ne, const struct fns_key *tombs,
           size_t nt)
{
    struct seen *s = arg;

    (void)ents;
    s->records++;
    s->last_nent = ne;
    s->last_ntomb = nt;
    if (nt > 0) {
        s->last_tomb = tombs[0];
    }
    return 0;
}

/* Small writes become one record; big ones keep an object each; packed
 * chunks read back by location; tombstones ride in the next segment. */
static void
test_packing(struct cm_cos *cos, struct fns_chunk *small)
{
    struct fns_key bk = {.tenant = 1, .index = 9, .object = 0x43, .version = 0};
    uint32_t blen = FNS_PACK_BLOB_MAX; /* with its trailer: just over the limit */
    uint8_t *bdata = calloc(1, blen + FNS_CHUNK_TAIL);
    struct fns_chunk *big = fns_chunk_adopt(&bk, bdata, blen, cm_crc32c(0, bdata, blen));
    struct fns_cos_job *js[16];
    struct fns_pack_ent *ents;
    struct fns_key *tombs, dead = {.tenant = 7, .index = 1, .object = 0x77};
    struct fns_cos *p = NULL;
    char name[FNS_PACK_NAME_MAX];
    size_t len, ne, nt, rl;
    struct seen seen;
    int app = cm_cos_can_append(cos), i;
    void *blob;

    CHECK(fns_cos_create(cos, 2, on_done, NULL, &p) == 0);
    fns_cos_set_packing(p, 5, 40, 50, 0);
    CHECK(fns_cos_appends(p) == app);
    fns_cos_tomb(p, &dead, 33);
    for (i = 0; i < 5; i++) {
        fns_cos_submit(p, job(FNS_COS_WRITE, (uint32_t)(200 + i), small, (uint64_t)i));
    }
    fns_cos_submit(p, job(FNS_COS_WRITE, 9, big, 5));
    CHECK(collect(p, js, 6) == 6);
    int reported = 0;
    for (i = 0; i < 6; i++) {
        CHECK(js[i]->status == 0);
        if (js[i]->tag < 5) { /* gathered by the linger into segment 40 */
            CHECK(js[i]->loc.seg == 40 && js[i]->loc.len == small->len + FNS_CHUNK_TAIL);
        } else {
            CHECK(js[i]->loc.seg == 0);
        }
        if (js[i]->ntomb_targets > 0) { /* the tombstone's segment, on one job */
            CHECK(js[i]->ntomb_targets == 1 && js[i]->tomb_targets[0] == 33);
            reported++;
        }
    }
    CHECK(reported == 1);
    fns_pack_name(name, sizeof(name), 5, 40);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0);
    CHECK(fns_pack_decode(blob, len, &ents, &ne, &tombs, &nt, &rl) == 0 && rl == len);
    CHECK(ne == 5 && nt == 1 && tombs != NULL && fns_key_eq(&tombs[0], &dead));
    free(ents);
    free(tombs);
    free(blob);
    /* a packed chunk reads back through its location */
    struct fns_cos_job *r = job(FNS_COS_READ, 202, NULL, 9);
    for (i = 0; i < 6; i++) {
        if (js[i]->tag == 2) {
            r->loc = js[i]->loc;
        }
    }
    free_jobs(js, 6);
    fns_cos_submit(p, r);
    CHECK(collect(p, js, 1) == 1 && js[0]->status == 0 && js[0]->chunk != NULL &&
          js[0]->chunk->len == small->len &&
          memcmp(js[0]->chunk->data, small->data, small->len) == 0);
    free_jobs(js, 1);
    /* tombstones without chunk writes: a record of their own (appended to
     * segment 40, or segment 41), reported with their segments; with none
     * pending the job does nothing */
    fns_cos_tomb(p, &dead, 38);
    fns_cos_submit(p, job(FNS_COS_TOMBS, 0, NULL, 11));
    CHECK(collect(p, js, 1) == 1 && js[0]->status == 0 && js[0]->loc.seg == (app ? 40 : 41));
    CHECK(js[0]->ntomb_targets == 1 && js[0]->tomb_targets[0] == 38);
    free_jobs(js, 1);
    fns_pack_name(name, sizeof(name), 5, app ? 40 : 41);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0);
    memset(&seen, 0, sizeof(seen));
    CHECK(fns_pack_scan(blob, len, see_record, &seen) == len);
    CHECK(seen.records == (app ? 2 : 1) && seen.last_nent == 0 && seen.last_ntomb == 1 &&
          fns_key_eq(&seen.last_tomb, &dead));
    free(blob);
    fns_cos_submit(p, job(FNS_COS_TOMBS, 0, NULL, 12));
    CHECK(collect(p, js, 1) == 1 && js[0]->status == 0 && js[0]->loc.seg == 0 &&
          js[0]->ntomb_targets == 0);
    free_jobs(js, 1);
    /* deleting a segment removes the object; a read of it then fails */
    for (uint64_t sg = 40; sg <= (app ? 40u : 41u); sg++) {
        r = job(FNS_COS_DELETE, 0, NULL, 10);
        r->loc.seg = sg;
        fns_cos_submit(p, r);
        CHECK(collect(p, js, 1) == 1 && js[0]->status == 0);
        free_jobs(js, 1);
        fns_pack_name(name, sizeof(name), 5, sg);
        CHECK(cm_cos_get(cos, name, &blob, &len) == CM_E_NOTFOUND);
    }
    fns_cos_destroy(p);
    fns_chunk_unref(big);
}

/*
 * Appended segments (a COS that can append): each batch's record lands at
 * the end of the open segment, the next segment starts once it reaches
 * the roll size, chunks read back from anywhere in it, and bytes a torn
 * append left at the end are where a scan stops.
 */
static void
test_append(struct cm_cos *cos, struct fns_chunk *small)
{
    struct fns_cos_job *js[4];
    struct fns_pack_loc locs[3];
    struct fns_cos *p = NULL;
    char name[FNS_PACK_NAME_MAX];
    size_t len, rec = fns_pack_hdr_len(1, 0) + fns_chunk_blob_len(small);
    struct seen seen;
    uint64_t off;
    void *blob;

    if (!cm_cos_can_append(cos)) {
        return;
    }
    CHECK(fns_cos_create(cos, 1, on_done, NULL, &p) == 0);
    fns_cos_set_packing(p, 8, 1, 0, 2 * rec - 1);
    for (uint32_t i = 0; i < 3; i++) {
        fns_cos_submit(p, job(FNS_COS_WRITE, 400 + i, small, i));
        CHECK(collect(p, js, 1) == 1 && js[0]->status == 0);
        locs[i] = js[0]->loc;
        free_jobs(js, 1);
    }
    CHECK(locs[0].seg == 1 && locs[0].off == fns_pack_hdr_len(1, 0));
    CHECK(locs[1].seg == 1 && locs[1].off == rec + fns_pack_hdr_len(1, 0));
    CHECK(locs[2].seg == 2 && locs[2].off == fns_pack_hdr_len(1, 0)); /* rolled over */
    struct fns_cos_job *r = job(FNS_COS_READ, 401, NULL, 9);
    r->loc = locs[1];
    fns_cos_submit(p, r);
    CHECK(collect(p, js, 1) == 1 && js[0]->status == 0 && js[0]->chunk != NULL &&
          memcmp(js[0]->chunk->data, small->data, small->len) == 0);
    free_jobs(js, 1);
    fns_pack_name(name, sizeof(name), 8, 1);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0 && len == 2 * rec);
    memset(&seen, 0, sizeof(seen));
    CHECK(fns_pack_scan(blob, len, see_record, &seen) == len && seen.records == 2);
    free(blob);
    /* half a record at the end of segment 2, as a node killed mid-append leaves it */
    fns_pack_name(name, sizeof(name), 8, 2);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0 && len == rec);
    CHECK(cm_cos_append(cos, name, blob, rec / 2, &off) == 0 && off == rec);
    free(blob);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0 && len == rec + rec / 2);
    memset(&seen, 0, sizeof(seen));
    CHECK(fns_pack_scan(blob, len, see_record, &seen) == rec && seen.records == 1);
    free(blob);
    cm_cos_append_end(cos, name);
    fns_cos_destroy(p);
}

/* Writes still lingering are taken back (not those a request waits on),
 * never written, and the packer survives its whole queue going. */
static void
test_cancel(struct cm_cos *cos, struct fns_chunk *small)
{
    struct fns_key k = {.tenant = 1, .object = 0x42, .version = 1};
    struct fns_cos_job *js[4], *cj, *waited;
    struct fns_pack_ent *ents;
    struct fns_key *tombs;
    struct fns_cos *p = NULL;
    char name[FNS_PACK_NAME_MAX];
    size_t len, ne, nt, rl;
    void *blob;

    CHECK(fns_cos_create(cos, 2, on_done, NULL, &p) == 0);
    fns_cos_set_packing(p, 6, 1, 300, 0);
    fns_cos_submit(p, job(FNS_COS_WRITE, 300, small, 0));
    fns_cos_submit(p, job(FNS_COS_WRITE, 301, small, 1));
    waited = job(FNS_COS_WRITE, 302, small, 2);
    waited->arg = &k; /* a request waits on it */
    fns_cos_submit(p, waited);
    k.index = 301;
    cj = fns_cos_cancel_writes(p, &k);
    CHECK(cj != NULL && cj->next == NULL && cj->tag == 1);
    free_jobs(&cj, 1);
    CHECK(fns_cos_pending(p) == 2);
    k.index = 302;
    CHECK(fns_cos_cancel_writes(p, &k) == NULL);
    k.index = 300;
    cj = fns_cos_cancel_writes(p, &k);
    CHECK(cj != NULL && cj->tag == 0);
    free_jobs(&cj, 1);
    CHECK(collect(p, js, 1) == 1 && js[0]->tag == 2 && js[0]->status == 0 && js[0]->loc.seg == 1);
    free_jobs(js, 1);
    fns_pack_name(name, sizeof(name), 6, 1);
    CHECK(cm_cos_get(cos, name, &blob, &len) == 0);
    CHECK(fns_pack_decode(blob, len, &ents, &ne, &tombs, &nt, &rl) == 0 && rl == len);
    CHECK(ne == 1 && ents[0].key.index == 302);
    free(ents);
    free(tombs);
    free(blob);
    /* the only queued job goes while the packer lingers on it */
    fns_cos_submit(p, job(FNS_COS_WRITE, 303, small, 3));
    usleep(50000);
    k.index = 303;
    cj = fns_cos_cancel_writes(p, &k);
    CHECK(cj != NULL && cj->tag == 3);
    free_jobs(&cj, 1);
    usleep(400000); /* past the linger */
    fns_cos_submit(p, job(FNS_COS_WRITE, 304, small, 4));
    CHECK(collect(p, js, 1) == 1 && js[0]->tag == 4 && js[0]->status == 0 &&
          js[0]->loc.seg == (cm_cos_can_append(cos) ? 1 : 2));
    free_jobs(js, 1);
    CHECK(fns_cos_pending(p) == 0);
    fns_cos_destroy(p);
}

int
main(void)
{
    char *dir = t_tmpdir();
    struct cm_cos *cos = NULL;
    struct fns_cos *p = NULL;
    struct fns_cos_job *js[16];
    struct fns_key k = {.tenant = 1, .index = 0, .object = 0x42, .version = 1};
    uint8_t *data = malloc(1000 + FNS_CHUNK_TAIL);
    struct fns_chunk *c;
    const char *url = getenv("SHOAL_TEST_COS_URL");
    int i;

    CHECK(cm_cos_open(url != NULL && url[0] != '\0' ? url : dir, &cos) == 0);
    CHECK(fns_cos_create(cos, 0, on_done, NULL, &p) == CM_E_BADARG);
    CHECK(fns_cos_create(cos, 3, on_done, NULL, &p) == 0);
    for (i = 0; i < 1000; i++) {
        data[i] = (uint8_t)(i * 7);
    }
    c = fns_chunk_adopt(&k, data, 1000, cm_crc32c(0, data, 1000));

    /* write, read back; same key so in order on one worker */
    fns_cos_submit(p, job(FNS_COS_WRITE, 0, c, 1));
    fns_cos_submit(p, job(FNS_COS_READ, 0, NULL, 2));
    CHECK(collect(p, js, 2) == 2);
    CHECK(js[0]->tag == 1 && js[0]->status == 0);
    CHECK(js[1]->tag == 2 && js[1]->status == 0 && js[1]->chunk != NULL &&
          js[1]->chunk->len == 1000 && memcmp(js[1]->chunk->data, data, 1000) == 0 &&
          js[1]->chunk->crc == c->crc);
    free_jobs(js, 2);
    CHECK(fns_cos_writes_total(p) == 1 && fns_cos_reloads_total(p) == 1);

    /* write, delete, read: the delete is never overtaken */
    fns_cos_submit(p, job(FNS_COS_WRITE, 0, c, 3));
    fns_cos_submit(p, job(FNS_COS_DELETE, 0, NULL, 4));
    fns_cos_submit(p, job(FNS_COS_READ, 0, NULL, 5));
    fns_cos_submit(p, job(FNS_COS_DELETE, 0, NULL, 6)); /* missing: not an error */
    CHECK(collect(p, js, 4) == 4);
    CHECK(js[0]->tag == 3 && js[0]->status == 0);
    CHECK(js[1]->tag == 4 && js[1]->status == 0);
    CHECK(js[2]->tag == 5 && js[2]->status == CM_E_NOTFOUND && js[2]->chunk == NULL);
    CHECK(js[3]->tag == 6 && js[3]->status == 0);
    free_jobs(js, 4);

    /* a corrupt blob reads as CM_E_CRC */
    CHECK(cm_cos_put(cos, "t1/0000000000000042.1.7", "garbage!garbage!", 16) == 0);
    fns_cos_submit(p, job(FNS_COS_READ, 7, NULL, 7));
    CHECK(collect(p, js, 1) == 1 && js[0]->status == CM_E_CRC && js[0]->chunk == NULL);
    free_jobs(js, 1);

    CHECK(fns_cos_pending(p) == 0);
    CHECK(atomic_load(&notified) == 7);

    /* stop drains queued jobs; destroy frees unreaped ones */
    for (i = 0; i < 8; i++) {
        fns_cos_submit(p, job(FNS_COS_WRITE, (uint32_t)(100 + i), c, 0));
    }
    fns_cos_stop(p);
    CHECK(fns_cos_pending(p) == 0);
    CHECK(fns_cos_writes_total(p) == 10);
    fns_cos_destroy(p);
    fns_cos_destroy(NULL);
    test_packing(cos, c);
    test_cancel(cos, c);
    test_append(cos, c);
    fns_chunk_unref(c);
    cm_cos_close(cos);
    t_rmtree(dir);
    return 0;
}
