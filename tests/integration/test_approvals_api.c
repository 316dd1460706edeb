/*  Integration: the approvals APIs around a judge - the gateway's
    /v1/approvals and what sluice-audit does with approvals - through the
    real programs on loopback, with the judges' control socket played by
    the test (fake_judge.h):

    - without --judge-approvals the API answers 503;
    - with a keys file: no key or a wrong one 401, a key that is no
      approver 403 (the judge says so), an unknown id 404, a malformed
      body 400 naming the field, every refusal counted by status; an
      approver key lists and decides, and the judge reads who it is;
    - without keys, a caller on this machine decides as "loopback";
    - a streaming client that leaves makes the gateway tell the judges
      (cancel, with its stream id).

    Every wait is bounded. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/fake_judge.h"
#include "tests/integration/harness.h"
#include "tests/keyfile_fixture.h"

#define TIMEOUT_MS 15000
#define PORT_GATEWAY_JUDGE 27301        //  the fake judge of the keys-file test
#define PORT_LOOPBACK_JUDGE 27302       //  of the loopback test
#define APPROVER "sk-test-approver"
#define PLAIN "sk-test-plain"
#define DECIDE "{\"decision\":\"approve\",\"comment\":\"looks fine\"}"
#define SLOW_CHAT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

static long
s_call (int port, const char *method, const char *path, const char *body, const char *key, sl_buf_t *out)
{
    char auth [96];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key ? key : "");
    const char *headers [] = { "Content-Type: application/json", key ? auth : NULL, NULL };
    sl_buf_reset (out);
    return http_request (port, method, path, body, headers, out, TIMEOUT_MS);
}

static double
s_refused (sluice_stack_t *s, int status)
{
    char name [96];
    snprintf (name, sizeof name, "sluice_approvals_refused_total{status=\"%d\"}", status);
    return metric_value (atoi (s->metrics [5]), name);
}

Test (approvals_api, without_judges_the_api_answers_503)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    sl_buf_t out = { 0 };
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, NULL, &out), 503);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "approvals are not configured"), "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/" FAKE_JUDGE_ID, DECIDE, NULL, &out), 503);
    cr_expect_eq (s_refused (s, 503), 2);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
}

Test (approvals_api, the_gateway_api_checks_who_asks_and_what)
{
    char dir [] = "/tmp/sluice-approvals-XXXXXX", keys [2048] = "keys:\n", path [128], judges [64];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "alice-approver", APPROVER, "eng", "alice", "    approver: true\n");
    keyfile_entry (keys, sizeof keys, "bob-plain", PLAIN, "eng", "bob", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    snprintf (judges, sizeof judges, "tcp://127.0.0.1:%d", PORT_GATEWAY_JUDGE);
    const char *gateway_args [] = { "--keys-file", path, "--judge-approvals", judges, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args, .mock_delay_ms = 1000 });
    cr_assert_not_null (s);
    //  The judge comes up after the gateway: its link connects when it can.
    fake_judge_t *judge = fake_judge_start (s->keys, PORT_GATEWAY_JUDGE);
    cr_assert_not_null (judge);
    sl_buf_t out = { 0 };
    const char *one = "/v1/approvals/" FAKE_JUDGE_ID;
    //  Who: no key, a wrong key.
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, NULL, &out), 401);
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, "sk-wrong", &out), 401);
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, "sk-wrong", &out), 401);
    //  An approver lists what it may decide; the judge reads who asks.
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, APPROVER, &out), 200, "%s", sl_buf_cstr (&out));
    json_t *list = json_loads (sl_buf_cstr (&out), 0, NULL);
    json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "id")), FAKE_JUDGE_ID, "%s", sl_buf_cstr (&out));
    cr_expect_str_eq (json_string_value (json_object_get (first, "tool")), "shell");
    cr_expect_not_null (json_object_get (first, "arguments"));
    cr_expect_not_null (json_object_get (first, "stream"));
    cr_expect_not_null (json_object_get (first, "identity"));
    json_decref (list);
    fake_judge_seen_t seen;
    fake_judge_seen (judge, &seen);
    cr_expect_str_eq (seen.last_by, "{\"approver\":true,\"console\":false,\"key_id\":\"alice-approver\","
                                    "\"loopback\":false,\"team\":\"eng\",\"user\":\"alice\"}");
    //  What: a malformed body, an unknown id, a key that is no approver.
    cr_expect_eq (s_call (s->http_port, "POST", one, "{\"decision\":\"yes\"}", APPROVER, &out), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "decision"), "names the field: %s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", one, "{\"decision\":\"approve\",\"remember_minutes\":\"5\"}",
                          APPROVER, &out), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "remember_minutes"), "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/ffffffffffffffffffffffffffffffff", DECIDE, APPROVER,
                          &out), 404);
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/not-an-id", DECIDE, APPROVER, &out), 404);
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, PLAIN, &out), 403, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "not an approver"), "the judge's reason: %s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "PUT", one, DECIDE, APPROVER, &out), 405);
    //  The approver decides; the judge gets the decision as sent.
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, APPROVER, &out), 200, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"state\":\"approved\""), "%s", sl_buf_cstr (&out));
    fake_judge_seen (judge, &seen);
    cr_expect_not_null (strstr (seen.last_decide, "\"comment\":\"looks fine\""), "%s", seen.last_decide);
    //  Every refusal is counted by its status.
    cr_expect_eq (s_refused (s, 401), 3);
    cr_expect_eq (s_refused (s, 400), 2);
    cr_expect_eq (s_refused (s, 404), 2);
    cr_expect_eq (s_refused (s, 403), 1);
    //  A streaming client that leaves: the judges hear of its stream.
    const char *auth [] = { "Authorization: Bearer " PLAIN, NULL };
    sl_buf_reset (&out);
    http_request (s->http_port, "POST", "/v1/chat/completions", SLOW_CHAT, auth, &out, 400);
    cr_expect (fake_judge_wait_cancels (judge, 1, TIMEOUT_MS), "a cancel reached the judge");
    fake_judge_seen (judge, &seen);
    json_t *cancel = json_loads (seen.last_cancel, 0, NULL);
    const char *stream = json_string_value (json_object_get (cancel, "stream"));
    cr_expect (stream && strlen (stream) == 32, "the stream's id: %s", seen.last_cancel);
    json_decref (cancel);
    sl_buf_free (&out);
    fake_judge_stop (&judge);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

Test (approvals_api, without_keys_a_caller_on_this_machine_decides_as_loopback)
{
    char judges [64];
    snprintf (judges, sizeof judges, "tcp://127.0.0.1:%d", PORT_LOOPBACK_JUDGE);
    const char *gateway_args [] = { "--judge-approvals", judges, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args });
    cr_assert_not_null (s);
    fake_judge_t *judge = fake_judge_start (s->keys, PORT_LOOPBACK_JUDGE);
    cr_assert_not_null (judge);
    sl_buf_t out = { 0 };
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/" FAKE_JUDGE_ID, "{\"decision\":\"deny\"}", NULL, &out),
                  200, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"state\":\"denied\""), "%s", sl_buf_cstr (&out));
    fake_judge_seen_t seen;
    fake_judge_seen (judge, &seen);
    cr_expect_str_eq (seen.last_by, "{\"approver\":false,\"console\":false,\"loopback\":true}");
    sl_buf_free (&out);
    fake_judge_stop (&judge);
    cr_expect_eq (stack_stop (s), 0);
}
