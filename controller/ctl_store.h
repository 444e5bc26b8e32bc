/*
 * ctl_store.h - the controller's durable state in LMDB (through cm_kv).
 *
 * Tables:
 *   meta     "epoch", "next_tenant_id", "partitions" -> u64 little-endian
 *   tenants  tenant id (u32 big-endian) -> JSON record
 *   nodes    node id (u32 big-endian)   -> JSON record
 *   s3keys   access key id (20 chars)   -> JSON record, the secret sealed
 *            (ctl_s3keys.c); deleted with their tenant, in its transaction
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
int ctl_store_del_tenant(struct ctl_store *s, uint32_t id, uint64_t epoch);
int ctl_store_put_node(struct ctl_store *s, const struct ctl_node *n, uint64_t epoch);
int ctl_store_put_meta(struct ctl_store *s, uint64_t epoch, uint32_t partitions);
/* Writes k[n] (borrowed), or deletes key id, with the epoch in one
 * transaction; epoch 0 leaves the stored one (a re-seal changes nothing a
 * gateway sees). */
int ctl_store_put_s3keys(struct ctl_store *s, const struct ctl_s3key *k, size_t n, uint64_t epoch);
int ctl_store_del_s3key(struct ctl_store *s, const char *id, uint64_t epoch);

#endif
