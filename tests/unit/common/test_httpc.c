/*
 * test_httpc.c - the HTTP client against a one-shot loopback server: the
 * request line, bearer token and body arrive; status and body come back;
 * a closed port is -ECONNREFUSED and a silent server times out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "t_check.h"

#include "cm_err.h"
#include "cm_httpc.h"

struct srv {
    int lfd;
    int silent;
    char req[8192];
};

static void *
serve_one(void *arg)
{
    static const char resp[] = "HTTP/1.1 201 Created\r\nContent-Length: 11\r\n"
                               "Content-Type: application/json\r\nConnection: close\r\n\r\n"
                               "{\"ok\":true}";
    struct srv *s = arg;
    size_t off = 0;
    ssize_t n;
    char *hend, *cl;
    size_t need = 0;
    int fd = accept(s->lfd, NULL, NULL);

    CHECK(fd >= 0);
    for (;;) {
        n = read(fd, s->req + off, sizeof(s->req) - 1 - off);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
        s->req[off] = '\0';
        hend = strstr(s->req, "\r\n\r\n");
        if (hend == NULL) {
            continue;
        }
        cl = strcasestr(s->req, "Content-Length:");
        need = (size_t)(hend + 4 - s->req) + (cl != NULL ? strtoul(cl + 15, NULL, 10) : 0);
        if (off >= need) {
            break;
        }
    }
    if (s->silent) {
        usleep(1500 * 1000);
    } else {
        CHECK(write(fd, resp, sizeof(resp) - 1) == (ssize_t)(sizeof(resp) - 1));
    }
    close(fd);
    return NULL;
}

static int
listen_any(uint16_t *port)
{
    struct sockaddr_in a = {0};
    socklen_t al = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CHECK(listen(fd, 4) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

int
main(void)
{
    struct cm_httpc_resp r;
    struct srv s = {0};
    pthread_t th;
    char url[128];
    uint16_t port;

    s.lfd = listen_any(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/tenants", port);
    CHECK(pthread_create(&th, NULL, serve_one, &s) == 0);
    CHECK_EQ_INT(cm_httpc_request("POST", url, "tok123", "{\"name\":\"a\"}", 5000, &r), 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(r.status, 201);
    CHECK_EQ_INT(r.len, 11);
    CHECK_EQ_STR(r.body, "{\"ok\":true}");
    cm_httpc_resp_fini(&r);
    CHECK(strncmp(s.req, "POST /v1/tenants HTTP/1.1\r\n", 27) == 0);
    CHECK(strstr(s.req, "\r\nAuthorization: Bearer tok123\r\n") != NULL);
    CHECK(strstr(s.req, "\r\nContent-Type: application/json\r\n") != NULL);
    CHECK(strstr(s.req, "\r\n\r\n{\"name\":\"a\"}") != NULL);

    CHECK(pthread_create(&th, NULL, serve_one, &s) == 0);
    CHECK_EQ_INT(cm_httpc_request("GET", url, NULL, NULL, 5000, &r), 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(r.status, 201);
    cm_httpc_resp_fini(&r);
    CHECK(strncmp(s.req, "GET /v1/tenants HTTP/1.1\r\n", 26) == 0);
    CHECK(strstr(s.req, "Authorization") == NULL);

    s.silent = 1;
    CHECK(pthread_create(&th, NULL, serve_one, &s) == 0);
    CHECK_EQ_INT(cm_httpc_request("DELETE", url, NULL, NULL, 300, &r), CM_E_TIMEOUT);
    pthread_join(th, NULL);
    CHECK(r.body == NULL);
    close(s.lfd);

    /* the port is closed now */
    CHECK_EQ_INT(cm_httpc_request("GET", url, NULL, NULL, 2000, &r), -ECONNREFUSED);
    return 0;
}
