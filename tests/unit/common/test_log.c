/* test_log.c - line format, level filtering, one line per call. */
#include <fcntl.h>
#include <regex.h>

#include "t_check.h"

#include "cm_err.h"
#include "cm_log.h"

int
main(void)
{
    char path[] = "/tmp/shoal-log-XXXXXX", buf[16384], *line, *save;
    enum cm_log_level lvl;
    regex_t re;
    int fd, saved, n, lines = 0;
    char longmsg[6000];

    CHECK_EQ_INT(cm_log_parse_level("debug", &lvl), 0);
    CHECK_EQ_INT(lvl, CM_LOG_DEBUG);
    CHECK_EQ_INT(cm_log_parse_level("error", &lvl), 0);
    CHECK_EQ_INT(lvl, CM_LOG_ERROR);
    CHECK_EQ_INT(cm_log_parse_level("loud", &lvl), CM_E_BADARG);

    fd = mkstemp(path);
    CHECK(fd >= 0);
    saved = dup(STDERR_FILENO);
    CHECK(dup2(fd, STDERR_FILENO) >= 0);
    cm_log_init("testcomp", CM_LOG_INFO);
    CM_DEBUG("hidden %d", 1);
    CM_INFO("put done tenant=%d req=%s", 3, "ab12");
    CM_ERROR("multi\nline");
    memset(longmsg, 'q', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    CM_WARN("%s", longmsg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
    CHECK(n > 0);
    buf[n] = '\0';
    close(fd);
    unlink(path);
    CHECK(strstr(buf, "hidden") == NULL);
    CHECK(regcomp(&re,
                  "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                  "(info|warn|error) testcomp .+$",
                  REG_EXTENDED | REG_NOSUB) == 0);
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        CHECK(regexec(&re, line, 0, NULL, 0) == 0);
        CHECK(strlen(line) < 4096);
        lines++;
    }
    regfree(&re);
    CHECK_EQ_INT(lines, 3);
    return 0;
}
