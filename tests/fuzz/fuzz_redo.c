/*
 * fuzz_redo.c - libFuzzer target for the replay of the LMDB adapter's redo
 * log (common/src/cm_kv.c, CM_KV_REDO): the bytes a crash may leave in
 * DIR/redo.log, read back by cm_kv_open.
 *
 * Input: byte 0 bit 0 set: the rest is half 0 of the log as is (magic, CRC,
 * txn id, length, ops). Clear: the rest is the ops of a record the target
 * wraps in a valid header for the transaction after the store's last, so
 * the fuzzer reaches the ops parser. Whatever the bytes, the open either
 * succeeds, with a store that can be read and written, or fails with an
 * error; and the store opens again afterwards.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_kv.h"
#include "cm_log.h"

#define HALF ((size_t)1 << 20) /* as REDO_HALF in cm_kv.c */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tables[] = {"a", "b"};
static char dir[64], store[128], data_path[160], log_path[160];
static uint8_t *halves;
static unsigned char *image;
static ssize_t image_len;
static uint64_t next_txn;

static int
scan_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)arg, (void)k, (void)kl, (void)v, (void)vl;
    return 0;
}

static void
cleanup(void)
{
    unlink(log_path);
    unlink(data_path);
    snprintf(log_path, sizeof(log_path), "%s/lock.mdb", store);
    unlink(log_path);
    rmdir(store);
    rmdir(dir);
}

static void
write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
        abort();
    }
    close(fd);
}

/* The saved store, and a log holding ops[len] as a valid record of the
 * transaction after the store's last. */
static void
put_back(const uint8_t *ops, size_t len)
{
    uint8_t *b = halves + (next_txn & 1) * HALF;

    memset(halves, 0, 2 * HALF);
    cm_put_le32(b, 0x4f445253u);
    cm_put_le64(b + 8, next_txn);
    cm_put_le32(b + 16, (uint32_t)len);
    memcpy(b + 20, ops, len);
    cm_put_le32(b + 4, cm_crc32c(0, b + 8, 12 + len));
    write_file(data_path, image, (size_t)image_len);
    write_file(log_path, halves, 2 * HALF);
}

/* A store with two committed transactions; its data file is kept in memory
 * and put back before every input. */
static void
setup(void)
{
    struct cm_kv *kv;
    struct cm_kv_txn *t;
    int fd;

    cm_log_init("fuzz", CM_LOG_ERROR);
    snprintf(dir, sizeof(dir), "%s/fuzz_redo.XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (mkdtemp(dir) == NULL) {
        abort();
    }
    atexit(cleanup);
    snprintf(store, sizeof(store), "%s/kv", dir);
    snprintf(data_path, sizeof(data_path), "%s/data.mdb", store);
    snprintf(log_path, sizeof(log_path), "%s/redo.log", store);
    if (cm_kv_open(store, 1 << 20, tables, 2, CM_KV_REDO, &kv) != 0) {
        abort();
    }
    for (int i = 0; i < 2; i++) {
        if (cm_kv_begin(kv, 1, &t) != 0 || cm_kv_put(t, i, "key", 3, "val", 3) != 0 ||
            cm_kv_commit(t) != 0) {
            abort();
        }
    }
    cm_kv_close(kv);
    next_txn = 4; /* the tables' creation, then two commits */
    image = malloc(1 << 20);
    fd = open(data_path, O_RDONLY);
    image_len = fd >= 0 ? read(fd, image, 1 << 20) : -1;
    if (image_len <= 0) {
        abort();
    }
    close(fd);
    halves = malloc(2 * HALF);

    /* A record put to table 1 as the next transaction must replay; else
     * next_txn is wrong and no input would reach the ops parser. */
    static const uint8_t probe[] = {1, 1, 5, 0, 0, 0, 1, 0, 0, 0, 'p', 'r', 'o', 'b', 'e', 'y'};
    const void *v;
    size_t vl;
    put_back(probe, sizeof(probe));
    if (cm_kv_open(store, 1 << 20, tables, 2, CM_KV_REDO, &kv) != 0 ||
        cm_kv_begin(kv, 0, &t) != 0 || cm_kv_get(t, 1, "probe", 5, &v, &vl) != 0 || vl != 1) {
        abort();
    }
    cm_kv_abort(t);
    cm_kv_close(kv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cm_kv *kv;
    struct cm_kv_txn *t;

    if (halves == NULL) {
        setup();
    }
    if (size < 1 || size - 1 > HALF - 20) {
        return 0;
    }
    if (data[0] & 1) {
        memset(halves, 0, 2 * HALF);
        memcpy(halves, data + 1, size - 1);
        write_file(data_path, image, (size_t)image_len);
        write_file(log_path, halves, 2 * HALF);
    } else {
        put_back(data + 1, size - 1);
    }
    if (cm_kv_open(store, 1 << 20, tables, 2, CM_KV_REDO, &kv) == 0) {
        if (cm_kv_begin(kv, 0, &t) != 0 || cm_kv_scan(t, 0, NULL, 0, scan_cb, NULL) != 0 ||
            cm_kv_scan(t, 1, NULL, 0, scan_cb, NULL) != 0) {
            abort();
        }
        cm_kv_abort(t);
        if (cm_kv_begin(kv, 1, &t) != 0 || cm_kv_put(t, 0, "after", 5, "x", 1) != 0 ||
            cm_kv_commit(t) != 0) {
            abort();
        }
        cm_kv_close(kv);
    }
    /* A failed replay leaves the store as it was: it opens (the log was
     * left alone, so drop it first). */
    unlink(log_path);
    if (cm_kv_open(store, 1 << 20, tables, 2, CM_KV_REDO, &kv) != 0) {
        abort();
    }
    cm_kv_close(kv);
    return 0;
}
