/*
 * ctl_s3keys.c - tenants' S3 access keys: minting, sealing, the master key
 * file, the store record, and the per-day SigV4 date keys (see
 * ctl_s3keys.h for the picture and the invariants).
 *
 * Sealing: AES-256-GCM under the master key with a fresh random 96-bit
 * nonce per key (one seal per key, far below GCM's 2^32 random-nonce
 * bound), the associated data binding the box to its access key id and
 * tenant: a sealed secret moved onto another record does not open.
 *
 * Date keys are derived for the whole window when the UTC day changes (or
 * at the first export after start) and kept: one unseal and nine HMACs per
 * key per day, not per state poll.
 */
#include "ctl_s3keys.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cm_buf.h"
#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "cm_token.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define ID_PREFIX "AK"
#define SECRET_BYTES 30 /* base64: exactly CTL_S3_SECRET_LEN chars, no padding */
#define AAD_TAG "shoal-s3-secret"
#define AAD_LEN (sizeof(AAD_TAG) + CTL_S3_ID_LEN + 4)
#define MINT_TRIES 8

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ---- hex ---- */

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

/* 0 if s is exactly 2n lowercase hex digits, decoded into out[n]. */
static int
unhex(const char *s, size_t slen, uint8_t *out, size_t n)
{
    if (slen != 2 * n) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* ---- the master key ---- */

void
ctl_s3_master_init(struct ctl_s3master *m, const uint8_t key[CTL_S3_MASTER_LEN])
{
    static const char label[] = "shoal s3 master key id";
    uint8_t mac[32];
    char hex[65];

    memcpy(m->key, key, CTL_S3_MASTER_LEN);
    cm_hmac_sha256(key, CTL_S3_MASTER_LEN, label, sizeof(label) - 1, mac);
    cm_hex(mac, sizeof(mac), hex);
    memcpy(m->kid, hex, CTL_S3_KID_LEN);
    m->kid[CTL_S3_KID_LEN] = '\0';
}

int
ctl_s3_master_load(const char *path, struct ctl_s3master *m)
{
    char hex[2 * CTL_S3_MASTER_LEN + 2];
    uint8_t key[CTL_S3_MASTER_LEN];
    struct stat sb;
    int rc;

    memset(m, 0, sizeof(*m));
    /* The admin token's file format and creation (O_EXCL, 0600, 32 random
     * bytes as hex) are exactly a 256-bit key's. */
    rc = cm_token_load(path, 1, hex, sizeof(hex));
    if (rc < 0) {
        CM_ERROR("secrets key file unusable path=%s err=%s", path, cm_strerror(rc));
        goto out;
    }
    if (stat(path, &sb) != 0) {
        rc = -errno;
        CM_ERROR("secrets key file unusable path=%s err=%s", path, cm_strerror(rc));
        goto out;
    }
    if (!S_ISREG(sb.st_mode) || (sb.st_mode & 077) != 0) {
        rc = CM_E_CONFIG;
        CM_ERROR("secrets key file must be a regular file that only its owner can read "
                 "(chmod 600) path=%s mode=%03o",
                 path, (unsigned)(sb.st_mode & 0777));
        goto out;
    }
    if (unhex(hex, strlen(hex), key, sizeof(key)) < 0) {
        rc = CM_E_CONFIG;
        CM_ERROR("secrets key file must hold 64 lowercase hex digits path=%s", path);
        goto out;
    }
    ctl_s3_master_init(m, key);
out:
    explicit_bzero(hex, sizeof(hex));
    explicit_bzero(key, sizeof(key));
    return rc;
}

void
ctl_s3_default_key_path(const char *data_dir, char *out, size_t cap)
{
    size_t len = strlen(data_dir);
    const char *slash;

    while (len > 1 && data_dir[len - 1] == '/') {
        len--;
    }
    slash = memrchr(data_dir, '/', len);
    if (slash == NULL) {
        snprintf(out, cap, "secrets.key");
    } else if (slash == data_dir) {
        snprintf(out, cap, "/secrets.key");
    } else {
        snprintf(out, cap, "%.*s/secrets.key", (int)(slash - data_dir), data_dir);
    }
}

/* ---- keys ---- */

int
ctl_s3_valid_id(const char *s, size_t len)
{
    if (s == NULL || len != CTL_S3_ID_LEN || memcmp(s, ID_PREFIX, 2) != 0) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (s[i] == '\0' || strchr(b32, s[i]) == NULL) {
            return 0;
        }
    }
    return 1;
}

static void
aad_of(const struct ctl_s3key *k, uint8_t aad[AAD_LEN])
{
    memcpy(aad, AAD_TAG, sizeof(AAD_TAG)); /* with its NUL: a separator */
    memcpy(aad + sizeof(AAD_TAG), k->id, CTL_S3_ID_LEN);
    aad[AAD_LEN - 4] = (uint8_t)(k->tenant >> 24);
    aad[AAD_LEN - 3] = (uint8_t)(k->tenant >> 16);
    aad[AAD_LEN - 2] = (uint8_t)(k->tenant >> 8);
    aad[AAD_LEN - 1] = (uint8_t)k->tenant;
}

static void
base64(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    out[o] = '\0';
}

/* Seals secret into k (id and tenant set) under m, with a fresh nonce. */
static int
seal(const struct ctl_s3master *m, struct ctl_s3key *k, const char *secret)
{
    uint8_t aad[AAD_LEN];
    int rc = cm_random_bytes(k->nonce, sizeof(k->nonce));

    if (rc < 0) {
        return rc;
    }
    memcpy(k->kid, m->kid, sizeof(k->kid));
    aad_of(k, aad);
    return cm_aead_seal(m->key, k->nonce, aad, sizeof(aad), secret, CTL_S3_SECRET_LEN, k->sealed,
                        k->tag);
}

int
ctl_s3key_mint(const struct ctl_s3master *m, uint32_t tenant, uint64_t now_ms, struct ctl_s3key *k,
               char secret[CTL_S3_SECRET_LEN + 1])
{
    uint8_t rnd[CTL_S3_ID_LEN - 2], sb[SECRET_BYTES];
    int rc;

    memset(k, 0, sizeof(*k));
    secret[0] = '\0';
    if ((rc = cm_random_bytes(rnd, sizeof(rnd))) < 0 ||
        (rc = cm_random_bytes(sb, sizeof(sb))) < 0) {
        goto out;
    }
    memcpy(k->id, ID_PREFIX, 2);
    for (size_t i = 0; i < sizeof(rnd); i++) {
        k->id[2 + i] = b32[rnd[i] & 31]; /* 256 is a multiple of 32: uniform */
    }
    base64(sb, sizeof(sb), secret);
    k->tenant = tenant;
    k->created_ms = now_ms;
    rc = seal(m, k, secret);
out:
    explicit_bzero(sb, sizeof(sb));
    if (rc < 0) {
        explicit_bzero(secret, CTL_S3_SECRET_LEN + 1);
    }
    return rc;
}

int
ctl_s3key_unseal(const struct ctl_s3master *m, const struct ctl_s3key *k,
                 char secret[CTL_S3_SECRET_LEN + 1])
{
    uint8_t aad[AAD_LEN];
    int rc;

    memset(secret, 0, CTL_S3_SECRET_LEN + 1);
    if (strcmp(k->kid, m->kid) != 0) {
        return CM_E_CONFIG;
    }
    aad_of(k, aad);
    rc = cm_aead_open(m->key, k->nonce, aad, sizeof(aad), k->sealed, CTL_S3_SECRET_LEN, k->tag,
                      secret);
    secret[CTL_S3_SECRET_LEN] = '\0';
    return rc;
}

int64_t
ctl_s3_day(uint64_t wall_ms)
{
    return (int64_t)(wall_ms / CTL_S3_DAY_MS);
}

void
ctl_s3_ymd(int64_t day, char out[9])
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        snprintf(out, 9, "00000000");
        return;
    }
    /* the modulos only tell the compiler the widths gmtime_r keeps to */
    snprintf(out, 9, "%04u%02u%02u", (unsigned)(tm.tm_year + 1900) % 10000u,
             (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u);
}

int
ctl_s3_date_key(const char *secret, size_t len, const char *ymd, uint8_t out[32])
{
    char k[4 + CTL_S3_SECRET_MAX];

    if (len > CTL_S3_SECRET_MAX) {
        return CM_E_BADARG;
    }
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, len);
    cm_hmac_sha256(k, 4 + len, ymd, strlen(ymd), out);
    explicit_bzero(k, sizeof(k));
    return 0;
}

/* ---- the store record ---- */

char *
ctl_s3key_encode(const struct ctl_s3key *k)
{
    char nonce[2 * CTL_S3_NONCE_LEN + 1], sealed[2 * CTL_S3_SECRET_LEN + 1];
    char tag[2 * CTL_S3_TAG_LEN + 1];
    json_t *j;
    char *text;

    cm_hex(k->nonce, sizeof(k->nonce), nonce);
    cm_hex(k->sealed, sizeof(k->sealed), sealed);
    cm_hex(k->tag, sizeof(k->tag), tag);
    j = json_pack("{s:I, s:I, s:s, s:s, s:s, s:s}", "tenant", (json_int_t)k->tenant, "created_ms",
                  (json_int_t)k->created_ms, "kid", k->kid, "nonce", nonce, "sealed", sealed, "tag",
                  tag);
    text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return text;
}

/* 0 if o[name] is a string of exactly 2n lowercase hex digits, into out[n]. */
static int
hex_field(json_t *o, const char *name, uint8_t *out, size_t n)
{
    json_t *v = json_object_get(o, name);

    if (!json_is_string(v)) {
        return -1;
    }
    return unhex(json_string_value(v), json_string_length(v), out, n);
}

int
ctl_s3key_decode(const void *id, size_t idlen, const void *rec, size_t len, struct ctl_s3key *k)
{
    json_t *j = json_loadb(rec, len, 0, NULL);
    json_t *tenant, *created, *kid;
    uint8_t kidb[CTL_S3_KID_LEN / 2];
    int rc = CM_E_CONFIG;

    memset(k, 0, sizeof(*k));
    if (!json_is_object(j) || !ctl_s3_valid_id(id, idlen)) {
        goto out;
    }
    memcpy(k->id, id, CTL_S3_ID_LEN);
    tenant = json_object_get(j, "tenant");
    created = json_object_get(j, "created_ms");
    kid = json_object_get(j, "kid");
    if (!json_is_integer(tenant) || json_integer_value(tenant) < 1 ||
        json_integer_value(tenant) >= UINT32_MAX || !json_is_integer(created) ||
        json_integer_value(created) < 0 || !json_is_string(kid) ||
        unhex(json_string_value(kid), json_string_length(kid), kidb, sizeof(kidb)) < 0 ||
        hex_field(j, "nonce", k->nonce, sizeof(k->nonce)) < 0 ||
        hex_field(j, "sealed", k->sealed, sizeof(k->sealed)) < 0 ||
        hex_field(j, "tag", k->tag, sizeof(k->tag)) < 0) {
        goto out;
    }
    k->tenant = (uint32_t)json_integer_value(tenant);
    k->created_ms = (uint64_t)json_integer_value(created);
    memcpy(k->kid, json_string_value(kid), CTL_S3_KID_LEN);
    rc = 0;
out:
    json_decref(j);
    if (rc < 0) {
        memset(k, 0, sizeof(*k));
    }
    return rc;
}

/* ---- the set ---- */

struct s3entry {
    struct ctl_s3key k;
    int derived; /* dk holds the window from set->first_day */
    uint8_t dk[CTL_S3_NDATES][32];
};

struct ctl_s3set {
    int have_master;
    struct ctl_s3master master;
    int64_t first_day; /* window of every derived dk; INT64_MIN until the first export */
    size_t n;
    struct s3entry *e; /* creation order; (created, id) order after a restart */
};

/* The window of date keys from first_day, from the secret in clear. */
static void
derive(struct s3entry *e, const char *secret, int64_t first_day)
{
    char ymd[9];

    for (int i = 0; i < CTL_S3_NDATES; i++) {
        ctl_s3_ymd(first_day + i, ymd);
        (void)ctl_s3_date_key(secret, CTL_S3_SECRET_LEN, ymd, e->dk[i]);
    }
    e->derived = 1;
}

static int
set_unseal(const struct ctl_s3set *set, const struct ctl_s3key *k, char *secret)
{
    int rc = set->have_master ? ctl_s3key_unseal(&set->master, k, secret) : CM_E_CONFIG;

    if (rc == CM_E_CONFIG) {
        CM_ERROR("s3 key sealed under another secrets key access_key=%s tenant=%u kid=%s "
                 "file_kid=%s",
                 k->id, k->tenant, k->kid, set->have_master ? set->master.kid : "none");
    } else if (rc < 0) {
        CM_ERROR("s3 key does not open (altered record or wrong secrets key) access_key=%s "
                 "tenant=%u err=%s",
                 k->id, k->tenant, cm_strerror(rc));
    }
    return rc;
}

/* Oldest first, ties by id: the order of listings, stable across restarts. */
static int
key_cmp(const void *a, const void *b)
{
    const struct ctl_s3key *x = a, *y = b;

    if (x->created_ms != y->created_ms) {
        return x->created_ms < y->created_ms ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

int
ctl_s3set_create(const struct ctl_s3master *m, struct ctl_s3key *keys, size_t n,
                 struct ctl_s3set **out)
{
    struct ctl_s3set *set = cm_calloc(1, sizeof(*set));
    char secret[CTL_S3_SECRET_LEN + 1];
    int rc = 0;

    set->first_day = INT64_MIN;
    if (m != NULL) {
        set->master = *m;
        set->have_master = 1;
    }
    set->e = cm_calloc(n + 1, sizeof(*set->e));
    if (n > 0) {
        qsort(keys, n, sizeof(*keys), key_cmp);
    }
    for (size_t i = 0; i < n; i++) {
        /* Opened now so that a wrong key file stops the start, not a gateway. */
        rc = set_unseal(set, &keys[i], secret);
        if (rc < 0) {
            rc = CM_E_CONFIG;
            break;
        }
        set->e[set->n++].k = keys[i];
    }
    explicit_bzero(secret, sizeof(secret));
    free(keys);
    if (rc < 0) {
        ctl_s3set_destroy(set);
        set = NULL;
    }
    *out = set;
    return rc;
}

void
ctl_s3set_destroy(struct ctl_s3set *set)
{
    if (set == NULL) {
        return;
    }
    explicit_bzero(set->e, set->n * sizeof(*set->e));
    free(set->e);
    explicit_bzero(set, sizeof(*set));
    free(set);
}

static struct s3entry *
set_find(struct ctl_s3set *set, const char *id)
{
    for (size_t i = 0; i < set->n; i++) {
        if (strcmp(set->e[i].k.id, id) == 0) {
            return &set->e[i];
        }
    }
    return NULL;
}

static void
set_remove(struct ctl_s3set *set, struct s3entry *e)
{
    size_t i = (size_t)(e - set->e);

    memmove(e, e + 1, (set->n - i - 1) * sizeof(*e));
    set->n--;
    explicit_bzero(&set->e[set->n], sizeof(*e));
}

void
ctl_s3set_drop_tenant(struct ctl_s3set *set, uint32_t tenant)
{
    size_t i = 0;

    while (i < set->n) {
        if (set->e[i].k.tenant == tenant) {
            set_remove(set, &set->e[i]);
        } else {
            i++;
        }
    }
}

/* Moves every key's window to the one of today: CTL_STATE_BUMP when a day
 * passed since the last window, 0 otherwise. */
static int
set_roll(struct ctl_s3set *set, int64_t today)
{
    int64_t first = today - CTL_S3_DAYS_BACK;
    int had = set->first_day != INT64_MIN;
    char secret[CTL_S3_SECRET_LEN + 1];

    if (first == set->first_day) {
        return 0;
    }
    for (size_t i = 0; i < set->n; i++) {
        struct s3entry *e = &set->e[i];

        e->derived = 0;
        if (set_unseal(set, &e->k, secret) == 0) {
            derive(e, secret, first);
        }
    }
    explicit_bzero(secret, sizeof(secret));
    set->first_day = first;
    if (had) {
        char ymd[9];

        ctl_s3_ymd(today, ymd);
        CM_INFO("s3 date keys rolled day=%s keys=%zu", ymd, set->n);
    }
    return had ? CTL_STATE_BUMP : 0;
}

/* ---- operations on the state ---- */

struct create_op {
    uint64_t now_ms;
    struct ctl_s3key *out;
    char *secret;
};

static int
create_fn(void *arg, const struct ctl_state_s3 *x)
{
    struct create_op *op = arg;
    struct ctl_s3set *set = x->set;
    struct ctl_s3key k;
    size_t count = 0;
    int rc, tries = 0;

    if (!set->have_master) {
        return CM_E_CONFIG;
    }
    for (size_t i = 0; i < set->n; i++) {
        count += set->e[i].k.tenant == x->tenant->id;
    }
    if (count >= CTL_S3_MAX_PER_TENANT) {
        return CM_E_TOOBIG;
    }
    do {
        rc = ctl_s3key_mint(&set->master, x->tenant->id, op->now_ms, &k, op->secret);
    } while (rc == 0 && set_find(set, k.id) != NULL && ++tries < MINT_TRIES);
    if (rc == 0 && tries == MINT_TRIES) {
        rc = CM_E_EXISTS; /* 2^90 ids: a broken random source */
    }
    if (rc == 0) {
        rc = ctl_store_put_s3keys(x->store, &k, 1, x->epoch + 1);
    }
    if (rc < 0) {
        explicit_bzero(op->secret, CTL_S3_SECRET_LEN + 1);
        return rc;
    }
    set->e = cm_realloc(set->e, (set->n + 1) * sizeof(*set->e));
    memset(&set->e[set->n], 0, sizeof(set->e[set->n]));
    set->e[set->n].k = k;
    if (set->first_day != INT64_MIN) {
        derive(&set->e[set->n], op->secret, set->first_day);
    }
    set->n++;
    *op->out = k;
    CM_INFO("s3 key created tenant=%u access_key=%s epoch=%llu", k.tenant, k.id,
            (unsigned long long)(x->epoch + 1));
    return CTL_STATE_STORED;
}

int
ctl_s3_create(struct ctl_state *st, const char *name, uint64_t now_ms, struct ctl_s3key *out,
              char secret[CTL_S3_SECRET_LEN + 1])
{
    struct create_op op = {now_ms, out, secret};

    secret[0] = '\0';
    return ctl_state_with_s3(st, name, create_fn, &op);
}

struct list_op {
    struct ctl_s3key *keys;
    size_t n;
};

static int
list_fn(void *arg, const struct ctl_state_s3 *x)
{
    struct list_op *op = arg;

    op->keys = cm_calloc(x->set->n + 1, sizeof(*op->keys));
    for (size_t i = 0; i < x->set->n; i++) {
        if (x->set->e[i].k.tenant == x->tenant->id) {
            op->keys[op->n++] = x->set->e[i].k;
        }
    }
    if (op->n > 0) {
        qsort(op->keys, op->n, sizeof(*op->keys), key_cmp); /* the clock may have gone back */
    }
    return 0;
}

int
ctl_s3_list(struct ctl_state *st, const char *name, struct ctl_s3key **keys, size_t *n)
{
    struct list_op op = {NULL, 0};
    int rc = ctl_state_with_s3(st, name, list_fn, &op);

    *keys = op.keys;
    *n = op.n;
    return rc;
}

static int
delete_fn(void *arg, const struct ctl_state_s3 *x)
{
    const char *id = arg;
    struct s3entry *e = set_find(x->set, id);
    int rc;

    if (e == NULL || e->k.tenant != x->tenant->id) {
        return CM_E_NOTFOUND;
    }
    rc = ctl_store_del_s3key(x->store, id, x->epoch + 1);
    if (rc < 0) {
        return rc;
    }
    set_remove(x->set, e);
    CM_INFO("s3 key deleted tenant=%u access_key=%s epoch=%llu", x->tenant->id, id,
            (unsigned long long)(x->epoch + 1));
    return CTL_STATE_STORED;
}

int
ctl_s3_delete(struct ctl_state *st, const char *name, const char *id)
{
    return ctl_state_with_s3(st, name, delete_fn, (void *)(uintptr_t)id);
}

struct export_op {
    int64_t today;
    struct ctl_s3export *out;
};

static int
export_fn(void *arg, const struct ctl_state_s3 *x)
{
    struct export_op *op = arg;
    struct ctl_s3set *set = x->set;
    int rc = set_roll(set, op->today);

    op->out->first_day = set->first_day;
    op->out->keys = cm_calloc(set->n + 1, sizeof(*op->out->keys));
    for (size_t i = 0; i < set->n; i++) {
        const struct s3entry *e = &set->e[i];
        struct ctl_s3grant *g = &op->out->keys[op->out->n];

        if (!e->derived) {
            continue; /* did not open: logged when the window moved */
        }
        memcpy(g->id, e->k.id, sizeof(g->id));
        g->tenant = e->k.tenant;
        memcpy(g->date_key, e->dk, sizeof(g->date_key));
        op->out->n++;
    }
    return rc;
}

int
ctl_s3_export(struct ctl_state *st, uint64_t now_ms, struct ctl_s3export *out)
{
    struct export_op op = {ctl_s3_day(now_ms), out};

    memset(out, 0, sizeof(*out));
    return ctl_state_with_s3(st, NULL, export_fn, &op);
}

void
ctl_s3_export_fini(struct ctl_s3export *x)
{
    if (x->keys != NULL) {
        explicit_bzero(x->keys, x->n * sizeof(*x->keys));
    }
    free(x->keys);
    memset(x, 0, sizeof(*x));
}

/* ---- master key rotation ---- */

/* fsync of the directory holding path, so a rename in it is durable. */
static int
sync_parent(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int fd, rc = 0;

    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        rc = -errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

int
ctl_s3_rotate(struct ctl_store *store, const char *path)
{
    struct ctl_s3master old, neu;
    struct ctl_store_state ss;
    char newpath[4096], secret[CTL_S3_SECRET_LEN + 1];
    int have_new, rc;
    size_t moved = 0;

    memset(&ss, 0, sizeof(ss));
    memset(&neu, 0, sizeof(neu));
    if (snprintf(newpath, sizeof(newpath), "%s.new", path) >= (int)sizeof(newpath)) {
        return CM_E_TOOBIG;
    }
    /* An interrupted rotation left NEW behind: reusing it makes a second run
     * finish the first, whether or not the first had committed. */
    have_new = access(newpath, F_OK) == 0;
    if ((rc = ctl_s3_master_load(path, &old)) < 0 ||
        (have_new && (rc = ctl_s3_master_load(newpath, &neu)) < 0) ||
        (rc = ctl_store_load(store, &ss)) < 0) {
        goto out;
    }
    /* Every record must open before anything is written. */
    for (size_t i = 0; i < ss.ns3keys; i++) {
        const struct ctl_s3key *k = &ss.s3keys[i];

        if ((!have_new || strcmp(k->kid, neu.kid) != 0) && ctl_s3key_unseal(&old, k, secret) < 0) {
            CM_ERROR("s3 key does not open under the secrets key file access_key=%s kid=%s "
                     "file_kid=%s path=%s",
                     k->id, k->kid, old.kid, path);
            rc = CM_E_CONFIG;
            goto out;
        }
    }
    if (!have_new && (rc = ctl_s3_master_load(newpath, &neu)) < 0) {
        goto out;
    }
    for (size_t i = 0; i < ss.ns3keys; i++) {
        struct ctl_s3key *k = &ss.s3keys[i];

        if (strcmp(k->kid, neu.kid) == 0) {
            continue;
        }
        if ((rc = ctl_s3key_unseal(&old, k, secret)) < 0 || (rc = seal(&neu, k, secret)) < 0) {
            goto out;
        }
        moved++;
    }
    rc = ctl_store_put_s3keys(store, ss.s3keys, ss.ns3keys, 0);
    if (rc == 0 && rename(newpath, path) != 0) {
        rc = -errno;
    }
    if (rc == 0) {
        rc = sync_parent(path);
    }
    if (rc < 0) {
        CM_ERROR("secrets key rotation failed path=%s err=%s", path, cm_strerror(rc));
        goto out;
    }
    CM_INFO("secrets key rotated path=%s old_kid=%s kid=%s keys=%zu resealed=%zu", path, old.kid,
            neu.kid, ss.ns3keys, moved);
out:
    explicit_bzero(secret, sizeof(secret));
    explicit_bzero(&old, sizeof(old));
    explicit_bzero(&neu, sizeof(neu));
    ctl_store_state_fini(&ss);
    return rc;
}
