/*
 * cm_cos.c - the cloud object store front end (cm_cos.h).
 *
 * A cm_cos is a backend ops table plus that backend's state. The front end
 * owns what every backend shares: the name rules (checked here, before any
 * backend sees a name), the choice of backend by url, and the defaults of
 * the open settings. Backends are listed in one table; each lives in its
 * own file (cm_cos_fs.c, cm_cos_s3.c). Thread-safe as its backends are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_bytes.h"
#include "cm_cos.h"
#include "cm_cos_int.h"
#include "cm_err.h"
#include "cm_log.h"

struct cm_cos {
    const struct cm_cos_ops *ops;
    void *state;
};

/* ---- name rules, shared by every backend ---- */

static int
name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '/';
}

/* Checks the first len bytes of s; with whole, the last segment too
 * (a prefix may end mid-segment or with '/'). */
static int
segments_valid(const char *s, size_t len, int whole)
{
    size_t i, seg = 0;

    for (i = 0; i <= len; i++) {
        if (i == len && !whole) {
            break;
        }
        if (i == len || s[i] == '/') {
            size_t sl = i - seg;
            if (sl == 0 || (sl == 1 && s[seg] == '.') ||
                (sl == 2 && s[seg] == '.' && s[seg + 1] == '.')) {
                return 0;
            }
            seg = i + 1;
        } else if (!name_char_ok(s[i])) {
            return 0;
        }
    }
    return 1;
}

int
cm_cos_name_valid(const char *name)
{
    size_t len;

    if (name == NULL) {
        return 0;
    }
    len = strlen(name);
    return len > 0 && len <= CM_COS_NAME_MAX && segments_valid(name, len, 1);
}

/*
 * A prefix is a plain string filter and may end mid-segment or with '/';
 * its complete segments name the directory a listing starts from, so they
 * follow the name rules (no climbing out of the root).
 */
int
cm_cos_prefix_valid(const char *prefix)
{
    size_t len = strlen(prefix);

    return len <= CM_COS_NAME_MAX && segments_valid(prefix, len, 0);
}

/* ---- backends ---- */

/* Chosen by url prefix; anything else is a directory path. */
static const struct {
    const char *prefix;
    const struct cm_cos_ops *ops;
} cos_backends[] = {
    {"s3://", &cm_cos_s3_ops},
    {"fs:", &cm_cos_fs_ops},
};

static const struct cm_cos_ops *
cos_backend(const char *url)
{
    size_t i;

    for (i = 0; i < sizeof(cos_backends) / sizeof(cos_backends[0]); i++) {
        if (strncmp(url, cos_backends[i].prefix, strlen(cos_backends[i].prefix)) == 0) {
            return cos_backends[i].ops;
        }
    }
    return &cm_cos_fs_ops;
}

static int
cos_errf(char *err, size_t errlen, int rc, const char *msg)
{
    if (errlen > 0) {
        snprintf(err, errlen, "%s", msg);
    }
    return rc;
}

int
cm_cos_url_check(const char *url, char *err, size_t errlen)
{
    struct cm_s3_url u;
    const char *id, *secret;
    int rc;

    if (url == NULL || url[0] == '\0') {
        return cos_errf(err, errlen, CM_E_BADARG, "cos url: empty");
    }
    if (cos_backend(url) != &cm_cos_s3_ops) {
        if (strcmp(url, "fs:") == 0 || strcmp(url, "fs://") == 0) {
            return cos_errf(err, errlen, CM_E_BADARG, "cos url: fs: needs a directory");
        }
        if (strstr(url, "://") != NULL && strncmp(url, "fs:", 3) != 0) {
            return cos_errf(err, errlen, CM_E_BADARG,
                            "cos url: unknown scheme (want a directory, fs:/dir or s3://)");
        }
        return 0;
    }
    rc = cm_s3_url_parse(url, &u, err, errlen);
    if (rc != 0) {
        return rc;
    }
    id = getenv("AWS_ACCESS_KEY_ID");
    secret = getenv("AWS_SECRET_ACCESS_KEY");
    if (id == NULL || id[0] == '\0' || secret == NULL || secret[0] == '\0') {
        return cos_errf(err, errlen, CM_E_CONFIG,
                        "cos url: s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
                        "environment");
    }
    return 0;
}

int
cm_cos_open(const char *url, struct cm_cos **out)
{
    return cm_cos_open_opts(url, NULL, out);
}

int
cm_cos_open_opts(const char *url, const struct cm_cos_opts *opts, struct cm_cos **out)
{
    struct cm_cos_opts o = {0};
    const struct cm_cos_ops *ops;
    struct cm_cos *cos;
    void *state = NULL;
    char err[256];
    int ret;

    *out = NULL;
    ret = cm_cos_url_check(url, err, sizeof(err));
    if (ret != 0) {
        CM_ERROR("cos: %s", err);
        return ret;
    }
    if (opts != NULL) {
        o = *opts;
    }
    o.connect_timeout_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 5000;
    o.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 60000;
    o.tries = o.tries > 0 ? o.tries : 6;
    o.backoff_ms = o.backoff_ms > 0 ? o.backoff_ms : 100;
    o.backoff_cap_ms = o.backoff_cap_ms > 0 ? o.backoff_cap_ms : 5000;
    ops = cos_backend(url);
    ret = ops->open(url, &o, &state);
    if (ret != 0) {
        return ret;
    }
    cos = cm_calloc(1, sizeof(*cos));
    cos->ops = ops;
    cos->state = state;
    *out = cos;
    return 0;
}

void
cm_cos_close(struct cm_cos *cos)
{
    if (cos == NULL) {
        return;
    }
    cos->ops->close(cos->state);
    free(cos);
}

int
cm_cos_put(struct cm_cos *cos, const char *name, const void *data, size_t len)
{
    if (!cm_cos_name_valid(name)) {
        return CM_E_BADARG;
    }
    return cos->ops->put(cos->state, name, data, len);
}

void
cm_cos_put_batch(struct cm_cos *cos, struct cm_cos_item *items, size_t n)
{
    size_t i, valid = 0;

    for (i = 0; i < n; i++) {
        items[i].rc = cm_cos_name_valid(items[i].name) ? 0 : CM_E_BADARG;
        valid += items[i].rc == 0;
    }
    if (cos->ops->put_batch == NULL || valid < n) {
        for (i = 0; i < n; i++) {
            if (items[i].rc == 0) {
                items[i].rc = cos->ops->put(cos->state, items[i].name, items[i].data, items[i].len);
            }
        }
        return;
    }
    cos->ops->put_batch(cos->state, items, n);
}

int
cm_cos_get(struct cm_cos *cos, const char *name, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (!cm_cos_name_valid(name)) {
        return CM_E_BADARG;
    }
    return cos->ops->get(cos->state, name, data, len);
}

int
cm_cos_get_range(struct cm_cos *cos, const char *name, uint64_t off, size_t len, void **data,
                 size_t *got)
{
    *data = NULL;
    *got = 0;
    if (!cm_cos_name_valid(name) || off > INT64_MAX - len) {
        return CM_E_BADARG;
    }
    return cos->ops->get_range(cos->state, name, off, len, data, got);
}

int
cm_cos_can_append(const struct cm_cos *cos)
{
    return cos->ops->append != NULL;
}

int
cm_cos_append(struct cm_cos *cos, const char *name, const void *data, size_t len, uint64_t *off)
{
    *off = 0;
    if (!cm_cos_name_valid(name)) {
        return CM_E_BADARG;
    }
    if (cos->ops->append == NULL) {
        return -EOPNOTSUPP;
    }
    return cos->ops->append(cos->state, name, data, len, off);
}

void
cm_cos_append_end(struct cm_cos *cos, const char *name)
{
    if (cos->ops->append_end != NULL && cm_cos_name_valid(name)) {
        cos->ops->append_end(cos->state, name);
    }
}

int
cm_cos_delete(struct cm_cos *cos, const char *name)
{
    if (!cm_cos_name_valid(name)) {
        return CM_E_BADARG;
    }
    return cos->ops->del(cos->state, name);
}

int
cm_cos_list(struct cm_cos *cos, const char *prefix, int (*cb)(void *arg, const char *name),
            void *arg)
{
    if (prefix == NULL) {
        prefix = "";
    }
    if (!cm_cos_prefix_valid(prefix)) {
        return CM_E_BADARG;
    }
    return cos->ops->list(cos->state, prefix, cb, arg);
}

void
cm_cos_seq_name(char *buf, size_t cap, const char *kind, uint32_t node, uint64_t seq)
{
    snprintf(buf, cap, "%s/n%" PRIu32 "/%016" PRIx64, kind, node, seq);
}

int
cm_cos_seq_parse(const char *name, const char *kind, uint32_t node, uint64_t *seq)
{
    char want[64];
    size_t pl;
    uint64_t v = 0;

    snprintf(want, sizeof(want), "%s/n%" PRIu32 "/", kind, node);
    pl = strlen(want);
    if (strncmp(name, want, pl) != 0 || strlen(name + pl) != 16) {
        return CM_E_BADARG;
    }
    for (const char *c = name + pl; *c; c++) {
        int d = cm_hexval(*c);

        if (d < 0 || (*c >= 'A' && *c <= 'F')) { /* names are lower case */
            return CM_E_BADARG;
        }
        v = v << 4 | (uint64_t)d;
    }
    if (v == 0) {
        return CM_E_BADARG;
    }
    *seq = v;
    return 0;
}
