/*
 * fns_incarn.c - persistent incarnation counter; see fns_incarn.h.
 * A file is replaced atomically (temp file, fsync, rename, fsync dir).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm_cos.h"
#include "cm_err.h"
#include "cm_log.h"
#include "fns_incarn.h"

static uint32_t
fns_incarn_parse(const char *s, size_t len)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < len && s[i] >= '0' && s[i] <= '9' && v <= UINT32_MAX; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v > UINT32_MAX ? 0 : (uint32_t)v;
}

static uint32_t
fns_incarn_next(uint32_t cur)
{
    return cur + 1 == 0 ? 1 : cur + 1;
}

static int
fns_incarn_file(const char *dir, uint32_t *out)
{
    char path[4096], tmp[4096], buf[32];
    uint32_t cur = 0;
    ssize_t n;
    int fd = -1, rc = 0, len;

    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/incarnation", dir) >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/incarnation.tmp", dir) >= sizeof(tmp)) {
        return -ENAMETOOLONG;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        fd = -1;
        if (n > 0) {
            cur = fns_incarn_parse(buf, (size_t)n);
        }
    } else if (errno != ENOENT) {
        return -errno;
    }
    cur = fns_incarn_next(cur);
    len = snprintf(buf, sizeof(buf), "%u\n", cur);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, buf, (size_t)len) != len || fsync(fd) != 0) {
        rc = -errno;
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = -errno;
        goto out;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
    }
    *out = cur;
out:
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static int
fns_incarn_cos(struct cm_cos *cos, uint32_t node_id, uint32_t *out)
{
    char name[64], buf[32];
    void *data = NULL;
    size_t len = 0;
    uint32_t cur = 0;
    int rc, n;

    snprintf(name, sizeof(name), "_nodes/%u/incarnation", node_id);
    rc = cm_cos_get(cos, name, &data, &len);
    if (rc == 0) {
        cur = fns_incarn_parse(data, len);
        free(data);
    } else if (rc != CM_E_NOTFOUND) {
        return rc;
    }
    cur = fns_incarn_next(cur);
    n = snprintf(buf, sizeof(buf), "%u\n", cur);
    rc = cm_cos_put(cos, name, buf, (size_t)n);
    if (rc == 0) {
        *out = cur;
    }
    return rc;
}

int
fns_incarnation_bump(const char *data_dir, struct cm_cos *cos, uint32_t node_id, uint32_t *out)
{
    if (data_dir != NULL && data_dir[0] != '\0') {
        return fns_incarn_file(data_dir, out);
    }
    return fns_incarn_cos(cos, node_id, out);
}
