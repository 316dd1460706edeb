/*  Unit tests: common/policy/sl_policy_load (the document and its rules:
    errors with file, line and column, what each kind of rule may say and
    the defaults it gets, files read from disk, the shipped policies). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/policy/sl_policy_impl.h"
#include "tests/unit/common/policy/policy_fixture.h"
#include "tests/unit/keydir.h"

Test (sl_policy_load, errors_name_line_and_column)
{
    struct { const char *yaml; const char *expect; } cases [] = {
        { "rules: [", "p.yaml:2:1:" },
        { "- a\n- b\n", "p.yaml:1:1: the policy must be a mapping" },
        { "default: maybe\n", "p.yaml:1:10: default must be allow, block, drop or terminate" },
        { "default: rewrite\n", "p.yaml:1:10: default must be" },
        { "rules:\n  - tool: x\n    action: block\n", "p.yaml:2:5: a rule needs an id" },
        { "rules:\n  - id: a\n    action: block\n    color: red\n", "p.yaml:4:5: unknown rule field 'color'" },
        { "rules:\n  - id: a\n    action: block\n    args:\n      - pointer: /x\n        regex: '(('\n",
          "p.yaml:6:16: bad regex" },
        { "rules:\n  - id: a\n    action: block\n    args:\n      - pointer: x\n        regex: a\n",
          "p.yaml:5:18: a JSON pointer" },
        { "rules:\n  - id: a\n    action: block\n    args:\n      - pointer: /a~2\n        regex: a\n",
          "p.yaml:5:18: bad escape in JSON pointer" },
        { "rules:\n  - id: a\n    action: allow\n  - id: a\n    action: block\n",
          "p.yaml:4:5: duplicate rule id 'a'" },
        { "version: 2\n", "p.yaml:1:10: unsupported policy version" },
        { "colour: x\n", "p.yaml:1:1: unknown top-level field 'colour'" },
        { "", "p.yaml:1:1: the policy is empty" },
        { "rules:\n  - id: a\n", "p.yaml:2:5: rule 'a' needs an action" },
        { "rules:\n  - id: a\n    action: explode\n", "p.yaml:3:13: action must be allow, block, drop" },
        { "rules:\n  - id: a\n    action: block\n    args: [{pointer: /x}]\n",
          "p.yaml:4:12: an args entry needs a test" },
        { "rules:\n  - id: a\n    action: block\n    args: [{regex: x}]\n", "p.yaml:4:12: an args entry needs pointer" },
        { "rules:\n  - id: a\n    action: block\n    args: [{pointer: /x, like: y}]\n",
          "p.yaml:4:26: unknown args field 'like'" },
        { "rules:\n  - id: a\n    action: block\n    args: [{pointer: /x, gt: lots}]\n",
          "p.yaml:4:30: gt must be a number" },
        { "rules:\n  - id: a\n    action: block\n    args: [{pointer: /x, exists: maybe}]\n",
          "p.yaml:4:34: exists must be true or false" },
        { "rules:\n  - id: a\n    action: block\n    args: {pointer: /x}\n", "p.yaml:4:11: args must be a list" },
        { "rules:\n  - id: a\n    action: block\n    headers: [{pointer: /x, equals: y}]\n",
          "p.yaml:4:16: unknown headers field 'pointer'" },
        { "rules:\n  - id: a\n    action: block\n    tool: []\n", "p.yaml:4:11: tool: the list is empty" },
        { "rules:\n  - id: a\n    action: block\n    tool: [{x: 1}]\n", "p.yaml:4:12: tool must be a name" },
        { "rules:\n  - id: a\n    action: block\n    max_calls: -1\n",
          "p.yaml:4:16: max_calls must be a whole number from 0" },
        { "rules:\n  - id: a\n    action: block\n    args_invalid: yes\n",
          "p.yaml:4:19: args_invalid must be true or false" },
        { "rules:\n  - id: a\n    action: rewrite\n", "p.yaml:2:5: rule 'a': rewrite needs set or delete" },
        { "rules:\n  - id: a\n    action: block\n    delete: [/x]\n",
          "p.yaml:2:5: rule 'a': set and delete need action: rewrite" },
        { "rules:\n  - id: a\n    action: rewrite\n    set: {x: 1}\n",
          "p.yaml:4:11: a rewrite names a field by a JSON pointer" },
        { "rules:\n  - id: a\n    action: rewrite\n    set: [/x]\n", "p.yaml:4:10: set must be a mapping" },
        { "rules:\n  - id: a\n    llm_judge: {url: http://x}\n", "p.yaml:3:16: llm_judge needs a model" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, api: gemini}\n",
          "p.yaml:3:32: api must be openai or anthropic" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, url: 'file:///etc/passwd'}\n",
          "p.yaml:3:32: url must start with http:// or https://" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, threshold: 1.5}\n",
          "p.yaml:3:38: threshold must be from 0 to 1" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, timeout_ms: 0}\n",
          "p.yaml:3:39: timeout_ms must be a whole number from 1" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, on_error: drop}\n",
          "p.yaml:3:37: on_error must be block or allow" },
        { "rules:\n  - id: a\n    llm_judge: {model: m, temperature: 1}\n",
          "p.yaml:3:27: unknown llm_judge field 'temperature'" },
        { "rules:\n  - id: a\n    llm_judge: {model: m}\n    action: allow\n",
          "p.yaml:2:5: rule 'a': an llm_judge rule acts on the calls its judge rejects" },
        { "rules:\n  - id: a\n    llm_judge: model\n", "p.yaml:3:16: llm_judge must be a mapping" },
        { "rules:\n  - id: a\n    action: block\n    incomplete: maybe\n",
          "p.yaml:4:17: incomplete must be true or false" },
        { "rules:\n  - id: a\n    action: block\n    cut: [length, tired]\n",
          "p.yaml:4:10: cut must be length, filter, error, eof, size or invalid" },
        { "on_incomplete: rewrite\n", "p.yaml:1:16: on_incomplete must be allow, block, drop or terminate" },
        { "on_incomplete: {message: x}\n", "p.yaml:1:16: on_incomplete needs an action" },
        { "on_incomplete: {action: block, colour: x}\n", "p.yaml:1:32: unknown on_incomplete field 'colour'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = NULL;
        sl_policy_t *p = pf_parse (cases [i].yaml, &error);
        cr_expect_null (p, "case %zu should fail", i);
        cr_assert_not_null (error, "case %zu has an error", i);
        cr_expect (strncmp (error, cases [i].expect, strlen (cases [i].expect)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error, cases [i].expect);
        free (error);
        sl_policy_unref (&p);
    }
}

Test (sl_policy_load, refused_policies)
{
    const char *bad [] = {
        "rules:\n  - {id: r, on: request, action: block}\n",
        "rules:\n  - {id: r, on: request, action: rewrite, set: {/a: 1}}\n",
        "rules:\n  - {id: r, on: request, args: [{pointer: /a, exists: true}], action: terminate}\n",
        "rules:\n  - {id: r, on: request, action: redact}\n",
        "rules:\n  - {id: r, on: request, action: terminate, redact: {regex: a}}\n",
        "rules:\n  - {id: r, on: request, part: user, action: block_result}\n",
        "rules:\n  - {id: r, on: request, part: user, llm_judge: {model: m}}\n",
        "rules:\n  - {id: r, on: request, part: everything, action: terminate}\n",
        "rules:\n  - {id: r, on: request, size: {contains: a}, action: terminate}\n",
        "rules:\n  - {id: r, on: sometimes, action: terminate}\n",
        "rules:\n  - {id: r, text: {contains: a}, action: block}\n",
        "rules:\n  - {id: r, action: redact, redact: {regex: a}}\n",
        "rules:\n  - {id: r, action: block_result}\n",
        "rules:\n  - {id: r, on: request, action: redact, redact: {regex: '('}}\n",
        "rules:\n  - {id: r, tool: t, history: [], action: block}\n",
        "rules:\n  - {id: r, on: request, history: [{tool: t}], action: terminate}\n",
        "default: redact\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        char *error = pf_refused (bad [i]);
        cr_expect_not_null (error, "refused: %s", bad [i]);
        cr_expect (error && strncmp (error, "p.yaml:", 7) == 0, "with a position: %s", error ? error : "");
        free (error);
    }
}

Test (sl_policy_load, counts_request_rules_and_history)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - {id: a, on: request, action: terminate, text: {contains: x}}\n"
                               "  - {id: b, tool: t, action: block}\n");
    cr_expect_eq (sl_policy_request_count (p), 1);
    cr_expect (!sl_policy_uses_history (p));
    sl_policy_unref (&p);
    p = pf_policy ("rules:\n  - {id: b, tool: t, action: block, history: [{tool: read_file}]}\n");
    cr_expect_eq (sl_policy_request_count (p), 0);
    cr_expect (sl_policy_uses_history (p));
    sl_policy_unref (&p);
}

Test (sl_policy_load, top_level_settings)
{
    sl_policy_t *p = pf_policy ("version: 1\ndefault: block\nmessage: 'no {tool}'\n"
                                "on_incomplete: {action: terminate, message: 'cut {cut}'}\n");
    cr_expect_eq (p->default_action, SL_ACT_BLOCK);
    cr_expect_str_eq (p->default_message, "no {tool}");
    cr_expect_eq (p->incomplete_action, SL_ACT_TERMINATE);
    cr_expect_str_eq (p->incomplete_message, "cut {cut}");
    cr_expect_eq (sl_policy_rule_count (p), 0);
    cr_expect_str_eq (sl_policy_name (p), PF_NAME);
    sl_policy_unref (&p);
    p = pf_policy ("{}\n");
    cr_expect_eq (p->default_action, SL_ACT_ALLOW, "allow when the file names no default");
    cr_expect_eq (p->incomplete_action, SL_ACT_BLOCK);
    cr_expect_null (p->default_message);
    sl_policy_unref (&p);
    p = pf_policy ("on_incomplete: drop\n");
    cr_expect_eq (p->incomplete_action, SL_ACT_DROP, "on_incomplete as a bare action");
    cr_expect_null (p->incomplete_message);
    sl_policy_unref (&p);
}

Test (sl_policy_load, what_a_policy_uses_is_counted_once)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: a, schema_violation: true, action: block}\n"
                                "  - {id: b, tool: t, llm_judge: {model: m}}\n"
                                "  - {id: c, on: request, tool: u, llm_judge: {model: m}}\n"
                                "  - {id: d, on: text, text: {contains: x}, action: allow}\n"
                                "  - {id: e, tool: t, history: [{tool: read_file}], action: block}\n");
    cr_expect_eq (sl_policy_rule_count (p), 5);
    cr_expect (sl_policy_uses_schema (p));
    cr_expect_eq (sl_policy_llm_count (p), 2, "judges of calls and of results");
    cr_expect_eq (sl_policy_request_count (p), 1);
    cr_expect_eq (sl_policy_text_count (p), 1);
    cr_expect (sl_policy_uses_history (p));
    sl_policy_unref (&p);
}

Test (sl_policy_load, each_kind_of_rule_gets_its_defaults)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: call-judge, tool: t, llm_judge: {model: m}}\n"
                                "  - {id: result-judge, on: request, tool: u, llm_judge: {model: m}}\n"
                                "  - {id: refuse, on: request, text: {contains: x}, action: terminate}\n"
                                "  - {id: hide, on: request, action: redact, redact: {regex: 'sk-[a-z]+'}}\n"
                                "  - {id: flag, on: text, text: {contains: x}, action: allow}\n");
    const sl_policy_rule_t *r = p->rules;
    cr_expect_eq (r [0].action, SL_ACT_BLOCK, "what a call judge's no does");
    cr_expect_eq (r [0].parts, 0u, "a call rule judges no part");
    cr_expect_null (r [0].llm->system, "the call judge's own system prompt");
    cr_expect_str_eq (r [0].llm->prompt, sl_llm_default_prompt);
    cr_expect_eq (r [1].action, SL_ACT_BLOCK_RESULT, "what a result judge's no does");
    cr_expect_eq (r [1].parts, 1u << SL_RPART_TOOL_RESULT, "a judge of results judges results");
    cr_expect_eq (r [1].llm->system, sl_llm_result_system_prompt, "it asks about an injection");
    cr_expect_str_eq (r [1].llm->prompt, sl_llm_default_result_prompt);
    cr_expect_eq (r [2].parts, (1u << SL_RPART_SYSTEM) | (1u << SL_RPART_USER) | (1u << SL_RPART_TOOL_RESULT),
                  "a request rule that names no part: system, user, tool results");
    cr_expect_str_eq (r [3].redacts [0].placeholder, "[REDACTED:hide]", "the placeholder names the rule");
    cr_expect_eq (r [4].parts, 1u << SL_RPART_TEXT);
    cr_expect (r [4].on_text && !r [4].on_request);
    sl_policy_unref (&p);
}

Test (sl_policy_load, a_file_is_read_whole_and_named_by_its_path)
{
    char path [] = "/tmp/sluice-policy-XXXXXX";
    int fd = mkstemp (path);
    cr_assert (fd >= 0);
    const char *text = "rules:\n  - {id: r, tool: t, action: drop}\n";
    cr_assert_eq (write (fd, text, strlen (text)), (ssize_t) strlen (text));
    close (fd);
    char *error = NULL;
    sl_policy_t *p = sl_policy_load (path, &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    cr_expect_str_eq (sl_policy_name (p), path);
    cr_expect (sl_str_eq (sl_policy_source (p), text));
    cr_expect_str_eq (sl_policy_rule_id (p, 0), "r");
    sl_policy_unref (&p);

    //  A file over the bound is refused before it is parsed.
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs ("rules:\n", f);
    for (int i = 0; i < (4 << 20) / 64 + 1; i++)
        fprintf (f, "#%062d\n", i);
    fclose (f);
    cr_expect_null (sl_policy_load (path, &error));
    cr_assert_not_null (error);
    char want [128];
    snprintf (want, sizeof want, "%s:1:1: file is over %u bytes", path, 4u << 20);
    cr_expect_str_eq (error, want);
    free (error);
    unlink (path);
}

Test (sl_policy_load, the_shipped_policies_load)
{
    const char *files [] = { "deploy/policy.yaml", "deploy/policies/destructive-shell.yaml",
                             "deploy/policies/allow-list.yaml", "deploy/policies/schema.yaml",
                             "deploy/policies/llm-judge.yaml", "deploy/policies/ask.yaml",
                             "deploy/policies/decide.yaml", "deploy/policies/tools.yaml" };
    for (size_t i = 0; i < sizeof files / sizeof files [0]; i++) {
        char *error = NULL;
        sl_policy_t *p = sl_policy_load (files [i], &error);
        cr_expect_not_null (p, "%s: %s", files [i], error ? error : "");
        free (error);
        sl_policy_unref (&p);
    }
}

Test (sl_policy_load, load_reports_missing_file)
{
    char *error = NULL;
    cr_expect_null (sl_policy_load ("/nonexistent/policy.yaml", &error));
    cr_assert_not_null (error);
    cr_expect_not_null (strstr (error, "cannot open"));
    free (error);
}

//  --------------------------------------------------------------------------
//  Includes: files in a directory of their own

static char s_dir [] = "/tmp/sluice-include-XXXXXX";

static void
s_dir_make (void)
{
    cr_assert_not_null (mkdtemp (s_dir));
}

static void
s_write (const char *name, const char *text)
{
    keydir_write (s_dir, name, text);
}

static void
s_dir_remove (void)
{
    keydir_remove (s_dir);
}

//  Load dir/name; NULL with *error when it does not load.
static sl_policy_t *
s_load (const char *name, char **error)
{
    char path [256];
    snprintf (path, sizeof path, "%s/%s", s_dir, name);
    *error = NULL;
    return sl_policy_load (path, error);
}

#define S_BASE \
    "default: block\n" \
    "rules:\n" \
    "  - id: no-rm-root\n" \
    "    tool: run_shell\n" \
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf[[:space:]]+/([[:space:]]|$)'}]\n" \
    "    action: block\n"

Test (sl_policy_load, an_included_base_block_wins_over_the_team_allow, .init = s_dir_make, .fini = s_dir_remove)
{
    s_write ("base.yaml", S_BASE);
    char teams [256];
    snprintf (teams, sizeof teams, "%s/teams", s_dir);
    cr_assert_eq (mkdir (teams, 0700), 0);
    //  The team allows every shell command, and blocks one more thing.
    s_write ("teams/a.yaml", "include: ../base.yaml\n"
                             "rules:\n"
                             "  - id: shell-ok\n    tool: run_shell\n    action: allow\n"
                             "  - id: no-curl\n    tool: run_shell\n"
                             "    args: [{pointer: /command, contains: curl}]\n    action: block\n");
    char *error = NULL;
    sl_policy_t *p = s_load ("teams/a.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    cr_expect_eq (sl_policy_rule_count (p), 3, "the base's rule and the team's two");
    cr_expect_str_eq (sl_policy_rule_id (p, 0), "no-rm-root", "the base's rules come first");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("run_shell", "{\"command\":\"rm -rf /\"}")), "no-rm-root",
                      "the team's allow cannot undo the base's block");
    sl_decision_t d = pf_decide (p, pf_call ("run_shell", "{\"command\":\"rm -rf /\"}"));
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    sl_decision_clear (&d);
    d = pf_decide (p, pf_call ("run_shell", "{\"command\":\"rm -rf build\"}"));
    cr_expect_eq (d.action, SL_ACT_ALLOW, "what the base does not match, the team decides");
    sl_decision_clear (&d);
    //  The team file does not set default: the base's applies.
    d = pf_decide (p, pf_call ("other_tool", "{}"));
    cr_expect_eq (d.action, SL_ACT_BLOCK, "the base's default, as the team set none");
    sl_decision_clear (&d);
    cr_expect_eq (sl_policy_file_count (p), 2, "the file and its include are watched");
    cr_expect (strstr (sl_policy_file (p, 1), "base.yaml") != NULL);
    //  The id covers the base: a changed base is a new version.
    char id [SL_POLICY_ID_SIZE];
    snprintf (id, sizeof id, "%s", sl_policy_id (p));
    sl_policy_unref (&p);
    s_write ("base.yaml", S_BASE "  - id: extra\n    tool: x\n    action: drop\n");
    p = s_load ("teams/a.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    cr_expect_str_neq (sl_policy_id (p), id, "a new base makes a new version of the team's policy");
    sl_policy_unref (&p);
}

Test (sl_policy_load, a_team_rule_adds_a_block_the_base_has_not, .init = s_dir_make, .fini = s_dir_remove)
{
    s_write ("base.yaml", S_BASE);
    s_write ("b.yaml", "include: [base.yaml]\ndefault: allow\n"
                       "rules:\n  - id: no-rm-rf\n    tool: run_shell\n"
                       "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}]\n    action: block\n");
    char *error = NULL;
    sl_policy_t *p = s_load ("b.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("run_shell", "{\"command\":\"rm -rf build\"}")), "no-rm-rf",
                      "the team's own block applies where the base says nothing");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("run_shell", "{\"command\":\"rm -rf /\"}")), "no-rm-root");
    sl_decision_t d = pf_decide (p, pf_call ("other_tool", "{}"));
    cr_expect_eq (d.action, SL_ACT_ALLOW, "the team's own default");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_load, include_errors_name_the_including_line, .init = s_dir_make, .fini = s_dir_remove)
{
    char *error = NULL;
    //  A missing file.
    s_write ("missing.yaml", "default: allow\ninclude: nowhere.yaml\n");
    cr_expect_null (s_load ("missing.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/missing.yaml:2:10: include 'nowhere.yaml': cannot open") != NULL, "%s", error);
    free (error);
    //  A cycle, two files long, and one file including itself.
    s_write ("x.yaml", "include: y.yaml\n");
    s_write ("y.yaml", "rules: []\ninclude: x.yaml\n");
    cr_expect_null (s_load ("x.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/x.yaml:1:10: included here: ") != NULL, "%s", error);
    cr_expect (strstr (error, "/y.yaml:2:10: include 'x.yaml' makes a cycle") != NULL, "%s", error);
    free (error);
    s_write ("self.yaml", "include: ./self.yaml\n");
    cr_expect_null (s_load ("self.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/self.yaml:1:10: include './self.yaml' makes a cycle") != NULL, "%s", error);
    free (error);
    //  An error inside the base is reported where it is, and where it was included.
    s_write ("bad.yaml", "rules:\n  - id: a\n    action: explode\n");
    s_write ("c.yaml", "include: bad.yaml\n");
    cr_expect_null (s_load ("c.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/c.yaml:1:10: included here: ") != NULL, "%s", error);
    cr_expect (strstr (error, "/bad.yaml:3:13: action must be") != NULL, "%s", error);
    free (error);
    //  A team rule may not take a base rule's id (it would replace it in
    //  the audit trail).
    s_write ("base.yaml", S_BASE);
    s_write ("d.yaml", "include: base.yaml\nrules:\n  - id: no-rm-root\n    action: allow\n");
    cr_expect_null (s_load ("d.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/d.yaml:3:5: duplicate rule id 'no-rm-root'") != NULL, "%s", error);
    free (error);
    //  Not a name.
    s_write ("e.yaml", "include: {a: 1}\n");
    cr_expect_null (s_load ("e.yaml", &error));
    cr_assert_not_null (error);
    cr_expect (strstr (error, "/e.yaml:1:10: include must be a file name") != NULL, "%s", error);
    free (error);
}

Test (sl_policy_load, a_text_may_not_include_a_file)
{
    //  A text from a console is no file: it may not make the process read one.
    char *error = pf_refused ("include: /etc/passwd\n");
    cr_assert_not_null (error);
    cr_expect (strstr (error, "p.yaml:1:10: include '/etc/passwd': only a policy file may include") == error,
               "%s", error);
    free (error);
}
