/*
 * cm_gateway.c - a gateway's id and URLs, as both the gateway and the
 * controller check them (see cm_gateway.h).
 */
#include "cm_gateway.h"

#include <string.h>

int
cm_gateway_id_valid(const char *s, size_t len)
{
    if (s == NULL || len == 0 || len > CM_GATEWAY_ID_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

int
cm_gateway_url_valid(const char *s, size_t len)
{
    size_t scheme;

    if (s == NULL || len > CM_GATEWAY_URL_MAX) {
        return 0;
    }
    if (len > 7 && strncmp(s, "http://", 7) == 0) {
        scheme = 7;
    } else if (len > 8 && strncmp(s, "https://", 8) == 0) {
        scheme = 8;
    } else {
        return 0;
    }
    /* Printable ASCII only: the URL is rendered into JSON, logs and tables
     * as it is, and JSON strings must be valid UTF-8. */
    for (size_t i = scheme; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\') {
            return 0;
        }
    }
    return 1;
}
