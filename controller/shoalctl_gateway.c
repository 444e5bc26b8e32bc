/*
 * shoalctl_gateway.c - gateway rebalance: the tenants' owners (GET
 * /v1/tenants), the gateways (GET /v1/nodes) and each tenant's dominant
 * share of the nodes (GET /v1/fairness) make a plan (ctl_balance.c); then
 * each move is asked (POST /v1/tenants/{name}/move) and waited for, one at
 * a time, so that one tenant at a time is being handed over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_balance.h"
#include "shoalctl.h"

#define REBALANCE_WAIT_S 60.0

/* The tenant's dominant share in the fairness view j (0 when it has none). */
static double
share_of(json_t *fair, const char *name)
{
    json_t *e;
    size_t i;

    json_array_foreach(json_object_get(fair, "tenants"), i, e)
    {
        if (strcmp(ctl_cli_fmt_str(e, "name"), name) == 0) {
            json_t *v = json_object_get(e, "dominant_share");

            return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
        }
    }
    return 0;
}

static int
cmd_rebalance(struct ctl_cli *cli)
{
    json_t *nodes = NULL, *tenants = NULL, *fair = NULL, *e, *plan = json_array();
    struct ctl_balance_gw *g = NULL;
    struct ctl_balance_tenant *t = NULL;
    struct ctl_balance_move *mv = NULL;
    json_t *gws, *tl;
    size_t ng, nt, n = 0, i;
    double wait_s;
    int code;

    if (cli->nargs != 2) {
        return ctl_cli_usage_error("usage: gateway rebalance [--dry-run] [--wait SECONDS]");
    }
    if ((code = ctl_cli_wait_seconds(cli, REBALANCE_WAIT_S, &wait_s)) != 0 ||
        (code = ctl_cli_call_api(cli, "GET", "/v1/nodes", NULL, NULL, &nodes)) != 0 ||
        (code = ctl_cli_call_api(cli, "GET", "/v1/tenants", NULL, NULL, &tenants)) != 0 ||
        (code = ctl_cli_call_api(cli, "GET", "/v1/fairness", NULL, NULL, &fair)) != 0) {
        goto out;
    }
    gws = json_object_get(nodes, "gateways");
    tl = json_object_get(tenants, "tenants");
    ng = json_array_size(gws);
    nt = json_array_size(tl);
    g = calloc(ng + 1, sizeof(*g));
    t = calloc(nt + 1, sizeof(*t));
    mv = calloc(2 * nt + 1, sizeof(*mv));
    if (g == NULL || t == NULL || mv == NULL) {
        fprintf(stderr, "shoalctl: out of memory\n");
        code = CTL_CLI_EXIT_REFUSED;
        goto out;
    }
    json_array_foreach(gws, i, e)
    {
        g[i].id = json_string_value(json_object_get(e, "id"));
        g[i].up = g[i].id != NULL && json_is_true(json_object_get(e, "up"));
        g[i].id = g[i].id != NULL ? g[i].id : "";
    }
    json_array_foreach(tl, i, e)
    {
        const char *owner = json_string_value(json_object_get(e, "gateway"));
        const char *to = json_string_value(json_object_get(e, "moving_to"));

        /* a tenant with a move asked already is left to it */
        t[i].owner = owner != NULL && (to == NULL || to[0] == '\0') ? owner : "";
        t[i].load = share_of(fair, ctl_cli_fmt_str(e, "name"));
    }
    n = ctl_balance_plan(g, ng, t, nt, mv, 2 * nt);
    for (i = 0; i < n; i++) {
        json_t *te = json_array_get(tl, mv[i].tenant);

        json_array_append_new(plan, json_pack("{s:s, s:s, s:s, s:f}", "tenant",
                                              ctl_cli_fmt_str(te, "name"), "from", g[mv[i].from].id,
                                              "to", g[mv[i].to].id, "load", t[mv[i].tenant].load));
    }
    if (cli->json) {
        json_t *j = json_pack("{s:O, s:b}", "moves", plan, "dry_run", cli->dry_run);

        ctl_cli_print_json(j);
        json_decref(j);
    } else if (n == 0) {
        printf("gateways even: nothing to move\n");
    } else {
        struct ctl_cli_table tab = {4, 0, NULL};

        ctl_cli_table_row(&tab, "TENANT", "FROM", "TO", "LOAD");
        json_array_foreach(plan, i, e)
        {
            ctl_cli_table_row(&tab, ctl_cli_fmt_str(e, "tenant"), ctl_cli_fmt_str(e, "from"),
                              ctl_cli_fmt_str(e, "to"), ctl_cli_fmt_num(e, "load", 3));
        }
        ctl_cli_table_print(&tab);
    }
    json_array_foreach(plan, i, e)
    {
        const char *name = ctl_cli_fmt_str(e, "tenant"), *to = ctl_cli_fmt_str(e, "to");
        json_t *ans = NULL;

        if (cli->dry_run) {
            break;
        }
        code = ctl_cli_call_api(cli, "POST", "/v1/tenants/%s/move", name,
                                json_pack("{s:s}", "gateway", to), &ans);
        json_decref(ans);
        if (code == 0) {
            code = ctl_cli_wait_moved(cli, name, to, wait_s);
        }
        if (code != 0) {
            break; /* the rest of the plan was made for loads this move did not reach */
        }
    }
out:
    json_decref(plan);
    json_decref(nodes);
    json_decref(tenants);
    json_decref(fair);
    free(g);
    free(t);
    free(mv);
    return code;
}

int
ctl_cli_cmd_gateway(struct ctl_cli *cli)
{
    if (cli->nargs >= 2 && strcmp(cli->args[1], "rebalance") == 0) {
        return cmd_rebalance(cli);
    }
    return ctl_cli_usage_error("usage: gateway rebalance [--dry-run] [--wait SECONDS]");
}
