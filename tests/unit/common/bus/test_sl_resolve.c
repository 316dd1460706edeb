/*  Unit tests: common/bus/sl_resolve (endpoint lists into addresses). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/bus/sl_resolve.h"

Test (sl_resolve, names_become_addresses_and_bad_lists_are_refused)
{
    char out [8][SL_RESOLVE_ENDPOINT_MAX];
    const char *why = NULL;
    int n = sl_resolve_list ("tcp://127.0.0.1:5558,tcp://localhost:5559,tcp://127.0.0.1:5558", out, 8, &why);
    cr_assert_geq (n, 2, "%s", why ? why : "");
    cr_expect_str_eq (out [0], "tcp://127.0.0.1:5558");
    cr_expect_str_eq (out [1], "tcp://127.0.0.1:5559", "localhost is this machine");
    cr_expect_eq (n, 2, "an address once");
    cr_expect_eq (sl_resolve_list ("tcp://no.such.host.invalid:1", out, 8, &why), 0);
    cr_expect_not_null (why, "a name that does not resolve is said");
    cr_expect_eq (sl_resolve_list ("udp://x:1", out, 8, &why), -1);
    cr_expect_eq (sl_resolve_list ("tcp://nohost", out, 8, &why), -1);
    cr_expect_eq (sl_resolve_list ("tcp://a:1,,tcp://b:2", out, 8, &why), -1);
}

Test (sl_resolve, names_are_told_from_addresses)
{
    cr_expect (sl_resolve_is_name ("emitter"));
    cr_expect (sl_resolve_is_name ("localhost"));
    cr_expect (sl_resolve_is_name ("judge.sluice.svc.cluster.local"));
    cr_expect_not (sl_resolve_is_name ("10.0.0.7"));
    cr_expect_not (sl_resolve_is_name ("::1"), "an IPv6 address");
    cr_expect_not (sl_resolve_is_name ("[::1]"));
    cr_expect_not (sl_resolve_is_name ("*"));
}

//  The endpoints a name resolved to, joined by spaces.
static void
s_collect (void *arg, const char *endpoint)
{
    char *out = arg;
    strcat (out, endpoint);
    strcat (out, " ");
}

Test (sl_resolve, a_name_becomes_an_endpoint_per_address)
{
    char out [1024] = "";
    const char *why = NULL;
    cr_assert_eq (sl_resolve_name ("tcp://", "localhost", "5552", s_collect, out, &why), 0);
    cr_expect_str_eq (out, "tcp://127.0.0.1:5552 ", "IPv4, with the prefix and the port");
    out [0] = 0;
    cr_expect_eq (sl_resolve_name ("tcp://", "no.such.host.invalid", "1", s_collect, out, &why), -1);
    cr_expect_str_eq (out, "", "nothing for a name that does not resolve");
    cr_expect_not_null (why, "the resolver's reason");
}

//  A set of endpoints as a service keeps its connections.
typedef struct {
    char have [8][SL_RESOLVE_ENDPOINT_MAX];
    size_t count;
    int added, removed;
} s_set_t;

static size_t s_count (void *arg) { return ((s_set_t *) arg)->count; }
static const char *s_endpoint (void *arg, size_t i) { return ((s_set_t *) arg)->have [i]; }

static void
s_add (void *arg, const char *endpoint)
{
    s_set_t *set = arg;
    snprintf (set->have [set->count++], SL_RESOLVE_ENDPOINT_MAX, "%s", endpoint);
    set->added++;
}

static void
s_remove (void *arg, size_t i)
{
    s_set_t *set = arg;
    memcpy (set->have [i], set->have [--set->count], SL_RESOLVE_ENDPOINT_MAX);
    set->removed++;
}

static const sl_resolve_set_t s_ops = { s_count, s_endpoint, s_add, s_remove };

Test (sl_resolve, a_set_is_kept_in_step_with_its_list)
{
    s_set_t set = { .count = 0 };
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:1,tcp://127.0.0.1:2", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2);
    cr_expect_eq (set.added, 2);
    //  One stays, one goes, one comes.
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:2,tcp://127.0.0.1:3", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2);
    cr_expect_eq (set.added, 3);
    cr_expect_eq (set.removed, 1);
    bool two = false, three = false;
    for (size_t i = 0; i < set.count; i++) {
        two |= strcmp (set.have [i], "tcp://127.0.0.1:2") == 0;
        three |= strcmp (set.have [i], "tcp://127.0.0.1:3") == 0;
    }
    cr_expect (two && three);
    //  A name that does not resolve now removes nothing.
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:2,tcp://judge.invalid:5", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2, "no scale-down on a resolver hiccup");
    //  A malformed list changes nothing.
    cr_expect_eq (sl_resolve_sync ("judge:5", 8, &s_ops, &set), -1);
    cr_expect_eq (set.count, 2);
}

//  --------------------------------------------------------------------------
//  A resolver that does not answer holds nobody
//
//  The test's own network namespace and view of /etc/resolv.conf (it runs
//  in a process of its own): the only name server is a UDP socket of the
//  test's, which answers only when told. Without the privileges to make
//  namespaces, the test says so and passes nothing off as checked.

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#define DNS_PORT 53
#define DNS_HEADER 12
#define DNS_MAX 512

//  This namespace's loopback up, and a resolv.conf naming 127.0.0.1 only
//  (one attempt, a 30 s timeout: a blocking lookup would hold for that).
static bool
s_private_resolver (void)
{
    if (unshare (CLONE_NEWNS | CLONE_NEWNET) != 0)
        return false;
    int fd = socket (AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr = { 0 };
    snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    bool up = fd >= 0 && ioctl (fd, SIOCGIFFLAGS, &ifr) == 0
           && (ifr.ifr_flags |= IFF_UP, ioctl (fd, SIOCSIFFLAGS, &ifr) == 0);
    if (fd >= 0)
        close (fd);
    char conf [] = "/tmp/sluice-resolv-XXXXXX";
    int cfd = mkstemp (conf);
    if (!up || cfd < 0)
        return false;
    const char *text = "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n";
    bool ok = write (cfd, text, strlen (text)) == (ssize_t) strlen (text);
    close (cfd);
    ok = ok && mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0
            && mount (conf, "/etc/resolv.conf", NULL, MS_BIND, NULL) == 0;
    unlink (conf);
    return ok;
}

//  Wait for one query on fd, then answer it with one A record (addr).
static bool
s_answer_one (int fd, const char *addr, int wait_ms)
{
    struct timeval tv = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t q [DNS_MAX];
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    ssize_t n = recvfrom (fd, q, sizeof q, 0, (struct sockaddr *) &from, &len);
    if (n <= DNS_HEADER)
        return false;
    uint8_t r [DNS_MAX];
    memcpy (r, q, (size_t) n);
    r [2] = 0x81;                       //  a response, recursion desired
    r [3] = 0x80;                       //  recursion available, no error
    r [6] = 0, r [7] = 1;               //  one answer
    r [8] = r [9] = r [10] = r [11] = 0;
    size_t at = (size_t) n;
    const uint8_t answer [] = { 0xc0, DNS_HEADER, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4 };
    memcpy (r + at, answer, sizeof answer);
    at += sizeof answer;
    inet_pton (AF_INET, addr, r + at);
    at += 4;
    return sendto (fd, r, at, 0, (struct sockaddr *) &from, len) == (ssize_t) at;
}

Test (sl_resolve, a_resolver_that_does_not_answer_holds_nobody)
{
    if (!s_private_resolver ()) {
        cr_log_warn ("skipped: no namespaces here (%s): needs root", strerror (errno));
        cr_skip_test ();
    }
    int dns = socket (AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (DNS_PORT),
                             .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    cr_assert_eq (bind (dns, (struct sockaddr *) &a, sizeof a), 0, "%s", strerror (errno));
    char out [256] = "";
    const char *why = NULL;
    //  The server is silent: the call comes back saying so, not the
    //  resolver's timeout (30 s) later with its error.
    cr_expect_eq (sl_resolve_name ("tcp://", "judge.slow.test", "5553", s_collect, out, &why), -1);
    cr_expect_str_eq (why, "the resolver has not answered yet");
    cr_expect_str_eq (out, "");
    //  The question reached the server meanwhile; its answer is the next
    //  call's.
    cr_assert (s_answer_one (dns, "10.1.2.3", 5000), "the resolver asked the server");
    int rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++)
        rc = sl_resolve_name ("tcp://", "judge.slow.test", "5553", s_collect, out, &why);
    cr_expect_eq (rc, 0, "%s", why);
    cr_expect_str_eq (out, "tcp://10.1.2.3:5553 ");
    //  A later lookup the server leaves unanswered: the last answer stands.
    out [0] = 0;
    cr_expect_eq (sl_resolve_name ("tcp://", "judge.slow.test", "5553", s_collect, out, &why), 0);
    cr_expect_str_eq (out, "tcp://10.1.2.3:5553 ", "the addresses of the last answer");
    close (dns);
}
