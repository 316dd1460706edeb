/*  Unit tests: common/dialects/sl_validate - every dialect's rules, each
    with a legal stream and hand-made illegal sequences. */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "common/dialects/sl_validate.h"

#define END NULL

//  Feed events in order; the index of the first one refused, or -1.
static int
s_run (int dialect, const char *const *events, sl_validate_t **keep)
{
    sl_validate_t *v = sl_validate_new (dialect);
    cr_assert_not_null (v);
    int refused = -1;
    for (int i = 0; events [i]; i++)
        if (sl_validate_event (v, sl_str (events [i]))) {
            refused = i;
            cr_expect_neq (strlen (sl_validate_reason (v)), 0, "a refusal says why");
            break;
        }
    if (keep)
        *keep = v;
    else
        sl_validate_destroy (&v);
    return refused;
}

//  The last event of a sequence is the illegal one.
static void
s_expect_illegal (int dialect, const char *const *events, const char *what)
{
    int n = 0;
    while (events [n])
        n++;
    int at = s_run (dialect, events, NULL);
    cr_expect_eq (at, n - 1, "%s: refused at %d, expected the last event (%d)", what, at, n - 1);
}

//  --------------------------------------------------------------------------
//  OpenAI

#define OA_HEAD "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":"
#define OA(delta, finish) OA_HEAD "[{\"index\":0,\"delta\":{" delta "},\"finish_reason\":" finish "}]}\n\n"
#define OA_ROLE OA ("\"role\":\"assistant\",\"content\":\"\"", "null")
#define OA_TEXT OA ("\"content\":\"hi\"", "null")
#define OA_CALL0 OA ("\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]", "null")
#define OA_ARGS0 OA ("\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]", "null")
#define OA_FIN OA ("", "\"tool_calls\"")
#define OA_USAGE OA_HEAD "[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n"
#define OA_DONE "data: [DONE]\n\n"
#define OA_ERR "data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n"

Test (sl_validate, openai_legal_stream)
{
    const char *ok [] = { OA_ROLE, OA_TEXT, OA_CALL0, OA_ARGS0, ": keep-alive\n\n", OA_FIN, OA_USAGE, OA_DONE, END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_OPENAI, ok, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
    const char *failed [] = { OA_ROLE, OA_TEXT, OA_ERR, END };
    cr_expect_eq (s_run (SL_DIALECT_OPENAI, failed, &v), -1);
    cr_expect_eq (sl_validate_end (v), 0, "an error ends a response");
    sl_validate_destroy (&v);
    const char *cut [] = { OA_ROLE, OA_TEXT, END };
    cr_expect_eq (s_run (SL_DIALECT_OPENAI, cut, &v), -1);
    cr_expect_eq (sl_validate_end (v), -1, "a response may not stop before [DONE]");
    sl_validate_destroy (&v);
}

Test (sl_validate, openai_illegal_sequences)
{
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_TEXT, END }, "content before the role");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_ROLE, END }, "role twice");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_DONE, END }, "[DONE] before the finish");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_CALL0, OA_FIN, OA_FIN, END }, "two finishes");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_FIN, OA_TEXT, END }, "content after the finish");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_FIN, OA_DONE, OA_TEXT, END }, "after [DONE]");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_FIN, OA_DONE, ": late\n\n", END }, "comment after [DONE]");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_USAGE, END }, "usage before the finish");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_FIN, OA_USAGE, OA_USAGE, END }, "usage twice");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_ERR, OA_TEXT, END }, "after an error");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE,
        OA ("\"tool_calls\":[{\"index\":1,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", "null"), END },
        "tool call index gap");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE,
        OA ("\"tool_calls\":[{\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", "null"), END },
        "new tool call without an id");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE,
        OA ("\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{}}]", "null"), END },
        "new tool call without a name");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, OA_CALL0,
        OA ("\"tool_calls\":[{\"index\":0,\"id\":\"other\",\"function\":{\"arguments\":\"x\"}}]", "null"), END },
        "a continued call with a new id");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE,
        "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":null}]}\n\n", END },
        "the id changes");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE, "data: {\"id\":\n\n", END }, "not JSON");
    s_expect_illegal (SL_DIALECT_OPENAI, (const char *[]) { OA_ROLE,
        OA_HEAD "[{\"index\":1,\"delta\":{},\"finish_reason\":null}]}\n\n", END }, "a second choice");
}

//  --------------------------------------------------------------------------
//  Anthropic

#define AN(name, json) "event: " name "\ndata: " json "\n\n"
#define AN_START AN ("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}")
#define AN_TEXT_START(i) AN ("content_block_start", "{\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
#define AN_TOOL_START(i) AN ("content_block_start", "{\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}")
#define AN_TEXT_DELTA(i) AN ("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}")
#define AN_JSON_DELTA(i) AN ("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}")
#define AN_STOP(i) AN ("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":" #i "}")
#define AN_DELTA(reason) AN ("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" reason "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}")
#define AN_MSTOP AN ("message_stop", "{\"type\":\"message_stop\"}")
#define AN_PING AN ("ping", "{\"type\":\"ping\"}")
#define AN_ERR AN ("error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}")

Test (sl_validate, anthropic_legal_stream)
{
    const char *ok [] = { AN_START, AN_PING, AN_TEXT_START (0), AN_TEXT_DELTA (0), AN_STOP (0),
                          AN_TOOL_START (1), AN_JSON_DELTA (1), AN_STOP (1), AN_TOOL_START (2), AN_STOP (2),
                          ": keep-alive\n\n", AN_DELTA ("tool_use"), AN_MSTOP, END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_ANTHROPIC, ok, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
    const char *cut [] = { AN_START, AN_TEXT_START (0), AN_ERR, END };
    cr_expect_eq (s_run (SL_DIALECT_ANTHROPIC, cut, &v), -1, "an error may come with a block open");
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
}

Test (sl_validate, anthropic_illegal_sequences)
{
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_TEXT_START (0), END }, "a block before message_start");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_START, END }, "message_start twice");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (1), END }, "first index 1");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_STOP (0),
                                                               AN_TEXT_START (2), END }, "index gap");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_TEXT_START (1), END },
                      "a start while a block is open");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_JSON_DELTA (0), END },
                      "input_json_delta in a text block");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TOOL_START (0), AN_TEXT_DELTA (0), END },
                      "text_delta in a tool_use block");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_TEXT_DELTA (1), END },
                      "a delta for another block");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_STOP (0), AN_STOP (0), END },
                      "two stops");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_STOP (0),
                                                               AN_TEXT_DELTA (0), END }, "a delta after the stop");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TOOL_START (0), AN_STOP (0),
                                                               AN_TEXT_START (1), END }, "text after a tool_use");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TOOL_START (0), AN_STOP (0),
                                                               AN_DELTA ("end_turn"), END }, "end_turn with a call left");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_STOP (0),
                                                               AN_DELTA ("tool_use"), END }, "tool_use with no call");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_TEXT_START (0), AN_DELTA ("end_turn"), END },
                      "message_delta with a block open");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_DELTA ("end_turn"), AN_DELTA ("end_turn"), END },
                      "message_delta twice");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_DELTA ("end_turn"), AN_TEXT_START (0), END },
                      "a block after message_delta");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_MSTOP, END }, "message_stop before message_delta");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_DELTA ("end_turn"), AN_MSTOP, AN_PING, END },
                      "anything after message_stop");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START, AN_ERR, AN_PING, END }, "anything after an error");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START,
        AN ("content_block_stop", "{\"type\":\"content_block_start\",\"index\":0}"), END }, "name and type disagree");
    s_expect_illegal (SL_DIALECT_ANTHROPIC, (const char *[]) { AN_START,
        AN ("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"input\":{}}}"), END },
        "tool_use without id and name");
}

//  --------------------------------------------------------------------------
//  Responses

#define RS(name, seq, rest) "event: " name "\ndata: {\"type\":\"" name "\",\"sequence_number\":" #seq rest "}\n\n"
#define RS_RESP(status, output) ",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"" status "\",\"output\":[" output "]}"
#define RS_CREATED(seq) RS ("response.created", seq, RS_RESP ("in_progress", ""))
#define RS_MSG_ITEM(status) "{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"" status "\",\"role\":\"assistant\",\"content\":[]}"
#define RS_FC_ITEM(status) "{\"id\":\"fc_1\",\"type\":\"function_call\",\"status\":\"" status "\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"\"}"
#define RS_ADDED(seq, index, item) RS ("response.output_item.added", seq, ",\"output_index\":" #index ",\"item\":" item)
#define RS_DONE(seq, index, item) RS ("response.output_item.done", seq, ",\"output_index\":" #index ",\"item\":" item)
#define RS_REF(id, index) ",\"item_id\":\"" id "\",\"output_index\":" #index
#define RS_PART_ADDED(seq) RS ("response.content_part.added", seq, RS_REF ("msg_1", 0) ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\"}")
#define RS_PART_DONE(seq) RS ("response.content_part.done", seq, RS_REF ("msg_1", 0) ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"hi\"}")
#define RS_TEXT(seq, id) RS ("response.output_text.delta", seq, RS_REF (id, 0) ",\"content_index\":0,\"delta\":\"hi\"")

Test (sl_validate, responses_legal_stream)
{
    const char *ok [] = {
        RS_CREATED (0), RS ("response.in_progress", 1, RS_RESP ("in_progress", "")),
        RS_ADDED (2, 0, RS_MSG_ITEM ("in_progress")), RS_PART_ADDED (3), RS_TEXT (4, "msg_1"),
        RS ("response.output_text.done", 5, RS_REF ("msg_1", 0) ",\"content_index\":0,\"text\":\"hi\""),
        RS_PART_DONE (6), RS_DONE (7, 0, RS_MSG_ITEM ("completed")),
        RS_ADDED (8, 1, RS_FC_ITEM ("in_progress")),
        RS ("response.function_call_arguments.delta", 9, RS_REF ("fc_1", 1) ",\"delta\":\"{}\""),
        RS ("response.function_call_arguments.done", 10, RS_REF ("fc_1", 1) ",\"arguments\":\"{}\""),
        RS_DONE (11, 1, RS_FC_ITEM ("completed")), ": keep-alive\n\n",
        RS ("response.completed", 12, RS_RESP ("completed", "{},{}")), END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_RESPONSES, ok, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
}

//  A broken response ends as the API ends one: an error event, then
//  response.failed (Codex waits for it); nothing else after the error.
Test (sl_validate, responses_error_then_failed)
{
    const char *ok [] = {
        RS_CREATED (0), RS ("response.in_progress", 1, RS_RESP ("in_progress", "")),
        RS ("error", 2, ",\"code\":\"server_error\",\"message\":\"m\""),
        RS ("response.failed", 3, RS_RESP ("failed", "")), END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_RESPONSES, ok, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) {
        RS_CREATED (0), RS ("error", 1, ",\"code\":\"c\",\"message\":\"m\""),
        RS_ADDED (2, 0, RS_MSG_ITEM ("in_progress")), END }, "an item after an error");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) {
        RS_CREATED (0), RS ("error", 1, ",\"code\":\"c\",\"message\":\"m\""),
        RS ("response.completed", 2, RS_RESP ("completed", "")), END }, "completed after an error");
}

Test (sl_validate, responses_illegal_sequences)
{
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_ADDED (0, 0, RS_MSG_ITEM ("in_progress")), END },
                      "an item before response.created");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_CREATED (1), END }, "created twice");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (2, 0, RS_MSG_ITEM ("x")), END },
                      "sequence_number gap");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 1, RS_MSG_ITEM ("x")), END },
                      "first output_index 1");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS_ADDED (2, 1, RS_FC_ITEM ("x")), END }, "two items open");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS_TEXT (2, "msg_1"), END }, "text with no part open");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS_PART_ADDED (2), RS_TEXT (3, "msg_9"), END },
                      "a delta naming another item");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
        RS ("response.function_call_arguments.delta", 2, RS_REF ("msg_1", 0) ",\"delta\":\"{}\""), END },
        "arguments in a message item");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS_PART_ADDED (2), RS_DONE (3, 0, RS_MSG_ITEM ("c")), END },
                      "item done with a part open");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS ("response.completed", 2, RS_RESP ("completed", "{}")), END },
                      "completed with an item open");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS_ADDED (1, 0, RS_MSG_ITEM ("x")),
                                                               RS_DONE (2, 0, RS_MSG_ITEM ("c")),
                                                               RS ("response.completed", 3, RS_RESP ("completed", "")), END },
                      "completed listing fewer items than were sent");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0),
                                                               RS ("response.completed", 1, RS_RESP ("incomplete", "")), END },
                      "completed with another status");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0), RS ("response.completed", 1, RS_RESP ("completed", "")),
                                                               RS ("response.in_progress", 2, RS_RESP ("in_progress", "")), END },
                      "after completed");
    s_expect_illegal (SL_DIALECT_RESPONSES, (const char *[]) { RS_CREATED (0),
        "event: response.in_progress\ndata: {\"type\":\"response.created\",\"sequence_number\":1}\n\n", END },
        "name and type disagree");
}

//  --------------------------------------------------------------------------
//  Gemini

#define GM(cand, extra) "data: {\"candidates\":[" cand "]" extra ",\"responseId\":\"r1\"}\n\n"
#define GM_PART(part) "{\"content\":{\"parts\":[" part "],\"role\":\"model\"},\"index\":0}"
#define GM_TEXT GM (GM_PART ("{\"text\":\"hi\"}"), "")
#define GM_CALL GM (GM_PART ("{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}}"), "")
#define GM_FIN GM ("{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}", \
                   ",\"usageMetadata\":{\"promptTokenCount\":1}")

Test (sl_validate, gemini_legal_stream)
{
    const char *ok [] = { GM_TEXT, GM (GM_PART ("{\"text\":\"t\",\"thought\":true}"), ""), GM_CALL, "\n",
                          GM_FIN, END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_GEMINI, ok, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
    const char *cut [] = { GM_TEXT, END };
    cr_expect_eq (s_run (SL_DIALECT_GEMINI, cut, &v), -1);
    cr_expect_eq (sl_validate_end (v), -1, "no finishReason: not complete");
    sl_validate_destroy (&v);
    //  A failed stream ends with the bare error object, as the API's do
    //  (after the same error as a data: event, or alone).
    const char *failed [] = { GM_TEXT, "\n", "data: {\"error\":{\"code\":499,\"message\":\"m\"}}\n\n",
                              "{\"error\":{\"code\":499,\"message\":\"m\",\"status\":\"CANCELLED\"}}\n", END };
    cr_expect_eq (s_run (SL_DIALECT_GEMINI, failed, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0, "the error object ends it");
    sl_validate_destroy (&v);
    const char *bare [] = { GM_TEXT, "{\"error\":{\"code\":499,\"message\":\"m\"}}\n", END };
    cr_expect_eq (s_run (SL_DIALECT_GEMINI, bare, &v), -1, "%s", sl_validate_reason (v));
    cr_expect_eq (sl_validate_end (v), 0);
    sl_validate_destroy (&v);
}

//  What the Gemini SDKs cannot read: anything but data: events and
//  whitespace (the SDK inside Gemini CLI fails on a comment), anything
//  after the error object.
Test (sl_validate, gemini_comments_and_bytes_after_the_error_are_illegal)
{
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM_TEXT, ": keep-alive\n\n", END }, "a comment");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM_TEXT, "{\"candidates\":[]}\n", END }, "bare JSON");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) {
        GM_TEXT, "{\"error\":{\"code\":500,\"message\":\"m\",\"status\":\"INTERNAL\"}}\n", GM_TEXT, END },
        "an event after the error");
}

Test (sl_validate, gemini_illegal_sequences)
{
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM_TEXT, GM_FIN, GM_TEXT, END }, "after the finishReason");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM (GM_PART ("{\"text\":\"a\"}") "," GM_PART ("{\"text\":\"b\"}"), ""), END },
                      "two candidates");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM (GM_PART ("{\"functionCall\":{\"args\":{}}}"), ""), END },
                      "a call without a name");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM (GM_PART ("{\"functionCall\":{\"name\":\"f\",\"args\":\"{}\"}}"), ""), END },
                      "args that are not an object");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM (GM_PART ("{\"bogus\":1}"), ""), END }, "an unknown part");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM (GM_PART ("{}"), ""), END }, "an empty part");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM_TEXT,
        "data: {\"candidates\":[" GM_PART ("{\"text\":\"x\"}") "],\"responseId\":\"r2\"}\n\n", END }, "responseId changes");
    s_expect_illegal (SL_DIALECT_GEMINI, (const char *[]) { GM_TEXT, "data: {\"error\":{\"code\":500}}\n\n", GM_TEXT, END },
                      "after an error");
}

Test (sl_validate, splits_events_and_rejects_unknown_dialects)
{
    cr_expect_null (sl_validate_new (0));
    cr_expect_null (sl_validate_new (SL_DIALECT_MAX));
    cr_expect_eq (sl_validate_next_event (sl_str ("data: x\n\ndata: y\n\n")), 9);
    cr_expect_eq (sl_validate_next_event (sl_str ("data: x\r\n\r\n")), 11);
    cr_expect_eq (sl_validate_next_event (sl_str ("data: x\n")), 0);
    cr_expect_eq (sl_validate_next_event (sl_str ("data: x\r\ndata: y\n\r\nz")), 19, "the blank line after two lines");
    cr_expect_eq (sl_validate_next_event (sl_str ("event: a\ndata: x\n\n")), 18);
    cr_expect_eq (sl_validate_next_event (sl_str ("\n\n")), 2);
    cr_expect_eq (sl_validate_next_event (sl_str ("data: x\n\r")), 0, "a CR without its LF ends nothing yet");
}

//  Data over several lines is joined with LF and checked as one value: a
//  chunk split across lines is the same chunk, and the first line alone
//  is not taken for the whole.
Test (sl_validate, data_lines_are_joined)
{
    const char *split [] = {
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\n"
        "data: \"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\n"
        "data: \"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        OA_TEXT, END };
    sl_validate_t *v;
    cr_expect_eq (s_run (SL_DIALECT_OPENAI, split, &v), -1, "%s", sl_validate_reason (v));
    sl_validate_destroy (&v);
    const char *broken [] = { OA_ROLE, "data: {\"id\":\"c1\"}\ndata: ,\"x\":1}\n\n", END };
    s_expect_illegal (SL_DIALECT_OPENAI, broken, "a first line that is JSON, joined to one that breaks it");
}

//  --------------------------------------------------------------------------
//  Whole bodies of non-streaming responses

//  0 legal, -1 refused (with a reason).
static int
s_body (int dialect, const char *body)
{
    sl_validate_t *v = sl_validate_new (dialect);
    int rc = sl_validate_body (v, sl_str (body));
    if (rc)
        cr_expect_neq (strlen (sl_validate_reason (v)), 0, "a refusal says why");
    sl_validate_destroy (&v);
    return rc;
}

#define OAB_MSG(msg, finish) "{\"id\":\"c1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\"," \
    "\"choices\":[{\"index\":0,\"message\":" msg ",\"finish_reason\":" finish "}]," \
    "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}"
#define OAB_CALL "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}"

Test (sl_validate, openai_bodies)
{
    cr_expect_eq (s_body (SL_DIALECT_OPENAI, OAB_MSG ("{\"role\":\"assistant\",\"content\":\"hi\",\"refusal\":null}", "\"stop\"")), 0);
    cr_expect_eq (s_body (SL_DIALECT_OPENAI, OAB_MSG ("{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[" OAB_CALL "]}",
                                                      "\"tool_calls\"")), 0);
    const char *bad [] = {
        "[1]",
        "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[]}",
        OAB_MSG ("{\"role\":\"user\",\"content\":\"hi\"}", "\"stop\""),
        OAB_MSG ("{\"role\":\"assistant\",\"content\":3}", "\"stop\""),
        OAB_MSG ("{\"role\":\"assistant\",\"content\":\"hi\"}", "null"),
        OAB_MSG ("{\"role\":\"assistant\",\"content\":\"hi\"}", "\"tool_calls\""),
        OAB_MSG ("{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"arguments\":\"{}\"}}]}",
                 "\"tool_calls\""),
        OAB_MSG ("{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]}",
                 "\"tool_calls\""),
        "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"x\"},"
            "\"finish_reason\":\"stop\"}]}",
        "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\"},"
            "\"finish_reason\":\"stop\"},{\"index\":1,\"message\":{\"role\":\"assistant\"},\"finish_reason\":\"stop\"}],"
            "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
        NULL };
    for (int i = 0; bad [i]; i++)
        cr_expect_eq (s_body (SL_DIALECT_OPENAI, bad [i]), -1, "bad body %d refused", i);
}

#define AB_MSG(content, stop) "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\"," \
    "\"content\":[" content "],\"stop_reason\":" stop ",\"stop_sequence\":null," \
    "\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}"
#define AB_TEXT "{\"type\":\"text\",\"text\":\"hi\"}"
#define AB_TOOL "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}"

Test (sl_validate, anthropic_bodies)
{
    cr_expect_eq (s_body (SL_DIALECT_ANTHROPIC, AB_MSG (AB_TEXT, "\"end_turn\"")), 0);
    cr_expect_eq (s_body (SL_DIALECT_ANTHROPIC, AB_MSG ("{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},"
                                                        "{\"type\":\"redacted_thinking\",\"data\":\"d\"},"
                                                        "{\"type\":\"server_tool_use\",\"id\":\"s1\",\"name\":\"web_search\",\"input\":{}},"
                                                        "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"s1\",\"content\":[]},"
                                                        AB_TEXT "," AB_TOOL "," AB_TOOL, "\"tool_use\"")), 0);
    cr_expect_eq (s_body (SL_DIALECT_ANTHROPIC, AB_MSG (AB_TOOL, "\"max_tokens\"")), 0, "cut at max_tokens");
    const char *bad [] = {
        AB_MSG (AB_TOOL "," AB_TEXT, "\"tool_use\""),
        AB_MSG (AB_TEXT, "\"tool_use\""),
        AB_MSG (AB_TOOL, "\"end_turn\""),
        AB_MSG (AB_TEXT, "null"),
        AB_MSG ("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":\"{}\"}", "\"tool_use\""),
        AB_MSG ("{\"type\":\"tool_use\",\"name\":\"f\",\"input\":{}}", "\"tool_use\""),
        AB_MSG ("{\"type\":\"thinking\",\"thinking\":\"t\"}", "\"end_turn\""),
        AB_MSG ("{\"type\":\"mystery\"}", "\"end_turn\""),
        AB_MSG ("{\"text\":\"no type\"}", "\"end_turn\""),
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":\"end_turn\"}",
        "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}",
        NULL };
    for (int i = 0; bad [i]; i++)
        cr_expect_eq (s_body (SL_DIALECT_ANTHROPIC, bad [i]), -1, "bad body %d refused", i);
}

#define RB_RESP(status, output) "{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":" status "," \
    "\"model\":\"m\",\"output\":[" output "],\"usage\":null}"
#define RB_MSG "{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[]}"
#define RB_CALL "{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"}"

Test (sl_validate, responses_bodies)
{
    cr_expect_eq (s_body (SL_DIALECT_RESPONSES, RB_RESP ("\"completed\"", RB_MSG "," RB_CALL)), 0);
    cr_expect_eq (s_body (SL_DIALECT_RESPONSES, RB_RESP ("\"incomplete\"", "{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}")), 0);
    const char *bad [] = {
        RB_RESP ("\"in_progress\"", RB_MSG),
        RB_RESP ("\"completed\"", "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}"),
        RB_RESP ("\"completed\"", "{\"id\":\"fc_1\",\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\"}"),
        RB_RESP ("\"completed\"", "{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":{}}"),
        RB_RESP ("\"completed\"", "{\"id\":\"m\",\"type\":\"message\",\"role\":\"user\",\"content\":[]}"),
        RB_RESP ("\"completed\"", "{\"id\":\"rs_1\",\"type\":\"reasoning\"}"),
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":{},\"usage\":null}",
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[],\"usage\":3}",
        NULL };
    for (int i = 0; bad [i]; i++)
        cr_expect_eq (s_body (SL_DIALECT_RESPONSES, bad [i]), -1, "bad body %d refused", i);
}

#define GB(parts, finish) "{\"candidates\":[{\"content\":{\"parts\":[" parts "],\"role\":\"model\"}," \
    "\"finishReason\":" finish ",\"index\":0}],\"responseId\":\"r1\"}"

Test (sl_validate, gemini_bodies)
{
    cr_expect_eq (s_body (SL_DIALECT_GEMINI, GB ("{\"text\":\"t\",\"thought\":true},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}",
                                                 "\"STOP\"")), 0);
    const char *bad [] = {
        GB ("{\"text\":\"t\"}", "null"),
        GB ("{\"functionCall\":{\"args\":{}}}", "\"STOP\""),
        GB ("{\"functionCall\":{\"name\":\"f\",\"args\":[]}}", "\"STOP\""),
        GB ("{\"bogus\":1}", "\"STOP\""),
        "{\"candidates\":[]}",
        "{\"error\":{\"code\":500,\"message\":\"x\",\"status\":\"INTERNAL\"}}",
        NULL };
    for (int i = 0; bad [i]; i++)
        cr_expect_eq (s_body (SL_DIALECT_GEMINI, bad [i]), -1, "bad body %d refused", i);
}
