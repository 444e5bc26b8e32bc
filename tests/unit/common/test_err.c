/* test_err.c - names and messages of project codes and -errno values. */
#include <errno.h>

#include "t_check.h"

#include "cm_err.h"

int
main(void)
{
    CHECK_EQ_STR(cm_errname(0), "ok");
    CHECK_EQ_STR(cm_errname(CM_E_CRC), "crc");
    CHECK_EQ_STR(cm_strerror(CM_E_CRC), "checksum mismatch");
    CHECK_EQ_STR(cm_errname(CM_E_EXISTS), "exists");
    CHECK_EQ_STR(cm_errname(CM_E_NOTFOUND), "not_found");
    CHECK_EQ_INT(CM_E_PROTO, -1001);
    CHECK_EQ_STR(cm_errname(-ENOENT), "ENOENT");
    CHECK_EQ_STR(cm_strerror(-ENOENT), "No such file or directory");
    CHECK_EQ_STR(cm_errname(-ENOSPC), "ENOSPC");
    CHECK_EQ_STR(cm_errname(-99999), "unknown");
    CHECK(cm_strerror(-99999) != NULL);
    CHECK_EQ_STR(cm_errname(5), "unknown");
    return 0;
}
