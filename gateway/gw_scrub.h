/*
 * gw_scrub.h - collects orphan chunks: chunks the nodes hold that no
 * version the gateway knows of names (private to gateway/). They are left
 * by PUTs cut off by a gateway crash, by the deletes a crashed gateway
 * held, and by DELs given up for a node that was down
 * (docs/architecture.md, "Orphans").
 *
 *   every interval:
 *     R1 = the live versions' ids: the metadata store's, and those the
 *          engine holds (being put, buffered, tracked, read, delayed)
 *     each usable node: LIST its chunks (memory, insertion log, packed);
 *          S = those whose (tenant, object) is not in R1
 *     R2 = the same ids again;  C = S \ R2: unreferenced in this pass
 *     a chunk in C that was in the node's C of the last pass, once the
 *          GETs in at the end of that pass are answered: DEL (memory and
 *          COS; kept and sent again until the node takes it)
 *
 * Why a live chunk is never taken. A version's chunks exist before its
 * commit, and the engine holds the version from before its first chunk
 * is sent until after the commit is visible in the store; so a chunk
 * listed after R1 of a version being written is in R2. A version the
 * store no longer names is dead, but readers that looked it up before
 * may still read it: a pass's candidates are deleted only once those
 * readers are gone (a grace period, gw_grace.h, entered after the pass)
 * and when the next pass, an interval later, finds them unreferenced
 * again. A node on which more than half of the chunk records listed are
 * unreferenced is left alone and the pass logs an error: that is a store
 * that does not belong to these nodes (a lost store, to rebuild with
 * --rebuild-meta), not orphans.
 *
 * Not covered: a chunk stored as its own COS object (not packed) in no
 * node's memory, whose instance was released: no node lists it.
 *
 * Threads: its own (the passes and the store scans); node ids, the
 * engine's ids, the LISTs and the DELs run on the engine thread, posted
 * and waited for.
 */
#ifndef GW_SCRUB_H
#define GW_SCRUB_H

struct cm_buf;
struct gw_engine;
struct gw_grace;
struct gw_meta;
struct gw_scrub;

struct gw_handover;
struct gw_state;

struct gw_scrub_cfg {
    int interval_ms; /* between passes; 0: no scrub */
    /* Only chunks of the tenants this gateway collects are considered
     * (gw_snap_collects): its own, and deleted ones. state NULL: all.
     * Both borrowed for the scrub's life. */
    struct gw_state *state;
    const char *self;
    /* Tenants moving between gateways (may be NULL): a pass during which
     * one moved judges nothing (gw_handover_moves). Borrowed. */
    struct gw_handover *handover;
};

/* meta, e and grace borrowed; must outlive the scrub. 0 or -ENOMEM. */
int gw_scrub_create(const struct gw_scrub_cfg *cfg, struct gw_meta *meta, struct gw_engine *e,
                    struct gw_grace *grace, struct gw_scrub **out);
int gw_scrub_start(struct gw_scrub *s); /* no thread when interval_ms is 0 */
/* Ends the pass under way after its current step (a LIST answer is
 * waited for) and joins the thread. Idempotent. Before the engine goes. */
void gw_scrub_stop(struct gw_scrub *s);
void gw_scrub_destroy(struct gw_scrub *s); /* NULL is a no-op; stops first */

/* Appends the scrub's Prometheus families to out (any thread):
 *   shoal_gateway_scrub_passes_total              passes ended
 *   shoal_gateway_scrub_listed_chunks             records the last pass listed
 *   shoal_gateway_scrub_unreferenced_chunks       distinct ones of them in C
 *   shoal_gateway_scrub_deleted_chunks_total      chunk DELs sent
 *   shoal_gateway_scrub_refused_total             node lists left alone (the valve)
 *   shoal_gateway_scrub_failed_total              node lists that failed
 *   shoal_gateway_scrub_pass_seconds              the last pass's time */
void gw_scrub_metrics(struct gw_scrub *s, struct cm_buf *out);

#endif
