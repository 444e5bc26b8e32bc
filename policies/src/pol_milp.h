/*
 * pol_milp.h - a small mixed-integer program, minimised by GLPK (the one
 * GLPK adapter, pol_milp_glpk.c; private to policies/).
 *
 * Build it column by column and row by row, offer known feasible solutions
 * as incumbents (the warm start), then solve within a time limit. The
 * solver's output is off. One model per thread at a time; nothing global.
 */
#ifndef POL_MILP_H
#define POL_MILP_H

#include <stddef.h>
#include <stdint.h>

struct pol_milp;

/* NULL on out-of-memory. Caller owns it (destroy; NULL is a no-op). */
struct pol_milp *pol_milp_create(void);
void pol_milp_destroy(struct pol_milp *m);

/* A column with cost in the objective: binary (lb, ub ignored) or
 * continuous in [lb, ub] (either may be infinite). Its index (0, 1, ...)
 * or -ENOMEM. */
int pol_milp_col(struct pol_milp *m, int binary, double lb, double ub, double cost);

/* The row lo <= sum val[i] * x[idx[i]] <= hi (lo == hi: an equality; either
 * may be infinite). idx and val are borrowed for the call; each column at
 * most once per row. 0, CM_E_BADARG or -ENOMEM. */
int pol_milp_row(struct pol_milp *m, size_t n, const int *idx, const double *val, double lo,
                 double hi);

/* x (one value per column, copied): a solution the caller knows to be
 * feasible, given to the solver as an incumbent. 0 or -ENOMEM. */
int pol_milp_start(struct pol_milp *m, const double *x);

/*
 * Minimises within about tm_ms (the LP relaxation gets a quarter, the
 * branch and bound the rest). On 0, x (one value per column) holds the
 * best integer solution found: optimal unless *time_limited. Otherwise
 * CM_E_NOTFOUND (no feasible solution exists), CM_E_TIMEOUT (none found in
 * time), CM_E_BADARG (tm_ms == 0), -ENOMEM.
 */
int pol_milp_solve(struct pol_milp *m, uint32_t tm_ms, double *x, int *time_limited);

#endif
