/*  Unit tests: common/policy/sl_policy_fields (a rule's structured fields:
    what each reads into the model, and the errors, each at the line and
    column of the value it is about). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy/sl_policy_impl.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  The first rule of a policy that must parse.
static const sl_policy_rule_t *
s_first (sl_policy_t *p)
{
    cr_assert_geq (p->rule_count, 1);
    return &p->rules [0];
}

Test (sl_policy_fields, argument_pointers_are_split_and_unescaped_once)
{
    sl_policy_t *p = pf_rule ("    args:\n      - {pointer: '/a~1b/c~0d/0', exists: true}\n"
                              "      - {pointer: '', exists: true}\n");
    const sl_policy_rule_t *r = s_first (p);
    cr_assert_eq (r->arg_count, 2);
    cr_expect_str_eq (r->args [0].pointer, "/a~1b/c~0d/0", "kept as written, for reasons");
    cr_assert_eq (r->args [0].token_count, 3);
    cr_expect_str_eq (r->args [0].tokens [0], "a/b");
    cr_expect_str_eq (r->args [0].tokens [1], "c~d");
    cr_expect_str_eq (r->args [0].tokens [2], "0");
    cr_expect_eq (r->args [1].token_count, 0, "the empty pointer is the whole document");
    sl_policy_unref (&p);
}

Test (sl_policy_fields, header_names_are_lower_case_and_not_pointers)
{
    sl_policy_t *p = pf_rule ("    headers: [{name: X-Team-ID, equals: infra}]\n");
    const sl_policy_rule_t *r = s_first (p);
    cr_assert_eq (r->header_count, 1);
    cr_expect_str_eq (r->headers [0].pointer, "x-team-id");
    cr_expect_eq (r->headers [0].token_count, 0);
    cr_expect_eq (r->headers [0].ops, (unsigned) SL_OP_EQUALS);
    cr_expect_str_eq (json_string_value (r->headers [0].equals), "infra");
    sl_policy_unref (&p);
}

Test (sl_policy_fields, a_matcher_holds_every_test_of_its_entry)
{
    sl_policy_t *p = pf_rule ("    args:\n      - {pointer: /n, regex: 'sudo rm', prefix: su, gt: 1, ge: 2, lt: 9, le: 8,"
                              " contains: x, equals: [1], exists: true, not: true}\n");
    const sl_policy_matcher_t *m = &s_first (p)->args [0];
    cr_expect_eq (m->ops, (unsigned) (SL_OP_REGEX | SL_OP_PREFIX | SL_OP_GT | SL_OP_GE | SL_OP_LT | SL_OP_LE
                                      | SL_OP_CONTAINS | SL_OP_EQUALS | SL_OP_EXISTS));
    cr_expect_str_eq (m->literal, "sudo rm", "the regex's required text, found at load time");
    cr_expect_str_eq (m->prefix, "su");
    cr_expect (m->gt == 1 && m->ge == 2 && m->lt == 9 && m->le == 8);
    cr_expect_str_eq (json_string_value (m->contains), "x");
    cr_expect (json_is_array (m->equals));
    cr_expect (m->exists);
    cr_expect (m->negate);
    sl_policy_unref (&p);
}

Test (sl_policy_fields, names_globs_cuts_and_parts)
{
    sl_policy_t *p = pf_rule ("    tool: [read_file, 'fs_*', 'exec_?', 'x[0-9]']\n    model: gpt-4o\n"
                              "    cut: [length, eof]\n");
    const sl_policy_rule_t *r = s_first (p);
    cr_assert_eq (r->tools.count, 4);
    cr_expect_str_eq (r->tools.names [0], "read_file");
    cr_expect (!r->tools.globs [0], "a plain name is matched exactly");
    cr_expect (r->tools.globs [1] && r->tools.globs [2] && r->tools.globs [3], "*, ? and [ make a glob");
    cr_assert_eq (r->models.count, 1, "one name alone is a list of one");
    cr_expect_str_eq (r->models.names [0], "gpt-4o");
    cr_expect_eq (r->cuts, (1u << SL_CUT_LENGTH) | (1u << SL_CUT_EOF));
    sl_policy_unref (&p);
    p = pf_policy ("rules:\n  - {id: r, on: request, part: [user, tool], action: terminate}\n");
    cr_expect_eq (s_first (p)->parts, (1u << SL_RPART_USER) | (1u << SL_RPART_TOOL));
    sl_policy_unref (&p);
    p = pf_policy ("rules:\n  - {id: r, on: request, part: assistant, action: terminate}\n");
    cr_expect_eq (s_first (p)->parts, 1u << SL_RPART_ASSISTANT);
    sl_policy_unref (&p);
}

Test (sl_policy_fields, texts_and_sizes)
{
    sl_policy_t *p = pf_policy ("rules:\n  - {id: r, on: request, text: {contains: a}, size: {gt: 10, not: true},"
                                " action: terminate}\n");
    const sl_policy_rule_t *r = s_first (p);
    cr_expect_eq (r->text_count, 1, "one test mapping");
    cr_assert_not_null (r->size);
    cr_expect_eq (r->size->ops, (unsigned) SL_OP_GT);
    cr_expect (r->size->negate);
    sl_policy_unref (&p);
    p = pf_policy ("rules:\n  - {id: r, on: request, text: [{contains: a}, {regex: b}], action: terminate}\n");
    cr_expect_eq (s_first (p)->text_count, 2, "or a list of them");
    sl_policy_unref (&p);
}

Test (sl_policy_fields, redactions_history_and_edits)
{
    sl_policy_t *p = pf_policy ("rules:\n  - id: r\n    on: request\n    action: redact\n"
                                "    redact: [{regex: 'AKIA[0-9A-Z]{16}', placeholder: '<aws>'}, {regex: 'k+'}]\n");
    const sl_policy_rule_t *r = s_first (p);
    cr_assert_eq (r->redact_count, 2);
    cr_expect_str_eq (r->redacts [0].placeholder, "<aws>");
    cr_expect_str_eq (r->redacts [0].literal, "AKIA");
    cr_expect_null (r->redacts [1].literal, "no literal worth looking for");
    sl_policy_unref (&p);

    p = pf_rule ("    history:\n      - {tool: [read_file, Read], args: [{pointer: /path, regex: env}]}\n"
                 "      - {args: [{pointer: /url, exists: true}]}\n");
    r = s_first (p);
    cr_assert_eq (r->history_count, 2);
    cr_expect_eq (r->history [0].tools.count, 2);
    cr_expect_eq (r->history [0].arg_count, 1);
    cr_expect_eq (r->history [1].tools.count, 0, "any tool");
    cr_expect_str_eq (r->history [1].args [0].tokens [0], "url");
    sl_policy_unref (&p);

    p = pf_policy ("rules:\n  - id: r\n    action: rewrite\n    set: {/a: 1, /b/c: x}\n    delete: [/d]\n");
    r = s_first (p);
    cr_assert_eq (r->edit_count, 3, "set and delete, in order");
    cr_expect_str_eq (r->edits [0].pointer, "/a");
    cr_expect (json_is_integer (r->edits [0].value));
    cr_expect_eq (r->edits [1].token_count, 2);
    cr_expect_str_eq (json_string_value (r->edits [1].value), "x");
    cr_expect_str_eq (r->edits [2].pointer, "/d");
    cr_expect_null (r->edits [2].value, "a delete");
    sl_policy_unref (&p);
}

Test (sl_policy_fields, an_llm_judge_gets_its_defaults)
{
    sl_policy_t *p = pf_policy ("rules:\n  - {id: r, llm_judge: {model: m}}\n"
                                "  - {id: s, llm_judge: {model: n, api: anthropic, max_tokens: 64, concurrency: 2}}\n");
    const sl_llm_spec_t *a = p->rules [0].llm, *b = p->rules [1].llm;
    char *url = sl_llm_default_url (SL_DIALECT_OPENAI, "m");
    cr_expect_eq (a->dialect, SL_DIALECT_OPENAI);
    cr_expect_str_eq (a->url, url);
    free (url);
    cr_expect_str_eq (a->prompt, sl_llm_default_prompt);
    cr_expect_eq (a->on_error, SL_ACT_BLOCK, "a judge that does not answer blocks");
    url = sl_llm_default_url (SL_DIALECT_ANTHROPIC, "n");
    cr_expect_eq (b->dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_str_eq (b->url, url);
    free (url);
    cr_expect_eq (b->max_tokens, 64);
    cr_expect_eq (b->concurrency, 2);
    sl_policy_unref (&p);
}

Test (sl_policy_fields, errors_name_line_and_column)
{
    const char *rule = "rules:\n  - id: a\n    action: block\n";
    struct { const char *lines; const char *expect; } cases [] = {
        { "    args: [x]\n", "p.yaml:4:12: each args entry must be a mapping with pointer and a test" },
        { "    args: [{pointer: /x, regex: a, regex: b}]\n", "p.yaml:4:36: regex given twice" },
        { "    args: [{pointer: /x, regex: [a]}]\n", "p.yaml:4:33: regex must be a string" },
        { "    args: [{pointer: /x, prefix: {a: 1}}]\n", "p.yaml:4:34: prefix must be a string" },
        { "    args: [{pointer: /x, equals: {[1]: 2}}]\n", "p.yaml:4:35: mapping keys must be strings" },
        { "    args: [{pointer: /x, not: 1}]\n", "p.yaml:4:31: not must be true or false" },
        { "    args: [{[1]: x}]\n", "p.yaml:4:13: keys must be strings" },
        { "    headers: [{name: a}]\n", "p.yaml:4:15: a headers entry needs a test" },
        { "    history: []\n", "p.yaml:4:14: history must be a list of {tool, args} entries" },
        { "    history: [x]\n", "p.yaml:4:15: each history entry must be a mapping with tool and/or args" },
        { "    history: [{}]\n", "p.yaml:4:15: a history entry needs tool or args" },
        { "    history: [{tool: t, when: now}]\n", "p.yaml:4:25: unknown history field 'when'" },
        { "    delete: /x\n", "p.yaml:4:13: delete must be a list of JSON pointers" },
        { "    model: ['']\n", "p.yaml:4:13: model must be a name, a glob or a list of them" },
        { "    llm_judge: {model: m, prompt: [x]}\n", "p.yaml:4:35: prompt must be a string" },
        { "    llm_judge: {model: m, max_tokens: 1.5}\n", "p.yaml:4:39: max_tokens must be a whole number from 1" },
        { "    llm_judge: {[1]: m}\n", "p.yaml:4:17: keys must be strings" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char yaml [512];
        snprintf (yaml, sizeof yaml, "%s%s", rule, cases [i].lines);
        char *error = pf_refused (yaml);
        cr_assert_not_null (error, "case %zu should fail", i);
        cr_expect (strncmp (error, cases [i].expect, strlen (cases [i].expect)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error, cases [i].expect);
        free (error);
    }
    struct { const char *yaml; const char *expect; } requests [] = {
        { "rules:\n  - {id: r, on: request, action: redact, redact: [x]}\n",
          "p.yaml:2:51: each redact entry must be a mapping with regex" },
        { "rules:\n  - {id: r, on: request, action: redact, redact: {placeholder: x}}\n",
          "p.yaml:2:50: redact needs a regex" },
        { "rules:\n  - {id: r, on: request, action: redact, redact: {regex: a, with: x}}\n",
          "p.yaml:2:61: unknown redact field 'with'" },
        { "rules:\n  - {id: r, on: request, size: {gt: 1, regex: a}, action: terminate}\n",
          "p.yaml:2:32: size takes gt, ge, lt, le (bytes) and not" },
        { "rules:\n  - {id: r, on: request, text: 5, action: terminate}\n", "p.yaml:2:32: text must be a list" },
    };
    for (size_t i = 0; i < sizeof requests / sizeof requests [0]; i++) {
        char *error = pf_refused (requests [i].yaml);
        cr_assert_not_null (error, "request case %zu should fail", i);
        cr_expect (strncmp (error, requests [i].expect, strlen (requests [i].expect)) == 0,
                   "request case %zu: got '%s', want '%s...'", i, error, requests [i].expect);
        free (error);
    }
}
