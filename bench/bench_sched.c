/*
 * bench_sched.c - load schedules: a tenant's rate or concurrency as a
 * function of time (step, ramp, burst, sine), parsed from the value of a
 * rate= or conc= field and evaluated by the load threads.
 *
 * Pure: no I/O, no clock (time is an argument). A parsed schedule is
 * immutable, so every thread evaluates the same one.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "bench.h"

#define MEAN_SAMPLES 100

int
bn_parse_duration(const char *s, size_t len, double *secs)
{
    static const struct {
        const char *sfx;
        double mul;
    } units[] = {{"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
    double mul = 1, v;

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t n = strlen(units[i].sfx);
        if (len > n && memcmp(s + len - n, units[i].sfx, n) == 0) {
            mul = units[i].mul;
            len -= n;
            break;
        }
    }
    if (bn_parse_double(s, len, &v) != 0 || !(v >= 0) || v * mul > BN_SCHED_TMAX) {
        return -EINVAL;
    }
    *secs = v * mul;
    return 0;
}

static int
parse_value(const char *s, size_t len, double *v)
{
    return bn_parse_double(s, len, v) != 0 || !(*v >= 0) || *v > BN_SCHED_VMAX ? -EINVAL : 0;
}

static int
is(const char *k, size_t kl, const char *want)
{
    return strlen(want) == kl && memcmp(k, want, kl) == 0;
}

/* One "k=v" item of a burst or sine schedule; bits in *seen say which came. */
static int
parse_param(struct bn_sched *s, const char *k, size_t kl, const char *v, size_t vl, unsigned *seen)
{
    static const char *const burst[] = {"base", "peak", "every", "for", "at"};
    static const char *const sine[] = {"min", "max", "period", "phase"};
    const char *const *names = s->kind == BN_SCHED_BURST ? burst : sine;
    size_t n = s->kind == BN_SCHED_BURST ? 5 : 4;
    double *dst[] = {&s->lo, &s->hi, &s->period, s->kind == BN_SCHED_BURST ? &s->width : &s->shift,
                     &s->shift};

    for (size_t i = 0; i < n; i++) {
        if (!is(k, kl, names[i])) {
            continue;
        }
        if (*seen & (1u << i)) {
            return -EINVAL;
        }
        *seen |= 1u << i;
        if (i < 2) {
            return parse_value(v, vl, dst[i]);
        }
        if (s->kind == BN_SCHED_SINE && i == 3) {
            int bad = bn_parse_double(v, vl, dst[i]) != 0 || !(*dst[i] >= 0 && *dst[i] < 1);
            return bad ? -EINVAL : 0;
        }
        return bn_parse_duration(v, vl, dst[i]);
    }
    return -EINVAL;
}

static int
check_points(struct bn_sched *s, char *err, size_t cap)
{
    if (s->npts == 0 || s->t[0] != 0) {
        bn_seterr(err, cap,
                  "bad schedule: the first point must be at 0s (e.g. step:0s=100/20s=400)");
        return -EINVAL;
    }
    for (unsigned i = 1; i < s->npts; i++) {
        if (!(s->t[i] > s->t[i - 1])) {
            bn_seterr(err, cap, "bad schedule: point times must increase");
            return -EINVAL;
        }
    }
    return 0;
}

static int
check_params(const struct bn_sched *s, unsigned seen, char *err, size_t cap)
{
    if (s->kind == BN_SCHED_BURST) {
        if ((seen & 0xf) != 0xf || !(s->width > 0) || !(s->period > s->width)) {
            bn_seterr(err, cap,
                      "bad burst schedule (want base=B/peak=P/every=E/for=D[/at=A], "
                      "0 < D < E)");
            return -EINVAL;
        }
    } else if ((seen & 0x7) != 0x7 || !(s->period > 0) || !(s->hi >= s->lo)) {
        bn_seterr(err, cap,
                  "bad sine schedule (want min=L/max=H/period=P[/phase=F], L <= H, "
                  "P > 0, 0 <= F < 1)");
        return -EINVAL;
    }
    return 0;
}

int
bn_sched_parse(struct bn_sched *s, const char *v, size_t len, char *err, size_t cap)
{
    static const struct {
        const char *name;
        enum bn_sched_kind kind;
    } kinds[] = {{"step", BN_SCHED_STEP},
                 {"ramp", BN_SCHED_RAMP},
                 {"burst", BN_SCHED_BURST},
                 {"sine", BN_SCHED_SINE}};
    const char *colon = memchr(v, ':', len);
    unsigned seen = 0;

    memset(s, 0, sizeof(*s));
    if (colon == NULL || len >= BN_SCHED_TEXT) {
        bn_seterr(err, cap, "bad schedule (want KIND:..., at most %d bytes)", BN_SCHED_TEXT - 1);
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (is(v, (size_t)(colon - v), kinds[i].name)) {
            s->kind = kinds[i].kind;
        }
    }
    if (s->kind == BN_SCHED_NONE) {
        bn_seterr(err, cap, "unknown schedule '%.*s' (want step, ramp, burst or sine)",
                  (int)((colon - v) > 16 ? 16 : (colon - v)), v);
        goto fail;
    }
    size_t pos = (size_t)(colon - v) + 1;
    while (pos <= len) {
        const char *f = v + pos;
        const char *slash = memchr(f, '/', len - pos);
        size_t fl = slash ? (size_t)(slash - f) : len - pos;
        const char *eq = memchr(f, '=', fl);
        if (eq == NULL) {
            bn_seterr(err, cap, "bad schedule item '%.*s' (want k=v, items split by '/')",
                      (int)(fl > 32 ? 32 : fl), f);
            goto fail;
        }
        size_t kl = (size_t)(eq - f), vl = fl - kl - 1;
        if (s->kind == BN_SCHED_STEP || s->kind == BN_SCHED_RAMP) {
            if (s->npts == BN_SCHED_POINTS) {
                bn_seterr(err, cap, "bad schedule: more than %d points", BN_SCHED_POINTS);
                goto fail;
            }
            if (bn_parse_duration(f, kl, &s->t[s->npts]) != 0 ||
                parse_value(eq + 1, vl, &s->v[s->npts]) != 0) {
                bn_seterr(err, cap, "bad schedule point '%.*s' (want TIME=VALUE, e.g. 20s=400)",
                          (int)(fl > 32 ? 32 : fl), f);
                goto fail;
            }
            s->npts++;
        } else if (parse_param(s, f, kl, eq + 1, vl, &seen) != 0) {
            bn_seterr(err, cap, "bad schedule item '%.*s'", (int)(fl > 32 ? 32 : fl), f);
            goto fail;
        }
        pos += fl + 1;
    }
    int points = s->kind == BN_SCHED_STEP || s->kind == BN_SCHED_RAMP;
    if ((points ? check_points(s, err, cap) : check_params(s, seen, err, cap)) != 0) {
        goto fail;
    }
    if (!(bn_sched_max(s) > 0)) {
        bn_seterr(err, cap, "bad schedule: it is 0 throughout");
        goto fail;
    }
    memcpy(s->text, v, len);
    s->text[len] = '\0';
    return 0;

fail:
    s->kind = BN_SCHED_NONE;
    return -EINVAL;
}

double
bn_sched_at(const struct bn_sched *s, double t)
{
    unsigned i;

    if (!(t > 0)) {
        t = 0;
    }
    switch (s->kind) {
    case BN_SCHED_STEP:
    case BN_SCHED_RAMP:
        for (i = 0; i + 1 < s->npts && s->t[i + 1] <= t; i++) {
        }
        if (s->kind == BN_SCHED_STEP || i + 1 == s->npts) {
            return s->v[i];
        }
        return s->v[i] + (s->v[i + 1] - s->v[i]) * (t - s->t[i]) / (s->t[i + 1] - s->t[i]);
    case BN_SCHED_BURST:
        if (t < s->shift) {
            return s->lo;
        }
        return fmod(t - s->shift, s->period) < s->width ? s->hi : s->lo;
    case BN_SCHED_SINE:
        return s->lo + (s->hi - s->lo) * (1 - cos(2 * M_PI * (t / s->period + s->shift))) / 2;
    case BN_SCHED_NONE:
        break;
    }
    return 0;
}

double
bn_sched_max(const struct bn_sched *s)
{
    double m = 0;

    switch (s->kind) {
    case BN_SCHED_STEP:
    case BN_SCHED_RAMP:
        for (unsigned i = 0; i < s->npts; i++) {
            m = s->v[i] > m ? s->v[i] : m;
        }
        return m;
    case BN_SCHED_BURST:
    case BN_SCHED_SINE:
        return s->hi > s->lo ? s->hi : s->lo;
    case BN_SCHED_NONE:
        break;
    }
    return 0;
}

double
bn_sched_mean(const struct bn_sched *s, double a, double b)
{
    double sum = 0;

    if (!(b > a)) {
        return bn_sched_at(s, a);
    }
    for (int i = 0; i < MEAN_SAMPLES; i++) {
        sum += bn_sched_at(s, a + (b - a) * (i + 0.5) / MEAN_SAMPLES);
    }
    return sum / MEAN_SAMPLES;
}
