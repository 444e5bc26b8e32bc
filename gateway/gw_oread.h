/*
 * gw_oread.h - reads a byte range of a stored version (private to
 * gateway/): one layout through the engine, or the parts of a composite
 * version (a completed multipart upload) one engine read per part, at most
 * GW_OREAD_PARALLEL at a time, assembled into one buffer.
 *
 *   caller ──gw_oread──▶ gw_engine_get per overlapping part ──▶ copy into
 *   the result at the part's offset ──▶ cb once: the buffer, or the first
 *   error (the reads still in flight finish first)
 *
 * Threads: call from any thread; cb runs on the engine thread (or on the
 * caller's, before gw_oread returns, when nothing could be queued).
 */
#ifndef GW_OREAD_H
#define GW_OREAD_H

#include <stdint.h>

#include "gw_engine.h"

#define GW_OREAD_PARALLEL 4

/*
 * Bytes [off, off + len) (len >= 1, within lay->size) of the version whose
 * layout is lay: for a composite (k == 0), parts holds its nparts layouts
 * in order. lay and parts are borrowed until cb. cb as gw_engine_get's:
 * a buffer of len bytes (TRANSFERRED: cm_free_big) or a negative status.
 */
void gw_oread(struct gw_engine *e, const struct gw_layout *lay, const struct gw_layout *parts,
              uint32_t nparts, uint64_t off, uint64_t len, gw_get_cb cb, void *arg);

#endif
