/*
 * fuzz_state.c - libFuzzer target for the controller state a gateway polls
 * (gateway/gw_snap.c: /v1/internal/state, also read back from the
 * gateway's cache at start).
 *
 * A snapshot that parses answers every lookup inside its own arrays: each
 * tenant's placement rows (every partition), its owner (a peer found by
 * gw_snap_home is one of the snapshot's, with an id other than self), the
 * scrub's judgement for ids around each tenant's, an API key and an S3
 * date key lookup. Nothing may crash, leak or read outside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
lookups(const struct gw_snap *s, const char *self)
{
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct gw_tenant *t = &s->tenants[i];
        const struct gw_peer *peer = NULL;
        enum gw_home h = gw_snap_home(s, t, self, &peer);

        if (gw_snap_tenant(s, t->id) != t) {
            abort();
        }
        if (h == GW_HOME_PEER &&
            (peer < s->peers || peer >= s->peers + s->npeers || strcmp(peer->id, self) == 0)) {
            abort();
        }
        for (uint32_t p = 0; p < s->partitions; p++) {
            const uint32_t *row;
            size_t n;

            gw_snap_row(s, t, p, &row, &n);
            for (size_t j = 0; j < n; j++) {
                (void)row[j];
            }
        }
        (void)gw_snap_collects(s, t->id, self);
        (void)gw_snap_collects(s, t->id + 1, self);
    }
    (void)gw_snap_collects(s, 0, self);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_snap *s = NULL;
    const struct gw_tenant *t = NULL;
    const char *why = NULL;
    uint8_t kdate[32];

    if (gw_snap_parse((const char *)data, size, &s, &why) != 0) {
        if (s != NULL || why == NULL) {
            abort();
        }
        return 0;
    }
    lookups(s, "127.0.0.1:9300");
    lookups(s, s->npeers > 0 ? s->peers[0].id : "");
    (void)gw_snap_auth(s, "key", 3);
    (void)gw_snap_s3_date_key(s, "AKIA", "20261207", kdate, &t);
    gw_snap_unref(s);
    return 0;
}
