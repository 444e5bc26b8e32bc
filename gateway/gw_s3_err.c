/* gw_s3_err.c - the S3 error table (codes, statuses, messages from one list). */
#include "gw_s3_err.h"

static const struct {
    const char *code;
    int status;
    const char *msg;
} s3_errs[GW_S3_E_COUNT_] = {[GW_S3_OK] = {"", 200, "OK"},
#define GW_S3_ERR_ROW_(name, code, status, msg) [GW_S3_E_##name] = {code, status, msg},
                             GW_S3_ERRORS(GW_S3_ERR_ROW_)
#undef GW_S3_ERR_ROW_
};

const char *
gw_s3_err_code(enum gw_s3_err e)
{
    return (unsigned)e < GW_S3_E_COUNT_ ? s3_errs[e].code : "";
}

int
gw_s3_err_status(enum gw_s3_err e)
{
    return (unsigned)e < GW_S3_E_COUNT_ ? s3_errs[e].status : 500;
}

const char *
gw_s3_err_message(enum gw_s3_err e)
{
    return (unsigned)e < GW_S3_E_COUNT_ ? s3_errs[e].msg : s3_errs[GW_S3_E_INTERNAL].msg;
}
