/* test_pol_fq_fifo.c - unit tests of the FQ registry and the fifo policy. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_err.h"
#include "pol_fq.h"
#include "t_check.h"

struct req {
    int id;
    struct pol_fq_item fq;
};

static struct req *
req_of(struct pol_fq_item *it)
{
    return (struct req *)(void *)((char *)it - offsetof(struct req, fq));
}

static void
test_registry(void)
{
    size_t n, i;
    const struct pol_fq_ops *const *all = pol_fq_list(&n);

    CHECK(pol_fq_find("fifo") != NULL);
    CHECK(pol_fq_find("drr") != NULL);
    CHECK(pol_fq_find("drfq") != NULL);
    CHECK(pol_fq_find("nope") == NULL);
    CHECK(pol_fq_find(NULL) == NULL);
    CHECK_EQ_INT(n, 3);
    /* The first entry is the default, and the literal for option tables agrees. */
    CHECK_EQ_STR(all[0]->name, POL_FQ_DEFAULT);
    for (i = 0; i < n; i++) {
        CHECK(pol_fq_find(all[i]->name) == all[i]);
    }
    pol_fq_find("fifo")->destroy(NULL);
}

static void
test_order_and_limit(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("fifo");
    struct pol_fq_cfg cfg = {.queue_limit = 3};
    struct pol_fq *q = NULL;
    struct req r[10] = {0};
    struct pol_fq_item *it;
    int i;

    CHECK(ops->create(&cfg, &q) == 0);
    CHECK(pol_fq_ops_of(q) == ops);
    CHECK(ops->dequeue(q, 0) == NULL);
    /* tenant 1: 3 accepted then busy; tenant 2 still accepted. */
    for (i = 0; i < 4; i++) {
        r[i].id = i;
        r[i].fq.tenant = 1;
        r[i].fq.est_bytes = 100u * (unsigned)i;
        CHECK(ops->enqueue(q, &r[i].fq, 10 + (uint64_t)i) == (i < 3 ? 0 : CM_E_BUSY));
    }
    r[4].id = 4;
    r[4].fq.tenant = 2;
    r[4].fq.est_bytes = 7;
    CHECK(ops->enqueue(q, &r[4].fq, 20) == 0);
    CHECK(pol_fq_len(q) == 4);
    CHECK(pol_fq_queued(q, 1) == 3);
    CHECK(pol_fq_queued(q, 2) == 1);
    CHECK(pol_fq_queued(q, 99) == 0);

    /* Arrival order regardless of tenant. */
    it = ops->dequeue(q, 30);
    CHECK(it != NULL && req_of(it)->id == 0 && it->enq_ns == 10);
    CHECK(pol_fq_queued(q, 1) == 2);
    /* A slot freed: tenant 1 may enqueue again. */
    r[5].id = 5;
    r[5].fq.tenant = 1;
    r[5].fq.est_bytes = 1;
    CHECK(ops->enqueue(q, &r[5].fq, 31) == 0);
    CHECK(ops->enqueue(q, &r[3].fq, 31) == CM_E_BUSY);
    ops->complete(q, it, 1234, 40);

    int want[] = {1, 2, 4, 5};
    for (i = 0; i < 4; i++) {
        it = ops->dequeue(q, 50);
        CHECK(it != NULL && req_of(it)->id == want[i]);
        if (it != NULL) {
            CHECK(it->charged_bytes == it->est_bytes);
            ops->complete(q, it, it->est_bytes, 60);
        }
    }
    CHECK(ops->dequeue(q, 70) == NULL);
    CHECK(pol_fq_len(q) == 0);
    CHECK_EQ_INT(pol_fq_visits(q), 5);
    ops->destroy(q);
}

struct one {
    uint32_t tenant;
    struct pol_fq_tenant_info ti;
};

static void
one_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    struct one *o = arg;

    if (ti->tenant == o->tenant) {
        o->ti = *ti;
    }
}

static struct pol_fq_tenant_info
info_of(const struct pol_fq *q, uint32_t tenant)
{
    struct one o = {.tenant = tenant};

    o.ti.tenant = tenant + 1;
    pol_fq_foreach_tenant(q, one_cb, &o);
    CHECK_EQ_INT(o.ti.tenant, tenant);
    return o.ti;
}

/* Arrivals count BUSY refusals too; an unsized GET is charged the tenant's
 * estimate, which the GET's actual bytes move. */
static void
test_counters_and_unsized(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("fifo");
    struct pol_fq_cfg cfg = {.queue_limit = 1, .cap_ops = 1000, .cap_bytes = 1e6};
    struct pol_fq *q = NULL;
    struct req a = {0}, b = {0};
    struct pol_fq_tenant_info ti;
    struct pol_fq_item *it;

    CHECK(ops->create(&cfg, &q) == 0);
    a.fq.tenant = b.fq.tenant = 3;
    a.fq.flags = POL_FQ_GET | POL_FQ_UNSIZED;
    a.fq.est_bytes = 999; /* ignored */
    b.fq.est_bytes = 10;
    CHECK(ops->enqueue(q, &a.fq, 5) == 0);
    CHECK(ops->enqueue(q, &b.fq, 6) == CM_E_BUSY);
    ti = info_of(q, 3);
    CHECK_EQ_INT(ti.arrived_requests, 2);
    CHECK_EQ_INT(ti.arrived_bytes, (uint64_t)POL_FQ_GET_BYTES_INIT + 10);
    CHECK_EQ_INT(ti.queued, 1);
    it = ops->dequeue(q, 7);
    CHECK(it == &a.fq);
    CHECK_EQ_INT(it->charged_bytes, (uint64_t)POL_FQ_GET_BYTES_INIT);
    ti = info_of(q, 3);
    CHECK_EQ_INT(ti.queued, 0);
    CHECK_EQ_INT(ti.running, 1);
    ops->complete(q, it, 12000, 8);
    ti = info_of(q, 3);
    CHECK_EQ_INT(ti.running, 0);
    CHECK_EQ_INT(ti.served_requests, 1);
    CHECK_EQ_INT(ti.served_bytes, 12000);
    /* 12000 B at 1e6 B/s outweighs one request at 1000/s. */
    CHECK_NEAR(ti.served_cost, 0.012, 1e-12);
    CHECK_NEAR(ti.est_get_bytes, POL_FQ_GET_BYTES_INIT + (12000 - POL_FQ_GET_BYTES_INIT) / 8.0,
               1e-9);
    ops->destroy(q);
}

struct sums {
    uint64_t req, bytes;
    int tenants;
    double w2;
};

static void
sum_cb(void *arg, const struct pol_fq_tenant_info *ti)
{
    struct sums *s = arg;

    s->req += ti->served_requests;
    s->bytes += ti->served_bytes;
    s->tenants++;
    if (ti->tenant == 2) {
        s->w2 = ti->weight;
    }
    CHECK_EQ_INT(ti->running, 0);
    CHECK_EQ_INT(ti->queued, 0);
}

static void
test_many_tenants_and_weights(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("fifo");
    struct pol_fq_cfg cfg = {0}; /* unlimited queues */
    struct pol_fq *q = NULL;
    struct sums s = {0};
    enum { N = 5000 };
    struct req *r = calloc(N, sizeof(*r));
    struct pol_fq_item *it;
    int i;

    CHECK(ops->create(&cfg, &q) == 0);
    CHECK(ops->set_weight(q, 2, 0) == CM_E_BADARG);
    CHECK(ops->set_weight(q, 2, -1) == CM_E_BADARG);
    CHECK(ops->set_weight(q, 2, 10001) == CM_E_BADARG);
    CHECK(ops->set_weight(q, 2, NAN) == CM_E_BADARG);
    CHECK(ops->set_weight(q, 2, 2.5) == 0);
    for (i = 0; i < N; i++) {
        r[i].id = i;
        r[i].fq.tenant = (uint32_t)(i % 700);
        r[i].fq.est_bytes = 1;
        CHECK(ops->enqueue(q, &r[i].fq, (uint64_t)i) == 0);
    }
    CHECK(pol_fq_len(q) == N);
    for (i = 0; i < N; i++) {
        it = ops->dequeue(q, 0);
        CHECK(it != NULL && req_of(it)->id == i);
        if (it != NULL) {
            ops->complete(q, it, 10, 0);
        }
    }
    pol_fq_foreach_tenant(q, sum_cb, &s);
    CHECK(s.tenants == 700);
    CHECK(s.req == N);
    CHECK(s.bytes == 10u * N);
    CHECK(s.w2 == 2.5);
    ops->destroy(q);
    free(r);
}

static void
test_bad_cfg(void)
{
    const struct pol_fq_ops *ops = pol_fq_find("fifo");
    struct pol_fq_cfg cfg = {.cap_ops = -1};
    struct pol_fq *q = (struct pol_fq *)&cfg;

    CHECK(ops->create(&cfg, &q) == CM_E_BADARG);
    CHECK(q == NULL);
    cfg.cap_ops = 0;
    cfg.nominal_bytes = INFINITY;
    CHECK(ops->create(&cfg, &q) == CM_E_BADARG);
    cfg.nominal_bytes = 0;
    cfg.debt_quanta = NAN;
    CHECK(ops->create(&cfg, &q) == CM_E_BADARG);
    cfg.debt_quanta = 0;
    CHECK(ops->create(NULL, &q) == CM_E_BADARG);
    CHECK(ops->create(&cfg, &q) == 0);
    ops->destroy(q);
}

int
main(void)
{
    test_registry();
    test_order_and_limit();
    test_counters_and_unsized();
    test_many_tenants_and_weights();
    test_bad_cfg();
    printf("ok\n");
    return 0;
}
