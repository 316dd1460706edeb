/*  sl_mcp_leg.c - the synthetic requests of MCP's three legs, and readers
    of what the pipeline made of them.

    Every request here is an OpenAI Chat body, not streamed (the emitter
    renders the verdict as one chat.completion), opened by one user
    message that says what the MCP client asked (request rules on user
    text see it; it holds nothing of the client's). Earlier calls of the
    session come as assistant tool calls, each answered by a placeholder
    result: the request judge computes taint from the names of the tools
    whose results the conversation holds (sl_taint.h), and history
    conditions see the calls and their arguments. The untrusted tools the
    session read whose calls have left the window come first, the same
    way, so the taint outlives the window. See sl_mcp_leg.h.
*/
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/mcp/sl_mcp_leg.h"

#define SL_MCP_LEG_HISTORY_ID "mcp_h"   //  the call ids of earlier calls: mcp_h0, mcp_h1...

#define SL_MCP_LEG_TAINT_ID "mcp_t"     //  the call ids of the calls of untrusted tools past the window

typedef struct {
    char *name;
    char *arguments;
} s_call_t;

struct _sl_mcp_history_t {
    s_call_t calls [SL_MCP_HISTORY_MAX];
    size_t count;
    size_t bytes;                       //  of the calls' names and arguments
    char *tainted [SL_MCP_TAINT_MAX];   //  untrusted tools whose results the session read
    size_t tainted_count;
};

sl_mcp_history_t *
sl_mcp_history_new (void)
{
    return sl_xcalloc (1, sizeof (sl_mcp_history_t));
}

void
sl_mcp_history_destroy (sl_mcp_history_t **self_p)
{
    sl_mcp_history_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++) {
        free (self->calls [i].name);
        free (self->calls [i].arguments);
    }
    for (size_t i = 0; i < self->tainted_count; i++)
        free (self->tainted [i]);
    free (self);
    *self_p = NULL;
}

static size_t
s_call_bytes (const s_call_t *call)
{
    return strlen (call->name) + strlen (call->arguments);
}

static void
s_drop_oldest (sl_mcp_history_t *self)
{
    self->bytes -= s_call_bytes (&self->calls [0]);
    free (self->calls [0].name);
    free (self->calls [0].arguments);
    memmove (self->calls, self->calls + 1, (self->count - 1) * sizeof (s_call_t));
    self->count--;
}

void
sl_mcp_history_add (sl_mcp_history_t *self, const char *name, sl_str_t arguments)
{
    //  A call too large to keep whole keeps its name (cut, for a name
    //  alone over the bound) and loses its arguments: what the window
    //  holds stays within its bytes whatever a client sends.
    size_t name_len = strnlen (name, SL_MCP_HISTORY_CALL_MAX);
    s_call_t call = { .name = sl_xstrndup (name, name_len) };
    if (name_len + arguments.len <= SL_MCP_HISTORY_CALL_MAX)
        call.arguments = sl_xstrndup (arguments.ptr ? arguments.ptr : "", arguments.len);
    else
        call.arguments = sl_xstrdup (SL_MCP_ARGS_NOT_KEPT);
    size_t bytes = s_call_bytes (&call);
    while (self->count && (self->count == SL_MCP_HISTORY_MAX || self->bytes + bytes > SL_MCP_HISTORY_BYTES))
        s_drop_oldest (self);
    self->calls [self->count++] = call;
    self->bytes += bytes;
}

size_t
sl_mcp_history_bytes (const sl_mcp_history_t *self)
{
    return self ? self->bytes : 0;
}

void
sl_mcp_history_taint (sl_mcp_history_t *self, const char *name)
{
    for (size_t i = 0; i < self->tainted_count; i++)
        if (strcmp (self->tainted [i], name) == 0)
            return;
    if (self->tainted_count < SL_MCP_TAINT_MAX)
        self->tainted [self->tainted_count++] = sl_xstrndup (name, strnlen (name, SL_MCP_HISTORY_CALL_MAX));
}

const char *
sl_mcp_history_tainted (const sl_mcp_history_t *self, size_t i)
{
    return self && i < self->tainted_count ? self->tainted [i] : NULL;
}

size_t
sl_mcp_history_count (const sl_mcp_history_t *self)
{
    return self ? self->count : 0;
}

const char *
sl_mcp_history_name (const sl_mcp_history_t *self, size_t i)
{
    return self && i < self->count ? self->calls [i].name : NULL;
}

const char *
sl_mcp_history_arguments (const sl_mcp_history_t *self, size_t i)
{
    return self && i < self->count ? self->calls [i].arguments : NULL;
}

//  --------------------------------------------------------------------------
//  Names

void
sl_mcp_policy_name (const char *server, const char *tool, sl_buf_t *out)
{
    sl_buf_puts (out, SL_MCP_POLICY_PREFIX);
    sl_mcp_multiplexed_name (server, tool, out);
}

void
sl_mcp_multiplexed_name (const char *server, const char *tool, sl_buf_t *out)
{
    sl_buf_puts (out, server);
    sl_buf_puts (out, SL_MCP_SEPARATOR);
    sl_buf_puts (out, tool);
}

int
sl_mcp_multiplexed_split (sl_str_t name, sl_str_t *server, sl_str_t *tool)
{
    size_t n = strlen (SL_MCP_SEPARATOR);
    for (size_t i = 1; name.ptr && i + n < name.len; i++)
        if (memcmp (name.ptr + i, SL_MCP_SEPARATOR, n) == 0) {
            *server = sl_str_n (name.ptr, i);
            *tool = sl_str_n (name.ptr + i + n, name.len - i - n);
            return 0;
        }
    return -1;
}

void
sl_mcp_leg_model (const char *server, sl_buf_t *out)
{
    sl_buf_puts (out, SL_MCP_PROVIDER_PREFIX);
    sl_buf_puts (out, server);
}

//  --------------------------------------------------------------------------
//  Requests

//  {"model":"mcp:S","stream":false,"messages":[{"role":"user","content":...}
static void
s_open (const char *server, const char *what, sl_buf_t *out)
{
    sl_buf_t text = { 0 };
    sl_buf_puts (out, "{\"model\":");
    sl_mcp_leg_model (server, &text);
    sl_json_put_sl (out, sl_buf_str (&text));
    sl_buf_reset (&text);
    sl_buf_printf (&text, "MCP %s on server %s", what, server);
    sl_buf_puts (out, ",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":");
    sl_json_put_sl (out, sl_buf_str (&text));
    sl_buf_putc (out, '}');
    sl_buf_free (&text);
}

//  ,{assistant: one tool call},  the call's turn.
static void
s_put_call (const char *id, const char *name, sl_str_t arguments, sl_buf_t *out)
{
    sl_buf_puts (out, ",{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":");
    sl_json_put_str (out, id, strlen (id));
    sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
    sl_json_put_str (out, name, strlen (name));
    sl_buf_puts (out, ",\"arguments\":");
    sl_json_put_sl (out, arguments.ptr ? arguments : SL_STR_LIT ("{}"));
    sl_buf_puts (out, "}}]}");
}

//  ,{assistant: the call},{tool: its placeholder result}
static void
s_put_earlier (const char *id, const char *name, sl_str_t arguments, sl_buf_t *out)
{
    s_put_call (id, name, arguments, out);
    sl_buf_puts (out, ",{\"role\":\"tool\",\"tool_call_id\":");
    sl_json_put_str (out, id, strlen (id));
    sl_buf_puts (out, ",\"content\":\"" SL_MCP_PLACEHOLDER "\"}");
}

static bool
s_in_window (const sl_mcp_history_t *history, const char *name)
{
    for (size_t i = 0; i < history->count; i++)
        if (strcmp (history->calls [i].name, name) == 0)
            return true;
    return false;
}

//  The untrusted tools whose calls left the window first (they came
//  before it), so the request judge reads the taint from them; then the
//  window's calls.
static void
s_put_history (const sl_mcp_history_t *history, sl_buf_t *out)
{
    if (!history)
        return;
    char id [32];
    for (size_t i = 0; i < history->tainted_count; i++)
        if (!s_in_window (history, history->tainted [i])) {
            snprintf (id, sizeof id, SL_MCP_LEG_TAINT_ID "%zu", i);
            s_put_earlier (id, history->tainted [i], SL_STR_LIT (SL_MCP_ARGS_NOT_KEPT), out);
        }
    for (size_t i = 0; i < history->count; i++) {
        snprintf (id, sizeof id, SL_MCP_LEG_HISTORY_ID "%zu", i);
        s_put_earlier (id, history->calls [i].name, sl_str (history->calls [i].arguments), out);
    }
}

//  {"type":"function","function":{"name":..,"description":..,"parameters":..}}
//  of an MCP definition (NULL: an open schema).
static void
s_put_tool (const char *server, const char *tool, const json_t *definition, sl_buf_t *out)
{
    sl_buf_t name = { 0 };
    sl_mcp_policy_name (server, tool, &name);
    sl_buf_puts (out, "{\"type\":\"function\",\"function\":{\"name\":");
    sl_json_put_sl (out, sl_buf_str (&name));
    sl_buf_free (&name);
    const json_t *description = definition ? json_object_get (definition, "description") : NULL;
    if (json_is_string (description)) {
        sl_buf_puts (out, ",\"description\":");
        sl_json_put_str (out, json_string_value (description), json_string_length (description));
    }
    const json_t *schema = definition ? json_object_get (definition, "inputSchema") : NULL;
    sl_buf_puts (out, ",\"parameters\":");
    char *text = json_is_object (schema) ? json_dumps (schema, JSON_COMPACT) : NULL;
    sl_buf_puts (out, text ? text : "{\"type\":\"object\"}");
    free (text);
    sl_buf_puts (out, "}}");
}

static bool
s_is_object (sl_str_t json)
{
    return sl_json_valid (json) && sl_json_type (json) == SL_JSON_OBJECT;
}

int
sl_mcp_leg_call_request (const char *server, const char *tool, sl_str_t arguments,
                         const json_t *definition, const sl_mcp_history_t *history,
                         sl_buf_t *out)
{
    if (!s_is_object (arguments))
        return -1;
    sl_buf_t what = { 0 };
    sl_buf_printf (&what, "tools/call %s", tool);
    s_open (server, sl_buf_cstr (&what), out);
    sl_buf_free (&what);
    s_put_history (history, out);
    sl_buf_puts (out, "],\"tools\":[");
    s_put_tool (server, tool, definition, out);
    sl_buf_puts (out, "]}");
    return 0;
}

//  One chat.completion.chunk of the inline answer around delta.
static void
s_chunk (const char *server, const char *delta, const char *finish, sl_buf_t *out)
{
    sl_buf_t model = { 0 };
    sl_mcp_leg_model (server, &model);
    sl_buf_puts (out, "data: {\"id\":\"chatcmpl-mcp\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":");
    sl_json_put_sl (out, sl_buf_str (&model));
    sl_buf_puts (out, ",\"choices\":[{\"index\":0,\"delta\":");
    sl_buf_puts (out, delta);
    sl_buf_puts (out, ",\"finish_reason\":");
    sl_buf_puts (out, finish);
    sl_buf_puts (out, "}]}\n\n");
    sl_buf_free (&model);
}

void
sl_mcp_leg_call_answer (const char *server, const char *tool, sl_str_t arguments,
                        const char *call_id, sl_buf_t *out)
{
    sl_buf_t delta = { 0 }, name = { 0 };
    sl_mcp_policy_name (server, tool, &name);
    sl_buf_puts (&delta, "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":");
    sl_json_put_str (&delta, call_id, strlen (call_id));
    sl_buf_puts (&delta, ",\"type\":\"function\",\"function\":{\"name\":");
    sl_json_put_sl (&delta, sl_buf_str (&name));
    sl_buf_puts (&delta, ",\"arguments\":\"\"}}]}");
    s_chunk (server, sl_buf_cstr (&delta), "null", out);
    sl_buf_reset (&delta);
    sl_buf_puts (&delta, "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":");
    sl_json_put_sl (&delta, arguments.ptr ? arguments : SL_STR_LIT ("{}"));
    sl_buf_puts (&delta, "}}]}");
    s_chunk (server, sl_buf_cstr (&delta), "null", out);
    s_chunk (server, "{}", "\"tool_calls\"", out);
    sl_buf_puts (out, "data: [DONE]\n\n");
    sl_buf_free (&delta);
    sl_buf_free (&name);
}

void
sl_mcp_leg_empty_answer (sl_buf_t *out)
{
    s_chunk ("", "{\"role\":\"assistant\",\"content\":\"\"}", "null", out);
    s_chunk ("", "{}", "\"stop\"", out);
    sl_buf_puts (out, "data: [DONE]\n\n");
}

//  What a result's content item shows the judge: its text (a text item,
//  or an embedded resource's text), else nothing (an image, audio, a
//  link: passed on as the server sent it).
static const char *
s_item_text (const json_t *item, size_t *len)
{
    const json_t *type = json_object_get (item, "type");
    const json_t *text = NULL;
    if (json_is_string (type) && strcmp (json_string_value (type), "text") == 0)
        text = json_object_get (item, "text");
    else if (json_is_string (type) && strcmp (json_string_value (type), "resource") == 0)
        text = json_object_get (json_object_get (item, "resource"), "text");
    if (!json_is_string (text))
        return NULL;
    *len = json_string_length (text);
    return json_string_value (text);
}

//  The text parts a result is judged as: one per text of its content, the
//  structuredContent's JSON last. A result with none still has one (empty)
//  part, so a blocked result is told from a judged one by its shape.
static void
s_put_result_parts (const json_t *result, sl_buf_t *out)
{
    sl_buf_putc (out, '[');
    size_t parts = 0, len = 0;
    const json_t *content = json_object_get (result, "content");
    size_t i;
    const json_t *item;
    json_array_foreach (content, i, item) {
        const char *text = s_item_text (item, &len);
        if (!text)
            continue;
        sl_buf_puts (out, parts++ ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        sl_json_put_str (out, text, len);
        sl_buf_putc (out, '}');
    }
    const json_t *structured = json_object_get (result, "structuredContent");
    if (structured) {
        char *text = json_dumps (structured, JSON_COMPACT | JSON_ENCODE_ANY);
        sl_buf_puts (out, parts++ ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        sl_json_put_str (out, text ? text : "", text ? strlen (text) : 0);
        sl_buf_putc (out, '}');
        free (text);
    }
    if (!parts)
        sl_buf_puts (out, "{\"type\":\"text\",\"text\":\"\"}");
    sl_buf_putc (out, ']');
}

int
sl_mcp_leg_result_request (const char *server, const char *tool, sl_str_t arguments,
                           const char *call_id, const json_t *result,
                           const sl_mcp_history_t *history, sl_buf_t *out)
{
    if (!json_is_object (result))
        return -1;
    sl_buf_t what = { 0 }, name = { 0 };
    sl_buf_printf (&what, "tools/call %s result", tool);
    s_open (server, sl_buf_cstr (&what), out);
    s_put_history (history, out);
    sl_mcp_policy_name (server, tool, &name);
    s_put_call (call_id, sl_buf_cstr (&name), arguments, out);
    sl_buf_puts (out, ",{\"role\":\"tool\",\"tool_call_id\":");
    sl_json_put_str (out, call_id, strlen (call_id));
    sl_buf_puts (out, ",\"content\":");
    s_put_result_parts (result, out);
    sl_buf_puts (out, "}]}");
    sl_buf_free (&what);
    sl_buf_free (&name);
    return 0;
}

int
sl_mcp_leg_list_request (const char *server, const json_t *tools, sl_buf_t *out)
{
    if (!json_is_array (tools))
        return -1;
    s_open (server, "tools/list", out);
    sl_buf_puts (out, "],\"tools\":[");
    size_t i, n = 0;
    const json_t *definition;
    json_array_foreach (tools, i, definition) {
        const json_t *name = json_object_get (definition, "name");
        if (!json_is_string (name))
            continue;                   //  not a tool a client could call: never listed
        if (n++)
            sl_buf_putc (out, ',');
        s_put_tool (server, json_string_value (name), definition, out);
    }
    sl_buf_puts (out, "]}");
    return 0;
}

//  --------------------------------------------------------------------------
//  Readers

void
sl_mcp_call_verdict_free (sl_mcp_call_verdict_t *self)
{
    free (self->arguments);
    free (self->notice);
    free (self->detail);
    memset (self, 0, sizeof *self);
}

static sl_mcp_call_outcome_t
s_failed (sl_mcp_call_verdict_t *out, const char *detail)
{
    sl_mcp_call_verdict_free (out);
    out->outcome = SL_MCP_CALL_FAILED;
    out->detail = sl_xstrdup (detail);
    return out->outcome;
}

sl_mcp_call_outcome_t
sl_mcp_leg_read_call (int status, sl_str_t answer, const char *server, const char *tool,
                      sl_str_t sent, sl_mcp_call_verdict_t *out)
{
    memset (out, 0, sizeof *out);
    json_t *root = answer.ptr ? json_loadb (answer.ptr, answer.len, 0, NULL) : NULL;
    const json_t *error = json_object_get (root, "error");
    if (status != 200 || !json_is_object (root) || error) {
        const json_t *message = json_object_get (error, "message");
        s_failed (out, json_is_string (message) ? json_string_value (message)
                     : status != 200 ? "the pipeline answered with an error"
                     : "the pipeline's answer is not JSON");
        json_decref (root);
        return out->outcome;
    }
    const json_t *message = json_object_get (json_array_get (json_object_get (root, "choices"), 0), "message");
    const json_t *calls = json_object_get (message, "tool_calls");
    const json_t *content = json_object_get (message, "content");
    if (json_array_size (calls) == 0) {
        if (json_is_string (content) && json_string_length (content) > 0) {
            out->outcome = SL_MCP_CALL_BLOCKED;
            out->notice = sl_xstrdup (json_string_value (content));
        }
        else
            s_failed (out, "the pipeline's answer holds neither the call nor a notice");
        json_decref (root);
        return out->outcome;
    }
    sl_buf_t want = { 0 };
    sl_mcp_policy_name (server, tool, &want);
    const json_t *function = json_object_get (json_array_get (calls, 0), "function");
    const json_t *name = json_object_get (function, "name");
    const json_t *arguments = json_object_get (function, "arguments");
    json_t *released = json_is_string (arguments)
                     ? json_loadb (json_string_value (arguments), json_string_length (arguments), 0, NULL) : NULL;
    if (json_array_size (calls) != 1)
        s_failed (out, "the pipeline's answer holds more than one call");
    else if (!json_is_string (name) || strcmp (json_string_value (name), sl_buf_cstr (&want)) != 0)
        s_failed (out, "the pipeline's answer calls another tool");
    else if (!json_is_object (released))
        s_failed (out, "the released arguments are not an object");
    else {
        json_t *original = sent.ptr ? json_loadb (sent.ptr, sent.len, 0, NULL) : NULL;
        out->outcome = SL_MCP_CALL_RELEASED;
        out->arguments = sl_xstrdup (json_string_value (arguments));
        out->rewritten = !original || !json_equal (original, released);
        json_decref (original);
    }
    json_decref (released);
    sl_buf_free (&want);
    json_decref (root);
    return out->outcome;
}

//  The last message of a judged request, or NULL.
static const json_t *
s_last_message (const json_t *root)
{
    const json_t *messages = json_object_get (root, "messages");
    size_t n = json_array_size (messages);
    return n ? json_array_get (messages, n - 1) : NULL;
}

//  Does the judged part at index i of parts still say text (len bytes)?
//  Changed parts are copied into *changed_text (borrowed from the tree).
static bool
s_part_same (const json_t *parts, size_t i, const char *text, size_t len, const json_t **judged)
{
    *judged = json_object_get (json_array_get (parts, i), "text");
    return json_is_string (*judged) && json_string_length (*judged) == len
        && memcmp (json_string_value (*judged), text, len) == 0;
}

int
sl_mcp_leg_read_result (sl_str_t judged, const json_t *result, json_t **out, bool *blocked)
{
    *out = NULL;
    *blocked = false;
    json_t *root = judged.ptr ? json_loadb (judged.ptr, judged.len, 0, NULL) : NULL;
    const json_t *last = s_last_message (root);
    const json_t *role = json_object_get (last, "role");
    const json_t *parts = json_object_get (last, "content");
    if (!json_is_object (result) || !json_is_string (role) || strcmp (json_string_value (role), "tool") != 0) {
        json_decref (root);
        return -1;
    }
    if (json_is_string (parts)) {
        //  A blocked result: its content replaced by the rule's notice.
        *out = json_pack ("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                          json_string_value (parts), "isError", 1);
        *blocked = true;
        json_decref (root);
        return 0;
    }
    if (!json_is_array (parts)) {
        json_decref (root);
        return -1;
    }
    //  Walk the result as it was sent: part i is the i-th text.
    json_t *copy = json_deep_copy (result);
    bool changed = false;
    size_t part = 0, i, len = 0;
    json_t *item;
    json_t *content = json_object_get (copy, "content");
    int rc = 0;
    json_array_foreach (content, i, item) {
        const char *text = s_item_text (item, &len);
        if (!text)
            continue;
        const json_t *now;
        if (!s_part_same (parts, part++, text, len, &now)) {
            if (!json_is_string (now)) {
                rc = -1;
                break;
            }
            changed = true;
            json_t *holder = json_is_string (json_object_get (item, "text")) ? item
                           : json_object_get (item, "resource");
            json_object_set (holder, "text", (json_t *) now);
        }
    }
    const json_t *structured = json_object_get (copy, "structuredContent");
    if (rc == 0 && structured) {
        char *text = json_dumps (structured, JSON_COMPACT | JSON_ENCODE_ANY);
        const json_t *now;
        if (!text || !s_part_same (parts, part++, text, strlen (text), &now))
            changed = true;
        free (text);
    }
    if (rc == 0 && part == 0)
        part = 1;                       //  the empty stand-in part
    if (rc == 0 && json_array_size (parts) != part)
        rc = -1;                        //  not the request that was sent
    if (rc == 0 && changed)
        json_object_del (copy, "structuredContent");
    json_decref (root);
    if (rc != 0) {
        json_decref (copy);
        return -1;
    }
    *out = copy;
    return 0;
}

int
sl_mcp_leg_read_list (sl_str_t judged, const char *server, const json_t *tools, json_t **out)
{
    *out = NULL;
    json_t *root = judged.ptr ? json_loadb (judged.ptr, judged.len, 0, NULL) : NULL;
    if (!json_is_object (root) || !json_is_array (tools)) {
        json_decref (root);
        return -1;
    }
    const json_t *left = json_object_get (root, "tools");
    *out = json_array ();
    sl_buf_t name = { 0 };
    size_t i, k;
    const json_t *definition, *tool;
    json_array_foreach (tools, i, definition) {
        const json_t *tname = json_object_get (definition, "name");
        if (!json_is_string (tname))
            continue;
        sl_buf_reset (&name);
        sl_mcp_policy_name (server, json_string_value (tname), &name);
        json_array_foreach (left, k, tool) {
            const json_t *lname = json_object_get (json_object_get (tool, "function"), "name");
            if (json_is_string (lname) && strcmp (json_string_value (lname), sl_buf_cstr (&name)) == 0) {
                json_array_append (*out, (json_t *) definition);
                break;
            }
        }
    }
    sl_buf_free (&name);
    json_decref (root);
    return 0;
}
