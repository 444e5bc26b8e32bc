/*
 * cm_log.c - one line per event on stderr.
 *
 *   2026-11-30T03:40:00.123Z info gateway put done tenant=3 req=ab12
 *
 * Each line is formatted into a stack buffer and emitted with a single
 * write(2), so lines from different threads never interleave (stderr is
 * a pipe or a file opened O_APPEND in practice). Overlong lines are cut and
 * marked with "...". cm_log_init is meant to be called once at startup,
 * before threads exist.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm_err.h"
#include "cm_log.h"

#define LOG_LINE_MAX 4096

enum cm_log_level cm_log_min_level = CM_LOG_INFO;
static const char *log_component = "shoal";

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void
cm_log_init(const char *component, enum cm_log_level level)
{
    if (component != NULL) {
        log_component = component;
    }
    cm_log_min_level = level;
}

int
cm_log_parse_level(const char *s, enum cm_log_level *out)
{
    size_t i;

    if (s == NULL) {
        return CM_E_BADARG;
    }
    for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum cm_log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = CM_LOG_WARN;
        return 0;
    }
    return CM_E_BADARG;
}

void
cm_log_write(enum cm_log_level level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    size_t off, cap = sizeof(line) - 1; /* keep room for '\n' */
    int n, saved_errno = errno;
    const char *lname;
    ssize_t w;

    if ((unsigned)level > CM_LOG_ERROR) {
        level = CM_LOG_ERROR;
    }
    lname = level_names[level];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                 lname, log_component);
    off = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap);

    va_start(ap, fmt);
    n = vsnprintf(line + off, cap - off, fmt, ap);
    va_end(ap);
    if (n < 0) {
        n = 0;
    }
    if ((size_t)n >= cap - off) {
        off = cap - 1;
        memcpy(line + off - 3, "...", 3);
    } else {
        off += (size_t)n;
    }
    /* A message must stay one line. */
    for (size_t i = 0; i < off; i++) {
        if (line[i] == '\n' || line[i] == '\r') {
            line[i] = ' ';
        }
    }
    line[off++] = '\n';
    do {
        w = write(STDERR_FILENO, line, off);
    } while (w < 0 && errno == EINTR);
    errno = saved_errno;
}
