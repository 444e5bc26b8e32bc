/*
 * cm_token.c - the admin token file.
 *
 * The first process to start creates the file with O_CREAT|O_EXCL and mode
 * 0600, so two daemons racing at startup never overwrite each other's
 * token; the loser reads the winner's file, retrying briefly while it is
 * still empty (created but not yet written).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_token.h"

#define TOKEN_BYTES 32
#define TOKEN_READ_MAX 4096
#define TOKEN_RETRIES 50 /* x 10 ms */

static int
token_create(const char *path)
{
    char tok[TOKEN_BYTES * 2 + 2];
    size_t len, off = 0;
    ssize_t w;
    int fd, ret;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno == EEXIST ? 0 : -errno;
    }
    ret = cm_random_hex(tok, TOKEN_BYTES);
    if (ret != 0) {
        goto out;
    }
    len = strlen(tok);
    tok[len++] = '\n';
    while (off < len) {
        w = write(fd, tok + off, len - off);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            ret = -errno;
            goto out;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        ret = -errno;
    }
out:
    close(fd);
    if (ret != 0) {
        unlink(path);
    } else {
        CM_INFO("token: created token file path=%s mode=0600", path);
    }
    return ret;
}

/* 0 with the trimmed first line in out; -EAGAIN if the file is empty. */
static int
token_read(const char *path, char *out, size_t cap)
{
    char buf[TOKEN_READ_MAX + 1];
    size_t off = 0, start, end;
    ssize_t r;
    int fd, ret = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    while (off < TOKEN_READ_MAX) {
        r = read(fd, buf + off, TOKEN_READ_MAX - off);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            ret = -errno;
            goto out;
        }
        if (r == 0) {
            break;
        }
        off += (size_t)r;
    }
    buf[off] = '\0';
    end = strcspn(buf, "\r\n");
    start = 0;
    while (start < end && (buf[start] == ' ' || buf[start] == '\t')) {
        start++;
    }
    while (end > start && (buf[end - 1] == ' ' || buf[end - 1] == '\t')) {
        end--;
    }
    if (end == start) {
        ret = -EAGAIN;
        goto out;
    }
    if (end - start >= cap) {
        ret = CM_E_TOOBIG;
        goto out;
    }
    memcpy(out, buf + start, end - start);
    out[end - start] = '\0';
out:
    close(fd);
    return ret;
}

int
cm_token_load(const char *path, int create, char *out, size_t cap)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    int ret, i;

    if (cap > 0) {
        out[0] = '\0';
    }
    if (path == NULL || path[0] == '\0' || cap == 0) {
        return CM_E_BADARG;
    }
    if (create) {
        ret = token_create(path);
        if (ret != 0) {
            CM_ERROR("token: cannot create path=%s err=%s", path, cm_errname(ret));
            return ret;
        }
    }
    for (i = 0;; i++) {
        ret = token_read(path, out, cap);
        if (ret != -EAGAIN || !create || i >= TOKEN_RETRIES) {
            break;
        }
        nanosleep(&ts, NULL);
    }
    if (ret == -EAGAIN) {
        ret = CM_E_CONFIG; /* an empty token file is a setup error */
    }
    if (ret != 0) {
        CM_ERROR("token: cannot read path=%s err=%s", path, cm_errname(ret));
    }
    return ret;
}
