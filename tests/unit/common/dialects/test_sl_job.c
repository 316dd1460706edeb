/*  Unit tests: common/dialects/sl_job. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_job.h"
#include "tests/tools_view.h"
#include "common/dialects/sl_providers.h"

//  A request to the endpoint of a dialect.
static int
s_parse_in (int dialect, sl_str_t body, sl_job_t *r)
{
    sl_endpoint_t endpoint = { .dialect = dialect };
    return sl_job_parse (&endpoint, body, r);
}

//  A Gemini request to the endpoint route, with alt=sse or not.
static int __attribute__ ((unused))
s_parse_gemini (sl_str_t body, const sl_endpoint_t *route, bool sse, sl_job_t *r)
{
    sl_endpoint_t endpoint = *route;
    endpoint.sse = sse;
    return sl_job_parse (&endpoint, body, r);
}

static int
s_parse (const char *body, sl_job_t *r)
{
    return s_parse_in (SL_DIALECT_OPENAI, sl_str (body), r);
}

Test (sl_job, prepares_the_upstream_body)
{
    sl_job_t r;
    cr_assert_eq (s_parse ("{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                           "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]},"
                           "{\"role\":\"assistant\",\"content\":\"a\"}],"
                           "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]}",
                           &r), 0);
    cr_expect (sl_str_eq (sl_buf_str (&r.model), "m"));
    cr_expect (r.stream);
    cr_expect_not (r.include_usage);
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "hello"));
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"f\",\"schema\":{\"type\":\"object\"}}]"), "%s", sl_buf_cstr (&r.tools));
    json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_assert_not_null (up);
    cr_expect (json_is_true (json_object_get (up, "stream")));
    cr_expect (json_is_true (json_object_get (json_object_get (up, "stream_options"), "include_usage")),
               "usage is always asked for upstream");
    cr_expect_eq (json_array_size (json_object_get (up, "messages")), 3, "messages untouched");
    json_decref (up);
    sl_job_clear (&r);
}

//  A client that asks for one whole body still gets a streamed upstream
//  call: the emitter renders the body from the judged stream.
Test (sl_job, non_streaming_requests_stream_upstream)
{
    sl_job_t r;
    const char *openai [] = {
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"stream\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        NULL };
    for (int i = 0; openai [i]; i++) {
        cr_assert_eq (s_parse (openai [i], &r), 0, "case %d: %s", i, sl_buf_cstr (&r.error_message));
        cr_expect_not (r.stream, "case %d: the client wants one body", i);
        json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
        cr_expect (json_is_true (json_object_get (up, "stream")), "case %d: upstream streams", i);
        json_decref (up);
        sl_job_clear (&r);
    }
    cr_assert_eq (s_parse_in (SL_DIALECT_ANTHROPIC, sl_str ("{\"model\":\"m\",\"max_tokens\":5,"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"), &r), 0);
    cr_expect_not (r.stream);
    json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_expect (json_is_true (json_object_get (up, "stream")));
    json_decref (up);
    sl_job_clear (&r);
    cr_assert_eq (s_parse_in (SL_DIALECT_RESPONSES, sl_str ("{\"model\":\"m\",\"stream\":false,\"input\":\"x\"}"), &r), 0);
    cr_expect_not (r.stream);
    up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_expect (json_is_true (json_object_get (up, "stream")));
    json_decref (up);
    sl_job_clear (&r);
}

Test (sl_job, client_usage_option_noted)
{
    sl_job_t r;
    cr_assert_eq (s_parse ("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                           "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r), 0);
    cr_expect (r.include_usage);
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[]"), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
}

Test (sl_job, refuses_bad_requests_with_reasons)
{
    struct { const char *body; const char *needle; } cases [] = {
        { "{bad", "not valid JSON" },
        { "[1]", "JSON object" },
        { "{\"messages\":[{}],\"stream\":true}", "'model'" },
        { "{\"model\":\"m\",\"stream\":true}", "'messages'" },
        { "{\"model\":\"m\",\"stream\":\"yes\",\"messages\":[{}]}", "'stream' must be a boolean" },
        { "{\"model\":\"m\",\"stream\":true,\"n\":2,\"messages\":[{}]}", "'n'" },
        { "{\"model\":\"m\",\"stream\":true,\"messages\":[{}],\"tools\":{}}", "'tools' must be an array" },
        { "{\"model\":\"m\",\"stream\":true,\"messages\":[{}],\"tools\":[{\"function\":{}}]}", "tools[0]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_job_t r;
        cr_expect_eq (s_parse (cases [i].body, &r), -1, "case %zu refused", i);
        cr_expect_eq (r.status, 400);
        cr_expect_str_eq (r.error_type, "invalid_request_error");
        cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), cases [i].needle),
                            "case %zu: '%s' mentions %s", i, sl_buf_cstr (&r.error_message), cases [i].needle);
        sl_job_clear (&r);
    }
}

//  A body of n empty objects in a request's messages: ~3 bytes of text
//  each, ~250 bytes of tree each.
static void
s_empties (sl_buf_t *b, size_t n)
{
    sl_buf_puts (b, "{\"model\":\"m\",\"stream\":true,\"messages\":[");
    for (size_t i = 0; i < n; i++)
        sl_buf_puts (b, i ? ",{}" : "{}");
    sl_buf_puts (b, "]}");
}

Test (sl_job, refuses_a_body_whose_tree_would_be_over_the_budget)
{
    //  1 MiB of {}: ~90 MiB of tree, over 4 x 1 MiB + 16 MiB.
    sl_buf_t body = { 0 };
    s_empties (&body, (1u << 20) / 3);
    sl_job_t r;
    cr_assert_eq (s_parse_in (SL_DIALECT_OPENAI, sl_buf_str (&body), &r), -1);
    cr_expect_eq (r.status, 413);
    cr_expect_str_eq (r.error_type, "request_too_large");
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "too many JSON values"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    //  In every dialect: the check comes before anything else is read.
    cr_expect_eq (s_parse_in (SL_DIALECT_ANTHROPIC, sl_buf_str (&body), &r), -1);
    cr_expect_eq (r.status, 413);
    sl_job_clear (&r);
    cr_expect_eq (s_parse_in (SL_DIALECT_RESPONSES, sl_buf_str (&body), &r), -1);
    cr_expect_eq (r.status, 413);
    sl_job_clear (&r);
    sl_endpoint_t route = { .dialect = SL_DIALECT_GEMINI, .stream = true, .model = "g" };
    cr_expect_eq (s_parse_gemini (sl_buf_str (&body), &route, true, &r), -1);
    cr_expect_eq (r.status, 413);
    sl_job_clear (&r);
    //  The same count of values, small enough for the floor: read.
    sl_buf_reset (&body);
    s_empties (&body, 1000);
    cr_expect_eq (s_parse_in (SL_DIALECT_OPENAI, sl_buf_str (&body), &r), 0, "%s", sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    sl_buf_free (&body);
}

Test (sl_job, budget_estimate_stays_above_what_the_tree_takes)
{
    //  The estimate is in line with jansson's structures: a request with
    //  tools and text costs a few times its size, and far below the budget.
    const char *body = "{\"model\":\"m\",\"stream\":true,\"tools\":[{\"type\":\"function\",\"function\":"
                       "{\"name\":\"run\",\"parameters\":{\"type\":\"object\",\"properties\":"
                       "{\"cmd\":{\"type\":\"string\"}}}}}],\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    sl_json_stats_t st;
    cr_assert_eq (sl_json_stats (sl_str (body), &st), 0);
    size_t cost = sl_job_tree_cost (&st);
    cr_expect_gt (cost, 5 * strlen (body));
    cr_expect_lt (cost, 40 * strlen (body));
    cr_expect_lt (cost, sl_job_tree_budget (strlen (body)));
}

Test (sl_job, malformed_and_too_deep_bodies_are_refused_without_a_parse)
{
    sl_job_t r;
    cr_assert_eq (s_parse ("{\"model\":\"m\",\n \"messages\": [}", &r), -1);
    cr_expect_eq (r.status, 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "line 2, column 15"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    sl_buf_t deep = { 0 };
    sl_buf_puts (&deep, "{\"model\":\"m\",\"messages\":");
    for (int i = 0; i < SL_JSON_MAX_DEPTH + 1; i++)
        sl_buf_putc (&deep, '[');
    cr_assert_eq (s_parse_in (SL_DIALECT_OPENAI, sl_buf_str (&deep), &r), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "nested too deeply"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    sl_buf_free (&deep);
}

//  --------------------------------------------------------------------------
//  Endpoints and the other dialects

Test (sl_job, routes_every_endpoint)
{
    sl_endpoint_t r;
    cr_expect_eq (sl_job_route ("/v1/chat/completions", &r), 1);
    cr_expect_eq (r.dialect, SL_DIALECT_OPENAI);
    cr_expect_eq (sl_job_route ("/v1/messages", &r), 1);
    cr_expect_eq (r.dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_eq (sl_job_route ("/v1/responses", &r), 1);
    cr_expect_eq (r.dialect, SL_DIALECT_RESPONSES);
    cr_expect_eq (sl_job_route ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", &r), 1);
    cr_expect_eq (r.dialect, SL_DIALECT_GEMINI);
    cr_expect (r.stream);
    cr_expect_str_eq (r.model, "gemini-2.5-flash");
    cr_expect_eq (sl_job_route ("/v1/models/gemini-x:generateContent", &r), 1);
    cr_expect_not (r.stream);
    cr_expect_str_eq (r.model, "gemini-x");
    cr_expect_eq (sl_job_route ("/v1beta/models/gemini-x:countTokens", &r), 0);
    cr_expect_eq (r.dialect, SL_DIALECT_GEMINI, "a Gemini-looking path gets a Gemini 404");
    cr_expect_eq (sl_job_route ("/v1beta/models/mock-replay/g/x.sse:generateContent", &r), 1);
    cr_expect_str_eq (r.model, "mock-replay/g/x.sse", "a model name may hold slashes");
    cr_expect_eq (sl_job_route ("/v1beta/models/a:b:generateContent", &r), 0);
    cr_expect_eq (sl_job_route ("/v1beta/models/:generateContent", &r), 0);
    cr_expect_eq (sl_job_route ("/v1/messages/count_tokens", &r), 0);
    cr_expect_eq (r.dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_eq (sl_job_route ("/v1/nowhere", &r), 0);
    cr_expect_eq (r.dialect, 0);
}

Test (sl_job, anthropic_request)
{
    sl_job_t r;
    cr_assert_eq (s_parse_in (SL_DIALECT_ANTHROPIC, sl_str (
        "{\"model\":\"claude-x\",\"max_tokens\":100,\"stream\":true,"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"weather?\"}]}],"
        "\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\"}},"
        "{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]}"), &r), 0, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_eq (r.client_dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_eq (r.upstream_dialect, SL_DIALECT_ANTHROPIC);
    cr_expect (sl_str_eq (sl_buf_str (&r.model), "claude-x"));
    cr_expect (r.include_usage);
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "weather?"));
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"get_weather\",\"schema\":{\"type\":\"object\"}},"
                                              "{\"name\":\"web_search\",\"schema\":{}}]"), "%s", sl_buf_cstr (&r.tools));
    json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_expect (json_is_true (json_object_get (up, "stream")));
    cr_expect_eq (json_integer_value (json_object_get (up, "max_tokens")), 100);
    json_decref (up);
    sl_job_clear (&r);

    const char *bad [] = {
        "{\"max_tokens\":1,\"stream\":true,\"messages\":[{}]}",
        "{\"model\":\"m\",\"stream\":true,\"messages\":[{}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"stream\":true,\"messages\":[]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"stream\":1,\"messages\":[{}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"stream\":true,\"messages\":[{}],\"tools\":[{\"name\":3}]}",
        NULL };
    for (int i = 0; bad [i]; i++) {
        cr_expect_eq (s_parse_in (SL_DIALECT_ANTHROPIC, sl_str (bad [i]), &r), -1, "case %d", i);
        cr_expect_eq (r.status, 400);
        sl_job_clear (&r);
    }
}

Test (sl_job, responses_request)
{
    sl_job_t r;
    cr_assert_eq (s_parse_in (SL_DIALECT_RESPONSES, sl_str (
        "{\"model\":\"gpt-x\",\"stream\":true,\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\"}]}],"
        "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{\"type\":\"object\"}},{\"type\":\"web_search\"}]}"),
        &r), 0, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_eq (r.client_dialect, SL_DIALECT_RESPONSES);
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "hi"));
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"f\",\"schema\":{\"type\":\"object\"}}]"), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
    cr_assert_eq (s_parse_in (SL_DIALECT_RESPONSES, sl_str ("{\"model\":\"m\",\"stream\":true,\"input\":\"plain\"}"), &r), 0);
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "plain"));
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[]"), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
    const char *bad [] = {
        "{\"model\":\"m\",\"stream\":true}",
        "{\"model\":\"m\",\"input\":\"x\",\"stream\":\"no\"}",
        "{\"model\":\"m\",\"stream\":true,\"input\":\"x\",\"background\":true}",
        NULL };
    for (int i = 0; bad [i]; i++) {
        cr_expect_eq (s_parse_in (SL_DIALECT_RESPONSES, sl_str (bad [i]), &r), -1, "case %d", i);
        cr_expect_eq (r.status, 400);
        sl_job_clear (&r);
    }
}

Test (sl_job, gemini_request)
{
    sl_endpoint_t route;
    sl_job_route ("/v1beta/models/gemini-x:streamGenerateContent", &route);
    sl_job_t r;
    const char *body = "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"a\"},{\"text\":\"b\"}]},"
                       "{\"role\":\"model\",\"parts\":[{\"text\":\"c\"}]}],"
                       "\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\",\"parameters\":{\"type\":\"OBJECT\"}},"
                       "{\"name\":\"g\",\"parametersJsonSchema\":{\"type\":\"object\"}}]},{\"googleSearch\":{}}]}";
    cr_assert_eq (s_parse_gemini (sl_str (body), &route, true, &r), 0, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_eq (r.client_dialect, SL_DIALECT_GEMINI);
    cr_expect (sl_str_eq (sl_buf_str (&r.model), "gemini-x"));
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "a\nb"));
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"f\",\"schema\":{\"type\":\"OBJECT\"}},"
                                              "{\"name\":\"g\",\"schema\":{\"type\":\"object\"}}]"), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
    cr_expect_eq (s_parse_gemini (sl_str (body), &route, false, &r), -1, "alt=sse is required");
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "alt=sse"));
    sl_job_clear (&r);
    sl_endpoint_t unary;
    sl_job_route ("/v1beta/models/gemini-x:generateContent", &unary);
    cr_expect_eq (s_parse_gemini (sl_str (body), &unary, false, &r), 0, "generateContent: one body");
    cr_expect_not (r.stream);
    cr_expect (sl_str_eq (sl_buf_str (&r.model), "gemini-x"));
    sl_job_clear (&r);
    cr_expect_eq (s_parse_gemini (sl_str ("{\"contents\":[{}],\"generationConfig\":{\"candidateCount\":2}}"),
                                           &route, true, &r), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "candidateCount"));
    sl_job_clear (&r);
    cr_expect_eq (s_parse_gemini (sl_str ("{\"contents\":[]}"), &route, true, &r), -1);
    sl_job_clear (&r);
}

//  --------------------------------------------------------------------------
//  Patching, routing, translating

Test (sl_job, patch_sets_members_in_place_and_adds_the_missing)
{
    sl_patch_t p [] = { { "stream", "true" }, { "extra", "{\"a\":1}" } };
    struct { const char *in, *out; } cases [] = {
        { "{}", "{\"stream\":true,\"extra\":{\"a\":1}}" },
        { "{ \"stream\" : false }", "{ \"stream\" : true ,\"extra\":{\"a\":1}}" },
        { "{\"a\":[1,{\"stream\":0}],\"stream\":null,\"b\":\"\\u00e9\"}\n",
          "{\"a\":[1,{\"stream\":0}],\"stream\":true,\"b\":\"\\u00e9\",\"extra\":{\"a\":1}}\n" },
        { "{\"stream\":1,\"stream\":2,\"extra\":3}", "{\"stream\":true,\"stream\":true,\"extra\":{\"a\":1}}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t out = { 0 };
        cr_assert_eq (sl_job_patch (sl_str (cases [i].in), p, 2, &out), 0, "case %zu", i);
        cr_expect_str_eq (sl_buf_cstr (&out), cases [i].out, "case %zu", i);
        sl_buf_free (&out);
    }
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_job_patch (sl_str ("[1]"), p, 2, &out), -1);
    cr_expect_eq (sl_job_patch (sl_str ("{\"a\":"), p, 2, &out), -1);
    sl_buf_free (&out);
}

static sl_providers_t *
s_routes (const char *text)
{
    char *error = NULL;
    sl_providers_t *r = NULL;
    sl_routesfile_parse (text, strlen (text), "routes.yaml", &r, NULL, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    return r;
}

Test (sl_job, a_route_to_another_dialect_translates_the_request)
{
    sl_providers_t *routes = s_routes ("providers:\n"
                                    "  - { name: ant, dialect: anthropic, base_url: http://a }\n"
                                    "  - { name: oa, dialect: openai, base_url: http://o }\n"
                                    "routes:\n  - { model: 'claude-*', provider: ant }\n");
    sl_endpoint_t chat = { .dialect = SL_DIALECT_OPENAI };
    sl_job_t r;
    cr_assert_eq (sl_job_prepare (&chat, sl_str ("{\"model\":\"claude-x\",\"messages\":[{\"role\":\"user\","
                                      "\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}"),
                                      routes, NULL, &r), 0, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (r.provider, "ant");
    cr_expect_eq (r.client_dialect, SL_DIALECT_OPENAI);
    cr_expect_eq (r.upstream_dialect, SL_DIALECT_ANTHROPIC);
    json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_assert_not_null (up);
    cr_expect (json_is_integer (json_object_get (up, "max_tokens")), "an Anthropic request");
    json_t *first = json_array_get (json_object_get (up, "messages"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "role")), "user");
    cr_expect (sl_str_starts (sl_buf_str (&r.tools), "[{\"name\":\"f\",\"schema\":{},\"tool\":\"f\",\"digest\":\""),
               "the judge's view, the client's tools: %s", sl_buf_cstr (&r.tools));
    cr_expect_str_eq (sl_buf_cstr (&r.last_user), "hi");
    json_decref (up);
    sl_job_clear (&r);
    //  Another model stays with the client's dialect.
    cr_assert_eq (sl_job_prepare (&chat, sl_str ("{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\","
                                      "\"content\":\"hi\"}]}"), routes, NULL, &r), 0);
    cr_expect_str_eq (r.provider, "oa");
    cr_expect_eq (r.upstream_dialect, SL_DIALECT_OPENAI);
    sl_job_clear (&r);
    //  What cannot cross: a 400 in the client's terms.
    cr_expect_eq (sl_job_prepare (&chat, sl_str ("{\"model\":\"claude-x\",\"messages\":[{\"role\":\"user\","
                                      "\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]}"), routes, NULL, &r), -1);
    cr_expect_eq (r.status, 400);
    cr_expect_str_eq (r.error_type, "invalid_request_error");
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "input_audio"), "%s", sl_buf_cstr (&r.error_message));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "anthropic"), "%s", sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    sl_providers_destroy (&routes);
}

Test (sl_job, fields_only_one_dialect_has_are_named_by_its_lists)
{
    sl_endpoint_t chat = { .dialect = SL_DIALECT_OPENAI };
    sl_job_t r;
    cr_assert_eq (sl_job_parse (&chat, sl_str ("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                                                   "\"logprobs\":true,\"x-\\\"evil\\\"\\nname\":1,\"audio\":{}}"), &r), 0);
    const sl_req_t *q = r.req;
    cr_assert_eq (q->feature_count, 3);
    cr_expect_str_eq (q->features [0].name, "logprobs");
    cr_expect_not (q->features [0].matters);
    cr_expect_str_eq (q->features [1].name, SL_REQ_OTHER_FIELDS, "a client's own key never names a metric label");
    cr_expect_str_eq (q->features [2].name, "audio");
    cr_expect (q->features [2].matters);
    //  The whole model, one JSON shape for every dialect.
    sl_buf_t dump = { 0 };
    sl_req_dump (q, &dump);
    json_t *j = json_loads (sl_buf_cstr (&dump), 0, NULL);
    cr_assert_not_null (j, "%s", sl_buf_cstr (&dump));
    cr_expect_str_eq (json_string_value (json_object_get (j, "model")), "m");
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (json_object_get (j, "messages"), 0), "role")),
                      "user");
    cr_expect_eq (json_array_size (json_object_get (j, "features")), 3);
    json_decref (j);
    sl_buf_free (&dump);
    sl_job_clear (&r);
}
