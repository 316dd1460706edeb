/*  sl_mock_bedrock.c - the mock as Amazon Bedrock: Converse and Claude's
    InvokeModelWithResponseStream (see sl_mock_provider.h).

    Both are POST .../model/{modelId}/<operation> (the model id
    percent-encoded in the path) and answer AWS's event stream
    (application/vnd.amazon.eventstream), framed with real CRCs by
    common/cloud/sl_evstream.

    Converse (.../converse-stream): the API refuses a body with a model or
    stream member (extraneous keys); messages that do not start with a
    user turn or do not alternate user and assistant; a content block
    other than text, image, document, toolUse, toolResult,
    reasoningContent, cachePoint; a blank text; a toolUse without a
    toolUseId of [a-zA-Z0-9_-]{1,64}, a name or an object input; a user
    turn whose toolResults are not exactly one for each toolUse of the
    assistant turn before it ("Expected toolResult blocks at
    messages.N.content for the following Ids"), or that answer none of
    them; toolUse or toolResult blocks without toolConfig. Its stream is
    messageStart, contentBlockStart (a tool call), contentBlockDelta,
    contentBlockStop, messageStop and metadata; a failure mid-stream is a
    modelStreamErrorException frame.

    Claude (.../invoke-with-response-stream): the Anthropic mock's checks,
    after refusing a body with model or stream, or without
    anthropic_version bedrock-2023-05-31; beta features are the body's
    anthropic_beta array, and a name Bedrock does not take is refused
    ("invalid beta flag", what Bedrock answers Claude Code's
    Anthropic-only ones), as is a field whose beta is not named
    (sl_mock_anthropic_check_betas); its stream is the Anthropic
    mock's events, each in a chunk frame ({"bytes": base64 of its JSON}).

    Tests: tests/unit/services/mock/test_sl_mock_provider.c and the
    conformance suite (tests/unit/common/dialects/test_dialects.c).
*/
#include <sodium.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/cloud/sl_evstream.h"
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

#define S_ID_MAX 64                     //  a toolUseId's longest

static bool
s_tool_use_id (const char *id)
{
    size_t n = strlen (id);
    if (!n || n > S_ID_MAX)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return false;
    return true;
}

//  The one member of a content block (Converse's blocks are unions).
static const char *
s_block_kind (json_t *block)
{
    void *it = json_object_iter (block);
    return it ? json_object_iter_key (it) : "";
}

static int
s_extraneous (json_t *root, sl_mock_why_t *why)
{
    static const char *const keys [] = { "model", "stream", NULL };
    for (int i = 0; keys [i]; i++)
        if (json_object_get (root, keys [i]))
            return sl_mock_refuse (why, "extraneous key [%s] is not permitted", keys [i]);
    return 0;
}

static int
s_converse_check (json_t *root, sl_mock_why_t *why)
{
    static const char *const known [] = {
        "text", "image", "document", "toolUse", "toolResult", "reasoningContent", "cachePoint", NULL
    };
    if (s_extraneous (root, why))
        return -1;
    json_t *messages = json_object_get (root, "messages");
    if (!json_is_array (messages) || !json_array_size (messages))
        return sl_mock_refuse (why, "messages: a non-empty array is required");
    bool tools = json_object_get (root, "toolConfig") != NULL;
    json_t *open = json_array ();       //  the toolUse ids the next turn must answer
    const char *last_role = "assistant";
    size_t i, k;
    json_t *m, *b;
    int rc = 0;
    json_array_foreach (messages, i, m) {
        const char *role = sl_mock_text (json_object_get (m, "role"));
        if (strcmp (role, "user") != 0 && strcmp (role, "assistant") != 0) {
            rc = sl_mock_refuse (why, "messages.%zu.role: user or assistant, not '%s'", i, role);
            break;
        }
        if (strcmp (role, last_role) == 0) {
            rc = sl_mock_refuse (why, i ? "A conversation must alternate between user and assistant roles"
                                        : "A conversation must start with a user message");
            break;
        }
        last_role = role;
        json_t *content = json_object_get (m, "content");
        if (!json_is_array (content) || !json_array_size (content)) {
            rc = sl_mock_refuse (why, "messages.%zu.content: a non-empty list of blocks is required", i);
            break;
        }
        json_t *calls = json_array ();
        json_t *answered = json_array ();
        json_array_foreach (content, k, b) {
            const char *kind = s_block_kind (b);
            bool ok = false;
            for (int t = 0; known [t]; t++)
                ok |= strcmp (kind, known [t]) == 0;
            if (!ok || json_object_size (b) != 1)
                rc = sl_mock_refuse (why, "messages.%zu.content.%zu: a block is one of text, image, document, toolUse, "
                                          "toolResult, reasoningContent, cachePoint", i, k);
            else
            if (strcmp (kind, "text") == 0 && !*sl_mock_text (json_object_get (b, "text")))
                rc = sl_mock_refuse (why, "messages.%zu.content.%zu: The text field in the ContentBlock object is "
                                          "blank", i, k);
            else
            if (strcmp (kind, "toolUse") == 0 || strcmp (kind, "toolResult") == 0) {
                json_t *inner = json_object_get (b, kind);
                const char *id = sl_mock_text (json_object_get (inner, "toolUseId"));
                if (!tools)
                    rc = sl_mock_refuse (why, "The toolConfig field must be defined when using toolUse and "
                                              "toolResult content blocks.");
                else
                if (strcmp (kind, "toolUse") == 0) {
                    if (strcmp (role, "assistant") != 0 || !s_tool_use_id (id)
                    ||  !json_is_string (json_object_get (inner, "name"))
                    ||  !json_is_object (json_object_get (inner, "input")))
                        rc = sl_mock_refuse (why, "messages.%zu.content.%zu: a toolUse needs a toolUseId matching "
                                                  "[a-zA-Z0-9_-]{1,64}, a name and an object input, in an assistant "
                                                  "turn", i, k);
                    else
                        json_array_append_new (calls, json_string (id));
                }
                else
                if (strcmp (role, "user") != 0 || !sl_mock_listed (open, id) || sl_mock_listed (answered, id))
                    rc = sl_mock_refuse (why, "messages.%zu.content: The number of toolResult blocks exceeds the "
                                              "number of toolUse blocks of previous turn (toolUseId %s)", i, id);
                else
                    json_array_append_new (answered, json_string (id));
            }
            if (rc)
                break;
        }
        if (rc == 0 && json_array_size (open) != json_array_size (answered))
            rc = sl_mock_refuse (why, "Expected toolResult blocks at messages.%zu.content for the following Ids: %s",
                                 i, sl_mock_text (json_array_get (open, 0)));
        json_decref (answered);
        json_decref (open);
        open = calls;
        if (rc)
            break;
    }
    json_decref (open);
    return rc;
}

//  The last turn's toolResult, and the tool that gave it.
static bool
s_converse_result (json_t *root, sl_mock_result_t *out)
{
    json_t *messages = json_object_get (root, "messages");
    json_t *last = json_array_get (messages, json_array_size (messages) - 1);
    size_t i, k;
    json_t *m, *b, *found = NULL;
    json_array_foreach (json_object_get (last, "content"), k, b)
        if (json_object_get (b, "toolResult"))
            found = json_object_get (b, "toolResult");
    if (!found)
        return false;
    const char *id = sl_mock_text (json_object_get (found, "toolUseId"));
    json_array_foreach (messages, i, m)
        json_array_foreach (json_object_get (m, "content"), k, b) {
            json_t *use = json_object_get (b, "toolUse");
            if (use && sl_mock_is (json_object_get (use, "toolUseId"), id))
                sl_mock_copy (out->name, sizeof out->name, sl_mock_text (json_object_get (use, "name")));
        }
    json_t *first = json_array_get (json_object_get (found, "content"), 0);
    sl_mock_copy (out->text, sizeof out->text, sl_mock_text (json_object_get (first, "text")));
    return true;
}

static bool
s_converse_carries_result (json_t *message)
{
    size_t i;
    json_t *b;
    json_array_foreach (json_object_get (message, "content"), i, b)
        if (json_object_get (b, "toolResult"))
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Converse's stream

//  One event frame of payload (a JSON object's text).
static void
s_frame (sl_mock_out_t *o, const char *type, sl_buf_t *payload)
{
    sl_evstream_encode_event (sl_mock_event (o), type, sl_buf_str (payload));
    sl_buf_free (payload);
}

static void
s_close (sl_mock_out_t *o)
{
    if (o->open == SL_MOCK_OPEN_NONE)
        return;
    sl_buf_t p = { 0 };
    sl_buf_printf (&p, "{\"contentBlockIndex\":%d,\"p\":\"abcdefgh\"}", o->block - 1);
    s_frame (o, "contentBlockStop", &p);
    o->open = SL_MOCK_OPEN_NONE;
}

static void
s_begin (sl_mock_out_t *o)
{
    sl_buf_t p = { 0 };
    sl_buf_puts (&p, "{\"p\":\"abcd\",\"role\":\"assistant\"}");
    s_frame (o, "messageStart", &p);
}

static void
s_text (sl_mock_out_t *o, const char *text)
{
    if (o->open != SL_MOCK_OPEN_TEXT) {
        s_close (o);
        o->block++;
        o->open = SL_MOCK_OPEN_TEXT;
    }
    sl_buf_t p = { 0 };
    sl_buf_printf (&p, "{\"contentBlockIndex\":%d,\"delta\":{\"text\":", o->block - 1);
    sl_mock_put_text (o, &p, sl_str (text));
    sl_buf_puts (&p, "},\"p\":\"abcdefghijk\"}");
    s_frame (o, "contentBlockDelta", &p);
}

static void
s_tool_start (sl_mock_out_t *o, int index, const char *id, const char *name)
{
    (void) index;
    s_close (o);
    sl_buf_t p = { 0 };
    sl_buf_printf (&p, "{\"contentBlockIndex\":%d,\"start\":{\"toolUse\":{\"toolUseId\":\"tooluse_%s\","
                       "\"name\":\"%s\"}},\"p\":\"abc\"}", o->block++, id, name);
    s_frame (o, "contentBlockStart", &p);
    o->open = SL_MOCK_OPEN_TOOL;
}

static void
s_tool_args (sl_mock_out_t *o, int index, const char *fragment)
{
    (void) index;
    sl_buf_t p = { 0 };
    sl_buf_printf (&p, "{\"contentBlockIndex\":%d,\"delta\":{\"toolUse\":{\"input\":", o->block - 1);
    sl_mock_put_text (o, &p, sl_str (fragment));
    sl_buf_puts (&p, "}},\"p\":\"ab\"}");
    s_frame (o, "contentBlockDelta", &p);
}

static void
s_finish (sl_mock_out_t *o, const char *reason, int input, int output)
{
    s_close (o);
    const char *stop = strcmp (reason, "tool_calls") == 0 ? "tool_use"
                     : strcmp (reason, "length") == 0 ? "max_tokens" : "end_turn";
    sl_buf_t p = { 0 };
    sl_buf_printf (&p, "{\"stopReason\":\"%s\",\"p\":\"abcdef\"}", stop);
    s_frame (o, "messageStop", &p);
    sl_buf_printf (&p, "{\"usage\":{\"inputTokens\":%d,\"outputTokens\":%d,\"totalTokens\":%d},"
                       "\"metrics\":{\"latencyMs\":42},\"p\":\"abcdefghijklm\"}", input, output, input + output);
    s_frame (o, "metadata", &p);
}

static void
s_fail (sl_mock_out_t *o)
{
    static const char message [] = "{\"message\":\"The mock upstream failed mid-stream.\"}";
    sl_evstream_encode_exception (sl_mock_event (o), "modelStreamErrorException", SL_STR_LIT (message));
}

//  AWS's error body: {"message"}; its type is a header (x-amzn-ErrorType)
//  the body repeats here as "__type", as AWS's JSON protocols do.
static void
s_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) status;
    sl_buf_puts (out, "{\"__type\":");
    sl_json_put_str (out, type, strlen (type));
    sl_buf_puts (out, ",\"message\":");
    sl_json_put_str (out, message, strlen (message));
    sl_buf_putc (out, '}');
}

static const sl_mock_render_t s_converse_render = {
    .begin = s_begin,
    .text = s_text,
    .tool_start = s_tool_start,
    .tool_args = s_tool_args,
    .finish = s_finish,
    .fail = s_fail,
    .error_body = s_error_body,
    .rate_limited = "ThrottlingException",
    .unavailable = "ServiceUnavailableException",
    .failed = "InternalServerException",
    .not_found = "ResourceNotFoundException",
    .bad_request = "ValidationException",
};

static const char *const s_converse_max_tokens [] = { "inferenceConfig.maxTokens", NULL };

const sl_mock_provider_t sl_mock_bedrock = {
    .dialect = SL_DIALECT_BEDROCK,
    .path = "/converse-stream",
    .sigv4 = true,
    .model_in_path = true,
    .model_prefix = "/model/",
    .content_type = "application/vnd.amazon.eventstream",
    .max_tokens = s_converse_max_tokens,
    .check = s_converse_check,
    .result = s_converse_result,
    .shape = { .holder = "toolSpec", .schema = "inputSchema", .schema_in = "json", .tools_in = "toolConfig",
               .turns = "messages",
               .carries_result = s_converse_carries_result },
    .render = &s_converse_render,
};

//  --------------------------------------------------------------------------
//  Claude on Bedrock: the Anthropic mock's body and events, Bedrock's way

extern const sl_mock_provider_t sl_mock_anthropic;

static int
s_claude_check (json_t *root, sl_mock_why_t *why)
{
    if (s_extraneous (root, why))
        return -1;
    if (!sl_mock_is (json_object_get (root, "anthropic_version"), "bedrock-2023-05-31"))
        return sl_mock_refuse (why, "anthropic_version: bedrock-2023-05-31 is required");
    return sl_mock_anthropic.check (root, why);
}

//  The beta features Claude on Bedrock takes in anthropic_beta: those
//  AWS's Claude parameters page lists, and claude-code-20250219, which
//  Bedrock takes of Claude Code (reports of Bedrock's refusals name
//  which it does not: oauth-2025-04-20, prompt-caching-scope-2026-01-05,
//  thinking-token-count-2026-05-13, advanced-tool-use-2025-11-20, ...).
static const char *const s_claude_betas [] = {
    "claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
    "context-1m-2025-08-07", "effort-2025-11-24", "tool-search-tool-2025-10-19", "tool-examples-2025-10-29",
    "token-efficient-tools-2025-02-19", "output-128k-2025-02-19", "computer-use-2025-01-24",
    "computer-use-2025-11-24", "structured-outputs-2025-12-15", NULL
};

//  Bedrock reads beta features from the body only.
static int
s_claude_check_betas (json_t *root, const char *header, sl_mock_why_t *why)
{
    (void) header;
    json_t *names = json_object_get (root, "anthropic_beta");
    if (names && !json_is_array (names))
        return sl_mock_refuse (why, "anthropic_beta: an array of strings is required");
    json_t *none = json_array ();
    int rc = sl_mock_anthropic_check_betas (root, names ? names : none, s_claude_betas, false, why);
    json_decref (none);
    return rc;
}

//  The SSE events the Anthropic steps added since first, each made a
//  chunk frame: {"bytes": base64 of its data}.
static void
s_chunks (sl_mock_out_t *o, size_t first)
{
    for (size_t i = first; i < *o->count; i++) {
        sl_buf_t *e = &(*o->events) [i];
        const char *data = memmem (e->data, e->len, "data: ", 6);
        if (!data)
            continue;
        data += 6;
        size_t n = (size_t) (e->data + e->len - data);
        while (n && data [n - 1] == '\n')
            n--;
        size_t size = sodium_base64_ENCODED_LEN (n, sodium_base64_VARIANT_ORIGINAL);
        sl_buf_t payload = { 0 };
        sl_buf_puts (&payload, "{\"bytes\":\"");
        char *at = sl_buf_reserve (&payload, size);
        sodium_bin2base64 (at, size, (const unsigned char *) data, n, sodium_base64_VARIANT_ORIGINAL);
        payload.len += strlen (at);
        sl_buf_puts (&payload, "\",\"p\":\"abcdefghij\"}");
        sl_buf_reset (e);
        sl_evstream_encode_event (e, "chunk", sl_buf_str (&payload));
        sl_buf_free (&payload);
    }
}

#define S_WRAP(step, params, args) \
    static void \
    s_claude_##step params \
    { \
        size_t first = *o->count; \
        sl_mock_anthropic.render->step args; \
        s_chunks (o, first); \
    }
S_WRAP (begin, (sl_mock_out_t *o), (o))
S_WRAP (text, (sl_mock_out_t *o, const char *text), (o, text))
S_WRAP (tool_start, (sl_mock_out_t *o, int index, const char *id, const char *name), (o, index, id, name))
S_WRAP (tool_args, (sl_mock_out_t *o, int index, const char *fragment), (o, index, fragment))
S_WRAP (finish, (sl_mock_out_t *o, const char *reason, int input, int output), (o, reason, input, output))

static const sl_mock_render_t s_claude_render = {
    .begin = s_claude_begin,
    .text = s_claude_text,
    .tool_start = s_claude_tool_start,
    .tool_args = s_claude_tool_args,
    .finish = s_claude_finish,
    .fail = s_fail,
    .error_body = s_error_body,
    .rate_limited = "ThrottlingException",
    .unavailable = "ServiceUnavailableException",
    .failed = "InternalServerException",
    .not_found = "ResourceNotFoundException",
    .bad_request = "ValidationException",
};

static bool
s_claude_result (json_t *root, sl_mock_result_t *out)
{
    return sl_mock_anthropic.result (root, out);
}

static bool
s_claude_carries_result (json_t *message)
{
    return sl_mock_anthropic.shape.carries_result (message);
}

static const char *const s_claude_max_tokens [] = { "max_tokens", NULL };

const sl_mock_provider_t sl_mock_bedrock_anthropic = {
    .dialect = SL_DIALECT_BEDROCK_ANTHROPIC,
    .path = "/invoke-with-response-stream",
    .sigv4 = true,
    .model_in_path = true,
    .model_prefix = "/model/",
    .content_type = "application/vnd.amazon.eventstream",
    .max_tokens = s_claude_max_tokens,
    .check = s_claude_check,
    .check_betas = s_claude_check_betas,
    .result = s_claude_result,
    .shape = { .schema = "input_schema", .turns = "messages", .carries_result = s_claude_carries_result },
    .render = &s_claude_render,
};
