/*
 * fuzz_bundle.c - libFuzzer target for a tenant's metadata bundle, what a
 * gateway takes in from another at POST /v1/internal/tenants/{id}/handover
 * (gateway/gw_meta_handover.c).
 *
 * The input's CRC is made right first (when it is long enough to have
 * one), so that mutations reach the groups. A bundle that checks is
 * taken into a store, then handed out of it again:
 * what comes out is the same bytes (the groups as they were, in the same
 * order), and the store holds nothing of the tenant after. One that does
 * not check is refused by the store too. Nothing may crash, leak or read
 * outside the input. The seed is the bundle unit.gateway.meta hands over
 * (T_BUNDLE_OUT=path writes it).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_bytes.h"
#include "cm_ec.h"
#include "cm_err.h"
#include "gw_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gw_meta *store;
static char dir[] = "/tmp/fuzz_bundle.XXXXXX";

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
rm_store(void)
{
    gw_meta_close(store);
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

struct got {
    uint8_t *b;
    size_t len;
    int n;
};

static void
got_cb(void *arg, uint32_t tenant, const char *to, const void *bundle, size_t len)
{
    struct got *g = arg;

    (void)tenant;
    (void)to;
    free(g->b);
    g->b = malloc(len + 1);
    memcpy(g->b, bundle, len);
    g->len = len;
    g->n++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    uint8_t *data = malloc(size + 1);
    uint32_t tenant = 0, again = 0, groups = 0, out_groups = 0;
    struct got g = {NULL, 0, 0};
    struct gw_layout l;

    if (store == NULL) {
        if (mkdtemp(dir) == NULL || gw_meta_open(dir, 64u << 20, &store) != 0) {
            abort();
        }
        atexit(rm_store);
    }
    memcpy(data, in, size);
    if (size >= 16) {
        cm_put_le32(data + size - 4, cm_crc32c(0, data, size - 4));
    }
    if (gw_meta_bundle_check(data, size, &tenant) != 0) {
        if (gw_meta_handover_in(store, data, size, &again, &groups) != CM_E_PROTO) {
            abort();
        }
        free(data);
        return 0;
    }
    if (gw_meta_handover_in(store, data, size, &again, &groups) != 0 || again != tenant ||
        gw_meta_handover_out(store, tenant, "g", &out_groups) != 0 || out_groups != groups ||
        gw_meta_handover_outbox(store, got_cb, &g) != 0 || g.n != 1 || g.len != size ||
        memcmp(g.b, data, size) != 0 || gw_meta_get(store, tenant, "a", 1, &l) != CM_E_NOTFOUND ||
        gw_meta_handover_done(store, tenant) != 0) {
        abort();
    }
    free(g.b);
    free(data);
    return 0;
}
