/*  sl_tcpinfo.h - what the kernel knows of a TCP connection.

    Its own file because it needs the kernel's <linux/tcp.h> (glibc's
    struct tcp_info stops short of the byte counters), which clashes with
    the <netinet/tcp.h> that czmq's headers bring in.
*/
#ifndef SL_TCPINFO_H
#define SL_TCPINFO_H

#include <stdint.h>

//  Bytes received on the socket since it was opened (all of them, whether
//  read by the application yet or not); 0 when the kernel does not say.
uint64_t sl_tcpinfo_received (int fd);

#endif
