/*  sl_mock_anthropic.c - the mock as an Anthropic Messages provider (see
    sl_mock_provider.h).

    POST .../messages; max tokens in max_tokens (or max_completion_tokens).
    The API refuses a conversation whose roles are not user and assistant,
    or system (a mid-conversation system message: not first, right after a
    user turn, followed by an assistant turn or last, text only); whose
    block types it does not know; whose tool_use lacks an id of
    [A-Za-z0-9_-], a name or an object input; whose tool_results answering
    an assistant turn's tool_use blocks do not come first in the next user
    turn, one for each and no other; whose tool_results reference (tool
    search's tool_reference blocks) a tool the request does not define;
    or whose text blocks are empty.
    Streams are message_start, content blocks and message_delta /
    message_stop events; a whole answer is one message.

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

static bool
s_tool_use_id (const char *id)
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
    return sl_mock_text (json_object_get (json_array_get (content, json_array_size (content) - 1), "type"));
}

//  A system message inside messages (mid-conversation system messages):
//  not first, right after a user turn (or an assistant turn that ends in
//  a server tool's use), followed by an assistant turn or nothing, text
//  only. NULL when it may stand at index i, else why not.
static const char *
s_system_message (json_t *messages, size_t i)
{
    if (i == 0)
        return "a system message cannot be the first message; use the top-level system parameter";
    json_t *before = json_array_get (messages, i - 1), *after = json_array_get (messages, i + 1);
    if (!sl_mock_is (json_object_get (before, "role"), "user")
    &&  !(sl_mock_is (json_object_get (before, "role"), "assistant")
          && strcmp (s_last_block_type (before), "server_tool_use") == 0))
        return "a system message must immediately follow a user message (or an assistant message that ends in a "
               "server tool use)";
    if (after && !sl_mock_is (json_object_get (after, "role"), "assistant"))
        return "a system message must be the last message or be followed by an assistant message";
    json_t *content = json_object_get (json_array_get (messages, i), "content");
    if (json_is_string (content))
        return json_string_length (content) ? NULL : "a system message's content must be non-empty";
    if (!json_is_array (content) || json_array_size (content) == 0)
        return "a system message's content is a string or a non-empty list of text blocks";
    size_t k;
    json_t *b;
    json_array_foreach (content, k, b)
        if (!sl_mock_is (json_object_get (b, "type"), "text") || !*sl_mock_text (json_object_get (b, "text")))
            return "a system message takes non-empty text blocks only";
    return NULL;
}

//  A tool_reference block in a tool result (tool search) names a tool
//  the request defines (with defer_loading, usually): NULL, or the name
//  it references that no definition has.
static const char *
s_unknown_reference (json_t *root, json_t *result)
{
    size_t i, t;
    json_t *b, *tool;
    json_array_foreach (json_object_get (result, "content"), i, b) {
        if (!sl_mock_is (json_object_get (b, "type"), "tool_reference"))
            continue;
        const char *name = sl_mock_text (json_object_get (b, "tool_name"));
        bool defined = false;
        json_array_foreach (json_object_get (root, "tools"), t, tool)
            defined |= sl_mock_is (json_object_get (tool, "name"), name);
        if (!defined)
            return name;
    }
    return NULL;
}

//  What the API refuses of a conversation (see above).
int
sl_mock_anthropic_check (json_t *root, sl_mock_why_t *why)
{
    static const char *const known [] = {
        "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
        "server_tool_use", "web_search_tool_result", "search_result", NULL
    };
    json_t *messages = json_object_get (root, "messages");
    if (!json_is_array (messages))
        return sl_mock_refuse (why, "messages: an array is required");
    json_t *system = json_object_get (root, "system");
    if (system && !json_is_string (system) && !json_is_array (system))
        return sl_mock_refuse (why, "system: a string or text blocks");
    json_t *open = NULL;                //  tool_use ids the next user turn must answer
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        json_t *role = json_object_get (m, "role");
        if (sl_mock_is (role, "system")) {
            const char *misplaced = s_system_message (messages, i);
            if (misplaced) {
                json_decref (open);
                return sl_mock_refuse (why, "messages.%zu: %s", i, misplaced);
            }
            continue;
        }
        if (!sl_mock_is (role, "user") && !sl_mock_is (role, "assistant")) {
            json_decref (open);
            return sl_mock_refuse (why, "messages.%zu.role: user, assistant or system, not '%s'", i,
                                   sl_mock_text (role));
        }
        json_t *content = json_object_get (m, "content");
        if (json_is_string (content)) {
            if (open && json_array_size (open)) {
                int rc = sl_mock_refuse (why, "messages.%zu: tool_use ids were found without tool_result blocks "
                                              "immediately after: %s", i, sl_mock_text (json_array_get (open, 0)));
                json_decref (open);
                return rc;
            }
            continue;
        }
        if (!json_is_array (content) || json_array_size (content) == 0) {
            json_decref (open);
            return sl_mock_refuse (why, "messages.%zu.content: a string or a non-empty list of blocks", i);
        }
        bool results_done = false;
        json_t *next_open = sl_mock_is (role, "assistant") ? json_array () : NULL;
        size_t k;
        json_t *b;
        json_array_foreach (content, k, b) {
            const char *type = sl_mock_text (json_object_get (b, "type"));
            bool ok = false;
            for (int t = 0; known [t]; t++)
                ok |= strcmp (type, known [t]) == 0;
            if (!ok) {
                json_decref (next_open);
                json_decref (open);
                return sl_mock_refuse (why, "messages.%zu.content.%zu: unknown block type '%s'", i, k, type);
            }
            if (strcmp (type, "text") == 0 && !*sl_mock_text (json_object_get (b, "text"))) {
                json_decref (next_open);
                json_decref (open);
                return sl_mock_refuse (why, "messages.%zu.content.%zu: text content blocks must be non-empty", i, k);
            }
            if (strcmp (type, "tool_use") == 0) {
                if (!next_open || !s_tool_use_id (sl_mock_text (json_object_get (b, "id")))
                ||  !json_is_string (json_object_get (b, "name")) || !json_is_object (json_object_get (b, "input"))) {
                    json_decref (next_open);
                    json_decref (open);
                    return sl_mock_refuse (why, "messages.%zu.content.%zu: a tool_use needs an id matching "
                                                "^[a-zA-Z0-9_-]+$, a name and an object input, in an assistant turn",
                                           i, k);
                }
                json_array_append (next_open, json_object_get (b, "id"));
            }
            if (strcmp (type, "tool_result") == 0) {
                const char *id = sl_mock_text (json_object_get (b, "tool_use_id"));
                if (results_done || !open || !sl_mock_listed (open, id)) {
                    json_decref (next_open);
                    json_decref (open);
                    return sl_mock_refuse (why, "messages.%zu.content.%zu: unexpected tool_use_id found in tool_result "
                                                "blocks: %s. Each tool_result block must have a corresponding tool_use "
                                                "block in the previous message, and come first", i, k, id);
                }
                sl_mock_unlist (open, id);
                const char *unknown = s_unknown_reference (root, b);
                if (unknown) {
                    json_decref (next_open);
                    json_decref (open);
                    return sl_mock_refuse (why, "messages.%zu.content.%zu: tool_reference names '%s', which is not "
                                                "among the request's tools", i, k, unknown);
                }
            }
            else
                results_done = true;
        }
        if (open && json_array_size (open)) {
            json_decref (next_open);
            json_decref (open);
            return sl_mock_refuse (why, "messages.%zu: tool_use ids were found without tool_result blocks "
                                        "immediately after", i);
        }
        json_decref (open);
        open = next_open;
    }
    json_decref (open);
    return 0;
}

//  Claude in the clouds: the beta a body field needs.
#define S_BETA_TOOL_SEARCH "tool-search-tool-2025-10-19"
#define S_BETA_CONTEXT_MANAGEMENT "context-management-2025-06-27"
#define S_BETAS_SHOWN_MAX 512           //  the refused names a Vertex AI error lists, bytes

//  Is name among the strings of names?
static bool
s_named (json_t *names, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach (names, i, v)
        if (sl_mock_is (v, name))
            return true;
    return false;
}

int
sl_mock_anthropic_check_betas (json_t *root, json_t *names, const char *const *taken, bool header,
                               sl_mock_why_t *why)
{
    char refused [S_BETAS_SHOWN_MAX] = "";
    size_t used = 0, i;
    json_t *v;
    json_array_foreach (names, i, v) {
        bool known = false;
        for (int k = 0; taken [k] && !known; k++)
            known = sl_mock_is (v, taken [k]);
        if (known)
            continue;
        if (!header)
            return sl_mock_refuse (why, "invalid beta flag");
        int n = snprintf (refused + used, sizeof refused - used, "%s`%s`", used ? ", " : "", sl_mock_text (v));
        used = n > 0 && (size_t) n < sizeof refused - used ? used + (size_t) n : used;
    }
    if (used)
        return sl_mock_refuse (why, "Unexpected value(s) %s for the `anthropic-beta` header. Please consult our "
                                    "documentation at docs.anthropic.com or try again without the header.", refused);
    json_t *tool;
    json_array_foreach (json_object_get (root, "tools"), i, tool)
        if (json_object_get (tool, "defer_loading") && !s_named (names, S_BETA_TOOL_SEARCH))
            return sl_mock_refuse (why, "tools.%zu.custom.defer_loading: Extra inputs are not permitted", i);
    if (json_object_get (root, "context_management") && !s_named (names, S_BETA_CONTEXT_MANAGEMENT))
        return sl_mock_refuse (why, "context_management: Extra inputs are not permitted");
    return 0;
}

//  The last turn's tool result, and the tool that gave it.
bool
sl_mock_anthropic_result (json_t *root, sl_mock_result_t *out)
{
    json_t *messages = json_object_get (root, "messages");
    //  The last turn: a system message may come after it.
    size_t n = json_array_size (messages);
    while (n > 1 && sl_mock_is (json_object_get (json_array_get (messages, n - 1), "role"), "system"))
        n--;
    json_t *last = json_array_get (messages, n - 1);
    size_t k;
    json_t *b, *found = NULL;
    json_array_foreach (json_object_get (last, "content"), k, b)
        if (sl_mock_is (json_object_get (b, "type"), "tool_result"))
            found = b;
    if (!found)
        return false;
    const char *id = sl_mock_text (json_object_get (found, "tool_use_id"));
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m)
        json_array_foreach (json_object_get (m, "content"), k, b)
            if (sl_mock_is (json_object_get (b, "type"), "tool_use") && sl_mock_is (json_object_get (b, "id"), id))
                sl_mock_copy (out->name, sizeof out->name, sl_mock_text (json_object_get (b, "name")));
    json_t *content = json_object_get (found, "content");
    sl_mock_copy (out->text, sizeof out->text, json_is_string (content) ? json_string_value (content)
                                             : sl_mock_text (json_object_get (json_array_get (content, 0), "text")));
    return true;
}

//  A user turn with a tool_result block.
bool
sl_mock_anthropic_carries_result (json_t *message)
{
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get (message, "content"), i, part)
        if (json_is_string (json_object_get (part, "type"))
        &&  strcmp (json_string_value (json_object_get (part, "type")), "tool_result") == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Answers

static sl_buf_t *
s_event (sl_mock_out_t *o, const char *type)
{
    sl_buf_t *e = sl_mock_event (o);
    sl_buf_printf (e, "event: %s\ndata: {\"type\":\"%s\"", type, type);
    return e;
}

static void
s_close (sl_mock_out_t *o)
{
    if (o->open == SL_MOCK_OPEN_NONE)
        return;
    sl_buf_t *e = s_event (o, "content_block_stop");
    sl_buf_printf (e, ",\"index\":%d}\n\n", o->block - 1);
    o->open = SL_MOCK_OPEN_NONE;
}

static void
s_begin (sl_mock_out_t *o)
{
    sl_buf_t *e = s_event (o, "message_start");
    sl_buf_printf (e, ",\"message\":{\"id\":\"msg_mock%016llx\",\"type\":\"message\",\"role\":\"assistant\","
                      "\"model\":", (unsigned long long) o->hash);
    sl_mock_put_model (o, e);
    sl_buf_puts (e, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                    "\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n");
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    sl_buf_t *e;
    if (o->open != SL_MOCK_OPEN_TEXT) {
        s_close (o);
        e = s_event (o, "content_block_start");
        sl_buf_printf (e, ",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", o->block++);
        if (o->block == 1)
            sl_buf_puts (sl_mock_event (o), "event: ping\ndata: {\"type\": \"ping\"}\n\n");
        o->open = SL_MOCK_OPEN_TEXT;
    }
    e = s_event (o, "content_block_delta");
    sl_buf_printf (e, ",\"index\":%d,\"delta\":{\"type\":\"text_delta\",\"text\":", o->block - 1);
    sl_mock_put_text (o, e, sl_str (text));
    sl_buf_puts (e, "}}\n\n");
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    (void) index;
    s_close (o);
    sl_buf_t *e = s_event (o, "content_block_start");
    sl_buf_printf (e, ",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_%s\","
                      "\"name\":\"%s\",\"input\":{}}}\n\n", o->block++, id, name);
    o->open = SL_MOCK_OPEN_TOOL;
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    (void) index;
    sl_buf_t *e = s_event (o, "content_block_delta");
    sl_buf_printf (e, ",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":", o->block - 1);
    sl_mock_put_text (o, e, sl_str (fragment));
    sl_buf_puts (e, "}}\n\n");
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    (void) input;
    s_close (o);
    const char *stop = strcmp (reason, "tool_calls") == 0 ? "tool_use"
                     : strcmp (reason, "length") == 0 ? "max_tokens" : "end_turn";
    sl_buf_t *e = s_event (o, "message_delta");
    sl_buf_printf (e, ",\"delta\":{\"stop_reason\":\"%s\",\"stop_sequence\":null},"
                      "\"usage\":{\"output_tokens\":%d}}\n\n", stop, output);
    sl_buf_puts (s_event (o, "message_stop"), "}\n\n");
}

static void
s_fail (sl_mock_out_t *o)
{
    sl_buf_puts (s_event (o, "error"),
                 ",\"error\":{\"type\":\"overloaded_error\",\"message\":\"The mock upstream failed mid-stream.\"}}\n\n");
}

static void
s_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) status;
    sl_buf_printf (out, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":", type);
    sl_json_put_str (out, message, strlen (message));
    sl_buf_puts (out, "}}");
}

void
sl_mock_anthropic_whole (const char *model, const char *text, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"id\":\"msg_mockjudge\",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    sl_json_put_str (out, model, strlen (model));
    sl_buf_puts (out, ",\"content\":[{\"type\":\"text\",\"text\":");
    sl_json_put_str (out, text, strlen (text));
    sl_buf_puts (out, "}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":50,\"output_tokens\":20}}");
}

const sl_mock_render_t sl_mock_anthropic_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .finish = s_finish,
    .fail = s_fail,
    .error_body = s_error_body,
    .rate_limited = "rate_limit_error",
    .unavailable = "overloaded_error",
    .failed = "api_error",
    .not_found = "not_found_error",
    .bad_request = "invalid_request_error",
};

const char *const sl_mock_anthropic_max_tokens [] = { "max_tokens", "max_completion_tokens", NULL };

const sl_mock_provider_t sl_mock_anthropic = {
    .dialect = SL_DIALECT_ANTHROPIC,
    .path = "/messages",
    .max_tokens = sl_mock_anthropic_max_tokens,
    .check = sl_mock_anthropic_check,
    .result = sl_mock_anthropic_result,
    .shape = { .schema = "input_schema", .turns = "messages", .carries_result = sl_mock_anthropic_carries_result },
    .render = &sl_mock_anthropic_render,
    .whole = sl_mock_anthropic_whole,
};
