/*  Unit tests: common/otel/sl_otlp (configuration from the environment,
    SLUICE_OTLP_HEADERS, what an answer means, the back-off arithmetic,
    the codec registry) and one suite every registered codec runs. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "common/otel/sl_otlp.h"
#include "common/otel/sl_otlp_impl.h"

static const char *s_vars [] = { "SLUICE_OTLP_ENDPOINT", "SLUICE_OTLP_HEADERS", "SLUICE_OTLP_PROTOCOL",
                                  "SLUICE_OTLP_TIMEOUT_MS" };

static void
s_clear (void)
{
    for (size_t i = 0; i < sizeof s_vars / sizeof s_vars [0]; i++)
        unsetenv (s_vars [i]);
}

//  sl_otlp_config_env with one variable set; its return code.
static int
s_config_with (const char *name, const char *value, sl_otlp_config_t *cfg)
{
    s_clear ();
    setenv (name, value, 1);
    char *error = NULL;
    int rc = sl_otlp_config_env (cfg, "sluice-test", "i1", &error);
    if (rc)
        cr_expect (error && strstr (error, name), "the error names %s: %s", name, error ? error : "(none)");
    else
        cr_expect_null (error);
    free (error);
    return rc;
}

Test (sl_otlp, config_defaults_and_tracing_off)
{
    s_clear ();
    sl_otlp_config_t cfg;
    char *error = NULL;
    cr_assert_eq (sl_otlp_config_env (&cfg, "sluice-test", "i1", &error), 0);
    cr_expect_null (cfg.endpoint, "no endpoint: tracing off");
    cr_expect_eq (cfg.protocol, SL_OTLP_PROTOBUF);
    cr_expect_eq (cfg.queue_max, 4096);
    cr_expect_eq (cfg.batch_max, 512);
    cr_expect_eq (cfg.batch_delay_ms, 1000);
    cr_expect_eq (cfg.timeout_ms, 10000);
    cr_expect_eq (cfg.max_attempts, 5);
    cr_expect_eq (cfg.backoff_min_ms, 500);
    cr_expect_eq (cfg.backoff_max_ms, 30000);
    cr_expect_str_eq (cfg.service_name, "sluice-test");
    cr_expect_null (sl_otlp_new ((zloop_t *) 1, &cfg, NULL), "no exporter without an endpoint");
    sl_otlp_config_free (&cfg);
    cr_expect_eq (s_config_with ("SLUICE_OTLP_ENDPOINT", "", &cfg), 0);
    cr_expect_null (cfg.endpoint, "empty is unset");
    sl_otlp_config_free (&cfg);
}

Test (sl_otlp, config_endpoint_gets_the_traces_path)
{
    sl_otlp_config_t cfg;
    struct { const char *given, *used; } cases [] = {
        { "http://collector:4318", "http://collector:4318/v1/traces" },
        { "http://collector:4318/", "http://collector:4318/v1/traces" },
        { "https://otel.example/base", "https://otel.example/base/v1/traces" },
        { "http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        cr_assert_eq (s_config_with ("SLUICE_OTLP_ENDPOINT", cases [i].given, &cfg), 0, "%s", cases [i].given);
        cr_expect_str_eq (cfg.endpoint, cases [i].used);
        sl_otlp_config_free (&cfg);
    }
}

Test (sl_otlp, config_bad_values_refused)
{
    sl_otlp_config_t cfg;
    const char *bad [][2] = {
        { "SLUICE_OTLP_ENDPOINT", "collector:4318" },
        { "SLUICE_OTLP_ENDPOINT", "ftp://collector" },
        { "SLUICE_OTLP_ENDPOINT", "http://collector/v1/traces?x=1" },
        { "SLUICE_OTLP_ENDPOINT", "http://coll ector" },
        { "SLUICE_OTLP_PROTOCOL", "grpc" },
        { "SLUICE_OTLP_PROTOCOL", "HTTP/JSON" },
        { "SLUICE_OTLP_TIMEOUT_MS", "0" },
        { "SLUICE_OTLP_TIMEOUT_MS", "-5" },
        { "SLUICE_OTLP_TIMEOUT_MS", "10s" },
        { "SLUICE_OTLP_TIMEOUT_MS", " 10" },
        { "SLUICE_OTLP_TIMEOUT_MS", "600001" },
        { "SLUICE_OTLP_HEADERS", "authorization" },
        { "SLUICE_OTLP_HEADERS", "=value" },
        { "SLUICE_OTLP_HEADERS", "a=1,,b=2" },
        { "SLUICE_OTLP_HEADERS", "a=%zz" },
        { "SLUICE_OTLP_HEADERS", "a=%4" },
        { "SLUICE_OTLP_HEADERS", "a=x%0d%0aInjected: 1" },
        { "SLUICE_OTLP_HEADERS", "bad name=1" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        cr_expect_eq (s_config_with (bad [i][0], bad [i][1], &cfg), -1, "%s=%s refused", bad [i][0], bad [i][1]);
        cr_expect_null (cfg.endpoint);
        cr_expect_null (cfg.headers);
    }
}

Test (sl_otlp, config_good_values)
{
    sl_otlp_config_t cfg;
    cr_expect_eq (s_config_with ("SLUICE_OTLP_PROTOCOL", "http/json", &cfg), 0);
    cr_expect_eq (cfg.protocol, SL_OTLP_JSON);
    cr_expect_eq (s_config_with ("SLUICE_OTLP_PROTOCOL", "http/protobuf", &cfg), 0);
    cr_expect_eq (cfg.protocol, SL_OTLP_PROTOBUF);
    cr_expect_eq (s_config_with ("SLUICE_OTLP_TIMEOUT_MS", "2500", &cfg), 0);
    cr_expect_eq (cfg.timeout_ms, 2500);
    cr_expect_eq (s_config_with ("SLUICE_OTLP_HEADERS", "a=b", &cfg), 0);
    cr_expect_str_eq (cfg.headers, "a=b");
    sl_otlp_config_free (&cfg);
}

Test (sl_otlp, headers_parsed_and_decoded)
{
    struct curl_slist *list = NULL;
    char *error = NULL;
    cr_assert_eq (sl_otlp_headers_parse (" Authorization = Bearer%20abc%3D%3D , x-tenant=a%2Cb,empty=", &list, &error), 0,
                  "%s", error ? error : "");
    cr_assert_not_null (list);
    cr_expect_str_eq (list->data, "Authorization: Bearer abc==");
    cr_assert_not_null (list->next);
    cr_expect_str_eq (list->next->data, "x-tenant: a,b");
    cr_assert_not_null (list->next->next);
    cr_expect_str_eq (list->next->next->data, "empty: ");
    cr_expect_null (list->next->next->next);
    curl_slist_free_all (list);
    list = NULL;
    cr_expect_eq (sl_otlp_headers_parse (NULL, &list, &error), 0);
    cr_expect_eq (sl_otlp_headers_parse ("", &list, &error), 0);
    cr_expect_null (list);
}

Test (sl_otlp, outcome_of_an_answer)
{
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 200, true), SL_OTLP_ACCEPTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 202, true), SL_OTLP_ACCEPTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 200, false), SL_OTLP_RETRY, "an unreadable 2xx is no acceptance");
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 400, true), SL_OTLP_REJECTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 401, true), SL_OTLP_REJECTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 404, true), SL_OTLP_REJECTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 413, true), SL_OTLP_REJECTED);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 301, true), SL_OTLP_REJECTED, "redirects are not followed");
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 408, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 429, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 500, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_OK, 503, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_COULDNT_CONNECT, 0, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_OPERATION_TIMEDOUT, 0, true), SL_OTLP_RETRY);
    cr_expect_eq (sl_otlp_outcome (CURLE_WRITE_ERROR, 200, true), SL_OTLP_RETRY, "an answer cut off");
}

Test (sl_otlp, backoff_arithmetic)
{
    sl_otlp_config_t cfg = { .backoff_min_ms = 100, .backoff_max_ms = 1000 };
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 1, -1, 0), 100, "after the first attempt: the minimum");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 2, -1, 0), 200, "doubled");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 3, -1, 0), 400);
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 5, -1, 0), 1000, "at most the maximum");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 40, -1, 255), 1000, "however many attempts");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 1, -1, 63), 124, "jitter: up to a quarter more");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 1, -1, 64), 100, "the spread wraps");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 3, 0, 63), 0, "Retry-After: 0 honoured");
    cr_expect_eq (sl_otlp_backoff_ms (&cfg, 1, 2, 0), 1000, "Retry-After past the maximum: the maximum");
    sl_otlp_config_t wide = { .backoff_min_ms = 100, .backoff_max_ms = 30000 };
    cr_expect_eq (sl_otlp_backoff_ms (&wide, 1, 2, 63), 2000, "Retry-After within bounds, without jitter");
    cr_expect_eq (sl_otlp_backoff_ms (&wide, 1, 31, 0), 30000);
}

Test (sl_otlp, codec_registry)
{
    sl_otlp_protocol_t protocol;
    cr_expect_eq (sl_otlp_protocol_find ("http/protobuf", &protocol), 0);
    cr_expect_eq (protocol, SL_OTLP_PROTOBUF);
    cr_expect_eq (sl_otlp_protocol_find ("http/json", &protocol), 0);
    cr_expect_eq (protocol, SL_OTLP_JSON);
    cr_expect_eq (sl_otlp_protocol_find ("grpc", &protocol), -1, "an unknown protocol is an error");
    cr_expect_null (sl_otlp_codec ((sl_otlp_protocol_t) (SL_OTLP_JSON + 1)));
    cr_expect_str_eq (sl_otlp_codec (SL_OTLP_PROTOBUF)->content_type, "application/x-protobuf");
    cr_expect_str_eq (sl_otlp_codec (SL_OTLP_JSON)->content_type, "application/json");
}

//  The suite every registered codec runs.
ParameterizedTestParameters (sl_otlp, every_codec)
{
    static sl_otlp_protocol_t protocols [] = { SL_OTLP_PROTOBUF, SL_OTLP_JSON };
    return cr_make_param_array (sl_otlp_protocol_t, protocols, sizeof protocols / sizeof protocols [0]);
}

ParameterizedTest (sl_otlp_protocol_t *protocol, sl_otlp, every_codec)
{
    const sl_otlp_codec_t *codec = sl_otlp_codec (*protocol);
    cr_assert_not_null (codec);
    sl_otlp_protocol_t found;
    cr_expect_eq (sl_otlp_protocol_find (codec->name, &found), 0);
    cr_expect_eq (found, *protocol, "its name finds it");
    const uint8_t trace [SL_TRACE_ID_SIZE] = { 1 }, id [SL_SPAN_ID_SIZE] = { 2 };
    sl_span_t *spans [2] = {
        sl_span_new ("first-span", trace, id, NULL, SL_SPAN_SERVER, 1),
        sl_span_new ("second-span", trace, id, id, SL_SPAN_CLIENT, 2)
    };
    sl_otlp_resource_t resource = { "svc-name", "inst", "1.2.3" };
    sl_buf_t out = { 0 };
    codec->encode (&resource, spans, 2, &out);
    cr_expect (memmem (out.data, out.len, "first-span", 10) && memmem (out.data, out.len, "second-span", 11),
               "every span of the batch");
    cr_expect (memmem (out.data, out.len, "svc-name", 8) && memmem (out.data, out.len, "inst", 4));
    int64_t rejected = -1;
    cr_expect_eq (codec->response (SL_STR_NULL, &rejected), 0, "an empty answer accepts all");
    cr_expect_eq (rejected, 0);
    cr_expect_eq (codec->response (SL_STR_LIT ("\xff\xff\xff\xff"), &rejected), -2, "garbage is unreadable");
    sl_buf_free (&out);
    sl_span_destroy (&spans [0]);
    sl_span_destroy (&spans [1]);
}

Test (sl_otlp, header_errors_never_repeat_a_value)
{
    const char *bad [] = { "authorization=Bearer%zzSECRET", "authorization=SECRET%0a", "x=1,SECRET", "SECRET" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        struct curl_slist *list = NULL;
        char *error = NULL;
        cr_expect_eq (sl_otlp_headers_parse (bad [i], &list, &error), -1, "%s", bad [i]);
        cr_expect (error && !strstr (error, "SECRET"), "the error does not show the value: %s", error ? error : "");
        cr_expect (!error || !strstr (bad [i], "authorization=") || strstr (error, "authorization"),
                   "but names the header: %s", error ? error : "");
        free (error);
        curl_slist_free_all (list);
    }
}
