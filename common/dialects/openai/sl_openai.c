/*  sl_openai.c - the OpenAI Chat Completions dialect: its table.

    Client endpoint POST /v1/chat/completions (also /chat/completions);
    upstream POST {base}/chat/completions with Authorization: Bearer (also
    DeepSeek, Groq, OpenRouter, Ollama, vLLM, LiteLLM); the model list at
    GET /v1/models; a question is a non-streaming chat completion.
    Requests: sl_openai_request.c; stream decoder: sl_openai_decode.c;
    renderer: sl_openai_render.c; validator: sl_openai_validate.c.

    Tests: tests/unit/common/dialects/test_dialects.c, the conformance
    suite, runs over this table (endpoint, URL, credential, finish values,
    defaults, model lists, the question), and test_sl_models.c.
*/
#include "common/dialects/openai/sl_openai.h"

#include <string.h>

#include "common/base/sl_json.h"

//  POST /v1/chat/completions, or without the version.
static const char *const s_paths [] = { "/v1/chat/completions", "/chat/completions", NULL };

//  Finish reasons of Chat Completions (function_call: the deprecated
//  single call).
static const sl_finish_name_t s_finishes [] = {
    { "stop", SL_FIN_STOP }, { "length", SL_FIN_LENGTH }, { "tool_calls", SL_FIN_TOOL_CALLS },
    { "function_call", SL_FIN_TOOL_CALLS }, { "content_filter", SL_FIN_CONTENT_FILTER },
    { "error", SL_FIN_ERROR }, { NULL, 0 }
};

//  Models carry no creation time we know; the list needs one.
#define S_CREATED 0

void
sl_openai_model (const sl_model_entry_t *model, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"id\":");
    sl_json_put_str (out, model->id, strlen (model->id));
    sl_buf_printf (out, ",\"object\":\"model\",\"created\":%d,\"owned_by\":", S_CREATED);
    sl_json_put_str (out, model->owner, strlen (model->owner));
    sl_buf_putc (out, '}');
}

void
sl_openai_model_list (const sl_model_entry_t *models, size_t count, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"object\":\"list\",\"data\":[");
    sl_dialect_put_models (models, count, sl_openai_model, out);
    sl_buf_puts (out, "]}");
}

//  {"model", "max_tokens", "temperature", "stream": false, "messages":
//  [system, user]}: max_tokens, not max_completion_tokens, which
//  OpenAI-compatible servers do not all read.
static void
s_question (const sl_question_t *q, sl_buf_t *out)
{
    sl_question_begin (q, out);
    sl_buf_puts (out, ",\"stream\":false,\"messages\":[{\"role\":\"system\",\"content\":");
    sl_json_put_sl (out, q->system);
    sl_buf_puts (out, "},{\"role\":\"user\",\"content\":");
    sl_json_put_sl (out, q->prompt);
    sl_buf_puts (out, "}]}");
}

//  choices[0].message.content
static const char *
s_answer (json_t *root)
{
    json_t *choice = json_array_get (json_object_get (root, "choices"), 0);
    json_t *content = json_object_get (json_object_get (choice, "message"), "content");
    return json_is_string (content) ? json_string_value (content) : NULL;
}

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_openai_dialect = {
    .id = SL_DIALECT_OPENAI,
    .name = "openai",
    SL_DIALECT_PARTS (openai),
    .paths = s_paths,
    .url_path = "/chat/completions",
    .credential = "Authorization",
    .scheme = "Bearer ",
    .headers = s_headers,
    .finishes = s_finishes,
    .base_url = SL_OPENAI_BASE_URL,
    .question = s_question,
    .answer = s_answer,
    //  GET /v1/models and /v1/models/{id}: the list every OpenAI client reads.
    .models_path = "/v1/models",
    .model_list = sl_openai_model_list,
    .model = sl_openai_model,
    .corpus = "openai-chat",
};
