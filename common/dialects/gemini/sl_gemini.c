/*  sl_gemini.c - the Gemini dialect: its table.

    Client endpoints POST /v1beta/models/{model}:streamGenerateContent
    (?alt=sse) and :generateContent (also under /v1/ and without the
    version): the model is in the path. Upstream POST
    {base}/models/{model}:streamGenerateContent?alt=sse with
    x-goog-api-key (clients may send their key as ?key=). The model list
    at GET /v1beta/models. Requests: sl_gemini_request.c; stream decoder:
    sl_gemini_decode.c; renderer: sl_gemini_render.c; validator:
    sl_gemini_validate.c.

    Tests: tests/unit/common/dialects/test_dialects.c, the conformance
    suite, runs over this table (endpoint, URL, credential, finish values,
    defaults, model lists), and test_sl_models.c.
*/
#include "common/dialects/gemini/sl_gemini.h"

#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"

#define S_MODEL_MAX 256                 //  longest model name put in an upstream URL
#define S_BASE_URL "https://generativelanguage.googleapis.com/v1beta"

static bool
s_prefix (const char **path, const char *prefix)
{
    size_t n = strlen (prefix);
    if (strncmp (*path, prefix, n) != 0)
        return false;
    *path += n;
    return true;
}

static int
s_endpoint (const char *path, sl_endpoint_t *out)
{
    const char *p = path;
    if (!(s_prefix (&p, "/v1beta/models/") || s_prefix (&p, "/v1/models/") || s_prefix (&p, "/models/")))
        return strncmp (path, "/v1beta/", 8) == 0 ? 0 : -1;
    //  The model may hold slashes: routing decides what a name means (and
    //  the mock's recorded streams are named by path).
    const char *colon = strrchr (p, ':');
    if (!colon || colon == p || (size_t) (colon - p) >= sizeof out->model || memchr (p, ':', (size_t) (colon - p)))
        return 0;
    if (strcmp (colon + 1, "streamGenerateContent") == 0)
        out->stream = true;
    else
    if (strcmp (colon + 1, "generateContent") != 0)
        return 0;
    memcpy (out->model, p, (size_t) (colon - p));
    out->model [colon - p] = 0;
    return 1;
}

static int
s_url (const sl_provider_t *provider, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    if (sl_str_starts (model, "models/"))
        model = sl_str_n (model.ptr + 7, model.len - 7);
    if (!model.ptr || !model.len || model.len > S_MODEL_MAX) {
        sl_buf_puts (why, "the request names no model a URL can hold");
        return -1;
    }
    sl_buf_printf (out, "%s/models/", provider->base_url && *provider->base_url ? provider->base_url : S_BASE_URL);
    sl_dialect_put_segment (model, NULL, out);
    sl_buf_puts (out, ":streamGenerateContent?alt=sse");
    return 0;
}

static const sl_finish_name_t s_finishes [] = {
    { "STOP", SL_FIN_STOP }, { "MAX_TOKENS", SL_FIN_LENGTH }, { "SAFETY", SL_FIN_CONTENT_FILTER },
    { "RECITATION", SL_FIN_CONTENT_FILTER }, { "BLOCKLIST", SL_FIN_CONTENT_FILTER },
    { "PROHIBITED_CONTENT", SL_FIN_CONTENT_FILTER }, { "SPII", SL_FIN_CONTENT_FILTER },
    { "IMAGE_SAFETY", SL_FIN_CONTENT_FILTER }, { "MALFORMED_FUNCTION_CALL", SL_FIN_ERROR },
    { "UNEXPECTED_TOOL_CALL", SL_FIN_ERROR }, { "error", SL_FIN_ERROR }, { NULL, 0 }
};

static void
s_model (const sl_model_entry_t *model, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"name\":\"models/");
    sl_json_put_escaped (out, model->id, strlen (model->id));
    sl_buf_puts (out, "\",\"version\":\"\",\"displayName\":");
    sl_json_put_str (out, model->id, strlen (model->id));
    sl_buf_puts (out, ",\"description\":\"served by ");
    sl_json_put_escaped (out, model->owner, strlen (model->owner));
    sl_buf_puts (out, " through sluice\",\"supportedGenerationMethods\":"
                      "[\"generateContent\",\"streamGenerateContent\"]}");
}

static void
s_model_list (const sl_model_entry_t *models, size_t count, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"models\":[");
    sl_dialect_put_models (models, count, s_model, out);
    sl_buf_puts (out, "]}");
}

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_gemini_dialect = {
    .id = SL_DIALECT_GEMINI,
    .name = "gemini",
    .genai_provider = "gcp.gemini",     //  the GenAI conventions' name for the Gemini API
    SL_DIALECT_PARTS (gemini),
    .endpoint = s_endpoint,
    .url = s_url,
    .credential = "x-goog-api-key",
    .scheme = "",
    .query_key = "key",
    .headers = s_headers,
    .finishes = s_finishes,
    .base_url = S_BASE_URL,
    .models_path = "/v1beta/models",
    .models_path_also = "/v1/models",   //  @google/genai 3 reads v1
    .models_header_also = "x-goog-api-key",
    .model_list = s_model_list,
    .model = s_model,
    .corpus = "gemini",
};
