/*  Unit tests: shadow mode (common/policy): mode: on a rule and on a
    file, what sl_policy_decide enforces beside a shadow rule, and the
    would-be decision sl_policy_decide_shadow gives, in every action, with
    an LLM judge, a decision service and an ask. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/llm/sl_llm.h"
#include "common/policy/sl_policy.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  The would-be decision for call: true when there is one.
static bool
s_shadow (sl_policy_t *p, sl_call_t call, bool whole, sl_decision_t *d)
{
    return sl_policy_decide_shadow (p, &call, whole, d);
}

//  --------------------------------------------------------------------------
//  Reading mode

Test (sl_policy_shadow, mode_is_enforce_or_shadow)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: a, tool: x, action: block, mode: shadow}\n"
                                "  - {id: b, tool: y, action: block, mode: enforce}\n"
                                "  - {id: c, tool: z, action: block}\n");
    cr_expect_eq (sl_policy_shadow_count (p), 1);
    cr_expect_not (sl_policy_is_shadow (p));
    sl_policy_unref (&p);
    p = pf_policy ("mode: shadow\nrules:\n  - {id: a, tool: x, action: block}\n");
    cr_expect (sl_policy_is_shadow (p));
    cr_expect_eq (sl_policy_shadow_count (p), 1, "a file in shadow has its rules in shadow");
    sl_policy_unref (&p);
    p = pf_policy ("mode: enforce\nrules:\n  - {id: a, tool: x, action: block}\n");
    cr_expect_not (sl_policy_is_shadow (p));
    cr_expect_eq (sl_policy_shadow_count (p), 0);
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, other_values_are_refused_at_their_place)
{
    struct { const char *yaml; const char *expect; } cases [] = {
        { "rules:\n  - {id: a, action: block, mode: monitor}\n",
          "p.yaml:2:34: mode must be enforce or shadow, not 'monitor'" },
        { "mode: [shadow]\nrules: []\n", "p.yaml:1:7: mode must be enforce or shadow, not 'a collection'" },
        { "mode: Shadow\n", "p.yaml:1:7: mode must be enforce or shadow, not 'Shadow'" },
        { "rules:\n  - {id: a, on: request, action: terminate, mode: shadow}\n",
          "p.yaml:2:5: rule 'a': mode: shadow judges tool calls of the response; a rule on: request is enforced" },
        { "rules:\n  - {id: a, on: text, action: allow, mode: shadow}\n",
          "p.yaml:2:5: rule 'a': mode: shadow judges tool calls of the response; a rule on: text is enforced" },
        { "mode: shadow\nrules:\n  - {id: a, action: block}\n  - {id: b, on: request, action: terminate}\n",
          "p.yaml:1:7: mode: shadow judges tool calls of the response; rule 'b' is on: request, which is "
          "enforced (move it to a file in mode enforce)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = pf_refused (cases [i].yaml);
        cr_expect_str_eq (error ? error : "(parsed)", cases [i].expect, "case %zu", i);
        free (error);
    }
}

//  --------------------------------------------------------------------------
//  A shadow rule beside an enforcing one, in every action

Test (sl_policy_shadow, a_shadow_rule_decides_nothing_and_says_what_it_would_have)
{
    struct { const char *rule; sl_action_t action; } cases [] = {
        { "action: block", SL_ACT_BLOCK },
        { "action: drop", SL_ACT_DROP },
        { "action: terminate", SL_ACT_TERMINATE },
        { "action: rewrite, set: {/command: 'echo no'}", SL_ACT_REWRITE },
        { "action: allow", SL_ACT_ALLOW },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char yaml [512];
        snprintf (yaml, sizeof yaml,
                  "default: allow\n"
                  "rules:\n"
                  "  - {id: new, tool: run_shell, args: [{pointer: /command, prefix: rm}], mode: shadow, %s}\n"
                  "  - {id: old, tool: run_shell, args: [{pointer: /command, prefix: rm}], action: drop}\n"
                  "  - {id: other, tool: get_weather, action: block}\n", cases [i].rule);
        sl_policy_t *p = pf_policy (yaml);
        sl_call_t call = pf_call ("run_shell", "{\"command\":\"rm -rf /\"}");
        sl_decision_t d = pf_decide (p, call);
        cr_expect_eq (d.action, SL_ACT_DROP, "case %zu: the enforcing rule decides", i);
        cr_expect_str_eq (d.rule, "old", "case %zu", i);
        sl_decision_clear (&d);
        cr_assert (s_shadow (p, call, false, &d), "case %zu: the shadow rule would have decided", i);
        cr_expect_eq (d.action, cases [i].action, "case %zu", i);
        cr_expect_str_eq (d.rule, "new", "case %zu", i);
        cr_expect_eq (d.check, SL_CHK_RAN, "case %zu", i);
        if (cases [i].action == SL_ACT_REWRITE)
            cr_expect_str_eq (d.arguments, "{\"command\":\"echo no\"}");
        if (cases [i].action == SL_ACT_BLOCK)
            cr_expect_not_null (d.message, "the notice it would have sent");
        sl_decision_clear (&d);
        //  A call the shadow rule does not match has no would-be verdict:
        //  the enforcing rules decide it as they would anyway.
        cr_expect_not (s_shadow (p, pf_call ("get_weather", "{}"), false, &d), "case %zu", i);
        cr_expect_null (d.rule);
        sl_decision_clear (&d);
        cr_expect_not (s_shadow (p, pf_call ("run_shell", "{\"command\":\"ls\"}"), false, &d), "case %zu", i);
        sl_decision_clear (&d);
        sl_policy_unref (&p);
    }
}

Test (sl_policy_shadow, an_enforcing_rule_before_the_shadow_one_leaves_it_nothing_to_say)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: first, tool: run_shell, action: allow}\n"
                                "  - {id: new, tool: run_shell, action: block, mode: shadow}\n");
    sl_decision_t d;
    cr_expect_not (s_shadow (p, pf_call ("run_shell", "{}"), false, &d),
                   "first decides whether or not new is enforced");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, without_shadow_rules_there_is_nothing_to_record_unless_whole)
{
    sl_policy_t *p = pf_policy ("default: block\nrules:\n  - {id: a, tool: x, action: allow}\n");
    sl_decision_t d;
    cr_expect_not (s_shadow (p, pf_call ("x", "{}"), false, &d));
    sl_decision_clear (&d);
    //  A policy run wholly in shadow (a keys file's shadow_policy): every
    //  call has its would-be verdict, the default's included.
    cr_assert (s_shadow (p, pf_call ("x", "{}"), true, &d));
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_str_eq (d.rule, "a");
    sl_decision_clear (&d);
    cr_assert (s_shadow (p, pf_call ("y", "{}"), true, &d));
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_DEFAULT);
    cr_expect_null (d.rule);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

//  --------------------------------------------------------------------------
//  A file in shadow

Test (sl_policy_shadow, a_file_in_shadow_enforces_neither_rules_nor_default)
{
    sl_policy_t *p = pf_policy ("mode: shadow\n"
                                "default: block\n"
                                "on_incomplete: terminate\n"
                                "rules:\n"
                                "  - {id: no-rm, tool: run_shell, args: [{pointer: /command, prefix: rm}], "
                                "action: block}\n");
    sl_decision_t d = pf_decide (p, pf_call ("run_shell", "{\"command\":\"rm -rf /\"}"));
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_null (d.rule);
    sl_decision_clear (&d);
    d = pf_decide (p, pf_call ("get_weather", "{}"));
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the default is in shadow too");
    sl_decision_clear (&d);
    d = pf_decide (p, pf_cut_call ("run_shell", "{\"command\":\"ls", SL_CUT_LENGTH));
    cr_expect_eq (d.action, SL_ACT_ALLOW, "and so is on_incomplete");
    sl_decision_clear (&d);
    d = pf_decide (p, pf_cut_call ("run_shell", "{\"command\":\"ls", SL_CUT_SIZE));
    cr_expect_eq (d.action, SL_ACT_BLOCK, "a call over a size bound is never released, shadow or not");
    sl_decision_clear (&d);

    cr_assert (s_shadow (p, pf_call ("run_shell", "{\"command\":\"rm -rf /\"}"), false, &d));
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_str_eq (d.rule, "no-rm");
    sl_decision_clear (&d);
    cr_assert (s_shadow (p, pf_call ("get_weather", "{}"), false, &d), "every call of a file in shadow");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_DEFAULT);
    sl_decision_clear (&d);
    cr_assert (s_shadow (p, pf_cut_call ("run_shell", "{\"command\":\"ls", SL_CUT_LENGTH), false, &d));
    cr_expect_eq (d.action, SL_ACT_TERMINATE);
    cr_expect_str_eq (d.rule, "on_incomplete");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, a_shadow_rule_lists_no_tool_as_blocked)
{
    sl_policy_t *p = pf_policy ("rules:\n  - {id: a, tool: deploy, action: block, mode: shadow}\n");
    cr_expect_not (sl_policy_blocks_tool (p, SL_STR_LIT ("deploy"), SL_STR_NULL));
    sl_policy_unref (&p);
    p = pf_policy ("rules:\n  - {id: a, tool: deploy, action: block}\n");
    cr_expect (sl_policy_blocks_tool (p, SL_STR_LIT ("deploy"), SL_STR_NULL), "(the same rule enforced does)");
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, on_incomplete_counts_enforcing_rules_only)
{
    //  A shadow rule about run_shell does not make a cut-off call to it a
    //  call "some rule concerns": the default decides, as without it.
    sl_policy_t *p = pf_policy ("default: allow\n"
                                "rules:\n  - {id: a, tool: run_shell, action: block, mode: shadow}\n");
    sl_decision_t d = pf_decide (p, pf_cut_call ("run_shell", "{\"command\":\"ls", SL_CUT_LENGTH));
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_null (d.rule);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

//  --------------------------------------------------------------------------
//  An LLM judge, a decision service, an ask

Test (sl_policy_shadow, an_llm_judge_in_shadow_is_pending_and_concludes_as_enforced)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: judge, tool: run_shell, llm_judge: {model: m, threshold: 0.5}, "
                                "mode: shadow}\n"
                                "  - {id: ok, tool: run_shell, action: allow}\n");
    sl_call_t call = pf_call ("run_shell", "{\"command\":\"curl x | sh\"}");
    sl_decision_t d = pf_decide (p, call);
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the call is decided at once, the judge not awaited");
    cr_expect_str_eq (d.rule, "ok");
    cr_expect_eq (d.llm_rule, -1);
    sl_decision_clear (&d);

    cr_assert (s_shadow (p, call, false, &d));
    cr_expect_eq (d.action, SL_ACT_NONE, "pending: the judge is asked beside");
    cr_expect_eq (d.llm_rule, 0);
    cr_expect_str_eq (d.judge_model, "m");
    sl_llm_result_t harmful = { .check = SL_CHK_RAN, .probability = 0.9, .explanation = (char *) "pipes to sh" };
    sl_policy_conclude (p, &call, &harmful, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_str_eq (d.rule, "judge");
    cr_expect (fabs (d.probability - 0.9) < 1e-9);
    sl_decision_clear (&d);

    cr_assert (s_shadow (p, call, false, &d));
    sl_llm_result_t timeout = { 0 };
    sl_llm_result_fail (&timeout, SL_CHK_TIMEOUT, "no answer in 5000 ms");
    sl_policy_conclude (p, &call, &timeout, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK, "on_error, as enforced");
    cr_expect_eq (d.check, SL_CHK_TIMEOUT);
    sl_llm_result_clear (&timeout);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, a_decision_service_in_shadow_is_pending_and_concludes_as_enforced)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: opa, tool: deploy, decide: {url: 'http://127.0.0.1:1/d'}, mode: shadow}\n"
                                "  - {id: no-deploy, tool: deploy, action: block}\n");
    sl_call_t call = pf_call ("deploy", "{\"env\":\"prod\"}");
    sl_decision_t d = pf_decide (p, call);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_str_eq (d.rule, "no-deploy");
    sl_decision_clear (&d);
    cr_assert (s_shadow (p, call, false, &d));
    cr_expect_eq (d.action, SL_ACT_NONE);
    cr_expect_eq (d.llm_rule, 0);
    sl_llm_result_t allow = { .check = SL_CHK_RAN, .allow = true, .explanation = (char *) "prod is open" };
    sl_policy_conclude (p, &call, &allow, &d);
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the service would have let it run");
    cr_expect_str_eq (d.rule, "opa");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_shadow, an_ask_in_shadow_asks_nobody)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: ask-deploy, tool: deploy, action: ask, mode: shadow}\n");
    sl_call_t call = pf_call ("deploy", "{}");
    sl_decision_t d = pf_decide (p, call);
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the call is not held for a person");
    cr_expect_eq (d.llm_rule, -1);
    sl_decision_clear (&d);
    cr_assert (s_shadow (p, call, false, &d));
    cr_expect_eq (d.check, SL_CHK_WOULD_ASK);
    cr_expect_eq (d.action, SL_ACT_BLOCK, "what a denial would do");
    cr_expect_eq (d.llm_rule, -1, "final: nothing to conclude");
    cr_expect_str_eq (d.rule, "ask-deploy");
    cr_expect_not_null (strstr (d.reason, "nobody was asked"), "%s", d.reason);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}
