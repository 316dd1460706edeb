/*  sl_openai_decode.c - OpenAI Chat Completions stream decoder.

    Each SSE event is one chat.completion.chunk JSON object, or "[DONE]".
    A chunk carries the message identity (id, model, created), choices with
    a delta (content, refusal, reasoning, tool_calls fragments) and a
    finish_reason, and, on the usage chunk, usage with empty choices. A
    top-level "error" object (or an event named "error") is an error
    reported mid-stream.

    OpenAI-compatible servers add their own fields: reasoning_content
    (DeepSeek), reasoning (Groq, OpenRouter, Ollama), thinking_blocks with
    signatures (LiteLLM in front of Anthropic). Only choice 0 is decoded:
    the gateway refuses n > 1, and mixing choices would corrupt both.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_decoder_impl.h"

//  Fields read elsewhere or deliberately dropped; anything else is counted
//  as unknown (a provider extension this decoder does not translate).
static const sl_str_t s_chunk_known [] = {
    SL_STR_LIT ("id"), SL_STR_LIT ("model"), SL_STR_LIT ("created"), SL_STR_LIT ("choices"),
    SL_STR_LIT ("usage"), SL_STR_LIT ("error"), SL_STR_LIT ("object"),
    SL_STR_LIT ("system_fingerprint"), SL_STR_LIT ("service_tier"), SL_STR_LIT ("provider"),
    SL_STR_LIT ("obfuscation"), SL_STR_LIT ("provider_specific_fields"), SL_STR_LIT ("x_groq"),
    SL_STR_LIT ("prompt_filter_results"), SL_STR_LIT ("citations"), SL_STR_NULL
};
static const sl_str_t s_choice_known [] = {
    SL_STR_LIT ("index"), SL_STR_LIT ("delta"), SL_STR_LIT ("finish_reason"),
    SL_STR_LIT ("logprobs"), SL_STR_LIT ("native_finish_reason"),
    SL_STR_LIT ("content_filter_results"), SL_STR_LIT ("stop_reason"),
    SL_STR_LIT ("matched_stop"), SL_STR_NULL
};
static const sl_str_t s_delta_known [] = {
    SL_STR_LIT ("role"), SL_STR_LIT ("content"), SL_STR_LIT ("refusal"),
    SL_STR_LIT ("reasoning_content"), SL_STR_LIT ("reasoning"), SL_STR_LIT ("tool_calls"),
    SL_STR_LIT ("function_call"), SL_STR_LIT ("thinking_blocks"),
    SL_STR_LIT ("reasoning_details"), SL_STR_LIT ("audio"), SL_STR_LIT ("annotations"),
    SL_STR_LIT ("channel"), SL_STR_LIT ("provider_specific_fields"), SL_STR_NULL
};

//  Emit a text-like delta when the value is a non-empty string.
static int
s_emit_text (sl_decoder_t *dec, int kind, sl_str_t value)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    if (sl_decoder_str (dec, value, &d.text))
        return sl_decoder_fail (dec, "delta text is not a string");
    if (d.text.len)
        sl_decoder_emit_delta (dec, kind, &d);
    return 0;
}

//  function: {name, arguments} of a tool call or of the deprecated
//  function_call delta, into d.
static int
s_function (sl_decoder_t *dec, sl_str_t function, sl_msg_t *d)
{
    sl_json_iter_t it;
    sl_str_t key, value;
    int rc;
    if (sl_json_is_null (function))
        return 0;
    if (sl_json_object (&it, function))
        return sl_decoder_fail (dec, "function is not an object");
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "name")) {
            if (sl_decoder_str (dec, value, &d->name))
                return sl_decoder_fail (dec, "function name is not a string");
        }
        else
        if (SL_KEY (key, "arguments")) {
            if (sl_decoder_str (dec, value, &d->text))
                return sl_decoder_fail (dec, "function arguments are not a string");
        }
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed function object") : 0;
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
        if (SL_KEY (key, "index")) {
            if (sl_decoder_index (value, &d.index))
                return sl_decoder_fail (dec, "tool call index is not a small integer");
        }
        else
        if (SL_KEY (key, "id")) {
            if (sl_decoder_str (dec, value, &d.id))
                return sl_decoder_fail (dec, "tool call id is not a string");
        }
        else
        if (SL_KEY (key, "function")) {
            if (s_function (dec, value, &d))
                return -2;
        }
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed tool call");
    sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    return 0;
}

//  LiteLLM's thinking_blocks: the thinking text usually also arrives as
//  reasoning_content in the same delta, so text is taken from the blocks
//  only when the delta had none; signatures and redacted data always.
static int
s_thinking_blocks (sl_decoder_t *dec, sl_str_t blocks, bool had_reasoning)
{
    sl_json_iter_t it;
    sl_str_t block;
    int rc;
    if (sl_json_is_null (blocks))
        return 0;
    if (sl_json_array (&it, blocks))
        return sl_decoder_fail (dec, "thinking_blocks is not an array");
    while ((rc = sl_json_next_elem (&it, &block)) == 1) {
        sl_json_iter_t bit;
        sl_str_t key, value, type = SL_STR_NULL, thinking = SL_STR_NULL;
        sl_str_t signature = SL_STR_NULL, data = SL_STR_NULL;
        if (sl_json_object (&bit, block))
            return sl_decoder_fail (dec, "thinking block is not an object");
        while ((rc = sl_json_next_member (&bit, &key, &value)) == 1) {
            sl_str_t *slot = SL_KEY (key, "type") ? &type
                           : SL_KEY (key, "thinking") ? &thinking
                           : SL_KEY (key, "signature") ? &signature
                           : SL_KEY (key, "data") ? &data : NULL;
            if (slot && sl_decoder_str (dec, value, slot))
                return sl_decoder_fail (dec, "thinking block field is not a string");
        }
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed thinking block");
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        if (sl_str_eq (type, "redacted_thinking")) {
            d.text = data;
            if (d.text.len)
                sl_decoder_emit_delta (dec, SL_D_REDACTED, &d);
            continue;
        }
        if (!had_reasoning && thinking.len) {
            d.text = thinking;
            sl_decoder_emit_delta (dec, SL_D_THINKING, &d);
        }
        if (signature.len) {
            sl_msg_init (&d, SL_MSG_DELTA);
            d.sig = signature;
            sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &d);
        }
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed thinking_blocks") : 0;
}

//  A delta's members are collected first and emitted in a fixed order
//  (reasoning, text, refusal, calls), whatever order the server wrote.
static int
s_delta (sl_decoder_t *dec, sl_str_t delta)
{
    sl_json_iter_t it;
    if (sl_json_object (&it, delta))
        return sl_decoder_fail (dec, "delta is not an object");
    sl_str_t key, value;
    sl_str_t content = SL_STR_NULL, refusal = SL_STR_NULL, reasoning = SL_STR_NULL;
    sl_str_t reasoning_alt = SL_STR_NULL, tool_calls = SL_STR_NULL;
    sl_str_t function_call = SL_STR_NULL, thinking_blocks = SL_STR_NULL;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "content"))
            content = value;
        else
        if (SL_KEY (key, "reasoning_content"))
            reasoning = value;
        else
        if (SL_KEY (key, "reasoning"))
            reasoning_alt = value;
        else
        if (SL_KEY (key, "tool_calls"))
            tool_calls = value;
        else
        if (SL_KEY (key, "refusal"))
            refusal = value;
        else
        if (SL_KEY (key, "function_call"))
            function_call = value;
        else
        if (SL_KEY (key, "thinking_blocks"))
            thinking_blocks = value;
        else
        if (!sl_decoder_key_in (key, s_delta_known))
            sl_decoder_count_unknown (dec);
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed delta");
    //  Servers that send both reasoning_content and reasoning mean one text.
    if (!reasoning.ptr || sl_json_is_null (reasoning))
        reasoning = reasoning_alt;
    bool had_reasoning = false;
    if (reasoning.ptr) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        if (sl_decoder_str (dec, reasoning, &d.text))
            return sl_decoder_fail (dec, "reasoning is not a string");
        if (d.text.len) {
            had_reasoning = true;
            sl_decoder_emit_delta (dec, SL_D_THINKING, &d);
        }
    }
    if (thinking_blocks.ptr && s_thinking_blocks (dec, thinking_blocks, had_reasoning))
        return -2;
    if (content.ptr && s_emit_text (dec, SL_D_TEXT, content))
        return -2;
    if (refusal.ptr && s_emit_text (dec, SL_D_REFUSAL, refusal))
        return -2;
    if (function_call.ptr && !sl_json_is_null (function_call)) {
        //  The deprecated single-call form: one call, no index, no id.
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = 0;
        if (s_function (dec, function_call, &d))
            return -2;
        sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    }
    if (tool_calls.ptr && !sl_json_is_null (tool_calls)) {
        sl_json_iter_t ait;
        sl_str_t call;
        if (sl_json_array (&ait, tool_calls))
            return sl_decoder_fail (dec, "tool_calls is not an array");
        while ((rc = sl_json_next_elem (&ait, &call)) == 1)
            if (s_tool_call (dec, call))
                return -2;
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed tool_calls");
    }
    return 0;
}

#define S_CHOICE(X) X (C_DELTA, "delta") X (C_FINISH, "finish_reason") X (C_INDEX, "index")
SL_DECODER_MEMBERS (s_choice_members, S_CHOICE)

static int
s_choice (sl_decoder_t *dec, sl_str_t choice)
{
    static const sl_decoder_object_t shape = { s_choice_known, "choice is not an object", "malformed choice" };
    sl_str_t v [s_choice_members_count];
    if (s_choice_members (dec, choice, &shape, v))
        return -2;
    sl_str_t delta = v [C_DELTA], finish = v [C_FINISH];
    int32_t index = 0;
    if (v [C_INDEX].ptr && sl_decoder_index (v [C_INDEX], &index))
        return sl_decoder_fail (dec, "choice index is not a small integer");
    if (index != 0) {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    if (delta.ptr && !sl_json_is_null (delta) && s_delta (dec, delta))
        return -2;
    if (finish.ptr && !sl_json_is_null (finish)) {
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        if (sl_decoder_str (dec, finish, &d.finish_raw))
            return sl_decoder_fail (dec, "finish_reason is not a string");
        sl_decoder_emit_finish (dec, &d);
    }
    return 0;
}

static const sl_usage_key_t s_usage_keys [] = {
    { "prompt_tokens", NULL, offsetof (sl_usage_t, input) },
    { "completion_tokens", NULL, offsetof (sl_usage_t, output) },
    { "total_tokens", NULL, offsetof (sl_usage_t, total) },
    { "prompt_tokens_details", "cached_tokens", offsetof (sl_usage_t, cache_read) },
    { "completion_tokens_details", "reasoning_tokens", offsetof (sl_usage_t, reasoning) },
    { NULL, NULL, 0 }
};

static int
s_usage (sl_decoder_t *dec, sl_str_t usage)
{
    if (sl_decoder_emit_usage (dec, usage, s_usage_keys))
        return sl_decoder_fail (dec, "usage is not an object");
    return 0;
}

#define S_CHUNK(X) \
    X (K_CHOICES, "choices") X (K_ID, "id") X (K_MODEL, "model") X (K_CREATED, "created") X (K_USAGE, "usage") \
    X (K_ERROR, "error")
SL_DECODER_MEMBERS (s_chunk_members, S_CHUNK)

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    (void) state;
    sl_str_t body = sl_json_trim (data);
    if (sl_str_eq (body, "[DONE]")) {
        sl_decoder_emit_done (dec);
        return 0;
    }
    static const sl_decoder_object_t shape = { s_chunk_known, "chunk is not a JSON object", "chunk is not valid JSON" };
    sl_str_t v [s_chunk_members_count];
    if (s_chunk_members (dec, body, &shape, v))
        return -2;
    int rc;
    sl_str_t id = v [K_ID], model = v [K_MODEL], choices = v [K_CHOICES];
    sl_str_t usage = v [K_USAGE], error = v [K_ERROR], created = v [K_CREATED];
    if (error.ptr && !sl_json_is_null (error)) {
        //  Tokens spent before the failure are still billed: keep them.
        if (usage.ptr && !sl_json_is_null (usage) && s_usage (dec, usage))
            return -2;
        sl_decoder_emit_error_object (dec, error);
        return 0;
    }
    if (sl_str_eq (type, "error")) {
        sl_decoder_emit_error_object (dec, body);
        return 0;
    }
    if (id.ptr || model.ptr)
        sl_decoder_identify (dec, id, model, created);
    if (choices.ptr && !sl_json_is_null (choices)) {
        sl_json_iter_t cit;
        sl_str_t choice;
        if (sl_json_array (&cit, choices))
            return sl_decoder_fail (dec, "choices is not an array");
        while ((rc = sl_json_next_elem (&cit, &choice)) == 1)
            if (s_choice (dec, choice))
                return -2;
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed choices");
    }
    if (usage.ptr && !sl_json_is_null (usage))
        return s_usage (dec, usage);
    return 0;
}

//  The body's end is sl_decoder_end's: some OpenAI-compatible servers end
//  without [DONE], and the finish reason already said the response is
//  complete.
const sl_decoder_vt_t sl_openai_decoder = {
    .event = s_event,
};
