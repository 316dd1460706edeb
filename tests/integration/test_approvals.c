/*  Integration: a person in the loop (action ask) at the judge, over the
    real processes. The mock's model (mock-tools) calls get_weather, then
    run_shell; the policy asks a person about run_shell. The test speaks
    the judge's control link itself (proto/PROTOCOL.md, "ctl") with the
    gateway's key, as the gateway and sluice-audit do, and reads verdicts
    from the emitter's tap. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <czmq.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"
#include "tests/integration/verdict_tap.h"

#define TIMEOUT_MS 20000
#define CTL_WAIT_MS 5000
#define RUN_LIMIT_MS 30000

static const char *s_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    message: 'sluice: {tool} was not approved ({reason})'\n"
    "    ask:\n"
    "      timeout_ms: %d\n"
    "      on_timeout: %s\n"
    "      remember_max_minutes: 10\n"
    "      message: '{user} wants to run {arguments}'\n";

//  --------------------------------------------------------------------------
//  The control link, as a client speaks it

typedef struct {
    zsock_t *sock;
    sl_codec_t *codec;
    sl_buf_t body;                      //  the last reply's body
    char message [256];                 //  its msg
} ctl_t;

static void
s_ctl_open (ctl_t *c, sluice_stack_t *s)
{
    memset (c, 0, sizeof *c);
    c->sock = zsock_new (ZMQ_DEALER);
    cr_assert_eq (harness_curve (c->sock, s->keys, "gateway", "judge"), 0);
    cr_assert_eq (zsock_connect (c->sock, "%s", s->approvals), 0);
    c->codec = sl_codec_new ();
}

static void
s_ctl_close (ctl_t *c)
{
    zsock_destroy (&c->sock);
    sl_codec_destroy (&c->codec);
    sl_buf_free (&c->body);
}

//  One request; the reply's status (-1: none within CTL_WAIT_MS).
static int
s_ctl (ctl_t *c, const char *code, const char *id, const char *body)
{
    sl_msg_t req;
    sl_msg_init (&req, SL_MSG_CTL);
    sl_sid_new (req.sid);
    req.code = sl_str (code);
    req.id = sl_str (id);
    req.body = sl_str (body);
    sl_buf_t wire = { 0 };
    sl_msg_encode (&req, &wire);
    zframe_t *frame = zframe_new (wire.data, wire.len);
    sl_buf_free (&wire);
    cr_assert_eq (zframe_send (&frame, c->sock, 0), 0);
    zpoller_t *poller = zpoller_new (c->sock, NULL);
    int64_t deadline = zclock_mono () + CTL_WAIT_MS;
    int status = -1;
    while (status < 0 && zclock_mono () < deadline) {
        if (!zpoller_wait (poller, 100))
            continue;
        zframe_t *reply = zframe_recv (c->sock);
        size_t offset = 0;
        sl_msg_t m;
        if (reply && sl_codec_decode (c->codec, zframe_data (reply), zframe_size (reply), &offset, &m) == 0
        &&  m.type == SL_MSG_CTL && memcmp (m.sid, req.sid, SL_SID_SIZE) == 0) {
            status = m.status;
            sl_buf_reset (&c->body);
            sl_buf_append_str (&c->body, m.body);
            snprintf (c->message, sizeof c->message, "%.*s", (int) m.message.len, m.message.ptr ? m.message.ptr : "");
        }
        zframe_destroy (&reply);
    }
    zpoller_destroy (&poller);
    return status;
}

//  The pending approvals (a new reference), waiting until there are at
//  least want of them.
static json_t *
s_pending (ctl_t *c, size_t want)
{
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    json_t *list = NULL;
    while (zclock_mono () < deadline) {
        json_decref (list);
        list = NULL;
        if (s_ctl (c, "list", NULL, "{\"by\":{\"console\":true}}") == 200)
            list = json_loadb (c->body.data, c->body.len, 0, NULL);
        if (json_array_size (json_object_get (list, "approvals")) >= want)
            break;
        zclock_sleep (50);
    }
    cr_assert_geq (json_array_size (json_object_get (list, "approvals")), want, "%zu approvals pending", want);
    return list;
}

static const char *
s_field (json_t *approval, const char *key)
{
    return json_string_value (json_object_get (approval, key));
}

//  Decide the approval; the status.
static int
s_decide (ctl_t *c, json_t *approval, const char *decision, const char *extra)
{
    char body [1024];
    snprintf (body, sizeof body, "{\"by\":{\"console\":true,\"name\":\"console:ops\"},\"decision\":\"%s\","
              "\"comment\":\"checked\"%s}", decision, extra ? extra : "");
    return s_ctl (c, "decide", s_field (approval, "id"), body);
}

static sluice_stack_t *
s_stack_with (int timeout_ms, const char *on_timeout, const char *const *judge_args)
{
    char policy [1024];
    snprintf (policy, sizeof policy, s_policy, timeout_ms, on_timeout);
    stack_opts_t opts = { .policy_text = policy, .judge_args = judge_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    return s;
}

static sluice_stack_t *
s_stack (int timeout_ms, const char *on_timeout)
{
    return s_stack_with (timeout_ms, on_timeout, NULL);
}

static bool
s_has (const load_client_t *c, const char *needle)
{
    return strstr (sl_buf_cstr ((sl_buf_t *) &c->body), needle) != NULL;
}

//  --------------------------------------------------------------------------

typedef struct {
    sluice_stack_t *s;
    ctl_t ctl;
} s_run_t;

//  Two calls wait: one approved, one denied; and what a decision may not do.
static void
s_approve_one_deny_one (void *arg, int round)
{
    (void) round;
    s_run_t *run = arg;
    json_t *list = s_pending (&run->ctl, 2);
    json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
    json_t *second = json_array_get (json_object_get (list, "approvals"), 1);
    cr_expect_str_eq (s_field (first, "tool"), "run_shell");
    cr_expect_str_eq (s_field (first, "rule"), "ask-shell");
    cr_expect_eq (strlen (s_field (first, "digest")), 64);
    cr_expect_eq (strlen (s_field (first, "stream")), 32);
    cr_expect (strstr (s_field (first, "message"), "wants to run"), "%s", s_field (first, "message"));
    //  Bound to the call: another digest, a stale policy, someone the rule
    //  does not admit, an unknown id.
    cr_expect_eq (s_decide (&run->ctl, first, "approve", ",\"digest\":\"00\""), 409);
    cr_expect (strstr (run->ctl.message, "digest"), "%s", run->ctl.message);
    cr_expect_eq (s_decide (&run->ctl, first, "approve", ",\"policy\":\"000000000000\""), 409);
    cr_expect (strstr (run->ctl.message, "stale"), "%s", run->ctl.message);
    cr_expect_eq (s_ctl (&run->ctl, "decide", s_field (first, "id"),
                         "{\"by\":{\"team\":\"eng\"},\"decision\":\"approve\"}"), 403);
    cr_expect_eq (s_ctl (&run->ctl, "decide", "0123456789abcdef0123456789abcdef",
                         "{\"by\":{\"console\":true},\"decision\":\"approve\"}"), 404);
    cr_expect_eq (s_ctl (&run->ctl, "decide", s_field (first, "id"), "{\"by\":{\"console\":true},\"decision\":1}"),
                  400);
    char extra [256];
    snprintf (extra, sizeof extra, ",\"digest\":\"%s\",\"policy\":\"%s\"", s_field (first, "digest"),
              s_field (first, "policy"));
    cr_expect_eq (s_decide (&run->ctl, first, "approve", extra), 200, "%s", run->ctl.message);
    cr_expect_eq (s_decide (&run->ctl, first, "approve", NULL), 409, "a decision counts once");
    cr_expect_eq (s_decide (&run->ctl, second, "deny", NULL), 200, "%s", run->ctl.message);
    json_decref (list);
}

Test (approvals, approved_runs_denied_gets_the_notice)
{
    s_run_t run = { .s = s_stack (60000, "block") };
    s_ctl_open (&run.ctl, run.s);
    verdict_tap_t *tap = verdict_tap_open (run.s);
    load_client_t *clients = load_clients (2, "mock-tools", 4);
    load_action_t action = { .at = 200, .fn = s_approve_one_deny_one, .arg = &run };
    load_run (run.s->http_port, clients, 2, &action, 1, RUN_LIMIT_MS);
    int ran = 0, noticed = 0;
    for (int i = 0; i < 2; i++) {
        cr_expect (load_complete (&clients [i]), "stream %d complete", i);
        ran += s_has (&clients [i], "\"name\":\"run_shell\"");
        noticed += s_has (&clients [i], "was not approved (denied by console:ops: checked)");
    }
    cr_expect_eq (ran, 1, "the approved call ran");
    cr_expect_eq (noticed, 1, "the denied call became the notice");
    //  The verdicts name the decision and who took it.
    verdict_tap_wait (tap, 4, TIMEOUT_MS);
    int approved = 0, denied = 0;
    for (int i = 0; i < tap->count; i++) {
        const sl_msg_t *v = tap->verdicts [i];
        if (!sl_str_eq (v->name, "run_shell"))
            continue;
        approved += v->check == SL_CHK_APPROVED && v->action == SL_ACT_ALLOW;
        denied += v->check == SL_CHK_DENIED && v->action == SL_ACT_BLOCK;
        cr_expect (sl_str_eq (v->approver, "console:ops"));
    }
    cr_expect_eq (approved, 1);
    cr_expect_eq (denied, 1);
    cr_expect_eq (metric_value (atoi (run.s->metrics [3]), "sluice_approvals_pending"), 0);
    load_clients_free (clients, 2);
    verdict_tap_close (tap);
    s_ctl_close (&run.ctl);
    cr_expect_eq (stack_stop (run.s), 0);
}

//  Approve with a memory, then ask again.
static void
s_approve_remembered (void *arg, int round)
{
    (void) round;
    s_run_t *run = arg;
    json_t *list = s_pending (&run->ctl, 1);
    json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
    cr_expect_eq (s_decide (&run->ctl, first, "approve", ",\"remember_minutes\":11"), 400, "over the rule's bound");
    cr_expect_eq (s_decide (&run->ctl, first, "approve", ",\"remember_minutes\":5"), 200, "%s", run->ctl.message);
    json_decref (list);
}

Test (approvals, unanswered_times_out_and_a_memory_lets_the_same_call_pass)
{
    s_run_t run = { .s = s_stack (1500, "allow") };
    s_ctl_open (&run.ctl, run.s);
    verdict_tap_t *tap = verdict_tap_open (run.s);
    //  Nobody decides: on_timeout allow lets it run, and says so.
    load_client_t *clients = load_clients (1, "mock-tools", 4);
    load_run (run.s->http_port, clients, 1, NULL, 0, RUN_LIMIT_MS);
    cr_expect (load_complete (&clients [0]));
    cr_expect (s_has (&clients [0], "\"name\":\"run_shell\""));
    int seen = 0;
    const sl_msg_t *v = NULL;
    while ((v = verdict_tap_next (tap, &seen, TIMEOUT_MS)) && !sl_str_eq (v->name, "run_shell"))
        ;
    cr_assert_not_null (v);
    cr_expect_eq (v->check, SL_CHK_TIMEOUT);
    cr_expect_eq (v->action, SL_ACT_ALLOW);
    load_clients_free (clients, 1);
    //  Approved for 5 minutes: the same call of the same caller passes at
    //  once the next time, naming the first approval.
    clients = load_clients (1, "mock-tools", 4);
    load_action_t action = { .at = 100, .fn = s_approve_remembered, .arg = &run };
    load_run (run.s->http_port, clients, 1, &action, 1, RUN_LIMIT_MS);
    cr_expect (s_has (&clients [0], "\"name\":\"run_shell\""));
    load_clients_free (clients, 1);
    clients = load_clients (1, "mock-tools", 4);
    load_run (run.s->http_port, clients, 1, NULL, 0, RUN_LIMIT_MS);
    cr_expect (s_has (&clients [0], "\"name\":\"run_shell\""));
    int earlier = 0;
    verdict_tap_read (tap, 500);
    for (int i = 0; i < tap->count; i++)
        if (tap->verdicts [i]->check == SL_CHK_APPROVED_EARLIER) {
            earlier++;
            cr_expect (sl_str_eq (tap->verdicts [i]->approver, "console:ops"));
        }
    cr_expect_eq (earlier, 1, "the third call passed on the memory");
    cr_expect_eq (metric_value (atoi (run.s->metrics [3]), "sluice_approvals_asked_total"), 3);
    load_clients_free (clients, 1);
    verdict_tap_close (tap);
    s_ctl_close (&run.ctl);
    cr_expect_eq (stack_stop (run.s), 0);
}

//  The client of the waiting stream leaves: the gateway says so.
static void
s_cancel_the_stream (void *arg, int round)
{
    (void) round;
    s_run_t *run = arg;
    json_t *list = s_pending (&run->ctl, 1);
    json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
    char body [128];
    snprintf (body, sizeof body, "{\"stream\":\"%s\"}", s_field (first, "stream"));
    cr_expect_eq (s_ctl (&run->ctl, "cancel", NULL, body), 200);
    cr_expect_eq (s_decide (&run->ctl, first, "approve", NULL), 410, "a cancelled approval cannot be decided");
    cr_expect (strstr (run->ctl.message, "the client went away"), "%s", run->ctl.message);
    json_decref (list);
}

static void
s_stop_the_judge (void *arg, int round)
{
    (void) round;
    s_run_t *run = arg;
    json_decref (s_pending (&run->ctl, 1));
    cr_expect_eq (proc_stop (run->s->judge, 10000), 0, "the judge stops cleanly");
}

Test (approvals, a_cancelled_approval_blocks)
{
    s_run_t run = { .s = s_stack (60000, "allow") };
    s_ctl_open (&run.ctl, run.s);
    load_client_t *clients = load_clients (1, "mock-tools", 4);
    load_action_t action = { .at = 100, .fn = s_cancel_the_stream, .arg = &run };
    load_run (run.s->http_port, clients, 1, &action, 1, RUN_LIMIT_MS);
    cr_expect_not (s_has (&clients [0], "\"name\":\"run_shell\""), "a cancelled call never runs");
    cr_expect_eq (metric_value (atoi (run.s->metrics [3]), "sluice_approvals_pending"), 0);
    load_clients_free (clients, 1);
    s_ctl_close (&run.ctl);
    cr_expect_eq (stack_stop (run.s), 0);
}

//  A call waits under on_timeout: allow; the judge is told to stop (with
//  judge_args, e.g. a drain). A scale-down or a rolling update must not
//  release every waiting call: on_timeout is for time running out, not
//  for a judge leaving. The call is blocked, its client gets the notice,
//  the verdict says check error and the approval's record state failed.
static void
s_stop_while_a_call_waits (const char *const *judge_args)
{
    s_run_t run = { .s = s_stack_with (60000, "allow", judge_args) };
    s_ctl_open (&run.ctl, run.s);
    verdict_tap_t *tap = verdict_tap_open (run.s);
    load_client_t *clients = load_clients (1, "mock-tools", 4);
    load_action_t stop = { .at = 100, .fn = s_stop_the_judge, .arg = &run };
    load_run (run.s->http_port, clients, 1, &stop, 1, RUN_LIMIT_MS);
    cr_expect (proc_wait_log (run.s->judge, "\"approvals_failed\"", NULL, NULL, 0, 1000), "the judge says so");
    //  Without a drain the stream completes; a drain's end may cut what
    //  follows the notice, with a clean error.
    cr_expect (load_complete (&clients [0]) || (judge_args && load_failed_cleanly (&clients [0])),
               "the stream ends: %s", sl_buf_cstr (&clients [0].body));
    cr_expect_not (s_has (&clients [0], "\"name\":\"run_shell\""), "the waiting call never runs");
    cr_expect (s_has (&clients [0], "run_shell was not approved (not decided: the judge holding it stopped)"),
               "the client gets the block notice: %s", sl_buf_cstr (&clients [0].body));
    int seen = 0;
    const sl_msg_t *v = NULL;
    while ((v = verdict_tap_next (tap, &seen, TIMEOUT_MS)) && !sl_str_eq (v->name, "run_shell"))
        ;
    cr_assert_not_null (v, "the call's verdict is on the tap");
    cr_expect_eq (v->check, SL_CHK_ERROR, "check error, not timeout");
    cr_expect_eq (v->action, SL_ACT_BLOCK);
    const sl_msg_t *failed = verdict_tap_approval (tap, "failed", TIMEOUT_MS);
    cr_assert_not_null (failed, "the approval's record: state failed");
    cr_expect (sl_str_eq (failed->reason, "the judge holding it stopped"), "%.*s", (int) failed->reason.len,
               failed->reason.ptr ? failed->reason.ptr : "");
    load_clients_free (clients, 1);
    verdict_tap_close (tap);
    s_ctl_close (&run.ctl);
    //  The judge stopped already (cleanly: checked in s_stop_the_judge).
    unlink (run.s->judge->log_path);
    free (run.s->judge);
    run.s->judge = NULL;
    cr_expect_eq (stack_stop (run.s), 0);
}

Test (approvals, a_stopping_judge_blocks_what_waits_even_with_on_timeout_allow)
{
    s_stop_while_a_call_waits (NULL);
}

Test (approvals, a_draining_judge_blocks_what_still_waits_when_its_drain_ends)
{
    //  The drain gives a person its length to decide; when it ends, the
    //  call is blocked with its notice before the stream is cut.
    const char *judge_args [] = { "--drain-ms", "1500", NULL };
    s_stop_while_a_call_waits (judge_args);
}

Test (approvals, a_client_that_leaves_cancels_its_approval)
{
    //  Through the gateway this time: the client gives up while its call
    //  waits; the gateway tells the judges, the approval is cancelled and
    //  the stream ends at every hop.
    char policy [1024];
    snprintf (policy, sizeof policy, s_policy, 60000, "allow");
    stack_opts_t opts = { .policy_text = policy, .gateway_approvals = true };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    load_client_t *clients = load_clients (1, "mock-tools", 4);
    clients [0].timeout_ms = 1500;
    load_run (s->http_port, clients, 1, NULL, 0, RUN_LIMIT_MS);
    cr_expect_neq (clients [0].result, CURLE_OK, "the client gave up");
    cr_expect (proc_wait_log (s->judge, "\"approvals_cancelled\"", NULL, NULL, 0, TIMEOUT_MS),
               "the judge heard the client left");
    cr_expect_eq (harness_wait_metric_down (atoi (s->metrics [3]), "sluice_approvals_pending", 0, TIMEOUT_MS), 0);
    cr_expect_eq (harness_wait_metric_down (atoi (s->metrics [3]), "sluice_streams_active", 0, TIMEOUT_MS), 0,
                  "the stream let go of at the judge");
    load_clients_free (clients, 1);
    cr_expect_eq (stack_stop (s), 0);
}
