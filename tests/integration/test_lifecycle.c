/*  Integration: every way a stream ends frees it at every hop.

    For each client dialect, one stack serves streams that end each way a
    stream can end: complete, failed upstream mid-stream, terminated by the
    policy while the upstream is still sending, left by a client that
    disconnects, and the same as one body (non-streaming). After each one,
    every process must come back to no stream at all
    (sluice_streams_active of the gateway, the ingest, the aggregator, the
    judge and the emitter, and the mock's own mock_streams_active), within
    a bounded wait. A stream a hop never lets go of shows as a gauge that
    stays one higher for good. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"
#include "tests/integration/hops.h"

#define LC_TIMEOUT_MS 20000             //  one request
#define LC_DRAIN_MS 15000               //  for every hop to let go of a stream
#define LC_CLIENT_LEAVES_MS 1500        //  a client that gives up on a stalled stream

//  Terminate the first call of requests that ask for it (a header), so
//  the upstream still has the second call and the finish to send.
static const char s_policy [] =
    "version: 1\n"
    "default: allow\n"
    "rules:\n"
    "  - id: end-here\n"
    "    tool: get_weather\n"
    "    headers: [{name: x-sluice-test, equals: terminate}]\n"
    "    action: terminate\n"
    "    message: \"sluice ended this response (rule {rule}).\"\n";

typedef struct {
    const char *name;
    const char *stream_path;            //  %s: the model
    const char *body_path;
    const char *body;                   //  %s: the model, %s: "true" / "false" (not Gemini)
} dialect_t;

static const dialect_t s_dialects [] = {
    { "openai", "/v1/chat/completions", "/v1/chat/completions",
      "{\"model\":\"%s\",\"stream\":%s,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" },
    { "anthropic", "/v1/messages", "/v1/messages",
      "{\"model\":\"%s\",\"stream\":%s,\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" },
    { "responses", "/v1/responses", "/v1/responses",
      "{\"model\":\"%s\",\"stream\":%s,\"input\":\"hi\"}" },
    { "gemini", "/v1beta/models/%s:streamGenerateContent?alt=sse", "/v1beta/models/%s:generateContent",
      "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}" },
};

typedef struct {
    const char *name;
    const char *model;
    bool stream;
    bool terminate;                     //  the policy ends it at its first call
    int timeout_ms;                     //  the client gives up after this long
    int status;                         //  expected HTTP status; 0: the client left; 1: an error status
} way_t;

static const way_t s_ways [] = {
    { "complete", "mock-tools", true, false, LC_TIMEOUT_MS, 200 },
    { "upstream error", "mock-error", true, false, LC_TIMEOUT_MS, 200 },
    { "terminated", "mock-tools", true, true, LC_TIMEOUT_MS, 200 },
    { "client left", "mock-stall", true, false, LC_CLIENT_LEAVES_MS, 0 },
    { "one body", "mock-tools", false, false, LC_TIMEOUT_MS, 200 },
    { "one body, terminated", "mock-tools", false, true, LC_TIMEOUT_MS, 403 },
    { "one body, upstream error", "mock-error", false, false, LC_TIMEOUT_MS, 1 },
};

static void
s_every_way (int d)
{
    const dialect_t *dl = &s_dialects [d];
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 50 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    for (size_t w = 0; w < sizeof s_ways / sizeof s_ways [0]; w++) {
        const way_t *way = &s_ways [w];
        char path [256], body [512];
        snprintf (path, sizeof path, way->stream ? dl->stream_path : dl->body_path, way->model);
        snprintf (body, sizeof body, dl->body, way->model, way->stream ? "true" : "false");
        const char *terminate [] = { "x-sluice-test: terminate", NULL };
        sl_buf_t out = { 0 };
        int status = http_request (s->http_port, "POST", path, body, way->terminate ? terminate : NULL,
                                   &out, way->timeout_ms);
        if (way->status == 1)
            cr_expect_geq (status, 400, "%s, %s: an error status, %d", dl->name, way->name, status);
        else
        if (way->status)
            cr_expect_eq (status, way->status, "%s, %s: status %d: %s", dl->name, way->name, status,
                          sl_buf_cstr (&out));
        else
            cr_expect_eq (status, 0, "%s, %s: the client gave up", dl->name, way->name);
        if (way->terminate)
            cr_expect (strstr (sl_buf_cstr (&out), "sluice ended this response") != NULL,
                       "%s, %s: the policy's message reached the client: %s", dl->name, way->name,
                       sl_buf_cstr (&out));
        sl_buf_free (&out);
        const char *which = "";
        double value = 0;
        cr_expect (hops_all_free (s, LC_DRAIN_MS, &which, &value), "%s, %s: the %s still holds %.0f stream(s)",
                   dl->name, way->name, which, value);
    }
    cr_expect_eq (stack_stop (s), 0);
}

Test (lifecycle, every_way_of_ending_frees_openai_streams, .timeout = 180) { s_every_way (0); }
Test (lifecycle, every_way_of_ending_frees_anthropic_streams, .timeout = 180) { s_every_way (1); }
Test (lifecycle, every_way_of_ending_frees_responses_streams, .timeout = 180) { s_every_way (2); }
Test (lifecycle, every_way_of_ending_frees_gemini_streams, .timeout = 180) { s_every_way (3); }
