/*
 * ctl_sms_impl.h - the elastic memory's state, shared by the files behind
 * ctl_sms.h (private to them):
 *
 *   ctl_sms.c          the sorted arrays, create and destroy, heartbeats
 *                      (reports in, memory charged, counters folded,
 *                      decisions and reclaim orders out), reclaim orders
 *   ctl_sms_loop.c     the window loop: views of due pools, the policy's
 *                      tick, its decisions kept until applied
 *   ctl_sms_figures.c  the snapshot of pools and nodes readers render
 *   ctl_sms_save.c     the cost totals, windows and folded counters in
 *                      ctl_store, and back
 *
 * struct ctl_sms owns the pools (tenant order) and the nodes (id order),
 * each node with what it last reported, the decisions and reclaim orders on
 * their way to it and its counters last folded; all under mu. pol is
 * ctl_sms_run's thread's alone. Times inside are biased (ctl_sms_clock_locked).
 * Invariants and threads: ctl_sms.h.
 *
 * Naming: a function here that expects mu held ends in _locked.
 */
#ifndef CTL_SMS_IMPL_H
#define CTL_SMS_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_cost.h"
#include "ctl_sms.h"
#include "pol_sms.h"

#define CTL_SMS_MS 1000000ull /* ns in a ms */

struct ctl_sms_pool {
    uint32_t tenant;
    int listed; /* in the last tenant list heard */
    uint64_t gen, gen_start_ns;
    uint64_t next_ns; /* its tick is due then; 0: at once */
    int ticked;
    uint64_t tick_ns;
    struct pol_sms_tick last;
    struct ctl_cost_totals cost;
    uint64_t since_ns;
};

/* A decision about a slot, kept until a report shows it applied. */
struct ctl_sms_pending {
    uint32_t slot, tag, tenant;
    struct pol_sms_decision d;
    uint64_t decided_ns;
    uint64_t delivered_ns; /* 0: not sent yet */
};

/* The sms_cost counters of a tenant as last folded. */
struct ctl_sms_base {
    uint32_t tenant;
    struct ctl_cost_counters last;
};

struct ctl_sms_node {
    uint32_t id;
    uint64_t incarnation, capacity_bytes;
    uint64_t report_ns; /* when inst[] was reported; 0: none kept */
    int reported;       /* that report had "instances" */
    uint64_t instance_bytes, memory_bytes, cache_bytes;
    uint64_t rec_chunks, rec_bytes, rec_running, rec_helpers;
    size_t ninst;
    struct ctl_sms_inst *inst; /* slot order */
    size_t npend;
    struct ctl_sms_pending *pend; /* slot order */
    int has_base;
    uint64_t base_incarnation;
    size_t nbase;
    struct ctl_sms_base *base; /* tenant order */
    int reclaim_all;
    size_t nreclaim;
    uint32_t *reclaim; /* slot order */
};

struct ctl_sms {
    pthread_mutex_t mu;
    struct ctl_sms_cfg cfg; /* .policy points at ops->name */
    const struct pol_sms_ops *ops;
    struct pol_sms_cfg pcfg; /* effective; what answers say */
    struct pol_sms *pol;     /* ctl_sms_run's thread only */
    int have_tenants;        /* a tenant list was heard: pools may be dropped */
    size_t npools;
    struct ctl_sms_pool *pools; /* tenant order */
    size_t nnodes;
    struct ctl_sms_node *nodes; /* id order */
    uint64_t now_ns;            /* latest time passed in, biased; never goes back */
    uint64_t ticks;
};

/* ---- sorted arrays (ctl_sms.c): pools, nodes, instances, decisions,
 * counters and reclaim orders, each ordered by its first member, a u32
 * (tenant, node id or slot); a, n and stride bytes per element ---- */

/* The element of a with key (borrowed), or NULL. */
void *ctl_sms_find(void *a, size_t n, size_t stride, uint32_t key);
/* The element with key in *a, inserted zeroed (but for the key) if absent
 * (*created then 1; *a may move). Returns its index. */
size_t ctl_sms_upsert(void **a, size_t *n, size_t stride, uint32_t key, int *created);
/* Removes element i. */
void ctl_sms_erase(void *a, size_t *n, size_t stride, size_t i);

/* ---- ctl_sms.c ---- */

/* The tenant's pool, created (its window and accounting starting at now_ns)
 * if absent. Borrowed until the pools change. */
struct ctl_sms_pool *ctl_sms_pool_entry_locked(struct ctl_sms *s, uint32_t tenant, uint64_t now_ns);
/* The node's record, created if absent. Borrowed until the nodes change. */
struct ctl_sms_node *ctl_sms_node_entry_locked(struct ctl_sms *s, uint32_t id);
/* The instance nd reports in slot, or NULL. */
struct ctl_sms_inst *ctl_sms_inst_of(struct ctl_sms_node *nd, uint32_t slot);
/* Callers read the clock before the lock: keep time from going back.
 * Returns the time to use inside (biased). */
uint64_t ctl_sms_clock_locked(struct ctl_sms *s, uint64_t now_ns);
/* The "sms" block answered to nd (NULL: the one for no node in particular). */
void ctl_sms_config_locked(const struct ctl_sms *s, const struct ctl_sms_node *nd,
                           struct ctl_sms_config *c);
/* A policy instance sized for inst_bytes (*out the caller's) and its
 * effective config. 0 or the policy's error. */
int ctl_sms_make_policy(const struct ctl_sms *s, uint64_t inst_bytes, struct pol_sms **out,
                        struct pol_sms_cfg *eff);

#endif
