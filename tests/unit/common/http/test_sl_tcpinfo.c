/*  Unit tests: common/http/sl_tcpinfo (the bytes a TCP connection has
    received, read or not, as the kernel counts them). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/http/sl_tcpinfo.h"

Test (sl_tcpinfo, the_kernel_counts_what_arrived_before_it_is_read)
{
    int listener = socket (AF_INET, SOCK_STREAM, 0);
    cr_assert_geq (listener, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof addr;
    cr_assert_eq (bind (listener, (struct sockaddr *) &addr, sizeof addr), 0);
    cr_assert_eq (listen (listener, 1), 0);
    cr_assert_eq (getsockname (listener, (struct sockaddr *) &addr, &len), 0);
    int client = socket (AF_INET, SOCK_STREAM, 0);
    cr_assert_eq (connect (client, (struct sockaddr *) &addr, sizeof addr), 0);
    int server = accept (listener, NULL, NULL);
    cr_assert_geq (server, 0);
    cr_expect_eq (sl_tcpinfo_received (server), 0, "nothing yet");
    const char ping [] = "GET / HTTP/1.1\r\n\r\n";
    cr_assert_eq (write (client, ping, sizeof ping - 1), (ssize_t) (sizeof ping - 1));
    //  Loopback delivers within the write; the count is bounded in tries.
    uint64_t got = 0;
    for (int i = 0; i < 1000 && got < sizeof ping - 1; i++) {
        got = sl_tcpinfo_received (server);
        if (got < sizeof ping - 1)
            usleep (1000);
    }
    cr_expect_eq (got, sizeof ping - 1, "counted though not read");
    cr_expect_eq (sl_tcpinfo_received (-1), 0, "no socket");
    int pipefd [2];
    cr_assert_eq (pipe (pipefd), 0);
    cr_expect_eq (sl_tcpinfo_received (pipefd [0]), 0, "not a TCP socket");
    close (pipefd [0]);
    close (pipefd [1]);
    close (server);
    close (client);
    close (listener);
}
