/*  sl_mock_check.c - requests read as each provider reads them (see
    sl_mock_check.h).

    One reader per provider dialect, in a table indexed by the wire id: the
    mock is a provider of each dialect, and this is what it knows of each
    one's requests. Requests are read with jansson.
*/
#include "services/mock/sl_mock_check.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"

typedef struct {
    char *why;
    size_t size;
} s_ctx_t;

static int
s_bad (s_ctx_t *ctx, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

static int
s_bad (s_ctx_t *ctx, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (ctx->why, ctx->size, format, args);
    va_end (args);
    return -1;
}

static bool
s_is (json_t *value, const char *text)
{
    return json_is_string (value) && strcmp (json_string_value (value), text) == 0;
}

static const char *
s_text (json_t *value)
{
    return json_is_string (value) ? json_string_value (value) : "";
}

//  Is id among the strings of list (a JSON array)?
static bool
s_listed (json_t *list, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach (list, i, v)
        if (s_is (v, id))
            return true;
    return false;
}

static void
s_copy (char *dst, size_t size, const char *src)
{
    snprintf (dst, size, "%s", src ? src : "");
}

//  --------------------------------------------------------------------------
//  OpenAI Chat Completions

static int
s_openai_check (json_t *root, s_ctx_t *ctx)
{
    json_t *messages = json_object_get (root, "messages");
    if (!json_is_array (messages))
        return s_bad (ctx, "messages: an array is required");
    json_t *open = NULL;                //  ids of the calls waiting for tool messages
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        json_t *role = json_object_get (m, "role");
        if (s_is (role, "tool")) {
            const char *id = s_text (json_object_get (m, "tool_call_id"));
            if (!open || !s_listed (open, id)) {
                json_decref (open);
                return s_bad (ctx, "messages[%zu]: a tool message answers '%s', which no preceding assistant "
                                   "message called", i, id);
            }
            for (size_t k = 0; k < json_array_size (open); k++)
                if (s_is (json_array_get (open, k), id))
                    json_array_remove (open, k);
            continue;
        }
        if (open && json_array_size (open)) {
            int rc = s_bad (ctx, "messages[%zu]: an assistant message with tool_calls must be followed by tool "
                                 "messages answering each tool_call_id ('%s' is not answered)", i,
                            s_text (json_array_get (open, 0)));
            json_decref (open);
            return rc;
        }
        json_decref (open);
        open = NULL;
        if (!(s_is (role, "system") || s_is (role, "developer") || s_is (role, "user") || s_is (role, "assistant")))
            return s_bad (ctx, "messages[%zu]: unknown role '%s'", i, s_text (role));
        json_t *calls = json_object_get (m, "tool_calls");
        if (!calls || !s_is (role, "assistant"))
            continue;
        open = json_array ();
        size_t k;
        json_t *call;
        json_array_foreach (calls, k, call) {
            json_t *fn = json_object_get (call, "function");
            if (!json_is_string (json_object_get (call, "id")) || !s_is (json_object_get (call, "type"), "function")
            ||  !json_is_string (json_object_get (fn, "name")) || !json_is_string (json_object_get (fn, "arguments"))) {
                json_decref (open);
                return s_bad (ctx, "messages[%zu].tool_calls[%zu]: id, type function, function.name and string "
                                   "function.arguments are required", i, k);
            }
            json_array_append (open, json_object_get (call, "id"));
        }
    }
    json_decref (open);
    return 0;
}

//  The name of the call with this id in the messages.
static const char *
s_openai_name (json_t *messages, const char *id)
{
    size_t i, k;
    json_t *m, *call;
    json_array_foreach (messages, i, m)
        json_array_foreach (json_object_get (m, "tool_calls"), k, call)
            if (s_is (json_object_get (call, "id"), id))
                return s_text (json_object_get (json_object_get (call, "function"), "name"));
    return "";
}

static bool
s_openai_result (json_t *root, sl_mock_result_t *out)
{
    json_t *messages = json_object_get (root, "messages");
    json_t *last = json_array_get (messages, json_array_size (messages) - 1);
    if (!s_is (json_object_get (last, "role"), "tool"))
        return false;
    s_copy (out->name, sizeof out->name, s_openai_name (messages, s_text (json_object_get (last, "tool_call_id"))));
    json_t *content = json_object_get (last, "content");
    s_copy (out->text, sizeof out->text, json_is_string (content) ? json_string_value (content)
                                        : s_text (json_object_get (json_array_get (content, 0), "text")));
    return true;
}

//  --------------------------------------------------------------------------
//  Anthropic Messages

static bool
s_anthropic_id (const char *id)
{
    if (!*id)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return false;
    return true;
}

//  The type of the last block of a message's content ("" for a string).
static const char *
s_last_block_type (json_t *message)
{
    json_t *content = json_object_get (message, "content");
    return s_text (json_object_get (json_array_get (content, json_array_size (content) - 1), "type"));
}

//  A system message inside messages (mid-conversation system messages):
//  not first, right after a user turn (or an assistant turn that ends in
//  a server tool's use), followed by an assistant turn or nothing, text
//  only. NULL when it may stand at index i, else why not.
static const char *
s_anthropic_system (json_t *messages, size_t i)
{
    if (i == 0)
        return "a system message cannot be the first message; use the top-level system parameter";
    json_t *before = json_array_get (messages, i - 1), *after = json_array_get (messages, i + 1);
    if (!s_is (json_object_get (before, "role"), "user")
    &&  !(s_is (json_object_get (before, "role"), "assistant") && strcmp (s_last_block_type (before), "server_tool_use") == 0))
        return "a system message must immediately follow a user message (or an assistant message that ends in a "
               "server tool use)";
    if (after && !s_is (json_object_get (after, "role"), "assistant"))
        return "a system message must be the last message or be followed by an assistant message";
    json_t *content = json_object_get (json_array_get (messages, i), "content");
    if (json_is_string (content))
        return json_string_length (content) ? NULL : "a system message's content must be non-empty";
    if (!json_is_array (content) || json_array_size (content) == 0)
        return "a system message's content is a string or a non-empty list of text blocks";
    size_t k;
    json_t *b;
    json_array_foreach (content, k, b)
        if (!s_is (json_object_get (b, "type"), "text") || !*s_text (json_object_get (b, "text")))
            return "a system message takes non-empty text blocks only";
    return NULL;
}

static int
s_anthropic_check (json_t *root, s_ctx_t *ctx)
{
    static const char *const known [] = {
        "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
        "server_tool_use", "web_search_tool_result", "search_result", NULL
    };
    json_t *messages = json_object_get (root, "messages");
    if (!json_is_array (messages))
        return s_bad (ctx, "messages: an array is required");
    json_t *system = json_object_get (root, "system");
    if (system && !json_is_string (system) && !json_is_array (system))
        return s_bad (ctx, "system: a string or text blocks");
    json_t *open = NULL;                //  tool_use ids the next user turn must answer
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        json_t *role = json_object_get (m, "role");
        if (s_is (role, "system")) {
            const char *why = s_anthropic_system (messages, i);
            if (why) {
                json_decref (open);
                return s_bad (ctx, "messages.%zu: %s", i, why);
            }
            continue;
        }
        if (!s_is (role, "user") && !s_is (role, "assistant")) {
            json_decref (open);
            return s_bad (ctx, "messages.%zu.role: user, assistant or system, not '%s'", i, s_text (role));
        }
        json_t *content = json_object_get (m, "content");
        if (json_is_string (content)) {
            if (open && json_array_size (open)) {
                int rc = s_bad (ctx, "messages.%zu: tool_use ids were found without tool_result blocks "
                                     "immediately after: %s", i, s_text (json_array_get (open, 0)));
                json_decref (open);
                return rc;
            }
            continue;
        }
        if (!json_is_array (content) || json_array_size (content) == 0) {
            json_decref (open);
            return s_bad (ctx, "messages.%zu.content: a string or a non-empty list of blocks", i);
        }
        bool results_done = false;
        json_t *next_open = s_is (role, "assistant") ? json_array () : NULL;
        size_t k;
        json_t *b;
        json_array_foreach (content, k, b) {
            const char *type = s_text (json_object_get (b, "type"));
            bool ok = false;
            for (int t = 0; known [t]; t++)
                ok |= strcmp (type, known [t]) == 0;
            if (!ok) {
                json_decref (next_open);
                json_decref (open);
                return s_bad (ctx, "messages.%zu.content.%zu: unknown block type '%s'", i, k, type);
            }
            if (strcmp (type, "text") == 0 && !*s_text (json_object_get (b, "text"))) {
                json_decref (next_open);
                json_decref (open);
                return s_bad (ctx, "messages.%zu.content.%zu: text content blocks must be non-empty", i, k);
            }
            if (strcmp (type, "tool_use") == 0) {
                if (!next_open || !s_anthropic_id (s_text (json_object_get (b, "id")))
                ||  !json_is_string (json_object_get (b, "name")) || !json_is_object (json_object_get (b, "input"))) {
                    json_decref (next_open);
                    json_decref (open);
                    return s_bad (ctx, "messages.%zu.content.%zu: a tool_use needs an id matching ^[a-zA-Z0-9_-]+$, "
                                       "a name and an object input, in an assistant turn", i, k);
                }
                json_array_append (next_open, json_object_get (b, "id"));
            }
            if (strcmp (type, "tool_result") == 0) {
                const char *id = s_text (json_object_get (b, "tool_use_id"));
                if (results_done || !open || !s_listed (open, id)) {
                    json_decref (next_open);
                    json_decref (open);
                    return s_bad (ctx, "messages.%zu.content.%zu: unexpected tool_use_id found in tool_result "
                                       "blocks: %s. Each tool_result block must have a corresponding tool_use "
                                       "block in the previous message, and come first", i, k, id);
                }
                for (size_t n = 0; n < json_array_size (open); n++)
                    if (s_is (json_array_get (open, n), id))
                        json_array_remove (open, n);
            }
            else
                results_done = true;
        }
        if (open && json_array_size (open)) {
            json_decref (next_open);
            json_decref (open);
            return s_bad (ctx, "messages.%zu: tool_use ids were found without tool_result blocks immediately "
                               "after", i);
        }
        json_decref (open);
        open = next_open;
    }
    json_decref (open);
    return 0;
}

static bool
s_anthropic_result (json_t *root, sl_mock_result_t *out)
{
    json_t *messages = json_object_get (root, "messages");
    //  The last turn: a system message may come after it.
    size_t n = json_array_size (messages);
    while (n > 1 && s_is (json_object_get (json_array_get (messages, n - 1), "role"), "system"))
        n--;
    json_t *last = json_array_get (messages, n - 1);
    size_t k;
    json_t *b, *found = NULL;
    json_array_foreach (json_object_get (last, "content"), k, b)
        if (s_is (json_object_get (b, "type"), "tool_result"))
            found = b;
    if (!found)
        return false;
    const char *id = s_text (json_object_get (found, "tool_use_id"));
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m)
        json_array_foreach (json_object_get (m, "content"), k, b)
            if (s_is (json_object_get (b, "type"), "tool_use") && s_is (json_object_get (b, "id"), id))
                s_copy (out->name, sizeof out->name, s_text (json_object_get (b, "name")));
    json_t *content = json_object_get (found, "content");
    s_copy (out->text, sizeof out->text, json_is_string (content) ? json_string_value (content)
                                        : s_text (json_object_get (json_array_get (content, 0), "text")));
    return true;
}

//  --------------------------------------------------------------------------
//  OpenAI Responses

static int
s_responses_check (json_t *root, s_ctx_t *ctx)
{
    json_t *input = json_object_get (root, "input");
    if (json_is_string (input))
        return 0;
    if (!json_is_array (input))
        return s_bad (ctx, "input: a string or a list of items");
    json_t *calls = json_array ();
    size_t i;
    json_t *item;
    int rc = 0;
    json_array_foreach (input, i, item) {
        json_t *type = json_object_get (item, "type");
        json_t *role = json_object_get (item, "role");
        if (json_is_string (role) && (!type || s_is (type, "message"))) {
            if (!(s_is (role, "user") || s_is (role, "assistant") || s_is (role, "system") || s_is (role, "developer")))
                rc = s_bad (ctx, "input[%zu].role: unknown role '%s'", i, s_text (role));
        }
        else
        if (s_is (type, "function_call")) {
            if (!json_is_string (json_object_get (item, "call_id")) || !json_is_string (json_object_get (item, "name"))
            ||  !json_is_string (json_object_get (item, "arguments")))
                rc = s_bad (ctx, "input[%zu]: a function_call needs call_id, name and string arguments", i);
            json_array_append (calls, json_object_get (item, "call_id"));
        }
        else
        if (s_is (type, "function_call_output")) {
            if (!s_listed (calls, s_text (json_object_get (item, "call_id"))))
                rc = s_bad (ctx, "input[%zu]: No tool call found for function call output with call_id %s", i,
                            s_text (json_object_get (item, "call_id")));
        }
        else
        if (!s_is (type, "reasoning"))
            rc = s_bad (ctx, "input[%zu]: unknown item type '%s'", i, s_text (type));
        if (rc)
            break;
    }
    json_decref (calls);
    return rc;
}

static bool
s_responses_result (json_t *root, sl_mock_result_t *out)
{
    json_t *input = json_object_get (root, "input");
    json_t *last = json_array_get (input, json_array_size (input) - 1);
    if (!s_is (json_object_get (last, "type"), "function_call_output"))
        return false;
    const char *id = s_text (json_object_get (last, "call_id"));
    size_t i;
    json_t *item;
    json_array_foreach (input, i, item)
        if (s_is (json_object_get (item, "type"), "function_call") && s_is (json_object_get (item, "call_id"), id))
            s_copy (out->name, sizeof out->name, s_text (json_object_get (item, "name")));
    json_t *output = json_object_get (last, "output");
    s_copy (out->text, sizeof out->text, json_is_string (output) ? json_string_value (output)
                                        : s_text (json_object_get (json_array_get (output, 0), "text")));
    return true;
}

//  --------------------------------------------------------------------------
//  Gemini

static int
s_gemini_check (json_t *root, s_ctx_t *ctx)
{
    static const char *const known [] = {
        "text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
        "codeExecutionResult", NULL
    };
    json_t *contents = json_object_get (root, "contents");
    if (!json_is_array (contents))
        return s_bad (ctx, "contents: a list is required");
    json_t *calls = NULL;               //  names the next user content must answer
    size_t i;
    json_t *c;
    json_array_foreach (contents, i, c) {
        json_t *role = json_object_get (c, "role");
        if (role && !s_is (role, "user") && !s_is (role, "model")) {
            json_decref (calls);
            return s_bad (ctx, "contents[%zu].role: user or model, not '%s'", i, s_text (role));
        }
        json_t *answered = json_array ();
        json_t *next = s_is (role, "model") ? json_array () : NULL;
        size_t k;
        json_t *p;
        int rc = 0;
        json_array_foreach (json_object_get (c, "parts"), k, p) {
            int fields = 0;
            for (int f = 0; known [f]; f++)
                fields += json_object_get (p, known [f]) != NULL;
            if (fields != 1)
                rc = s_bad (ctx, "contents[%zu].parts[%zu]: one of text, inlineData, functionCall, "
                                 "functionResponse, ... is required", i, k);
            json_t *call = json_object_get (p, "functionCall");
            json_t *response = json_object_get (p, "functionResponse");
            if (call) {
                if (!next || !json_is_string (json_object_get (call, "name"))
                ||  (json_object_get (call, "args") && !json_is_object (json_object_get (call, "args"))))
                    rc = s_bad (ctx, "contents[%zu].parts[%zu]: a functionCall of the model needs a name and "
                                     "object args", i, k);
                else
                    json_array_append (next, json_object_get (call, "name"));
            }
            if (response) {
                if (!json_is_string (json_object_get (response, "name"))
                ||  !json_is_object (json_object_get (response, "response")))
                    rc = s_bad (ctx, "contents[%zu].parts[%zu]: a functionResponse needs a name and an object "
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
                ok = s_listed (calls, s_text (json_array_get (answered, n)));
            if (!ok)
                rc = s_bad (ctx, "contents[%zu]: Please ensure that the number of function response parts is "
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

static bool
s_gemini_result (json_t *root, sl_mock_result_t *out)
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
    s_copy (out->name, sizeof out->name, s_text (json_object_get (found, "name")));
    json_t *response = json_object_get (found, "response");
    json_t *output = json_object_get (response, "output");
    if (!output)
        output = json_object_get (response, "result");
    if (json_is_string (output))
        s_copy (out->text, sizeof out->text, json_string_value (output));
    else {
        char *text = json_dumps (response, JSON_COMPACT);
        s_copy (out->text, sizeof out->text, text);
        free (text);
    }
    return true;
}

//  --------------------------------------------------------------------------

typedef struct {
    int (*check) (json_t *root, s_ctx_t *ctx);
    bool (*result) (json_t *root, sl_mock_result_t *out);
} s_reader_t;

//  The providers the mock plays, by wire id.
static const s_reader_t s_readers [SL_DIALECT_MAX] = {
    [SL_DIALECT_OPENAI] = { s_openai_check, s_openai_result },
    [SL_DIALECT_ANTHROPIC] = { s_anthropic_check, s_anthropic_result },
    [SL_DIALECT_RESPONSES] = { s_responses_check, s_responses_result },
    [SL_DIALECT_GEMINI] = { s_gemini_check, s_gemini_result },
};

int
sl_mock_check (int dialect, sl_str_t body, char *why, size_t size)
{
    s_ctx_t ctx = { why, size };
    if (dialect <= SL_DIALECT_NONE || dialect >= SL_DIALECT_MAX || !s_readers [dialect].check)
        return s_bad (&ctx, "the mock plays no provider of dialect %d", dialect);
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return s_bad (&ctx, "the body is not a JSON object");
    }
    int rc = s_readers [dialect].check (root, &ctx);
    json_decref (root);
    return rc;
}

bool
sl_mock_check_result (int dialect, sl_str_t body, sl_mock_result_t *out)
{
    memset (out, 0, sizeof *out);
    if (dialect <= SL_DIALECT_NONE || dialect >= SL_DIALECT_MAX || !s_readers [dialect].result)
        return false;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    bool found = root && s_readers [dialect].result (root, out);
    json_decref (root);
    return found;
}
