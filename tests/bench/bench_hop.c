/*  Benchmark: what one hop of the bus costs at a slow, steady pace.

    A paced stream crosses four hops between sluice's processes, and at
    one chunk per millisecond every chunk wakes each of them from idle.
    This measures that floor without any of sluice's own work: two
    processes, a DEALER sending one 240-byte message every millisecond to a
    ROUTER (each process with its own ZeroMQ context and I/O thread, as
    between two stages), over tcp:// and ipc://, in plaintext and with
    CURVE. It prints the CPU time of both processes per message (all their
    threads: getrusage) and their context switches per message, and the
    time from send to receipt (p50): median and range of three rounds,
    the variants taking turns.

    The sender's own pacing (a timer wake-up per message) is measured
    alone first and left out of the figures.
*/
#include <czmq.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOP_MESSAGES 1000
#define HOP_PACE_US 1000
#define HOP_SIZE 240                    //  about a chunk's frame to the gateway
#define HOP_TIMEOUT_MS 10000
#define HOP_ROUNDS 3

typedef struct {
    double cpu_us;                      //  both processes, per message
    double csw;                         //  both processes, per message
    double latency_p50_us;
} s_result_t;

static double
s_rusage_cpu_us (const struct rusage *r)
{
    return (double) r->ru_utime.tv_sec * 1e6 + (double) r->ru_utime.tv_usec
         + (double) r->ru_stime.tv_sec * 1e6 + (double) r->ru_stime.tv_usec;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

//  Sleep until *next plus one pace, and move *next on: one wake-up per
//  message, as a reactor's timer gives.
static void
s_sleep_until (struct timespec *next)
{
    next->tv_nsec += HOP_PACE_US * 1000L;
    if (next->tv_nsec >= 1000000000L) {
        next->tv_nsec -= 1000000000L;
        next->tv_sec++;
    }
    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) != 0)
        ;
}

//  CPU and context switches of the pacing alone, per message.
static void
s_pace_only (double *cpu_us, double *csw)
{
    struct rusage r0, r1;
    getrusage (RUSAGE_SELF, &r0);
    struct timespec next;
    clock_gettime (CLOCK_MONOTONIC, &next);
    for (int i = 0; i < HOP_MESSAGES; i++)
        s_sleep_until (&next);
    getrusage (RUSAGE_SELF, &r1);
    *cpu_us = (s_rusage_cpu_us (&r1) - s_rusage_cpu_us (&r0)) / HOP_MESSAGES;
    *csw = (double) (r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw) / HOP_MESSAGES;
}

//  The receiving side, in the child: counts messages, writes the latency
//  of each (now - the stamp it carries) into the pipe to the parent at the
//  end.
static void
s_receiver (const char *transport, bool curve, zcert_t *server, int report_fd, int ready_fd)
{
    zsock_t *router = zsock_new (ZMQ_ROUTER);
    if (curve) {
        zcert_apply (server, router);
        zsock_set_curve_server (router, 1);
    }
    char endpoint [128];
    if (strcmp (transport, "tcp") == 0)
        snprintf (endpoint, sizeof endpoint, "tcp://127.0.0.1:*");
    else
        snprintf (endpoint, sizeof endpoint, "ipc:///tmp/sluice-bench-hop-%d.ipc", (int) getpid ());
    if (zsock_bind (router, "%s", endpoint) < 0)
        _exit (2);
    const char *bound = zsock_endpoint (router);
    if (write (ready_fd, bound, strlen (bound) + 1) < 0)
        _exit (2);
    static double latency [HOP_MESSAGES];
    int got = 0;
    zpoller_t *poller = zpoller_new (router, NULL);
    while (got < HOP_MESSAGES) {
        if (!zpoller_wait (poller, HOP_TIMEOUT_MS))
            break;
        zmsg_t *m = zmsg_recv (router);
        if (!m)
            break;
        zframe_t *id = zmsg_pop (m);
        zframe_t *data = zmsg_pop (m);
        int64_t stamp = 0;
        if (data && zframe_size (data) >= sizeof stamp)
            memcpy (&stamp, zframe_data (data), sizeof stamp);
        latency [got++] = (double) (zclock_usecs () - stamp);
        zframe_destroy (&id);
        zframe_destroy (&data);
        zmsg_destroy (&m);
    }
    zpoller_destroy (&poller);
    zsock_destroy (&router);
    if (strncmp (bound, "ipc://", 6) == 0)
        unlink (bound + 6);
    if (write (report_fd, &got, sizeof got) < 0 || write (report_fd, latency, sizeof latency [0] * (size_t) got) < 0)
        _exit (2);
    _exit (0);
}

//  One run: the parent sends, the child receives. 0 ok.
static int
s_run (const char *transport, bool curve, double pace_cpu, double pace_csw, s_result_t *out)
{
    zcert_t *server = zcert_new ();
    zcert_t *client = zcert_new ();
    int report [2], ready [2];
    if (pipe (report) || pipe (ready))
        return -1;
    pid_t child = fork ();
    if (child == 0) {
        close (report [0]);
        close (ready [0]);
        s_receiver (transport, curve, server, report [1], ready [1]);
    }
    close (report [1]);
    close (ready [1]);
    char endpoint [128] = "";
    if (read (ready [0], endpoint, sizeof endpoint) <= 0)
        return -1;
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    if (curve) {
        zcert_apply (client, dealer);
        zsock_set_curve_serverkey (dealer, zcert_public_txt (server));
    }
    zsock_connect (dealer, "%s", endpoint);
    //  The handshake and the first message are not part of the figure.
    char payload [HOP_SIZE];
    memset (payload, 'x', sizeof payload);
    struct rusage r0, r1, c1;
    getrusage (RUSAGE_SELF, &r0);
    struct timespec next;
    clock_gettime (CLOCK_MONOTONIC, &next);
    for (int i = 0; i < HOP_MESSAGES; i++) {
        s_sleep_until (&next);
        int64_t stamp = zclock_usecs ();
        memcpy (payload, &stamp, sizeof stamp);
        zmq_send (zsock_resolve (dealer), payload, sizeof payload, 0);
    }
    int got = 0;
    static double latency [HOP_MESSAGES];
    if (read (report [0], &got, sizeof got) != sizeof got)
        got = 0;
    size_t want = sizeof latency [0] * (size_t) got, have = 0;
    while (have < want) {
        ssize_t n = read (report [0], (char *) latency + have, want - have);
        if (n <= 0)
            break;
        have += (size_t) n;
    }
    getrusage (RUSAGE_SELF, &r1);
    int status = 0;
    waitpid (child, &status, 0);
    getrusage (RUSAGE_CHILDREN, &c1);
    zsock_destroy (&dealer);
    close (report [0]);
    close (ready [0]);
    zcert_destroy (&server);
    zcert_destroy (&client);
    if (got != HOP_MESSAGES)
        return -1;
    //  The child's usage accumulates over runs: keep the previous total.
    static double child_cpu_before = 0, child_csw_before = 0;
    double child_cpu = s_rusage_cpu_us (&c1) - child_cpu_before;
    double child_csw = (double) (c1.ru_nvcsw + c1.ru_nivcsw) - child_csw_before;
    child_cpu_before += child_cpu;
    child_csw_before += child_csw;
    double self_cpu = s_rusage_cpu_us (&r1) - s_rusage_cpu_us (&r0);
    double self_csw = (double) (r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw);
    out->cpu_us = (self_cpu + child_cpu) / HOP_MESSAGES - pace_cpu;
    out->csw = (self_csw + child_csw) / HOP_MESSAGES - pace_csw;
    qsort (latency, (size_t) got, sizeof latency [0], s_cmp);
    out->latency_p50_us = latency [got / 2];
    return 0;
}

int
main (void)
{
    zsys_init ();
    zsys_set_linger (0);
    printf ("one bus hop, one %d-byte message every %d us, %d messages; both processes, all threads:\n",
            HOP_SIZE, HOP_PACE_US, HOP_MESSAGES);
    static const struct { const char *transport; bool curve; } runs [] = {
        { "tcp", true }, { "ipc", true }, { "tcp", false }, { "ipc", false },
    };
    double pace_cpu, pace_csw;
    s_pace_only (&pace_cpu, &pace_csw);
    printf ("  (the sender's pacing alone: %.1f us of CPU and %.1f context switches per message, left out)\n",
            pace_cpu, pace_csw);
    int rc = 0;
    enum { VARIANTS = sizeof runs / sizeof runs [0] };
    s_result_t results [HOP_ROUNDS][VARIANTS];
    for (int round = 0; round < HOP_ROUNDS; round++)
        for (size_t i = 0; i < VARIANTS; i++)
            if (s_run (runs [i].transport, runs [i].curve, pace_cpu, pace_csw, &results [round][i])) {
                printf ("  %s %s failed\n", runs [i].transport, runs [i].curve ? "CURVE" : "plaintext");
                return 1;
            }
    printf ("  median (range) of %d rounds:\n", HOP_ROUNDS);
    for (size_t i = 0; i < VARIANTS; i++) {
        double cpu [HOP_ROUNDS], csw [HOP_ROUNDS], lat [HOP_ROUNDS];
        for (int round = 0; round < HOP_ROUNDS; round++) {
            cpu [round] = results [round][i].cpu_us;
            csw [round] = results [round][i].csw;
            lat [round] = results [round][i].latency_p50_us;
        }
        qsort (cpu, HOP_ROUNDS, sizeof cpu [0], s_cmp);
        qsort (csw, HOP_ROUNDS, sizeof csw [0], s_cmp);
        qsort (lat, HOP_ROUNDS, sizeof lat [0], s_cmp);
        printf ("  %s %-9s %5.1f us of CPU (%.1f-%.1f), %3.1f context switches (%.1f-%.1f) per message; "
                "latency p50 %4.1f us (%.1f-%.1f)\n", runs [i].transport, runs [i].curve ? "CURVE" : "plaintext",
                cpu [HOP_ROUNDS / 2], cpu [0], cpu [HOP_ROUNDS - 1], csw [HOP_ROUNDS / 2], csw [0],
                csw [HOP_ROUNDS - 1], lat [HOP_ROUNDS / 2], lat [0], lat [HOP_ROUNDS - 1]);
    }
    return rc;
}
