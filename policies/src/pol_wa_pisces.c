/*
 * pol_wa_pisces.c - the "pisces" weight allocator: each tenant's local
 * weights follow where its demand is, moved only around cycles so that
 * the invariants of pol_wa.h hold after every step.
 *
 * One step (the controller calls it about once a second):
 *
 * 1. Project the caller's weights onto the invariants and smooth the
 *    measurements (EWMA, time constant cfg.smooth) - pol_wa.c.
 *
 * 2. Target, over the up nodes: tau = each tenant's demand shape (its
 *    share of its demand per node, d[t][n] / D_t; a tenant without demand
 *    takes the even spread 1/N_up, so an idle tenant drifts back to even
 *    and is ready to wake up) fitted by IPF to the marginals in force
 *    (row: t's weight on the up nodes R_t; column: the node's weight),
 *    tau[t][n] = r_t * c_n * d[t][n] / D_t. Demand is arrivals at the
 *    node's FQ: the served rate would hide the demand a low weight turns
 *    away. Within a busy node, tau splits the weight in proportion to
 *    the tenants' demand there (times r_t): what a fair queue needs to
 *    give closed-loop tenants with fixed read splits ("uniform" replica
 *    selection) equal rates, when that node holds them back. The
 *    per-tenant target R_t * d / D_t alone does not fit the nodes' sums:
 *    where the demand shares add up to more than the node's weight
 *    (a hot node), every tenant wanted weight, nobody had any to spare,
 *    and the weights stayed at a point that gave one tenant at the hot
 *    node 0.6 of the weight per unit of demand that another had.
 *    Mismatch m[t][n] = (tau - w) / R_t (a share of the row); when the
 *    demand shapes fit the sums, tau = R_t * d / D_t and m is the
 *    per-tenant mismatch.
 *
 * 3. Budgets for this step, each damped by eta (one step closes at most
 *    eta of a gap, so measurements catch up before more moves):
 *        need[t][n]  = eta * max(0,  tau - w - band)      t wants weight at n
 *        spare[t][n] = eta * max(0,  w - tau - band)      t can give weight at n
 *        out[t][n]   = eta * (w[t][n] - floor_t)          no cell loses more
 *    with band = dead_band * max(tau, w), relative to the cell: a tenant's
 *    rate at the node holding it back follows its weight there, so an
 *    absolute band (dead_band of a row, 0.18 W on 6 nodes, about a fifth
 *    of such a cell) left rates a fifth apart. A deviation within the
 *    band is noise, never a reason to move, and only the part beyond it
 *    is corrected: moves fade out at the band's edge instead of jumping
 *    there (under noisy demand a hard threshold makes the weights
 *    chatter). Where t is not pressed (below) and is pressed nowhere it
 *    wants weight, spare is at most what t leaves idle there: a give
 *    beyond that presses t at a node where it gets all it asks (hot/wide
 *    below with wide asking for less than a node), for weight it cannot
 *    use; and a cell where t is refused (arrivals not served) gives by
 *    the target only if t is pressed where it wants weight.
 *
 * 4. Fairness. Demand shares alone miss a tenant that is short of its
 *    share of the cluster: "hot" has all its demand on n0..n2, "wide" is
 *    spread evenly over n0..n5 but asks for only half a node at each.
 *    With even weights hot gets half of n0..n2 and wide the rest plus its
 *    half of n3..n5; the target gives hot all of n0..n2, which wide,
 *    served all it asks there, must not give away (step 3), so no
 *    classic swap fits. Throughput is the measure of fairness (Pisces
 *    moves weight by latency and demand together), so the step also reads
 *    what was served:
 *      - a cell is pressed when the node did not serve what t asked there:
 *        demand - served > pressed_frac * demand, or t waits there (mean
 *        queue wait > pressed_wait) and uses all its weight there: its
 *        share of what the node served is at least (1 - pressed_frac) of
 *        its share of the node's weight (the least of this step's and
 *        the last two steps' weights: a node applies a new weight a
 *        heartbeat late and reports rates over two, so a tenant just
 *        given weight has not used it yet). Closed-loop clients behind
 *        replica selection show backlog as wait, not as unserved
 *        arrivals (the gateway caps each tenant's reads in flight per
 *        node, so arrivals follow service), but on a busy node every
 *        tenant waits for its turn in the fair queue's round, even one
 *        that has too few reads there to fill its share; wait alone
 *        would press every cell of every tenant, and a tenant short of
 *        its share could never pay back at the nodes where its weight
 *        lies idle. What a cell leaves idle, idle[t][n] = w - (served
 *        share) * (the node's weight), bounds what it pays back there;
 *      - phi_t = served_t / W_t, throughput per unit of global weight;
 *        u is richer than t when both have demand and
 *        phi_u > (1 + fair_band) * phi_t (pairwise: no estimate of the
 *        fair level is needed, and a tenant asking for little has a low
 *        phi but is never pressed, so nobody gives to it);
 *      - fneed[t][n] = PISCES_FAIR_GAIN * eta * gap * max(w[t][n], W_t)
 *        where t is pressed, gap = max over richer u holding weight at n
 *        of (phi_u - phi_t) / (phi_u + phi_t), less fair_band / 2: the
 *        further behind t is, the faster it catches up, and the moves
 *        fade out (rather than stop short) at the band's edge. A cell
 *        pressed only by its wait gets fneed where t waits at least half
 *        as long as at its longest wait: a closed-loop tenant's reads
 *        pile up at the node that holds it back, and weight at another
 *        busy node does not raise its rate;
 *      - a cell's intake is the larger of need and fneed, not their sum
 *        (a push along either edge uses up both).
 *
 * 5. A graph on tenants: an edge u -> t at node a means "u gives t weight
 *    at a". Its capacity is the smallest budget it uses, never taking u
 *    below its floor, and it exists when
 *      C (classic):  spare[u][a] > 0, need[t][a] > 0, unless u is pressed
 *                    at a and t is richer than u (never hand weight u is
 *                    short of to a richer tenant), or u is refused at a
 *                    and pressed nowhere it wants weight;
 *      F (fairness): u richer than t, t pressed at a (uses fneed[t][a]);
 *      R (return):   t richer than u, u neither pressed at a nor wanting
 *                    weight there (tau - w <= band): the poorer tenant pays
 *                    with weight it does not use (at most idle[u][a]).
 *    F edges run from richer to poorer and R edges the other way, so a
 *    cycle of fairness moves always pairs a gift with a payment. Between
 *    two tenants the widest edge over the up nodes counts (ties: the node
 *    where the receiver waits longest).
 *
 * 6. Find the widest cycle (the one whose narrowest edge is widest, see
 *    pol_wa_cycle.c) and push its bottleneck delta around it; consume
 *    the budgets; update the edges of the tenants on it; repeat, at most
 *    max_cycles times or until the widest cycle is negligible. On a cycle
 *    each tenant receives delta at one node and gives delta at another
 *    (row sums unchanged), and each
 *    edge moves delta between two tenants on one node (column sums
 *    unchanged); budgets never take a cell below its floor. So the
 *    invariants hold exactly, up to rounding. A pair of edges u -> t,
 *    t -> u is the reciprocal swap; longer cycles let three or more
 *    tenants trade when no two of them match.
 *
 * Example: the reciprocal swap, 2 tenants (W = 1), 2 saturated nodes,
 * eta = 0.5.
 *
 *             demand share   weight (share)        m
 *              n0     n1      n0       n1        n0     n1
 *      A      .75    .25     1 (.5)   1 (.5)    +.25   -.25
 *      B      .25    .75     1 (.5)   1 (.5)    -.25   +.25
 *
 *   need[A][n0] = spare[B][n0] = .5 * .25 * 2 = .25  -> edge B -> A at n0
 *   need[B][n1] = spare[A][n1] = .25                 -> edge A -> B at n1
 *   widest cycle A -> B -> A, delta = .25:
 *
 *             n0     n1                  n0      n1
 *      A      1      1        ==>       1.25    .75      row 2
 *      B      1      1                   .75   1.25      row 2
 *           col 2  col 2                col 2   col 2
 *
 *   (the demand shapes fit the sums here, so tau = (1.5, .5) and
 *   (.5, 1.5); with dead_band 0; the default .03 makes that step about
 *   .23). The next steps close half of the rest each time (1.375,
 *   1.4375, ...) toward A = (1.5, .5), where the shares match, stopping
 *   dead_band of the cell short.
 *
 * Cost per step (T tenants, N nodes, k tenants on a cycle): O(T^2 * N) to
 * set up and build the graph (the fit: up to PISCES_FIT_SWEEPS passes of
 * O(T * N)), then per cycle O(k * T * N) to update it
 * and O(T^2 log T) expected to find the widest cycle.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pol_wa_impl.h"

enum pisces_kind { EDGE_NONE, EDGE_CLASSIC, EDGE_FAIR, EDGE_RETURN };

/* Why a cell is pressed (bits of pisces.pressed), and what a tenant is
 * (bits of pisces.constrained): pressed somewhere, pressed where it wants
 * weight by the target. */
enum { PRESSED_REFUSED = 1, PRESSED_WAITS = 2 };
enum { CONSTR_PRESSED = 1, CONSTR_NEEDS = 2 };

/* Moves below this fraction of the mean global weight are not worth a cycle. */
#define PISCES_MIN_MOVE 1e-4
/* Fairness moves close this fraction of what eta closes of a mismatch.
 * Throughput answers a weight a step or two late (a node applies it a
 * heartbeat late and reports rates over two), and every richer tenant
 * gives to the poorest at once: at the full eta, closed-loop tenants
 * behind uniform reads swung by a node's share with a period of 6-8 s. */
#define PISCES_FAIR_GAIN 0.5
/* The target's fit: passes per step and when it stops. A tenant whose
 * demand fills whole nodes (hot/wide) puts the fit on the boundary, where
 * it converges as 1/passes: 1000 leave it within about 0.01 W. */
#define PISCES_FIT_SWEEPS 1000
#define PISCES_FIT_TOL 1e-6

/* Everything one step works on; arrays [T * N] unless noted. */
struct pisces {
    const struct pol_wa_view *v;
    const struct pol_wa_cfg *cfg;
    size_t T, N;
    double *w;
    double *wlow;          /* the least weights of the last three steps */
    struct pol_wa_cell *c; /* smoothed measurements */
    double *m, *need, *spare, *out, *fneed, *idle;
    double *tau, *fit;               /* the target; the fit's scratch */
    double *rows, *wt;               /* [T]: an active row's weight on the up nodes, W_t */
    double *colf;                    /* [N]: an up node's weight less the idle tenants' */
    unsigned char *pressed, *unused; /* unused: neither pressed nor wanting weight */
    double *floor_, *phi;            /* [T] */
    double *colw, *cols;             /* [N]: a node's weight and what it served */
    unsigned char *active;           /* [T]: has demand on an up node */
    unsigned char *constrained;      /* [T]: pressed on an up node */
    double *cap;                     /* [T * T]: widest edge u -> t */
    uint32_t *via;                   /* [T * T]: its node */
    unsigned char *kind;             /* [T * T]: its kind */
    size_t *cyc;                     /* [T]: the cycle found */
    struct pol_wa_cyc cs;            /* its search's scratch */
};

static void
pisces_free(struct pisces *p)
{
    free(p->w);
    free(p->wlow);
    free(p->c);
    free(p->m);
    free(p->need);
    free(p->spare);
    free(p->out);
    free(p->fneed);
    free(p->idle);
    free(p->tau);
    free(p->fit);
    free(p->rows);
    free(p->wt);
    free(p->colf);
    free(p->pressed);
    free(p->unused);
    free(p->floor_);
    free(p->phi);
    free(p->colw);
    free(p->cols);
    free(p->active);
    free(p->constrained);
    free(p->cap);
    free(p->via);
    free(p->kind);
    free(p->cyc);
    pol_wa_cyc_fini(&p->cs);
}

static int
pisces_alloc(struct pisces *p)
{
    size_t TN = p->T * p->N, TT = p->T * p->T, T = p->T;

    /* +1: never malloc(0), so NULL always means out of memory. */
    p->w = calloc(TN + 1, sizeof(*p->w));
    p->wlow = calloc(TN + 1, sizeof(*p->wlow));
    p->c = calloc(TN + 1, sizeof(*p->c));
    p->m = calloc(TN + 1, sizeof(*p->m));
    p->need = calloc(TN + 1, sizeof(*p->need));
    p->spare = calloc(TN + 1, sizeof(*p->spare));
    p->out = calloc(TN + 1, sizeof(*p->out));
    p->fneed = calloc(TN + 1, sizeof(*p->fneed));
    p->idle = calloc(TN + 1, sizeof(*p->idle));
    p->tau = calloc(TN + 1, sizeof(*p->tau));
    p->fit = calloc(TN + 1, sizeof(*p->fit));
    p->rows = calloc(T + 1, sizeof(*p->rows));
    p->wt = calloc(T + 1, sizeof(*p->wt));
    p->colf = calloc(p->N + 1, sizeof(*p->colf));
    p->pressed = calloc(TN + 1, sizeof(*p->pressed));
    p->unused = calloc(TN + 1, sizeof(*p->unused));
    p->floor_ = calloc(T + 1, sizeof(*p->floor_));
    p->phi = calloc(T + 1, sizeof(*p->phi));
    p->colw = calloc(p->N + 1, sizeof(*p->colw));
    p->cols = calloc(p->N + 1, sizeof(*p->cols));
    p->active = calloc(T + 1, sizeof(*p->active));
    p->constrained = calloc(T + 1, sizeof(*p->constrained));
    p->cap = calloc(TT + 1, sizeof(*p->cap));
    p->via = calloc(TT + 1, sizeof(*p->via));
    p->kind = calloc(TT + 1, sizeof(*p->kind));
    p->cyc = calloc(T + 1, sizeof(*p->cyc));
    if (p->w == NULL || p->wlow == NULL || p->c == NULL || p->m == NULL || p->need == NULL ||
        p->spare == NULL || p->out == NULL || p->fneed == NULL || p->idle == NULL ||
        p->tau == NULL || p->fit == NULL || p->rows == NULL || p->wt == NULL || p->colf == NULL ||
        p->pressed == NULL || p->unused == NULL || p->floor_ == NULL || p->phi == NULL ||
        p->colw == NULL || p->cols == NULL || p->active == NULL || p->constrained == NULL ||
        p->cap == NULL || p->via == NULL || p->kind == NULL || p->cyc == NULL) {
        return -ENOMEM;
    }
    return pol_wa_cyc_init(&p->cs, T);
}

/* 1 if u and t have demand and u is clearly better served per weight. */
static int
pisces_richer(const struct pisces *p, size_t u, size_t t)
{
    return p->active[u] && p->active[t] && p->phi[u] > (1.0 + p->cfg->fair_band) * p->phi[t];
}

/* Step 2: the target tau over the up nodes: each tenant's demand shape (its
 * share of its demand per node) fitted to the marginals in force (its
 * weight on the up nodes, each node's weight less what the idle tenants
 * hold there). A tenant without demand targets the even spread W_t and is
 * left out of the fit: it drifts back to even, ready to wake up, rather
 * than away from the nodes the others ask most of. The floors are not
 * part of the fit (a target below a floor only means "give all you can").
 * Down nodes' cells keep tau = w. */
static void
pisces_target(struct pisces *p, size_t nup)
{
    const struct pol_wa_node *nodes = p->v->nodes;
    size_t t, n, k, a, T = p->T, N = p->N, nact = 0;
    double idle = 0.0;

    memcpy(p->tau, p->w, T * N * sizeof(*p->tau));
    for (t = 0; t < T; t++) {
        double D = 0.0, R = 0.0;

        for (n = 0; n < N; n++) {
            if (nodes[n].up) {
                D += p->c[t * N + n].demand;
                R += p->w[t * N + n];
            }
        }
        if (!(D > 0.0)) {
            idle += p->v->tenants[t].weight;
            for (n = 0; n < N; n++) {
                if (nodes[n].up) {
                    p->tau[t * N + n] = p->v->tenants[t].weight;
                }
            }
            continue;
        }
        p->rows[nact] = R;
        p->wt[nact] = p->v->tenants[t].weight;
        for (n = 0, k = 0; n < N; n++) {
            if (nodes[n].up) {
                p->fit[nact * nup + k++] = p->c[t * N + n].demand / D;
            }
        }
        nact++;
    }
    if (nact == 0) {
        return;
    }
    for (n = 0, k = 0; n < N; n++) {
        if (nodes[n].up) {
            p->colf[k++] = p->colw[n] - idle;
        }
    }
    pol_wa_fit(nact, nup, p->rows, p->colf, NULL, p->wt, PISCES_FIT_SWEEPS, PISCES_FIT_TOL, p->fit);
    for (t = 0, a = 0; t < T; t++) {
        double D = 0.0;

        for (n = 0; n < N; n++) {
            D += nodes[n].up ? p->c[t * N + n].demand : 0.0;
        }
        if (!(D > 0.0)) {
            continue;
        }
        for (n = 0, k = 0; n < N; n++) {
            if (nodes[n].up) {
                p->tau[t * N + n] = p->fit[a * nup + k++];
            }
        }
        a++;
    }
}

/* Steps 3-4: mismatch, budgets, pressed cells and fairness budgets.
 * Returns the largest |m| of a tenant with demand. */
static double
pisces_prepare(struct pisces *p)
{
    const struct pol_wa_cfg *cfg = p->cfg;
    const struct pol_wa_node *nodes = p->v->nodes;
    size_t u, t, n, T = p->T, N = p->N, nup = 0;
    double maxm = 0.0;

    for (n = 0; n < N; n++) {
        nup += nodes[n].up != 0;
        for (t = 0; t < T; t++) {
            p->colw[n] += p->w[t * N + n];
            p->cols[n] += p->c[t * N + n].served;
        }
    }
    for (t = 0; t < T; t++) {
        p->floor_[t] = cfg->floor_frac * p->v->tenants[t].weight;
    }
    pisces_target(p, nup);
    for (t = 0; t < T; t++) {
        double W = p->v->tenants[t].weight, D = 0.0, S = 0.0, R = 0.0;
        int any_pressed = 0;

        for (n = 0; n < N; n++) {
            if (nodes[n].up) {
                D += p->c[t * N + n].demand;
                S += p->c[t * N + n].served;
                R += p->w[t * N + n];
            }
        }
        p->active[t] = D > 0.0;
        p->phi[t] = S / W;
        for (n = 0; n < N; n++) {
            size_t i = t * N + n;
            const struct pol_wa_cell *c = &p->c[i];
            double m, used, dev, band;

            if (!nodes[n].up) {
                continue;
            }
            dev = p->tau[i] - p->w[i];
            band = cfg->dead_band * fmax(p->tau[i], p->w[i]);
            m = dev / R;
            p->m[i] = m;
            p->need[i] = cfg->eta * fmax(0.0, dev - band);
            p->spare[i] = cfg->eta * fmax(0.0, -dev - band);
            p->out[i] = cfg->eta * (p->w[i] - p->floor_[t]);
            /* The weight t's service at n stands for: its share of what
             * the node served times the node's weight (a ratio, so any
             * unit of cost). */
            used = p->cols[n] > 0.0 ? c->served / p->cols[n] * p->colw[n] : 0.0;
            p->idle[i] = fmax(0.0, p->w[i] - used);
            p->pressed[i] = 0;
            if (c->demand > 0.0 && c->demand - c->served > cfg->pressed_frac * c->demand) {
                p->pressed[i] |= PRESSED_REFUSED;
            }
            if (c->demand > 0.0 && c->wait > cfg->pressed_wait &&
                used >= (1.0 - cfg->pressed_frac) * fmin(p->w[i], p->wlow[i])) {
                p->pressed[i] |= PRESSED_WAITS;
            }
            p->unused[i] = !p->pressed[i] && dev <= band;
            any_pressed |= p->pressed[i] ? CONSTR_PRESSED : 0;
            any_pressed |= p->pressed[i] && p->need[i] > 0.0 ? CONSTR_NEEDS : 0;
            if (D > 0.0) {
                maxm = fmax(maxm, fabs(m));
            }
        }
        p->constrained[t] = (unsigned char)any_pressed;
        /* Where t is not pressed, its weight matters up to what it uses:
         * a give beyond that presses it there, which pays only when it
         * gains where it is pressed (else: wide, served all it asks at a
         * node a hot tenant fills, has a small share of its demand there
         * and would give its turn away for weight it cannot use). */
        for (n = 0; n < N && !(any_pressed & CONSTR_NEEDS); n++) {
            if (nodes[n].up && !p->pressed[t * N + n]) {
                p->spare[t * N + n] = fmin(p->spare[t * N + n], p->idle[t * N + n]);
            }
        }
    }
    /* Where t is pressed, a richer u holding weight there may give it some:
     * as much as the widest (soft) gap to such a u says, per cell. A cell
     * pressed only by its wait counts where t waits at least half as long
     * as at its longest: a closed-loop tenant's reads pile up at the node
     * that holds it back, and weight elsewhere does not raise its rate
     * (in the uniform-reads model of the unit tests, gifts at every busy
     * node kept the weights swinging). */
    for (t = 0; t < T; t++) {
        double wmax = 0.0;

        for (n = 0; n < N; n++) {
            if (nodes[n].up && (p->pressed[t * N + n] & PRESSED_WAITS)) {
                wmax = fmax(wmax, p->c[t * N + n].wait);
            }
        }
        for (n = 0; n < N && p->constrained[t]; n++) {
            size_t i = t * N + n;
            double gap = 0.0;

            if (!nodes[n].up || !p->pressed[i] ||
                (!(p->pressed[i] & PRESSED_REFUSED) && p->c[i].wait < 0.5 * wmax)) {
                continue;
            }
            for (u = 0; u < T; u++) {
                if (pisces_richer(p, u, t) && p->w[u * N + n] > p->floor_[u]) {
                    gap = fmax(gap, (p->phi[u] - p->phi[t]) / (p->phi[u] + p->phi[t]));
                }
            }
            gap = fmax(0.0, gap - cfg->fair_band / 2.0);
            p->fneed[i] =
                PISCES_FAIR_GAIN * cfg->eta * gap * fmax(p->w[i], p->v->tenants[t].weight);
        }
    }
    return maxm;
}

/* Capacity of the edge u -> t at one node (step 5; ua, ta are the two
 * cells, fwd: u richer than t, back: t richer than u) and its kind. A
 * down node's cells have no out budget, so no edge. */
static double
pisces_edge(const struct pisces *p, size_t u, size_t ua, size_t ta, int fwd, int back,
            unsigned char *kind)
{
    double lim = fmin(p->out[ua], p->w[ua] - p->floor_[u]), best = 0.0;

    *kind = EDGE_NONE;
    if (!(lim > 0.0)) {
        return 0.0;
    }
    if (p->spare[ua] > 0.0 && p->need[ta] > 0.0 && !(p->pressed[ua] && back) &&
        (!(p->pressed[ua] & PRESSED_REFUSED) || (p->constrained[u] & CONSTR_NEEDS))) {
        best = fmin(lim, fmin(p->spare[ua], p->need[ta]));
        *kind = EDGE_CLASSIC;
    }
    if (fwd && p->fneed[ta] > 0.0 && fmin(lim, p->fneed[ta]) > best) {
        best = fmin(lim, p->fneed[ta]);
        *kind = EDGE_FAIR;
    }
    if (back && p->unused[ua] && fmin(lim, p->idle[ua]) > best) {
        best = fmin(lim, p->idle[ua]);
        *kind = EDGE_RETURN;
    }
    return best;
}

/* The widest edge u -> t over the nodes. */
static void
pisces_pair(struct pisces *p, size_t u, size_t t)
{
    size_t a, T = p->T, N = p->N;
    int fwd = pisces_richer(p, u, t), back = pisces_richer(p, t, u);
    double best = 0.0;
    uint32_t via = 0;
    unsigned char kind = EDGE_NONE, k;

    for (a = 0; a < N && u != t; a++) {
        double x = pisces_edge(p, u, u * N + a, t * N + a, fwd, back, &k);

        if (k != EDGE_NONE &&
            (x > best || (x == best && p->c[t * N + a].wait > p->c[t * N + via].wait))) {
            best = x;
            via = (uint32_t)a;
            kind = k;
        }
    }
    p->cap[u * T + t] = kind != EDGE_NONE ? best : 0.0;
    p->via[u * T + t] = via;
    p->kind[u * T + t] = kind;
}

/* Edges touch only the cells of their two tenants: after a push, only the
 * rows and columns of the cycle's tenants change. */
static void
pisces_graph(struct pisces *p, const size_t *only, size_t nonly)
{
    size_t i, u, t, T = p->T;

    if (only == NULL) {
        for (u = 0; u < T; u++) {
            for (t = 0; t < T; t++) {
                pisces_pair(p, u, t);
            }
        }
        return;
    }
    for (i = 0; i < nonly; i++) {
        for (t = 0; t < T; t++) {
            pisces_pair(p, only[i], t);
            pisces_pair(p, t, only[i]);
        }
    }
}

static void
pisces_push(struct pisces *p, size_t len, double delta)
{
    size_t i, T = p->T, N = p->N;

    for (i = 0; i < len; i++) {
        size_t u = p->cyc[i], t = p->cyc[(i + 1) % len];
        size_t a = p->via[u * T + t], ua = u * N + a, ta = t * N + a;

        p->w[ua] -= delta;
        p->w[ta] += delta;
        p->out[ua] = fmax(0.0, p->out[ua] - delta);
        switch (p->kind[u * T + t]) {
        /* A cell's intake is the larger of its two budgets, not their
         * sum: both say how far t is from where it should be at a, and
         * added up they overshoot (with the nodes a step behind, the
         * weights swung). */
        case EDGE_CLASSIC:
            p->spare[ua] = fmax(0.0, p->spare[ua] - delta);
            p->need[ta] = fmax(0.0, p->need[ta] - delta);
            p->fneed[ta] = fmax(0.0, p->fneed[ta] - delta);
            break;
        case EDGE_FAIR:
            p->fneed[ta] = fmax(0.0, p->fneed[ta] - delta);
            p->need[ta] = fmax(0.0, p->need[ta] - delta);
            break;
        case EDGE_RETURN:
            p->idle[ua] = fmax(0.0, p->idle[ua] - delta);
            break;
        default:
            break;
        }
    }
}

static int
pisces_create(const struct pol_wa_cfg *cfg, struct pol_wa **out)
{
    return pol_wa_new(&pol_wa_pisces_ops, cfg, out);
}

static int
pisces_step(struct pol_wa *wa, const struct pol_wa_view *v, double *w_out,
            struct pol_wa_stats *stats)
{
    struct pisces p = {0};
    struct pol_wa_stats st = {0};
    size_t t, n, nup = 0, len = 0;
    double sumw = 0.0;
    int rc = pol_wa_check_view(v);

    if (rc != 0) {
        return rc;
    }
    p.v = v;
    p.cfg = &wa->cfg;
    p.T = v->ntenants;
    p.N = v->nnodes;
    rc = pisces_alloc(&p);
    if (rc == 0) {
        rc = pol_wa_project(v, wa->cfg.floor_frac, p.w, &st.projected);
    }
    if (rc == 0 && v->cells != NULL) {
        rc = pol_wa_smooth(wa, v, p.w, p.c, p.wlow);
    }
    if (rc != 0) {
        goto out;
    }
    for (n = 0; n < p.N; n++) {
        nup += v->nodes[n].up != 0;
    }
    for (t = 0; t < p.T; t++) {
        sumw += v->tenants[t].weight;
    }
    /* A cycle needs two tenants and two nodes to move anything. */
    if (v->cells != NULL && p.T >= 2 && nup >= 2) {
        st.max_mismatch = pisces_prepare(&p);
        pisces_graph(&p, NULL, 0);
        while (st.cycles < wa->cfg.max_cycles) {
            double delta = pol_wa_widest_cycle(&p.cs, p.cap, PISCES_MIN_MOVE * sumw / (double)p.T,
                                               p.cyc, &len);

            if (delta <= 0.0) {
                break;
            }
            pisces_push(&p, len, delta);
            pisces_graph(&p, p.cyc, len);
            st.cycles++;
        }
    }
    st.moved = pol_wa_moved(v->w, p.w, p.T * p.N);
    if (stats != NULL) {
        *stats = st;
    }
    memcpy(w_out, p.w, p.T * p.N * sizeof(*w_out));
out:
    pisces_free(&p);
    return rc;
}

const struct pol_wa_ops pol_wa_pisces_ops = {
    .name = "pisces",
    .create = pisces_create,
    .destroy = pol_wa_free,
    .reset = pol_wa_forget,
    .step = pisces_step,
};
