/*  Integration: several instances of every stage; kill any one, lose
    nothing.

    chaos: 3 instances of every stage, 200 concurrent streams from the mock
    at a realistic pace; several rounds kill -9 a random aggregator, judge
    and emitter mid-stream and start them again. Every client stream must
    be byte-identical to the same request in a run without kills, and all
    must complete. `make chaos` runs this test alone; it ends with a
    one-line summary (kill-to-resume times per round).

    The other tests kill an ingest (only its streams fail, each cleanly),
    kill a gateway (the mock sees its upstream calls closed), and add a
    fourth judge under load (it takes new streams).
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/cluster.h"
#include "tests/integration/load.h"

#define CHAOS_STREAMS 200
#define CHAOS_CHUNKS 120                //  text chunks per stream (then two tool calls)
#define CHAOS_DELAY_MS 20               //  the mock's pace per event
#define CHAOS_ROUNDS 3
#define CHAOS_FIRST_KILL_MS 400
#define CHAOS_ROUND_MS 900
#define CHAOS_RESTART_MS 150            //  a killed instance comes back after this
#define RUN_LIMIT_MS 90000

//  --------------------------------------------------------------------------
//  chaos

typedef struct {
    cluster_t *cluster;
    int victims [CHAOS_ROUNDS][3];      //  instance killed per stage and round
    int64_t killed_at [CHAOS_ROUNDS];   //  ms since the run's start
    int64_t run_start;
} s_chaos_t;

static void
s_kill_round (void *arg, int round)
{
    s_chaos_t *ch = arg;
    for (int s = CL_AGGREGATOR; s <= CL_EMITTER; s++)
        cluster_kill (ch->cluster, s, ch->victims [round][s - CL_AGGREGATOR]);
    ch->killed_at [round] = zclock_mono ();
}

static void
s_restart_round (void *arg, int round)
{
    s_chaos_t *ch = arg;
    for (int s = CL_AGGREGATOR; s <= CL_EMITTER; s++)
        cluster_start_instance (ch->cluster, s, ch->victims [round][s - CL_AGGREGATOR], false);
}

static int
s_cmp (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

Test (chaos, kill_any_stage_lose_nothing, .timeout = 240)
{
    cluster_opts_t opts = {
        .count = { 3, 3, 3, 3 }, .mock_delay_ms = CHAOS_DELAY_MS, .policy = "deploy/policy.yaml"
    };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster, "3 instances of every stage came up");

    //  The reference: the same requests without kills.
    load_client_t *base = load_clients (CHAOS_STREAMS, "mock-bench", CHAOS_CHUNKS);
    load_run (cluster->http_port [0], base, CHAOS_STREAMS, NULL, 0, RUN_LIMIT_MS);
    int base_ok = 0;
    for (int i = 0; i < CHAOS_STREAMS; i++)
        base_ok += load_complete (&base [i]);
    cr_assert_eq (base_ok, CHAOS_STREAMS, "every stream completes without kills");

    //  The same again, killing an aggregator, a judge and an emitter per round.
    s_chaos_t ch = { .cluster = cluster };
    srand (20261122);
    load_action_t actions [2 * CHAOS_ROUNDS];
    for (int r = 0; r < CHAOS_ROUNDS; r++) {
        for (int k = 0; k < 3; k++)
            ch.victims [r][k] = rand () % 3;
        actions [2 * r] = (load_action_t) { CHAOS_FIRST_KILL_MS + r * CHAOS_ROUND_MS, s_kill_round, &ch, r };
        actions [2 * r + 1] = (load_action_t) { CHAOS_FIRST_KILL_MS + r * CHAOS_ROUND_MS + CHAOS_RESTART_MS,
                                             s_restart_round, &ch, r };
    }
    load_client_t *run = load_clients (CHAOS_STREAMS, "mock-bench", CHAOS_CHUNKS);
    load_run (cluster->http_port [0], run, CHAOS_STREAMS, actions, 2 * CHAOS_ROUNDS, RUN_LIMIT_MS);

    int complete = 0, identical = 0;
    for (int i = 0; i < CHAOS_STREAMS; i++) {
        complete += load_complete (&run [i]);
        bool same = load_identical (&run [i], &base [i]);
        identical += same;
        if (!same && identical + 1 >= i)    //  show the first difference only
            fprintf (stderr, "chaos: stream %d differs (%zu bytes vs %zu)\n", i,
                     run [i].body.len, base [i].body.len);
    }
    double replays = 0;
    for (int i = 0; i < 3; i++)
        replays += metric_value (cluster->metrics [CL_INGEST][i], "sluice_replays_total");
    cr_expect_gt (replays, 0, "the kills broke streams, and the ingests replayed them");
    cr_expect_eq (complete, CHAOS_STREAMS, "every stream completes despite the kills");
    cr_expect_eq (identical, CHAOS_STREAMS, "every stream is identical to the run without kills (keep-alive comments aside)");

    //  Kill to resumed flow, per round: the worst, over the streams that were
    //  running at the kill, of the time to their next byte.
    int64_t resume [CHAOS_ROUNDS];
    for (int r = 0; r < CHAOS_ROUNDS; r++) {
        int64_t worst = 0;
        for (int i = 0; i < CHAOS_STREAMS; i++) {
            load_client_t *c = &run [i];
            if (!c->arrival_count || c->arrivals [0] > ch.killed_at [r]
            ||  c->arrivals [c->arrival_count - 1] < ch.killed_at [r])
                continue;
            for (size_t a = 0; a < c->arrival_count; a++)
                if (c->arrivals [a] >= ch.killed_at [r]) {
                    if (c->arrivals [a] - ch.killed_at [r] > worst)
                        worst = c->arrivals [a] - ch.killed_at [r];
                    break;
                }
        }
        resume [r] = worst;
    }
    int64_t sorted [CHAOS_ROUNDS];
    memcpy (sorted, resume, sizeof sorted);
    qsort (sorted, CHAOS_ROUNDS, sizeof (int64_t), s_cmp);
    fprintf (stderr, "chaos: %d streams, %d rounds of kill -9 (aggregator, judge, emitter), "
                     "%.0f streams replayed, %d/%d complete, %d/%d identical; kill to resumed flow median %lld ms, worst %lld ms\n",
             CHAOS_STREAMS, CHAOS_ROUNDS, replays, complete, CHAOS_STREAMS, identical, CHAOS_STREAMS,
             (long long) sorted [CHAOS_ROUNDS / 2], (long long) sorted [CHAOS_ROUNDS - 1]);
    load_clients_free (base, CHAOS_STREAMS);
    load_clients_free (run, CHAOS_STREAMS);
    cr_expect_eq (cluster_stop (cluster), 0, "every instance still running exits cleanly");
}

//  --------------------------------------------------------------------------
//  Killing an ingest, a gateway; scaling out

static void
s_kill_ingest (void *arg, int round)
{
    (void) round;
    cluster_kill ((cluster_t *) arg, CL_INGEST, 0);
}

Test (chaos, an_ingest_dies_only_its_streams_fail_cleanly, .timeout = 120)
{
    cluster_opts_t opts = { .count = { 2, 1, 1, 1 }, .mock_delay_ms = CHAOS_DELAY_MS };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster);
    enum { N = 40 };
    load_client_t *clients = load_clients (N, "mock-bench", 60);
    load_action_t kill = { 500, s_kill_ingest, cluster, 0 };
    load_run (cluster->http_port [0], clients, N, &kill, 1, RUN_LIMIT_MS);
    int complete = 0, failed_cleanly = 0;
    for (int i = 0; i < N; i++) {
        load_client_t *c = &clients [i];
        if (load_complete (c)) {
            complete++;
            continue;
        }
        //  A stream of the dead ingest: its last event is an error, and the
        //  response itself ended properly (no transport error, no hang).
        const char *body = sl_buf_cstr (&c->body);
        const char *last = strstr (body, "\"upstream_lost\"");
        if (c->done && c->result == CURLE_OK && last && strstr (last, "[DONE]") == NULL)
            failed_cleanly++;
        else
            fprintf (stderr, "stream %d ended badly: result %d status %ld, %zu bytes\n",
                     i, (int) c->result, c->status, c->body.len);
    }
    cr_expect_eq (complete + failed_cleanly, N, "every stream either completed or failed cleanly");
    cr_expect_gt (failed_cleanly, 0, "the dead ingest had streams");
    cr_expect_gt (complete, 0, "the other ingest's streams were untouched");
    load_clients_free (clients, N);
    cluster_stop (cluster);
}

static void
s_kill_gateway (void *arg, int round)
{
    (void) round;
    cluster_kill_gateway ((cluster_t *) arg, 0);
}

Test (chaos, a_gateway_dies_its_upstream_calls_are_closed, .timeout = 120)
{
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = CHAOS_DELAY_MS };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster);
    enum { N = 10 };
    load_client_t *clients = load_clients (N, "mock-bench", 500);     //  10 s each
    load_action_t kill = { 500, s_kill_gateway, cluster, 0 };
    int64_t start = load_run (cluster->http_port [0], clients, N, &kill, 1, RUN_LIMIT_MS);
    (void) start;
    //  The clients lost their connections with the gateway; the ingest,
    //  seeing no more acks, closes the upstream calls. Wait for the mock to
    //  count them, bounded.
    int64_t t0 = zclock_mono ();
    double abandoned = 0;
    while (zclock_mono () - t0 < 15000 && (abandoned = metric_value (cluster->mock_port, "mock_streams_abandoned_total")) < N)
        usleep (20000);
    cr_expect_eq (abandoned, N, "the mock saw every upstream call closed");
    fprintf (stderr, "chaos: gateway killed; the mock saw all %d upstream calls closed %lld ms after the clients lost it\n",
             N, (long long) (zclock_mono () - t0));
    load_clients_free (clients, N);
    cluster_stop (cluster);
}

static void
s_start_fourth_judge (void *arg, int round)
{
    (void) round;
    cluster_start_instance ((cluster_t *) arg, CL_JUDGE, 3, false);
}

Test (chaos, a_fourth_judge_takes_new_streams, .timeout = 120)
{
    cluster_opts_t opts = { .count = { 1, 1, 3, 1 }, .slots = { 1, 1, 4, 1 },
                            .mock_delay_ms = CHAOS_DELAY_MS };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster);
    //  Load on three judges; the fourth comes up in the middle; a second
    //  wave of streams starts once it is up.
    enum { N = 30 };
    load_client_t *first = load_clients (N, "mock-bench", 100);
    load_action_t start4 = { 300, s_start_fourth_judge, cluster, 0 };
    load_run (cluster->http_port [0], first, N, &start4, 1, RUN_LIMIT_MS);
    cr_assert (proc_wait_log (cluster->procs [CL_JUDGE][3], "\"started\"", NULL, NULL, 0, 15000));
    double before = metric_value (cluster->metrics [CL_JUDGE][3], "sluice_messages_in_total");
    load_client_t *second = load_clients (N, "mock-text", 0);
    load_run (cluster->http_port [0], second, N, NULL, 0, RUN_LIMIT_MS);
    double after = metric_value (cluster->metrics [CL_JUDGE][3], "sluice_messages_in_total");
    int ok = 0;
    for (int i = 0; i < N; i++)
        ok += load_complete (&first [i]) + load_complete (&second [i]);
    cr_expect_eq (ok, 2 * N, "every stream completed");
    cr_expect_gt (after, before, "the new judge took streams without any restart");
    load_clients_free (first, N);
    load_clients_free (second, N);
    cr_expect_eq (cluster_stop (cluster), 0);
}
