/*  sl_anthropic.c - the Anthropic Messages dialect: its table.

    Client endpoint POST /v1/messages (also /messages); upstream POST
    {base}/v1/messages with x-api-key and anthropic-version; the model
    list at GET /v1/models when the request carries anthropic-version
    (the Anthropic SDK always sends it); a question is a non-streaming
    message. Requests: sl_anthropic_request.c; stream decoder:
    sl_anthropic_decode.c; renderer: sl_anthropic_render.c; validator:
    sl_anthropic_validate.c.
*/
#include "common/dialects/anthropic/sl_anthropic.h"

#include <string.h>

#include "common/base/sl_json.h"

#define S_VERSION_HEADER "anthropic-version"
#define S_VERSION "2023-06-01"

static int
s_endpoint (const char *path, sl_endpoint_t *out)
{
    (void) out;
    if (strcmp (path, "/v1/messages") == 0 || strcmp (path, "/messages") == 0)
        return 1;
    return strncmp (path, "/v1/messages", 12) == 0 ? 0 : -1;
}

static int
s_url (const char *base_url, sl_str_t model, sl_buf_t *out)
{
    (void) model;
    sl_buf_printf (out, "%s/v1/messages", base_url);
    return 0;
}

static int
s_finish (sl_str_t raw)
{
    static const struct { const char *raw; int finish; } table [] = {
        { "end_turn", SL_FIN_STOP }, { "stop_sequence", SL_FIN_STOP }, { "max_tokens", SL_FIN_LENGTH },
        { "model_context_window_exceeded", SL_FIN_LENGTH }, { "tool_use", SL_FIN_TOOL_CALLS },
        { "refusal", SL_FIN_REFUSAL }, { "pause_turn", SL_FIN_PAUSE }, { "error", SL_FIN_ERROR },
    };
    for (size_t i = 0; i < sizeof table / sizeof table [0]; i++)
        if (sl_str_eq (raw, table [i].raw))
            return table [i].finish;
    return SL_FIN_NONE;
}

//  GET /v1/models with anthropic-version: the Anthropic SDK's list.
static int
s_models (const char *path, sl_header_fn *header, void *arg, const char **rest)
{
    if (strncmp (path, "/v1/models", 10) != 0 || (path [10] && path [10] != '/') || strchr (path, ':')
    ||  !header || !header (arg, S_VERSION_HEADER))
        return 0;
    *rest = path [10] ? path + 11 : "";
    return 2;
}

//  Models carry no creation time we know; the list needs one.
#define S_CREATED_AT "1970-01-01T00:00:00Z"

static void
s_model (const sl_model_entry_t *model, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"type\":\"model\",\"id\":");
    sl_json_put_str (out, model->id, strlen (model->id));
    sl_buf_puts (out, ",\"display_name\":");
    sl_json_put_str (out, model->id, strlen (model->id));
    sl_buf_puts (out, ",\"created_at\":\"" S_CREATED_AT "\"}");
}

static void
s_model_list (const sl_model_entry_t *models, size_t count, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"data\":[");
    for (size_t i = 0; i < count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        s_model (&models [i], out);
    }
    sl_buf_puts (out, "],\"has_more\":false,\"first_id\":");
    if (count)
        sl_json_put_str (out, models [0].id, strlen (models [0].id));
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"last_id\":");
    if (count)
        sl_json_put_str (out, models [count - 1].id, strlen (models [count - 1].id));
    else
        sl_buf_puts (out, "null");
    sl_buf_putc (out, '}');
}

//  {"model", "max_tokens", "temperature", "system", "messages": [user]}
static void
s_question (const sl_question_t *q, sl_buf_t *out)
{
    sl_question_begin (q, out);
    sl_buf_puts (out, ",\"system\":");
    sl_json_put_sl (out, q->system);
    sl_buf_puts (out, ",\"messages\":[{\"role\":\"user\",\"content\":");
    sl_json_put_sl (out, q->prompt);
    sl_buf_puts (out, "}]}");
}

//  The first block of content with a text (a thinking block may come
//  before it).
static const char *
s_answer (json_t *root)
{
    size_t i;
    json_t *block;
    json_array_foreach (json_object_get (root, "content"), i, block)
        if (json_is_string (json_object_get (block, "text")))
            return json_string_value (json_object_get (block, "text"));
    return NULL;
}

static const char *const s_headers [] = { S_VERSION_HEADER ": " S_VERSION, NULL };
static const char *const s_passthrough [] = { "anthropic-beta", NULL };

const sl_dialect_t sl_anthropic_dialect = {
    .id = SL_DIALECT_ANTHROPIC,
    .name = "anthropic",
    .endpoint = s_endpoint,
    .parse = sl_anthropic_parse,
    .forward = sl_anthropic_forward,
    .render = sl_anthropic_render_request,
    .url = s_url,
    .credential = "x-api-key",
    .scheme = "",
    .headers = s_headers,
    .passthrough = s_passthrough,
    .decoder = &sl_anthropic_decoder,
    .finish = s_finish,
    .base_url = "https://api.anthropic.com",
    .question = s_question,
    .answer = s_answer,
    .renderer = &sl_anthropic_renderer,
    .validator = &sl_anthropic_validator,
    .models = s_models,
    .model_list = s_model_list,
    .model = s_model,
    .corpus = "anthropic",
};
