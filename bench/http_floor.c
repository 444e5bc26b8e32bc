/*
 * http_floor.c - shoal-httpfloor: the gateway's HTTP layer (cm_http over
 * libmicrohttpd, the same flags and thread pool) answering every request
 * 201 with a small JSON body and three headers, and doing nothing else.
 * It is the floor under a gateway PUT: what the HTTP side alone costs.
 *
 *   shoal-httpfloor [--listen ADDR] [--threads N] [--handoff]
 *
 * With --handoff each request is suspended and answered from a second
 * thread, as the gateway's committer answers a PUT: one hand-off each way.
 * Runs until SIGTERM or SIGINT.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cm_config.h"
#include "cm_http.h"

struct floor_cfg {
    char *listen;
    int threads;
    int handoff;
};

#define T struct floor_cfg
static const struct cm_opt opts[] = {
    CM_OPT_STR(T, listen, "127.0.0.1:9390", "address to listen on"),
    CM_OPT_INT(T, threads, "4", 1, 64, "HTTP threads (the gateway's --threads)"),
    CM_OPT_BOOL(T, handoff, "false", "answer each request from a second thread"),
};
#undef T

static const char answer[] = "{\"version\":1,\"etag\":\"0123456789abcdef\"}";

/* Requests waiting for the second thread, as a stack. */
struct waiter {
    struct cm_http_req *r;
    struct waiter *next;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct waiter *top;
    int handoff;
} fl = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void
respond(struct cm_http_req *r)
{
    cm_http_add_header(r, "ETag", "\"0123456789abcdef\"");
    cm_http_add_header(r, "X-Shoal-Version", "1");
    cm_http_add_header(r, "X-Request-Id", "0123456789abcdef");
    cm_http_respond(r, 201, "application/json", (void *)answer, sizeof(answer) - 1, CM_HTTP_STATIC);
}

static void
on_request(void *arg, struct cm_http_req *r)
{
    (void)arg;
    if (!fl.handoff) {
        respond(r);
        return;
    }
    struct waiter *w = malloc(sizeof(*w)); /* the gateway allocates per request too */
    if (w == NULL) {
        respond(r);
        return;
    }
    w->r = r;
    cm_http_suspend(r);
    pthread_mutex_lock(&fl.mu);
    w->next = fl.top;
    fl.top = w;
    pthread_cond_signal(&fl.cv);
    pthread_mutex_unlock(&fl.mu);
}

static void *
answerer_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&fl.mu);
        while (fl.top == NULL) {
            pthread_cond_wait(&fl.cv, &fl.mu);
        }
        struct waiter *w = fl.top;
        fl.top = NULL;
        pthread_mutex_unlock(&fl.mu);
        while (w != NULL) {
            struct waiter *next = w->next;
            respond(w->r);
            free(w);
            w = next;
        }
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    struct floor_cfg cfg;
    struct cm_http_server *srv = NULL;
    sigset_t set;
    pthread_t t;
    int sig;

    cm_config_load(opts, sizeof(opts) / sizeof(opts[0]), &cfg, argc, argv, "shoal-httpfloor",
                   "The gateway's HTTP layer alone: every request answered 201, at once or\n"
                   "from a second thread (--handoff). The floor under a gateway PUT.");
    fl.handoff = cfg.handoff;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (pthread_create(&t, NULL, answerer_main, NULL) != 0) {
        fprintf(stderr, "shoal-httpfloor: cannot start a thread\n");
        return 1;
    }
    struct cm_http_cfg hc = {
        .addr = cfg.listen, .threads = (unsigned)cfg.threads, .max_body = 1u << 20};
    struct cm_http_handlers h = {.request = on_request};
    if (cm_http_start(&hc, &h, NULL, &srv) != 0) {
        fprintf(stderr, "shoal-httpfloor: cannot listen on %s\n", cfg.listen);
        return 1;
    }
    sigwait(&set, &sig);
    cm_http_stop(srv, 1000);
    return 0;
}
