/*  sl_bedrock.c - Amazon Bedrock's two doors to a model, their tables.

    bedrock (Converse): POST {base}/model/{modelId}/converse-stream, the
    Converse body (sl_bedrock_request.c) for any model Bedrock serves,
    streamed as AWS's event stream (sl_bedrock_decode.c).

    bedrock-anthropic (Claude): POST {base}/model/{modelId}/
    invoke-with-response-stream, Anthropic's Messages body as Bedrock takes
    it (sl_bedrock_anthropic_request.c), streamed as AWS's event stream of
    chunks of Anthropic's events (sl_bedrock_anthropic_decode.c). Its
    format is Anthropic's: an Anthropic client's body is forwarded, not
    translated; its anthropic-beta header goes in the body's
    anthropic_beta (fold), not as a header.

    Both are upstream-only. The base URL is the provider's base_url, else
    https://bedrock-runtime.{region}.amazonaws.com; region is needed (the
    URL's, and the signature's). The model id goes in the path encoded
    once (anthropic.claude-sonnet-4-5-20250929-v1:0 as ...v1%3A0, an ARN's
    '/' as %2F); SigV4 encodes the path again when it signs, as AWS wants.
    The credential: a key_env / token_env the provider names (a Bedrock
    API key, as Bearer), else AWS's from the ingest's environment (auth
    SL_AUTH_AWS: common/cloud/sl_awsauth, each attempt signed with SigV4
    for the provider's region; docs/dialects/bedrock.md).

    Tests: tests/unit/common/dialects/test_dialects.c (the conformance
    suite), tests/unit/common/dialects/bedrock/.
*/
#include "common/dialects/bedrock/sl_bedrock.h"

#include "common/dialects/sl_framing.h"
#include "common/http/sl_auth.h"

#define S_MODEL_MAX 2048                //  a model id or an ARN, as Bedrock bounds them

//  {base}/model/{model}/{operation}
static int
s_url_for (const sl_provider_t *provider, sl_str_t model, const char *operation, sl_buf_t *out, sl_buf_t *why)
{
    if (!model.ptr || !model.len || model.len > S_MODEL_MAX) {
        sl_buf_puts (why, "the request names no model a URL can hold");
        return -1;
    }
    if (provider->base_url && *provider->base_url)
        sl_buf_puts (out, provider->base_url);
    else
    if (provider->region && *provider->region) {
        sl_buf_puts (out, "https://bedrock-runtime.");
        sl_dialect_put_segment (sl_str (provider->region), NULL, out);
        sl_buf_puts (out, ".amazonaws.com");
    }
    else {
        sl_buf_printf (why, "provider '%s' has no region (nor base_url)", provider->name ? provider->name : "?");
        return -1;
    }
    sl_buf_puts (out, "/model/");
    sl_dialect_put_segment (model, NULL, out);
    sl_buf_printf (out, "/%s", operation);
    return 0;
}

static int
s_converse_url (const sl_provider_t *provider, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    return s_url_for (provider, model, "converse-stream", out, why);
}

static int
s_invoke_url (const sl_provider_t *provider, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    return s_url_for (provider, model, "invoke-with-response-stream", out, why);
}

//  Converse's stop reasons.
static const sl_finish_name_t s_converse_finishes [] = {
    { "end_turn", SL_FIN_STOP }, { "stop_sequence", SL_FIN_STOP }, { "max_tokens", SL_FIN_LENGTH },
    { "model_context_window_exceeded", SL_FIN_LENGTH }, { "tool_use", SL_FIN_TOOL_CALLS },
    { "guardrail_intervened", SL_FIN_CONTENT_FILTER }, { "content_filtered", SL_FIN_CONTENT_FILTER },
    { NULL, 0 }
};

//  Claude's, as Anthropic's API gives them.
static const sl_finish_name_t s_claude_finishes [] = {
    { "end_turn", SL_FIN_STOP }, { "stop_sequence", SL_FIN_STOP }, { "max_tokens", SL_FIN_LENGTH },
    { "model_context_window_exceeded", SL_FIN_LENGTH }, { "tool_use", SL_FIN_TOOL_CALLS },
    { "refusal", SL_FIN_REFUSAL }, { "pause_turn", SL_FIN_PAUSE }, { NULL, 0 }
};

//  The stream is AWS's event stream whatever was asked.
static const char *const s_headers [] = { "Accept: application/vnd.amazon.eventstream", NULL };
//  The beta features Claude on Bedrock takes (in the body's
//  "anthropic_beta": fold): those AWS's Claude parameters page names, and
//  claude-code-20250219, which it takes of Claude Code. It refuses a
//  request with any other name ("invalid beta flag"), and Claude Code sends
//  Anthropic-only ones (thinking-token-count-2026-05-13,
//  prompt-caching-scope-2026-01-05, ...): those are left out. Tool search
//  is tool-search-tool-2025-10-19 on the clouds, advanced-tool-use-2025-11-20
//  at Anthropic (the same tools with defer_loading, which the clouds refuse
//  without their name).
static const char *const s_claude_betas [] = {
    "claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
    "context-1m-2025-08-07", "effort-2025-11-24", "tool-search-tool-2025-10-19", "tool-examples-2025-10-29",
    "token-efficient-tools-2025-02-19", "output-128k-2025-02-19", "computer-use-2025-01-24",
    "computer-use-2025-11-24", "structured-outputs-2025-12-15", NULL
};
static const char *const s_claude_beta_renames [][2] = {
    { "advanced-tool-use-2025-11-20", "tool-search-tool-2025-10-19" }, { NULL, NULL }
};

const sl_dialect_t sl_bedrock_dialect = {
    .id = SL_DIALECT_BEDROCK,
    .name = "bedrock",
    .upstream_only = true,
    .render = sl_bedrock_render_request,
    .url = s_converse_url,
    .provider_fields = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_TOKEN_ENV
                     | SL_PROVIDER_FIELD_AWS_KEY_ENV | SL_PROVIDER_FIELD_AWS_SECRET_ENV
                     | SL_PROVIDER_FIELD_AWS_SESSION_ENV,
    .provider_needs = SL_PROVIDER_FIELD_REGION,
    .credential = "Authorization",
    .scheme = "Bearer ",
    .auth = SL_AUTH_AWS,
    .headers = s_headers,
    .decoder = &sl_bedrock_decoder,
    .framing = SL_FRAMING_EVSTREAM,
    .finishes = s_converse_finishes,
    .vendor = "aws",
    .genai_provider = "aws.bedrock",
};

const sl_dialect_t sl_bedrock_anthropic_dialect = {
    .id = SL_DIALECT_BEDROCK_ANTHROPIC,
    .name = "bedrock-anthropic",
    .upstream_only = true,
    .format = SL_DIALECT_ANTHROPIC,
    .forward = sl_bedrock_anthropic_forward,
    .render = sl_bedrock_anthropic_render_request,
    .url = s_invoke_url,
    .provider_fields = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_TOKEN_ENV
                     | SL_PROVIDER_FIELD_AWS_KEY_ENV | SL_PROVIDER_FIELD_AWS_SECRET_ENV
                     | SL_PROVIDER_FIELD_AWS_SESSION_ENV,
    .provider_needs = SL_PROVIDER_FIELD_REGION,
    .credential = "Authorization",
    .scheme = "Bearer ",
    .auth = SL_AUTH_AWS,
    .headers = s_headers,
    .passthrough = NULL,                //  anthropic-beta goes in the body (fold), never as a header
    .fold = sl_bedrock_anthropic_fold,
    .betas = s_claude_betas,
    .beta_renames = s_claude_beta_renames,
    .decoder = &sl_bedrock_anthropic_decoder,
    .framing = SL_FRAMING_EVSTREAM,
    .finishes = s_claude_finishes,
    .vendor = "aws",
    .genai_provider = "aws.bedrock",
};
