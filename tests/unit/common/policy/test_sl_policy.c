/*  Unit tests: common/policy/sl_policy (the model's life cycle, what a
    policy says about itself, decisions, notices, an LLM judge's outcome). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy/sl_policy_impl.h"
#include "tests/unit/common/policy/policy_fixture.h"

Test (sl_policy, reference_counting)
{
    sl_policy_t *p = sl_policy_allow_all ();
    sl_policy_t *q = sl_policy_ref (p);
    sl_policy_unref (&p);
    cr_expect_str_eq (sl_policy_name (q), "(allow all)", "still alive after one unref");
    sl_policy_unref (&q);
}

Test (sl_policy, id_is_the_text_digest)
{
    sl_policy_t *a = pf_policy ("default: allow\n");
    sl_policy_t *b = pf_policy ("default: allow\n");
    sl_policy_t *c = pf_policy ("default: block\n");
    sl_policy_t *none = sl_policy_allow_all ();
    cr_expect_eq (strlen (sl_policy_id (a)), SL_POLICY_ID_SIZE - 1);
    cr_expect_str_eq (sl_policy_id (a), sl_policy_id (b), "the same text, the same id");
    cr_expect_str_neq (sl_policy_id (a), sl_policy_id (c));
    cr_expect_str_eq (sl_policy_id (none), SL_POLICY_ALLOW_ALL_ID);
    sl_policy_unref (&a);
    sl_policy_unref (&b);
    sl_policy_unref (&c);
    sl_policy_unref (&none);
}

Test (sl_policy, allow_all_has_no_rules_and_allows)
{
    sl_policy_t *p = sl_policy_allow_all ();
    cr_expect_str_eq (sl_policy_name (p), "(allow all)");
    cr_expect_str_eq (sl_policy_id (p), SL_POLICY_ALLOW_ALL_ID);
    cr_expect_not_null (sl_policy_source (p).ptr);
    cr_expect_eq (sl_policy_source (p).len, 0);
    cr_expect_eq (sl_policy_rule_count (p), 0);
    cr_expect_eq (sl_policy_request_count (p), 0);
    cr_expect_eq (sl_policy_text_count (p), 0);
    cr_expect_eq (sl_policy_llm_count (p), 0);
    cr_expect (!sl_policy_uses_schema (p));
    cr_expect (!sl_policy_uses_history (p));
    cr_expect_null (sl_policy_rule_id (p, 0));
    cr_expect_null (sl_policy_llm_spec (p, 0));
    sl_decision_t d = pf_decide (p, pf_call ("anything", "{}"));
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_DEFAULT);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
    sl_policy_unref (&p);               //  a second unref of a cleared pointer is harmless
}

Test (sl_policy, a_new_policy_keeps_its_text_and_its_digest)
{
    const char *text = "default: allow\n";
    sl_policy_t *p = sl_policy_new ("n.yaml", text, strlen (text));
    cr_expect_str_eq (sl_policy_name (p), "n.yaml");
    cr_expect (sl_str_eq (sl_policy_source (p), text));
    cr_expect_neq ((void *) sl_policy_source (p).ptr, (void *) text, "a copy");
    cr_expect_eq (p->refs, 1);
    cr_expect_eq (p->default_action, SL_ACT_ALLOW);
    cr_expect_eq (p->incomplete_action, SL_ACT_BLOCK, "a call cut off is blocked unless the file says otherwise");
    sl_policy_t *q = pf_policy (text);
    cr_expect_str_eq (sl_policy_id (p), sl_policy_id (q), "the id is the text's, whoever made the policy");
    for (const char *c = sl_policy_id (p); *c; c++)
        cr_expect ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'), "lower-case hex: %s", sl_policy_id (p));
    sl_policy_unref (&q);
    sl_policy_free (p);
}

Test (sl_policy, rule_ids_and_llm_specs_by_index)
{
    sl_policy_t *p = pf_policy ("rules:\n  - {id: a, tool: t, action: block}\n"
                                "  - {id: b, tool: u, llm_judge: {model: m}}\n");
    cr_expect_str_eq (sl_policy_rule_id (p, 0), "a");
    cr_expect_str_eq (sl_policy_rule_id (p, 1), "b");
    cr_expect_null (sl_policy_rule_id (p, 2));
    cr_expect_null (sl_policy_rule_id (p, -1));
    cr_expect_null (sl_policy_llm_spec (p, 0), "a rule without a judge");
    cr_assert_not_null (sl_policy_llm_spec (p, 1));
    cr_expect_str_eq (sl_policy_llm_spec (p, 1)->model, "m");
    cr_expect_null (sl_policy_llm_spec (p, 2));
    cr_expect_null (sl_policy_llm_spec (p, -1));
    sl_policy_unref (&p);
}

//  --------------------------------------------------------------------------
//  Decisions and notices

Test (sl_policy, a_cleared_decision_is_empty)
{
    sl_decision_t d;
    sl_decision_init (&d);
    cr_expect_eq (d.action, SL_ACT_NONE);
    cr_expect_null (d.rule);
    cr_expect_eq (d.llm_rule, -1, "no rule's judge pending");
    cr_expect (isnan (d.probability), "no probability until a judge answers");
    d.reason = strdup ("r");
    d.message = strdup ("m");
    d.arguments = strdup ("{}");
    d.action = SL_ACT_REWRITE;
    d.llm_rule = 3;
    sl_decision_clear (&d);
    cr_expect_null (d.reason);
    cr_expect_null (d.message);
    cr_expect_null (d.arguments);
    cr_expect_eq (d.action, SL_ACT_NONE);
    cr_expect_eq (d.llm_rule, -1);
    sl_decision_clear (&d);             //  twice is harmless
}

Test (sl_policy, notices_fill_their_templates)
{
    struct { const char *tmpl; const char *tool; sl_cut_t cut; const char *reason; const char *expect; } cases [] = {
        { "{tool} by {rule}: {reason}", "run_shell", SL_CUT_NONE, "why", "run_shell by r1: why" },
        { "[{cut}]", "t", SL_CUT_NONE, "", "[]" },
        { "[{cut}]", "t", SL_CUT_LENGTH, "", "[length]" },
        { "{tool}{tool}", "ab", SL_CUT_NONE, "", "abab" },
        { "{reason}", "t", SL_CUT_NONE, NULL, "" },
        { "{other} {tool", "t", SL_CUT_NONE, "", "{other} {tool" },
        { "no fields", "t", SL_CUT_SIZE, "x", "no fields" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *s = sl_policy_render (cases [i].tmpl, sl_str (cases [i].tool), cases [i].cut, "r1", cases [i].reason);
        cr_expect_str_eq (s, cases [i].expect, "case %zu", i);
        free (s);
    }
    char *s = sl_policy_render ("<{tool}>", SL_STR_NULL, SL_CUT_NONE, "r", "");
    cr_expect_str_eq (s, "<>", "a part without a tool");
    free (s);
}

Test (sl_policy, an_llm_judges_outcome_becomes_a_check_and_a_reason)
{
    sl_llm_spec_t spec;
    sl_llm_spec_defaults (&spec);
    spec.model = strdup ("guard");
    spec.threshold = 0.7;
    spec.on_error = SL_ACT_ALLOW;
    sl_buf_t reason = { 0 };
    sl_decision_t d;

    sl_decision_init (&d);
    sl_llm_result_t yes = { .check = SL_CHK_RAN, .probability = 0.9, .explanation = (char *) "deletes data" };
    cr_expect (sl_policy_llm_outcome (&spec, &yes, &d, &reason), "harmful: the rule's action");
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_float_eq (d.probability, 0.9, 1e-9);
    cr_expect_str_eq (d.judge_model, "guard");
    cr_expect_str_eq (sl_buf_cstr (&reason), "LLM judge guard: p=0.90 >= 0.70: deletes data");

    sl_buf_reset (&reason);
    sl_decision_init (&d);
    sl_llm_result_t exactly = { .check = SL_CHK_RAN, .probability = 0.7 };
    cr_expect (sl_policy_llm_outcome (&spec, &exactly, &d, &reason), "the threshold itself is harmful");
    cr_expect_str_eq (sl_buf_cstr (&reason), "LLM judge guard: p=0.70 >= 0.70");

    sl_buf_reset (&reason);
    sl_decision_init (&d);
    sl_llm_result_t no = { .check = SL_CHK_RAN, .probability = 0.2 };
    cr_expect (!sl_policy_llm_outcome (&spec, &no, &d, &reason));
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_str_eq (sl_buf_cstr (&reason), "LLM judge guard: p=0.20 < 0.70");

    sl_buf_reset (&reason);
    sl_decision_init (&d);
    sl_llm_result_t late = { .check = SL_CHK_TIMEOUT, .probability = 0.99, .error = (char *) "no answer within 5 s" };
    cr_expect (!sl_policy_llm_outcome (&spec, &late, &d, &reason), "a check that did not run found nothing");
    cr_expect_eq (d.check, SL_CHK_TIMEOUT);
    cr_expect (isnan (d.probability), "and has no probability, whatever the result holds");
    cr_expect_str_eq (sl_buf_cstr (&reason), "LLM judge guard timed out: no answer within 5 s; on_error: allow");

    sl_buf_reset (&reason);
    sl_decision_init (&d);
    spec.on_error = SL_ACT_BLOCK;
    sl_llm_result_t failed = { .check = SL_CHK_ERROR };
    cr_expect (!sl_policy_llm_outcome (&spec, &failed, &d, &reason));
    cr_expect_eq (d.check, SL_CHK_ERROR);
    cr_expect_str_eq (sl_buf_cstr (&reason), "LLM judge guard failed: no answer; on_error: block");

    sl_buf_free (&reason);
    sl_llm_spec_clear (&spec);
}
