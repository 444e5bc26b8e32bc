/*
 * gw_migrate.h - migration of stored versions when their partition's
 * placement row changes (private to gateway/).
 *
 *   state snapshot: placement_epoch > the epoch of the last finished pass?
 *        │ yes: a pass
 *        ▼
 *   scan every tenant's objects (gw_meta_list, 1000 at a time): versions
 *   in partitions whose row changed since that epoch, with holders other
 *   than the row at some positions (gw_migrate_plan); one still in the
 *   persistent buffer is refused by the engine and waits for a later pass
 *        │ one at a time, at most --migrate-rate bytes/s, a few in flight
 *        ▼
 *   gw_engine_move: read each moving chunk from its holder (decode if that
 *   fails), PUT it to the row's node, wait until it is in COS
 *        ▼
 *   COMMIT_MOVE (the committer; stale if the version was replaced)
 *        ▼
 *   after the grace period of the GETs that may still read the old layout:
 *   gw_engine_drop (the old holders forget the chunks; COS keeps them)
 *
 * A pass that moved everything it found records the epoch in the metadata
 * store (state "migrated"); otherwise (a failed move, a version still in
 * the persistent buffer, a target not up) it runs again a little later.
 * What to move is derived from metadata and rows alone, so after any
 * crash the next pass finds what is left: a version whose move was not
 * committed still has its old holders (the chunks it put are orphans, put
 * again by the next move), one whose move was committed has its new ones
 * (its old chunks are orphans in the old holders' memory).
 *
 * The chunk requests carry the version's tenant: nodes charge a move to
 * the owning tenant's fair share.
 *
 * Threads: its own thread (scan, pacing, starting moves); move callbacks
 * on the engine thread, commit callbacks on the committer, drops on the
 * thread that ends a grace period. Progress is read from any thread.
 */
#ifndef GW_MIGRATE_H
#define GW_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

#include "gw_engine.h"

struct cm_buf;
struct gw_commit;
struct gw_grace;
struct gw_meta;
struct gw_migrate;
struct gw_state;

struct gw_migrate_cfg {
    uint64_t rate;    /* chunk bytes moved per second, at most */
    int max_inflight; /* versions moving at once (64) */
    int retry_ms;     /* a pass that left something waits this long (2000) */
    int rescan_ms;    /* resident bytes are counted again this often (30000) */
    /* This gateway's id: the versions of tenants another gateway owns
     * (metadata a --rebuild-meta brought in) are its to move, not ours.
     * NULL: every tenant's. Borrowed. */
    const char *self;
    /* Every request served here (gw_front_served; NULL: none). A pass for
     * new rows begins once the requests in when it saw them have ended: a
     * PUT that chose its holders from the old rows is committed by then,
     * so the scan sees it (a node being removed keeps none of its chunks). */
    struct gw_grace *served;
};

/* Everything borrowed; must outlive the migration. */
int gw_migrate_create(const struct gw_migrate_cfg *cfg, struct gw_meta *meta,
                      struct gw_state *state, struct gw_engine *e, struct gw_commit *commit,
                      struct gw_grace *grace, struct gw_migrate **out);
int gw_migrate_start(struct gw_migrate *m);
/* Stops the thread; moves that end later are not committed. Idempotent. */
void gw_migrate_stop(struct gw_migrate *m);
/* Before the engine is destroyed: no more drops or deletes through it. */
void gw_migrate_detach(struct gw_migrate *m);
void gw_migrate_destroy(struct gw_migrate *m); /* NULL is a no-op */

struct gw_migrate_progress {
    uint64_t done_epoch;                 /* placement epoch of the last finished pass */
    uint64_t target_epoch;               /* the one the current pass works for */
    uint64_t moving_partitions;          /* partitions with versions still to move */
    uint64_t bytes_to_move, bytes_moved; /* this pass */
    uint64_t bytes_moved_total, versions_moved_total;
    uint64_t failed_total; /* moves that failed or went stale */
    uint64_t passes_total;
    int running; /* a pass is under way */
};
void gw_migrate_progress(struct gw_migrate *m, struct gw_migrate_progress *out);

/* Bytes each (tenant, partition) holds on each of its holders, from the
 * last scan: *out malloc'd (transferred), sorted by (tenant, partition). */
struct gw_resident {
    uint32_t tenant, partition;
    uint64_t bytes;
};
size_t gw_migrate_resident(struct gw_migrate *m, struct gw_resident **out);

/* Appends the shoal_gateway_migrate_* families to out (any thread). */
void gw_migrate_metrics(struct gw_migrate *m, struct cm_buf *out);

/*
 * Pure: which positions of l move to follow row[nrow] (its partition's
 * row), given the node ids up[nup] that may receive chunks. Position j
 * moves to row[j] when j < nrow, holders[j] != row[j], row[j] is up, and
 * no other position would stay on row[j] (a stripe never gains two chunks
 * on one node). Fills to[j] for the moving positions; returns their mask
 * (0: nothing moves).
 */
uint64_t gw_migrate_plan(const struct gw_layout *l, const uint32_t *row, size_t nrow,
                         const uint32_t *up, size_t nup, uint32_t *to);

#endif
