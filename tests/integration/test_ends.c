/*  Integration: every way a stream ends frees it at every hop, in bounded
    time, and a process never holds more streams than its bound.

    every_way_frees_every_hop: one stack; streams that complete, fail
    upstream mid-stream, are left by their client, are terminated by the
    policy, or go over the aggregator's --max-bytes. After each, every
    process is back to no stream (sluice_streams_active) well within the
    default expiry: each of these ends is explicit.

    The others end streams in ways no message may report, and set the
    expiry short (--stream-expiry-ms): an ingest that dies (the later
    stages let go of its streams when they expire), a gateway that dies
    (the ingest ends them), a replay abandoned (the ingest ends them), an
    instance stopped while its streams were replayed elsewhere (the stale
    epochs it keeps expire). Expiries are counted.

    a_start_flood_is_refused: --max-streams on the stages; a flood of
    streams that hold their place is refused past the bound (503, counted)
    while real clients, retrying a 503 as the SDKs do, are served.
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/cluster.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"

#define ENDS_FREE_MS 10000              //  an explicit end reaches every hop within this
#define ENDS_EXPIRY "2000"              //  the short expiry of the tests that rely on it
#define ENDS_LIMIT_MS 60000

static const char *s_hops [] = { "ingest", "aggregator", "judge", "emitter" };

//  Wait until the gateway (at its client port) and every stage instance
//  hold no stream; false (with the one that does) when that does not
//  happen within wait_ms.
static bool
s_cluster_free (cluster_t *c, int64_t wait_ms, char *which, size_t size)
{
    int64_t deadline = zclock_mono () + wait_ms;
    while (true) {
        bool free_everywhere = true;
        double v;
        for (int g = 0; g < c->opts.gateways && free_everywhere; g++)
            if (c->gateway [g] && c->gateway [g]->pid > 0
            &&  (v = metric_value (c->http_port [g], "sluice_streams_active")) != 0) {
                free_everywhere = false;
                snprintf (which, size, "gateway-%d holds %.0f", g, v);
            }
        for (int s = CL_INGEST; s <= CL_EMITTER && free_everywhere; s++)
            for (int i = 0; i < c->opts.count [s] && free_everywhere; i++)
                if (c->procs [s][i] && c->procs [s][i]->pid > 0
                &&  (v = metric_value (c->metrics [s][i], "sluice_streams_active")) != 0) {
                    free_everywhere = false;
                    snprintf (which, size, "%s-%d holds %.0f", s_hops [s], i, v);
                }
        if (free_everywhere)
            return true;
        if (zclock_mono () > deadline)
            return false;
        zclock_sleep (20);
    }
}

static double
s_sum (cluster_t *c, int stage, const char *metric)
{
    double sum = 0;
    for (int i = 0; i < c->opts.count [stage]; i++)
        if (c->procs [stage][i] && c->procs [stage][i]->pid > 0)
            sum += metric_value (c->metrics [stage][i], metric);
    return sum;
}

//  --------------------------------------------------------------------------
//  Explicit ends

static const char s_policy [] =
    "version: 1\n"
    "default: allow\n"
    "rules:\n"
    "  - id: end-here\n"
    "    tool: get_weather\n"
    "    headers: [{name: x-sluice-test, equals: terminate}]\n"
    "    action: terminate\n"
    "    message: \"sluice ended this response (rule {rule}).\"\n";

typedef struct {
    const char *name;
    const char *model;
    int chunks;
    bool terminate;
    int timeout_ms;                     //  the client gives up after this long
    const char *expect;                 //  in the body, or NULL
} s_way_t;

static const s_way_t s_ways [] = {
    { "complete", "mock-tools", 0, false, ENDS_LIMIT_MS, "[DONE]" },
    { "upstream error", "mock-error", 0, false, ENDS_LIMIT_MS, "\"error\"" },
    { "client left", "mock-stall", 0, false, 1500, NULL },
    { "terminated", "mock-tools", 0, true, ENDS_LIMIT_MS, "sluice ended this response" },
    { "too large", "mock-bench", 5000, false, ENDS_LIMIT_MS, "stream_too_large" },
};

//  Every process of the stack holds no stream.
static bool
s_stack_free (sluice_stack_t *s, char *which, size_t size)
{
    static const char *names [] = { "", "ingest", "aggregator", "judge", "emitter", "gateway" };
    int64_t deadline = zclock_mono () + ENDS_FREE_MS;
    while (true) {
        bool free_everywhere = true;
        for (int hop = 1; hop <= 5 && free_everywhere; hop++) {
            double v = metric_value (atoi (s->metrics [hop]), "sluice_streams_active");
            if (v != 0) {
                free_everywhere = false;
                snprintf (which, size, "the %s holds %.0f", names [hop], v);
            }
        }
        if (free_everywhere)
            return true;
        if (zclock_mono () > deadline)
            return false;
        zclock_sleep (20);
    }
}

Test (ends, every_way_frees_every_hop, .timeout = 240)
{
    const char *agg_args [] = { "--max-bytes", "20000", NULL };
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 5, .aggregator_args = agg_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    for (size_t w = 0; w < sizeof s_ways / sizeof s_ways [0]; w++) {
        const s_way_t *way = &s_ways [w];
        char body [256];
        snprintf (body, sizeof body, "{\"model\":\"%s\",\"stream\":true,\"max_tokens\":%d,"
                                     "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", way->model, way->chunks);
        const char *terminate [] = { "x-sluice-test: terminate", NULL };
        sl_buf_t out = { 0 };
        http_request (s->http_port, "POST", "/v1/chat/completions", body, way->terminate ? terminate : NULL,
                      &out, way->timeout_ms);
        if (way->expect)
            cr_expect (strstr (sl_buf_cstr (&out), way->expect) != NULL, "%s: the client saw %s: %.300s",
                       way->name, way->expect, sl_buf_cstr (&out));
        sl_buf_free (&out);
        char which [64] = "";
        cr_expect (s_stack_free (s, which, sizeof which), "%s: every hop let go of the stream (%s)",
                   way->name, which);
    }
    cr_expect_eq (metric_value (atoi (s->metrics [2]), "sluice_streams_too_large_total"), 1);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  Ends no message reports

static void
s_kill (void *arg, int round)
{
    (void) round;
    cluster_t *c = arg;
    cluster_kill (c, CL_INGEST, 0);
}

Test (ends, a_dead_ingest_s_streams_expire_downstream, .timeout = 120)
{
    const char *stage_args [] = { "--stream-expiry-ms", ENDS_EXPIRY, NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = 20, .stage_args = stage_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    enum { N = 5 };
    load_client_t *clients = load_clients (N, "mock-bench", 200);
    load_action_t kill = { 600, s_kill, c, 0 };
    load_run (c->http_port [0], clients, N, &kill, 1, ENDS_LIMIT_MS);
    int clean = 0;
    for (int i = 0; i < N; i++)
        clean += load_failed_cleanly (&clients [i]);
    cr_expect_eq (clean, N, "every client heard its ingest died");
    //  No message will end these streams at the later stages: the
    //  aggregator's expiry does, and its error and end free the rest.
    char which [64] = "";
    cr_expect (s_cluster_free (c, atoi (ENDS_EXPIRY) + ENDS_FREE_MS, which, sizeof which),
               "every hop let go of the dead ingest's streams (%s)", which);
    cr_expect_eq (s_sum (c, CL_AGGREGATOR, "sluice_streams_expired_total"), N, "each expired once, counted");
    load_clients_free (clients, N);
    cr_expect_eq (cluster_stop (c), 0);
}

static void
s_kill_gateway (void *arg, int round)
{
    (void) round;
    cluster_kill_gateway ((cluster_t *) arg, 0);
}

Test (ends, a_dead_gateway_s_streams_end_everywhere, .timeout = 120)
{
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = 20 };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    enum { N = 5 };
    load_client_t *clients = load_clients (N, "mock-bench", 1000);
    load_action_t kill = { 600, s_kill_gateway, c, 0 };
    load_run (c->http_port [0], clients, N, &kill, 1, ENDS_LIMIT_MS);
    //  The ingest hears no acks and ends the streams itself: explicitly,
    //  long before any expiry (the default, 10 minutes).
    char which [64] = "";
    cr_expect (s_cluster_free (c, ENDS_FREE_MS, which, sizeof which), "every hop let go (%s)", which);
    cr_expect_eq (s_sum (c, CL_AGGREGATOR, "sluice_streams_expired_total"), 0, "nothing had to expire");
    load_clients_free (clients, N);
    cluster_stop (c);
}

static void
s_kill_judge (void *arg, int round)
{
    (void) round;
    cluster_kill ((cluster_t *) arg, CL_JUDGE, 0);
}

Test (ends, an_abandoned_replay_frees_every_hop, .timeout = 120)
{
    //  A replay log of one byte: no stream can be replayed.
    const char *ingest_args [] = { "--replay-log-max", "1", NULL };
    const char *stage_args [] = { "--stream-expiry-ms", ENDS_EXPIRY, NULL };
    cluster_opts_t opts = { .count = { 1, 1, 2, 1 }, .mock_delay_ms = 20, .ingest_args = ingest_args,
                            .stage_args = stage_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    enum { N = 10 };
    load_client_t *clients = load_clients (N, "mock-bench", 200);
    load_action_t kill = { 600, s_kill_judge, c, 0 };
    load_run (c->http_port [0], clients, N, &kill, 1, ENDS_LIMIT_MS);
    int complete = 0, clean = 0;
    for (int i = 0; i < N; i++) {
        complete += load_complete (&clients [i]);
        clean += load_failed_cleanly (&clients [i]);
    }
    cr_expect_eq (complete + clean, N, "each stream completed (the other judge's) or ended cleanly");
    cr_expect_gt (clean, 0, "the dead judge's streams could not be replayed");
    cr_expect_gt (s_sum (c, CL_INGEST, "sluice_streams_lost_total"), 0);
    char which [64] = "";
    cr_expect (s_cluster_free (c, atoi (ENDS_EXPIRY) + ENDS_FREE_MS, which, sizeof which),
               "every hop let go of the abandoned streams (%s)", which);
    load_clients_free (clients, N);
    cluster_stop (c);
}

//  The aggregator holding the most streams is stopped while they run; the
//  ingest replays its streams on the other one. What it keeps of them when
//  it runs again is stale, and nothing will ever end it: it expires.
static int s_stopped = -1;

static void
s_stop_aggregator (void *arg, int round)
{
    (void) round;
    cluster_t *c = arg;
    double a = metric_value (c->metrics [CL_AGGREGATOR][0], "sluice_streams_active");
    double b = metric_value (c->metrics [CL_AGGREGATOR][1], "sluice_streams_active");
    s_stopped = b > a ? 1 : 0;
    kill (c->procs [CL_AGGREGATOR][s_stopped]->pid, SIGSTOP);
}

static void
s_cont_aggregator (void *arg, int round)
{
    (void) round;
    kill (((cluster_t *) arg)->procs [CL_AGGREGATOR][s_stopped]->pid, SIGCONT);
}

Test (ends, stale_epochs_expire, .timeout = 120)
{
    const char *stage_args [] = { "--stream-expiry-ms", "3000", NULL };
    cluster_opts_t opts = { .count = { 1, 2, 1, 1 }, .mock_delay_ms = 20, .stage_args = stage_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    enum { N = 20 };
    load_client_t *base = load_clients (N, "mock-bench", 150);
    load_run (c->http_port [0], base, N, NULL, 0, ENDS_LIMIT_MS);
    load_client_t *run = load_clients (N, "mock-bench", 150);
    load_action_t acts [] = { { 500, s_stop_aggregator, c, 0 }, { 2000, s_cont_aggregator, c, 0 } };
    load_run (c->http_port [0], run, N, acts, 2, ENDS_LIMIT_MS);
    int identical = 0;
    for (int i = 0; i < N; i++)
        identical += load_complete (&run [i]) && load_identical (&run [i], &base [i]);
    cr_expect_eq (identical, N, "every stream completes byte-identical, replayed where it was stopped");
    cr_expect_gt (s_sum (c, CL_INGEST, "sluice_replays_total"), 0, "the stopped instance's streams were replayed");
    char which [64] = "";
    cr_expect (s_cluster_free (c, 3000 + ENDS_FREE_MS, which, sizeof which),
               "the stopped instance let go of the epochs replayed elsewhere (%s)", which);
    cr_expect_gt (metric_value (c->metrics [CL_AGGREGATOR][s_stopped], "sluice_streams_expired_total"), 0,
                  "its stale epochs expired, counted");
    load_clients_free (base, N);
    load_clients_free (run, N);
    cr_expect_eq (cluster_stop (c), 0);
}

//  --------------------------------------------------------------------------
//  A flood of starts

#define FLOOD_MAX "50"
#define FLOOD_STREAMS 300
#define FLOOD_REAL 20

Test (ends, a_start_flood_is_refused_while_clients_are_served, .timeout = 180)
{
    const char *stage_args [] = { "--max-streams", FLOOD_MAX, NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = 20, .stage_args = stage_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    int n = FLOOD_STREAMS + FLOOD_REAL;
    load_client_t *clients = load_clients (n, "mock-stall", 0);
    for (int i = 0; i < FLOOD_STREAMS; i++)
        clients [i].timeout_ms = 1500;  //  each holds its place, then leaves
    for (int i = FLOOD_STREAMS; i < n; i++) {
        snprintf (clients [i].request, sizeof clients [i].request,
                  "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"real %d\"}]}", i);
        clients [i].start_at = 300;     //  while the flood holds the stack
        clients [i].retries = 100;      //  a 503 is tried again, as the SDKs do
        clients [i].retry_ms = 100;
    }
    load_run (c->http_port [0], clients, n, NULL, 0, ENDS_LIMIT_MS);
    int refused = 0, held = 0, served = 0, retried = 0;
    for (int i = 0; i < FLOOD_STREAMS; i++) {
        if (clients [i].status == 503 && strstr (sl_buf_cstr (&clients [i].body), "overloaded_error"))
            refused++;
        else
        if (clients [i].result == CURLE_OPERATION_TIMEDOUT)
            held++;
    }
    for (int i = FLOOD_STREAMS; i < n; i++) {
        served += load_complete (&clients [i]);
        retried += clients [i].attempts - 1;
    }
    double counted = s_sum (c, CL_AGGREGATOR, "sluice_streams_refused_total")
                   + s_sum (c, CL_JUDGE, "sluice_streams_refused_total")
                   + s_sum (c, CL_EMITTER, "sluice_streams_refused_total");
    fprintf (stderr, "flood: %d starts against --max-streams %s: %d refused (503), %d held until their "
                     "client left; %d/%d real clients served (%d retries of a 503); %.0f refusals counted\n",
             FLOOD_STREAMS, FLOOD_MAX, refused, held, served, FLOOD_REAL, retried, counted);
    cr_expect_eq (refused + held, FLOOD_STREAMS, "every flood stream was held or refused cleanly");
    cr_expect_gt (refused, 0, "the bound refused some");
    cr_expect_leq (held, atoi (FLOOD_MAX), "no more were held than the bound");
    cr_expect_eq (counted, refused + retried, "every refusal (a real client's too) is counted once");
    cr_expect_eq (served, FLOOD_REAL, "the real clients were served meanwhile");
    char which [64] = "";
    cr_expect (s_cluster_free (c, ENDS_FREE_MS, which, sizeof which), "every hop let go afterwards (%s)", which);
    load_clients_free (clients, n);
    cr_expect_eq (cluster_stop (c), 0);
}
