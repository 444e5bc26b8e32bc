/* test_token.c - create with mode 0600, reuse, trimming, errors. */
#include <errno.h>
#include <sys/stat.h>

#include "t_check.h"

#include "cm_err.h"
#include "cm_token.h"

int
main(void)
{
    char *dir = t_tmpdir(), path[4200], tok[128], tok2[128];
    struct stat st;
    FILE *f;

    snprintf(path, sizeof(path), "%s/admin.token", dir);
    CHECK_EQ_INT(cm_token_load(path, 0, tok, sizeof(tok)), -ENOENT);
    CHECK_EQ_INT(cm_token_load(path, 1, tok, sizeof(tok)), 0);
    CHECK_EQ_INT(strlen(tok), 64);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0600);
    CHECK_EQ_INT(cm_token_load(path, 1, tok2, sizeof(tok2)), 0);
    CHECK_EQ_STR(tok, tok2);
    CHECK_EQ_INT(cm_token_load(path, 0, tok2, sizeof(tok2)), 0);
    CHECK_EQ_STR(tok, tok2);
    CHECK_EQ_INT(cm_token_load(path, 0, tok2, 10), CM_E_TOOBIG);

    f = fopen(path, "w");
    fputs("  s3cret \t\r\nsecond line\n", f);
    fclose(f);
    CHECK_EQ_INT(cm_token_load(path, 1, tok, sizeof(tok)), 0);
    CHECK_EQ_STR(tok, "s3cret");

    f = fopen(path, "w");
    fclose(f);
    CHECK_EQ_INT(cm_token_load(path, 0, tok, sizeof(tok)), CM_E_CONFIG);

    snprintf(path, sizeof(path), "%s/missing/dir/token", dir);
    CHECK_EQ_INT(cm_token_load(path, 1, tok, sizeof(tok)), -ENOENT);
    t_rmtree(dir);
    return 0;
}
