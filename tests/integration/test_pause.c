/*  Integration: busy is not dead.

    A process that is only slow (stopped with SIGSTOP, starved of CPU,
    busy for a moment) must not wedge the pipeline once it runs again.

    false_death_keeps_the_window: one instance of everything; each kind of
    process in turn is stopped for longer than a peer's death interval
    while idle, then resumed; a long stream afterwards (more messages than
    one credit window) must come through whole. A sender that declared a
    peer dead and lost the window it held never got it back.

    busy_gateway: a gateway parsing a large legal request for longer than
    the death interval must not declare its ingest dead: 20 streams
    flowing meanwhile all complete.

    every_kind_stopped: two instances of every stage; each kind of process
    (the gateway, an ingest, an aggregator, a judge, an emitter), a judge
    and an aggregator together, and one of each at once, is stopped for
    0.3, 1.5 and 5 s, in turn while streams flow and while idle. Every
    stream that ran across the stop either completes byte-identical to an
    undisturbed run or ends with a clean error; every stream started after
    it completes. SLUICE_PAUSE_ROUNDS rounds per kind (make test: 3, one
    per length; make chaos: 10), each ending with a one-line summary per
    kind. Afterwards no process holds a stream.
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "load.h"

#define PAUSE_DELAY_MS 20               //  the mock's pace per event
#define PAUSE_LONG_CHUNKS 20000         //  a stream longer than one credit window
#define PAUSE_LIMIT_MS 90000            //  bound of every run

//  The kinds of process a test can stop.
enum { K_GATEWAY, K_INGEST, K_AGGREGATOR, K_JUDGE, K_EMITTER, K_KINDS };
static const char *s_kind_names [K_KINDS] = { "gateway", "ingest", "aggregator", "judge", "emitter" };

static proc_t *
s_proc (cluster_t *c, int kind, int i)
{
    return kind == K_GATEWAY ? c->gateway [i] : c->procs [kind - 1][i];
}

static void
s_signal (cluster_t *c, int kind, int i, int sig)
{
    proc_t *p = s_proc (c, kind, i);
    cr_assert (p && p->pid > 0, "%s-%d is running", s_kind_names [kind], i);
    cr_assert_eq (kill (p->pid, sig), 0);
}

//  One stream of `chunks` chunks sent as fast as the pipeline takes them.
static bool
s_long_stream (cluster_t *c, int chunks, int64_t *took_ms)
{
    load_client_t *one = load_clients (1, "mock-burst", chunks);
    int64_t start = load_run (c->http_port [0], one, 1, NULL, 0, PAUSE_LIMIT_MS);
    *took_ms = load_now_ms () - start;
    bool ok = load_complete (&one [0]);
    if (!ok)
        fprintf (stderr, "pause: the long stream ended with %zu bytes, status %ld, curl %d\n",
                 one [0].body.len, one [0].status, (int) one [0].result);
    load_clients_free (one, 1);
    return ok;
}

//  --------------------------------------------------------------------------
//  A false death costs no credit

typedef struct {
    cluster_t *cluster;
    int kind;
} s_victim_t;

static void
s_stop (void *arg, int round)
{
    (void) round;
    s_victim_t *v = arg;
    s_signal (v->cluster, v->kind, 0, SIGSTOP);
}

static void
s_cont (void *arg, int round)
{
    (void) round;
    s_victim_t *v = arg;
    s_signal (v->cluster, v->kind, 0, SIGCONT);
}

Test (pause, false_death_keeps_the_window, .timeout = 600)
{
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = PAUSE_DELAY_MS };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "one instance of every stage came up");
    int64_t took;
    cr_assert (s_long_stream (c, PAUSE_LONG_CHUNKS, &took), "a long stream before any pause");
    for (int kind = K_GATEWAY; kind < K_KINDS; kind++) {
        //  Stopped for 1.5 s, three times the death interval, with nothing
        //  flowing; then a long stream.
        s_victim_t v = { c, kind };
        load_action_t pause [] = { { 0, s_stop, &v, 0 }, { 1500, s_cont, &v, 0 } };
        load_run (c->http_port [0], NULL, 0, pause, 2, PAUSE_LIMIT_MS);
        bool ok = s_long_stream (c, PAUSE_LONG_CHUNKS, &took);
        fprintf (stderr, "pause: %s stopped 1.5 s: a %d-chunk stream after it %s in %lld ms\n",
                 s_kind_names [kind], PAUSE_LONG_CHUNKS, ok ? "completed" : "did not complete",
                 (long long) took);
        cr_expect (ok, "after the %s was stopped and resumed, a long stream completes", s_kind_names [kind]);
    }
    cr_expect_eq (cluster_stop (c), 0, "every process exits cleanly");
}

//  --------------------------------------------------------------------------
//  Busy is not dead: a large request

#define BUSY_STREAMS 20
#define BUSY_BODY_BYTES (10u << 20)     //  a legal request: the gateway's default limit is 10 MiB

//  An OpenAI chat request of about `size` bytes, made of many short user
//  messages (a long conversation), asking for mock-text.
static char *
s_large_request (size_t size)
{
    sl_buf_t b = { 0 };
    sl_buf_puts (&b, "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[");
    const char *turn = "{\"role\":\"user\",\"content\":\"a line of an old conversation, kept\"},";
    size_t n = strlen (turn);
    while (b.len + n + 64 < size)
        sl_buf_append (&b, turn, n);
    sl_buf_puts (&b, "{\"role\":\"user\",\"content\":\"hi\"}]}");
    char *body = strdup (sl_buf_cstr (&b));
    sl_buf_free (&b);
    return body;
}

Test (pause, busy_gateway_declares_nobody_dead, .timeout = 300)
{
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = PAUSE_DELAY_MS };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    char *large = s_large_request (BUSY_BODY_BYTES);
    load_client_t *clients = load_clients (BUSY_STREAMS + 1, "mock-bench", 150);
    clients [BUSY_STREAMS].request_body = large;
    clients [BUSY_STREAMS].start_at = 500;
    load_run (c->http_port [0], clients, BUSY_STREAMS + 1, NULL, 0, PAUSE_LIMIT_MS);
    int complete = 0;
    for (int i = 0; i < BUSY_STREAMS; i++) {
        complete += load_complete (&clients [i]);
        if (!load_complete (&clients [i]))
            fprintf (stderr, "busy: stream %d: status %ld, %zu bytes: %.*s\n", i, clients [i].status,
                     clients [i].body.len, (int) (clients [i].body.len < 300 ? clients [i].body.len : 300),
                     clients [i].body.data ? clients [i].body.data : "");
    }
    //  Nobody took the busy gateway (or anyone) for dead.
    double deaths = metric_value (c->http_port [0], "sluice_peer_deaths_total");
    for (int stage = CL_INGEST; stage <= CL_EMITTER; stage++)
        deaths += metric_value (c->metrics [stage][0], "sluice_peer_deaths_total");
    fprintf (stderr, "busy: a %u MiB request beside %d streams: %d complete; the large one: status %ld; "
                     "%.0f peers declared dead\n",
             BUSY_BODY_BYTES >> 20, BUSY_STREAMS, complete, clients [BUSY_STREAMS].status, deaths);
    cr_expect_eq (complete, BUSY_STREAMS, "every stream beside the large request completes");
    cr_expect_eq (deaths, 0, "no process declared a peer dead");
    cr_expect (load_complete (&clients [BUSY_STREAMS]), "the large request is served too");
    load_clients_free (clients, BUSY_STREAMS + 1);
    free (large);
    cr_expect_eq (cluster_stop (c), 0);
}

//  --------------------------------------------------------------------------
//  Every kind of process stopped, under load and idle

#define ROUND_STREAMS 30
#define ROUND_CHUNKS 120                //  2.4 s of text at the mock's pace, then two tool calls
#define ROUND_STOP_AT_MS 400            //  into the load
#define ROUND_EXPIRY "8000"             //  longer than any stop: a stopped stage's streams are not expired
#define ROUND_DEFAULT 3
#define ROUND_MAX 64

//  What is stopped: a set of kinds, instance 0 of each.
typedef struct {
    const char *name;
    unsigned kinds;                     //  bit per K_*
} s_target_t;

static const s_target_t s_targets [] = {
    { "gateway", 1u << K_GATEWAY },
    { "ingest", 1u << K_INGEST },
    { "aggregator", 1u << K_AGGREGATOR },
    { "judge", 1u << K_JUDGE },
    { "emitter", 1u << K_EMITTER },
    { "judge+aggregator", (1u << K_JUDGE) | (1u << K_AGGREGATOR) },
    { "all five", (1u << K_KINDS) - 1 },
};
#define TARGETS (int) (sizeof s_targets / sizeof s_targets [0])

static const int s_lengths [] = { 300, 1500, 5000 };

typedef struct {
    cluster_t *cluster;
    unsigned kinds;
    int64_t stopped_at, resumed_at;     //  ms, load clock
} s_stopper_t;

static void
s_stop_target (void *arg, int round)
{
    (void) round;
    s_stopper_t *st = arg;
    for (int k = 0; k < K_KINDS; k++)
        if (st->kinds & (1u << k))
            s_signal (st->cluster, k, 0, SIGSTOP);
    st->stopped_at = load_now_ms ();
}

static void
s_resume_target (void *arg, int round)
{
    (void) round;
    s_stopper_t *st = arg;
    for (int k = K_KINDS - 1; k >= 0; k--)
        if (st->kinds & (1u << k))
            s_signal (st->cluster, k, 0, SIGCONT);
    st->resumed_at = load_now_ms ();
}

typedef struct {
    int rounds;
    int across, identical, clean, failed;   //  streams that ran across a stop
    int after, after_complete;              //  streams started after the resume
    int64_t flow [ROUND_MAX];               //  resume to full flow, per round
    int flow_count;
} s_tally_t;

//  Resume to full flow: the latest, over the streams still running at
//  the resume, of their first byte after it (ms); or, when nothing ran,
//  of the first byte of the streams started then.
static int64_t
s_resume_to_flow (load_client_t *clients, int n, int64_t resumed_at)
{
    int64_t worst = -1;
    for (int i = 0; i < n; i++) {
        load_client_t *c = &clients [i];
        for (size_t a = 0; a < c->arrival_count; a++)
            if (c->arrivals [a] >= resumed_at) {
                if (c->arrivals [a] - resumed_at > worst)
                    worst = c->arrivals [a] - resumed_at;
                break;
            }
    }
    return worst;
}

static int
s_cmp64 (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

static void
s_round (cluster_t *c, const s_target_t *target, int length, bool under_load, const load_client_t *base,
         s_tally_t *t)
{
    s_stopper_t st = { c, target->kinds, 0, 0 };
    if (under_load) {
        //  Streams flow; the stop comes in the middle of them.
        load_client_t *across = load_clients (ROUND_STREAMS, "mock-bench", ROUND_CHUNKS);
        load_action_t acts [] = { { ROUND_STOP_AT_MS, s_stop_target, &st, 0 },
                                  { ROUND_STOP_AT_MS + length, s_resume_target, &st, 0 } };
        load_run (c->http_port [0], across, ROUND_STREAMS, acts, 2, PAUSE_LIMIT_MS);
        for (int i = 0; i < ROUND_STREAMS; i++) {
            t->across++;
            if (load_complete (&across [i]) && load_identical (&across [i], &base [i]))
                t->identical++;
            else
            if (load_failed_cleanly (&across [i]))
                t->clean++;
            else {
                t->failed++;
                fprintf (stderr, "pause: %s stopped %d ms: stream %d ended badly: status %ld, curl %d, "
                                 "%zu bytes (%zu in the reference)\n", target->name, length, i,
                         across [i].status, (int) across [i].result, across [i].body.len, base [i].body.len);
            }
        }
        t->flow [t->flow_count++] = s_resume_to_flow (across, ROUND_STREAMS, st.resumed_at);
        load_clients_free (across, ROUND_STREAMS);
    }
    else {
        //  Idle: stopped and resumed with nothing flowing.
        load_action_t acts [] = { { 0, s_stop_target, &st, 0 }, { length, s_resume_target, &st, 0 } };
        load_run (c->http_port [0], NULL, 0, acts, 2, PAUSE_LIMIT_MS);
    }
    //  After the resume: every new stream completes.
    load_client_t *after = load_clients (ROUND_STREAMS, "mock-bench", ROUND_CHUNKS);
    load_run (c->http_port [0], after, ROUND_STREAMS, NULL, 0, PAUSE_LIMIT_MS);
    if (!under_load)
        t->flow [t->flow_count++] = s_resume_to_flow (after, ROUND_STREAMS, st.resumed_at);
    for (int i = 0; i < ROUND_STREAMS; i++) {
        t->after++;
        bool ok = load_complete (&after [i]) && load_identical (&after [i], &base [i]);
        t->after_complete += ok;
        if (!ok)
            fprintf (stderr, "pause: after %s stopped %d ms (%s): stream %d: status %ld, curl %d, %zu bytes\n",
                     target->name, length, under_load ? "under load" : "idle", i, after [i].status,
                     (int) after [i].result, after [i].body.len);
    }
    load_clients_free (after, ROUND_STREAMS);
}

//  No process holds a stream any more (bounded wait).
static bool
s_all_free (cluster_t *c, char *which, size_t size)
{
    int64_t deadline = load_now_ms () + 20000;
    while (true) {
        bool free_everywhere = true;
        double v = metric_value (c->http_port [0], "sluice_streams_active");
        if (v != 0) {
            free_everywhere = false;
            snprintf (which, size, "gateway: %.0f", v);
        }
        for (int s = CL_INGEST; s <= CL_EMITTER && free_everywhere; s++)
            for (int i = 0; i < c->opts.count [s] && free_everywhere; i++)
                if ((v = metric_value (c->metrics [s][i], "sluice_streams_active")) != 0) {
                    free_everywhere = false;
                    snprintf (which, size, "%s-%d: %.0f", s_kind_names [s + 1], i, v);
                }
        if (free_everywhere)
            return true;
        if (load_now_ms () > deadline)
            return false;
        zclock_sleep (50);
    }
}

Test (pause, every_kind_stopped, .timeout = 3600)
{
    const char *env = getenv ("SLUICE_PAUSE_ROUNDS");
    int rounds = env ? atoi (env) : ROUND_DEFAULT;
    if (rounds < 1 || rounds > ROUND_MAX)
        rounds = ROUND_DEFAULT;
    const char *stage_args [] = { "--stream-expiry-ms", ROUND_EXPIRY, NULL };
    const char *gateway_args [] = { "--stream-expiry-ms", ROUND_EXPIRY, NULL };
    cluster_opts_t opts = { .count = { 2, 2, 2, 2 }, .mock_delay_ms = PAUSE_DELAY_MS,
                            .policy = "deploy/policy.yaml", .stage_args = stage_args,
                            .gateway_args = gateway_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "two instances of every stage came up");

    load_client_t *base = load_clients (ROUND_STREAMS, "mock-bench", ROUND_CHUNKS);
    load_run (c->http_port [0], base, ROUND_STREAMS, NULL, 0, PAUSE_LIMIT_MS);
    for (int i = 0; i < ROUND_STREAMS; i++)
        cr_assert (load_complete (&base [i]), "stream %d completes undisturbed", i);

    int failed = 0, stuck = 0;
    for (int target = 0; target < TARGETS; target++) {
        s_tally_t t = { .rounds = rounds };
        for (int r = 0; r < rounds; r++) {
            int length = s_lengths [r % 3];
            //  Under load and idle in turn; the kinds start on different
            //  sides so that three rounds cover both.
            bool under_load = (r / 3 + r + target) % 2 == 0;
            s_round (c, &s_targets [target], length, under_load, base, &t);
        }
        int64_t sorted [ROUND_MAX];
        memcpy (sorted, t.flow, sizeof sorted);
        qsort (sorted, (size_t) t.flow_count, sizeof (int64_t), s_cmp64);
        fprintf (stderr, "pause: %s: %d rounds (stopped 0.3, 1.5, 5 s; under load and idle): "
                         "%d streams across a stop, %d byte-identical, %d ended cleanly, %d failed; "
                         "%d/%d started after a resume complete; resume to full flow median %lld ms, worst %lld ms\n",
                 s_targets [target].name, rounds, t.across, t.identical, t.clean, t.failed, t.after_complete,
                 t.after, (long long) sorted [t.flow_count / 2], (long long) sorted [t.flow_count - 1]);
        cr_expect_eq (t.failed, 0, "%s: every stream across a stop completes identically or ends cleanly",
                      s_targets [target].name);
        cr_expect_eq (t.after_complete, t.after, "%s: every stream after a resume completes",
                      s_targets [target].name);
        failed += t.failed;
        stuck += t.after - t.after_complete;
    }
    char which [64] = "";
    cr_expect (s_all_free (c, which, sizeof which), "no process holds a stream afterwards (%s)", which);
    (void) failed;
    (void) stuck;
    load_clients_free (base, ROUND_STREAMS);
    cr_expect_eq (cluster_stop (c), 0, "every process exits cleanly");
}
