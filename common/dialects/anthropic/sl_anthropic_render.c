/*  sl_anthropic_render.c - judged blocks as Anthropic Messages SSE events.

    message_start, then one content_block_start / _delta* / _stop per
    block with contiguous indices, then message_delta (stop reason, usage)
    and message_stop. Everything a Messages stream carries gets through:
    text with citations (citations_delta), thinking with its signature
    (signature_delta before the block's stop), redacted thinking, tool_use,
    server_tool_use and server tool results, stop sequences, usage with
    cache reads and writes.

    Anthropic clients expect nothing after a tool_use but more tool_use
    blocks and the end. A judge may write a notice (a text block) after a
    call it released, so tool_use blocks are held here, whole, and sent at
    the finish, after every other block. The judge already holds a call
    until it is complete, so this costs the client nothing but the time of
    the blocks that follow the call (usually none).

    Blocks whose content is only known at their end (redacted thinking,
    server tool results) are rendered whole at their end.

    A non-streaming response is one Message object: the same content
    blocks in the same order (tool_use blocks last), the same stop reason
    and usage.
*/
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_render.h"

//  Per stream: tool_use blocks wait for the finish, so that text the
//  judge writes after a call still comes before every call.
typedef struct {
    sl_buf_t held;                      //  held calls: id, name, args, length-prefixed
    int held_count;
} s_state_t;

#define S_STATE(rs) ((s_state_t *) (rs)->state)

static void
s_clear (void *state)
{
    sl_buf_free (&((s_state_t *) state)->held);
}

static void
s_event (sl_buf_t *out, const char *name)
{
    sl_buf_puts (out, "event: ");
    sl_buf_puts (out, name);
    sl_buf_puts (out, "\ndata: ");
}

static void
s_event_end (sl_buf_t *out)
{
    sl_buf_puts (out, "\n\n");
}

//  The Anthropic error type for a status, for codes that are not one.
static const char *
s_error_type (int status, sl_str_t code)
{
    static char buf [64];
    if (code.ptr && code.len > 6 && code.len < sizeof buf
    &&  memcmp (code.ptr + code.len - 6, "_error", 6) == 0) {
        memcpy (buf, code.ptr, code.len);
        buf [code.len] = 0;
        return buf;
    }
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 529: return "overloaded_error";
        default:  return "api_error";
    }
}

static void
s_message_start (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_event (out, "message_start");
    sl_buf_puts (out, "{\"type\":\"message_start\",\"message\":{\"id\":");
    sl_render_put_id (rs, "msg_", out);
    sl_buf_puts (out, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    sl_buf_puts (out, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":");
    //  The usage the upstream reported at its start, as it reported it
    //  (clients count the context from it); zeros when it reported none.
    const sl_usage_t *u = &rs->start_usage;
    bool has = rs->start_has_usage;
    sl_buf_printf (out, "{\"input_tokens\":%lld", (long long) (has && u->input >= 0 ? u->input : 0));
    if (has && u->cache_write >= 0)
        sl_buf_printf (out, ",\"cache_creation_input_tokens\":%lld", (long long) u->cache_write);
    if (has && u->cache_read >= 0)
        sl_buf_printf (out, ",\"cache_read_input_tokens\":%lld", (long long) u->cache_read);
    sl_buf_printf (out, ",\"output_tokens\":%lld}}}", (long long) (has && u->output >= 0 ? u->output : 0));
    s_event_end (out);
}

//  content_block_start with the block's JSON (content_block value) and
//  the next index; the block is then open.
static int
s_block_start (sl_render_stream_t *rs, int kind, const char *block_json, sl_buf_t *out)
{
    int index = rs->items++;
    s_event (out, "content_block_start");
    sl_buf_printf (out, "{\"type\":\"content_block_start\",\"index\":%d,\"content_block\":%s}",
                   index, block_json);
    s_event_end (out);
    rs->open_kind = kind;
    rs->open_index = index;
    return index;
}

static void
s_delta_open (sl_render_stream_t *rs, const char *type, sl_buf_t *out)
{
    s_event (out, "content_block_delta");
    sl_buf_puts (out, "{\"type\":\"content_block_delta\",\"index\":");
    sl_buf_put_i64 (out, rs->open_index);
    sl_buf_puts (out, ",\"delta\":{\"type\":\"");
    sl_buf_puts (out, type);
    sl_buf_puts (out, "\",");
}

static void
s_text_delta (sl_render_stream_t *rs, const char *type, const char *field, sl_str_t text,
              sl_buf_t *out)
{
    s_delta_open (rs, type, out);
    sl_buf_putc (out, '"');
    sl_buf_puts (out, field);
    sl_buf_puts (out, "\":");
    sl_json_put_sl (out, text);
    sl_buf_puts (out, "}}");
    s_event_end (out);
}

static void
s_block_stop (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_event (out, "content_block_stop");
    sl_buf_printf (out, "{\"type\":\"content_block_stop\",\"index\":%d}", rs->open_index);
    s_event_end (out);
    rs->open_kind = 0;
}

//  A block rendered whole: start with its JSON, stop.
static void
s_whole_block (sl_render_stream_t *rs, int kind, sl_buf_t *json, sl_buf_t *out)
{
    s_block_start (rs, kind, sl_buf_cstr (json), out);
    s_block_stop (rs, out);
}

//  A citations_delta for the open text block.
static void
s_citation (sl_render_stream_t *rs, sl_str_t citation, sl_buf_t *out)
{
    s_delta_open (rs, "citations_delta", out);
    sl_buf_puts (out, "\"citation\":");
    sl_json_put_raw (out, citation);
    sl_buf_puts (out, "}}");
    s_event_end (out);
}

//  Citations waiting since a citation block go into the open text block;
//  with no text block open, into an empty one of their own (the provider
//  gave them in a text block; sluice saw no text in it).
static void
s_flush_citations (sl_render_stream_t *rs, sl_buf_t *out)
{
    if (!rs->pending.len)
        return;
    bool own = rs->open_kind != SL_BK_TEXT;
    if (own)
        s_block_start (rs, SL_BK_TEXT, "{\"type\":\"text\",\"text\":\"\"}", out);
    sl_str_t rest = sl_buf_str (&rs->pending), citation;
    while (sl_render_next_citation (&rest, &citation))
        s_citation (rs, citation, out);
    sl_buf_reset (&rs->pending);
    if (own)
        s_block_stop (rs, out);
}

static void s_hold_field (sl_render_stream_t *rs, sl_str_t value);

static void
s_content_start (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->block == SL_BK_CITATION)
        return;                         //  its citations come at its end
    if (msg->block != SL_BK_TEXT && msg->block != SL_BK_REFUSAL)
        s_flush_citations (rs, out);
    sl_buf_reset (&rs->open_id);
    sl_buf_reset (&rs->open_name);
    sl_buf_append_str (&rs->open_id, msg->block == SL_BK_TOOL_CALL ? sl_render_call_id (msg->id, msg->call_id)
                                                                    : msg->id);
    sl_buf_append_str (&rs->open_name, msg->name);
    rs->open_deferred = false;
    switch (msg->block) {
        case SL_BK_TEXT:
        case SL_BK_REFUSAL:
            s_block_start (rs, SL_BK_TEXT, "{\"type\":\"text\",\"text\":\"\"}", out);
            s_flush_citations (rs, out);
            break;
        case SL_BK_THINKING:
            s_block_start (rs, SL_BK_THINKING, "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}", out);
            break;
        case SL_BK_SERVER_TOOL_USE: {
            sl_buf_t json = { 0 };
            sl_buf_puts (&json, "{\"type\":\"server_tool_use\",\"id\":");
            if (msg->id.len)
                sl_json_put_sl (&json, msg->id);
            else
                sl_buf_printf (&json, "\"srvtoolu_%.24s_%d\"", rs->sid_hex, rs->items);
            sl_buf_puts (&json, ",\"name\":");
            sl_json_put_sl (&json, msg->name);
            sl_buf_puts (&json, ",\"input\":{}}");
            s_block_start (rs, SL_BK_SERVER_TOOL_USE, sl_buf_cstr (&json), out);
            sl_buf_free (&json);
            break;
        }
        case SL_BK_TOOL_CALL:
            rs->tool_calls++;
            /* fall through */
        case SL_BK_REDACTED_THINKING:
        case SL_BK_SERVER_TOOL_RESULT:
            rs->open_kind = msg->block;
            rs->open_deferred = true;
            break;
        default:
            break;
    }
}

static void
s_content_delta (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (rs->open_deferred || !rs->open_kind || !msg->text.len)
        return;
    switch (msg->block) {
        case SL_BK_TEXT:
        case SL_BK_REFUSAL:
            s_text_delta (rs, "text_delta", "text", msg->text, out);
            break;
        case SL_BK_THINKING:
            s_text_delta (rs, "thinking_delta", "thinking", msg->text, out);
            break;
        case SL_BK_SERVER_TOOL_USE:
            s_text_delta (rs, "input_json_delta", "partial_json", msg->text, out);
            break;
        default:
            break;
    }
}

static void
s_content_stop (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (sl_render_end_citations (rs, msg) || !rs->open_kind)
        return;
    sl_buf_t json = { 0 };
    switch (msg->block) {
        case SL_BK_TEXT:
            //  The citations given while the text streamed.
            s_flush_citations (rs, out);
            s_block_stop (rs, out);
            break;
        case SL_BK_TOOL_CALL:
            //  Held whole until the finish: id, name, arguments.
            if (rs->open_id.len)
                s_hold_field (rs, sl_buf_str (&rs->open_id));
            else {
                char id [64];
                snprintf (id, sizeof id, "toolu_%.24s_%d", rs->sid_hex, rs->tool_calls);
                s_hold_field (rs, sl_str (id));
            }
            s_hold_field (rs, sl_buf_str (&rs->open_name));
            s_hold_field (rs, msg->text.len ? msg->text : SL_STR_LIT ("{}"));
            S_STATE (rs)->held_count++;
            rs->open_kind = 0;
            break;
        case SL_BK_REDACTED_THINKING:
            sl_buf_puts (&json, "{\"type\":\"redacted_thinking\",\"data\":");
            sl_render_put_sig (rs, msg->text, &json);
            sl_buf_putc (&json, '}');
            s_whole_block (rs, SL_BK_REDACTED_THINKING, &json, out);
            break;
        case SL_BK_SERVER_TOOL_RESULT:
            sl_buf_puts (&json, "{\"type\":");
            if (rs->open_name.len)
                sl_json_put_sl (&json, sl_buf_str (&rs->open_name));
            else
                sl_buf_puts (&json, "\"web_search_tool_result\"");
            sl_buf_puts (&json, ",\"tool_use_id\":");
            sl_json_put_sl (&json, sl_buf_str (&rs->open_id));
            sl_buf_puts (&json, ",\"content\":");
            sl_render_put_json (&json, msg->body, "[]");
            sl_buf_putc (&json, '}');
            s_whole_block (rs, SL_BK_SERVER_TOOL_RESULT, &json, out);
            break;
        case SL_BK_THINKING:
            if (msg->sig.len) {
                s_delta_open (rs, "signature_delta", out);
                sl_buf_puts (out, "\"signature\":");
                sl_render_put_sig (rs, msg->sig, out);
                sl_buf_puts (out, "}}");
                s_event_end (out);
            }
            s_block_stop (rs, out);
            break;
        default:
            s_block_stop (rs, out);
            break;
    }
    sl_buf_free (&json);
}

//  Held calls are length-prefixed fields in rs->held: id, name, arguments.
static void
s_hold_field (sl_render_stream_t *rs, sl_str_t value)
{
    uint32_t n = (uint32_t) value.len;
    sl_buf_append (&S_STATE (rs)->held, &n, sizeof n);
    sl_buf_append (&S_STATE (rs)->held, value.ptr, value.len);
}

static sl_str_t
s_next_field (const sl_buf_t *held, size_t *pos)
{
    uint32_t n;
    memcpy (&n, held->data + *pos, sizeof n);
    sl_str_t value = sl_str_n (held->data + *pos + sizeof n, n);
    *pos += sizeof n + n;
    return value;
}

//  Send the held tool_use blocks, each whole.
static void
s_release_calls (sl_render_stream_t *rs, sl_buf_t *out)
{
    size_t pos = 0;
    sl_buf_t json = { 0 };
    for (int i = 0; i < S_STATE (rs)->held_count; i++) {
        sl_str_t id = s_next_field (&S_STATE (rs)->held, &pos);
        sl_str_t name = s_next_field (&S_STATE (rs)->held, &pos);
        sl_str_t args = s_next_field (&S_STATE (rs)->held, &pos);
        sl_buf_reset (&json);
        sl_buf_puts (&json, "{\"type\":\"tool_use\",\"id\":");
        sl_json_put_sl (&json, id);
        sl_buf_puts (&json, ",\"name\":");
        sl_json_put_sl (&json, name);
        sl_buf_puts (&json, ",\"input\":{}}");
        s_block_start (rs, SL_BK_TOOL_CALL, sl_buf_cstr (&json), out);
        s_text_delta (rs, "input_json_delta", "partial_json", args, out);
        s_block_stop (rs, out);
    }
    sl_buf_free (&json);
    sl_buf_reset (&S_STATE (rs)->held);
}

static const char *
s_stop_reason (const sl_render_stream_t *rs, const sl_msg_t *msg, int calls, char *raw, size_t size)
{
    const char *reason = sl_render_raw_finish (rs, msg, raw, size);
    if (!reason)
        switch (msg->finish) {
            case SL_FIN_LENGTH:         reason = "max_tokens"; break;
            case SL_FIN_TOOL_CALLS:     reason = "tool_use"; break;
            case SL_FIN_CONTENT_FILTER:
            case SL_FIN_REFUSAL:        reason = "refusal"; break;
            case SL_FIN_PAUSE:          reason = "pause_turn"; break;
            default:
                reason = msg->stop_seq.ptr ? "stop_sequence" : "end_turn";
                break;
        }
    //  The stop reason must agree with the calls the client got.
    if (calls == 0 && strcmp (reason, "tool_use") == 0)
        reason = "end_turn";
    if (calls > 0 && (strcmp (reason, "end_turn") == 0 || strcmp (reason, "stop_sequence") == 0))
        reason = "tool_use";
    return reason;
}

//  "stop_reason":..,"stop_sequence":..
static void
s_stop_fields (const sl_msg_t *msg, const char *reason, sl_buf_t *out)
{
    sl_buf_puts (out, "\"stop_reason\":");
    sl_json_put_str (out, reason, strlen (reason));
    sl_buf_puts (out, ",\"stop_sequence\":");
    if (msg->stop_seq.ptr && strcmp (reason, "stop_sequence") == 0)
        sl_json_put_sl (out, msg->stop_seq);
    else
        sl_buf_puts (out, "null");
}

//  The usage object of a finish; input_tokens is always there in a whole
//  message, only when reported in a message_delta.
static void
s_usage (const sl_msg_t *msg, bool whole, sl_buf_t *out)
{
    const sl_usage_t *u = &msg->usage;
    sl_buf_putc (out, '{');
    if (msg->has_usage && u->input >= 0)
        sl_buf_printf (out, "\"input_tokens\":%lld,", (long long) u->input);
    else
    if (whole)
        sl_buf_puts (out, "\"input_tokens\":0,");
    if (msg->has_usage && u->cache_read >= 0)
        sl_buf_printf (out, "\"cache_read_input_tokens\":%lld,", (long long) u->cache_read);
    if (msg->has_usage && u->cache_write >= 0)
        sl_buf_printf (out, "\"cache_creation_input_tokens\":%lld,", (long long) u->cache_write);
    sl_buf_printf (out, "\"output_tokens\":%lld}",
                   (long long) (msg->has_usage && u->output >= 0 ? u->output : 0));
}

static void
s_message_delta (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (rs->open_kind && !rs->open_deferred)
        s_block_stop (rs, out);         //  a block the upstream never closed
    s_flush_citations (rs, out);
    char raw [32];
    const char *reason = s_stop_reason (rs, msg, S_STATE (rs)->held_count, raw, sizeof raw);
    s_release_calls (rs, out);
    s_event (out, "message_delta");
    sl_buf_puts (out, "{\"type\":\"message_delta\",\"delta\":{");
    s_stop_fields (msg, reason, out);
    sl_buf_puts (out, "},\"usage\":");
    s_usage (msg, false, out);
    sl_buf_putc (out, '}');
    s_event_end (out);
    rs->finished = true;
}

static void
s_error_object (int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    const char *type = s_error_type (status, code);
    sl_buf_puts (out, "{\"type\":\"error\",\"error\":{\"type\":");
    sl_json_put_str (out, type, strlen (type));
    sl_buf_puts (out, ",\"message\":");
    sl_json_put_sl (out, message.ptr ? message : SL_STR_LIT ("upstream error"));
    sl_buf_puts (out, "}}");
}

static void
s_error (sl_render_stream_t *rs, int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) rs;
    s_event (out, "error");
    s_error_object (status ? status : 500, code, message, out);
    s_event_end (out);
}

static void
s_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    s_event (out, "message_stop");
    sl_buf_puts (out, "{\"type\":\"message_stop\"}");
    s_event_end (out);
}

//  --------------------------------------------------------------------------
//  Non-streaming: one Message

//  The content block of a snapshot block, as a stream's content_block_start
//  and deltas would have built it; nothing for blocks the format has no
//  place for (a citation with no text to belong to).
//  A text content block with its citations (comma-joined, may be empty).
static void
s_text_block (sl_str_t text, sl_str_t citations, sl_buf_t *out)
{
    sl_buf_puts (out, ",{\"type\":\"text\",\"text\":");
    sl_json_put_sl (out, text);
    if (citations.len) {
        sl_buf_puts (out, ",\"citations\":[");
        sl_buf_append_str (out, citations);
        sl_buf_putc (out, ']');
    }
    sl_buf_putc (out, '}');
}

//  citations: those the block carries with the ones waiting for it.
static void
s_content_block (const sl_render_stream_t *rs, const sl_snapshot_block_t *b, int position,
                 sl_buf_t *citations, sl_buf_t *out)
{
    switch (b->kind) {
        case SL_BK_TEXT:
        case SL_BK_REFUSAL:
            sl_render_put_citations (citations, b->body);
            s_text_block (b->text, sl_buf_str (citations), out);
            sl_buf_reset (citations);
            break;
        case SL_BK_THINKING:
            sl_buf_puts (out, ",{\"type\":\"thinking\",\"thinking\":");
            sl_json_put_sl (out, b->text);
            sl_buf_puts (out, ",\"signature\":");
            sl_render_put_sig (rs, b->sig, out);
            sl_buf_putc (out, '}');
            break;
        case SL_BK_REDACTED_THINKING:
            sl_buf_puts (out, ",{\"type\":\"redacted_thinking\",\"data\":");
            sl_json_put_sl (out, b->text);
            sl_buf_putc (out, '}');
            break;
        case SL_BK_TOOL_CALL:
        case SL_BK_SERVER_TOOL_USE:
            sl_buf_puts (out, b->kind == SL_BK_TOOL_CALL ? ",{\"type\":\"tool_use\",\"id\":"
                                                         : ",{\"type\":\"server_tool_use\",\"id\":");
            if (b->id.len)
                sl_json_put_sl (out, b->id);
            else
                sl_buf_printf (out, "\"%s_%.24s_%d\"", b->kind == SL_BK_TOOL_CALL ? "toolu" : "srvtoolu",
                               rs->sid_hex, position);
            sl_buf_puts (out, ",\"name\":");
            sl_json_put_sl (out, b->name);
            sl_buf_puts (out, ",\"input\":");
            //  input is an object; arguments cut off by max_tokens are
            //  closed as the SDK closes a streamed call's partial input.
            if (sl_json_type (b->text) == SL_JSON_OBJECT && sl_json_valid (b->text))
                sl_json_put_raw (out, sl_json_trim (b->text));
            else
                sl_render_close_json (sl_json_trim (b->text), out);
            sl_buf_putc (out, '}');
            break;
        case SL_BK_SERVER_TOOL_RESULT:
            sl_buf_puts (out, ",{\"type\":");
            if (b->name.len)
                sl_json_put_sl (out, b->name);
            else
                sl_buf_puts (out, "\"web_search_tool_result\"");
            sl_buf_puts (out, ",\"tool_use_id\":");
            sl_json_put_sl (out, b->id);
            sl_buf_puts (out, ",\"content\":");
            sl_render_put_json (out, b->body, "[]");
            sl_buf_putc (out, '}');
            break;
        default:
            break;
    }
}

static void
s_body (const sl_render_stream_t *rs, const sl_snapshot_t *snap, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"id\":");
    sl_render_put_id (rs, "msg_", out);
    sl_buf_puts (out, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    //  Every block but tool_use in order, then the tool_use blocks (as a
    //  stream sends them: see the top of this file). Each block comes
    //  with a comma before it; the first one's is skipped.
    //  Citations of a citation block wait for the next text block, or
    //  get an empty one, as in a stream.
    sl_buf_t blocks = { 0 }, citations = { 0 };
    sl_snapshot_block_t b;
    int calls = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; sl_snapshot_block (snap, i, &b); i++) {
            if ((b.kind == SL_BK_TOOL_CALL) != (pass == 1))
                continue;
            if (b.kind == SL_BK_CITATION) {
                sl_render_put_citations (&citations, b.body);
                continue;
            }
            if (citations.len && b.kind != SL_BK_TEXT && b.kind != SL_BK_REFUSAL) {
                s_text_block (SL_STR_LIT (""), sl_buf_str (&citations), &blocks);
                sl_buf_reset (&citations);
            }
            calls += b.kind == SL_BK_TOOL_CALL;
            //  Made-up ids are numbered as a stream numbers them.
            s_content_block (rs, &b, b.kind == SL_BK_TOOL_CALL ? calls : (int) i, &citations, &blocks);
        }
        if (citations.len) {
            s_text_block (SL_STR_LIT (""), sl_buf_str (&citations), &blocks);
            sl_buf_reset (&citations);
        }
    }
    sl_buf_free (&citations);
    sl_buf_puts (out, ",\"content\":[");
    if (blocks.len)
        sl_buf_append (out, blocks.data + 1, blocks.len - 1);
    sl_buf_free (&blocks);
    sl_msg_t fin;
    sl_render_snapshot_finish (snap, &fin);
    char raw [32];
    const char *reason = s_stop_reason (rs, &fin, calls, raw, sizeof raw);
    sl_buf_puts (out, "],");
    s_stop_fields (&fin, reason, out);
    sl_buf_puts (out, ",\"usage\":");
    s_usage (&fin, true, out);
    sl_buf_putc (out, '}');
}

const sl_renderer_t sl_anthropic_renderer = {
    //  An SSE comment: the SDKs and Claude Code skip it.
    .keepalive = ": keep-alive\n\n",
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .block = sl_render_block,
    .open = s_message_start,
    .on_start = s_content_start,
    .on_delta = s_content_delta,
    .on_end = s_content_stop,
    .on_finish = s_message_delta,
    .error = s_error,
    .end = s_end,
    .error_body = s_error_object,
    .body = s_body,
};
