/*  sl_mock_vertex_anthropic.c - the mock as Claude on Vertex AI (see
    sl_mock_provider.h).

    POST .../v1/projects/{p}/locations/{r}/publishers/anthropic/models/
    {m}:streamRawPredict with Authorization: Bearer (a Google access token
    the mock issued, or SL_MOCK_BEARER_TOKEN: sl_mock_gcp.h). The body is Anthropic's Messages but for what
    Vertex AI says of it: anthropic_version "vertex-2023-10-16" in the body,
    and no model there (the path names it); the stream is Anthropic's.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c and the
    conformance suite, tests/unit/common/dialects/test_dialects.c.
*/
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

#define S_VERSION "vertex-2023-10-16"

static int
s_check (json_t *root, sl_mock_why_t *why)
{
    if (json_object_get (root, "model"))
        return sl_mock_refuse (why, "model: Extra inputs are not permitted (the path names the model)");
    if (!sl_mock_is (json_object_get (root, "anthropic_version"), S_VERSION))
        return sl_mock_refuse (why, "anthropic_version: \"" S_VERSION "\" is required");
    return sl_mock_anthropic_check (root, why);
}

static bool
s_result (json_t *root, sl_mock_result_t *out)
{
    return sl_mock_anthropic_result (root, out);
}

static bool
s_carries_result (json_t *message)
{
    return sl_mock_anthropic_carries_result (message);
}

static const char *const s_max_tokens [] = { "max_tokens", NULL };

const sl_mock_provider_t sl_mock_vertex_anthropic = {
    .dialect = SL_DIALECT_VERTEX_ANTHROPIC,
    .path = ":streamRawPredict",
    .marker = "/publishers/anthropic/models/",
    .bearer = true,
    .model_in_path = true,
    .max_tokens = s_max_tokens,
    .check = s_check,
    .result = s_result,
    .shape = { .schema = "input_schema", .turns = "messages", .carries_result = s_carries_result },
    .render = &sl_mock_anthropic_render,
};
