/*  Integration: the OTLP exporter against a receiver it was not written
    with (tests/otel/receiver.mjs: the official protobuf decoder of
    @opentelemetry/otlp-transformer, and the OTLP/JSON mapping checked
    field by field). Spans go out in both encodings and are read back
    decoded: names, ids, parent links, attributes of every type, status,
    tracestate, the resource, the headers. Then the collector misbehaves
    (refuses, fails, throttles, answers garbage, hangs, is down) and every
    span is accounted for under its reason, after a bounded number of
    attempts, with the exporter's reactor turning all along. Every wait
    is bounded; the receiver is killed at the end of each test. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <czmq.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_metrics.h"
#include "common/otel/sl_otlp.h"
#include "common/otel/sl_span.h"
#include "tests/integration/harness.h"
#include "tests/integration/otel_receiver.h"

#define TICK_MS 10                      //  the test's own timer
#define RUN_MS 20000                    //  one exporter run at most

//  The receiver of the test under way (tests/integration/otel_receiver.h).
static otel_receiver_t s_rx;

//  Start the receiver in mode (extra: more NAME VALUE flags, or NULL);
//  its port.
static int
s_receiver_start (const char *mode, const char *const *extra)
{
    otel_receiver_start (&s_rx, mode, extra);
    return s_rx.port;
}

static void
s_receiver_kill (void)
{
    otel_receiver_kill (&s_rx);
}

//  What the receiver wrote: one JSON line per request.
static char *
s_received (void)
{
    return otel_receiver_received (&s_rx);
}

static int
s_count (const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr (p, needle)); p += strlen (needle))
        n++;
    return n;
}

//  An exporter run: the loop turns until done says so or RUN_MS passes.
typedef struct {
    sl_otlp_t *otlp;
    bool (*done) (sl_otlp_stats_t *stats, void *arg);
    void *arg;
    int ticks;                          //  the test's timer fired
    int64_t deadline;
} s_run_t;

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_run_t *run = arg;
    run->ticks++;
    sl_otlp_stats_t stats;
    sl_otlp_stats (run->otlp, &stats);
    if (run->done (&stats, run->arg) || zclock_mono () > run->deadline)
        return -1;
    return 0;
}

static void
s_run (zloop_t *loop, s_run_t *run)
{
    run->deadline = zclock_mono () + RUN_MS;
    int timer = zloop_timer (loop, TICK_MS, 0, s_on_tick, run);
    zloop_start (loop);
    zloop_timer_end (loop, timer);
}

//  Settled: every one of the spans is exported or dropped.
static bool
s_settled (sl_otlp_stats_t *stats, void *arg)
{
    uint64_t spans = *(uint64_t *) arg;
    return stats->exported + stats->dropped_rejected + stats->dropped_retries + stats->dropped_queue_full >= spans
        && stats->queued == 0;
}

static const uint8_t s_trace [SL_TRACE_ID_SIZE] = {
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36
};
static const uint8_t s_root [SL_SPAN_ID_SIZE] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t s_child [SL_SPAN_ID_SIZE] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };

//  A stream span (root, server) and a verdict span under it (client,
//  error), with attributes of every type.
static void
s_submit_pair (sl_otlp_t *otlp, int index)
{
    uint8_t trace [SL_TRACE_ID_SIZE];
    memcpy (trace, s_trace, sizeof trace);
    trace [SL_TRACE_ID_SIZE - 1] = (uint8_t) index;
    sl_span_t *root = sl_span_new ("chat gpt-4o", trace, s_root, NULL, SL_SPAN_SERVER, 1700000000000000000ull);
    sl_span_set_str (root, "gen_ai.operation.name", SL_STR_LIT ("chat"));
    sl_span_set_str (root, "gen_ai.request.model", SL_STR_LIT ("gpt-4o"));
    sl_span_set_int (root, "gen_ai.usage.input_tokens", 42);
    sl_span_set_int (root, "sluice.negative", -7);
    sl_span_set_double (root, "gen_ai.request.temperature", 0.25);
    sl_span_set_bool (root, "sluice.streamed", true);
    sl_span_add_str (root, "gen_ai.response.finish_reasons", SL_STR_LIT ("tool_calls"));
    sl_span_add_str (root, "gen_ai.response.finish_reasons", SL_STR_LIT ("stop"));
    sl_span_set_tracestate (root, SL_STR_LIT ("vendor=abc,other=x1"));
    sl_span_end (root, 1700000000500000000ull);
    sl_span_t *child = sl_span_new ("sluice.verdict", trace, s_child, s_root, SL_SPAN_CLIENT, 1700000000100000000ull);
    sl_span_set_str (child, "sluice.verdict.action", SL_STR_LIT ("block"));
    sl_span_set_error (child, SL_STR_LIT ("the judge timed out"));
    sl_otlp_submit (otlp, &root);
    cr_assert_null (root, "submit takes the span");
    sl_otlp_submit (otlp, &child);          //  not ended: ends now
}

typedef struct {
    zloop_t *loop;
    sl_metrics_t *metrics;
    sl_otlp_config_t cfg;
    sl_otlp_t *otlp;
} s_exporter_t;

//  An exporter for port in protocol (as SLUICE_OTLP_* set it), with
//  quick batches and short back-offs; port < 0: a URL given whole.
static void
s_exporter (s_exporter_t *e, int port, const char *protocol)
{
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "http://127.0.0.1:%d", port);
    setenv ("SLUICE_OTLP_ENDPOINT", endpoint, 1);
    setenv ("SLUICE_OTLP_PROTOCOL", protocol, 1);
    setenv ("SLUICE_OTLP_HEADERS", "authorization=Bearer%20test-token", 1);
    setenv ("SLUICE_OTLP_TIMEOUT_MS", "3000", 1);
    char *error = NULL;
    cr_assert_eq (sl_otlp_config_env (&e->cfg, "sluice-emitter", "emitter-1", &error), 0, "%s", error);
    e->cfg.batch_delay_ms = 50;
    e->cfg.backoff_min_ms = 20;
    e->cfg.backoff_max_ms = 100;
    e->cfg.max_attempts = 3;
    e->loop = zloop_new ();
    e->metrics = sl_metrics_new ();
}

static void
s_exporter_start (s_exporter_t *e)
{
    e->otlp = sl_otlp_new (e->loop, &e->cfg, e->metrics);
    cr_assert_not_null (e->otlp);
}

static void
s_exporter_end (s_exporter_t *e)
{
    sl_otlp_destroy (&e->otlp);
    sl_otlp_config_free (&e->cfg);
    sl_metrics_destroy (&e->metrics);
    zloop_destroy (&e->loop);
}

//  Stop the exporter (its flush included) and free the rest; what its
//  metrics said at the end, the caller's to free.
static char *
s_exporter_stop (s_exporter_t *e)
{
    sl_otlp_destroy (&e->otlp);
    sl_buf_t text = { 0 };
    sl_metrics_render (e->metrics, &text);
    char *copy = strdup (sl_buf_cstr (&text));
    sl_buf_free (&text);
    s_exporter_end (e);
    return copy;
}

//  Run until every one of spans is accounted for.
static sl_otlp_stats_t
s_settle (s_exporter_t *e, uint64_t spans, int *ticks)
{
    s_run_t run = { .otlp = e->otlp, .done = s_settled, .arg = &spans };
    s_run (e->loop, &run);
    sl_otlp_stats_t stats;
    sl_otlp_stats (e->otlp, &stats);
    if (ticks)
        *ticks = run.ticks;
    return stats;
}

static void
s_exports (const char *protocol, const char *encoding)
{
    int port = s_receiver_start ("ok", NULL);
    s_exporter_t e;
    s_exporter (&e, port, protocol);
    s_exporter_start (&e);
    s_submit_pair (e.otlp, 1);
    s_submit_pair (e.otlp, 2);
    sl_otlp_stats_t stats = s_settle (&e, 4, NULL);
    cr_expect_eq (stats.exported, 4, "every span exported");
    cr_expect_eq (stats.dropped_rejected + stats.dropped_retries + stats.dropped_queue_full, 0);
    char *metrics = s_exporter_stop (&e);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_spans_exported_total 4"), "%s", metrics);
    free (metrics);
    s_receiver_kill ();

    char *got = s_received ();
    char expect [256];
    snprintf (expect, sizeof expect, "\"encoding\":\"%s\"", encoding);
    cr_expect_gt (s_count (got, expect), 0, "decoded as %s: %s", encoding, got);
    cr_expect_null (strstr (got, "\"error\""), "the receiver found the request well formed: %s", got);
    cr_expect_not_null (strstr (got, "\"path\":\"/v1/traces\""), "%s", got);
    cr_expect_not_null (strstr (got, "\"authorization\":\"Bearer test-token\""), "the header, %%-decoded: %s", got);
    cr_expect_not_null (strstr (got, "\"service.name\":{\"stringValue\":\"sluice-emitter\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"service.instance.id\":{\"stringValue\":\"emitter-1\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"service.version\":{\"stringValue\":\""), "%s", got);
    cr_expect_eq (s_count (got, "\"name\":\"chat gpt-4o\""), 2, "%s", got);
    cr_expect_eq (s_count (got, "\"name\":\"sluice.verdict\""), 2, "%s", got);
    cr_expect_not_null (strstr (got, "\"name\":\"chat gpt-4o\",\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4701\","
                                     "\"spanId\":\"00f067aa0ba902b7\",\"parentSpanId\":null,"
                                     "\"traceState\":\"vendor=abc,other=x1\",\"kind\":2,"
                                     "\"startTimeUnixNano\":\"1700000000000000000\","
                                     "\"endTimeUnixNano\":\"1700000000500000000\""), "the root span: %s", got);
    cr_expect_not_null (strstr (got, "\"name\":\"sluice.verdict\",\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4702\","
                                     "\"spanId\":\"53995c3f42cd8ad8\",\"parentSpanId\":\"00f067aa0ba902b7\","
                                     "\"traceState\":null,\"kind\":3"), "the child span: %s", got);
    cr_expect_not_null (strstr (got, "\"gen_ai.request.model\":{\"stringValue\":\"gpt-4o\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"gen_ai.usage.input_tokens\":{\"intValue\":\"42\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"sluice.negative\":{\"intValue\":\"-7\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"gen_ai.request.temperature\":{\"doubleValue\":0.25}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"sluice.streamed\":{\"boolValue\":true}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"gen_ai.response.finish_reasons\":{\"arrayValue\":"
                                     "[{\"stringValue\":\"tool_calls\"},{\"stringValue\":\"stop\"}]}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"status\":{\"code\":2,\"message\":\"the judge timed out\"}"), "%s", got);
    cr_expect_not_null (strstr (got, "\"status\":{\"code\":0,\"message\":\"\"}"), "the root's status unset: %s", got);
    free (got);
}

Test (otlp, exports_protobuf, .timeout = 60)
{
    s_exports ("http/protobuf", "protobuf");
}

Test (otlp, exports_json, .timeout = 60)
{
    s_exports ("http/json", "json");
}

//  A collector that misbehaves one way, and what becomes of a pair of
//  spans sent to it.
//  Text in arrays, not pointers: Criterion hands the parameters to a new
//  process, where the addresses of the parent's strings mean nothing.
typedef struct {
    char mode [16];                     //  receiver.mjs --mode
    char flag [16], value [8];          //  one more receiver flag, or ""
    char protocol [16];
    uint64_t exported, rejected, dropped_retries, retries;
    int requests;                       //  the receiver saw
} s_case_t;

ParameterizedTestParameters (otlp, misbehaving_collector)
{
    static s_case_t cases [] = {
        //  Refused for good: dropped as rejected, never sent again.
        { "400", "", "", "http/protobuf", 0, 2, 0, 0, 1 },
        //  Accepted but for one span the collector rejected.
        { "partial", "--rejected", "1", "http/json", 1, 1, 0, 0, 1 },
        //  Failing, throttled (Retry-After honoured), answering what is no
        //  response, hanging past the timeout: max_attempts (3), then dropped.
        { "500", "", "", "http/protobuf", 0, 0, 2, 2, 3 },
        { "429", "--retry-after", "0", "http/json", 0, 0, 2, 2, 3 },
        { "garbage", "", "", "http/protobuf", 0, 0, 2, 2, 3 },
        { "hang", "", "", "http/json", 0, 0, 2, 2, 3 },
    };
    return cr_make_param_array (s_case_t, cases, sizeof cases / sizeof cases [0]);
}

ParameterizedTest (s_case_t *c, otlp, misbehaving_collector, .timeout = 60)
{
    const char *extra [] = { c->flag, c->value, NULL };
    int port = s_receiver_start (c->mode, *c->flag ? extra : NULL);
    s_exporter_t e;
    s_exporter (&e, port, c->protocol);
    e.cfg.timeout_ms = 300;             //  what hang waits for
    s_exporter_start (&e);
    s_submit_pair (e.otlp, 1);
    int ticks;
    sl_otlp_stats_t stats = s_settle (&e, 2, &ticks);
    free (s_exporter_stop (&e));
    s_receiver_kill ();
    char *got = s_received ();
    cr_expect_null (strstr (got, "\"error\""), "%s: every request well formed: %s", c->mode, got);
    cr_expect_eq (s_count (got, "\"request\":"), c->requests, "%s: requests: %s", c->mode, got);
    free (got);
    cr_expect_eq (stats.exported, c->exported, "%s: exported", c->mode);
    cr_expect_eq (stats.dropped_rejected, c->rejected, "%s: rejected", c->mode);
    cr_expect_eq (stats.dropped_retries, c->dropped_retries, "%s: dropped after the last attempt", c->mode);
    cr_expect_eq (stats.retries, c->retries, "%s: sent again", c->mode);
    //  Three attempts hung for 300 ms each: the test's 10 ms timer kept
    //  firing all the while (the reactor never waited on the collector).
    if (strcmp (c->mode, "hang") == 0)
        cr_expect_gt (ticks, 20, "the reactor kept turning (%d ticks)", ticks);
}

Test (otlp, collector_down, .timeout = 60)
{
    int holder;
    int port = harness_refusing_port (&holder);
    cr_assert_gt (port, 0);
    s_exporter_t e;
    s_exporter (&e, port, "http/protobuf");
    s_exporter_start (&e);
    s_submit_pair (e.otlp, 1);
    int ticks;
    sl_otlp_stats_t stats = s_settle (&e, 2, &ticks);
    cr_expect_eq (stats.dropped_retries, 2);
    cr_expect_eq (stats.retries, 2);
    cr_expect_gt (ticks, 0);
    char *metrics = s_exporter_stop (&e);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_spans_dropped_total{reason=\"retries_exhausted\"} 2"), "%s", metrics);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_export_retries_total 2"), "%s", metrics);
    free (metrics);
    close (holder);
}

//  A small queue behind a collector that never answers: what does not fit
//  is dropped and counted at once, and what waits is dropped as shutdown
//  when the exporter goes (after its bounded flush).
Test (otlp, queue_full_and_shutdown, .timeout = 60)
{
    int port = s_receiver_start ("hang", NULL);
    s_exporter_t e;
    s_exporter (&e, port, "http/protobuf");
    e.cfg.queue_max = 4;
    e.cfg.batch_max = 2;
    e.cfg.timeout_ms = 300;
    s_exporter_start (&e);
    for (int i = 1; i <= 5; i++)
        s_submit_pair (e.otlp, i);      //  2 out at once, 4 wait, 4 do not fit
    sl_otlp_stats_t stats;
    sl_otlp_stats (e.otlp, &stats);
    cr_expect_eq (stats.dropped_queue_full, 4);
    cr_expect_eq (stats.queued, 4);
    char *metrics = s_exporter_stop (&e);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_spans_dropped_total{reason=\"queue_full\"} 4"), "%s", metrics);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_spans_dropped_total{reason=\"shutdown\"} 6"), "%s", metrics);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_queue_spans 0"), "%s", metrics);
    free (metrics);
    s_receiver_kill ();
}

//  Spans still waiting when the exporter goes are sent by its flush.
Test (otlp, flushed_at_destroy, .timeout = 60)
{
    int port = s_receiver_start ("ok", NULL);
    s_exporter_t e;
    s_exporter (&e, port, "http/json");
    e.cfg.batch_delay_ms = 60000;       //  never by the timer
    s_exporter_start (&e);
    s_submit_pair (e.otlp, 1);
    char *metrics = s_exporter_stop (&e);
    cr_expect_not_null (strstr (metrics, "sluice_otlp_spans_exported_total 2"), "%s", metrics);
    free (metrics);
    s_receiver_kill ();
    char *got = s_received ();
    cr_expect_eq (s_count (got, "\"name\":\"sluice.verdict\""), 1, "%s", got);
    free (got);
}
