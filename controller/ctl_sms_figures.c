/*
 * ctl_sms_figures.c - the elastic memory's figures for readers (tenant
 * show, node list, a tenant's cost, /metrics): a snapshot of every pool and
 * node copied under s->mu, to be rendered outside it.
 *
 * A pool's instances, memory and nodes count what the nodes last reported,
 * released instances left out; its tick figures are those of its last
 * tick.
 *
 * Threads: any thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "ctl_sms_impl.h"

void
ctl_sms_snapshot(struct ctl_sms *s, uint64_t now_ns, struct ctl_sms_snapshot *out)
{
    size_t *seen; /* per pool: 1 + the last node that counted in its nodes */

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->mu);
    seen = cm_calloc(s->npools + 1, sizeof(*seen));
    now_ns = ctl_sms_clock_locked(s, now_ns);
    ctl_sms_config_locked(s, NULL, &out->cfg);
    out->cfg.max_instances = strcmp(s->ops->name, "static") == 0 ? s->cfg.static_instances : 0;
    out->ticks = s->ticks;
    out->npools = s->npools;
    out->pools = cm_calloc(s->npools + 1, sizeof(*out->pools));
    for (size_t i = 0; i < s->npools; i++) {
        const struct ctl_sms_pool *p = &s->pools[i];
        struct ctl_sms_pool_view *v = &out->pools[i];

        v->tenant = p->tenant;
        v->gen = p->gen;
        v->gen_age_ms = (now_ns - p->gen_start_ns) / CTL_SMS_MS;
        v->ticked = p->ticked;
        v->tick_ms_ago = p->ticked ? (int64_t)((now_ns - p->tick_ns) / CTL_SMS_MS) : -1;
        v->last = p->last;
        v->cost = p->cost;
        v->cost_age_ms = (now_ns - p->since_ns) / CTL_SMS_MS;
    }
    out->nnodes = s->nnodes;
    out->nodes = cm_calloc(s->nnodes + 1, sizeof(*out->nodes));
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct ctl_sms_node *nd = &s->nodes[i];
        struct ctl_sms_node_view *nv = &out->nodes[i];

        nv->node = nd->id;
        nv->reported = nd->reported;
        nv->instance_bytes = nd->instance_bytes;
        nv->memory_bytes = nd->memory_bytes;
        nv->cache_bytes = nd->cache_bytes;
        nv->slots = nd->instance_bytes ? (uint32_t)(nd->capacity_bytes / nd->instance_bytes) : 0;
        nv->rec_chunks = nd->rec_chunks;
        nv->rec_bytes = nd->rec_bytes;
        nv->rec_running = nd->rec_running;
        nv->rec_helpers = nd->rec_helpers;
        for (size_t j = 0; j < nd->ninst; j++) {
            const struct ctl_sms_inst *in = &nd->inst[j];
            struct ctl_sms_pool_view *v;
            size_t k;

            if (in->state == POL_SMS_RELEASED) {
                continue;
            }
            nv->instances++;
            v = ctl_sms_find(out->pools, out->npools, sizeof(*out->pools), in->tenant);
            if (v == NULL) {
                continue;
            }
            k = (size_t)(v - out->pools);
            if (seen[k] != i + 1) {
                seen[k] = i + 1;
                v->nodes++;
            }
            v->instances++;
            v->warm += in->state == POL_SMS_WARM;
            v->active += in->state == POL_SMS_ACTIVE;
            v->degraded += in->state == POL_SMS_DEGRADED;
            v->lost += in->lost != 0;
            v->memory_bytes += nd->instance_bytes;
            v->used_bytes += in->used;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(seen);
}

void
ctl_sms_snapshot_fini(struct ctl_sms_snapshot *snap)
{
    free(snap->pools);
    free(snap->nodes);
    memset(snap, 0, sizeof(*snap));
}

const struct ctl_sms_pool_view *
ctl_sms_snapshot_pool(const struct ctl_sms_snapshot *snap, uint32_t tenant)
{
    return ctl_sms_find(snap->pools, snap->npools, sizeof(*snap->pools), tenant);
}

const struct ctl_sms_node_view *
ctl_sms_snapshot_node(const struct ctl_sms_snapshot *snap, uint32_t node)
{
    return ctl_sms_find(snap->nodes, snap->nnodes, sizeof(*snap->nodes), node);
}
