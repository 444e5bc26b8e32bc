/* cm_token.h - the admin token file shared by the controller and daemons. */
#ifndef CM_TOKEN_H
#define CM_TOKEN_H

#include <stddef.h>

/* Reads the token (first line, trimmed) into out. If create is set and the
 * file is absent, writes a new random token with mode 0600 first. */
int cm_token_load(const char *path, int create, char *out, size_t cap);

#endif
