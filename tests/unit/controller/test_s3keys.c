/*
 * test_s3keys.c - tenants' S3 keys (controller/ctl_s3keys.c): kDate against
 * the AWS documented example, UTC dates, minting, sealing (round trip, wrong
 * master key, every altered field), store records, the master key file
 * (created 0600, refused when others may read it), and, over a real LMDB
 * store, the state operations: the per-tenant cap, ids unique across
 * tenants, epochs, the date window and its daily roll, a tenant's deletion,
 * a restart, no secret anywhere in the store's files, and master key
 * rotation, also when cut short.
 */
#include "t_check.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_log.h"
#include "ctl_s3keys.h"
#include "ctl_state.h"
#include "ctl_store.h"

#define MS 1000000ull
/* 2012-02-15 12:00:00 UTC, and its day. */
#define NOON_20120215_MS 1329307200000ull
#define DAY_20120215 15385

static void
hexs(const uint8_t *b, char out[65])
{
    cm_hex(b, 32, out);
}

static void
test_date_key(void)
{
    static const char secret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    uint8_t k[32], r[32], s[32], g[32];
    char hex[65];
    char ymd[9];

    /* AWS General Reference, "Examples of how to derive a signing key for
     * Signature Version 4": date 20120215, region us-east-1, service iam. */
    CHECK_EQ_INT(ctl_s3_date_key(secret, strlen(secret), "20120215", k), 0);
    hexs(k, hex);
    CHECK_EQ_STR(hex, "969fbb94feb542b71ede6f87fe4d5fa29c789342b0f407474670f0c2489e0a0d");
    /* What a gateway derives from it: the same example's later steps. */
    cm_hmac_sha256(k, 32, "us-east-1", 9, r);
    cm_hmac_sha256(r, 32, "iam", 3, s);
    cm_hmac_sha256(s, 32, "aws4_request", 12, g);
    hexs(r, hex);
    CHECK_EQ_STR(hex, "69daa0209cd9c5ff5c8ced464a696fd4252e981430b10e3d3fd8e2f197d7a70c");
    hexs(g, hex);
    CHECK_EQ_STR(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
    /* Another date is another key. */
    CHECK_EQ_INT(ctl_s3_date_key(secret, strlen(secret), "20120216", r), 0);
    CHECK(memcmp(k, r, 32) != 0);
    {
        char big[CTL_S3_SECRET_MAX + 2];

        memset(big, 'x', sizeof(big));
        CHECK_EQ_INT(ctl_s3_date_key(big, CTL_S3_SECRET_MAX, "20120215", r), 0);
        CHECK_EQ_INT(ctl_s3_date_key(big, CTL_S3_SECRET_MAX + 1, "20120215", r), CM_E_BADARG);
    }

    CHECK_EQ_INT(ctl_s3_day(NOON_20120215_MS), DAY_20120215);
    CHECK_EQ_INT(ctl_s3_day(1329350399999ull), DAY_20120215); /* 23:59:59.999 */
    CHECK_EQ_INT(ctl_s3_day(1329350400000ull), DAY_20120215 + 1);
    ctl_s3_ymd(0, ymd);
    CHECK_EQ_STR(ymd, "19700101");
    ctl_s3_ymd(DAY_20120215, ymd);
    CHECK_EQ_STR(ymd, "20120215");
    ctl_s3_ymd(11016, ymd);
    CHECK_EQ_STR(ymd, "20000229");
    ctl_s3_ymd(20088, ymd);
    CHECK_EQ_STR(ymd, "20241231");
    ctl_s3_ymd(20089, ymd);
    CHECK_EQ_STR(ymd, "20250101");
    ctl_s3_ymd(47541, ymd);
    CHECK_EQ_STR(ymd, "21000301"); /* 2100 is not a leap year */
}

static void
master_of(uint8_t seed, struct ctl_s3master *m)
{
    uint8_t key[CTL_S3_MASTER_LEN];

    for (int i = 0; i < CTL_S3_MASTER_LEN; i++) {
        key[i] = (uint8_t)(seed + 31 * i);
    }
    ctl_s3_master_init(m, key);
}

static void
test_ids(void)
{
    CHECK(ctl_s3_valid_id("AKABCDEFGHIJKLMNOPQR", 20));
    CHECK(ctl_s3_valid_id("AK234567ZZZZZZZZZZZZ", 20));
    CHECK(!ctl_s3_valid_id("AKABCDEFGHIJKLMNOPQ", 19));
    CHECK(!ctl_s3_valid_id("AKABCDEFGHIJKLMNOPQRS", 21));
    CHECK(!ctl_s3_valid_id("AXABCDEFGHIJKLMNOPQR", 20));
    CHECK(!ctl_s3_valid_id("AKABCDEFGHIJKLMNOPQ1", 20)); /* 0, 1, 8, 9 are not base32 */
    CHECK(!ctl_s3_valid_id("AKabcdefghijklmnopqr", 20));
    CHECK(!ctl_s3_valid_id("AKABCDEFGH\0JKLMNOPQR", 20));
    CHECK(!ctl_s3_valid_id("AKABCDEFGHIJKLMNOP/R", 20));
    CHECK(!ctl_s3_valid_id(NULL, 0));
}

/* A store record with the given fields (NULL leaves one out). */
static void
record(char *out, size_t cap, const char *tenant, const char *created, const char *kid,
       const char *nonce, const char *sealed, const char *tag)
{
    const char *names[6] = {"tenant", "created_ms", "kid", "nonce", "sealed", "tag"};
    const char *vals[6] = {tenant, created, kid, nonce, sealed, tag};
    size_t off = (size_t)snprintf(out, cap, "{\"future\":true");

    for (int i = 0; i < 6; i++) {
        if (vals[i] != NULL) {
            off += (size_t)snprintf(out + off, cap - off, ",\"%s\":%s", names[i], vals[i]);
        }
    }
    snprintf(out + off, cap - off, "}");
}

static void
test_bad_records(const char *id)
{
    static const char kid[] = "\"0123456789abcdef\"";
    static const char nonce[] = "\"000000000000000000000000\"";
    static const char sealed[] = "\"0000000000000000000000000000000000000000"
                                 "0000000000000000000000000000000000000000\"";
    static const char tag[] = "\"00000000000000000000000000000000\"";
    static const char *const raw[] = {"", "[]", "{}", "null", "{\"tenant\":1"};
    struct ctl_s3key t;
    char rec[512];

    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
        CHECK_EQ_INT(ctl_s3key_decode(id, CTL_S3_ID_LEN, raw[i], strlen(raw[i]), &t), CM_E_CONFIG);
    }
    /* Unknown fields are ignored (records may grow). */
    record(rec, sizeof(rec), "1", "1", kid, nonce, sealed, tag);
    CHECK_EQ_INT(ctl_s3key_decode(id, CTL_S3_ID_LEN, rec, strlen(rec), &t), 0);
    CHECK(t.tenant == 1 && t.created_ms == 1 && strcmp(t.kid, "0123456789abcdef") == 0);
    CHECK_EQ_INT(ctl_s3key_decode("AKABCDEFGHIJKLMNOPQ1", CTL_S3_ID_LEN, rec, strlen(rec), &t),
                 CM_E_CONFIG);
    /* Each field missing or wrong in turn. */
    {
        const char *cases[][6] = {
            {NULL, "1", kid, nonce, sealed, tag},
            {"0", "1", kid, nonce, sealed, tag},
            {"4294967295", "1", kid, nonce, sealed, tag},
            {"\"1\"", "1", kid, nonce, sealed, tag},
            {"1", NULL, kid, nonce, sealed, tag},
            {"1", "-1", kid, nonce, sealed, tag},
            {"1", "1", "\"0123456789ABCDEF\"", nonce, sealed, tag},
            {"1", "1", "\"0123456789abcde\"", nonce, sealed, tag},
            {"1", "1", kid, "\"0000000000000000000000\"", sealed, tag},
            {"1", "1", kid, NULL, sealed, tag},
            {"1", "1", kid, nonce, "\"00\"", tag},
            {"1", "1", kid, nonce, sealed, "7"},
            {"1", "1", kid, nonce, sealed, "\"0000000000000000000000000000000g\""},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            record(rec, sizeof(rec), cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                   cases[i][4], cases[i][5]);
            CHECK_EQ_INT(ctl_s3key_decode(id, CTL_S3_ID_LEN, rec, strlen(rec), &t), CM_E_CONFIG);
        }
    }
}

static void
test_seal(void)
{
    struct ctl_s3master m, other, forged;
    struct ctl_s3key k, k2, t;
    char secret[CTL_S3_SECRET_LEN + 1], secret2[CTL_S3_SECRET_LEN + 1], out[CTL_S3_SECRET_LEN + 1];
    char *rec;

    master_of(1, &m);
    master_of(2, &other);
    CHECK(strlen(m.kid) == CTL_S3_KID_LEN && strcmp(m.kid, other.kid) != 0);
    CHECK_EQ_INT(ctl_s3key_mint(&m, 7, 1234, &k, secret), 0);
    CHECK(ctl_s3_valid_id(k.id, strlen(k.id)));
    CHECK_EQ_INT(strlen(secret), CTL_S3_SECRET_LEN);
    for (int i = 0; i < CTL_S3_SECRET_LEN; i++) {
        CHECK(isalnum((unsigned char)secret[i]) || secret[i] == '+' || secret[i] == '/');
    }
    CHECK(k.tenant == 7 && k.created_ms == 1234 && strcmp(k.kid, m.kid) == 0);
    CHECK(memcmp(k.sealed, secret, CTL_S3_SECRET_LEN) != 0);
    CHECK_EQ_INT(ctl_s3key_mint(&m, 7, 1234, &k2, secret2), 0);
    CHECK(strcmp(k.id, k2.id) != 0 && strcmp(secret, secret2) != 0);
    CHECK(memcmp(k.nonce, k2.nonce, CTL_S3_NONCE_LEN) != 0);

    CHECK_EQ_INT(ctl_s3key_unseal(&m, &k, out), 0);
    CHECK_EQ_STR(out, secret);
    /* Another master key: refused by its name, and by the box if the name
     * is forged. */
    CHECK_EQ_INT(ctl_s3key_unseal(&other, &k, out), CM_E_CONFIG);
    CHECK_EQ_STR(out, "");
    forged = other;
    memcpy(forged.kid, m.kid, sizeof(forged.kid));
    CHECK_EQ_INT(ctl_s3key_unseal(&forged, &k, out), CM_E_CRC);
    CHECK_EQ_STR(out, "");
    /* Every altered field. */
    for (int f = 0; f < 5; f++) {
        t = k;
        switch (f) {
        case 0:
            t.sealed[17] ^= 0x20;
            break;
        case 1:
            t.tag[3] ^= 1;
            break;
        case 2:
            t.nonce[0] ^= 0x80;
            break;
        case 3:
            t.tenant = 8; /* moved to another tenant */
            break;
        default:
            memcpy(t.id, k2.id, sizeof(t.id)); /* moved onto another key */
            break;
        }
        CHECK_EQ_INT(ctl_s3key_unseal(&m, &t, out), CM_E_CRC);
        CHECK_EQ_STR(out, "");
    }
    /* A sealed secret copied onto another key's record does not open. */
    t = k2;
    memcpy(t.nonce, k.nonce, sizeof(t.nonce));
    memcpy(t.sealed, k.sealed, sizeof(t.sealed));
    memcpy(t.tag, k.tag, sizeof(t.tag));
    CHECK_EQ_INT(ctl_s3key_unseal(&m, &t, out), CM_E_CRC);

    /* Records: round trip, nothing secret in them, malformed ones refused. */
    rec = ctl_s3key_encode(&k);
    CHECK(rec != NULL && strstr(rec, secret) == NULL);
    CHECK_EQ_INT(ctl_s3key_decode(k.id, CTL_S3_ID_LEN, rec, strlen(rec), &t), 0);
    CHECK(memcmp(&t, &k, sizeof(t)) == 0);
    CHECK_EQ_INT(ctl_s3key_unseal(&m, &t, out), 0);
    CHECK_EQ_STR(out, secret);
    CHECK_EQ_INT(ctl_s3key_decode("AKshort", 7, rec, strlen(rec), &t), CM_E_CONFIG);
    CHECK_EQ_INT(ctl_s3key_decode(k.id, CTL_S3_ID_LEN, rec, strlen(rec) - 1, &t), CM_E_CONFIG);
    free(rec);
    test_bad_records(k.id);
}

static void
test_master_file(const char *dir)
{
    struct ctl_s3master m, m2;
    char path[512], buf[128];
    struct stat sb;
    FILE *f;

    snprintf(path, sizeof(path), "%s/secrets.key", dir);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m), 0);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    f = fopen(path, "r");
    CHECK(f != NULL && fgets(buf, sizeof(buf), f) != NULL);
    fclose(f);
    CHECK_EQ_INT(strlen(buf), 65); /* 64 hex digits and a newline */
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), 0);
    CHECK(memcmp(&m, &m2, sizeof(m)) == 0);
    CHECK(chmod(path, 0644) == 0);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), CM_E_CONFIG);
    CHECK(chmod(path, 0640) == 0);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), CM_E_CONFIG);
    CHECK(chmod(path, 0602) == 0);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), CM_E_CONFIG);
    CHECK(chmod(path, 0400) == 0);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), 0);
    CHECK(memcmp(&m, &m2, sizeof(m)) == 0);

    snprintf(path, sizeof(path), "%s/short.key", dir);
    f = fopen(path, "w");
    CHECK(f != NULL && fputs("abcdef\n", f) >= 0);
    fclose(f);
    CHECK(chmod(path, 0600) == 0);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), CM_E_CONFIG);
    CHECK_EQ_INT(ctl_s3_master_load(dir, &m2) < 0, 1); /* a directory */
    snprintf(path, sizeof(path), "%s/nodir/secrets.key", dir);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), -ENOENT);

    ctl_s3_default_key_path("/var/lib/shoal/controller", path, sizeof(path));
    CHECK_EQ_STR(path, "/var/lib/shoal/secrets.key");
    ctl_s3_default_key_path("/var/lib/shoal/controller//", path, sizeof(path));
    CHECK_EQ_STR(path, "/var/lib/shoal/secrets.key");
    ctl_s3_default_key_path("data", path, sizeof(path));
    CHECK_EQ_STR(path, "secrets.key");
    ctl_s3_default_key_path("a/data", path, sizeof(path));
    CHECK_EQ_STR(path, "a/secrets.key");
    ctl_s3_default_key_path("/data", path, sizeof(path));
    CHECK_EQ_STR(path, "/secrets.key");
}

/* ---- over the state ---- */

static struct ctl_state *
open_state(const char *dir, const struct ctl_s3master *m, struct ctl_store **store, int *rc)
{
    struct ctl_state_cfg cfg = {16, 4, 2, 3000 * MS, m};
    struct ctl_state *st = NULL;

    CHECK_EQ_INT(ctl_store_open(dir, store), 0);
    *rc = ctl_state_create(*store, &cfg, &st);
    return st;
}

static uint64_t
epoch_of(struct ctl_state *st)
{
    struct ctl_snapshot s;
    uint64_t e;

    ctl_state_snapshot(st, 1000 * MS, &s);
    e = s.epoch;
    ctl_snapshot_fini(&s);
    return e;
}

/* The grant of id in x, or NULL. */
static const struct ctl_s3grant *
grant_of(const struct ctl_s3export *x, const char *id)
{
    for (size_t i = 0; i < x->n; i++) {
        if (strcmp(x->keys[i].id, id) == 0) {
            return &x->keys[i];
        }
    }
    return NULL;
}

/* Every date key of id in x is kDate of secret for its date. */
static void
check_window(const struct ctl_s3export *x, const char *id, const char *secret)
{
    const struct ctl_s3grant *g = grant_of(x, id);
    uint8_t want[32];
    char ymd[9];

    CHECK(g != NULL);
    for (int d = 0; d < CTL_S3_NDATES; d++) {
        ctl_s3_ymd(x->first_day + d, ymd);
        CHECK_EQ_INT(ctl_s3_date_key(secret, strlen(secret), ymd, want), 0);
        CHECK(memcmp(g->date_key[d], want, 32) == 0);
    }
}

/* 1 if needle occurs in any file of dir. */
static int
dir_holds(const char *dir, const char *needle)
{
    static const char *const files[] = {"data.mdb", "lock.mdb"};
    int found = 0;

    for (size_t i = 0; i < 2; i++) {
        char path[512];
        FILE *f;
        char *buf;
        long len;

        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        f = fopen(path, "rb");
        if (f == NULL) {
            continue;
        }
        CHECK(fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
        buf = malloc((size_t)len + 1);
        CHECK(buf != NULL && fread(buf, 1, (size_t)len, f) == (size_t)len);
        fclose(f);
        found |= memmem(buf, (size_t)len, needle, strlen(needle)) != NULL;
        free(buf);
    }
    return found;
}

static void
test_state(const char *dir)
{
    struct ctl_s3master m, other;
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_tenant t;
    struct ctl_s3key k, keys[CTL_S3_MAX_PER_TENANT], *list;
    struct ctl_s3export x, y;
    char secrets[CTL_S3_MAX_PER_TENANT][CTL_S3_SECRET_LEN + 1], secret[CTL_S3_SECRET_LEN + 1];
    char tkey[CTL_KEY_LEN + 1], ymd[9];
    size_t n;
    uint64_t e;
    int rc;

    master_of(1, &m);
    master_of(2, &other);
    st = open_state(dir, &m, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "beta", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "ghost", 5, &k, secret), CM_E_NOTFOUND);

    /* Up to the cap, one epoch per key; ids unique across tenants. */
    e = epoch_of(st);
    for (int i = 0; i < CTL_S3_MAX_PER_TENANT; i++) {
        CHECK_EQ_INT(ctl_s3_create(st, "alpha", 1000 + (uint64_t)i, &keys[i], secrets[i]), 0);
        CHECK(keys[i].tenant == 1 && keys[i].created_ms == 1000 + (uint64_t)i);
        CHECK_EQ_INT(strlen(secrets[i]), CTL_S3_SECRET_LEN);
        CHECK(epoch_of(st) == e + 1 + (uint64_t)i);
    }
    e = epoch_of(st);
    CHECK_EQ_INT(ctl_s3_create(st, "alpha", 99, &k, secret), CM_E_TOOBIG);
    CHECK_EQ_STR(secret, "");
    CHECK(epoch_of(st) == e);
    CHECK_EQ_INT(ctl_s3_create(st, "beta", 2000, &k, secret), 0);
    CHECK(k.tenant == 2);
    for (int i = 0; i < CTL_S3_MAX_PER_TENANT; i++) {
        CHECK(strcmp(k.id, keys[i].id) != 0);
        for (int j = 0; j < i; j++) {
            CHECK(strcmp(keys[i].id, keys[j].id) != 0);
        }
    }
    CHECK_EQ_INT(ctl_s3_list(st, "alpha", &list, &n), 0);
    CHECK_EQ_INT(n, CTL_S3_MAX_PER_TENANT);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_STR(list[i].id, keys[i].id);
    }
    free(list);
    CHECK_EQ_INT(ctl_s3_list(st, "ghost", &list, &n), CM_E_NOTFOUND);
    free(list);

    /* Deleting: not through another tenant, not twice. */
    e = epoch_of(st);
    CHECK_EQ_INT(ctl_s3_delete(st, "beta", keys[0].id), CM_E_NOTFOUND);
    CHECK_EQ_INT(ctl_s3_delete(st, "alpha", k.id), CM_E_NOTFOUND);
    CHECK_EQ_INT(ctl_s3_delete(st, "alpha", "AKAAAAAAAAAAAAAAAAAA"), CM_E_NOTFOUND);
    CHECK(epoch_of(st) == e);
    CHECK_EQ_INT(ctl_s3_delete(st, "alpha", keys[0].id), 0);
    CHECK(epoch_of(st) == e + 1);
    CHECK_EQ_INT(ctl_s3_delete(st, "alpha", keys[0].id), CM_E_NOTFOUND);
    CHECK_EQ_INT(ctl_s3_create(st, "alpha", 3000, &keys[0], secrets[0]), 0); /* room again */

    /* The window: from 7 days back to tomorrow, kDate of each secret. */
    e = epoch_of(st);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    CHECK(epoch_of(st) == e); /* the first window after start is no change */
    CHECK_EQ_INT(x.first_day, DAY_20120215 - 7);
    ctl_s3_ymd(x.first_day, ymd);
    CHECK_EQ_STR(ymd, "20120208");
    ctl_s3_ymd(x.first_day + CTL_S3_NDATES - 1, ymd);
    CHECK_EQ_STR(ymd, "20120216");
    CHECK_EQ_INT(x.n, CTL_S3_MAX_PER_TENANT + 1);
    for (int i = 0; i < CTL_S3_MAX_PER_TENANT; i++) {
        check_window(&x, keys[i].id, secrets[i]);
        CHECK(grant_of(&x, keys[i].id)->tenant == 1);
    }
    check_window(&x, k.id, secret);
    CHECK(grant_of(&x, k.id)->tenant == 2);
    /* Same day: same window, no new epoch. A key created now gets the
     * current window at once. */
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS + 11 * 3600 * 1000ull, &y), 0);
    CHECK(y.first_day == x.first_day && epoch_of(st) == e);
    ctl_s3_export_fini(&y);
    CHECK_EQ_INT(ctl_s3_delete(st, "beta", k.id), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "beta", 4000, &k, secret), 0);
    e = epoch_of(st);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &y), 0);
    check_window(&y, k.id, secret);
    ctl_s3_export_fini(&y);
    /* Next day: the window moves by one date and the epoch grows once. */
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS + CTL_S3_DAY_MS, &y), 0);
    CHECK(epoch_of(st) == e + 1);
    CHECK_EQ_INT(y.first_day, x.first_day + 1);
    for (int i = 0; i < CTL_S3_MAX_PER_TENANT; i++) {
        const struct ctl_s3grant *a = grant_of(&x, keys[i].id), *b = grant_of(&y, keys[i].id);

        CHECK(memcmp(b->date_key[0], a->date_key[1], 32 * (CTL_S3_NDATES - 1)) == 0);
        check_window(&y, keys[i].id, secrets[i]);
    }
    ctl_s3_export_fini(&y);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS + CTL_S3_DAY_MS, &y), 0);
    CHECK(epoch_of(st) == e + 1);
    ctl_s3_export_fini(&y);
    ctl_s3_export_fini(&x);

    /* Nothing in the store's files gives a secret away. */
    for (int i = 0; i < CTL_S3_MAX_PER_TENANT; i++) {
        CHECK(!dir_holds(dir, secrets[i]));
        CHECK(dir_holds(dir, keys[i].id)); /* the check can see what is there */
    }
    CHECK(!dir_holds(dir, secret));

    /* A restart keeps the keys, and they still open. */
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &m, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_s3_list(st, "alpha", &list, &n), 0);
    CHECK_EQ_INT(n, CTL_S3_MAX_PER_TENANT);
    free(list);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    check_window(&x, keys[5].id, secrets[5]);
    check_window(&x, k.id, secret);
    ctl_s3_export_fini(&x);

    /* A tenant's deletion takes its keys, in memory and on disk. */
    CHECK_EQ_INT(ctl_state_tenant_delete(st, "alpha"), 0);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    CHECK_EQ_INT(x.n, 1);
    CHECK_EQ_STR(x.keys[0].id, k.id);
    ctl_s3_export_fini(&x);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_s3_list(st, "alpha", &list, &n), 0);
    CHECK_EQ_INT(n, 0);
    free(list);
    ctl_state_destroy(st);
    ctl_store_close(store);
    st = open_state(dir, &m, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    CHECK_EQ_INT(x.n, 1);
    ctl_s3_export_fini(&x);
    ctl_state_destroy(st);
    ctl_store_close(store);

    /* Another master key, or none, cannot start on these keys. */
    st = open_state(dir, &other, &store, &rc);
    CHECK(st == NULL && rc == CM_E_CONFIG);
    ctl_store_close(store);
    st = open_state(dir, NULL, &store, &rc);
    CHECK(st == NULL && rc == CM_E_CONFIG);
    ctl_store_close(store);
}

static void
slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n;

    CHECK(f != NULL);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void
spill(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

/* Opens the state under the key in path and checks every key's window. */
static void
check_opens(const char *dir, const char *path, int nkeys, struct ctl_s3key *keys,
            char (*secrets)[CTL_S3_SECRET_LEN + 1])
{
    struct ctl_s3master m;
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_s3export x;
    int rc;

    CHECK_EQ_INT(ctl_s3_master_load(path, &m), 0);
    st = open_state(dir, &m, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    CHECK_EQ_INT(x.n, nkeys);
    for (int i = 0; i < nkeys; i++) {
        check_window(&x, keys[i].id, secrets[i]);
    }
    ctl_s3_export_fini(&x);
    ctl_state_destroy(st);
    ctl_store_close(store);
}

static void
test_rotate(const char *dir)
{
    struct ctl_s3master m, m2;
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_tenant t;
    struct ctl_s3key keys[3];
    char secrets[3][CTL_S3_SECRET_LEN + 1], tkey[CTL_KEY_LEN + 1];
    char path[512], newpath[520], k0[128], k1[128], k2[128], k3[128];
    struct stat sb;
    int rc;

    CHECK(mkdir(dir, 0700) == 0);
    CHECK(snprintf(path, sizeof(path), "%s/secrets.key", dir) < (int)sizeof(path));
    snprintf(newpath, sizeof(newpath), "%s.new", path);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m), 0);
    slurp(path, k0, sizeof(k0));
    st = open_state(dir, &m, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "beta", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "alpha", 1, &keys[0], secrets[0]), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "alpha", 2, &keys[1], secrets[1]), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "beta", 3, &keys[2], secrets[2]), 0);
    ctl_state_destroy(st);

    /* A rotation: a new key in the file, every record under it. */
    CHECK_EQ_INT(ctl_s3_rotate(store, path), 0);
    ctl_store_close(store);
    slurp(path, k1, sizeof(k1));
    CHECK(strlen(k1) == 65 && strcmp(k0, k1) != 0);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    CHECK(access(newpath, F_OK) != 0);
    check_opens(dir, path, 3, keys, secrets);
    st = open_state(dir, &m, &store, &rc); /* the old key no longer opens them */
    CHECK(st == NULL && rc == CM_E_CONFIG);
    CHECK(!dir_holds(dir, secrets[0]) && !dir_holds(dir, secrets[2]));

    /* Cut short after the commit, before the rename: the records are under
     * NEW, the file still holds the old key. A second run finishes it. */
    CHECK_EQ_INT(ctl_s3_rotate(store, path), 0);
    slurp(path, k2, sizeof(k2));
    CHECK(strcmp(k2, k1) != 0);
    spill(newpath, k2);
    spill(path, k1);
    ctl_store_close(store);
    CHECK_EQ_INT(ctl_s3_master_load(path, &m2), 0);
    st = open_state(dir, &m2, &store, &rc);
    CHECK(st == NULL && rc == CM_E_CONFIG);
    CHECK_EQ_INT(ctl_s3_rotate(store, path), 0);
    ctl_store_close(store);
    slurp(path, k3, sizeof(k3));
    CHECK_EQ_STR(k3, k2);
    CHECK(access(newpath, F_OK) != 0);
    check_opens(dir, path, 3, keys, secrets);

    /* Cut short before the commit: NEW exists, nothing moved yet. */
    spill(newpath, "00000000000000000000000000000000000000000000000000000000000000aa\n");
    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_s3_rotate(store, path), 0);
    ctl_store_close(store);
    slurp(path, k3, sizeof(k3));
    CHECK_EQ_STR(k3, "00000000000000000000000000000000000000000000000000000000000000aa\n");
    check_opens(dir, path, 3, keys, secrets);

    /* A key file that opens nothing: refused, nothing changed. */
    spill(path, k0);
    CHECK_EQ_INT(ctl_store_open(dir, &store), 0);
    CHECK_EQ_INT(ctl_s3_rotate(store, path), CM_E_CONFIG);
    ctl_store_close(store);
    CHECK(access(newpath, F_OK) != 0);
    spill(path, k3);
    check_opens(dir, path, 3, keys, secrets);
}

static void
test_no_master(const char *dir)
{
    struct ctl_store *store;
    struct ctl_state *st;
    struct ctl_tenant t;
    struct ctl_s3key k;
    struct ctl_s3export x;
    char secret[CTL_S3_SECRET_LEN + 1], tkey[CTL_KEY_LEN + 1];
    int rc;

    st = open_state(dir, NULL, &store, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ctl_state_tenant_create(st, "alpha", 1.0, 0, -1, 1, 0, tkey, &t), 0);
    CHECK_EQ_INT(ctl_s3_create(st, "alpha", 1, &k, secret), CM_E_CONFIG);
    CHECK_EQ_INT(ctl_s3_export(st, NOON_20120215_MS, &x), 0);
    CHECK_EQ_INT(x.n, 0);
    ctl_s3_export_fini(&x);
    ctl_state_destroy(st);
    ctl_store_close(store);
}

int
main(void)
{
    char *dir = t_tmpdir();
    char sub[512];

    cm_log_init("test", CM_LOG_ERROR);
    test_date_key();
    test_ids();
    test_seal();
    test_master_file(dir);
    snprintf(sub, sizeof(sub), "%s/state", dir);
    test_state(sub);
    snprintf(sub, sizeof(sub), "%s/nomaster", dir);
    test_no_master(sub);
    snprintf(sub, sizeof(sub), "%s/rotate", dir);
    test_rotate(sub);
    t_rmtree(dir);
    return 0;
}
