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
 * This file: the command line, the --config file, the HTTP call and the
 * table and number formatting the commands share (shoalctl.h); the
 * commands are in shoalctl_tenant.c and shoalctl_cluster.c.
 *
 * Single-threaded; links only common (cm_httpc over libcurl) and jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"
#include "cm_httpc.h"
#include "cm_token.h"
#include "shoalctl.h"

#define EXIT_REFUSED CTL_CLI_EXIT_REFUSED
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define TIMEOUT_MS 10000

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
    "  tenant move NAME GATEWAY [--wait SECONDS]\n"
    "                                    move a tenant to another gateway (its owner hands its\n"
    "                                    metadata over); --wait: until it is there (exit 1 if "
    "not)\n"
    "  tenant s3-key create NAME         new S3 access key; prints its secret once\n"
    "  tenant s3-key list NAME           the tenant's S3 access key ids (never secrets)\n"
    "  tenant s3-key delete NAME ACCESS_KEY_ID\n"
    "                                    the key stops working at the gateways' next refresh\n"
    "  tenant cost NAME                  memory GB-s, invocations, COS requests and bytes, price\n"
    "  node list                         storage nodes: address, state, capacity, memory, load\n"
    "  node reclaim NODE (--instance I | --all)\n"
    "                                    fault injection: the node loses instance I (a slot) or\n"
    "                                    all its instances at its next heartbeat\n"
    "  node remove NODE [--wait SECONDS | --cancel]\n"
    "                                    take a node out of the cluster: placement leaves it,\n"
    "                                    the gateways move its chunks to other nodes (read from\n"
    "                                    copies or parity if it is down), then it is removed;\n"
    "                                    --wait: until removed (exit 1 if not); --cancel: it\n"
    "                                    stays a member (while it still drains)\n"
    "  placement show                    partition map with its epoch\n"
    "  placement rebalance               run partition placement now\n"
    "  placement status                  placement epoch, solver, migration progress\n"
    "  gateway rebalance [--dry-run] [--wait SECONDS]\n"
    "                                    move tenants between the up gateways, one at a time,\n"
    "                                    until their loads (dominant shares) are even; each move\n"
    "                                    waits SECONDS (60) to finish; --dry-run: the plan only\n"
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
    "  --wait SECONDS     how long tenant move (each move of gateway rebalance) waits\n"
    "                     for the move to finish, and node remove for the removal\n"
    "  --dry-run          gateway rebalance prints its plan and moves nothing\n"
    "  --cancel           node remove cancels the node's removal\n"
    "  --instance I, --all  what node reclaim takes\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 ok, 1 controller refused, 2 usage error, 3 controller unreachable\n";

int
ctl_cli_usage_error(const char *fmt, ...)
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

void
ctl_cli_table_row(struct ctl_cli_table *t, ...)
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

void
ctl_cli_table_print(struct ctl_cli_table *t)
{
    size_t w[CTL_CLI_TABLE_MAX_COLS] = {0};

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

char *
ctl_cli_ring(void)
{
    static char bufs[16][64];
    static int next;

    next = (next + 1) % 16;
    return bufs[next];
}

const char *
ctl_cli_fmt_num(json_t *o, const char *key, int prec)
{
    json_t *v = json_object_get(o, key);
    char *b = ctl_cli_ring();

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

const char *
ctl_cli_fmt_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s != NULL && s[0] != '\0' ? s : "-";
}

const char *
ctl_cli_fmt_bytes(json_t *o, const char *key)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    json_t *v = json_object_get(o, key);
    double x = json_number_value(v);
    int u = 0;
    char *b = ctl_cli_ring();

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

void
ctl_cli_append_escaped(struct cm_buf *b, const char *s)
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
int
ctl_cli_call_api(struct ctl_cli *cli, const char *method, const char *path, const char *name,
                 json_t *body, json_t **out)
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
        ctl_cli_append_escaped(&url, name);
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

void
ctl_cli_print_json(json_t *j)
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
    struct ctl_cli *cli = arg;

    if (name == NULL) {
        return ctl_cli_usage_error("%s: expected name = value", where);
    }
    if (strcmp(name, "controller") == 0) {
        snprintf(url, sizeof(url), "%s", value);
        cli->url = url;
    } else if (strcmp(name, "token-file") == 0 || strcmp(name, "token_file") == 0) {
        snprintf(token_file, sizeof(token_file), "%s", value);
        cli->token_file = token_file;
    } else if (strcmp(name, "json") == 0) {
        cli->json =
            strcmp(value, "true") == 0 || strcmp(value, "1") == 0 || strcmp(value, "yes") == 0;
    } else {
        return ctl_cli_usage_error("%s: unknown setting '%s'", where, name);
    }
    return 0;
}

/* 0, or an exit code. */
static int
load_config(struct ctl_cli *cli, const char *path)
{
    int rc = cm_config_read_file(path, config_setting, cli);

    if (rc < 0) {
        return ctl_cli_usage_error("cannot open config %s: %s", path, strerror(-rc));
    }
    return rc;
}

int
main(int argc, char **argv)
{
    struct ctl_cli cli;
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
                return ctl_cli_usage_error("--config needs a file");
            }
            if ((code = load_config(&cli, path)) != 0) {
                return code;
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (opts_done || !is_option(a)) {
            if (cli.nargs == CTL_CLI_MAX_ARGS) {
                return ctl_cli_usage_error("too many arguments");
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
                return ctl_cli_usage_error("--controller needs a URL");
            }
        } else if (matches(a, "--token-file")) {
            if ((cli.token_file = opt_value(argc, argv, &i, "--token-file")) == NULL) {
                return ctl_cli_usage_error("--token-file needs a path");
            }
        } else if (matches(a, "--instance")) {
            if ((cli.instance = opt_value(argc, argv, &i, "--instance")) == NULL) {
                return ctl_cli_usage_error("--instance needs a slot number");
            }
        } else if (strcmp(a, "--all") == 0) {
            cli.all = 1;
        } else if (strcmp(a, "--dry-run") == 0) {
            cli.dry_run = 1;
        } else if (strcmp(a, "--cancel") == 0) {
            cli.cancel = 1;
        } else if (matches(a, "--weight")) {
            if ((cli.weight = opt_value(argc, argv, &i, "--weight")) == NULL) {
                return ctl_cli_usage_error("--weight needs a number");
            }
        } else if (matches(a, "--wait")) {
            if ((cli.wait = opt_value(argc, argv, &i, "--wait")) == NULL) {
                return ctl_cli_usage_error("--wait needs a number of seconds");
            }
        } else {
            return ctl_cli_usage_error("unknown option %s", a);
        }
    }
    if (cli.nargs == 0) {
        return ctl_cli_usage_error("missing command");
    }
    if (strncmp(cli.url, "http://", 7) != 0 && strncmp(cli.url, "https://", 8) != 0) {
        return ctl_cli_usage_error("--controller must be an http:// URL, got '%s'", cli.url);
    }
    ulen = strlen(cli.url);
    while (ulen > 0 && cli.url[ulen - 1] == '/') {
        ulen--;
    }
    cli.url = strndup(cli.url, ulen);
    if (cli.token_file != NULL) {
        int rc = cm_token_load(cli.token_file, 0, cli.token, sizeof(cli.token));

        if (rc < 0) {
            code = ctl_cli_usage_error("cannot read token file %s: %s", cli.token_file,
                                       cm_strerror(rc));
            goto out;
        }
        cli.have_token = 1;
    }
    if ((cli.instance != NULL || cli.all) && strcmp(cli.args[0], "node") != 0) {
        code = ctl_cli_usage_error("--instance and --all only apply to node reclaim");
    } else if (cli.wait != NULL && strcmp(cli.args[0], "tenant") != 0 &&
               strcmp(cli.args[0], "gateway") != 0 && strcmp(cli.args[0], "node") != 0) {
        code = ctl_cli_usage_error(
            "--wait only applies to tenant move, node remove and gateway rebalance");
    } else if (cli.dry_run && strcmp(cli.args[0], "gateway") != 0) {
        code = ctl_cli_usage_error("--dry-run only applies to gateway rebalance");
    } else if (cli.cancel && strcmp(cli.args[0], "node") != 0) {
        code = ctl_cli_usage_error("--cancel only applies to node remove");
    } else if (strcmp(cli.args[0], "tenant") == 0) {
        code = ctl_cli_cmd_tenant(&cli);
    } else if (strcmp(cli.args[0], "node") == 0) {
        code = ctl_cli_cmd_node(&cli);
    } else if (strcmp(cli.args[0], "placement") == 0) {
        code = ctl_cli_cmd_placement(&cli);
    } else if (strcmp(cli.args[0], "fairness") == 0) {
        code = ctl_cli_cmd_fairness(&cli);
    } else if (strcmp(cli.args[0], "gateway") == 0) {
        code = ctl_cli_cmd_gateway(&cli);
    } else {
        code = ctl_cli_usage_error("unknown command %s", cli.args[0]);
    }
out:
    free((char *)cli.url);
    return code;
}
