/*  Unit tests: common/service/sl_stage with a real sl_router sending to it, on
    loopback, in one process. The stage runs its own reactor in a thread
    (as it runs in its own process); the router runs in the test's thread.
    They speak CURVE, as every link of the bus does.

    The stage thread can be made to stop for a while (its reactor blocked:
    no reading, no timers, as if the process were stopped), and its stage
    callback can be made slow, to play a stage that is busy. The router's
    own reactor can be blocked the same way (a busy sender).
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/bus/sl_router.h"
#include "common/service/sl_stage.h"
#include "tests/unit/keydir.h"
#include "tests/unit/misfit.h"

#define STEP_MS 50                      //  the router's script ticks this often

//  --------------------------------------------------------------------------
//  The stage, in its own thread

typedef struct {
    char keys [64];                     //  the bus's key directory: CURVE, as in production
    size_t max_streams;                 //  sl_stage_track_streams, when track
    int64_t expiry_ms;
    bool track;
    char endpoint [64];                 //  bound inbox (set before the actor signals)
    atomic_int stop_ms;                 //  block the stage's reactor this long, once
    atomic_int slow_us;                 //  time each message takes the stage
    atomic_long messages;               //  stream messages the stage was handed
    atomic_long starts, errors, ends;
    atomic_long refused, expired;       //  errors by code
    sl_counter_t *malformed;            //  the stage's count, read on its thread (MALFORMED)
} s_ctx_t;

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_ctx_t *ctx = arg;
    atomic_fetch_add (&ctx->messages, 1);
    if (msg->type == SL_MSG_START)
        atomic_fetch_add (&ctx->starts, 1);
    if (msg->type == SL_MSG_END)
        atomic_fetch_add (&ctx->ends, 1);
    if (msg->type == SL_MSG_ERROR) {
        atomic_fetch_add (&ctx->errors, 1);
        if (sl_str_eq (msg->code, "overloaded_error"))
            atomic_fetch_add (&ctx->refused, 1);
        if (sl_str_eq (msg->code, "stream_expired"))
            atomic_fetch_add (&ctx->expired, 1);
    }
    int slow = atomic_load (&ctx->slow_us);
    if (slow)
        usleep ((useconds_t) slow);
}

//  $TERM stops the stage; MALFORMED asks for its count of malformed
//  messages (read here, on the thread that counts).
static int
s_on_pipe (zloop_t *loop, zsock_t *pipe, void *arg)
{
    (void) loop;
    s_ctx_t *ctx = arg;
    char *command = zstr_recv (pipe);
    bool term = !command || strcmp (command, "$TERM") == 0;
    if (command && strcmp (command, "MALFORMED") == 0)
        zstr_sendf (pipe, "%llu", (unsigned long long) ctx->malformed->value);
    zstr_free (&command);
    return term ? -1 : 0;
}

//  The stage's reactor stops for stop_ms when asked: nothing read, no
//  timer run (ZeroMQ's own threads go on, as the kernel's buffers would).
static int
s_on_check_stop (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_ctx_t *ctx = arg;
    int ms = atomic_exchange (&ctx->stop_ms, 0);
    if (ms)
        zclock_sleep (ms);
    return 0;
}

static void
s_stage_actor (zsock_t *pipe, void *arg)
{
    s_ctx_t *ctx = arg;
    char *argv [] = { "test", NULL };
    int code;
    //  The service sets the process's signal dispositions for a process of
    //  its own; the test runner's are put back.
    struct sigaction saved [NSIG];
    for (int sig = 1; sig < NSIG; sig++)
        sigaction (sig, NULL, &saved [sig]);
    sl_service_t *svc = sl_service_new ("aggregator", NULL, "off", 1, argv, &code);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction (sig, &saved [sig], NULL);
    sl_bus_opts_t bus = { .keys = ctx->keys, .auth = "on" };
    if (svc && sl_service_start_bus (svc, &bus, "aggregator"))
        sl_service_destroy (&svc);
    sl_stage_t *stage = svc ? sl_stage_new (svc, "tcp://127.0.0.1:*", s_on_msg, NULL, ctx) : NULL;
    if (stage && ctx->track)
        sl_stage_track_streams (stage, ctx->max_streams, ctx->expiry_ms);
    if (stage)
        snprintf (ctx->endpoint, sizeof ctx->endpoint, "%s", sl_inbox_endpoint (sl_stage_inbox (stage)));
    zsock_signal (pipe, stage ? 0 : 1);
    if (stage) {
        zloop_t *loop = sl_service_loop (svc);
        ctx->malformed = sl_metrics_counter (sl_service_metrics (svc), "sluice_malformed_messages_total",
                                             NULL, "");
        zloop_reader (loop, pipe, s_on_pipe, ctx);
        zloop_timer (loop, 10, 0, s_on_check_stop, ctx);
        zloop_start (loop);
    }
    sl_stage_destroy (&stage);
    sl_service_destroy (&svc);
}

//  --------------------------------------------------------------------------
//  The router, in the test's thread, following a script

typedef struct _script_t script_t;
typedef int (script_fn) (script_t *s, int step);  //  0 go on, 1 done, -1 failed

struct _script_t {
    zloop_t *loop;
    sl_router_t *router;
    s_ctx_t *ctx;
    script_fn *fn;
    int step;
    int max_steps;
    int result;
    uint8_t sid [SL_SID_SIZE];
    uint64_t seq;                       //  next sequence number of the script's stream
    int deaths, ups;                    //  peer events seen
    int lost;                           //  `lost` notices from the stage
    uint64_t lost_seq_epoch;
    long sent;                          //  stream messages the script sent
};

static void
s_on_peer_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    (void) endpoint;
    script_t *s = arg;
    if (event == SL_PEER_DEAD)
        s->deaths++;
    if (event == SL_PEER_UP)
        s->ups++;
}

static void
s_on_back (void *arg, const sl_msg_t *msg)
{
    script_t *s = arg;
    if (msg->type == SL_MSG_LOST)
        s->lost++;
}

//  Queue one message of stream n (0: the script's own sid).
static void
s_send (script_t *s, int n, int type, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memcpy (m.sid, s->sid, SL_SID_SIZE);
    m.sid [15] = (uint8_t) n;
    m.seq = seq;
    if (type == SL_MSG_DELTA) {
        m.kind = SL_D_TEXT;
        m.text = SL_STR_LIT ("some text of a stream");
    }
    cr_assert_eq (sl_router_send (s->router, &m), 0);
    s->sent++;
}

//  The script's stream: a START then deltas, numbered in order.
static void
s_stream (script_t *s, int count)
{
    for (int i = 0; i < count; i++) {
        s_send (s, 0, s->seq == 0 ? SL_MSG_START : SL_MSG_DELTA, s->seq);
        s->seq++;
    }
    sl_router_flush (s->router);
}

static int
s_on_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    script_t *s = arg;
    int rc = s->fn (s, ++s->step);
    if (rc == 0 && s->step < s->max_steps)
        return 0;
    s->result = rc == 1 ? 1 : -1;
    return -1;
}

//  Run fn every STEP_MS against a stage in its own thread, up to max_steps.
static void
s_run (s_ctx_t *ctx, script_fn *fn, int max_steps, script_t *out)
{
    keydir_make (ctx->keys, sizeof ctx->keys);
    zactor_t *stage = zactor_new (s_stage_actor, ctx);
    cr_assert_not_null (stage, "the stage came up");
    cr_assert (ctx->endpoint [0], "the stage bound its inbox");
    sl_metrics_t *metrics = sl_metrics_new ();
    sl_bus_opts_t opts = { .keys = ctx->keys, .auth = "on" };
    sl_bus_t *bus = sl_bus_new (NULL, metrics, &opts, "ingest");
    cr_assert_not_null (bus, "the sender's keys");
    script_t *s = out;
    memset (s, 0, sizeof *s);
    s->ctx = ctx;
    s->fn = fn;
    s->max_steps = max_steps;
    for (int i = 0; i < SL_SID_SIZE; i++)
        s->sid [i] = (uint8_t) (0xA0 + i);
    s->loop = zloop_new ();
    s->router = sl_router_new (s->loop, "test-sender", 77);
    cr_assert_eq (sl_router_set_bus (s->router, bus, "aggregator"), 0);
    sl_router_on_peer (s->router, s_on_peer_event, s);
    sl_router_on_message (s->router, s_on_back, s);
    cr_assert_eq (sl_router_connect (s->router, ctx->endpoint), 0);
    zloop_timer (s->loop, STEP_MS, 0, s_on_step, s);
    zloop_start (s->loop);
    sl_router_destroy (&s->router);
    zloop_destroy (&s->loop);
    zactor_destroy (&stage);
    sl_bus_destroy (&bus);
    sl_metrics_destroy (&metrics);
    keydir_remove (ctx->keys);
}

//  Wait (a step at a time) until cond holds; fail after limit steps.
#define UNTIL(cond, limit) \
    do { if (!(cond)) return s->step >= (limit) ? -1 : 0; } while (0)

//  --------------------------------------------------------------------------
//  A false death: the stage stops for 1.5 s while the router sends

typedef struct {
    int phase;
    int at;
} s_phase_t;

static s_phase_t s_false;

static int
s_false_death (script_t *s, int step)
{
    const char *ep = s->ctx->endpoint;
    switch (s_false.phase) {
        case 0:                         //  the stage is up and gave a window
            UNTIL (sl_router_peer_alive (s->router, ep) && sl_router_credit (s->router, ep) > 0, 40);
            cr_expect_eq (sl_router_credit (s->router, ep), SL_CREDIT_WINDOW, "a whole window at first");
            s_stream (s, 300);
            atomic_store (&s->ctx->stop_ms, 1500);
            s_false.phase = 1;
            s_false.at = step;
            return 0;
        case 1:                         //  the router takes it for dead, and goes on sending
            UNTIL (s->deaths > 0, s_false.at + 30);
            cr_expect_not (sl_router_peer_alive (s->router, ep));
            s_stream (s, 200);
            s_false.phase = 2;
            return 0;
        case 2:                         //  it runs again: everything arrives, the window is whole
            UNTIL (sl_router_peer_alive (s->router, ep) && atomic_load (&s->ctx->messages) == s->sent
                   && sl_router_credit (s->router, ep) == SL_CREDIT_WINDOW, s_false.at + 100);
            return 1;
    }
    return -1;
}

Test (sl_stage, a_false_death_leaves_the_window_whole)
{
    s_ctx_t ctx = { 0 };
    script_t s;
    s_false = (s_phase_t) { 0, 0 };
    s_run (&ctx, s_false_death, 200, &s);
    cr_expect_eq (s.result, 1, "the script ran to its end (phase %d, %ld of %ld messages)",
                  s_false.phase, atomic_load (&ctx.messages), s.sent);
    cr_expect_eq (s.deaths, 1, "declared dead once, while the stage was stopped");
    cr_expect_eq (atomic_load (&ctx.messages), 500, "every message, sent before and during the stop, arrived");
}

//  --------------------------------------------------------------------------
//  A busy router: its reactor blocked for 1.5 s reads the heartbeats
//  waiting for it before it declares anyone dead

static int
s_busy_router (script_t *s, int step)
{
    const char *ep = s->ctx->endpoint;
    if (step < 100 && !(sl_router_peer_alive (s->router, ep) && sl_router_credit (s->router, ep) > 0))
        return 0;
    if (s_false.phase == 0) {
        s_stream (s, 10);
        zclock_sleep (1500);            //  the router's process is busy: no timer, no read
        s_false.phase = 1;
        s_false.at = step;
        return 0;
    }
    //  Its heartbeat timer has run since.
    return step >= s_false.at + 6 ? 1 : 0;
}

Test (sl_stage, a_busy_sender_declares_no_live_stage_dead)
{
    s_ctx_t ctx = { 0 };
    script_t s;
    s_false = (s_phase_t) { 0, 0 };
    s_run (&ctx, s_busy_router, 200, &s);
    cr_expect_eq (s.result, 1);
    cr_expect_eq (s.deaths, 0, "the stage's heartbeats were waiting: it is not dead");
}

//  --------------------------------------------------------------------------
//  A busy stage: a whole window of slow messages at once; the stage keeps
//  its heartbeats going while it works through them

static long s_busy_seen;                //  messages the stage had taken at the last step

static int
s_busy_stage (script_t *s, int step)
{
    const char *ep = s->ctx->endpoint;
    if (s_false.phase == 0) {
        UNTIL (sl_router_peer_alive (s->router, ep) && sl_router_credit (s->router, ep) > 0, 40);
        atomic_store (&s->ctx->slow_us, 100);   //  20,000 messages: 2 s of work
        s_stream (s, SL_CREDIT_WINDOW);
        s_false.phase = 1;
        s_false.at = step;
        return 0;
    }
    //  The work takes what the machine gives it (a loaded machine makes
    //  each of the slow messages slower): the bound is on progress, not
    //  on the whole, and the whole is bounded by max_steps.
    long messages = atomic_load (&s->ctx->messages);
    if (messages != s_busy_seen) {
        s_busy_seen = messages;
        s_false.at = step;
    }
    UNTIL (messages == SL_CREDIT_WINDOW && sl_router_credit (s->router, ep) == SL_CREDIT_WINDOW, s_false.at + 200);
    return 1;
}

Test (sl_stage, a_busy_stage_stays_alive)
{
    s_ctx_t ctx = { 0 };
    script_t s;
    s_false = (s_phase_t) { 0, 0 };
    s_busy_seen = 0;
    s_run (&ctx, s_busy_stage, 1200, &s);
    cr_expect_eq (s.result, 1, "the stage took the whole window and gave it back");
    cr_expect_eq (s.deaths, 0, "a stage working through a backlog is not taken for dead");
}

//  --------------------------------------------------------------------------
//  The intake: bounded streams, gaps, expiry

static int
s_intake (script_t *s, int step)
{
    const char *ep = s->ctx->endpoint;
    switch (s_false.phase) {
        case 0:
            UNTIL (sl_router_peer_alive (s->router, ep) && sl_router_credit (s->router, ep) > 0, 40);
            //  Three streams start; the stage takes two.
            for (int n = 1; n <= 3; n++)
                s_send (s, n, SL_MSG_START, 0);
            //  Stream 1 goes on in order; stream 2 skips seq 2.
            s_send (s, 1, SL_MSG_DELTA, 1);
            s_send (s, 1, SL_MSG_DELTA, 2);
            s_send (s, 2, SL_MSG_DELTA, 1);
            s_send (s, 2, SL_MSG_DELTA, 3);
            s_send (s, 2, SL_MSG_DELTA, 4);
            sl_router_flush (s->router);
            s_false.phase = 1;
            s_false.at = step;
            return 0;
        case 1:
            //  Stream 3 was refused at once: START, ERROR, END reached the
            //  stage; stream 2's gap was reported back.
            UNTIL (atomic_load (&s->ctx->refused) == 1 && s->lost == 1, s_false.at + 40);
            s_false.phase = 2;
            return 0;
        case 2:
            //  Both held streams go silent: each expires, once.
            UNTIL (atomic_load (&s->ctx->expired) == 2, s_false.at + 80);
            return 1;
    }
    return -1;
}

Test (sl_stage, streams_are_bounded_ordered_and_expired)
{
    s_ctx_t ctx = { .track = true, .max_streams = 2, .expiry_ms = 500 };
    script_t s;
    s_false = (s_phase_t) { 0, 0 };
    s_run (&ctx, s_intake, 200, &s);
    cr_expect_eq (s.result, 1, "phase %d: refused %ld, lost %d, expired %ld", s_false.phase,
                  atomic_load (&ctx.refused), s.lost, atomic_load (&ctx.expired));
    //  Handed to the stage: 3 STARTs, stream 1's two deltas, stream 2's
    //  first; the refusal's ERROR and END; each expiry's ERROR and END.
    cr_expect_eq (atomic_load (&ctx.starts), 3);
    cr_expect_eq (atomic_load (&ctx.errors), 3, "a refusal and two expiries");
    cr_expect_eq (atomic_load (&ctx.ends), 3);
    cr_expect_eq (atomic_load (&ctx.messages), 3 + 3 + 2 + 4, "nothing after the gap reached the stage");
}

//  --------------------------------------------------------------------------
//  A message its type's table refuses (a start that carries auth) is
//  malformed: counted, never handed to the stage, and the rest of its
//  ZeroMQ message with it; the next ZeroMQ message is taken as ever.

static void
s_start_end (sl_buf_t *out, uint8_t n, bool misfit)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, n, SL_SID_SIZE);
    m.model = SL_STR_LIT ("m");
    if (misfit)
        misfit_encode (&m, "auth", "secret", out);
    else
        sl_msg_encode (&m, out);
    sl_msg_init (&m, SL_MSG_END);
    memset (m.sid, n, SL_SID_SIZE);
    m.seq = 1;
    sl_msg_encode (&m, out);
}

Test (sl_stage, a_message_its_table_refuses_is_counted_and_dropped)
{
    s_ctx_t ctx = { 0 };
    keydir_make (ctx.keys, sizeof ctx.keys);
    zactor_t *stage = zactor_new (s_stage_actor, &ctx);
    cr_assert_not_null (stage, "the stage came up");
    sl_metrics_t *metrics = sl_metrics_new ();
    sl_bus_opts_t opts = { .keys = ctx.keys, .auth = "on" };
    sl_bus_t *bus = sl_bus_new (NULL, metrics, &opts, "ingest");
    cr_assert_not_null (bus, "the sender's keys");
    zsock_t *sender = zsock_new (ZMQ_DEALER);
    cr_assert_eq (sl_bus_client (bus, sender, "aggregator"), 0);
    cr_assert_eq (zsock_connect (sender, "%s", ctx.endpoint), 0);
    sl_buf_t bad = { 0 }, good = { 0 };
    s_start_end (&bad, 1, true);
    s_start_end (&good, 2, false);
    cr_assert_eq (zsock_send (sender, "b", bad.data, bad.len), 0);
    cr_assert_eq (zsock_send (sender, "b", good.data, good.len), 0);
    //  In order on one connection: once the good stream's end is taken,
    //  the bad one was read before it.
    for (int i = 0; i < 200 && atomic_load (&ctx.ends) < 1; i++)
        zclock_sleep (25);
    cr_expect_eq (atomic_load (&ctx.ends), 1, "the next ZeroMQ message is taken");
    cr_expect_eq (atomic_load (&ctx.starts), 1, "the start that carries auth is not");
    cr_expect_eq (atomic_load (&ctx.messages), 2, "nor the end after it, in its ZeroMQ message");
    zstr_send (stage, "MALFORMED");
    char *count = zstr_recv (stage);
    cr_expect_str_eq (count ? count : "", "1", "the refused message is counted");
    zstr_free (&count);
    sl_buf_free (&bad);
    sl_buf_free (&good);
    zsock_destroy (&sender);
    zactor_destroy (&stage);
    sl_bus_destroy (&bus);
    sl_metrics_destroy (&metrics);
    keydir_remove (ctx.keys);
}
