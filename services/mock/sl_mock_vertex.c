/*  sl_mock_vertex.c - the mock as Vertex AI's Gemini (see
    sl_mock_provider.h).

    POST .../v1/projects/{p}/locations/{r}/publishers/google/models/{m}:
    streamGenerateContent?alt=sse with Authorization: Bearer (a Google
    access token the mock issued, or SL_MOCK_BEARER_TOKEN: sl_mock_gcp.h);
    the requests and the stream are Gemini's, as Vertex AI serves them.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c and the
    conformance suite, tests/unit/common/dialects/test_dialects.c.
*/
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

static int
s_check (json_t *root, sl_mock_why_t *why)
{
    return sl_mock_gemini_check (root, why);
}

static bool
s_result (json_t *root, sl_mock_result_t *out)
{
    return sl_mock_gemini_result (root, out);
}

static bool
s_carries_result (json_t *content)
{
    return sl_mock_gemini_carries_result (content);
}

static const char *const s_max_tokens [] = { "generationConfig.maxOutputTokens", NULL };

const sl_mock_provider_t sl_mock_vertex = {
    .dialect = SL_DIALECT_VERTEX,
    .path = ":streamGenerateContent",
    .marker = "/publishers/google/models/",
    .bearer = true,
    .model_in_path = true,
    .max_tokens = s_max_tokens,
    .check = s_check,
    .result = s_result,
    .shape = { .schema = "parameters", .schema2 = "parametersJsonSchema", .declarations = "functionDeclarations",
               .turns = "contents", .carries_result = s_carries_result },
    .render = &sl_mock_gemini_render,
};
