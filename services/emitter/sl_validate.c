/*  sl_validate.c - per-dialect state machines for output legality
    (see sl_validate.h).

    The state of a response is a plain struct: a check works on a copy and
    commits it only when the event is legal, so an illegal event leaves
    the state as it was. Event data is read with the zero-allocation JSON
    scanner; decoded strings go through one scratch buffer per validator.
*/
#include "sl_validate.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_buf.h"
#include "../../common/sl_json.h"
#include "../../proto/sl_msg.h"

#define S_ID_MAX 160                    //  ids kept for comparison, bytes
#define S_TYPE_MAX 48                   //  block / item types kept, bytes

typedef enum {
    P_NEW,                              //  nothing sent yet
    P_OPEN,                             //  the response is in progress
    P_FINISHED,                         //  OpenAI: finish_reason sent, usage / [DONE] may follow
    P_END                               //  terminal event or error sent: nothing may follow
} s_phase_t;

typedef struct {
    s_phase_t phase;
    char id [S_ID_MAX];                 //  chunk id, responseId, or the open item's id
    //  OpenAI
    int tool_count;                     //  tool calls opened so far
    bool usage_seen;
    //  Anthropic and Responses
    int next_index;                     //  next block / output index
    int open_index;                     //  open block / item, -1 none
    char open_type [S_TYPE_MAX];
    bool after_tool_use;                //  Anthropic: a tool_use block was started
    int tool_uses;
    bool delta_seen;                    //  Anthropic: message_delta sent
    uint64_t seq;                       //  Responses: next sequence_number
    bool part_open;                     //  Responses: a content part is open
    bool errored;                       //  an error event: Responses' response.failed must
                                        //  follow, Gemini's bare error object may
    int items_done;
} s_state_t;

struct _sl_validate_t {
    int dialect;
    s_state_t state;
    sl_buf_t data;                      //  the event's data lines, joined
    sl_buf_t scratch;                   //  decoded strings
    char reason [256];
};

typedef int (s_check_fn) (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data);

sl_validate_t *
sl_validate_new (int dialect)
{
    if (dialect <= SL_DIALECT_NONE || dialect >= SL_DIALECT_MAX)
        return NULL;
    sl_validate_t *self = sl_xcalloc (1, sizeof *self);
    self->dialect = dialect;
    self->state.open_index = -1;
    return self;
}

void
sl_validate_destroy (sl_validate_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_validate_t *self = *self_p;
    sl_buf_free (&self->data);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

const char *
sl_validate_reason (sl_validate_t *self)
{
    return self->reason;
}

static int
s_fail (sl_validate_t *self, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

static int
s_fail (sl_validate_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return -1;
}

size_t
sl_validate_next_event (sl_str_t bytes)
{
    //  From line end to line end (memchr), instead of byte by byte.
    const char *p = bytes.ptr, *end = bytes.ptr + bytes.len;
    while (p && p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        if (!nl || nl + 1 >= end)
            return 0;
        if (nl [1] == '\n')
            return (size_t) (nl + 2 - bytes.ptr);
        if (nl [1] == '\r' && nl + 2 < end && nl [2] == '\n')
            return (size_t) (nl + 3 - bytes.ptr);
        p = nl + 1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Reading JSON

//  A value by dotted path: "choices.0.delta.role". 1 found, 0 absent, -2 malformed.
static int
s_path (sl_str_t json, const char *path, sl_str_t *out)
{
    sl_str_t cur = json;
    const char *p = path;
    char key [64];
    while (*p) {
        size_t n = strcspn (p, ".");
        if (n >= sizeof key)
            return -2;
        memcpy (key, p, n);
        key [n] = 0;
        p += n + (p [n] == '.');
        if (key [0] >= '0' && key [0] <= '9') {
            long want = atol (key);
            sl_json_iter_t it;
            if (sl_json_array (&it, cur))
                return sl_json_type (cur) == SL_JSON_BAD ? -2 : 0;
            sl_str_t elem;
            int rc;
            long i = 0;
            while ((rc = sl_json_next_elem (&it, &elem)) == 1 && i < want)
                i++;
            if (rc != 1)
                return rc == 0 ? 0 : -2;
            cur = elem;
        }
        else {
            if (sl_json_type (cur) != SL_JSON_OBJECT)
                return 0;
            int rc = sl_json_find (cur, key, &cur);
            if (rc != 1)
                return rc;
        }
    }
    *out = sl_json_trim (cur);
    return 1;
}

//  The decoded string at path, or absent (ptr NULL) when missing or not a
//  string. Borrowed from self->scratch until the next s_string call.
static sl_str_t
s_string (sl_validate_t *self, sl_str_t json, const char *path)
{
    sl_str_t v;
    if (s_path (json, path, &v) != 1 || sl_json_type (v) != SL_JSON_STRING)
        return SL_STR_NULL;
    sl_buf_reset (&self->scratch);
    if (sl_json_unescape (v, &self->scratch))
        return SL_STR_NULL;
    return sl_str_n (self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

//  Walk an object once, keeping the values of the named keys (ptr NULL
//  when absent). Walking every member checks the whole object, so 0 means
//  it is well-formed JSON with nothing after it; -2 otherwise. One walk
//  instead of a lookup per field: lookups from the top re-scan every
//  member before the one wanted.
static int
s_pick (sl_str_t json, const char *const *keys, sl_str_t *values)
{
    int n = 0;
    while (keys [n])
        values [n++] = SL_STR_NULL;
    sl_json_iter_t it;
    if (sl_json_object (&it, json))
        return -2;
    sl_str_t key, value;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1)
        for (int i = 0; i < n; i++)
            if (!values [i].ptr && sl_json_key_eq (key, keys [i])) {
                values [i] = sl_json_trim (value);
                break;
            }
    if (rc != 0)
        return -2;
    const char *end = json.ptr + json.len;
    for (const char *p = it.p; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return -2;
    return 0;
}

//  The decoded text of a string value (absent when not a string), in
//  self->scratch until the next decode.
static sl_str_t
s_text (sl_validate_t *self, sl_str_t value)
{
    if (!value.ptr || sl_json_type (value) != SL_JSON_STRING)
        return SL_STR_NULL;
    sl_buf_reset (&self->scratch);
    if (sl_json_unescape (value, &self->scratch))
        return SL_STR_NULL;
    return sl_str_n (self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

static bool
s_int_of (sl_str_t value, int64_t *out)
{
    return value.ptr && sl_json_type (value) == SL_JSON_NUMBER && sl_json_i64 (value, out) == 0;
}

static bool
s_has (sl_str_t json, const char *path)
{
    sl_str_t v;
    return s_path (json, path, &v) == 1;
}

static bool
s_is_null_or_absent (sl_str_t json, const char *path)
{
    sl_str_t v;
    return s_path (json, path, &v) != 1 || sl_json_is_null (v);
}

static bool
s_type_is (sl_str_t json, const char *path, sl_json_type_t type)
{
    sl_str_t v;
    return s_path (json, path, &v) == 1 && sl_json_type (v) == type;
}

//  Integer at path; false when absent or not an integer.
static bool
s_int (sl_str_t json, const char *path, int64_t *out)
{
    sl_str_t v;
    return s_path (json, path, &v) == 1 && sl_json_type (v) == SL_JSON_NUMBER
        && sl_json_i64 (v, out) == 0;
}

static int
s_count (sl_str_t json, const char *path)
{
    sl_str_t v, elem;
    sl_json_iter_t it;
    if (s_path (json, path, &v) != 1 || sl_json_array (&it, v))
        return -1;
    int n = 0, rc;
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        n++;
    return rc == 0 ? n : -1;
}

static void
s_copy (char *dst, size_t size, sl_str_t src)
{
    size_t n = src.len < size - 1 ? src.len : size - 1;
    memcpy (dst, src.ptr ? src.ptr : "", n);
    dst [n] = 0;
}

static bool
s_same (const char *kept, sl_str_t s)
{
    return s.ptr && strlen (kept) == (s.len < S_ID_MAX - 1 ? s.len : S_ID_MAX - 1)
        && memcmp (kept, s.ptr, strlen (kept)) == 0;
}

//  --------------------------------------------------------------------------
//  OpenAI Chat Completions

static int
s_openai_tool_calls (sl_validate_t *self, s_state_t *st, sl_str_t delta)
{
    sl_str_t calls, call;
    if (s_path (delta, "tool_calls", &calls) != 1 || sl_json_is_null (calls))
        return 0;
    sl_json_iter_t it;
    if (sl_json_array (&it, calls))
        return s_fail (self, "tool_calls is not an array");
    int rc;
    while ((rc = sl_json_next_elem (&it, &call)) == 1) {
        int64_t k;
        if (!s_int (call, "index", &k))
            return s_fail (self, "a tool call without an index");
        if (k == st->tool_count) {
            sl_str_t id = s_string (self, call, "id");
            if (!id.len)
                return s_fail (self, "tool call %d starts without an id", (int) k);
            if (!sl_str_eq (s_string (self, call, "type"), "function"))
                return s_fail (self, "tool call %d starts without type function", (int) k);
            if (!s_string (self, call, "function.name").len)
                return s_fail (self, "tool call %d starts without a name", (int) k);
            st->tool_count++;
        }
        else
        if (k >= 0 && k < st->tool_count) {
            if (s_has (call, "id") && !s_is_null_or_absent (call, "id"))
                return s_fail (self, "tool call %d continued with an id of its own", (int) k);
        }
        else
            return s_fail (self, "tool call index %d skips (next is %d)", (int) k, st->tool_count);
    }
    return rc == 0 ? 0 : s_fail (self, "malformed tool_calls");
}

static int
s_openai (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data)
{
    (void) name;
    if (sl_str_eq (data, "[DONE]")) {
        if (st->phase != P_FINISHED)
            return s_fail (self, "[DONE] before the finish_reason");
        st->phase = P_END;
        return 0;
    }
    enum { K_ERROR, K_OBJECT, K_ID, K_CHOICES, K_USAGE, K_COUNT };
    static const char *const keys [] = { "error", "object", "id", "choices", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "data is not a JSON object");
    if (v [K_ERROR].ptr) {
        st->phase = P_END;
        return 0;
    }
    if (!sl_str_eq (s_text (self, v [K_OBJECT]), "chat.completion.chunk"))
        return s_fail (self, "object is not chat.completion.chunk");
    sl_str_t id = s_text (self, v [K_ID]);
    if (!id.ptr)
        return s_fail (self, "a chunk without an id");
    if (st->phase == P_NEW)
        s_copy (st->id, sizeof st->id, id);
    else
    if (!s_same (st->id, id))
        return s_fail (self, "the chunk id changed mid-stream");
    //  The choices: count them, keep the first.
    sl_json_iter_t it;
    sl_str_t choice = SL_STR_NULL, elem;
    int choices = 0, rc;
    if (!v [K_CHOICES].ptr || sl_json_array (&it, v [K_CHOICES]))
        return s_fail (self, "choices is not an array");
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        if (choices++ == 0)
            choice = elem;
    if (rc != 0)
        return s_fail (self, "choices is not an array");
    if (choices == 0) {
        if (!v [K_USAGE].ptr || sl_json_type (v [K_USAGE]) != SL_JSON_OBJECT)
            return s_fail (self, "a chunk with no choices and no usage");
        if (st->phase != P_FINISHED)
            return s_fail (self, "the usage chunk before the finish_reason");
        if (st->usage_seen)
            return s_fail (self, "a second usage chunk");
        st->usage_seen = true;
        return 0;
    }
    if (choices > 1)
        return s_fail (self, "more than one choice in a chunk");
    enum { C_INDEX, C_DELTA, C_FINISH, C_COUNT };
    static const char *const choice_keys [] = { "index", "delta", "finish_reason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index;
    if (s_pick (choice, choice_keys, c) || !s_int_of (c [C_INDEX], &index) || index != 0)
        return s_fail (self, "a choice other than index 0");
    if (st->phase == P_FINISHED)
        return s_fail (self, "a chunk for choice 0 after its finish_reason");
    sl_str_t delta = c [C_DELTA];
    if (!delta.ptr || sl_json_type (delta) != SL_JSON_OBJECT)
        return s_fail (self, "a choice without a delta object");
    enum { D_ROLE, D_CALLS, D_COUNT };
    static const char *const delta_keys [] = { "role", "tool_calls", NULL };
    sl_str_t dv [D_COUNT];
    s_pick (delta, delta_keys, dv);
    sl_str_t role = s_text (self, dv [D_ROLE]);
    if (st->phase == P_NEW) {
        if (!sl_str_eq (role, "assistant"))
            return s_fail (self, "the first chunk does not give the role");
        st->phase = P_OPEN;
    }
    else
    if (role.ptr)
        return s_fail (self, "the role sent twice");
    if (dv [D_CALLS].ptr && s_openai_tool_calls (self, st, delta))
        return -1;
    if (c [C_FINISH].ptr && !sl_json_is_null (c [C_FINISH])) {
        if (!s_text (self, c [C_FINISH]).len)
            return s_fail (self, "finish_reason is not a string");
        st->phase = P_FINISHED;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Anthropic Messages

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
s_anthropic_block_start (sl_validate_t *self, s_state_t *st, sl_str_t data)
{
    int64_t index;
    if (st->delta_seen)
        return s_fail (self, "content_block_start after message_delta");
    if (st->open_index >= 0)
        return s_fail (self, "content_block_start while block %d is open", st->open_index);
    if (!s_int (data, "index", &index) || index != st->next_index)
        return s_fail (self, "content_block_start at index %lld, expected %d",
                       (long long) (s_int (data, "index", &index) ? index : -1), st->next_index);
    sl_str_t type = s_string (self, data, "content_block.type");
    if (!type.len)
        return s_fail (self, "content_block_start without a block type");
    bool tool_use = sl_str_eq (type, "tool_use");
    if (st->after_tool_use && !tool_use)
        return s_fail (self, "a %.*s block after a tool_use block", (int) type.len, type.ptr);
    s_copy (st->open_type, sizeof st->open_type, type);
    if (tool_use) {
        if (!s_string (self, data, "content_block.id").len || !s_string (self, data, "content_block.name").len)
            return s_fail (self, "a tool_use block without id or name");
        st->after_tool_use = true;
        st->tool_uses++;
    }
    st->open_index = (int) index;
    return 0;
}

static int
s_anthropic_message_delta (sl_validate_t *self, s_state_t *st, sl_str_t data)
{
    if (st->open_index >= 0)
        return s_fail (self, "message_delta while block %d is open", st->open_index);
    if (st->delta_seen)
        return s_fail (self, "a second message_delta");
    if (!s_type_is (data, "usage", SL_JSON_OBJECT))
        return s_fail (self, "message_delta without usage");
    sl_str_t reason = s_string (self, data, "delta.stop_reason");
    if (!reason.len)
        return s_fail (self, "message_delta without a stop_reason");
    bool tool_use = sl_str_eq (reason, "tool_use");
    if (tool_use && st->tool_uses == 0)
        return s_fail (self, "stop_reason tool_use with no tool_use block");
    if (!tool_use && st->tool_uses > 0 && !sl_str_eq (reason, "max_tokens"))
        return s_fail (self, "stop_reason %.*s with %d tool_use block(s) left",
                       (int) reason.len, reason.ptr, st->tool_uses);
    st->delta_seen = true;
    return 0;
}

static int
s_anthropic (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data)
{
    if (!name.len)
        return s_fail (self, "an event without a name");
    static const char *const keys [] = { "type", NULL };
    sl_str_t v [1];
    if (s_pick (data, keys, v))
        return s_fail (self, "data is not a JSON object");
    if (!sl_str_eq_str (s_text (self, v [0]), name))
        return s_fail (self, "event %.*s carries data of another type", (int) name.len, name.ptr);
    if (sl_str_eq (name, "error")) {
        st->phase = P_END;
        return 0;
    }
    if (sl_str_eq (name, "message_start")) {
        if (st->phase != P_NEW)
            return s_fail (self, "a second message_start");
        if (!sl_str_eq (s_string (self, data, "message.role"), "assistant")
        ||  !s_string (self, data, "message.id").len)
            return s_fail (self, "message_start without an id or the assistant role");
        st->phase = P_OPEN;
        return 0;
    }
    if (st->phase == P_NEW)
        return s_fail (self, "%.*s before message_start", (int) name.len, name.ptr);
    if (sl_str_eq (name, "ping"))
        return 0;
    if (sl_str_eq (name, "content_block_start"))
        return s_anthropic_block_start (self, st, data);
    if (sl_str_eq (name, "content_block_delta")) {
        int64_t index;
        if (st->open_index < 0 || !s_int (data, "index", &index) || index != st->open_index)
            return s_fail (self, "content_block_delta for a block that is not open");
        sl_str_t delta = s_string (self, data, "delta.type");
        if (!s_anthropic_takes (st->open_type, delta))
            return s_fail (self, "a %.*s in a %s block", (int) delta.len, delta.ptr ? delta.ptr : "",
                           st->open_type);
        return 0;
    }
    if (sl_str_eq (name, "content_block_stop")) {
        int64_t index;
        if (st->open_index < 0 || !s_int (data, "index", &index) || index != st->open_index)
            return s_fail (self, "content_block_stop for a block that is not open");
        st->open_index = -1;
        st->next_index++;
        return 0;
    }
    if (sl_str_eq (name, "message_delta"))
        return s_anthropic_message_delta (self, st, data);
    if (sl_str_eq (name, "message_stop")) {
        if (!st->delta_seen || st->open_index >= 0)
            return s_fail (self, "message_stop before message_delta");
        st->phase = P_END;
        return 0;
    }
    return s_fail (self, "unknown event %.*s", (int) name.len, name.ptr);
}

//  --------------------------------------------------------------------------
//  OpenAI Responses

//  Does the event name the open item (item_id and output_index)?
static int
s_responses_item (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data, const char *item_type)
{
    int64_t index;
    if (st->open_index < 0)
        return s_fail (self, "%.*s with no item open", (int) name.len, name.ptr);
    if (!s_int (data, "output_index", &index) || index != st->open_index
    ||  !s_same (st->id, s_string (self, data, "item_id")))
        return s_fail (self, "%.*s for an item that is not the open one", (int) name.len, name.ptr);
    if (item_type && strcmp (st->open_type, item_type) != 0)
        return s_fail (self, "%.*s in a %s item", (int) name.len, name.ptr, st->open_type);
    return 0;
}

static int
s_responses (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data)
{
    if (!name.len)
        return s_fail (self, "an event without a name");
    static const char *const keys [] = { "type", "sequence_number", NULL };
    sl_str_t v [2];
    if (s_pick (data, keys, v))
        return s_fail (self, "data is not a JSON object");
    if (!sl_str_eq_str (s_text (self, v [0]), name))
        return s_fail (self, "event %.*s carries data of another type", (int) name.len, name.ptr);
    int64_t seq;
    if (!s_int_of (v [1], &seq) || seq < 0 || (uint64_t) seq != st->seq)
        return s_fail (self, "sequence_number out of order (expected %llu)", (unsigned long long) st->seq);
    st->seq++;
    if (sl_str_eq (name, "error")) {
        if (st->errored)
            return s_fail (self, "a second error event");
        st->errored = true;             //  the API follows it with response.failed
        return 0;
    }
    if (st->errored && !sl_str_eq (name, "response.failed"))
        return s_fail (self, "%.*s after an error event (only response.failed may follow)",
                       (int) name.len, name.ptr);
    if (sl_str_eq (name, "response.created")) {
        if (st->phase != P_NEW)
            return s_fail (self, "a second response.created");
        if (!s_string (self, data, "response.id").len)
            return s_fail (self, "response.created without a response id");
        st->phase = P_OPEN;
        return 0;
    }
    if (st->phase == P_NEW)
        return s_fail (self, "%.*s before response.created", (int) name.len, name.ptr);
    if (sl_str_eq (name, "response.in_progress") || sl_str_eq (name, "response.queued"))
        return 0;
    if (sl_str_eq (name, "response.output_item.added")) {
        int64_t index;
        if (st->open_index >= 0)
            return s_fail (self, "an item added while item %d is open", st->open_index);
        if (!s_int (data, "output_index", &index) || index != st->next_index)
            return s_fail (self, "an item added at an output_index other than %d", st->next_index);
        sl_str_t type = s_string (self, data, "item.type");
        if (!type.len)
            return s_fail (self, "an item without a type");
        s_copy (st->open_type, sizeof st->open_type, type);
        if (sl_str_eq (type, "function_call")
        &&  (!s_string (self, data, "item.call_id").len || !s_string (self, data, "item.name").len))
            return s_fail (self, "a function_call item without call_id or name");
        sl_str_t id = s_string (self, data, "item.id");
        if (!id.len)
            return s_fail (self, "an item without an id");
        s_copy (st->id, sizeof st->id, id);
        st->open_index = (int) index;
        st->part_open = false;
        return 0;
    }
    if (sl_str_eq (name, "response.output_item.done")) {
        int64_t index;
        if (st->open_index < 0 || !s_int (data, "output_index", &index) || index != st->open_index
        ||  !s_same (st->id, s_string (self, data, "item.id")))
            return s_fail (self, "output_item.done for an item that is not open");
        if (st->part_open)
            return s_fail (self, "output_item.done while a content part is open");
        st->open_index = -1;
        st->next_index++;
        st->items_done++;
        return 0;
    }
    if (sl_str_eq (name, "response.content_part.added")) {
        if (s_responses_item (self, st, name, data, NULL))
            return -1;
        if (st->part_open)
            return s_fail (self, "a content part added while one is open");
        st->part_open = true;
        return 0;
    }
    if (sl_str_eq (name, "response.content_part.done")) {
        if (s_responses_item (self, st, name, data, NULL))
            return -1;
        if (!st->part_open)
            return s_fail (self, "content_part.done with no part open");
        st->part_open = false;
        return 0;
    }
    if (sl_str_starts (name, "response.output_text.") || sl_str_starts (name, "response.refusal.")) {
        if (s_responses_item (self, st, name, data, "message"))
            return -1;
        return st->part_open ? 0 : s_fail (self, "%.*s with no content part open", (int) name.len, name.ptr);
    }
    if (sl_str_starts (name, "response.function_call_arguments."))
        return s_responses_item (self, st, name, data, "function_call");
    if (sl_str_starts (name, "response.reasoning_"))
        return s_responses_item (self, st, name, data, "reasoning");
    if (sl_str_eq (name, "response.completed") || sl_str_eq (name, "response.incomplete")
    ||  sl_str_eq (name, "response.failed")) {
        if (st->open_index >= 0)
            return s_fail (self, "%.*s while item %d is open", (int) name.len, name.ptr, st->open_index);
        sl_str_t status = s_string (self, data, "response.status");
        if (!status.len || !sl_str_eq_str (status, sl_str_n (name.ptr + 9, name.len - 9)))
            return s_fail (self, "%.*s with a response of another status", (int) name.len, name.ptr);
        if (s_count (data, "response.output") != st->items_done)
            return s_fail (self, "%.*s lists %d items, %d were sent", (int) name.len, name.ptr,
                           s_count (data, "response.output"), st->items_done);
        st->phase = P_END;
        return 0;
    }
    //  Other item events (e.g. a server tool's progress) must name the open item.
    if (s_has (data, "item_id"))
        return s_responses_item (self, st, name, data, NULL);
    return s_fail (self, "unknown event %.*s", (int) name.len, name.ptr);
}

//  --------------------------------------------------------------------------
//  Gemini

static bool
s_gemini_part_known (sl_str_t key)
{
    static const char *known [] = {
        "text", "thought", "thoughtSignature", "functionCall", "functionResponse",
        "executableCode", "codeExecutionResult", "inlineData", "fileData", "videoMetadata",
        "partMetadata", NULL
    };
    for (int i = 0; known [i]; i++)
        if (sl_json_key_eq (key, known [i]))
            return true;
    return false;
}

//  A candidate's content.parts (absent: ptr NULL).
static int
s_gemini_parts (sl_validate_t *self, sl_str_t parts)
{
    sl_str_t part, key, value;
    if (!parts.ptr)
        return 0;
    sl_json_iter_t it, members;
    if (sl_json_array (&it, parts))
        return s_fail (self, "content.parts is not an array");
    int rc;
    while ((rc = sl_json_next_elem (&it, &part)) == 1) {
        if (sl_json_object (&members, part))
            return s_fail (self, "a part that is not an object");
        int known = 0, mrc;
        sl_str_t call = SL_STR_NULL;
        while ((mrc = sl_json_next_member (&members, &key, &value)) == 1) {
            if (!s_gemini_part_known (key))
                return s_fail (self, "a part with an unknown field %.*s", (int) key.len, key.ptr);
            if (sl_json_key_eq (key, "functionCall"))
                call = value;
            known++;
        }
        if (mrc != 0 || known == 0)
            return s_fail (self, "an empty or malformed part");
        if (call.ptr) {
            if (!s_string (self, call, "name").len)
                return s_fail (self, "a functionCall without a name");
            if (s_has (call, "args") && !s_type_is (call, "args", SL_JSON_OBJECT))
                return s_fail (self, "functionCall args that are not an object");
        }
    }
    return rc == 0 ? 0 : s_fail (self, "malformed parts");
}

static int
s_gemini (sl_validate_t *self, s_state_t *st, sl_str_t name, sl_str_t data)
{
    (void) name;
    enum { K_ERROR, K_ID, K_CANDIDATES, K_COUNT };
    static const char *const keys [] = { "error", "responseId", "candidates", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "data is not a JSON object");
    if (v [K_ERROR].ptr) {
        st->phase = P_END;
        st->errored = true;             //  the bare error object may follow
        return 0;
    }
    sl_str_t id = s_text (self, v [K_ID]);
    if (id.ptr) {
        if (st->id [0] == 0)
            s_copy (st->id, sizeof st->id, id);
        else
        if (!s_same (st->id, id))
            return s_fail (self, "the responseId changed mid-stream");
    }
    sl_json_iter_t it;
    sl_str_t candidate = SL_STR_NULL, elem;
    int count = 0, rc;
    if (!v [K_CANDIDATES].ptr || sl_json_array (&it, v [K_CANDIDATES]))
        return s_fail (self, "a chunk without candidates");
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        if (count++ == 0)
            candidate = elem;
    if (rc != 0 || count != 1)
        return s_fail (self, "a chunk with %d candidates (one expected)", count);
    int64_t index = 0;
    if (s_has (candidate, "index") && (!s_int (candidate, "index", &index) || index != 0))
        return s_fail (self, "a candidate other than index 0");
    sl_str_t parts = SL_STR_NULL;
    if (s_path (candidate, "content.parts", &parts) != 1)
        parts = SL_STR_NULL;
    if (s_gemini_parts (self, parts))
        return -1;
    st->phase = P_OPEN;
    if (!s_is_null_or_absent (candidate, "finishReason")) {
        if (!s_string (self, candidate, "finishReason").len)
            return s_fail (self, "finishReason is not a string");
        st->phase = P_END;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Whole bodies of non-streaming responses

//  A string at path (may be empty); absent or another type fails.
static bool
s_is_string (sl_str_t json, const char *path)
{
    return s_type_is (json, path, SL_JSON_STRING);
}

//  The one element of an array; false when it has not exactly one.
static bool
s_only_elem (sl_str_t array, sl_str_t *elem)
{
    sl_json_iter_t it;
    sl_str_t extra;
    return array.ptr && sl_json_array (&it, array) == 0 && sl_json_next_elem (&it, elem) == 1
        && sl_json_next_elem (&it, &extra) == 0;
}

static bool
s_string_or_null_value (sl_str_t v)
{
    return !v.ptr || sl_json_is_null (v) || sl_json_type (v) == SL_JSON_STRING;
}

//  Each level of a body is walked once (s_pick): bodies are whole
//  responses, and lookups from the top would re-scan their text.
static int
s_openai_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_OBJECT, K_ID, K_CHOICES, K_USAGE, K_COUNT };
    static const char *const keys [] = { "object", "id", "choices", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (s_text (self, v [K_OBJECT]), "chat.completion"))
        return s_fail (self, "object is not chat.completion");
    if (!s_text (self, v [K_ID]).len)
        return s_fail (self, "a chat.completion without an id");
    sl_str_t choice;
    if (!s_only_elem (v [K_CHOICES], &choice))
        return s_fail (self, "a chat.completion without exactly one choice");
    enum { C_INDEX, C_MESSAGE, C_FINISH, C_COUNT };
    static const char *const choice_keys [] = { "index", "message", "finish_reason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index;
    if (s_pick (choice, choice_keys, c) || !s_int_of (c [C_INDEX], &index) || index != 0)
        return s_fail (self, "a choice other than index 0");
    enum { M_ROLE, M_CONTENT, M_REFUSAL, M_CALLS, M_COUNT };
    static const char *const message_keys [] = { "role", "content", "refusal", "tool_calls", NULL };
    sl_str_t m [M_COUNT];
    if (!c [C_MESSAGE].ptr || s_pick (c [C_MESSAGE], message_keys, m)
    ||  !sl_str_eq (s_text (self, m [M_ROLE]), "assistant"))
        return s_fail (self, "a message without the assistant role");
    if (!s_string_or_null_value (m [M_CONTENT]) || !s_string_or_null_value (m [M_REFUSAL]))
        return s_fail (self, "message content or refusal that is not a string");
    int calls = 0;
    if (m [M_CALLS].ptr && !sl_json_is_null (m [M_CALLS])) {
        sl_json_iter_t it;
        sl_str_t call;
        if (sl_json_array (&it, m [M_CALLS]))
            return s_fail (self, "tool_calls is not an array");
        int rc;
        while ((rc = sl_json_next_elem (&it, &call)) == 1) {
            if (!s_string (self, call, "id").len || !sl_str_eq (s_string (self, call, "type"), "function")
            ||  !s_string (self, call, "function.name").len || !s_is_string (call, "function.arguments"))
                return s_fail (self, "tool call %d without id, type function, name or string arguments", calls);
            calls++;
        }
        if (rc != 0)
            return s_fail (self, "malformed tool_calls");
    }
    sl_str_t finish = s_text (self, c [C_FINISH]);
    if (!finish.len)
        return s_fail (self, "a choice without a finish_reason");
    if (sl_str_eq (finish, "tool_calls") && calls == 0)
        return s_fail (self, "finish_reason tool_calls with no tool call");
    if (!v [K_USAGE].ptr || !s_int (v [K_USAGE], "prompt_tokens", &index)
    ||  !s_int (v [K_USAGE], "completion_tokens", &index))
        return s_fail (self, "a chat.completion without usage");
    return 0;
}

//  One content block of a whole Anthropic message.
static int
s_anthropic_content (sl_validate_t *self, s_state_t *st, sl_str_t block)
{
    char type [S_TYPE_MAX];
    s_copy (type, sizeof type, s_string (self, block, "type"));
    if (!type [0])
        return s_fail (self, "a content block without a type");
    bool tool_use = strcmp (type, "tool_use") == 0;
    if (st->after_tool_use && !tool_use)
        return s_fail (self, "a %s block after a tool_use block", type);
    if (strcmp (type, "text") == 0)
        return s_is_string (block, "text") ? 0 : s_fail (self, "a text block without text");
    if (strcmp (type, "thinking") == 0)
        return s_is_string (block, "thinking") && s_is_string (block, "signature")
             ? 0 : s_fail (self, "a thinking block without thinking or signature");
    if (strcmp (type, "redacted_thinking") == 0)
        return s_is_string (block, "data") ? 0 : s_fail (self, "a redacted_thinking block without data");
    if (tool_use || strcmp (type, "server_tool_use") == 0 || strcmp (type, "mcp_tool_use") == 0) {
        if (!s_string (self, block, "id").len || !s_string (self, block, "name").len
        ||  !s_type_is (block, "input", SL_JSON_OBJECT))
            return s_fail (self, "a %s block without id, name or an object input", type);
        if (tool_use) {
            st->after_tool_use = true;
            st->tool_uses++;
        }
        return 0;
    }
    size_t n = strlen (type);
    if (n > 12 && strcmp (type + n - 12, "_tool_result") == 0)
        return s_is_string (block, "tool_use_id") ? 0 : s_fail (self, "a %s block without tool_use_id", type);
    return s_fail (self, "a content block of unknown type %s", type);
}

static int
s_anthropic_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_TYPE, K_ID, K_ROLE, K_CONTENT, K_USAGE, K_COUNT };
    static const char *const keys [] = { "type", "id", "role", "content", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (s_text (self, v [K_TYPE]), "message"))
        return s_fail (self, "type is not message");
    if (!s_text (self, v [K_ID]).len || !sl_str_eq (s_text (self, v [K_ROLE]), "assistant"))
        return s_fail (self, "a message without an id or the assistant role");
    sl_json_iter_t it;
    sl_str_t block;
    if (!v [K_CONTENT].ptr || sl_json_array (&it, v [K_CONTENT]))
        return s_fail (self, "content is not an array");
    s_state_t st = { .open_index = -1 };
    int rc;
    while ((rc = sl_json_next_elem (&it, &block)) == 1)
        if (s_anthropic_content (self, &st, block))
            return -1;
    if (rc != 0)
        return s_fail (self, "malformed content");
    sl_str_t reason = s_string (self, data, "stop_reason");
    if (!reason.len)
        return s_fail (self, "a message without a stop_reason");
    bool tool_use = sl_str_eq (reason, "tool_use");
    if (tool_use && st.tool_uses == 0)
        return s_fail (self, "stop_reason tool_use with no tool_use block");
    if (!tool_use && st.tool_uses > 0 && !sl_str_eq (reason, "max_tokens"))
        return s_fail (self, "stop_reason %.*s with %d tool_use block(s) left",
                       (int) reason.len, reason.ptr, st.tool_uses);
    int64_t n;
    if (!v [K_USAGE].ptr || !s_int (v [K_USAGE], "input_tokens", &n) || !s_int (v [K_USAGE], "output_tokens", &n))
        return s_fail (self, "a message without input and output tokens in its usage");
    return 0;
}

static int
s_responses_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_OBJECT, K_ID, K_STATUS, K_OUTPUT, K_USAGE, K_COUNT };
    static const char *const keys [] = { "object", "id", "status", "output", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (s_text (self, v [K_OBJECT]), "response") || !s_text (self, v [K_ID]).len)
        return s_fail (self, "not a response object with an id");
    sl_str_t status = s_text (self, v [K_STATUS]);
    if (!sl_str_eq (status, "completed") && !sl_str_eq (status, "incomplete"))
        return s_fail (self, "a response neither completed nor incomplete");
    sl_json_iter_t it;
    sl_str_t item;
    if (!v [K_OUTPUT].ptr || sl_json_array (&it, v [K_OUTPUT]))
        return s_fail (self, "output is not an array");
    int rc, i = 0;
    while ((rc = sl_json_next_elem (&it, &item)) == 1) {
        char type [S_TYPE_MAX];
        s_copy (type, sizeof type, s_string (self, item, "type"));
        if (!type [0] || !s_string (self, item, "id").len)
            return s_fail (self, "output item %d without a type or an id", i);
        if (strcmp (type, "function_call") == 0
        &&  (!s_string (self, item, "call_id").len || !s_string (self, item, "name").len
             || !s_is_string (item, "arguments")))
            return s_fail (self, "a function_call item without call_id, name or string arguments");
        if (strcmp (type, "message") == 0
        &&  (!sl_str_eq (s_string (self, item, "role"), "assistant") || !s_type_is (item, "content", SL_JSON_ARRAY)))
            return s_fail (self, "a message item without the assistant role or content");
        if (strcmp (type, "reasoning") == 0 && !s_type_is (item, "summary", SL_JSON_ARRAY))
            return s_fail (self, "a reasoning item without a summary");
        i++;
    }
    if (rc != 0)
        return s_fail (self, "malformed output");
    if (!v [K_USAGE].ptr || !(sl_json_is_null (v [K_USAGE]) || sl_json_type (v [K_USAGE]) == SL_JSON_OBJECT))
        return s_fail (self, "usage is neither an object nor null");
    return 0;
}

static int
s_gemini_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_ERROR, K_CANDIDATES, K_COUNT };
    static const char *const keys [] = { "error", "candidates", NULL };
    sl_str_t v [K_COUNT];
    if (s_pick (data, keys, v))
        return s_fail (self, "the body is not a JSON object");
    if (v [K_ERROR].ptr)
        return s_fail (self, "a response body holding an error");
    sl_str_t candidate;
    if (!s_only_elem (v [K_CANDIDATES], &candidate))
        return s_fail (self, "a response without exactly one candidate");
    enum { C_INDEX, C_CONTENT, C_FINISH, C_COUNT };
    static const char *const candidate_keys [] = { "index", "content", "finishReason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index = 0;
    if (s_pick (candidate, candidate_keys, c) || (c [C_INDEX].ptr && (!s_int_of (c [C_INDEX], &index) || index != 0)))
        return s_fail (self, "a candidate other than index 0");
    //  The parts, checked as a stream's are.
    static const char *const content_keys [] = { "parts", NULL };
    sl_str_t parts [1] = { SL_STR_NULL };
    if (c [C_CONTENT].ptr && s_pick (c [C_CONTENT], content_keys, parts))
        return s_fail (self, "content is not an object");
    if (s_gemini_parts (self, parts [0]))
        return -1;
    if (!s_text (self, c [C_FINISH]).len)
        return s_fail (self, "a candidate without a finishReason");
    return 0;
}

int
sl_validate_body (sl_validate_t *self, sl_str_t body)
{
    self->reason [0] = 0;
    body = sl_json_trim (body);
    switch (self->dialect) {
        case SL_DIALECT_OPENAI:    return s_openai_body (self, body);
        case SL_DIALECT_ANTHROPIC: return s_anthropic_body (self, body);
        case SL_DIALECT_RESPONSES: return s_responses_body (self, body);
        default:                   return s_gemini_body (self, body);
    }
}

//  --------------------------------------------------------------------------

static s_check_fn *
s_checker (int dialect)
{
    switch (dialect) {
        case SL_DIALECT_OPENAI:    return s_openai;
        case SL_DIALECT_ANTHROPIC: return s_anthropic;
        case SL_DIALECT_RESPONSES: return s_responses;
        default:                   return s_gemini;
    }
}

int
sl_validate_event (sl_validate_t *self, sl_str_t event)
{
    self->reason [0] = 0;
    //  Split the event into its name and data; comments are keep-alives.
    //  The data: one line is read where it stands; several are joined in
    //  self->data.
    sl_str_t name = SL_STR_NULL, data = SL_STR_NULL;
    bool has_data = false;
    sl_buf_reset (&self->data);
    const char *p = event.ptr, *end = event.ptr + event.len;
    while (p && p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        sl_str_t line = sl_str_n (p, (size_t) ((nl ? nl : end) - p));
        p = nl ? nl + 1 : end;
        if (line.len && line.ptr [line.len - 1] == '\r')
            line.len--;
        if (line.len == 0 || line.ptr [0] == ':')
            continue;
        const char *colon = memchr (line.ptr, ':', line.len);
        size_t field = colon ? (size_t) (colon - line.ptr) : line.len;
        sl_str_t value = colon ? sl_str_n (colon + 1, line.len - field - 1) : SL_STR_LIT ("");
        if (value.len && value.ptr [0] == ' ')
            value = sl_str_n (value.ptr + 1, value.len - 1);
        if (field == 5 && memcmp (line.ptr, "event", 5) == 0)
            name = value;
        else
        if (field == 4 && memcmp (line.ptr, "data", 4) == 0) {
            if (!has_data)
                data = value;
            else {
                if (self->data.len == 0)
                    sl_buf_append_str (&self->data, data);
                sl_buf_putc (&self->data, '\n');
                sl_buf_append_str (&self->data, value);
                data = sl_buf_str (&self->data);
            }
            has_data = true;
        }
    }
    if (self->dialect == SL_DIALECT_GEMINI && !has_data && !name.ptr) {
        //  A Gemini stream that fails ends with the bare error object, as
        //  the API ends one (after an error event, or alone); nothing else
        //  but whitespace stands outside "data:" events (the Gemini SDKs
        //  read nothing else).
        sl_str_t bare = sl_json_trim (event);
        if (!bare.len)
            return 0;
        static const char *const keys [] = { "error", NULL };
        sl_str_t v [1];
        if (s_pick (bare, keys, v) || !v [0].ptr || sl_json_type (v [0]) != SL_JSON_OBJECT)
            return s_fail (self, "bytes outside a data: event that are not the error object");
        if (self->state.phase == P_END && !self->state.errored)
            return s_fail (self, "an error object after the end of the response");
        self->state.phase = P_END;
        self->state.errored = false;
        return 0;
    }
    if (self->state.phase == P_END)
        return s_fail (self, "an event after the end of the response");
    if (!has_data && !name.ptr)
        return 0;                       //  a comment: allowed before the end
    if (!has_data)
        return s_fail (self, "an event without data");
    s_state_t next = self->state;
    if (s_checker (self->dialect) (self, &next, name, sl_json_trim (data)))
        return -1;
    self->state = next;
    return 0;
}

int
sl_validate_end (sl_validate_t *self)
{
    if (self->state.phase == P_END)
        return 0;
    return s_fail (self, "the response ended before its last event");
}
