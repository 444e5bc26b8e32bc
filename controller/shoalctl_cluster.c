/*
 * shoalctl_cluster.c - shoalctl's commands about the cluster as a whole:
 * node list (with the gateways), node reclaim (fault injection) and node remove (with
 * --wait, polls the list until it is removed), placement show, rebalance
 * and status, fairness (per-tenant figures, MMR, Jain's index, and the
 * local weights per node). Each is one call to the admin API (API.md), its
 * answer printed as tables or as the API's JSON with --json.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_time.h"
#include "shoalctl.h"

/* node reclaim NODE (--instance I | --all) */
static int
cmd_reclaim(struct ctl_cli *cli)
{
    json_t *j = NULL, *e;
    int64_t slot = 0;
    size_t i;
    int code;

    if (cli->nargs != 3 || (cli->instance != NULL) == cli->all) {
        return ctl_cli_usage_error("usage: node reclaim NODE (--instance I | --all)");
    }
    if (cli->instance != NULL && (cm_parse_i64(cli->instance, &slot) < 0 || slot < 0)) {
        return ctl_cli_usage_error("--instance must be a slot number, got '%s'", cli->instance);
    }
    code = ctl_cli_call_api(cli, "POST", "/v1/nodes/%s/reclaim", cli->args[2],
                            cli->all ? json_pack("{s:b}", "all", 1)
                                     : json_pack("{s:I}", "instance", (json_int_t)slot),
                            &j);
    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        struct ctl_cli_table t = {5, 0, NULL};

        printf("node %s reclaims %s at its next heartbeat:\n", cli->args[2],
               cli->all ? "all its instances" : "one instance");
        ctl_cli_table_row(&t, "SLOT", "TAG", "TENANT", "STATE", "USED");
        json_array_foreach(json_object_get(j, "instances"), i, e)
        {
            ctl_cli_table_row(&t, ctl_cli_fmt_num(e, "slot", -1), ctl_cli_fmt_num(e, "tag", -1),
                              ctl_cli_fmt_num(e, "tenant", -1), ctl_cli_fmt_str(e, "state"),
                              ctl_cli_fmt_bytes(e, "used"));
        }
        ctl_cli_table_print(&t);
    }
    json_decref(j);
    return code;
}

/* The entry of node id in GET /v1/nodes's answer j (borrowed), or NULL. */
static json_t *
find_node(json_t *j, const char *id)
{
    json_t *e;
    size_t i;

    json_array_foreach(json_object_get(j, "nodes"), i, e)
    {
        if (strcmp(ctl_cli_fmt_num(e, "id", -1), id) == 0) {
            return e;
        }
    }
    return NULL;
}

/* node remove NODE [--wait SECONDS]: asks, then with --wait polls the node
 * list until the node is removed (its chunks moved off), or exit 1.
 * --cancel: the node stays a member. */
static int
cmd_remove(struct ctl_cli *cli)
{
    const char *id = cli->nargs == 3 ? cli->args[2] : NULL;
    double wait_s = -1;
    uint64_t deadline;
    json_t *j = NULL;
    int code;

    if (id == NULL || cli->instance != NULL || cli->all || (cli->cancel && cli->wait != NULL)) {
        return ctl_cli_usage_error("usage: node remove NODE [--wait SECONDS | --cancel]");
    }
    if (cli->cancel) {
        if ((code = ctl_cli_call_api(cli, "DELETE", "/v1/nodes/%s/remove", id, NULL, &j)) == 0) {
            if (cli->json) {
                ctl_cli_print_json(j);
            } else {
                printf("node %s %s (its removal canceled)\n", id, ctl_cli_fmt_str(j, "state"));
            }
        }
        json_decref(j);
        return code;
    }
    if ((code = ctl_cli_wait_seconds(cli, -1, &wait_s)) != 0) {
        return code;
    }
    deadline = cm_now_ns() + (uint64_t)(wait_s * 1e9);
    code = ctl_cli_call_api(cli, "POST", "/v1/nodes/%s/remove", id, NULL, &j);
    if (code != 0) {
        goto out;
    }
    if (cli->json) {
        ctl_cli_print_json(j);
    } else {
        printf("node %s %s\n", id, ctl_cli_fmt_str(j, "state"));
    }
    while (cli->wait != NULL && strcmp(ctl_cli_fmt_str(j, "state"), "removed") != 0) {
        uint64_t now = cm_now_ns();
        json_t *e;

        if (now >= deadline) {
            fprintf(stderr, "shoalctl: node %s not removed within %g s (still draining)\n", id,
                    wait_s);
            code = CTL_CLI_EXIT_REFUSED;
            goto out;
        }
        ctl_cli_nap(deadline - now);
        json_decref(j);
        j = NULL;
        if ((code = ctl_cli_call_api(cli, "GET", "/v1/nodes", NULL, NULL, &j)) != 0) {
            goto out;
        }
        if ((e = find_node(j, id)) == NULL) {
            fprintf(stderr, "shoalctl: node %s is no longer listed\n", id);
            code = CTL_CLI_EXIT_REFUSED;
            goto out;
        }
        json_incref(e);
        json_decref(j);
        j = e; /* the node's entry: its state */
        if (strcmp(ctl_cli_fmt_str(j, "state"), "removed") == 0 && !cli->json) {
            printf("node %s removed\n", id);
        }
    }
out:
    json_decref(j);
    return code;
}

/* node list's second table: the gateways, when any has polled. */
static void
print_gateways(json_t *gws)
{
    struct ctl_cli_table t = {6, 0, NULL};
    json_t *e;
    size_t i;

    if (json_array_size(gws) == 0) {
        return;
    }
    printf("\n");
    ctl_cli_table_row(&t, "GATEWAY", "URL", "S3 URL", "STATE", "TENANTS", "SEEN(ms ago)");
    json_array_foreach(gws, i, e)
    {
        ctl_cli_table_row(&t, ctl_cli_fmt_str(e, "id"), ctl_cli_fmt_str(e, "url"),
                          ctl_cli_fmt_str(e, "s3_url"),
                          json_is_true(json_object_get(e, "up")) ? "up" : "down",
                          ctl_cli_fmt_num(e, "tenants", -1), ctl_cli_fmt_num(e, "seen_ms_ago", -1));
    }
    ctl_cli_table_print(&t);
}

int
ctl_cli_cmd_node(struct ctl_cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs >= 2 && strcmp(cli->args[1], "reclaim") == 0 && cli->wait == NULL &&
        !cli->cancel) {
        return cmd_reclaim(cli);
    }
    if (cli->nargs >= 2 && strcmp(cli->args[1], "remove") == 0) {
        return cmd_remove(cli);
    }
    if (cli->nargs != 2 || strcmp(cli->args[1], "list") != 0 || cli->instance != NULL || cli->all ||
        cli->wait != NULL || cli->cancel) {
        return ctl_cli_usage_error("usage: node list | node reclaim NODE (--instance I | --all) | "
                                   "node remove NODE [--wait SECONDS | --cancel]");
    }
    code = ctl_cli_call_api(cli, "GET", "/v1/nodes", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        struct ctl_cli_table t = {10, 0, NULL};

        ctl_cli_table_row(&t, "ID", "ADDR", "METRICS", "STATE", "SCHED", "CAPACITY", "USED",
                          "MEMORY", "INCARNATION", "LOAD(req/s)");
        json_array_foreach(json_object_get(j, "nodes"), i, e)
        {
            char state[48];

            snprintf(state, sizeof(state), "%s%s", ctl_cli_fmt_str(e, "state"),
                     json_is_true(json_object_get(e, "draining")) ? ",draining" : "");
            ctl_cli_table_row(&t, ctl_cli_fmt_num(e, "id", -1), ctl_cli_fmt_str(e, "addr"),
                              ctl_cli_fmt_str(e, "metrics_addr"), state,
                              ctl_cli_fmt_str(e, "sched"), ctl_cli_fmt_bytes(e, "capacity_bytes"),
                              ctl_cli_fmt_bytes(e, "used_bytes"),
                              ctl_cli_fmt_bytes(e, "memory_bytes"),
                              ctl_cli_fmt_num(e, "incarnation", -1), ctl_cli_fmt_num(e, "load", 1));
        }
        ctl_cli_table_print(&t);
        print_gateways(json_object_get(j, "gateways"));
    }
    json_decref(j);
    return code;
}

/* placement rebalance | status: one call, then a two-column table. */
static int
cmd_placement_run(struct ctl_cli *cli, int rebalance)
{
    static const char *const rb[] = {"epoch",    "policy",           "solver",
                                     "changed",  "partitions_moved", "bytes_moved",
                                     "solve_ms", "util_before",      "util_after"};
    static const char *const stf[] = {
        "epoch",     "policy",   "solver",   "moving_partitions", "bytes_to_move", "bytes_moved",
        "migrating", "gateways", "max_util", "replacements",      "last_solve_ms"};
    const char *const *fields = rebalance ? rb : stf;
    size_t nf = rebalance ? sizeof(rb) / sizeof(rb[0]) : sizeof(stf) / sizeof(stf[0]);
    struct ctl_cli_table t = {2, 0, NULL};
    json_t *j = NULL;
    int code = rebalance ? ctl_cli_call_api(cli, "POST", "/v1/placement/rebalance", NULL, NULL, &j)
                         : ctl_cli_call_api(cli, "GET", "/v1/placement/status", NULL, NULL, &j);

    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        ctl_cli_table_row(&t, "FIELD", "VALUE");
        for (size_t i = 0; i < nf; i++) {
            json_t *v = json_object_get(j, fields[i]);

            ctl_cli_table_row(&t, fields[i],
                              json_is_string(v)    ? ctl_cli_fmt_str(j, fields[i])
                              : json_is_boolean(v) ? (json_is_true(v) ? "yes" : "no")
                                                   : ctl_cli_fmt_num(j, fields[i], 3));
        }
        ctl_cli_table_print(&t);
    }
    json_decref(j);
    return code;
}

int
ctl_cli_cmd_placement(struct ctl_cli *cli)
{
    json_t *j = NULL, *e, *row, *n;
    size_t i, p, k;
    int code;

    if (cli->nargs == 2 &&
        (strcmp(cli->args[1], "rebalance") == 0 || strcmp(cli->args[1], "status") == 0)) {
        return cmd_placement_run(cli, strcmp(cli->args[1], "rebalance") == 0);
    }
    if (cli->nargs != 2 || strcmp(cli->args[1], "show") != 0) {
        return ctl_cli_usage_error("usage: placement show|rebalance|status");
    }
    code = ctl_cli_call_api(cli, "GET", "/v1/placement", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        printf("epoch %s, placement epoch %s (%s, policy %s), %s partitions per tenant\n",
               ctl_cli_fmt_num(j, "epoch", -1), ctl_cli_fmt_num(j, "placement_epoch", -1),
               ctl_cli_fmt_str(j, "solver"), ctl_cli_fmt_str(j, "policy"),
               ctl_cli_fmt_num(j, "partitions", -1));
        json_array_foreach(json_object_get(j, "tenants"), i, e)
        {
            struct ctl_cli_table t = {2, 0, NULL};

            printf("\ntenant %s (id %s, ec %s+%s)\n", ctl_cli_fmt_str(e, "name"),
                   ctl_cli_fmt_num(e, "id", -1), ctl_cli_fmt_num(e, "ec_k", -1),
                   ctl_cli_fmt_num(e, "ec_m", -1));
            ctl_cli_table_row(&t, "PARTITION", "NODES");
            json_array_foreach(json_object_get(e, "placement"), p, row)
            {
                struct cm_buf b;
                char pn[24]; /* any size_t */

                cm_buf_init(&b);
                json_array_foreach(row, k, n)
                {
                    cm_buf_printf(&b, "%s%lld", k ? " " : "", (long long)json_integer_value(n));
                }
                snprintf(pn, sizeof(pn), "%zu", p);
                ctl_cli_table_row(&t, pn, b.p != NULL && b.len > 0 ? b.p : "-");
                cm_buf_fini(&b);
            }
            ctl_cli_table_print(&t);
        }
    }
    json_decref(j);
    return code;
}

/* The smallest node id above lo in any tenant's map key of a /v1/fairness
 * answer, or -1. */
static long long
next_node(json_t *tenants, const char *key, long long lo)
{
    json_t *e, *w;
    const char *node;
    size_t i;
    long long next = -1;

    json_array_foreach(tenants, i, e)
    {
        json_object_foreach(json_object_get(e, key), node, w)
        {
            long long id = strtoll(node, NULL, 10);

            if (id > lo && (next < 0 || id < next)) {
                next = id;
            }
        }
    }
    return next;
}

/* A weight of map key of tenant e at node nb, or "-". */
static const char *
node_weight(json_t *e, const char *key, const char *nb)
{
    json_t *w = json_object_get(json_object_get(e, key), nb);
    char *v;

    if (w == NULL) {
        return "-";
    }
    v = ctl_cli_ring();
    snprintf(v, 64, "%g", json_number_value(w));
    return v;
}

/* The local weights of every tenant in a /v1/fairness answer, by node: what
 * the controller allocates (wa_weights) and what the node applies
 * (local_weights). */
static void
print_local_weights(json_t *j)
{
    json_t *tenants = json_object_get(j, "tenants"), *e;
    struct ctl_cli_table t = {4, 0, NULL};
    size_t i;
    long long lo = -1;

    /* Node ids are small integers: print them in order, one pass each. */
    for (;;) {
        long long a = next_node(tenants, "wa_weights", lo);
        long long b = next_node(tenants, "local_weights", lo);
        long long next = a < 0 ? b : b < 0 ? a : a < b ? a : b;
        char nb[24];

        if (next < 0) {
            break;
        }
        snprintf(nb, sizeof(nb), "%lld", next);
        json_array_foreach(tenants, i, e)
        {
            const char *wa = node_weight(e, "wa_weights", nb);
            const char *applied = node_weight(e, "local_weights", nb);

            if (strcmp(wa, "-") == 0 && strcmp(applied, "-") == 0) {
                continue;
            }
            if (t.nrows == 0) {
                ctl_cli_table_row(&t, "NODE", "TENANT", "WA WEIGHT", "LOCAL WEIGHT");
            }
            ctl_cli_table_row(&t, nb, ctl_cli_fmt_str(e, "name"), wa, applied);
        }
        lo = next;
    }
    if (t.nrows == 0) {
        printf("local weights: none yet\n");
        return;
    }
    printf("\n");
    ctl_cli_table_print(&t);
    printf("(WA WEIGHT: what weight allocation (%s) gives the tenant at the node; LOCAL WEIGHT: "
           "what the node reports applying)\n",
           json_is_string(json_object_get(j, "wa")) ? json_string_value(json_object_get(j, "wa"))
                                                    : "?");
}

int
ctl_cli_cmd_fairness(struct ctl_cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs != 1) {
        return ctl_cli_usage_error("usage: fairness");
    }
    code = ctl_cli_call_api(cli, "GET", "/v1/fairness", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        struct ctl_cli_table t = {10, 0, NULL};

        ctl_cli_table_row(&t, "TENANT", "WEIGHT", "DEMAND", "FAIR SHARE", "SHARE", "SHARE/WEIGHT",
                          "COUNTED", "DEMAND(req/s)", "SERVED(req/s)", "SERVED(B/s)");
        json_array_foreach(json_object_get(j, "tenants"), i, e)
        {
            char *pw = ctl_cli_ring();
            double w = json_number_value(json_object_get(e, "weight"));

            snprintf(pw, 64, "%.4f",
                     w > 0 ? json_number_value(json_object_get(e, "dominant_share")) / w : 0.0);
            ctl_cli_table_row(&t, ctl_cli_fmt_str(e, "name"), ctl_cli_fmt_num(e, "weight", -1),
                              ctl_cli_fmt_num(e, "demand", 4), ctl_cli_fmt_num(e, "allocation", 4),
                              ctl_cli_fmt_num(e, "dominant_share", 4), pw,
                              json_is_true(json_object_get(e, "counted")) ? "yes" : "no",
                              ctl_cli_fmt_num(e, "demand_requests_per_second", 1),
                              ctl_cli_fmt_num(e, "served_requests_per_second", 1),
                              ctl_cli_fmt_num(e, "served_bytes_per_second", 0));
        }
        ctl_cli_table_print(&t);
        printf("min-max ratio: %s   jain index: %s   counted tenants: %s   capacity: %s\n",
               json_is_number(json_object_get(j, "min_max_ratio"))
                   ? ctl_cli_fmt_num(j, "min_max_ratio", 3)
                   : "n/a (fewer than 2 counted tenants)",
               json_is_number(json_object_get(j, "jain")) ? ctl_cli_fmt_num(j, "jain", 3) : "n/a",
               ctl_cli_fmt_num(j, "active_tenants", -1), ctl_cli_fmt_num(j, "capacity", 3));
        printf("(demand, shares and capacity: dominant cost per second, in nodes' worth of "
               "capacity; counted: demand reaches the fair share)\n");
        if (json_is_object(json_object_get(j, "wa_step"))) {
            json_t *ws = json_object_get(j, "wa_step");

            printf("weight allocation: %s   steps: %s   last step: weight moved %s, cycles %s, "
                   "max mismatch %s\n",
                   ctl_cli_fmt_str(j, "wa"), ctl_cli_fmt_num(ws, "steps", -1),
                   ctl_cli_fmt_num(ws, "moved", 4), ctl_cli_fmt_num(ws, "cycles", -1),
                   ctl_cli_fmt_num(ws, "max_mismatch", 3));
        }
        print_local_weights(j);
    }
    json_decref(j);
    return code;
}
