/*
 * shoalctl.c - the admin CLI: one HTTP call to the controller's admin API
 * per command, its answer as an aligned table (or the API's JSON with
 * --json).
 *
 *   shoalctl [--controller URL] [--token-file F] [--json] COMMAND
 *
 * Exit codes: 0 ok, 1 the controller refused (its message on stderr),
 * 2 usage error, 3 controller unreachable. Options may appear anywhere on
 * the line; "--" ends them (for a name starting with '-').
 *
 * Single-threaded; links only common (cm_httpc over libcurl) and jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"
#include "cm_httpc.h"
#include "cm_token.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define TIMEOUT_MS 10000
#define MAX_ARGS 8

static const char usage_text[] =
    "usage: shoalctl [--controller URL] [--token-file F] [--json] COMMAND\n"
    "\n"
    "commands:\n"
    "  tenant create NAME [--weight W]   create a tenant; prints its key once\n"
    "  tenant list                       list tenants\n"
    "  tenant show NAME                  a tenant with its live figures\n"
    "  tenant set-weight NAME W          change a tenant's weight\n"
    "  tenant rotate-key NAME            new key; the old one stops working\n"
    "  tenant delete NAME                delete a tenant and (in the background) its objects\n"
    "  tenant s3-key create NAME         new S3 access key; prints its secret once\n"
    "  tenant s3-key list NAME           the tenant's S3 access key ids (never secrets)\n"
    "  tenant s3-key delete NAME ACCESS_KEY_ID\n"
    "                                    the key stops working at the gateways' next refresh\n"
    "  tenant cost NAME                  memory GB-s, invocations, COS requests and bytes, price\n"
    "  node list                         storage nodes: address, state, capacity, memory, load\n"
    "  node reclaim NODE (--instance I | --all)\n"
    "                                    fault injection: the node loses instance I (a slot) or\n"
    "                                    all its instances at its next heartbeat\n"
    "  placement show                    partition map with its epoch\n"
    "  placement rebalance               run partition placement now\n"
    "  placement status                  placement epoch, solver, migration progress\n"
    "  fairness                          per-tenant weight, demand, fair share, share; MMR,\n"
    "                                    Jain's index; local weights per node (allocated\n"
    "                                    by weight allocation, and applied by the node)\n"
    "\n"
    "options:\n"
    "  --controller URL   controller address (env SHOAL_CONTROLLER,\n"
    "                     default http://127.0.0.1:9400)\n"
    "  --token-file F     admin token file (env SHOAL_ADMIN_TOKEN_FILE)\n"
    "  --json             print the API's JSON instead of a table\n"
    "  --config FILE      'name = value' lines: controller, token-file, json\n"
    "                     (flags override the file, the file overrides env)\n"
    "  --weight W         weight for tenant create (default 1)\n"
    "  --instance I, --all  what node reclaim takes\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 ok, 1 controller refused, 2 usage error, 3 controller unreachable\n";

struct cli {
    const char *url;
    const char *token_file;
    int json;
    const char *weight;   /* --weight, for tenant create */
    const char *instance; /* --instance, for node reclaim */
    int all;              /* --all, for node reclaim */
    int nargs;
    const char *args[MAX_ARGS];
    char token[512];
    int have_token;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("shoalctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (see shoalctl --help)\n", stderr);
    return EXIT_USAGE;
}

/* ---- tables ---- */

#define TABLE_MAX_COLS 10

struct table {
    int ncols;
    size_t nrows; /* row 0 is the header */
    char **cells; /* nrows * ncols, malloc'd strings */
};

static void
table_row(struct table *t, ...)
{
    va_list ap;

    t->cells = cm_realloc(t->cells, (t->nrows + 1) * (size_t)t->ncols * sizeof(char *));
    va_start(ap, t);
    for (int c = 0; c < t->ncols; c++) {
        const char *s = va_arg(ap, const char *);

        t->cells[t->nrows * (size_t)t->ncols + (size_t)c] = cm_strdup(s != NULL ? s : "-");
    }
    va_end(ap);
    t->nrows++;
}

static void
table_print(struct table *t)
{
    size_t w[TABLE_MAX_COLS] = {0};

    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            size_t l = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);

            w[c] = l > w[c] ? l : w[c];
        }
    }
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];

            if (c == t->ncols - 1) {
                printf("%s\n", s);
            } else {
                printf("%-*s  ", (int)w[c], s);
            }
        }
    }
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) {
        free(t->cells[i]);
    }
    free(t->cells);
    t->cells = NULL;
    t->nrows = 0;
}

/* ---- formatting helpers (each returns a static buffer from a ring) ---- */

static char *
ring(void)
{
    static char bufs[16][64];
    static int next;

    next = (next + 1) % 16;
    return bufs[next];
}

static const char *
fmt_num(json_t *o, const char *key, int prec)
{
    json_t *v = json_object_get(o, key);
    char *b = ring();

    if (json_is_integer(v)) {
        snprintf(b, 64, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        if (prec < 0) {
            snprintf(b, 64, "%g", json_real_value(v));
        } else {
            snprintf(b, 64, "%.*f", prec, json_real_value(v));
        }
    } else {
        snprintf(b, 64, "-");
    }
    return b;
}

static const char *
fmt_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s != NULL && s[0] != '\0' ? s : "-";
}

static const char *
fmt_bytes(json_t *o, const char *key)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    json_t *v = json_object_get(o, key);
    double x = json_number_value(v);
    int u = 0;
    char *b = ring();

    if (!json_is_number(v)) {
        return "-";
    }
    while (x >= 1024 && u < 5) {
        x /= 1024;
        u++;
    }
    snprintf(b, 64, u == 0 ? "%.0f%s" : "%.1f%s", x, units[u]);
    return b;
}

/* ---- HTTP ---- */

static void
append_escaped(struct cm_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            cm_buf_append(b, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};

            cm_buf_append(b, e, 3);
        }
    }
}

/*
 * Calls the API. path_fmt's single %s (if any) is name, percent-encoded.
 * On success (2xx) returns 0 with *out the parsed body (NULL if empty);
 * otherwise prints the reason and returns the exit code.
 */
static int
call_api(struct cli *cli, const char *method, const char *path, const char *name, json_t *body,
         json_t **out)
{
    struct cm_buf url;
    struct cm_httpc_resp resp = {0};
    char *text = NULL;
    const char *pct;
    int rc, code = 0;

    *out = NULL;
    cm_buf_init(&url);
    cm_buf_printf(&url, "%s", cli->url);
    pct = strstr(path, "%s");
    if (pct != NULL) {
        cm_buf_append(&url, path, (size_t)(pct - path));
        append_escaped(&url, name);
        cm_buf_printf(&url, "%s", pct + 2);
    } else {
        cm_buf_printf(&url, "%s", path);
    }
    if (body != NULL) {
        text = json_dumps(body, JSON_COMPACT);
    }
    rc = cm_httpc_request(method, url.p, cli->have_token ? cli->token : NULL, text, TIMEOUT_MS,
                          &resp);
    if (rc < 0) {
        fprintf(stderr, "shoalctl: controller unreachable at %s: %s\n", cli->url, cm_strerror(rc));
        code = EXIT_UNREACHABLE;
        goto out;
    }
    if (resp.status < 200 || resp.status > 299) {
        json_t *e = resp.body != NULL ? json_loads(resp.body, 0, NULL) : NULL;
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *err = json_string_value(json_object_get(e, "error"));

        fprintf(stderr, "shoalctl: controller refused (%d %s): %s\n", resp.status,
                err != NULL ? err : "error", msg != NULL ? msg : "no message");
        if (resp.status == 401) {
            fprintf(stderr, "shoalctl: hint: pass --token-file or set "
                            "SHOAL_ADMIN_TOKEN_FILE\n");
        }
        json_decref(e);
        code = EXIT_REFUSED;
        goto out;
    }
    if (resp.body != NULL && resp.len > 0) {
        *out = json_loads(resp.body, 0, NULL);
        if (*out == NULL) {
            fprintf(stderr, "shoalctl: controller sent a body that is not JSON\n");
            code = EXIT_REFUSED;
        }
    }
out:
    free(text);
    json_decref(body);
    cm_httpc_resp_fini(&resp);
    cm_buf_fini(&url);
    return code;
}

static void
print_json(json_t *j)
{
    char *s;

    if (j == NULL) {
        return;
    }
    s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s != NULL) {
        printf("%s\n", s);
        free(s);
    }
}

/* ---- commands ---- */

static int
parse_weight(const char *s, double *w)
{
    if (cm_parse_double(s, w) < 0) {
        return usage_error("weight must be a number, got '%s'", s);
    }
    return 0;
}

/* The pool's rows of tenant show. */
static void
show_pool(struct table *t, json_t *p)
{
    char *v = ring();

    if (p == NULL) {
        return;
    }
    snprintf(v, 64, "%s, generation %s (%s ms old)", fmt_str(p, "policy"),
             fmt_num(p, "generation", -1), fmt_num(p, "generation_age_ms", -1));
    table_row(t, "pool", v);
    v = ring();
    snprintf(v, 64, "%s (%s warm, %s active, %s degraded; %s lost) on %s nodes",
             fmt_num(p, "instances", -1), fmt_num(p, "warm", -1), fmt_num(p, "active", -1),
             fmt_num(p, "degraded", -1), fmt_num(p, "lost", -1), fmt_num(p, "nodes", -1));
    table_row(t, "pool instances", v);
    table_row(t, "pool memory", fmt_bytes(p, "memory_bytes"));
    table_row(t, "pool chunk bytes", fmt_bytes(p, "used_bytes"));
    table_row(t, "working set", fmt_bytes(p, "working_set_bytes"));
    table_row(t, "read last interval", fmt_bytes(p, "read_bytes_last_interval"));
}

static void
show_tenant(json_t *j)
{
    struct table t = {2, 0, NULL};

    table_row(&t, "FIELD", "VALUE");
    table_row(&t, "name", fmt_str(j, "name"));
    table_row(&t, "id", fmt_num(j, "id", -1));
    table_row(&t, "weight", fmt_num(j, "weight", -1));
    if (json_object_get(j, "ec_k") != NULL) {
        char *ec = ring();

        snprintf(ec, 64, "%s+%s", fmt_num(j, "ec_k", -1), fmt_num(j, "ec_m", -1));
        table_row(&t, "ec (k+m)", ec);
    }
    if (json_object_get(j, "served_requests_per_second") != NULL) {
        table_row(&t, "served req/s", fmt_num(j, "served_requests_per_second", 1));
        table_row(&t, "served bytes/s", fmt_num(j, "served_bytes_per_second", 0));
        table_row(&t, "queued", fmt_num(j, "queued", 0));
        table_row(&t, "queue wait (s)", fmt_num(j, "queue_wait_seconds", 6));
        table_row(&t, "demand req/s", fmt_num(j, "demand_requests_per_second", 1));
        table_row(&t, "demand (nodes)", fmt_num(j, "demand", 4));
        table_row(&t, "fair share (nodes)", fmt_num(j, "allocation", 4));
        table_row(&t, "share (nodes)", fmt_num(j, "dominant_share", 4));
    }
    show_pool(&t, json_object_get(j, "pool"));
    table_print(&t);
}

/* tenant cost NAME */
static int
cmd_cost(struct cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs != 3) {
        return usage_error("usage: tenant cost NAME");
    }
    code = call_api(cli, "GET", "/v1/tenants/%s/cost", cli->args[2], NULL, &j);
    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        struct table t = {5, 0, NULL};
        time_t since = (time_t)(json_integer_value(json_object_get(j, "since_ms")) / 1000);
        char when[32], *total = ring();
        struct tm tm;

        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&since, &tm));
        printf("tenant %s (id %s), accounted since %s\n", fmt_str(j, "name"), fmt_num(j, "id", -1),
               when);
        table_row(&t, "ITEM", "QUANTITY", "UNIT", "PRICE/UNIT (USD)", "USD");
        json_array_foreach(json_object_get(j, "breakdown"), i, e)
        {
            char *q = ring(), *p = ring(), *u = ring();

            snprintf(q, 64, "%.6g", json_number_value(json_object_get(e, "quantity")));
            snprintf(p, 64, "%.6g", json_number_value(json_object_get(e, "unit_usd")));
            snprintf(u, 64, "%.9f", json_number_value(json_object_get(e, "usd")));
            table_row(&t, fmt_str(e, "item"), q, fmt_str(e, "unit"), p, u);
        }
        snprintf(total, 64, "%.9f", json_number_value(json_object_get(j, "usd")));
        table_row(&t, "total", "", "", "", total);
        table_print(&t);
        printf("memory %s GB-s, %s invocations, %s COS requests, %s COS bytes\n",
               fmt_num(j, "memory_gb_seconds", 6), fmt_num(j, "invocations", -1),
               fmt_num(j, "cos_requests", -1), fmt_num(j, "cos_bytes", -1));
    }
    json_decref(j);
    return code;
}

/* tenant s3-key create|list|delete NAME [ACCESS_KEY_ID] */
static int
cmd_s3key(struct cli *cli)
{
    const char *act = cli->nargs > 2 ? cli->args[2] : "";
    const char *name = cli->nargs > 3 ? cli->args[3] : NULL;
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (strcmp(act, "delete") == 0 ? cli->nargs != 5 : cli->nargs != 4) {
        return usage_error("usage: tenant s3-key create|list NAME, "
                           "tenant s3-key delete NAME ACCESS_KEY_ID");
    }
    if (strcmp(act, "create") == 0) {
        code = call_api(cli, "POST", "/v1/tenants/%s/s3-keys", name, NULL, &j);
        if (code == 0 && cli->json) {
            print_json(j);
        } else if (code == 0) {
            struct table t = {2, 0, NULL};

            table_row(&t, "access key id:", fmt_str(j, "access_key_id"));
            table_row(&t, "secret access key:", fmt_str(j, "secret_access_key"));
            table_row(&t, "created:", fmt_str(j, "created"));
            table_print(&t);
            printf("save the secret now: it is shown only once\n");
        }
    } else if (strcmp(act, "list") == 0) {
        code = call_api(cli, "GET", "/v1/tenants/%s/s3-keys", name, NULL, &j);
        if (code == 0 && cli->json) {
            print_json(j);
        } else if (code == 0) {
            struct table t = {2, 0, NULL};

            table_row(&t, "ACCESS_KEY_ID", "CREATED");
            json_array_foreach(json_object_get(j, "s3_keys"), i, e)
            {
                table_row(&t, fmt_str(e, "access_key_id"), fmt_str(e, "created"));
            }
            table_print(&t);
        }
    } else if (strcmp(act, "delete") == 0) {
        struct cm_buf path;

        /* The id goes into the path escaped like the name: a typo must not
         * turn into another path. */
        cm_buf_init(&path);
        cm_buf_printf(&path, "/v1/tenants/%%s/s3-keys/");
        append_escaped(&path, cli->args[4]);
        code = call_api(cli, "DELETE", path.p, name, NULL, &j);
        cm_buf_fini(&path);
        if (code == 0 && !cli->json) {
            printf("deleted S3 key %s of tenant %s\n", cli->args[4], name);
        }
    } else {
        return usage_error("tenant s3-key: unknown action '%s' (create, list or delete)", act);
    }
    json_decref(j);
    return code;
}

static int
cmd_tenant(struct cli *cli)
{
    const char *sub = cli->nargs > 1 ? cli->args[1] : NULL;
    json_t *j = NULL;
    double w = 1.0;
    int code;

    if (sub == NULL) {
        return usage_error("tenant: missing subcommand");
    }
    if (cli->weight != NULL && strcmp(sub, "create") != 0) {
        return usage_error("--weight only applies to tenant create");
    }
    if (strcmp(sub, "s3-key") == 0) {
        return cmd_s3key(cli);
    }
    if (strcmp(sub, "cost") == 0) {
        return cmd_cost(cli);
    }
    if (strcmp(sub, "list") == 0) {
        if (cli->nargs != 2) {
            return usage_error("usage: tenant list");
        }
        code = call_api(cli, "GET", "/v1/tenants", NULL, NULL, &j);
        if (code == 0 && cli->json) {
            print_json(j);
        } else if (code == 0) {
            struct table t = {3, 0, NULL};
            size_t i;
            json_t *e;

            table_row(&t, "NAME", "ID", "WEIGHT");
            json_array_foreach(json_object_get(j, "tenants"), i, e)
            {
                table_row(&t, fmt_str(e, "name"), fmt_num(e, "id", -1), fmt_num(e, "weight", -1));
            }
            table_print(&t);
        }
        goto out;
    }
    if (cli->nargs < 3) {
        return usage_error("tenant %s: missing NAME", sub);
    }
    if (strcmp(sub, "create") == 0) {
        if (cli->nargs != 3) {
            return usage_error("usage: tenant create NAME [--weight W]");
        }
        if (cli->weight != NULL && (code = parse_weight(cli->weight, &w)) != 0) {
            return code;
        }
        code = call_api(cli, "POST", "/v1/tenants", NULL,
                        json_pack("{s:s, s:f}", "name", cli->args[2], "weight", w), &j);
        if (code == 0 && cli->json) {
            print_json(j);
        } else if (code == 0) {
            printf("created tenant %s (id %s, weight %s)\n", fmt_str(j, "name"),
                   fmt_num(j, "id", -1), fmt_num(j, "weight", -1));
            printf("key: %s\n", fmt_str(j, "key"));
            printf("save this key now: it is shown only once\n");
        }
    } else if (strcmp(sub, "show") == 0 && cli->nargs == 3) {
        code = call_api(cli, "GET", "/v1/tenants/%s", cli->args[2], NULL, &j);
        if (code == 0) {
            if (cli->json) {
                print_json(j);
            } else {
                show_tenant(j);
            }
        }
    } else if (strcmp(sub, "set-weight") == 0 && cli->nargs == 4) {
        if ((code = parse_weight(cli->args[3], &w)) != 0) {
            return code;
        }
        code = call_api(cli, "PATCH", "/v1/tenants/%s", cli->args[2],
                        json_pack("{s:f}", "weight", w), &j);
        if (code == 0) {
            if (cli->json) {
                print_json(j);
            } else {
                show_tenant(j);
            }
        }
    } else if (strcmp(sub, "rotate-key") == 0 && cli->nargs == 3) {
        code = call_api(cli, "POST", "/v1/tenants/%s/keys", cli->args[2], NULL, &j);
        if (code == 0 && cli->json) {
            print_json(j);
        } else if (code == 0) {
            printf("new key for tenant %s: %s\n", cli->args[2], fmt_str(j, "key"));
            printf("the old key no longer works; save this one now: it is shown only once\n");
        }
    } else if (strcmp(sub, "delete") == 0 && cli->nargs == 3) {
        code = call_api(cli, "DELETE", "/v1/tenants/%s", cli->args[2], NULL, &j);
        if (code == 0 && !cli->json) {
            printf("deleted tenant %s (its objects are removed in the background)\n", cli->args[2]);
        }
    } else {
        return usage_error("tenant: unknown subcommand or wrong arguments: %s", sub);
    }
out:
    json_decref(j);
    return code;
}

/* node reclaim NODE (--instance I | --all) */
static int
cmd_reclaim(struct cli *cli)
{
    json_t *j = NULL, *e;
    int64_t slot = 0;
    size_t i;
    int code;

    if (cli->nargs != 3 || (cli->instance != NULL) == cli->all) {
        return usage_error("usage: node reclaim NODE (--instance I | --all)");
    }
    if (cli->instance != NULL && (cm_parse_i64(cli->instance, &slot) < 0 || slot < 0)) {
        return usage_error("--instance must be a slot number, got '%s'", cli->instance);
    }
    code = call_api(cli, "POST", "/v1/nodes/%s/reclaim", cli->args[2],
                    cli->all ? json_pack("{s:b}", "all", 1)
                             : json_pack("{s:I}", "instance", (json_int_t)slot),
                    &j);
    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        struct table t = {5, 0, NULL};

        printf("node %s reclaims %s at its next heartbeat:\n", cli->args[2],
               cli->all ? "all its instances" : "one instance");
        table_row(&t, "SLOT", "TAG", "TENANT", "STATE", "USED");
        json_array_foreach(json_object_get(j, "instances"), i, e)
        {
            table_row(&t, fmt_num(e, "slot", -1), fmt_num(e, "tag", -1), fmt_num(e, "tenant", -1),
                      fmt_str(e, "state"), fmt_bytes(e, "used"));
        }
        table_print(&t);
    }
    json_decref(j);
    return code;
}

static int
cmd_node(struct cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs >= 2 && strcmp(cli->args[1], "reclaim") == 0) {
        return cmd_reclaim(cli);
    }
    if (cli->nargs != 2 || strcmp(cli->args[1], "list") != 0 || cli->instance != NULL || cli->all) {
        return usage_error("usage: node list | node reclaim NODE (--instance I | --all)");
    }
    code = call_api(cli, "GET", "/v1/nodes", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        struct table t = {10, 0, NULL};

        table_row(&t, "ID", "ADDR", "METRICS", "STATE", "SCHED", "CAPACITY", "USED", "MEMORY",
                  "INCARNATION", "LOAD(req/s)");
        json_array_foreach(json_object_get(j, "nodes"), i, e)
        {
            table_row(&t, fmt_num(e, "id", -1), fmt_str(e, "addr"), fmt_str(e, "metrics_addr"),
                      fmt_str(e, "state"), fmt_str(e, "sched"), fmt_bytes(e, "capacity_bytes"),
                      fmt_bytes(e, "used_bytes"), fmt_bytes(e, "memory_bytes"),
                      fmt_num(e, "incarnation", -1), fmt_num(e, "load", 1));
        }
        table_print(&t);
    }
    json_decref(j);
    return code;
}

/* placement rebalance | status: one call, then a two-column table. */
static int
cmd_placement_run(struct cli *cli, int rebalance)
{
    static const char *const rb[] = {"epoch", "policy", "solver", "changed", "partitions_moved",
                                     "bytes_moved", "solve_ms", "util_before", "util_after"};
    static const char *const stf[] = {"epoch", "policy", "solver", "moving_partitions",
                                      "bytes_to_move", "bytes_moved", "migrating", "gateways",
                                      "max_util", "replacements", "last_solve_ms"};
    const char *const *fields = rebalance ? rb : stf;
    size_t nf = rebalance ? sizeof(rb) / sizeof(rb[0]) : sizeof(stf) / sizeof(stf[0]);
    struct table t = {2, 0, NULL};
    json_t *j = NULL;
    int code = rebalance ? call_api(cli, "POST", "/v1/placement/rebalance", NULL, NULL, &j)
                         : call_api(cli, "GET", "/v1/placement/status", NULL, NULL, &j);

    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        table_row(&t, "FIELD", "VALUE");
        for (size_t i = 0; i < nf; i++) {
            json_t *v = json_object_get(j, fields[i]);

            table_row(&t, fields[i],
                      json_is_string(v)   ? fmt_str(j, fields[i])
                      : json_is_boolean(v) ? (json_is_true(v) ? "yes" : "no")
                                           : fmt_num(j, fields[i], 3));
        }
        table_print(&t);
    }
    json_decref(j);
    return code;
}

static int
cmd_placement(struct cli *cli)
{
    json_t *j = NULL, *e, *row, *n;
    size_t i, p, k;
    int code;

    if (cli->nargs == 2 &&
        (strcmp(cli->args[1], "rebalance") == 0 || strcmp(cli->args[1], "status") == 0)) {
        return cmd_placement_run(cli, strcmp(cli->args[1], "rebalance") == 0);
    }
    if (cli->nargs != 2 || strcmp(cli->args[1], "show") != 0) {
        return usage_error("usage: placement show|rebalance|status");
    }
    code = call_api(cli, "GET", "/v1/placement", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        printf("epoch %s, placement epoch %s (%s, policy %s), %s partitions per tenant\n",
               fmt_num(j, "epoch", -1), fmt_num(j, "placement_epoch", -1), fmt_str(j, "solver"),
               fmt_str(j, "policy"), fmt_num(j, "partitions", -1));
        json_array_foreach(json_object_get(j, "tenants"), i, e)
        {
            struct table t = {2, 0, NULL};

            printf("\ntenant %s (id %s, ec %s+%s)\n", fmt_str(e, "name"), fmt_num(e, "id", -1),
                   fmt_num(e, "ec_k", -1), fmt_num(e, "ec_m", -1));
            table_row(&t, "PARTITION", "NODES");
            json_array_foreach(json_object_get(e, "placement"), p, row)
            {
                struct cm_buf b;
                char pn[16];

                cm_buf_init(&b);
                json_array_foreach(row, k, n)
                {
                    cm_buf_printf(&b, "%s%lld", k ? " " : "", (long long)json_integer_value(n));
                }
                snprintf(pn, sizeof(pn), "%zu", p);
                table_row(&t, pn, b.p != NULL && b.len > 0 ? b.p : "-");
                cm_buf_fini(&b);
            }
            table_print(&t);
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
    v = ring();
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
    struct table t = {4, 0, NULL};
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
                table_row(&t, "NODE", "TENANT", "WA WEIGHT", "LOCAL WEIGHT");
            }
            table_row(&t, nb, fmt_str(e, "name"), wa, applied);
        }
        lo = next;
    }
    if (t.nrows == 0) {
        printf("local weights: none yet\n");
        return;
    }
    printf("\n");
    table_print(&t);
    printf("(WA WEIGHT: what weight allocation (%s) gives the tenant at the node; LOCAL WEIGHT: "
           "what the node reports applying)\n",
           json_is_string(json_object_get(j, "wa")) ? json_string_value(json_object_get(j, "wa"))
                                                    : "?");
}

static int
cmd_fairness(struct cli *cli)
{
    json_t *j = NULL, *e;
    size_t i;
    int code;

    if (cli->nargs != 1) {
        return usage_error("usage: fairness");
    }
    code = call_api(cli, "GET", "/v1/fairness", NULL, NULL, &j);
    if (code == 0 && cli->json) {
        print_json(j);
    } else if (code == 0) {
        struct table t = {10, 0, NULL};

        table_row(&t, "TENANT", "WEIGHT", "DEMAND", "FAIR SHARE", "SHARE", "SHARE/WEIGHT",
                  "COUNTED", "DEMAND(req/s)", "SERVED(req/s)", "SERVED(B/s)");
        json_array_foreach(json_object_get(j, "tenants"), i, e)
        {
            char *pw = ring();
            double w = json_number_value(json_object_get(e, "weight"));

            snprintf(pw, 64, "%.4f",
                     w > 0 ? json_number_value(json_object_get(e, "dominant_share")) / w : 0.0);
            table_row(&t, fmt_str(e, "name"), fmt_num(e, "weight", -1), fmt_num(e, "demand", 4),
                      fmt_num(e, "allocation", 4), fmt_num(e, "dominant_share", 4), pw,
                      json_is_true(json_object_get(e, "counted")) ? "yes" : "no",
                      fmt_num(e, "demand_requests_per_second", 1),
                      fmt_num(e, "served_requests_per_second", 1),
                      fmt_num(e, "served_bytes_per_second", 0));
        }
        table_print(&t);
        printf("min-max ratio: %s   jain index: %s   counted tenants: %s   capacity: %s\n",
               json_is_number(json_object_get(j, "min_max_ratio"))
                   ? fmt_num(j, "min_max_ratio", 3)
                   : "n/a (fewer than 2 counted tenants)",
               json_is_number(json_object_get(j, "jain")) ? fmt_num(j, "jain", 3) : "n/a",
               fmt_num(j, "active_tenants", -1), fmt_num(j, "capacity", 3));
        printf("(demand, shares and capacity: dominant cost per second, in nodes' worth of "
               "capacity; counted: demand reaches the fair share)\n");
        if (json_is_object(json_object_get(j, "wa_step"))) {
            json_t *ws = json_object_get(j, "wa_step");

            printf("weight allocation: %s   steps: %s   last step: weight moved %s, cycles %s, "
                   "max mismatch %s\n",
                   fmt_str(j, "wa"), fmt_num(ws, "steps", -1), fmt_num(ws, "moved", 4),
                   fmt_num(ws, "cycles", -1), fmt_num(ws, "max_mismatch", 3));
        }
        print_local_weights(j);
    }
    json_decref(j);
    return code;
}

/* ---- main ---- */

/* Value of option at argv[*i] ("--opt V" or "--opt=V"); NULL if missing. */
static const char *
opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    const char *a = argv[*i];

    if (strncmp(a, name, n) == 0 && a[n] == '=') {
        return a + n + 1;
    }
    if (*i + 1 < argc) {
        return argv[++*i];
    }
    return NULL;
}

static int
matches(const char *a, const char *name)
{
    size_t n = strlen(name);

    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

/* Numbers like "-1" are positional (a weight), not options. */
static int
is_option(const char *a)
{
    return a[0] == '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.';
}

/* One setting of a --config file; the values live in static storage for
 * the process lifetime. */
static int
config_setting(void *arg, const char *name, const char *value, const char *where)
{
    static char url[1024], token_file[1024];
    struct cli *cli = arg;

    if (name == NULL) {
        return usage_error("%s: expected name = value", where);
    }
    if (strcmp(name, "controller") == 0) {
        snprintf(url, sizeof(url), "%s", value);
        cli->url = url;
    } else if (strcmp(name, "token-file") == 0 || strcmp(name, "token_file") == 0) {
        snprintf(token_file, sizeof(token_file), "%s", value);
        cli->token_file = token_file;
    } else if (strcmp(name, "json") == 0) {
        cli->json = strcmp(value, "true") == 0 || strcmp(value, "1") == 0 ||
                    strcmp(value, "yes") == 0;
    } else {
        return usage_error("%s: unknown setting '%s'", where, name);
    }
    return 0;
}

/* 0, or an exit code. */
static int
load_config(struct cli *cli, const char *path)
{
    int rc = cm_config_read_file(path, config_setting, cli);

    if (rc < 0) {
        return usage_error("cannot open config %s: %s", path, strerror(-rc));
    }
    return rc;
}

int
main(int argc, char **argv)
{
    struct cli cli;
    const char *env;
    size_t ulen;
    int opts_done = 0, code;

    memset(&cli, 0, sizeof(cli));
    env = getenv("SHOAL_CONTROLLER");
    cli.url = env != NULL && env[0] != '\0' ? env : "http://127.0.0.1:9400";
    env = getenv("SHOAL_ADMIN_TOKEN_FILE");
    cli.token_file = env != NULL && env[0] != '\0' ? env : NULL;
    for (int i = 1; i < argc; i++) {
        if (matches(argv[i], "--config")) {
            const char *path = opt_value(argc, argv, &i, "--config");

            if (path == NULL) {
                return usage_error("--config needs a file");
            }
            if ((code = load_config(&cli, path)) != 0) {
                return code;
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (opts_done || !is_option(a)) {
            if (cli.nargs == MAX_ARGS) {
                return usage_error("too many arguments");
            }
            cli.args[cli.nargs++] = a;
        } else if (strcmp(a, "--") == 0) {
            opts_done = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("shoalctl %s\n", SHOAL_VERSION);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            cli.json = 1;
        } else if (matches(a, "--config")) {
            (void)opt_value(argc, argv, &i, "--config"); /* applied above */
        } else if (matches(a, "--controller")) {
            if ((cli.url = opt_value(argc, argv, &i, "--controller")) == NULL) {
                return usage_error("--controller needs a URL");
            }
        } else if (matches(a, "--token-file")) {
            if ((cli.token_file = opt_value(argc, argv, &i, "--token-file")) == NULL) {
                return usage_error("--token-file needs a path");
            }
        } else if (matches(a, "--instance")) {
            if ((cli.instance = opt_value(argc, argv, &i, "--instance")) == NULL) {
                return usage_error("--instance needs a slot number");
            }
        } else if (strcmp(a, "--all") == 0) {
            cli.all = 1;
        } else if (matches(a, "--weight")) {
            if ((cli.weight = opt_value(argc, argv, &i, "--weight")) == NULL) {
                return usage_error("--weight needs a number");
            }
        } else {
            return usage_error("unknown option %s", a);
        }
    }
    if (cli.nargs == 0) {
        return usage_error("missing command");
    }
    if (strncmp(cli.url, "http://", 7) != 0 && strncmp(cli.url, "https://", 8) != 0) {
        return usage_error("--controller must be an http:// URL, got '%s'", cli.url);
    }
    ulen = strlen(cli.url);
    while (ulen > 0 && cli.url[ulen - 1] == '/') {
        ulen--;
    }
    cli.url = strndup(cli.url, ulen);
    if (cli.token_file != NULL) {
        int rc = cm_token_load(cli.token_file, 0, cli.token, sizeof(cli.token));

        if (rc < 0) {
            code = usage_error("cannot read token file %s: %s", cli.token_file, cm_strerror(rc));
            goto out;
        }
        cli.have_token = 1;
    }
    if ((cli.instance != NULL || cli.all) && strcmp(cli.args[0], "node") != 0) {
        code = usage_error("--instance and --all only apply to node reclaim");
    } else if (strcmp(cli.args[0], "tenant") == 0) {
        code = cmd_tenant(&cli);
    } else if (strcmp(cli.args[0], "node") == 0) {
        code = cmd_node(&cli);
    } else if (strcmp(cli.args[0], "placement") == 0) {
        code = cmd_placement(&cli);
    } else if (strcmp(cli.args[0], "fairness") == 0) {
        code = cmd_fairness(&cli);
    } else {
        code = usage_error("unknown command %s", cli.args[0]);
    }
out:
    free((char *)cli.url);
    return code;
}
