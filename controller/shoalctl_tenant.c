/*
 * shoalctl_tenant.c - shoalctl's tenant commands: create, list, show,
 * set-weight, rotate-key, delete, move, s3-key create|list|delete, cost.
 * Each is one call to the admin API (API.md), its answer printed as a table
 * or as the API's JSON with --json; tenant move --wait then polls the
 * tenant. A key or secret the API returns is printed once, with a word
 * that it is shown only once.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_time.h"
#include "shoalctl.h"

#define MOVE_POLL_NS (200ull * 1000000ull)
#define MOVE_WAIT_MAX_S 86400.0

static int
parse_weight(const char *s, double *w)
{
    if (cm_parse_double(s, w) < 0) {
        return ctl_cli_usage_error("weight must be a number, got '%s'", s);
    }
    return 0;
}

/* The pool's rows of tenant show. */
static void
show_pool(struct ctl_cli_table *t, json_t *p)
{
    char *v = ctl_cli_ring();

    if (p == NULL) {
        return;
    }
    snprintf(v, 64, "%s, generation %s (%s ms old)", ctl_cli_fmt_str(p, "policy"),
             ctl_cli_fmt_num(p, "generation", -1), ctl_cli_fmt_num(p, "generation_age_ms", -1));
    ctl_cli_table_row(t, "pool", v);
    v = ctl_cli_ring();
    snprintf(v, 64, "%s (%s warm, %s active, %s degraded; %s lost) on %s nodes",
             ctl_cli_fmt_num(p, "instances", -1), ctl_cli_fmt_num(p, "warm", -1),
             ctl_cli_fmt_num(p, "active", -1), ctl_cli_fmt_num(p, "degraded", -1),
             ctl_cli_fmt_num(p, "lost", -1), ctl_cli_fmt_num(p, "nodes", -1));
    ctl_cli_table_row(t, "pool instances", v);
    ctl_cli_table_row(t, "pool memory", ctl_cli_fmt_bytes(p, "memory_bytes"));
    ctl_cli_table_row(t, "pool chunk bytes", ctl_cli_fmt_bytes(p, "used_bytes"));
    ctl_cli_table_row(t, "working set", ctl_cli_fmt_bytes(p, "working_set_bytes"));
    ctl_cli_table_row(t, "read last interval", ctl_cli_fmt_bytes(p, "read_bytes_last_interval"));
}

static void
show_tenant(json_t *j)
{
    struct ctl_cli_table t = {2, 0, NULL};

    ctl_cli_table_row(&t, "FIELD", "VALUE");
    ctl_cli_table_row(&t, "name", ctl_cli_fmt_str(j, "name"));
    ctl_cli_table_row(&t, "id", ctl_cli_fmt_num(j, "id", -1));
    ctl_cli_table_row(&t, "weight", ctl_cli_fmt_num(j, "weight", -1));
    ctl_cli_table_row(&t, "gateway", ctl_cli_fmt_str(j, "gateway"));
    if (json_object_get(j, "moving_to") != NULL) {
        ctl_cli_table_row(&t, "moving_to", ctl_cli_fmt_str(j, "moving_to"));
    }
    if (json_object_get(j, "ec_k") != NULL) {
        char *ec = ctl_cli_ring();

        snprintf(ec, 64, "%s+%s", ctl_cli_fmt_num(j, "ec_k", -1), ctl_cli_fmt_num(j, "ec_m", -1));
        ctl_cli_table_row(&t, "ec (k+m)", ec);
    }
    if (json_object_get(j, "served_requests_per_second") != NULL) {
        ctl_cli_table_row(&t, "served req/s", ctl_cli_fmt_num(j, "served_requests_per_second", 1));
        ctl_cli_table_row(&t, "served bytes/s", ctl_cli_fmt_num(j, "served_bytes_per_second", 0));
        ctl_cli_table_row(&t, "queued", ctl_cli_fmt_num(j, "queued", 0));
        ctl_cli_table_row(&t, "queue wait (s)", ctl_cli_fmt_num(j, "queue_wait_seconds", 6));
        ctl_cli_table_row(&t, "demand req/s", ctl_cli_fmt_num(j, "demand_requests_per_second", 1));
        ctl_cli_table_row(&t, "demand (nodes)", ctl_cli_fmt_num(j, "demand", 4));
        ctl_cli_table_row(&t, "fair share (nodes)", ctl_cli_fmt_num(j, "allocation", 4));
        ctl_cli_table_row(&t, "share (nodes)", ctl_cli_fmt_num(j, "dominant_share", 4));
    }
    show_pool(&t, json_object_get(j, "pool"));
    ctl_cli_table_print(&t);
}

/* 1 if tenant view j says gw owns it with no move asked. */
static int
moved_to(json_t *j, const char *gw)
{
    const char *owner = json_string_value(json_object_get(j, "gateway"));
    const char *to = json_string_value(json_object_get(j, "moving_to"));

    return owner != NULL && strcmp(owner, gw) == 0 && (to == NULL || to[0] == '\0');
}

/* Polls tenant name every MOVE_POLL_NS until gw owns it with no move
 * asked, or wait_s have passed (exit 1, one line on stderr). The owner
 * changes only once the old one has handed the metadata over, so this is
 * when the move is done, not when it was taken. */
int
ctl_cli_wait_moved(struct ctl_cli *cli, const char *name, const char *gw, double wait_s)
{
    uint64_t deadline = cm_now_ns() + (uint64_t)(wait_s * 1e9);
    json_t *j = NULL;
    int code;

    for (;;) {
        uint64_t now;

        code = ctl_cli_call_api(cli, "GET", "/v1/tenants/%s", name, NULL, &j);
        if (code != 0) {
            return code;
        }
        if (moved_to(j, gw)) {
            if (!cli->json) {
                printf("tenant %s moved to %s\n", name, gw);
            }
            break;
        }
        now = cm_now_ns();
        if (now >= deadline) {
            fprintf(stderr,
                    "shoalctl: tenant %s not moved to %s within %g s (gateway %s, moving to %s)\n",
                    name, gw, wait_s, ctl_cli_fmt_str(j, "gateway"),
                    ctl_cli_fmt_str(j, "moving_to"));
            code = CTL_CLI_EXIT_REFUSED;
            break;
        }
        json_decref(j);
        j = NULL;
        ctl_cli_nap(deadline - now);
    }
    json_decref(j);
    return code;
}

void
ctl_cli_nap(uint64_t left_ns)
{
    uint64_t ns = left_ns < MOVE_POLL_NS ? left_ns : MOVE_POLL_NS;
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

    nanosleep(&ts, NULL);
}

int
ctl_cli_wait_seconds(const struct ctl_cli *cli, double dflt, double *wait_s)
{
    *wait_s = dflt;
    if (cli->wait != NULL &&
        (cm_parse_double(cli->wait, wait_s) < 0 || *wait_s < 0 || *wait_s > MOVE_WAIT_MAX_S)) {
        return ctl_cli_usage_error("--wait must be a number of seconds from 0 to %g, got '%s'",
                                   MOVE_WAIT_MAX_S, cli->wait);
    }
    return 0;
}

/* tenant move NAME GATEWAY [--wait SECONDS] */
static int
cmd_move(struct ctl_cli *cli)
{
    const char *name, *gw;
    double wait_s = -1;
    json_t *j = NULL;
    int code;

    if (cli->nargs != 4) {
        return ctl_cli_usage_error("usage: tenant move NAME GATEWAY [--wait SECONDS]");
    }
    name = cli->args[2];
    gw = cli->args[3];
    if ((code = ctl_cli_wait_seconds(cli, -1, &wait_s)) != 0) {
        return code;
    }
    code = ctl_cli_call_api(cli, "POST", "/v1/tenants/%s/move", name,
                            json_pack("{s:s}", "gateway", gw), &j);
    if (code != 0) {
        goto out;
    }
    if (cli->json) {
        ctl_cli_print_json(j);
    }
    /* GATEWAY is the owner: the answer is the tenant, which stays. */
    if (moved_to(j, gw)) {
        if (!cli->json) {
            printf("tenant %s stays at %s\n", name, gw);
        }
        goto out;
    }
    if (!cli->json) {
        printf("tenant %s moving from %s to %s\n", name, ctl_cli_fmt_str(j, "gateway"),
               ctl_cli_fmt_str(j, "moving_to"));
    }
    if (cli->wait != NULL) {
        code = ctl_cli_wait_moved(cli, name, gw, wait_s);
    }
out:
    json_decref(j);
    return code;
}

/* tenant cost NAME */
static int
cmd_cost(struct ctl_cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs != 3) {
        return ctl_cli_usage_error("usage: tenant cost NAME");
    }
    code = ctl_cli_call_api(cli, "GET", "/v1/tenants/%s/cost", cli->args[2], NULL, &j);
    if (code == 0 && cli->json) {
        ctl_cli_print_json(j);
    } else if (code == 0) {
        struct ctl_cli_table t = {5, 0, NULL};
        time_t since = (time_t)(json_integer_value(json_object_get(j, "since_ms")) / 1000);
        char when[32], *total = ctl_cli_ring();
        struct tm tm;

        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&since, &tm));
        printf("tenant %s (id %s), accounted since %s\n", ctl_cli_fmt_str(j, "name"),
               ctl_cli_fmt_num(j, "id", -1), when);
        ctl_cli_table_row(&t, "ITEM", "QUANTITY", "UNIT", "PRICE/UNIT (USD)", "USD");
        json_array_foreach(json_object_get(j, "breakdown"), i, e)
        {
            char *q = ctl_cli_ring(), *p = ctl_cli_ring(), *u = ctl_cli_ring();

            snprintf(q, 64, "%.6g", json_number_value(json_object_get(e, "quantity")));
            snprintf(p, 64, "%.6g", json_number_value(json_object_get(e, "unit_usd")));
            snprintf(u, 64, "%.9f", json_number_value(json_object_get(e, "usd")));
            ctl_cli_table_row(&t, ctl_cli_fmt_str(e, "item"), q, ctl_cli_fmt_str(e, "unit"), p, u);
        }
        snprintf(total, 64, "%.9f", json_number_value(json_object_get(j, "usd")));
        ctl_cli_table_row(&t, "total", "", "", "", total);
        ctl_cli_table_print(&t);
        printf("memory %s GB-s, %s invocations, %s COS requests, %s COS bytes\n",
               ctl_cli_fmt_num(j, "memory_gb_seconds", 6), ctl_cli_fmt_num(j, "invocations", -1),
               ctl_cli_fmt_num(j, "cos_requests", -1), ctl_cli_fmt_num(j, "cos_bytes", -1));
    }
    json_decref(j);
    return code;
}

/* tenant s3-key create|list|delete NAME [ACCESS_KEY_ID] */
static int
cmd_s3key(struct ctl_cli *cli)
{
    const char *act = cli->nargs > 2 ? cli->args[2] : "";
    const char *name = cli->nargs > 3 ? cli->args[3] : NULL;
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (strcmp(act, "delete") == 0 ? cli->nargs != 5 : cli->nargs != 4) {
        return ctl_cli_usage_error("usage: tenant s3-key create|list NAME, "
                                   "tenant s3-key delete NAME ACCESS_KEY_ID");
    }
    if (strcmp(act, "create") == 0) {
        code = ctl_cli_call_api(cli, "POST", "/v1/tenants/%s/s3-keys", name, NULL, &j);
        if (code == 0 && cli->json) {
            ctl_cli_print_json(j);
        } else if (code == 0) {
            struct ctl_cli_table t = {2, 0, NULL};

            ctl_cli_table_row(&t, "access key id:", ctl_cli_fmt_str(j, "access_key_id"));
            ctl_cli_table_row(&t, "secret access key:", ctl_cli_fmt_str(j, "secret_access_key"));
            ctl_cli_table_row(&t, "created:", ctl_cli_fmt_str(j, "created"));
            ctl_cli_table_print(&t);
            printf("save the secret now: it is shown only once\n");
        }
    } else if (strcmp(act, "list") == 0) {
        code = ctl_cli_call_api(cli, "GET", "/v1/tenants/%s/s3-keys", name, NULL, &j);
        if (code == 0 && cli->json) {
            ctl_cli_print_json(j);
        } else if (code == 0) {
            struct ctl_cli_table t = {2, 0, NULL};

            ctl_cli_table_row(&t, "ACCESS_KEY_ID", "CREATED");
            json_array_foreach(json_object_get(j, "s3_keys"), i, e)
            {
                ctl_cli_table_row(&t, ctl_cli_fmt_str(e, "access_key_id"),
                                  ctl_cli_fmt_str(e, "created"));
            }
            ctl_cli_table_print(&t);
        }
    } else if (strcmp(act, "delete") == 0) {
        struct cm_buf path;

        /* The id goes into the path escaped like the name: a typo must not
         * turn into another path. */
        cm_buf_init(&path);
        cm_buf_printf(&path, "/v1/tenants/%%s/s3-keys/");
        ctl_cli_append_escaped(&path, cli->args[4]);
        code = ctl_cli_call_api(cli, "DELETE", path.p, name, NULL, &j);
        cm_buf_fini(&path);
        if (code == 0 && !cli->json) {
            printf("deleted S3 key %s of tenant %s\n", cli->args[4], name);
        }
    } else {
        return ctl_cli_usage_error("tenant s3-key: unknown action '%s' (create, list or delete)",
                                   act);
    }
    json_decref(j);
    return code;
}

int
ctl_cli_cmd_tenant(struct ctl_cli *cli)
{
    const char *sub = cli->nargs > 1 ? cli->args[1] : NULL;
    json_t *j = NULL;
    double w = 1.0;
    int code;

    if (sub == NULL) {
        return ctl_cli_usage_error("tenant: missing subcommand");
    }
    if (cli->weight != NULL && strcmp(sub, "create") != 0) {
        return ctl_cli_usage_error("--weight only applies to tenant create");
    }
    if (cli->wait != NULL && strcmp(sub, "move") != 0) {
        return ctl_cli_usage_error("--wait only applies to tenant move");
    }
    if (strcmp(sub, "move") == 0) {
        return cmd_move(cli);
    }
    if (strcmp(sub, "s3-key") == 0) {
        return cmd_s3key(cli);
    }
    if (strcmp(sub, "cost") == 0) {
        return cmd_cost(cli);
    }
    if (strcmp(sub, "list") == 0) {
        if (cli->nargs != 2) {
            return ctl_cli_usage_error("usage: tenant list");
        }
        code = ctl_cli_call_api(cli, "GET", "/v1/tenants", NULL, NULL, &j);
        if (code == 0 && cli->json) {
            ctl_cli_print_json(j);
        } else if (code == 0) {
            struct ctl_cli_table t = {4, 0, NULL};
            size_t i;
            json_t *e;

            ctl_cli_table_row(&t, "NAME", "ID", "WEIGHT", "GATEWAY");
            json_array_foreach(json_object_get(j, "tenants"), i, e)
            {
                ctl_cli_table_row(&t, ctl_cli_fmt_str(e, "name"), ctl_cli_fmt_num(e, "id", -1),
                                  ctl_cli_fmt_num(e, "weight", -1), ctl_cli_fmt_str(e, "gateway"));
            }
            ctl_cli_table_print(&t);
        }
        goto out;
    }
    if (cli->nargs < 3) {
        return ctl_cli_usage_error("tenant %s: missing NAME", sub);
    }
    if (strcmp(sub, "create") == 0) {
        if (cli->nargs != 3) {
            return ctl_cli_usage_error("usage: tenant create NAME [--weight W]");
        }
        if (cli->weight != NULL && (code = parse_weight(cli->weight, &w)) != 0) {
            return code;
        }
        code = ctl_cli_call_api(cli, "POST", "/v1/tenants", NULL,
                                json_pack("{s:s, s:f}", "name", cli->args[2], "weight", w), &j);
        if (code == 0 && cli->json) {
            ctl_cli_print_json(j);
        } else if (code == 0) {
            printf("created tenant %s (id %s, weight %s)\n", ctl_cli_fmt_str(j, "name"),
                   ctl_cli_fmt_num(j, "id", -1), ctl_cli_fmt_num(j, "weight", -1));
            printf("key: %s\n", ctl_cli_fmt_str(j, "key"));
            printf("save this key now: it is shown only once\n");
        }
    } else if (strcmp(sub, "show") == 0 && cli->nargs == 3) {
        code = ctl_cli_call_api(cli, "GET", "/v1/tenants/%s", cli->args[2], NULL, &j);
        if (code == 0) {
            if (cli->json) {
                ctl_cli_print_json(j);
            } else {
                show_tenant(j);
            }
        }
    } else if (strcmp(sub, "set-weight") == 0 && cli->nargs == 4) {
        if ((code = parse_weight(cli->args[3], &w)) != 0) {
            return code;
        }
        code = ctl_cli_call_api(cli, "PATCH", "/v1/tenants/%s", cli->args[2],
                                json_pack("{s:f}", "weight", w), &j);
        if (code == 0) {
            if (cli->json) {
                ctl_cli_print_json(j);
            } else {
                show_tenant(j);
            }
        }
    } else if (strcmp(sub, "rotate-key") == 0 && cli->nargs == 3) {
        code = ctl_cli_call_api(cli, "POST", "/v1/tenants/%s/keys", cli->args[2], NULL, &j);
        if (code == 0 && cli->json) {
            ctl_cli_print_json(j);
        } else if (code == 0) {
            printf("new key for tenant %s: %s\n", cli->args[2], ctl_cli_fmt_str(j, "key"));
            printf("the old key no longer works; save this one now: it is shown only once\n");
        }
    } else if (strcmp(sub, "delete") == 0 && cli->nargs == 3) {
        code = ctl_cli_call_api(cli, "DELETE", "/v1/tenants/%s", cli->args[2], NULL, &j);
        if (code == 0 && !cli->json) {
            printf("deleted tenant %s (its objects are removed in the background)\n", cli->args[2]);
        }
    } else {
        return ctl_cli_usage_error("tenant: unknown subcommand or wrong arguments: %s", sub);
    }
out:
    json_decref(j);
    return code;
}
