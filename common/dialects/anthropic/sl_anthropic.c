/*  sl_anthropic.c - the Anthropic Messages dialect: its table.

    Client endpoint POST /v1/messages (also /messages); upstream POST
    {base}/v1/messages with x-api-key and anthropic-version; the model
    list at GET /v1/models when the request carries anthropic-version
    (the Anthropic SDK always sends it); a question is a non-streaming
    message. Requests: sl_anthropic_request.c; stream decoder:
    sl_anthropic_decode.c; renderer: sl_anthropic_render.c; validator:
    sl_anthropic_validate.c.

    Tests: tests/unit/common/dialects/test_dialects.c, the conformance
    suite, runs over this table (endpoint, URL, credential, finish values,
    defaults, model lists, the question), and test_sl_models.c.
*/
#include "common/dialects/anthropic/sl_anthropic.h"

#include <string.h>

#include "common/base/sl_json.h"

#define S_VERSION_HEADER "anthropic-version"
#define S_VERSION "2023-06-01"

static const char *const s_paths [] = { "/v1/messages", "/messages", NULL };

static const sl_finish_name_t s_finishes [] = {
    { "end_turn", SL_FIN_STOP }, { "stop_sequence", SL_FIN_STOP }, { "max_tokens", SL_FIN_LENGTH },
    { "model_context_window_exceeded", SL_FIN_LENGTH }, { "tool_use", SL_FIN_TOOL_CALLS },
    { "refusal", SL_FIN_REFUSAL }, { "pause_turn", SL_FIN_PAUSE }, { "error", SL_FIN_ERROR },
    { NULL, 0 }
};

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
    sl_dialect_put_models (models, count, s_model, out);
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
    SL_DIALECT_PARTS (anthropic),
    .paths = s_paths,
    .family = "/v1/messages",
    .url_path = "/v1/messages",
    .credential = "x-api-key",
    .scheme = "",
    .headers = s_headers,
    .passthrough = s_passthrough,
    .finishes = s_finishes,
    .base_url = "https://api.anthropic.com",
    .question = s_question,
    .answer = s_answer,
    //  The Anthropic SDK always sends anthropic-version.
    .models_path = "/v1/models",
    .models_header = S_VERSION_HEADER,
    .model_list = s_model_list,
    .model = s_model,
    .corpus = "anthropic",
};
