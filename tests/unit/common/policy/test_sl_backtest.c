/*  Tests of sl_backtest: a new policy judged against recorded verdicts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/policy/sl_backtest.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  The new policy: rm -rf now blocked, curl now allowed (was blocked by
//  the old one), deploy rewritten, transfers asked, email LLM-judged,
//  payments decided by a service.
static const char *S_NEW =
    "default: allow\n"
    "rules:\n"
    "  - id: no-rm-rf\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}]\n"
    "    action: block\n"
    "  - id: pin-region\n"
    "    tool: deploy\n"
    "    action: rewrite\n"
    "    set: {/region: eu-west-1}\n"
    "  - id: person\n"
    "    tool: transfer\n"
    "    action: ask\n"
    "  - id: judged\n"
    "    tool: send_email\n"
    "    llm_judge: {model: m, threshold: 0.5}\n"
    "  - id: company\n"
    "    tool: payment\n"
    "    decide: {url: 'http://127.0.0.1:1/v1/data/x'}\n";

//  What recorded the verdicts: the same judges, other rules.
static const char *S_OLD =
    "default: allow\n"
    "rules:\n"
    "  - id: no-curl\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: curl}]\n"
    "    action: block\n"
    "  - id: judged\n"
    "    tool: send_email\n"
    "    llm_judge: {model: m, threshold: 0.9}\n"
    "  - id: company\n"
    "    tool: payment\n"
    "    decide: {url: 'http://127.0.0.1:1/v1/data/x'}\n";

static sl_backtest_call_t
s_rec (const char *tool, const char *args, const char *action, const char *rule, const char *check)
{
    sl_backtest_call_t rec = {
        .call = pf_call (tool, args),
        .sid = sl_str ("0123456789abcdef0123456789abcdef"),
        .at = 1700000000000,
        .action = sl_str (action),
        .rule = rule ? sl_str (rule) : SL_STR_NULL,
        .check = sl_str (check),
        .probability = NAN,
    };
    rec.call.team = sl_str ("eng");
    return rec;
}

Test (backtest, each_difference_lands_in_its_category)
{
    sl_policy_t *p = pf_policy (S_NEW);
    sl_backtest_t *b = sl_backtest_new (p, 5);
    sl_backtest_call_t rec;
    rec = s_rec ("run_shell", "{\"command\":\"rm -rf /\"}", "allow", NULL, "default");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEWLY_BLOCKED);
    rec = s_rec ("run_shell", "{\"command\":\"curl x\"}", "block", "no-curl", "ran");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEWLY_ALLOWED);
    rec = s_rec ("deploy", "{\"region\":\"us\"}", "allow", NULL, "default");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_REWRITTEN);
    rec = s_rec ("transfer", "{}", "allow", NULL, "default");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_ASKED);
    rec = s_rec ("transfer", "{}", "allow", "person", "approved");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_SAME, "asked before too");
    rec = s_rec ("get_weather", "{}", "allow", NULL, "default");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_SAME);
    rec = s_rec ("run_shell", "{\"command\":\"rm -rf /\"}", "drop", "old", "ran");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_SAME, "blocked both times");
    rec = s_rec ("send_email", "{}", "allow", NULL, "default");
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEEDS_JUDGE, "no recorded answer");
    cr_expect_eq (sl_backtest_calls (b), 8);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_NEWLY_BLOCKED), 1);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_NEWLY_ALLOWED), 1);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_REWRITTEN), 1);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_ASKED), 1);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_NEEDS_JUDGE), 1);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_SAME), 3);
    sl_backtest_destroy (&b);
    sl_backtest_destroy (&b);
    sl_policy_unref (&p);
}

Test (backtest, recorded_answers_are_reused_for_the_same_question_only)
{
    sl_policy_t *p = pf_policy (S_NEW);
    sl_policy_t *old = pf_policy (S_OLD);
    sl_backtest_t *b = sl_backtest_new (p, 5);
    //  p = 0.7 allowed under the old threshold (0.9), blocked under the new (0.5).
    sl_backtest_call_t rec = s_rec ("send_email", "{\"to\":\"x\"}", "allow", "judged", "ran");
    rec.probability = 0.7;
    rec.recorded_policy = old;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEWLY_BLOCKED);
    //  The same without the recorded policy: not known to be the same question.
    rec.recorded_policy = NULL;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEEDS_JUDGE);
    //  A judge that did not run has no answer to reuse.
    rec = s_rec ("send_email", "{}", "block", "judged", "timeout");
    rec.recorded_policy = old;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEEDS_JUDGE);
    //  A decision service's recorded deny and allow are taken as they were.
    rec = s_rec ("payment", "{}", "block", "company", "ran");
    rec.recorded_policy = old;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_SAME);
    rec = s_rec ("payment", "{}", "allow", "company", "ran");
    rec.recorded_policy = old;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_SAME);
    sl_backtest_destroy (&b);

    //  Another prompt is another question.
    sl_policy_t *other = pf_policy ("rules:\n  - id: judged\n    tool: send_email\n"
                                    "    llm_judge: {model: m, prompt: 'is {tool} ok?'}\n");
    b = sl_backtest_new (p, 5);
    rec = s_rec ("send_email", "{}", "allow", "judged", "ran");
    rec.probability = 0.7;
    rec.recorded_policy = other;
    cr_expect_eq (sl_backtest_add (b, &rec), SL_BACKTEST_NEEDS_JUDGE);
    sl_backtest_destroy (&b);
    sl_policy_unref (&other);
    sl_policy_unref (&old);
    sl_policy_unref (&p);
}

Test (backtest, the_json_has_the_counts_the_tables_and_the_examples)
{
    sl_policy_t *p = pf_policy (S_NEW);
    sl_backtest_t *b = sl_backtest_new (p, 2);
    for (int i = 0; i < 3; i++) {
        sl_backtest_call_t rec = s_rec ("run_shell", "{\"command\":\"rm -rf /\"}", "allow", NULL, "default");
        sl_backtest_add (b, &rec);
    }
    sl_backtest_call_t rec = s_rec ("run_shell", "{\"command\":\"curl x\"}", "block", "no-curl", "ran");
    rec.call.team = SL_STR_NULL;
    sl_backtest_add (b, &rec);
    rec = s_rec ("get_weather", "{}", "allow", NULL, "default");
    sl_backtest_add (b, &rec);
    sl_buf_t out = { 0 };
    sl_backtest_json (b, &out);
    json_error_t err;
    json_t *j = json_loads (sl_buf_cstr (&out), 0, &err);
    cr_assert_not_null (j, "%s: %s", err.text, sl_buf_cstr (&out));
    cr_expect_eq (json_integer_value (json_object_get (j, "calls")), 5);
    json_t *changed = json_object_get (j, "changed");
    cr_expect_eq (json_integer_value (json_object_get (changed, "newly_blocked")), 3);
    cr_expect_eq (json_integer_value (json_object_get (changed, "newly_allowed")), 1);
    cr_expect_eq (json_integer_value (json_object_get (changed, "rewritten")), 0);
    cr_expect_eq (json_integer_value (json_object_get (changed, "asked")), 0);
    cr_expect_eq (json_integer_value (json_object_get (j, "unchanged")), 1);
    json_t *rule = json_object_get (json_object_get (j, "by_rule"), "no-rm-rf");
    cr_expect_eq (json_integer_value (json_object_get (rule, "newly_blocked")), 3);
    json_t *def = json_object_get (json_object_get (j, "by_rule"), "(default)");
    cr_expect_eq (json_integer_value (json_object_get (def, "newly_allowed")), 1, "%s", sl_buf_cstr (&out));
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (json_object_get (j, "by_team"), "eng"),
                                                       "newly_blocked")), 3);
    cr_expect_not_null (json_object_get (json_object_get (j, "by_team"), "(none)"));
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (json_object_get (j, "by_tool"),
                                                                       "run_shell"), "newly_allowed")), 1);
    cr_expect_null (json_object_get (json_object_get (j, "by_tool"), "get_weather"), "only what changes");
    json_t *ex = json_object_get (j, "examples");
    cr_assert_eq (json_array_size (ex), 3, "two of one kind at most, and the other: %s", sl_buf_cstr (&out));
    json_t *first = json_array_get (ex, 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "kind")), "newly_blocked");
    cr_expect_str_eq (json_string_value (json_object_get (first, "sid")), "0123456789abcdef0123456789abcdef");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (first, "now"), "rule")), "no-rm-rf");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (first, "recorded"), "action")), "allow");
    cr_expect (json_is_null (json_object_get (json_object_get (first, "recorded"), "rule")));
    json_decref (j);
    sl_buf_reset (&out);
    sl_backtest_text (b, &out);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "5 calls judged again"), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "no-rm-rf"));
    sl_buf_free (&out);
    sl_backtest_destroy (&b);
    sl_policy_unref (&p);
}
