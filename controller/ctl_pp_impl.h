/*
 * ctl_pp_impl.h - placement's state, shared by the files behind ctl_pp.h
 * (private to them):
 *
 *   ctl_pp.c         the rows as persisted state: synced with each state
 *                    snapshot's tenants, copied out, written with the
 *                    placement epoch; create, destroy
 *   ctl_pp_record.c  one tenant's rows: their arrays and their store
 *                    record (the codec)
 *   ctl_pp_demand.c  gateways' reports: demand per partition, migration
 *                    progress, the status figures
 *   ctl_pp_loop.c    the loop thread: the check (utilisation, trigger),
 *                    the solve and its commit, rebalance requests
 *
 * struct ctl_pp owns the rows (tenant order), the gateways' latest reports,
 * the trigger, the figures and the rebalance requests, all under mu; pol is
 * the loop thread's alone. Invariants and threads: ctl_pp.h.
 *
 * Naming: a function here that expects mu held ends in _locked.
 */
#ifndef CTL_PP_IMPL_H
#define CTL_PP_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_pp.h"

#define CTL_PP_MAX_PARTS 65536u

struct ctl_pp_gw {
    char name[CTL_PP_GW_MAX + 1];
    uint64_t seen_ns;
    size_t n;
    struct ctl_pp_demand *d; /* sorted by (tenant, partition) */
    struct ctl_pp_mig mig;
};

struct ctl_pp {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* the loop: stop, a rebalance asked */
    pthread_cond_t done_cv;  /* a rebalance answered */
    struct ctl_store *store; /* borrowed */
    struct ctl_state *st;    /* borrowed */
    struct ctl_pp_cfg cfg;
    struct ctl_pp_trig_cfg tcfg;
    const struct pol_pp_ops *ops;
    struct pol_pp *pol; /* the loop thread's alone */
    uint64_t epoch;
    char solver[CTL_PP_NAME_MAX];
    size_t nt;
    struct ctl_pp_trows *t; /* tenant id order */
    uint64_t synced;        /* newest state epoch a sync applied */
    int draining;           /* that sync saw a node being removed */
    size_t ngw;
    struct ctl_pp_gw *gw;
    struct ctl_pp_trig trig;
    double max_util;
    uint64_t replacements, nchecks;
    double last_solve_ms;
    uint64_t last_moved_bytes, last_parts_moved;
    uint64_t asked, answered; /* rebalance requests */
    struct ctl_pp_result answer;
    int stop, started;
    pthread_t thread;
};

/* ---- ctl_pp_record.c (pure) ---- */

/* r (the caller's) gets zeroed arrays for parts rows of width (free with
 * ctl_pp_trows_fini). */
void ctl_pp_trows_alloc(struct ctl_pp_trows *r, uint32_t tenant, uint32_t width, uint32_t k,
                        uint32_t parts);
/* dst (the caller's) gets its own copy of src's arrays. */
void ctl_pp_trows_copy(struct ctl_pp_trows *dst, const struct ctl_pp_trows *src);

/* ---- ctl_pp.c ---- */

/* The tenant's rows (borrowed, valid until the rows change), or NULL. */
struct ctl_pp_trows *ctl_pp_find_locked(struct ctl_pp *pp, uint32_t tenant);
/* Writes puts[nput] (their row epochs already set) and the drops with
 * epoch + 1, then applies them (puts transferred on success, freed on
 * failure). 0 or the store's error. */
int ctl_pp_write_locked(struct ctl_pp *pp, struct ctl_pp_trows *puts, size_t nput,
                        const uint32_t *drops, size_t ndrop, const char *solver);
/* The rows brought in line with s (ctl_pp_rows). 0 or a store error. */
int ctl_pp_sync_locked(struct ctl_pp *pp, const struct ctl_snapshot *s);
/* Copies the rows of s's tenants into out (the caller's; ctl_pp_rows_fini). */
void ctl_pp_copy_locked(struct ctl_pp *pp, const struct ctl_snapshot *s, struct ctl_pp_rows *out);

/* ---- ctl_pp_demand.c ---- */

/* qsort/bsearch order of struct ctl_pp_demand: (tenant, partition). */
int ctl_pp_cmp_demand(const void *a, const void *b);
/* The fresh gateways' demand summed per (tenant, partition), sorted; *n
 * entries, malloc'd (the caller frees). */
struct ctl_pp_demand *ctl_pp_demand_locked(const struct ctl_pp *pp, uint64_t now_ns, size_t *n);
/* Adds the fresh gateways' migration to out: gateways, migrating, the
 * partitions and bytes to move and moved. */
void ctl_pp_migration_locked(const struct ctl_pp *pp, uint64_t now_ns, struct ctl_pp_status *out);
/* 1 if gateway name (its id) has a fresh report. */
int ctl_pp_reported_locked(const struct ctl_pp *pp, const char *name, uint64_t now_ns);

#endif
