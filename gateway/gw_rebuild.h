/*
 * gw_rebuild.h - shoal-gateway --rebuild-meta: the metadata store rebuilt
 * from the META records in the nodes' insertion logs in COS (private to
 * gateway/).
 *
 *   COS "ilog/" ──list──▶ log batches ──get (nthreads)──▶ META records
 *     ──per (tenant, key): the highest version, a tombstone winning its own
 *       version (gw_mrec_newer)──▶ multipart objects whole or left out
 *       ──▶ LMDB, in key order: live versions (objects, as logged:
 *       holders, tags, commit time, what S3 keeps) and deleted keys
 *       (tombs, so versions keep growing); nothing pending
 *
 * S3 buckets, uploads in progress and their parts are versions of
 * internal keys (gw_meta.h) and come back as any. A composite (a
 * completed multipart upload) comes back only if every part it names is
 * back with the bytes it was completed with (sizes and CRC-64s combine
 * into its own); else it is left out, as a version still buffered would
 * be. A part comes back only with its whole composite or its live upload.
 *
 * What it cannot bring back (see docs/operations.md): a version whose
 * record was not logged when the store was lost (committed, but not all
 * its chunks persisted or its META not answered yet: it was still in the
 * persistent buffer and in pending), and a composite with such a part; a
 * delete whose tombstone was not logged (the deleted version comes back);
 * what nodes that keep no log refused (shoal_gateway_meta_unlogged_total).
 * Objects of tenants deleted since come back and are purged at the first
 * state poll. With several gateways, a filter keeps the records of the
 * tenants this one owns.
 *
 * Threads: runs on its caller's thread, which waits for the nthreads COS
 * readers it starts; call it before anything else uses meta.
 */
#ifndef GW_REBUILD_H
#define GW_REBUILD_H

#include <stdint.h>

struct cm_cos;
struct gw_meta;

struct gw_rebuild_stats {
    uint64_t batches;     /* log batches read (an object holds one or more) */
    uint64_t bad_batches; /* refused: torn, altered or of an unknown format */
    uint64_t records;     /* META records read */
    uint64_t bad_records; /* refused: a payload or layout record that does not decode */
    uint64_t versions;     /* live versions written */
    uint64_t tombstones;   /* deleted keys written */
    uint64_t broken;       /* multipart objects left out: their parts were not all logged */
    uint64_t orphan_parts; /* parts left out: no live upload or multipart object names them */
    uint64_t others;       /* records of tenants the filter left to another gateway */
    uint64_t read_ns;     /* listing and reading the logs */
    uint64_t store_ns;    /* writing the store */
};

/* Which tenants' records to take: keep(arg, tenant) is 1 for this
 * gateway's (called from the reader threads, under the rebuild's lock).
 * NULL: every tenant's. */
struct gw_rebuild_filter {
    int (*keep)(void *arg, uint32_t tenant);
    void *arg;
};

/* cos and meta borrowed; meta should be empty (what it holds for a key the
 * logs name is replaced); filter may be NULL. 0, or the first COS or store
 * error (the store is then incomplete). */
int gw_rebuild_meta(struct cm_cos *cos, struct gw_meta *meta, int nthreads,
                    const struct gw_rebuild_filter *filter, struct gw_rebuild_stats *out);

#endif
