/*
 * gw_census.c - the scrub's view of the engine (see gw_engine.h): the ids
 * of the versions the engine holds, one page of a node's chunk list, and
 * the DELs of the chunks the scrub found unreferenced.
 *
 * Threads: the public functions post; the rest runs on the loop thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "cm_wire.h"
#include "gw_engine_impl.h"
#include "gw_net.h"

#define CENSUS_NODES_MAX 4096

/* Posts cmd (malloc'd, NULL: out of memory) to run fn: 0 or -ENOMEM. */
static int
post(struct gw_engine *e, gw_net_fn fn, void *cmd)
{
    if (cmd != NULL && gw_net_post(e->net, fn, cmd) == 0) {
        return 0;
    }
    free(cmd);
    return -ENOMEM;
}

struct census_cmd {
    struct gw_engine *e;
    gw_census_cb cb;
    void *arg;
};

static int
census_add(struct gw_census *c, size_t *cap, const struct gw_layout *l)
{
    if (c->nids == *cap) {
        size_t ncap = *cap ? 2 * *cap : 256;
        struct gw_vid *v = realloc(c->ids, ncap * sizeof(*v));
        if (v == NULL) {
            return -ENOMEM;
        }
        c->ids = v;
        *cap = ncap;
    }
    c->ids[c->nids++] = (struct gw_vid){.object = l->object, .tenant = l->tenant};
    return 0;
}

static void
census_run(void *arg)
{
    struct census_cmd *cmd = arg;
    struct gw_engine *e = cmd->e;
    struct gw_census c = {0};
    uint32_t *ids = malloc(CENSUS_NODES_MAX * sizeof(*ids));
    size_t cap = 0, n = ids ? gw_net_node_ids(e->net, ids, CENSUS_NODES_MAX) : 0;
    int rc = ids ? 0 : -ENOMEM;

    for (struct gw_obj *o = e->objs; o != NULL && rc == 0; o = o->next) {
        rc = census_add(&c, &cap, &o->lay);
    }
    for (struct gw_get *g = e->gets; g != NULL && rc == 0; g = g->next) {
        rc = census_add(&c, &cap, &g->lay);
    }
    for (struct gw_del *d = e->dels; d != NULL && rc == 0; d = d->next) {
        rc = census_add(&c, &cap, &d->lay);
    }
    for (size_t i = 0; i < n; i++) {
        if (gw_net_node_usable(e->net, ids[i])) {
            ids[c.nnodes++] = ids[i];
        }
    }
    c.nodes = ids;
    if (rc < 0) {
        free(c.ids);
        free(c.nodes);
        c = (struct gw_census){.status = rc};
    }
    cmd->cb(cmd->arg, &c);
    free(cmd);
}

int
gw_engine_census(struct gw_engine *e, gw_census_cb cb, void *arg)
{
    struct census_cmd *cmd = malloc(sizeof(*cmd));

    if (cmd != NULL) {
        *cmd = (struct census_cmd){e, cb, arg};
    }
    return post(e, census_run, cmd);
}

struct list_cmd {
    struct gw_engine *e;
    uint32_t node;
    uint64_t cursor;
    uint8_t *buf;
    size_t cap;
    gw_list_cb cb;
    void *arg;
};

static void
list_done(void *arg, int status, const struct cm_wire_hdr *rsp)
{
    struct list_cmd *cmd = arg;

    if (status == 0 && rsp->status != 0) {
        status = rsp->status;
    }
    if (status == 0 && rsp->data_len % CM_WIRE_NOTE_LEN != 0) {
        status = CM_E_PROTO;
    }
    cmd->cb(cmd->arg, status, cmd->buf, status == 0 ? rsp->data_len / CM_WIRE_NOTE_LEN : 0,
            status == 0 ? rsp->object : CM_WIRE_LIST_END);
    free(cmd);
}

static void
list_run(void *arg)
{
    struct list_cmd *cmd = arg;
    uint32_t want = (uint32_t)(cmd->cap / CM_WIRE_NOTE_LEN);
    struct gw_net_send ns = {.hdr = {.op = CM_OP_LIST,
                                     .object = cmd->cursor,
                                     /* room for the longer hash chain a page may end with */
                                     .index = want - want / 16},
                             .dst = cmd->buf,
                             .dst_cap = cmd->cap,
                             .done = list_done,
                             .arg = cmd};
    struct gw_net_req *req;
    int rc = gw_net_send(cmd->e->net, cmd->node, &ns, &req);

    if (rc < 0) {
        cmd->cb(cmd->arg, rc, cmd->buf, 0, CM_WIRE_LIST_END);
        free(cmd);
    }
}

int
gw_engine_list(struct gw_engine *e, uint32_t node, uint64_t cursor, uint8_t *buf, size_t cap,
               gw_list_cb cb, void *arg)
{
    struct list_cmd *cmd = malloc(sizeof(*cmd));

    if (cmd != NULL) {
        *cmd = (struct list_cmd){e, node, cursor, buf, cap, cb, arg};
    }
    return post(e, list_run, cmd);
}

struct del_cmd {
    struct gw_engine *e;
    uint32_t node;
    size_t n;
    struct cm_wire_note recs[];
};

static void
del_run(void *arg)
{
    struct del_cmd *cmd = arg;

    for (size_t i = 0; i < cmd->n; i++) {
        const struct cm_wire_note *r = &cmd->recs[i];

        gw_pbuf_del_chunk(cmd->e, cmd->node, r->tenant, r->object, r->index);
    }
    free(cmd);
}

int
gw_engine_del_chunks(struct gw_engine *e, uint32_t node, const struct cm_wire_note *recs, size_t n)
{
    struct del_cmd *cmd = malloc(sizeof(*cmd) + n * sizeof(*recs));

    if (cmd != NULL) {
        cmd->e = e;
        cmd->node = node;
        cmd->n = n;
        memcpy(cmd->recs, recs, n * sizeof(*recs));
    }
    return post(e, del_run, cmd);
}
