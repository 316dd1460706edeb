/*  sl_bedrock_decode.c - the ConverseStream decoder (Amazon Bedrock).

    The stream is AWS's event stream (common/cloud/sl_evstream.h); its
    framing hands each message over as an event: the type is its
    :event-type (or, for an exception message, its :exception-type), the
    data its JSON payload. Bedrock pads payloads with a "p" member of
    random length, read past.

      messageStart       {"role":"assistant"}: the response begins
                         (Converse names no id nor model);
      contentBlockStart  {"contentBlockIndex", "start":{"toolUse":
                         {"toolUseId","name"}}}: a tool call opens;
      contentBlockDelta  {"contentBlockIndex", "delta": {"text"} |
                         {"toolUse":{"input"}} (a piece of the arguments'
                         JSON text) | {"reasoningContent": {"text"} |
                         {"signature"} | {"redactedContent"}}};
      contentBlockStop   {"contentBlockIndex"};
      messageStop        {"stopReason", "additionalModelResponseFields"};
      metadata           {"usage":{"inputTokens","outputTokens",
                         "totalTokens","cacheReadInputTokens",
                         "cacheWriteInputTokens"},"metrics","trace"}: the
                         last event.
    The finish is held from messageStop until metadata, so that usage goes
    before it as in every other stream: usage, finish, done. A body that
    ends after messageStop without metadata still finishes (its usage
    unknown).

    Exceptions (throttlingException, serviceUnavailableException,
    internalServerException, modelStreamErrorException,
    modelTimeoutException, validationException; payload {"message"}) end
    the stream with an error of the status the same fault has as an HTTP
    answer (sl_bedrock_exception_status), so that one before anything
    reached the client is retried as a 429 or 5xx would be.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_decoder_impl.h"
#include "common/dialects/bedrock/sl_bedrock.h"

typedef enum {
    BLOCK_NONE = 0,
    BLOCK_TEXT,
    BLOCK_REASONING,
    BLOCK_TOOL
} s_block_kind_t;

typedef struct {
    uint8_t kind;                       //  s_block_kind_t
    bool input_seen;                    //  a tool block got a piece of its input
} s_block_t;

typedef struct {
    s_block_t *blocks;                  //  by contentBlockIndex
    size_t block_count;
    bool stopped;                       //  messageStop came; its reason is held
    sl_buf_t stop_reason;
} s_state_t;

static const sl_usage_key_t s_usage [] = {
    { "inputTokens", NULL, offsetof (sl_usage_t, input) },
    { "outputTokens", NULL, offsetof (sl_usage_t, output) },
    { "cacheReadInputTokens", NULL, offsetof (sl_usage_t, cache_read) },
    { "cacheWriteInputTokens", NULL, offsetof (sl_usage_t, cache_write) },
    { NULL, NULL, 0 }
};

//  The statuses of the faults AWS reports in a stream, as it answers
//  them over HTTP. modelStreamErrorException is answered 424 by AWS, which
//  says to retry it: the model behind Bedrock failed mid-answer, which to
//  a client of sluice is a bad gateway (502), retried like one.
static const struct {
    const char *type;
    int status;
} s_exceptions [] = {
    { "throttlingException", 429 }, { "serviceUnavailableException", 503 },
    { "internalServerException", 500 }, { "modelStreamErrorException", 502 },
    { "modelTimeoutException", 504 }, { "validationException", 400 },
    { "accessDeniedException", 403 }, { "resourceNotFoundException", 404 },
    { "serviceQuotaExceededException", 429 }, { "modelNotReadyException", 503 },
};

int
sl_bedrock_exception_status (sl_str_t type)
{
    for (size_t i = 0; i < sizeof s_exceptions / sizeof s_exceptions [0]; i++)
        if (sl_str_eq (type, s_exceptions [i].type))
            return s_exceptions [i].status;
    return 502;
}

static void
s_clear (void *state)
{
    s_state_t *st = state;
    free (st->blocks);
    sl_buf_free (&st->stop_reason);
}

static s_block_t *
s_block (s_state_t *st, int32_t index)
{
    return sl_decoder_slot ((void **) &st->blocks, &st->block_count, sizeof (s_block_t), index);
}

static const sl_str_t s_padding [] = { SL_STR_LIT ("p"), SL_STR_NULL };

//  An exception: its message, and the status of its type.
static int
s_exception (sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    sl_str_t message = SL_STR_NULL, value;
    if (sl_json_find (data, "message", &value) == 1 && sl_decoder_str (dec, value, &message))
        message = SL_STR_NULL;
    sl_decoder_emit_error (dec, type, message, sl_bedrock_exception_status (type));
    return 0;
}

#define S_START(X) X (S_INDEX, "contentBlockIndex") X (S_START_, "start")
SL_DECODER_MEMBERS (s_start_members, S_START)
#define S_TOOL_START(X) X (T_ID, "toolUseId") X (T_NAME, "name")
SL_DECODER_MEMBERS (s_tool_members, S_TOOL_START)

static int
s_block_start (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    static const sl_decoder_object_t shape = { s_padding, "contentBlockStart is not an object",
                                               "malformed contentBlockStart" };
    static const sl_decoder_object_t tool_shape = { NULL, "toolUse start is not an object",
                                                    "malformed toolUse start" };
    sl_str_t v [s_start_members_count], t [s_tool_members_count], tool;
    int32_t index;
    if (s_start_members (dec, data, &shape, v))
        return -2;
    if (!v [S_INDEX].ptr || sl_decoder_index (v [S_INDEX], &index))
        return sl_decoder_fail (dec, "contentBlockStart without a block index");
    s_block_t *b = s_block (st, index);
    if (!b || !v [S_START_].ptr || sl_json_find (v [S_START_], "toolUse", &tool) != 1) {
        sl_decoder_count_unknown (dec);     //  a start of another kind
        return 0;
    }
    if (s_tool_members (dec, tool, &tool_shape, t))
        return -2;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if ((t [T_ID].ptr && sl_decoder_str (dec, t [T_ID], &d.id))
    ||  (t [T_NAME].ptr && sl_decoder_str (dec, t [T_NAME], &d.name)))
        return sl_decoder_fail (dec, "toolUse start member is not a string");
    b->kind = BLOCK_TOOL;
    b->input_seen = false;
    sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    return 0;
}

#define S_DELTA(X) X (D_INDEX, "contentBlockIndex") X (D_DELTA, "delta")
SL_DECODER_MEMBERS (s_delta_members, S_DELTA)
#define S_DELTA_KIND(X) X (K_TEXT, "text") X (K_TOOL, "toolUse") X (K_REASONING, "reasoningContent")
SL_DECODER_MEMBERS (s_kind_members, S_DELTA_KIND)
#define S_REASONING(X) X (R_TEXT, "text") X (R_SIGNATURE, "signature") X (R_REDACTED, "redactedContent")
SL_DECODER_MEMBERS (s_reasoning_members, S_REASONING)

static int
s_reasoning (s_block_t *b, sl_decoder_t *dec, sl_msg_t *d, sl_str_t reasoning)
{
    static const sl_decoder_object_t shape = { NULL, "reasoningContent is not an object",
                                               "malformed reasoningContent" };
    sl_str_t r [s_reasoning_members_count];
    if (s_reasoning_members (dec, reasoning, &shape, r))
        return -2;
    if (b)
        b->kind = BLOCK_REASONING;
    sl_str_t text;
    if (r [R_TEXT].ptr) {
        if (sl_decoder_str (dec, r [R_TEXT], &text))
            return sl_decoder_fail (dec, "reasoning text is not a string");
        if (text.len) {
            d->text = text;
            sl_decoder_emit_delta (dec, SL_D_THINKING, d);
        }
    }
    if (r [R_SIGNATURE].ptr) {
        sl_msg_t s;
        sl_msg_init (&s, SL_MSG_DELTA);
        s.index = d->index;
        if (sl_decoder_str (dec, r [R_SIGNATURE], &s.sig))
            return sl_decoder_fail (dec, "reasoning signature is not a string");
        if (s.sig.len)
            sl_decoder_emit_delta (dec, SL_D_SIGNATURE, &s);
    }
    if (r [R_REDACTED].ptr) {
        sl_msg_t s;
        sl_msg_init (&s, SL_MSG_DELTA);
        s.index = d->index;
        if (sl_decoder_str (dec, r [R_REDACTED], &s.text))
            return sl_decoder_fail (dec, "redactedContent is not a string");
        sl_decoder_emit_delta (dec, SL_D_REDACTED, &s);
    }
    return 0;
}

static int
s_block_delta (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    static const sl_decoder_object_t shape = { s_padding, "contentBlockDelta is not an object",
                                               "malformed contentBlockDelta" };
    static const sl_decoder_object_t kind_shape = { NULL, "delta is not an object", "malformed delta" };
    sl_str_t v [s_delta_members_count], k [s_kind_members_count];
    int32_t index;
    if (s_delta_members (dec, data, &shape, v))
        return -2;
    if (!v [D_INDEX].ptr || sl_decoder_index (v [D_INDEX], &index) || !v [D_DELTA].ptr)
        return sl_decoder_fail (dec, "contentBlockDelta without a block index or a delta");
    if (s_kind_members (dec, v [D_DELTA], &kind_shape, k))
        return -2;
    s_block_t *b = s_block (st, index);
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    if (k [K_TEXT].ptr) {
        if (sl_decoder_str (dec, k [K_TEXT], &d.text))
            return sl_decoder_fail (dec, "delta text is not a string");
        if (b && b->kind == BLOCK_NONE)
            b->kind = BLOCK_TEXT;
        if (d.text.len)
            sl_decoder_emit_delta (dec, SL_D_TEXT, &d);
        return 0;
    }
    if (k [K_TOOL].ptr) {
        sl_str_t input;
        if (!b || b->kind != BLOCK_TOOL) {
            sl_decoder_count_unknown (dec);     //  input for a call never opened
            return 0;
        }
        if (sl_json_find (k [K_TOOL], "input", &input) != 1 || sl_decoder_str (dec, input, &d.text))
            return sl_decoder_fail (dec, "toolUse delta without its input text");
        if (d.text.len) {
            b->input_seen = true;
            sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
        }
        return 0;
    }
    if (k [K_REASONING].ptr)
        return s_reasoning (b, dec, &d, k [K_REASONING]);
    sl_decoder_count_unknown (dec);
    return 0;
}

static int
s_block_stop (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    sl_str_t value;
    int32_t index;
    if (sl_json_find (data, "contentBlockIndex", &value) != 1 || sl_decoder_index (value, &index))
        return sl_decoder_fail (dec, "contentBlockStop without a block index");
    s_block_t *b = s_block (st, index);
    if (b && b->kind == BLOCK_TOOL && !b->input_seen) {
        //  A call without arguments streams none: its input is {}.
        sl_msg_t d;
        sl_msg_init (&d, SL_MSG_DELTA);
        d.index = index;
        d.text = SL_STR_LIT ("{}");
        sl_decoder_emit_delta (dec, SL_D_TOOL_CALL, &d);
    }
    if (b)
        b->kind = BLOCK_NONE;
    sl_decoder_emit_index (dec, SL_D_BLOCK_STOP, index);
    return 0;
}

static void
s_emit_finish (s_state_t *st, sl_decoder_t *dec)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.finish_raw = sl_buf_str (&st->stop_reason);
    sl_decoder_emit_finish (dec, &d);
    st->stopped = false;
}

static int
s_message_stop (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    sl_str_t value, reason;
    if (sl_json_find (data, "stopReason", &value) != 1 || sl_decoder_str (dec, value, &reason) || !reason.ptr)
        return sl_decoder_fail (dec, "messageStop without a stopReason");
    sl_buf_reset (&st->stop_reason);
    sl_buf_append_str (&st->stop_reason, reason);
    st->stopped = true;
    return 0;
}

static int
s_metadata (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    sl_str_t usage;
    if (sl_json_type (data) != SL_JSON_OBJECT)
        return sl_decoder_fail (dec, "metadata is not an object");
    if (sl_json_find (data, "usage", &usage) == 1 && sl_decoder_emit_usage (dec, usage, s_usage))
        return sl_decoder_fail (dec, "metadata usage is not an object");
    if (st->stopped) {
        s_emit_finish (st, dec);
        sl_decoder_emit_done (dec);
    }
    return 0;
}

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    s_state_t *st = state;
    if (sl_str_eq (type, "contentBlockDelta"))
        return s_block_delta (st, dec, data);
    if (sl_str_eq (type, "contentBlockStart"))
        return s_block_start (st, dec, data);
    if (sl_str_eq (type, "contentBlockStop"))
        return s_block_stop (st, dec, data);
    if (sl_str_eq (type, "messageStart")) {
        if (sl_json_type (data) != SL_JSON_OBJECT)
            return sl_decoder_fail (dec, "messageStart is not an object");
        sl_decoder_identify (dec, SL_STR_NULL, SL_STR_NULL, SL_STR_NULL);
        return 0;
    }
    if (sl_str_eq (type, "messageStop"))
        return s_message_stop (st, dec, data);
    if (sl_str_eq (type, "metadata"))
        return s_metadata (st, dec, data);
    //  An exception frame, by its type (the framing hands its
    //  :exception-type over as the event's).
    if (type.len > strlen ("Exception") && sl_str_eq (sl_str_n (type.ptr + type.len - strlen ("Exception"),
                                                                strlen ("Exception")), "Exception"))
        return s_exception (dec, type, data);
    sl_decoder_count_unknown (dec);
    return 0;
}

//  The body ended: a finish held since messageStop goes out (metadata
//  was lost), then the end.
static int
s_finish (void *state, sl_decoder_t *dec)
{
    s_state_t *st = state;
    if (st->stopped)
        s_emit_finish (st, dec);
    return sl_decoder_end (dec);
}

const sl_decoder_vt_t sl_bedrock_decoder = {
    .state_size = sizeof (s_state_t),
    .clear = s_clear,
    .event = s_event,
    .finish = s_finish,
};
