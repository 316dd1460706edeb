/*  Unit tests: common/stages/sl_judge with a decide rule: the ask carries
    the OPA input built from the stream's START (identity, tools), and
    the service's answer decides the held call (a rewrite is what the
    client gets). The decision service is a fake driven by the test. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>

#include "common/llm/sl_decide.h"
#include "common/stages/sl_judge.h"
#include "tests/unit/recorder.h"

#define MAX_ASKS 4

static sl_judge_t *judge;
static recorder_t rec;
static struct {
    uint64_t tickets [MAX_ASKS];
    char bodies [MAX_ASKS][4096];
    const sl_llm_spec_t *specs [MAX_ASKS];
    int count;
} asks;

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    (void) arg;
    cr_assert_lt (asks.count, MAX_ASKS);
    asks.tickets [asks.count] = ask->ticket;
    asks.specs [asks.count] = ask->spec;
    snprintf (asks.bodies [asks.count], sizeof asks.bodies [0], "%.*s", (int) ask->body.len, ask->body.ptr);
    asks.count++;
    return 0;
}

static void
s_cancel (void *arg, uint64_t ticket)
{
    (void) arg;
    (void) ticket;
}

static void
s_feed (sl_msg_t *m)
{
    sl_judge_feed (judge, m, recorder_emit, &rec);
}

static void
s_setup (void)
{
    const char *yaml = "rules:\n  - id: company\n    tool: run_shell\n"
                       "    decide: {url: 'http://127.0.0.1:1/v1/data/sluice', timeout_ms: 300}\n";
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (yaml, strlen (yaml), "company.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    judge = sl_judge_new (p);
    sl_policy_unref (&p);
    memset (&rec, 0, sizeof rec);
    memset (&asks, 0, sizeof asks);
    sl_judge_set_llm (judge, s_ask, s_cancel, NULL);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.model = sl_str ("gpt-test");
    start.last_user = sl_str ("ship it");
    start.key_id = sl_str ("k_ops");
    start.team = sl_str ("ops");
    start.user = sl_str ("ana");
    start.tools = sl_str ("[{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\",\"properties\":"
                          "{\"command\":{\"type\":\"string\"}}}}]");
    start.history = sl_str ("[{\"name\":\"run_shell\",\"args\":{\"command\":\"git status\"}}]");
    s_feed (&start);
}

static void
s_teardown (void)
{
    sl_judge_destroy (&judge);
    recorder_clear (&rec);
}

TestSuite (sl_judge_decide, .init = s_setup, .fini = s_teardown);

static void
s_call (int index, const char *name, const char *args)
{
    int events [] = { SL_B_START, SL_B_DELTA, SL_B_END };
    for (int i = 0; i < 3; i++) {
        sl_msg_t m = recorder_msg (SL_MSG_BLOCK, events [i]);
        m.block = SL_BK_TOOL_CALL;
        m.index = index;
        m.name = sl_str (i == 1 ? NULL : name);
        m.text = sl_str (i == 0 ? NULL : args);
        m.flags = i == 2 ? SL_F_ARGS_VALID : 0;
        s_feed (&m);
    }
}

static void
s_answer (int ask, const char *body)
{
    sl_llm_result_t r;
    sl_decide_parse_answer (200, sl_str (body), &r);
    sl_judge_llm_done (judge, asks.tickets [ask], &r, recorder_emit, &rec);
    sl_llm_result_clear (&r);
}

//  The last message of a type and block event (0: any), or NULL.
static const sl_msg_t *
s_last (sl_msg_type_t type, int kind)
{
    for (size_t i = rec.count; i-- > 0; )
        if (rec.msgs [i]->type == type && (!kind || rec.msgs [i]->kind == kind))
            return rec.msgs [i];
    return NULL;
}

Test (sl_judge_decide, the_ask_is_the_opa_input_of_the_streams_call)
{
    s_call (0, "run_shell", "{\"command\":\"git push --force\"}");
    cr_assert_eq (asks.count, 1, "the service is asked when the call is complete");
    cr_expect_eq (asks.specs [0]->kind, SL_LLM_DECIDE);
    cr_expect_eq (asks.specs [0]->timeout_ms, 300);
    json_t *root = json_loads (asks.bodies [0], 0, NULL);
    cr_assert_not_null (root, "%s", asks.bodies [0]);
    json_t *input = json_object_get (root, "input");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (input, "identity"), "team")), "ops");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (input, "identity"), "key_id")), "k_ops");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (input, "identity"), "user")), "ana");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (input, "arguments"), "command")),
                      "git push --force");
    cr_expect_str_eq (json_string_value (json_object_get (input, "last_user")), "ship it");
    cr_expect_str_eq (json_string_value (json_object_get (input, "model")), "gpt-test");
    cr_expect_eq (json_array_size (json_object_get (input, "tools")), 1);
    cr_expect_eq (json_array_size (json_object_get (input, "history")), 1);
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (input, "policy"), "file")),
                      "company.yaml");
    json_decref (root);
    cr_expect_null (s_last (SL_MSG_VERDICT, 0), "held until the service answers");
    s_answer (0, "{\"result\":{\"allow\":false,\"reason\":\"force pushes need a ticket\"}}");
    const sl_msg_t *v = s_last (SL_MSG_VERDICT, 0);
    cr_assert_not_null (v);
    cr_expect_eq (v->action, SL_ACT_BLOCK);
    cr_expect_eq (v->check, SL_CHK_RAN);
    cr_expect (sl_str_eq (v->reason, "decision service denied: force pushes need a ticket"));
    cr_expect (isnan (v->probability));
}

Test (sl_judge_decide, a_rewrite_is_what_the_client_gets)
{
    s_call (0, "run_shell", "{\"command\":\"git push --force\"}");
    cr_assert_eq (asks.count, 1);
    s_answer (0, "{\"result\":{\"allow\":true,\"reason\":\"safer\",\"rewrite\":{\"command\":\"git push\"}}}");
    const sl_msg_t *v = s_last (SL_MSG_VERDICT, 0);
    cr_assert_not_null (v);
    cr_expect_eq (v->action, SL_ACT_REWRITE);
    const sl_msg_t *end = s_last (SL_MSG_BLOCK, SL_B_END);
    cr_assert_not_null (end);
    cr_expect (sl_str_eq (end->text, "{\"command\":\"git push\"}"), "%.*s", (int) end->text.len, end->text.ptr);
}
