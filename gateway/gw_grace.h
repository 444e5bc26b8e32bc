/*
 * gw_grace.h - grace periods between readers of object layouts and the
 * deletes of replaced versions (private to gateway/).
 *
 * A reader enters before it reads a layout and exits once it no longer
 * needs that layout's chunks. An action deferred with gw_grace_defer runs
 * once every reader that entered before the call has exited: at once, on
 * the caller's thread, when there is none; otherwise on the thread of the
 * reader that exits last. Readers that enter later never hold it back.
 *
 * Thread-safe (one mutex, held for a few pointer moves; actions run with
 * it released). No I/O, no dependency beyond libc and pthreads.
 */
#ifndef GW_GRACE_H
#define GW_GRACE_H

#include <stddef.h>

struct gw_grace;
struct gw_grace_bucket; /* a reader's ticket, from enter to exit */

struct gw_grace *gw_grace_create(void);
/* Frees the pending actions without running them and returns how many
 * there were (readers that never exited hold them back). */
size_t gw_grace_destroy(struct gw_grace *g);

struct gw_grace_bucket *gw_grace_enter(struct gw_grace *g);
/* May run deferred actions before it returns. */
void gw_grace_exit(struct gw_grace *g, struct gw_grace_bucket *ticket);
/* Runs fn(arg) once the readers in now are gone: 0; or -ENOMEM, and fn
 * will not run. */
int gw_grace_defer(struct gw_grace *g, void (*fn)(void *arg), void *arg);
/* Readers in, and actions waiting (for metrics and tests). */
void gw_grace_counts(struct gw_grace *g, size_t *readers, size_t *waiting);

#endif
