/*  sl_request.c - client request checking and preparation (see sl_request.h).

    Requests are parsed once with jansson: they are small next to the
    stream, and a tree makes checking and rewriting them simple.
*/
#include "sl_request.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
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

//  What jansson 2.14 allocates for each value on a 64-bit build, with
//  malloc's own overhead: an object is its struct and a hash table of 8
//  buckets; a member its pair (key inline) and its share of the buckets as
//  the table doubles; an array its struct and a table of 8 slots, an
//  element its slot as that doubles; a string its struct and a copy of the
//  text; a number its struct. true, false and null are shared. While it
//  reads a string, the lexer holds it in a buffer that doubles as it
//  grows: twice the longest string, at the peak.
#define S_COST_OBJECT 240
#define S_COST_MEMBER 104               //  + the key
#define S_COST_ARRAY 128
#define S_COST_ELEMENT 16
#define S_COST_STRING 80                //  + the text
#define S_COST_NUMBER 32

size_t
sl_request_tree_cost (const sl_json_stats_t *st)
{
    return st->objects * S_COST_OBJECT + st->members * S_COST_MEMBER + st->key_bytes
         + st->arrays * S_COST_ARRAY + st->elements * S_COST_ELEMENT
         + st->strings * S_COST_STRING + st->string_bytes + st->numbers * S_COST_NUMBER
         + 2 * st->longest;
}

size_t
sl_request_tree_budget (size_t body_len)
{
    return SL_REQUEST_TREE_FACTOR * body_len + SL_REQUEST_TREE_FLOOR;
}

//  Line and column (from 1) of a byte of the body.
static void
s_position (sl_str_t body, size_t at, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < at && i < body.len; i++) {
        if (body.ptr [i] == '\n') {
            (*line)++;
            *column = 1;
        }
        else
            (*column)++;
    }
}

//  Count the body before jansson sees it: a body that is not one JSON
//  object, or whose tree would be over the budget, is refused here without
//  a single allocation. 0 to go on.
static int
s_precheck (sl_str_t body, sl_request_t *out)
{
    sl_json_stats_t st;
    int line, column;
    if (sl_json_stats (body, &st)) {
        s_position (body, st.error_at, &line, &column);
        return s_refuse (out, 400, "invalid_request_error", "the body is not valid JSON (line %d, column %d: %s)",
                         line, column, st.too_deep ? "nested too deeply" : "unexpected text");
    }
    if (sl_json_type (body) != SL_JSON_OBJECT)
        return s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
    size_t cost = sl_request_tree_cost (&st), budget = sl_request_tree_budget (body.len);
    if (cost > budget)
        return s_refuse (out, 413, "request_too_large",
                         "the body holds too many JSON values (%zu objects, %zu arrays, %zu other values): "
                         "reading it would take about %zu MiB, over the limit of %zu MiB for a body of "
                         "%zu bytes", st.objects, st.arrays, st.strings + st.numbers + st.literals,
                         cost >> 20, budget >> 20, body.len);
    return 0;
}

//  The parts common to every dialect: a JSON object with a model.
static json_t *
s_load (sl_str_t body, int dialect, sl_request_t *out)
{
    memset (out, 0, sizeof *out);
    out->client_dialect = dialect;
    out->upstream_dialect = dialect;    //  same-dialect; the ingest routes models
    if (s_precheck (sl_str_n (body.ptr ? body.ptr : "", body.len), out))
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, &jerr);
    if (!root) {
        s_refuse (out, 400, "invalid_request_error", "the body is not valid JSON (line %d, column %d: %s)",
                  jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object (root)) {
        s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
        json_decref (root);
        return NULL;
    }
    return root;
}

static int
s_model (json_t *root, sl_request_t *out)
{
    json_t *model = json_object_get (root, "model");
    if (!json_is_string (model) || json_string_length (model) == 0)
        return s_refuse (out, 400, "invalid_request_error", "'model' is required and must be a string");
    sl_buf_append (&out->model, json_string_value (model), json_string_length (model));
    return 0;
}

//  What the client asked for ("stream", absent means false); the upstream
//  request always streams: a non-streaming response is rendered whole by
//  the emitter, after the judge, from the streamed one.
static int
s_streaming (json_t *root, sl_request_t *out)
{
    json_t *stream = json_object_get (root, "stream");
    if (stream && !json_is_null (stream) && !json_is_boolean (stream))
        return s_refuse (out, 400, "invalid_request_error", "'stream' must be a boolean");
    out->stream = json_is_true (stream);
    json_object_set_new (root, "stream", json_true ());
    return 0;
}

//  Last message with role user (role_key/user value) of an array; its
//  content through s_content_text.
static void
s_last_user (json_t *messages, const char *content_key, sl_request_t *out)
{
    for (size_t i = json_array_size (messages); i-- > 0;) {
        json_t *msg = json_array_get (messages, i);
        json_t *role = json_object_get (msg, "role");
        if (json_is_string (role) && strcmp (json_string_value (role), "user") == 0) {
            s_content_text (json_object_get (msg, content_key), &out->last_user);
            return;
        }
    }
}

int
sl_request_parse_openai (sl_str_t body, sl_request_t *out)
{
    json_t *root = s_load (body, SL_DIALECT_OPENAI, out);
    if (!root)
        return -1;
    int rc = -1;
    json_t *messages = json_object_get (root, "messages");
    json_t *n = json_object_get (root, "n");
    if (s_model (root, out))
        ;
    else
    if (!json_is_array (messages) || json_array_size (messages) == 0)
        s_refuse (out, 400, "invalid_request_error", "'messages' is required and must be a non-empty array");
    else
    if (s_streaming (root, out))
        ;
    else
    if (n && !json_is_null (n) && !(json_is_integer (n) && json_integer_value (n) == 1))
        s_refuse (out, 400, "invalid_request_error",
                  "'n' other than 1 is not supported: sluice judges one choice per response");
    else
    if (s_openai_tools (json_object_get (root, "tools"), out) == 0) {
        json_t *opts = json_object_get (root, "stream_options");
        out->include_usage = json_is_true (json_object_get (opts, "include_usage"));
        s_last_user (messages, "content", out);
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

//  Tools of the other dialects: an array of objects, each giving its name
//  and schema under the dialect's keys. Entries without a name (a
//  provider's own tools named by type only) are not the judge's.
static int
s_named_tools (json_t *tools, const char *what, const char *schema_key, const char *schema_key2,
               json_t *norm, sl_request_t *out)
{
    if (!tools || json_is_null (tools))
        return 0;
    if (!json_is_array (tools))
        return s_refuse (out, 400, "invalid_request_error", "'%s' must be an array", what);
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool) {
        if (!json_is_object (tool))
            return s_refuse (out, 400, "invalid_request_error", "%s[%zu] must be an object", what, i);
        json_t *name = json_object_get (tool, "name");
        if (!name)
            continue;
        if (!json_is_string (name))
            return s_refuse (out, 400, "invalid_request_error", "%s[%zu].name must be a string", what, i);
        json_t *schema = json_object_get (tool, schema_key);
        if (!json_is_object (schema) && schema_key2)
            schema = json_object_get (tool, schema_key2);
        json_t *entry = json_object ();
        json_object_set (entry, "name", name);
        json_object_set_new (entry, "schema", json_is_object (schema) ? json_incref (schema) : json_object ());
        json_array_append_new (norm, entry);
    }
    return 0;
}

int
sl_request_parse_anthropic (sl_str_t body, sl_request_t *out)
{
    json_t *root = s_load (body, SL_DIALECT_ANTHROPIC, out);
    if (!root)
        return -1;
    int rc = -1;
    json_t *messages = json_object_get (root, "messages");
    json_t *max_tokens = json_object_get (root, "max_tokens");
    json_t *norm = json_array ();
    if (s_model (root, out))
        ;
    else
    if (!json_is_array (messages) || json_array_size (messages) == 0)
        s_refuse (out, 400, "invalid_request_error", "messages: a non-empty array is required");
    else
    if (!json_is_integer (max_tokens) || json_integer_value (max_tokens) < 1)
        s_refuse (out, 400, "invalid_request_error", "max_tokens: a positive integer is required");
    else
    if (s_streaming (root, out))
        ;
    else
    if (s_named_tools (json_object_get (root, "tools"), "tools", "input_schema", NULL, norm, out) == 0) {
        out->include_usage = true;      //  Anthropic always reports usage
        s_last_user (messages, "content", out);
        s_dump (norm, &out->tools);
        s_dump (root, &out->upstream_body);
        rc = 0;
    }
    json_decref (norm);
    json_decref (root);
    return rc;
}

int
sl_request_parse_responses (sl_str_t body, sl_request_t *out)
{
    json_t *root = s_load (body, SL_DIALECT_RESPONSES, out);
    if (!root)
        return -1;
    int rc = -1;
    json_t *input = json_object_get (root, "input");
    json_t *norm = json_array ();
    if (s_model (root, out))
        ;
    else
    if (!(json_is_string (input) || (json_is_array (input) && json_array_size (input) > 0)))
        s_refuse (out, 400, "invalid_request_error", "'input' is required: a string or a non-empty array");
    else
    if (s_streaming (root, out))
        ;
    else
    if (json_is_true (json_object_get (root, "background")))
        s_refuse (out, 400, "invalid_request_error",
                  "'background' responses are not supported: sluice judges the response as it streams");
    else
    if (s_named_tools (json_object_get (root, "tools"), "tools", "parameters", NULL, norm, out) == 0) {
        out->include_usage = true;      //  response.completed always carries usage
        if (json_is_string (input))
            s_content_text (input, &out->last_user);
        else
            s_last_user (input, "content", out);
        s_dump (norm, &out->tools);
        s_dump (root, &out->upstream_body);
        rc = 0;
    }
    json_decref (norm);
    json_decref (root);
    return rc;
}

//  Gemini content parts: the text of the parts that have some.
static void
s_gemini_text (json_t *content, sl_buf_t *out)
{
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get (content, "parts"), i, part) {
        json_t *text = json_object_get (part, "text");
        if (json_is_string (text)) {
            if (out->len)
                sl_buf_putc (out, '\n');
            sl_buf_append (out, json_string_value (text), json_string_length (text));
        }
    }
}

int
sl_request_parse_gemini (sl_str_t body, const sl_route_t *route, bool sse, sl_request_t *out)
{
    json_t *root = s_load (body, SL_DIALECT_GEMINI, out);
    if (!root)
        return -1;
    int rc = -1;
    json_t *contents = json_object_get (root, "contents");
    json_t *config = json_object_get (root, "generationConfig");
    json_t *candidates = json_object_get (config, "candidateCount");
    json_t *tools = json_object_get (root, "tools");
    json_t *norm = json_array ();
    if (!route->model [0])
        s_refuse (out, 400, "invalid_request_error", "the path names no model");
    else
    if (!json_is_array (contents) || json_array_size (contents) == 0)
        s_refuse (out, 400, "invalid_request_error", "'contents' is required and must be a non-empty array");
    else
    if (route->stream && !sse)
        s_refuse (out, 400, "invalid_request_error",
                  "only server-sent events are supported for streaming: add alt=sse to the query");
    else
    if (candidates && !json_is_null (candidates)
    &&  !(json_is_integer (candidates) && json_integer_value (candidates) == 1))
        s_refuse (out, 400, "invalid_request_error",
                  "candidateCount other than 1 is not supported: sluice judges one candidate per response");
    else
    if (tools && !json_is_null (tools) && !json_is_array (tools))
        s_refuse (out, 400, "invalid_request_error", "'tools' must be an array");
    else {
        size_t i;
        json_t *tool;
        rc = 0;
        json_array_foreach (tools, i, tool) {
            json_t *decls = json_object_get (tool, "functionDeclarations");
            if (s_named_tools (decls, "functionDeclarations", "parameters", "parametersJsonSchema", norm, out)) {
                rc = -1;
                break;
            }
        }
        if (rc == 0) {
            sl_buf_puts (&out->model, route->model);
            out->stream = route->stream;
            out->include_usage = true;  //  Gemini always reports usageMetadata
            for (size_t k = json_array_size (contents); k-- > 0;) {
                json_t *content = json_array_get (contents, k);
                json_t *role = json_object_get (content, "role");
                if (!role || (json_is_string (role) && strcmp (json_string_value (role), "user") == 0)) {
                    s_gemini_text (content, &out->last_user);
                    break;
                }
            }
            s_dump (norm, &out->tools);
            s_dump (root, &out->upstream_body);
        }
    }
    json_decref (norm);
    json_decref (root);
    return rc;
}

//  --------------------------------------------------------------------------
//  Endpoints

static bool
s_prefix (const char **path, const char *prefix)
{
    size_t n = strlen (prefix);
    if (strncmp (*path, prefix, n) != 0)
        return false;
    *path += n;
    return true;
}

int
sl_request_route (const char *path, sl_route_t *out)
{
    memset (out, 0, sizeof *out);
    if (strcmp (path, "/v1/chat/completions") == 0 || strcmp (path, "/chat/completions") == 0) {
        out->dialect = SL_DIALECT_OPENAI;
        return 1;
    }
    if (strcmp (path, "/v1/messages") == 0 || strcmp (path, "/messages") == 0) {
        out->dialect = SL_DIALECT_ANTHROPIC;
        return 1;
    }
    if (strcmp (path, "/v1/responses") == 0 || strcmp (path, "/responses") == 0) {
        out->dialect = SL_DIALECT_RESPONSES;
        return 1;
    }
    const char *p = path;
    if (!(s_prefix (&p, "/v1beta/models/") || s_prefix (&p, "/v1/models/") || s_prefix (&p, "/models/"))) {
        if (strncmp (path, "/v1/messages", 12) == 0)
            out->dialect = SL_DIALECT_ANTHROPIC;
        else
        if (strncmp (path, "/v1beta/", 8) == 0)
            out->dialect = SL_DIALECT_GEMINI;
        return 0;
    }
    out->dialect = SL_DIALECT_GEMINI;
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
