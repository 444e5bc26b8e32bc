/*
 * test_fns_heartbeat.c - heartbeats: the JSON a node sends, the answers it
 * accepts, and the heartbeat thread against a fake controller (cm_http)
 * whose weights reach the node's scheduler.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t_check.h"

#include "cm_cos.h"
#include "cm_err.h"
#include "cm_http.h"
#include "cm_log.h"
#include "fns_heartbeat.h"
#include "fns_node.h"
#include "../t_net.h"

static atomic_int beats;
static char last_auth[128];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void
fake_request(void *arg, struct cm_http_req *r)
{
    static const char answer[] = "{\"epoch\":3,\"weights\":{\"5\":2.5}}";
    const char *auth = cm_http_header(r, "Authorization");
    size_t len;
    const void *body = cm_http_body(r, &len);
    json_error_t err;
    json_t *j = body != NULL ? json_loadb(body, len, 0, &err) : NULL;

    if (strcmp(cm_http_path(r), "/v1/internal/heartbeat") == 0 && j != NULL &&
        json_is_object(json_object_get(j, "node"))) {
        atomic_fetch_add(&beats, 1);
    }
    json_decref(j);
    pthread_mutex_lock(&mu);
    snprintf(last_auth, sizeof(last_auth), "%s", auth != NULL ? auth : "");
    pthread_mutex_unlock(&mu);
    cm_http_respond(r, 200, "application/json", (void *)answer, sizeof(answer) - 1, CM_HTTP_STATIC);
}

static void *
run_node(void *arg)
{
    fns_node_run(arg);
    return NULL;
}

int
main(void)
{
    char *dir = t_tmpdir();
    char tokfile[256], addr[64];
    struct cm_cos *cos = NULL;
    struct fns_node *node = NULL;
    struct fns_node_cfg ncfg = {.listen = "127.0.0.1:0",
                                .capacity = 1 << 20,
                                .inst_bytes = 1 << 19,
                                .cache_bytes = 1 << 17,
                                .recovery_helpers = 2,
                                .max_chunk = 1 << 16,
                                .queue_limit = 8,
                                .sched = "fifo",
                                .cos_threads = 1,
                                .incarnation = 7,
                                .id = 3};
    struct fns_heartbeat_cfg hbcfg = {0};
    struct fns_heartbeat *hb = NULL;
    struct cm_http_server *http = NULL;
    struct cm_http_handlers h = {.request = fake_request};
    struct cm_http_cfg hcfg = {0};
    struct fns_node_tenant *t;
    pthread_t th;
    json_error_t err;
    json_t *j;
    char *s;
    FILE *f;
    size_t n, i;
    int spins, found = 0;

    cm_log_init("test", CM_LOG_WARN);
    CHECK(cm_cos_open(dir, &cos) == 0);
    CHECK(fns_node_create(&ncfg, cos, &node) == 0);

    s = fns_heartbeat_json(node, "127.0.0.1:9", "127.0.0.1:10");
    j = json_loads(s, 0, &err);
    CHECK(j != NULL);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "node"), "id")) == 3);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "node"), "incarnation")) == 7);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "node"), "capacity_bytes")) ==
          1 << 20);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "node"), "instances")) == 0);
    /* The SMS fields, beside "node": no instance open yet. */
    CHECK(json_integer_value(json_object_get(j, "instance_bytes")) == 1 << 19);
    CHECK(json_integer_value(json_object_get(j, "memory_bytes")) == 0);
    CHECK(json_integer_value(json_object_get(j, "cache_bytes")) == 0);
    CHECK(json_is_array(json_object_get(j, "instances")));
    CHECK(json_array_size(json_object_get(j, "instances")) == 0);
    CHECK(json_is_array(json_object_get(j, "sms_cost")));
    CHECK(json_integer_value(json_object_get(json_object_get(j, "recovery"), "helpers")) == 2);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "recovery"), "running")) == 0);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(j, "node"), "addr")),
                 "127.0.0.1:9") == 0);
    CHECK(json_is_object(json_object_get(j, "tenants")));
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(j, "node"), "sched")), "fifo");
    CHECK(json_number_value(json_object_get(json_object_get(j, "node"), "cap_ops")) == 0);
    json_decref(j);
    free(s);

    CHECK(fns_heartbeat_apply_answer(node, "{\"epoch\":1}") == 0);
    CHECK(fns_heartbeat_apply_answer(node, "{\"epoch\":1,\"weights\":{}}") == 0);
    CHECK(fns_heartbeat_apply_answer(node, "nope") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"weights\":[1]}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"weights\":{\"x\":1}}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"weights\":{\"99999999999\":1}}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"weights\":{\"4\":\"a\"}}") == CM_E_PROTO);
    /* The SMS part of an answer. */
    CHECK(fns_heartbeat_apply_answer(
              node, "{\"sms\":{\"policy\":\"sms\",\"interval_ms\":1000,\"active\":2,"
                    "\"degraded\":3,\"warm_active_ms\":100,\"warm_degraded_ms\":500,"
                    "\"compact_age\":4,\"max_instances\":0},"
                    "\"pools\":[{\"tenant\":5,\"gen\":7,\"gen_age_ms\":10}],"
                    "\"decisions\":[{\"slot\":1,\"tag\":5,\"state\":\"degraded\","
                    "\"gen\":7,\"warm_up\":1}],\"reclaim\":{\"slots\":[0,1]}}") == 0);
    CHECK(fns_heartbeat_apply_answer(node, "{\"reclaim\":{\"all\":true}}") == 0);
    CHECK(fns_heartbeat_apply_answer(node, "{\"sms\":[1]}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"sms\":{\"interval_ms\":-1}}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"pools\":[{\"gen\":1}]}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(
              node, "{\"decisions\":[{\"slot\":1,\"tag\":5,\"state\":\"hot\"}]}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(
              node, "{\"decisions\":[{\"slot\":5000,\"tag\":5,\"state\":\"active\"}]}") ==
          CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"reclaim\":{\"slots\":[\"x\"]}}") == CM_E_PROTO);
    CHECK(fns_heartbeat_apply_answer(node, "{\"reclaim\":{\"all\":1}}") == CM_E_PROTO);

    /* Heartbeats against a fake controller. */
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", t_free_port());
    hcfg.addr = addr;
    hcfg.threads = 1;
    hcfg.max_body = 1 << 20;
    CHECK(cm_http_start(&hcfg, &h, NULL, &http) == 0);
    snprintf(tokfile, sizeof(tokfile), "%s/token", dir);
    f = fopen(tokfile, "w");
    fputs("s3cret\n", f);
    fclose(f);
    hbcfg.controller = addr;
    hbcfg.token_file = tokfile;
    hbcfg.addr = "127.0.0.1:1";
    hbcfg.metrics_addr = "127.0.0.1:2";
    hbcfg.interval_ms = 50;
    CHECK(pthread_create(&th, NULL, run_node, node) == 0);
    CHECK(fns_heartbeat_create(&hbcfg, node, &hb) == 0 && hb != NULL);
    for (spins = 0; spins < 400 && (!found || atomic_load(&beats) < 2); spins++) {
        usleep(10000);
        n = fns_node_tenants(node, &t);
        for (i = 0; i < n; i++) {
            found |= t[i].tenant == 5 && t[i].weight == 2.5;
        }
        free(t);
    }
    CHECK(found); /* weights from the answer reached the scheduler */
    /* ... and the next heartbeat reports the tenant with its local weight
     * and every figure of docs/internal-api.md. */
    s = fns_heartbeat_json(node, "127.0.0.1:9", "127.0.0.1:10");
    j = json_loads(s, 0, &err);
    {
        json_t *t5 = json_object_get(json_object_get(j, "tenants"), "5");
        static const char *const fields[] = {"requests",      "bytes",
                                             "queued",        "running",
                                             "weight",        "arrived_requests",
                                             "arrived_bytes", "arrived_cost",
                                             "served_cost",   "queue_wait_seconds",
                                             "queue_waits"};

        CHECK(json_is_object(t5));
        CHECK(json_number_value(json_object_get(t5, "weight")) == 2.5);
        for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
            CHECK(json_is_number(json_object_get(t5, fields[i])));
        }
    }
    json_decref(j);
    free(s);
    CHECK(atomic_load(&beats) >= 2);
    pthread_mutex_lock(&mu);
    CHECK(strcmp(last_auth, "Bearer s3cret") == 0);
    pthread_mutex_unlock(&mu);
    fns_heartbeat_destroy(hb);
    fns_node_stop(node);
    pthread_join(th, NULL);
    cm_http_stop(http, 1000);
    fns_node_destroy(node);

    /* Disabled controller: no thread. */
    hbcfg.controller = "";
    CHECK(fns_heartbeat_create(&hbcfg, NULL, &hb) == 0 && hb == NULL);
    cm_cos_close(cos);
    t_rmtree(dir);
    return 0;
}
