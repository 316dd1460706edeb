/*  sl_vertex.c - the Vertex AI Gemini dialect: its table, and the URL
    both Vertex AI doors share (see sl_vertex.h).

    Upstream only; its bodies and streams are Gemini's (format gemini: a
    Gemini client's body goes as it came), at
    {base}/v1/projects/{project}/locations/{region}/publishers/google/
    models/{model}:streamGenerateContent?alt=sse. gen_ai.provider.name
    is gcp.vertex_ai.

    Tests: tests/unit/common/dialects/vertex/test_sl_vertex.c, and the
    conformance suite (tests/unit/common/dialects/test_dialects.c).
*/
#include "common/dialects/vertex/sl_vertex.h"

#include <string.h>

#include "common/dialects/gemini/sl_gemini.h"
#include "common/http/sl_auth.h"

#define S_MODEL_MAX 256                 //  longest model name put in an upstream URL
//  Characters a model's name keeps in the path: Vertex AI names Claude
//  versions with '@' ("claude-sonnet-4-5@20250929"), as its SDKs send them.
#define S_KEEP "@"

int
sl_vertex_url (const sl_provider_t *p, const char *publisher, sl_str_t model, const char *method, sl_buf_t *out,
               sl_buf_t *why)
{
    if (sl_str_starts (model, "models/"))
        model = sl_str_n (model.ptr + 7, model.len - 7);
    if (!model.ptr || !model.len || model.len > S_MODEL_MAX) {
        sl_buf_puts (why, "the request names no model a URL can hold");
        return -1;
    }
    if (!p->project || !*p->project || !p->region || !*p->region) {
        sl_buf_printf (why, "provider '%s' needs project and region", p->name);
        return -1;
    }
    if (p->base_url && *p->base_url)
        sl_buf_puts (out, p->base_url);
    else
    if (strcmp (p->region, SL_VERTEX_GLOBAL) == 0)
        sl_buf_puts (out, "https://aiplatform.googleapis.com");
    else
        sl_buf_printf (out, "https://%s-aiplatform.googleapis.com", p->region);
    sl_buf_puts (out, "/v1/projects/");
    sl_dialect_put_segment (sl_str (p->project), NULL, out);
    sl_buf_puts (out, "/locations/");
    sl_dialect_put_segment (sl_str (p->region), NULL, out);
    sl_buf_printf (out, "/publishers/%s/models/", publisher);
    sl_dialect_put_segment (model, S_KEEP, out);
    sl_buf_printf (out, ":%s", method);
    return 0;
}

static int
s_url (const sl_provider_t *p, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    return sl_vertex_url (p, "google", model, "streamGenerateContent?alt=sse", out, why);
}

static const sl_finish_name_t s_finishes [] = {
    { "STOP", SL_FIN_STOP }, { "MAX_TOKENS", SL_FIN_LENGTH }, { "SAFETY", SL_FIN_CONTENT_FILTER },
    { "RECITATION", SL_FIN_CONTENT_FILTER }, { "BLOCKLIST", SL_FIN_CONTENT_FILTER },
    { "PROHIBITED_CONTENT", SL_FIN_CONTENT_FILTER }, { "SPII", SL_FIN_CONTENT_FILTER },
    { "IMAGE_SAFETY", SL_FIN_CONTENT_FILTER }, { "MALFORMED_FUNCTION_CALL", SL_FIN_ERROR },
    { "UNEXPECTED_TOOL_CALL", SL_FIN_ERROR }, { NULL, 0 }
};

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_vertex_dialect = {
    .id = SL_DIALECT_VERTEX,
    .name = "vertex",
    .upstream_only = true,
    .format = SL_DIALECT_GEMINI,
    .forward = sl_gemini_forward,
    .render = sl_gemini_render_request,
    .decoder = &sl_gemini_decoder,
    .url = s_url,
    .provider_fields = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_PROJECT
                     | SL_PROVIDER_FIELD_CREDENTIALS_FILE,
    .provider_needs = SL_PROVIDER_FIELD_REGION | SL_PROVIDER_FIELD_PROJECT,
    .credential = "Authorization",
    .scheme = "Bearer ",
    .auth = SL_AUTH_GOOGLE,
    .headers = s_headers,
    .finishes = s_finishes,
    .genai_provider = "gcp.vertex_ai",
};
