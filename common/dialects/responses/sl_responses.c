/*  sl_responses.c - the OpenAI Responses dialect: its table.

    Client endpoint POST /v1/responses (also /responses); upstream POST
    {base}/responses with Authorization: Bearer. Its clients (the openai
    SDK, Codex CLI) list models with the OpenAI module's GET /v1/models,
    in the same shape. OpenAI's: the built-in provider shares the base URL
    option and the key of the OpenAI module's. Requests: sl_responses_request.c; stream decoder:
    sl_responses_decode.c; renderer: sl_responses_render.c; validator:
    sl_responses_validate.c.
*/
#include "common/dialects/responses/sl_responses.h"

#include <string.h>

#include "common/dialects/openai/sl_openai.h"

static int
s_endpoint (const char *path, sl_endpoint_t *out)
{
    (void) out;
    if (strcmp (path, "/v1/responses") == 0 || strcmp (path, "/responses") == 0)
        return 1;
    return -1;
}

static int
s_url (const char *base_url, sl_str_t model, sl_buf_t *out)
{
    (void) model;
    sl_buf_printf (out, "%s/responses", base_url);
    return 0;
}

//  The final status (completed, failed) and incomplete_details.reason.
static int
s_finish (sl_str_t raw)
{
    static const struct { const char *raw; int finish; } table [] = {
        { "completed", SL_FIN_STOP }, { "max_output_tokens", SL_FIN_LENGTH },
        { "content_filter", SL_FIN_CONTENT_FILTER }, { "failed", SL_FIN_ERROR }, { "error", SL_FIN_ERROR },
    };
    for (size_t i = 0; i < sizeof table / sizeof table [0]; i++)
        if (sl_str_eq (raw, table [i].raw))
            return table [i].finish;
    return SL_FIN_NONE;
}

//  The OpenAI module answers GET /v1/models for this dialect's clients.
static int
s_models (const char *path, sl_header_fn *header, void *arg, const char **rest)
{
    (void) path;
    (void) header;
    (void) arg;
    (void) rest;
    return 0;
}

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_responses_dialect = {
    .id = SL_DIALECT_RESPONSES,
    .name = "responses",
    .endpoint = s_endpoint,
    .parse = sl_responses_parse,
    .forward = sl_responses_forward,
    .render = sl_responses_render_request,
    .url = s_url,
    .credential = "Authorization",
    .scheme = "Bearer ",
    .headers = s_headers,
    .decoder = &sl_responses_decoder,
    .finish = s_finish,
    .vendor = "openai",
    .base_url = SL_OPENAI_BASE_URL,
    .renderer = &sl_responses_renderer,
    .validator = &sl_responses_validator,
    .models = s_models,
    .model_list = sl_openai_model_list,
    .model = sl_openai_model,
    .corpus = "openai-responses",
};
