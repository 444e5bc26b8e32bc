/*
 * ctl_sms.h - the controller's side of the elastic memory (private to
 * controller/): the window of every tenant's pool, the instances the nodes
 * report, the decisions and reclaim orders waiting for a node's next
 * heartbeat, and what each pool costs.
 *
 *   HTTP threads ──heartbeat: instances, sms_cost──▶ ctl_sms
 *                ◀──answer: sms, pools, decisions, reclaim──
 *   main thread  ──ctl_sms_run: views of due pools (copies)──▶ pol_sms tick, no lock held
 *                                                          ──▶ decisions by node, slot, tag
 *   main thread  ──ctl_sms_save (every few s, and at exit)──▶ ctl_store, table "sms"
 *   HTTP threads ◀──ctl_sms_snapshot (a copy; rendered outside the lock)
 *
 * The controller is the caller pol_sms.h's tick speaks of: it keeps each
 * pool's generation and its start, and for each instance the decision it
 * made until a report shows the node applied it (a report received after
 * the answer that carried it). Until then the decision stands in for the
 * report in the next views, so a carried generation or a warm-up is not
 * decided twice. A node applies a decision only while the slot still has
 * the decision's tag.
 *
 * Cost: at each heartbeat, the memory of a tenant's instances on that node
 * (not released, times the node's instance size) as the previous report
 * gave it is charged for the time since then (at most the node timeout),
 * and the node's cumulative sms_cost counters are folded in by their growth
 * since the last report. The counters last folded are stored with the
 * totals in one transaction, so a restart neither loses nor repeats what a
 * node's counters had reached by then.
 *
 * Threads: every function may be called from any thread, except
 * ctl_sms_run (one thread: it owns the policy instance). One mutex; it is
 * never held while the policy runs, nor while the store is written, and no
 * other lock is taken under it. Time is passed in (monotonic ns; wall ms
 * only to store and load the windows' starts).
 *
 * The files behind this header, and what each owns: ctl_sms_impl.h.
 */
#ifndef CTL_SMS_H
#define CTL_SMS_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_cost.h"
#include "pol_sms.h"

struct ctl_sms;
struct ctl_store;

#define CTL_SMS_SLOTS 4096 /* slot ids are below this */
#define CTL_SMS_POLICY_MAX 16

struct ctl_sms_cfg {
    const char *policy;        /* a pol_sms registry name; borrowed for the call */
    uint64_t interval_ns;      /* GC interval */
    uint32_t active, degraded; /* M, N intervals */
    uint32_t static_instances; /* "static": instances per pool per node; 0: derived */
    uint64_t node_timeout_ns;  /* reports older than this are dropped */
    uint32_t compact_age;      /* A intervals (pol_sms_cfg); 0: the policy's default */
};

/* One instance as a node reports it ("instances" in the heartbeat). */
struct ctl_sms_inst {
    uint32_t slot, tag, tenant;
    uint64_t gen;
    enum pol_sms_state state;
    int lost;
    uint64_t used, put_bytes, read_bytes, read_chunks;
    uint64_t warm_age_ms; /* since its last invocation */
};

/* One entry of "sms_cost": the counters of one tenant, cumulative. */
struct ctl_sms_cost {
    uint32_t tenant;
    struct ctl_cost_counters c;
};

/* A node's elastic-memory fields, parsed; arrays borrowed for the call. */
struct ctl_sms_report {
    uint32_t node;
    uint64_t incarnation;
    uint64_t capacity_bytes;
    int has_instances; /* it sent "instances" (a node that does not runs static defaults) */
    uint64_t instance_bytes, memory_bytes, cache_bytes;
    size_t ninst;
    const struct ctl_sms_inst *inst; /* slots distinct, < CTL_SMS_SLOTS */
    size_t ncost;
    const struct ctl_sms_cost *cost;
    uint64_t rec_chunks, rec_bytes, rec_running, rec_helpers; /* "recovery" */
};

/* The "sms" block of every answer. */
struct ctl_sms_config {
    char policy[CTL_SMS_POLICY_MAX];
    uint64_t interval_ms, warm_active_ms, warm_degraded_ms;
    uint32_t active, degraded, compact_age;
    uint32_t max_instances; /* for the node answered ("static": its pool size) */
};

/* What a heartbeat answer carries; arrays owned (ctl_sms_answer_fini). */
struct ctl_sms_answer {
    struct ctl_sms_config cfg;
    size_t npools;
    struct ctl_sms_pool_gen {
        uint32_t tenant;
        uint64_t gen, gen_age_ms;
    } * pools;
    size_t ndec;
    struct ctl_sms_decision {
        uint32_t slot, tag, tenant;
        enum pol_sms_state state;
        uint64_t gen;
        int warm_up;
        enum pol_sms_reason reason; /* why a RELEASED one is released */
    } * dec;
    int reclaim_all;
    size_t nreclaim;
    uint32_t *reclaim; /* slots, ascending */
};

void ctl_sms_answer_fini(struct ctl_sms_answer *a);

/* CM_E_BADARG: an unknown policy, a bound crossed, or "static" without a
 * way to size it. *out is the caller's (destroy it). */
int ctl_sms_create(const struct ctl_sms_cfg *cfg, struct ctl_sms **out);
void ctl_sms_destroy(struct ctl_sms *s); /* NULL is a no-op */

/*
 * A node's heartbeat: takes its report (r borrowed) and answers it (out,
 * the caller's). tenants[n] are the tenants that exist now (every one gets
 * a pool); a pool of a tenant not listed is dropped once no instance of it
 * is reported.
 */
void ctl_sms_heartbeat(struct ctl_sms *s, const struct ctl_sms_report *r, const uint32_t *tenants,
                       size_t n, uint64_t now_ns, struct ctl_sms_answer *out);

/* Ticks every pool whose tick is due (pol_sms tick's next_ns, at least one
 * each interval). One thread only. Returns how many pools were ticked. */
int ctl_sms_run(struct ctl_sms *s, uint64_t now_ns);

/*
 * Orders node to reclaim one instance (slot) or all (all != 0), delivered
 * once in its next heartbeat answer. *what (caller frees) and *n: the
 * instances that will go, as the node last reported them. CM_E_NOTFOUND:
 * slot is not an instance the node reports.
 */
int ctl_sms_reclaim(struct ctl_sms *s, uint32_t node, int all, uint32_t slot,
                    struct ctl_sms_inst **what, size_t *n);

/* ---- figures ---- */

struct ctl_sms_pool_view {
    uint32_t tenant;
    uint64_t gen, gen_age_ms;
    /* From the last reports: instances not released, by state. */
    uint32_t instances, warm, active, degraded, lost, nodes;
    uint64_t memory_bytes; /* instances x their node's instance size */
    uint64_t used_bytes;   /* chunk bytes in them */
    /* From the last tick (ticked 0: none yet). */
    int ticked;
    int64_t tick_ms_ago;
    struct pol_sms_tick last;
    struct ctl_cost_totals cost;
    uint64_t cost_age_ms; /* since its accounting began */
};

struct ctl_sms_node_view {
    uint32_t node;
    int reported; /* its last heartbeat had "instances" */
    uint64_t instance_bytes, memory_bytes, cache_bytes;
    uint32_t instances, slots; /* not released; capacity / instance size */
    uint64_t rec_chunks, rec_bytes, rec_running, rec_helpers;
};

struct ctl_sms_snapshot {
    struct ctl_sms_config cfg; /* max_instances: --static-instances */
    uint64_t ticks;            /* pool ticks since start */
    size_t npools;
    struct ctl_sms_pool_view *pools; /* tenant order */
    size_t nnodes;
    struct ctl_sms_node_view *nodes; /* node order */
};

void ctl_sms_snapshot(struct ctl_sms *s, uint64_t now_ns, struct ctl_sms_snapshot *out);
void ctl_sms_snapshot_fini(struct ctl_sms_snapshot *snap);
/* Borrowed from snap, or NULL. */
const struct ctl_sms_pool_view *ctl_sms_snapshot_pool(const struct ctl_sms_snapshot *snap,
                                                      uint32_t tenant);
const struct ctl_sms_node_view *ctl_sms_snapshot_node(const struct ctl_sms_snapshot *snap,
                                                      uint32_t node);

/* ---- persistence (ctl_store's "sms" table) ---- */

/* Restores the totals, the counters last folded and the windows (a window
 * is moved on by the wall time that passed). Call before the first
 * heartbeat. 0 or a store error (CM_E_CONFIG: a record that does not parse). */
int ctl_sms_load(struct ctl_sms *s, struct ctl_store *store, uint64_t now_ns, uint64_t now_wall_ms);
/* Writes them all, replacing the table, in one transaction. */
int ctl_sms_save(struct ctl_sms *s, struct ctl_store *store, uint64_t now_ns, uint64_t now_wall_ms);

#endif
