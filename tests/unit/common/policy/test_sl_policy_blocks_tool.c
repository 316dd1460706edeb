/*  Unit tests: sl_policy_blocks_tool (common/policy/sl_policy_tools.c):
    is a tool blocked for every call by its name alone, so that a
    tools/list leaves it out? Only when certain. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/policy/sl_policy.h"
#include "tests/unit/common/policy/policy_fixture.h"

static bool
s_blocks (const char *yaml, const char *name)
{
    sl_policy_t *p = pf_policy (yaml);
    bool blocks = sl_policy_blocks_tool (p, sl_str (name), sl_str ("payments"));
    sl_policy_unref (&p);
    return blocks;
}

Test (sl_policy_blocks_tool, a_rule_of_names_only_blocks)
{
    const char *by_tool = "rules:\n  - id: r\n    tool: mcp__github__delete_repo\n    action: block\n";
    cr_expect (s_blocks (by_tool, "mcp__github__delete_repo"));
    cr_expect_not (s_blocks (by_tool, "mcp__github__create_issue"));
    //  The tool part of an MCP name, a server, a glob, terminate and drop.
    cr_expect (s_blocks ("rules:\n  - id: r\n    tool: delete_repo\n    action: terminate\n", "mcp__github__delete_repo"));
    cr_expect (s_blocks ("rules:\n  - id: r\n    server: github\n    tool: 'delete_*'\n    action: drop\n",
                         "mcp__github__delete_repo"));
    cr_expect_not (s_blocks ("rules:\n  - id: r\n    server: gitlab\n    tool: delete_repo\n    action: block\n",
                             "mcp__github__delete_repo"));
    cr_expect (s_blocks ("rules:\n  - id: r\n    server: github\n    action: block\n", "mcp__github__anything"));
    //  No rule names it: not blocked by a rule (the default is no rule of its own).
    cr_expect_not (s_blocks ("default: block\nrules:\n  - id: r\n    tool: x\n    action: allow\n", "mcp__s__t"));
}

Test (sl_policy_blocks_tool, a_rule_with_any_other_condition_does_not)
{
    const char *conditional [] = {
        "    args: [{pointer: /force, equals: true}]\n",
        "    model: 'gpt-*'\n",
        "    max_calls: 2\n",
        "    schema_violation: true\n",
        "    incomplete: false\n",
        "    tainted: true\n",
        "    llm_judge: {model: guard}\n",
    };
    char yaml [1024];
    for (size_t i = 0; i < sizeof conditional / sizeof conditional [0]; i++) {
        snprintf (yaml, sizeof yaml, "rules:\n  - id: r\n    tool: delete_repo\n%s    action: block\n", conditional [i]);
        cr_expect_not (s_blocks (yaml, "mcp__github__delete_repo"), "%s", conditional [i]);
    }
    cr_expect_not (s_blocks ("rules:\n  - id: r\n    tool: delete_repo\n    action: ask\n", "mcp__github__delete_repo"));
    cr_expect_not (s_blocks ("rules:\n  - {id: r, tool: delete_repo, decide: {url: 'http://127.0.0.1:1/d'}}\n",
                             "mcp__github__delete_repo"));
    cr_expect_not (s_blocks ("rules:\n  - id: r\n    tool: delete_repo\n    action: allow\n", "mcp__github__delete_repo"));
    cr_expect_not (s_blocks ("rules:\n  - id: r\n    tool: delete_repo\n    action: rewrite\n    set: {/a: 1}\n",
                             "mcp__github__delete_repo"));
}

Test (sl_policy_blocks_tool, the_first_rule_that_can_decide_decides)
{
    //  An earlier allow for some calls: not every call is blocked.
    cr_expect_not (s_blocks ("rules:\n"
                             "  - id: ok\n    tool: delete_repo\n    args: [{pointer: /dry_run, equals: true}]\n    action: allow\n"
                             "  - id: no\n    tool: delete_repo\n    action: block\n", "mcp__github__delete_repo"));
    //  An earlier conditional block, then an unconditional one: every call is blocked.
    cr_expect (s_blocks ("rules:\n"
                         "  - id: loud\n    tool: delete_repo\n    args: [{pointer: /force, equals: true}]\n    action: terminate\n"
                         "  - id: no\n    tool: delete_repo\n    action: block\n", "mcp__github__delete_repo"));
    //  An unconditional allow first.
    cr_expect_not (s_blocks ("rules:\n"
                             "  - id: ok\n    server: github\n    action: allow\n"
                             "  - id: no\n    tool: delete_repo\n    action: block\n", "mcp__github__delete_repo"));
    //  Request rules are not call rules.
    cr_expect_not (s_blocks ("rules:\n  - id: w\n    on: request\n    part: tool\n    tool: delete_repo\n    action: withhold\n",
                             "mcp__github__delete_repo"));
}

Test (sl_policy_blocks_tool, nothing_to_judge)
{
    sl_policy_t *p = sl_policy_allow_all ();
    cr_expect_not (sl_policy_blocks_tool (p, sl_str ("mcp__s__t"), SL_STR_NULL));
    cr_expect_not (sl_policy_blocks_tool (p, SL_STR_NULL, SL_STR_NULL));
    sl_policy_unref (&p);
    cr_expect_not (sl_policy_blocks_tool (NULL, sl_str ("x"), SL_STR_NULL));
}
