/*  Integration: a stream's trace, end to end. The stack exports to the
    OTLP receiver of tests/otel (the official OpenTelemetry decoder); a
    client's W3C traceparent and tracestate are continued: the stream's
    span is the client span's child, its verdicts' spans the stream's
    children, and the mock upstream is sent the stream span's child
    traceparent. A malformed traceparent begins a new trace (its id the
    stream id) and is counted; content goes on spans only when asked; a
    collector that is down costs the stream nothing. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"
#include "tests/integration/otel_receiver.h"

#define TIMEOUT_MS 15000
#define SPANS_MS 20000                  //  spans go out within the exporter's batch delay (1 s)
#define DROP_MS 60000                   //  a down collector: its retries run out (back-off 0.5 s doubling)
#define POLL_NS (50 * 1000000L)
#define CLIENT_TRACE "0af7651916cd43dd8448eb211c80319c"
#define CLIENT_SPAN "b7ad6b7169203331"
#define CLIENT_TP "traceparent: 00-" CLIENT_TRACE "-" CLIENT_SPAN "-01"
#define CLIENT_TS "tracestate: rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
#define CHAT "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]}"

typedef struct {
    otel_receiver_t receiver;
    sluice_stack_t *stack;
    char record [600];                  //  what the mock upstream received, with its traceparent
} s_rig_t;

//  A stack exporting to a receiver (to port when > 0, else its own).
static void
s_rig_start (s_rig_t *rig, int port, bool capture)
{
    memset (rig, 0, sizeof *rig);
    if (port <= 0) {
        otel_receiver_start (&rig->receiver, "ok", NULL);
        port = rig->receiver.port;
    }
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "http://127.0.0.1:%d", port);
    setenv ("SLUICE_OTLP_ENDPOINT", endpoint, 1);
    if (capture)
        setenv ("SLUICE_OTEL_CAPTURE_CONTENT", "1", 1);
    else
        unsetenv ("SLUICE_OTEL_CAPTURE_CONTENT");
    char dir [] = "/tmp/sluice-traces-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    snprintf (rig->record, sizeof rig->record, "%s/upstream.txt", dir);
    const char *mock_args [] = { "--record", rig->record, "--record-header", "traceparent", NULL };
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1, .mock_args = mock_args };
    rig->stack = stack_start (&opts);
    cr_assert_not_null (rig->stack, "the stack came up");
}

static void
s_rig_stop (s_rig_t *rig)
{
    cr_expect_eq (stack_stop (rig->stack), 0, "every process exits cleanly");
    otel_receiver_kill (&rig->receiver);
}

//  The mock-tools stream (a text, get_weather allowed, run_shell
//  blocked by deploy/policy.yaml) with the client's headers.
static void
s_chat (s_rig_t *rig, const char *traceparent, const char *tracestate)
{
    const char *headers [] = { "Content-Type: application/json", traceparent, tracestate, NULL };
    if (!traceparent)
        headers [1] = tracestate, headers [2] = NULL;
    sl_buf_t body = { 0 };
    int status = http_request (rig->stack->http_port, "POST", "/v1/chat/completions", CHAT, headers, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "sluice blocked a call to run_shell"), "%s", sl_buf_cstr (&body));
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "[DONE]"), "the stream completes");
    sl_buf_free (&body);
}

//  Every span the receiver decoded, as one JSON array.
static json_t *
s_spans (otel_receiver_t *receiver)
{
    json_t *all = json_array ();
    char *text = otel_receiver_received (receiver);
    for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n")) {
        json_t *export = json_loads (line, 0, NULL);
        cr_assert_not_null (export, "a JSON line: %s", line);
        cr_expect_null (json_object_get (export, "error"), "the receiver decoded it: %s", line);
        size_t i, j, k;
        json_t *resource, *scope, *span;
        json_array_foreach (json_object_get (export, "resources"), i, resource)
            json_array_foreach (json_object_get (resource, "scopes"), j, scope)
                json_array_foreach (json_object_get (scope, "spans"), k, span)
                    json_array_append (all, span);
        json_decref (export);
    }
    free (text);
    return all;
}

//  Wait (bounded) for at least want spans; all of them.
static json_t *
s_wait_spans (otel_receiver_t *receiver, size_t want)
{
    int64_t deadline = zclock_mono () + SPANS_MS;
    json_t *spans = s_spans (receiver);
    while (json_array_size (spans) < want && zclock_mono () < deadline) {
        json_decref (spans);
        nanosleep (&(struct timespec) { 0, POLL_NS }, NULL);
        spans = s_spans (receiver);
    }
    return spans;
}

static const char *
s_attr (json_t *span, const char *key)
{
    json_t *v = json_object_get (json_object_get (span, "attributes"), key);
    json_t *s = json_object_get (v, "stringValue");
    return s ? json_string_value (s) : NULL;
}

static const char *
s_field (json_t *span, const char *key)
{
    return json_string_value (json_object_get (span, key));
}

//  The span named name in trace (NULL: any trace), or NULL.
static json_t *
s_find (json_t *spans, const char *name, const char *trace)
{
    size_t i;
    json_t *span;
    json_array_foreach (spans, i, span)
        if (strcmp (s_field (span, "name"), name) == 0 && (!trace || strcmp (s_field (span, "traceId"), trace) == 0))
            return span;
    return NULL;
}

//  The traceparent the mock upstream got with request number n (from 0).
static void
s_upstream_traceparent (s_rig_t *rig, int n, char *out, size_t size)
{
    sl_buf_t text = { 0 };
    harness_read (rig->record, &text);
    const char *p = text.data ? sl_buf_cstr (&text) : "";
    for (int i = 0; i < n && p; i++)
        p = strchr (p, '\n') ? strchr (p, '\n') + 1 : NULL;
    const char *tp = p ? strstr (p, "\ttraceparent: ") : NULL;
    const char *end = tp ? strchr (tp, '\n') : NULL;
    if (tp && end)
        snprintf (out, size, "%.*s", (int) (end - tp - 14), tp + 14);
    else
        snprintf (out, size, "(none)");
    sl_buf_free (&text);
}

Test (traces, client_trace_continued_with_guardrail_spans, .timeout = 120)
{
    s_rig_t rig;
    s_rig_start (&rig, 0, false);
    s_chat (&rig, CLIENT_TP, CLIENT_TS);
    json_t *spans = s_wait_spans (&rig.receiver, 3);
    json_t *stream = s_find (spans, "chat mock-tools", CLIENT_TRACE);
    cr_assert_not_null (stream, "the stream's span, in the client's trace: %s", json_dumps (spans, 0));
    cr_expect_str_eq (s_field (stream, "parentSpanId"), CLIENT_SPAN, "a child of the client's span");
    cr_expect_str_eq (s_field (stream, "traceState"), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    cr_expect_eq (json_integer_value (json_object_get (stream, "kind")), 3, "CLIENT");
    cr_expect_str_eq (s_attr (stream, "gen_ai.operation.name"), "chat");
    cr_expect_str_eq (s_attr (stream, "gen_ai.request.model"), "mock-tools");
    cr_expect_str_eq (s_attr (stream, "gen_ai.provider.name"), "openai");
    cr_expect_not_null (json_object_get (json_object_get (stream, "attributes"), "gen_ai.response.finish_reasons"));
    cr_expect_not_null (json_object_get (json_object_get (stream, "attributes"), "gen_ai.response.time_to_first_chunk"));
    cr_expect_null (json_object_get (json_object_get (stream, "attributes"), "gen_ai.input.messages"),
                    "no content without SLUICE_OTEL_CAPTURE_CONTENT");
    const char *stream_span = s_field (stream, "spanId");
    const char *sid = s_attr (stream, "sluice.stream.id");
    cr_assert (sid && strlen (sid) == 32);
    cr_expect_eq (strncmp (stream_span, sid, 16), 0, "the stream's span id: its stream id's first 8 bytes");

    json_t *blocked = s_find (spans, "apply_guardrail no-rm-rf", CLIENT_TRACE);
    cr_assert_not_null (blocked, "the block's span: %s", json_dumps (spans, 0));
    cr_expect_str_eq (s_field (blocked, "parentSpanId"), stream_span, "a child of the stream's span");
    cr_expect_eq (json_integer_value (json_object_get (blocked, "kind")), 1, "INTERNAL");
    cr_expect_str_eq (s_attr (blocked, "gen_ai.security.decision.type"), "deny");
    cr_expect_str_eq (s_attr (blocked, "gen_ai.security.target.type"), "tool_call");
    cr_expect_str_eq (s_attr (blocked, "gen_ai.tool.name"), "run_shell");
    cr_expect_null (s_attr (blocked, "gen_ai.tool.call.arguments"), "no arguments without capture");
    json_t *allowed = s_find (spans, "apply_guardrail default", CLIENT_TRACE);
    cr_assert_not_null (allowed, "get_weather's verdict (the default): %s", json_dumps (spans, 0));
    cr_expect_str_eq (s_attr (allowed, "gen_ai.security.decision.type"), "allow");
    cr_expect_str_eq (s_field (allowed, "parentSpanId"), stream_span);

    char got [128], want [128];
    s_upstream_traceparent (&rig, 0, got, sizeof got);
    snprintf (want, sizeof want, "00-%s-%s-01", CLIENT_TRACE, stream_span);
    cr_expect_str_eq (got, want, "the upstream call is the stream span's child");
    json_decref (spans);

    //  A malformed traceparent: ignored, counted, a trace begun (its id
    //  the stream id, a root).
    s_chat (&rig, "traceparent: 00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", CLIENT_TS);
    spans = s_wait_spans (&rig.receiver, 6);
    json_t *begun = NULL;
    size_t i;
    json_t *span;
    json_array_foreach (spans, i, span)
        if (strcmp (s_field (span, "name"), "chat mock-tools") == 0
        &&  strcmp (s_field (span, "traceId"), CLIENT_TRACE) != 0)
            begun = span;
    cr_assert_not_null (begun, "a new trace: %s", json_dumps (spans, 0));
    cr_expect_str_eq (s_field (begun, "traceId"), s_attr (begun, "sluice.stream.id"), "trace id = stream id");
    cr_expect (json_is_null (json_object_get (begun, "parentSpanId")), "the root of its trace");
    cr_expect (json_is_null (json_object_get (begun, "traceState")), "the client's tracestate is not joined to it");
    s_upstream_traceparent (&rig, 1, got, sizeof got);
    snprintf (want, sizeof want, "00-%s-%s-01", s_field (begun, "traceId"), s_field (begun, "spanId"));
    cr_expect_str_eq (got, want);
    int gateway = atoi (rig.stack->metrics [5]);
    cr_expect_eq (metric_value (gateway, "sluice_trace_context_invalid_total{header=\"traceparent\"}"), 1);
    cr_expect_eq (metric_value (gateway, "sluice_trace_context_invalid_total{header=\"tracestate\"}"), 0);
    json_decref (spans);
    s_rig_stop (&rig);
}

Test (traces, content_only_when_captured, .timeout = 120)
{
    s_rig_t rig;
    s_rig_start (&rig, 0, true);
    s_chat (&rig, CLIENT_TP, NULL);
    json_t *spans = s_wait_spans (&rig.receiver, 3);
    json_t *blocked = s_find (spans, "apply_guardrail no-rm-rf", CLIENT_TRACE);
    cr_assert_not_null (blocked, "%s", json_dumps (spans, 0));
    const char *args = s_attr (blocked, "gen_ai.tool.call.arguments");
    cr_expect (args && strstr (args, "rm -rf"), "the call's arguments: %s", args ? args : "(none)");
    json_t *stream = s_find (spans, "chat mock-tools", CLIENT_TRACE);
    cr_assert_not_null (stream);
    const char *input = s_attr (stream, "gen_ai.input.messages");
    cr_expect (input && strstr (input, "tidy up"), "the last user message: %s", input ? input : "(none)");
    json_decref (spans);
    s_rig_stop (&rig);
}

Test (traces, a_collector_that_is_down_costs_the_stream_nothing, .timeout = 120)
{
    int holder;
    int port = harness_refusing_port (&holder);
    s_rig_t rig;
    s_rig_start (&rig, port, false);
    s_chat (&rig, CLIENT_TP, CLIENT_TS);
    char got [128];
    s_upstream_traceparent (&rig, 0, got, sizeof got);
    cr_expect_eq (strncmp (got, "00-" CLIENT_TRACE "-", 36), 0, "traced all the same: %s", got);
    int emitter = atoi (rig.stack->metrics [4]);
    cr_expect_geq (harness_wait_metric (emitter, "sluice_otlp_spans_dropped_total{reason=\"retries_exhausted\"}", 1,
                                        DROP_MS), 1, "the spans are dropped and counted");
    s_rig_stop (&rig);
    close (holder);
}
