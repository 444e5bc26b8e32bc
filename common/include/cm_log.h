/*
 * cm_log.h - one line per event on stderr:
 *   2026-11-30T03:40:00.123Z info gateway put done tenant=3 req=ab12 ms=1.2
 * The level is checked before any formatting. Thread-safe: each line is one
 * write(2).
 */
#ifndef CM_LOG_H
#define CM_LOG_H

enum cm_log_level { CM_LOG_DEBUG, CM_LOG_INFO, CM_LOG_WARN, CM_LOG_ERROR };

extern enum cm_log_level cm_log_min_level;

/* component is borrowed for the process lifetime (a string literal). */
void cm_log_init(const char *component, enum cm_log_level level);
/* "debug" | "info" | "warn" | "error"; 0 or CM_E_BADARG. */
int cm_log_parse_level(const char *s, enum cm_log_level *out);
void cm_log_write(enum cm_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define cm_log(level, ...)                        \
    do {                                          \
        if ((level) >= cm_log_min_level) {        \
            cm_log_write((level), __VA_ARGS__);   \
        }                                         \
    } while (0)
#define CM_DEBUG(...) cm_log(CM_LOG_DEBUG, __VA_ARGS__)
#define CM_INFO(...) cm_log(CM_LOG_INFO, __VA_ARGS__)
#define CM_WARN(...) cm_log(CM_LOG_WARN, __VA_ARGS__)
#define CM_ERROR(...) cm_log(CM_LOG_ERROR, __VA_ARGS__)

#endif
