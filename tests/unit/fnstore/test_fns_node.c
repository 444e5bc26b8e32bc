/*
 * test_fns_node.c - a node's DELs against its COS writes, through the wire
 * on loopback (fs COS in a temporary directory):
 *  - a DEL of a small chunk whose write never ran (taken back while the
 *    packing worker lingered) unlinks nothing, nor does one of a packed
 *    chunk; a big chunk's object is still deleted;
 *  - a DEL never runs before a small write of the same key that is under
 *    way on the packing worker: when that write falls back to an object of
 *    its own (its segment cannot be written), the object does not outlive
 *    the DEL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_check.h"

#include "cm_cos.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "cm_log.h"
#include "cm_wire.h"
#include "fns_chunk.h"
#include "fns_node.h"
#include "t_net.h"

#define TENANT 1
#define SMALL 1000
#define BIG (300u << 10) /* above FNS_PACK_BLOB_MAX: an object of its own */

struct node {
    char *dir;
    struct cm_cos *cos;
    struct fns_node *n;
    pthread_t th;
    int fd;
    uint64_t req_id;
};

static void *
run_node(void *arg)
{
    fns_node_run(arg);
    return NULL;
}

static void
node_start(struct node *t, int linger_ms, int block_segments)
{
    struct fns_node_cfg cfg = {.listen = "127.0.0.1:0",
                               .capacity = 64u << 20,
                               .inst_bytes = 16u << 20,
                               .cache_bytes = 1u << 20,
                               .recovery_helpers = 1,
                               .max_chunk = 1u << 20,
                               .sched = "fifo",
                               .cos_threads = 2,
                               .cos_linger_ms = linger_ms,
                               .incarnation = 1,
                               .id = 7};
    struct fns_node_stats st;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char path[512];

    memset(t, 0, sizeof(*t));
    t->dir = t_tmpdir();
    if (block_segments) {
        /* A file where the node's segment directory goes: every segment
         * write fails, and small chunks fall back to objects of their own. */
        FILE *f;

        snprintf(path, sizeof(path), "%s/seg", t->dir);
        CHECK(mkdir(path, 0755) == 0);
        snprintf(path, sizeof(path), "%s/seg/n7", t->dir);
        f = fopen(path, "w");
        CHECK(f != NULL);
        fclose(f);
    }
    CHECK(cm_cos_open(t->dir, &t->cos) == 0);
    CHECK(fns_node_create(&cfg, t->cos, &t->n) == 0);
    CHECK(pthread_create(&t->th, NULL, run_node, t->n) == 0);
    fns_node_stats(t->n, &st);
    t->fd = socket(AF_INET, SOCK_STREAM, 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(st.port);
    CHECK(connect(t->fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
}

static void
node_stop(struct node *t)
{
    close(t->fd);
    fns_node_stop(t->n);
    pthread_join(t->th, NULL);
    fns_node_destroy(t->n);
    cm_cos_close(t->cos);
    free(t->dir);
}

/* Sends a request for chunk (object, index 0); data may be NULL. */
static void
req(struct node *t, uint8_t op, uint64_t object, const uint8_t *data, uint32_t len)
{
    struct cm_wire_hdr h = {.op = op,
                            .tenant = TENANT,
                            .req_id = ++t->req_id,
                            .object = object,
                            .data_len = len,
                            .data_crc = len ? cm_crc32c(0, data, len) : 0};
    uint8_t hdr[CM_WIRE_HDR_LEN];

    cm_wire_encode_hdr(&h, hdr);
    CHECK(t_write_all(t->fd, hdr, sizeof(hdr)) == 0);
    if (len > 0) {
        CHECK(t_write_all(t->fd, data, len) == 0);
    }
}

/* Reads n answers; returns the flags of the last, and checks each is 0 or
 * NOTFOUND. */
static uint16_t
answers(struct node *t, int n)
{
    uint8_t hdr[CM_WIRE_HDR_LEN], skip[4096];
    uint16_t flags = 0;

    for (int i = 0; i < n; i++) {
        uint32_t left;
        int32_t status;

        CHECK(t_read_all(t->fd, hdr, sizeof(hdr)) == 0);
        memcpy(&flags, hdr + 6, 2);
        memcpy(&status, hdr + 8, 4);
        memcpy(&left, hdr + 48, 4);
        CHECK(status == 0 || status == CM_E_NOTFOUND);
        while (left > 0) {
            uint32_t k = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);

            CHECK(t_read_all(t->fd, skip, k) == 0);
            left -= k;
        }
    }
    return flags;
}

/* Whether chunk object has an object of its own in COS. */
static int
has_object(const struct node *t, uint64_t object)
{
    char name[128], path[640];
    struct stat st;

    CHECK(cm_chunk_name(name, sizeof(name), TENANT, object, 0, 0) == 0);
    snprintf(path, sizeof(path), "%s/%s", t->dir, name);
    return stat(path, &st) == 0;
}

/* Waits until the COS pool is idle and lazy deletes ran (a node tick). */
static void
settle(struct node *t)
{
    struct fns_node_stats st;

    for (int i = 0; i < 300; i++) {
        fns_node_stats(t->n, &st);
        if (st.cos_pending == 0 && i >= 60) { /* 600 ms: past two ticks */
            return;
        }
        usleep(10000);
    }
    CHECK(!"COS pool never idle");
}

static uint64_t
cos_deletes(struct node *t)
{
    struct fns_node_cost *c;
    size_t n = fns_node_costs(t->n, &c);
    uint64_t d = 0;

    for (size_t i = 0; i < n; i++) {
        if (c[i].tenant == TENANT) {
            d = c[i].cos_deletes;
        }
    }
    free(c);
    return d;
}

/* An object id of a key that the pool's 2 workers hash to worker w. */
static uint64_t
object_on(uint64_t from, unsigned w)
{
    for (uint64_t o = from;; o++) {
        struct fns_key k = {.tenant = TENANT, .object = o};

        if (fns_key_hash(&k) % 2 == w) {
            return o;
        }
    }
}

static void
test_no_needless_unlink(uint8_t *small, uint8_t *big)
{
    struct node t;
    int spins;

    node_start(&t, 300, 0);
    /* Written and deleted within the linger: the writes are taken back. */
    for (uint64_t o = 1; o <= 8; o++) {
        req(&t, CM_OP_PUT, o, small, SMALL);
        req(&t, CM_OP_DEL, o, NULL, 0);
    }
    (void)answers(&t, 16);
    /* Packed, then deleted: a tombstone, nothing to unlink. */
    req(&t, CM_OP_PUT, 20, small, SMALL);
    (void)answers(&t, 1);
    for (spins = 0; spins < 300; spins++) {
        req(&t, CM_OP_STAT, 20, NULL, 0);
        if (answers(&t, 1) & CM_WF_PERSISTED) {
            break;
        }
        usleep(10000);
    }
    CHECK(spins < 300);
    req(&t, CM_OP_DEL, 20, NULL, 0);
    /* A big chunk's object still goes. */
    req(&t, CM_OP_PUT, 30, big, BIG);
    req(&t, CM_OP_DEL, 30, NULL, 0);
    (void)answers(&t, 3);
    settle(&t);
    CHECK_EQ_INT((int)cos_deletes(&t), 1);
    CHECK(!has_object(&t, 30));
    for (uint64_t o = 1; o <= 8; o++) {
        req(&t, CM_OP_GET, o, NULL, 0);
        (void)answers(&t, 1);
    }
    node_stop(&t);
}

static void
test_delete_after_write(uint8_t *small, uint8_t *big)
{
    struct node t;
    uint64_t ks[24], o = 1000;
    size_t left = 0;

    node_start(&t, 0, 1);
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        uint64_t b;

        /* The small write goes to the packing worker (0), its DEL to the
         * other; the big write behind the DEL wakes that worker at once. */
        ks[i] = o = object_on(o + 1, 1);
        b = o = object_on(o + 1, 1);
        req(&t, CM_OP_PUT, ks[i], small, SMALL);
        (void)answers(&t, 1); /* answered at once: its write has started */
        req(&t, CM_OP_DEL, ks[i], NULL, 0);
        req(&t, CM_OP_PUT, b, big, BIG);
        (void)answers(&t, 2);
    }
    settle(&t);
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        left += (size_t)has_object(&t, ks[i]);
    }
    CHECK_EQ_INT((int)left, 0);
    node_stop(&t);
}

int
main(void)
{
    uint8_t *small = malloc(SMALL), *big = malloc(BIG);

    cm_log_init("test", CM_LOG_ERROR);
    t_seed();
    for (size_t i = 0; i < BIG; i++) {
        big[i] = (uint8_t)t_rand();
    }
    memcpy(small, big, SMALL);
    test_no_needless_unlink(small, big);
    test_delete_after_write(small, big);
    free(small);
    free(big);
    return 0;
}
