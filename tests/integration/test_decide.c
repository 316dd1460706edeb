/*  Integration: decide rules over the real processes. The mock upstream
    plays the model (mock-tools: get_weather, then run_shell) and a
    decision service in Open Policy Agent's shape (sl_mock_decide.h: the
    scenario is the URL's last segment), over HTTP on 127.0.0.1. A header
    of the client's request (x-case) picks the rule, so one stack plays
    every case. Verdicts are read from the emitter's PUB socket. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"
#include "tests/integration/verdict_tap.h"

#define TIMEOUT_MS 20000

//  A request that declares both tools of mock-tools, with string arguments.
static const char *s_request =
    "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}}}]}";

//  One rule per case, picked by the x-case header; "@CASE@" in url is the case.
static void
s_rule (sl_buf_t *policy, const char *name, const char *decide)
{
    sl_buf_printf (policy, "  - id: %s\n    headers: [{name: x-case, equals: %s}]\n"
                           "    message: 'denied {tool}: {reason}'\n    decide: %s\n", name, name, decide);
}

typedef struct {
    sluice_stack_t *stack;
    verdict_tap_t *tap;
    int seen;                           //  verdicts taken so far
    chat_stream_t cs;
    sl_buf_t body;
    const sl_msg_t *weather, *shell;    //  the last request's verdicts
} s_run_t;

//  Send the request under case name and parse what the client got.
static void
s_request_case (s_run_t *run, const char *name)
{
    char header [64];
    snprintf (header, sizeof header, "X-Case: %s", name);
    const char *headers [] = { header, NULL };
    chat_stream_free (&run->cs);
    sl_buf_reset (&run->body);
    cr_assert_eq (http_request (run->stack->http_port, "POST", "/v1/chat/completions", s_request, headers,
                                &run->body, TIMEOUT_MS), 200, "case %s", name);
    chat_stream_parse (sl_buf_cstr (&run->body), &run->cs);
    cr_expect_eq (run->cs.malformed, 0);
}

//  The same, for a response that ends cleanly; take the two verdicts it made.
static void
s_send (s_run_t *run, const char *name)
{
    s_request_case (run, name);
    cr_expect (run->cs.done_last, "case %s: the stream ended cleanly", name);
    run->weather = run->shell = NULL;
    for (int i = 0; i < 2; i++) {
        const sl_msg_t *v = verdict_tap_next (run->tap, &run->seen, TIMEOUT_MS);
        cr_assert_not_null (v, "case %s: verdict %d arrived", name, i);
        if (sl_str_eq (v->name, "get_weather"))
            run->weather = v;
        else
            run->shell = v;
    }
    cr_assert (run->weather && run->shell, "case %s: a verdict for each call", name);
}

static void
s_expect_reason (const sl_msg_t *v, const char *needle)
{
    char reason [512];
    snprintf (reason, sizeof reason, "%.*s", (int) v->reason.len, v->reason.ptr ? v->reason.ptr : "");
    cr_expect_not_null (strstr (reason, needle), "reason '%s' mentions '%s'", reason, needle);
}

static sluice_stack_t *
s_start (sl_buf_t *policy, s_run_t *run)
{
    memset (run, 0, sizeof *run);
    stack_opts_t opts = { .policy_text = sl_buf_cstr (policy), .mock_delay_ms = 1 };
    run->stack = stack_start (&opts);
    cr_assert_not_null (run->stack, "the stack came up");
    run->tap = verdict_tap_open (run->stack);
    return run->stack;
}

static void
s_stop (s_run_t *run)
{
    chat_stream_free (&run->cs);
    sl_buf_free (&run->body);
    verdict_tap_close (run->tap);
    cr_expect_eq (stack_stop (run->stack), 0, "every process exits cleanly");
}

Test (decide, allow_deny_rewrite_and_kept_answers)
{
    sl_buf_t policy = { 0 };
    sl_buf_puts (&policy, "rules:\n");
    s_rule (&policy, "allow", "{url: '@MOCK@/v1/data/sluice/allow'}");
    s_rule (&policy, "deny", "{url: '@MOCK@/v1/data/sluice/deny'}");
    s_rule (&policy, "rewrite", "{url: '@MOCK@/v1/data/sluice/rewrite'}");
    s_rule (&policy, "rewrite-bad", "{url: '@MOCK@/v1/data/sluice/rewrite-bad'}");
    s_rule (&policy, "cached", "{url: '@MOCK@/v1/data/sluice/cached'}");
    s_run_t run;
    sluice_stack_t *s = s_start (&policy, &run);
    int judge = atoi (s->metrics [3]);

    s_send (&run, "allow");
    cr_expect_eq (run.cs.call_count, 2, "both calls run");
    cr_expect_str_eq (sl_buf_cstr (&run.cs.calls [0].arguments), "{\"city\":\"Paris\"}");
    cr_expect_eq (run.weather->action, SL_ACT_ALLOW);
    cr_expect_eq (run.weather->check, SL_CHK_RAN);
    cr_expect (sl_str_eq (run.weather->rule, "allow"));
    s_expect_reason (run.weather, "decision service allowed: the mock service allows it");

    s_send (&run, "deny");
    cr_expect_eq (run.cs.call_count, 0, "neither call runs");
    cr_expect_not_null (strstr (sl_buf_cstr (&run.cs.content), "denied run_shell: decision service denied: the mock "
                                "service denies run_shell (rule deny, team none)"), "%s", sl_buf_cstr (&run.cs.content));
    cr_expect_null (strstr (sl_buf_cstr (&run.body), "rm -rf"));
    cr_expect_str_eq (sl_buf_cstr (&run.cs.finish), "stop", "no call left: the client is not left waiting");
    cr_expect_eq (run.shell->action, SL_ACT_BLOCK);
    cr_expect_eq (run.shell->check, SL_CHK_RAN);
    s_expect_reason (run.shell, "the mock service denies run_shell (rule deny, team none)");
    s_expect_reason (run.weather, "the mock service denies get_weather");

    s_send (&run, "rewrite");
    cr_assert_eq (run.cs.call_count, 2);
    cr_expect_str_eq (sl_buf_cstr (&run.cs.calls [0].arguments), "{\"city\":\"Paris (rewritten)\"}",
                      "the service's arguments reach the client");
    cr_expect_eq (run.weather->action, SL_ACT_REWRITE);
    cr_expect_eq (run.weather->check, SL_CHK_RAN);
    s_expect_reason (run.weather, "decision service allowed with a rewrite");

    s_send (&run, "rewrite-bad");
    cr_expect_eq (run.cs.call_count, 0, "a rewrite against the schema runs in no form");
    cr_expect_null (strstr (sl_buf_cstr (&run.body), "42"), "the service's bad arguments never reach the client");
    cr_expect_eq (run.weather->action, SL_ACT_BLOCK, "on_error: block");
    cr_expect_eq (run.weather->check, SL_CHK_ERROR);
    s_expect_reason (run.weather, "rewrite does not match the tool's schema (/city: expected string");

    //  An answer with Cache-Control: max-age is kept: the same calls again
    //  are answered without asking.
    double asked = metric_value (judge, "sluice_decide_requests_total{outcome=\"allow\"}");
    s_send (&run, "cached");
    cr_expect_eq (run.cs.call_count, 2);
    cr_expect_eq (metric_value (judge, "sluice_decide_cached_total"), 0, "nothing kept before");
    s_send (&run, "cached");
    cr_expect_eq (run.cs.call_count, 2);
    cr_expect_eq (run.weather->action, SL_ACT_ALLOW);
    cr_expect_eq (run.weather->check, SL_CHK_RAN);
    s_expect_reason (run.weather, "the mock service allows it");
    cr_expect_eq (metric_value (judge, "sluice_decide_cached_total"), 2, "both calls answered from what was kept");
    cr_expect_eq (metric_value (judge, "sluice_decide_requests_total{outcome=\"allow\"}"), asked + 4,
                  "allows are counted whether asked or kept");
    cr_expect_eq (metric_value (judge, "sluice_decide_requests_total{outcome=\"deny\"}"), 2);
    //  Answers without the header were never kept: allow was asked once.
    s_send (&run, "allow");
    cr_expect_eq (metric_value (judge, "sluice_decide_cached_total"), 2);
    sl_buf_free (&policy);
    s_stop (&run);
}

Test (decide, failures_take_on_error_and_are_never_a_pass)
{
    int holder = -1;
    int refusing = harness_refusing_port (&holder);
    cr_assert_gt (refusing, 0);
    char refused [160];
    snprintf (refused, sizeof refused, "{url: 'http://127.0.0.1:%d/v1/data/sluice/allow'}", refusing);
    sl_buf_t policy = { 0 };
    sl_buf_puts (&policy, "rules:\n");
    s_rule (&policy, "slow", "{url: '@MOCK@/v1/data/sluice/slow-10000', timeout_ms: 300}");
    s_rule (&policy, "garbage", "{url: '@MOCK@/v1/data/sluice/garbage', on_error: allow}");
    s_rule (&policy, "error", "{url: '@MOCK@/v1/data/sluice/error'}");
    s_rule (&policy, "noresult", "{url: '@MOCK@/v1/data/sluice/noresult', on_error: terminate}");
    s_rule (&policy, "badallow", "{url: '@MOCK@/v1/data/sluice/badallow'}");
    s_rule (&policy, "refused", refused);
    s_run_t run;
    sluice_stack_t *s = s_start (&policy, &run);
    int judge = atoi (s->metrics [3]);

    s_send (&run, "slow");
    cr_expect_eq (run.cs.call_count, 0);
    cr_expect_eq (run.shell->action, SL_ACT_BLOCK);
    cr_expect_eq (run.shell->check, SL_CHK_TIMEOUT);
    s_expect_reason (run.shell, "decision service timed out");
    s_expect_reason (run.shell, "on_error: block");

    s_send (&run, "garbage");
    cr_expect_eq (run.cs.call_count, 2, "on_error: allow lets them through");
    cr_expect_eq (run.weather->action, SL_ACT_ALLOW);
    cr_expect_eq (run.weather->check, SL_CHK_ERROR, "allowed, and on record as a check that did not run");
    s_expect_reason (run.weather, "answer is not a JSON object: <html>");

    s_send (&run, "error");
    cr_expect_eq (run.cs.call_count, 0);
    cr_expect_eq (run.shell->action, SL_ACT_BLOCK);
    cr_expect_eq (run.shell->check, SL_CHK_ERROR);
    s_expect_reason (run.shell, "HTTP 500");

    s_send (&run, "badallow");
    cr_expect_eq (run.cs.call_count, 0);
    cr_expect_eq (run.weather->check, SL_CHK_ERROR);
    s_expect_reason (run.weather, "allow is not a boolean");

    s_send (&run, "refused");
    cr_expect_eq (run.cs.call_count, 0);
    cr_expect_eq (run.weather->check, SL_CHK_ERROR);
    s_expect_reason (run.weather, "transport error");

    //  on_error: terminate ends the response at the first call.
    s_request_case (&run, "noresult");
    cr_expect_eq (run.cs.call_count, 0);
    cr_expect_eq (run.cs.errors, 1);
    cr_expect_str_eq (sl_buf_cstr (&run.cs.error_type), "policy_violation");
    const sl_msg_t *v = verdict_tap_next (run.tap, &run.seen, TIMEOUT_MS);
    cr_assert_not_null (v);
    cr_expect_eq (v->action, SL_ACT_TERMINATE);
    cr_expect_eq (v->check, SL_CHK_ERROR);
    s_expect_reason (v, "has no result");

    cr_expect_eq (metric_value (judge, "sluice_decide_requests_total{outcome=\"timeout\"}"), 2);
    cr_expect_geq (metric_value (judge, "sluice_decide_requests_total{outcome=\"error\"}"), 9);
    cr_expect_eq (metric_value (judge, "sluice_decide_requests_total{outcome=\"allow\"}"), 0, "never a pass");
    close (holder);
    sl_buf_free (&policy);
    s_stop (&run);
}
