/*
 * pol_rs_fast.c - "fast": replica selection by FAST-TCP windows per
 * (tenant, node); the law, the choice and the defaults are in pol_rs.h.
 *
 *   on_send ──▶ out++; GET size (EWMA per record; the largest of all, windowed max)
 *   on_done ──▶ out--; RTT sample ──▶ EWMA and deviation, base (windowed min)
 *                                └─▶ at most every 2 RTTs: the window law, whose
 *                                    alpha follows weight and GET size
 *   choose  ──▶ the tenant's weight into its records (made if need be);
 *               free window fraction ((floor(w) - out) / floor(w)), RTT, data before parity;
 *               a slow node quiet for FAST_PROBE_NS is asked again (a probe)
 *   overdue ──▶ each asked holder: asked + RTT + 4 deviations, in [floor, slow_ns]
 *
 * State: peer records keyed by (tenant, node) in an open-addressing table
 * (linear probing), rebuilt when an insert would fill more than half of it:
 * records idle for FAST_IDLE_NS with nothing outstanding are left out, and
 * the new table is at most a quarter full, so rebuilds are amortized O(1)
 * and memory follows the pairs in use. A rebuild moves the records: no
 * pointer to one is kept across an insert (on_send and choose insert).
 *
 * Invariants: nout counts every GET between on_send and on_done, with a
 * record or not (one that could not be made is not tracked), so choose
 * returns -EAGAIN only while some GET is outstanding, as the read path
 * requires. A record's window is within [FAST_WMIN, FAST_WMAX]; it is
 * "full" when floor(w) <= out, which needs out >= 1. Its alpha is within
 * [FAST_ALPHA, FAST_ALPHA_MAX].
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pol_rs_impl.h"

#define FAST_ALPHA 4.0         /* requests a tenant keeps queued at a node: the least */
#define FAST_ALPHA_MAX 32.0    /* and the most, whatever its weight and GET size */
#define FAST_COST_BYTES 8192.0 /* below this a GET costs a node about its count */
#define FAST_GAMMA 0.5
#define FAST_W0 8.0
#define FAST_WMIN 1.0
#define FAST_WMAX 64.0
#define FAST_MARGIN 2.0 /* "clearly slower": an RTT above twice another's, and above the floor */
#define FAST_FLOOR_NS 5000000ull        /* never overdue before, never slow below */
#define FAST_BASE_HALF_NS 5000000000ull /* base RTT: least sample of the last 5-10 s */
#define FAST_IDLE_NS 60000000000ull
#define FAST_PROBE_NS 1000000000ull /* a slow node is asked again after this quiet */
#define FAST_TRIAL 4 /* answers a node probed back to speed gets before it may count slow */
#define FAST_NONE UINT64_MAX

/* The least value noted in this half window and in the one before it:
 * a minimum that forgets values 5-10 s old. */
struct fast_min {
    uint64_t cur, prev; /* FAST_NONE: none */
    uint64_t since;     /* start of this half window */
};

struct fast_peer {
    uint64_t key;         /* tenant << 32 | node */
    double w;             /* window, requests */
    double weight;        /* the tenant's, >= 1 (pol_rs_view) */
    double bytes;         /* GET size, EWMA; 0: none sent yet */
    double srtt, rttvar;  /* ns; srtt 0: no sample yet */
    struct fast_min base; /* base RTT */
    uint64_t next_update; /* the window law applies from then on */
    uint64_t last_ns;     /* last send or end */
    uint64_t sampled_ns;  /* last RTT sample */
    uint32_t trial;       /* answers left of a trial: never slow, RTT gain 1/2 */
    uint32_t out;
    int used;
};

struct fast {
    struct fast_peer *tab;
    size_t cap; /* 0 or a power of two; n < cap */
    size_t n;
    uint64_t nout;
    struct fast_min big; /* of ~bytes: the largest GET sent, of any pair, windowed */
};

/* What choose knows of one position. */
struct fast_pos {
    long free;   /* floor(window) - outstanding, less what this choice takes */
    long win;    /* floor(window), >= 1 */
    double srtt; /* 0: unknown */
    int slow;    /* RTT above FAST_MARGIN times another candidate's */
    int exempt;  /* never slow: its probe is due, or it is on trial */
    int cls;     /* 0 wanted (or any copy), 1 other data, 2 parity */
    uint64_t tie;
};

static uint64_t
fast_key(uint32_t tenant, uint32_t node)
{
    return (uint64_t)tenant << 32 | node;
}

static size_t
fast_slot(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct fast_peer *
fast_find(const struct fast *f, uint64_t key)
{
    size_t i;

    if (f->cap == 0) {
        return NULL;
    }
    for (i = fast_slot(key, f->cap); f->tab[i].used; i = (i + 1) & (f->cap - 1)) {
        if (f->tab[i].key == key) {
            return &f->tab[i];
        }
    }
    return NULL;
}

static int
fast_idle(const struct fast_peer *p, uint64_t now)
{
    return p->out == 0 && now >= p->last_ns && now - p->last_ns >= FAST_IDLE_NS;
}

static void
fast_place(struct fast_peer *tab, size_t cap, const struct fast_peer *p)
{
    size_t i = fast_slot(p->key, cap);

    while (tab[i].used) {
        i = (i + 1) & (cap - 1);
    }
    tab[i] = *p;
}

/* The table without idle records, at most a quarter full. 0 or -ENOMEM. */
static int
fast_rebuild(struct fast *f, uint64_t now)
{
    size_t live = 0, cap = 16, i;
    struct fast_peer *tab;

    for (i = 0; i < f->cap; i++) {
        live += f->tab[i].used && !fast_idle(&f->tab[i], now);
    }
    while ((live + 1) * 4 > cap) {
        cap *= 2;
    }
    tab = calloc(cap, sizeof(*tab));
    if (tab == NULL) {
        return -ENOMEM;
    }
    for (i = 0; i < f->cap; i++) {
        if (f->tab[i].used && !fast_idle(&f->tab[i], now)) {
            fast_place(tab, cap, &f->tab[i]);
        }
    }
    free(f->tab);
    f->tab = tab;
    f->cap = cap;
    f->n = live;
    return 0;
}

/* The record of (tenant, node), made if need be; NULL when out of memory. */
static struct fast_peer *
fast_get(struct fast *f, uint32_t tenant, uint32_t node, uint64_t now)
{
    uint64_t key = fast_key(tenant, node);
    struct fast_peer *p = fast_find(f, key), fresh = {0};

    if (p != NULL) {
        return p;
    }
    if ((f->n + 1) * 2 > f->cap && fast_rebuild(f, now) != 0 && f->n + 1 >= f->cap) {
        return NULL; /* keep a free slot: probing ends there */
    }
    fresh.key = key;
    fresh.w = FAST_W0;
    fresh.weight = 1;
    fresh.base = (struct fast_min){FAST_NONE, FAST_NONE, now};
    fresh.last_ns = now;
    fresh.used = 1;
    fast_place(f->tab, f->cap, &fresh);
    f->n++;
    return fast_find(f, key);
}

static uint64_t
fast_min_get(const struct fast_min *m)
{
    return m->cur < m->prev ? m->cur : m->prev;
}

/* A minimum that forgets values 5-10 s old: for the base RTT, so a node
 * whose path got slower for good gets a new base instead of a window that
 * shrinks forever; for the largest GET, so a size no longer asked for
 * stops counting. */
static void
fast_min_note(struct fast_min *m, uint64_t x, uint64_t now)
{
    uint64_t age = now >= m->since ? now - m->since : 0;

    if (age >= 2 * FAST_BASE_HALF_NS) {
        m->prev = FAST_NONE;
    } else if (age >= FAST_BASE_HALF_NS) {
        m->prev = m->cur;
    } else {
        if (x < m->cur) {
            m->cur = x;
        }
        return;
    }
    m->cur = x;
    m->since = now;
}

static uint64_t
fast_base(const struct fast_peer *p)
{
    return fast_min_get(&p->base);
}

/* The backlog p's window aims at: FAST_ALPHA x weight x how many of p's
 * GETs cost as much as one of the largest (a node's fair queue hands out
 * turns of about the largest GET's cost, and a tenant with fewer waiting
 * than fill its turn loses the rest of it), within [ALPHA, ALPHA_MAX]. */
static double
fast_alpha(const struct fast *f, const struct fast_peer *p)
{
    double big = (double)~fast_min_get(&f->big); /* 0: none */
    double own = p->bytes > FAST_COST_BYTES ? p->bytes : FAST_COST_BYTES;
    double ratio = big > own ? big / own : 1;
    double a = FAST_ALPHA * p->weight * ratio;

    return a < FAST_ALPHA ? FAST_ALPHA : a > FAST_ALPHA_MAX ? FAST_ALPHA_MAX : a;
}

/* w <- min(2w, (1 - g) w + g (base/RTT w + a)), within [WMIN, WMAX]. */
static void
fast_law(struct fast_peer *p, double alpha)
{
    double q = (double)fast_base(p) / p->srtt;
    double w = (1 - FAST_GAMMA) * p->w + FAST_GAMMA * ((q < 1 ? q : 1) * p->w + alpha);

    if (w > 2 * p->w) {
        w = 2 * p->w;
    }
    p->w = w < FAST_WMIN ? FAST_WMIN : w > FAST_WMAX ? FAST_WMAX : w;
}

/* One RTT sample; is_base: a real answer (a censored one only bounds the
 * RTT from below, so it never lowers the base). */
static void
fast_sample(const struct fast *f, struct fast_peer *p, uint64_t rtt, int is_base, uint64_t now)
{
    double s = rtt > 0 ? (double)rtt : 1;

    p->sampled_ns = now;
    if (p->srtt == 0) {
        p->srtt = s;
        p->rttvar = s / 2;
        p->next_update = now + 2 * rtt;
    } else {
        p->rttvar += (fabs(s - p->srtt) - p->rttvar) / 4;
        p->srtt += (s - p->srtt) / (p->trial > 0 ? 2 : 8);
    }
    if (is_base) {
        fast_min_note(&p->base, rtt, now);
    }
    if (now >= p->next_update && fast_base(p) != FAST_NONE) {
        fast_law(p, fast_alpha(f, p));
        p->next_update = now + (uint64_t)(2 * p->srtt);
    }
}

/* ---- ops -------------------------------------------------------------- */

static int
fast_create(const struct pol_rs_cfg *cfg, struct pol_rs **out)
{
    int rc = pol_rs_base_create(&pol_rs_fast_ops, cfg, sizeof(struct fast), out);

    if (rc == 0) {
        struct fast *f = (*out)->priv;
        f->big = (struct fast_min){FAST_NONE, FAST_NONE, 0};
    }
    return rc;
}

static void
fast_destroy(struct pol_rs *rs)
{
    if (rs != NULL) {
        free(((struct fast *)rs->priv)->tab);
        pol_rs_base_destroy(rs);
    }
}

static uint64_t
fast_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A slow node is asked nothing, so nothing would tell when it is fast
 * again: once quiet (nothing outstanding) for FAST_PROBE_NS it is asked
 * as if it were not slow, one probe a second at most, since a probe is
 * hedged like any GET (overdue) and its end makes the node busy again.
 * A probe answered in less than 1/FAST_MARGIN of the estimate starts a
 * trial (fast_on_done): the first answer after a pause is in TCP slow
 * start again, 3-6 times slower than the next, and alone it would call
 * the node slow for another second. */
static int
fast_exempt(const struct fast_peer *p, uint64_t now)
{
    return p != NULL && (p->trial > 0 || (p->out == 0 && now >= p->last_ns + FAST_PROBE_NS));
}

/* Fills x[j] for the positions of set, and gives their records (made if
 * need be: a window's alpha needs the weight before its first sample) the
 * view's weight. Stripes: an RTT more than FAST_MARGIN times the least one
 * among those with room, and over FAST_FLOOR_NS, is slow (below a few ms
 * the RTT of a chunk is noise: the first answer after a pause, in TCP slow
 * start again, takes 3-6 times the others'); copies are told apart by how
 * full their windows are alone. */
static void
fast_positions(struct fast *f, const struct pol_rs_view *v, uint64_t set, uint64_t rand,
               uint64_t now, struct fast_pos *x)
{
    double least = 0, weight = v->weight >= 1 ? v->weight : 1; /* NaN: 1 */
    uint64_t s;

    for (s = set; s != 0; s &= s - 1) {
        unsigned j = (unsigned)__builtin_ctzll(s);
        struct fast_peer *p = fast_get(f, v->tenant, v->holders[j], now);
        if (p != NULL) {
            p->weight = weight;
        }
        x[j].win = (long)floor(p != NULL ? p->w : FAST_W0);
        x[j].free = x[j].win - (long)(p != NULL ? p->out : 0);
        x[j].srtt = p != NULL ? p->srtt : 0;
        x[j].cls = v->k == 1 || (v->want >> j & 1) ? 0 : j < v->k ? 1 : 2;
        x[j].tie = fast_mix(rand + (j + 1) * 0x9e3779b97f4a7c15ull);
        x[j].exempt = fast_exempt(p, now);
        if (x[j].free >= 1 && x[j].srtt > 0 && (least == 0 || x[j].srtt < least)) {
            least = x[j].srtt;
        }
    }
    for (s = set; s != 0; s &= s - 1) {
        unsigned j = (unsigned)__builtin_ctzll(s);
        x[j].slow = v->k > 1 && least > 0 && x[j].srtt > FAST_MARGIN * least &&
                    x[j].srtt > (double)FAST_FLOOR_NS && !x[j].exempt;
    }
}

/* Position j takes a slot of its node's window for every position there. */
static void
fast_take(const struct pol_rs_view *v, uint64_t set, unsigned j, struct fast_pos *x)
{
    for (; set != 0; set &= set - 1) {
        unsigned i = (unsigned)__builtin_ctzll(set);
        if (v->holders[i] == v->holders[j]) {
            x[i].free--;
        }
    }
}

static int
fast_better(const struct fast_pos *a, const struct fast_pos *b)
{
    if (a->slow != b->slow) {
        return b->slow;
    }
    if (a->cls != b->cls) {
        return a->cls < b->cls;
    }
    /* The larger free fraction of its window (free_a / win_a > free_b / win_b). */
    if (a->free * b->win != b->free * a->win) {
        return a->free * b->win > b->free * a->win;
    }
    return a->tie < b->tie;
}

/* Up to need positions of set, best first; room: only while they have a
 * free slot. */
static uint64_t
fast_pick(const struct pol_rs_view *v, uint64_t set, int need, int room, struct fast_pos *x)
{
    uint64_t pick = 0, s;

    for (; need > 0; need--) {
        int best = -1;
        for (s = set & ~pick; s != 0; s &= s - 1) {
            int j = __builtin_ctzll(s);
            if ((!room || x[j].free >= 1) && (best < 0 || fast_better(&x[j], &x[best]))) {
                best = j;
            }
        }
        if (best < 0) {
            break;
        }
        pick |= 1ull << best;
        fast_take(v, set, (unsigned)best, x);
    }
    return pick;
}

static int
fast_choose(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns, uint64_t rand,
            uint64_t *ask)
{
    struct fast *f = rs->priv;
    struct fast_pos x[64];
    uint64_t cand = v->usable & ~(v->present | v->out | v->failed | v->excl);
    uint64_t coming = v->out & ~v->slow;
    uint64_t direct = v->want & ~v->present & ~coming;
    int need = (int)v->k - __builtin_popcountll(v->present | coming);
    uint64_t pick;

    *ask = 0;
    if (direct == 0 || need <= 0) {
        return 0;
    }
    /* Fewer GETs than a rebuild: the wanted chunks. */
    if (v->k > 1 && (direct & ~cand) == 0 && __builtin_popcountll(direct) < need) {
        cand = direct;
        need = __builtin_popcountll(direct);
    }
    fast_positions(f, v, cand, rand, now_ns, x);
    pick = fast_pick(v, cand, need, 1, x);
    if (pick == 0) {
        /* Held only while a window may open: some GET is out, and enough
         * holders are left to serve the read. */
        if (f->nout > 0 && __builtin_popcountll(cand) >= need) {
            return -EAGAIN;
        }
        fast_positions(f, v, cand, rand, now_ns, x);
        pick = fast_pick(v, cand, need, 0, x);
    }
    *ask = pick;
    return 0;
}

static void
fast_on_send(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t now_ns)
{
    struct fast *f = rs->priv;
    struct fast_peer *p = fast_get(f, tenant, node, now_ns);

    f->nout++;
    fast_min_note(&f->big, ~(uint64_t)bytes, now_ns);
    if (p != NULL) {
        p->out++;
        p->last_ns = now_ns;
        p->bytes = p->bytes == 0 ? (double)bytes : p->bytes + ((double)bytes - p->bytes) / 8;
    }
}

static void
fast_on_done(struct pol_rs *rs, uint32_t tenant, uint32_t node, uint32_t bytes, uint64_t rtt_ns,
             enum pol_rs_outcome outcome, uint64_t now_ns)
{
    struct fast *f = rs->priv;
    struct fast_peer *p = fast_find(f, fast_key(tenant, node));

    (void)bytes;
    if (f->nout > 0) {
        f->nout--;
    }
    if (p == NULL || p->out == 0) {
        return; /* its send was not tracked */
    }
    p->out--;
    p->last_ns = now_ns;
    if (outcome == POL_RS_FAILED) {
        p->w = p->w / 2 < FAST_WMIN ? FAST_WMIN : p->w / 2;
    }
    if (outcome == POL_RS_ANSWERED) {
        /* An estimate with no sample for FAST_PROBE_NS before this GET
         * was sent (a probe, a node read again after a pause) is stale:
         * this answer starts it again rather than being 1/8 of it, so a
         * node fast again is told from one probe, not thirty; if under
         * 1/FAST_MARGIN of it, a trial starts too (fast_exempt). */
        int starts = p->srtt == 0;
        if (!starts && now_ns >= rtt_ns && now_ns - rtt_ns >= p->sampled_ns + FAST_PROBE_NS) {
            p->trial = (double)rtt_ns * FAST_MARGIN < p->srtt ? FAST_TRIAL : 0;
            p->srtt = 0;
            starts = 1;
        }
        fast_sample(f, p, rtt_ns, 1, now_ns);
        if (!starts && p->trial > 0) {
            p->trial--;
        }
    } else if (p->srtt == 0 || (double)rtt_ns > p->srtt) {
        /* A GET ended unanswered took at least rtt_ns: it raises the
         * estimate, or starts it. Without the start, a node whose every
         * GET is hedged and canceled (a slow link: each answer longer than
         * the hedge's wait) would never get an estimate, never count slow,
         * and be asked for every read, its link ever fuller with answers
         * no one waits for. */
        fast_sample(f, p, rtt_ns, 0, now_ns);
    }
}

/* How long after its ask a holder on node counts slow. */
static uint64_t
fast_deadline(const struct fast *f, const struct pol_rs_cfg *cfg, uint32_t tenant, uint32_t node)
{
    const struct fast_peer *p = fast_find(f, fast_key(tenant, node));
    double d;

    if (p == NULL || p->srtt == 0) {
        return cfg->slow_ns;
    }
    d = p->srtt + 4 * p->rttvar;
    if (d < (double)FAST_FLOOR_NS) {
        d = (double)FAST_FLOOR_NS;
    }
    return d < (double)cfg->slow_ns ? (uint64_t)d : cfg->slow_ns;
}

static uint64_t
fast_overdue(struct pol_rs *rs, const struct pol_rs_view *v, uint64_t now_ns, uint64_t *next_ns)
{
    const struct fast *f = rs->priv;
    uint64_t due = 0, s;

    *next_ns = 0;
    if (rs->cfg.slow_ns == 0) {
        return 0;
    }
    for (s = v->out & ~v->slow; s != 0; s &= s - 1) {
        unsigned j = (unsigned)__builtin_ctzll(s);
        uint64_t at = v->asked_ns[j] + fast_deadline(f, &rs->cfg, v->tenant, v->holders[j]);
        if (now_ns >= at) {
            due |= 1ull << j;
        } else if (*next_ns == 0 || at < *next_ns) {
            *next_ns = at;
        }
    }
    return due;
}

static void
fast_peers(struct pol_rs *rs, void (*cb)(void *arg, const struct pol_rs_peer *p), void *arg)
{
    const struct fast *f = rs->priv;
    size_t i;

    for (i = 0; i < f->cap; i++) {
        const struct fast_peer *p = &f->tab[i];
        uint64_t base = fast_base(p);
        if (!p->used) {
            continue;
        }
        struct pol_rs_peer info = {
            .tenant = (uint32_t)(p->key >> 32),
            .node = (uint32_t)p->key,
            .out = p->out,
            .window = p->w,
            .alpha = fast_alpha(f, p),
            .rtt_ns = (uint64_t)p->srtt,
            .rttvar_ns = (uint64_t)p->rttvar,
            .base_ns = base == FAST_NONE ? 0 : base,
        };
        cb(arg, &info);
    }
}

const struct pol_rs_ops pol_rs_fast_ops = {
    .name = "fast",
    .create = fast_create,
    .destroy = fast_destroy,
    .choose = fast_choose,
    .on_send = fast_on_send,
    .on_done = fast_on_done,
    .overdue = fast_overdue,
    .peers = fast_peers,
};
