/*  sl_mock_gemini.c - the mock as a Gemini provider (see
    sl_mock_provider.h).

    POST .../models/{model}:streamGenerateContent (the model is in the
    path); max tokens in generationConfig.maxOutputTokens. The API refuses
    contents whose roles are not user and model; whose parts do not hold
    exactly one known field; whose functionCall lacks a name or object
    args; or whose user content after a model content with calls does not
    answer each of them with a functionResponse of its name, as many as
    there were calls. Every event is a GenerateContentResponse; calls are
    sent whole (or, their arguments in pieces, as Gemini 3 streams them);
    a failed stream ends with the bare error object.

    Tests: tests/unit/services/mock/test_sl_mock_provider.c (what it
    refuses, the result it reads, its table) and the conformance suite,
    tests/unit/common/dialects/test_dialects.c (its streams decode, the
    conversation each dialect renders passes its checks).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

//  --------------------------------------------------------------------------
//  Requests

//  What the API refuses of a conversation (see above).
int
sl_mock_gemini_check (json_t *root, sl_mock_why_t *why)
{
    static const char *const known [] = {
        "text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
        "codeExecutionResult", NULL
    };
    json_t *contents = json_object_get (root, "contents");
    if (!json_is_array (contents))
        return sl_mock_refuse (why, "contents: a list is required");
    json_t *calls = NULL;               //  names the next user content must answer
    size_t i;
    json_t *c;
    json_array_foreach (contents, i, c) {
        json_t *role = json_object_get (c, "role");
        if (role && !sl_mock_is (role, "user") && !sl_mock_is (role, "model")) {
            json_decref (calls);
            return sl_mock_refuse (why, "contents[%zu].role: user or model, not '%s'", i, sl_mock_text (role));
        }
        json_t *answered = json_array ();
        json_t *next = sl_mock_is (role, "model") ? json_array () : NULL;
        size_t k;
        json_t *p;
        int rc = 0;
        json_array_foreach (json_object_get (c, "parts"), k, p) {
            int fields = 0;
            for (int f = 0; known [f]; f++)
                fields += json_object_get (p, known [f]) != NULL;
            if (fields != 1)
                rc = sl_mock_refuse (why, "contents[%zu].parts[%zu]: one of text, inlineData, functionCall, "
                                          "functionResponse, ... is required", i, k);
            json_t *call = json_object_get (p, "functionCall");
            json_t *response = json_object_get (p, "functionResponse");
            if (call) {
                if (!next || !json_is_string (json_object_get (call, "name"))
                ||  (json_object_get (call, "args") && !json_is_object (json_object_get (call, "args"))))
                    rc = sl_mock_refuse (why, "contents[%zu].parts[%zu]: a functionCall of the model needs a name and "
                                              "object args", i, k);
                else
                    json_array_append (next, json_object_get (call, "name"));
            }
            if (response) {
                if (!json_is_string (json_object_get (response, "name"))
                ||  !json_is_object (json_object_get (response, "response")))
                    rc = sl_mock_refuse (why, "contents[%zu].parts[%zu]: a functionResponse needs a name and an object "
                                              "response", i, k);
                else
                    json_array_append (answered, json_object_get (response, "name"));
            }
            if (rc)
                break;
        }
        if (rc == 0 && json_array_size (answered)) {
            //  As many responses as calls, each naming one of them.
            bool ok = calls && json_array_size (answered) == json_array_size (calls);
            for (size_t n = 0; ok && n < json_array_size (answered); n++)
                ok = sl_mock_listed (calls, sl_mock_text (json_array_get (answered, n)));
            if (!ok)
                rc = sl_mock_refuse (why, "contents[%zu]: Please ensure that the number of function response parts is "
                                          "equal to the number of function call parts of the function call turn, each "
                                          "naming its function", i);
        }
        json_decref (answered);
        json_decref (calls);
        calls = next;
        if (rc) {
            json_decref (calls);
            return -1;
        }
    }
    json_decref (calls);
    return 0;
}

//  The last turn's tool result, and the tool that gave it.
bool
sl_mock_gemini_result (json_t *root, sl_mock_result_t *out)
{
    json_t *contents = json_object_get (root, "contents");
    json_t *last = json_array_get (contents, json_array_size (contents) - 1);
    size_t k;
    json_t *p, *found = NULL;
    json_array_foreach (json_object_get (last, "parts"), k, p)
        if (json_object_get (p, "functionResponse"))
            found = json_object_get (p, "functionResponse");
    if (!found)
        return false;
    sl_mock_copy (out->name, sizeof out->name, sl_mock_text (json_object_get (found, "name")));
    json_t *response = json_object_get (found, "response");
    json_t *output = json_object_get (response, "output");
    if (!output)
        output = json_object_get (response, "result");
    if (json_is_string (output))
        sl_mock_copy (out->text, sizeof out->text, json_string_value (output));
    else {
        char *text = json_dumps (response, JSON_COMPACT);
        sl_mock_copy (out->text, sizeof out->text, text);
        free (text);
    }
    return true;
}

//  A content with a functionResponse part.
bool
sl_mock_gemini_carries_result (json_t *content)
{
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get (content, "parts"), i, part)
        if (json_object_get (part, "functionResponse"))
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Answers: every event a GenerateContentResponse; calls are sent whole.

//  Start a chunk whose candidate has the given parts JSON (no brackets).
static sl_buf_t *
s_chunk (sl_mock_out_t *o, const char *parts)
{
    sl_buf_t *e = sl_mock_event (o);
    sl_buf_printf (e, "data: {\"candidates\":[{\"content\":{\"parts\":[%s],\"role\":\"model\"},\"index\":0", parts);
    return e;
}

static void
s_end_chunk (sl_mock_out_t *o, sl_buf_t *e)
{
    sl_buf_puts (e, ",\"modelVersion\":");
    sl_mock_put_model (o, e);
    sl_buf_printf (e, ",\"responseId\":\"mock%016llx\"}\r\n\r\n", (unsigned long long) o->hash);
}

//  A chunk of one functionCall part (its JSON, without braces).
static void
s_call_chunk (sl_mock_out_t *o, const char *call)
{
    sl_buf_t parts = { 0 };
    sl_buf_printf (&parts, "{\"functionCall\":{%s}}", call);
    sl_buf_t *e = s_chunk (o, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_end_chunk (o, e);
    sl_buf_free (&parts);
}

static void
s_flush_call (sl_mock_out_t *o)
{
    if (o->open == SL_MOCK_OPEN_STREAMED_TOOL) {
        s_call_chunk (o, "");      //  an empty functionCall ends a streamed one
        o->open = SL_MOCK_OPEN_NONE;
        return;
    }
    if (o->open != SL_MOCK_OPEN_TOOL)
        return;
    sl_buf_t parts = { 0 };
    sl_buf_printf (&parts, "{\"functionCall\":{\"name\":\"%s\",\"args\":", o->tool_name);
    sl_buf_append_str (&parts, sl_buf_str (&o->acc));
    sl_buf_puts (&parts, "}}");
    sl_buf_t *e = s_chunk (o, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_end_chunk (o, e);
    sl_buf_free (&parts);
    sl_buf_reset (&o->acc);
    o->open = SL_MOCK_OPEN_NONE;
}

static void
s_begin (sl_mock_out_t *o)
{
    (void) o;                         //  Gemini has no opening event
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    s_flush_call (o);
    sl_buf_t parts = { 0 };
    sl_buf_puts (&parts, "{\"text\":");
    sl_mock_put_text (o, &parts, sl_str (text));
    sl_buf_putc (&parts, '}');
    sl_buf_t *e = s_chunk (o, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_end_chunk (o, e);
    sl_buf_free (&parts);
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    (void) index;
    (void) id;                          //  the Gemini API sends no call ids
    s_flush_call (o);
    snprintf (o->tool_name, sizeof o->tool_name, "%s", name);
    o->open = SL_MOCK_OPEN_TOOL;
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    (void) index;
    sl_buf_puts (&o->acc, fragment);
}

//  Arguments that come in pieces stream as Gemini 3 streams them: the call
//  opens with willContinue, each piece is a partialArgs value.
static void
s_tool_string (sl_mock_out_t *o, int index, const char *json, const char *key, const char *value, bool more)
{
    (void) index;
    (void) json;
    sl_buf_t call = { 0 };
    if (o->open == SL_MOCK_OPEN_TOOL) {
        sl_buf_printf (&call, "\"name\":\"%s\",\"willContinue\":true", o->tool_name);
        s_call_chunk (o, sl_buf_cstr (&call));
        sl_buf_reset (&call);
        o->open = SL_MOCK_OPEN_STREAMED_TOOL;
    }
    sl_buf_printf (&call, "\"partialArgs\":[{\"jsonPath\":\"$.%s\",\"stringValue\":", key);
    sl_json_put_str (&call, value, strlen (value));
    sl_buf_printf (&call, "%s}],\"willContinue\":true", more ? ",\"willContinue\":true" : "");
    s_call_chunk (o, sl_buf_cstr (&call));
    sl_buf_free (&call);
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    s_flush_call (o);
    sl_buf_t *e = s_chunk (o, "{\"text\":\"\"}");
    sl_buf_printf (e, ",\"finishReason\":\"%s\"}],\"usageMetadata\":{\"promptTokenCount\":%d,"
                      "\"candidatesTokenCount\":%d,\"totalTokenCount\":%d}",
                   strcmp (reason, "length") == 0 ? "MAX_TOKENS" : "STOP", input, output, input + output);
    s_end_chunk (o, e);
}

static void
s_fail (sl_mock_out_t *o)
{
    s_flush_call (o);              //  a whole call goes out before the failure
    sl_buf_puts (sl_mock_event (o),
                 "data: {\"error\":{\"code\":500,\"message\":\"The mock upstream failed mid-stream.\","
                 "\"status\":\"INTERNAL\"}}\r\n\r\n");
}

//  A whole call still held goes out: Gemini sends calls whole, so the
//  body ends after it (not inside a streamed one, which stays open).
static void
s_eof (sl_mock_out_t *o)
{
    if (o->open == SL_MOCK_OPEN_TOOL)
        s_flush_call (o);
}

//  The Gemini API ends a failed stream with the bare error object after
//  the last event (the recorded corpus has it).
static void
s_fail_as_api (sl_mock_out_t *o)
{
    sl_buf_puts (sl_mock_event (o),
                 "{\n  \"error\": {\n    \"code\": 499,\n    \"message\": \"The operation was cancelled.\",\n"
                 "    \"status\": \"CANCELLED\"\n  }\n}\n");
}

static void
s_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) type;
    const char *rpc = status == 404 ? "NOT_FOUND" : status == 400 ? "INVALID_ARGUMENT" : status == 429
                    ? "RESOURCE_EXHAUSTED" : status == 503 ? "UNAVAILABLE" : "INTERNAL";
    sl_buf_printf (out, "{\"error\":{\"code\":%d,\"message\":", status);
    sl_json_put_str (out, message, strlen (message));
    sl_buf_printf (out, ",\"status\":\"%s\"}}", rpc);
}

const sl_mock_render_t sl_mock_gemini_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .tool_string = s_tool_string,
    .finish = s_finish,
    .fail = s_fail,
    .eof = s_eof,
    .fail_as_api = s_fail_as_api,
    .error_body = s_error_body,
    .rate_limited = "RESOURCE_EXHAUSTED",
    .unavailable = "UNAVAILABLE",
    .failed = "INTERNAL",
    .not_found = "NOT_FOUND",
    .bad_request = "INVALID_ARGUMENT",
};

const char *const sl_mock_gemini_max_tokens [] = { "generationConfig.maxOutputTokens", NULL };

const sl_mock_provider_t sl_mock_gemini = {
    .dialect = SL_DIALECT_GEMINI,
    .path = ":streamGenerateContent",
    .model_in_path = true,
    .max_tokens = sl_mock_gemini_max_tokens,
    .check = sl_mock_gemini_check,
    .result = sl_mock_gemini_result,
    .shape = { .schema = "parameters", .schema2 = "parametersJsonSchema", .declarations = "functionDeclarations",
               .turns = "contents", .carries_result = sl_mock_gemini_carries_result },
    .render = &sl_mock_gemini_render,
};
