/*  Integration: busy is not dead.

    A process that is only slow (stopped with SIGSTOP, starved of CPU,
    busy for a moment) must not wedge the pipeline once it runs again.

    false_death_keeps_the_window: one instance of everything; each kind of
    process in turn is stopped for longer than a peer's death interval
    while idle, then resumed; a long stream afterwards (more messages than
    one credit window) must come through whole. A sender that declared a
    peer dead and lost the window it held never got it back.

    busy_gateway: a gateway parsing large legal requests (six of 10 MiB
    at once: 1.5-2 s of parsing under the sanitizers) must stay
    alive to its peers: 20 streams flowing meanwhile all complete, and no
    process declares a peer dead.

    every_kind_stopped: two instances of every stage; each kind of process
    (the gateway, an ingest, an aggregator, a judge, an emitter), a judge
    and an aggregator together, and one of each at once, is stopped for
    5, 1.5 and 0.3 s, in turn while streams flow and while idle. Every
    stream that ran across the stop either completes byte-identical to an
    undisturbed run (keep-alive comments aside: load_identical) or ends
    with a clean error; every stream started after it completes.
    SLUICE_PAUSE_ROUNDS rounds per kind (make test: 2, the 5 s and the
    1.5 s stop; make chaos: 10, every length), each ending with a
    one-line summary per kind (SLUICE_PAUSE_ONLY=<kind> runs one
    alone). Afterwards no process holds a stream, and every credit
    window is whole.

    starved_of_cpu: every process of the stack, every thread, at nice 19
    and the idle scheduling policy against a busy loop per core for 30 s,
    with streams starting all along; then normal load and a stream longer
    than a credit window complete, nothing is held, and every window is
    whole. It runs in make test (about 45 s; it starves the whole machine
    for half a minute).

    healthz_names_a_stalled_hop: an aggregator whose next stage (a fake
    judge) is alive but takes no more work fails /healthz (503) past
    --health-stall-ms, naming the hop, and is ok again once work moves.
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bus/sl_router.h"
#include "tests/integration/cluster.h"
#include "tests/integration/load.h"

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
    *took_ms = zclock_mono () - start;
    bool ok = load_complete (&one [0]);
    if (!ok)
        fprintf (stderr, "pause: the long stream ended with %zu bytes, status %ld, curl %d\n",
                 one [0].body.len, one [0].status, (int) one [0].result);
    load_clients_free (one, 1);
    return ok;
}

//  At rest, every process holds a whole credit window from every live
//  instance of the next stage, and sees all of them alive: nothing was
//  lost to a false death. False (with the first that does not) when that
//  does not come within a bounded wait.
static bool
s_windows_whole (cluster_t *c, char *which, size_t size)
{
    int64_t deadline = zclock_mono () + 10000;
    while (true) {
        bool whole = true;
        for (int k = K_GATEWAY; k < K_KINDS && whole; k++) {
            int instances = k == K_GATEWAY ? c->opts.gateways : c->opts.count [k - 1];
            int next = k == K_EMITTER ? c->opts.gateways : c->opts.count [k];
            for (int i = 0; i < instances && whole; i++) {
                int port = k == K_GATEWAY ? c->http_port [i] : c->metrics [k - 1][i];
                double alive = metric_value (port, "sluice_hop_alive");
                double credit = metric_value (port, "sluice_hop_credit");
                if (alive != next || credit != (double) SL_CREDIT_WINDOW * next) {
                    whole = false;
                    snprintf (which, size, "%s-%d: %.0f of %d next instances alive, credit %.0f",
                              s_kind_names [k], i, alive, next, credit);
                }
            }
        }
        if (whole)
            return true;
        if (zclock_mono () > deadline)
            return false;
        zclock_sleep (50);
    }
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
        char which [96] = "";
        cr_expect (s_windows_whole (c, which, sizeof which), "after the %s was stopped, every window is whole (%s)",
                   s_kind_names [kind], which);
    }
    cr_expect_eq (cluster_stop (c), 0, "every process exits cleanly");
}

//  --------------------------------------------------------------------------
//  Busy is not dead: a large request

#define BUSY_STREAMS 20
#define BUSY_BODY_BYTES (10u << 20)     //  a legal request: the gateway's default limit is 10 MiB
#define BUSY_LARGE 6                    //  such requests, arriving together

//  An OpenAI chat request of about `size` bytes, made of many user
//  messages (a long conversation), asking for mock-text: the costliest
//  shape to parse that the gateway takes (with turns shorter than about
//  110 bytes, its memory bound refuses the body before parsing it).
static char *
s_large_request (size_t size)
{
    sl_buf_t b = { 0 };
    sl_buf_puts (&b, "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[");
    const char *turn = "{\"role\":\"user\",\"content\":\"a line of an old conversation, kept for the model to read "
                       "again; every turn of it is here, word for word.\"},";
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
    int n = BUSY_STREAMS + BUSY_LARGE;
    load_client_t *clients = load_clients (n, "mock-bench", 150);
    for (int i = BUSY_STREAMS; i < n; i++) {
        clients [i].request_body = large;
        clients [i].start_at = 500;     //  together: parsed inline, one after the other in one turn
    }
    load_run (c->http_port [0], clients, n, NULL, 0, PAUSE_LIMIT_MS);
    int complete = 0, large_complete = 0;
    for (int i = 0; i < BUSY_STREAMS; i++) {
        complete += load_complete (&clients [i]);
        if (!load_complete (&clients [i]))
            fprintf (stderr, "busy: stream %d: status %ld, %zu bytes: %.*s\n", i, clients [i].status,
                     clients [i].body.len, (int) (clients [i].body.len < 300 ? clients [i].body.len : 300),
                     clients [i].body.data ? clients [i].body.data : "");
    }
    for (int i = BUSY_STREAMS; i < n; i++)
        large_complete += load_complete (&clients [i]);
    //  Nobody took the busy gateway (or anyone) for dead.
    double deaths = metric_value (c->http_port [0], "sluice_peer_deaths_total");
    for (int stage = CL_INGEST; stage <= CL_EMITTER; stage++)
        deaths += metric_value (c->metrics [stage][0], "sluice_peer_deaths_total");
    fprintf (stderr, "busy: %d requests of %u MiB at once beside %d streams: %d/%d streams complete, "
                     "%d/%d large ones served; %.0f peers declared dead\n", BUSY_LARGE, BUSY_BODY_BYTES >> 20,
             BUSY_STREAMS, complete, BUSY_STREAMS, large_complete, BUSY_LARGE, deaths);
    cr_expect_eq (complete, BUSY_STREAMS, "every stream beside the large requests completes");
    cr_expect_eq (large_complete, BUSY_LARGE, "the large requests are served too");
    cr_expect_eq (deaths, 0, "no process declared a peer dead");
    load_clients_free (clients, n);
    free (large);
    cr_expect_eq (cluster_stop (c), 0);
}

//  --------------------------------------------------------------------------
//  Every kind of process stopped, under load and idle

#define ROUND_STREAMS 30
#define ROUND_CHUNKS 120                //  2.4 s of text at the mock's pace, then two tool calls
#define ROUND_STOP_AT_MS 400            //  into the load
#define ROUND_EXPIRY "8000"             //  longer than any stop: a stopped stage's streams are not expired
#define ROUND_DEFAULT 2                 //  make test: the 5 s and the 1.5 s stop
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

//  The longest first: the rounds make test runs (ROUND_DEFAULT) take
//  the stops that outlast the death interval and its grace.
static const int s_lengths [] = { 5000, 1500, 300 };

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
    st->stopped_at = zclock_mono ();
}

static void
s_resume_target (void *arg, int round)
{
    (void) round;
    s_stopper_t *st = arg;
    for (int k = K_KINDS - 1; k >= 0; k--)
        if (st->kinds & (1u << k))
            s_signal (st->cluster, k, 0, SIGCONT);
    st->resumed_at = zclock_mono ();
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
    int64_t deadline = zclock_mono () + 20000;
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
        if (zclock_mono () > deadline)
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
    const char *only = getenv ("SLUICE_PAUSE_ONLY");   //  one target's name, to look at it alone
    for (int target = 0; target < TARGETS; target++) {
        if (only && strcmp (only, s_targets [target].name) != 0)
            continue;
        s_tally_t t = { .rounds = rounds };
        for (int r = 0; r < rounds; r++) {
            int length = s_lengths [r % 3];
            //  Under load and idle in turn; the kinds start on different
            //  sides so that two rounds cover both.
            bool under_load = (r / 3 + r + target) % 2 == 0;
            s_round (c, &s_targets [target], length, under_load, base, &t);
        }
        int64_t sorted [ROUND_MAX];
        memcpy (sorted, t.flow, sizeof sorted);
        qsort (sorted, (size_t) t.flow_count, sizeof (int64_t), s_cmp64);
        fprintf (stderr, "pause: %s: %d rounds (stopped 5, 1.5, 0.3 s in turn; under load and idle): "
                         "%d streams across a stop, %d identical, %d ended cleanly, %d failed; "
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
    char which [96] = "";
    cr_expect (s_all_free (c, which, sizeof which), "no process holds a stream afterwards (%s)", which);
    cr_expect (s_windows_whole (c, which, sizeof which), "every credit window is whole afterwards (%s)", which);
    (void) failed;
    (void) stuck;
    load_clients_free (base, ROUND_STREAMS);
    cr_expect_eq (cluster_stop (c), 0, "every process exits cleanly");
}

//  --------------------------------------------------------------------------
//  Starved of CPU

#define STARVE_MS 30000
#define STARVE_NICE 19

//  Every thread of a process to a nice value, and to the idle policy when
//  starved (Linux schedules threads, not processes: ZeroMQ's I/O threads
//  must be starved too). An idle thread runs only when no other wants the
//  CPU: with a busy loop per core it gets close to nothing.
static void
s_renice (pid_t pid, int nice)
{
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/task", (int) pid);
    DIR *dir = opendir (path);
    struct dirent *entry;
    struct sched_param param = { 0 };
    while (dir && (entry = readdir (dir)))
        if (entry->d_name [0] != '.') {
            pid_t tid = (pid_t) atoi (entry->d_name);
            sched_setscheduler (tid, nice ? SCHED_IDLE : SCHED_OTHER, &param);
            setpriority (PRIO_PROCESS, (id_t) tid, nice);
        }
    if (dir)
        closedir (dir);
}

static void
s_renice_all (cluster_t *c, int nice)
{
    for (int k = K_GATEWAY; k < K_KINDS; k++)
        for (int i = 0; i < (k == K_GATEWAY ? c->opts.gateways : c->opts.count [k - 1]); i++)
            if (s_proc (c, k, i) && s_proc (c, k, i)->pid > 0)
                s_renice (s_proc (c, k, i)->pid, nice);
    s_renice (c->mock->pid, nice);
}

typedef struct {
    cluster_t *cluster;
    pid_t hogs [8];
    int hog_count;
} s_starve_t;

static void
s_starve (void *arg, int round)
{
    (void) round;
    s_starve_t *st = arg;
    s_renice_all (st->cluster, STARVE_NICE);
    long cores = sysconf (_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < cores && i < 8; i++) {
        pid_t pid = fork ();
        if (pid == 0) {
            //  A busy loop, bounded in time even if the test dies first.
            int64_t end = zclock_mono () + STARVE_MS + 10000;
            volatile uint64_t spin = 0;
            while (zclock_mono () < end)
                for (int n = 0; n < 1000000; n++)
                    spin++;
            _exit (0);
        }
        if (pid > 0)
            st->hogs [st->hog_count++] = pid;
    }
}

static void
s_feed (void *arg, int round)
{
    (void) round;
    s_starve_t *st = arg;
    for (int i = 0; i < st->hog_count; i++) {
        kill (st->hogs [i], SIGKILL);
        waitpid (st->hogs [i], NULL, 0);
    }
    st->hog_count = 0;
    s_renice_all (st->cluster, 0);
}

Test (pause, starved_of_cpu, .timeout = 600)
{
    const char *stage_args [] = { "--stream-expiry-ms", "60000", NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = PAUSE_DELAY_MS,
                            .policy = "deploy/policy.yaml", .stage_args = stage_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    load_client_t *base = load_clients (ROUND_STREAMS, "mock-bench", ROUND_CHUNKS);
    load_run (c->http_port [0], base, ROUND_STREAMS, NULL, 0, PAUSE_LIMIT_MS);
    //  Starved for 30 s; streams start at its beginning and every 5 s.
    enum { WAVES = 6, PER_WAVE = 5 };
    load_client_t *starved = load_clients (WAVES * PER_WAVE, "mock-bench", ROUND_CHUNKS);
    for (int i = 0; i < WAVES * PER_WAVE; i++)
        starved [i].start_at = 100 + (i / PER_WAVE) * (STARVE_MS / WAVES);
    s_starve_t st = { .cluster = c };
    load_action_t acts [] = { { 0, s_starve, &st, 0 }, { STARVE_MS, s_feed, &st, 0 } };
    load_run (c->http_port [0], starved, WAVES * PER_WAVE, acts, 2, STARVE_MS + PAUSE_LIMIT_MS);
    s_feed (&st, 0);                    //  (when the run ended early)
    int identical = 0, clean = 0;
    for (int i = 0; i < WAVES * PER_WAVE; i++) {
        bool same = load_complete (&starved [i]) && load_identical (&starved [i], &base [i]);
        bool failed = load_failed_cleanly (&starved [i]);
        identical += same;
        clean += failed;
        if (!same && !failed)
            load_describe ("starved stream", i, &starved [i], &base [i]);
    }
    //  Fed again: normal load completes.
    load_client_t *after = load_clients (ROUND_STREAMS, "mock-bench", ROUND_CHUNKS);
    int64_t fed = zclock_mono ();
    load_run (c->http_port [0], after, ROUND_STREAMS, NULL, 0, PAUSE_LIMIT_MS);
    int complete = 0;
    for (int i = 0; i < ROUND_STREAMS; i++)
        complete += load_complete (&after [i]) && load_identical (&after [i], &base [i]);
    //  And a stream longer than a credit window: every window is whole.
    int64_t took;
    bool long_ok = s_long_stream (c, PAUSE_LONG_CHUNKS, &took);
    double deaths = 0;
    for (int s = CL_INGEST; s <= CL_EMITTER; s++)
        deaths += metric_value (c->metrics [s][0], "sluice_peer_deaths_total");
    fprintf (stderr, "pause: starved of CPU for %d s (idle policy, nice %d, against a busy loop per core): %d streams "
                     "during it, %d identical, %d ended cleanly; %.0f peers taken for dead; "
                     "after it %d/%d complete, then a %d-chunk stream %s, in %lld ms\n", STARVE_MS / 1000,
             STARVE_NICE, WAVES * PER_WAVE, identical, clean, deaths, complete, ROUND_STREAMS, PAUSE_LONG_CHUNKS,
             long_ok ? "completes" : "does not complete", (long long) (zclock_mono () - fed));
    cr_expect_eq (identical + clean, WAVES * PER_WAVE, "every starved stream completed or ended cleanly");
    cr_expect_eq (complete, ROUND_STREAMS, "normal load completes once the CPU is back");
    cr_expect (long_ok, "a stream longer than a credit window completes once the CPU is back");
    char which [96] = "";
    cr_expect (s_all_free (c, which, sizeof which), "no process holds a stream afterwards (%s)", which);
    cr_expect (s_windows_whole (c, which, sizeof which), "every credit window is whole afterwards (%s)", which);
    load_clients_free (base, ROUND_STREAMS);
    load_clients_free (starved, WAVES * PER_WAVE);
    load_clients_free (after, ROUND_STREAMS);
    cr_expect_eq (cluster_stop (c), 0);
}

//  --------------------------------------------------------------------------
//  /healthz names a stalled hop

//  A judge that gives a window of FAKE_WINDOW and then no credit at all
//  until told to (a next stage that is alive but takes no work).
#define FAKE_WINDOW 5

static void
s_fake_judge (zsock_t *pipe, void *arg)
{
    const char *keys = arg;             //  it serves with the judge's key, as a judge does
    zsock_t *sock = zsock_new (ZMQ_ROUTER);
    harness_curve (sock, keys, "judge", NULL);
    int port = zsock_bind (sock, "tcp://127.0.0.1:*");
    zsock_signal (pipe, 0);
    zsock_send (pipe, "i", port);
    sl_codec_t *codec = sl_codec_new ();
    uint32_t grant = 0;                 //  credit to give with the next answer
    zpoller_t *poller = zpoller_new (pipe, sock, NULL);
    while (true) {
        void *which = zpoller_wait (poller, 1000);
        if (which == pipe) {
            char *command = zstr_recv (pipe);
            bool stop = !command || strcmp (command, "$TERM") == 0;
            if (command && strcmp (command, "GRANT") == 0)
                grant = 1000000;
            zstr_free (&command);
            if (stop)
                break;
        }
        else
        if (which == sock) {
            zmsg_t *msg = zmsg_recv (sock);
            zframe_t *id = zmsg_pop (msg);
            zframe_t *data = zmsg_pop (msg);
            size_t offset = 0;
            sl_msg_t m;
            while (data && sl_codec_decode (codec, zframe_data (data), zframe_size (data), &offset, &m) == 0) {
                if (m.type != SL_MSG_HB)
                    continue;
                sl_msg_t hb;
                sl_msg_init (&hb, SL_MSG_HB);
                hb.instance = sl_str ("fake-judge");
                hb.incarnation = 99;
                if (m.flags & SL_F_HELLO) {
                    hb.flags = SL_F_WINDOW;
                    hb.seq = m.seq;
                    hb.credit = FAKE_WINDOW;
                }
                else {
                    hb.credit = grant;
                    grant = 0;
                }
                sl_buf_t buf = { 0 };
                sl_msg_encode (&hb, &buf);
                zmsg_t *out = zmsg_new ();
                zframe_t *to = zframe_dup (id);
                zmsg_append (out, &to);
                zmsg_addmem (out, buf.data, buf.len);
                zmsg_send (&out, sock);
                sl_buf_free (&buf);
            }
            zframe_destroy (&id);
            zframe_destroy (&data);
            zmsg_destroy (&msg);
        }
        else
        if (zpoller_terminated (poller))
            break;
    }
    zpoller_destroy (&poller);
    sl_codec_destroy (&codec);
    zsock_destroy (&sock);
}

//  The aggregator's /healthz: its HTTP status, and its body in out.
static int
s_health (int port, sl_buf_t *out)
{
    sl_buf_reset (out);
    return http_request (port, "GET", "/healthz", NULL, NULL, out, 5000);
}

Test (pause, healthz_names_a_stalled_hop, .timeout = 120)
{
    char dir [] = "/tmp/sluice-health-XXXXXX", keys [256];
    cr_assert_not_null (mkdtemp (dir));
    cr_assert_eq (harness_keygen (dir, keys, sizeof keys), 0);
    zactor_t *judge = zactor_new (s_fake_judge, keys);
    int judge_port = 0;
    zsock_recv (judge, "i", &judge_port);
    char next [64], metrics [16], inbox [128];
    snprintf (next, sizeof next, "tcp://127.0.0.1:%d", judge_port);
    int metrics_port = harness_free_port ();
    snprintf (metrics, sizeof metrics, "%d", metrics_port);
    const char *args [] = { "--bind", "tcp://127.0.0.1:*", "--next", next, "--metrics-port", metrics,
                            "--health-stall-ms", "1000", "--keys", keys, NULL };
    proc_t *agg = proc_start (dir, "aggregator", args);
    cr_assert (proc_wait_log (agg, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox, 15000));
    cr_assert (proc_wait_log (agg, "\"peer_up\"", NULL, NULL, 0, 15000), "the aggregator hears the judge");
    sl_buf_t body = { 0 };
    cr_expect_eq (s_health (metrics_port, &body), 200, "healthy while nothing waits: %s", sl_buf_cstr (&body));

    //  A stream comes in: more blocks than the judge's window.
    zsock_t *ingest = zsock_new (ZMQ_DEALER);
    cr_assert_eq (harness_curve (ingest, keys, "ingest", "aggregator"), 0, "the ingest's key");
    cr_assert_eq (zsock_connect (ingest, "%s", inbox), 0);
    sl_buf_t batch = { 0 };
    for (int i = 0; i < 40; i++) {
        sl_msg_t m;
        sl_msg_init (&m, i == 0 ? SL_MSG_START : SL_MSG_DELTA);
        memset (m.sid, 0x77, SL_SID_SIZE);
        m.seq = (uint64_t) i;
        if (i > 0) {                    //  a start carries no content
            m.kind = SL_D_TEXT;
            m.index = -1;
            m.text = SL_STR_LIT ("words ");
        }
        if (i % 4 == 3)
            m.kind = SL_D_BLOCK_STOP;   //  one block each few deltas: block events flow on
        sl_msg_encode (&m, &batch);
    }
    zsock_send (ingest, "b", batch.data, batch.len);
    sl_buf_free (&batch);

    //  The judge is alive but takes nothing more: past the stall limit the
    //  aggregator's /healthz fails and names the hop.
    int status = 0;
    int64_t deadline = zclock_mono () + 10000;
    while ((status = s_health (metrics_port, &body)) == 200 && zclock_mono () < deadline)
        zclock_sleep (100);
    cr_expect_eq (status, 503, "stalled: %s (messages in %.0f, credit %.0f, stall %.1f s, batches %.0f)",
                  sl_buf_cstr (&body), metric_value (metrics_port, "sluice_messages_in_total"),
                  metric_value (metrics_port, "sluice_hop_credit"),
                  metric_value (metrics_port, "sluice_hop_stall_seconds"),
                  metric_value (metrics_port, "sluice_batches_sent_total"));
    cr_expect (strstr (sl_buf_cstr (&body), "\"stalled\"") && strstr (sl_buf_cstr (&body), "judge hop"),
               "the body says which hop: %s", sl_buf_cstr (&body));
    cr_expect_eq (metric_value (metrics_port, "sluice_hop_stalled"), 1);

    //  Credit again: work moves, and health comes back.
    zstr_send (judge, "GRANT");
    deadline = zclock_mono () + 10000;
    while ((status = s_health (metrics_port, &body)) != 200 && zclock_mono () < deadline)
        zclock_sleep (100);
    cr_expect_eq (status, 200, "healthy again once the hop moves: %s", sl_buf_cstr (&body));
    cr_expect_eq (metric_value (metrics_port, "sluice_hop_stalled"), 0);
    sl_buf_free (&body);
    zsock_destroy (&ingest);
    cr_expect_eq (proc_stop (agg, 10000), 0, "the aggregator exits cleanly");
    unlink (agg->log_path);
    free (agg);
    zactor_destroy (&judge);
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  An ingest that was only stopped

#define INGEST_DELAY_MS 300             //  the mock's pace
#define INGEST_STOP_MS 1500             //  past the death interval, within the gateway's grace
#define INGEST_STREAMS 4

typedef struct {
    cluster_t *cluster;
    int stopped;                        //  the ingest stopped, -1 before
} s_holder_t;

//  Stop the ingest that holds the one stream.
static void
s_stop_holder (void *arg, int round)
{
    (void) round;
    s_holder_t *h = arg;
    for (int tries = 0; tries < 200 && h->stopped < 0; tries++) {
        for (int i = 0; i < 2 && h->stopped < 0; i++)
            if (metric_value (h->cluster->metrics [CL_INGEST][i], "sluice_streams_active") == 1)
                h->stopped = i;
        if (h->stopped < 0)
            zclock_sleep (5);
    }
    cr_assert_geq (h->stopped, 0, "an ingest took the stream");
    s_signal (h->cluster, K_INGEST, h->stopped, SIGSTOP);
}

static void
s_cont_holder (void *arg, int round)
{
    (void) round;
    s_holder_t *h = arg;
    s_signal (h->cluster, K_INGEST, h->stopped, SIGCONT);
}

//  Every hop lets go of every stream (bounded wait); false otherwise.
static bool
s_nothing_held (cluster_t *c)
{
    int64_t deadline = zclock_mono () + 15000;
    while (true) {
        double held = 0;
        for (int stage = CL_INGEST; stage < CL_STAGES; stage++)
            for (int i = 0; i < c->opts.count [stage]; i++)
                held += metric_value (c->metrics [stage][i], "sluice_streams_active");
        if (held == 0)
            return true;
        if (zclock_mono () > deadline) {
            fprintf (stderr, "pause: %.0f streams still held\n", held);
            return false;
        }
        zclock_sleep (50);
    }
}

//  The gateway takes an ingest stopped mid-stream for dead after 0.5 s,
//  but the response waits for it: once it runs again, the stream goes on
//  and completes, byte-identical, with no error and nothing sent twice.
Test (pause, an_ingest_stopped_mid_stream_is_waited_for, .timeout = 180)
{
    cluster_opts_t opts = { .count = { 2, 1, 1, 1 }, .mock_delay_ms = INGEST_DELAY_MS };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "the cluster came up");
    load_client_t *ref = load_clients (1, "mock-bench", 3);
    load_run (c->http_port [0], ref, 1, NULL, 0, PAUSE_LIMIT_MS);
    cr_assert (load_complete (&ref [0]), "the undisturbed run completes");
    double resent = metric_value (c->http_port [0], "sluice_jobs_resent_total");
    double lost = metric_value (c->http_port [0], "sluice_streams_lost_total");

    s_holder_t h = { c, -1 };
    load_action_t actions [] = {
        { 50, s_stop_holder, &h, 0 },
        { 50 + INGEST_STOP_MS, s_cont_holder, &h, 0 },
    };
    load_client_t *one = load_clients (1, "mock-bench", 3);
    load_run (c->http_port [0], one, 1, actions, 2, PAUSE_LIMIT_MS);
    cr_expect (load_complete (&one [0]), "the response completes (%zu bytes, status %ld): %.*s", one [0].body.len,
               one [0].status, (int) (one [0].body.len < 600 ? one [0].body.len : 600), one [0].body.data);
    cr_expect (load_identical (&one [0], &ref [0]), "byte-identical to the undisturbed run");
    cr_expect_eq (metric_value (c->http_port [0], "sluice_jobs_resent_total"), resent, "nothing sent again");
    cr_expect_eq (metric_value (c->http_port [0], "sluice_streams_lost_total"), lost, "nothing lost");
    cr_expect (s_nothing_held (c), "no stream held anywhere afterwards");
    load_clients_free (one, 1);
    load_clients_free (ref, 1);
    cr_expect_eq (cluster_stop (c), 0);
}

//  Requests sent while an ingest is stopped: those it took and nothing
//  came back for go to the other ingest as soon as it is taken for dead
//  (they do not wait for it as a response under way does), and complete
//  whole; the stopped one, running again, gives up its copies (no acks come
//  for them) and every hop lets go of them.
Test (pause, requests_a_stopped_ingest_took_go_to_the_other, .timeout = 180)
{
    cluster_opts_t opts = { .count = { 2, 1, 1, 1 }, .mock_delay_ms = INGEST_DELAY_MS };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "the cluster came up");
    load_client_t *ref = load_clients (INGEST_STREAMS, "mock-bench", 3);
    load_run (c->http_port [0], ref, INGEST_STREAMS, NULL, 0, PAUSE_LIMIT_MS);
    for (int i = 0; i < INGEST_STREAMS; i++)
        cr_assert (load_complete (&ref [i]), "the undisturbed run completes");
    double resent = metric_value (c->http_port [0], "sluice_jobs_resent_total");

    s_holder_t h = { c, 0 };
    s_signal (c, K_INGEST, 0, SIGSTOP);
    load_action_t actions [] = { { INGEST_STOP_MS, s_cont_holder, &h, 0 } };
    load_client_t *load = load_clients (INGEST_STREAMS, "mock-bench", 3);
    load_run (c->http_port [0], load, INGEST_STREAMS, actions, 1, PAUSE_LIMIT_MS);
    cr_expect_geq (metric_value (c->http_port [0], "sluice_jobs_resent_total"), resent + 1,
                   "the stopped ingest's requests went to the other");
    for (int i = 0; i < INGEST_STREAMS; i++) {
        cr_expect (load_complete (&load [i]), "response %d completes (%zu bytes, status %ld): %.*s", i,
                   load [i].body.len, load [i].status, (int) (load [i].body.len < 600 ? load [i].body.len : 600),
                   load [i].body.data);
        cr_expect (load_identical (&load [i], &ref [i]), "response %d identical to the undisturbed run", i);
    }
    cr_expect (s_nothing_held (c), "no stream held anywhere afterwards");
    load_clients_free (load, INGEST_STREAMS);
    load_clients_free (ref, INGEST_STREAMS);
    cr_expect_eq (cluster_stop (c), 0);
}

//  The gateway stopped past the ingest's gateway deadline (2 s) and the
//  connection's own heartbeat timeout (3 s): the ingest gave the stream up
//  meanwhile, and what it said then was lost with the connection. Running
//  again, the gateway learns it from the ingest's answer to its next ack,
//  and the client gets the error at once, not when the stream expires.
Test (pause, a_gateway_stopped_long_hears_what_its_ingest_gave_up, .timeout = 180)
{
    const char *gateway_args [] = { "--stream-expiry-ms", "600000", NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = INGEST_DELAY_MS,
                            .gateway_args = gateway_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "the cluster came up");
    s_victim_t v = { c, K_GATEWAY };
    load_action_t actions [] = { { 500, s_stop, &v, 0 }, { 4500, s_cont, &v, 0 } };
    load_client_t *one = load_clients (1, "mock-bench", 40);
    one [0].timeout_ms = 30000;         //  the stream's expiry would be 600 s
    load_run (c->http_port [0], one, 1, actions, 2, PAUSE_LIMIT_MS);
    const char *body = sl_buf_cstr (&one [0].body);
    cr_expect (load_failed_cleanly (&one [0]), "the response ended with an error (%zu bytes, curl %d)",
               one [0].body.len, (int) one [0].result);
    cr_expect (strstr (body, "upstream_lost") != NULL, "the error says the model's answer was let go: %s",
               one [0].body.len > 400 ? body + one [0].body.len - 400 : body);
    cr_expect_geq (metric_value (c->metrics [CL_INGEST][0], "sluice_acks_unknown_total"), 1,
                   "the ingest answered an ack for a stream it no longer held");
    cr_expect (s_nothing_held (c), "no stream held anywhere afterwards");
    load_clients_free (one, 1);
    cr_expect_eq (cluster_stop (c), 0);
}
