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
*/
#include <criterion/criterion.h>
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
