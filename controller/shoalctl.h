/*
 * shoalctl.h - what the files of shoalctl, the admin CLI, share (private to
 * them):
 *
 *   shoalctl.c          the command line and --config, the HTTP call, tables
 *                       and number formatting, the dispatch to commands
 *   shoalctl_tenant.c   tenant commands: create, list, show, set-weight,
 *                       rotate-key, delete, move, s3-key, cost
 *   shoalctl_cluster.c  node, placement and fairness commands
 *   shoalctl_gateway.c  gateway rebalance (its plan: ctl_balance.c)
 *
 * A command reads its words from struct ctl_cli, makes one ctl_cli_call_api,
 * and prints the answer (ctl_cli_print_json with --json, else tables); it
 * returns the process's exit code (0, or what ctl_cli_call_api or
 * ctl_cli_usage_error returned).
 *
 * Single-threaded: the formatting helpers return buffers from one static
 * ring.
 */
#ifndef SHOALCTL_H
#define SHOALCTL_H

#include <jansson.h>
#include <stdint.h>
#include <stddef.h>

struct cm_buf;

#define CTL_CLI_MAX_ARGS 8
#define CTL_CLI_EXIT_REFUSED 1 /* the controller refused, or a wait ran out */
#define CTL_CLI_TABLE_MAX_COLS 10

struct ctl_cli {
    const char *url;
    const char *token_file;
    int json;
    const char *weight;   /* --weight, for tenant create */
    const char *wait;     /* --wait, for tenant move and gateway rebalance */
    int dry_run;          /* --dry-run, for gateway rebalance */
    int cancel;           /* --cancel, for node remove */
    const char *instance; /* --instance, for node reclaim */
    int all;              /* --all, for node reclaim */
    int nargs;
    const char *args[CTL_CLI_MAX_ARGS];
    char token[512];
    int have_token;
};

/* Prints "shoalctl: <message> (see shoalctl --help)" on stderr; returns the
 * usage exit code. */
int ctl_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- tables: ncols (<= CTL_CLI_TABLE_MAX_COLS) columns, row 0 the header ---- */

struct ctl_cli_table {
    int ncols;
    size_t nrows; /* row 0 is the header */
    char **cells; /* nrows * ncols, malloc'd strings */
};

/* Appends a row of t->ncols strings (copied; NULL prints "-"). */
void ctl_cli_table_row(struct ctl_cli_table *t, ...);
/* Prints t with its columns aligned, then empties it. */
void ctl_cli_table_print(struct ctl_cli_table *t);

/* ---- formatting: each returns a 64-byte buffer from a ring of 16, or a
 * constant ("-" when o has no such value) ---- */

char *ctl_cli_ring(void);
/* An integer as is; a real with prec decimals (prec < 0: %g). */
const char *ctl_cli_fmt_num(json_t *o, const char *key, int prec);
/* The string (borrowed from o), "-" if absent or empty. */
const char *ctl_cli_fmt_str(json_t *o, const char *key);
/* Bytes in binary units: "512B", "1.5GiB". */
const char *ctl_cli_fmt_bytes(json_t *o, const char *key);

/* ---- the API ---- */

/* Appends s to b percent-encoded (all but unreserved characters). */
void ctl_cli_append_escaped(struct cm_buf *b, const char *s);
/*
 * Calls the API. path's single %s (if any) is name, percent-encoded; body
 * (may be NULL) is transferred. On success (2xx) returns 0 with *out the
 * parsed body (NULL if empty; the caller's); otherwise prints the reason
 * and returns the exit code.
 */
int ctl_cli_call_api(struct ctl_cli *cli, const char *method, const char *path, const char *name,
                     json_t *body, json_t **out);
/* j indented, on stdout (nothing when NULL). */
void ctl_cli_print_json(json_t *j);

/* ---- commands: args[0] is their word; each returns the exit code ---- */

int ctl_cli_cmd_tenant(struct ctl_cli *cli);    /* shoalctl_tenant.c */
int ctl_cli_cmd_node(struct ctl_cli *cli);      /* shoalctl_cluster.c */
int ctl_cli_cmd_placement(struct ctl_cli *cli); /* shoalctl_cluster.c */
int ctl_cli_cmd_fairness(struct ctl_cli *cli);  /* shoalctl_cluster.c */
int ctl_cli_cmd_gateway(struct ctl_cli *cli);   /* shoalctl_gateway.c */

/* shoalctl_tenant.c: --wait's value in seconds into *wait_s (default when
 * not given): 0, or the usage exit code. */
int ctl_cli_wait_seconds(const struct ctl_cli *cli, double dflt, double *wait_s);
/* shoalctl_tenant.c: polls tenant name until gateway gw owns it with no
 * move asked ("tenant NAME moved to GW"), or wait_s have passed (exit 1,
 * one line on stderr). */
int ctl_cli_wait_moved(struct ctl_cli *cli, const char *name, const char *gw, double wait_s);
/* Sleeps the poll interval of the waits (200 ms), or left_ns if shorter. */
void ctl_cli_nap(uint64_t left_ns);

#endif
