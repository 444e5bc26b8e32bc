/*
 * test_config.c - defaults < file < flags, dash/underscore names, checked
 * parsers, --help/--version, and exit status 2 with one line on stderr for
 * every bad input (each load that must exit runs in a forked child).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <sys/wait.h>

#include "t_check.h"

#include "cm_config.h"
#include "cm_err.h"

struct tcfg {
    const char *listen;
    int workers;
    uint64_t max_object_size;
    double ratio;
    int verbose;
    const char *nodef;
};

static const struct cm_opt opts[] = {
    CM_OPT_STR(struct tcfg, listen, "127.0.0.1:9300", "address to listen on"),
    CM_OPT_INT(struct tcfg, workers, "4", 1, 64, "worker threads"),
    CM_OPT_U64(struct tcfg, max_object_size, "1GiB", 0, 1ull << 40, "largest object"),
    CM_OPT_DBL(struct tcfg, ratio, "0.5", 0, 1, "a fraction"),
    CM_OPT_BOOL(struct tcfg, verbose, "false", "chatty"),
    CM_OPT_STR(struct tcfg, nodef, NULL, "no default"),
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static char cfgfile[256];

static void
load(struct tcfg *c, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    cm_config_load(opts, NOPTS, c, argc, argv, "tprog", "A test program.");
}

/* Runs load() in a child; returns its exit status, stdout and stderr. */
static int
run_child(char **argv, char *out, size_t outcap, char *err, size_t errcap)
{
    int po[2], pe[2], status, argc = 0;
    ssize_t n;
    size_t off;
    pid_t pid;
    struct tcfg c;

    while (argv[argc] != NULL) {
        argc++;
    }
    CHECK(pipe(po) == 0 && pipe(pe) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        close(po[0]);
        close(pe[0]);
        load(&c, argc, argv);
        fflush(stdout);
        _exit(0);
    }
    close(po[1]);
    close(pe[1]);
    off = 0;
    while (off < outcap - 1 && (n = read(po[0], out + off, outcap - 1 - off)) > 0) {
        off += (size_t)n;
    }
    out[off] = '\0';
    off = 0;
    while (off < errcap - 1 && (n = read(pe[0], err + off, errcap - 1 - off)) > 0) {
        off += (size_t)n;
    }
    err[off] = '\0';
    close(po[0]);
    close(pe[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int
one_line(const char *s)
{
    const char *nl = strchr(s, '\n');

    return nl != NULL && nl[1] == '\0';
}

#define EXPECT_FAIL(...)                                                                           \
    do {                                                                                           \
        char *av_[] = {"tprog", __VA_ARGS__, NULL};                                                \
        char o_[4096], e_[4096];                                                                   \
        CHECK_EQ_INT(run_child(av_, o_, sizeof(o_), e_, sizeof(e_)), 2);                           \
        CHECK(strncmp(e_, "tprog: ", 7) == 0 && one_line(e_));                                     \
    } while (0)

static void
write_file(const char *text)
{
    FILE *f = fopen(cfgfile, "w");

    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void
test_parsers(void)
{
    uint64_t u;
    int64_t i;
    double d;
    char host[64];
    uint16_t port;

    CHECK(cm_parse_u64("0", &u) == 0 && u == 0);
    CHECK(cm_parse_u64("18446744073709551615", &u) == 0 && u == UINT64_MAX);
    CHECK_EQ_INT(cm_parse_u64("18446744073709551616", &u), CM_E_BADARG);
    CHECK(cm_parse_u64("4K", &u) == 0 && u == 4096);
    CHECK(cm_parse_u64("4KiB", &u) == 0 && u == 4096);
    CHECK(cm_parse_u64("64M", &u) == 0 && u == 64ull << 20);
    CHECK(cm_parse_u64("1GiB", &u) == 0 && u == 1ull << 30);
    CHECK(cm_parse_u64("2T", &u) == 0 && u == 2ull << 40);
    CHECK(cm_parse_u64("3tib", &u) == 0 && u == 3ull << 40);
    CHECK_EQ_INT(cm_parse_u64("16777216T", &u), CM_E_BADARG); /* overflow */
    CHECK_EQ_INT(cm_parse_u64("-1", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64(" 1", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64("1 ", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64("", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64("1X", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64("0x10", &u), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_u64("1.5G", &u), CM_E_BADARG);

    CHECK(cm_parse_i64("-42", &i) == 0 && i == -42);
    CHECK(cm_parse_i64("9223372036854775807", &i) == 0 && i == INT64_MAX);
    CHECK_EQ_INT(cm_parse_i64("9223372036854775808", &i), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_i64("12abc", &i), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_i64("", &i), CM_E_BADARG);

    CHECK(cm_parse_double("0.25", &d) == 0 && d == 0.25);
    CHECK(cm_parse_double("-1e3", &d) == 0 && d == -1000);
    CHECK_EQ_INT(cm_parse_double("nan", &d), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_double("inf", &d), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_double("-Infinity", &d), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_double("1e999", &d), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_double("1.0x", &d), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_double("", &d), CM_E_BADARG);

    CHECK_EQ_INT(cm_parse_addr("127.0.0.1:9300", host, sizeof(host), &port), 0);
    CHECK(strcmp(host, "127.0.0.1") == 0 && port == 9300);
    CHECK_EQ_INT(cm_parse_addr("[::1]:80", host, sizeof(host), &port), 0);
    CHECK(strcmp(host, "::1") == 0 && port == 80);
    CHECK_EQ_INT(cm_parse_addr("localhost:0", host, sizeof(host), &port), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_addr("localhost:65536", host, sizeof(host), &port), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_addr("localhost", host, sizeof(host), &port), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_addr(":80", host, sizeof(host), &port), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_addr("::1:80", host, sizeof(host), &port), CM_E_BADARG);
    CHECK_EQ_INT(cm_parse_addr("averyveryverylonghostname:80", host, 8, &port), CM_E_BADARG);
}

static void
test_load(void)
{
    struct tcfg c;

    {
        char *av[] = {"tprog", NULL};
        load(&c, 1, av);
        CHECK_EQ_STR(c.listen, "127.0.0.1:9300");
        CHECK_EQ_INT(c.workers, 4);
        CHECK(c.max_object_size == 1ull << 30);
        CHECK(c.ratio == 0.5);
        CHECK_EQ_INT(c.verbose, 0);
        CHECK(c.nodef == NULL);
    }
    write_file("# comment\n\n  workers = 8\nmax-object-size=2M\nlisten = \"0.0.0.0:1\"\n"
               "ratio = 0.75   # trailing comment\nverbose = yes\nnodef = a#b\n");
    {
        char *av[] = {"tprog", "--config", cfgfile, NULL};
        load(&c, 3, av);
        CHECK_EQ_INT(c.workers, 8);
        CHECK(c.max_object_size == 2ull << 20);
        CHECK_EQ_STR(c.listen, "0.0.0.0:1");
        CHECK(c.ratio == 0.75);
        CHECK_EQ_INT(c.verbose, 1);
        CHECK_EQ_STR(c.nodef, "a#b");
    }
    {
        /* flags win over the file, wherever --config appears */
        char *av[] = {"tprog",
                      "--workers=16",
                      "--max_object_size",
                      "3K",
                      "--verbose=false",
                      "--config=",
                      "--listen",
                      "h:2",
                      NULL};
        char arg[300];
        snprintf(arg, sizeof(arg), "--config=%s", cfgfile);
        av[5] = arg;
        load(&c, 8, av);
        CHECK_EQ_INT(c.workers, 16);
        CHECK(c.max_object_size == 3072);
        CHECK_EQ_INT(c.verbose, 0);
        CHECK_EQ_STR(c.listen, "h:2");
        CHECK(c.ratio == 0.75);
    }
    {
        char *av[] = {"tprog", "--verbose", "--max-object-size=0", NULL};
        load(&c, 3, av);
        CHECK_EQ_INT(c.verbose, 1);
        CHECK(c.max_object_size == 0);
    }
}

static void
test_exits(void)
{
    char out[8192], err[4096];

    {
        char *av[] = {"tprog", "--help", NULL};
        CHECK_EQ_INT(run_child(av, out, sizeof(out), err, sizeof(err)), 0);
        CHECK(strstr(out, "Usage: tprog") != NULL);
        CHECK(strstr(out, "A test program.") != NULL);
        CHECK(strstr(out, "--max-object-size SIZE") != NULL);
        CHECK(strstr(out, "(default: 1GiB)") != NULL);
        CHECK(strstr(out, "(default: 127.0.0.1:9300)") != NULL);
        CHECK(strstr(out, "--config FILE") != NULL);
        /* help columns are aligned: every help text starts at one column */
        {
            const char *a = strstr(out, "address to listen on");
            const char *b = strstr(out, "worker threads");
            const char *la = a, *lb = b;
            while (la > out && la[-1] != '\n') {
                la--;
            }
            while (lb > out && lb[-1] != '\n') {
                lb--;
            }
            CHECK(a - la == b - lb);
        }
        CHECK_EQ_STR(err, "");
    }
    {
        char *av[] = {"tprog", "--bogus", "--help", NULL};
        CHECK_EQ_INT(run_child(av, out, sizeof(out), err, sizeof(err)), 0);
    }
    {
        char *av[] = {"tprog", "--version", NULL};
        CHECK_EQ_INT(run_child(av, out, sizeof(out), err, sizeof(err)), 0);
        CHECK(strncmp(out, "tprog ", 6) == 0 && one_line(out));
    }
    EXPECT_FAIL("--bogus");
    EXPECT_FAIL("--bogus=1");
    EXPECT_FAIL("positional");
    EXPECT_FAIL("--", "positional");
    EXPECT_FAIL("--workers");
    EXPECT_FAIL("--workers", "0");
    EXPECT_FAIL("--workers=65");
    EXPECT_FAIL("--workers=4.5");
    EXPECT_FAIL("--workers=99999999999");
    EXPECT_FAIL("--workers=");
    EXPECT_FAIL("--max-object-size=-1");
    EXPECT_FAIL("--max-object-size=2T");
    EXPECT_FAIL("--max-object-size=12Q");
    EXPECT_FAIL("--ratio=nan");
    EXPECT_FAIL("--ratio=inf");
    EXPECT_FAIL("--ratio=1.5");
    EXPECT_FAIL("--verbose=maybe");
    EXPECT_FAIL("--config", "/nonexistent/shoal.conf");
    EXPECT_FAIL("--config");
    write_file("workers = 8\nnot a pair\n");
    EXPECT_FAIL("--config", cfgfile);
    write_file("unknown_key = 1\n");
    EXPECT_FAIL("--config", cfgfile);
    write_file("workers = lots\n");
    EXPECT_FAIL("--config", cfgfile);
}

int
main(void)
{
    char *dir = t_tmpdir();

    snprintf(cfgfile, sizeof(cfgfile), "%s/t.conf", dir);
    test_parsers();
    test_load();
    test_exits();
    t_rmtree(dir);
    return 0;
}
