/*  Unit tests: services/audit/console/sl_live (the live view and its events). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "services/audit/console/sl_live.h"

//  The data of the last event in text (after its last "data: ").
static sl_str_t
s_data (sl_buf_t *text)
{
    const char *p = sl_buf_cstr (text), *d = NULL;
    for (const char *q = p; (q = strstr (q, "data: ")); q++)
        d = q;
    cr_assert_not_null (d);
    d += 6;
    return sl_str_n (d, strcspn (d, "\n"));
}

Test (sl_live, each_record_is_an_event_and_the_snapshot_holds_the_rest)
{
    sl_live_t *live = sl_live_new ();
    sl_buf_t out = { 0 };
    sl_record_meta_t meta = { SL_STR_LIT ("e1"), 1, 1, 0, 5000 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, 0x11, SL_SID_SIZE);
    m.model = SL_STR_LIT ("mock-tools");
    m.key_id = SL_STR_LIT ("a9993e364706");
    m.client_dialect = SL_DIALECT_ANTHROPIC;
    m.tools = SL_STR_LIT ("[{\"name\":\"run_shell\",\"schema\":{}}]");
    sl_live_feed (live, &meta, &m, &out);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "event: start\n"));
    cr_expect (sl_json_valid (s_data (&out)));
    cr_expect_eq (sl_live_streams (live), 1);
    sl_msg_init (&m, SL_MSG_VERDICT);
    memset (m.sid, 0x11, SL_SID_SIZE);
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_BLOCK;
    m.rule = SL_STR_LIT ("no-rm-rf");
    char args [1000];
    memset (args, 'a', sizeof args);
    m.text = sl_str_n (args, sizeof args);
    sl_buf_reset (&out);
    sl_live_feed (live, &meta, &m, &out);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "event: call\n"));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"action\":\"block\",\"check\":\"ran\",\"rule\":\"no-rm-rf\""));
    cr_expect_lt (out.len, 800, "arguments are a preview");
    sl_live_context_t ctx;
    sl_live_context (live, m.sid, &ctx);
    cr_expect_str_eq (ctx.model, "mock-tools");
    cr_expect_str_eq (ctx.client, "anthropic");
    cr_expect_str_eq (ctx.client_key, "a9993e364706");
    sl_buf_reset (&out);
    sl_live_snapshot (live, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "{\"streams\":[{\"sid\":\"1111"));
    //  Its end moves it to the finished ones.
    sl_msg_init (&m, SL_MSG_END);
    memset (m.sid, 0x11, SL_SID_SIZE);
    meta.at = 5250;
    sl_buf_reset (&out);
    sl_live_feed (live, &meta, &m, &out);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"duration_ms\":250"));
    cr_expect_eq (sl_live_streams (live), 0);
    sl_buf_reset (&out);
    sl_live_snapshot (live, &out);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "{\"streams\":[],\"recent\":[{\"sid\":\"1111"), "%s",
                        sl_buf_cstr (&out));
    sl_live_context (live, m.sid, &ctx);
    cr_expect_str_eq (ctx.model, "mock-tools", "still known for a while");
    sl_buf_free (&out);
    sl_live_destroy (&live);
}

Test (sl_live, idle_streams_leave_the_view)
{
    sl_live_t *live = sl_live_new ();
    sl_buf_t out = { 0 };
    sl_record_meta_t meta = { SL_STR_LIT ("e1"), 1, 1, 0, 1000 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, 0x22, SL_SID_SIZE);
    sl_live_feed (live, &meta, &m, &out);
    sl_live_tick (live, 1000 + SL_LIVE_IDLE_MS);
    cr_expect_eq (sl_live_streams (live), 1);
    sl_live_tick (live, 1001 + SL_LIVE_IDLE_MS);
    cr_expect_eq (sl_live_streams (live), 0);
    sl_buf_free (&out);
    sl_live_destroy (&live);
}

//  A viewer's feed: streams, tool names and verdicts, and nothing people
//  or models wrote (the user's message, a call's arguments, thinking, a
//  tool's result, an error's message), in the events and the snapshot;
//  a data line that is no JSON object is left out.
Test (sl_live, a_viewers_feed_carries_no_contents)
{
    sl_live_t *live = sl_live_new ();
    sl_buf_t out = { 0 };
    sl_record_meta_t meta = { SL_STR_LIT ("e1"), 1, 1, 0, 5000 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, 0x22, SL_SID_SIZE);
    m.model = SL_STR_LIT ("mock-tools");
    m.last_user = SL_STR_LIT ("please tidy up my disk");
    sl_live_feed (live, &meta, &m, &out);
    sl_msg_init (&m, SL_MSG_VERDICT);
    memset (m.sid, 0x22, SL_SID_SIZE);
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_BLOCK;
    m.rule = SL_STR_LIT ("no-rm-rf");
    m.text = SL_STR_LIT ("{\"command\":\"rm -rf /\"}");
    sl_live_feed (live, &meta, &m, &out);
    sl_msg_init (&m, SL_MSG_BLOCK);
    memset (m.sid, 0x22, SL_SID_SIZE);
    m.kind = SL_B_END;
    m.block = SL_BK_THINKING;
    m.text = SL_STR_LIT ("the user wants their disk wiped");
    sl_live_feed (live, &meta, &m, &out);
    sl_msg_init (&m, SL_MSG_ERROR);
    memset (m.sid, 0x22, SL_SID_SIZE);
    m.code = SL_STR_LIT ("upstream");
    m.message = SL_STR_LIT ("the provider said: rm -rf refused");
    sl_live_feed (live, &meta, &m, &out);
    const char *whole = sl_buf_cstr (&out);
    cr_assert_not_null (strstr (whole, "rm -rf /"), "an auditor's feed is whole");
    cr_assert_not_null (strstr (whole, "tidy up"));
    cr_assert_not_null (strstr (whole, "disk wiped"));

    sl_buf_t viewer = { 0 };
    sl_buf_puts (&out, "retry: 1000\n\n: keep-alive\n\nevent: call\ndata: [\"rm -rf /\"]\n\n");
    sl_buf_reset (&viewer);
    sl_live_redact (sl_buf_str (&out), &viewer);
    const char *v = sl_buf_cstr (&viewer);
    cr_expect_null (strstr (v, "rm -rf"), "%s", v);
    cr_expect_null (strstr (v, "tidy up"), "%s", v);
    cr_expect_null (strstr (v, "disk wiped"), "%s", v);
    cr_expect_not_null (strstr (v, "event: start\ndata: {"), "%s", v);
    cr_expect_not_null (strstr (v, "\"tool\":\"run_shell\""), "%s", v);
    cr_expect_not_null (strstr (v, "\"action\":\"block\""), "%s", v);
    cr_expect_not_null (strstr (v, "\"rule\":\"no-rm-rf\""), "%s", v);
    cr_expect_not_null (strstr (v, "\"arguments\":null"), "%s", v);
    cr_expect_not_null (strstr (v, "\"code\":\"upstream\""), "%s", v);
    cr_expect_not_null (strstr (v, "\"redacted\":true"), "%s", v);
    cr_expect_not_null (strstr (v, "retry: 1000\n\n: keep-alive\n\n"), "%s", v);

    sl_buf_reset (&out);
    sl_buf_puts (&out, "event: snapshot\ndata: ");
    sl_live_snapshot (live, &out);
    sl_buf_puts (&out, "\n\n");
    cr_assert_not_null (strstr (sl_buf_cstr (&out), "rm -rf /"));
    sl_buf_reset (&viewer);
    sl_live_redact (sl_buf_str (&out), &viewer);
    v = sl_buf_cstr (&viewer);
    cr_expect_null (strstr (v, "rm -rf"), "%s", v);
    cr_expect_null (strstr (v, "tidy up"), "%s", v);
    cr_expect_not_null (strstr (v, "\"tool\":\"run_shell\""), "%s", v);
    cr_expect_not_null (strstr (v, "\"model\":\"mock-tools\""), "%s", v);
    sl_buf_free (&viewer);
    sl_buf_free (&out);
    sl_live_destroy (&live);
}
