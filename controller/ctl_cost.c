/*
 * ctl_cost.c - prices, per-tenant cost totals, bills and their store
 * records (see ctl_cost.h). Pure but for ctl_prices_load's file read.
 */
#include "ctl_cost.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"

static const struct {
    const char *name, *help;
    double def;
} price_defs[CTL_NPRICES] = {
#define CTL_PRICE_DEF_(e, n, d, h) {n, h, d},
    CTL_PRICES(CTL_PRICE_DEF_)
#undef CTL_PRICE_DEF_
};

static const char *const counter_names[CTL_CC_N] = {
#define CTL_CC_NAME_(e, n) n,
    CTL_COST_COUNTERS(CTL_CC_NAME_)
#undef CTL_CC_NAME_
};

static const struct {
    const char *name, *unit;
} bill_defs[CTL_B_N] = {
#define CTL_B_DEF_(e, n, u) {n, u},
    CTL_BILL_ITEMS(CTL_B_DEF_)
#undef CTL_B_DEF_
};

const char *
ctl_price_name(enum ctl_price i)
{
    return (unsigned)i < CTL_NPRICES ? price_defs[i].name : NULL;
}

const char *
ctl_price_help(enum ctl_price i)
{
    return (unsigned)i < CTL_NPRICES ? price_defs[i].help : NULL;
}

const char *
ctl_cost_counter_name(enum ctl_cost_counter i)
{
    return (unsigned)i < CTL_CC_N ? counter_names[i] : NULL;
}

void
ctl_prices_default(struct ctl_prices *p)
{
    for (int i = 0; i < CTL_NPRICES; i++) {
        p->v[i] = price_defs[i].def;
    }
}

int
ctl_prices_set(struct ctl_prices *p, const char *name, const char *value)
{
    double v;

    for (int i = 0; i < CTL_NPRICES; i++) {
        if (strcmp(name, price_defs[i].name) == 0) {
            if (cm_parse_double(value, &v) < 0 || v < 0) {
                return CM_E_BADARG;
            }
            p->v[i] = v;
            return 0;
        }
    }
    return CM_E_NOTFOUND;
}

struct load_ctx {
    struct ctl_prices *p;
    char *err;
    size_t errlen;
};

static int
load_setting(void *arg, const char *name, const char *value, const char *where)
{
    struct load_ctx *x = arg;
    int rc;

    if (name == NULL) {
        snprintf(x->err, x->errlen, "%s: expected name = value", where);
        return CM_E_BADARG;
    }
    rc = ctl_prices_set(x->p, name, value);
    if (rc == CM_E_NOTFOUND) {
        snprintf(x->err, x->errlen, "%s: unknown price '%.64s'", where, name);
    } else if (rc < 0) {
        snprintf(x->err, x->errlen, "%s: %.64s must be a number >= 0 (USD), got '%.64s'", where,
                 name, value);
    }
    return rc;
}

int
ctl_prices_load(const char *path, struct ctl_prices *p, char *err, size_t errlen)
{
    struct load_ctx x = {p, err, errlen};
    int rc;

    ctl_prices_default(p);
    err[0] = '\0';
    rc = cm_config_read_file(path, load_setting, &x);
    if (rc < 0 && err[0] == '\0') {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
    }
    return rc < 0 ? rc : 0;
}

void
ctl_cost_add_memory(struct ctl_cost_totals *t, uint64_t bytes, uint64_t dt_ns)
{
    t->memory_gb_seconds += (double)bytes / CTL_COST_GB * ((double)dt_ns / 1e9);
}

void
ctl_cost_fold(struct ctl_cost_totals *t, const struct ctl_cost_counters *last,
              const struct ctl_cost_counters *cur)
{
    int restarted = last == NULL;

    for (int i = 0; i < CTL_CC_N && !restarted; i++) {
        restarted = cur->v[i] < last->v[i];
    }
    for (int i = 0; i < CTL_CC_N; i++) {
        t->c.v[i] += cur->v[i] - (restarted ? 0 : last->v[i]);
    }
}

void
ctl_cost_bill(const struct ctl_prices *p, const struct ctl_cost_totals *t,
              struct ctl_cost_bill *out)
{
    const uint64_t *c = t->c.v;
    const double qty[CTL_B_N] = {
        [CTL_B_MEMORY] = t->memory_gb_seconds,
        [CTL_B_INVOCATIONS] = (double)(c[CTL_CC_WARMUPS] + c[CTL_CC_RECOVERIES]),
        [CTL_B_COS_PUT] = (double)c[CTL_CC_COS_PUTS],
        [CTL_B_COS_GET] = (double)c[CTL_CC_COS_GETS],
        [CTL_B_COS_DELETE] = (double)c[CTL_CC_COS_DELETES],
    };
    const double unit[CTL_B_N] = {
        [CTL_B_MEMORY] = p->v[CTL_P_GB_SECOND],
        [CTL_B_INVOCATIONS] = p->v[CTL_P_REQUEST],
        [CTL_B_COS_PUT] = p->v[CTL_P_PUT_1000] / 1000.0,
        [CTL_B_COS_GET] = p->v[CTL_P_GET_1000] / 1000.0,
        [CTL_B_COS_DELETE] = p->v[CTL_P_DELETE_1000] / 1000.0,
    };

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < CTL_B_N; i++) {
        out->item[i].name = bill_defs[i].name;
        out->item[i].unit = bill_defs[i].unit;
        out->item[i].quantity = qty[i];
        out->item[i].unit_usd = unit[i];
        out->item[i].usd = qty[i] * unit[i];
        out->usd += out->item[i].usd;
    }
    out->invocations = c[CTL_CC_WARMUPS] + c[CTL_CC_RECOVERIES];
    out->cos_requests = c[CTL_CC_COS_PUTS] + c[CTL_CC_COS_GETS] + c[CTL_CC_COS_DELETES];
    out->cos_bytes = c[CTL_CC_COS_PUT_BYTES] + c[CTL_CC_COS_GET_BYTES];
}

/* ---- store records ---- */

static json_t *
counters_json(const struct ctl_cost_counters *c)
{
    json_t *j = json_object();

    for (int i = 0; j != NULL && i < CTL_CC_N; i++) {
        json_object_set_new(j, counter_names[i], json_integer((json_int_t)c->v[i]));
    }
    return j;
}

/* 0, or CM_E_CONFIG unless j is absent or an object whose counters are
 * absent or non-negative integers. */
static int
counters_from(json_t *j, struct ctl_cost_counters *c)
{
    memset(c, 0, sizeof(*c));
    if (j == NULL) {
        return 0;
    }
    if (!json_is_object(j)) {
        return CM_E_CONFIG;
    }
    for (int i = 0; i < CTL_CC_N; i++) {
        json_t *v = json_object_get(j, counter_names[i]);

        if (v == NULL) {
            continue;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            return CM_E_CONFIG;
        }
        c->v[i] = (uint64_t)json_integer_value(v);
    }
    return 0;
}

static char *
dump(json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    return text;
}

char *
ctl_cost_tenant_encode(const struct ctl_cost_tenant_rec *r)
{
    return dump(json_pack("{s:f, s:o, s:I, s:I, s:I}", "memory_gb_seconds", r->t.memory_gb_seconds,
                          "counters", counters_json(&r->t.c), "since_ms", (json_int_t)r->since_ms,
                          "gen", (json_int_t)r->gen, "gen_start_ms", (json_int_t)r->gen_start_ms));
}

/* 0 with *out from o[key] (absent: 0), or CM_E_CONFIG. */
static int
u64_of(json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);

    *out = 0;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return CM_E_CONFIG;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int
ctl_cost_tenant_decode(uint32_t id, const char *text, size_t len, struct ctl_cost_tenant_rec *r)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *m = json_object_get(j, "memory_gb_seconds");
    int rc = CM_E_CONFIG;

    memset(r, 0, sizeof(*r));
    r->tenant = id;
    if (!json_is_object(j) || id == 0 || (m != NULL && !json_is_number(m))) {
        goto out;
    }
    r->t.memory_gb_seconds = m != NULL ? json_number_value(m) : 0.0;
    if (!isfinite(r->t.memory_gb_seconds) || r->t.memory_gb_seconds < 0 ||
        counters_from(json_object_get(j, "counters"), &r->t.c) < 0 ||
        u64_of(j, "since_ms", &r->since_ms) < 0 || u64_of(j, "gen", &r->gen) < 0 ||
        u64_of(j, "gen_start_ms", &r->gen_start_ms) < 0) {
        goto out;
    }
    rc = 0;
out:
    json_decref(j);
    return rc;
}

char *
ctl_cost_node_encode(const struct ctl_cost_node_rec *r)
{
    json_t *t = json_object();
    char id[16];

    for (size_t i = 0; t != NULL && i < r->n; i++) {
        snprintf(id, sizeof(id), "%u", r->tenants[i]);
        json_object_set_new(t, id, counters_json(&r->last[i]));
    }
    return dump(json_pack("{s:I, s:o}", "incarnation", (json_int_t)r->incarnation, "tenants", t));
}

/* A tenant id key: 1 .. UINT32_MAX - 1 in decimal, no sign or padding. */
static int
tenant_key(const char *s, uint32_t *id)
{
    uint64_t v = 0;
    size_t n = strlen(s);

    if (n == 0 || n > 10 || s[0] == '0') {
        return CM_E_CONFIG;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return CM_E_CONFIG;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v >= UINT32_MAX) {
        return CM_E_CONFIG;
    }
    *id = (uint32_t)v;
    return 0;
}

int
ctl_cost_node_decode(uint32_t id, const char *text, size_t len, struct ctl_cost_node_rec *r)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *t = json_object_get(j, "tenants"), *v;
    const char *k;
    int rc = CM_E_CONFIG;

    memset(r, 0, sizeof(*r));
    r->node = id;
    if (!json_is_object(j) || !json_is_object(t) || u64_of(j, "incarnation", &r->incarnation) < 0) {
        goto out;
    }
    r->tenants = cm_calloc(json_object_size(t) + 1, sizeof(*r->tenants));
    r->last = cm_calloc(json_object_size(t) + 1, sizeof(*r->last));
    json_object_foreach(t, k, v)
    {
        if (tenant_key(k, &r->tenants[r->n]) < 0 || counters_from(v, &r->last[r->n]) < 0) {
            goto out;
        }
        r->n++;
    }
    rc = 0;
out:
    json_decref(j);
    return rc;
}

void
ctl_cost_node_rec_fini(struct ctl_cost_node_rec *r)
{
    free(r->tenants);
    free(r->last);
    memset(r, 0, sizeof(*r));
}
