/*  Unit tests: services/emitter (sl_emitter + the OpenAI renderer). */
#include <criterion/criterion.h>

#include "common/base/sl_buf.h"
#include "common/stages/sl_emitter.h"
#include "tests/unit/recorder.h"

static sl_emitter_t *em;
static recorder_t rec;

static void
s_setup (void)
{
    em = sl_emitter_new ();
    memset (&rec, 0, sizeof rec);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.client_dialect = SL_DIALECT_OPENAI;
    start.upstream_dialect = SL_DIALECT_OPENAI;
    start.model = sl_str ("asked-model");
    start.reply_to = sl_str ("tcp://gw:1");
    start.flags = SL_F_STREAM | SL_F_USAGE;
    sl_emitter_feed (em, &start, recorder_emit, &rec);
}

static void
s_teardown (void)
{
    sl_emitter_destroy (&em);
    recorder_clear (&rec);
}

TestSuite (sl_emitter, .init = s_setup, .fini = s_teardown);

static void
s_feed (sl_msg_t m)
{
    sl_emitter_feed (em, &m, recorder_emit, &rec);
}

static sl_msg_t
s_block (int event, int kind, int index)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, event);
    m.block = (uint8_t) kind;
    m.index = index;
    return m;
}

//  All frame bytes so far, concatenated.
static const char *
s_bytes (void)
{
    static sl_buf_t out;
    sl_buf_reset (&out);
    for (size_t i = 0; i < rec.count; i++)
        sl_buf_append_str (&out, rec.msgs [i]->body);
    return sl_buf_cstr (&out);
}

Test (sl_emitter, renders_an_openai_stream)
{
    sl_msg_t msg = s_block (SL_B_MESSAGE, 0, -1);
    msg.id = sl_str ("chatcmpl-1");
    msg.model = sl_str ("real-model");
    msg.ts = 42;
    s_feed (msg);
    cr_expect_eq (rec.count, 0, "identity alone writes nothing");
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    d.text = sl_str ("a \"quote\"\n");
    s_feed (d);
    s_feed (s_block (SL_B_END, SL_BK_TEXT, 0));
    sl_msg_t call = s_block (SL_B_START, SL_BK_TOOL_CALL, 1);
    call.id = sl_str ("call_1");
    call.name = sl_str ("f");
    s_feed (call);
    sl_msg_t args = s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 1);
    args.text = sl_str ("{\"x\":1}");
    s_feed (args);
    sl_msg_t fin = s_block (SL_B_FINISH, 0, -1);
    fin.finish = SL_FIN_TOOL_CALLS;
    fin.finish_raw = sl_str ("tool_calls");
    fin.has_usage = true;
    fin.usage = (sl_usage_t) { 5, 6, -1, -1, -1, -1 };
    s_feed (fin);
    s_feed (recorder_msg (SL_MSG_END, 0));

    const char *head = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":42,"
                       "\"model\":\"real-model\",\"choices\":[";
    sl_buf_t want = { 0 };
    sl_buf_printf (&want, "%s{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n", head);
    sl_buf_printf (&want, "%s{\"index\":0,\"delta\":{\"content\":\"a \\\"quote\\\"\\n\"},\"finish_reason\":null}]}\n\n", head);
    sl_buf_printf (&want, "%s{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
                          "\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n", head);
    sl_buf_printf (&want, "%s{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                          "\"{\\\"x\\\":1}\"}}]},\"finish_reason\":null}]}\n\n", head);
    sl_buf_printf (&want, "%s{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n", head);
    sl_buf_printf (&want, "%s],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}\n\n", head);
    sl_buf_puts (&want, "data: [DONE]\n\n");
    cr_expect_str_eq (s_bytes (), sl_buf_cstr (&want));
    sl_buf_free (&want);

    cr_assert_gt (rec.count, 1);
    cr_expect (rec.msgs [0]->flags & SL_F_FIRST);
    cr_expect_eq (rec.msgs [0]->status, 200);
    cr_expect (sl_str_eq (rec.msgs [0]->content_type, "text/event-stream"));
    cr_expect (sl_str_eq (rec.msgs [0]->reply_to, "tcp://gw:1"));
    cr_expect (rec.msgs [rec.count - 1]->flags & SL_F_LAST);
    for (size_t i = 0; i < rec.count; i++) {
        cr_expect_eq (rec.msgs [i]->seq, i, "frames numbered from 0");
        cr_expect_eq (rec.msgs [i]->type, SL_MSG_FRAME);
    }
    cr_expect_eq (sl_emitter_streams (em), 0);
}

Test (sl_emitter, error_before_content_is_an_http_error)
{
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("rate_limit_error");
    err.message = sl_str ("slow down");
    err.status = 429;
    s_feed (err);
    s_feed (recorder_msg (SL_MSG_END, 0));
    cr_assert_eq (rec.count, 1);
    cr_expect_eq (rec.msgs [0]->status, 429);
    cr_expect (rec.msgs [0]->flags & SL_F_FIRST);
    cr_expect (rec.msgs [0]->flags & SL_F_LAST);
    cr_expect (sl_str_eq (rec.msgs [0]->content_type, "application/json"));
    cr_expect_str_eq (s_bytes (), "{\"error\":{\"message\":\"slow down\",\"type\":\"rate_limit_error\","
                                  "\"param\":null,\"code\":null}}");
}

Test (sl_emitter, error_mid_stream_is_an_error_event_without_done)
{
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("server_error");
    err.message = sl_str ("boom");
    s_feed (err);
    s_feed (recorder_msg (SL_MSG_END, 0));
    const char *bytes = s_bytes ();
    cr_expect_not_null (strstr (bytes, "data: {\"error\":{\"message\":\"boom\""));
    cr_expect_null (strstr (bytes, "[DONE]"), "a failed stream does not claim completion");
    cr_expect (rec.msgs [rec.count - 1]->flags & SL_F_LAST);
}

Test (sl_emitter, judge_fixed_finish_uses_the_normalized_value)
{
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t fin = s_block (SL_B_FINISH, 0, -1);
    fin.finish = SL_FIN_STOP;           //  finish_raw cleared by the judge
    s_feed (fin);
    cr_expect_not_null (strstr (s_bytes (), "\"finish_reason\":\"stop\""));
}

Test (sl_emitter, messages_for_unknown_streams_dropped)
{
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    memset (d.sid, 0x99, SL_SID_SIZE);
    s_feed (d);
    cr_expect_eq (rec.count, 0);
    cr_expect_eq (sl_emitter_dropped (em), 1);
}

//  --------------------------------------------------------------------------
//  The legality gate

static size_t
s_count_type (int type)
{
    size_t n = 0;
    for (size_t i = 0; i < rec.count; i++)
        n += rec.msgs [i]->type == type;
    return n;
}

Test (sl_emitter, an_illegal_event_is_withheld_and_the_stream_ends_cleanly)
{
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    d.text = sl_str ("fine");
    s_feed (d);
    sl_msg_t fin = s_block (SL_B_FINISH, 0, -1);
    fin.finish = SL_FIN_STOP;
    s_feed (fin);
    size_t frames = s_count_type (SL_MSG_FRAME);
    s_feed (fin);                       //  a second finish: illegal for the client
    s_feed (recorder_msg (SL_MSG_END, 0));
    const sl_emitter_stats_t *st = sl_emitter_stats (em);
    cr_expect_eq (st->illegal, 1);
    const char *bytes = s_bytes ();
    cr_expect_eq (strstr (bytes, "\"finish_reason\":\"stop\"") ? 1 : 0, 1);
    const char *first = strstr (bytes, "\"finish_reason\":\"stop\"");
    cr_expect_null (first ? strstr (first + 1, "\"finish_reason\":\"stop\"") : NULL, "the second finish is withheld");
    cr_expect_not_null (strstr (bytes, "data: {\"error\":{\"message\":\"sluice withheld an event"), "%s", bytes);
    cr_expect_not_null (strstr (bytes, "illegal_output"));
    cr_expect_null (strstr (bytes, "[DONE]"), "no claim of completion after a cut");
    cr_expect_eq (s_count_type (SL_MSG_FRAME), frames + 1, "one more frame: the error, flagged LAST");
    cr_expect (rec.msgs [rec.count - 1]->flags & SL_F_LAST);
    cr_expect_eq (s_count_type (SL_MSG_ERROR), 1, "monitoring hears why");
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == SL_MSG_ERROR)
            cr_expect (sl_str_eq (rec.msgs [i]->code, "illegal_output"));
}

Test (sl_emitter, a_response_that_stops_short_is_cut_not_completed)
{
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    d.text = sl_str ("half");
    s_feed (d);
    s_feed (recorder_msg (SL_MSG_END, 0));   //  no finish came
    cr_expect_eq (sl_emitter_stats (em)->illegal, 1);
    cr_expect_not_null (strstr (s_bytes (), "illegal_output"), "%s", s_bytes ());
    cr_expect (rec.msgs [rec.count - 1]->flags & SL_F_LAST);
}

Test (sl_emitter, anthropic_nested_block_is_withheld)
{
    sl_emitter_destroy (&em);
    recorder_clear (&rec);
    em = sl_emitter_new ();
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.client_dialect = SL_DIALECT_ANTHROPIC;
    start.upstream_dialect = SL_DIALECT_ANTHROPIC;
    start.reply_to = sl_str ("tcp://gw:1");
    start.flags = SL_F_STREAM;
    s_feed (start);
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 1));   //  block 0 never ended
    cr_expect_eq (sl_emitter_stats (em)->illegal, 1);
    const char *bytes = s_bytes ();
    cr_expect_null (strstr (bytes, "\"index\":1"), "the nested start is withheld: %s", bytes);
    cr_expect_not_null (strstr (bytes, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\""), "%s", bytes);
    cr_expect (rec.msgs [rec.count - 1]->flags & SL_F_LAST);
    size_t count = rec.count;
    sl_msg_t late = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    late.text = sl_str ("late");
    s_feed (late);
    cr_expect_eq (rec.count, count, "nothing after the cut");
}

Test (sl_emitter, openai_thinking_and_citations)
{
    s_feed (s_block (SL_B_START, SL_BK_THINKING, 0));
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_THINKING, 0);
    d.text = sl_str ("hmm");
    s_feed (d);
    s_feed (s_block (SL_B_END, SL_BK_THINKING, 0));
    //  Citations come at the end of their block, as the aggregator sends them.
    s_feed (s_block (SL_B_START, SL_BK_CITATION, 1));
    sl_msg_t c = s_block (SL_B_END, SL_BK_CITATION, 1);
    c.body = sl_str ("{\"citations\":[{\"type\":\"url_citation\"}]}");
    s_feed (c);
    cr_expect_not_null (strstr (s_bytes (), "\"delta\":{\"reasoning_content\":\"hmm\"}"), "%s", s_bytes ());
    cr_expect_not_null (strstr (s_bytes (), "\"delta\":{\"annotations\":[{\"type\":\"url_citation\"}]}"), "%s", s_bytes ());
    cr_expect_eq (sl_emitter_stats (em)->illegal, 0);
}

Test (sl_emitter, a_dialect_it_cannot_render_gets_an_http_error)
{
    sl_emitter_destroy (&em);
    recorder_clear (&rec);
    em = sl_emitter_new ();
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.client_dialect = 9;
    start.reply_to = sl_str ("tcp://gw:1");
    s_feed (start);
    cr_assert_eq (rec.count, 1);
    cr_expect_eq (rec.msgs [0]->status, 502);
    cr_expect (rec.msgs [0]->flags & SL_F_FIRST);
    cr_expect (rec.msgs [0]->flags & SL_F_LAST);
    cr_expect_not_null (strstr (s_bytes (), "unsupported_dialect"));
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    s_feed (recorder_msg (SL_MSG_END, 0));
    cr_expect_eq (rec.count, 1, "nothing after the answer");
    cr_expect_eq (sl_emitter_streams (em), 0);
}

//  A call the judge holds as the first block: its visible keep-alives
//  open the response (status 200, the dialect's keep-alive), so a client
//  hears from sluice during the hold, whatever the dialect. The frame
//  takes no number; the first numbered frame still says FIRST (the
//  gateway writes no second status line). An error after that is an event
//  of the stream, no longer an HTTP status.
Test (sl_emitter, a_keepalive_opens_a_response_whose_first_block_is_held)
{
    static const struct {
        int dialect;
        const char *keepalive;
    } cases [] = {
        { SL_DIALECT_OPENAI, ": keep-alive\n\n" },
        { SL_DIALECT_ANTHROPIC, ": keep-alive\n\n" },
        { SL_DIALECT_RESPONSES, ": keep-alive\n\n" },
        { SL_DIALECT_GEMINI, "\n" },            //  Gemini's SDKs read only data: events
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_emitter_t *e = sl_emitter_new ();
        recorder_t r;
        memset (&r, 0, sizeof r);
        sl_msg_t start = recorder_msg (SL_MSG_START, 0);
        start.client_dialect = start.upstream_dialect = (uint8_t) cases [i].dialect;
        start.model = sl_str ("m");
        start.reply_to = sl_str ("tcp://gw:1");
        start.flags = SL_F_STREAM;
        sl_emitter_feed (e, &start, recorder_emit, &r);
        sl_msg_t liveness = s_block (SL_B_KEEPALIVE, 0, -1);
        sl_emitter_feed (e, &liveness, recorder_emit, &r);
        cr_assert_eq (r.count, 1);
        cr_expect_eq (r.msgs [0]->flags, SL_F_KEEPALIVE, "a liveness beat opens nothing");
        cr_expect_eq (r.msgs [0]->body.len, 0);
        sl_msg_t visible = s_block (SL_B_KEEPALIVE, 0, -1);
        visible.flags = SL_F_KEEPALIVE;
        sl_emitter_feed (e, &visible, recorder_emit, &r);
        sl_emitter_feed (e, &visible, recorder_emit, &r);
        cr_assert_eq (r.count, 3);
        const sl_msg_t *f = r.msgs [1];
        cr_expect_eq (f->flags, SL_F_KEEPALIVE | SL_F_FIRST, "dialect %d: the first opens the response", cases [i].dialect);
        cr_expect_eq (f->status, 200);
        cr_expect (sl_str_eq (f->content_type, "text/event-stream"));
        cr_expect (sl_str_eq (f->body, cases [i].keepalive), "dialect %d: %.*s", cases [i].dialect,
                   (int) f->body.len, f->body.ptr);
        cr_expect_eq (f->seq, 0, "it takes no number");
        cr_expect_eq (r.msgs [2]->flags, SL_F_KEEPALIVE, "the next is a plain keep-alive");
        cr_expect (sl_str_eq (r.msgs [2]->body, cases [i].keepalive));
        //  The judge ends the response: an error of the stream, not an HTTP status.
        sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
        err.code = sl_str ("policy_violation");
        err.message = sl_str ("sluice ended this response");
        err.status = 403;
        sl_emitter_feed (e, &err, recorder_emit, &r);
        sl_msg_t end = recorder_msg (SL_MSG_END, 0);
        sl_emitter_feed (e, &end, recorder_emit, &r);
        const sl_msg_t *last = r.msgs [r.count - 1];
        cr_expect (last->flags & SL_F_LAST);
        cr_expect (sl_str_eq (last->content_type, "text/event-stream") || !last->content_type.ptr,
                   "dialect %d: an event of the stream", cases [i].dialect);
        cr_expect_not_null (memmem (last->body.ptr, last->body.len, "sluice ended this response", 26),
                            "dialect %d: %.*s", cases [i].dialect, (int) last->body.len, last->body.ptr);
        cr_expect_neq (last->status, 403, "no second status line");
        cr_expect_eq (sl_emitter_stats (e)->illegal, 0, "dialect %d", cases [i].dialect);
        sl_emitter_destroy (&e);
        recorder_clear (&r);
    }
}

//  --------------------------------------------------------------------------
//  What a stream spent, on its LAST frame

static const sl_msg_t *
s_last_frame (void)
{
    for (size_t i = rec.count; i > 0; i--)
        if (rec.msgs [i - 1]->type == SL_MSG_FRAME && (rec.msgs [i - 1]->flags & SL_F_LAST))
            return rec.msgs [i - 1];
    cr_assert_fail ("no LAST frame");
    return NULL;
}

//  A text stream ending with fin (its usage, if any).
static void
s_text_stream (const char *text, sl_msg_t fin)
{
    s_feed (s_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    d.text = sl_str (text);
    s_feed (d);
    sl_msg_t end = s_block (SL_B_END, SL_BK_TEXT, 0);
    end.text = sl_str (text);
    s_feed (end);
    fin.finish = SL_FIN_STOP;
    s_feed (fin);
    s_feed (recorder_msg (SL_MSG_END, 0));
}

Test (sl_emitter, the_last_frame_carries_the_usage_the_upstream_reported)
{
    sl_msg_t msg = s_block (SL_B_MESSAGE, 0, -1);
    msg.has_usage = true;
    msg.usage = (sl_usage_t) { 40, -1, -1, 8, -1, -1 };
    s_feed (msg);
    sl_msg_t fin = s_block (SL_B_FINISH, 0, -1);
    fin.has_usage = true;
    fin.usage = (sl_usage_t) { -1, 25, -1, -1, -1, -1 };
    s_text_stream ("hello", fin);
    const sl_msg_t *last = s_last_frame ();
    cr_expect (last->has_usage);
    cr_expect_eq (last->usage.input, 40, "the message's input, kept");
    cr_expect_eq (last->usage.output, 25, "the finish's output");
    cr_expect_eq (last->usage.cache_read, 8);
    cr_expect_not (last->flags & SL_F_ESTIMATED);
}

Test (sl_emitter, a_stream_without_usage_is_estimated_for_the_gateway_not_the_client)
{
    //  A fresh stream whose START says how large the upstream's request was.
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    memset (start.sid, 0x77, SL_SID_SIZE);
    start.client_dialect = SL_DIALECT_OPENAI;
    start.upstream_dialect = SL_DIALECT_OPENAI;
    start.model = sl_str ("m");
    start.reply_to = sl_str ("tcp://gw:1");
    start.flags = SL_F_STREAM | SL_F_USAGE;
    start.request_bytes = 401;
    recorder_clear (&rec);
    sl_emitter_destroy (&em);
    em = sl_emitter_new ();
    sl_emitter_feed (em, &start, recorder_emit, &rec);
    //  Every message of the stream is the same stream: give them its sid.
    const char *text = "0123456789";
    sl_msg_t msgs [5];
    msgs [0] = s_block (SL_B_START, SL_BK_TEXT, 0);
    msgs [1] = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
    msgs [1].text = sl_str (text);
    msgs [2] = s_block (SL_B_END, SL_BK_TEXT, 0);
    msgs [2].text = sl_str (text);
    msgs [3] = s_block (SL_B_FINISH, 0, -1);
    msgs [3].finish = SL_FIN_STOP;
    msgs [4] = recorder_msg (SL_MSG_END, 0);
    for (int i = 0; i < 5; i++) {
        memset (msgs [i].sid, 0x77, SL_SID_SIZE);
        s_feed (msgs [i]);
    }
    const sl_msg_t *last = s_last_frame ();
    cr_expect (last->has_usage);
    cr_expect (last->flags & SL_F_ESTIMATED);
    cr_expect_eq (last->usage.input, 101, "401 request bytes at 4 a token, rounded up");
    cr_expect_eq (last->usage.output, 3, "10 bytes of text");
    cr_expect_eq (last->usage.total, 104);
    cr_expect_null (strstr (s_bytes (), "usage"), "the client is never shown an estimate: %s", s_bytes ());
    cr_expect_null (strstr (s_bytes (), "101"));
}
