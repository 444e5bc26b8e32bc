/*
 * fns_loop.c - the libevent adapter for the node's event loop.
 * See fns_loop.h for the thread rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "cm_buf.h"
#include "cm_config.h"
#include "cm_err.h"
#include "cm_log.h"
#include "fns_loop.h"

struct fns_loop {
    struct event_base *base;
};

struct fns_loop_ev {
    struct event *ev;
    void (*cb)(void *arg);
    void *arg;
    int bell;        /* a bell's eventfd, else -1 */
    atomic_int rung; /* a bell's wake-up is pending (written, not yet read) */
};

struct fns_loop_listener {
    struct evconnlistener *lst;
    void (*accept_cb)(void *arg, int fd);
    void *arg;
};

static pthread_once_t fns_loop_once = PTHREAD_ONCE_INIT;
static int fns_loop_threads_rc;

static void
fns_loop_init_threads(void)
{
    fns_loop_threads_rc = evthread_use_pthreads();
}

int
fns_loop_create(struct fns_loop **out)
{
    struct fns_loop *l;

    *out = NULL;
    pthread_once(&fns_loop_once, fns_loop_init_threads);
    if (fns_loop_threads_rc != 0) {
        return -EIO;
    }
    l = cm_calloc(1, sizeof(*l));
    l->base = event_base_new();
    if (l->base == NULL) {
        free(l);
        return -EIO;
    }
    *out = l;
    return 0;
}

void
fns_loop_destroy(struct fns_loop *l)
{
    if (l == NULL) {
        return;
    }
    event_base_free(l->base);
    free(l);
}

int
fns_loop_run(struct fns_loop *l)
{
    return event_base_dispatch(l->base) < 0 ? -EIO : 0;
}

void
fns_loop_break(struct fns_loop *l)
{
    event_base_loopbreak(l->base);
}

void *
fns_loop_base(struct fns_loop *l)
{
    return l->base;
}

static void
fns_loop_ev_fire(evutil_socket_t fd, short what, void *arg)
{
    struct fns_loop_ev *ev = arg;

    ev->cb(ev->arg);
}

/* A bell rang: cleared before the callback, so a ring during it (or after
 * the callback looked at its queue) writes again and is not lost. */
static void
fns_loop_bell_fire(evutil_socket_t fd, short what, void *arg)
{
    struct fns_loop_ev *ev = arg;
    uint64_t v;

    (void)what;
    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
        CM_WARN("bell read failed err=%s", strerror(errno));
    }
    atomic_store(&ev->rung, 0);
    ev->cb(ev->arg);
}

struct fns_loop_ev *
fns_loop_bell_new(struct fns_loop *l, void (*cb)(void *arg), void *arg)
{
    struct fns_loop_ev *ev = cm_calloc(1, sizeof(*ev));

    ev->cb = cb;
    ev->arg = arg;
    atomic_init(&ev->rung, 0);
    ev->bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ev->bell < 0) {
        CM_ERROR("eventfd failed err=%s", strerror(errno));
        abort();
    }
    ev->ev = event_new(l->base, ev->bell, EV_READ | EV_PERSIST, fns_loop_bell_fire, ev);
    if (ev->ev == NULL || event_add(ev->ev, NULL) != 0) {
        CM_ERROR("event_new failed");
        abort();
    }
    return ev;
}

struct fns_loop_ev *
fns_loop_ev_new(struct fns_loop *l, void (*cb)(void *arg), void *arg)
{
    struct fns_loop_ev *ev = cm_calloc(1, sizeof(*ev));

    ev->cb = cb;
    ev->arg = arg;
    ev->bell = -1;
    ev->ev = event_new(l->base, -1, 0, fns_loop_ev_fire, ev);
    if (ev->ev == NULL) {
        CM_ERROR("event_new failed");
        abort();
    }
    return ev;
}

struct fns_loop_ev *
fns_loop_ev_signal(struct fns_loop *l, int signo, void (*cb)(void *arg), void *arg)
{
    struct fns_loop_ev *ev = cm_calloc(1, sizeof(*ev));

    ev->cb = cb;
    ev->arg = arg;
    ev->bell = -1;
    ev->ev = evsignal_new(l->base, signo, fns_loop_ev_fire, ev);
    if (ev->ev == NULL || event_add(ev->ev, NULL) != 0) {
        CM_ERROR("evsignal_new failed signo=%d", signo);
        abort();
    }
    /* evsignal events are persistent by construction (EV_PERSIST). */
    return ev;
}

void
fns_loop_ev_free(struct fns_loop_ev *ev)
{
    if (ev == NULL) {
        return;
    }
    event_free(ev->ev);
    if (ev->bell >= 0) {
        close(ev->bell);
    }
    free(ev);
}

void
fns_loop_ev_wake(struct fns_loop_ev *ev)
{
    uint64_t one = 1;

    if (ev->bell < 0) {
        event_active(ev->ev, 0, 0);
        return;
    }
    if (atomic_exchange(&ev->rung, 1) == 0 && write(ev->bell, &one, sizeof(one)) < 0) {
        CM_WARN("bell write failed err=%s", strerror(errno)); /* EAGAIN: one is pending */
    }
}

void
fns_loop_ev_after(struct fns_loop_ev *ev, uint64_t ns)
{
    struct timeval tv = {(time_t)(ns / 1000000000u), (suseconds_t)(ns % 1000000000u / 1000u)};

    event_add(ev->ev, &tv);
}

static void
fns_loop_accept(struct evconnlistener *evl, evutil_socket_t fd, struct sockaddr *sa, int salen,
                void *arg)
{
    struct fns_loop_listener *lst = arg;

    lst->accept_cb(lst->arg, fd);
}

static void
fns_loop_accept_error(struct evconnlistener *evl, void *arg)
{
    int err = EVUTIL_SOCKET_ERROR();

    /* EMFILE and friends: log and keep listening (libevent retries). */
    CM_WARN("accept failed err=%s", strerror(err));
}

int
fns_loop_listen(struct fns_loop *l, const char *addr, void (*accept_cb)(void *arg, int fd),
                void *arg, uint16_t *port, struct fns_loop_listener **out)
{
    struct fns_loop_listener *lst;
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    char host[64];
    uint16_t p = 0;
    int rc;

    *out = NULL;
    /* Port 0 is allowed here (tests): parse it ourselves if cm_parse_addr refuses it. */
    rc = cm_parse_addr(addr, host, sizeof(host), &p);
    if (rc != 0) {
        const char *colon = strrchr(addr, ':');

        if (colon == NULL || strcmp(colon, ":0") != 0 || (size_t)(colon - addr) >= sizeof(host)) {
            return CM_E_BADARG;
        }
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
        p = 0;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(p);
    if (strcmp(host, "localhost") == 0) {
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
        return CM_E_BADARG;
    }
    lst = cm_calloc(1, sizeof(*lst));
    lst->accept_cb = accept_cb;
    lst->arg = arg;
    lst->lst =
        evconnlistener_new_bind(l->base, fns_loop_accept, lst,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, (struct sockaddr *)&sin, sizeof(sin));
    if (lst->lst == NULL) {
        rc = -errno;
        free(lst);
        return rc != 0 ? rc : -EADDRINUSE;
    }
    evconnlistener_set_error_cb(lst->lst, fns_loop_accept_error);
    if (port != NULL) {
        if (getsockname(evconnlistener_get_fd(lst->lst), (struct sockaddr *)&sin, &slen) == 0) {
            *port = ntohs(sin.sin_port);
        } else {
            *port = p;
        }
    }
    *out = lst;
    return 0;
}

void
fns_loop_listener_free(struct fns_loop_listener *lst)
{
    if (lst == NULL) {
        return;
    }
    evconnlistener_free(lst->lst);
    free(lst);
}
