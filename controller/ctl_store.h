/*
 * ctl_store.h - the controller's durable state in LMDB (through cm_kv).
 *
 * Tables:
 *   meta     "epoch", "next_tenant_id", "partitions" -> u64 little-endian
 *   tenants  tenant id (u32 big-endian) -> JSON record
 *   nodes    node id (u32 big-endian)   -> JSON record
 *   s3keys   access key id (20 chars)   -> JSON record, the secret sealed
 *            (ctl_s3keys.c); deleted with their tenant, in its transaction
 *   sms      't' or 'n' + id (u32 big-endian) -> JSON record of a tenant's
 *            cost and window, or of a node's counters (ctl_cost.h); the
 *            table is rewritten whole, every few seconds and at exit
 *   placement tenant id (u32 big-endian) -> the tenant's placement rows
 *            (JSON, ctl_pp_record.c); meta "placement_epoch" (u64) and
 *            "placement_solver" (text) change with them
 * Every write is one synced transaction, so a crash leaves either the old
 * or the new state, and a tenant change and its epoch bump land together.
 *
 * Threads: any thread; cm_kv serializes writers. The caller (ctl_state)
 * holds its own lock across a write so memory and disk change in order.
 */
#ifndef CTL_STORE_H
#define CTL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_model.h"

struct ctl_store;
struct ctl_s3key;

/* Everything that was stored; arrays malloc'd, owned by the struct. */
struct ctl_store_state {
    uint64_t epoch;
    uint32_t next_tenant_id; /* 1 on a fresh store */
    uint32_t partitions;     /* 0 on a fresh store */
    size_t ntenants;
    struct ctl_tenant *tenants; /* in id order */
    size_t nnodes;
    struct ctl_node *nodes; /* in id order */
    size_t ns3keys;
    struct ctl_s3key *s3keys; /* in id order */
};

int ctl_store_open(const char *dir, struct ctl_store **out);
void ctl_store_close(struct ctl_store *s); /* NULL is a no-op */

/* Fills st (caller's storage; ctl_store_state_fini frees its arrays).
 * A record that does not parse fails the load with CM_E_CONFIG. */
int ctl_store_load(struct ctl_store *s, struct ctl_store_state *st);
void ctl_store_state_fini(struct ctl_store_state *st);

/* Writes t (borrowed) and the meta values in one transaction. */
int ctl_store_put_tenant(struct ctl_store *s, const struct ctl_tenant *t, uint64_t epoch,
                         uint32_t next_tenant_id);
/* The same for t[n]: every record and the meta values land together. */
int ctl_store_put_tenants(struct ctl_store *s, const struct ctl_tenant *t, size_t n, uint64_t epoch,
                          uint32_t next_tenant_id);
int ctl_store_del_tenant(struct ctl_store *s, uint32_t id, uint64_t epoch);
int ctl_store_put_node(struct ctl_store *s, const struct ctl_node *n, uint64_t epoch);
int ctl_store_put_meta(struct ctl_store *s, uint64_t epoch, uint32_t partitions);
/* Writes k[n] (borrowed), or deletes key id, with the epoch in one
 * transaction; epoch 0 leaves the stored one (a re-seal changes nothing a
 * gateway sees). */
int ctl_store_put_s3keys(struct ctl_store *s, const struct ctl_s3key *k, size_t n, uint64_t epoch);
int ctl_store_del_s3key(struct ctl_store *s, const char *id, uint64_t epoch);

/* One record of the "sms" table. */
struct ctl_store_sms {
    char kind; /* 't' tenant, 'n' node */
    uint32_t id;
    char *text; /* JSON, NUL-terminated */
    size_t len;
};

/* Replaces the whole "sms" table with r[n] (borrowed) in one transaction. */
int ctl_store_put_sms(struct ctl_store *s, const struct ctl_store_sms *r, size_t n);
/* Every record, in key order (*out transferred: ctl_store_sms_free). A key
 * of another shape fails with CM_E_CONFIG. */
int ctl_store_load_sms(struct ctl_store *s, struct ctl_store_sms **out, size_t *n);
void ctl_store_sms_free(struct ctl_store_sms *r, size_t n);

/* ---- placement rows (the record format is ctl_pp_record.c's) ---- */

/* One tenant's record: text[len] borrowed; text NULL deletes the record. */
struct ctl_store_prec {
    uint32_t tenant;
    const char *text;
    size_t len;
};

/* Writes r[n] with the placement epoch and solver name in one transaction. */
int ctl_store_put_placement(struct ctl_store *s, const struct ctl_store_prec *r, size_t n,
                            uint64_t epoch, const char *solver);
/* The stored placement epoch (0 when none) and solver name (solver[cap],
 * "" when none), then cb for every record (text borrowed for the call); a
 * negative cb return ends the load with it. */
int ctl_store_load_placement(struct ctl_store *s, uint64_t *epoch, char *solver, size_t cap,
                             int (*cb)(void *arg, uint32_t tenant, const char *text, size_t len),
                             void *arg);

#endif
