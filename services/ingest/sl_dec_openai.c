/*  sl_dec_openai.c - OpenAI Chat Completions stream decoder.

    Each SSE event is one chat.completion.chunk JSON object, or "[DONE]".
    A chunk carries the message identity (id, model, created), choices with
    a delta (content, refusal, reasoning, tool_calls fragments) and a
    finish_reason, and, on the usage chunk, usage with empty choices. A
    top-level "error" object is an error reported mid-stream.
*/
#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_json.h"
#include "sl_decoder_impl.h"

typedef struct {
    bool identified;                    //  MESSAGE delta emitted
    bool finished;                      //  a finish_reason was seen
} s_state_t;

static void *
s_create (void)
{
    return sl_xcalloc (1, sizeof (s_state_t));
}

static void
s_destroy (void *state)
{
    free (state);
}

//  A string member as text (NULL when absent or null); -2 when malformed.
static int
s_text (sl_decoder_t *dec, sl_str_t value, sl_str_t *out)
{
    *out = SL_STR_NULL;
    if (sl_json_is_null (value))
        return 0;
    return sl_json_str (value, sl_decoder_scratch (dec), out);
}

static int
s_tool_call (sl_decoder_t *dec, sl_str_t call)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    sl_json_iter_t it;
    if (sl_json_object (&it, call))
        return sl_decoder_fail (dec, "tool_calls entry is not an object");
    sl_str_t key, value;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (sl_json_key_eq (key, "index")) {
            int64_t index;
            if (sl_json_i64 (value, &index) || index < 0 || index > INT32_MAX)
                return sl_decoder_fail (dec, "tool call index is not a small integer");
            d.index = (int32_t) index;
        }
        else
        if (sl_json_key_eq (key, "id")) {
            if (s_text (dec, value, &d.id))
                return sl_decoder_fail (dec, "tool call id is not a string");
        }
        else
        if (sl_json_key_eq (key, "function")) {
            sl_json_iter_t fit;
            sl_str_t fkey, fvalue;
            if (sl_json_object (&fit, value))
                return sl_decoder_fail (dec, "tool call function is not an object");
            while ((rc = sl_json_next_member (&fit, &fkey, &fvalue)) == 1) {
                if (sl_json_key_eq (fkey, "name")) {
                    if (s_text (dec, fvalue, &d.name))
                        return sl_decoder_fail (dec, "function name is not a string");
                }
                else
                if (sl_json_key_eq (fkey, "arguments")) {
                    if (s_text (dec, fvalue, &d.text))
                        return sl_decoder_fail (dec, "function arguments are not a string");
                }
            }
            if (rc < 0)
                return sl_decoder_fail (dec, "malformed function object");
        }
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed tool call");
    sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    return 0;
}

static int
s_delta (sl_decoder_t *dec, sl_str_t delta)
{
    sl_json_iter_t it;
    if (sl_json_object (&it, delta))
        return sl_decoder_fail (dec, "delta is not an object");
    sl_str_t key, value;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        int kind = 0;
        if (sl_json_key_eq (key, "content"))
            kind = SL_D_TEXT;
        else
        if (sl_json_key_eq (key, "refusal"))
            kind = SL_D_REFUSAL;
        else
        if (sl_json_key_eq (key, "reasoning_content") || sl_json_key_eq (key, "reasoning"))
            kind = SL_D_THINKING;
        else
        if (sl_json_key_eq (key, "tool_calls")) {
            if (sl_json_is_null (value))
                continue;
            sl_json_iter_t ait;
            sl_str_t call;
            if (sl_json_array (&ait, value))
                return sl_decoder_fail (dec, "tool_calls is not an array");
            while ((rc = sl_json_next_elem (&ait, &call)) == 1)
                if (s_tool_call (dec, call))
                    return -2;
            if (rc < 0)
                return sl_decoder_fail (dec, "malformed tool_calls");
            continue;
        }
        if (!kind)
            continue;                   //  role, audio, annotations...
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        if (s_text (dec, value, &d.text))
            return sl_decoder_fail (dec, "delta text is not a string");
        if (d.text.ptr && d.text.len)
            sl_decoder_emit_delta (dec, kind, &d);
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed delta") : 0;
}

static int
s_choice (s_state_t *st, sl_decoder_t *dec, sl_str_t choice)
{
    sl_json_iter_t it;
    if (sl_json_object (&it, choice))
        return sl_decoder_fail (dec, "choice is not an object");
    sl_str_t key, value, delta = SL_STR_NULL, finish = SL_STR_NULL;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (sl_json_key_eq (key, "delta"))
            delta = value;
        else
        if (sl_json_key_eq (key, "finish_reason"))
            finish = value;
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed choice");
    if (delta.ptr && !sl_json_is_null (delta) && s_delta (dec, delta))
        return -2;
    if (finish.ptr && !sl_json_is_null (finish)) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        if (s_text (dec, finish, &d.finish_raw))
            return sl_decoder_fail (dec, "finish_reason is not a string");
        st->finished = true;
        sl_decoder_emit_delta (dec, SL_D_FINISH, &d);
    }
    return 0;
}

//  Read an integer member of obj into *out (left alone when absent).
static void
s_usage_field (sl_str_t obj, const char *key, int64_t *out)
{
    sl_str_t v;
    int64_t n;
    if (sl_json_find (obj, key, &v) == 1 && sl_json_i64 (v, &n) == 0)
        *out = n;
}

static int
s_usage (sl_decoder_t *dec, sl_str_t usage)
{
    if (sl_json_type (usage) != SL_JSON_OBJECT)
        return sl_decoder_fail (dec, "usage is not an object");
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.has_usage = true;
    s_usage_field (usage, "prompt_tokens", &d.usage.input);
    s_usage_field (usage, "completion_tokens", &d.usage.output);
    s_usage_field (usage, "total_tokens", &d.usage.total);
    sl_str_t details;
    if (sl_json_find (usage, "prompt_tokens_details", &details) == 1
    &&  sl_json_type (details) == SL_JSON_OBJECT)
        s_usage_field (details, "cached_tokens", &d.usage.cache_read);
    if (sl_json_find (usage, "completion_tokens_details", &details) == 1
    &&  sl_json_type (details) == SL_JSON_OBJECT)
        s_usage_field (details, "reasoning_tokens", &d.usage.reasoning);
    sl_decoder_emit_delta (dec, SL_D_USAGE, &d);
    return 0;
}

static int
s_error (sl_decoder_t *dec, sl_str_t error)
{
    sl_str_t type = SL_STR_NULL, message = SL_STR_NULL, v;
    sl_buf_t *scratch = sl_decoder_scratch (dec);
    if (sl_json_type (error) == SL_JSON_OBJECT) {
        if ((sl_json_find (error, "type", &v) == 1 || sl_json_find (error, "code", &v) == 1)
        &&  sl_json_type (v) == SL_JSON_STRING)
            sl_json_str (v, scratch, &type);
        if (sl_json_find (error, "message", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
            sl_json_str (v, scratch, &message);
    }
    else
    if (sl_json_type (error) == SL_JSON_STRING)
        sl_json_str (error, scratch, &message);
    sl_decoder_emit_error (dec, type, message, 0);
    sl_decoder_set_done (dec);
    return 0;
}

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    s_state_t *st = state;
    sl_str_t body = sl_json_trim (data);
    if (sl_str_eq (body, "[DONE]")) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        sl_decoder_emit_delta (dec, SL_D_DONE, &d);
        sl_decoder_set_done (dec);
        return 0;
    }
    sl_json_iter_t it;
    if (sl_json_object (&it, body))
        return sl_decoder_fail (dec, "chunk is not a JSON object");
    sl_str_t key, value;
    sl_str_t id = SL_STR_NULL, model = SL_STR_NULL, choices = SL_STR_NULL;
    sl_str_t usage = SL_STR_NULL, error = SL_STR_NULL;
    int64_t created = 0;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (sl_json_key_eq (key, "id"))
            s_text (dec, value, &id);
        else
        if (sl_json_key_eq (key, "model"))
            s_text (dec, value, &model);
        else
        if (sl_json_key_eq (key, "created"))
            sl_json_i64 (value, &created);
        else
        if (sl_json_key_eq (key, "choices"))
            choices = value;
        else
        if (sl_json_key_eq (key, "usage"))
            usage = value;
        else
        if (sl_json_key_eq (key, "error"))
            error = value;
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "chunk is not valid JSON");
    if ((error.ptr && !sl_json_is_null (error)) || sl_str_eq (type, "error"))
        return s_error (dec, error.ptr ? error : body);
    if (!st->identified && (id.ptr || model.ptr)) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.id = id;
        d.model = model;
        d.ts = created;
        st->identified = true;
        sl_decoder_emit_delta (dec, SL_D_MESSAGE, &d);
    }
    if (choices.ptr && !sl_json_is_null (choices)) {
        sl_json_iter_t cit;
        sl_str_t choice;
        if (sl_json_array (&cit, choices))
            return sl_decoder_fail (dec, "choices is not an array");
        while ((rc = sl_json_next_elem (&cit, &choice)) == 1)
            if (s_choice (st, dec, choice))
                return -2;
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed choices");
    }
    if (usage.ptr && !sl_json_is_null (usage))
        return s_usage (dec, usage);
    return 0;
}

static int
s_finish (void *state, sl_decoder_t *dec)
{
    s_state_t *st = state;
    if (sl_decoder_done (dec))
        return 0;
    if (st->finished) {
        //  Some OpenAI-compatible servers end without [DONE]: the finish
        //  reason already said the response is complete.
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        sl_decoder_emit_delta (dec, SL_D_DONE, &d);
        sl_decoder_set_done (dec);
        return 0;
    }
    sl_decoder_emit_error (dec, SL_STR_LIT ("upstream_incomplete"),
                           SL_STR_LIT ("the upstream ended the stream before it finished"), 502);
    return 0;
}

const sl_decoder_vt_t sl_dec_openai_vt = {
    "openai", s_create, s_destroy, s_event, s_finish
};
