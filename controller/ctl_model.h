/*
 * ctl_model.h - the controller's records (tenants, nodes) and the checks
 * every admin input passes (private to controller/).
 *
 * Plain data: no locks, no I/O. Validation is pure so the unit tests can
 * drive it directly.
 */
#ifndef CTL_MODEL_H
#define CTL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cm_ec.h"
#include "cm_gateway.h"

#define CTL_NAME_MAX 63        /* [a-z0-9][a-z0-9-]{0,62} */
#define CTL_WEIGHT_MAX 10000.0 /* weights are finite, > 0, <= this */
#define CTL_MAX_KEYS 4         /* key hashes kept per tenant */
#define CTL_ADDR_MAX 128
#define CTL_KEY_HEX 48 /* random hex chars after "sk_" */
#define CTL_KEY_LEN (3 + CTL_KEY_HEX)
#define CTL_GW_ID_MAX CM_GATEWAY_ID_MAX
#define CTL_GW_URL_MAX CM_GATEWAY_URL_MAX

struct ctl_tenant {
    uint32_t id; /* 1, 2, ...; never reused */
    char name[CTL_NAME_MAX + 1];
    double weight;
    int nkeys;
    char key_hash[CTL_MAX_KEYS][65]; /* sha256 hex of each valid key */
    int ec_k, ec_m;
    uint64_t created_ms; /* wall clock */
    /* The gateway that owns the tenant (holds its metadata; the others
     * forward to it); "" while unassigned. Changes only when the owner
     * reports it has handed the metadata over (ctl_state_tenant_moved). */
    char gateway[CTL_GW_ID_MAX + 1];
    /* The gateway an admin asked the tenant moved to; "" when none. The
     * owner hands the metadata over, then reports; until then it owns. */
    char moving_to[CTL_GW_ID_MAX + 1];
};

/* A node's membership. An admin's `node remove` makes it draining: the
 * placement rows leave it and the gateways move its chunks to the nodes
 * that replaced it; once they have, it is removed for good (never up
 * again, its id never reused). */
enum ctl_retire {
    CTL_NODE_MEMBER = 0,
    CTL_NODE_DRAINING = 1,
    CTL_NODE_REMOVED = 2,
};

/* What the controller persists about a node (liveness and load are not). */
struct ctl_node {
    uint32_t id;
    char addr[CTL_ADDR_MAX];
    char metrics_addr[CTL_ADDR_MAX];
    uint64_t capacity_bytes;
    uint64_t incarnation;
    int retire; /* enum ctl_retire */
};

/* 1 if s (len bytes, may hold NULs) is a valid tenant name, else 0. */
int ctl_valid_name(const char *s, size_t len);
/* 1 if w is an acceptable weight: finite, > 0, <= CTL_WEIGHT_MAX. */
int ctl_valid_weight(double w);
/* 1 if (k, m) is an EC profile the data path supports. */
int ctl_valid_ec(long k, long m);
/* 1 if s is a plausible "host:port" node address (no spaces or quotes). */
int ctl_valid_addr(const char *s, size_t len);

/* Gateway ids and URLs: cm_gateway_id_valid, cm_gateway_url_valid. */

/* Makes a new tenant key "sk_<48 hex>" (key: CTL_KEY_LEN + 1 bytes) and its
 * hash (65 bytes). 0 or a negative code. */
int ctl_key_new(char *key, char *hash);

#endif
