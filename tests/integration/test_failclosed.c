/*  Integration: the judge fails closed, through the whole stack, in every
    upstream dialect, streaming and not.

    The mock's mock-danger-* models send run_shell {"command":"rm -rf /"}
    whole, then cut the response: a length finish, the provider's error, a
    body that simply ends, or (mock-danger-huge) a call too large for a
    stream or for the judge's bound. Each time the call must be blocked and
    nothing of it may reach the client: no fragment of its arguments, not
    its name as a tool call. The verdict, read from the emitter's PUB
    socket as sluice-tap reads it, says why (the cut in its reason). Every
    wait is bounded and polls. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/verdict_tap.h"

#define TIMEOUT_MS 30000
#define HUGE_OVER_THE_STREAM_BOUND_KIB (17 * 1024)  //  over a stream's 16 MiB
#define HUGE_OVER_THE_CALL_BOUND_KIB 2048   //  over the judge's 1 MiB, under a stream's 16 MiB

#define NO_RM_RF_NOTICE \
    "sluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf)."
#define CUT_NOTICE(cut) \
    "sluice blocked a call to run_shell: the model's call was cut off (" cut ") and cannot be judged."

//  A policy whose one rule concerns run_shell but does not match the
//  dangerous call: what no rule matched is left to on_incomplete.
static const char *s_sudo_policy =
    "default: allow\n"
    "rules:\n"
    "  - id: no-sudo\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, prefix: sudo}]\n"
    "    action: block\n";

//  --------------------------------------------------------------------------
//  The four client dialects, each against the upstream of its own dialect

typedef struct {
    const char *name;
    const char *stream_path;            //  %s: the model
    const char *plain_path;
    const char *body;                   //  %s: the model (Gemini: in the path), %s: "stream":true,
                                        //  or nothing; %ld: max tokens
    const char *call_marker;            //  how a tool call shows in this dialect's output
} s_dialect_t;

static const s_dialect_t s_dialects [] = {
    { "openai", "/v1/chat/completions", "/v1/chat/completions",
      "{\"model\":\"%s\",%s\"max_tokens\":%ld,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]}",
      "\"tool_calls\"" },
    { "anthropic", "/v1/messages", "/v1/messages",
      "{\"model\":\"%s\",%s\"max_tokens\":%ld,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]}",
      "\"tool_use\"" },
    { "responses", "/v1/responses", "/v1/responses",
      "{\"model\":\"%s\",%s\"max_output_tokens\":%ld,\"input\":\"tidy up\"}",
      "\"function_call\"" },
    { "gemini", "/v1beta/models/%s:streamGenerateContent?alt=sse", "/v1beta/models/%s:generateContent",
      "{%.0s%s\"generationConfig\":{\"maxOutputTokens\":%ld},"
      "\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"tidy up\"}]}]}",
      "\"functionCall\"" },
};
#define DIALECTS (sizeof s_dialects / sizeof s_dialects [0])

//  POST model in dialect d; the status, the whole answer in out.
static int
s_ask (sluice_stack_t *s, const s_dialect_t *d, const char *model, bool stream, long max_tokens, sl_buf_t *out)
{
    char path [256], body [512];
    snprintf (path, sizeof path, stream ? d->stream_path : d->plain_path, model);
    //  Gemini streams by its path, not a field.
    bool gemini = strcmp (d->name, "gemini") == 0;
    snprintf (body, sizeof body, d->body, model, stream && !gemini ? "\"stream\":true," : "", max_tokens);
    sl_buf_reset (out);
    return http_request (s->http_port, "POST", path, body, NULL, out, TIMEOUT_MS);
}

//  --------------------------------------------------------------------------
//  What must hold for every answer

typedef struct {
    const char *model;
    long max_tokens;                    //  the mock's size for mock-danger-huge, KiB
    const char *rule;                   //  the rule the verdict names
    const char *cut;                    //  the reason names "cut off (<cut>)"
    const char *notice;                 //  the text in the call's place
    bool fails;                         //  the response ends with an error
} s_case_t;

static void
s_expect_nothing_of_the_call (const s_dialect_t *d, const char *mode, const char *answer)
{
    cr_expect_null (strstr (answer, "rm -rf"), "%s %s: no fragment of the arguments: %.400s", d->name, mode,
                    answer);
    cr_expect_null (strstr (answer, "PADDING"), "%s %s: none of the huge arguments", d->name, mode);
    cr_expect_null (strstr (answer, "\"name\":\"run_shell\""), "%s %s: not its name as a call", d->name, mode);
    cr_expect_null (strstr (answer, d->call_marker), "%s %s: no tool call at all: %.400s", d->name, mode,
                    answer);
}

static void
s_expect_verdict (verdict_tap_t *tap, int *seen, const s_dialect_t *d, const char *mode, const s_case_t *c)
{
    const sl_msg_t *v = verdict_tap_next (tap, seen, TIMEOUT_MS);
    cr_assert_not_null (v, "%s %s: a verdict", d->name, mode);
    char reason [512], want [64];
    snprintf (reason, sizeof reason, "%.*s", (int) v->reason.len, v->reason.ptr ? v->reason.ptr : "");
    snprintf (want, sizeof want, "cut off (%s)", c->cut);
    cr_expect (sl_str_eq (v->name, "run_shell"), "%s %s", d->name, mode);
    cr_expect_eq (v->action, SL_ACT_BLOCK, "%s %s: %s", d->name, mode, sl_action_name (v->action));
    cr_expect (sl_str_eq (v->rule, c->rule), "%s %s: rule %.*s", d->name, mode, (int) v->rule.len,
               v->rule.ptr ? v->rule.ptr : "(none)");
    cr_expect_eq (v->check, strcmp (c->rule, "on_incomplete") == 0 ? SL_CHK_DEFAULT : SL_CHK_RAN,
                  "%s %s", d->name, mode);
    cr_expect_not_null (strstr (reason, want), "%s %s: reason '%s' names the cut", d->name, mode, reason);
}

//  Every dialect, streaming and not: blocked, nothing of the call out.
static void
s_run_case (sluice_stack_t *s, const s_case_t *c)
{
    verdict_tap_t *tap = verdict_tap_open (s);
    int seen = 0;
    sl_buf_t answer = { 0 };
    for (size_t i = 0; i < DIALECTS; i++) {
        const s_dialect_t *d = &s_dialects [i];
        //  Streaming: the text went out first, so a failure is an error
        //  event after the notice, on a 200.
        int status = s_ask (s, d, c->model, true, c->max_tokens, &answer);
        const char *raw = sl_buf_cstr (&answer);
        cr_expect_eq (status, 200, "%s streaming: %d", d->name, status);
        cr_expect_not_null (strstr (raw, "Cleaning up."), "%s streaming: the text before the call", d->name);
        cr_expect_not_null (strstr (raw, c->notice), "%s streaming: the notice in the call's place: %.600s",
                            d->name, raw);
        if (c->fails)
            cr_expect (strstr (raw, "error") != NULL, "%s streaming: the stream ends with its error", d->name);
        s_expect_nothing_of_the_call (d, "streaming", raw);
        s_expect_verdict (tap, &seen, d, "streaming", c);

        //  Not streaming: one body built from what the judge released, or
        //  an HTTP error when the response failed.
        status = s_ask (s, d, c->model, false, c->max_tokens, &answer);
        raw = sl_buf_cstr (&answer);
        if (c->fails)
            cr_expect_geq (status, 400, "%s: a failed response is an HTTP error (%d)", d->name, status);
        else {
            cr_expect_eq (status, 200, "%s: %d %.300s", d->name, status, raw);
            cr_expect_not_null (strstr (raw, c->notice), "%s: the body has the notice: %.600s", d->name, raw);
        }
        s_expect_nothing_of_the_call (d, "body", raw);
        s_expect_verdict (tap, &seen, d, "body", c);
    }
    sl_buf_free (&answer);
    verdict_tap_close (tap);
}

static sluice_stack_t *
s_stack (const char *policy, const char *policy_text)
{
    stack_opts_t opts = { .policy = policy, .policy_text = policy_text, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    return s;
}

//  --------------------------------------------------------------------------
//  The shipped policy: no-rm-rf sees the arguments as far as they came

Test (failclosed, a_call_cut_by_length_is_blocked)
{
    sluice_stack_t *s = s_stack ("deploy/policy.yaml", NULL);
    s_run_case (s, &(s_case_t) { "mock-danger-length", 100, "no-rm-rf", "length", NO_RM_RF_NOTICE, false });
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

Test (failclosed, a_call_cut_by_an_error_is_blocked)
{
    sluice_stack_t *s = s_stack ("deploy/policy.yaml", NULL);
    s_run_case (s, &(s_case_t) { "mock-danger-error", 100, "no-rm-rf", "error", NO_RM_RF_NOTICE, true });
    cr_expect_eq (stack_stop (s), 0);
}

Test (failclosed, a_call_cut_by_the_end_of_the_body_is_blocked)
{
    sluice_stack_t *s = s_stack ("deploy/policy.yaml", NULL);
    s_run_case (s, &(s_case_t) { "mock-danger-eof", 100, "no-rm-rf", "eof", NO_RM_RF_NOTICE, true });
    cr_expect_eq (stack_stop (s), 0);
}

//  17 MiB of arguments: the judge stops keeping them at its bound, the
//  aggregator ends the stream at 16 MiB (stream_too_large); none of it
//  reaches the client, before the error or after.
Test (failclosed, a_call_over_the_stream_bound_is_blocked)
{
    sluice_stack_t *s = s_stack ("deploy/policy.yaml", NULL);
    s_run_case (s, &(s_case_t) { "mock-danger-huge", HUGE_OVER_THE_STREAM_BOUND_KIB, "no-rm-rf", "size",
                                 NO_RM_RF_NOTICE, true });
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  No rule matches: on_incomplete (default block) decides

Test (failclosed, what_no_rule_matched_is_left_to_on_incomplete)
{
    sluice_stack_t *s = s_stack (NULL, s_sudo_policy);
    s_run_case (s, &(s_case_t) { "mock-danger-length", 100, "on_incomplete", "length", CUT_NOTICE ("length"),
                                 false });
    s_run_case (s, &(s_case_t) { "mock-danger-error", 100, "on_incomplete", "error", CUT_NOTICE ("error"),
                                 true });
    s_run_case (s, &(s_case_t) { "mock-danger-eof", 100, "on_incomplete", "eof", CUT_NOTICE ("eof"), true });
    cr_expect_eq (stack_stop (s), 0);
}

//  A whole call of 2 MiB ends cleanly, but is over the judge's 1 MiB bound:
//  cut for size, never released, and the response finishes normally.
Test (failclosed, a_call_over_the_judges_bound_is_blocked)
{
    sluice_stack_t *s = s_stack (NULL, s_sudo_policy);
    s_run_case (s, &(s_case_t) { "mock-danger-huge", HUGE_OVER_THE_CALL_BOUND_KIB, "on_incomplete", "size",
                                 CUT_NOTICE ("size"), false });
    cr_expect_eq (stack_stop (s), 0);
}
