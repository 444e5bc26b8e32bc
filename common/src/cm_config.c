/*
 * cm_config.c - table-driven configuration: defaults, --config FILE and
 * flags, validation and --help from one cm_opt table per binary.
 *
 * Precedence: defaults < file < flags. argv is walked twice: the first
 * pass only looks for --help, --version and --config (so --help works even
 * next to a typo); the file is applied next; the second pass applies and
 * checks every flag. Every error is fatal at startup: one line
 * "prog: reason" on stderr and exit status 2, the usual usage-error code.
 *
 * Size suffixes are binary throughout: K = KB = KiB = 1024 (likewise M, G,
 * T), case-insensitive. Operators write "64M" meaning MiB far more often
 * than they mean 64 000 000, and one convention avoids surprises.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

#define CFG_ERR_MAX 256

/*
 * String values live for the process (cm_config.h). They are chained from
 * a static head so they stay reachable: leak checkers stay quiet even for
 * values replaced by a later source or configs on a dead stack frame.
 */
struct cfg_str {
    struct cfg_str *next;
    char s[];
};

static struct cfg_str *cfg_strings;
static pthread_mutex_t cfg_strings_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *
cfg_strdup(const char *v)
{
    size_t n = strlen(v) + 1;
    struct cfg_str *cs = cm_malloc(sizeof(*cs) + n);

    memcpy(cs->s, v, n);
    pthread_mutex_lock(&cfg_strings_lock);
    cs->next = cfg_strings;
    cfg_strings = cs;
    pthread_mutex_unlock(&cfg_strings_lock);
    return cs->s;
}

static void cfg_die(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)))
__attribute__((noreturn));

static void
cfg_die(const char *prog, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* ---- checked number parsers ---- */

static const struct {
    const char *suffix;
    uint64_t mult;
} size_suffixes[] = {
    {"", 1},
    {"b", 1},
    {"k", 1ull << 10},
    {"kb", 1ull << 10},
    {"kib", 1ull << 10},
    {"m", 1ull << 20},
    {"mb", 1ull << 20},
    {"mib", 1ull << 20},
    {"g", 1ull << 30},
    {"gb", 1ull << 30},
    {"gib", 1ull << 30},
    {"t", 1ull << 40},
    {"tb", 1ull << 40},
    {"tib", 1ull << 40},
};

int
cm_parse_u64(const char *s, uint64_t *out)
{
    unsigned long long v;
    char *end;
    size_t i;

    /* strtoull accepts leading space and a '-' (negating!): refuse both. */
    if (s == NULL || !isdigit((unsigned char)s[0])) {
        return CM_E_BADARG;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return CM_E_BADARG;
    }
    for (i = 0; i < sizeof(size_suffixes) / sizeof(size_suffixes[0]); i++) {
        if (strcasecmp(end, size_suffixes[i].suffix) == 0) {
            if (v > UINT64_MAX / size_suffixes[i].mult) {
                return CM_E_BADARG;
            }
            *out = (uint64_t)v * size_suffixes[i].mult;
            return 0;
        }
    }
    return CM_E_BADARG;
}

int
cm_parse_i64(const char *s, int64_t *out)
{
    long long v;
    char *end;

    if (s == NULL || (!isdigit((unsigned char)s[0]) && s[0] != '-' && s[0] != '+')) {
        return CM_E_BADARG;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        return CM_E_BADARG;
    }
    *out = (int64_t)v;
    return 0;
}

int
cm_parse_double(const char *s, double *out)
{
    double v;
    char *end;

    if (s == NULL || s[0] == '\0' || isspace((unsigned char)s[0])) {
        return CM_E_BADARG;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v)) {
        return CM_E_BADARG;
    }
    /* ERANGE with a finite result is underflow to (sub)normal/zero: fine. */
    if (errno != 0 && errno != ERANGE) {
        return CM_E_BADARG;
    }
    *out = v;
    return 0;
}

int
cm_parse_addr(const char *s, char *host, size_t cap, uint16_t *port)
{
    const char *colon, *h = s;
    size_t hlen;
    int64_t p;

    if (s == NULL || cap == 0) {
        return CM_E_BADARG;
    }
    if (s[0] == '[') {
        /* "[::1]:9300" */
        const char *rb = strchr(s, ']');
        if (rb == NULL || rb[1] != ':') {
            return CM_E_BADARG;
        }
        h = s + 1;
        hlen = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL) {
            return CM_E_BADARG;
        }
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL) {
            return CM_E_BADARG; /* bare IPv6 needs brackets */
        }
    }
    if (hlen == 0 || hlen >= cap) {
        return CM_E_BADARG;
    }
    if (cm_parse_i64(colon + 1, &p) != 0 || colon[1] == '+' || colon[1] == '-' || p < 1 ||
        p > 65535) {
        return CM_E_BADARG;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)p;
    return 0;
}

/* ---- option table ---- */

static int
name_eq(const char *opt, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char a = opt[i] == '-' ? '_' : opt[i];
        char b = s[i] == '-' ? '_' : s[i];
        if (a == '\0' || a != b) {
            return 0;
        }
    }
    return opt[n] == '\0';
}

static const struct cm_opt *
find_opt(const struct cm_opt *opts, size_t nopts, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < nopts; i++) {
        if (name_eq(opts[i].name, s, n)) {
            return &opts[i];
        }
    }
    return NULL;
}

static int
bounded(const struct cm_opt *o)
{
    return o->min != 0 || o->max != 0;
}

/* Parses value into the field of o; on error writes a reason to err. */
static int
set_value(const struct cm_opt *o, void *cfg, const char *value, char *err, size_t errcap)
{
    char *field = (char *)cfg + o->offset;
    uint64_t u;
    int64_t i;
    double d;

    switch (o->type) {
    case CM_OPT_T_STR:
        *(const char **)(void *)field = cfg_strdup(value);
        return 0;
    case CM_OPT_T_INT:
        if (cm_parse_i64(value, &i) != 0 || i < INT_MIN || i > INT_MAX) {
            snprintf(err, errcap, "'%s' is not an integer", value);
            return -1;
        }
        if (bounded(o) && ((double)i < o->min || (double)i > o->max)) {
            snprintf(err, errcap, "%s is outside [%.17g, %.17g]", value, o->min, o->max);
            return -1;
        }
        *(int *)(void *)field = (int)i;
        return 0;
    case CM_OPT_T_U64:
        if (cm_parse_u64(value, &u) != 0) {
            snprintf(err, errcap, "'%s' is not a non-negative size", value);
            return -1;
        }
        if (bounded(o) && ((double)u < o->min || (double)u > o->max)) {
            snprintf(err, errcap, "%s is outside [%.17g, %.17g]", value, o->min, o->max);
            return -1;
        }
        *(uint64_t *)(void *)field = u;
        return 0;
    case CM_OPT_T_DOUBLE:
        if (cm_parse_double(value, &d) != 0) {
            snprintf(err, errcap, "'%s' is not a finite number", value);
            return -1;
        }
        if (bounded(o) && (d < o->min || d > o->max)) {
            snprintf(err, errcap, "%s is outside [%.17g, %.17g]", value, o->min, o->max);
            return -1;
        }
        *(double *)(void *)field = d;
        return 0;
    case CM_OPT_T_BOOL:
        if (strcasecmp(value, "true") == 0 || strcasecmp(value, "yes") == 0 ||
            strcmp(value, "1") == 0 || strcasecmp(value, "on") == 0) {
            *(int *)(void *)field = 1;
        } else if (strcasecmp(value, "false") == 0 || strcasecmp(value, "no") == 0 ||
                   strcmp(value, "0") == 0 || strcasecmp(value, "off") == 0) {
            *(int *)(void *)field = 0;
        } else {
            snprintf(err, errcap, "'%s' is not true/false/yes/no/1/0", value);
            return -1;
        }
        return 0;
    }
    snprintf(err, errcap, "unknown option type");
    return -1;
}

static const char *
type_meta(enum cm_opt_type t)
{
    switch (t) {
    case CM_OPT_T_STR:
        return "STR";
    case CM_OPT_T_INT:
        return "INT";
    case CM_OPT_T_U64:
        return "SIZE";
    case CM_OPT_T_DOUBLE:
        return "NUM";
    case CM_OPT_T_BOOL:
        return "BOOL";
    }
    return "VALUE";
}

/* "--max-object-size SIZE", "--verbose[=BOOL]": flags are shown with dashes. */
static void
flag_label(const struct cm_opt *o, char *buf, size_t cap)
{
    size_t i;

    if (o->type == CM_OPT_T_BOOL) {
        snprintf(buf, cap, "--%s[=BOOL]", o->name);
    } else {
        snprintf(buf, cap, "--%s %s", o->name, type_meta(o->type));
    }
    for (i = 2; buf[i] != '\0' && buf[i] != ' ' && buf[i] != '['; i++) {
        if (buf[i] == '_') {
            buf[i] = '-';
        }
    }
}

static void
print_help(const struct cm_opt *opts, size_t nopts, const char *prog, const char *summary)
{
    static const struct {
        const char *label, *help;
    } builtin[] = {
        {"--config FILE", "read options from FILE (lines \"name = value\", '#' comments)"},
        {"--help", "print this help and exit"},
        {"--version", "print the version and exit"},
    };
    char label[160];
    size_t i, w = 0, n;

    for (i = 0; i < nopts; i++) {
        flag_label(&opts[i], label, sizeof(label));
        n = strlen(label);
        w = n > w ? n : w;
    }
    for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        n = strlen(builtin[i].label);
        w = n > w ? n : w;
    }
    printf("Usage: %s [OPTIONS]\n", prog);
    if (summary != NULL && summary[0] != '\0') {
        printf("\n%s\n", summary);
    }
    printf("\nOptions (flags take \"--name value\" or \"--name=value\"; in the config file,\n"
           "\"name = value\"; '-' and '_' are interchangeable; sizes accept K/M/G/T,\n"
           "binary):\n");
    for (i = 0; i < nopts; i++) {
        flag_label(&opts[i], label, sizeof(label));
        printf("  %-*s  %s", (int)w, label, opts[i].help != NULL ? opts[i].help : "");
        if (opts[i].def != NULL) {
            printf(" (default: %s)", opts[i].def[0] != '\0' ? opts[i].def : "\"\"");
        }
        putchar('\n');
    }
    for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        printf("  %-*s  %s\n", (int)w, builtin[i].label, builtin[i].help);
    }
    fflush(stdout);
}

static char *
trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s)) {
        s++;
    }
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) {
        *--e = '\0';
    }
    return s;
}

int
cm_config_read_file(const char *path, cm_config_setting_cb cb, void *arg)
{
    char where[CFG_ERR_MAX];
    char *line = NULL, *s, *eq, *key, *val, *hash;
    size_t cap = 0, vl;
    unsigned lineno = 0;
    int rc = 0;
    FILE *f;

    f = fopen(path, "re");
    if (f == NULL) {
        return -errno;
    }
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        lineno++;
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        s = trim(line);
        if (s[0] == '\0' || s[0] == '#') {
            continue;
        }
        eq = strchr(s, '=');
        if (eq == NULL) {
            rc = cb(arg, NULL, NULL, where);
            break;
        }
        *eq = '\0';
        key = trim(s);
        val = trim(eq + 1);
        vl = strlen(val);
        if (vl >= 2 &&
            ((val[0] == '"' && val[vl - 1] == '"') || (val[0] == '\'' && val[vl - 1] == '\''))) {
            val[vl - 1] = '\0';
            val++;
        } else {
            /* an unquoted value may carry a trailing " # comment" */
            for (hash = val; (hash = strchr(hash, '#')) != NULL; hash++) {
                if (hash > val && isspace((unsigned char)hash[-1])) {
                    *hash = '\0';
                    val = trim(val);
                    break;
                }
            }
        }
        rc = cb(arg, key, val, where);
    }
    if (rc == 0 && ferror(f)) {
        rc = -EIO;
    }
    free(line);
    fclose(f);
    return rc;
}

struct file_ctx {
    const struct cm_opt *opts;
    size_t nopts;
    void *cfg;
    const char *prog;
};

static int
apply_setting(void *arg, const char *key, const char *val, const char *where)
{
    struct file_ctx *x = arg;
    char err[CFG_ERR_MAX];
    const struct cm_opt *o;

    if (key == NULL) {
        cfg_die(x->prog, "%s: expected \"name = value\"", where);
    }
    o = find_opt(x->opts, x->nopts, key, strlen(key));
    if (o == NULL) {
        cfg_die(x->prog, "%s: unknown option '%s'", where, key);
    }
    if (set_value(o, x->cfg, val, err, sizeof(err)) != 0) {
        cfg_die(x->prog, "%s: bad value for %s: %s", where, key, err);
    }
    return 0;
}

static void
load_file(const struct cm_opt *opts, size_t nopts, void *cfg, const char *path, const char *prog)
{
    struct file_ctx x = {opts, nopts, cfg, prog};
    int rc = cm_config_read_file(path, apply_setting, &x);

    if (rc != 0) {
        cfg_die(prog, "cannot read config file %s: %s", path, strerror(-rc));
    }
}

/*
 * One walk over argv. apply = 0: handle --help/--version, return the
 * --config path, skip anything unknown. apply = 1: set every option and
 * reject unknown flags, missing values and positional arguments.
 */
static const char *
walk_args(const struct cm_opt *opts, size_t nopts, void *cfg, int argc, char **argv,
          const char *prog, const char *summary, int apply)
{
    char err[CFG_ERR_MAX];
    const char *config = NULL, *arg, *name, *eq, *val;
    const struct cm_opt *o;
    size_t nlen;
    int i;

    for (i = 1; i < argc; i++) {
        arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            if (apply && i + 1 < argc) {
                cfg_die(prog, "unexpected argument '%s'", argv[i + 1]);
            }
            break;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (!apply && strcmp(arg, "-h") == 0) {
                print_help(opts, nopts, prog, summary);
                exit(0);
            }
            if (apply) {
                cfg_die(prog, "unexpected argument '%s'", arg);
            }
            continue;
        }
        name = arg + 2;
        eq = strchr(name, '=');
        nlen = eq != NULL ? (size_t)(eq - name) : strlen(name);
        if (nlen == 4 && strncmp(name, "help", 4) == 0) {
            print_help(opts, nopts, prog, summary);
            exit(0);
        }
        if (nlen == 7 && strncmp(name, "version", 7) == 0) {
            printf("%s %s\n", prog, SHOAL_VERSION);
            exit(0);
        }
        o = find_opt(opts, nopts, name, nlen);
        if (o == NULL && !(nlen == 6 && strncmp(name, "config", 6) == 0)) {
            if (apply) {
                cfg_die(prog, "unknown option --%.*s", (int)nlen, name);
            }
            continue;
        }
        if (eq != NULL) {
            val = eq + 1;
        } else if (o != NULL && o->type == CM_OPT_T_BOOL) {
            val = "true";
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            cfg_die(prog, "missing value for --%.*s", (int)nlen, name);
        }
        if (o == NULL) {
            config = val;
        } else if (apply && set_value(o, cfg, val, err, sizeof(err)) != 0) {
            cfg_die(prog, "bad value for --%.*s: %s", (int)nlen, name, err);
        }
    }
    return config;
}

void
cm_config_load(const struct cm_opt *opts, size_t nopts, void *cfg, int argc, char **argv,
               const char *prog, const char *summary)
{
    char err[CFG_ERR_MAX];
    const char *config;
    size_t i;

    for (i = 0; i < nopts; i++) {
        if (opts[i].def != NULL && set_value(&opts[i], cfg, opts[i].def, err, sizeof(err)) != 0) {
            cfg_die(prog, "bad default for --%s: %s", opts[i].name, err);
        }
    }
    config = walk_args(opts, nopts, cfg, argc, argv, prog, summary, 0);
    if (config != NULL) {
        load_file(opts, nopts, cfg, config, prog);
    }
    walk_args(opts, nopts, cfg, argc, argv, prog, summary, 1);
}
