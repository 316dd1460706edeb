/*  sl_openai_render.c - judged blocks as OpenAI chat.completion.chunk SSE.

    Every chunk shares the same head ({"id":..,"object":..,"created":..,
    "model":..,"choices":[), built once per stream; a chunk is that head,
    the choice with its delta, and the tail. Tool calls are numbered from 0
    in the order they appear, as OpenAI numbers them.

    What Chat Completions can carry: text (content), refusals (refusal),
    reasoning text (reasoning_content, as OpenAI-compatible servers send
    it), tool calls, citations (annotations), usage with cached and
    reasoning tokens. Redacted thinking, signatures and server tool blocks
    have no place in a chat chunk and are left out.

    A non-streaming response is one chat.completion object holding what
    the chunks would have carried: the text blocks joined as content (a
    judge's notice included, in its place), refusals, reasoning, the calls
    numbered and named as in a stream, the finish reason and the usage
    (always present in a chat.completion).
*/
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/openai/sl_openai.h"

//  Per stream: the head every chunk shares, built once.
typedef struct {
    sl_buf_t prefix;                    //  chunk JSON up to "choices"
} s_state_t;

#define S_STATE(rs) ((s_state_t *) (rs)->state)

static void
s_clear (void *state)
{
    sl_buf_free (&((s_state_t *) state)->prefix);
}

static const char *
s_finish_name (int finish)
{
    switch (finish) {
        case SL_FIN_LENGTH: return "length";
        case SL_FIN_TOOL_CALLS: return "tool_calls";
        case SL_FIN_CONTENT_FILTER: return "content_filter";
        default: return "stop";
    }
}

static void
s_prefix (sl_render_stream_t *rs)
{
    if (S_STATE (rs)->prefix.len)
        return;
    sl_buf_puts (&S_STATE (rs)->prefix, "data: {\"id\":");
    sl_render_put_id (rs, "chatcmpl-", &S_STATE (rs)->prefix);
    sl_buf_puts (&S_STATE (rs)->prefix, ",\"object\":\"chat.completion.chunk\",\"created\":");
    sl_buf_put_i64 (&S_STATE (rs)->prefix, rs->created);
    sl_buf_puts (&S_STATE (rs)->prefix, ",\"model\":");
    sl_json_put_sl (&S_STATE (rs)->prefix, sl_buf_str (&rs->model));
    sl_buf_puts (&S_STATE (rs)->prefix, ",\"choices\":[");
}

//  Open a chunk: head, then the choice up to its delta's opening brace.
static void
s_chunk_open (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_prefix (rs);
    sl_buf_append (out, S_STATE (rs)->prefix.data, S_STATE (rs)->prefix.len);
    sl_buf_puts (out, "{\"index\":0,\"delta\":{");
}

//  A call's id, or one made from the stream id when the upstream gave none.
static void
s_call_id (const sl_render_stream_t *rs, sl_str_t id, int k, sl_buf_t *out)
{
    if (id.len)
        sl_json_put_sl (out, id);
    else
        sl_buf_printf (out, "\"call_%.24s_%d\"", rs->sid_hex, k);
}

static void
s_chunk_close (sl_buf_t *out, const char *finish)
{
    sl_buf_puts (out, "},\"finish_reason\":");
    if (finish)
        sl_json_put_str (out, finish, strlen (finish));
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, "}]}\n\n");
}

//  A message's content before its text: null when it opens with a call or
//  a refusal, "" otherwise, as OpenAI's own streams have it (its SDK keeps
//  a message's content null then; a reasoning provider such as DeepSeek
//  sends "" once its reasoning ends, which the SDK keeps). The one body
//  says the same, so a client reads one message either way.
static bool
s_content_null (int first_block)
{
    return first_block == SL_BK_TOOL_CALL || first_block == SL_BK_REFUSAL;
}

static void
s_role_chunk (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_chunk_open (rs, out);
    sl_buf_puts (out, s_content_null (rs->first_block) ? "\"role\":\"assistant\",\"content\":null"
                                                       : "\"role\":\"assistant\",\"content\":\"\"");
    s_chunk_close (out, NULL);
}

//  The usage object; fields not reported are 0 or left out.
static void
s_usage (const sl_usage_t *u, sl_buf_t *out)
{
    int64_t in = u->input > 0 ? u->input : 0, outp = u->output > 0 ? u->output : 0;
    sl_buf_puts (out, "{\"prompt_tokens\":");
    sl_buf_put_i64 (out, in);
    sl_buf_puts (out, ",\"completion_tokens\":");
    sl_buf_put_i64 (out, outp);
    sl_buf_puts (out, ",\"total_tokens\":");
    sl_buf_put_i64 (out, u->total >= 0 ? u->total : in + outp);
    if (u->cache_read >= 0) {
        sl_buf_puts (out, ",\"prompt_tokens_details\":{\"cached_tokens\":");
        sl_buf_put_i64 (out, u->cache_read);
        sl_buf_putc (out, '}');
    }
    if (u->reasoning >= 0) {
        sl_buf_puts (out, ",\"completion_tokens_details\":{\"reasoning_tokens\":");
        sl_buf_put_i64 (out, u->reasoning);
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, '}');
}

static void
s_usage_chunk (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    s_prefix (rs);
    sl_buf_append (out, S_STATE (rs)->prefix.data, S_STATE (rs)->prefix.len);
    sl_buf_puts (out, "],\"usage\":");
    s_usage (&msg->usage, out);
    sl_buf_puts (out, "}\n\n");
}

static void
s_text_chunk (sl_render_stream_t *rs, const char *field, sl_str_t text, sl_buf_t *out)
{
    s_chunk_open (rs, out);
    sl_buf_putc (out, '"');
    sl_buf_puts (out, field);
    sl_buf_puts (out, "\":");
    sl_json_put_sl (out, text);
    s_chunk_close (out, NULL);
}

//  The citations a block's end carries, as one annotations chunk.
static void
s_citations_chunk (sl_render_stream_t *rs, sl_str_t body, sl_buf_t *out)
{
    sl_buf_t citations = { 0 };
    if (sl_render_put_citations (&citations, body)) {
        s_chunk_open (rs, out);
        sl_buf_puts (out, "\"annotations\":[");
        sl_buf_append (out, citations.data, citations.len);
        sl_buf_putc (out, ']');
        s_chunk_close (out, NULL);
    }
    sl_buf_free (&citations);
}

//  A tool call opens with its index, id, type and name.
static void
s_call_start (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->block != SL_BK_TOOL_CALL)
        return;
    int k = rs->tool_calls++;
    s_chunk_open (rs, out);
    sl_buf_puts (out, "\"tool_calls\":[{\"index\":");
    sl_buf_put_i64 (out, k);
    sl_buf_puts (out, ",\"id\":");
    s_call_id (rs, sl_render_call_id (msg->id, msg->call_id), k, out);
    sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
    sl_json_put_sl (out, msg->name);
    sl_buf_puts (out, ",\"arguments\":\"\"}}]");
    s_chunk_close (out, NULL);
}

static void
s_delta_chunk (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (!msg->text.len)
        return;
    if (msg->block == SL_BK_TEXT)
        s_text_chunk (rs, "content", msg->text, out);
    else
    if (msg->block == SL_BK_REFUSAL)
        s_text_chunk (rs, "refusal", msg->text, out);
    else
    if (msg->block == SL_BK_THINKING)
        s_text_chunk (rs, "reasoning_content", msg->text, out);
    else
    if (msg->block == SL_BK_TOOL_CALL && rs->tool_calls > 0) {
        s_chunk_open (rs, out);
        sl_buf_puts (out, "\"tool_calls\":[{\"index\":");
        sl_buf_put_i64 (out, rs->tool_calls - 1);
        sl_buf_puts (out, ",\"function\":{\"arguments\":");
        sl_json_put_sl (out, msg->text);
        sl_buf_puts (out, "}}]");
        s_chunk_close (out, NULL);
    }
}

static void
s_block_end (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->block == SL_BK_CITATION || msg->block == SL_BK_TEXT)
        s_citations_chunk (rs, msg->body, out);
    else
    if (msg->block == SL_BK_REDACTED_THINKING || msg->block == SL_BK_SERVER_TOOL_USE
    ||  msg->block == SL_BK_SERVER_TOOL_RESULT)
        rs->dropped++;                  //  no place in a chat chunk
}

static void
s_finish_chunk (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    char raw [32];
    const char *finish = sl_render_raw_finish (rs, msg, raw, sizeof raw);
    s_chunk_open (rs, out);
    s_chunk_close (out, finish ? finish : s_finish_name (msg->finish));
    rs->finished = true;
    if ((rs->flags & SL_F_USAGE) && msg->has_usage)
        s_usage_chunk (rs, msg, out);
}

void
sl_openai_error_body (int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) status;
    sl_buf_puts (out, "{\"error\":{\"message\":");
    sl_json_put_sl (out, message.ptr ? message : SL_STR_LIT ("upstream error"));
    sl_buf_puts (out, ",\"type\":");
    sl_json_put_sl (out, code.ptr ? code : SL_STR_LIT ("upstream_error"));
    sl_buf_puts (out, ",\"param\":null,\"code\":null}}");
}

static void
s_error (sl_render_stream_t *rs, int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "data: ");
    sl_openai_error_body (status, code, message, out);
    sl_buf_puts (out, "\n\n");
}

static void
s_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "data: [DONE]\n\n");
}

//  --------------------------------------------------------------------------
//  Non-streaming: one chat.completion

//  The text of every block of a kind, joined; false when there is none.
static bool
s_join (const sl_snapshot_t *snap, int kind, sl_buf_t *out)
{
    bool any = false;
    sl_snapshot_block_t b;
    for (size_t i = 0; sl_snapshot_block (snap, i, &b); i++)
        if (b.kind == kind) {
            sl_buf_append_str (out, b.text);
            any = true;
        }
    return any;
}

static void
s_body (const sl_render_stream_t *rs, const sl_snapshot_t *snap, sl_buf_t *out)
{
    sl_buf_t text = { 0 };
    sl_buf_puts (out, "{\"id\":");
    sl_render_put_id (rs, "chatcmpl-", out);
    sl_buf_puts (out, ",\"object\":\"chat.completion\",\"created\":");
    sl_buf_put_i64 (out, rs->created);
    sl_buf_puts (out, ",\"model\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    sl_buf_puts (out, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
    sl_snapshot_block_t b;
    if (s_join (snap, SL_BK_TEXT, &text))
        sl_json_put_sl (out, sl_buf_str (&text));
    else
        sl_buf_puts (out, s_content_null (sl_snapshot_block (snap, 0, &b) ? b.kind : 0) ? "null" : "\"\"");
    sl_buf_reset (&text);
    sl_buf_puts (out, ",\"refusal\":");
    if (s_join (snap, SL_BK_REFUSAL, &text))
        sl_json_put_sl (out, sl_buf_str (&text));
    else
        sl_buf_puts (out, "null");
    sl_buf_reset (&text);
    if (s_join (snap, SL_BK_THINKING, &text)) {
        sl_buf_puts (out, ",\"reasoning_content\":");
        sl_json_put_sl (out, sl_buf_str (&text));
    }
    //  Citations of the text blocks, and of citation blocks of their own.
    sl_buf_reset (&text);
    for (size_t i = 0; sl_snapshot_block (snap, i, &b); i++)
        if (b.kind == SL_BK_TEXT || b.kind == SL_BK_CITATION)
            sl_render_put_citations (&text, b.body);
    sl_buf_puts (out, ",\"annotations\":[");
    sl_buf_append (out, text.data, text.len);
    sl_buf_putc (out, ']');
    int calls = 0;
    for (size_t i = 0; sl_snapshot_block (snap, i, &b); i++) {
        if (b.kind != SL_BK_TOOL_CALL)
            continue;
        sl_buf_puts (out, calls ? ",{\"id\":" : ",\"tool_calls\":[{\"id\":");
        s_call_id (rs, sl_render_call_id (b.id, b.call_id), calls, out);
        sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
        sl_json_put_sl (out, b.name);
        sl_buf_puts (out, ",\"arguments\":");
        sl_json_put_sl (out, b.text);
        sl_buf_puts (out, "}}");
        calls++;
    }
    if (calls)
        sl_buf_putc (out, ']');
    sl_msg_t fin;
    sl_render_snapshot_finish (snap, &fin);
    char raw [32];
    const char *finish = sl_render_raw_finish (rs, &fin, raw, sizeof raw);
    if (!finish)
        finish = s_finish_name (fin.finish);
    sl_buf_puts (out, "},\"logprobs\":null,\"finish_reason\":");
    sl_json_put_str (out, finish, strlen (finish));
    sl_buf_puts (out, "}],\"usage\":");
    s_usage (&fin.usage, out);
    sl_buf_putc (out, '}');
    sl_buf_free (&text);
}

const sl_renderer_t sl_openai_renderer = {
    //  An SSE comment: every Chat Completions client skips it.
    .keepalive = ": keep-alive\n\n",
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .block = sl_render_block,
    .open = s_role_chunk,
    .on_start = s_call_start,
    .on_delta = s_delta_chunk,
    .on_end = s_block_end,
    .on_finish = s_finish_chunk,
    .error = s_error,
    .end = s_end,
    .error_body = sl_openai_error_body,
    .body = s_body,
};
