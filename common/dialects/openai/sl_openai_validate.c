/*  sl_openai_validate.c - output legality of OpenAI Chat Completions streams and bodies.

    A stream (what every dialect obeys besides is in sl_validate.h):
    chunks of one id; the first chunk gives the role; tool calls numbered
    from 0 without gaps, a new one with id, type and name; one
    finish_reason per choice and nothing for that choice after it; the
    usage chunk (empty choices) once, after the finish; [DONE] after the
    finish and last.

    A whole body (non-streaming): a chat.completion with an id and one
    choice (index 0) whose message has the assistant role, content and
    refusal that are strings or null, tool calls each with an id, type
    function, a name and string arguments; a finish_reason, tool_calls
    only when calls are left; usage with token counts.

    Tests: tests/unit/common/dialects/test_sl_validate.c (legal and
    illegal streams and bodies of this dialect), tests/fuzz/fuzz_validate.c.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_validate_impl.h"

static int
s_openai_tool_calls (sl_validate_t *self, sl_vd_state_t *st, sl_str_t delta)
{
    sl_str_t calls, call;
    if (sl_vd_path (delta, "tool_calls", &calls) != 1 || sl_json_is_null (calls))
        return 0;
    sl_json_iter_t it;
    if (sl_json_array (&it, calls))
        return sl_vd_fail (self, "tool_calls is not an array");
    int rc;
    while ((rc = sl_json_next_elem (&it, &call)) == 1) {
        int64_t k;
        if (!sl_vd_int (call, "index", &k))
            return sl_vd_fail (self, "a tool call without an index");
        if (k == st->tool_count) {
            sl_str_t id = sl_vd_string (self, call, "id");
            if (!id.len)
                return sl_vd_fail (self, "tool call %d starts without an id", (int) k);
            if (!sl_str_eq (sl_vd_string (self, call, "type"), "function"))
                return sl_vd_fail (self, "tool call %d starts without type function", (int) k);
            if (!sl_vd_string (self, call, "function.name").len)
                return sl_vd_fail (self, "tool call %d starts without a name", (int) k);
            st->tool_count++;
        }
        else
        if (k >= 0 && k < st->tool_count) {
            if (sl_vd_has (call, "id") && !sl_vd_null_or_absent (call, "id"))
                return sl_vd_fail (self, "tool call %d continued with an id of its own", (int) k);
        }
        else
            return sl_vd_fail (self, "tool call index %d skips (next is %d)", (int) k, st->tool_count);
    }
    return rc == 0 ? 0 : sl_vd_fail (self, "malformed tool_calls");
}

static int
s_openai (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data)
{
    (void) name;
    if (sl_str_eq (data, "[DONE]")) {
        if (st->phase != SL_VD_FINISHED)
            return sl_vd_fail (self, "[DONE] before the finish_reason");
        st->phase = SL_VD_END;
        return 0;
    }
    enum { K_ERROR, K_OBJECT, K_ID, K_CHOICES, K_USAGE, K_COUNT };
    static const char *const keys [] = { "error", "object", "id", "choices", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "data is not a JSON object");
    if (v [K_ERROR].ptr) {
        st->phase = SL_VD_END;
        return 0;
    }
    if (!sl_str_eq (sl_vd_text (self, v [K_OBJECT]), "chat.completion.chunk"))
        return sl_vd_fail (self, "object is not chat.completion.chunk");
    sl_str_t id = sl_vd_text (self, v [K_ID]);
    if (!id.ptr)
        return sl_vd_fail (self, "a chunk without an id");
    if (st->phase == SL_VD_NEW)
        sl_vd_copy (st->id, sizeof st->id, id);
    else
    if (!sl_vd_same (st->id, id))
        return sl_vd_fail (self, "the chunk id changed mid-stream");
    //  The choices: count them, keep the first.
    sl_json_iter_t it;
    sl_str_t choice = SL_STR_NULL, elem;
    int choices = 0, rc;
    if (!v [K_CHOICES].ptr || sl_json_array (&it, v [K_CHOICES]))
        return sl_vd_fail (self, "choices is not an array");
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        if (choices++ == 0)
            choice = elem;
    if (rc != 0)
        return sl_vd_fail (self, "choices is not an array");
    if (choices == 0) {
        if (!v [K_USAGE].ptr || sl_json_type (v [K_USAGE]) != SL_JSON_OBJECT)
            return sl_vd_fail (self, "a chunk with no choices and no usage");
        if (st->phase != SL_VD_FINISHED)
            return sl_vd_fail (self, "the usage chunk before the finish_reason");
        if (st->usage_seen)
            return sl_vd_fail (self, "a second usage chunk");
        st->usage_seen = true;
        return 0;
    }
    if (choices > 1)
        return sl_vd_fail (self, "more than one choice in a chunk");
    enum { C_INDEX, C_DELTA, C_FINISH, C_COUNT };
    static const char *const choice_keys [] = { "index", "delta", "finish_reason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index;
    if (sl_vd_pick (choice, choice_keys, c) || !sl_vd_int_of (c [C_INDEX], &index) || index != 0)
        return sl_vd_fail (self, "a choice other than index 0");
    if (st->phase == SL_VD_FINISHED)
        return sl_vd_fail (self, "a chunk for choice 0 after its finish_reason");
    sl_str_t delta = c [C_DELTA];
    if (!delta.ptr || sl_json_type (delta) != SL_JSON_OBJECT)
        return sl_vd_fail (self, "a choice without a delta object");
    enum { D_ROLE, D_CALLS, D_COUNT };
    static const char *const delta_keys [] = { "role", "tool_calls", NULL };
    sl_str_t dv [D_COUNT];
    sl_vd_pick (delta, delta_keys, dv);
    sl_str_t role = sl_vd_text (self, dv [D_ROLE]);
    if (st->phase == SL_VD_NEW) {
        if (!sl_str_eq (role, "assistant"))
            return sl_vd_fail (self, "the first chunk does not give the role");
        st->phase = SL_VD_OPEN;
    }
    else
    if (role.ptr)
        return sl_vd_fail (self, "the role sent twice");
    if (dv [D_CALLS].ptr && s_openai_tool_calls (self, st, delta))
        return -1;
    if (c [C_FINISH].ptr && !sl_json_is_null (c [C_FINISH])) {
        if (!sl_vd_text (self, c [C_FINISH]).len)
            return sl_vd_fail (self, "finish_reason is not a string");
        st->phase = SL_VD_FINISHED;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  The whole body of a non-streaming response

//  Each level of a body is walked once (sl_vd_pick): bodies are whole
//  responses, and lookups from the top would re-scan their text.
static int
s_openai_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_OBJECT, K_ID, K_CHOICES, K_USAGE, K_COUNT };
    static const char *const keys [] = { "object", "id", "choices", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (sl_vd_text (self, v [K_OBJECT]), "chat.completion"))
        return sl_vd_fail (self, "object is not chat.completion");
    if (!sl_vd_text (self, v [K_ID]).len)
        return sl_vd_fail (self, "a chat.completion without an id");
    sl_str_t choice;
    if (!sl_vd_only_elem (v [K_CHOICES], &choice))
        return sl_vd_fail (self, "a chat.completion without exactly one choice");
    enum { C_INDEX, C_MESSAGE, C_FINISH, C_COUNT };
    static const char *const choice_keys [] = { "index", "message", "finish_reason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index;
    if (sl_vd_pick (choice, choice_keys, c) || !sl_vd_int_of (c [C_INDEX], &index) || index != 0)
        return sl_vd_fail (self, "a choice other than index 0");
    enum { M_ROLE, M_CONTENT, M_REFUSAL, M_CALLS, M_COUNT };
    static const char *const message_keys [] = { "role", "content", "refusal", "tool_calls", NULL };
    sl_str_t m [M_COUNT];
    if (!c [C_MESSAGE].ptr || sl_vd_pick (c [C_MESSAGE], message_keys, m)
    ||  !sl_str_eq (sl_vd_text (self, m [M_ROLE]), "assistant"))
        return sl_vd_fail (self, "a message without the assistant role");
    if (!sl_vd_string_or_null (m [M_CONTENT]) || !sl_vd_string_or_null (m [M_REFUSAL]))
        return sl_vd_fail (self, "message content or refusal that is not a string");
    int calls = 0;
    if (m [M_CALLS].ptr && !sl_json_is_null (m [M_CALLS])) {
        sl_json_iter_t it;
        sl_str_t call;
        if (sl_json_array (&it, m [M_CALLS]))
            return sl_vd_fail (self, "tool_calls is not an array");
        int rc;
        while ((rc = sl_json_next_elem (&it, &call)) == 1) {
            if (!sl_vd_string (self, call, "id").len || !sl_str_eq (sl_vd_string (self, call, "type"), "function")
            ||  !sl_vd_string (self, call, "function.name").len || !sl_vd_is_string (call, "function.arguments"))
                return sl_vd_fail (self, "tool call %d without id, type function, name or string arguments", calls);
            calls++;
        }
        if (rc != 0)
            return sl_vd_fail (self, "malformed tool_calls");
    }
    sl_str_t finish = sl_vd_text (self, c [C_FINISH]);
    if (!finish.len)
        return sl_vd_fail (self, "a choice without a finish_reason");
    if (sl_str_eq (finish, "tool_calls") && calls == 0)
        return sl_vd_fail (self, "finish_reason tool_calls with no tool call");
    if (!v [K_USAGE].ptr || !sl_vd_int (v [K_USAGE], "prompt_tokens", &index)
    ||  !sl_vd_int (v [K_USAGE], "completion_tokens", &index))
        return sl_vd_fail (self, "a chat.completion without usage");
    return 0;
}

const sl_validator_vt_t sl_openai_validator = {
    .event = s_openai,
    .body = s_openai_body,
};
