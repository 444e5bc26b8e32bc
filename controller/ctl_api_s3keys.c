/*
 * ctl_api_s3keys.c - tenants' S3 access keys on the admin API (API.md) and
 * their part of the state gateways poll (docs/internal-api.md):
 *
 *   POST   /v1/tenants/{name}/s3-keys       201 {"access_key_id","secret_access_key","created"}
 *   GET    /v1/tenants/{name}/s3-keys       200 {"s3_keys":[{"access_key_id","created"}]}
 *   DELETE /v1/tenants/{name}/s3-keys/{id}  204
 *   GET    /v1/internal/state               ..."s3_keys":[{"access_key_id","tenant_id",
 *                                                          "date_keys":{"YYYYMMDD":hex}}]
 *
 * The secret appears in the POST answer only; listings never carry it, and
 * the state carries date keys instead (ctl_s3keys.h).
 *
 * Threads: the cm_http threads; every handler answers its call once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_time.h"
#include "ctl_api_impl.h"
#include "ctl_s3keys.h"
#include "ctl_state.h"

/* "2006-01-02T15:04:05Z" (UTC), as S3 dates its keys. */
static void
iso8601(uint64_t ms, char out[21])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
        snprintf(out, 21, "1970-01-01T00:00:00Z");
    }
}

static void
reply_error(struct ctl_call *c, int rc, const char *name, const char *id)
{
    if (rc == CM_E_NOTFOUND && id != NULL) {
        ctl_reply_error(c, 404, "not_found", "tenant %s has no S3 key %s", name, id);
    } else if (rc == CM_E_NOTFOUND) {
        ctl_reply_error(c, 404, "not_found", "no tenant named %s", name);
    } else if (rc == CM_E_TOOBIG) {
        ctl_reply_error(c, 409, "conflict",
                        "tenant %s already has %d S3 keys, the most it may have; delete one first",
                        name, CTL_S3_MAX_PER_TENANT);
    } else if (rc == CM_E_CONFIG) {
        ctl_reply_error(c, 500, "internal", "S3 keys are not set up on this controller");
    } else {
        ctl_reply_error(c, 500, "internal", "S3 key update failed: %s", cm_strerror(rc));
    }
}

void
ctl_admin_s3keys_create(struct ctl_call *c, const char *name)
{
    struct ctl_s3key k;
    char secret[CTL_S3_SECRET_LEN + 1], created[21];
    int rc = ctl_s3_create(c->a->st, name, cm_wall_ms(), &k, secret);

    if (rc < 0) {
        reply_error(c, rc, name, NULL);
        return;
    }
    iso8601(k.created_ms, created);
    ctl_reply_json(c, 201,
                   json_pack("{s:s, s:s, s:s, s:s}", "access_key_id", k.id, "secret_access_key",
                             secret, "created", created, "tenant", name));
    explicit_bzero(secret, sizeof(secret));
}

void
ctl_admin_s3keys_list(struct ctl_call *c, const char *name)
{
    struct ctl_s3key *keys;
    size_t n;
    json_t *arr;
    int rc = ctl_s3_list(c->a->st, name, &keys, &n);

    if (rc < 0) {
        free(keys);
        reply_error(c, rc, name, NULL);
        return;
    }
    arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char created[21];

        iso8601(keys[i].created_ms, created);
        json_array_append_new(
            arr, json_pack("{s:s, s:s}", "access_key_id", keys[i].id, "created", created));
    }
    free(keys);
    ctl_reply_json(c, 200, json_pack("{s:o}", "s3_keys", arr));
}

void
ctl_admin_s3keys_delete(struct ctl_call *c, const char *name, const char *id)
{
    int rc;

    if (!ctl_s3_valid_id(id, strlen(id))) {
        ctl_reply_error(c, 400, "bad_request",
                        "access key id must be AK followed by 18 of A-Z and 2-7");
        return;
    }
    rc = ctl_s3_delete(c->a->st, name, id);
    if (rc < 0) {
        reply_error(c, rc, name, id);
        return;
    }
    ctl_reply_raw(c, 204, "application/json", NULL, 0);
}

int
ctl_s3_render_state(struct ctl_state *st, uint64_t now_ms, json_t *state)
{
    struct ctl_s3export x;
    char dates[CTL_S3_NDATES][9], hex[65];
    json_t *arr;
    int rc = ctl_s3_export(st, now_ms, &x);

    if (rc < 0) {
        return rc;
    }
    for (int d = 0; d < CTL_S3_NDATES; d++) {
        ctl_s3_ymd(x.first_day + d, dates[d]);
    }
    arr = json_array();
    for (size_t i = 0; i < x.n; i++) {
        json_t *dk = json_object();

        for (int d = 0; d < CTL_S3_NDATES; d++) {
            cm_hex(x.keys[i].date_key[d], 32, hex);
            json_object_set_new(dk, dates[d], json_string(hex));
        }
        json_array_append_new(arr, json_pack("{s:s, s:I, s:o}", "access_key_id", x.keys[i].id,
                                             "tenant_id", (json_int_t)x.keys[i].tenant, "date_keys",
                                             dk));
    }
    explicit_bzero(hex, sizeof(hex));
    ctl_s3_export_fini(&x);
    return json_object_set_new(state, "s3_keys", arr) == 0 ? 0 : -ENOMEM;
}
