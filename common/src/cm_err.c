/*
 * cm_err.c - names and messages for the one error space (cm_err.h).
 *
 * Project codes come from the CM_ERRORS X-macro; anything else negative is
 * taken as -errno and described by libc. Every returned string is static.
 */
#include <string.h>

#include "cm_err.h"

const char *
cm_errname(int err)
{
    const char *name;

    if (err == 0) {
        return "ok";
    }
    switch (err) {
#define CM_ERR_NAME_(n, val, id, msg)                                                              \
    case n:                                                                                        \
        return id;
        CM_ERRORS(CM_ERR_NAME_)
#undef CM_ERR_NAME_
    default:
        break;
    }
    if (err < 0) {
        /* glibc >= 2.32; NULL for numbers it does not know. */
        name = strerrorname_np(-err);
        if (name != NULL) {
            return name;
        }
    }
    return "unknown";
}

const char *
cm_strerror(int err)
{
    const char *msg;

    if (err == 0) {
        return "success";
    }
    switch (err) {
#define CM_ERR_MSG_(n, val, id, m)                                                                 \
    case n:                                                                                        \
        return m;
        CM_ERRORS(CM_ERR_MSG_)
#undef CM_ERR_MSG_
    default:
        break;
    }
    if (err < 0) {
        /* strerrordesc_np, unlike strerror, is thread-safe and static. */
        msg = strerrordesc_np(-err);
        if (msg != NULL) {
            return msg;
        }
    }
    return "unknown error";
}
