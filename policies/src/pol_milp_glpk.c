/*
 * pol_milp_glpk.c - the GLPK adapter (the one file that includes glpk.h):
 * pol_milp.h on top of glp_simplex + glp_intopt.
 *
 * The model is collected in our arrays and handed to GLPK only in
 * pol_milp_solve, so a GLPK problem object never outlives a call. The
 * presolver stays off: with it, the branch and bound would run on a
 * transformed problem whose columns are not ours, and the warm start
 * (glp_ios_heur_sol at the first GLP_IHEUR callback) needs ours. GLPK
 * aborts the process on an invalid call, so every argument is checked
 * here first. Output is off: msg_lev GLP_MSG_OFF for both solvers, and
 * glp_term_out for the scaling, which ignores msg_lev.
 */
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_milp.h"

struct pol_milp {
    /* columns */
    unsigned char *bin;
    double *lb, *ub, *cost;
    int ncols, capcols;
    /* rows, and the matrix as 1-based triplets (index 0 unused) */
    double *lo, *hi;
    int nrows, caprows;
    int *ia, *ja;
    double *ar;
    int nnz, capnnz;
    int *seen; /* per column: the last row call it appeared in (stamp), to refuse repeats */
    int stamp;
    /* warm starts, 1-based (x[0] unused), all of ncols + 1 values */
    double **starts;
    int *start_cols;
    int nstarts;
    int offered;
};

struct pol_milp *
pol_milp_create(void)
{
    return calloc(1, sizeof(struct pol_milp));
}

void
pol_milp_destroy(struct pol_milp *m)
{
    if (m == NULL) {
        return;
    }
    free(m->bin);
    free(m->lb);
    free(m->ub);
    free(m->cost);
    free(m->lo);
    free(m->hi);
    free(m->ia);
    free(m->ja);
    free(m->ar);
    free(m->seen);
    for (int i = 0; i < m->nstarts; i++) {
        free(m->starts[i]);
    }
    free(m->starts);
    free(m->start_cols);
    free(m);
}

/* *p resized to n elements of sz bytes; 0 or -ENOMEM (*p unchanged). */
static int
resize(void **p, int n, size_t sz)
{
    void *q = realloc(*p, (size_t)n * sz);

    if (q == NULL) {
        return -ENOMEM;
    }
    *p = q;
    return 0;
}

/* A capacity of at least need (doubling from cap), or -ENOMEM. */
static int
next_cap(int cap, long need)
{
    long n = cap > 0 ? cap : 64;

    while (n < need) {
        n *= 2;
    }
    return n > INT32_MAX ? -ENOMEM : (int)n;
}

int
pol_milp_col(struct pol_milp *m, int binary, double lb, double ub, double cost)
{
    if (!isfinite(cost) || isnan(lb) || isnan(ub) || lb > ub) {
        return CM_E_BADARG;
    }
    if (m->ncols == m->capcols) {
        int n = next_cap(m->capcols, (long)m->ncols + 1);

        /* On failure capcols stays, so the next call resizes all again. */
        if (n < 0 || resize((void **)&m->bin, n, sizeof(*m->bin)) != 0 ||
            resize((void **)&m->lb, n, sizeof(*m->lb)) != 0 ||
            resize((void **)&m->ub, n, sizeof(*m->ub)) != 0 ||
            resize((void **)&m->cost, n, sizeof(*m->cost)) != 0 ||
            resize((void **)&m->seen, n, sizeof(*m->seen)) != 0) {
            return -ENOMEM;
        }
        m->capcols = n;
    }
    m->bin[m->ncols] = (unsigned char)(binary != 0);
    m->lb[m->ncols] = binary ? 0.0 : lb;
    m->ub[m->ncols] = binary ? 1.0 : ub;
    m->cost[m->ncols] = cost;
    m->seen[m->ncols] = 0;
    return m->ncols++;
}

int
pol_milp_row(struct pol_milp *m, size_t n, const int *idx, const double *val, double lo, double hi)
{
    if (isnan(lo) || isnan(hi) || lo > hi || lo == INFINITY || hi == -INFINITY ||
        n > (size_t)(INT32_MAX - m->nnz - 1)) {
        return CM_E_BADARG;
    }
    m->stamp++;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= m->ncols || !isfinite(val[i]) || m->seen[idx[i]] == m->stamp) {
            return CM_E_BADARG;
        }
        m->seen[idx[i]] = m->stamp;
    }
    if (m->nrows == m->caprows) {
        int c = next_cap(m->caprows, (long)m->nrows + 1);

        if (c < 0 || resize((void **)&m->lo, c, sizeof(*m->lo)) != 0 ||
            resize((void **)&m->hi, c, sizeof(*m->hi)) != 0) {
            return -ENOMEM;
        }
        m->caprows = c;
    }
    if ((long)m->nnz + (long)n + 1 > m->capnnz) {
        int c = next_cap(m->capnnz, (long)m->nnz + (long)n + 1);

        if (c < 0 || resize((void **)&m->ia, c, sizeof(*m->ia)) != 0 ||
            resize((void **)&m->ja, c, sizeof(*m->ja)) != 0 ||
            resize((void **)&m->ar, c, sizeof(*m->ar)) != 0) {
            return -ENOMEM;
        }
        m->capnnz = c;
    }
    for (size_t i = 0; i < n; i++) {
        m->nnz++;
        m->ia[m->nnz] = m->nrows + 1;
        m->ja[m->nnz] = idx[i] + 1;
        m->ar[m->nnz] = val[i];
    }
    m->lo[m->nrows] = lo;
    m->hi[m->nrows] = hi;
    m->nrows++;
    return 0;
}

int
pol_milp_start(struct pol_milp *m, const double *x)
{
    double **s = realloc(m->starts, (size_t)(m->nstarts + 1) * sizeof(*s));
    int *c;

    if (s == NULL) {
        return -ENOMEM;
    }
    m->starts = s;
    c = realloc(m->start_cols, (size_t)(m->nstarts + 1) * sizeof(*c));
    if (c == NULL) {
        return -ENOMEM;
    }
    m->start_cols = c;
    s[m->nstarts] = malloc((size_t)(m->ncols + 1) * sizeof(double));
    if (s[m->nstarts] == NULL) {
        return -ENOMEM;
    }
    memcpy(s[m->nstarts] + 1, x, (size_t)m->ncols * sizeof(double));
    c[m->nstarts++] = m->ncols;
    return 0;
}

static int
bound_type(double lo, double hi)
{
    if (lo == -INFINITY) {
        return hi == INFINITY ? GLP_FR : GLP_UP;
    }
    if (hi == INFINITY) {
        return GLP_LO;
    }
    return lo == hi ? GLP_FX : GLP_DB;
}

static double
finite_or_zero(double x)
{
    return isfinite(x) ? x : 0.0;
}

/* GLPK asks for heuristic solutions after each LP relaxation; ours are
 * offered once, at the first ask (later ones could only repeat them). */
static void
offer_starts(glp_tree *tree, void *info)
{
    struct pol_milp *m = info;

    if (glp_ios_reason(tree) != GLP_IHEUR || m->offered) {
        return;
    }
    m->offered = 1;
    for (int i = 0; i < m->nstarts; i++) {
        if (m->start_cols[i] == m->ncols) {
            glp_ios_heur_sol(tree, m->starts[i]);
        }
    }
}

/* The cheapest warm start, or -1. */
static int
best_start(const struct pol_milp *m)
{
    int best = -1;
    double best_obj = INFINITY;

    for (int i = 0; i < m->nstarts; i++) {
        double obj = 0.0;

        if (m->start_cols[i] != m->ncols) {
            continue;
        }
        for (int j = 0; j < m->ncols; j++) {
            obj += m->cost[j] * m->starts[i][j + 1];
        }
        if (obj < best_obj) {
            best_obj = obj;
            best = i;
        }
    }
    return best;
}

int
pol_milp_solve(struct pol_milp *m, uint32_t tm_ms, double *x, int *time_limited)
{
    glp_prob *lp;
    glp_smcp smcp;
    glp_iocp iocp;
    int rc, ret, status, start;
    uint32_t lp_ms = tm_ms / 4 > 0 ? tm_ms / 4 : 1;

    *time_limited = 0;
    if (tm_ms == 0 || tm_ms > INT32_MAX) {
        return CM_E_BADARG;
    }
    if (m->ncols == 0) {
        return 0;
    }
    /* glp_scale_prob prints whatever msg_lev says: this thread's terminal
     * output is off for the call (the environment freed at the end goes
     * with the setting). */
    glp_term_out(GLP_OFF);
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, m->ncols);
    for (int j = 0; j < m->ncols; j++) {
        glp_set_col_bnds(lp, j + 1, bound_type(m->lb[j], m->ub[j]), finite_or_zero(m->lb[j]),
                         finite_or_zero(m->ub[j]));
        if (m->bin[j]) {
            glp_set_col_kind(lp, j + 1, GLP_BV);
        }
        glp_set_obj_coef(lp, j + 1, m->cost[j]);
    }
    if (m->nrows > 0) {
        glp_add_rows(lp, m->nrows);
    }
    for (int i = 0; i < m->nrows; i++) {
        glp_set_row_bnds(lp, i + 1, bound_type(m->lo[i], m->hi[i]), finite_or_zero(m->lo[i]),
                         finite_or_zero(m->hi[i]));
    }
    glp_load_matrix(lp, m->nnz, m->ia, m->ja, m->ar);
    glp_scale_prob(lp, GLP_SF_AUTO);

    glp_init_smcp(&smcp);
    smcp.msg_lev = GLP_MSG_OFF;
    smcp.tm_lim = (int)lp_ms;
    smcp.meth = GLP_DUALP; /* far fewer iterations than primal here from the slack basis */
    ret = glp_simplex(lp, &smcp);
    status = glp_get_status(lp);
    if (ret == 0 && (status == GLP_NOFEAS || status == GLP_UNBND)) {
        rc = CM_E_NOTFOUND;
        goto out;
    }
    if (ret == 0 && status == GLP_OPT) {
        glp_init_iocp(&iocp);
        iocp.msg_lev = GLP_MSG_OFF;
        iocp.tm_lim = (int)(tm_ms > lp_ms ? tm_ms - lp_ms : 1);
        iocp.cb_func = offer_starts;
        iocp.cb_info = m;
        m->offered = 0;
        ret = glp_intopt(lp, &iocp);
        status = glp_mip_status(lp);
        if (status == GLP_OPT || status == GLP_FEAS) {
            for (int j = 0; j < m->ncols; j++) {
                x[j] = glp_mip_col_val(lp, j + 1);
            }
            *time_limited = ret == GLP_ETMLIM;
            rc = 0;
            goto out;
        }
        if (ret == 0 && status == GLP_NOFEAS) {
            rc = CM_E_NOTFOUND;
            goto out;
        }
    }
    /* Out of time (or the LP failed) before GLPK held an incumbent. */
    *time_limited = ret == GLP_ETMLIM;
    start = best_start(m);
    if (start < 0) {
        rc = CM_E_TIMEOUT;
        goto out;
    }
    memcpy(x, m->starts[start] + 1, (size_t)m->ncols * sizeof(double));
    rc = 0;
out:
    glp_delete_prob(lp);
    /* GLPK keeps an environment per thread until glp_free_env; nothing of
     * ours outlives the call, so it goes too (a solver thread that ends
     * would leak it). The next call starts a fresh one, output off again. */
    glp_free_env();
    return rc;
}
