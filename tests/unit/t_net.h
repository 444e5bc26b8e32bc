/* t_net.h - loopback helpers shared by the unit tests of every component. */
#ifndef T_NET_H
#define T_NET_H

#include <arpa/inet.h>
#include <netinet/in.h>
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

#endif
