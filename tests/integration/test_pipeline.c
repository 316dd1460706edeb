/*  Integration: the five processes and the mock on loopback, driven over
    HTTP like a client would. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 15000

static const char *
s_policy_path (void)
{
    //  The default policy shipped in deploy/ (tests run from the repo root).
    return "deploy/policy.yaml";
}

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  The mock's weather-and-shell stream through the stack: its body and
//  what a chat client reads of it (HTTP 200, every event JSON).
static void
s_tools_stream (sluice_stack_t *s, sl_buf_t *body, chat_stream_t *cs)
{
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"),
                               NULL, body, TIMEOUT_MS);
    cr_expect_eq (status, 200);
    chat_stream_parse (sl_buf_cstr (body), cs);
    cr_expect_eq (cs->malformed, 0, "every event is JSON");
}

Test (pipeline, mock_tools_weather_passes_shell_blocked)
{
    stack_opts_t opts = { .policy = s_policy_path (), .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    sl_buf_t body = { 0 };
    chat_stream_t cs;
    s_tools_stream (s, &body, &cs);
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "Let me check the weather and tidy up."),
                        "the text arrives: %s", sl_buf_cstr (&cs.content));
    cr_assert_eq (cs.call_count, 1, "one tool call reaches the client");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].name), "get_weather");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].id), "call_weather_1");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].arguments), "{\"city\":\"Paris\"}");
    cr_expect_null (strstr (sl_buf_cstr (&body), "\"run_shell\"") , "run_shell never reaches the client");
    cr_expect_null (strstr (sl_buf_cstr (&body), "rm -rf"), "nor its arguments");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "sluice blocked a call to run_shell"),
                        "the notice arrives in its place");
    cr_expect_eq (cs.finish_count, 1, "exactly one finish_reason");
    cr_expect_str_eq (sl_buf_cstr (&cs.finish), "tool_calls", "a call remains, so tool_calls stays");
    cr_expect (cs.done_last, "[DONE] is the last event");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

//  The same over ipc:// (one host: what make run and the bench deploy),
//  CURVE and ZAP on every link as over tcp://.
Test (pipeline, over_ipc_the_same_with_curve)
{
    stack_opts_t opts = { .policy = s_policy_path (), .mock_delay_ms = 1, .ipc = true };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up on ipc://");
    cr_expect (strncmp (s->inbox [1], "ipc://", 6) == 0, "the ingest's inbox: %s", s->inbox [1]);
    sl_buf_t body = { 0 };
    chat_stream_t cs;
    s_tools_stream (s, &body, &cs);
    cr_assert_eq (cs.call_count, 1, "one tool call reaches the client");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].arguments), "{\"city\":\"Paris\"}");
    cr_expect_null (strstr (sl_buf_cstr (&body), "rm -rf"), "the blocked call's arguments never arrive");
    cr_expect (cs.done_last, "[DONE] is the last event");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    //  Every hop spoke CURVE: each inbox's ZAP handler allowed its peer's key.
    static const char *procs [] = { "ingest", "aggregator", "judge", "emitter", "gateway" };
    proc_t *p [] = { s->ingest, s->aggregator, s->judge, s->emitter, s->gateway };
    for (size_t i = 0; i < sizeof p / sizeof p [0]; i++) {
        char key [64];
        cr_expect (proc_wait_log (p [i], "\"zap_allowed\"", "key=", key, sizeof key, 1000),
                   "%s allowed its peer by ZAP", procs [i]);
    }
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

Test (pipeline, mock_error_ends_with_a_clean_error)
{
    stack_opts_t opts = { .policy = s_policy_path (), .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-error"),
                               NULL, &body, TIMEOUT_MS);
    cr_expect_eq (status, 200, "the stream had started before the error");
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content), "This answer will not");
    cr_expect_eq (cs.errors, 1, "one error event");
    cr_expect_str_eq (sl_buf_cstr (&cs.error_type), "server_error");
    cr_expect_not (cs.saw_done, "a failed stream does not end with [DONE]");
    cr_expect_eq (cs.finish_count, 0);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
}

Test (pipeline, text_with_usage_when_asked)
{
    stack_opts_t opts = { .policy = NULL, .mock_delay_ms = 0 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    const char *req = "{\"model\":\"mock-text\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                      "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", req, NULL, &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content),
                      "Hello! This is the mock upstream of sluice. It streams a few sentences, one small "
                      "piece at a time, so you can watch the proxy work.");
    cr_expect_str_eq (sl_buf_cstr (&cs.finish), "stop");
    cr_expect (cs.usage, "usage chunk when the client asked for it");
    cr_expect (cs.done_last);
    chat_stream_free (&cs);
    //  Without the option, no usage chunk.
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text"), NULL,
                                &body, TIMEOUT_MS), 200);
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_not (cs.usage);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
}

Test (pipeline, errors_before_the_stream_are_http_errors)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", "{bad", NULL, &body, TIMEOUT_MS), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "invalid_request_error"));
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("no-such-model"),
                                NULL, &body, TIMEOUT_MS), 404, "the upstream's status passes through");
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "does not exist"), "%s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/nowhere", "{}", NULL, &body, TIMEOUT_MS), 404);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "GET", "/v1/chat/completions", NULL, NULL, &body, TIMEOUT_MS), 405);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "GET", "/healthz", NULL, NULL, &body, TIMEOUT_MS), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "\"status\":\"ok\""));
    sl_buf_free (&body);
    //  Every worker serves its own /healthz.
    for (int i = 1; i <= 5; i++) {
        sl_buf_t h = { 0 };
        cr_expect_eq (http_request (atoi (s->metrics [i]), "GET", "/healthz", NULL, NULL, &h, TIMEOUT_MS), 200,
                      "metrics port %s", s->metrics [i]);
        sl_buf_free (&h);
    }
    cr_expect_eq (stack_stop (s), 0);
}
