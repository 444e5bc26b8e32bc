/* t_net.h - loopback helpers shared by the unit tests of every component. */
#ifndef T_NET_H
#define T_NET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* A loopback TCP port that was free a moment ago (0 if none could be had). */
static inline int
t_free_port(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sin, &len) == 0) {
        port = ntohs(sin.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

/* Writes (or reads) all n bytes: 0, or -1 once the peer closed or failed. */
static inline int
t_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;

    while (n > 0) {
        ssize_t w = write(fd, b, n);

        if (w <= 0) {
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static inline int
t_read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;

    while (n > 0) {
        ssize_t r = read(fd, b, n);

        if (r <= 0) {
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

#endif
