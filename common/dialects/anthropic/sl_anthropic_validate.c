/*  sl_anthropic_validate.c - output legality of Anthropic Messages streams and bodies.

    A stream (what every dialect obeys besides is in sl_validate.h):
    message_start first and once; content_block_start at the next index
    with no block open; deltas of the open block and of a type that block
    takes; one stop per block; after a tool_use only more tool_use blocks;
    message_delta once with no block open and a stop_reason that agrees
    with the tool_use blocks sent (tool_use iff there are calls, unless
    the response was cut at max_tokens); message_stop last.

    A whole body (non-streaming): a message with an id and the assistant
    role; content blocks of known types with their fields (a tool_use with
    id, name and an object input), nothing but tool_use after a tool_use;
    a stop_reason that agrees with the tool_use blocks as in a stream;
    usage with input and output tokens.

    Tests: tests/unit/common/dialects/test_sl_validate.c (legal and
    illegal streams and bodies of this dialect), tests/fuzz/fuzz_validate.c.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_validate_impl.h"

//  Does a block of this type take a delta of that type?
static bool
s_anthropic_takes (const char *block, sl_str_t delta)
{
    if (strcmp (block, "text") == 0)
        return sl_str_eq (delta, "text_delta") || sl_str_eq (delta, "citations_delta");
    if (strcmp (block, "thinking") == 0)
        return sl_str_eq (delta, "thinking_delta") || sl_str_eq (delta, "signature_delta");
    if (strcmp (block, "tool_use") == 0 || strcmp (block, "server_tool_use") == 0
    ||  strcmp (block, "mcp_tool_use") == 0)
        return sl_str_eq (delta, "input_json_delta");
    return false;
}

static int
s_anthropic_block_start (sl_validate_t *self, sl_vd_state_t *st, sl_str_t data)
{
    int64_t index;
    if (st->delta_seen)
        return sl_vd_fail (self, "content_block_start after message_delta");
    if (st->open_index >= 0)
        return sl_vd_fail (self, "content_block_start while block %d is open", st->open_index);
    if (!sl_vd_int (data, "index", &index) || index != st->next_index)
        return sl_vd_fail (self, "content_block_start at index %lld, expected %d",
                       (long long) (sl_vd_int (data, "index", &index) ? index : -1), st->next_index);
    sl_str_t type = sl_vd_string (self, data, "content_block.type");
    if (!type.len)
        return sl_vd_fail (self, "content_block_start without a block type");
    bool tool_use = sl_str_eq (type, "tool_use");
    if (st->after_tool_use && !tool_use)
        return sl_vd_fail (self, "a %.*s block after a tool_use block", (int) type.len, type.ptr);
    sl_vd_copy (st->open_type, sizeof st->open_type, type);
    if (tool_use) {
        if (!sl_vd_string (self, data, "content_block.id").len || !sl_vd_string (self, data, "content_block.name").len)
            return sl_vd_fail (self, "a tool_use block without id or name");
        st->after_tool_use = true;
        st->tool_uses++;
    }
    st->open_index = (int) index;
    return 0;
}

static int
s_anthropic_message_delta (sl_validate_t *self, sl_vd_state_t *st, sl_str_t data)
{
    if (st->open_index >= 0)
        return sl_vd_fail (self, "message_delta while block %d is open", st->open_index);
    if (st->delta_seen)
        return sl_vd_fail (self, "a second message_delta");
    if (!sl_vd_type_is (data, "usage", SL_JSON_OBJECT))
        return sl_vd_fail (self, "message_delta without usage");
    sl_str_t reason = sl_vd_string (self, data, "delta.stop_reason");
    if (!reason.len)
        return sl_vd_fail (self, "message_delta without a stop_reason");
    bool tool_use = sl_str_eq (reason, "tool_use");
    if (tool_use && st->tool_uses == 0)
        return sl_vd_fail (self, "stop_reason tool_use with no tool_use block");
    if (!tool_use && st->tool_uses > 0 && !sl_str_eq (reason, "max_tokens"))
        return sl_vd_fail (self, "stop_reason %.*s with %d tool_use block(s) left",
                       (int) reason.len, reason.ptr, st->tool_uses);
    st->delta_seen = true;
    return 0;
}

static int
s_anthropic (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data)
{
    if (!name.len)
        return sl_vd_fail (self, "an event without a name");
    static const char *const keys [] = { "type", NULL };
    sl_str_t v [1];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "data is not a JSON object");
    if (!sl_str_eq_str (sl_vd_text (self, v [0]), name))
        return sl_vd_fail (self, "event %.*s carries data of another type", (int) name.len, name.ptr);
    if (sl_str_eq (name, "error")) {
        st->phase = SL_VD_END;
        return 0;
    }
    if (sl_str_eq (name, "message_start")) {
        if (st->phase != SL_VD_NEW)
            return sl_vd_fail (self, "a second message_start");
        if (!sl_str_eq (sl_vd_string (self, data, "message.role"), "assistant")
        ||  !sl_vd_string (self, data, "message.id").len)
            return sl_vd_fail (self, "message_start without an id or the assistant role");
        st->phase = SL_VD_OPEN;
        return 0;
    }
    if (st->phase == SL_VD_NEW)
        return sl_vd_fail (self, "%.*s before message_start", (int) name.len, name.ptr);
    if (sl_str_eq (name, "ping"))
        return 0;
    if (sl_str_eq (name, "content_block_start"))
        return s_anthropic_block_start (self, st, data);
    if (sl_str_eq (name, "content_block_delta")) {
        int64_t index;
        if (st->open_index < 0 || !sl_vd_int (data, "index", &index) || index != st->open_index)
            return sl_vd_fail (self, "content_block_delta for a block that is not open");
        sl_str_t delta = sl_vd_string (self, data, "delta.type");
        if (!s_anthropic_takes (st->open_type, delta))
            return sl_vd_fail (self, "a %.*s in a %s block", (int) delta.len, delta.ptr ? delta.ptr : "",
                           st->open_type);
        return 0;
    }
    if (sl_str_eq (name, "content_block_stop")) {
        int64_t index;
        if (st->open_index < 0 || !sl_vd_int (data, "index", &index) || index != st->open_index)
            return sl_vd_fail (self, "content_block_stop for a block that is not open");
        st->open_index = -1;
        st->next_index++;
        return 0;
    }
    if (sl_str_eq (name, "message_delta"))
        return s_anthropic_message_delta (self, st, data);
    if (sl_str_eq (name, "message_stop")) {
        if (!st->delta_seen || st->open_index >= 0)
            return sl_vd_fail (self, "message_stop before message_delta");
        st->phase = SL_VD_END;
        return 0;
    }
    return sl_vd_fail (self, "unknown event %.*s", (int) name.len, name.ptr);
}

//  --------------------------------------------------------------------------
//  The whole body of a non-streaming response

//  One content block of a whole Anthropic message.
static int
s_anthropic_content (sl_validate_t *self, sl_vd_state_t *st, sl_str_t block)
{
    char type [SL_VD_TYPE_MAX];
    sl_vd_copy (type, sizeof type, sl_vd_string (self, block, "type"));
    if (!type [0])
        return sl_vd_fail (self, "a content block without a type");
    bool tool_use = strcmp (type, "tool_use") == 0;
    if (st->after_tool_use && !tool_use)
        return sl_vd_fail (self, "a %s block after a tool_use block", type);
    if (strcmp (type, "text") == 0)
        return sl_vd_is_string (block, "text") ? 0 : sl_vd_fail (self, "a text block without text");
    if (strcmp (type, "thinking") == 0)
        return sl_vd_is_string (block, "thinking") && sl_vd_is_string (block, "signature")
             ? 0 : sl_vd_fail (self, "a thinking block without thinking or signature");
    if (strcmp (type, "redacted_thinking") == 0)
        return sl_vd_is_string (block, "data") ? 0 : sl_vd_fail (self, "a redacted_thinking block without data");
    if (tool_use || strcmp (type, "server_tool_use") == 0 || strcmp (type, "mcp_tool_use") == 0) {
        if (!sl_vd_string (self, block, "id").len || !sl_vd_string (self, block, "name").len
        ||  !sl_vd_type_is (block, "input", SL_JSON_OBJECT))
            return sl_vd_fail (self, "a %s block without id, name or an object input", type);
        if (tool_use) {
            st->after_tool_use = true;
            st->tool_uses++;
        }
        return 0;
    }
    size_t n = strlen (type);
    if (n > 12 && strcmp (type + n - 12, "_tool_result") == 0)
        return sl_vd_is_string (block, "tool_use_id") ? 0 : sl_vd_fail (self, "a %s block without tool_use_id", type);
    return sl_vd_fail (self, "a content block of unknown type %s", type);
}

static int
s_anthropic_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_TYPE, K_ID, K_ROLE, K_CONTENT, K_USAGE, K_COUNT };
    static const char *const keys [] = { "type", "id", "role", "content", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (sl_vd_text (self, v [K_TYPE]), "message"))
        return sl_vd_fail (self, "type is not message");
    if (!sl_vd_text (self, v [K_ID]).len || !sl_str_eq (sl_vd_text (self, v [K_ROLE]), "assistant"))
        return sl_vd_fail (self, "a message without an id or the assistant role");
    sl_json_iter_t it;
    sl_str_t block;
    if (!v [K_CONTENT].ptr || sl_json_array (&it, v [K_CONTENT]))
        return sl_vd_fail (self, "content is not an array");
    sl_vd_state_t st = { .open_index = -1 };
    int rc;
    while ((rc = sl_json_next_elem (&it, &block)) == 1)
        if (s_anthropic_content (self, &st, block))
            return -1;
    if (rc != 0)
        return sl_vd_fail (self, "malformed content");
    sl_str_t reason = sl_vd_string (self, data, "stop_reason");
    if (!reason.len)
        return sl_vd_fail (self, "a message without a stop_reason");
    bool tool_use = sl_str_eq (reason, "tool_use");
    if (tool_use && st.tool_uses == 0)
        return sl_vd_fail (self, "stop_reason tool_use with no tool_use block");
    if (!tool_use && st.tool_uses > 0 && !sl_str_eq (reason, "max_tokens"))
        return sl_vd_fail (self, "stop_reason %.*s with %d tool_use block(s) left",
                       (int) reason.len, reason.ptr, st.tool_uses);
    int64_t n;
    if (!v [K_USAGE].ptr || !sl_vd_int (v [K_USAGE], "input_tokens", &n) || !sl_vd_int (v [K_USAGE], "output_tokens", &n))
        return sl_vd_fail (self, "a message without input and output tokens in its usage");
    return 0;
}

const sl_validator_vt_t sl_anthropic_validator = {
    .event = s_anthropic,
    .body = s_anthropic_body,
};
