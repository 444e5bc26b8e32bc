/* fuzz_cost.c - the controller's cost parsers (controller/ctl_cost.c): the
 * first byte picks one, the rest is its input.
 *   0: a --prices file, read as the controller reads it (through
 *      cm_config's file reader, from a memfd): a table it takes holds
 *      only finite prices >= 0;
 *   1: a tenant record of the "sms" store table, and 2: a node record:
 *      one it takes encodes back to a record that decodes to the same. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl_cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
prices(const uint8_t *data, size_t size)
{
    struct ctl_prices p;
    char path[64], err[256];
    int fd = memfd_create("prices", MFD_CLOEXEC);

    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size)) {
        abort();
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if (ctl_prices_load(path, &p, err, sizeof(err)) == 0) {
        for (int i = 0; i < CTL_NPRICES; i++) {
            if (!isfinite(p.v[i]) || p.v[i] < 0) {
                abort();
            }
        }
    } else if (err[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    close(fd);
}

static void
tenant(const uint8_t *data, size_t size)
{
    struct ctl_cost_tenant_rec r, r2;
    char *text;

    if (ctl_cost_tenant_decode(5, (const char *)data, size, &r) != 0) {
        return;
    }
    if (!isfinite(r.t.memory_gb_seconds) || r.t.memory_gb_seconds < 0 || r.tenant != 5) {
        abort();
    }
    text = ctl_cost_tenant_encode(&r);
    if (text == NULL || ctl_cost_tenant_decode(5, text, strlen(text), &r2) != 0 ||
        memcmp(&r, &r2, sizeof(r)) != 0) {
        abort();
    }
    free(text);
}

static void
node(const uint8_t *data, size_t size)
{
    struct ctl_cost_node_rec r, r2;
    char *text;

    if (ctl_cost_node_decode(9, (const char *)data, size, &r) != 0) {
        ctl_cost_node_rec_fini(&r);
        return;
    }
    text = ctl_cost_node_encode(&r);
    if (text == NULL || ctl_cost_node_decode(9, text, strlen(text), &r2) != 0 || r2.n != r.n ||
        r2.incarnation != r.incarnation) {
        abort();
    }
    /* The tenants come back in the encoder's order: match them by id. */
    for (size_t i = 0; i < r.n; i++) {
        size_t j = 0;

        while (j < r2.n && r2.tenants[j] != r.tenants[i]) {
            j++;
        }
        if (j == r2.n || r.tenants[i] == 0 ||
            memcmp(&r.last[i], &r2.last[j], sizeof(r.last[i])) != 0) {
            abort();
        }
    }
    free(text);
    ctl_cost_node_rec_fini(&r);
    ctl_cost_node_rec_fini(&r2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        prices(data + 1, size - 1);
        break;
    case 1:
        tenant(data + 1, size - 1);
        break;
    default:
        node(data + 1, size - 1);
        break;
    }
    return 0;
}
