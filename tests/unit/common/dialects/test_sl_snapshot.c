/*  Unit tests: common/dialects/sl_snapshot (the whole message of a stream). */
#include <criterion/criterion.h>

#include "common/dialects/sl_snapshot.h"
#include "tests/unit/recorder.h"

static sl_snapshot_t *snap;

static void
s_setup (void)
{
    snap = sl_snapshot_new ();
}

static void
s_teardown (void)
{
    sl_snapshot_destroy (&snap);
}

static sl_msg_t
s_block (int event, int kind, int index)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, event);
    m.block = (uint8_t) kind;
    m.index = index;
    return m;
}

static void
s_feed (sl_msg_t m)
{
    sl_snapshot_feed (snap, &m);
}

static void
s_json (sl_buf_t *out)
{
    sl_buf_reset (out);
    sl_snapshot_to_json (snap, out);
}

TestSuite (sl_snapshot, .init = s_setup, .fini = s_teardown);

Test (sl_snapshot, a_whole_message_from_its_events)
{
    sl_msg_t m = recorder_msg (SL_MSG_START, 0);
    m.model = sl_str ("asked");
    s_feed (m);
    cr_expect (sl_str_eq (sl_snapshot_model (snap), "asked"), "the requested model until told");
    m = s_block (SL_B_MESSAGE, 0, -1);
    m.id = sl_str ("msg_1");
    m.model = sl_str ("claude-x");
    m.ts = 7;
    s_feed (m);
    m = s_block (SL_B_START, SL_BK_THINKING, 0);
    s_feed (m);
    m = s_block (SL_B_DELTA, SL_BK_THINKING, 0);
    m.text = sl_str ("Hmm");
    s_feed (m);
    m = s_block (SL_B_END, SL_BK_THINKING, 0);
    m.text = sl_str ("Hmm.");
    m.sig = sl_str ("sig");
    s_feed (m);
    m = s_block (SL_B_START, SL_BK_TOOL_CALL, 1);
    m.id = sl_str ("toolu_1");
    m.name = sl_str ("run");
    s_feed (m);
    m = s_block (SL_B_END, SL_BK_TOOL_CALL, 1);
    m.id = sl_str ("toolu_1");
    m.name = sl_str ("run");
    m.text = sl_str ("{\"cmd\":\"ls\"}");
    m.flags = SL_F_ARGS_VALID;
    s_feed (m);
    m = s_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_TOOL_CALLS;
    m.finish_raw = sl_str ("tool_use");
    m.has_usage = true;
    m.usage.input = 10;
    m.usage.output = 5;
    s_feed (m);
    s_feed (recorder_msg (SL_MSG_END, 0));

    cr_expect (sl_str_eq (sl_snapshot_id (snap), "msg_1"));
    cr_expect (sl_str_eq (sl_snapshot_model (snap), "claude-x"));
    cr_expect_eq (sl_snapshot_created (snap), 7);
    cr_assert_eq (sl_snapshot_count (snap), 2);
    sl_snapshot_block_t b;
    cr_assert (sl_snapshot_block (snap, 0, &b));
    cr_expect_eq (b.kind, SL_BK_THINKING);
    cr_expect (sl_str_eq (b.text, "Hmm."), "block_end replaces what the deltas gathered");
    cr_expect (sl_str_eq (b.sig, "sig"));
    cr_expect (b.complete);
    cr_expect_null (b.id.ptr, "absent stays absent");
    cr_assert (sl_snapshot_block (snap, 1, &b));
    cr_expect (sl_str_eq (b.name, "run") && sl_str_eq (b.id, "toolu_1"));
    cr_expect (b.flags & SL_F_ARGS_VALID);
    cr_expect_not (sl_snapshot_block (snap, 2, &b));
    cr_expect_eq (sl_snapshot_finish (snap), SL_FIN_TOOL_CALLS);
    cr_expect (sl_str_eq (sl_snapshot_finish_raw (snap), "tool_use"));
    sl_usage_t u;
    cr_expect (sl_snapshot_usage (snap, &u));
    cr_expect (u.input == 10 && u.output == 5 && u.total == -1);
    cr_expect_not (sl_snapshot_failed (snap));
    cr_expect (sl_snapshot_ended (snap));

    sl_buf_t json = { 0 };
    s_json (&json);
    cr_expect_str_eq (sl_buf_cstr (&json),
        "{\"id\":\"msg_1\",\"model\":\"claude-x\",\"created\":7,\"blocks\":["
        "{\"kind\":\"thinking\",\"index\":0,\"text\":\"Hmm.\",\"signature\":\"sig\"},"
        "{\"kind\":\"tool_call\",\"index\":1,\"id\":\"toolu_1\",\"name\":\"run\","
        "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\",\"args_valid\":true,\"repaired\":false}],"
        "\"finish\":\"tool_calls\",\"finish_raw\":\"tool_use\",\"usage\":{\"input\":10,\"output\":5}}");
    sl_buf_free (&json);
}

Test (sl_snapshot, deltas_alone_build_the_content)
{
    sl_msg_t m = s_block (SL_B_START, SL_BK_TEXT, 0);
    s_feed (m);
    const char *pieces [] = { "a", "b", "c" };
    for (int i = 0; i < 3; i++) {
        m = s_block (SL_B_DELTA, SL_BK_TEXT, 0);
        m.text = sl_str (pieces [i]);
        s_feed (m);
    }
    sl_snapshot_block_t b;
    cr_assert (sl_snapshot_block (snap, 0, &b));
    cr_expect (sl_str_eq (b.text, "abc"));
    cr_expect_not (b.complete, "no block_end yet");
}

Test (sl_snapshot, block_end_without_start_and_replaced_blocks)
{
    sl_msg_t m = s_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("notice");
    m.flags = SL_F_REPLACED;
    s_feed (m);
    m = s_block (SL_B_END, SL_BK_SERVER_TOOL_RESULT, 1);
    m.id = sl_str ("srvtoolu_1");
    m.name = sl_str ("web_search_tool_result");
    m.text = sl_str ("");
    m.body = sl_str ("[{\"url\":\"https://x\"}]");
    s_feed (m);
    m = s_block (SL_B_END, SL_BK_CITATION, 2);
    m.text = sl_str ("");
    m.body = sl_str ("not json");
    m.flags = SL_F_INCOMPLETE;
    s_feed (m);
    sl_buf_t json = { 0 };
    for (size_t i = 0; i < 3; i++) {
        if (i)
            sl_buf_putc (&json, '\n');
        sl_snapshot_block_to_json (snap, i, &json);
    }
    cr_expect_str_eq (sl_buf_cstr (&json),
        "{\"kind\":\"text\",\"index\":0,\"text\":\"notice\",\"replaced\":true}\n"
        "{\"kind\":\"server_tool_result\",\"index\":1,\"id\":\"srvtoolu_1\","
        "\"name\":\"web_search_tool_result\",\"body\":[{\"url\":\"https://x\"}]}\n"
        "{\"kind\":\"citation\",\"index\":2,\"incomplete\":true,\"body\":\"not json\"}");
    sl_buf_free (&json);
}

Test (sl_snapshot, an_error_without_finish_finishes_as_error)
{
    sl_msg_t m = s_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("cut");
    m.flags = SL_F_INCOMPLETE;
    s_feed (m);
    cr_expect_eq (sl_snapshot_finish (snap), SL_FIN_NONE);
    sl_msg_t e = recorder_msg (SL_MSG_ERROR, 0);
    e.code = sl_str ("overloaded_error");
    e.message = sl_str ("Overloaded");
    e.status = 529;
    s_feed (e);
    e.code = sl_str ("second");
    s_feed (e);
    cr_expect (sl_snapshot_failed (snap));
    cr_expect_eq (sl_snapshot_finish (snap), SL_FIN_ERROR);
    cr_expect (sl_str_eq (sl_snapshot_error_code (snap), "overloaded_error"), "the first error counts");
    cr_expect (sl_str_eq (sl_snapshot_error_message (snap), "Overloaded"));
    cr_expect_eq (sl_snapshot_error_status (snap), 529);
    sl_buf_t json = { 0 };
    s_json (&json);
    cr_expect_str_eq (sl_buf_cstr (&json),
        "{\"blocks\":[{\"kind\":\"text\",\"index\":0,\"text\":\"cut\",\"incomplete\":true}],"
        "\"finish\":\"error\",\"error\":{\"code\":\"overloaded_error\",\"message\":\"Overloaded\","
        "\"status\":529}}");
    sl_buf_free (&json);
}

Test (sl_snapshot, start_resets_for_a_replay)
{
    sl_msg_t m = s_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("first epoch");
    s_feed (m);
    s_feed (recorder_msg (SL_MSG_ERROR, 0));
    s_feed (recorder_msg (SL_MSG_START, 0));
    cr_expect_eq (sl_snapshot_count (snap), 0);
    cr_expect_not (sl_snapshot_failed (snap));
    m.text = sl_str ("again");
    s_feed (m);
    sl_snapshot_block_t b;
    cr_assert (sl_snapshot_block (snap, 0, &b));
    cr_expect (sl_str_eq (b.text, "again"));
    cr_expect_null (b.sig.ptr, "a reused slot keeps nothing of its past");
}

Test (sl_snapshot, usage_json_has_only_reported_fields)
{
    sl_usage_t u = { -1, 5, -1, 0, -1, 2 };
    sl_buf_t json = { 0 };
    sl_snapshot_usage_to_json (&u, &json);
    cr_expect_str_eq (sl_buf_cstr (&json), "{\"output\":5,\"cache_read\":0,\"reasoning\":2}");
    sl_buf_free (&json);
}

Test (sl_snapshot, many_blocks_and_verdicts_ignored)
{
    for (int i = 0; i < 100; i++) {
        sl_msg_t m = s_block (SL_B_END, SL_BK_TEXT, i);
        m.text = sl_str ("x");
        s_feed (m);
        s_feed (recorder_msg (SL_MSG_VERDICT, 0));
    }
    cr_expect_eq (sl_snapshot_count (snap), 100);
    sl_snapshot_block_t b;
    cr_assert (sl_snapshot_block (snap, 99, &b));
    cr_expect_eq (b.index, 99);
}
