/*  Unit tests: services/judge/sl_judge (holding, judging, releasing). */
#include <criterion/criterion.h>

#include "../../services/judge/sl_judge.h"
#include "recorder.h"

static sl_judge_t *judge;
static recorder_t rec;

static const char *s_policy =
    "rules:\n"
    "  - id: no-rm\n"
    "    tool: run_shell\n"
    "    args:\n"
    "      - pointer: /command\n"
    "        regex: 'rm -rf'\n"
    "    action: block\n";

static void
s_setup (void)
{
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (s_policy, strlen (s_policy), "t", &error);
    cr_assert_not_null (p);
    judge = sl_judge_new (p);
    sl_policy_unref (&p);
    memset (&rec, 0, sizeof rec);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    sl_judge_feed (judge, &start, recorder_emit, &rec);
}

static void
s_teardown (void)
{
    sl_judge_destroy (&judge);
    recorder_clear (&rec);
}

TestSuite (sl_judge, .init = s_setup, .fini = s_teardown);

static void
s_block (int event, int kind, int index, const char *name, const char *text, uint32_t flags)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, event);
    m.block = (uint8_t) kind;
    m.index = index;
    m.name = sl_str (name);
    m.text = sl_str (text);
    m.flags = flags;
    sl_judge_feed (judge, &m, recorder_emit, &rec);
}

static void
s_call (int index, const char *name, const char *args)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, index, name, NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, index, NULL, args, 0);
    s_block (SL_B_END, SL_BK_TOOL_CALL, index, name, args, SL_F_ARGS_VALID);
}

static void
s_finish (int finish)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, SL_B_FINISH);
    m.finish = (uint8_t) finish;
    m.finish_raw = sl_str ("tool_calls");
    sl_judge_feed (judge, &m, recorder_emit, &rec);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    sl_judge_feed (judge, &end, recorder_emit, &rec);
}

Test (sl_judge, text_passes_at_once)
{
    s_block (SL_B_START, SL_BK_TEXT, 0, NULL, NULL, 0);
    cr_expect_eq (rec.count, 2, "start + block_start out immediately");
    s_block (SL_B_DELTA, SL_BK_TEXT, 0, NULL, "hi", 0);
    cr_expect_eq (rec.count, 3);
}

Test (sl_judge, tool_call_held_until_complete_then_allowed)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"city\":", 0);
    cr_expect_eq (rec.count, 1, "nothing of the call leaves before its end");
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "get_weather", "{\"city\":\"Paris\"}", SL_F_ARGS_VALID);
    cr_assert_eq (rec.count, 5);
    cr_expect_eq (rec.msgs [1]->type, SL_MSG_VERDICT, "verdict before the released call");
    cr_expect_eq (rec.msgs [1]->action, SL_ACT_ALLOW);
    cr_expect_eq (rec.msgs [1]->check, SL_CHK_DEFAULT);
    cr_expect_eq (rec.msgs [2]->kind, SL_B_START);
    cr_expect_eq (rec.msgs [4]->kind, SL_B_END);
    cr_expect (sl_str_eq (rec.msgs [4]->text, "{\"city\":\"Paris\"}"));
}

Test (sl_judge, blocked_call_replaced_and_finish_fixed)
{
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    //  start, verdict, text start/delta/end, finish, end
    cr_assert_eq (rec.count, 7);
    cr_expect_eq (rec.msgs [1]->type, SL_MSG_VERDICT);
    cr_expect_eq (rec.msgs [1]->action, SL_ACT_BLOCK);
    cr_expect (sl_str_eq (rec.msgs [1]->rule, "no-rm"));
    cr_expect (sl_str_eq (rec.msgs [1]->name, "run_shell"));
    cr_expect_eq (rec.msgs [2]->block, SL_BK_TEXT);
    cr_expect (rec.msgs [2]->flags & SL_F_REPLACED);
    cr_expect_not_null (strstr (rec.msgs [3]->text.ptr, "run_shell"), "notice names the tool");
    cr_expect_not_null (strstr (rec.msgs [3]->text.ptr, "no-rm"), "notice names the rule");
    cr_expect_eq (rec.msgs [5]->finish, SL_FIN_STOP, "no call left: stop");
    cr_expect_null (rec.msgs [5]->finish_raw.ptr);
    cr_expect_eq (sl_judge_streams (judge), 0);
}

Test (sl_judge, finish_kept_when_a_call_remains)
{
    s_call (0, "get_weather", "{\"city\":\"Paris\"}");
    s_call (1, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    sl_msg_t *fin = rec.msgs [rec.count - 2];
    cr_expect_eq (fin->kind, SL_B_FINISH);
    cr_expect_eq (fin->finish, SL_FIN_TOOL_CALLS);
    for (size_t i = 0; i < rec.count; i++)
        cr_expect_eq (rec.msgs [i]->seq, i);
}

Test (sl_judge, events_after_a_held_call_wait_behind_it)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "f", NULL, 0);
    s_block (SL_B_START, SL_BK_TEXT, 1, NULL, NULL, 0);     //  would jump the queue
    cr_expect_eq (rec.count, 1);
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "f", "{}", SL_F_ARGS_VALID);
    cr_assert_eq (rec.count, 5);
    cr_expect_eq (rec.msgs [4]->block, SL_BK_TEXT, "the text comes after the call");
}

Test (sl_judge, error_discards_an_open_call)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    sl_judge_feed (judge, &err, recorder_emit, &rec);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    sl_judge_feed (judge, &end, recorder_emit, &rec);
    cr_assert_eq (rec.count, 3);
    cr_expect_eq (rec.msgs [1]->type, SL_MSG_ERROR);
    cr_expect_eq (rec.msgs [2]->type, SL_MSG_END);
}
