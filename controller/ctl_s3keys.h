/*
 * ctl_s3keys.h - tenants' S3 access keys (private to controller/): minting,
 * sealing each secret under the master key, and the SigV4 date keys that
 * gateways get instead of secrets.
 *
 *   POST s3-keys ─▶ mint: id + secret (CSPRNG) ─▶ seal: AES-256-GCM under the
 *                   │                              master key (its own 0600 file)
 *                   └─▶ secret in the answer, once  └─▶ ctl_store "s3keys"
 *   state render ─▶ once per UTC day: open each secret ─▶ kDate for the dates
 *                   day-7 .. day+1 ─▶ "s3_keys" of /v1/internal/state
 *
 * kDate = HMAC-SHA256("AWS4" + secret, "YYYYMMDD") is the first step of the
 * SigV4 signing key; the gateway derives kRegion, kService and kSigning
 * from it. A copy of the controller's LMDB holds only sealed secrets, and a
 * gateway's cached state only keys that sign for those nine dates.
 *
 * Invariants: a secret is in clear in memory only while it is minted or its
 * date keys derived, and is wiped after; access key ids are unique across
 * tenants; a tenant has at most CTL_S3_MAX_PER_TENANT keys; every stored
 * key opens under the master key (ctl_state refuses to start otherwise).
 *
 * Threads: the key set (struct ctl_s3set) has no lock of its own: it lives
 * in ctl_state and is only touched under the state lock (ctl_state_with_s3).
 * ctl_s3_create/list/delete/export may be called from any thread. The other
 * functions are pure but for randomness and the key file.
 */
#ifndef CTL_S3KEYS_H
#define CTL_S3KEYS_H

#include <stddef.h>
#include <stdint.h>

#define CTL_S3_ID_LEN 20      /* "AK" + 18 of [A-Z2-7] */
#define CTL_S3_SECRET_LEN 40  /* base64 of 30 random bytes */
#define CTL_S3_SECRET_MAX 128 /* longest secret ctl_s3_date_key takes (others' keys) */
#define CTL_S3_MAX_PER_TENANT 16
#define CTL_S3_DAYS_BACK 7  /* presigned URLs live up to 7 days */
#define CTL_S3_DAYS_AHEAD 1 /* clients whose clock runs ahead of ours */
#define CTL_S3_NDATES (CTL_S3_DAYS_BACK + 1 + CTL_S3_DAYS_AHEAD)
#define CTL_S3_MASTER_LEN 32
#define CTL_S3_KID_LEN 16 /* hex chars naming a master key */
#define CTL_S3_NONCE_LEN 12
#define CTL_S3_TAG_LEN 16
#define CTL_S3_DAY_MS 86400000ull

struct ctl_state;

struct ctl_s3master {
    uint8_t key[CTL_S3_MASTER_LEN];
    char kid[CTL_S3_KID_LEN + 1]; /* a name for the key that reveals nothing of it */
};

/* One key as stored: the secret only sealed. */
struct ctl_s3key {
    char id[CTL_S3_ID_LEN + 1];
    uint32_t tenant;
    uint64_t created_ms;          /* wall clock */
    char kid[CTL_S3_KID_LEN + 1]; /* the master key that sealed it */
    uint8_t nonce[CTL_S3_NONCE_LEN];
    uint8_t sealed[CTL_S3_SECRET_LEN];
    uint8_t tag[CTL_S3_TAG_LEN];
};

/* What a gateway gets for one key. */
struct ctl_s3grant {
    char id[CTL_S3_ID_LEN + 1];
    uint32_t tenant;
    uint8_t date_key[CTL_S3_NDATES][32]; /* kDate of the day first_day + i */
};

/* Every key's grant for one window; keys owned by the struct. */
struct ctl_s3export {
    int64_t first_day; /* days since 1970-01-01 UTC: today - CTL_S3_DAYS_BACK */
    size_t n;
    struct ctl_s3grant *keys; /* creation order */
};

/* ---- the master key ---- */

/* m from 32 key bytes (borrowed). */
void ctl_s3_master_init(struct ctl_s3master *m, const uint8_t key[CTL_S3_MASTER_LEN]);
/*
 * Reads the master key file (64 hex digits on the first line), creating it
 * with a random key and mode 0600 first if it is absent. CM_E_CONFIG if it
 * is not a regular file, grants any access to group or others, or does not
 * hold a key; -errno if it cannot be created or read. Logs why.
 */
int ctl_s3_master_load(const char *path, struct ctl_s3master *m);
/* The default key file of a data dir: "secrets.key" in its parent
 * directory, outside what a copy of the data dir takes along. */
void ctl_s3_default_key_path(const char *data_dir, char *out, size_t cap);

/* ---- keys ---- */

/* 1 if s[len] has the form of an access key id we mint, else 0. */
int ctl_s3_valid_id(const char *s, size_t len);
/* A new key of tenant: *k (sealed under m) and secret (shown once, NUL
 * terminated). 0 or a negative code. */
int ctl_s3key_mint(const struct ctl_s3master *m, uint32_t tenant, uint64_t now_ms,
                   struct ctl_s3key *k, char secret[CTL_S3_SECRET_LEN + 1]);
/* The secret of k: 0, CM_E_CONFIG if k names another master key, CM_E_CRC
 * if it does not open (altered record). secret zeroed on failure. */
int ctl_s3key_unseal(const struct ctl_s3master *m, const struct ctl_s3key *k,
                     char secret[CTL_S3_SECRET_LEN + 1]);

/* The UTC day of a wall-clock time, and a day as "YYYYMMDD". */
int64_t ctl_s3_day(uint64_t wall_ms);
void ctl_s3_ymd(int64_t day, char out[9]);
/* kDate = HMAC-SHA256("AWS4" + secret, ymd): 0, or CM_E_BADARG for a
 * secret over CTL_S3_SECRET_MAX bytes. */
int ctl_s3_date_key(const char *secret, size_t len, const char *ymd, uint8_t out[32]);

/* The store's record of k (JSON, malloc'd, caller frees; NULL if out of
 * memory), and back: CM_E_CONFIG if id or the record is malformed. */
char *ctl_s3key_encode(const struct ctl_s3key *k);
int ctl_s3key_decode(const void *id, size_t idlen, const void *rec, size_t len,
                     struct ctl_s3key *k);

/*
 * Re-seals every stored S3 secret under a new master key, then puts that key
 * in path (the old one is gone). The new key is made in path + ".new" first
 * and the records move in one transaction before the rename, so a run cut
 * short at any point is finished by running it again. The controller must
 * be stopped (main.c holds the data dir's lock). 0 or a negative code.
 */
struct ctl_store;
int ctl_s3_rotate(struct ctl_store *store, const char *path);

/* ---- the set ctl_state keeps (under its lock) ---- */

struct ctl_s3set;

/* keys[n] (malloc'd) is transferred, also on failure. m (copied) may be
 * NULL: then no key can be created, and stored keys fail the call.
 * CM_E_CONFIG (logged) if a stored key does not open under m. */
int ctl_s3set_create(const struct ctl_s3master *m, struct ctl_s3key *keys, size_t n,
                     struct ctl_s3set **out);
void ctl_s3set_destroy(struct ctl_s3set *set); /* NULL is a no-op; wipes */
/* Forgets the keys of a deleted tenant (the store drops them with it). */
void ctl_s3set_drop_tenant(struct ctl_s3set *set, uint32_t tenant);

/* ---- operations on the state (take its lock) ---- */

/* A new key of tenant name: *out and secret (shown once). CM_E_NOTFOUND (no
 * such tenant), CM_E_TOOBIG (it has CTL_S3_MAX_PER_TENANT keys),
 * CM_E_CONFIG (no master key), or a store error; the epoch grows. */
int ctl_s3_create(struct ctl_state *st, const char *name, uint64_t now_ms, struct ctl_s3key *out,
                  char secret[CTL_S3_SECRET_LEN + 1]);
/* The keys of tenant name, oldest first: *keys malloc'd (caller frees). */
int ctl_s3_list(struct ctl_state *st, const char *name, struct ctl_s3key **keys, size_t *n);
/* CM_E_NOTFOUND if tenant name has no key id (or there is no such tenant). */
int ctl_s3_delete(struct ctl_state *st, const char *name, const char *id);
/* Every key's date keys for the UTC day of now_ms (derived once per day; a
 * new day grows the epoch). Free with ctl_s3_export_fini. */
int ctl_s3_export(struct ctl_state *st, uint64_t now_ms, struct ctl_s3export *out);
void ctl_s3_export_fini(struct ctl_s3export *x);

#endif
