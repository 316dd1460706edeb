/*  Unit tests: services/mock/sl_mock_request - the provider API a path
    calls, the model and max tokens a request names, and the error its
    provider would answer with when it is not served. */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_request.h"

static int
s_read (const char *method, const char *path, const char *body, sl_mock_call_t *call, sl_mock_script_t *error)
{
    return sl_mock_request_read (method, path, sl_str (body), NULL, call, error);
}

Test (sl_mock_request, each_provider_api_by_its_path)
{
    cr_expect_eq (sl_mock_request_dialect ("/v1/chat/completions"), SL_DIALECT_OPENAI);
    cr_expect_eq (sl_mock_request_dialect ("/v1/responses"), SL_DIALECT_RESPONSES);
    cr_expect_eq (sl_mock_request_dialect ("/messages"), SL_DIALECT_ANTHROPIC);
    cr_expect_eq (sl_mock_request_dialect ("/v1beta/models/m:streamGenerateContent"), SL_DIALECT_GEMINI);
    cr_expect_eq (sl_mock_request_dialect ("/v1beta/models/:streamGenerateContent"), 0, "no model in the path");
    cr_expect_eq (sl_mock_request_dialect ("/v1/embeddings"), 0);
}

Test (sl_mock_request, a_served_call_names_its_scenario_and_max_tokens)
{
    sl_mock_call_t call;
    sl_mock_script_t error;
    cr_assert_eq (s_read ("POST", "/v1/messages", "{\"model\":\"mock-bench@anthropic\",\"max_tokens\":12,"
                          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &call, &error), 0);
    cr_expect_eq (call.dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_str_eq (call.model, "mock-bench", "the @suffix is the route's, not the scenario's");
    cr_expect_eq (call.chunks, 12);
    cr_assert_eq (s_read ("POST", "/v1beta/models/mock-text:streamGenerateContent",
                          "{\"contents\":[],\"generationConfig\":{\"maxOutputTokens\":7}}", &call, &error), 0);
    cr_expect_str_eq (call.model, "mock-text");
    cr_expect_eq (call.chunks, 7);
}

typedef struct {
    const char *method, *path, *body;
    int status;
    const char *says;
} s_refusal_t;

Test (sl_mock_request, what_is_not_served_is_its_providers_error)
{
    static const s_refusal_t cases [] = {
        { "POST", "/v1/embeddings", "{}", 404, "the mock serves" },
        { "GET", "/v1/chat/completions", "", 404, "use POST" },
        { "POST", "/v1/chat/completions", "not json", 404, "with a model" },
        { "POST", "/v1/messages", "{\"model\":\"mock-text\",\"messages\":\"x\",\"stream\":true}", 400,
          "messages: an array is required" },
        { "POST", "/v1beta/models/mock-text:streamGenerateContent", "{\"contents\":{}}", 400, "INVALID_ARGUMENT" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_mock_call_t call;
        sl_mock_script_t error;
        //  *error is written whole: garbage in it must not matter.
        memset (&error, 0xa5, sizeof error);
        cr_assert_eq (s_read (cases [i].method, cases [i].path, cases [i].body, &call, &error), -1, "%s", cases [i].body);
        cr_expect_eq (error.status, cases [i].status, "%s: %d", cases [i].body, error.status);
        cr_expect_not_null (memmem (error.error_body.data, error.error_body.len, cases [i].says, strlen (cases [i].says)),
                            "%s: %.*s", cases [i].body, (int) error.error_body.len, error.error_body.data);
        sl_mock_script_clear (&error);
    }
}

//  Claude in the clouds refuses the beta features it does not take, as
//  each cloud does (Bedrock in the body, Vertex AI in the header), and a
//  field whose beta is not named; what it takes is served.
#define S_BEDROCK "/model/mock-text/invoke-with-response-stream"
#define S_VERTEX "/v1/projects/p/locations/r/publishers/anthropic/models/mock-text:streamRawPredict"
#define S_TURN "\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
#define S_ON_BEDROCK "{\"anthropic_version\":\"bedrock-2023-05-31\"," S_TURN
#define S_ON_VERTEX "{\"anthropic_version\":\"vertex-2023-10-16\"," S_TURN
#define S_DEFERRED ",\"tools\":[{\"name\":\"t\",\"input_schema\":{\"type\":\"object\"},\"defer_loading\":true}]"

typedef struct {
    const char *path, *body, *betas;
    const char *says;                   //  NULL: served
} s_beta_case_t;

Test (sl_mock_request, a_clouds_claude_takes_only_its_betas)
{
    static const s_beta_case_t cases [] = {
        { S_BEDROCK, S_ON_BEDROCK ",\"anthropic_beta\":[\"claude-code-20250219\",\"effort-2025-11-24\"]}", NULL, NULL },
        { S_BEDROCK, S_ON_BEDROCK ",\"anthropic_beta\":[\"claude-code-20250219\",\"thinking-token-count-2026-05-13\"]}",
          NULL, "invalid beta flag" },
        { S_BEDROCK, S_ON_BEDROCK ",\"anthropic_beta\":\"effort-2025-11-24\"}", NULL, "an array of strings" },
        { S_BEDROCK, S_ON_BEDROCK S_DEFERRED "}", NULL,
          "tools.0.custom.defer_loading: Extra inputs are not permitted" },
        { S_BEDROCK, S_ON_BEDROCK S_DEFERRED ",\"anthropic_beta\":[\"tool-search-tool-2025-10-19\"]}", NULL, NULL },
        { S_BEDROCK, S_ON_BEDROCK ",\"context_management\":{\"edits\":[]}}", NULL,
          "context_management: Extra inputs are not permitted" },
        { S_VERTEX, S_ON_VERTEX "}", "claude-code-20250219, interleaved-thinking-2025-05-14", NULL },
        { S_VERTEX, S_ON_VERTEX "}", "claude-code-20250219,advanced-tool-use-2025-11-20,prompt-caching-scope-2026-01-05",
          "Unexpected value(s) `advanced-tool-use-2025-11-20`, `prompt-caching-scope-2026-01-05` for the "
          "`anthropic-beta` header" },
        { S_VERTEX, S_ON_VERTEX S_DEFERRED "}", "claude-code-20250219",
          "tools.0.custom.defer_loading: Extra inputs are not permitted" },
        { S_VERTEX, S_ON_VERTEX S_DEFERRED "}", "tool-search-tool-2025-10-19", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_mock_call_t call;
        sl_mock_script_t error;
        int rc = sl_mock_request_read ("POST", cases [i].path, sl_str (cases [i].body), cases [i].betas, &call, &error);
        if (!cases [i].says) {
            cr_expect_eq (rc, 0, "%zu: served: %.*s", i, rc ? (int) error.error_body.len : 0,
                          rc ? error.error_body.data : "");
            if (rc)
                sl_mock_script_clear (&error);
            continue;
        }
        cr_assert_eq (rc, -1, "%zu: %s refused", i, cases [i].body);
        cr_expect_eq (error.status, 400, "%zu", i);
        cr_expect_not_null (memmem (error.error_body.data, error.error_body.len, cases [i].says, strlen (cases [i].says)),
                            "%zu: %.*s", i, (int) error.error_body.len, error.error_body.data);
        sl_mock_script_clear (&error);
    }
}

//  The Anthropic API itself reads no beta feature the mock checks.
Test (sl_mock_request, anthropics_own_api_takes_any_beta)
{
    sl_mock_call_t call;
    sl_mock_script_t error;
    cr_expect_eq (sl_mock_request_read ("POST", "/v1/messages", sl_str ("{\"model\":\"mock-text\"," S_TURN S_DEFERRED "}"),
                                        "advanced-tool-use-2025-11-20", &call, &error), 0);
}
