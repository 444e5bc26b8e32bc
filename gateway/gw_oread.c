/*
 * gw_oread.c - a byte range of a version across its parts (see gw_oread.h).
 *
 * One struct oread per read of a composite: the parts that overlap the
 * range, in order, are slots; pump() starts slot reads while fewer than
 * GW_OREAD_PARALLEL are in flight, each answer copies its bytes to its
 * slot's place in the result, and the last answer ends the read. The
 * mutex guards next, inflight, status and done; pump() never holds it
 * across gw_engine_get, which may call back at once on the same thread.
 */
#include "gw_oread.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "cm_err.h"

struct oread;

struct slot {
    struct oread *o;
    const struct gw_layout *part;
    uint64_t part_off; /* where the slot starts inside its part */
    uint64_t dst;      /* ... and in the result */
    uint64_t len;
};

struct oread {
    pthread_mutex_t mu;
    struct gw_engine *engine;
    gw_get_cb cb;
    void *arg;
    char *out;
    uint64_t len;
    struct slot *slots;
    uint32_t nslots, next;
    unsigned inflight;
    int status, done;
};

static void pump(struct oread *o);

static void
slot_done(void *arg, int status, void *buf, size_t len)
{
    struct slot *s = arg;
    struct oread *o = s->o;

    if (status == 0 && len == s->len) {
        memcpy(o->out + s->dst, buf, len);
    } else if (status == 0) {
        status = -EIO; /* a short read from the engine */
    }
    cm_free_big(buf);
    pthread_mutex_lock(&o->mu);
    o->inflight--;
    if (status != 0 && o->status == 0) {
        o->status = status;
    }
    pthread_mutex_unlock(&o->mu);
    pump(o);
}

static void
pump(struct oread *o)
{
    for (;;) {
        struct slot *s;

        pthread_mutex_lock(&o->mu);
        if (o->done) {
            pthread_mutex_unlock(&o->mu);
            return;
        }
        if (o->status == 0 && o->next < o->nslots && o->inflight < GW_OREAD_PARALLEL) {
            s = &o->slots[o->next++];
            o->inflight++;
            pthread_mutex_unlock(&o->mu);
            gw_engine_get(o->engine, s->part, s->part_off, s->len, slot_done, s);
            continue;
        }
        if (o->inflight > 0) {
            pthread_mutex_unlock(&o->mu);
            return;
        }
        o->done = 1;
        pthread_mutex_unlock(&o->mu);
        break;
    }
    if (o->status != 0) {
        cm_free_big(o->out);
        o->cb(o->arg, o->status, NULL, 0);
    } else {
        o->cb(o->arg, 0, o->out, (size_t)o->len);
    }
    pthread_mutex_destroy(&o->mu);
    free(o->slots);
    free(o);
}

void
gw_oread(struct gw_engine *e, const struct gw_layout *lay, const struct gw_layout *parts,
         uint32_t nparts, uint64_t off, uint64_t len, gw_get_cb cb, void *arg)
{
    struct oread *o;
    uint64_t at = 0, covered = 0;

    if (lay->k != 0) {
        gw_engine_get(e, lay, off, len, cb, arg);
        return;
    }
    o = calloc(1, sizeof(*o));
    if (o != NULL) {
        o->slots = calloc(nparts, sizeof(*o->slots));
        o->out = cm_malloc_big((size_t)len);
    }
    if (o == NULL || o->slots == NULL || o->out == NULL) {
        if (o != NULL) {
            free(o->slots);
            cm_free_big(o->out);
        }
        free(o);
        cb(arg, -ENOMEM, NULL, 0);
        return;
    }
    pthread_mutex_init(&o->mu, NULL);
    o->cb = cb;
    o->arg = arg;
    o->len = len;
    o->engine = e;
    for (uint32_t i = 0; i < nparts && at < off + len; at += parts[i].size, i++) {
        uint64_t lo = off > at ? off : at;
        uint64_t hi = off + len < at + parts[i].size ? off + len : at + parts[i].size;

        if (lo >= hi) {
            continue;
        }
        o->slots[o->nslots++] = (struct slot){o, &parts[i], lo - at, lo - off, hi - lo};
        covered += hi - lo;
    }
    if (covered != len) {
        o->status = CM_E_PROTO; /* the parts do not add up to the object */
    }
    pump(o);
}
