/*
 * cm_err.h - the one error space of Shoal.
 *
 * Functions return 0 or a negative code: -errno where one exists, the
 * project codes below beyond that. The list is an X-macro so the enum and
 * the names/messages never drift apart.
 */
#ifndef CM_ERR_H
#define CM_ERR_H

#define CM_ERRORS(X)                                              \
    X(CM_E_PROTO, 1001, "protocol", "malformed frame")            \
    X(CM_E_CRC, 1002, "crc", "checksum mismatch")                 \
    X(CM_E_NOTFOUND, 1003, "not_found", "not found")              \
    X(CM_E_TOOBIG, 1004, "too_large", "too large")                \
    X(CM_E_UNAVAIL, 1005, "unavailable", "not enough holders")    \
    X(CM_E_STALE, 1006, "stale", "stale incarnation")             \
    X(CM_E_BUSY, 1007, "busy", "queue full")                      \
    X(CM_E_CONFIG, 1008, "config", "bad configuration")           \
    X(CM_E_TIMEOUT, 1009, "timeout", "timed out")                 \
    X(CM_E_BADARG, 1010, "bad_argument", "bad argument")          \
    X(CM_E_EXISTS, 1011, "exists", "already exists")

enum cm_err {
    CM_OK = 0,
#define CM_ERR_ENUM_(name, val, id, msg) name = -(val),
    CM_ERRORS(CM_ERR_ENUM_)
#undef CM_ERR_ENUM_
};

/* Short stable identifier ("crc", "ENOENT"...); static string. */
const char *cm_errname(int err);
/* Human message; static string (strerror for -errno). */
const char *cm_strerror(int err);

#endif
