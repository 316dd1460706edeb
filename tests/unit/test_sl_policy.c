/*  Unit tests: services/judge/sl_policy (parser and rule evaluation). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../services/judge/sl_policy.h"

static sl_policy_t *
s_parse (const char *yaml, char **error)
{
    return sl_policy_parse (yaml, strlen (yaml), "p.yaml", error);
}

static const char *s_good =
    "version: 1\n"
    "default: allow\n"
    "rules:\n"
    "  - id: no-rm\n"
    "    tool: run_shell\n"
    "    args:\n"
    "      - pointer: /command\n"
    "        regex: 'rm[[:space:]]+-rf'\n"
    "    action: block\n"
    "    message: \"no {tool} ({rule})\"\n"
    "  - id: deep\n"
    "    args:\n"
    "      - pointer: /a~1b/0\n"
    "        regex: '^x$'\n"
    "    action: block\n";

static sl_decision_t
s_decide (sl_policy_t *p, const char *name, const char *args)
{
    sl_call_t call = { sl_str (name), sl_str (args), true };
    sl_decision_t d;
    sl_policy_decide (p, &call, &d);
    return d;
}

Test (sl_policy, tool_and_regex_block)
{
    char *error = NULL;
    sl_policy_t *p = s_parse (s_good, &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    cr_expect_eq (sl_policy_rule_count (p), 2);
    sl_decision_t d = s_decide (p, "run_shell", "{\"command\":\"rm  -rf /\"}");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_str_eq (d.rule, "no-rm");
    cr_expect_str_eq (d.message, "no run_shell (no-rm)");
    sl_decision_clear (&d);

    d = s_decide (p, "run_shell", "{\"command\":\"ls -la\"}");
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_DEFAULT, "no rule matched: the default decided");
    cr_expect_null (d.rule);
    sl_decision_clear (&d);

    d = s_decide (p, "other", "{\"command\":\"rm -rf /\"}");
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the tool name must match");
    sl_decision_clear (&d);

    d = s_decide (p, "any", "{\"a/b\":[\"x\"]}");
    cr_expect_eq (d.action, SL_ACT_BLOCK, "JSON pointer with ~1 escape and array index");
    cr_expect_str_eq (d.rule, "deep");
    cr_expect_not_null (strstr (d.message, "any"), "default notice names the tool");
    sl_decision_clear (&d);

    d = s_decide (p, "run_shell", "not json");
    cr_expect_eq (d.action, SL_ACT_ALLOW, "unparsable arguments match no argument rule");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
    cr_expect_null (p);
}

Test (sl_policy, first_match_wins_and_default_block)
{
    char *error = NULL;
    sl_policy_t *p = s_parse ("default: block\nrules:\n  - id: ok\n    tool: safe\n    action: allow\n"
                              "  - id: never\n    tool: safe\n    action: block\n", &error);
    cr_assert_not_null (p);
    sl_decision_t d = s_decide (p, "safe", "{}");
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_str_eq (d.rule, "ok");
    sl_decision_clear (&d);
    d = s_decide (p, "unknown", "{}");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_DEFAULT);
    cr_expect_not_null (d.message);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy, errors_name_line_and_column)
{
    struct { const char *yaml; const char *expect; } cases [] = {
        { "rules: [", "p.yaml:2:1:" },
        { "- a\n- b\n", "p.yaml:1:1: the policy must be a mapping" },
        { "default: maybe\n", "p.yaml:1:10: action must be allow or block" },
        { "rules:\n  - tool: x\n    action: block\n", "p.yaml:2:5: a rule needs an id" },
        { "rules:\n  - id: a\n    action: block\n    color: red\n", "p.yaml:4:5: unknown rule field 'color'" },
        { "rules:\n  - id: a\n    action: block\n    args:\n      - pointer: /x\n        regex: '(('\n",
          "p.yaml:6:16: bad regex" },
        { "rules:\n  - id: a\n    action: block\n    args:\n      - pointer: x\n        regex: a\n",
          "p.yaml:5:18: a JSON pointer" },
        { "rules:\n  - id: a\n    action: allow\n  - id: a\n    action: block\n",
          "p.yaml:4:5: duplicate rule id 'a'" },
        { "version: 2\n", "p.yaml:1:10: unsupported policy version" },
        { "colour: x\n", "p.yaml:1:1: unknown top-level field 'colour'" },
        { "", "p.yaml:1:1: the policy is empty" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = NULL;
        sl_policy_t *p = s_parse (cases [i].yaml, &error);
        cr_expect_null (p, "case %zu should fail", i);
        cr_assert_not_null (error, "case %zu has an error", i);
        cr_expect (strncmp (error, cases [i].expect, strlen (cases [i].expect)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error, cases [i].expect);
        free (error);
        sl_policy_unref (&p);
    }
}

Test (sl_policy, load_reports_missing_file)
{
    char *error = NULL;
    cr_expect_null (sl_policy_load ("/nonexistent/policy.yaml", &error));
    cr_assert_not_null (error);
    cr_expect_not_null (strstr (error, "cannot open"));
    free (error);
}

Test (sl_policy, reference_counting)
{
    sl_policy_t *p = sl_policy_allow_all ();
    sl_policy_t *q = sl_policy_ref (p);
    sl_policy_unref (&p);
    cr_expect_str_eq (sl_policy_name (q), "(allow all)", "still alive after one unref");
    sl_policy_unref (&q);
}
