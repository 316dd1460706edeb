/*  sl_vertex_anthropic.c - the Claude on Vertex AI dialect
    (vertex-anthropic): its table and its bodies.

    Upstream only; its bodies and streams are Anthropic's Messages (format
    anthropic) with what Vertex AI changes: anthropic_version
    "vertex-2023-10-16" in the body instead of the header, and no model in
    the body (the URL names it):
    {base}/v1/projects/{project}/locations/{region}/publishers/anthropic/
    models/{model}:streamRawPredict. anthropic-beta goes as the client
    sent it but for the names Vertex AI does not take (betas: it refuses
    a request with one), tool search under its name there.
    gen_ai.provider.name is gcp.vertex_ai.

    Tests: tests/unit/common/dialects/vertex/test_sl_vertex.c, and the
    conformance suite (tests/unit/common/dialects/test_dialects.c).
*/
#include "common/dialects/vertex/sl_vertex.h"

#include <jansson.h>
#include <stdlib.h>

#include "common/dialects/anthropic/sl_anthropic.h"
#include "common/dialects/sl_job.h"
#include "common/http/sl_auth.h"

#define S_VERSION "\"vertex-2023-10-16\""

//  The Anthropic body with Vertex AI's version and without its model.
static int
s_vertex_body (sl_str_t anthropic, sl_buf_t *out)
{
    json_t *root = json_loadb (anthropic.ptr ? anthropic.ptr : "", anthropic.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return -1;
    }
    json_object_del (root, "model");
    char *text = json_dumps (root, SL_REQ_JSON_FLAGS);
    json_decref (root);
    if (!text)
        return -1;
    static const sl_patch_t version = { "anthropic_version", S_VERSION };
    int rc = sl_job_patch (sl_str (text), &version, 1, out);
    free (text);
    return rc;
}

int
sl_vertex_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    sl_buf_t anthropic = { 0 };
    int rc = sl_anthropic_forward (body, req, &anthropic);
    if (rc == 0)
        rc = s_vertex_body (sl_buf_str (&anthropic), out);
    sl_buf_free (&anthropic);
    return rc;
}

int
sl_vertex_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    sl_buf_t anthropic = { 0 };
    int rc = sl_anthropic_render_request (req, x, &anthropic);
    if (rc == 0 && s_vertex_body (sl_buf_str (&anthropic), out))
        rc = sl_xlate_refuse (x, "the request body", "it is not a JSON object");
    sl_buf_free (&anthropic);
    return rc;
}

static int
s_url (const sl_provider_t *p, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    return sl_vertex_url (p, "anthropic", model, "streamRawPredict", out, why);
}

static const sl_finish_name_t s_finishes [] = {
    { "end_turn", SL_FIN_STOP }, { "stop_sequence", SL_FIN_STOP }, { "max_tokens", SL_FIN_LENGTH },
    { "model_context_window_exceeded", SL_FIN_LENGTH }, { "tool_use", SL_FIN_TOOL_CALLS },
    { "refusal", SL_FIN_REFUSAL }, { "pause_turn", SL_FIN_PAUSE }, { NULL, 0 }
};

static const char *const s_headers [] = { NULL };
static const char *const s_passthrough [] = { "anthropic-beta", NULL };
//  The beta features Claude on Vertex AI takes: those its Claude pages
//  name, and claude-code-20250219, which it takes of Claude Code. It
//  refuses a request with any other ("Unexpected value(s) ... for the
//  anthropic-beta header"), and Claude Code sends Anthropic-only ones
//  (thinking-token-count-2026-05-13, prompt-caching-scope-2026-01-05,
//  ...): those are left out. Tool search is tool-search-tool-2025-10-19
//  on the clouds, advanced-tool-use-2025-11-20 at Anthropic.
static const char *const s_betas [] = {
    "claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
    "context-1m-2025-08-07", "effort-2025-11-24", "tool-search-tool-2025-10-19", "token-efficient-tools-2025-02-19",
    "output-128k-2025-02-19", "computer-use-2025-01-24", NULL
};
static const char *const s_beta_renames [][2] = {
    { "advanced-tool-use-2025-11-20", "tool-search-tool-2025-10-19" }, { NULL, NULL }
};

const sl_dialect_t sl_vertex_anthropic_dialect = {
    .id = SL_DIALECT_VERTEX_ANTHROPIC,
    .name = "vertex-anthropic",
    .upstream_only = true,
    .format = SL_DIALECT_ANTHROPIC,
    .forward = sl_vertex_anthropic_forward,
    .render = sl_vertex_anthropic_render_request,
    .decoder = &sl_anthropic_decoder,
    .url = s_url,
    .provider_fields = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_PROJECT
                     | SL_PROVIDER_FIELD_CREDENTIALS_FILE,
    .provider_needs = SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_PROJECT,
    .credential = "Authorization",
    .scheme = "Bearer ",
    .auth = SL_AUTH_GOOGLE,
    .headers = s_headers,
    .passthrough = s_passthrough,
    .betas = s_betas,
    .beta_renames = s_beta_renames,
    .finishes = s_finishes,
    .genai_provider = "gcp.vertex_ai",
};
