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
    return sl_mock_request_read (method, path, sl_str (body), call, error);
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
