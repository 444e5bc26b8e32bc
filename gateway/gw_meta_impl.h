/*
 * gw_meta_impl.h - what gw_meta.c (groups, reads) and gw_meta_write.c
 * (writes) share: the tables, the handles, and the group primitives. A
 * group is the value of one LMDB key (tenant u32 BE and the first
 * GW_META_INLINE bytes of the object keys): its members, sorted by full
 * key, klen u16 LE | key | vlen u16 LE | value (see gw_meta.c).
 */
#ifndef GW_META_IMPL_H
#define GW_META_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "cm_kv.h"
#include "gw_meta.h"

#define GW_META_INLINE 480
#define GROUP_KEY_MAX (4 + GW_META_INLINE)

enum { T_OBJECTS, T_TOMBS, T_PENDING, T_STATE, T_COUNT };

struct gw_meta {
    struct cm_kv *kv;
};

struct gw_meta_batch {
    struct cm_kv_txn *txn;
    uint64_t now_ms;
};

/* One member of a group; pointers into the group's bytes. */
struct gw_meta_member {
    const char *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
};

/* Keys named by an upload id: never written again once deleted. */
int gw_meta_once_key(const char *key, size_t klen);
/* Bytewise, a prefix first: the order of keys and of group keys. */
int gw_meta_keycmp(const char *a, size_t alen, const char *b, size_t blen);
/* The group key of key (out: GROUP_KEY_MAX bytes); its length. */
size_t gw_meta_group_key(uint32_t tenant, const char *key, size_t klen, uint8_t *out);
/* Iterates a group: 1 with *e filled, 0 at the end, CM_E_PROTO if torn. */
int gw_meta_group_next(const uint8_t *b, size_t blen, size_t *pos, struct gw_meta_member *e);
/* Finds key in its group of table: 0 with *val and *vlen borrowed (txn), or
 * CM_E_NOTFOUND. */
int gw_meta_group_get(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key,
                      size_t klen, const uint8_t **val, size_t *vlen);
/* Sets (val != NULL) or removes key in its group. Removing an absent key is
 * CM_E_NOTFOUND. */
int gw_meta_group_set(struct cm_kv_txn *txn, int table, uint32_t tenant, const char *key,
                      size_t klen, const void *val, size_t vlen);
/* gw_meta_scan inside txn. */
int gw_meta_scan_txn(struct cm_kv_txn *txn, uint32_t tenant, const char *prefix, size_t plen,
                     const char *after, size_t alen, gw_meta_scan_cb cb, void *arg);

#endif
