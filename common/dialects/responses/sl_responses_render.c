/*  sl_responses_render.c - judged blocks as OpenAI Responses API events.

    response.created and response.in_progress, then one output item per
    block (output_item.added ... output_item.done, with the content part
    and delta events of its type), then response.completed (or
    response.incomplete) carrying the whole response: every output item
    and the usage. Every event has a sequence_number from 0. A response
    that breaks ends as the API ends one: an error event, then
    response.failed with the error in the response (clients such as Codex
    wait for that, not for the error event); an item the failure (or a
    length finish) cut off is done with status "incomplete".

    Block kinds to output items: text -> message with an output_text part
    (citations as annotations); refusal -> message with a refusal part;
    thinking -> reasoning (summary_text parts for summaries, reasoning_text
    content otherwise; the signature is its encrypted_content); redacted
    thinking -> reasoning with encrypted_content only; tool call ->
    function_call (item id and call_id); server tool use -> its *_call
    item. A server tool's result has no item of its own in this format.
*/
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/openai/sl_openai.h"

//  Per stream: event numbers and the items completed so far.
typedef struct {
    uint64_t seq;                       //  sequence_number of the next event
    sl_buf_t output;                    //  completed output items, comma-joined
} s_state_t;

#define S_STATE(rs) ((s_state_t *) (rs)->state)

static void
s_clear (void *state)
{
    sl_buf_free (&((s_state_t *) state)->output);
}

//  Open an event: "event: type" and data up to the sequence number.
static void
s_event (sl_render_stream_t *rs, sl_buf_t *out, const char *type)
{
    sl_buf_puts (out, "event: ");
    sl_buf_puts (out, type);
    sl_buf_puts (out, "\ndata: {\"type\":\"");
    sl_buf_puts (out, type);
    sl_buf_puts (out, "\",\"sequence_number\":");
    sl_buf_put_i64 (out, (int64_t) S_STATE (rs)->seq++);
}

static void
s_event_end (sl_buf_t *out)
{
    sl_buf_puts (out, "}\n\n");
}

//  ,"item_id":..,"output_index":n
static void
s_item_ref (sl_render_stream_t *rs, sl_buf_t *out)
{
    sl_buf_puts (out, ",\"item_id\":");
    sl_json_put_sl (out, sl_buf_str (&rs->open_id));
    sl_buf_puts (out, ",\"output_index\":");
    sl_buf_put_i64 (out, rs->open_index);
}

static void
s_usage (const sl_msg_t *msg, sl_buf_t *out)
{
    const sl_usage_t *u = &msg->usage;
    int64_t in = u->input > 0 ? u->input : 0, outp = u->output > 0 ? u->output : 0;
    sl_buf_printf (out, "{\"input_tokens\":%lld,\"input_tokens_details\":{\"cached_tokens\":%lld},"
                        "\"output_tokens\":%lld,\"output_tokens_details\":{\"reasoning_tokens\":%lld},"
                        "\"total_tokens\":%lld}",
                   (long long) in, (long long) (u->cache_read > 0 ? u->cache_read : 0),
                   (long long) outp, (long long) (u->reasoning > 0 ? u->reasoning : 0),
                   (long long) (u->total >= 0 ? u->total : in + outp));
}

//  The response object; msg is the finish (NULL while in progress),
//  output its items, comma-joined.
static void
s_response_failed (const sl_render_stream_t *rs, const char *status, const char *incomplete,
                   sl_str_t output, const sl_msg_t *msg, const sl_msg_t *error, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"id\":");
    sl_render_put_id (rs, "resp_", out);
    sl_buf_printf (out, ",\"object\":\"response\",\"created_at\":%lld,\"status\":\"%s\",\"error\":",
                   (long long) rs->created, status);
    if (error) {
        sl_buf_puts (out, "{\"code\":");
        sl_json_put_sl (out, error->code);
        sl_buf_puts (out, ",\"message\":");
        sl_json_put_sl (out, error->message);
        sl_buf_putc (out, '}');
    }
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"incomplete_details\":");
    if (incomplete)
        sl_buf_printf (out, "{\"reason\":\"%s\"}", incomplete);
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"instructions\":null,\"metadata\":{},\"model\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    sl_buf_puts (out, ",\"output\":[");
    sl_buf_append_str (out, output);
    sl_buf_puts (out, "],\"parallel_tool_calls\":true,\"temperature\":null,\"tool_choice\":\"auto\","
                      "\"tools\":[],\"top_p\":null,\"usage\":");
    if (msg && msg->has_usage)
        s_usage (msg, out);
    else
        sl_buf_puts (out, "null");
    sl_buf_putc (out, '}');
}

static void
s_response (const sl_render_stream_t *rs, const char *status, const char *incomplete,
            sl_str_t output, const sl_msg_t *msg, sl_buf_t *out)
{
    s_response_failed (rs, status, incomplete, output, msg, NULL, out);
}

static void
s_start_response (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_event (rs, out, "response.created");
    sl_buf_puts (out, ",\"response\":");
    s_response (rs, "in_progress", NULL, SL_STR_LIT (""), NULL, out);
    s_event_end (out);
    s_event (rs, out, "response.in_progress");
    sl_buf_puts (out, ",\"response\":");
    s_response (rs, "in_progress", NULL, SL_STR_LIT (""), NULL, out);
    s_event_end (out);
}

//  The item's type for a server tool: its name as a *_call item type.
static void
s_server_type (sl_str_t name, sl_buf_t *out)
{
    if (!name.len)
        sl_buf_puts (out, "\"web_search_call\"");
    else
    if (name.len > 5 && memcmp (name.ptr + name.len - 5, "_call", 5) == 0)
        sl_json_put_sl (out, name);
    else {
        sl_buf_t t = { 0 };
        sl_buf_append_str (&t, name);
        sl_buf_puts (&t, "_call");
        sl_json_put_sl (out, sl_buf_str (&t));
        sl_buf_free (&t);
    }
}

//  An output item, as one of its events or the final response lists it.
typedef struct {
    int kind;                           //  sl_block_kind_t of the block
    bool summary;                       //  thinking: a summary
    bool done;                          //  at its end: content known, status completed
    bool incomplete;                    //  done, but cut off (status incomplete)
    sl_str_t id, call_id, name;
    sl_str_t text, sig;                 //  content at its end
    sl_str_t annotations;               //  citations, comma-joined
} s_item_t;

static void
s_item_json (const sl_render_stream_t *rs, const s_item_t *item, sl_buf_t *out)
{
    const char *status = item->incomplete ? "incomplete" : item->done ? "completed" : "in_progress";
    sl_buf_puts (out, "{\"id\":");
    sl_json_put_sl (out, item->id);
    switch (item->kind) {
        case SL_BK_TEXT:
        case SL_BK_REFUSAL:
            sl_buf_printf (out, ",\"type\":\"message\",\"status\":\"%s\",\"role\":\"assistant\",\"content\":[",
                           status);
            if (item->done && item->kind == SL_BK_TEXT) {
                sl_buf_puts (out, "{\"type\":\"output_text\",\"text\":");
                sl_json_put_sl (out, item->text);
                sl_buf_puts (out, ",\"annotations\":[");
                sl_buf_append_str (out, item->annotations);
                sl_buf_puts (out, "],\"logprobs\":[]}");
            }
            else
            if (item->done) {
                sl_buf_puts (out, "{\"type\":\"refusal\",\"refusal\":");
                sl_json_put_sl (out, item->text);
                sl_buf_putc (out, '}');
            }
            sl_buf_putc (out, ']');
            break;
        case SL_BK_THINKING:
        case SL_BK_REDACTED_THINKING:
            sl_buf_puts (out, ",\"type\":\"reasoning\",\"summary\":[");
            if (item->done && item->kind == SL_BK_THINKING && item->summary) {
                sl_buf_puts (out, "{\"type\":\"summary_text\",\"text\":");
                sl_json_put_sl (out, item->text);
                sl_buf_putc (out, '}');
            }
            sl_buf_putc (out, ']');
            if (item->kind == SL_BK_THINKING && !item->summary) {
                sl_buf_puts (out, ",\"content\":[{\"type\":\"reasoning_text\",\"text\":");
                sl_json_put_sl (out, item->done ? item->text : SL_STR_LIT (""));
                sl_buf_puts (out, "}]");
            }
            if (item->done && item->kind == SL_BK_THINKING && item->sig.len) {
                sl_buf_puts (out, ",\"encrypted_content\":");
                sl_render_put_sig (rs, item->sig, out);
            }
            if (item->done && item->kind == SL_BK_REDACTED_THINKING) {
                sl_buf_puts (out, ",\"encrypted_content\":");
                sl_render_put_sig (rs, item->text, out);
            }
            break;
        case SL_BK_TOOL_CALL:
            sl_buf_printf (out, ",\"type\":\"function_call\",\"status\":\"%s\",\"arguments\":", status);
            sl_json_put_sl (out, item->done ? item->text : SL_STR_LIT (""));
            sl_buf_puts (out, ",\"call_id\":");
            sl_json_put_sl (out, item->call_id);
            sl_buf_puts (out, ",\"name\":");
            sl_json_put_sl (out, item->name);
            break;
        case SL_BK_SERVER_TOOL_USE:
            sl_buf_puts (out, ",\"type\":");
            s_server_type (item->name, out);
            sl_buf_printf (out, ",\"status\":\"%s\"", status);
            if (item->done && sl_json_type (item->text) == SL_JSON_OBJECT && sl_json_valid (item->text)) {
                sl_buf_puts (out, ",\"action\":");
                sl_json_put_raw (out, sl_json_trim (item->text));
            }
            break;
        default:
            break;
    }
    sl_buf_putc (out, '}');
}

//  The item JSON of the open block; end is the block's end (NULL for the
//  in-progress item of output_item.added).
static void
s_item (sl_render_stream_t *rs, const sl_msg_t *end, sl_buf_t *out)
{
    s_item_t item = {
        .kind = rs->open_kind, .summary = rs->open_summary, .done = end != NULL,
        .id = sl_buf_str (&rs->open_id), .call_id = sl_buf_str (&rs->open_call_id),
        .name = sl_buf_str (&rs->open_name), .annotations = sl_buf_str (&rs->open_extra),
    };
    if (end) {
        item.text = end->text;
        item.sig = end->sig;
        item.incomplete = (end->flags & SL_F_INCOMPLETE) != 0;
    }
    s_item_json (rs, &item, out);
}

static void
s_item_added (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_event (rs, out, "response.output_item.added");
    sl_buf_printf (out, ",\"output_index\":%d,\"item\":", rs->open_index);
    s_item (rs, NULL, out);
    s_event_end (out);
}

static void
s_item_done (sl_render_stream_t *rs, const sl_msg_t *end, sl_buf_t *out)
{
    s_event (rs, out, "response.output_item.done");
    sl_buf_printf (out, ",\"output_index\":%d,\"item\":", rs->open_index);
    size_t at = out->len;
    s_item (rs, end, out);
    //  The final response lists every item as its done event showed it.
    if (S_STATE (rs)->output.len)
        sl_buf_putc (&S_STATE (rs)->output, ',');
    sl_buf_append (&S_STATE (rs)->output, out->data + at, out->len - at);
    s_event_end (out);
    rs->open_kind = 0;
}

static const char *
s_id_prefix (int kind)
{
    switch (kind) {
        case SL_BK_TEXT:
        case SL_BK_REFUSAL:         return "msg";
        case SL_BK_THINKING:
        case SL_BK_REDACTED_THINKING: return "rs";
        case SL_BK_TOOL_CALL:       return "fc";
        default:                    return "ws";
    }
}

//  An item's id (and a call's call_id), from what the upstream gave or
//  made from the stream id and the output index. Responses calls have an
//  item id and a call id; a provider with one id gives it as the call id.
static void
s_item_ids (const sl_render_stream_t *rs, int kind, sl_str_t id, sl_str_t call_id, int index,
            sl_buf_t *id_out, sl_buf_t *call_id_out)
{
    if (kind == SL_BK_TOOL_CALL) {
        if (call_id.len)
            sl_buf_append_str (call_id_out, call_id);
        else
        if (id.len)
            sl_buf_append_str (call_id_out, id);
        else
            sl_buf_printf (call_id_out, "call_%.24s_%d", rs->sid_hex, index);
        if (id.len && call_id.len)
            sl_buf_append_str (id_out, id);
    }
    else
    if (id.len)
        sl_buf_append_str (id_out, id);
    if (!id_out->len)
        sl_buf_printf (id_out, "%s_%.24s_%d", s_id_prefix (kind), rs->sid_hex, index);
}

static void
s_part (sl_render_stream_t *rs, const char *event, const char *part_json, sl_buf_t *out)
{
    s_event (rs, out, event);
    s_item_ref (rs, out);
    sl_buf_printf (out, ",\"content_index\":0,\"part\":%s", part_json);
    s_event_end (out);
}

//  An annotation for the open text item (kept for its done events).
static void
s_citation (sl_render_stream_t *rs, sl_str_t citation, sl_buf_t *out)
{
    s_event (rs, out, "response.output_text.annotation.added");
    s_item_ref (rs, out);
    sl_buf_printf (out, ",\"content_index\":0,\"annotation_index\":%d,\"annotation\":",
                   rs->open_extra_count++);
    sl_json_put_raw (out, citation);
    s_event_end (out);
    if (rs->open_extra.len)
        sl_buf_putc (&rs->open_extra, ',');
    sl_json_put_raw (&rs->open_extra, citation);
}

//  Citations waiting since a citation block, into the open text item.
static void
s_flush_citations (sl_render_stream_t *rs, sl_buf_t *out)
{
    sl_str_t rest = sl_buf_str (&rs->pending), citation;
    while (sl_render_next_citation (&rest, &citation))
        s_citation (rs, citation, out);
    sl_buf_reset (&rs->pending);
}

static void
s_item_start (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->block == SL_BK_CITATION || msg->block == SL_BK_SERVER_TOOL_RESULT)
        return;                         //  no item of their own
    rs->open_kind = msg->block;
    rs->open_index = rs->items++;
    rs->open_deferred = msg->block == SL_BK_REDACTED_THINKING;
    rs->open_summary = (msg->flags & SL_F_SUMMARY) != 0;
    rs->open_extra_count = 0;
    sl_buf_reset (&rs->open_extra);
    sl_buf_reset (&rs->open_id);
    sl_buf_reset (&rs->open_call_id);
    sl_buf_reset (&rs->open_name);
    sl_buf_append_str (&rs->open_name, msg->name);
    if (msg->block == SL_BK_TOOL_CALL)
        rs->tool_calls++;
    s_item_ids (rs, msg->block, msg->id, msg->call_id, rs->open_index, &rs->open_id, &rs->open_call_id);
    if (rs->open_deferred)
        return;
    s_item_added (rs, out);
    if (msg->block == SL_BK_TEXT) {
        s_part (rs, "response.content_part.added",
                "{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[],\"logprobs\":[]}", out);
        s_flush_citations (rs, out);
    }
    else
    if (msg->block == SL_BK_REFUSAL)
        s_part (rs, "response.content_part.added", "{\"type\":\"refusal\",\"refusal\":\"\"}", out);
    else
    if (msg->block == SL_BK_THINKING && rs->open_summary) {
        s_event (rs, out, "response.reasoning_summary_part.added");
        s_item_ref (rs, out);
        sl_buf_puts (out, ",\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":\"\"}");
        s_event_end (out);
    }
}

static void
s_delta (sl_render_stream_t *rs, const char *event, const char *index_field, sl_str_t text,
         sl_buf_t *out)
{
    s_event (rs, out, event);
    s_item_ref (rs, out);
    if (index_field) {
        sl_buf_puts (out, ",\"");
        sl_buf_puts (out, index_field);
        sl_buf_puts (out, "\":0");
    }
    sl_buf_puts (out, ",\"delta\":");
    sl_json_put_sl (out, text);
    if (strcmp (event, "response.output_text.delta") == 0)
        sl_buf_puts (out, ",\"logprobs\":[]");
    s_event_end (out);
}

static void
s_item_delta (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (!rs->open_kind || rs->open_deferred || !msg->text.len)
        return;
    switch (msg->block) {
        case SL_BK_TEXT:
            s_delta (rs, "response.output_text.delta", "content_index", msg->text, out);
            break;
        case SL_BK_REFUSAL:
            s_delta (rs, "response.refusal.delta", "content_index", msg->text, out);
            break;
        case SL_BK_THINKING:
            if (rs->open_summary)
                s_delta (rs, "response.reasoning_summary_text.delta", "summary_index", msg->text, out);
            else
                s_delta (rs, "response.reasoning_text.delta", "content_index", msg->text, out);
            break;
        case SL_BK_TOOL_CALL:
            s_delta (rs, "response.function_call_arguments.delta", NULL, msg->text, out);
            break;
        default:
            break;
    }
}

static void
s_item_end (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (sl_render_end_citations (rs, msg) || !rs->open_kind)
        return;
    sl_buf_t part = { 0 };
    switch (rs->open_kind) {
        case SL_BK_TEXT:
            //  The citations given while the text streamed.
            s_flush_citations (rs, out);
            s_event (rs, out, "response.output_text.done");
            s_item_ref (rs, out);
            sl_buf_puts (out, ",\"content_index\":0,\"text\":");
            sl_json_put_sl (out, msg->text);
            sl_buf_puts (out, ",\"logprobs\":[]");
            s_event_end (out);
            sl_buf_puts (&part, "{\"type\":\"output_text\",\"text\":");
            sl_json_put_sl (&part, msg->text);
            sl_buf_puts (&part, ",\"annotations\":[");
            sl_buf_append (&part, rs->open_extra.data, rs->open_extra.len);
            sl_buf_puts (&part, "],\"logprobs\":[]}");
            s_part (rs, "response.content_part.done", sl_buf_cstr (&part), out);
            break;
        case SL_BK_REFUSAL:
            s_event (rs, out, "response.refusal.done");
            s_item_ref (rs, out);
            sl_buf_puts (out, ",\"content_index\":0,\"refusal\":");
            sl_json_put_sl (out, msg->text);
            s_event_end (out);
            sl_buf_puts (&part, "{\"type\":\"refusal\",\"refusal\":");
            sl_json_put_sl (&part, msg->text);
            sl_buf_putc (&part, '}');
            s_part (rs, "response.content_part.done", sl_buf_cstr (&part), out);
            break;
        case SL_BK_THINKING:
            if (rs->open_summary) {
                s_event (rs, out, "response.reasoning_summary_text.done");
                s_item_ref (rs, out);
                sl_buf_puts (out, ",\"summary_index\":0,\"text\":");
                sl_json_put_sl (out, msg->text);
                s_event_end (out);
                s_event (rs, out, "response.reasoning_summary_part.done");
                s_item_ref (rs, out);
                sl_buf_puts (out, ",\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":");
                sl_json_put_sl (out, msg->text);
                sl_buf_putc (out, '}');
                s_event_end (out);
            }
            else {
                s_event (rs, out, "response.reasoning_text.done");
                s_item_ref (rs, out);
                sl_buf_puts (out, ",\"content_index\":0,\"text\":");
                sl_json_put_sl (out, msg->text);
                s_event_end (out);
            }
            break;
        case SL_BK_TOOL_CALL:
            s_event (rs, out, "response.function_call_arguments.done");
            s_item_ref (rs, out);
            sl_buf_puts (out, ",\"name\":");
            sl_json_put_sl (out, sl_buf_str (&rs->open_name));
            sl_buf_puts (out, ",\"arguments\":");
            sl_json_put_sl (out, msg->text);
            s_event_end (out);
            break;
        case SL_BK_REDACTED_THINKING:
            s_item_added (rs, out);
            break;
        default:
            break;
    }
    sl_buf_free (&part);
    s_item_done (rs, msg, out);
}

//  The reason a finish makes the response incomplete, or NULL.
static const char *
s_incomplete (const sl_render_stream_t *rs, const sl_msg_t *msg, char *raw, size_t size)
{
    const char *passed = sl_render_raw_finish (rs, msg, raw, size);
    if (passed && (strcmp (passed, "max_output_tokens") == 0 || strcmp (passed, "content_filter") == 0))
        return passed;
    if (!passed && msg->finish == SL_FIN_LENGTH)
        return "max_output_tokens";
    if (!passed && msg->finish == SL_FIN_CONTENT_FILTER)
        return "content_filter";
    return NULL;
}

static void
s_response_end (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (rs->pending.len) {
        //  Citations no text followed: a message of their own, empty.
        sl_msg_t text;
        sl_msg_init (&text, SL_MSG_BLOCK);
        text.kind = SL_B_START;
        text.block = SL_BK_TEXT;
        s_item_start (rs, &text, out);
        text.kind = SL_B_END;
        text.text = SL_STR_LIT ("");
        s_item_end (rs, &text, out);
    }
    char raw [32];
    const char *incomplete = s_incomplete (rs, msg, raw, sizeof raw);
    const char *event = incomplete ? "response.incomplete" : "response.completed";
    s_event (rs, out, event);
    sl_buf_puts (out, ",\"response\":");
    s_response (rs, incomplete ? "incomplete" : "completed", incomplete, sl_buf_str (&S_STATE (rs)->output), msg, out);
    s_event_end (out);
    rs->finished = true;
}

//  The error event as the API documents it (code, message, param), with
//  the same error as a nested object too: the SDKs' stream readers raise
//  their API error class for an event whose data has "error", and would
//  otherwise hand the client the bare event.
static void
s_error (sl_render_stream_t *rs, int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) status;
    code = code.ptr ? code : SL_STR_LIT ("server_error");
    message = message.ptr ? message : SL_STR_LIT ("upstream error");
    sl_render_open (rs, out);
    s_event (rs, out, "error");
    sl_buf_puts (out, ",\"code\":");
    sl_json_put_sl (out, code);
    sl_buf_puts (out, ",\"message\":");
    sl_json_put_sl (out, message);
    sl_buf_puts (out, ",\"param\":null,\"error\":{\"type\":");
    sl_json_put_sl (out, code);
    sl_buf_puts (out, ",\"code\":");
    sl_json_put_sl (out, code);
    sl_buf_puts (out, ",\"message\":");
    sl_json_put_sl (out, message);
    sl_buf_puts (out, ",\"param\":null}");
    s_event_end (out);
    if (rs->open_kind)
        return;                         //  an item left open cannot be listed (the
                                        //  aggregator closes every block before an error)
    //  Then the response, failed, with the items it got to (the API's own
    //  end of a broken stream: Codex reports response.failed's error).
    sl_msg_t error;
    sl_msg_init (&error, SL_MSG_ERROR);
    error.code = code;
    error.message = message;
    s_event (rs, out, "response.failed");
    sl_buf_puts (out, ",\"response\":");
    s_response_failed (rs, "failed", NULL, sl_buf_str (&S_STATE (rs)->output), NULL, &error, out);
    s_event_end (out);
}

static void
s_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    (void) out;                         //  response.completed was the last event
}

//  --------------------------------------------------------------------------
//  Non-streaming: one response object

static void
s_body (const sl_render_stream_t *rs, const sl_snapshot_t *snap, sl_buf_t *out)
{
    sl_buf_t output = { 0 }, id = { 0 }, call_id = { 0 }, annotations = { 0 };
    sl_snapshot_block_t b;
    int index = 0;
    size_t count = sl_snapshot_count (snap);
    //  One pass more than there are blocks: citations no text followed
    //  get an empty message of their own, as in a stream.
    for (size_t i = 0; i <= count; i++) {
        if (i == count) {
            if (!annotations.len)
                break;
            b = (sl_snapshot_block_t) { .kind = SL_BK_TEXT, .text = SL_STR_LIT ("") };
        }
        else
            sl_snapshot_block (snap, i, &b);
        if (b.kind == SL_BK_CITATION) {
            sl_render_put_citations (&annotations, b.body);
            continue;                   //  for the text that follows
        }
        if (b.kind == SL_BK_SERVER_TOOL_RESULT)
            continue;                   //  no item of its own, as in a stream
        sl_buf_reset (&id);
        sl_buf_reset (&call_id);
        s_item_ids (rs, b.kind, b.id, b.call_id, index, &id, &call_id);
        if (b.kind == SL_BK_TEXT)
            sl_render_put_citations (&annotations, b.body);
        s_item_t item = {
            .kind = b.kind, .summary = (b.flags & SL_F_SUMMARY) != 0, .done = true,
            .incomplete = (b.flags & SL_F_INCOMPLETE) != 0,
            .id = sl_buf_str (&id), .call_id = sl_buf_str (&call_id), .name = b.name,
            .text = b.text, .sig = b.sig, .annotations = sl_buf_str (&annotations),
        };
        if (output.len)
            sl_buf_putc (&output, ',');
        s_item_json (rs, &item, &output);
        if (b.kind == SL_BK_TEXT)
            sl_buf_reset (&annotations);
        index++;
    }
    sl_msg_t fin;
    sl_render_snapshot_finish (snap, &fin);
    char raw [32];
    const char *incomplete = s_incomplete (rs, &fin, raw, sizeof raw);
    s_response (rs, incomplete ? "incomplete" : "completed", incomplete, sl_buf_str (&output), &fin, out);
    sl_buf_free (&output);
    sl_buf_free (&id);
    sl_buf_free (&call_id);
    sl_buf_free (&annotations);
}

const sl_renderer_t sl_responses_renderer = {
    //  An SSE comment: the SDKs and Codex skip it.
    .keepalive = ": keep-alive\n\n",
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .block = sl_render_block,
    .open = s_start_response,
    .on_start = s_item_start,
    .on_delta = s_item_delta,
    .on_end = s_item_end,
    .on_finish = s_response_end,
    .error = s_error,
    .end = s_end,
    .error_body = sl_openai_error_body,     //  error responses have the Chat Completions shape
    .body = s_body,
};
