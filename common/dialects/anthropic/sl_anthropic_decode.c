/*  sl_anthropic_decode.c - Anthropic Messages stream decoder.

    Events: message_start (identity, first usage), content_block_start /
    content_block_delta / content_block_stop per content block (text,
    thinking with its signature, redacted_thinking, tool_use with its input
    as input_json_delta fragments, server-run tools and their results,
    citations), message_delta (stop reason, final usage), message_stop,
    ping, error. The event kind is read from the data's "type" (the SSE
    event name says the same, and recordings that dropped event lines still
    decode); the event name is used only when the data has no type.

    A tool block's input: the deltas' partial_json pieces, concatenated, are
    the JSON input. A block whose deltas carry no text (a tool with no
    arguments) has the input of its content_block_start, normally {}, and
    that is sent as its one fragment when the block stops.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_decoder_impl.h"

typedef enum {
    BLOCK_NONE = 0,                     //  never started (or unknown index)
    BLOCK_TEXT,
    BLOCK_THINKING,
    BLOCK_REDACTED,
    BLOCK_TOOL,                         //  tool_use: run by the client
    BLOCK_SERVER_TOOL,                  //  server_tool_use, mcp_tool_use
    BLOCK_RESULT,                       //  *_tool_result
    BLOCK_UNKNOWN                       //  a type this decoder does not know
} s_block_kind_t;

typedef struct {
    uint8_t kind;                       //  s_block_kind_t
    bool input_seen;                    //  a non-empty partial_json arrived
    sl_buf_t input;                     //  content_block_start's input
} s_block_t;

typedef struct {
    s_block_t *blocks;                  //  by content block index
    size_t block_count;
} s_state_t;

//  Usage in message_start and message_delta.
static const sl_usage_key_t s_usage [] = {
    { "input_tokens", NULL, offsetof (sl_usage_t, input) },
    { "output_tokens", NULL, offsetof (sl_usage_t, output) },
    { "cache_read_input_tokens", NULL, offsetof (sl_usage_t, cache_read) },
    { "cache_creation_input_tokens", NULL, offsetof (sl_usage_t, cache_write) },
    { "output_tokens_details", "thinking_tokens", offsetof (sl_usage_t, reasoning) },
    { NULL, NULL, 0 }
};

static void
s_clear (void *state)
{
    s_state_t *st = state;
    for (size_t i = 0; i < st->block_count; i++)
        sl_buf_free (&st->blocks [i].input);
    free (st->blocks);
}

//  The state of block index, growing the table; NULL past the bound.
static s_block_t *
s_block (s_state_t *st, int32_t index)
{
    return sl_decoder_slot ((void **) &st->blocks, &st->block_count, sizeof (s_block_t), index);
}

#define S_MESSAGE(X) X (M_ID, "id") X (M_MODEL, "model") X (M_USAGE, "usage")
SL_DECODER_MEMBERS (s_message_members, S_MESSAGE)

//  message_start: the message's identity and the usage known at its start.
static int
s_message_start (sl_decoder_t *dec, sl_str_t message)
{
    static const sl_decoder_object_t shape = {
        NULL, "message_start without a message object", "malformed message object"
    };
    sl_str_t v [s_message_members_count];
    if (s_message_members (dec, message, &shape, v))
        return -2;
    sl_decoder_identify (dec, v [M_ID], v [M_MODEL], SL_STR_NULL);
    if (v [M_USAGE].ptr)
        sl_decoder_emit_usage (dec, v [M_USAGE], s_usage);
    return 0;
}

//  Citations already present in a text block's start.
static int
s_citations (sl_decoder_t *dec, int32_t index, sl_str_t citations)
{
    sl_json_iter_t it;
    sl_str_t citation;
    int rc;
    if (sl_json_array (&it, citations))
        return 0;                       //  null or absent
    while ((rc = sl_json_next_elem (&it, &citation)) == 1) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = index;
        d.body = citation;
        sl_decoder_emit_delta (dec, SL_D_CITATION, &d);
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed citations") : 0;
}

static bool
s_ends_with (sl_str_t s, const char *suffix)
{
    size_t n = strlen (suffix);
    return s.ptr && s.len >= n && memcmp (s.ptr + s.len - n, suffix, n) == 0;
}

static int
s_block_start (s_state_t *st, sl_decoder_t *dec, int32_t index, sl_str_t block)
{
    sl_json_iter_t it;
    sl_str_t key, value;
    sl_str_t type = SL_STR_NULL, text = SL_STR_NULL, id = SL_STR_NULL, name = SL_STR_NULL;
    sl_str_t signature = SL_STR_NULL, data = SL_STR_NULL, tool_use_id = SL_STR_NULL;
    sl_str_t input = SL_STR_NULL, content = SL_STR_NULL, citations = SL_STR_NULL;
    if (sl_json_object (&it, block))
        return sl_decoder_fail (dec, "content_block is not an object");
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        sl_str_t *slot = NULL;
        if (SL_KEY (key, "type"))
            slot = &type;
        else
        if (SL_KEY (key, "text") || SL_KEY (key, "thinking"))
            slot = &text;
        else
        if (SL_KEY (key, "id"))
            slot = &id;
        else
        if (SL_KEY (key, "name"))
            slot = &name;
        else
        if (SL_KEY (key, "signature"))
            slot = &signature;
        else
        if (SL_KEY (key, "data"))
            slot = &data;
        else
        if (SL_KEY (key, "tool_use_id"))
            slot = &tool_use_id;
        else
        if (SL_KEY (key, "input"))
            input = value;
        else
        if (SL_KEY (key, "content"))
            content = value;
        else
        if (SL_KEY (key, "citations"))
            citations = value;
        if (slot && sl_decoder_str (dec, value, slot))
            return sl_decoder_fail (dec, "content_block field is not a string");
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed content_block");
    s_block_t *b = s_block (st, index);
    if (!b) {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    sl_buf_reset (&b->input);
    b->input_seen = false;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if (sl_str_eq (type, "text")) {
        b->kind = BLOCK_TEXT;
        if (text.len) {
            d.text = text;
            sl_decoder_emit_delta (dec, SL_D_TEXT, &d);
        }
        return citations.ptr ? s_citations (dec, index, citations) : 0;
    }
    if (sl_str_eq (type, "thinking")) {
        b->kind = BLOCK_THINKING;
        if (text.len) {
            d.text = text;
            sl_decoder_emit_delta (dec, SL_D_THINKING, &d);
        }
        if (signature.len) {
            sl_msg_init (&d, SL_MSG_DELTA);
            d.index = index;
            d.sig = signature;
            sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &d);
        }
        return 0;
    }
    if (sl_str_eq (type, "redacted_thinking")) {
        b->kind = BLOCK_REDACTED;
        d.text = data.ptr ? data : SL_STR_LIT ("");
        sl_decoder_emit_delta (dec, SL_D_REDACTED, &d);
        return 0;
    }
    if (sl_str_eq (type, "tool_use") || sl_str_eq (type, "server_tool_use")
    ||  sl_str_eq (type, "mcp_tool_use")) {
        b->kind = sl_str_eq (type, "tool_use") ? BLOCK_TOOL : BLOCK_SERVER_TOOL;
        if (input.ptr)
            sl_buf_append_str (&b->input, sl_json_trim (input));
        d.id = id;
        d.name = name;
        sl_decoder_emit_delta (dec, b->kind == BLOCK_TOOL ? SL_D_TOOL_CALL : SL_D_SERVER_TOOL_USE, &d);
        return 0;
    }
    if (s_ends_with (type, "_tool_result")) {
        b->kind = BLOCK_RESULT;
        d.id = tool_use_id;
        d.name = type;
        d.body = content.ptr ? sl_json_trim (content) : SL_STR_LIT ("null");
        sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_RESULT, &d);
        return 0;
    }
    b->kind = BLOCK_UNKNOWN;
    sl_decoder_count_unknown (dec);
    return 0;
}

static int
s_block_delta (s_state_t *st, sl_decoder_t *dec, int32_t index, sl_str_t delta)
{
    sl_json_iter_t it;
    sl_str_t key, value, type = SL_STR_NULL, text = SL_STR_NULL, citation = SL_STR_NULL;
    if (sl_json_object (&it, delta))
        return sl_decoder_fail (dec, "delta is not an object");
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        sl_str_t *slot = NULL;
        if (SL_KEY (key, "type"))
            slot = &type;
        else
        if (SL_KEY (key, "text") || SL_KEY (key, "thinking")
        ||  SL_KEY (key, "partial_json") || SL_KEY (key, "signature"))
            slot = &text;
        else
        if (SL_KEY (key, "citation"))
            citation = value;
        if (slot && sl_decoder_str (dec, value, slot))
            return sl_decoder_fail (dec, "delta field is not a string");
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed delta");
    s_block_t *b = s_block (st, index);
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if (sl_str_eq (type, "text_delta"))
        d.kind = SL_D_TEXT;
    else
    if (sl_str_eq (type, "thinking_delta"))
        d.kind = SL_D_THINKING;
    else
    if (sl_str_eq (type, "signature_delta")) {
        d.kind = SL_D_SIGNATURE;
        d.sig = text;
        text = SL_STR_NULL;
        if (d.sig.len)
            sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &d);
        return 0;
    }
    else
    if (sl_str_eq (type, "input_json_delta")) {
        if (!b || (b->kind != BLOCK_TOOL && b->kind != BLOCK_SERVER_TOOL)) {
            sl_decoder_count_unknown (dec);
            return 0;
        }
        d.kind = b->kind == BLOCK_TOOL ? SL_D_TOOL_CALL : SL_D_SERVER_TOOL_USE;
        if (text.len)
            b->input_seen = true;
    }
    else
    if (sl_str_eq (type, "citations_delta")) {
        if (!citation.ptr)
            return sl_decoder_fail (dec, "citations_delta without a citation");
        d.body = sl_json_trim (citation);
        sl_decoder_emit_delta (dec, SL_D_CITATION, &d);
        return 0;
    }
    else {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    if (text.len) {
        d.text = text;
        sl_decoder_emit_delta (dec, d.kind, &d);
    }
    return 0;
}

static void
s_block_stop (s_state_t *st, sl_decoder_t *dec, int32_t index)
{
    s_block_t *b = s_block (st, index);
    if (b && (b->kind == BLOCK_TOOL || b->kind == BLOCK_SERVER_TOOL) && !b->input_seen) {
        //  No input was streamed: the start's input is the whole input.
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = index;
        d.text = b->input.len ? sl_buf_str (&b->input) : SL_STR_LIT ("{}");
        sl_decoder_emit_delta (dec, b->kind == BLOCK_TOOL ? SL_D_TOOL_CALL : SL_D_SERVER_TOOL_USE, &d);
    }
    if (b)
        sl_buf_free (&b->input);
    sl_decoder_emit_index (dec, SL_D_BLOCK_STOP, index);
}

static int
s_message_delta (sl_decoder_t *dec, sl_str_t delta, sl_str_t usage)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    if (delta.ptr && !sl_json_is_null (delta)) {
        sl_json_iter_t it;
        sl_str_t key, value;
        int rc;
        if (sl_json_object (&it, delta))
            return sl_decoder_fail (dec, "message_delta delta is not an object");
        while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
            if (SL_KEY (key, "stop_reason")) {
                if (sl_decoder_str (dec, value, &d.finish_raw))
                    return sl_decoder_fail (dec, "stop_reason is not a string");
            }
            else
            if (SL_KEY (key, "stop_sequence")) {
                if (sl_decoder_str (dec, value, &d.stop_seq))
                    return sl_decoder_fail (dec, "stop_sequence is not a string");
            }
        }
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed message_delta");
    }
    //  Usage first, so the finish that follows already knows it.
    if (usage.ptr)
        sl_decoder_emit_usage (dec, usage, s_usage);
    if (d.finish_raw.ptr)
        sl_decoder_emit_finish (dec, &d);
    return 0;
}

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t event, sl_str_t data)
{
    s_state_t *st = state;
    sl_json_iter_t it;
    if (sl_json_object (&it, data))
        return sl_decoder_fail (dec, "event data is not a JSON object");
    sl_str_t key, value, type = SL_STR_NULL, message = SL_STR_NULL, block = SL_STR_NULL;
    sl_str_t delta = SL_STR_NULL, usage = SL_STR_NULL, error = SL_STR_NULL;
    int32_t index = -1;
    bool has_index = false;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "type")) {
            if (sl_decoder_str (dec, value, &type))
                return sl_decoder_fail (dec, "event type is not a string");
        }
        else
        if (SL_KEY (key, "index")) {
            if (sl_decoder_index (value, &index))
                return sl_decoder_fail (dec, "block index is not a small integer");
            has_index = true;
        }
        else
        if (SL_KEY (key, "delta"))
            delta = value;
        else
        if (SL_KEY (key, "content_block"))
            block = value;
        else
        if (SL_KEY (key, "message"))
            message = value;
        else
        if (SL_KEY (key, "usage"))
            usage = value;
        else
        if (SL_KEY (key, "error"))
            error = value;
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "event data is not valid JSON");
    if (!type.ptr)
        type = event;
    if (sl_str_eq (type, "content_block_delta")) {
        if (!has_index || !delta.ptr)
            return sl_decoder_fail (dec, "content_block_delta without index or delta");
        return s_block_delta (st, dec, index, delta);
    }
    if (sl_str_eq (type, "content_block_start")) {
        if (!has_index || !block.ptr)
            return sl_decoder_fail (dec, "content_block_start without index or block");
        return s_block_start (st, dec, index, block);
    }
    if (sl_str_eq (type, "content_block_stop")) {
        if (!has_index)
            return sl_decoder_fail (dec, "content_block_stop without index");
        s_block_stop (st, dec, index);
        return 0;
    }
    if (sl_str_eq (type, "ping"))
        return 0;
    if (sl_str_eq (type, "message_start"))
        return s_message_start (dec, message);
    if (sl_str_eq (type, "message_delta"))
        return s_message_delta (dec, delta, usage);
    if (sl_str_eq (type, "message_stop")) {
        sl_decoder_emit_done (dec);
        return 0;
    }
    if (sl_str_eq (type, "error")) {
        sl_decoder_emit_error_object (dec, error.ptr ? error : data);
        return 0;
    }
    sl_decoder_count_unknown (dec);
    return 0;
}

//  The body's end is sl_decoder_end's: a stop reason that arrived means
//  only message_stop was lost.
const sl_decoder_vt_t sl_anthropic_decoder = {
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .event = s_event,
};
