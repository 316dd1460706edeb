/*  Unit tests: common/stages/sl_judge (holding, judging in parallel,
    releasing in order, actions on the stream, LLM asks, keep-alives,
    re-sends). Time and the LLM judge are fakes driven by the test. */
#include <criterion/criterion.h>
#include <math.h>

#include "common/stages/sl_judge.h"
#include "tests/unit/recorder.h"

#define MAX_ASKS 16

static sl_judge_t *judge;
static recorder_t rec;
static int64_t now_us;                  //  the fake clock

static struct {
    uint64_t tickets [MAX_ASKS];
    char bodies [MAX_ASKS][2048];
    int count;
    uint64_t cancelled [MAX_ASKS];
    int cancel_count;
    bool refuse;                        //  the next asks cannot start
    int kinds [MAX_ASKS];               //  sl_judge_ask_kind_t
    char digests [MAX_ASKS][SL_ASK_DIGEST_SIZE];
    char context [MAX_ASKS][512];       //  a person's ask: "team/user/key tool args | message"
} asks;

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return now_us;
}

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    (void) arg;
    if (ask->kind == SL_JUDGE_ASK_LLM)
        cr_assert_not_null (ask->spec, "an ask names its judge");
    else
        cr_assert (ask->person && ask->digest, "a person's ask names its rule and the call's digest");
    if (asks.refuse)
        return -1;
    cr_assert_lt (asks.count, MAX_ASKS);
    asks.tickets [asks.count] = ask->ticket;
    asks.kinds [asks.count] = ask->kind;
    snprintf (asks.bodies [asks.count], sizeof asks.bodies [0], "%.*s", (int) ask->body.len, ask->body.ptr);
    if (ask->kind == SL_JUDGE_ASK_PERSON) {
        snprintf (asks.digests [asks.count], SL_ASK_DIGEST_SIZE, "%s", ask->digest);
        snprintf (asks.context [asks.count], sizeof asks.context [0], "%.*s/%.*s/%.*s %.*s %.*s | %.*s",
                  (int) ask->team.len, ask->team.ptr, (int) ask->user.len, ask->user.ptr,
                  (int) ask->key_id.len, ask->key_id.ptr, (int) ask->tool.len, ask->tool.ptr,
                  (int) ask->arguments.len, ask->arguments.ptr, (int) ask->message.len, ask->message.ptr);
    }
    asks.count++;
    return 0;
}

static void
s_cancel (void *arg, uint64_t ticket)
{
    (void) arg;
    cr_assert_lt (asks.cancel_count, MAX_ASKS);
    asks.cancelled [asks.cancel_count++] = ticket;
}

static const char *s_policy =
    "rules:\n"
    "  - id: no-rm\n"
    "    tool: run_shell\n"
    "    args:\n"
    "      - pointer: /command\n"
    "        regex: 'rm -rf'\n"
    "    action: block\n"
    "  - id: quiet\n"
    "    tool: telemetry\n"
    "    action: drop\n"
    "  - id: safe\n"
    "    tool: write_file\n"
    "    action: rewrite\n"
    "    set: {/mode: '0644'}\n"
    "  - id: stop-exfil\n"
    "    tool: upload\n"
    "    action: terminate\n"
    "  - id: judged\n"
    "    tool: [judged, judged2]\n"
    "    llm_judge: {url: 'http://127.0.0.1:1/v1/chat/completions', model: judge-m, threshold: 0.5}\n"
    "  - id: judged-lenient\n"
    "    tool: lenient\n"
    "    llm_judge: {url: 'http://127.0.0.1:1/v1/chat/completions', model: judge-l, on_error: allow}\n"
    "  - id: approve-deploy\n"
    "    tool: deploy\n"
    "    action: ask\n"
    "    ask: {message: '{user} deploys {arguments}'}\n";

static sl_policy_t *
s_parse (const char *yaml)
{
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (yaml, strlen (yaml), "t", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    return p;
}

static void
s_feed (sl_msg_t *m)
{
    sl_judge_feed (judge, m, recorder_emit, &rec);
}

static void
s_start (uint32_t epoch)
{
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.epoch = epoch;
    start.model = sl_str ("gpt-test");
    start.last_user = sl_str ("please tidy up");
    start.team = sl_str ("eng");
    start.user = sl_str ("bob");
    start.key_id = sl_str ("k-bob");
    s_feed (&start);
}

static void
s_setup (void)
{
    sl_policy_t *p = s_parse (s_policy);
    judge = sl_judge_new (p);
    sl_policy_unref (&p);
    memset (&rec, 0, sizeof rec);
    memset (&asks, 0, sizeof asks);
    now_us = 1000;
    sl_judge_set_clock (judge, s_clock, NULL);
    sl_judge_set_llm (judge, s_ask, s_cancel, NULL);
    s_start (0);
}

static void
s_teardown (void)
{
    sl_judge_destroy (&judge);
    recorder_clear (&rec);
}

TestSuite (sl_judge, .init = s_setup, .fini = s_teardown);

static void
s_block_ep (uint32_t epoch, int event, int kind, int index, const char *name, const char *text, uint32_t flags)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, event);
    m.epoch = epoch;
    m.block = (uint8_t) kind;
    m.index = index;
    m.name = sl_str (name);
    m.text = sl_str (text);
    m.flags = flags;
    s_feed (&m);
}

static void
s_block (int event, int kind, int index, const char *name, const char *text, uint32_t flags)
{
    s_block_ep (0, event, kind, index, name, text, flags);
}

static void
s_call_ep (uint32_t epoch, int index, const char *name, const char *args)
{
    s_block_ep (epoch, SL_B_START, SL_BK_TOOL_CALL, index, name, NULL, 0);
    s_block_ep (epoch, SL_B_DELTA, SL_BK_TOOL_CALL, index, NULL, args, 0);
    s_block_ep (epoch, SL_B_END, SL_BK_TOOL_CALL, index, name, args, SL_F_ARGS_VALID);
}

static void
s_call (int index, const char *name, const char *args)
{
    s_call_ep (0, index, name, args);
}

static void
s_text (int index, const char *text)
{
    s_block (SL_B_START, SL_BK_TEXT, index, NULL, NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TEXT, index, NULL, text, 0);
    s_block (SL_B_END, SL_BK_TEXT, index, NULL, text, 0);
}

static void
s_finish_ep (uint32_t epoch, int finish)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, SL_B_FINISH);
    m.epoch = epoch;
    m.finish = (uint8_t) finish;
    m.finish_raw = sl_str ("raw");
    s_feed (&m);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    end.epoch = epoch;
    s_feed (&end);
}

static void
s_finish (int finish)
{
    s_finish_ep (0, finish);
}

static void
s_answer (int ask, double p)
{
    sl_llm_result_t r = { .check = SL_CHK_RAN, .probability = p, .explanation = (char *) "because" };
    sl_judge_llm_done (judge, asks.tickets [ask], &r, recorder_emit, &rec);
}

static void
s_fail (int ask, sl_check_t check)
{
    sl_llm_result_t r = { 0 };
    sl_llm_result_fail (&r, check, check == SL_CHK_TIMEOUT ? "no answer within 5000 ms" : "garbage");
    sl_judge_llm_done (judge, asks.tickets [ask], &r, recorder_emit, &rec);
    sl_llm_result_clear (&r);
}

//  The output as a compact trace: V=verdict(action), S/D/E=block start,
//  delta, end with the kind's first letter and index, F=finish, X=error,
//  Z=end, K=keep-alive. E.g. "V(allow) St0 Dt0 Et0 F(stop) Z".
static const char *
s_trace (size_t from)
{
    static char out [2048];
    size_t n = 0;
    out [0] = 0;
    for (size_t i = from; i < rec.count && n < sizeof out - 64; i++) {
        const sl_msg_t *m = rec.msgs [i];
        if (m->type == SL_MSG_VERDICT)
            n += (size_t) snprintf (out + n, sizeof out - n, "V%d(%s) ", m->index, sl_action_name (m->action));
        else
        if (m->type == SL_MSG_BLOCK && m->kind == SL_B_FINISH)
            n += (size_t) snprintf (out + n, sizeof out - n, "F(%s) ", sl_finish_name (m->finish));
        else
        if (m->type == SL_MSG_BLOCK && m->kind == SL_B_KEEPALIVE)
            //  K: shown to the client; k: a liveness beat only
            n += (size_t) snprintf (out + n, sizeof out - n, (m->flags & SL_F_KEEPALIVE) ? "K " : "k ");
        else
        if (m->type == SL_MSG_BLOCK)
            n += (size_t) snprintf (out + n, sizeof out - n, "%c%c%d ", "?MSDEFK" [m->kind],
                                    m->block == SL_BK_TOOL_CALL ? 'c' : 't', m->index);
        else
            n += (size_t) snprintf (out + n, sizeof out - n, "%s ",
                                    m->type == SL_MSG_ERROR ? "X" : m->type == SL_MSG_END ? "Z" : "A");
    }
    if (n)
        out [n - 1] = 0;
    return out;
}

static const sl_msg_t *
s_nth_verdict (int k)
{
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == SL_MSG_VERDICT && k-- == 0)
            return rec.msgs [i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Holding and passing

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
    now_us += 7;
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "get_weather", "{\"city\":\"Paris\"}", SL_F_ARGS_VALID);
    cr_assert_eq (rec.count, 5);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Dc0 Ec0");
    cr_expect_eq (rec.msgs [1]->check, SL_CHK_DEFAULT);
    cr_expect (sl_str_eq (rec.msgs [4]->text, "{\"city\":\"Paris\"}"));
    cr_expect (isnan (rec.msgs [1]->probability), "no judge, no probability");
    cr_expect_null (rec.msgs [1]->judge_model.ptr);
}

Test (sl_judge, events_after_a_held_call_wait_behind_it)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "f", NULL, 0);
    s_block (SL_B_START, SL_BK_TEXT, 1, NULL, NULL, 0);     //  would jump the queue
    cr_expect_eq (rec.count, 1);
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "f", "{}", SL_F_ARGS_VALID);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Ec0 St1");
}

Test (sl_judge, sequence_numbers_are_contiguous)
{
    s_text (0, "hi");
    s_call (1, "get_weather", "{}");
    s_call (2, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    for (size_t i = 0; i < rec.count; i++)
        cr_expect_eq (rec.msgs [i]->seq, i);
    cr_expect_eq (sl_judge_streams (judge), 0, "the stream is freed at its end");
}

//  --------------------------------------------------------------------------
//  Actions on the stream

Test (sl_judge, block_replaces_the_call_and_fixes_the_finish)
{
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    cr_expect (sl_str_eq (rec.msgs [1]->rule, "no-rm"));
    cr_expect (sl_str_eq (rec.msgs [1]->name, "run_shell"));
    cr_expect_eq (rec.msgs [1]->check, SL_CHK_RAN);
    cr_expect (rec.msgs [2]->flags & SL_F_REPLACED);
    cr_expect (rec.msgs [4]->flags & SL_F_REPLACED);
    cr_expect_not_null (strstr (rec.msgs [3]->text.ptr, "run_shell"), "notice names the tool");
    cr_expect_not_null (strstr (rec.msgs [3]->text.ptr, "no-rm"), "notice names the rule");
    cr_expect_null (rec.msgs [5]->finish_raw.ptr, "the raw finish no longer applies");
}

Test (sl_judge, monitoring_learns_the_policy_and_the_arguments_judged)
{
    //  The start names the stream's policy; the verdict carries what it judged.
    cr_assert_eq (rec.msgs [0]->type, SL_MSG_START);
    cr_expect (sl_str_eq (rec.msgs [0]->policy, sl_policy_id (sl_judge_policy (judge))));
    cr_expect_eq (rec.msgs [0]->policy.len, SL_POLICY_ID_SIZE - 1);
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_assert_not_null (v);
    cr_expect (sl_str_eq (v->text, "{\"command\":\"rm -rf /\"}"), "the arguments, for the audit trail");
}

//  The text of the replacement's block_end, the k-th one.
static sl_str_t
s_notice (int k)
{
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == SL_MSG_BLOCK && rec.msgs [i]->kind == SL_B_END
        &&  (rec.msgs [i]->flags & SL_F_REPLACED) && k-- == 0)
            return rec.msgs [i]->text;
    return SL_STR_NULL;
}

Test (sl_judge, a_notice_after_text_starts_a_paragraph_of_its_own)
{
    //  Clients join the text of one answer: the notice must not glue onto
    //  the sentence before it, nor onto another notice.
    s_text (0, "I'll run a shell command.");
    s_call (1, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_call (2, "run_shell", "{\"command\":\"rm -rf ~\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    sl_str_t first = s_notice (0), second = s_notice (1);
    cr_assert_not_null (first.ptr);
    cr_assert_not_null (second.ptr);
    cr_expect (first.len > 2 && memcmp (first.ptr, "\n\nsluice blocked", 16) == 0, "%.*s",
               (int) first.len, first.ptr);
    cr_expect (second.len > 2 && memcmp (second.ptr, "\n\nsluice blocked", 16) == 0, "%.*s",
               (int) second.len, second.ptr);
    //  The deltas say the same as the ends.
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == SL_MSG_BLOCK && rec.msgs [i]->kind == SL_B_DELTA && rec.msgs [i]->index == 1)
            cr_expect (sl_str_eq (rec.msgs [i]->text, "\n\nsluice blocked a call to the tool \"run_shell\" "
                                                      "(policy rule no-rm)."),
                       "%.*s", (int) rec.msgs [i]->text.len, rec.msgs [i]->text.ptr);
}

Test (sl_judge, a_notice_first_or_after_a_paragraph_adds_no_line_ends)
{
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_text (1, "Done.\n\n");
    s_call (2, "run_shell", "{\"command\":\"rm -rf ~\"}");
    s_text (3, "Line\n");
    s_call (4, "run_shell", "{\"command\":\"rm -rf /tmp\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect (sl_str_eq (s_notice (0), "sluice blocked a call to the tool \"run_shell\" (policy rule no-rm)."));
    cr_expect (sl_str_eq (s_notice (1), "sluice blocked a call to the tool \"run_shell\" (policy rule no-rm)."));
    cr_expect (sl_str_eq (s_notice (2), "\nsluice blocked a call to the tool \"run_shell\" (policy rule no-rm)."));
}

Test (sl_judge, finish_kept_when_a_call_remains_or_reason_is_not_tool_calls)
{
    s_call (0, "get_weather", "{}");
    s_call (1, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Dc0 Ec0 V1(block) St1 Dt1 Et1 F(tool_calls) Z");
    recorder_clear (&rec);
    s_start (0);
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_finish (SL_FIN_LENGTH);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(length) Z", "length stays length");
}

Test (sl_judge, drop_removes_the_call_and_closes_up_indices)
{
    s_text (0, "a");
    s_call (1, "telemetry", "{}");
    s_call (2, "get_weather", "{}");
    s_call (3, "telemetry", "{}");
    s_text (4, "b");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0 V1(drop) V1(allow) Sc1 Dc1 Ec1 V2(drop) St2 Dt2 Et2 "
                                   "F(tool_calls) Z");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect (sl_str_eq (v->rule, "quiet"));
    recorder_clear (&rec);
    //  Every call dropped: nothing is left to call, so the finish is stop.
    s_start (0);
    s_call (0, "telemetry", "{}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(drop) F(stop) Z");
}

Test (sl_judge, rewrite_releases_the_rewritten_arguments)
{
    s_call (0, "write_file", "{\"path\":\"/tmp/x\",\"mode\":\"0777\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(rewrite) Sc0 Dc0 Ec0 F(tool_calls) Z");
    cr_expect (sl_str_eq (rec.msgs [3]->text, "{\"path\":\"/tmp/x\",\"mode\":\"0644\"}"),
               "one fragment with the new arguments");
    cr_expect (sl_str_eq (rec.msgs [4]->text, "{\"path\":\"/tmp/x\",\"mode\":\"0644\"}"));
    cr_expect (sl_str_eq (rec.msgs [4]->name, "write_file"));
    cr_expect (rec.msgs [4]->flags & SL_F_ARGS_VALID);
}

Test (sl_judge, terminate_ends_the_response_with_an_error)
{
    s_text (0, "a");
    s_call (1, "upload", "{}");
    s_call (2, "judged", "{}");             //  an ask that will never matter
    cr_expect_eq (asks.count, 0, "the terminate decision came first; nothing was asked yet");
    size_t mark = rec.count;
    s_text (3, "after");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_eq (rec.count, mark, "everything after is swallowed");
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0 V1(terminate) X Z");
    const sl_msg_t *err = rec.msgs [rec.count - 2];
    cr_expect (sl_str_eq (err->code, "policy_violation"));
    cr_expect_eq (err->status, 403);
    cr_expect_not_null (strstr (err->message.ptr, "upload"));
    cr_expect_eq (sl_judge_streams (judge), 0, "freed once the input ended");
}

Test (sl_judge, terminate_cancels_asks_in_flight)
{
    s_call (0, "judged", "{}");
    s_call (1, "judged2", "{}");
    s_call (2, "upload", "{}");
    cr_assert_eq (asks.count, 2);
    cr_expect_eq (sl_judge_pending (judge), 2);
    s_answer (0, 0.1);
    s_answer (1, 0.1);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Dc0 Ec0 V1(allow) Sc1 Dc1 Ec1 V2(terminate) X Z");
    recorder_clear (&rec);
    //  Now a terminate ahead of a pending ask: the ask is cancelled.
    s_start (0);
    s_call (0, "upload", "{}");
    cr_expect_eq (sl_judge_streams (judge), 1, "waits for the input's end");
    s_call (1, "judged", "{}");
    cr_expect_eq (asks.count, 2, "a terminated stream asks nothing more");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_eq (sl_judge_streams (judge), 0);
}

//  --------------------------------------------------------------------------
//  Failing closed: calls that did not end cleanly

//  An error of the stream with this code, then its end.
static void
s_error_end (const char *code)
{
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str (code);
    err.message = sl_str ("it broke");
    s_feed (&err);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    s_feed (&end);
}

//  A call's block_end flagged INCOMPLETE, the cut in its code (NULL: none).
static void
s_cut_end (int index, const char *name, const char *args, const char *code)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, SL_B_END);
    m.block = SL_BK_TOOL_CALL;
    m.index = index;
    m.name = sl_str (name);
    m.text = sl_str (args);
    m.flags = SL_F_INCOMPLETE;
    m.code = sl_str (code);
    s_feed (&m);
}

//  Does any message emitted so far carry needle in its text?
static bool
s_emitted_text (const char *needle)
{
    for (size_t i = 0; i < rec.count; i++) {
        //  A verdict carries the arguments it judged, for the audit trail;
        //  the emitter never renders a verdict for the client.
        if (rec.msgs [i]->type == SL_MSG_VERDICT)
            continue;
        sl_str_t t = rec.msgs [i]->text;
        if (t.ptr && memmem (t.ptr, t.len, needle, strlen (needle)))
            return true;
    }
    return false;
}

static void
s_expect_reason (const sl_msg_t *v, const char *needle)
{
    cr_assert_not_null (v);
    cr_expect (v->reason.ptr && memmem (v->reason.ptr, v->reason.len, needle, strlen (needle)),
               "reason '%.*s' has '%s'", (int) v->reason.len, v->reason.ptr ? v->reason.ptr : "", needle);
}

Test (sl_judge, an_open_call_at_an_error_is_judged_before_it)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"command\":\"rm -rf /\"}", 0);
    s_error_end ("upstream_incomplete");
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 X Z", "a verdict, the notice, then the error");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect (sl_str_eq (v->rule, "no-rm"), "the arguments as far as they came match the rule");
    s_expect_reason (v, "cut off (eof)");
    cr_expect_not (s_emitted_text ("rm -rf"), "nothing of the call leaves");
    cr_expect_eq (sl_judge_streams (judge), 0);
}

Test (sl_judge, an_open_call_at_the_end_is_judged_as_cut_off)
{
    //  An END with a call still open (no error before it): cut, eof.
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"command\":\"ls\"}", 0);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    s_feed (&end);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 Z");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect (sl_str_eq (v->rule, "on_incomplete"), "run_shell is a tool the policy concerns");
    cr_expect_eq (v->check, SL_CHK_DEFAULT);
    s_expect_reason (v, "cut off (eof)");
    cr_expect_not (s_emitted_text ("\"ls\""));
    cr_expect_eq (sl_judge_streams (judge), 0, "the stream is over, not stuck behind the call");
}

Test (sl_judge, a_call_ended_incomplete_is_judged_with_its_cut)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"command\":\"ls\"}", 0);
    s_cut_end (0, "run_shell", "{\"command\":\"ls\"}", "length");
    s_finish (SL_FIN_LENGTH);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(length) Z");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect (sl_str_eq (v->rule, "on_incomplete"));
    s_expect_reason (v, "cut off (length)");
    cr_expect (s_emitted_text ("the model's call was cut off (length) and cannot be judged"), "the notice");
    recorder_clear (&rec);
    //  INCOMPLETE without a reason: cut all the same (error).
    s_start (0);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_cut_end (0, "run_shell", "{}", NULL);
    s_finish (SL_FIN_STOP);
    s_expect_reason (s_nth_verdict (0), "cut off (error)");
    cr_expect_eq (s_nth_verdict (0)->action, SL_ACT_BLOCK);
    recorder_clear (&rec);
    //  Arguments that are not whole JSON at a clean end: invalid.
    s_start (0);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "run_shell", "{\"command\":", 0);
    s_finish (SL_FIN_TOOL_CALLS);
    s_expect_reason (s_nth_verdict (0), "cut off (invalid)");
    cr_expect_eq (s_nth_verdict (0)->action, SL_ACT_BLOCK);
}

Test (sl_judge, an_incomplete_call_to_a_tool_no_rule_concerns_takes_the_default)
{
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"city\":\"Par", 0);
    s_cut_end (0, "get_weather", "{\"city\":\"Par", "length");
    s_finish (SL_FIN_LENGTH);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Dc0 Ec0 F(length) Z", "allowed, as it came");
    cr_expect (rec.msgs [4]->flags & SL_F_INCOMPLETE, "still marked cut off");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_DEFAULT);
    s_expect_reason (s_nth_verdict (0), "no rule matched; the call was cut off (length)");
}

Test (sl_judge, a_call_over_the_bound_is_judged_on_its_first_bytes_and_never_released)
{
    sl_judge_set_max_call_bytes (judge, 24);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "run_shell", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"command\":\"rm -rf / ", 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "PADDING PADDING PADDING", 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "PADDING\"}", 0);
    cr_expect_eq (rec.count, 1, "held");
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "run_shell", "{\"command\":\"rm -rf / PADDING PADDING PADDING"
             "PADDING\"}", SL_F_ARGS_VALID);
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect (sl_str_eq (v->rule, "no-rm"), "the bound's worth shows rm -rf");
    s_expect_reason (v, "cut off (size)");
    cr_expect_not (s_emitted_text ("PADDING"));
    recorder_clear (&rec);

    //  A tool no rule concerns, allowed by the default: blocked all the
    //  same, since what passed the bound was not kept.
    s_start (0);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"city\":\"PADDING PADDING PADDING PADDING\"}", 0);
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "get_weather", "{\"city\":\"PADDING PADDING PADDING PADDING\"}",
             SL_F_ARGS_VALID);
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    s_expect_reason (s_nth_verdict (0), "never released");
    cr_expect_not (s_emitted_text ("PADDING"));
    recorder_clear (&rec);

    //  Whole arguments in the end only (no fragments), over the bound.
    s_start (0);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_END, SL_BK_TOOL_CALL, 0, "get_weather", "{\"city\":\"PADDING PADDING PADDING PADDING\"}",
             SL_F_ARGS_VALID);
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    cr_expect_not (s_emitted_text ("PADDING"));
    recorder_clear (&rec);

    //  Still open over the bound when the stream fails: size, not the error.
    s_start (0);
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"city\":\"PADDING PADDING PADDING PADDING", 0);
    s_error_end ("overloaded_error");
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 X Z");
    s_expect_reason (s_nth_verdict (0), "cut off (size)");
    cr_expect_not (s_emitted_text ("PADDING"));

    //  Within the bound, nothing changes.
    recorder_clear (&rec);
    s_start (0);
    s_call (0, "get_weather", "{\"city\":\"Paris\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(allow) Sc0 Dc0 Ec0 F(tool_calls) Z");
}

Test (sl_judge, a_stream_cut_for_size_judges_its_open_call_as_such)
{
    //  The aggregator's stream_too_large: the call it closed says size.
    s_block (SL_B_START, SL_BK_TOOL_CALL, 0, "get_weather", NULL, 0);
    s_block (SL_B_DELTA, SL_BK_TOOL_CALL, 0, NULL, "{\"city\":\"Paris\"}", 0);
    s_cut_end (0, "get_weather", "{\"city\":\"Paris\"}", "size");
    s_error_end ("stream_too_large");
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 X Z");
    s_expect_reason (s_nth_verdict (0), "never released");
    cr_expect_not (s_emitted_text ("Paris"));
}

Test (sl_judge, error_behind_a_complete_call_waits_for_its_verdict)
{
    s_call (0, "judged", "{}");
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    s_feed (&err);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    s_feed (&end);
    cr_expect_eq (rec.count, 1);
    s_answer (0, 0.9);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 X Z");
    cr_expect_eq (sl_judge_streams (judge), 0);
}

//  --------------------------------------------------------------------------
//  LLM judges: parallel asks, ordered release, honest failures

Test (sl_judge, calls_are_judged_in_parallel_and_released_in_order)
{
    s_text (0, "a");
    now_us = 10000;
    s_call (1, "judged", "{\"slow\":true}");
    s_block (SL_B_START, SL_BK_TEXT, 2, NULL, NULL, 0);
    s_block (SL_B_END, SL_BK_TEXT, 2, NULL, "between", 0);
    now_us = 11000;
    s_call (3, "judged2", "{\"fast\":true}");
    s_call (4, "get_weather", "{}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_assert_eq (asks.count, 2, "both calls asked at once, without waiting for each other");
    cr_expect_not_null (strstr (asks.bodies [0], "slow"), "%s", asks.bodies [0]);
    cr_expect_not_null (strstr (asks.bodies [0], "please tidy up"), "the last user message is in the prompt");
    cr_expect_not_null (strstr (asks.bodies [1], "fast"));
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0", "the rest waits behind the first held call");

    now_us = 11500;
    s_answer (1, 0.9);                      //  the fast one answers first: blocked
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0", "still in order: call 1 is not decided");
    now_us = 15000;
    s_answer (0, 0.2);                      //  the slow one: allowed
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0 V1(allow) Sc1 Dc1 Ec1 St2 Et2 V3(block) St3 Dt3 Et3 "
                                   "V4(allow) Sc4 Dc4 Ec4 F(tool_calls) Z");
    const sl_msg_t *slow = s_nth_verdict (0), *fast = s_nth_verdict (1);
    cr_expect (sl_str_eq (slow->judge_model, "judge-m"));
    cr_expect_float_eq (slow->probability, 0.2, 1e-9);
    cr_expect_eq (slow->latency_us, 5000, "from the call's end to the answer");
    cr_expect_eq (fast->latency_us, 500);
    cr_expect_float_eq (fast->probability, 0.9, 1e-9);
    cr_expect_eq (fast->check, SL_CHK_RAN);
    cr_expect_not_null (strstr (fast->reason.ptr, "because"), "the judge's explanation is on record");
    cr_expect_eq (sl_judge_pending (judge), 0);
    cr_expect_eq (sl_judge_streams (judge), 0);
}

Test (sl_judge, timeout_takes_the_fail_mode_and_says_so)
{
    s_call (0, "judged", "{}");                 //  on_error: block (the default)
    s_call (1, "lenient", "{}");                //  on_error: allow
    s_fail (0, SL_CHK_TIMEOUT);
    s_fail (1, SL_CHK_TIMEOUT);
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 V1(allow) Sc1 Dc1 Ec1 F(tool_calls) Z");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_TIMEOUT);
    cr_expect_eq (s_nth_verdict (1)->check, SL_CHK_TIMEOUT, "allowed, but never recorded as a pass");
    cr_expect (sl_str_eq (s_nth_verdict (1)->judge_model, "judge-l"));
    cr_expect (isnan (s_nth_verdict (1)->probability));
}

Test (sl_judge, judge_errors_take_the_fail_mode_and_say_so)
{
    s_call (0, "judged", "{}");
    s_fail (0, SL_CHK_ERROR);
    asks.refuse = true;
    s_call (1, "lenient", "{}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 V1(allow) Sc1 Dc1 Ec1 F(tool_calls) Z");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_ERROR);
    cr_expect_eq (s_nth_verdict (1)->check, SL_CHK_ERROR, "an ask that could not start");
    cr_expect_not_null (strstr (s_nth_verdict (1)->reason.ptr, "could not be started"));
}

Test (sl_judge, without_a_judge_client_the_check_fails)
{
    sl_judge_set_llm (judge, NULL, NULL, NULL);
    s_call (0, "judged", "{}");
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_ERROR);
}

Test (sl_judge, unknown_and_repeated_outcomes_are_ignored)
{
    s_call (0, "judged", "{}");
    s_answer (0, 0.1);
    size_t n = rec.count;
    s_answer (0, 0.9);                          //  the same ticket again
    sl_llm_result_t r = { .check = SL_CHK_RAN, .probability = 0.9 };
    sl_judge_llm_done (judge, 999, &r, recorder_emit, &rec);
    cr_expect_eq (rec.count, n);
}

//  --------------------------------------------------------------------------
//  Keep-alives

Test (sl_judge, keepalive_while_a_call_is_held)
{
    sl_judge_set_keepalive (judge, 1000000);
    s_text (0, "a");
    sl_judge_tick (judge, recorder_emit, &rec);
    size_t n = rec.count;
    now_us += 5000000;
    sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect_eq (rec.count, n, "nothing held: no keep-alive");
    s_call (1, "judged", "{}");
    now_us += SL_JUDGE_LIVENESS_US - 1;
    sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect_eq (rec.count, n, "no beat of either kind due yet");
    now_us += 999999 - (SL_JUDGE_LIVENESS_US - 1);
    sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect_str_eq (s_trace (n), "k", "a liveness beat before the client's keep-alive is due");
    now_us += 1;
    sl_judge_tick (judge, recorder_emit, &rec);
    now_us += 1000000;
    sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect_str_eq (s_trace (n), "k K K");
    cr_expect_eq (rec.msgs [n]->seq, n, "a keep-alive takes no sequence number");
    s_answer (0, 0.0);
    cr_expect_eq (rec.msgs [rec.count - 1]->seq, n + 3, "the verdict numbered as if no keep-alive went out");
}

Test (sl_judge, no_clock_no_keepalive)
{
    sl_judge_set_clock (judge, NULL, NULL);
    s_call (0, "judged", "{}");
    size_t n = rec.count;
    for (int i = 0; i < 3; i++)
        sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect_eq (rec.count, n);
    s_answer (0, 0.0);
    cr_expect_eq (s_nth_verdict (0)->latency_us, 0, "time stands at 0");
}

//  --------------------------------------------------------------------------
//  Policies and re-sends

Test (sl_judge, streams_keep_the_policy_they_started_with)
{
    sl_policy_t *allow = sl_policy_allow_all ();
    sl_judge_set_policy (judge, allow);
    sl_policy_unref (&allow);
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    cr_expect_eq (s_nth_verdict (0)->action, SL_ACT_BLOCK, "the old policy still applies");
    s_finish (SL_FIN_TOOL_CALLS);
    recorder_clear (&rec);
    s_start (0);
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    cr_expect_eq (s_nth_verdict (0)->action, SL_ACT_ALLOW, "a new stream gets the new policy");
}

Test (sl_judge, a_resend_reuses_decisions_and_asks_in_flight)
{
    s_call (0, "judged", "{\"a\":1}");
    s_answer (0, 0.9);                          //  blocked, and the client saw it
    s_call (1, "judged2", "{\"b\":2}");         //  asked, no answer yet
    cr_assert_eq (asks.count, 2);
    //  The stream is re-sent from the start in epoch 1.
    recorder_clear (&rec);
    sl_policy_t *allow = sl_policy_allow_all ();
    sl_judge_set_policy (judge, allow);         //  a reload in between changes nothing
    sl_policy_unref (&allow);
    s_start (1);
    s_call_ep (1, 0, "judged", "{\"a\":1}");
    s_call_ep (1, 1, "judged2", "{\"b\":2}");
    s_finish_ep (1, SL_FIN_TOOL_CALLS);
    cr_expect_eq (asks.count, 2, "nothing asked twice");
    cr_expect_eq (asks.cancel_count, 0, "the ask in flight carries over");
    cr_expect_str_eq (s_trace (0), "A V0(block) St0 Dt0 Et0");
    cr_expect_eq (rec.msgs [0]->epoch, 1);
    s_answer (1, 0.1);
    cr_expect_str_eq (s_trace (0), "A V0(block) St0 Dt0 Et0 V1(allow) Sc1 Dc1 Ec1 F(tool_calls) Z");
    for (size_t i = 0; i < rec.count; i++)
        cr_expect_eq (rec.msgs [i]->seq, i, "the re-send is numbered from 0");
}

Test (sl_judge, a_resend_with_another_call_is_judged_afresh)
{
    s_call (0, "judged", "{\"a\":1}");
    cr_assert_eq (asks.count, 1);
    s_start (1);
    s_call_ep (1, 0, "judged", "{\"a\":2}");
    cr_expect_eq (asks.count, 2, "different arguments: a new ask");
    cr_expect_eq (asks.cancel_count, 1, "and the old one is not wanted");
    cr_expect_eq (asks.cancelled [0], asks.tickets [0]);
}

Test (sl_judge, old_epochs_are_dropped_and_streams_freed_with_their_asks)
{
    s_call (0, "judged", "{}");
    s_start (2);
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, SL_B_START);
    m.epoch = 1;
    size_t n = rec.count;
    s_feed (&m);
    cr_expect_eq (rec.count, n);
    cr_expect_eq (sl_judge_dropped (judge), 1);
    //  A new epoch without its START cannot be judged: the stream goes,
    //  and so do its asks.
    m.epoch = 3;
    s_feed (&m);
    cr_expect_eq (sl_judge_streams (judge), 0);
    cr_expect_eq (asks.cancel_count, 1);
    cr_expect_eq (sl_judge_pending (judge), 0);
}

Test (sl_judge, an_index_repeated_in_one_epoch_gets_its_own_decision)
{
    //  Malformed input (indices are unique per epoch), handled without
    //  letting one call out under another's verdict.
    s_call (0, "run_shell", "{\"command\":\"rm -rf /\"}");
    s_call (0, "get_weather", "{}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 V0(allow) Sc0 Dc0 Ec0 F(tool_calls) Z");
    cr_expect (sl_str_eq (s_nth_verdict (0)->name, "run_shell"));
    cr_expect (sl_str_eq (s_nth_verdict (1)->name, "get_weather"));
}

//  --------------------------------------------------------------------------
//  Asking a person

//  A person's outcome for ask k.
static void
s_person (int k, sl_check_t check, const char *approver, const char *comment)
{
    sl_llm_result_t r = { .check = check, .probability = NAN, .approver = (char *) approver,
                          .explanation = (char *) comment, .approval = (char *) "a1" };
    sl_judge_llm_done (judge, asks.tickets [k], &r, recorder_emit, &rec);
}

Test (sl_judge, a_person_is_asked_and_the_call_waits)
{
    s_text (0, "deploying");
    s_call (1, "deploy", "{ \"env\": \"prod\" }");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_assert_eq (asks.count, 1);
    cr_expect_eq (asks.kinds [0], SL_JUDGE_ASK_PERSON);
    cr_expect_str_eq (asks.context [0], "eng/bob/k-bob deploy { \"env\": \"prod\" } | bob deploys { \"env\": \"prod\" }");
    char digest [SL_ASK_DIGEST_SIZE];
    sl_ask_digest (sl_str ("deploy"), sl_str ("{\"env\":\"prod\"}"), sl_policy_id (sl_judge_policy (judge)), digest);
    cr_expect_str_eq (asks.digests [0], digest, "bound to the call and the policy version");
    cr_expect_str_eq (s_trace (1), "St0 Dt0 Et0", "nothing of the call, nor what follows it");
    now_us += 60 * 1000000;
    sl_judge_tick (judge, recorder_emit, &rec);
    cr_expect (strstr (s_trace (1), "K"), "the client is kept alive while a person decides");
    size_t before = rec.count;
    s_person (0, SL_CHK_APPROVED, "alice@platform", "go");
    cr_expect_str_eq (s_trace (before), "V1(allow) Sc1 Dc1 Ec1 F(tool_calls) Z");
    const sl_msg_t *v = s_nth_verdict (0);
    cr_expect_eq (v->check, SL_CHK_APPROVED);
    cr_expect (sl_str_eq (v->approver, "alice@platform"));
    cr_expect (sl_str_eq (v->reason, "approved by alice@platform: go"));
    cr_expect (sl_str_eq (v->rule, "approve-deploy"));
    cr_expect (sl_str_eq (v->team, "eng"));
    cr_expect_geq (v->latency_us, 60 * 1000000, "the wait is the verdict's latency");
}

Test (sl_judge, a_denied_call_is_replaced_by_the_notice)
{
    s_call (0, "deploy", "{\"env\":\"prod\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    s_person (0, SL_CHK_DENIED, "alice@platform", "not now");
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_DENIED);
    cr_expect (strstr (s_notice (0).ptr, "not approved"), "%.*s", (int) s_notice (0).len, s_notice (0).ptr);
}

Test (sl_judge, a_person_who_cannot_be_asked_blocks)
{
    asks.refuse = true;
    s_call (0, "deploy", "{\"env\":\"prod\"}");
    s_finish (SL_FIN_TOOL_CALLS);
    cr_expect_str_eq (s_trace (1), "V0(block) St0 Dt0 Et0 F(stop) Z");
    cr_expect_eq (s_nth_verdict (0)->check, SL_CHK_ERROR);
    cr_expect (strstr (s_nth_verdict (0)->reason.ptr, "could not be started"));
}

Test (sl_judge, a_stream_that_goes_cancels_its_person_ask)
{
    s_call (0, "deploy", "{\"env\":\"prod\"}");
    cr_assert_eq (asks.count, 1);
    //  The stream fails before anyone decides: the call is judged as cut
    //  already, the ask is given up.
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("client_cancelled");
    s_feed (&err);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    s_feed (&end);
    cr_expect_eq (sl_judge_streams (judge), 1, "held behind the call");
    s_person (0, SL_CHK_ERROR, NULL, NULL);
    cr_expect_eq (sl_judge_streams (judge), 0);
    cr_expect_eq (s_nth_verdict (0)->action, SL_ACT_BLOCK);
}
