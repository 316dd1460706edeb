/*  Integration: graceful drain (SIGTERM) and rolling updates.

    gateway: SIGTERM with a stream in flight: /readyz 503 while /healthz
    stays 200 (on its metrics port: the client port stops accepting at
    once, so a new connection is refused), the stream completes
    byte-identical to an undisturbed run, and the gateway exits 0 after
    it. With a short --drain-ms the stream still running ends with a clean
    error in its dialect; a second SIGTERM ends it at once, exit 0.

    rolling: two instances of every stage under a steady load of
    concurrent streams; for each kind in turn a new instance starts, then
    an old one gets SIGTERM and must exit 0 by itself. Every stream of the
    load completes byte-identical to the same request in a run without the
    update. SLUICE_DRAIN_ROUNDS rounds per kind (make test: 1, make chaos:
    10); a summary line: streams across each kind's update, and the
    longest pause a client saw between two reads, against the undisturbed
    run's.

    last instance: SIGTERM to the only aggregator with streams in flight
    and a short --drain-ms: every stream completes or ends with a clean
    error; none hangs.
*/
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "tests/integration/cluster.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"

#define DRAIN_DELAY_MS 20               //  the mock's pace per event
#define DRAIN_TERM_AT_MS 400            //  SIGTERM this long into a run
#define DRAIN_RUN_LIMIT_MS 60000
#define DRAIN_EXIT_MS 30000             //  the longest wait for a drained process to exit
#define ROLL_STREAMS_PER_ROUND 24       //  streams started per round of updates
#define ROLL_CHUNKS 40                  //  text chunks per stream (then two tool calls): ~1 s at the pace
#define ROLL_STEP_MS 1000               //  one kind's update: the new instance, then SIGTERM to an old one
#define ROLL_TERM_AFTER_MS 500          //  from the new instance's start to the old one's SIGTERM
#define ROLL_MAX_ROUNDS 20
#define ROLL_KINDS CL_STAGES            //  ingest, aggregator, judge, emitter

//  --------------------------------------------------------------------------
//  Helpers

//  true when a TCP connection to 127.0.0.1:port is refused.
static bool
s_refused (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    bool refused = connect (fd, (struct sockaddr *) &addr, sizeof addr) != 0;
    close (fd);
    return refused;
}

//  The longest time between two reads of a client (its first byte's wait
//  not counted).
static int64_t
s_longest_pause (const load_client_t *c)
{
    int64_t worst = 0;
    for (size_t a = 1; a < c->arrival_count; a++)
        if (c->arrivals [a] - c->arrivals [a - 1] > worst)
            worst = c->arrivals [a] - c->arrivals [a - 1];
    return worst;
}

//  --------------------------------------------------------------------------
//  The gateway

typedef struct {
    sluice_stack_t *stack;
    int ready_status;                   //  /readyz on the metrics port after SIGTERM
    int health_status;                  //  /healthz there
    bool refused;                       //  a new connection to the client port
    int terms;                          //  SIGTERMs to send (a second one cuts the drain)
} s_gw_t;

static void
s_term_gateway (void *arg, int round)
{
    (void) round;
    s_gw_t *g = arg;
    kill (g->stack->gateway->pid, SIGTERM);
    //  The process reads its signal in its next reactor turn: readiness
    //  is polled for, bounded. (A second signal sent before it read the
    //  first would merge with it.)
    int port = atoi (g->stack->metrics [5]);
    sl_buf_t body = { 0 };
    int64_t deadline = zclock_mono () + 5000;
    do {
        sl_buf_reset (&body);
        g->ready_status = http_request (port, "GET", "/readyz", NULL, NULL, &body, 2000);
    } while (g->ready_status != 503 && zclock_mono () < deadline);
    sl_buf_reset (&body);
    g->health_status = http_request (port, "GET", "/healthz", NULL, NULL, &body, 2000);
    sl_buf_free (&body);
    g->refused = s_refused (g->stack->http_port);
    if (g->terms > 1)
        kill (g->stack->gateway->pid, SIGTERM);
}

//  A gateway drained with drain_ms and sent terms SIGTERMs mid-stream;
//  the stream's client and the gateway's exit status.
static int
s_drain_gateway (const char *drain_ms, int terms, int chunks, load_client_t **run, load_client_t **reference,
                 s_gw_t *g)
{
    const char *gw_args [] = { "--drain-ms", drain_ms, NULL };
    stack_opts_t opts = { .mock_delay_ms = DRAIN_DELAY_MS, .gateway_args = gw_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    *reference = load_clients (1, "mock-bench", chunks);
    load_run (s->http_port, *reference, 1, NULL, 0, DRAIN_RUN_LIMIT_MS);
    cr_assert (load_complete (*reference), "the stream completes without a drain");

    *g = (s_gw_t) { .stack = s, .terms = terms };
    *run = load_clients (1, "mock-bench", chunks);
    load_action_t term = { DRAIN_TERM_AT_MS, s_term_gateway, g, 0 };
    load_run (s->http_port, *run, 1, &term, 1, DRAIN_RUN_LIMIT_MS);
    int rc = proc_wait_exit (s->gateway, DRAIN_EXIT_MS);
    if (rc != 0)
        proc_dump (s->gateway);
    unlink (s->gateway->log_path);
    free (s->gateway);
    s->gateway = NULL;
    cr_expect_eq (stack_stop (s), 0, "the rest of the stack exits cleanly");
    return rc;
}

Test (drain, gateway_finishes_its_streams_then_exits, .timeout = 120)
{
    load_client_t *run, *reference;
    s_gw_t g;
    //  ~3 s of stream: the SIGTERM comes well before its end.
    int rc = s_drain_gateway ("30000", 1, 150, &run, &reference, &g);
    cr_expect_eq (g.ready_status, 503, "/readyz says draining");
    cr_expect_eq (g.health_status, 200, "/healthz stays ok during the drain");
    cr_expect (g.refused, "a new client connection is refused");
    cr_expect (load_complete (run), "the stream in flight completes");
    cr_expect (load_identical (run, reference), "byte-identical to the stream without a drain");
    cr_expect_eq (rc, 0, "the gateway exits 0 once its stream ended");
    load_clients_free (run, 1);
    load_clients_free (reference, 1);
}

Test (drain, gateway_ends_what_drain_ms_cuts_off_cleanly, .timeout = 120)
{
    load_client_t *run, *reference;
    s_gw_t g;
    int rc = s_drain_gateway ("300", 1, 250, &run, &reference, &g);
    cr_expect (load_failed_cleanly (run), "the stream ends with an error event, not a cut");
    cr_expect (memmem (run->body.data, run->body.len, "shutting_down", 13) != NULL,
               "the error says why, in the OpenAI dialect's error event");
    cr_expect_eq (rc, 0, "the gateway exits 0");
    load_clients_free (run, 1);
    load_clients_free (reference, 1);
}

Test (drain, a_second_sigterm_ends_the_drain_at_once, .timeout = 120)
{
    load_client_t *run, *reference;
    s_gw_t g;
    //  A drain of 60 s and a stream of ~5 s: only the second signal can
    //  end both this soon (the run is bounded well below either).
    int rc = s_drain_gateway ("60000", 2, 250, &run, &reference, &g);
    cr_expect (load_failed_cleanly (run), "the stream ends with an error event, not a cut");
    cr_expect_eq (rc, 0, "the gateway exits 0");
    cr_expect_lt (run->body.len, reference->body.len, "the stream ended before it would have completed");
    load_clients_free (run, 1);
    load_clients_free (reference, 1);
}

//  --------------------------------------------------------------------------
//  Rolling update

typedef struct {
    cluster_t *cluster;
    int spare [ROLL_KINDS];             //  the slot with no instance, per kind
    int victim [ROLL_MAX_ROUNDS][ROLL_KINDS];
    proc_t *drained [ROLL_MAX_ROUNDS][ROLL_KINDS];  //  the old instances sent SIGTERM
    int64_t termed_at [ROLL_MAX_ROUNDS][ROLL_KINDS];
    int start_failures;
} s_roll_t;

//  round encodes (round, kind): a new instance of the kind in its spare slot.
static void
s_roll_start (void *arg, int step)
{
    s_roll_t *r = arg;
    int kind = step % ROLL_KINDS;
    if (cluster_start_instance (r->cluster, kind, r->spare [kind], false))
        r->start_failures++;
}

//  Then SIGTERM to the oldest instance of the kind; its slot is the spare.
static void
s_roll_term (void *arg, int step)
{
    s_roll_t *r = arg;
    int round = step / ROLL_KINDS, kind = step % ROLL_KINDS;
    int slot = r->victim [round][kind];
    proc_t *old = r->cluster->procs [kind][slot];
    r->drained [round][kind] = old;     //  ours now: the slot is free for the next new instance
    r->cluster->procs [kind][slot] = NULL;
    r->termed_at [round][kind] = zclock_mono ();
    kill (old->pid, SIGTERM);
    r->spare [kind] = slot;
}

Test (drain, rolling_update_of_every_kind_loses_no_stream, .timeout = 600)
{
    int rounds = 1;
    const char *env = getenv ("SLUICE_DRAIN_ROUNDS");
    if (env && atoi (env) > 0)
        rounds = atoi (env) < ROLL_MAX_ROUNDS ? atoi (env) : ROLL_MAX_ROUNDS;
    const char *drain [] = { "--drain-ms", "30000", NULL };
    cluster_opts_t opts = {
        .count = { 2, 2, 2, 2 }, .slots = { 3, 3, 3, 3 }, .mock_delay_ms = DRAIN_DELAY_MS,
        .policy = "deploy/policy.yaml", .stage_args = drain, .ingest_args = drain
    };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster, "two instances of every stage came up");

    //  A steady load: a stream starts every period, each ~1 s long, so
    //  streams are in flight at every instance when it is told to stop.
    int steps = rounds * ROLL_KINDS;
    int n = rounds * ROLL_STREAMS_PER_ROUND;
    int64_t span = (int64_t) steps * ROLL_STEP_MS + ROLL_STEP_MS;
    load_client_t *base = load_clients (n, "mock-bench", ROLL_CHUNKS);
    load_client_t *run = load_clients (n, "mock-bench", ROLL_CHUNKS);
    for (int i = 0; i < n; i++)
        base [i].start_at = run [i].start_at = span * i / n;
    load_run (cluster->http_port [0], base, n, NULL, 0, DRAIN_RUN_LIMIT_MS * rounds);
    int base_ok = 0;
    for (int i = 0; i < n; i++)
        base_ok += load_complete (&base [i]);
    cr_assert_eq (base_ok, n, "every stream completes without an update");

    s_roll_t r = { .cluster = cluster };
    for (int k = 0; k < ROLL_KINDS; k++)
        r.spare [k] = 2;
    //  The oldest instance goes: slots 0, 1, then the one started first.
    int order [ROLL_KINDS][3];
    for (int k = 0; k < ROLL_KINDS; k++)
        order [k][0] = 0, order [k][1] = 1, order [k][2] = 2;
    load_action_t *actions = calloc ((size_t) steps * 2, sizeof (load_action_t));
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < ROLL_KINDS; k++) {
            int step = round * ROLL_KINDS + k;
            r.victim [round][k] = order [k][round % 3];
            int64_t at = ROLL_STEP_MS / 2 + (int64_t) step * ROLL_STEP_MS;
            actions [2 * step] = (load_action_t) { at, s_roll_start, &r, step };
            actions [2 * step + 1] = (load_action_t) { at + ROLL_TERM_AFTER_MS, s_roll_term, &r, step };
        }
    load_run (cluster->http_port [0], run, n, actions, steps * 2, DRAIN_RUN_LIMIT_MS * rounds);
    free (actions);
    cr_expect_eq (r.start_failures, 0, "every new instance started");

    //  Every old instance exits 0 by itself.
    int exited = 0;
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < ROLL_KINDS; k++) {
            proc_t *p = r.drained [round][k];
            if (!p)
                continue;
            int rc = p->pid > 0 ? proc_wait_exit (p, DRAIN_EXIT_MS) : 0;
            if (rc != 0)
                proc_dump (p);
            exited += rc == 0;
            free (p);
        }
    cr_expect_eq (exited, steps, "every instance told to stop exits 0 by itself");

    int complete = 0, identical = 0;
    int64_t pause = 0, base_pause = 0;
    for (int i = 0; i < n; i++) {
        complete += load_complete (&run [i]);
        bool same = load_identical (&run [i], &base [i]);
        identical += same;
        if (!same)
            load_describe ("rolling", i, &run [i], &base [i]);
        if (s_longest_pause (&run [i]) > pause)
            pause = s_longest_pause (&run [i]);
        if (s_longest_pause (&base [i]) > base_pause)
            base_pause = s_longest_pause (&base [i]);
    }
    //  Streams across each kind's update: running when its old instance
    //  got SIGTERM.
    static const char *kinds [ROLL_KINDS] = { "ingest", "aggregator", "judge", "emitter" };
    char across [256];
    size_t at = 0;
    for (int k = 0; k < ROLL_KINDS; k++) {
        int count = 0;
        for (int round = 0; round < rounds; round++)
            for (int i = 0; i < n; i++) {
                load_client_t *c = &run [i];
                int64_t t = r.termed_at [round][k];
                if (c->arrival_count && t && c->arrivals [0] <= t && c->arrivals [c->arrival_count - 1] >= t)
                    count++;
            }
        at += (size_t) snprintf (across + at, sizeof across - at, "%s%s %d", k ? ", " : "", kinds [k], count);
    }
    fprintf (stderr, "drain: %d round(s) of rolling updates (new instance, then SIGTERM to an old one, per kind); "
                     "streams across the update: %s; %d/%d complete, %d/%d byte-identical; longest pause "
                     "between two reads %lld ms (without updates %lld ms)\n",
             rounds, across, complete, n, identical, n, (long long) pause, (long long) base_pause);
    cr_expect_eq (complete, n, "every stream completes across the updates");
    cr_expect_eq (identical, n, "every stream is byte-identical to the run without updates");
    load_clients_free (base, n);
    load_clients_free (run, n);
    cr_expect_eq (cluster_stop (cluster), 0, "every instance still running exits cleanly");
}

//  --------------------------------------------------------------------------
//  The last instance of a stage

static void
s_term_aggregator (void *arg, int round)
{
    (void) round;
    cluster_t *c = arg;
    kill (c->procs [CL_AGGREGATOR][0]->pid, SIGTERM);
}

Test (drain, last_instance_of_a_stage_ends_its_streams_cleanly, .timeout = 180)
{
    const char *drain [] = { "--drain-ms", "500", NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = DRAIN_DELAY_MS, .stage_args = drain };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster);
    enum { N = 8 };
    load_client_t *clients = load_clients (N, "mock-bench", 150);
    for (int i = 0; i < N; i++)
        clients [i].timeout_ms = DRAIN_RUN_LIMIT_MS;
    load_action_t term = { DRAIN_TERM_AT_MS, s_term_aggregator, cluster, 0 };
    load_run (cluster->http_port [0], clients, N, &term, 1, DRAIN_RUN_LIMIT_MS + 5000);
    int ended = 0, failed = 0;
    for (int i = 0; i < N; i++) {
        bool ok = load_complete (&clients [i]);
        bool clean = !ok && load_failed_cleanly (&clients [i]);
        ended += ok || clean;
        failed += clean;
        if (!ok && !clean)
            load_describe ("last-instance", i, &clients [i], &(load_client_t) { 0 });
    }
    cr_expect_eq (ended, N, "every stream completed or ended with a clean error; none hung");
    cr_expect_gt (failed, 0, "the drain of the last aggregator cut streams off (they were longer than it)");
    int rc = proc_wait_exit (cluster->procs [CL_AGGREGATOR][0], DRAIN_EXIT_MS);
    cr_expect_eq (rc, 0, "the aggregator exits 0");
    load_clients_free (clients, N);
    cluster_stop (cluster);
}
