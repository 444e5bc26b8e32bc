/* test_state.c - unit.gateway.state: parsing the controller state into a
 * snapshot (auth by key hash, placement rows, bad input), the cached state
 * being served when the controller is unreachable, and refreshes asked by
 * requests (one poll serves every waiter that asked before it began; polls
 * for them are spaced; none once the controller failed; stop lets every
 * waiter go). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "t_check.h"
#include "../t_net.h"

#include "cm_err.h"
#include "cm_hash.h"
#include "cm_http.h"
#include "cm_log.h"
#include "cm_time.h"
#include "gw_meta.h"
#include "gw_state.h"

static void
test_parse(void)
{
    char h1[65], h2[65], json[2048];
    struct gw_snap *s;
    const struct gw_tenant *t;
    const uint32_t *row;
    size_t n;
    const char *why = NULL;

    cm_sha256_hex("key-one", 7, h1);
    cm_sha256_hex("key-two", 7, h2);
    for (int i = 0; i < 64; i++) {
        if (h2[i] >= 'a' && h2[i] <= 'f') {
            h2[i] = (char)(h2[i] - 'a' + 'A'); /* case must not matter */
        }
    }
    snprintf(
        json, sizeof(json),
        "{\"epoch\": 12, \"partitions\": 2,"
        " \"nodes\": [{\"id\": 0, \"addr\": \"127.0.0.1:9500\", \"state\": \"up\"},"
        "             {\"id\": 1, \"addr\": \"127.0.0.1:9501\", \"state\": \"down\"},"
        "             {\"id\": 2, \"addr\": \"127.0.0.1:9502\", \"state\": \"up\", \"draining\": "
        "true},"
        "             {\"id\": 3, \"addr\": \"127.0.0.1:9503\", \"state\": \"removed\"}],"
        " \"tenants\": [{\"id\": 7, \"name\": \"b\", \"weight\": 2.5, \"key_hashes\": [\"%s\"],"
        "               \"ec_k\": 1, \"ec_m\": 1, \"placement\": [[1,0],[0,1]]},"
        "              {\"id\": 3, \"name\": \"a\", \"weight\": 1.0, \"key_hashes\": [\"%s\"],"
        "               \"ec_k\": 4, \"ec_m\": 2, \"placement\": [[0],[1,0,1]]}]}",
        h2, h1);
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), 0);
    CHECK_EQ_INT(s->epoch, 12);
    CHECK_EQ_INT(s->partitions, 2);
    CHECK_EQ_INT(s->nnodes, 4);
    CHECK(s->nodes[0].up && !s->nodes[1].up);
    CHECK(!s->nodes[0].draining && !s->nodes[1].draining);
    CHECK(s->nodes[2].up && s->nodes[2].draining); /* being removed: read, not placed */
    CHECK(!s->nodes[3].up && !s->nodes[3].draining);
    CHECK_EQ_STR(s->nodes[1].addr, "127.0.0.1:9501");

    t = gw_snap_auth(s, "key-one", 7);
    CHECK(t != NULL);
    CHECK_EQ_INT(t->id, 3);
    CHECK_EQ_STR(t->name, "a");
    CHECK_EQ_INT(t->k, 4);
    CHECK_EQ_INT(t->m, 2);
    gw_snap_row(s, t, 0, &row, &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(row[0], 0);
    gw_snap_row(s, t, 1, &row, &n);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(row[2], 1);

    t = gw_snap_auth(s, "key-two", 7);
    CHECK(t != NULL);
    CHECK_EQ_INT(t->id, 7);
    CHECK(t->weight == 2.5);
    gw_snap_row(s, t, 0, &row, &n);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(row[0], 1);
    CHECK(gw_snap_auth(s, "key-three", 9) == NULL);
    CHECK(gw_snap_tenant(s, 7) == t);
    CHECK(gw_snap_tenant(s, 4) == NULL);
    gw_snap_ref(s);
    gw_snap_unref(s);
    gw_snap_unref(s);

    /* defaults: EC 4+2, no tenants */
    CHECK_EQ_INT(gw_snap_parse("{\"epoch\":1}", 11, &s, &why), 0);
    CHECK_EQ_INT(s->ntenants, 0);
    CHECK(gw_snap_auth(s, "x", 1) == NULL);
    gw_snap_unref(s);

    static const char *const bad[] = {
        "",
        "[]",
        "{\"epoch\":-1}",
        "{\"partitions\":0}",
        "{\"nodes\":[{\"id\":0}]}",
        "{\"partitions\":2,\"tenants\":[{\"id\":1,\"placement\":[[0]]}]}",
        "{\"tenants\":[{\"id\":0}]}",
        "{\"tenants\":[{\"id\":1,\"ec_k\":0}]}",
        "{\"tenants\":[{\"id\":1,\"ec_m\":99}]}",
        "{\"tenants\":[{\"id\":1,\"key_hashes\":[\"abc\"]}]}",
        "{\"tenants\":[{\"id\":1},{\"id\":1}]}",
        "{\"tenants\":[{\"id\":1,\"placement\":[[-1]]}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        if (gw_snap_parse(bad[i], strlen(bad[i]), &s, &why) == 0) {
            fprintf(stderr, "accepted bad state %zu: %s\n", i, bad[i]);
            CHECK(0);
        }
        CHECK(why != NULL);
    }
}

#define S3_FMT                                                                                     \
    "{\"epoch\": 1, \"tenants\": [{\"id\": 3, \"name\": \"a\"}, {\"id\": 4, \"name\": \"b\"}],"    \
    " \"s3_keys\": [{\"access_key_id\": \"AKB\", \"tenant_id\": 4,"                                \
    "                 \"date_keys\": {\"20261124\": \"%s\", \"20261125\": \"%s\"}},"               \
    "               {\"access_key_id\": \"AKA\", \"tenant_id\": 3,"                                \
    "                 \"date_keys\": {\"20261125\": \"%s\"}},"                                     \
    "               {\"access_key_id\": \"AKGONE\", \"tenant_id\": 9,"                             \
    "                 \"date_keys\": {\"20261125\": \"%s\"}}]}"

/* S3 keys: date keys by access key and date, the tenant they act for;
 * keys of tenants not in the snapshot are left out; malformed lists are
 * refused whole. */
static void
test_s3_keys(void)
{
    char k1[65], k2[65], k3[65], json[2048];
    uint8_t kd[32], want[32];
    struct gw_snap *s;
    const struct gw_tenant *t = NULL;
    const char *why = NULL;

    memset(k1, 'a', 64);
    memset(k2, 'B', 64);
    memset(k3, '0', 64);
    k1[64] = k2[64] = k3[64] = '\0';
    snprintf(json, sizeof(json), S3_FMT, k1, k2, k3, k3);
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), 0);
    CHECK_EQ_INT(s->ns3keys, 2);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKB", "20261125", kd, &t), 0);
    memset(want, 0xbb, 32);
    CHECK(memcmp(kd, want, 32) == 0);
    CHECK(t != NULL && t->id == 4);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKB", "20261124", kd, &t), 0);
    memset(want, 0xaa, 32);
    CHECK(memcmp(kd, want, 32) == 0);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKA", "20261125", kd, &t), 0);
    CHECK(t != NULL && t->id == 3);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKA", "20261124", kd, &t), -ERANGE);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKGONE", "20261125", kd, &t), CM_E_NOTFOUND);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKC", "20261125", kd, &t), CM_E_NOTFOUND);
    gw_snap_unref(s);

    /* refused whole */
    k1[3] = 'x';
    snprintf(json, sizeof(json), S3_FMT, k1, k2, k3, k3);
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), CM_E_PROTO);
    k1[3] = 'a';
    snprintf(json, sizeof(json), S3_FMT, k1, k2, k3, k3);
    json[strstr(json, "20261124") - json + 7] = 'x';
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), CM_E_PROTO);
    CHECK_EQ_INT(gw_snap_parse("{\"s3_keys\": {}}", 15, &s, &why), CM_E_PROTO);
    snprintf(
        json, sizeof(json),
        "{\"tenants\": [{\"id\": 3}], \"s3_keys\": [{\"access_key_id\": \"X\", \"tenant_id\": "
        "3, \"date_keys\": {}}, {\"access_key_id\": \"X\", \"tenant_id\": 3, \"date_keys\": {}}]}");
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), CM_E_PROTO);
    CHECK_EQ_STR(why, "duplicate s3 access key id");
    /* none at all */
    CHECK_EQ_INT(gw_snap_parse("{}", 2, &s, &why), 0);
    CHECK_EQ_INT(gw_snap_s3_date_key(s, "AKA", "20261125", kd, &t), CM_E_NOTFOUND);
    gw_snap_unref(s);
}

/* With no controller listening, the cached state is what is served. */
/* Owners and gateways: where a tenant's requests go, whose chunks the
 * scrub judges. */
static void
test_owners(void)
{
    const char *json =
        "{\"epoch\": 3, \"partitions\": 1,"
        " \"gateways\": [{\"id\": \"gb\", \"url\": \"http://127.0.0.1:2\", \"s3_url\": \"\","
        "                 \"up\": false},"
        "                {\"id\": \"ga\", \"url\": \"http://127.0.0.1:1\","
        "                 \"s3_url\": \"http://127.0.0.1:11\", \"up\": true}],"
        " \"tenants\": [{\"id\": 1, \"gateway\": \"ga\"}, {\"id\": 2, \"gateway\": \"gb\"},"
        "              {\"id\": 3, \"gateway\": \"gone\"}, {\"id\": 5, \"gateway\": \"\"}]}";
    struct gw_snap *s = NULL;
    const struct gw_peer *p = NULL;
    const char *why = NULL;

    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), 0);
    CHECK_EQ_INT(s->npeers, 2);
    CHECK_EQ_STR(s->peers[0].id, "ga"); /* sorted */
    CHECK(s->peers[0].up && !s->peers[1].up);
    CHECK_EQ_INT(s->max_tenant, 5);
    CHECK_EQ_INT(gw_snap_home(s, gw_snap_tenant(s, 1), "ga", &p), GW_HOME_HERE);
    CHECK_EQ_INT(gw_snap_home(s, gw_snap_tenant(s, 2), "ga", &p), GW_HOME_PEER);
    CHECK_EQ_STR(p->url, "http://127.0.0.1:2");
    CHECK_EQ_STR(p->s3_url, "");
    CHECK_EQ_INT(gw_snap_home(s, gw_snap_tenant(s, 1), "gb", &p), GW_HOME_PEER);
    CHECK_EQ_STR(p->s3_url, "http://127.0.0.1:11");
    CHECK_EQ_INT(gw_snap_home(s, gw_snap_tenant(s, 3), "ga", &p), GW_HOME_NONE);
    CHECK_EQ_INT(gw_snap_home(s, gw_snap_tenant(s, 5), "gb", &p), GW_HOME_HERE);
    /* The scrub: own tenants, and deleted ones (4: below the largest id);
     * not another's, an unowned one beside another gateway, or a newer one. */
    CHECK(gw_snap_collects(s, 1, "ga"));
    CHECK(!gw_snap_collects(s, 2, "ga"));
    CHECK(!gw_snap_collects(s, 3, "ga"));
    CHECK(gw_snap_collects(s, 4, "ga"));
    CHECK(!gw_snap_collects(s, 5, "ga"));
    CHECK(!gw_snap_collects(s, 6, "ga"));
    gw_snap_unref(s);

    /* One gateway (or none listed): every unowned or unknown tenant is its. */
    json = "{\"gateways\": [{\"id\": \"ga\", \"url\": \"http://h:1\"}],"
           " \"tenants\": [{\"id\": 1, \"gateway\": \"\"}]}";
    CHECK_EQ_INT(gw_snap_parse(json, strlen(json), &s, &why), 0);
    CHECK(gw_snap_collects(s, 1, "ga") && gw_snap_collects(s, 9, "ga"));
    gw_snap_unref(s);

    const char *bad[] = {
        "{\"gateways\": {}}",
        "{\"gateways\": [{\"url\": \"http://h:1\"}]}",
        "{\"gateways\": [{\"id\": \"a\"}, {\"id\": \"a\"}]}",
        "{\"gateways\": [{\"id\": 7}]}",
        "{\"tenants\": [{\"id\": 1, \"gateway\": 2}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = NULL;
        CHECK_EQ_INT(gw_snap_parse(bad[i], strlen(bad[i]), &s, &why), CM_E_PROTO);
        CHECK(s == NULL);
    }
}

static void
test_cached(void)
{
    char *dir = t_tmpdir();
    struct gw_meta *m;
    struct gw_state *st;
    struct gw_snap *s;
    char h[65], json[512];
    struct gw_state_cfg cfg = {.controller = "127.0.0.1:13999", .poll_ms = 50, .timeout_ms = 200};

    cm_sha256_hex("k", 1, h);
    snprintf(json, sizeof(json),
             "{\"epoch\":5,\"partitions\":1,\"nodes\":[],"
             "\"tenants\":[{\"id\":2,\"name\":\"t\",\"key_hashes\":[\"%s\"],\"placement\":[[]]}]}",
             h);
    CHECK_EQ_INT(gw_meta_open(dir, 16u << 20, &m), 0);
    CHECK_EQ_INT(gw_meta_state_save(m, json, strlen(json)), 0);
    CHECK_EQ_INT(gw_state_create(&cfg, m, NULL, &st), 0);
    CHECK_EQ_INT(gw_state_start(st), 0);
    usleep(200 * 1000);
    s = gw_state_snap(st);
    CHECK_EQ_INT(s->epoch, 5);
    CHECK(gw_snap_auth(s, "k", 1) != NULL);
    gw_snap_unref(s);
    gw_state_destroy(st);
    gw_meta_close(m);
    t_rmtree(dir);
}

/* ---- refreshes, against a controller on loopback ---- */

static atomic_int polls, ctl_fail, ctl_delay_ms;

static void
ctl_request(void *arg, struct cm_http_req *r)
{
    char json[128];
    int n = atomic_fetch_add(&polls, 1) + 1;

    (void)arg;
    if (atomic_load(&ctl_delay_ms) > 0) {
        usleep((useconds_t)atomic_load(&ctl_delay_ms) * 1000);
    }
    if (atomic_load(&ctl_fail)) {
        cm_http_respond(r, 500, "text/plain", (void *)"down", 4, CM_HTTP_STATIC);
        return;
    }
    snprintf(json, sizeof(json), "{\"epoch\":%d,\"partitions\":1}", n);
    cm_http_respond(r, 200, "application/json", json, strlen(json), CM_HTTP_COPY);
}

struct waiter {
    struct gw_state_wait w;
    atomic_int done;
    uint64_t at; /* when fn ran, monotonic ns */
    int polls;   /* polls the controller had seen by then */
};

static void
waiter_fn(struct gw_state_wait *w)
{
    struct waiter *x = (struct waiter *)w;

    x->at = cm_now_ns();
    x->polls = atomic_load(&polls);
    atomic_store(&x->done, 1);
}

static void
wait_done(struct waiter *x)
{
    uint64_t t0 = cm_now_ns();

    while (!atomic_load(&x->done)) {
        CHECK(cm_now_ns() - t0 < 5000000000ull);
        usleep(2000);
    }
}

static void
test_refresh(void)
{
    char *dir = t_tmpdir(), addr[64];
    struct cm_http_handlers h = {.request = ctl_request};
    struct cm_http_cfg hcfg = {.addr = addr, .threads = 1, .max_body = 4096};
    struct cm_http_server *ctl;
    static struct waiter ws[20], a, b, c;
    struct gw_meta *m;
    struct gw_state *st;
    /* Periodic polls 4 s apart: far from the refreshes below, which come
     * within a second of the first poll even on a loaded machine. */
    struct gw_state_cfg cfg = {.controller = addr, .poll_ms = 4000, .timeout_ms = 2000};
    uint64_t t0;

    cm_log_init("test", CM_LOG_ERROR);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", t_free_port());
    CHECK_EQ_INT(cm_http_start(&hcfg, &h, NULL, &ctl), 0);
    CHECK_EQ_INT(gw_meta_open(dir, 16u << 20, &m), 0);
    CHECK_EQ_INT(gw_state_create(&cfg, m, NULL, &st), 0);
    a.w.fn = waiter_fn;
    CHECK_EQ_INT(gw_state_refresh(st, &a.w), -EAGAIN); /* not polling yet */
    CHECK_EQ_INT(gw_state_start(st), 0);
    while (atomic_load(&polls) < 1) {
        usleep(2000);
    }
    usleep(250 * 1000); /* past the refresh gap */

    /* A burst: the first refresh starts a poll at once; who comes in while
     * it runs is served by the one next after it, so two polls serve all
     * twenty, soon (on a loaded machine the burst may outlast the first). */
    int before = atomic_load(&polls);
    t0 = cm_now_ns();
    for (int i = 0; i < 20; i++) {
        ws[i].w.fn = waiter_fn;
        CHECK_EQ_INT(gw_state_refresh(st, &ws[i].w), 0);
    }
    for (int i = 0; i < 20; i++) {
        wait_done(&ws[i]);
        CHECK(ws[i].polls == before + 1 || (i > 0 && ws[i].polls == before + 2));
        CHECK(i == 0 || ws[i].polls >= ws[i - 1].polls);
    }
    CHECK(ws[19].at - t0 < 800000000ull); /* not the periodic poll */
    before = ws[19].polls - 1;
    /* The next one waits out the gap after that poll began. */
    b.w.fn = waiter_fn;
    t0 = cm_now_ns();
    CHECK_EQ_INT(gw_state_refresh(st, &b.w), 0);
    wait_done(&b);
    CHECK_EQ_INT(b.polls, before + 2);
    CHECK(b.at - t0 > 100000000ull && b.at - t0 < 1000000000ull);

    /* A failed poll: no waiting until a poll succeeds again. */
    atomic_store(&ctl_fail, 1);
    usleep(250 * 1000);
    a.w.fn = waiter_fn;
    CHECK_EQ_INT(gw_state_refresh(st, &a.w), 0);
    wait_done(&a);
    CHECK_EQ_INT(gw_state_refresh(st, &c.w), -EAGAIN);
    atomic_store(&ctl_fail, 0);
    t0 = cm_now_ns();
    c.w.fn = waiter_fn;
    while (gw_state_refresh(st, &c.w) != 0) { /* the periodic poll brings it back */
        CHECK(cm_now_ns() - t0 < 6000000000ull);
        usleep(10000);
    }
    wait_done(&c);

    /* Stop lets waiters go: the one whose poll runs, and the one after. */
    atomic_store(&ctl_delay_ms, 300);
    usleep(250 * 1000);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.w.fn = b.w.fn = waiter_fn;
    CHECK_EQ_INT(gw_state_refresh(st, &a.w), 0);
    usleep(50 * 1000);
    CHECK_EQ_INT(gw_state_refresh(st, &b.w), 0);
    gw_state_stop(st);
    CHECK(atomic_load(&a.done) && atomic_load(&b.done));
    CHECK_EQ_INT(gw_state_refresh(st, &c.w), -EAGAIN);

    gw_state_destroy(st);
    gw_meta_close(m);
    cm_http_stop(ctl, 1000);
    t_rmtree(dir);
}

int
main(void)
{
    t_seed();
    test_parse();
    test_s3_keys();
    test_owners();
    test_cached();
    test_refresh();
    printf("ok\n");
    return 0;
}
