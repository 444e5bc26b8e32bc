/*
 * cm_config.h - one option table per binary drives the config file, the
 * flags, validation and --help.
 *
 *   static const struct cm_opt opts[] = {
 *       CM_OPT_STR(struct gw_cfg, listen, "127.0.0.1:9300", "address to listen on"),
 *       CM_OPT_U64(struct gw_cfg, max_object_size, "1GiB", 0, 1ull << 40, "..."),
 *   };
 *
 * Order of precedence: defaults < --config FILE (lines "name = value",
 * '#' comments, names as the flags without "--") < flags ("--name value"
 * or "--name=value"; a bool flag alone means true).
 */
#ifndef CM_CONFIG_H
#define CM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum cm_opt_type {
    CM_OPT_T_STR,    /* const char * (strdup'd, lives for the process) */
    CM_OPT_T_INT,    /* int, bounds checked */
    CM_OPT_T_U64,    /* uint64_t, accepts K/M/G/T and KiB/MiB/GiB/TiB */
    CM_OPT_T_DOUBLE, /* double, finite, bounds checked */
    CM_OPT_T_BOOL,   /* int 0/1: true/false/yes/no/1/0 */
};

struct cm_opt {
    const char *name; /* flag name without "--" (also the file key) */
    enum cm_opt_type type;
    size_t offset;
    double min, max; /* for INT, U64, DOUBLE */
    const char *def; /* default, parsed like any value; NULL = none */
    const char *help;
};

#define CM_OPT_STR(T, f, def, help) {#f, CM_OPT_T_STR, offsetof(T, f), 0, 0, def, help}
#define CM_OPT_INT(T, f, def, lo, hi, help) {#f, CM_OPT_T_INT, offsetof(T, f), lo, hi, def, help}
#define CM_OPT_U64(T, f, def, lo, hi, help) {#f, CM_OPT_T_U64, offsetof(T, f), lo, hi, def, help}
#define CM_OPT_DBL(T, f, def, lo, hi, help) {#f, CM_OPT_T_DOUBLE, offsetof(T, f), lo, hi, def, help}
#define CM_OPT_BOOL(T, f, def, help) {#f, CM_OPT_T_BOOL, offsetof(T, f), 0, 1, def, help}

/*
 * Fills cfg from defaults, --config FILE and argv. Underscores in names are
 * also accepted as dashes on the command line (--max-object-size).
 * --help prints usage (prog, summary, every option with default and help)
 * to stdout and exits 0; --version prints "prog SHOAL_VERSION" and exits 0;
 * an unknown flag, a missing or bad value, or a positional argument exits
 * 2 with one line "prog: <reason>" on stderr.
 */
void cm_config_load(const struct cm_opt *opts, size_t nopts, void *cfg, int argc,
                    char **argv, const char *prog, const char *summary);

/*
 * The config file reader behind cm_config_load, for tools with their own
 * option handling: calls cb for each "name = value" line ('#' comments,
 * blank lines, optional quotes, a trailing " # comment" on an unquoted
 * value); name and value are trimmed and borrowed for the call, where is
 * "path:line". A line without '=' calls cb with name and value NULL. cb
 * returns 0 to go on, or non-zero to stop: that value is returned. -errno
 * when the file can't be read.
 */
typedef int (*cm_config_setting_cb)(void *arg, const char *name, const char *value,
                                    const char *where);
int cm_config_read_file(const char *path, cm_config_setting_cb cb, void *arg);

/* Checked parsers: 0 or CM_E_BADARG. Whole string must be consumed. */
int cm_parse_u64(const char *s, uint64_t *out);      /* size suffixes ok */
int cm_parse_i64(const char *s, int64_t *out);
int cm_parse_double(const char *s, double *out);     /* finite only */
/* "host:port" -> host (cap bytes) and port 1..65535. */
int cm_parse_addr(const char *s, char *host, size_t cap, uint16_t *port);

#endif
