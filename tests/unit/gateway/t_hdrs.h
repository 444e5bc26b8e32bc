/*
 * t_hdrs.h - request headers for the S3 unit tests: (name, value) pairs in
 * kv[], looked up by any case as the HTTP layer does (gw_s3_hdr_fn).
 */
#ifndef T_HDRS_H
#define T_HDRS_H

#include <string.h>
#include <strings.h>

struct t_hdrs {
    const char *kv[64]; /* name, value, name, value... */
    int n;
};

static inline const char *
t_hdr_get(void *arg, const char *lname)
{
    struct t_hdrs *h = arg;

    for (int i = 0; i < h->n; i++) {
        if (strcasecmp(h->kv[2 * i], lname) == 0) {
            return h->kv[2 * i + 1];
        }
    }
    return NULL;
}

/* Sets (replaces) a header; the strings are borrowed. */
static inline void
t_hdr_set(struct t_hdrs *h, const char *name, const char *value)
{
    for (int i = 0; i < h->n; i++) {
        if (strcasecmp(h->kv[2 * i], name) == 0) {
            h->kv[2 * i + 1] = value;
            return;
        }
    }
    h->kv[2 * h->n] = name;
    h->kv[2 * h->n + 1] = value;
    h->n++;
}

static inline void
t_hdr_del(struct t_hdrs *h, const char *name)
{
    for (int i = 0; i < h->n; i++) {
        if (strcasecmp(h->kv[2 * i], name) == 0) {
            h->n--;
            h->kv[2 * i] = h->kv[2 * h->n];
            h->kv[2 * i + 1] = h->kv[2 * h->n + 1];
            return;
        }
    }
}

#endif
