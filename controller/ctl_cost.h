/*
 * ctl_cost.h - what a tenant's pool costs (private to controller/): the
 * price table, the totals the controller adds up per tenant from the
 * nodes' heartbeats, their bill in USD, and the records that keep both
 * across restarts.
 *
 *   heartbeats ──memory held x time, sms_cost counters──▶ ctl_cost_totals per tenant (ctl_sms.c)
 *   ctl_cost_totals + ctl_prices ──ctl_cost_bill──▶ USD per item and in all
 *
 * Pure: no locks, no clock (durations are passed in), no I/O but
 * ctl_prices_load, which reads its file. The record codecs use Jansson
 * inside ctl_cost.c only.
 */
#ifndef CTL_COST_H
#define CTL_COST_H

#include <stddef.h>
#include <stdint.h>

/*
 * The prices (USD): name in a --prices file, default, what it prices.
 * Defaults are the public list prices, read on 2026-12-01:
 *   AWS Lambda, https://aws.amazon.com/lambda/pricing/ (x86, US East (N.
 *   Virginia), first tier of 6 billion GB-seconds a month): 0.0000166667
 *   per GB-second (the page's worked examples round it to 0.00001667) and
 *   0.20 per million requests (also in AWS's "How AWS Pricing Works",
 *   docs.aws.amazon.com/whitepapers/latest/how-aws-pricing-works/lambda.html);
 *   Amazon S3, https://aws.amazon.com/s3/pricing/ (S3 Standard, US East
 *   (N. Virginia)): 0.005 per 1,000 PUT, COPY, POST or LIST requests,
 *   0.0004 per 1,000 GET, SELECT and all other requests, DELETE free, 0.023
 *   per GB-month for the first 50 TB. The S3 page draws its tables in the
 *   browser, so its stored text has no figures: these are as quoted from it
 *   on that date (c3x.dev/blog/s3-request-fees-explained; docs/operations.md).
 * Free tiers are not applied: the bill is what the use costs at list price.
 */
#define CTL_PRICES(X)                                                                              \
    X(CTL_P_GB_SECOND, "lambda_gb_second", 0.0000166667,                                           \
      "per GB-second of instance memory held (AWS Lambda duration, x86)")                          \
    X(CTL_P_REQUEST, "lambda_request", 0.0000002,                                                  \
      "per invocation: warm-ups and recoveries (AWS Lambda requests)")                             \
    X(CTL_P_PUT_1000, "s3_put_per_1000", 0.005, "per 1,000 COS writes (S3 Standard PUT)")          \
    X(CTL_P_GET_1000, "s3_get_per_1000", 0.0004, "per 1,000 COS reads (S3 Standard GET)")          \
    X(CTL_P_DELETE_1000, "s3_delete_per_1000", 0.0, "per 1,000 COS deletes (S3: free)")            \
    X(CTL_P_STORAGE_GB_MONTH, "s3_storage_gb_month", 0.023,                                        \
      "per GB-month kept in COS (S3 Standard); shown, not charged: nodes do not report it")

enum ctl_price {
#define CTL_PRICE_ENUM_(e, n, d, h) e,
    CTL_PRICES(CTL_PRICE_ENUM_)
#undef CTL_PRICE_ENUM_
        CTL_NPRICES
};

struct ctl_prices {
    double v[CTL_NPRICES]; /* USD, finite, >= 0 */
};

/* Bytes in a GB, as Lambda counts memory (1024 MB). */
#define CTL_COST_GB (1024.0 * 1024.0 * 1024.0)

/* Name and help of price i (static strings), or NULL past the table. */
const char *ctl_price_name(enum ctl_price i);
const char *ctl_price_help(enum ctl_price i);
void ctl_prices_default(struct ctl_prices *p);
/* Sets the price called name from value (a finite number >= 0).
 * CM_E_NOTFOUND: no such price; CM_E_BADARG: a bad value. */
int ctl_prices_set(struct ctl_prices *p, const char *name, const char *value);
/* The defaults, then the "name = value" lines of path ('#' comments; a
 * later line wins). 0, or a negative code with a one-line reason in err
 * (errlen bytes; "path:line: ..." for a bad line). */
int ctl_prices_load(const char *path, struct ctl_prices *p, char *err, size_t errlen);

/* The counters of a node's "sms_cost" entry (cumulative since it started):
 * enum value, JSON name. */
#define CTL_COST_COUNTERS(X)                                                                       \
    X(CTL_CC_WARMUPS, "warmups")                                                                   \
    X(CTL_CC_RECOVERIES, "recoveries")                                                             \
    X(CTL_CC_COS_PUTS, "cos_puts")                                                                 \
    X(CTL_CC_COS_GETS, "cos_gets")                                                                 \
    X(CTL_CC_COS_DELETES, "cos_deletes")                                                           \
    X(CTL_CC_COS_PUT_BYTES, "cos_put_bytes")                                                       \
    X(CTL_CC_COS_GET_BYTES, "cos_get_bytes")

enum ctl_cost_counter {
#define CTL_CC_ENUM_(e, n) e,
    CTL_COST_COUNTERS(CTL_CC_ENUM_)
#undef CTL_CC_ENUM_
        CTL_CC_N
};

struct ctl_cost_counters {
    uint64_t v[CTL_CC_N];
};

/* JSON name of counter i (static), or NULL past the list. */
const char *ctl_cost_counter_name(enum ctl_cost_counter i);

/* What a tenant has used since its accounting began. */
struct ctl_cost_totals {
    double memory_gb_seconds;
    struct ctl_cost_counters c;
};

/* bytes of instance memory held for dt_ns. */
void ctl_cost_add_memory(struct ctl_cost_totals *t, uint64_t bytes, uint64_t dt_ns);
/* Adds what a node's counters grew by from last (NULL: nothing seen yet in
 * this node incarnation, i.e. from 0) to cur. A counter below its last
 * value means the counters restarted: then all of cur is new. */
void ctl_cost_fold(struct ctl_cost_totals *t, const struct ctl_cost_counters *last,
                   const struct ctl_cost_counters *cur);

/* The bill's lines, in the order shown. */
#define CTL_BILL_ITEMS(X)                                                                          \
    X(CTL_B_MEMORY, "memory", "GB-s")                                                              \
    X(CTL_B_INVOCATIONS, "invocations", "requests")                                                \
    X(CTL_B_COS_PUT, "cos_put", "requests")                                                        \
    X(CTL_B_COS_GET, "cos_get", "requests")                                                        \
    X(CTL_B_COS_DELETE, "cos_delete", "requests")

enum ctl_bill_item {
#define CTL_B_ENUM_(e, n, u) e,
    CTL_BILL_ITEMS(CTL_B_ENUM_)
#undef CTL_B_ENUM_
        CTL_B_N
};

struct ctl_cost_bill {
    struct {
        const char *name, *unit; /* static */
        double quantity;
        double unit_usd; /* per one unit (per request, not per 1,000) */
        double usd;
    } item[CTL_B_N];
    double usd;            /* the sum of the items */
    uint64_t invocations;  /* warm-ups + recoveries */
    uint64_t cos_requests; /* puts + gets + deletes */
    uint64_t cos_bytes;    /* written + read */
};

void ctl_cost_bill(const struct ctl_prices *p, const struct ctl_cost_totals *t,
                   struct ctl_cost_bill *out);

/* ---- store records (ctl_store's "sms" table; JSON, unknown fields ignored) ---- */

/* Per tenant: its totals and its pool's window. Times are wall ms. */
struct ctl_cost_tenant_rec {
    uint32_t tenant;
    struct ctl_cost_totals t;
    uint64_t since_ms;     /* when its accounting began */
    uint64_t gen;          /* the pool's generation */
    uint64_t gen_start_ms; /* when it began */
};

/* Per node: the counters last folded, per tenant, in one node incarnation. */
struct ctl_cost_node_rec {
    uint32_t node;
    uint64_t incarnation;
    size_t n;
    uint32_t *tenants;              /* n ids */
    struct ctl_cost_counters *last; /* n */
};

/* JSON text (transferred; NULL only when out of memory). */
char *ctl_cost_tenant_encode(const struct ctl_cost_tenant_rec *r);
char *ctl_cost_node_encode(const struct ctl_cost_node_rec *r);
/* 0, or CM_E_CONFIG for a record that does not parse. id is the record's
 * key. A node record's arrays are the caller's to free
 * (ctl_cost_node_rec_fini), also on error. */
int ctl_cost_tenant_decode(uint32_t id, const char *text, size_t len,
                           struct ctl_cost_tenant_rec *r);
int ctl_cost_node_decode(uint32_t id, const char *text, size_t len, struct ctl_cost_node_rec *r);
void ctl_cost_node_rec_fini(struct ctl_cost_node_rec *r);

#endif
