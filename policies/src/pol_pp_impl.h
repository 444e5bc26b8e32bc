/*
 * pol_pp_impl.h - what every PP policy shares (private to policies/): the
 * instance, and one place() call's working state.
 *
 * Nodes are named by their index in the view (int32, -1 = none) while a
 * policy works; pp_finish turns indexes back into ids. A candidate placement
 * is hold/share in the slot layout plus the load it puts on every node;
 * pp_hold/pp_unhold keep load equal to the sum of every held slot's
 * demand x share (invariant). Every policy holds slot j of p with share
 * pp_share(p, j) (the load model of pol_pp.h), and a current holder only
 * in its own slot: moving a chunk to another position moves its bytes.
 */
#ifndef POL_PP_IMPL_H
#define POL_PP_IMPL_H

#include "pol_pp.h"

struct pol_pp {
    const struct pol_pp_ops *ops;
    struct pol_pp_cfg cfg;
};

struct pp_work {
    const struct pol_pp_view *v;
    size_t nslots;
    size_t *off;  /* nparts + 1 slot offsets */
    uint32_t *c;  /* nparts: row length, min(width, eligible nodes) */
    double *dem;  /* nparts x NRES: demand scaled to the tenant's DRF share */
    int32_t *cur; /* nslots: current holders (up, distinct, slot < c), else -1 */
    int32_t *up;  /* nup indexes of the up nodes, in view order */
    size_t nup;
    int32_t *hold; /* nslots: the candidate's holders, -1 = empty slot */
    double *share; /* nslots: each holder's fraction of its partition's demand */
    double *load;  /* nnodes x NRES: the candidate's load */
    double *limit; /* nnodes x NRES: u x capacity (0 for down nodes) */
};

/* The registered policies (one file each). */
extern const struct pol_pp_ops pol_pp_hash_ops;
extern const struct pol_pp_ops pol_pp_greedy_ops;
extern const struct pol_pp_ops pol_pp_milp_ops;

/* create/destroy for every policy (they hold only the config). */
int pol_pp_base_create(const struct pol_pp_ops *ops, const struct pol_pp_cfg *cfg,
                       struct pol_pp **out);
void pol_pp_base_destroy(struct pol_pp *pp);

/* Checks v and sets up w with an empty candidate. all_eligible: rows may
 * use down nodes ("hash"). 0, CM_E_BADARG, CM_E_UNAVAIL or -ENOMEM. */
int pp_work_init(struct pp_work *w, const struct pol_pp_view *v, int all_eligible);
void pp_work_fini(struct pp_work *w);

/* Puts node n in partition p's slot (empty before) with share s; and back. */
void pp_hold(struct pp_work *w, size_t p, uint32_t slot, int32_t n, double s);
void pp_unhold(struct pp_work *w, size_t p, uint32_t slot);
/* Empties the candidate; fills it with every current holder. */
void pp_clear(struct pp_work *w);
void pp_hold_current(struct pp_work *w);
/* What the holder in p's slot j carries (pol_pp_slot_share for c[p]). */
double pp_share(const struct pp_work *w, size_t p, uint32_t j);
/* 1 if node n can take frac of partition p's demand within its limit. */
int pp_fits(const struct pp_work *w, size_t p, int32_t n, double frac);
/* max over resources of load / capacity of up node n. */
double pp_util(const struct pp_work *w, int32_t n);
/* 1 if x is among a[0..n). */
int pp_has(const int32_t *a, size_t n, int32_t x);
/* 1 if partition p's row in hold already has node n. */
int pp_row_has(const struct pp_work *w, size_t p, int32_t n);
/* 1 if node n is one of p's current holders. */
int pp_is_current(const struct pp_work *w, size_t p, int32_t n);
/* The slot where node n currently holds p, or -1. */
int pp_cur_slot(const struct pp_work *w, size_t p, int32_t n);

/* Something to sort by key, descending, then by i ascending (so the
 * order never depends on qsort's). */
struct pp_keyed {
    double key;
    uint32_t i;
};
int pp_cmp_keyed(const void *a, const void *b);
/* The candidate's worst up node: load over limit, the highest resource. */
double pp_overload(const struct pp_work *w);
/* Bytes the candidate moves: resident size x slots whose holder is not the
 * current one there (data moves by position, even between current
 * holders), over the partitions in mask (NULL = all). */
double pp_moved_bytes(const struct pp_work *w, const unsigned char *mask);
/* Dominant fair-share demand of p, each resource relative to the mean up
 * node's capacity. */
double pp_dominant(const struct pp_work *w, size_t p);

/* Best-fit-decreasing (pol_pp_greedy.c) of the partitions with free[p] set
 * (NULL = all), whose slots must be empty; the others stay as they are in
 * hold. Keeps each free partition's current holders where they still fit. */
int pp_greedy(struct pp_work *w, const unsigned char *free);

/* Writes the candidate to out (ids, lengths, shares) with its stats. */
void pp_finish(const struct pp_work *w, struct pol_pp_out *out, const char *solver);

#endif
