/* test_fns_cos.c - the COS worker pool against a real fs COS in a temp dir. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "fns_cos.h"
#include "fns_test.h"

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
        free(js[i]);
    }
}

int
main(void)
{
    char dir[] = "/tmp/test-fns-cos-XXXXXX";
    struct cm_cos *cos = NULL;
    struct fns_cos *p = NULL;
    struct fns_cos_job *js[16];
    struct fns_key k = {.tenant = 1, .index = 0, .object = 0x42, .version = 1};
    uint8_t *data = malloc(1000 + FNS_CHUNK_TAIL);
    struct fns_chunk *c;
    char cmd[128];
    int i;

    CHECK(mkdtemp(dir) != NULL);
    CHECK(cm_cos_open(dir, &cos) == 0);
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
    fns_chunk_unref(c);
    cm_cos_close(cos);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
