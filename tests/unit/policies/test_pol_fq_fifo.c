/* test_pol_fq_fifo.c - unit tests of the FQ registry and the fifo policy. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "cm_err.h"
#include "pol_fq.h"

static int failures;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

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
    CHECK(pol_fq_find("nope") == NULL);
    CHECK(pol_fq_find(NULL) == NULL);
    CHECK(n >= 1);
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
    struct req r[10];
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
    if (ti->running != 0 || ti->queued != 0) {
        failures++;
        fprintf(stderr, "tenant %u: running=%u queued=%u\n", ti->tenant, ti->running, ti->queued);
    }
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
}

int
main(void)
{
    test_registry();
    test_order_and_limit();
    test_many_tenants_and_weights();
    test_bad_cfg();
    if (failures != 0) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
