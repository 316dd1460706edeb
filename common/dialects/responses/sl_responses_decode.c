/*  sl_responses_decode.c - OpenAI Responses API stream decoder.

    Every event's data is a JSON object whose "type" names it (the SSE
    event name repeats it; some servers omit event lines, so the data's
    type is what counts). The response is a list of output items, each
    with its output_index: message items carry text (and refusals, and
    annotations), reasoning items carry reasoning text and / or summary
    text and encrypted content, function_call items carry a call with an
    item id and a call_id, and server-run tool items (web_search_call,
    file_search_call, ...) report their action. output_item.done closes an
    item; response.completed / incomplete / failed end the response.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_decoder_impl.h"

typedef enum {
    ITEM_NONE = 0,
    ITEM_MESSAGE,
    ITEM_REASONING,
    ITEM_FUNCTION,
    ITEM_SERVER_TOOL,
    ITEM_UNKNOWN
} s_item_kind_t;

typedef struct {
    uint8_t kind;                       //  s_item_kind_t
    bool args_seen;                     //  a function call's arguments arrived
} s_item_t;

typedef struct {
    s_item_t *items;                    //  by output_index
    size_t item_count;
} s_state_t;

//  Output items run by the provider itself; reported, never judged.
static const sl_str_t s_server_items [] = {
    SL_STR_LIT ("web_search_call"), SL_STR_LIT ("file_search_call"),
    SL_STR_LIT ("code_interpreter_call"), SL_STR_LIT ("image_generation_call"),
    SL_STR_LIT ("mcp_call"), SL_STR_NULL
};

//  Usage in response.completed and response.incomplete.
static const sl_usage_key_t s_usage [] = {
    { "input_tokens", NULL, offsetof (sl_usage_t, input) },
    { "output_tokens", NULL, offsetof (sl_usage_t, output) },
    { "total_tokens", NULL, offsetof (sl_usage_t, total) },
    { "input_tokens_details", "cached_tokens", offsetof (sl_usage_t, cache_read) },
    { "output_tokens_details", "reasoning_tokens", offsetof (sl_usage_t, reasoning) },
    { NULL, NULL, 0 }
};

static void
s_clear (void *state)
{
    free (((s_state_t *) state)->items);
}

static s_item_t *
s_item (s_state_t *st, int32_t index)
{
    return sl_decoder_slot ((void **) &st->items, &st->item_count, sizeof (s_item_t), index);
}

//  The fields of one event that any type may use.
typedef struct {
    sl_str_t type;
    int32_t index;                      //  output_index, -1 absent
    sl_str_t item_id;
    sl_str_t delta;                     //  string delta, decoded
    sl_str_t item;                      //  item object
    sl_str_t response;                  //  response object
    sl_str_t annotation;
    sl_str_t error;                     //  nested error object
    sl_str_t code, message;             //  flat error fields, decoded
} s_event_t;

#define S_RESPONSE(X) \
    X (R_ID, "id") X (R_MODEL, "model") X (R_CREATED, "created_at") X (R_USAGE, "usage") X (R_ERROR, "error") \
    X (R_DETAILS, "incomplete_details")
SL_DECODER_MEMBERS (s_response_members, S_RESPONSE)

//  response.created / in_progress / completed / incomplete / failed.
static int
s_response (sl_decoder_t *dec, const s_event_t *e)
{
    static const sl_decoder_object_t shape = {
        NULL, "response event without a response object", "malformed response object"
    };
    sl_str_t v [s_response_members_count];
    if (s_response_members (dec, e->response, &shape, v))
        return -2;
    sl_str_t usage = v [R_USAGE], error = v [R_ERROR], details = v [R_DETAILS];
    sl_decoder_identify (dec, v [R_ID], v [R_MODEL], v [R_CREATED]);
    if (sl_str_eq (e->type, "response.failed")) {
        sl_decoder_emit_error_object (dec, error.ptr && !sl_json_is_null (error) ? error : SL_STR_NULL);
        return 0;
    }
    bool completed = sl_str_eq (e->type, "response.completed");
    if (!completed && !sl_str_eq (e->type, "response.incomplete"))
        return 0;                       //  created, in_progress, queued
    if (usage.ptr && !sl_json_is_null (usage))
        sl_decoder_emit_usage (dec, usage, s_usage);
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.finish_raw = SL_STR_LIT ("completed");
    if (!completed) {
        //  The reason says why it stopped: max_output_tokens, content_filter.
        sl_str_t reason;
        d.finish_raw = SL_STR_LIT ("incomplete");
        if (details.ptr && sl_json_find (details, "reason", &reason) == 1
        &&  sl_json_type (reason) == SL_JSON_STRING)
            sl_json_str (reason, sl_decoder_scratch (dec), &d.finish_raw);
    }
    sl_decoder_emit_finish (dec, &d);
    sl_decoder_emit_done (dec);
    return 0;
}

//  The fields of an output item.
typedef struct {
    sl_str_t type, id, call_id, name, arguments, encrypted, action, results;
} s_item_fields_t;

static int
s_item_fields (sl_decoder_t *dec, sl_str_t item, s_item_fields_t *f)
{
    memset (f, 0, sizeof *f);
    sl_json_iter_t it;
    sl_str_t key, value;
    if (sl_json_object (&it, item))
        return sl_decoder_fail (dec, "output item is not an object");
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        sl_str_t *slot = NULL;
        if (SL_KEY (key, "type"))
            slot = &f->type;
        else
        if (SL_KEY (key, "id"))
            slot = &f->id;
        else
        if (SL_KEY (key, "call_id"))
            slot = &f->call_id;
        else
        if (SL_KEY (key, "name"))
            slot = &f->name;
        else
        if (SL_KEY (key, "arguments"))
            slot = &f->arguments;
        else
        if (SL_KEY (key, "encrypted_content"))
            slot = &f->encrypted;
        else
        if (SL_KEY (key, "action"))
            f->action = sl_json_trim (value);
        else
        if (SL_KEY (key, "results") || SL_KEY (key, "outputs")
        ||  SL_KEY (key, "output"))
            f->results = sl_json_trim (value);
        if (slot && sl_decoder_str (dec, value, slot))
            return sl_decoder_fail (dec, "output item field is not a string");
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed output item") : 0;
}

//  "web_search_call" -> "web_search": the tool's own name.
static sl_str_t
s_server_tool_name (sl_str_t type)
{
    if (type.len > 5 && memcmp (type.ptr + type.len - 5, "_call", 5) == 0)
        return sl_str_n (type.ptr, type.len - 5);
    return type;
}

static int
s_item_added (s_state_t *st, sl_decoder_t *dec, const s_event_t *e)
{
    s_item_fields_t f;
    if (s_item_fields (dec, e->item, &f))
        return -2;
    s_item_t *item = s_item (st, e->index);
    if (!item) {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    item->args_seen = false;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = e->index;
    d.id = f.id;
    if (sl_str_eq (f.type, "message"))
        item->kind = ITEM_MESSAGE;
    else
    if (sl_str_eq (f.type, "reasoning"))
        item->kind = ITEM_REASONING;
    else
    if (sl_str_eq (f.type, "function_call")) {
        item->kind = ITEM_FUNCTION;
        d.call_id = f.call_id;
        d.name = f.name;
        if (f.arguments.len) {
            d.text = f.arguments;
            item->args_seen = true;
        }
        sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    }
    else
    if (f.type.ptr && sl_decoder_key_in (f.type, s_server_items)) {
        item->kind = ITEM_SERVER_TOOL;
        d.name = s_server_tool_name (f.type);
        sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_USE, &d);
    }
    else {
        item->kind = ITEM_UNKNOWN;
        sl_decoder_count_unknown (dec);
    }
    return 0;
}

static int
s_item_done (s_state_t *st, sl_decoder_t *dec, const s_event_t *e)
{
    s_item_fields_t f;
    if (s_item_fields (dec, e->item, &f))
        return -2;
    s_item_t *item = s_item (st, e->index);
    if (!item || item->kind == ITEM_NONE || item->kind == ITEM_UNKNOWN) {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = e->index;
    d.id = f.id;
    if (item->kind == ITEM_FUNCTION && !item->args_seen) {
        //  No argument deltas: the done item holds the whole arguments.
        d.text = f.arguments.ptr ? f.arguments : SL_STR_LIT ("{}");
        sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    }
    else
    if (item->kind == ITEM_REASONING && f.encrypted.len) {
        //  The final encrypted content (it differs from the one added).
        d.sig = f.encrypted;
        sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &d);
    }
    else
    if (item->kind == ITEM_SERVER_TOOL) {
        d.name = s_server_tool_name (f.type);
        d.text = f.action.ptr ? f.action : f.arguments;
        if (d.text.ptr)
            sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_USE, &d);
        if (f.results.ptr && !sl_json_is_null (f.results)) {
            sl_msg_init (&d, SL_MSG_DELTA);
            d.index = e->index;
            d.id = f.id;
            d.name = f.type;
            d.body = f.results;
            sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_RESULT, &d);
        }
    }
    item->kind = ITEM_NONE;
    sl_decoder_emit_index (dec, SL_D_BLOCK_STOP, e->index);
    return 0;
}

//  A string delta for the item at e->index: text, refusal, reasoning.
static void
s_fragment (s_state_t *st, sl_decoder_t *dec, const s_event_t *e, int kind, uint32_t flags)
{
    if (!e->delta.len)
        return;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = e->index;
    d.id = e->item_id;
    d.text = e->delta;
    d.flags = flags;
    if (kind == SL_D_TOOL_CALL) {
        s_item_t *item = s_item (st, e->index);
        if (item)
            item->args_seen = true;
    }
    sl_decoder_emit_delta (dec, kind, &d);
}

//  Event types that carry nothing to translate (progress, repeats of
//  what the deltas already said).
static const sl_str_t s_quiet [] = {
    SL_STR_LIT ("response.content_part.added"), SL_STR_LIT ("response.content_part.done"),
    SL_STR_LIT ("response.output_text.done"), SL_STR_LIT ("response.refusal.done"),
    SL_STR_LIT ("response.reasoning_text.done"),
    SL_STR_LIT ("response.reasoning_summary_text.done"),
    SL_STR_LIT ("response.reasoning_summary_part.added"),
    SL_STR_LIT ("response.reasoning_summary_part.done"),
    SL_STR_LIT ("response.function_call_arguments.done"), SL_STR_NULL
};

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t event, sl_str_t data)
{
    s_state_t *st = state;
    s_event_t e = { .index = -1 };
    sl_json_iter_t it;
    sl_str_t body = sl_json_trim (data);
    if (sl_str_eq (body, "[DONE]")) {
        //  Some servers end with it; the response's own end counts.
        sl_decoder_count_unknown (dec);
        return 0;
    }
    if (sl_json_object (&it, body))
        return sl_decoder_fail (dec, "event data is not a JSON object");
    sl_str_t key, value, delta = SL_STR_NULL;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "type")) {
            if (sl_decoder_str (dec, value, &e.type))
                return sl_decoder_fail (dec, "event type is not a string");
        }
        else
        if (SL_KEY (key, "delta"))
            delta = value;
        else
        if (SL_KEY (key, "output_index")) {
            if (sl_decoder_index (value, &e.index))
                return sl_decoder_fail (dec, "output_index is not a small integer");
        }
        else
        if (SL_KEY (key, "item_id")) {
            if (sl_decoder_str (dec, value, &e.item_id))
                return sl_decoder_fail (dec, "item_id is not a string");
        }
        else
        if (SL_KEY (key, "item"))
            e.item = value;
        else
        if (SL_KEY (key, "response"))
            e.response = value;
        else
        if (SL_KEY (key, "annotation"))
            e.annotation = value;
        else
        if (SL_KEY (key, "error"))
            e.error = value;
        else
        if (SL_KEY (key, "code") && sl_json_type (value) == SL_JSON_STRING)
            sl_json_str (value, sl_decoder_scratch (dec), &e.code);
        else
        if (SL_KEY (key, "message") && sl_json_type (value) == SL_JSON_STRING)
            sl_json_str (value, sl_decoder_scratch (dec), &e.message);
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "event data is not valid JSON");
    if (!e.type.ptr)
        e.type = event;
    if (delta.ptr && sl_json_type (delta) == SL_JSON_STRING
    &&  sl_decoder_str (dec, delta, &e.delta))
        return sl_decoder_fail (dec, "delta is not a valid string");

    if (sl_str_eq (e.type, "response.output_text.delta"))
        s_fragment (st, dec, &e, SL_D_TEXT, 0);
    else
    if (sl_str_eq (e.type, "response.function_call_arguments.delta"))
        s_fragment (st, dec, &e, SL_D_TOOL_CALL, 0);
    else
    if (sl_str_eq (e.type, "response.reasoning_summary_text.delta"))
        s_fragment (st, dec, &e, SL_D_THINKING, SL_F_SUMMARY);
    else
    if (sl_str_eq (e.type, "response.reasoning_text.delta"))
        s_fragment (st, dec, &e, SL_D_THINKING, 0);
    else
    if (sl_str_eq (e.type, "response.refusal.delta"))
        s_fragment (st, dec, &e, SL_D_REFUSAL, 0);
    else
    if (sl_str_eq (e.type, "response.output_item.added")) {
        if (!e.item.ptr || e.index < 0)
            return sl_decoder_fail (dec, "output_item.added without item or output_index");
        return s_item_added (st, dec, &e);
    }
    else
    if (sl_str_eq (e.type, "response.output_item.done")) {
        if (!e.item.ptr || e.index < 0)
            return sl_decoder_fail (dec, "output_item.done without item or output_index");
        return s_item_done (st, dec, &e);
    }
    else
    if (sl_str_eq (e.type, "response.output_text.annotation.added")) {
        if (!e.annotation.ptr)
            return sl_decoder_fail (dec, "annotation.added without an annotation");
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = e.index;
        d.id = e.item_id;
        d.body = sl_json_trim (e.annotation);
        sl_decoder_emit_delta (dec, SL_D_CITATION, &d);
    }
    else
    if (sl_str_eq (e.type, "response.created") || sl_str_eq (e.type, "response.in_progress")
    ||  sl_str_eq (e.type, "response.queued") || sl_str_eq (e.type, "response.completed")
    ||  sl_str_eq (e.type, "response.incomplete") || sl_str_eq (e.type, "response.failed")) {
        if (!e.response.ptr)
            return sl_decoder_fail (dec, "response event without a response");
        return s_response (dec, &e);
    }
    else
    if (sl_str_eq (e.type, "error")) {
        //  Documented flat ({type, code, message}); also seen nested.
        if (e.error.ptr && sl_json_type (e.error) == SL_JSON_OBJECT)
            sl_decoder_emit_error_object (dec, e.error);
        else
            sl_decoder_emit_error (dec, e.code, e.message, sl_decoder_error_status (e.code));
    }
    else
    if (sl_decoder_key_in (e.type, s_quiet))
        return 0;
    else
    if (sl_str_starts (e.type, "response.web_search_call.")
    ||  sl_str_starts (e.type, "response.file_search_call.")
    ||  sl_str_starts (e.type, "response.code_interpreter_call")
    ||  sl_str_starts (e.type, "response.image_generation_call.")
    ||  sl_str_starts (e.type, "response.mcp_call"))
        return 0;                       //  a server tool's progress
    else
        sl_decoder_count_unknown (dec);
    return 0;
}

//  The body's end is sl_decoder_end's: the response's end was not seen
//  (response.completed and its kin end the stream themselves).
const sl_decoder_vt_t sl_responses_decoder = {
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .event = s_event,
};
