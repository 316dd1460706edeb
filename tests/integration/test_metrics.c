/*  Integration: every process serves /healthz and Prometheus /metrics on
    its own port, with the metrics the stack is watched by: streams active
    and total, events in and out, verdicts by action, the judge's latency
    histogram, errors by status, time to first byte, queue depths, dropped
    and illegal events. Checked after real traffic; every wait polls. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000

Test (metrics, every_process_serves_what_it_is_watched_by)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .policy = "deploy/policy.yaml", .mock_delay_ms = 1 });
    cr_assert_not_null (s);
    const char *tools = "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    const char *error = "{\"model\":\"mock-error\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    const char *whole = "{\"model\":\"mock-tools\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", tools, NULL, &body, TIMEOUT_MS), 200);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", error, NULL, &body, TIMEOUT_MS), 200);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", whole, NULL, &body, TIMEOUT_MS), 200);
    sl_buf_free (&body);

    //  Each process: health and its own metrics.
    const char *names [] = { "mock", "ingest", "aggregator", "judge", "emitter", "gateway" };
    for (int i = 1; i < 6; i++) {
        int port = atoi (s->metrics [i]);
        sl_buf_t health = { 0 };
        cr_expect_eq (http_request (port, "GET", "/healthz", NULL, NULL, &health, TIMEOUT_MS), 200, "%s", names [i]);
        cr_expect_not_null (strstr (sl_buf_cstr (&health), "\"status\":\"ok\""), "%s: %s", names [i], sl_buf_cstr (&health));
        sl_buf_free (&health);
        cr_expect_geq (metric_value (port, "sluice_messages_in_total"), 1, "%s: events in", names [i]);
        cr_expect_geq (metric_value (port, "sluice_batches_sent_total"), 1, "%s: events out", names [i]);
        cr_expect_geq (metric_value (port, "sluice_streams_active"), 0, "%s: streams active", names [i]);
        cr_expect_geq (metric_value (port, "sluice_malformed_messages_total"), 0, "%s", names [i]);
    }
    int ingest = atoi (s->metrics [1]), aggregator = atoi (s->metrics [2]), judge = atoi (s->metrics [3]);
    int emitter = atoi (s->metrics [4]), gateway = atoi (s->metrics [5]);
    //  Streams total, everywhere a stream passes.
    cr_expect_eq (harness_wait_metric (gateway, "sluice_streams_total", 3, TIMEOUT_MS), 3);
    cr_expect_eq (metric_value (ingest, "sluice_streams_total"), 3);
    cr_expect_eq (metric_value (aggregator, "sluice_streams_total"), 3);
    cr_expect_eq (metric_value (judge, "sluice_streams_total"), 3);
    cr_expect_eq (harness_wait_metric (emitter, "sluice_streams_total", 3, TIMEOUT_MS), 3);
    //  Verdicts by action and the judge's latency histogram.
    cr_expect_eq (metric_value (judge, "sluice_verdicts_total{action=\"block\",check=\"ran\",team=\"default\"}"), 2);
    cr_expect_eq (metric_value (judge, "sluice_verdicts_total{action=\"allow\",check=\"default\",team=\"default\"}"), 2);
    cr_expect_eq (metric_value (judge, "sluice_verdict_latency_seconds_count"), 4);
    //  Errors by status (mock-error: the provider's 500 mid-stream).
    cr_expect_eq (metric_value (ingest, "sluice_upstream_errors_total"), 1);
    cr_expect_eq (metric_value (emitter, "sluice_stream_errors_total{source=\"upstream\",status=\"500\"}"), 1);
    //  Time to first byte, events out, illegal and dropped events.
    cr_expect_eq (metric_value (gateway, "sluice_ttfb_seconds_count"), 3);
    cr_expect_geq (metric_value (emitter, "sluice_events_out_total"), 10);
    cr_expect_eq (metric_value (emitter, "sluice_illegal_events_total"), 0);
    cr_expect_eq (metric_value (emitter, "sluice_dropped_events_total"), 0);
    //  No tap listens here: events are not published (test_tap covers taps).
    cr_expect_eq (metric_value (emitter, "sluice_tap_subscriptions"), 0);
    cr_expect_eq (metric_value (emitter, "sluice_tap_published_total"), 0);
    //  Queue depths of every hop that queues.
    cr_expect_eq (metric_value (gateway, "sluice_queue_bytes{queue=\"ingest\"}"), 0);
    cr_expect_eq (metric_value (aggregator, "sluice_queue_bytes{queue=\"judge\"}"), 0);
    cr_expect_eq (metric_value (judge, "sluice_queue_bytes{queue=\"emitter\"}"), 0);
    cr_expect_eq (metric_value (emitter, "sluice_queue_bytes{queue=\"gateway\"}"), 0);
    cr_expect_eq (stack_stop (s), 0);
}
