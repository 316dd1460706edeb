/*  sl_mock_openai.c - the mock as an OpenAI Chat Completions provider
    (see sl_mock_provider.h).

    POST .../chat/completions; max tokens in max_tokens or
    max_completion_tokens. The API refuses a conversation whose roles are
    not system, developer, user, assistant, tool; whose tool call lacks an
    id, type function, a name or string arguments; or whose tool messages
    do not answer the calls of the assistant message before their run, all
    of them before any other message. Streams are chat.completion.chunk
    events, the usage in a last chunk, then [DONE]; a whole answer is one
    chat.completion.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c (what it
    refuses, the result it reads, its table) and the conformance suite,
    tests/unit/common/dialects/test_dialects.c (its streams decode, the
    conversation each dialect renders passes its checks).
*/
#include <string.h>

#include "common/base/sl_json.h"
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

//  --------------------------------------------------------------------------
//  Requests

//  What the API refuses of a conversation (see above).
int
sl_mock_openai_check (json_t *root, sl_mock_why_t *why)
{
    json_t *messages = json_object_get (root, "messages");
    if (!json_is_array (messages))
        return sl_mock_refuse (why, "messages: an array is required");
    json_t *open = NULL;                //  ids of the calls waiting for tool messages
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        json_t *role = json_object_get (m, "role");
        if (sl_mock_is (role, "tool")) {
            const char *id = sl_mock_text (json_object_get (m, "tool_call_id"));
            if (!open || !sl_mock_listed (open, id)) {
                json_decref (open);
                return sl_mock_refuse (why, "messages[%zu]: a tool message answers '%s', which no preceding "
                                            "assistant message called", i, id);
            }
            sl_mock_unlist (open, id);
            continue;
        }
        if (open && json_array_size (open)) {
            int rc = sl_mock_refuse (why, "messages[%zu]: an assistant message with tool_calls must be followed by "
                                          "tool messages answering each tool_call_id ('%s' is not answered)", i,
                                     sl_mock_text (json_array_get (open, 0)));
            json_decref (open);
            return rc;
        }
        json_decref (open);
        open = NULL;
        if (!(sl_mock_is (role, "system") || sl_mock_is (role, "developer") || sl_mock_is (role, "user")
        ||    sl_mock_is (role, "assistant")))
            return sl_mock_refuse (why, "messages[%zu]: unknown role '%s'", i, sl_mock_text (role));
        json_t *calls = json_object_get (m, "tool_calls");
        if (!calls || !sl_mock_is (role, "assistant"))
            continue;
        open = json_array ();
        size_t k;
        json_t *call;
        json_array_foreach (calls, k, call) {
            json_t *fn = json_object_get (call, "function");
            if (!json_is_string (json_object_get (call, "id"))
            ||  !sl_mock_is (json_object_get (call, "type"), "function")
            ||  !json_is_string (json_object_get (fn, "name")) || !json_is_string (json_object_get (fn, "arguments"))) {
                json_decref (open);
                return sl_mock_refuse (why, "messages[%zu].tool_calls[%zu]: id, type function, function.name and "
                                            "string function.arguments are required", i, k);
            }
            json_array_append (open, json_object_get (call, "id"));
        }
    }
    json_decref (open);
    return 0;
}

//  The name of the call with this id in the messages.
static const char *
s_call_name (json_t *messages, const char *id)
{
    size_t i, k;
    json_t *m, *call;
    json_array_foreach (messages, i, m)
        json_array_foreach (json_object_get (m, "tool_calls"), k, call)
            if (sl_mock_is (json_object_get (call, "id"), id))
                return sl_mock_text (json_object_get (json_object_get (call, "function"), "name"));
    return "";
}

//  The last turn's tool result, and the tool that gave it.
bool
sl_mock_openai_result (json_t *root, sl_mock_result_t *out)
{
    json_t *messages = json_object_get (root, "messages");
    json_t *last = json_array_get (messages, json_array_size (messages) - 1);
    if (!sl_mock_is (json_object_get (last, "role"), "tool"))
        return false;
    const char *id = sl_mock_text (json_object_get (last, "tool_call_id"));
    sl_mock_copy (out->name, sizeof out->name, s_call_name (messages, id));
    json_t *content = json_object_get (last, "content");
    sl_mock_copy (out->text, sizeof out->text, json_is_string (content) ? json_string_value (content)
                                             : sl_mock_text (json_object_get (json_array_get (content, 0), "text")));
    return true;
}

//  A tool message.
bool
sl_mock_openai_carries_result (json_t *message)
{
    return sl_mock_is (json_object_get (message, "role"), "tool");
}

//  --------------------------------------------------------------------------
//  Answers

//  A chunk with one choice: delta JSON (without braces) and finish reason.
static void
s_chunk (sl_mock_out_t *o, const char *delta, const char *finish)
{
    sl_buf_t *e = sl_mock_event (o);
    sl_buf_printf (e, "data: {\"id\":\"chatcmpl-mock%016llx\",\"object\":\"chat.completion.chunk\","
                      "\"created\":%d,\"model\":", (unsigned long long) o->hash, SL_MOCK_CREATED);
    sl_mock_put_model (o, e);
    sl_buf_printf (e, ",\"choices\":[{\"index\":0,\"delta\":{%s},\"finish_reason\":", delta);
    if (finish)
        sl_buf_printf (e, "\"%s\"", finish);
    else
        sl_buf_puts (e, "null");
    sl_buf_puts (e, "}]}\n\n");
}

static void
s_begin (sl_mock_out_t *o)
{
    s_chunk (o, "\"role\":\"assistant\",\"content\":\"\"", NULL);
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    sl_buf_t delta = { 0 };
    sl_buf_puts (&delta, "\"content\":");
    sl_mock_put_text (o, &delta, sl_str (text));
    s_chunk (o, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"id\":\"call_%s\",\"type\":\"function\","
                           "\"function\":{\"name\":\"%s\",\"arguments\":\"\"}}]", index, id, name);
    s_chunk (o, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":", index);
    sl_mock_put_text (o, &delta, sl_str (fragment));
    sl_buf_puts (&delta, "}}]");
    s_chunk (o, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    s_chunk (o, "", reason);
    sl_buf_t *e = sl_mock_event (o);
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
    sl_buf_puts (sl_mock_event (o),
                 "data: {\"error\":{\"message\":\"The mock upstream failed mid-stream.\","
                 "\"type\":\"server_error\",\"param\":null,\"code\":\"mock_failure\"}}\n\n");
}

void
sl_mock_openai_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) status;
    sl_buf_puts (out, "{\"error\":{\"message\":");
    sl_json_put_str (out, message, strlen (message));
    sl_buf_printf (out, ",\"type\":\"%s\",\"param\":null,\"code\":null}}", type);
}

void
sl_mock_openai_whole (const char *model, const char *text, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"id\":\"chatcmpl-mockjudge\",\"object\":\"chat.completion\",\"created\":%d,"
                        "\"model\":", SL_MOCK_CREATED);
    sl_json_put_str (out, model, strlen (model));
    sl_buf_puts (out, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
    sl_json_put_str (out, text, strlen (text));
    sl_buf_puts (out, "},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":20,"
                      "\"total_tokens\":70}}");
}

const sl_mock_render_t sl_mock_openai_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .finish = s_finish,
    .fail = s_fail,
    .error_body = sl_mock_openai_error_body,
    .rate_limited = "rate_limit_exceeded",
    .unavailable = "server_error",
    .failed = "server_error",
    .not_found = "invalid_request_error",
    .bad_request = "invalid_request_error",
};

const char *const sl_mock_openai_max_tokens [] = { "max_tokens", "max_completion_tokens", NULL };

const sl_mock_provider_t sl_mock_openai = {
    .dialect = SL_DIALECT_OPENAI,
    .path = "/chat/completions",
    .max_tokens = sl_mock_openai_max_tokens,
    .check = sl_mock_openai_check,
    .result = sl_mock_openai_result,
    .shape = { .holder = "function", .schema = "parameters", .turns = "messages", .carries_result = sl_mock_openai_carries_result },
    .render = &sl_mock_openai_render,
    .whole = sl_mock_openai_whole,
};
