/*
 * nodirect_shim.c - LD_PRELOAD shim for test_kv_nodirect: a file system
 * without O_DIRECT, which this machine's (tmpfs has it since Linux 6.6)
 * cannot provide.
 *
 * With NODIRECT_REFUSE=1 every open() asking for O_DIRECT fails with
 * EINVAL; without it opens pass and are only counted. Either way the shim
 * counts pwrite()s through descriptors opened O_DSYNC: LMDB writes its meta
 * page so when it flushes twice per commit, and not with MDB_NOMETASYNC.
 * The test reads the counters through nodirect_counts().
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_long refused, dsync_writes;

void nodirect_counts(long *refused_out, long *dsync_writes_out);

void
nodirect_counts(long *refused_out, long *dsync_writes_out)
{
    *refused_out = atomic_load(&refused);
    *dsync_writes_out = atomic_load(&dsync_writes);
}

static int
refuse(int flags)
{
    const char *v = getenv("NODIRECT_REFUSE");
    if ((flags & O_DIRECT) && v != NULL && v[0] == '1') {
        atomic_fetch_add(&refused, 1);
        errno = EINVAL;
        return 1;
    }
    return 0;
}

static void
count_write(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_DSYNC)) {
        atomic_fetch_add(&dsync_writes, 1);
    }
}

/* One interposer per libc name a caller may bind to. */
#define OPEN_SHIM(name)                                                                            \
    int name(const char *path, int flags, ...);                                                    \
    int name(const char *path, int flags, ...)                                                     \
    {                                                                                              \
        static int (*real)(const char *, int, ...);                                                \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;               \
        va_end(ap);                                                                                \
        if (refuse(flags)) {                                                                       \
            return -1;                                                                             \
        }                                                                                          \
        if (real == NULL) {                                                                        \
            real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);                       \
        }                                                                                          \
        return real(path, flags, mode);                                                            \
    }
OPEN_SHIM(open)
OPEN_SHIM(open64)

#define OPENAT_SHIM(name)                                                                          \
    int name(int dirfd, const char *path, int flags, ...);                                         \
    int name(int dirfd, const char *path, int flags, ...)                                          \
    {                                                                                              \
        static int (*real)(int, const char *, int, ...);                                           \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;               \
        va_end(ap);                                                                                \
        if (refuse(flags)) {                                                                       \
            return -1;                                                                             \
        }                                                                                          \
        if (real == NULL) {                                                                        \
            real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name);                  \
        }                                                                                          \
        return real(dirfd, path, flags, mode);                                                     \
    }
OPENAT_SHIM(openat)
OPENAT_SHIM(openat64)

#define PWRITE_SHIM(name)                                                                          \
    ssize_t name(int fd, const void *buf, size_t n, off_t off);                                    \
    ssize_t name(int fd, const void *buf, size_t n, off_t off)                                     \
    {                                                                                              \
        static ssize_t (*real)(int, const void *, size_t, off_t);                                  \
        if (real == NULL) {                                                                        \
            real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, #name);          \
        }                                                                                          \
        count_write(fd);                                                                           \
        return real(fd, buf, n, off);                                                              \
    }
PWRITE_SHIM(pwrite)
PWRITE_SHIM(pwrite64)
