/*  Unit tests: common/dialects/sl_render (what the renderers share: a
    renderer made of steps, the response's id, the raw finish and
    signatures as they may pass, citations held for their text, JSON on
    one line, cut-off arguments closed). The dialects' renderers
    themselves: tests/unit/common/dialects/<name>/test_sl_<name>_render.c,
    test_sl_render_body.c and the conformance suite (test_dialects.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_req.h"

//  A renderer of steps that writes the name of each step it takes.
static void
s_open (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "open;");
}

static void
s_step (const char *name, const sl_msg_t *msg, sl_buf_t *out)
{
    sl_buf_printf (out, "%s %d;", name, msg->block);
}

static void
s_start (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    (void) rs;
    s_step ("start", msg, out);
}

static void
s_finish (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    (void) rs;
    s_step ("finish", msg, out);
}

static const sl_renderer_t s_steps = {
    .block = sl_render_block,
    .open = s_open,
    .on_start = s_start,
    .on_finish = s_finish,          //  no delta, no end: those events render nothing
};

static void
s_render (sl_render_stream_t *rs, int kind, int block, sl_buf_t *out)
{
    sl_msg_t msg;
    sl_msg_init (&msg, SL_MSG_BLOCK);
    msg.kind = (uint8_t) kind;
    msg.block = (uint8_t) block;
    rs->renderer->block (rs, &msg, out);
}

Test (sl_render, a_renderer_of_steps_opens_once_and_takes_the_step_of_each_event)
{
    sl_render_stream_t rs;
    memset (&rs, 0, sizeof rs);
    rs.renderer = &s_steps;
    sl_buf_t out = { 0 };
    s_render (&rs, SL_B_MESSAGE, 0, &out);
    cr_expect_eq (out.len, 0, "the message's identity is the emitter's");
    cr_expect_not (rs.started);
    s_render (&rs, SL_B_START, SL_BK_TEXT, &out);
    s_render (&rs, SL_B_DELTA, SL_BK_TEXT, &out);
    s_render (&rs, SL_B_END, SL_BK_TEXT, &out);
    s_render (&rs, SL_B_START, SL_BK_TOOL_CALL, &out);
    s_render (&rs, SL_B_FINISH, 0, &out);
    char expected [64];
    snprintf (expected, sizeof expected, "open;start %d;start %d;finish 0;", SL_BK_TEXT, SL_BK_TOOL_CALL);
    cr_expect_str_eq (sl_buf_cstr (&out), expected);
    cr_expect (rs.started);
    sl_buf_reset (&out);
    sl_render_open (&rs, &out);
    cr_expect_eq (out.len, 0, "opened once: an error after the start does not open it again");
    sl_buf_free (&out);
    sl_render_stream_clear (&rs);
}

Test (sl_render, the_response_s_id_is_the_upstream_s_or_made_from_the_stream)
{
    sl_render_stream_t rs;
    cr_assert_eq (sl_render_stream_init (&rs, SL_DIALECT_OPENAI, SL_DIALECT_OPENAI), 0);
    memcpy (rs.sid_hex, "00112233445566778899aabbccddeeff", SL_SID_HEX_SIZE);
    sl_buf_t out = { 0 };
    sl_render_put_id (&rs, "msg_", &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"msg_00112233445566778899aabbccddeeff\"");
    sl_buf_reset (&out);
    sl_buf_puts (&rs.id, "chat \"1\"");
    sl_render_put_id (&rs, "msg_", &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"chat \\\"1\\\"\"", "the upstream's, escaped");
    sl_buf_free (&out);
    sl_render_stream_clear (&rs);
    cr_expect_eq (sl_render_stream_init (&rs, 0, SL_DIALECT_OPENAI), -1, "no renderer for no dialect");
}

Test (sl_render, a_raw_finish_and_a_signature_pass_as_they_are_only_within_a_dialect)
{
    sl_render_stream_t same, crossed;
    cr_assert_eq (sl_render_stream_init (&same, SL_DIALECT_ANTHROPIC, SL_DIALECT_ANTHROPIC), 0);
    cr_assert_eq (sl_render_stream_init (&crossed, SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC), 0);
    sl_msg_t fin;
    sl_msg_init (&fin, SL_MSG_BLOCK);
    fin.finish_raw = SL_STR_LIT ("pause_turn");
    char raw [32];
    cr_expect_str_eq (sl_render_raw_finish (&same, &fin, raw, sizeof raw), "pause_turn");
    cr_expect_null (sl_render_raw_finish (&crossed, &fin, raw, sizeof raw), "another dialect's value: normalized");
    cr_expect_null (sl_render_raw_finish (&same, &fin, raw, 4), "too long to keep");
    sl_buf_t out = { 0 };
    sl_render_put_sig (&same, SL_STR_LIT ("EqX"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"EqX\"");
    sl_buf_reset (&out);
    sl_render_put_sig (&crossed, SL_STR_LIT ("EqX"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"" SL_SIG_TAG "anthropic:EqX\"", "tagged with the provider that made it");
    sl_buf_free (&out);
    sl_render_stream_clear (&same);
    sl_render_stream_clear (&crossed);
}

Test (sl_render, citations_wait_for_their_text_and_join_it_at_its_end)
{
    sl_render_stream_t rs;
    cr_assert_eq (sl_render_stream_init (&rs, SL_DIALECT_ANTHROPIC, SL_DIALECT_ANTHROPIC), 0);
    sl_msg_t end;
    sl_msg_init (&end, SL_MSG_BLOCK);
    end.kind = SL_B_END;
    end.block = SL_BK_CITATION;
    end.body = SL_STR_LIT ("{\"citations\":[{\"a\":1},{\"b\":2}]}");
    cr_expect (sl_render_end_citations (&rs, &end), "a citation block renders nothing of its own");
    end.block = SL_BK_TEXT;
    end.body = SL_STR_LIT ("{\"citations\":[{\"c\":3}]}");
    cr_expect_not (sl_render_end_citations (&rs, &end));
    cr_expect_str_eq (sl_buf_cstr (&rs.pending), "{\"a\":1},{\"b\":2}", "no text block open: its own are not joined");
    rs.open_kind = SL_BK_TEXT;
    cr_expect_not (sl_render_end_citations (&rs, &end), "the text's end is the renderer's to render");
    sl_str_t rest = sl_buf_str (&rs.pending), citation;
    int count = 0;
    while (sl_render_next_citation (&rest, &citation))
        count++;
    cr_expect_eq (count, 3, "those waiting and the text's own");
    sl_render_stream_clear (&rs);
}

Test (sl_render, json_goes_on_one_line_and_cut_off_arguments_are_closed)
{
    sl_buf_t out = { 0 };
    sl_render_put_line_json (&out, SL_STR_LIT ("{\n  \"a\": \"x\\n y\",\n  \"b\": [1, 2]\n}"));
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"a\":\"x\\n y\",\"b\":[1,2]}", "strings as they are");
    sl_buf_reset (&out);
    sl_render_put_json (&out, SL_STR_LIT ("{\"a\":"), "[]");
    cr_expect_str_eq (sl_buf_cstr (&out), "[]", "not whole JSON: the fallback");
    sl_buf_reset (&out);
    sl_render_close_json (SL_STR_LIT ("{\"a\":[1,\"b\",\"par"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"a\":[1,\"b\"]}");
    sl_buf_reset (&out);
    sl_render_close_json (SL_STR_LIT ("nonsense"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{}");
    sl_buf_reset (&out);
    cr_expect_eq (sl_render_put_citations (&out, SL_STR_LIT ("{\"citations\":[{\"x\":1}]}")), 1);
    cr_expect_eq (sl_render_put_citations (&out, SL_STR_LIT ("{\"other\":[]}")), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"x\":1}");
    sl_buf_free (&out);
}
