/* cm_gateway.h - the names a gateway goes by in the internal API, its id
 * and its URLs, checked by one set of rules on both sides: the gateway
 * before it starts, the controller at every state poll. */
#ifndef CM_GATEWAY_H
#define CM_GATEWAY_H

#include <stddef.h>

#define CM_GATEWAY_ID_MAX 64   /* characters of an id: [A-Za-z0-9._:-]{1,64} */
#define CM_GATEWAY_URL_MAX 127 /* characters of a URL, the scheme included */

/* 1 if s (len bytes) is a gateway id: 1 to CM_GATEWAY_ID_MAX of
 * [A-Za-z0-9._:-] (it is a JSON string, a log field and a table cell). */
int cm_gateway_id_valid(const char *s, size_t len);

/* 1 if s (len bytes) is a gateway URL: "http://" or "https://" and at
 * least one more character, at most CM_GATEWAY_URL_MAX in all, printable
 * ASCII without spaces, quotes or backslashes. */
int cm_gateway_url_valid(const char *s, size_t len);

#endif
