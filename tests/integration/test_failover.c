/*  Integration: a route of several providers, over real sockets.

    The first provider of each route misbehaves (a 429 that asks to wait
    30 s, a 529 from an Anthropic-dialect provider for an OpenAI client, a
    port that refuses connections, a model that never answers) and the
    second, the mock in the OpenAI dialect, serves: the client sees one
    intact stream, and the audit's record of the stream names every
    provider tried and why it was left. Every provider down: one clean
    error in the client's dialect naming the last cause. A provider that
    fails repeatedly is ejected (counted, passed by) and, after its
    cool-down, readmitted by one request that it serves.
*/
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/sdk_runner.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 20000
#define SDK_TIMEOUT_MS 120000           //  the whole node run
#define SDK_TEST_TIMEOUT_MS 60000       //  each test
#define WAIT_MS 20000
#define MOCK_TEXT "Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at " \
                  "a time, so you can watch the proxy work."

//  Short deadlines, no second round: each fault moves on at once.
static const char *const s_ingest_flags [] = {
    "--first-byte-timeout-ms", "1500", "--connect-timeout-ms", "1000", "--max-retries", "0",
    "--retry-base-ms", "50", "--retry-max-ms", "2000", NULL
};

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  One request of an OpenAI client: served whole, the mock's text once.
static void
s_expect_intact (sluice_stack_t *s, const char *model)
{
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat (model), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 200, "%s: %s", model, sl_buf_cstr (&body));
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content), MOCK_TEXT, "%s: the whole text, once", model);
    cr_expect_eq (cs.errors, 0, "%s", model);
    cr_expect_eq (cs.malformed, 0, "%s", model);
    cr_expect_eq (cs.finish_count, 1, "%s", model);
    cr_expect (cs.done_last, "%s: one [DONE], last", model);
    chat_stream_free (&cs);
    sl_buf_free (&body);
}

//  The stream of model in the audit's record, as JSON (the caller frees).
static json_t *
s_recorded (const audit_proc_t *a, const char *model)
{
    char query [160];
    snprintf (query, sizeof query, "model=%s", model);
    cr_assert_geq (audit_wait_streams (a, query, 1, WAIT_MS), 1, "%s is recorded", model);
    char path [200];
    snprintf (path, sizeof path, "/api/streams?%s", query);
    json_t *list = audit_get (a, path);
    cr_assert_not_null (list);
    json_t *stream = json_incref (json_array_get (json_object_get (list, "streams"), 0));
    json_decref (list);
    cr_assert_not_null (stream);
    return stream;
}

//  The record's providers tried, "provider:result[:status]" joined by ",".
static void
s_tried (json_t *stream, char *out, size_t size)
{
    out [0] = 0;
    const char *text = json_string_value (json_object_get (stream, "failover"));
    cr_assert_not_null (text, "the record names the providers tried");
    json_t *tried = json_loads (text, 0, NULL);
    cr_assert (json_is_array (tried), "%s", text);
    size_t i;
    json_t *t;
    json_array_foreach (tried, i, t) {
        json_int_t status = json_integer_value (json_object_get (t, "status"));
        snprintf (out + strlen (out), size - strlen (out), "%s%s:%s", i ? "," : "",
                  json_string_value (json_object_get (t, "provider")),
                  json_string_value (json_object_get (t, "result")));
        if (status)
            snprintf (out + strlen (out), size - strlen (out), ":%lld", (long long) status);
        json_t *wait = json_object_get (t, "retry_after_s");
        if (wait)
            snprintf (out + strlen (out), size - strlen (out), ":ra%lld", (long long) json_integer_value (wait));
    }
    json_decref (tried);
}

static void
s_expect_record (const audit_proc_t *a, const char *model, const char *provider, const char *upstream,
                 const char *tried)
{
    json_t *stream = s_recorded (a, model);
    cr_expect_str_eq (json_string_value (json_object_get (stream, "provider")), provider,
                      "%s: the provider that served", model);
    cr_expect_str_eq (json_string_value (json_object_get (stream, "upstream")), upstream,
                      "%s: its dialect", model);
    char text [512];
    s_tried (stream, text, sizeof text);
    cr_expect_str_eq (text, tried, "%s", model);
    json_decref (stream);
}

Test (failover, each_fault_of_the_first_provider_and_the_second_serves)
{
    int holder = -1;
    int refusing = harness_refusing_port (&holder);
    cr_assert_gt (refusing, 0);
    char routes [2048];
    snprintf (routes, sizeof routes,
              "providers:\n"
              "  - { name: limited, dialect: openai, base_url: \"@MOCK@/v1\" }\n"
              "  - { name: overloaded, dialect: anthropic, base_url: \"@MOCK@\" }\n"
              "  - { name: refusing, dialect: openai, base_url: \"http://127.0.0.1:%d/v1\" }\n"
              "  - { name: hanging, dialect: openai, base_url: \"@MOCK@/v1\" }\n"
              "  - { name: serving, dialect: openai, base_url: \"@MOCK@/v1\" }\n"
              "routes:\n"
              "  - model: fo-429\n"
              "    providers: [{ provider: limited, model: mock-429-30 }, { provider: serving, model: mock-text }]\n"
              "  - model: fo-529\n"
              "    providers: [{ provider: overloaded, model: mock-529 }, { provider: serving, model: mock-text }]\n"
              "  - model: fo-refused\n"
              "    providers: [{ provider: refusing, model: mock-text }, { provider: serving, model: mock-text }]\n"
              "  - model: fo-hang\n"
              "    providers: [{ provider: hanging, model: mock-hang }, { provider: serving, model: mock-text }]\n"
              "  - model: fo-again\n"
              "    providers: [{ provider: limited, model: mock-text }, { provider: serving, model: mock-text }]\n",
              refusing);
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = s_ingest_flags, .routes_text = routes,
                          .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    const char *store [] = { "--data-dir", s->dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));

    s_expect_intact (s, "fo-429");
    s_expect_intact (s, "fo-529");
    s_expect_intact (s, "fo-refused");
    s_expect_intact (s, "fo-hang");
    //  limited asked for 30 s: passed by, not tried, not waited on.
    s_expect_intact (s, "fo-again");
    cr_expect_geq (metric_value (atoi (s->metrics [1]), "sluice_upstream_failovers_total"), 4);

    s_expect_record (&a, "fo-429", "serving", "openai", "limited:http_status:429:ra30,serving:ok");
    s_expect_record (&a, "fo-529", "serving", "openai", "overloaded:http_status:529,serving:ok");
    s_expect_record (&a, "fo-refused", "serving", "openai", "refusing:unreachable,serving:ok");
    s_expect_record (&a, "fo-hang", "serving", "openai", "hanging:first_byte_timeout,serving:ok");
    s_expect_record (&a, "fo-again", "serving", "openai", "limited:held,serving:ok");
    proc_stop (a.proc, 5000);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    close (holder);
}

Test (failover, across_dialects_both_ways)
{
    static const char routes [] =
        HARNESS_MOCK_PROVIDERS
        "routes:\n"
        "  - model: to-openai\n"
        "    providers: [{ provider: mock-anthropic, model: mock-529 }, { provider: mock-openai, model: mock-text }]\n"
        "  - model: to-anthropic\n"
        "    providers: [{ provider: mock-openai, model: mock-500 }, { provider: mock-anthropic, model: mock-text }]\n";
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = s_ingest_flags, .routes_text = routes,
                          .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", s->dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    //  An OpenAI client; the first provider speaks Anthropic and 529s, the
    //  second speaks OpenAI and serves.
    s_expect_intact (s, "to-openai");
    //  The other way: an Anthropic client, an OpenAI provider that 500s,
    //  then an Anthropic one.
    sl_buf_t body = { 0 };
    const char *request = "{\"model\":\"to-anthropic\",\"max_tokens\":100,\"stream\":true,"
                          "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", request, NULL, &body, TIMEOUT_MS), 200);
    const char *text = sl_buf_cstr (&body);
    cr_expect (strstr (text, "event: message_start"), "%s", text);
    cr_expect (strstr (text, "event: message_stop"), "the stream ends as Anthropic's do: %s", text);
    cr_expect_null (strstr (text, "event: error"), "%s", text);
    cr_expect (strstr (text, "\"Hello\"") && strstr (text, "\" proxy\""), "the mock's text: %s", text);
    sl_buf_free (&body);
    s_expect_record (&a, "to-openai", "mock-openai", "openai", "mock-anthropic:http_status:529,mock-openai:ok");
    s_expect_record (&a, "to-anthropic", "mock-anthropic", "anthropic", "mock-openai:http_status:500,mock-anthropic:ok");
    proc_stop (a.proc, 5000);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
}

Test (failover, the_official_sdks_read_one_intact_stream)
{
    const char *missing = sdk_runner_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    static const char routes [] =
        HARNESS_MOCK_PROVIDERS
        "routes:\n"
        "  - model: fo-openai\n"
        "    providers: [{ provider: mock-anthropic, model: mock-529 }, { provider: mock-openai, model: mock-text }]\n"
        "  - model: fo-anthropic\n"
        "    providers: [{ provider: mock-openai, model: mock-429-30 }, { provider: mock-anthropic, model: mock-text }]\n";
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = s_ingest_flags, .routes_text = routes };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    char openai [128], anthropic [128], log [512];
    snprintf (openai, sizeof openai, "SLUICE_OPENAI_BASE_URL=http://127.0.0.1:%d/v1", s->http_port);
    snprintf (anthropic, sizeof anthropic, "SLUICE_ANTHROPIC_BASE_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (log, sizeof log, "%s/sdk-failover.log", s->dir);
    const char *env [] = { openai, anthropic, NULL };
    cr_expect (sdk_run_wait (sdk_run_start (SDK_RUNNER_DIR "/failover", env, log, SDK_TEST_TIMEOUT_MS),
                             SDK_TIMEOUT_MS), "the SDKs read both streams whole");
    cr_expect_eq (metric_value (atoi (s->metrics [1]), "sluice_upstream_failovers_total"), 2);
    cr_expect_eq (stack_stop (s), 0);
}

Test (failover, every_provider_down_is_one_clean_error_naming_the_last_cause)
{
    static const char routes [] =
        HARNESS_MOCK_PROVIDERS
        "routes:\n"
        "  - model: all-down\n"
        "    providers: [{ provider: mock-openai, model: mock-429-30 }, { provider: mock-anthropic, model: mock-529 }]\n";
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = s_ingest_flags, .routes_text = routes };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("all-down"), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 529, "the last provider's status: %s", sl_buf_cstr (&body));
    json_t *error = json_loads (sl_buf_cstr (&body), 0, NULL);
    cr_assert_not_null (error, "one JSON error body, no stream: %s", sl_buf_cstr (&body));
    const char *message = json_string_value (json_object_get (json_object_get (error, "error"), "message"));
    cr_assert_not_null (message, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (message, "overloaded"), "the last cause's own words: %s", message);
    cr_expect (strstr (message, "mock-openai: HTTP 429 (retry after 30 s); mock-anthropic: HTTP 529"),
               "every provider tried and why: %s", message);
    json_decref (error);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
}

Test (failover, a_failing_provider_is_ejected_then_readmitted_after_its_cool_down)
{
    //  flaky points at a port nothing listens on, until the mock of the
    //  test starts there: ejected after two failures, passed by while it
    //  cools down, then probed and readmitted.
    int holder = -1;
    int port = harness_refusing_port (&holder);
    cr_assert_gt (port, 0);
    char routes [1024];
    snprintf (routes, sizeof routes,
              HARNESS_MOCK_PROVIDERS
              "  - { name: flaky, dialect: openai, base_url: \"http://127.0.0.1:%d/v1\" }\n"
              "routes:\n"
              "  - model: ej\n"
              "    providers: [{ provider: flaky, model: mock-text }, { provider: mock-openai, model: mock-text }]\n",
              port);
    static const char *const ingest [] = {
        "--first-byte-timeout-ms", "1500", "--connect-timeout-ms", "1000", "--max-retries", "0",
        "--eject-failures", "2", "--eject-window-ms", "60000", "--eject-cooldown-ms", "3000", NULL
    };
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = ingest, .routes_text = routes, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", s->dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    int ingest_metrics = atoi (s->metrics [1]);
    s_expect_intact (s, "ej");
    s_expect_intact (s, "ej");
    cr_expect_eq (harness_wait_metric (ingest_metrics, "sluice_provider_ejections_total{provider=\"flaky\"}", 1,
                                       WAIT_MS), 1, "two failures: ejected, once");
    cr_expect_eq (metric_value (ingest_metrics, "sluice_provider_state{provider=\"flaky\"}"), 1, "cooling down");
    cr_expect_eq (metric_value (ingest_metrics, "sluice_providers_ejected"), 1);
    cr_expect (proc_wait_log (s->ingest, "provider_ejected", "provider=flaky", NULL, 0, WAIT_MS),
               "logged once per ejection");
    //  While it cools down, streams pass it by.
    s_expect_intact (s, "ej");
    //  It comes back: a mock on its port. After the cool-down, one probe
    //  goes to it, is served, and it is readmitted.
    close (holder);
    char port_text [16];
    snprintf (port_text, sizeof port_text, "%d", port);
    const char *mock_args [] = { "--port", port_text, NULL };
    proc_t *mock = proc_start_as (s->dir, "mock", "mock-flaky", mock_args);
    cr_assert_not_null (mock);
    cr_assert (proc_wait_log (mock, "listening", NULL, NULL, 0, WAIT_MS), "the second mock is up");
    int64_t until = zclock_mono () + WAIT_MS;
    while (metric_value (ingest_metrics, "sluice_provider_state{provider=\"flaky\"}") == 1 && zclock_mono () < until)
        zclock_sleep (100);
    cr_expect_eq (metric_value (ingest_metrics, "sluice_provider_state{provider=\"flaky\"}"), 2, "half-open");
    s_expect_intact (s, "ej");
    cr_expect (proc_wait_log (s->ingest, "provider_readmitted", "provider=flaky", NULL, 0, WAIT_MS));
    cr_expect_eq (metric_value (ingest_metrics, "sluice_provider_state{provider=\"flaky\"}"), 0, "healthy again");
    cr_expect_eq (metric_value (ingest_metrics, "sluice_provider_ejections_total{provider=\"flaky\"}"), 1);
    //  The record: the third stream passed flaky by, the fourth was served
    //  by it.
    cr_assert_geq (audit_wait_streams (&a, "model=ej", 4, WAIT_MS), 4);
    json_t *list = audit_get (&a, "/api/streams?model=ej");
    cr_assert_not_null (list);
    json_t *streams = json_object_get (list, "streams");
    const char *last = json_string_value (json_object_get (json_array_get (streams, 0), "provider"));
    cr_expect_str_eq (last, "flaky", "the probe was served by the readmitted provider");
    const char *third = json_string_value (json_object_get (json_array_get (streams, 1), "failover"));
    cr_expect (third && strstr (third, "\"provider\":\"flaky\"") && strstr (third, "\"result\":\"ejected\""),
               "passed by, ejected: %s", third ? third : "(none)");
    json_decref (list);
    proc_stop (mock, 5000);
    free (mock);
    proc_stop (a.proc, 5000);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
}
