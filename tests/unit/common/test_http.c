/*
 * test_http.c - the HTTP server's answers over a real loopback socket:
 * headers that outgrow the inline buffer arrive whole, once each and in
 * order, whether answered on the HTTP thread or, suspended, from another
 * thread; a second answer to one request changes nothing of the first.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "t_check.h"
#include "../t_net.h"

#include "cm_http.h"
#include "cm_log.h"

#define NHDR 24 /* 24 headers of ~45 bytes: several times the inline buffer */

static void
add_headers(struct cm_http_req *r)
{
    char name[32], value[64];

    for (int i = 0; i < NHDR; i++) {
        snprintf(name, sizeof(name), "X-Test-%02d", i);
        snprintf(value, sizeof(value), "value-%02d-abcdefghijklmnopqrstuvwxyz", i);
        cm_http_add_header(r, name, value);
    }
}

static void *
answer_later(void *arg)
{
    struct cm_http_req *r = arg;

    usleep(20 * 1000);
    add_headers(r);
    /* Only once: the request may be sent and freed right after. */
    cm_http_respond(r, 201, "text/plain", (void *)"later", 5, CM_HTTP_STATIC);
    return NULL;
}

static void
on_request(void *arg, struct cm_http_req *r)
{
    pthread_t th;

    (void)arg;
    if (strcmp(cm_http_path(r), "/later") == 0) {
        cm_http_suspend(r);
        CHECK(pthread_create(&th, NULL, answer_later, r) == 0);
        pthread_detach(th);
        return;
    }
    add_headers(r);
    cm_http_respond(r, 200, "text/plain", (void *)"now", 3, CM_HTTP_STATIC);
    /* A second answer is dropped, its Content-Type and body with it (safe
     * here: the request lives until this callback returns). */
    cm_http_respond(r, 500, "application/json", (void *)"{}", 2, CM_HTTP_STATIC);
}

/* One request on a new connection; the whole answer (the server closes). */
static void
fetch(int port, const char *path, char *out, size_t cap)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char req[256];
    size_t off = 0;
    ssize_t n;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    CHECK(write(fd, req, (size_t)n) == n);
    while (off < cap - 1 && (n = read(fd, out + off, cap - 1 - off)) > 0) {
        off += (size_t)n;
    }
    out[off] = '\0';
    close(fd);
}

static int
count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    return n;
}

static void
check_answer(const char *resp, const char *status, const char *body)
{
    char line[128];
    const char *prev = resp, *p;

    CHECK(strncmp(resp, status, strlen(status)) == 0);
    for (int i = 0; i < NHDR; i++) {
        snprintf(line, sizeof(line), "\r\nX-Test-%02d: value-%02d-abcdefghijklmnopqrstuvwxyz\r\n",
                 i, i);
        CHECK_EQ_INT(count(resp, line), 1);
        p = strstr(resp, line);
        CHECK(p != NULL && p > prev); /* in the order added */
        prev = p;
    }
    CHECK_EQ_INT(count(resp, "Content-Type:"), 1);
    CHECK(strstr(resp, "\r\nContent-Type: text/plain\r\n") != NULL);
    p = strstr(resp, "\r\n\r\n");
    CHECK(p != NULL && strcmp(p + 4, body) == 0);
}

int
main(void)
{
    struct cm_http_handlers h = {.request = on_request};
    struct cm_http_cfg cfg = {0};
    struct cm_http_server *srv = NULL;
    char addr[64], resp[8192];
    int port = t_free_port();

    cm_log_init("test", CM_LOG_WARN);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cfg.addr = addr;
    cfg.threads = 2;
    cfg.max_body = 1 << 20;
    CHECK(cm_http_start(&cfg, &h, NULL, &srv) == 0);

    fetch(port, "/now", resp, sizeof(resp));
    check_answer(resp, "HTTP/1.1 200", "now");
    fetch(port, "/later", resp, sizeof(resp));
    check_answer(resp, "HTTP/1.1 201", "later");

    cm_http_stop(srv, 1000);
    return 0;
}
