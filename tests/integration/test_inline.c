/*  Integration: the gateway's own requests (gateway_leg.h) through a real
    stack: an inline answer (REQ inl) goes through the ingest, which calls
    no upstream, and the aggregator, judge and emitter judge and render it
    as they would a model's; the request policy judges the leg's request.

    No client can start a leg: the stack's gateway is the test build
    (tests/integration/leg/leg_driver.c, the real gateway with a driver
    that starts legs from files in SLUICE_LEG_DIR).
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"

#define TIMEOUT_MS 20000
#define SECRET "AKIAQWERTYUIOPASDFGH"
#define PLACEHOLDER "[REDACTED:aws-key]"

static const char *s_policy =
    "default: allow\n"
    "rules:\n"
    "  - id: no-repo-delete\n"
    "    tool: mcp__github__delete_repo\n"
    "    action: block\n"
    "    message: \"sluice blocked {tool} (rule {rule}).\"\n"
    "  - id: aws-key\n"
    "    on: request\n"
    "    redact: {regex: 'AKIA[0-9A-Z]{16}', placeholder: '" PLACEHOLDER "'}\n"
    "    action: redact\n"
    "  - id: no-keys\n"
    "    on: request\n"
    "    part: user\n"
    "    text: {contains: 'upload the keys'}\n"
    "    action: terminate\n"
    "    message: \"sluice refused this request: {reason}.\"\n";

//  A call leg's request (%1: its user message): the tool's definition (%2)
//  its only tool.
#define CALL_BODY \
    "{\"model\":\"mcp\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]," \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"%s\",\"parameters\":{\"type\":\"object\"}}}]}"
//  Its inline answer: the call, as an OpenAI upstream would stream it.
#define CALL_ANSWER \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"mcp\",\"choices\":[{\"index\":0," \
    "\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\"," \
    "\"function\":{\"name\":\"%s\",\"arguments\":\"{\\\"title\\\":\\\"x\\\"}\"}}]}}]}\n\n" \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"mcp\",\"choices\":[{\"index\":0," \
    "\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" \
    "data: [DONE]\n\n"
//  A result leg's request: the server's result as the call's tool result.
#define RESULT_BODY \
    "{\"model\":\"mcp\",\"messages\":[{\"role\":\"user\",\"content\":\"MCP tools/call\"}," \
    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":" \
    "{\"name\":\"mcp__github__create_issue\",\"arguments\":\"{}\"}}]}," \
    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"created; key " SECRET "\"}]}"
#define RESULT_ANSWER \
    "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"model\":\"mcp\",\"choices\":[{\"index\":0," \
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"stop\"}]}\n\n" \
    "data: [DONE]\n\n"

typedef struct {
    int status;
    int refused;
    sl_buf_t answer;
    sl_buf_t judged;
} s_result_t;

static void
s_put (const char *dir, int n, const char *suffix, const char *text)
{
    char name [64];
    snprintf (name, sizeof name, "%d.%s", n, suffix);
    cr_assert_eq (harness_write (dir, name, text), 0);
}

//  Start leg n (its files, then its ready mark).
static void
s_leg (const char *dir, int n, const char *body, const char *answer, const char *mcp)
{
    s_put (dir, n, "body", body);
    s_put (dir, n, "answer", answer);
    s_put (dir, n, "mcp", mcp);
    s_put (dir, n, "ready", "1");
}

//  Wait (bounded) for leg n's end and read it.
static bool
s_wait (const char *dir, int n, s_result_t *r)
{
    char path [512];
    snprintf (path, sizeof path, "%s/%d.done", dir, n);
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (access (path, F_OK) != 0 && zclock_mono () < deadline)
        zclock_sleep (20);
    if (access (path, F_OK) != 0)
        return false;
    sl_buf_t status = { 0 };
    snprintf (path, sizeof path, "%s/%d.status", dir, n);
    harness_read (path, &status);
    r->status = 0;
    r->refused = 0;
    sscanf (sl_buf_cstr (&status), "%d %d", &r->status, &r->refused);
    sl_buf_free (&status);
    snprintf (path, sizeof path, "%s/%d.answer.out", dir, n);
    harness_read (path, &r->answer);
    snprintf (path, sizeof path, "%s/%d.judged", dir, n);
    harness_read (path, &r->judged);
    return true;
}

static void
s_result_free (s_result_t *r)
{
    sl_buf_free (&r->answer);
    sl_buf_free (&r->judged);
}

Test (inline, legs_are_judged_by_the_pipeline_without_an_upstream_call, .timeout = 120)
{
    const char *bin = getenv ("SLUICE_LEGTEST_BIN_DIR");
    char legs [] = "/tmp/sluice-legs-XXXXXX";
    cr_assert_not_null (mkdtemp (legs));
    setenv ("SLUICE_LEG_DIR", legs, 1);
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 1, .audit_spool = "",
                          .gateway_bin_dir = bin ? bin : "build/asan/legtest" };
    sluice_stack_t *s = stack_start (&opts);
    unsetenv ("SLUICE_LEG_DIR");
    cr_assert_not_null (s, "the stack came up");
    char store [] = "/tmp/sluice-legs-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (store));
    const char *store_args [] = { "--data-dir", store, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store_args, NULL, &audit), "sluice-audit comes up");

    char body [1024], answer [1024];
    //  1: an allowed call is released as the answer said it.
    snprintf (body, sizeof body, CALL_BODY, "MCP tools/call", "mcp__github__create_issue");
    snprintf (answer, sizeof answer, CALL_ANSWER, "mcp__github__create_issue");
    s_leg (legs, 1, body, answer, "tools/call create_issue");
    //  2: a call the policy blocks is replaced by its notice.
    snprintf (body, sizeof body, CALL_BODY, "MCP tools/call", "mcp__github__delete_repo");
    snprintf (answer, sizeof answer, CALL_ANSWER, "mcp__github__delete_repo");
    s_leg (legs, 2, body, answer, "tools/call delete_repo");
    //  3: a result the request policy redacts: the judged request says so.
    s_leg (legs, 3, RESULT_BODY, RESULT_ANSWER, "tools/call create_issue result");
    //  4: a request the request policy refuses: no answer to read, said so.
    snprintf (body, sizeof body, CALL_BODY, "please upload the keys", "mcp__github__create_issue");
    snprintf (answer, sizeof answer, CALL_ANSWER, "mcp__github__create_issue");
    s_leg (legs, 4, body, answer, "tools/call create_issue");

    s_result_t r = { 0 };
    cr_assert (s_wait (legs, 1, &r), "leg 1 ended");
    const char *a = sl_buf_cstr (&r.answer);
    cr_expect_eq (r.status, 200, "released: %s", a);
    cr_expect_not (r.refused);
    cr_expect_not_null (strstr (a, "\"tool_calls\""), "a tool call: %s", a);
    cr_expect_not_null (strstr (a, "mcp__github__create_issue"), "%s", a);
    cr_expect_not_null (strstr (a, "title"), "with its arguments: %s", a);
    cr_expect_not_null (strstr (sl_buf_cstr (&r.judged), "\"messages\""), "the judged request");
    s_result_free (&r);

    cr_assert (s_wait (legs, 2, &r), "leg 2 ended");
    a = sl_buf_cstr (&r.answer);
    cr_expect_eq (r.status, 200, "%s", a);
    cr_expect_null (strstr (a, "\"tool_calls\""), "the call is not released: %s", a);
    cr_expect_not_null (strstr (a, "sluice blocked mcp__github__delete_repo (rule no-repo-delete)."),
                        "its notice instead: %s", a);
    s_result_free (&r);

    cr_assert (s_wait (legs, 3, &r), "leg 3 ended");
    cr_expect_eq (r.status, 200, "%s", sl_buf_cstr (&r.answer));
    cr_expect_not (r.refused);
    const char *j = sl_buf_cstr (&r.judged);
    cr_expect_not_null (strstr (j, PLACEHOLDER), "the result redacted: %s", j);
    cr_expect_null (strstr (j, SECRET), "the secret is gone: %s", j);
    s_result_free (&r);

    cr_assert (s_wait (legs, 4, &r), "leg 4 ended");
    cr_expect_eq (r.status, 403, "%s", sl_buf_cstr (&r.answer));
    cr_expect (r.refused, "refused by the request policy");
    cr_expect_not_null (strstr (sl_buf_cstr (&r.answer), "sluice refused this request"), "%s",
                        sl_buf_cstr (&r.answer));
    cr_expect_eq (r.judged.len, 0, "nothing judged to read back");
    s_result_free (&r);

    //  Counted as legs, not as client requests; nothing called upstream.
    int gm = atoi (s->metrics [5]), im = atoi (s->metrics [1]);
    cr_expect_eq (metric_value (gm, "sluice_mcp_legs_total{kind=\"call\",outcome=\"ok\"}"), 2);
    cr_expect_eq (metric_value (gm, "sluice_mcp_legs_total{kind=\"result\",outcome=\"ok\"}"), 1);
    cr_expect_eq (metric_value (gm, "sluice_requests_total{dialect=\"openai\",team=\"default\"}"), 0);
    cr_expect_eq (metric_value (gm, "sluice_ttfb_seconds_count"), 0);
    cr_expect_eq (metric_value (gm, "sluice_mcp_legs_total{kind=\"call\",outcome=\"refused\"}"), 1);
    cr_expect_eq (metric_value (im, "sluice_streams_total"), 4);
    cr_expect_eq (metric_value (im, "sluice_upstream_retries_total"), 0);
    cr_expect_eq (harness_wait_metric_down (im, "sluice_streams_active", 0, TIMEOUT_MS), 0,
                  "every leg's stream let go at the ingest");
    //  The audit recorded each leg's stream with the MCP request it stands for.
    cr_expect_geq (audit_wait_streams (&audit, "", 4, TIMEOUT_MS), 4);
    json_t *list = audit_get (&audit, "/api/streams?limit=10");
    cr_assert_not_null (list);
    json_t *streams = json_object_get (list, "streams");
    int with_mcp = 0;
    for (size_t i = 0; i < json_array_size (streams); i++) {
        char path [128];
        snprintf (path, sizeof path, "/api/streams/%s",
                  json_string_value (json_object_get (json_array_get (streams, i), "sid")));
        json_t *stream = audit_get (&audit, path);
        char *text = stream ? json_dumps (stream, JSON_COMPACT) : NULL;
        if (text && (strstr (text, "\"mcp\":\"tools/call delete_repo\"")
                 ||  strstr (text, "\"mcp\":\"tools/call create_issue\"")
                 ||  strstr (text, "\"mcp\":\"tools/call create_issue result\""))
                 &&  strstr (text, "mcp:github"))
            with_mcp++;
        free (text);
        json_decref (stream);
    }
    json_decref (list);
    cr_expect_eq (with_mcp, 4, "each stream names its MCP request and its server");
    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s' '%s'", legs, store);
    cr_expect_eq (system (cmd), 0);
}

//  A leg answered when judged (a result leg, as the MCP front starts it):
//  its done comes with what the request policy made of it, before the
//  pipeline's answer (none is given: the answer is empty), with the
//  caller given back (the driver lets it go in done); the leg's stream
//  goes on through the pipeline, and its record reaches the audit after.
Test (inline, a_leg_answered_when_judged_is_still_recorded, .timeout = 120)
{
    const char *bin = getenv ("SLUICE_LEGTEST_BIN_DIR");
    char legs [] = "/tmp/sluice-legs-XXXXXX";
    cr_assert_not_null (mkdtemp (legs));
    setenv ("SLUICE_LEG_DIR", legs, 1);
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 1, .audit_spool = "",
                          .gateway_bin_dir = bin ? bin : "build/asan/legtest" };
    sluice_stack_t *s = stack_start (&opts);
    unsetenv ("SLUICE_LEG_DIR");
    cr_assert_not_null (s, "the stack came up");
    char store [] = "/tmp/sluice-legs-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (store));
    const char *store_args [] = { "--data-dir", store, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store_args, NULL, &audit), "sluice-audit comes up");

    //  1: a result the request policy redacts.
    s_put (legs, 1, "early", "1");
    s_leg (legs, 1, RESULT_BODY, RESULT_ANSWER, "tools/call create_issue result");
    //  2: a result the request policy refuses.
    char body [1024];
    snprintf (body, sizeof body, CALL_BODY, "please upload the keys", "mcp__github__create_issue");
    s_put (legs, 2, "early", "1");
    s_leg (legs, 2, body, RESULT_ANSWER, "tools/call create_issue result");

    s_result_t r = { 0 };
    cr_assert (s_wait (legs, 1, &r), "leg 1 answered");
    cr_expect_eq (r.status, 200);
    cr_expect_not (r.refused);
    cr_expect_eq (r.answer.len, 0, "answered when judged, not by the pipeline: %s", sl_buf_cstr (&r.answer));
    const char *j = sl_buf_cstr (&r.judged);
    cr_expect_not_null (strstr (j, PLACEHOLDER), "the result redacted: %s", j);
    cr_expect_null (strstr (j, SECRET), "the secret is gone: %s", j);
    s_result_free (&r);

    cr_assert (s_wait (legs, 2, &r), "leg 2 answered");
    cr_expect_eq (r.status, 403, "the refusal's status");
    cr_expect (r.refused, "refused by the request policy");
    cr_expect_eq (r.answer.len, 0, "answered when judged: %s", sl_buf_cstr (&r.answer));
    cr_expect_eq (r.judged.len, 0, "nothing judged to read back");
    s_result_free (&r);

    int gm = atoi (s->metrics [5]), im = atoi (s->metrics [1]);
    cr_expect_eq (metric_value (gm, "sluice_mcp_legs_total{kind=\"result\",outcome=\"ok\"}"), 1);
    cr_expect_eq (metric_value (gm, "sluice_mcp_legs_total{kind=\"result\",outcome=\"refused\"}"), 1);
    cr_expect_eq (metric_value (im, "sluice_streams_total"), 2, "both legs went on to the ingest");
    cr_expect_eq (harness_wait_metric_down (im, "sluice_streams_active", 0, TIMEOUT_MS), 0,
                  "and ended there");
    //  Their records follow their answers.
    cr_expect_geq (audit_wait_streams (&audit, "", 2, TIMEOUT_MS), 2);
    json_t *list = audit_get (&audit, "/api/streams?limit=10");
    cr_assert_not_null (list);
    json_t *streams = json_object_get (list, "streams");
    int recorded = 0;
    for (size_t i = 0; i < json_array_size (streams); i++) {
        char path [128];
        snprintf (path, sizeof path, "/api/streams/%s",
                  json_string_value (json_object_get (json_array_get (streams, i), "sid")));
        json_t *stream = audit_get (&audit, path);
        char *text = stream ? json_dumps (stream, JSON_COMPACT) : NULL;
        if (text && strstr (text, "\"mcp\":\"tools/call create_issue result\"") && strstr (text, "mcp:github"))
            recorded++;
        free (text);
        json_decref (stream);
    }
    json_decref (list);
    cr_expect_eq (recorded, 2, "each leg's record reached the audit");
    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s' '%s'", legs, store);
    cr_expect_eq (system (cmd), 0);
}
