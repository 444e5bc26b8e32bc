/*
 * cm_cos_fs.c - the "fs" backend of the COS (cm_cos.h).
 *
 * Object "a/b/c" is the file <root>/a/b/c. A put writes a temp file in the
 * final directory, fsyncs it, renames it over the name and fsyncs the
 * directory, so readers see the old object or the new one, never
 * a partial one, and the rename survives a crash. Temp names contain '#',
 * a byte no object name may hold, so list() can skip them (and leftovers of
 * a crash are recognizable). A batch writes every temp file, syncfs()es,
 * renames them all and syncfs()es again: the same guarantees for two syncs
 * per batch instead of two fsyncs per object (an fsync of a new file on
 * ext4 without a journal is several synchronous writes). Threads that need
 * a syncfs at the same time share one (fs_syncfs): a sync that starts after
 * a caller's writes covers them, so concurrent batches cost one sync, not
 * one each. Appends (cm_cos_append) go to a file kept open with O_APPEND,
 * each made durable by one fdatasync, and a new file's directory entry by
 * one fsync of its directory: a packed segment costs a write and a sync
 * instead of a new file, a rename and later an unlink. Up to FS_APPEND_MAX
 * files stay open; the least recently used idle one is closed for a new
 * one. Thread-safe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_cos.h"
#include "cm_cos_int.h"
#include "cm_err.h"
#include "cm_log.h"

#define COS_DIRECT_ALIGN ((size_t)4096)
#define COS_DIRECT_MIN ((size_t)64 << 10)
#define FS_APPEND_MAX 8

/* A file open for appends: its name, descriptor and size (the offset the
 * next append lands at, since one thread at a time appends to it). */
struct fs_appender {
    char name[CM_COS_NAME_MAX + 1];
    int fd; /* -1: a free entry */
    int busy;
    uint64_t size, used; /* used: when last appended to, for eviction */
};

struct fs_state {
    char *root;
    /* Shared syncs, one at a time: sync number `started` runs while
     * started != done. */
    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cv;
    uint64_t started, done; /* syncs begun, syncs finished */
    uint64_t failed;        /* the last sync that failed (0: none), and its error */
    int failed_rc;
    pthread_mutex_t app_mu; /* app[] (the appends themselves run unlocked) */
    struct fs_appender app[FS_APPEND_MAX];
    uint64_t app_clock;
};

static atomic_uint fs_tmp_counter;

static int
mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t len = strlen(path), i;

    if (len == 0 || len >= sizeof(buf)) {
        return -ENAMETOOLONG;
    }
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') {
            continue;
        }
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            return -errno;
        }
        buf[i] = path[i];
    }
    return 0;
}

static int
fsync_dir(const char *dir)
{
    int fd, ret = 0;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    if (fsync(fd) != 0) {
        ret = -errno;
    }
    close(fd);
    return ret;
}

static int
fs_open(const char *url, const struct cm_cos_opts *opts, void **state)
{
    struct fs_state *fs;
    const char *dir = url;
    int ret;

    if (strncmp(url, "fs:", 3) == 0) {
        dir = url + 3;
        /* tolerate "fs:///abs" as well as "fs:/abs" */
        if (strncmp(dir, "//", 2) == 0) {
            dir += 2;
        }
    }
    if (dir[0] == '\0') {
        return CM_E_BADARG;
    }
    ret = mkdir_p(dir);
    if (ret != 0) {
        CM_ERROR("cos: cannot create dir=%s err=%s", dir, cm_errname(ret));
        return ret;
    }
    fs = cm_calloc(1, sizeof(*fs));
    fs->root = cm_strdup(dir);
    pthread_mutex_init(&fs->sync_mu, NULL);
    pthread_cond_init(&fs->sync_cv, NULL);
    pthread_mutex_init(&fs->app_mu, NULL);
    for (int i = 0; i < FS_APPEND_MAX; i++) {
        fs->app[i].fd = -1;
    }
    /* Strip trailing slashes so joined paths stay canonical. */
    for (size_t n = strlen(fs->root); n > 1 && fs->root[n - 1] == '/'; n--) {
        fs->root[n - 1] = '\0';
    }
    *state = fs;
    return 0;
}

static void
fs_close(void *state)
{
    struct fs_state *fs = state;

    for (int i = 0; i < FS_APPEND_MAX; i++) {
        if (fs->app[i].fd >= 0) {
            close(fs->app[i].fd);
        }
    }
    pthread_mutex_destroy(&fs->app_mu);
    pthread_cond_destroy(&fs->sync_cv);
    pthread_mutex_destroy(&fs->sync_mu);
    free(fs->root);
    free(fs);
}

static int
fs_path(const struct fs_state *fs, const char *name, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s", fs->root, name);

    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

static int
write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    ssize_t w;

    while (len > 0) {
        w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/*
 * Writes data to fd. A big page-aligned buffer (a node's chunk) goes with
 * O_DIRECT for its whole 4 KiB blocks: copying 1 MiB chunks into the page
 * cache was ~1/3 of a node's CPU, and the cached copy is never read (reads
 * come from node memory). The tail, and everything when the file system
 * refuses O_DIRECT, is written through the page cache. Durability is the
 * caller's fsync/syncfs either way.
 */
static int
write_data(int fd, const void *data, size_t len)
{
    size_t head = len & ~(COS_DIRECT_ALIGN - 1);
    int fl = fcntl(fd, F_GETFL);
    int ret;

    if (len < COS_DIRECT_MIN || ((uintptr_t)data & (COS_DIRECT_ALIGN - 1)) != 0 || fl < 0 ||
        fcntl(fd, F_SETFL, fl | O_DIRECT) != 0) {
        return write_all(fd, data, len);
    }
    ret = write_all(fd, data, head);
    (void)fcntl(fd, F_SETFL, fl);
    if (ret == -EINVAL && lseek(fd, 0, SEEK_SET) == 0) {
        return write_all(fd, data, len); /* O_DIRECT not supported here */
    }
    if (ret != 0) {
        return ret;
    }
    return write_all(fd, (const char *)data + head, len - head);
}

/*
 * Writes data to a new temp file in the directory of name (created if
 * needed), fsync'd only if sync. Fills path, tmp and dir (PATH_MAX each).
 */
static int
fs_write_tmp(struct fs_state *fs, const char *name, const void *data, size_t len, int sync,
             char *path, char *tmp, char *dir)
{
    char *slash;
    int fd, ret, n;

    ret = fs_path(fs, name, path, PATH_MAX);
    if (ret != 0) {
        return ret;
    }
    memcpy(dir, path, strlen(path) + 1);
    slash = strrchr(dir, '/');
    *slash = '\0';
    n = snprintf(tmp, PATH_MAX, "%s/#tmp.%d.%u", dir, (int)getpid(),
                 atomic_fetch_add(&fs_tmp_counter, 1));
    if (n < 0 || (size_t)n >= PATH_MAX) {
        return -ENAMETOOLONG;
    }
    /* The directory usually exists: create it only when open says so
     * (mkdir_p costs a syscall per path component). */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT && slash != dir + strlen(fs->root)) {
        ret = mkdir_p(dir);
        if (ret != 0) {
            return ret;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
        return -errno;
    }
    ret = write_data(fd, data, len);
    if (ret == 0 && sync && fsync(fd) != 0) {
        ret = -errno;
    }
    if (close(fd) != 0 && ret == 0) {
        ret = -errno;
    }
    if (ret != 0) {
        unlink(tmp);
    }
    return ret;
}

static int
fs_put(void *state, const char *name, const void *data, size_t len)
{
    struct fs_state *fs = state;
    char path[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX];
    int ret;

    ret = fs_write_tmp(fs, name, data, len, 1, path, tmp, dir);
    if (ret != 0) {
        goto out;
    }
    if (rename(tmp, path) != 0) {
        ret = -errno;
        unlink(tmp);
        goto out;
    }
    ret = fsync_dir(dir);
out:
    if (ret != 0) {
        CM_WARN("cos: put failed name=%s err=%s", name, cm_errname(ret));
    }
    return ret;
}

/* syncfs() of the file system holding the root: data, inodes and
 * directories of every put so far. */
static int
fs_syncfs_now(const struct fs_state *fs)
{
    int fd, ret = 0;

    fd = open(fs->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    if (syncfs(fd) != 0) {
        ret = -errno;
    }
    close(fd);
    return ret;
}

/*
 * Makes everything the caller wrote before the call durable, sharing the
 * syncfs with concurrent callers: a sync already running may have started
 * before those writes, so the caller needs the next one; whoever finds
 * none running starts it, for every thread waiting by then.
 */
static int
fs_syncfs(struct fs_state *fs)
{
    uint64_t want, n;
    int rc;

    pthread_mutex_lock(&fs->sync_mu);
    want = fs->started + 1;
    while (fs->done < want) {
        if (fs->started != fs->done) {
            pthread_cond_wait(&fs->sync_cv, &fs->sync_mu);
            continue;
        }
        n = ++fs->started;
        pthread_mutex_unlock(&fs->sync_mu);
        rc = fs_syncfs_now(fs);
        pthread_mutex_lock(&fs->sync_mu);
        fs->done = n;
        if (rc != 0) {
            fs->failed = n;
            fs->failed_rc = rc;
        }
        pthread_cond_broadcast(&fs->sync_cv);
    }
    /* Syncs want..done each covered the caller's writes: any failure counts. */
    rc = fs->failed >= want ? fs->failed_rc : 0;
    pthread_mutex_unlock(&fs->sync_mu);
    return rc;
}

/* Like fs_put for each item: temp files written, one syncfs so no rename
 * can expose a partial file, the renames, one syncfs for the directories. */
static void
fs_put_batch(void *state, struct cm_cos_item *items, size_t n)
{
    struct fs_state *fs = state;
    char(*tmps)[PATH_MAX] = cm_malloc(n * sizeof(*tmps));
    char path[PATH_MAX], dir[PATH_MAX];
    size_t i;
    int ret;

    for (i = 0; i < n; i++) {
        items[i].rc =
            fs_write_tmp(fs, items[i].name, items[i].data, items[i].len, 0, path, tmps[i], dir);
    }
    ret = fs_syncfs(fs);
    for (i = 0; i < n; i++) {
        if (items[i].rc != 0) {
            continue;
        }
        if (ret == 0 && fs_path(fs, items[i].name, path, sizeof(path)) == 0 &&
            rename(tmps[i], path) == 0) {
            continue;
        }
        items[i].rc = ret != 0 ? ret : -errno;
        unlink(tmps[i]);
    }
    ret = fs_syncfs(fs);
    for (i = 0; i < n; i++) {
        if (items[i].rc == 0 && ret != 0) {
            items[i].rc = ret;
        }
        if (items[i].rc != 0) {
            CM_WARN("cos: put failed name=%s err=%s", items[i].name, cm_errname(items[i].rc));
        }
    }
    free(tmps);
}

/* Opens name for reading: 0 with *fd and *size, CM_E_NOTFOUND, or -errno. */
static int
fs_open_read(struct fs_state *fs, const char *name, int *fd, uint64_t *size)
{
    char path[PATH_MAX];
    struct stat st;
    int ret;

    ret = fs_path(fs, name, path, sizeof(path));
    if (ret != 0) {
        return ret;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        return (errno == ENOENT || errno == ENOTDIR) ? CM_E_NOTFOUND : -errno;
    }
    ret = fstat(*fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) ? CM_E_NOTFOUND : 0;
    if (ret != 0) {
        close(*fd);
        return ret;
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

/* Up to len bytes at off into a new NUL-terminated buffer; fewer where the
 * file ends (objects are replaced, never truncated, so that is its end). */
static int
fs_read_at(int fd, uint64_t off, size_t len, void **data, size_t *got)
{
    char *buf = cm_malloc(len + 1);
    size_t have = 0;
    ssize_t r;

    while (have < len) {
        r = pread(fd, buf + have, len - have, (off_t)(off + have));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            int ret = -errno;

            free(buf);
            return ret;
        }
        if (r == 0) {
            break;
        }
        have += (size_t)r;
    }
    buf[have] = '\0';
    *data = buf;
    *got = have;
    return 0;
}

static int
fs_get(void *state, const char *name, void **data, size_t *len)
{
    uint64_t size;
    int fd, ret;

    ret = fs_open_read(state, name, &fd, &size);
    if (ret == 0) {
        ret = fs_read_at(fd, 0, (size_t)size, data, len);
        close(fd);
    }
    return ret;
}

static int
fs_get_range(void *state, const char *name, uint64_t off, size_t len, void **data, size_t *got)
{
    uint64_t size;
    int fd, ret;

    ret = fs_open_read(state, name, &fd, &size);
    if (ret == 0) {
        ret = fs_read_at(fd, off, len, data, got);
        close(fd);
    }
    return ret;
}

/* The entry of name, else NULL. Under app_mu. */
static struct fs_appender *
fs_app_find(struct fs_state *fs, const char *name)
{
    for (int i = 0; i < FS_APPEND_MAX; i++) {
        if (fs->app[i].fd >= 0 && strcmp(fs->app[i].name, name) == 0) {
            return &fs->app[i];
        }
    }
    return NULL;
}

/* A free entry, else the least recently used idle one closed; NULL when
 * every one is busy. Under app_mu. */
static struct fs_appender *
fs_app_slot(struct fs_state *fs)
{
    struct fs_appender *lru = NULL;

    for (int i = 0; i < FS_APPEND_MAX; i++) {
        struct fs_appender *e = &fs->app[i];

        if (e->fd < 0) {
            return e;
        }
        if (!e->busy && (lru == NULL || e->used < lru->used)) {
            lru = e;
        }
    }
    if (lru != NULL) {
        close(lru->fd);
        lru->fd = -1;
    }
    return lru;
}

/* Opens name for appends: 0 with *fd, *size and *created (a new file,
 * whose directory entry still needs a sync). */
static int
fs_app_open(struct fs_state *fs, const char *name, int *fd, uint64_t *size, int *created)
{
    char path[PATH_MAX], dir[PATH_MAX];
    struct stat st;
    char *slash;
    int ret;

    ret = fs_path(fs, name, path, sizeof(path));
    if (ret != 0) {
        return ret;
    }
    *created = 1;
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (*fd < 0 && errno == ENOENT) {
        memcpy(dir, path, strlen(path) + 1);
        slash = strrchr(dir, '/');
        *slash = '\0';
        ret = mkdir_p(dir);
        if (ret != 0) {
            return ret;
        }
        *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    }
    if (*fd < 0 && errno == EEXIST) {
        *created = 0;
        *fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    }
    if (*fd < 0) {
        return -errno;
    }
    if (fstat(*fd, &st) != 0) {
        ret = -errno;
        close(*fd);
        return ret;
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

static int
fs_append(void *state, const char *name, const void *data, size_t len, uint64_t *off)
{
    struct fs_state *fs = state;
    struct fs_appender *e;
    char dir[PATH_MAX];
    int created = 0, ret = 0;

    pthread_mutex_lock(&fs->app_mu);
    e = fs_app_find(fs, name);
    if (e == NULL) {
        e = fs_app_slot(fs);
        ret = e == NULL ? -EBUSY : fs_app_open(fs, name, &e->fd, &e->size, &created);
        if (ret == 0) {
            memcpy(e->name, name, strlen(name) + 1);
        } else if (e != NULL) {
            e->fd = -1;
        }
    }
    if (ret == 0) {
        e->busy = 1;
        e->used = ++fs->app_clock;
        *off = e->size;
    }
    pthread_mutex_unlock(&fs->app_mu);
    if (ret != 0) {
        CM_WARN("cos: append failed name=%s err=%s", name, cm_errname(ret));
        return ret;
    }
    ret = write_all(e->fd, data, len);
    if (ret == 0 && fdatasync(e->fd) != 0) {
        ret = -errno;
    }
    if (ret == 0 && created && fs_path(fs, name, dir, sizeof(dir)) == 0) {
        *strrchr(dir, '/') = '\0';
        ret = fsync_dir(dir);
    }
    pthread_mutex_lock(&fs->app_mu);
    e->busy = 0;
    if (ret == 0) {
        e->size += len;
    } else {
        /* Part of the bytes may be in the file: cut them off if we can,
         * and let the caller go elsewhere either way. */
        if (ftruncate(e->fd, (off_t)e->size) == 0) {
            (void)fdatasync(e->fd);
        }
        close(e->fd);
        e->fd = -1;
    }
    pthread_mutex_unlock(&fs->app_mu);
    if (ret != 0) {
        CM_WARN("cos: append failed name=%s err=%s", name, cm_errname(ret));
    }
    return ret;
}

static void
fs_append_end(void *state, const char *name)
{
    struct fs_state *fs = state;
    struct fs_appender *e;

    pthread_mutex_lock(&fs->app_mu);
    e = fs_app_find(fs, name);
    if (e != NULL && !e->busy) {
        close(e->fd);
        e->fd = -1;
    }
    pthread_mutex_unlock(&fs->app_mu);
}

static int
fs_del(void *state, const char *name)
{
    struct fs_state *fs = state;
    char path[PATH_MAX];
    int ret;

    ret = fs_path(fs, name, path, sizeof(path));
    if (ret != 0) {
        return ret;
    }
    fs_append_end(fs, name);
    if (unlink(path) != 0 && errno != ENOENT && errno != ENOTDIR) {
        return -errno;
    }
    return 0;
}

struct fs_walk {
    const struct fs_state *fs;
    const char *prefix;
    size_t plen;
    int (*cb)(void *arg, const char *name);
    void *arg;
};

/* rel: the name of dir relative to the root ("" for the root itself). */
static int
fs_walk_dir(struct fs_walk *w, const char *rel)
{
    char path[PATH_MAX], child[CM_COS_NAME_MAX + 2];
    struct dirent *de;
    DIR *d;
    int n, ret = 0;

    n = snprintf(path, sizeof(path), "%s/%s", w->fs->root, rel);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        return 0;
    }
    d = opendir(path);
    if (d == NULL) {
        return (errno == ENOENT || errno == ENOTDIR) ? 0 : -errno;
    }
    while ((de = readdir(d)) != NULL) {
        size_t cl;
        int is_dir;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strchr(de->d_name, '#') != NULL) {
            continue;
        }
        n = snprintf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n > CM_COS_NAME_MAX) {
            continue;
        }
        cl = (size_t)n;
        /* Only descend where the prefix can still match. */
        if (strncmp(child, w->prefix, cl < w->plen ? cl : w->plen) != 0) {
            continue;
        }
        if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
            struct stat st;
            char full[PATH_MAX];
            n = snprintf(full, sizeof(full), "%s/%s", w->fs->root, child);
            if (n < 0 || (size_t)n >= sizeof(full) || stat(full, &st) != 0) {
                continue;
            }
            is_dir = S_ISDIR(st.st_mode);
        } else {
            is_dir = de->d_type == DT_DIR;
        }
        if (is_dir) {
            ret = fs_walk_dir(w, child);
        } else if (cl >= w->plen && cm_cos_name_valid(child)) {
            ret = w->cb(w->arg, child);
        }
        if (ret != 0) {
            break;
        }
    }
    closedir(d);
    return ret;
}

static int
fs_list(void *state, const char *prefix, int (*cb)(void *arg, const char *name), void *arg)
{
    struct fs_walk w = {state, prefix, strlen(prefix), cb, arg};
    char start[CM_COS_NAME_MAX + 1];
    const char *slash = strrchr(prefix, '/');
    size_t sl = slash != NULL ? (size_t)(slash - prefix) : 0;

    /* Start at the deepest directory the prefix names completely. */
    memcpy(start, prefix, sl);
    start[sl] = '\0';
    return fs_walk_dir(&w, start);
}

const struct cm_cos_ops cm_cos_fs_ops = {
    .open = fs_open,
    .close = fs_close,
    .put = fs_put,
    .put_batch = fs_put_batch,
    .get = fs_get,
    .get_range = fs_get_range,
    .del = fs_del,
    .append = fs_append,
    .append_end = fs_append_end,
    .list = fs_list,
};
