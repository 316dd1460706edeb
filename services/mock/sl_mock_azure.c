/*  sl_mock_azure.c - the mock as Azure OpenAI (see sl_mock_provider.h).

    Chat Completions at Azure's paths: POST /openai/deployments/{d}/
    chat/completions?api-version=... and /openai/v1/chat/completions. The
    requests are OpenAI's (what the API refuses is OpenAI's); the stream
    is OpenAI's with Azure's content filter around it, as Azure sends it:
    a first chunk with empty choices, an empty id and
    prompt_filter_results; content_filter_results on every choice; and,
    for the model mock-filtered, an answer the filter stops: a chunk whose
    results say filtered and finish_reason content_filter.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c and the
    conformance suite, tests/unit/common/dialects/test_dialects.c.
*/
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

#define S_SAFE "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"self_harm\":{\"filtered\":false," \
               "\"severity\":\"safe\"},\"sexual\":{\"filtered\":false,\"severity\":\"safe\"}," \
               "\"violence\":{\"filtered\":false,\"severity\":\"safe\"}}"
#define S_FILTERED "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"self_harm\":{\"filtered\":false," \
                   "\"severity\":\"safe\"},\"sexual\":{\"filtered\":false,\"severity\":\"safe\"}," \
                   "\"violence\":{\"filtered\":true,\"severity\":\"high\"}}"
#define S_CHOICE "\"choices\":[{\"index\":0,"

//  The choices of the events OpenAI's renderer appended from first on
//  carry Azure's content_filter_results.
static void
s_annotate (sl_mock_out_t *o, size_t first)
{
    for (size_t i = first; i < *o->count; i++) {
        sl_buf_t *e = &(*o->events) [i];
        const char *at = e->data ? strstr (sl_buf_cstr (e), S_CHOICE) : NULL;
        if (!at)
            continue;
        size_t offset = (size_t) (at - e->data) + strlen (S_CHOICE);
        sl_buf_t copy = { 0 };
        sl_buf_append (&copy, e->data, offset);
        sl_buf_puts (&copy, "\"content_filter_results\":" S_SAFE ",");
        sl_buf_append (&copy, e->data + offset, e->len - offset);
        sl_buf_reset (e);
        sl_buf_append (e, copy.data, copy.len);
        sl_buf_free (&copy);
    }
}

static void
s_begin (sl_mock_out_t *o)
{
    sl_buf_puts (sl_mock_event (o), "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\","
                                    "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":"
                                    S_SAFE "}]}\n\n");
    size_t first = *o->count;
    sl_mock_openai_render.begin (o);
    s_annotate (o, first);
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    size_t first = *o->count;
    sl_mock_openai_render.text (o, text);
    s_annotate (o, first);
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    size_t first = *o->count;
    sl_mock_openai_render.tool_start (o, index, id, name);
    s_annotate (o, first);
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    size_t first = *o->count;
    sl_mock_openai_render.tool_args (o, index, fragment);
    s_annotate (o, first);
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    if (!sl_str_eq (o->model, "mock-filtered")) {
        size_t first = *o->count;
        sl_mock_openai_render.finish (o, reason, input, output);
        s_annotate (o, first);
        return;
    }
    //  The filter stops the answer: its verdict and the finish, the
    //  usage, the end.
    sl_buf_t *e = sl_mock_event (o);
    sl_buf_printf (e, "data: {\"id\":\"chatcmpl-mock%016llx\",\"object\":\"chat.completion.chunk\","
                      "\"created\":%d,\"model\":", (unsigned long long) o->hash, SL_MOCK_CREATED);
    sl_mock_put_model (o, e);
    sl_buf_puts (e, "," S_CHOICE "\"content_filter_results\":" S_FILTERED ",\"delta\":{},"
                    "\"finish_reason\":\"content_filter\"}]}\n\n");
    e = sl_mock_event (o);
    sl_buf_printf (e, "data: {\"id\":\"chatcmpl-mock%016llx\",\"object\":\"chat.completion.chunk\","
                      "\"created\":%d,\"model\":", (unsigned long long) o->hash, SL_MOCK_CREATED);
    sl_mock_put_model (o, e);
    sl_buf_printf (e, ",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,"
                      "\"total_tokens\":%d}}\n\n", input, output, input + output);
    sl_buf_puts (sl_mock_event (o), "data: [DONE]\n\n");
}

static void
s_fail (sl_mock_out_t *o)
{
    sl_mock_openai_render.fail (o);
}

static const sl_mock_render_t s_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .finish = s_finish,
    .fail = s_fail,
    .error_body = sl_mock_openai_error_body,
    .rate_limited = "429",
    .unavailable = "server_error",
    .failed = "server_error",
    .not_found = "DeploymentNotFound",
    .bad_request = "invalid_request_error",
};

//  OpenAI's checks, result and shape: the same API.
static int
s_check (json_t *root, sl_mock_why_t *why)
{
    return sl_mock_openai_check (root, why);
}

static bool
s_result (json_t *root, sl_mock_result_t *out)
{
    return sl_mock_openai_result (root, out);
}

static bool
s_carries_result (json_t *message)
{
    return sl_mock_openai_carries_result (message);
}

static const char *const s_max_tokens [] = { "max_tokens", "max_completion_tokens", NULL };

const sl_mock_provider_t sl_mock_azure = {
    .dialect = SL_DIALECT_AZURE,
    .path = "/chat/completions",
    .marker = "/openai/",
    .max_tokens = s_max_tokens,
    .check = s_check,
    .result = s_result,
    .shape = { .holder = "function", .schema = "parameters", .turns = "messages", .carries_result = s_carries_result },
    .render = &s_render,
};
