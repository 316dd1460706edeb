/*  sl_gemini_decode.c - Gemini streamGenerateContent (alt=sse) decoder.

    Every event is one GenerateContentResponse: candidates (each with
    content.parts, a finishReason on the last chunk, citation and grounding
    metadata), promptFeedback (a blockReason when the prompt itself was
    refused), usageMetadata (cumulative, on every chunk), modelVersion,
    responseId. An error is a JSON object with "error" (as an SSE event, or
    as the bare JSON object sl_sse turns into an event named "error").

    Part indices restart in every chunk; i is the part's position in its
    chunk. Tool calls arrive whole (functionCall.args) or, on Vertex with
    streamFunctionCallArguments, as a call opened with willContinue whose
    arguments follow as partialArgs (JSON path + value) and which an empty
    functionCall closes; sl_argstream turns those into JSON text.

    Gemini has no end-of-stream marker and repeats usage on every chunk, and
    a finishReason may come before the last text (seen in recorded
    streams), so usage and the finish are held and emitted once, when the
    body ends: usage, finish, done.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_argstream.h"
#include "common/dialects/sl_decoder_impl.h"

typedef struct {
    bool has_usage;
    sl_usage_t usage;                   //  the latest usageMetadata
    sl_buf_t finish;                    //  the latest finishReason / blockReason
    bool streaming_call;                //  a call opened with willContinue
    int32_t call_index;                 //  part index of its last fragment
    sl_argstream_t *args;
    sl_buf_t fragment;                  //  JSON text produced for one fragment
} s_state_t;

static void
s_init (void *state)
{
    ((s_state_t *) state)->args = sl_argstream_new ();
}

static void
s_clear (void *state)
{
    s_state_t *st = state;
    sl_argstream_destroy (&st->args);
    sl_buf_free (&st->finish);
    sl_buf_free (&st->fragment);
}

static void
s_emit_fragment (s_state_t *st, sl_decoder_t *dec, int32_t index)
{
    if (!st->fragment.len)
        return;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    d.text = sl_buf_str (&st->fragment);
    sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    sl_buf_reset (&st->fragment);
}

//  Close a streamed call: what closes its JSON is its last fragment.
static void
s_close_call (s_state_t *st, sl_decoder_t *dec)
{
    if (!st->streaming_call)
        return;
    sl_buf_reset (&st->fragment);
    sl_argstream_end (st->args, &st->fragment);
    s_emit_fragment (st, dec, st->call_index);
    st->streaming_call = false;
}

//  partialArgs: [{jsonPath, stringValue | numberValue | boolValue |
//  nullValue, willContinue}].
static int
s_partial_args (s_state_t *st, sl_decoder_t *dec, sl_str_t list)
{
    sl_json_iter_t it;
    sl_str_t arg;
    int rc;
    if (sl_json_array (&it, list))
        return sl_decoder_fail (dec, "partialArgs is not an array");
    sl_buf_reset (&st->fragment);
    while ((rc = sl_json_next_elem (&it, &arg)) == 1) {
        sl_json_iter_t ait;
        sl_str_t key, value, path = SL_STR_NULL, v = SL_STR_NULL;
        bool more = false;
        if (sl_json_object (&ait, arg))
            return sl_decoder_fail (dec, "partial arg is not an object");
        while ((rc = sl_json_next_member (&ait, &key, &value)) == 1) {
            if (SL_KEY (key, "jsonPath")) {
                if (sl_decoder_str (dec, value, &path))
                    return sl_decoder_fail (dec, "jsonPath is not a string");
            }
            else
            if (SL_KEY (key, "stringValue") || SL_KEY (key, "numberValue")
            ||  SL_KEY (key, "boolValue"))
                v = value;
            else
            if (SL_KEY (key, "nullValue"))
                v = SL_STR_LIT ("null");
            else
            if (SL_KEY (key, "willContinue"))
                sl_json_bool (value, &more);
        }
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed partial arg");
        if (!path.ptr || !v.ptr || sl_argstream_put (st->args, path, v, more, &st->fragment))
            sl_decoder_count_unknown (dec);
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed partialArgs") : 0;
}

static int
s_function_call (s_state_t *st, sl_decoder_t *dec, int32_t index, sl_str_t call, sl_str_t sig)
{
    sl_json_iter_t it;
    sl_str_t key, value, name = SL_STR_NULL, id = SL_STR_NULL, args = SL_STR_NULL;
    sl_str_t partial = SL_STR_NULL;
    bool more = false;
    if (sl_json_object (&it, call))
        return sl_decoder_fail (dec, "functionCall is not an object");
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "name")) {
            if (sl_decoder_str (dec, value, &name))
                return sl_decoder_fail (dec, "functionCall name is not a string");
        }
        else
        if (SL_KEY (key, "id")) {
            if (sl_decoder_str (dec, value, &id))
                return sl_decoder_fail (dec, "functionCall id is not a string");
        }
        else
        if (SL_KEY (key, "args"))
            args = sl_json_trim (value);
        else
        if (SL_KEY (key, "partialArgs"))
            partial = value;
        else
        if (SL_KEY (key, "willContinue"))
            sl_json_bool (value, &more);
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed functionCall");
    if (name.ptr)
        s_close_call (st, dec);         //  a new call ends the one streaming
    else
    if (!st->streaming_call) {
        //  Arguments or an end for a call that was never opened.
        sl_decoder_count_unknown (dec);
        return 0;
    }
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if (name.ptr) {
        d.id = id;
        d.name = name;
        d.sig = sig;
        if (!more) {
            //  A whole call: its args are the complete arguments.
            d.text = args.ptr && sl_json_type (args) == SL_JSON_OBJECT ? args : SL_STR_LIT ("{}");
            sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
            return 0;
        }
        st->streaming_call = true;
        sl_argstream_begin (st->args);
        sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    }
    st->call_index = index;
    if (partial.ptr) {
        if (s_partial_args (st, dec, partial))
            return -2;
        s_emit_fragment (st, dec, index);
    }
    if (!more)
        s_close_call (st, dec);
    return 0;
}

static int
s_part (s_state_t *st, sl_decoder_t *dec, int32_t index, sl_str_t part)
{
    sl_json_iter_t it;
    sl_str_t key, value, text = SL_STR_NULL, sig = SL_STR_NULL, call = SL_STR_NULL;
    sl_str_t code = SL_STR_NULL, result = SL_STR_NULL;
    bool thought = false, other = false;
    if (sl_json_object (&it, part))
        return sl_decoder_fail (dec, "part is not an object");
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        if (SL_KEY (key, "text")) {
            if (sl_decoder_str (dec, value, &text))
                return sl_decoder_fail (dec, "part text is not a string");
        }
        else
        if (SL_KEY (key, "thought"))
            sl_json_bool (value, &thought);
        else
        if (SL_KEY (key, "thoughtSignature")) {
            if (sl_decoder_str (dec, value, &sig))
                return sl_decoder_fail (dec, "thoughtSignature is not a string");
        }
        else
        if (SL_KEY (key, "functionCall"))
            call = value;
        else
        if (SL_KEY (key, "executableCode"))
            code = sl_json_trim (value);
        else
        if (SL_KEY (key, "codeExecutionResult"))
            result = sl_json_trim (value);
        else
            other = true;               //  inlineData, fileData, videoMetadata...
    }
    if (rc < 0)
        return sl_decoder_fail (dec, "malformed part");
    if (call.ptr)
        return s_function_call (st, dec, index, call, sig);
    //  Any other part ends a streamed call that was left open.
    s_close_call (st, dec);
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if (code.ptr) {
        d.name = SL_STR_LIT ("code_execution");
        d.text = code;
        sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_USE, &d);
        return 0;
    }
    if (result.ptr) {
        d.name = SL_STR_LIT ("code_execution_result");
        d.body = result;
        sl_decoder_emit_delta (dec, SL_D_SERVER_TOOL_RESULT, &d);
        return 0;
    }
    if (thought) {
        if (text.len || sig.len) {
            d.text = text.ptr ? text : SL_STR_LIT ("");
            d.sig = sig;
            sl_decoder_emit_delta (dec, SL_D_THINKING, &d);
        }
        return 0;
    }
    if (text.len) {
        d.text = text;
        sl_decoder_emit_delta (dec, SL_D_TEXT, &d);
    }
    if (sig.len) {
        //  A signature on a text part (or on an empty one of its own).
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = index;
        d.sig = sig;
        sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &d);
    }
    if (other && !text.ptr && !sig.ptr)
        sl_decoder_count_unknown (dec);
    return 0;
}

//  An object with no members: Gemini sends "groundingMetadata": {} on
//  every chunk of a grounded answer until the real one comes.
static bool
s_empty_object (sl_str_t value)
{
    sl_json_iter_t it;
    sl_str_t key, member;
    return sl_json_object (&it, value) == 0 && sl_json_next_member (&it, &key, &member) == 0;
}

static void
s_emit_citation (sl_decoder_t *dec, sl_str_t body)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.body = body;
    sl_decoder_emit_delta (dec, SL_D_CITATION, &d);
}

//  citationMetadata: one citation per source (citationSources on the
//  Gemini API, citations on Vertex), as other providers send one citation
//  at a time; metadata of another shape goes whole, an empty one not at all.
static int
s_citation_metadata (sl_decoder_t *dec, sl_str_t metadata)
{
    sl_str_t list;
    sl_json_iter_t it;
    if (sl_json_type (metadata) == SL_JSON_OBJECT
    &&  (sl_json_find (metadata, "citationSources", &list) == 1
     ||  sl_json_find (metadata, "citations", &list) == 1)
    &&  sl_json_array (&it, list) == 0) {
        sl_str_t source;
        int rc;
        while ((rc = sl_json_next_elem (&it, &source)) == 1)
            s_emit_citation (dec, sl_json_trim (source));
        return rc < 0 ? sl_decoder_fail (dec, "malformed citation sources") : 0;
    }
    if (!s_empty_object (metadata))
        s_emit_citation (dec, metadata);
    return 0;
}

static void
s_keep_finish (s_state_t *st, sl_decoder_t *dec, sl_str_t value)
{
    sl_str_t reason;
    if (sl_json_type (value) == SL_JSON_STRING
    &&  sl_json_str (value, sl_decoder_scratch (dec), &reason) == 0 && reason.len) {
        sl_buf_reset (&st->finish);
        sl_buf_append_str (&st->finish, reason);
    }
}

#define S_CANDIDATE(X) \
    X (C_CONTENT, "content") X (C_FINISH, "finishReason") X (C_INDEX, "index") \
    X (C_CITATIONS, "citationMetadata") X (C_GROUNDING, "groundingMetadata")
SL_DECODER_MEMBERS (s_candidate_members, S_CANDIDATE)

static int
s_candidate (s_state_t *st, sl_decoder_t *dec, sl_str_t candidate)
{
    static const sl_decoder_object_t shape = { NULL, "candidate is not an object", "malformed candidate" };
    sl_str_t v [s_candidate_members_count];
    if (s_candidate_members (dec, candidate, &shape, v))
        return -2;
    int rc;
    sl_str_t content = v [C_CONTENT], finish = v [C_FINISH];
    sl_str_t citations = sl_json_trim (v [C_CITATIONS]), grounding = sl_json_trim (v [C_GROUNDING]);
    int32_t index = 0;
    if (v [C_INDEX].ptr && sl_decoder_index (v [C_INDEX], &index))
        return sl_decoder_fail (dec, "candidate index is not a small integer");
    if (index != 0) {
        sl_decoder_count_unknown (dec);
        return 0;
    }
    sl_str_t parts;
    if (content.ptr && sl_json_type (content) == SL_JSON_OBJECT
    &&  sl_json_find (content, "parts", &parts) == 1) {
        sl_json_iter_t pit;
        sl_str_t part;
        int32_t position = 0;
        if (sl_json_array (&pit, parts))
            return sl_decoder_fail (dec, "parts is not an array");
        while ((rc = sl_json_next_elem (&pit, &part)) == 1)
            if (s_part (st, dec, position++, part))
                return -2;
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed parts");
    }
    if (citations.ptr && !sl_json_is_null (citations) && s_citation_metadata (dec, citations))
        return -2;
    if (grounding.ptr && !sl_json_is_null (grounding) && !s_empty_object (grounding))
        s_emit_citation (dec, grounding);
    if (finish.ptr)
        s_keep_finish (st, dec, finish);
    return 0;
}

static const sl_usage_key_t s_usage [] = {
    { "promptTokenCount", NULL, offsetof (sl_usage_t, input) },
    { "candidatesTokenCount", NULL, offsetof (sl_usage_t, output) },
    { "totalTokenCount", NULL, offsetof (sl_usage_t, total) },
    { "cachedContentTokenCount", NULL, offsetof (sl_usage_t, cache_read) },
    { "thoughtsTokenCount", NULL, offsetof (sl_usage_t, reasoning) },
    { NULL, NULL, 0 }
};

//  Gemini counts thinking apart from the answer (candidatesTokenCount);
//  output here includes it (the convention: reasoning is part of output).
static void
s_keep_usage (s_state_t *st, sl_str_t usage)
{
    sl_usage_t u = { -1, -1, -1, -1, -1, -1 };
    if (sl_decoder_usage (usage, s_usage, &u))
        return;
    if (u.output >= 0 || u.reasoning >= 0)
        u.output = (u.output > 0 ? u.output : 0) + (u.reasoning > 0 ? u.reasoning : 0);
    else
        u.output = -1;                  //  a count below zero is no count
    if (u.input < 0 && u.output < 0 && u.total < 0)
        return;                         //  e.g. only trafficType
    st->usage = u;
    st->has_usage = true;
}

//  createTime and modelStatus are read and left: nothing to translate.
#define S_CHUNK(X) \
    X (K_CANDIDATES, "candidates") X (K_USAGE, "usageMetadata") X (K_MODEL, "modelVersion") X (K_ID, "responseId") \
    X (K_FEEDBACK, "promptFeedback") X (K_ERROR, "error") X (K_CREATED, "createTime") X (K_STATUS, "modelStatus")
SL_DECODER_MEMBERS (s_chunk_members, S_CHUNK)

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    s_state_t *st = state;
    //  Every member it does not name counts as unknown.
    static const sl_str_t none [] = { SL_STR_NULL };
    static const sl_decoder_object_t shape = { none, "chunk is not a JSON object", "chunk is not valid JSON" };
    sl_str_t v [s_chunk_members_count];
    if (s_chunk_members (dec, data, &shape, v))
        return -2;
    int rc;
    sl_str_t candidates = v [K_CANDIDATES], feedback = v [K_FEEDBACK], usage = v [K_USAGE];
    sl_str_t error = v [K_ERROR], model = v [K_MODEL], id = v [K_ID];
    if (error.ptr || sl_str_eq (type, "error")) {
        s_close_call (st, dec);
        sl_decoder_emit_error_object (dec, error.ptr ? error : data);
        return 0;
    }
    if (id.ptr || model.ptr)
        sl_decoder_identify (dec, id, model, SL_STR_NULL);
    if (candidates.ptr && !sl_json_is_null (candidates)) {
        sl_json_iter_t cit;
        sl_str_t candidate;
        if (sl_json_array (&cit, candidates))
            return sl_decoder_fail (dec, "candidates is not an array");
        while ((rc = sl_json_next_elem (&cit, &candidate)) == 1)
            if (s_candidate (st, dec, candidate))
                return -2;
        if (rc < 0)
            return sl_decoder_fail (dec, "malformed candidates");
    }
    sl_str_t reason;
    if (feedback.ptr && sl_json_type (feedback) == SL_JSON_OBJECT
    &&  sl_json_find (feedback, "blockReason", &reason) == 1)
        s_keep_finish (st, dec, reason);
    if (usage.ptr)
        s_keep_usage (st, usage);
    return 0;
}

//  What was held comes out at the end: usage, the finish, done.
static int
s_finish (void *state, sl_decoder_t *dec)
{
    s_state_t *st = state;
    s_close_call (st, dec);
    if (st->finish.len) {
        sl_msg_t d;
        if (st->has_usage) {
            sl_msg_init (&d, SL_MSG_DELTA);
            d.has_usage = true;
            d.usage = st->usage;
            sl_decoder_emit_delta (dec, SL_D_USAGE, &d);
        }
        sl_msg_init (&d, SL_MSG_DELTA);
        d.finish_raw = sl_buf_str (&st->finish);
        sl_decoder_emit_finish (dec, &d);
    }
    return sl_decoder_end (dec);
}

const sl_decoder_vt_t sl_gemini_decoder = {
    .state_size = sizeof (s_state_t),
    .init = s_init,
    .clear = s_clear,
    .event = s_event,
    .finish = s_finish,
};
