/*  Tests of sl_policylint: what a policy says that cannot be meant. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/policy/sl_policylint.h"
#include "tests/unit/common/policy/policy_fixture.h"

static int
s_lint (const char *yaml, const sl_policylint_opts_t *opts, sl_buf_t *out)
{
    sl_policy_t *p = pf_policy (yaml);
    char *error = NULL;
    int n = sl_policylint_run (p, opts, out, &error);
    cr_assert_geq (n, 0, "%s", error ? error : "");
    sl_policy_unref (&p);
    return n;
}

Test (policylint, catastrophic_regexes_are_found_and_ordinary_ones_pass)
{
    const char *bad [] = { "(a+)+b", "(a*)*", "([a-z]+)*x", "(a*b*)*", "(x+){2,}", "(a)\\1", "((ab)*)+" };
    const char *good [] = { "rm[[:space:]]+-rf", "(-[a-z]*[rf][a-z]*[[:space:]]+)+", "(a|b)*", "[(]+)+",
                            "((all|any)[[:space:]]+)*x", "a+b+c*", "(ab)+", "\\(a+\\)+" };
    const char *why = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect (sl_policylint_catastrophic (bad [i], &why), "%s should be found", bad [i]);
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++)
        cr_expect_not (sl_policylint_catastrophic (good [i], &why), "%s should pass", good [i]);
}

Test (policylint, a_clean_policy_has_no_finding)
{
    sl_buf_t out = { 0 };
    cr_expect_eq (s_lint ("rules:\n"
                          "  - id: rm\n    tool: run_shell\n"
                          "    args: [{pointer: /command, regex: 'rm -rf'}]\n    action: block\n"
                          "  - id: shell\n    tool: run_shell\n    action: allow\n", NULL, &out), 0,
                  "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
}

Test (policylint, shadowed_and_never_matching_rules_are_named_with_their_line)
{
    sl_buf_t out = { 0 };
    int n = s_lint ("rules:\n"
                    "  - id: shells\n    tool: [run_shell, 'ba*']\n    action: block\n"
                    "  - id: rm\n    tool: run_shell\n"
                    "    args: [{pointer: /command, regex: 'rm -rf'}]\n    action: block\n"
                    "  - id: bash\n    tool: bash\n    action: allow\n"
                    "  - id: bounds\n    tool: x\n    args: [{pointer: /n, gt: 10}, {pointer: /n, le: 10}]\n"
                    "    action: block\n"
                    "  - id: equals\n    tool: y\n    args: [{pointer: /a, equals: 1}, {pointer: /a, equals: 2}]\n"
                    "    action: block\n"
                    "  - id: slow\n    tool: z\n    args: [{pointer: /u, regex: '(a+)+$'}]\n    action: block\n",
                    NULL, &out);
    const char *s = sl_buf_cstr (&out);
    cr_expect_eq (n, 5, "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:5: shadowed (rule rm): never decides: rule shells"), "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:9: shadowed (rule bash)"), "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:12: never (rule bounds): numeric bounds"), "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:16: never (rule equals): two different equals"), "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:22: regex: '(a+)+$'"), "%s", s);
    sl_buf_free (&out);
}

Test (policylint, an_allow_does_not_shadow_a_rule_on_incomplete_calls)
{
    sl_buf_t out = { 0 };
    cr_expect_eq (s_lint ("rules:\n"
                          "  - id: all\n    action: allow\n"
                          "  - id: cut\n    incomplete: true\n    action: block\n", NULL, &out), 0,
                  "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
}

static void
s_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

Test (policylint, approvers_and_tools_are_checked_against_their_files)
{
    char dir [] = "/tmp/sluice-lint-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char keys [128], inventory [128];
    snprintf (keys, sizeof keys, "%s/keys.yaml", dir);
    snprintf (inventory, sizeof inventory, "%s/tools.json", dir);
    s_write (keys, "keys:\n  - id: k1\n"
                   "    sha256: 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n"
                   "    team: eng\n    user: ann\n");
    s_write (inventory, "{\"tools\":[{\"name\":\"run_shell\",\"team\":\"eng\"},"
                        "{\"name\":\"mcp__gh__create_issue\",\"tool\":\"create_issue\"}]}");
    sl_policylint_opts_t opts = { .inventory = inventory, .keys_file = keys };
    sl_buf_t out = { 0 };
    int n = s_lint ("rules:\n"
                    "  - id: finance\n    tool: run_shell\n    action: ask\n    ask: {approvers: [team:finance]}\n"
                    "  - id: eng\n    tool: mcp__gh__create_issue\n    action: ask\n    ask: {approvers: [team:eng]}\n"
                    "  - id: ann\n    tool: create_issue\n    action: ask\n    ask: {approvers: ['user:ann']}\n"
                    "  - id: console\n    tool: 'mcp__*'\n    action: ask\n"
                    "    ask: {approvers: [team:x, console]}\n"
                    "  - id: tools\n    tool: [run_shell, create_issue, 'mcp__gh__*', typo_tool, 'nope_*']\n"
                    "    args: [{pointer: /a, exists: true}]\n    action: block\n",
                    &opts, &out);
    const char *s = sl_buf_cstr (&out);
    cr_expect_eq (n, 3, "%s", s);
    cr_expect_not_null (strstr (s, "p.yaml:2: approver (rule finance)"), "%s", s);
    cr_expect_not_null (strstr (s, "tool 'typo_tool': no tool of the inventory"), "%s", s);
    cr_expect_not_null (strstr (s, "glob 'nope_*'"), "%s", s);
    sl_buf_free (&out);
    //  A file that cannot be read is an error, not a clean lint.
    sl_policy_t *p = pf_policy ("rules: []\n");
    char *error = NULL;
    sl_policylint_opts_t missing = { .inventory = "/nonexistent.json" };
    cr_expect_eq (sl_policylint_run (p, &missing, &out, &error), -1);
    cr_expect_not_null (error);
    free (error);
    sl_policy_unref (&p);
    sl_buf_free (&out);
    char cmd [160];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
