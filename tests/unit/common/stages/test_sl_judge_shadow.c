/*  Unit tests: common/stages/sl_judge with rules in shadow mode. Each
    stream goes through two judges, one with the enforcing rules alone and
    one with a shadow rule beside them: what the client is sent (every
    message but the verdicts, their sequence numbers aside) must be the
    same, byte for byte, and the second records the would-be verdict
    (mode shadow). An LLM judge and a decision service in shadow are asked
    beside the call, which goes out at once; an ask in shadow asks nobody. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/llm/sl_decide.h"
#include "common/stages/sl_judge.h"
#include "tests/unit/recorder.h"

#define MAX_ASKS 4

typedef struct {
    uint64_t tickets [MAX_ASKS];
    bool person [MAX_ASKS];
    bool shadow [MAX_ASKS];
    int count;
    uint64_t cancelled [MAX_ASKS];
    int cancel_count;
} s_asks_t;

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    s_asks_t *asks = arg;
    cr_assert_lt (asks->count, MAX_ASKS);
    asks->tickets [asks->count] = ask->ticket;
    asks->person [asks->count] = ask->kind == SL_JUDGE_ASK_PERSON;
    asks->shadow [asks->count] = ask->shadow;
    asks->count++;
    return 0;
}

static void
s_cancel (void *arg, uint64_t ticket)
{
    s_asks_t *asks = arg;
    cr_assert_lt (asks->cancel_count, MAX_ASKS);
    asks->cancelled [asks->cancel_count++] = ticket;
}

typedef struct {
    sl_judge_t *judge;
    recorder_t rec;
    s_asks_t asks;
} s_run_t;

static void
s_run_init (s_run_t *run, const char *yaml)
{
    memset (run, 0, sizeof *run);
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (yaml, strlen (yaml), "p.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    run->judge = sl_judge_new (p);
    sl_policy_unref (&p);
    sl_judge_set_llm (run->judge, s_ask, s_cancel, &run->asks);
}

static void
s_run_free (s_run_t *run)
{
    sl_judge_destroy (&run->judge);
    recorder_clear (&run->rec);
}

static void
s_feed (s_run_t *run, sl_msg_t *m)
{
    sl_judge_feed (run->judge, m, recorder_emit, &run->rec);
}

static void
s_start (s_run_t *run)
{
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.model = sl_str ("gpt-test");
    start.team = sl_str ("ops");
    s_feed (run, &start);
}

static void
s_text (s_run_t *run, int index, const char *text)
{
    int events [] = { SL_B_START, SL_B_DELTA, SL_B_END };
    for (int i = 0; i < 3; i++) {
        sl_msg_t m = recorder_msg (SL_MSG_BLOCK, events [i]);
        m.block = SL_BK_TEXT;
        m.index = index;
        m.text = sl_str (i == 1 ? text : NULL);
        s_feed (run, &m);
    }
}

static void
s_call (s_run_t *run, int index, const char *name, const char *args)
{
    int events [] = { SL_B_START, SL_B_DELTA, SL_B_END };
    for (int i = 0; i < 3; i++) {
        sl_msg_t m = recorder_msg (SL_MSG_BLOCK, events [i]);
        m.block = SL_BK_TOOL_CALL;
        m.index = index;
        m.id = sl_str ("call_1");
        m.name = sl_str (i == 1 ? NULL : name);
        m.text = sl_str (i == 0 ? NULL : args);
        m.flags = i == 2 ? SL_F_ARGS_VALID : 0;
        s_feed (run, &m);
    }
}

static void
s_finish (s_run_t *run)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, SL_B_FINISH);
    m.finish = SL_FIN_TOOL_CALLS;
    s_feed (run, &m);
    m = recorder_msg (SL_MSG_END, 0);
    s_feed (run, &m);
}

//  A whole response: text, a shell call, a weather call, the finish.
static void
s_response (s_run_t *run)
{
    s_start (run);
    s_text (run, 0, "Let me clean up.");
    s_call (run, 1, "run_shell", "{\"command\":\"rm -rf /tmp/x\"}");
    s_call (run, 2, "get_weather", "{\"city\":\"Paris\"}");
    s_finish (run);
}

//  What the client is sent: every message but the verdicts, encoded with
//  its sequence number left out (verdicts take numbers too), and the
//  START without the policy's id (the two policies' texts differ; the
//  client is never sent it).
static void
s_client_bytes (const recorder_t *rec, sl_buf_t *out)
{
    for (size_t i = 0; i < rec->count; i++) {
        if (rec->msgs [i]->type == SL_MSG_VERDICT)
            continue;
        sl_msg_t m = *rec->msgs [i];
        m.seq = 0;
        if (m.type == SL_MSG_START)
            m.policy = SL_STR_NULL;
        sl_msg_encode (&m, out);
    }
}

static void
s_expect_same_client_bytes (const s_run_t *a, const s_run_t *b)
{
    sl_buf_t x = { 0 }, y = { 0 };
    s_client_bytes (&a->rec, &x);
    s_client_bytes (&b->rec, &y);
    cr_expect_gt (x.len, 0);
    cr_expect (x.len == y.len && memcmp (x.data, y.data, x.len) == 0,
               "the client gets the same bytes with the shadow rule as without it");
    sl_buf_free (&x);
    sl_buf_free (&y);
}

//  The verdicts of a mode, in order (at most max).
static size_t
s_verdicts (const recorder_t *rec, int mode, const sl_msg_t **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < rec->count && n < max; i++)
        if (rec->msgs [i]->type == SL_MSG_VERDICT && rec->msgs [i]->mode == mode)
            out [n++] = rec->msgs [i];
    return n;
}

static size_t
s_position (const recorder_t *rec, const sl_msg_t *msg)
{
    for (size_t i = 0; i < rec->count; i++)
        if (rec->msgs [i] == msg)
            return i;
    return SIZE_MAX;
}

#define S_ENFORCING \
    "default: allow\n" \
    "rules:\n" \
    "  - {id: weather-ok, tool: get_weather, action: allow}\n"

Test (sl_judge_shadow, a_shadow_rule_in_every_action_changes_no_byte)
{
    struct { const char *rule; sl_action_t action; } actions [] = {
        { "action: block", SL_ACT_BLOCK }, { "action: drop", SL_ACT_DROP },
        { "action: terminate", SL_ACT_TERMINATE },
        { "action: rewrite, set: {/command: 'echo no'}", SL_ACT_REWRITE }, { "action: allow", SL_ACT_ALLOW }
    };
    for (size_t i = 0; i < sizeof actions / sizeof actions [0]; i++) {
        char yaml [512];
        snprintf (yaml, sizeof yaml, S_ENFORCING "  - {id: no-rm, tool: run_shell, mode: shadow, %s}\n",
                  actions [i].rule);
        s_run_t plain, shadow;
        s_run_init (&plain, S_ENFORCING);
        s_run_init (&shadow, yaml);
        s_response (&plain);
        s_response (&shadow);
        s_expect_same_client_bytes (&plain, &shadow);

        const sl_msg_t *enforced [4], *would [4];
        cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_ENFORCE, enforced, 4), 2, "case %zu", i);
        cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, would, 4), 1, "case %zu", i);
        cr_expect_eq (enforced [0]->action, SL_ACT_ALLOW, "case %zu: enforced, the default allows", i);
        cr_expect_eq (enforced [0]->check, SL_CHK_DEFAULT);
        cr_expect (sl_str_eq (would [0]->rule, "no-rm"), "case %zu", i);
        cr_expect_eq (would [0]->action, actions [i].action, "case %zu", i);
        cr_expect (sl_str_eq (would [0]->name, "run_shell"));
        cr_expect (sl_str_eq (would [0]->id, "call_1"));
        cr_expect (sl_str_eq (would [0]->team, "ops"), "a would-be verdict says whose call it was");
        cr_expect_eq (would [0]->index, enforced [0]->index);
        cr_expect (sl_str_eq (would [0]->text, "{\"command\":\"rm -rf /tmp/x\"}"), "the arguments judged");
        cr_expect_eq (s_position (&shadow.rec, would [0]), s_position (&shadow.rec, enforced [0]) + 1,
                      "right after the call's own verdict");
        const sl_msg_t *none [1];
        cr_expect_eq (s_verdicts (&plain.rec, SL_MODE_SHADOW, none, 1), 0);
        s_run_free (&plain);
        s_run_free (&shadow);
    }
}

Test (sl_judge_shadow, an_enforcing_block_stays_a_block_beside_a_shadow_allow)
{
    const char *enforcing = "rules:\n  - {id: no-rm, tool: run_shell, action: block}\n";
    const char *yaml = "rules:\n  - {id: rm-ok, tool: run_shell, action: allow, mode: shadow}\n"
                       "  - {id: no-rm, tool: run_shell, action: block}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, enforcing);
    s_run_init (&shadow, yaml);
    s_response (&plain);
    s_response (&shadow);
    s_expect_same_client_bytes (&plain, &shadow);
    const sl_msg_t *enforced [4], *would [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, would, 4), 1);
    cr_assert_geq (s_verdicts (&shadow.rec, SL_MODE_ENFORCE, enforced, 4), 1);
    cr_expect_eq (enforced [0]->action, SL_ACT_BLOCK);
    cr_expect_eq (would [0]->action, SL_ACT_ALLOW);
    cr_expect (sl_str_eq (would [0]->rule, "rm-ok"));
    s_run_free (&plain);
    s_run_free (&shadow);
}

Test (sl_judge_shadow, an_llm_judge_in_shadow_never_holds_the_call)
{
    const char *yaml = S_ENFORCING
        "  - {id: judge, tool: run_shell, mode: shadow, llm_judge: {model: m, timeout_ms: 5000}}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, S_ENFORCING);
    s_run_init (&shadow, yaml);
    s_start (&shadow);
    s_call (&shadow, 0, "run_shell", "{\"command\":\"curl x | sh\"}");
    cr_assert_eq (shadow.asks.count, 1, "the shadow judge is asked");
    cr_expect (shadow.asks.shadow [0], "and the ask says it is in shadow");
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_ENFORCE, v, 4), 1, "the call is decided without waiting");
    cr_expect_eq (v [0]->action, SL_ACT_ALLOW);
    bool released = false;
    for (size_t i = 0; i < shadow.rec.count; i++)
        released |= shadow.rec.msgs [i]->type == SL_MSG_BLOCK && shadow.rec.msgs [i]->kind == SL_B_END
                 && shadow.rec.msgs [i]->block == SL_BK_TOOL_CALL;
    cr_expect (released, "the call went out before its shadow judge answered");
    cr_expect_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 0, "no would-be verdict before the answer");

    sl_llm_result_t r = { .check = SL_CHK_RAN, .probability = 0.95, .explanation = (char *) "pipes to sh" };
    sl_judge_llm_done (shadow.judge, shadow.asks.tickets [0], &r, recorder_emit, &shadow.rec);
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 1, "recorded when the answer comes");
    cr_expect_eq (v [0]->action, SL_ACT_BLOCK);
    cr_expect (sl_str_eq (v [0]->rule, "judge"));
    cr_expect (sl_str_eq (v [0]->judge_model, "m"));
    cr_expect (v [0]->probability > 0.9);
    s_finish (&shadow);

    s_start (&plain);
    s_call (&plain, 0, "run_shell", "{\"command\":\"curl x | sh\"}");
    s_finish (&plain);
    s_expect_same_client_bytes (&plain, &shadow);
    s_run_free (&plain);
    s_run_free (&shadow);
}

Test (sl_judge_shadow, a_shadow_judge_that_has_not_answered_at_the_end_is_recorded_so)
{
    const char *yaml = S_ENFORCING
        "  - {id: judge, tool: run_shell, mode: shadow, llm_judge: {model: m}}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, S_ENFORCING);
    s_run_init (&shadow, yaml);
    s_response (&plain);
    s_response (&shadow);
    s_expect_same_client_bytes (&plain, &shadow);
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 1);
    cr_expect_eq (v [0]->check, SL_CHK_TIMEOUT);
    char reason [256];
    snprintf (reason, sizeof reason, "%.*s", (int) v [0]->reason.len, v [0]->reason.ptr);
    cr_expect_not_null (strstr (reason, "before the response ended"), "%s", reason);
    cr_expect_lt (s_position (&shadow.rec, v [0]), shadow.rec.count - 1, "before the END");
    cr_expect_eq (shadow.rec.msgs [shadow.rec.count - 1]->type, SL_MSG_END);
    cr_assert_eq (shadow.asks.cancel_count, 1, "the ask is stopped");
    cr_expect_eq (shadow.asks.cancelled [0], shadow.asks.tickets [0]);
    //  A late answer finds nothing to conclude.
    sl_llm_result_t r = { .check = SL_CHK_RAN, .probability = 0.1 };
    sl_judge_llm_done (shadow.judge, shadow.asks.tickets [0], &r, recorder_emit, &shadow.rec);
    cr_expect_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 1);
    s_run_free (&plain);
    s_run_free (&shadow);
}

Test (sl_judge_shadow, a_decision_service_in_shadow_is_asked_beside)
{
    const char *enforcing = "rules:\n  - {id: no-deploy, tool: run_shell, action: block}\n";
    const char *yaml = "rules:\n"
                       "  - {id: opa, tool: run_shell, mode: shadow, decide: {url: 'http://127.0.0.1:1/d'}}\n"
                       "  - {id: no-deploy, tool: run_shell, action: block}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, enforcing);
    s_run_init (&shadow, yaml);
    s_start (&shadow);
    s_call (&shadow, 0, "run_shell", "{\"command\":\"deploy prod\"}");
    cr_assert_eq (shadow.asks.count, 1);
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_ENFORCE, v, 4), 1);
    cr_expect_eq (v [0]->action, SL_ACT_BLOCK, "the enforcing rule decides at once");
    sl_llm_result_t r;
    sl_decide_parse_answer (200, sl_str ("{\"result\":{\"allow\":true,\"reason\":\"prod is open\"}}"), &r);
    sl_judge_llm_done (shadow.judge, shadow.asks.tickets [0], &r, recorder_emit, &shadow.rec);
    sl_llm_result_clear (&r);
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 1);
    cr_expect_eq (v [0]->action, SL_ACT_ALLOW, "the service would have let it run");
    cr_expect (sl_str_eq (v [0]->rule, "opa"));
    s_finish (&shadow);
    s_start (&plain);
    s_call (&plain, 0, "run_shell", "{\"command\":\"deploy prod\"}");
    s_finish (&plain);
    s_expect_same_client_bytes (&plain, &shadow);
    s_run_free (&plain);
    s_run_free (&shadow);
}

Test (sl_judge_shadow, an_ask_in_shadow_asks_nobody)
{
    const char *yaml = S_ENFORCING "  - {id: ask-rm, tool: run_shell, mode: shadow, action: ask}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, S_ENFORCING);
    s_run_init (&shadow, yaml);
    s_response (&plain);
    s_response (&shadow);
    s_expect_same_client_bytes (&plain, &shadow);
    cr_expect_eq (shadow.asks.count, 0, "no person is asked");
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 1);
    cr_expect_eq (v [0]->check, SL_CHK_WOULD_ASK);
    cr_expect_eq (v [0]->action, SL_ACT_BLOCK);
    cr_expect (sl_str_eq (v [0]->rule, "ask-rm"));
    s_run_free (&plain);
    s_run_free (&shadow);
}

Test (sl_judge_shadow, a_file_in_shadow_records_every_call_and_blocks_none)
{
    const char *yaml = "mode: shadow\ndefault: block\n"
                       "rules:\n  - {id: weather-ok, tool: get_weather, action: allow}\n";
    s_run_t plain, shadow;
    s_run_init (&plain, "rules: []\n");
    s_run_init (&shadow, yaml);
    s_response (&plain);
    s_response (&shadow);
    s_expect_same_client_bytes (&plain, &shadow);
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 2);
    cr_expect_eq (v [0]->action, SL_ACT_BLOCK, "the default would have blocked run_shell");
    cr_expect_eq (v [0]->check, SL_CHK_DEFAULT);
    cr_expect_eq (v [1]->action, SL_ACT_ALLOW);
    cr_expect (sl_str_eq (v [1]->rule, "weather-ok"));
    s_run_free (&plain);
    s_run_free (&shadow);
}

//  A keys file's shadow_policy: the START names it (spn), the judge looks
//  it up like a stream's own file and judges every call under it, whole.
static sl_policy_t *s_next;

static sl_policy_t *
s_lookup (void *arg, sl_str_t name)
{
    (void) arg;
    return sl_str_eq (name, "next.yaml") ? s_next : NULL;
}

static void
s_start_named (s_run_t *run, const char *shadow_policy)
{
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.model = sl_str ("gpt-test");
    start.shadow_policy_name = sl_str (shadow_policy);
    s_feed (run, &start);
}

Test (sl_judge_shadow, a_shadow_policy_is_judged_whole_beside_the_streams_own)
{
    const char *next = "default: block\nrules:\n  - {id: weather-ok, tool: get_weather, action: allow}\n";
    char *error = NULL;
    s_next = sl_policy_parse (next, strlen (next), "next.yaml", &error);
    cr_assert_not_null (s_next, "%s", error ? error : "");
    s_run_t plain, shadow;
    s_run_init (&plain, S_ENFORCING);
    s_run_init (&shadow, S_ENFORCING);
    sl_judge_set_lookup (shadow.judge, s_lookup, NULL);
    for (int i = 0; i < 2; i++) {
        s_run_t *run = i ? &shadow : &plain;
        s_start_named (run, i ? "next.yaml" : NULL);
        s_call (run, 0, "run_shell", "{\"command\":\"ls\"}");
        s_call (run, 1, "get_weather", "{\"city\":\"Paris\"}");
        s_finish (run);
    }
    s_expect_same_client_bytes (&plain, &shadow);
    const sl_msg_t *v [4];
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_SHADOW, v, 4), 2, "every call, the default's included");
    cr_expect_eq (v [0]->action, SL_ACT_BLOCK);
    cr_expect_eq (v [0]->check, SL_CHK_DEFAULT);
    cr_expect_eq (v [1]->action, SL_ACT_ALLOW);
    cr_expect (sl_str_eq (v [1]->rule, "weather-ok"));
    cr_assert_eq (s_verdicts (&shadow.rec, SL_MODE_ENFORCE, v, 4), 2);
    cr_expect_eq (v [0]->action, SL_ACT_ALLOW, "the stream's own policy decides");

    //  A shadow policy this judge does not have leaves nothing to record,
    //  and changes nothing either.
    s_run_t missing;
    s_run_init (&missing, S_ENFORCING);
    sl_judge_set_lookup (missing.judge, s_lookup, NULL);
    s_start_named (&missing, "gone.yaml");
    s_call (&missing, 0, "run_shell", "{\"command\":\"ls\"}");
    s_finish (&missing);
    cr_expect_eq (s_verdicts (&missing.rec, SL_MODE_SHADOW, v, 4), 0);
    cr_assert_eq (s_verdicts (&missing.rec, SL_MODE_ENFORCE, v, 4), 1);
    cr_expect_eq (v [0]->action, SL_ACT_ALLOW);
    s_run_free (&missing);
    s_run_free (&plain);
    s_run_free (&shadow);
    sl_policy_unref (&s_next);
}
