/*  sl_mock_vertex_anthropic.c - the mock as Claude on Vertex AI (see
    sl_mock_provider.h).

    POST .../v1/projects/{p}/locations/{r}/publishers/anthropic/models/
    {m}:streamRawPredict with Authorization: Bearer (a Google access token
    the mock issued, or SL_MOCK_BEARER_TOKEN: sl_mock_gcp.h). The body is Anthropic's Messages but for what
    Vertex AI says of it: anthropic_version "vertex-2023-10-16" in the body,
    and no model there (the path names it); the stream is Anthropic's.
    Beta features are the anthropic-beta header's, and names Vertex AI
    does not take are refused (every one named, as Vertex AI answers
    Claude Code's Anthropic-only ones), as is a field whose beta is not
    named (sl_mock_anthropic_check_betas).

    Tests: tests/unit/services/mock/test_sl_mock_provider.c and the
    conformance suite, tests/unit/common/dialects/test_dialects.c.
*/
#include <string.h>

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

//  The beta features Claude on Vertex AI takes in the anthropic-beta
//  header: those Vertex AI's Claude pages name, and claude-code-20250219,
//  which it takes of Claude Code (reports of Vertex AI's refusals name
//  which it does not: prompt-caching-scope-2026-01-05,
//  redact-thinking-2026-02-12, thinking-token-count-2026-05-13,
//  web-search-2025-03-05, ...).
static const char *const s_betas [] = {
    "claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
    "context-1m-2025-08-07", "effort-2025-11-24", "tool-search-tool-2025-10-19", "token-efficient-tools-2025-02-19",
    "output-128k-2025-02-19", "computer-use-2025-01-24", NULL
};

//  The header's comma-separated names, each trimmed of blanks.
static int
s_check_betas (json_t *root, const char *header, sl_mock_why_t *why)
{
    json_t *names = json_array ();
    for (const char *p = header; p && *p;) {
        const char *comma = strchr (p, ',');
        const char *a = p, *b = comma ? comma : p + strlen (p);
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b [-1] == ' ' || b [-1] == '\t'))
            b--;
        if (b > a)
            json_array_append_new (names, json_stringn (a, (size_t) (b - a)));
        p = comma ? comma + 1 : NULL;
    }
    int rc = sl_mock_anthropic_check_betas (root, names, s_betas, true, why);
    json_decref (names);
    return rc;
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
    .check_betas = s_check_betas,
    .result = s_result,
    .shape = { .schema = "input_schema", .turns = "messages", .carries_result = s_carries_result },
    .render = &sl_mock_anthropic_render,
};
