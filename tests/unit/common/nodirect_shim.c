/*
 * nodirect_shim.c - LD_PRELOAD shim for test_kv_nodirect: a file system
 * without O_DIRECT, which none here is (even tmpfs has it since Linux 6.6).
 *
 * With NODIRECT_REFUSE=1 every open() asking for O_DIRECT fails with
 * EINVAL (and is counted); otherwise opens pass. Either way the shim
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

/* Every open goes through the real openat (as glibc's own open does). */
static int
shim_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    static int (*real)(int, const char *, int, ...);
    if (refuse(flags)) {
        return -1;
    }
    if (real == NULL) {
        real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    }
    return real(dirfd, path, flags, mode);
}

/* The mode argument, present only when the flags create a file. */
#define MODE_ARG(flags, mode)                                                                      \
    do {                                                                                           \
        va_list ap_;                                                                               \
        va_start(ap_, flags);                                                                      \
        mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap_, int) : 0;                     \
        va_end(ap_);                                                                               \
    } while (0)

/* One interposer per libc name a caller may bind to. */
int
open(const char *path, int flags, ...)
{
    mode_t mode;
    MODE_ARG(flags, mode);
    return shim_openat(AT_FDCWD, path, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
    mode_t mode;
    MODE_ARG(flags, mode);
    return shim_openat(AT_FDCWD, path, flags, mode);
}

int
openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode;
    MODE_ARG(flags, mode);
    return shim_openat(dirfd, path, flags, mode);
}

int
openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode;
    MODE_ARG(flags, mode);
    return shim_openat(dirfd, path, flags, mode);
}

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
