/*  sl_tcpinfo.c - TCP_INFO (see sl_tcpinfo.h). */
#include "common/http/sl_tcpinfo.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

uint64_t
sl_tcpinfo_received (int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset (&info, 0, sizeof info);
    //  An older kernel fills less of the struct: then the counter is not there.
    if (fd < 0 || getsockopt (fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0
    ||  len < offsetof (struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
        return 0;
    return info.tcpi_bytes_received;
}
