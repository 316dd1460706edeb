/*  sl_mock_responses.c - the mock as an OpenAI Responses provider (see
    sl_mock_provider.h).

    POST .../responses; max tokens in max_output_tokens. The API refuses
    input whose items are not messages (user, assistant, system,
    developer), function_call (call_id, name, string arguments),
    function_call_output answering an earlier function_call's call_id, or
    reasoning. Streams are response.* events with sequence numbers, each
    item's "done" events carrying its whole text; a failed stream ends
    with an error event, then response.failed. Errors are OpenAI's.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c (what it
    refuses, the result it reads, its table) and the conformance suite,
    tests/unit/common/dialects/test_dialects.c (its streams decode, the
    conversation each dialect renders passes its checks).
*/
#include <stdio.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

//  --------------------------------------------------------------------------
//  Requests

//  What the API refuses of a conversation (see above).
static int
s_check (json_t *root, sl_mock_why_t *why)
{
    json_t *input = json_object_get (root, "input");
    if (json_is_string (input))
        return 0;
    if (!json_is_array (input))
        return sl_mock_refuse (why, "input: a string or a list of items");
    json_t *calls = json_array ();
    size_t i;
    json_t *item;
    int rc = 0;
    json_array_foreach (input, i, item) {
        json_t *type = json_object_get (item, "type");
        json_t *role = json_object_get (item, "role");
        if (json_is_string (role) && (!type || sl_mock_is (type, "message"))) {
            if (!(sl_mock_is (role, "user") || sl_mock_is (role, "assistant") || sl_mock_is (role, "system")
            ||    sl_mock_is (role, "developer")))
                rc = sl_mock_refuse (why, "input[%zu].role: unknown role '%s'", i, sl_mock_text (role));
        }
        else
        if (sl_mock_is (type, "function_call")) {
            if (!json_is_string (json_object_get (item, "call_id")) || !json_is_string (json_object_get (item, "name"))
            ||  !json_is_string (json_object_get (item, "arguments")))
                rc = sl_mock_refuse (why, "input[%zu]: a function_call needs call_id, name and string arguments", i);
            json_array_append (calls, json_object_get (item, "call_id"));
        }
        else
        if (sl_mock_is (type, "function_call_output")) {
            if (!sl_mock_listed (calls, sl_mock_text (json_object_get (item, "call_id"))))
                rc = sl_mock_refuse (why, "input[%zu]: No tool call found for function call output with call_id %s",
                                     i, sl_mock_text (json_object_get (item, "call_id")));
        }
        else
        if (!sl_mock_is (type, "reasoning"))
            rc = sl_mock_refuse (why, "input[%zu]: unknown item type '%s'", i, sl_mock_text (type));
        if (rc)
            break;
    }
    json_decref (calls);
    return rc;
}

//  The last turn's tool result, and the tool that gave it.
static bool
s_result (json_t *root, sl_mock_result_t *out)
{
    json_t *input = json_object_get (root, "input");
    json_t *last = json_array_get (input, json_array_size (input) - 1);
    if (!sl_mock_is (json_object_get (last, "type"), "function_call_output"))
        return false;
    const char *id = sl_mock_text (json_object_get (last, "call_id"));
    size_t i;
    json_t *item;
    json_array_foreach (input, i, item)
        if (sl_mock_is (json_object_get (item, "type"), "function_call")
        &&  sl_mock_is (json_object_get (item, "call_id"), id))
            sl_mock_copy (out->name, sizeof out->name, sl_mock_text (json_object_get (item, "name")));
    json_t *output = json_object_get (last, "output");
    sl_mock_copy (out->text, sizeof out->text, json_is_string (output) ? json_string_value (output)
                                             : sl_mock_text (json_object_get (json_array_get (output, 0), "text")));
    return true;
}

//  An item of a *_call_output type.
static bool
s_carries_result (json_t *item)
{
    const char *type = json_string_value (json_object_get (item, "type"));
    size_t n = type ? strlen (type) : 0;
    return n > 12 && strcmp (type + n - 12, "_call_output") == 0;
}

//  --------------------------------------------------------------------------
//  Answers

static sl_buf_t *
s_event (sl_mock_out_t *o, const char *type)
{
    sl_buf_t *e = sl_mock_event (o);
    sl_buf_printf (e, "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%d", type, type, o->seq++);
    return e;
}

static void
s_response (sl_mock_out_t *o, const char *type, const char *status, int input, int output)
{
    sl_buf_t *e = s_event (o, type);
    sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"object\":\"response\",\"created_at\":%d,"
                      "\"status\":\"%s\",\"model\":", (unsigned long long) o->hash, SL_MOCK_CREATED, status);
    sl_mock_put_model (o, e);
    if (input >= 0)
        sl_buf_printf (e, ",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d}",
                       input, output, input + output);
    else
        sl_buf_puts (e, ",\"usage\":null");
    sl_buf_puts (e, "}}\n\n");
}

static void
s_close (sl_mock_out_t *o)
{
    int index = o->block - 1;
    sl_buf_t *e;
    if (o->open == SL_MOCK_OPEN_TEXT) {
        char id [64];
        snprintf (id, sizeof id, "msg_mock%016llx", (unsigned long long) o->hash);
        e = s_event (o, "response.output_text.done");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,\"text\":", id, index);
        sl_mock_put_text (o, e, sl_buf_str (&o->acc));
        sl_buf_puts (e, "}\n\n");
        e = s_event (o, "response.content_part.done");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                          "\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":", id, index);
        sl_mock_put_text (o, e, sl_buf_str (&o->acc));
        sl_buf_puts (e, "}}\n\n");
        e = s_event (o, "response.output_item.done");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"%s\",\"type\":\"message\",\"status\":\"completed\","
                          "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":",
                       index, id);
        sl_mock_put_text (o, e, sl_buf_str (&o->acc));
        sl_buf_puts (e, "}]}}\n\n");
    }
    else
    if (o->open == SL_MOCK_OPEN_TOOL) {
        e = s_event (o, "response.function_call_arguments.done");
        sl_buf_printf (e, ",\"item_id\":\"fc_%s\",\"output_index\":%d,\"arguments\":", o->tool_id, index);
        sl_mock_put_text (o, e, sl_buf_str (&o->acc));
        sl_buf_puts (e, "}\n\n");
        e = s_event (o, "response.output_item.done");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"fc_%s\",\"type\":\"function_call\","
                          "\"status\":\"completed\",\"arguments\":", index, o->tool_id);
        sl_mock_put_text (o, e, sl_buf_str (&o->acc));
        sl_buf_printf (e, ",\"call_id\":\"call_%s\",\"name\":\"%s\"}}\n\n", o->tool_id, o->tool_name);
    }
    o->open = SL_MOCK_OPEN_NONE;
    sl_buf_reset (&o->acc);
}

static void
s_begin (sl_mock_out_t *o)
{
    s_response (o, "response.created", "in_progress", -1, 0);
    s_response (o, "response.in_progress", "in_progress", -1, 0);
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    char id [64];
    snprintf (id, sizeof id, "msg_mock%016llx", (unsigned long long) o->hash);
    sl_buf_t *e;
    if (o->open != SL_MOCK_OPEN_TEXT) {
        s_close (o);
        e = s_event (o, "response.output_item.added");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"%s\",\"type\":\"message\","
                          "\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n", o->block, id);
        e = s_event (o, "response.content_part.added");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                          "\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}\n\n", id, o->block);
        o->block++;
        o->open = SL_MOCK_OPEN_TEXT;
    }
    e = s_event (o, "response.output_text.delta");
    sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,\"delta\":", id, o->block - 1);
    sl_mock_put_text (o, e, sl_str (text));
    sl_buf_puts (e, "}\n\n");
    sl_buf_puts (&o->acc, text);
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    (void) index;
    s_close (o);
    snprintf (o->tool_id, sizeof o->tool_id, "%s", id);
    snprintf (o->tool_name, sizeof o->tool_name, "%s", name);
    sl_buf_t *e = s_event (o, "response.output_item.added");
    sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"fc_%s\",\"type\":\"function_call\","
                      "\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_%s\",\"name\":\"%s\"}}\n\n",
                   o->block++, id, id, name);
    o->open = SL_MOCK_OPEN_TOOL;
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    (void) index;
    sl_buf_t *e = s_event (o, "response.function_call_arguments.delta");
    sl_buf_printf (e, ",\"item_id\":\"fc_%s\",\"output_index\":%d,\"delta\":", o->tool_id, o->block - 1);
    sl_mock_put_text (o, e, sl_str (fragment));
    sl_buf_puts (e, "}\n\n");
    sl_buf_puts (&o->acc, fragment);
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    s_close (o);
    if (strcmp (reason, "length") == 0) {
        sl_buf_t *e = s_event (o, "response.incomplete");
        sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"status\":\"incomplete\","
                          "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n",
                       (unsigned long long) o->hash);
        return;
    }
    s_response (o, "response.completed", "completed", input, output);
}

static void
s_fail (sl_mock_out_t *o)
{
    sl_buf_puts (s_event (o, "error"),
                 ",\"code\":\"server_error\",\"message\":\"The mock upstream failed mid-stream.\",\"param\":null}\n\n");
}

//  A failure mid-stream as the API sends one: an error event, then
//  response.failed.
static void
s_fail_as_api (sl_mock_out_t *o)
{
    s_fail (o);
    sl_buf_t *e = s_event (o, "response.failed");
    sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"object\":\"response\",\"created_at\":%d,"
                      "\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
                      "\"message\":\"The mock upstream failed mid-stream.\"},\"model\":",
                   (unsigned long long) o->hash, SL_MOCK_CREATED);
    sl_mock_put_model (o, e);
    sl_buf_puts (e, ",\"output\":[]}}\n\n");
}

static const sl_mock_render_t s_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .finish = s_finish,
    .fail = s_fail,
    .fail_as_api = s_fail_as_api,
    .error_body = sl_mock_openai_error_body,
    .rate_limited = "rate_limit_exceeded",
    .unavailable = "server_error",
    .failed = "server_error",
    .not_found = "invalid_request_error",
    .bad_request = "invalid_request_error",
};

static const char *const s_max_tokens [] = { "max_output_tokens", NULL };

const sl_mock_provider_t sl_mock_responses = {
    .dialect = SL_DIALECT_RESPONSES,
    .path = "/responses",
    .max_tokens = s_max_tokens,
    .check = s_check,
    .result = s_result,
    .shape = { .schema = "parameters", .turns = "input", .carries_result = s_carries_result },
    .render = &s_render,
};
