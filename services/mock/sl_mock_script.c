/*  sl_mock_script.c - scripted streams in four dialects (see sl_mock_script.h).

    A scenario is written once, as steps (text, a tool call's start and
    argument fragments, the finish, a failure); a renderer per dialect turns
    the steps into that provider's events, keeping what the format needs
    (open blocks or items, accumulated text for "done" events, Gemini's
    whole calls).
*/
#include "services/mock/sl_mock_script.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "services/mock/sl_mock_agent.h"

#define MOCK_CREATED 1767225600         //  fixed "created" stamp (2026-01-01)
#define MOCK_DROP_EVENTS 2              //  events mock-drop sends whole
#define MOCK_STALL_EVENTS 3             //  events mock-stall sends
#define MOCK_HUGE_PIECE 65536           //  bytes of padding per event of mock-danger-huge
#define MOCK_HUGE_WORD "PADDING-"       //  what the padding is made of

const char *sl_mock_scenarios [] = {
    "mock-text", "mock-tools", "mock-error", "mock-bench", "mock-burst", "mock-paced", "mock-stall", "mock-hang",
    "mock-drop", "mock-garbage", "mock-429", "mock-500", "mock-flaky", "mock-danger-length",
    "mock-danger-error", "mock-danger-eof", "mock-danger-huge", "mock-bad-utf8", NULL
};

static const char *s_text_words [] = {
    "Hello", "! This", " is", " the", " mock", " upstream", " of", " sluice", ".",
    " It", " streams", " a", " few", " sentences", ",", " one", " small", " piece",
    " at", " a", " time", ",", " so", " you", " can", " watch", " the", " proxy",
    " work", ".", NULL
};

typedef enum {
    OPEN_NONE,
    OPEN_TEXT,
    OPEN_TOOL,
    OPEN_STREAMED_TOOL                  //  Gemini: a call whose arguments stream (willContinue)
} s_open_t;

typedef struct _s_ctx_t s_ctx_t;

//  What a dialect does with each step of a scenario.
typedef struct {
    void (*begin) (s_ctx_t *ctx);
    void (*text) (s_ctx_t *ctx, const char *text);
    void (*tool_start) (s_ctx_t *ctx, int index, const char *id, const char *name);
    void (*tool_args) (s_ctx_t *ctx, int index, const char *fragment);
    //  A piece of a call's arguments inside one string member, given two
    //  ways: json, the JSON text it adds; key and value, the member and the
    //  piece of its string as Gemini streams them (partialArgs), more when
    //  the string goes on in the next piece.
    void (*tool_string) (s_ctx_t *ctx, int index, const char *json, const char *key, const char *value,
                         bool more);
    //  reason: "stop", "tool_calls" or "length" (OpenAI's words; each
    //  renderer says it its own way).
    void (*finish) (s_ctx_t *ctx, const char *reason, int input, int output);
    void (*fail) (s_ctx_t *ctx);
    //  The body ends here, short of the provider's end: what the dialect
    //  still holds goes out, and nothing is closed.
    void (*eof) (s_ctx_t *ctx);
    //  A failure mid-stream as the API itself ends a failed stream.
    void (*fail_as_api) (s_ctx_t *ctx);
    //  The provider's error body of an HTTP error answer, and its words
    //  for a rate limit, a brief unavailability, a failure, a bad request.
    void (*error_body) (int status, const char *type, const char *message, sl_buf_t *out);
    const char *rate_limited;
    const char *unavailable;
    const char *failed;
    const char *not_found;
} s_render_t;

struct _s_ctx_t {
    const s_render_t *render;
    int dialect;
    sl_mock_script_t *script;
    uint64_t hash;                      //  of the request body: ids
    sl_str_t model;
    s_open_t open;                      //  Anthropic block / Responses item open
    int block;                          //  next Anthropic block / Responses item index
    int seq;                            //  Responses sequence_number
    sl_buf_t acc;                       //  text or arguments of the open item
    char tool_id [64];                  //  the open call's id / name
    char tool_name [64];
    bool verbatim;                      //  strings byte for byte (mock-bad-utf8)
};

static uint64_t
s_fnv1a (sl_str_t s)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < s.len; i++) {
        h ^= (unsigned char) s.ptr [i];
        h *= 1099511628211ULL;
    }
    return h;
}

static sl_buf_t *
s_new_event (sl_mock_script_t *sc)
{
    sc->events = sl_xrealloc (sc->events, (sc->count + 1) * sizeof (sl_buf_t));
    sl_buf_t *e = &sc->events [sc->count++];
    memset (e, 0, sizeof *e);
    return e;
}

//  A string as mock-bad-utf8 writes it: byte for byte, with no UTF-8
//  repair, and with a backslash that starts a \u escape kept as it is, so
//  the scenario can carry lone surrogate escapes. Quotes and control
//  characters are escaped as usual.
static void
s_put_verbatim (sl_buf_t *e, sl_str_t s)
{
    sl_buf_putc (e, '"');
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char) s.ptr [i];
        if (c == '\\' && i + 1 < s.len && s.ptr [i + 1] == 'u')
            sl_buf_putc (e, '\\');
        else
        if (c == '"' || c == '\\') {
            sl_buf_putc (e, '\\');
            sl_buf_putc (e, (char) c);
        }
        else
        if (c < 0x20)
            sl_buf_printf (e, "\\u%04x", c);
        else
            sl_buf_putc (e, (char) c);
    }
    sl_buf_putc (e, '"');
}

//  A text or an argument fragment as a JSON string.
static void
s_put_text (s_ctx_t *ctx, sl_buf_t *e, sl_str_t s)
{
    if (ctx->verbatim)
        s_put_verbatim (e, s);
    else
        sl_json_put_sl (e, s);
}

static void
s_put_model (s_ctx_t *ctx, sl_buf_t *e)
{
    sl_json_put_sl (e, ctx->model);
}

//  Dialects that stream arguments as JSON text take the text of a piece.
#define S_TOOL_STRING_AS_JSON(prefix) \
static void \
prefix##_tool_string (s_ctx_t *ctx, int index, const char *json, const char *key, const char *value, \
                      bool more) \
{ \
    (void) key; \
    (void) value; \
    (void) more; \
    prefix##_tool_args (ctx, index, json); \
}

//  Dialects that hold nothing back: the body just stops.
static void
s_eof_as_is (s_ctx_t *ctx)
{
    (void) ctx;
}

//  --------------------------------------------------------------------------
//  OpenAI Chat Completions

//  A chunk with one choice: delta JSON (without braces) and finish reason.
static void
s_oa_chunk (s_ctx_t *ctx, const char *delta, const char *finish)
{
    sl_buf_t *e = s_new_event (ctx->script);
    sl_buf_printf (e, "data: {\"id\":\"chatcmpl-mock%016llx\",\"object\":\"chat.completion.chunk\","
                      "\"created\":%d,\"model\":", (unsigned long long) ctx->hash, MOCK_CREATED);
    s_put_model (ctx, e);
    sl_buf_printf (e, ",\"choices\":[{\"index\":0,\"delta\":{%s},\"finish_reason\":", delta);
    if (finish)
        sl_buf_printf (e, "\"%s\"", finish);
    else
        sl_buf_puts (e, "null");
    sl_buf_puts (e, "}]}\n\n");
}

static void
s_oa_begin (s_ctx_t *ctx)
{
    s_oa_chunk (ctx, "\"role\":\"assistant\",\"content\":\"\"", NULL);
}

static void
s_oa_text (s_ctx_t *ctx, const char *text)
{
    sl_buf_t delta = { 0 };
    sl_buf_puts (&delta, "\"content\":");
    s_put_text (ctx, &delta, sl_str (text));
    s_oa_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_oa_tool_start (s_ctx_t *ctx, int index, const char *id, const char *name)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"id\":\"call_%s\",\"type\":\"function\","
                           "\"function\":{\"name\":\"%s\",\"arguments\":\"\"}}]", index, id, name);
    s_oa_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_oa_tool_args (s_ctx_t *ctx, int index, const char *fragment)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":", index);
    s_put_text (ctx, &delta, sl_str (fragment));
    sl_buf_puts (&delta, "}}]");
    s_oa_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_oa_finish (s_ctx_t *ctx, const char *reason, int input, int output)
{
    s_oa_chunk (ctx, "", reason);
    sl_buf_t *e = s_new_event (ctx->script);
    sl_buf_printf (e, "data: {\"id\":\"chatcmpl-mock%016llx\",\"object\":\"chat.completion.chunk\","
                      "\"created\":%d,\"model\":", (unsigned long long) ctx->hash, MOCK_CREATED);
    s_put_model (ctx, e);
    sl_buf_printf (e, ",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,"
                      "\"total_tokens\":%d}}\n\n", input, output, input + output);
    sl_buf_puts (s_new_event (ctx->script), "data: [DONE]\n\n");
}

static void
s_oa_fail (s_ctx_t *ctx)
{
    sl_buf_puts (s_new_event (ctx->script),
                 "data: {\"error\":{\"message\":\"The mock upstream failed mid-stream.\","
                 "\"type\":\"server_error\",\"param\":null,\"code\":\"mock_failure\"}}\n\n");
}

S_TOOL_STRING_AS_JSON (s_oa)

static void
s_oa_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) status;
    sl_buf_puts (out, "{\"error\":{\"message\":");
    sl_json_put_str (out, message, strlen (message));
    sl_buf_printf (out, ",\"type\":\"%s\",\"param\":null,\"code\":null}}", type);
}

static const s_render_t s_openai = {
    s_oa_begin, s_oa_text, s_oa_tool_start, s_oa_tool_args, s_oa_tool_string, s_oa_finish, s_oa_fail,
    s_eof_as_is, s_oa_fail, s_oa_error_body, "rate_limit_exceeded", "server_error", "server_error",
    "invalid_request_error"
};

//  --------------------------------------------------------------------------
//  Anthropic Messages

static sl_buf_t *
s_an_event (s_ctx_t *ctx, const char *type)
{
    sl_buf_t *e = s_new_event (ctx->script);
    sl_buf_printf (e, "event: %s\ndata: {\"type\":\"%s\"", type, type);
    return e;
}

static void
s_an_close (s_ctx_t *ctx)
{
    if (ctx->open == OPEN_NONE)
        return;
    sl_buf_t *e = s_an_event (ctx, "content_block_stop");
    sl_buf_printf (e, ",\"index\":%d}\n\n", ctx->block - 1);
    ctx->open = OPEN_NONE;
}

static void
s_an_begin (s_ctx_t *ctx)
{
    sl_buf_t *e = s_an_event (ctx, "message_start");
    sl_buf_printf (e, ",\"message\":{\"id\":\"msg_mock%016llx\",\"type\":\"message\",\"role\":\"assistant\","
                      "\"model\":", (unsigned long long) ctx->hash);
    s_put_model (ctx, e);
    sl_buf_puts (e, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                    "\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n");
}

static void
s_an_text (s_ctx_t *ctx, const char *text)
{
    sl_buf_t *e;
    if (ctx->open != OPEN_TEXT) {
        s_an_close (ctx);
        e = s_an_event (ctx, "content_block_start");
        sl_buf_printf (e, ",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", ctx->block++);
        if (ctx->block == 1)
            sl_buf_puts (s_new_event (ctx->script), "event: ping\ndata: {\"type\": \"ping\"}\n\n");
        ctx->open = OPEN_TEXT;
    }
    e = s_an_event (ctx, "content_block_delta");
    sl_buf_printf (e, ",\"index\":%d,\"delta\":{\"type\":\"text_delta\",\"text\":", ctx->block - 1);
    s_put_text (ctx, e, sl_str (text));
    sl_buf_puts (e, "}}\n\n");
}

static void
s_an_tool_start (s_ctx_t *ctx, int index, const char *id, const char *name)
{
    (void) index;
    s_an_close (ctx);
    sl_buf_t *e = s_an_event (ctx, "content_block_start");
    sl_buf_printf (e, ",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_%s\","
                      "\"name\":\"%s\",\"input\":{}}}\n\n", ctx->block++, id, name);
    ctx->open = OPEN_TOOL;
}

static void
s_an_tool_args (s_ctx_t *ctx, int index, const char *fragment)
{
    (void) index;
    sl_buf_t *e = s_an_event (ctx, "content_block_delta");
    sl_buf_printf (e, ",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":", ctx->block - 1);
    s_put_text (ctx, e, sl_str (fragment));
    sl_buf_puts (e, "}}\n\n");
}

static void
s_an_finish (s_ctx_t *ctx, const char *reason, int input, int output)
{
    (void) input;
    s_an_close (ctx);
    const char *stop = strcmp (reason, "tool_calls") == 0 ? "tool_use"
                     : strcmp (reason, "length") == 0 ? "max_tokens" : "end_turn";
    sl_buf_t *e = s_an_event (ctx, "message_delta");
    sl_buf_printf (e, ",\"delta\":{\"stop_reason\":\"%s\",\"stop_sequence\":null},"
                      "\"usage\":{\"output_tokens\":%d}}\n\n", stop, output);
    sl_buf_puts (s_an_event (ctx, "message_stop"), "}\n\n");
}

static void
s_an_fail (s_ctx_t *ctx)
{
    sl_buf_puts (s_an_event (ctx, "error"),
                 ",\"error\":{\"type\":\"overloaded_error\",\"message\":\"The mock upstream failed mid-stream.\"}}\n\n");
}

S_TOOL_STRING_AS_JSON (s_an)

static void
s_an_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) status;
    sl_buf_printf (out, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":", type);
    sl_json_put_str (out, message, strlen (message));
    sl_buf_puts (out, "}}");
}

static const s_render_t s_anthropic = {
    s_an_begin, s_an_text, s_an_tool_start, s_an_tool_args, s_an_tool_string, s_an_finish, s_an_fail,
    s_eof_as_is, s_an_fail, s_an_error_body, "rate_limit_error", "overloaded_error", "api_error",
    "not_found_error"
};

//  --------------------------------------------------------------------------
//  OpenAI Responses

static sl_buf_t *
s_re_event (s_ctx_t *ctx, const char *type)
{
    sl_buf_t *e = s_new_event (ctx->script);
    sl_buf_printf (e, "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%d", type, type, ctx->seq++);
    return e;
}

static void
s_re_response (s_ctx_t *ctx, const char *type, const char *status, int input, int output)
{
    sl_buf_t *e = s_re_event (ctx, type);
    sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"object\":\"response\",\"created_at\":%d,"
                      "\"status\":\"%s\",\"model\":", (unsigned long long) ctx->hash, MOCK_CREATED, status);
    s_put_model (ctx, e);
    if (input >= 0)
        sl_buf_printf (e, ",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d}",
                       input, output, input + output);
    else
        sl_buf_puts (e, ",\"usage\":null");
    sl_buf_puts (e, "}}\n\n");
}

static void
s_re_close (s_ctx_t *ctx)
{
    int index = ctx->block - 1;
    sl_buf_t *e;
    if (ctx->open == OPEN_TEXT) {
        char id [64];
        snprintf (id, sizeof id, "msg_mock%016llx", (unsigned long long) ctx->hash);
        e = s_re_event (ctx, "response.output_text.done");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,\"text\":", id, index);
        s_put_text (ctx, e, sl_buf_str (&ctx->acc));
        sl_buf_puts (e, "}\n\n");
        e = s_re_event (ctx, "response.content_part.done");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                          "\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":", id, index);
        s_put_text (ctx, e, sl_buf_str (&ctx->acc));
        sl_buf_puts (e, "}}\n\n");
        e = s_re_event (ctx, "response.output_item.done");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"%s\",\"type\":\"message\",\"status\":\"completed\","
                          "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":",
                       index, id);
        s_put_text (ctx, e, sl_buf_str (&ctx->acc));
        sl_buf_puts (e, "}]}}\n\n");
    }
    else
    if (ctx->open == OPEN_TOOL) {
        e = s_re_event (ctx, "response.function_call_arguments.done");
        sl_buf_printf (e, ",\"item_id\":\"fc_%s\",\"output_index\":%d,\"arguments\":", ctx->tool_id, index);
        s_put_text (ctx, e, sl_buf_str (&ctx->acc));
        sl_buf_puts (e, "}\n\n");
        e = s_re_event (ctx, "response.output_item.done");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"fc_%s\",\"type\":\"function_call\","
                          "\"status\":\"completed\",\"arguments\":", index, ctx->tool_id);
        s_put_text (ctx, e, sl_buf_str (&ctx->acc));
        sl_buf_printf (e, ",\"call_id\":\"call_%s\",\"name\":\"%s\"}}\n\n", ctx->tool_id, ctx->tool_name);
    }
    ctx->open = OPEN_NONE;
    sl_buf_reset (&ctx->acc);
}

static void
s_re_begin (s_ctx_t *ctx)
{
    s_re_response (ctx, "response.created", "in_progress", -1, 0);
    s_re_response (ctx, "response.in_progress", "in_progress", -1, 0);
}

static void
s_re_text (s_ctx_t *ctx, const char *text)
{
    char id [64];
    snprintf (id, sizeof id, "msg_mock%016llx", (unsigned long long) ctx->hash);
    sl_buf_t *e;
    if (ctx->open != OPEN_TEXT) {
        s_re_close (ctx);
        e = s_re_event (ctx, "response.output_item.added");
        sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"%s\",\"type\":\"message\","
                          "\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n", ctx->block, id);
        e = s_re_event (ctx, "response.content_part.added");
        sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                          "\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}\n\n", id, ctx->block);
        ctx->block++;
        ctx->open = OPEN_TEXT;
    }
    e = s_re_event (ctx, "response.output_text.delta");
    sl_buf_printf (e, ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,\"delta\":", id, ctx->block - 1);
    s_put_text (ctx, e, sl_str (text));
    sl_buf_puts (e, "}\n\n");
    sl_buf_puts (&ctx->acc, text);
}

static void
s_re_tool_start (s_ctx_t *ctx, int index, const char *id, const char *name)
{
    (void) index;
    s_re_close (ctx);
    snprintf (ctx->tool_id, sizeof ctx->tool_id, "%s", id);
    snprintf (ctx->tool_name, sizeof ctx->tool_name, "%s", name);
    sl_buf_t *e = s_re_event (ctx, "response.output_item.added");
    sl_buf_printf (e, ",\"output_index\":%d,\"item\":{\"id\":\"fc_%s\",\"type\":\"function_call\","
                      "\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_%s\",\"name\":\"%s\"}}\n\n",
                   ctx->block++, id, id, name);
    ctx->open = OPEN_TOOL;
}

static void
s_re_tool_args (s_ctx_t *ctx, int index, const char *fragment)
{
    (void) index;
    sl_buf_t *e = s_re_event (ctx, "response.function_call_arguments.delta");
    sl_buf_printf (e, ",\"item_id\":\"fc_%s\",\"output_index\":%d,\"delta\":", ctx->tool_id, ctx->block - 1);
    s_put_text (ctx, e, sl_str (fragment));
    sl_buf_puts (e, "}\n\n");
    sl_buf_puts (&ctx->acc, fragment);
}

static void
s_re_finish (s_ctx_t *ctx, const char *reason, int input, int output)
{
    s_re_close (ctx);
    if (strcmp (reason, "length") == 0) {
        sl_buf_t *e = s_re_event (ctx, "response.incomplete");
        sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"status\":\"incomplete\","
                          "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n",
                       (unsigned long long) ctx->hash);
        return;
    }
    s_re_response (ctx, "response.completed", "completed", input, output);
}

static void
s_re_fail (s_ctx_t *ctx)
{
    sl_buf_puts (s_re_event (ctx, "error"),
                 ",\"code\":\"server_error\",\"message\":\"The mock upstream failed mid-stream.\",\"param\":null}\n\n");
}

S_TOOL_STRING_AS_JSON (s_re)

static void s_re_fail_as_api (s_ctx_t *ctx);

static const s_render_t s_responses = {
    s_re_begin, s_re_text, s_re_tool_start, s_re_tool_args, s_re_tool_string, s_re_finish, s_re_fail,
    s_eof_as_is, s_re_fail_as_api, s_oa_error_body, "rate_limit_exceeded", "server_error", "server_error",
    "invalid_request_error"
};

//  --------------------------------------------------------------------------
//  Gemini: every event a GenerateContentResponse; calls are sent whole.

//  Start a chunk whose candidate has the given parts JSON (no brackets).
static sl_buf_t *
s_ge_chunk (s_ctx_t *ctx, const char *parts)
{
    sl_buf_t *e = s_new_event (ctx->script);
    sl_buf_printf (e, "data: {\"candidates\":[{\"content\":{\"parts\":[%s],\"role\":\"model\"},\"index\":0", parts);
    return e;
}

static void
s_ge_end_chunk (s_ctx_t *ctx, sl_buf_t *e)
{
    sl_buf_puts (e, ",\"modelVersion\":");
    s_put_model (ctx, e);
    sl_buf_printf (e, ",\"responseId\":\"mock%016llx\"}\r\n\r\n", (unsigned long long) ctx->hash);
}

//  A chunk of one functionCall part (its JSON, without braces).
static void
s_ge_call_chunk (s_ctx_t *ctx, const char *call)
{
    sl_buf_t parts = { 0 };
    sl_buf_printf (&parts, "{\"functionCall\":{%s}}", call);
    sl_buf_t *e = s_ge_chunk (ctx, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_ge_end_chunk (ctx, e);
    sl_buf_free (&parts);
}

static void
s_ge_flush_call (s_ctx_t *ctx)
{
    if (ctx->open == OPEN_STREAMED_TOOL) {
        s_ge_call_chunk (ctx, "");      //  an empty functionCall ends a streamed one
        ctx->open = OPEN_NONE;
        return;
    }
    if (ctx->open != OPEN_TOOL)
        return;
    sl_buf_t parts = { 0 };
    sl_buf_printf (&parts, "{\"functionCall\":{\"name\":\"%s\",\"args\":", ctx->tool_name);
    sl_buf_append_str (&parts, sl_buf_str (&ctx->acc));
    sl_buf_puts (&parts, "}}");
    sl_buf_t *e = s_ge_chunk (ctx, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_ge_end_chunk (ctx, e);
    sl_buf_free (&parts);
    sl_buf_reset (&ctx->acc);
    ctx->open = OPEN_NONE;
}

static void
s_ge_begin (s_ctx_t *ctx)
{
    (void) ctx;                         //  Gemini has no opening event
}

static void
s_ge_text (s_ctx_t *ctx, const char *text)
{
    s_ge_flush_call (ctx);
    sl_buf_t parts = { 0 };
    sl_buf_puts (&parts, "{\"text\":");
    s_put_text (ctx, &parts, sl_str (text));
    sl_buf_putc (&parts, '}');
    sl_buf_t *e = s_ge_chunk (ctx, sl_buf_cstr (&parts));
    sl_buf_puts (e, "}]");
    s_ge_end_chunk (ctx, e);
    sl_buf_free (&parts);
}

static void
s_ge_tool_start (s_ctx_t *ctx, int index, const char *id, const char *name)
{
    (void) index;
    (void) id;                          //  the Gemini API sends no call ids
    s_ge_flush_call (ctx);
    snprintf (ctx->tool_name, sizeof ctx->tool_name, "%s", name);
    ctx->open = OPEN_TOOL;
}

static void
s_ge_tool_args (s_ctx_t *ctx, int index, const char *fragment)
{
    (void) index;
    sl_buf_puts (&ctx->acc, fragment);
}

//  Arguments that come in pieces stream as Gemini 3 streams them: the call
//  opens with willContinue, each piece is a partialArgs value.
static void
s_ge_tool_string (s_ctx_t *ctx, int index, const char *json, const char *key, const char *value, bool more)
{
    (void) index;
    (void) json;
    sl_buf_t call = { 0 };
    if (ctx->open == OPEN_TOOL) {
        sl_buf_printf (&call, "\"name\":\"%s\",\"willContinue\":true", ctx->tool_name);
        s_ge_call_chunk (ctx, sl_buf_cstr (&call));
        sl_buf_reset (&call);
        ctx->open = OPEN_STREAMED_TOOL;
    }
    sl_buf_printf (&call, "\"partialArgs\":[{\"jsonPath\":\"$.%s\",\"stringValue\":", key);
    sl_json_put_str (&call, value, strlen (value));
    sl_buf_printf (&call, "%s}],\"willContinue\":true", more ? ",\"willContinue\":true" : "");
    s_ge_call_chunk (ctx, sl_buf_cstr (&call));
    sl_buf_free (&call);
}

static void
s_ge_finish (s_ctx_t *ctx, const char *reason, int input, int output)
{
    s_ge_flush_call (ctx);
    sl_buf_t *e = s_ge_chunk (ctx, "{\"text\":\"\"}");
    sl_buf_printf (e, ",\"finishReason\":\"%s\"}],\"usageMetadata\":{\"promptTokenCount\":%d,"
                      "\"candidatesTokenCount\":%d,\"totalTokenCount\":%d}",
                   strcmp (reason, "length") == 0 ? "MAX_TOKENS" : "STOP", input, output, input + output);
    s_ge_end_chunk (ctx, e);
}

static void
s_ge_fail (s_ctx_t *ctx)
{
    s_ge_flush_call (ctx);              //  a whole call goes out before the failure
    sl_buf_puts (s_new_event (ctx->script),
                 "data: {\"error\":{\"code\":500,\"message\":\"The mock upstream failed mid-stream.\","
                 "\"status\":\"INTERNAL\"}}\r\n\r\n");
}

//  A whole call still held goes out: Gemini sends calls whole, so the
//  body ends after it (not inside a streamed one, which stays open).
static void
s_ge_eof (s_ctx_t *ctx)
{
    if (ctx->open == OPEN_TOOL)
        s_ge_flush_call (ctx);
}

//  The Gemini API ends a failed stream with the bare error object after
//  the last event (the recorded corpus has it).
static void
s_ge_fail_as_api (s_ctx_t *ctx)
{
    sl_buf_puts (s_new_event (ctx->script),
                 "{\n  \"error\": {\n    \"code\": 499,\n    \"message\": \"The operation was cancelled.\",\n"
                 "    \"status\": \"CANCELLED\"\n  }\n}\n");
}

static void
s_ge_error_body (int status, const char *type, const char *message, sl_buf_t *out)
{
    (void) type;
    const char *rpc = status == 404 ? "NOT_FOUND" : status == 400 ? "INVALID_ARGUMENT" : status == 429
                    ? "RESOURCE_EXHAUSTED" : status == 503 ? "UNAVAILABLE" : "INTERNAL";
    sl_buf_printf (out, "{\"error\":{\"code\":%d,\"message\":", status);
    sl_json_put_str (out, message, strlen (message));
    sl_buf_printf (out, ",\"status\":\"%s\"}}", rpc);
}

static const s_render_t s_gemini = {
    s_ge_begin, s_ge_text, s_ge_tool_start, s_ge_tool_args, s_ge_tool_string, s_ge_finish, s_ge_fail,
    s_ge_eof, s_ge_fail_as_api, s_ge_error_body, "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "NOT_FOUND"
};

//  The providers the mock plays, by wire id.
static const s_render_t *const s_renders [SL_DIALECT_MAX] = {
    [SL_DIALECT_OPENAI] = &s_openai,
    [SL_DIALECT_ANTHROPIC] = &s_anthropic,
    [SL_DIALECT_RESPONSES] = &s_responses,
    [SL_DIALECT_GEMINI] = &s_gemini,
};

static const s_render_t *
s_render_of (int dialect)
{
    return dialect > SL_DIALECT_NONE && dialect < SL_DIALECT_MAX ? s_renders [dialect] : NULL;
}

//  --------------------------------------------------------------------------
//  Scenarios

static void
s_tool (s_ctx_t *ctx, int index, const char *id, const char *name, const char *const *fragments)
{
    ctx->render->tool_start (ctx, index, id, name);
    for (int i = 0; fragments [i]; i++)
        ctx->render->tool_args (ctx, index, fragments [i]);
}

static const char *const s_weather [] = { "{\"ci", "ty\":\"Pa", "ris\"}", NULL };
static const char *const s_shell [] = { "{\"comm", "and\":\"rm -rf", " /\"}", NULL };
static const char *const s_notes [] = { "{\"pa", "th\":\"/tmp/", "notes.txt\"}", NULL };
//  mock-bad-utf8: bytes that are not UTF-8 (a stray byte, a cut sequence,
//  an encoded surrogate) and lone surrogate escapes, in text, a tool
//  call's id, name and arguments.
static const char *const s_bad_args [] = { "{\"city\":\"Pa\xff", "ris \\ud800 \xed\xa0\x80\"}", NULL };
#define MOCK_BAD_TEXT "Bad bytes \xff\xfe, a cut \xe2\x82 sequence, an encoded surrogate \xed\xa0\x80, " \
                      "a lone escape \\ud800 and a low one \\udc00 alone."

//  The dangerous call, whole: run_shell {"command":"rm -rf /"}, then the
//  cut that ends the response (length, error, eof), in a mock-danger-*.
static void
s_scenario_danger (s_ctx_t *ctx, const char *how)
{
    ctx->render->begin (ctx);
    ctx->render->text (ctx, "Cleaning up.");
    s_tool (ctx, 0, "danger_1", "run_shell", s_shell);
    if (strcmp (how, "length") == 0)
        ctx->render->finish (ctx, "length", 30, 20);
    else
    if (strcmp (how, "error") == 0)
        ctx->render->fail (ctx);
    else
        ctx->render->eof (ctx);
}

//  mock-danger-huge: run_shell {"command":"rm -rf /","note":"PADDING-…"}
//  whose note is kib KiB long, in pieces of MOCK_HUGE_PIECE bytes; a
//  whole call, then a normal finish.
static void
s_scenario_huge (s_ctx_t *ctx, long kib)
{
    ctx->render->begin (ctx);
    ctx->render->text (ctx, "Cleaning up.");
    ctx->render->tool_start (ctx, 0, "danger_1", "run_shell");
    ctx->render->tool_string (ctx, 0, "{\"command\":\"rm -rf /\"", "command", "rm -rf /", false);
    sl_buf_t piece = { 0 };
    while (piece.len < MOCK_HUGE_PIECE)
        sl_buf_puts (&piece, MOCK_HUGE_WORD);
    sl_buf_t json = { 0 };
    sl_buf_puts (&json, ",\"note\":\"");
    for (long sent = 0; sent < kib * 1024; sent += MOCK_HUGE_PIECE) {
        sl_buf_append (&json, piece.data, piece.len);
        ctx->render->tool_string (ctx, 0, sl_buf_cstr (&json), "note", sl_buf_cstr (&piece), true);
        sl_buf_reset (&json);
    }
    ctx->render->tool_string (ctx, 0, "\"}", "note", "", false);
    ctx->render->finish (ctx, "tool_calls", 30, (int) (kib < 1000000 ? kib : 1000000));
    sl_buf_free (&json);
    sl_buf_free (&piece);
}

static void
s_scenario_text (s_ctx_t *ctx)
{
    ctx->render->begin (ctx);
    for (int i = 0; s_text_words [i]; i++)
        ctx->render->text (ctx, s_text_words [i]);
    ctx->render->finish (ctx, "stop", 12, 30);
}

static void
s_http_error (s_ctx_t *ctx, int status, const char *retry_after)
{
    sl_mock_script_t *sc = ctx->script;
    sl_mock_script_clear (sc);
    sc->status = status;
    if (retry_after)
        snprintf (sc->retry_after, sizeof sc->retry_after, "%s", retry_after);
    const s_render_t *r = ctx->render;
    if (status == 429)
        r->error_body (status, r->rate_limited, "The mock upstream is rate limiting this request.", &sc->error_body);
    else
        r->error_body (status, status == 503 ? r->unavailable : r->failed,
                       status == 503 ? "The mock upstream is briefly unavailable." : "The mock upstream failed.",
                       &sc->error_body);
}

//  Keep the first count events and, for mock-drop, half of the next.
static void
s_truncate (sl_mock_script_t *sc, size_t count, bool half_more)
{
    size_t keep = count + (half_more ? 1 : 0);
    if (keep > sc->count)
        keep = sc->count;
    for (size_t i = keep; i < sc->count; i++)
        sl_buf_free (&sc->events [i]);
    sc->count = keep;
    if (half_more && keep > count)
        sc->events [count].len /= 2;
}

void
sl_mock_script_not_found (int dialect, const char *message, sl_mock_script_t *out)
{
    const s_render_t *r = s_render_of (dialect);
    memset (out, 0, sizeof *out);
    out->status = 404;
    if (r)
        r->error_body (404, r->not_found, message, &out->error_body);
}

void
sl_mock_script_bad_request (int dialect, const char *message, sl_mock_script_t *out)
{
    const s_render_t *r = s_render_of (dialect);
    memset (out, 0, sizeof *out);
    out->status = 400;
    if (r)
        r->error_body (400, r == &s_gemini ? "INVALID_ARGUMENT" : "invalid_request_error", message, &out->error_body);
}

void
sl_mock_script_stamp (sl_buf_t *event, int64_t now_us)
{
    static const char placeholder [] = SL_MOCK_STAMP;
    size_t n = sizeof placeholder - 1;
    char digits [24];
    //  The monotonic clock in µs stays below 10^16 for centuries of uptime.
    snprintf (digits, sizeof digits, "%016lld", (long long) (now_us < 0 ? 0 : now_us % 10000000000000000LL));
    for (char *p = event->data, *end = event->data + event->len; p && p + n <= end;) {
        p = memmem (p, (size_t) (end - p), placeholder, n);
        if (!p)
            break;
        memcpy (p + 1, digits, 16);
        p += n;
    }
}

//  The pace of a mock-paced model in ms: "mock-paced" is SL_MOCK_PACED_MS,
//  "mock-paced-<ms>" its own (1 to SL_MOCK_PACED_MAX_MS); 0 for any other
//  model.
static long
s_paced_ms (sl_str_t model)
{
    static const char prefix [] = "mock-paced";
    size_t n = sizeof prefix - 1;
    if (model.len < n || memcmp (model.ptr, prefix, n) != 0)
        return 0;
    if (model.len == n)
        return SL_MOCK_PACED_MS;
    if (model.ptr [n] != '-' || model.len == n + 1 || model.len > n + 6)
        return 0;
    long ms = 0;
    for (size_t i = n + 1; i < model.len; i++) {
        if (model.ptr [i] < '0' || model.ptr [i] > '9')
            return 0;
        ms = ms * 10 + (model.ptr [i] - '0');
    }
    return ms >= 1 && ms <= SL_MOCK_PACED_MAX_MS ? ms : 0;
}

int
sl_mock_script_build (int dialect, sl_str_t model, sl_str_t request_body, long chunks,
                      unsigned attempt, sl_mock_script_t *out)
{
    if (sl_mock_agent_is (model))
        return sl_mock_agent_build (dialect, model, request_body, out);
    memset (out, 0, sizeof *out);
    const s_render_t *render = s_render_of (dialect);
    if (!render)
        return -1;
    s_ctx_t ctx = {
        .render = render, .dialect = dialect, .script = out,
        .hash = s_fnv1a (request_body), .model = model
    };
    out->status = 200;
    if (sl_str_eq (model, "mock-text"))
        s_scenario_text (&ctx);
    else
    if (sl_str_eq (model, "mock-tools")) {
        render->begin (&ctx);
        render->text (&ctx, "Let me check");
        render->text (&ctx, " the weather and tidy up.");
        s_tool (&ctx, 0, "weather_1", "get_weather", s_weather);
        s_tool (&ctx, 1, "shell_1", "run_shell", s_shell);
        render->finish (&ctx, "tool_calls", 40, 25);
    }
    else
    if (sl_str_eq (model, "mock-bench") || sl_str_eq (model, "mock-burst") || s_paced_ms (model) > 0) {
        long pace = s_paced_ms (model);
        bool paced = pace > 0;
        out->stamped = paced;
        out->burst = sl_str_eq (model, "mock-burst");
        out->pace_ms = paced ? pace : 0;
        if (chunks <= 0)
            chunks = SL_MOCK_BENCH_CHUNKS;
        if (chunks > SL_MOCK_BENCH_MAX)
            chunks = SL_MOCK_BENCH_MAX;
        render->begin (&ctx);
        char word [32];
        for (long i = 0; i < chunks; i++) {
            if (paced)
                snprintf (word, sizeof word, "%s", SL_MOCK_STAMP);
            else
                snprintf (word, sizeof word, "tok%ld ", i);
            render->text (&ctx, word);
        }
        s_tool (&ctx, 0, "bench_1", "get_weather", s_weather);
        s_tool (&ctx, 1, "bench_2", "read_file", s_notes);
        render->finish (&ctx, "tool_calls", 100, (int) (chunks < 1000000 ? chunks : 1000000));
    }
    else
    if (sl_str_eq (model, "mock-error")) {
        render->begin (&ctx);
        render->text (&ctx, "This answer");
        render->text (&ctx, " will not");
        render->fail (&ctx);
    }
    else
    if (sl_str_eq (model, "mock-stall") || sl_str_eq (model, "mock-drop")) {
        s_scenario_text (&ctx);
        bool drop = sl_str_eq (model, "mock-drop");
        s_truncate (out, drop ? MOCK_DROP_EVENTS : MOCK_STALL_EVENTS, drop);
        out->end = drop ? SL_MOCK_END_DROP : SL_MOCK_END_STALL;
    }
    else
    if (sl_str_eq (model, "mock-hang")) {
        out->status = 0;
        out->end = SL_MOCK_END_STALL;
    }
    else
    if (sl_str_eq (model, "mock-garbage")) {
        s_scenario_text (&ctx);
        s_truncate (out, 1, false);
        sl_buf_puts (s_new_event (out), "data: {\"choices\": [{\"delta\": \x01\xfe garbage <html>\n\n");
    }
    else
    if (sl_str_eq (model, "mock-danger-length"))
        s_scenario_danger (&ctx, "length");
    else
    if (sl_str_eq (model, "mock-danger-error"))
        s_scenario_danger (&ctx, "error");
    else
    if (sl_str_eq (model, "mock-danger-eof"))
        s_scenario_danger (&ctx, "eof");
    else
    if (sl_str_eq (model, "mock-danger-huge"))
        s_scenario_huge (&ctx, chunks <= 0 ? SL_MOCK_HUGE_KIB : chunks < SL_MOCK_HUGE_MAX_KIB ? chunks
                                                                                          : SL_MOCK_HUGE_MAX_KIB);
    else
    if (sl_str_eq (model, "mock-bad-utf8")) {
        ctx.verbatim = true;
        render->begin (&ctx);
        render->text (&ctx, MOCK_BAD_TEXT);
        s_tool (&ctx, 0, "bad\xff\\udc00", "get\xc3weather", s_bad_args);
        render->finish (&ctx, "tool_calls", 20, 10);
    }
    else
    if (sl_str_eq (model, "mock-429"))
        s_http_error (&ctx, 429, "1");
    else
    if (sl_str_eq (model, "mock-500"))
        s_http_error (&ctx, 500, NULL);
    else
    if (sl_str_eq (model, "mock-flaky")) {
        if (attempt % 2 == 0)
            s_http_error (&ctx, 503, "0");
        else
            s_scenario_text (&ctx);
    }
    else {
        sl_buf_t message = { 0 };
        sl_buf_puts (&message, "The model ");
        sl_buf_append_str (&message, model);
        sl_buf_puts (&message, " does not exist on the mock upstream (try mock-text, mock-tools, "
                               "mock-error, mock-bench or mock-paced).");
        sl_mock_script_not_found (dialect, sl_buf_cstr (&message), out);
        sl_buf_free (&message);
    }
    sl_buf_free (&ctx.acc);
    return 0;
}

//  --------------------------------------------------------------------------
//  Replay

static bool
s_ends_with (sl_str_t s, const char *suffix)
{
    size_t n = strlen (suffix);
    return s.len >= n && memcmp (s.ptr + s.len - n, suffix, n) == 0;
}

//  SSE bytes cut after each blank line, verbatim.
static void
s_replay_sse (sl_str_t file, sl_mock_script_t *out)
{
    const char *p = file.ptr, *end = file.ptr + file.len, *start = p;
    bool line_empty = true;             //  no byte since the last line end
    while (p < end) {
        char c = *p++;
        if (c != '\n' && c != '\r') {
            line_empty = false;
            continue;
        }
        if (c == '\r' && p < end && *p == '\n')
            p++;
        if (line_empty && p > start) {
            sl_buf_append (s_new_event (out), start, (size_t) (p - start));
            start = p;
        }
        line_empty = true;
    }
    if (end > start)
        sl_buf_append (s_new_event (out), start, (size_t) (end - start));
}

int
sl_mock_script_replay (sl_str_t name, sl_str_t file, sl_mock_script_t *out)
{
    memset (out, 0, sizeof *out);
    out->status = 200;
    if (s_ends_with (name, ".jsonl")) {
        const char *p = file.ptr, *end = file.ptr + file.len;
        while (p < end) {
            const char *nl = memchr (p, '\n', (size_t) (end - p));
            const char *e = nl ? nl : end;
            if (e > p) {
                sl_buf_t *ev = s_new_event (out);
                sl_buf_puts (ev, "data: ");
                sl_buf_append (ev, p, (size_t) (e - p));
                sl_buf_puts (ev, "\n\n");
            }
            p = e + 1;
        }
    }
    else
    if (s_ends_with (name, ".json")) {
        sl_json_iter_t it;
        sl_str_t elem;
        if (sl_json_array (&it, file))
            return -1;
        int rc;
        while ((rc = sl_json_next_elem (&it, &elem)) == 1) {
            //  One data line per chunk: newlines inside are JSON whitespace.
            sl_buf_t *ev = s_new_event (out);
            sl_buf_puts (ev, "data: ");
            for (size_t i = 0; i < elem.len; i++)
                if (elem.ptr [i] != '\n' && elem.ptr [i] != '\r')
                    sl_buf_putc (ev, elem.ptr [i]);
            sl_buf_puts (ev, "\n\n");
        }
        if (rc < 0) {
            sl_mock_script_clear (out);
            return -1;
        }
    }
    else
        s_replay_sse (file, out);
    return 0;
}

void
sl_mock_script_clear (sl_mock_script_t *self)
{
    for (size_t i = 0; i < self->count; i++)
        sl_buf_free (&self->events [i]);
    free (self->events);
    sl_buf_free (&self->error_body);
    memset (self, 0, sizeof *self);
}

//  --------------------------------------------------------------------------
//  Scenarios given as steps (sl_mock_agent.c)

//  A failure mid-stream as each API itself sends one: OpenAI and Anthropic
//  an error event; Responses an error event, then response.failed; Gemini
//  the bare error object after the last event.
static void
s_re_fail_as_api (s_ctx_t *ctx)
{
    ctx->render->fail (ctx);
    sl_buf_t *e = s_re_event (ctx, "response.failed");
    sl_buf_printf (e, ",\"response\":{\"id\":\"resp_mock%016llx\",\"object\":\"response\",\"created_at\":%d,"
                      "\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
                      "\"message\":\"The mock upstream failed mid-stream.\"},\"model\":",
                   (unsigned long long) ctx->hash, MOCK_CREATED);
    s_put_model (ctx, e);
    sl_buf_puts (e, ",\"output\":[]}}\n\n");
}

int
sl_mock_script_steps (int dialect, sl_str_t model, sl_str_t request_body, const sl_mock_step_t *steps,
                      size_t count, sl_mock_script_t *out)
{
    memset (out, 0, sizeof *out);
    const s_render_t *render = s_render_of (dialect);
    if (!render)
        return -1;
    s_ctx_t ctx = {
        .render = render, .dialect = dialect, .script = out,
        .hash = s_fnv1a (request_body), .model = model
    };
    out->status = 200;
    render->begin (&ctx);
    int calls = 0;
    for (size_t i = 0; i < count; i++) {
        const sl_mock_step_t *step = &steps [i];
        switch (step->kind) {
            case SL_MOCK_STEP_TEXT:
                render->text (&ctx, step->text);
                break;
            case SL_MOCK_STEP_CALL: {
                //  The arguments in three pieces, as models stream them.
                size_t n = strlen (step->text), cut1 = n / 3, cut2 = 2 * n / 3;
                char piece [3][SL_MOCK_STEP_ARGS_MAX];
                snprintf (piece [0], sizeof piece [0], "%.*s", (int) cut1, step->text);
                snprintf (piece [1], sizeof piece [1], "%.*s", (int) (cut2 - cut1), step->text + cut1);
                snprintf (piece [2], sizeof piece [2], "%s", step->text + cut2);
                const char *const fragments [] = { piece [0], piece [1], piece [2], NULL };
                s_tool (&ctx, calls++, step->id, step->name, fragments);
                break;
            }
            case SL_MOCK_STEP_FINISH:
                render->finish (&ctx, step->text, 40, 25);
                break;
            case SL_MOCK_STEP_FAIL:
                ctx.render->fail_as_api (&ctx);
                break;
            default:
                break;
        }
    }
    sl_buf_free (&ctx.acc);
    return 0;
}
