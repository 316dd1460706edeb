/*  sl_responses_validate.c - output legality of OpenAI Responses streams and bodies.

    A stream (what every dialect obeys besides is in sl_validate.h): event
    name = data type; sequence_number from 0 without gaps;
    response.created first; output items added at the next output_index,
    one open at a time, their part and delta events naming the open item
    and fitting its type; one done per item and part; response.completed /
    incomplete / failed with no item open, listing every item, last.

    A whole body (non-streaming): a response with an id, status completed
    or incomplete, output items each with an id and a type, function_call
    items with call_id, name and string arguments, message items with the
    assistant role; usage.

    Tests: tests/unit/common/dialects/test_sl_validate.c (legal and
    illegal streams and bodies of this dialect), tests/fuzz/fuzz_validate.c.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_validate_impl.h"

//  Does the event name the open item (item_id and output_index)?
static int
s_responses_item (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data, const char *item_type)
{
    int64_t index;
    if (st->open_index < 0)
        return sl_vd_fail (self, "%.*s with no item open", (int) name.len, name.ptr);
    if (!sl_vd_int (data, "output_index", &index) || index != st->open_index
    ||  !sl_vd_same (st->id, sl_vd_string (self, data, "item_id")))
        return sl_vd_fail (self, "%.*s for an item that is not the open one", (int) name.len, name.ptr);
    if (item_type && strcmp (st->open_type, item_type) != 0)
        return sl_vd_fail (self, "%.*s in a %s item", (int) name.len, name.ptr, st->open_type);
    return 0;
}

static int
s_responses (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data)
{
    if (!name.len)
        return sl_vd_fail (self, "an event without a name");
    static const char *const keys [] = { "type", "sequence_number", NULL };
    sl_str_t v [2];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "data is not a JSON object");
    if (!sl_str_eq_str (sl_vd_text (self, v [0]), name))
        return sl_vd_fail (self, "event %.*s carries data of another type", (int) name.len, name.ptr);
    int64_t seq;
    if (!sl_vd_int_of (v [1], &seq) || seq < 0 || (uint64_t) seq != st->seq)
        return sl_vd_fail (self, "sequence_number out of order (expected %llu)", (unsigned long long) st->seq);
    st->seq++;
    if (sl_str_eq (name, "error")) {
        if (st->errored)
            return sl_vd_fail (self, "a second error event");
        st->errored = true;             //  the API follows it with response.failed
        return 0;
    }
    if (st->errored && !sl_str_eq (name, "response.failed"))
        return sl_vd_fail (self, "%.*s after an error event (only response.failed may follow)",
                       (int) name.len, name.ptr);
    if (sl_str_eq (name, "response.created")) {
        if (st->phase != SL_VD_NEW)
            return sl_vd_fail (self, "a second response.created");
        if (!sl_vd_string (self, data, "response.id").len)
            return sl_vd_fail (self, "response.created without a response id");
        st->phase = SL_VD_OPEN;
        return 0;
    }
    if (st->phase == SL_VD_NEW)
        return sl_vd_fail (self, "%.*s before response.created", (int) name.len, name.ptr);
    if (sl_str_eq (name, "response.in_progress") || sl_str_eq (name, "response.queued"))
        return 0;
    if (sl_str_eq (name, "response.output_item.added")) {
        int64_t index;
        if (st->open_index >= 0)
            return sl_vd_fail (self, "an item added while item %d is open", st->open_index);
        if (!sl_vd_int (data, "output_index", &index) || index != st->next_index)
            return sl_vd_fail (self, "an item added at an output_index other than %d", st->next_index);
        sl_str_t type = sl_vd_string (self, data, "item.type");
        if (!type.len)
            return sl_vd_fail (self, "an item without a type");
        sl_vd_copy (st->open_type, sizeof st->open_type, type);
        if (sl_str_eq (type, "function_call")
        &&  (!sl_vd_string (self, data, "item.call_id").len || !sl_vd_string (self, data, "item.name").len))
            return sl_vd_fail (self, "a function_call item without call_id or name");
        sl_str_t id = sl_vd_string (self, data, "item.id");
        if (!id.len)
            return sl_vd_fail (self, "an item without an id");
        sl_vd_copy (st->id, sizeof st->id, id);
        st->open_index = (int) index;
        st->part_open = false;
        return 0;
    }
    if (sl_str_eq (name, "response.output_item.done")) {
        int64_t index;
        if (st->open_index < 0 || !sl_vd_int (data, "output_index", &index) || index != st->open_index
        ||  !sl_vd_same (st->id, sl_vd_string (self, data, "item.id")))
            return sl_vd_fail (self, "output_item.done for an item that is not open");
        if (st->part_open)
            return sl_vd_fail (self, "output_item.done while a content part is open");
        st->open_index = -1;
        st->next_index++;
        st->items_done++;
        return 0;
    }
    if (sl_str_eq (name, "response.content_part.added")) {
        if (s_responses_item (self, st, name, data, NULL))
            return -1;
        if (st->part_open)
            return sl_vd_fail (self, "a content part added while one is open");
        st->part_open = true;
        return 0;
    }
    if (sl_str_eq (name, "response.content_part.done")) {
        if (s_responses_item (self, st, name, data, NULL))
            return -1;
        if (!st->part_open)
            return sl_vd_fail (self, "content_part.done with no part open");
        st->part_open = false;
        return 0;
    }
    if (sl_str_starts (name, "response.output_text.") || sl_str_starts (name, "response.refusal.")) {
        if (s_responses_item (self, st, name, data, "message"))
            return -1;
        return st->part_open ? 0 : sl_vd_fail (self, "%.*s with no content part open", (int) name.len, name.ptr);
    }
    if (sl_str_starts (name, "response.function_call_arguments."))
        return s_responses_item (self, st, name, data, "function_call");
    if (sl_str_starts (name, "response.reasoning_"))
        return s_responses_item (self, st, name, data, "reasoning");
    if (sl_str_eq (name, "response.completed") || sl_str_eq (name, "response.incomplete")
    ||  sl_str_eq (name, "response.failed")) {
        if (st->open_index >= 0)
            return sl_vd_fail (self, "%.*s while item %d is open", (int) name.len, name.ptr, st->open_index);
        sl_str_t status = sl_vd_string (self, data, "response.status");
        if (!status.len || !sl_str_eq_str (status, sl_str_n (name.ptr + 9, name.len - 9)))
            return sl_vd_fail (self, "%.*s with a response of another status", (int) name.len, name.ptr);
        if (sl_vd_count (data, "response.output") != st->items_done)
            return sl_vd_fail (self, "%.*s lists %d items, %d were sent", (int) name.len, name.ptr,
                           sl_vd_count (data, "response.output"), st->items_done);
        st->phase = SL_VD_END;
        return 0;
    }
    //  Other item events (e.g. a server tool's progress) must name the open item.
    if (sl_vd_has (data, "item_id"))
        return s_responses_item (self, st, name, data, NULL);
    return sl_vd_fail (self, "unknown event %.*s", (int) name.len, name.ptr);
}

//  --------------------------------------------------------------------------
//  The whole body of a non-streaming response

static int
s_responses_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_OBJECT, K_ID, K_STATUS, K_OUTPUT, K_USAGE, K_COUNT };
    static const char *const keys [] = { "object", "id", "status", "output", "usage", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "the body is not a JSON object");
    if (!sl_str_eq (sl_vd_text (self, v [K_OBJECT]), "response") || !sl_vd_text (self, v [K_ID]).len)
        return sl_vd_fail (self, "not a response object with an id");
    sl_str_t status = sl_vd_text (self, v [K_STATUS]);
    if (!sl_str_eq (status, "completed") && !sl_str_eq (status, "incomplete"))
        return sl_vd_fail (self, "a response neither completed nor incomplete");
    sl_json_iter_t it;
    sl_str_t item;
    if (!v [K_OUTPUT].ptr || sl_json_array (&it, v [K_OUTPUT]))
        return sl_vd_fail (self, "output is not an array");
    int rc, i = 0;
    while ((rc = sl_json_next_elem (&it, &item)) == 1) {
        char type [SL_VD_TYPE_MAX];
        sl_vd_copy (type, sizeof type, sl_vd_string (self, item, "type"));
        if (!type [0] || !sl_vd_string (self, item, "id").len)
            return sl_vd_fail (self, "output item %d without a type or an id", i);
        if (strcmp (type, "function_call") == 0
        &&  (!sl_vd_string (self, item, "call_id").len || !sl_vd_string (self, item, "name").len
             || !sl_vd_is_string (item, "arguments")))
            return sl_vd_fail (self, "a function_call item without call_id, name or string arguments");
        if (strcmp (type, "message") == 0
        &&  (!sl_str_eq (sl_vd_string (self, item, "role"), "assistant") || !sl_vd_type_is (item, "content", SL_JSON_ARRAY)))
            return sl_vd_fail (self, "a message item without the assistant role or content");
        if (strcmp (type, "reasoning") == 0 && !sl_vd_type_is (item, "summary", SL_JSON_ARRAY))
            return sl_vd_fail (self, "a reasoning item without a summary");
        i++;
    }
    if (rc != 0)
        return sl_vd_fail (self, "malformed output");
    if (!v [K_USAGE].ptr || !(sl_json_is_null (v [K_USAGE]) || sl_json_type (v [K_USAGE]) == SL_JSON_OBJECT))
        return sl_vd_fail (self, "usage is neither an object nor null");
    return 0;
}

const sl_validator_vt_t sl_responses_validator = {
    .event = s_responses,
    .body = s_responses_body,
};
