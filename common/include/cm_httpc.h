/*
 * cm_httpc.h - a blocking HTTP client for control traffic (the libcurl
 * adapter). Call from background threads only. Thread-safe.
 */
#ifndef CM_HTTPC_H
#define CM_HTTPC_H

#include <stddef.h>

struct cm_httpc_resp {
    int status;   /* HTTP status */
    char *body;   /* malloc'd, NUL-terminated, transferred to the caller */
    size_t len;
};

/*
 * method "GET"/"POST"/"PATCH"/"DELETE"; url absolute; token adds
 * "Authorization: Bearer <token>" when non-NULL; body (JSON) may be NULL.
 * Returns 0 when an HTTP answer came back (any status), -ECONNREFUSED /
 * CM_E_TIMEOUT / -EIO when none did.
 */
int cm_httpc_request(const char *method, const char *url, const char *token,
                     const char *body, int timeout_ms, struct cm_httpc_resp *out);
void cm_httpc_resp_fini(struct cm_httpc_resp *r);

#endif
