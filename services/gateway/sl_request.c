/*  sl_request.c - client request checking and preparation (see sl_request.h).

    Requests are parsed once with jansson: they are small next to the
    stream, and a tree makes checking and rewriting them simple.
*/
#include "sl_request.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int
s_refuse (sl_request_t *out, int status, const char *type, const char *format, ...)
{
    out->status = status;
    out->error_type = type;
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&out->error_message, format, args);
    va_end (args);
    return -1;
}

//  Text of a message's content: a string, or the text parts of an array.
static void
s_content_text (json_t *content, sl_buf_t *out)
{
    if (json_is_string (content)) {
        sl_buf_append (out, json_string_value (content), json_string_length (content));
        return;
    }
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part) {
        json_t *text = json_object_get (part, "text");
        if (json_is_string (text)) {
            if (out->len)
                sl_buf_putc (out, '\n');
            sl_buf_append (out, json_string_value (text), json_string_length (text));
        }
    }
}

static void
s_dump (json_t *value, sl_buf_t *out)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text) {
        sl_buf_puts (out, text);
        free (text);
    }
}

//  OpenAI tools: [{"type":"function","function":{"name","parameters"}}].
static int
s_openai_tools (json_t *tools, sl_request_t *out)
{
    if (!tools || json_is_null (tools)) {
        sl_buf_puts (&out->tools, "[]");
        return 0;
    }
    if (!json_is_array (tools))
        return s_refuse (out, 400, "invalid_request_error", "'tools' must be an array");
    json_t *norm = json_array ();
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool) {
        json_t *fn = json_object_get (tool, "function");
        json_t *name = json_object_get (fn, "name");
        if (!json_is_string (name)) {
            json_decref (norm);
            return s_refuse (out, 400, "invalid_request_error",
                             "tools[%zu].function.name must be a string", i);
        }
        json_t *entry = json_object ();
        json_object_set (entry, "name", name);
        json_t *schema = json_object_get (fn, "parameters");
        json_object_set_new (entry, "schema", schema ? json_incref (schema) : json_object ());
        json_array_append_new (norm, entry);
    }
    s_dump (norm, &out->tools);
    json_decref (norm);
    return 0;
}

int
sl_request_parse_openai (sl_str_t body, sl_request_t *out)
{
    memset (out, 0, sizeof *out);
    out->client_dialect = SL_DIALECT_OPENAI;
    out->upstream_dialect = SL_DIALECT_OPENAI;
    json_error_t jerr;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, &jerr);
    if (!root)
        return s_refuse (out, 400, "invalid_request_error",
                         "the body is not valid JSON (line %d, column %d: %s)",
                         jerr.line, jerr.column, jerr.text);
    int rc = -1;
    json_t *model = json_object_get (root, "model");
    json_t *messages = json_object_get (root, "messages");
    json_t *stream = json_object_get (root, "stream");
    json_t *n = json_object_get (root, "n");
    if (!json_is_object (root))
        s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
    else
    if (!json_is_string (model) || json_string_length (model) == 0)
        s_refuse (out, 400, "invalid_request_error", "'model' is required and must be a string");
    else
    if (!json_is_array (messages) || json_array_size (messages) == 0)
        s_refuse (out, 400, "invalid_request_error", "'messages' is required and must be a non-empty array");
    else
    if (stream && !json_is_boolean (stream))
        s_refuse (out, 400, "invalid_request_error", "'stream' must be a boolean");
    else
    if (!json_is_true (stream))
        s_refuse (out, 400, "invalid_request_error",
                  "non-streaming requests are not supported on this endpoint yet: set \"stream\": true");
    else
    if (n && !json_is_null (n) && !(json_is_integer (n) && json_integer_value (n) == 1))
        s_refuse (out, 400, "invalid_request_error",
                  "'n' other than 1 is not supported: sluice judges one choice per response");
    else
    if (s_openai_tools (json_object_get (root, "tools"), out) == 0) {
        sl_buf_append (&out->model, json_string_value (model), json_string_length (model));
        out->stream = true;
        json_t *opts = json_object_get (root, "stream_options");
        out->include_usage = json_is_true (json_object_get (opts, "include_usage"));
        //  Last user message, for an LLM judge's prompt.
        for (size_t i = json_array_size (messages); i-- > 0;) {
            json_t *msg = json_array_get (messages, i);
            if (json_is_string (json_object_get (msg, "role"))
            &&  strcmp (json_string_value (json_object_get (msg, "role")), "user") == 0) {
                s_content_text (json_object_get (msg, "content"), &out->last_user);
                break;
            }
        }
        //  Upstream always streams and always reports usage; the emitter
        //  shows the client only what it asked for.
        json_object_set_new (root, "stream", json_true ());
        json_t *so = json_object ();
        json_object_set_new (so, "include_usage", json_true ());
        json_object_set_new (root, "stream_options", so);
        s_dump (root, &out->upstream_body);
        rc = 0;
    }
    json_decref (root);
    return rc;
}

void
sl_request_clear (sl_request_t *self)
{
    sl_buf_free (&self->model);
    sl_buf_free (&self->upstream_body);
    sl_buf_free (&self->tools);
    sl_buf_free (&self->last_user);
    sl_buf_free (&self->error_message);
    memset (self, 0, sizeof *self);
}
