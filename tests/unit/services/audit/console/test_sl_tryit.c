/*  Unit tests: services/audit/console/sl_tryit, the console's "try it": a
    recorded stream becomes a capture again, and a policy over a capture
    runs the replay library (the blocks, the verdicts, what a client of
    the capture's or another dialect would receive); a request it cannot
    run says why. Over a SQLite store in a temporary directory holding
    one recorded stream (records.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/audit/console/sl_tryit.h"
#include "tests/unit/services/audit/records.h"

static char s_dir [64];
static sl_store_t *s_store;
static char s_sid [SL_SID_HEX_SIZE];

static const char *s_policy =
    "rules:\n  - id: no-rm-rf\n    tool: run_shell\n    args: [{pointer: /command, regex: 'rm[[:space:]]+-'}]\n"
    "    action: block\n";

//  A recorded stream: text, get_weather allowed, run_shell blocked.
static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-tryit-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128], *error = NULL;
    snprintf (path, sizeof path, "%s/a.db", s_dir);
    s_store = sl_store_open (path, &error);
    cr_assert_not_null (s_store, "%s", error ? error : "");
    const uint8_t sid [SL_SID_SIZE] = { 0xab, 0xcd };
    sl_sid_hex (sid, s_sid);
    records_recorded (s_store, sid);
}

static void
s_teardown (void)
{
    sl_store_close (&s_store);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

Test (sl_tryit, a_recorded_stream_becomes_a_capture_the_policy_judges_again, .init = s_setup, .fini = s_teardown)
{
    sl_buf_t capture = { 0 };
    cr_assert_eq (sl_tryit_capture (s_store, s_sid, &capture), 0);
    cr_expect_eq (sl_tryit_capture (s_store, "0123456789abcdef0123456789abcdef", &capture), 1);
    json_t *c = json_loadb (capture.data, capture.len, 0, NULL);
    cr_assert_not_null (c, "%s", sl_buf_cstr (&capture));
    const char *text = json_string_value (json_object_get (c, "capture"));
    cr_assert_not_null (text);
    cr_expect_not_null (strstr (text, "\"name\":\"run_shell\",\"arguments\":\"{\\\"command\\\":\\\"rm -rf /\\\"}\""),
                        "the call as the model sent it: %s", text);
    cr_expect_null (strstr (text, "sluice blocked"), "not the judge's notice");
    cr_expect_not_null (strstr (text, "\"finish_reason\":\"tool_calls\""), "%s", text);
    //  Through the replay library, with the policy.
    json_t *req = json_pack ("{s:s, s:s, s:s, s:O, s:O, s:O}", "capture", text, "dialect", "openai",
                             "policy", s_policy, "model", json_object_get (c, "model"),
                             "tools", json_object_get (c, "tools"), "last_user", json_object_get (c, "last_user"));
    char *body = json_dumps (req, 0);
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_tryit_run (sl_str (body), &out), 0);
    json_t *r = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (r, "%s", sl_buf_cstr (&out));
    json_t *verdicts = json_object_get (r, "verdicts");
    cr_expect_eq (json_array_size (verdicts), 2, "%s", sl_buf_cstr (&out));
    json_t *shell = json_array_get (verdicts, 1);
    cr_expect_str_eq (json_string_value (json_object_get (shell, "name")), "run_shell");
    cr_expect_str_eq (json_string_value (json_object_get (shell, "action")), "block");
    cr_expect_str_eq (json_string_value (json_object_get (shell, "rule")), "no-rm-rf");
    cr_expect_not_null (strstr (json_string_value (json_object_get (r, "client")), "sluice blocked a call to the tool"),
                        "what an OpenAI client would receive");
    cr_expect_not_null (json_object_get (r, "finish"));
    //  Rendered for a client of another dialect, as the gateway translates.
    json_object_set_new (req, "client", json_string ("anthropic"));
    char *translated = json_dumps (req, 0);
    sl_buf_reset (&out);
    cr_assert_eq (sl_tryit_run (sl_str (translated), &out), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"client\":\"anthropic\""), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "event: message_start"), "an Anthropic client's events");
    free (translated);
    //  A policy that does not load says where.
    sl_buf_reset (&out);
    cr_assert_eq (sl_tryit_run (SL_STR_LIT ("{\"capture\":\"data: {}\\n\\n\",\"policy\":\"rules: [\"}"), &out), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"policy_error\":\"policy:"), "%s", sl_buf_cstr (&out));
    sl_buf_reset (&out);
    cr_expect_eq (sl_tryit_run (SL_STR_LIT ("{\"policy\":\"\"}"), &out), -1, "no capture");
    sl_buf_reset (&out);
    cr_expect_eq (sl_tryit_run (SL_STR_LIT ("[]"), &out), -1);
    sl_buf_reset (&out);
    cr_expect_eq (sl_tryit_run (SL_STR_LIT ("{\"capture\":\"x\",\"dialect\":\"cobol\"}"), &out), -1);
    free (body);
    json_decref (req);
    json_decref (r);
    json_decref (c);
    sl_buf_free (&out);
    sl_buf_free (&capture);
}

//  What it will not run is answered {"error": why}, as JSON.
Test (sl_tryit, a_request_it_will_not_run_says_why)
{
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_tryit_run (SL_STR_LIT ("not json"), &out), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"error\":\"the request is not a JSON object\""), "%s",
                        sl_buf_cstr (&out));
    sl_buf_reset (&out);
    cr_expect_eq (sl_tryit_run (SL_STR_LIT ("{\"policy\":\"rules: []\"}"), &out), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "no capture"), "%s", sl_buf_cstr (&out));
    //  A capture past the bound is not tried.
    size_t big = SL_TRYIT_MAX_CAPTURE + 1;
    json_t *req = json_object ();
    char *capture = malloc (big + 1);
    cr_assert_not_null (capture);
    memset (capture, 'x', big);
    capture [big] = 0;
    json_object_set_new (req, "capture", json_string (capture));
    char *body = json_dumps (req, 0);
    sl_buf_reset (&out);
    cr_expect_eq (sl_tryit_run (sl_str (body), &out), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "larger than the console tries"), "%.200s", sl_buf_cstr (&out));
    json_t *answer = json_loadb (out.data, out.len, 0, NULL);
    cr_expect_not_null (answer, "the answer is JSON");
    json_decref (answer);
    free (body);
    free (capture);
    json_decref (req);
    sl_buf_free (&out);
}
