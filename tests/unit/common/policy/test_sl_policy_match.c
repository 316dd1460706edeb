/*  Unit tests: common/policy/sl_policy_match (the tests both evaluations
    run: on a JSON value, at a pointer, on a text, a number, a header, a
    name; a regex's required literal). Each matcher is tested through a
    whole call first, then directly. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy/sl_policy_impl.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  --------------------------------------------------------------------------
//  Through a call

Test (sl_policy_match, match_tool_exact_glob_and_list)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: exact\n    tool: read_file\n    action: allow\n"
                               "  - id: glob\n    tool: 'fs_*'\n    action: block\n"
                               "  - id: list\n    tool: [run_shell, 'exec_?', write_file]\n    action: block\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("read_file", "{}")), "exact");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("read_files", "{}")), "", "exact means exact");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("fs_delete", "{}")), "glob");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("xfs_delete", "{}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("run_shell", "{}")), "list");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("exec_1", "{}")), "list", "globs inside a list");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("write_file", "{}")), "list");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("exec_10", "{}")), "");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_model)
{
    sl_policy_t *p = pf_rule ("    model: ['gpt-4*', claude-opus]\n");
    sl_call_t c = pf_call ("t", "{}");
    c.model = sl_str ("gpt-4o-mini");
    cr_expect_str_eq (pf_rule_of (p, c), "r");
    c.model = sl_str ("claude-opus");
    cr_expect_str_eq (pf_rule_of (p, c), "r");
    c.model = sl_str ("gpt-3.5");
    cr_expect_str_eq (pf_rule_of (p, c), "");
    c.model = SL_STR_NULL;
    cr_expect_str_eq (pf_rule_of (p, c), "", "no model: no match");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_headers)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: team-infra\n    headers: [{name: X-Team, equals: infra}]\n"
                               "    action: allow\n"
                               "  - id: bot\n    headers: [{name: user-agent, regex: 'bot'}]\n    action: block\n"
                               "  - id: anonymous\n    headers: [{name: x-team, exists: false}]\n"
                               "    action: block\n");
    sl_call_t c = pf_call ("t", "{}");
    c.headers = sl_str ("{\"x-team\":\"infra\",\"user-agent\":\"crawl-bot\"}");
    cr_expect_str_eq (pf_rule_of (p, c), "team-infra", "header names match in lower case");
    c.headers = sl_str ("{\"x-team\":\"data\",\"user-agent\":\"crawl-bot\"}");
    cr_expect_str_eq (pf_rule_of (p, c), "bot");
    c.headers = sl_str ("{\"user-agent\":\"curl\"}");
    cr_expect_str_eq (pf_rule_of (p, c), "anonymous");
    c.headers = sl_str ("{\"x-team\":\"in\\u0066ra\"}");
    cr_expect_str_eq (pf_rule_of (p, c), "team-infra", "escaped header values are decoded");
    c.headers = SL_STR_NULL;
    cr_expect_str_eq (pf_rule_of (p, c), "anonymous", "no headers at all");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_regex)
{
    sl_policy_t *p = pf_rule ("    args:\n      - pointer: /cmd\n        regex: '^sudo '\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"cmd\":\"sudo ls\"}")), "r");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"cmd\":\"ls sudo \"}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"other\":\"sudo ls\"}")), "", "missing value");
    sl_policy_unref (&p);
    //  A NUL inside a string does not hide what follows it.
    p = pf_rule ("    args:\n      - pointer: /cmd\n        regex: 'rm -rf'\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"cmd\":\"ls\\u0000; rm -rf /\"}")), "r");
    sl_policy_unref (&p);
    //  Non-strings are matched in their compact JSON form.
    p = pf_rule ("    args:\n      - pointer: /opts\n        regex: '\"force\":true'\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"opts\":{ \"force\" : true }}")), "r");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_equals_with_yaml_types)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: str\n    args: [{pointer: /a, equals: '5'}]\n    action: block\n"
                               "  - id: num\n    args: [{pointer: /a, equals: 5}]\n    action: block\n"
                               "  - id: bool\n    args: [{pointer: /b, equals: true}]\n    action: block\n"
                               "  - id: obj\n    args: [{pointer: /o, equals: {x: [1, two]}}]\n    action: block\n"
                               "  - id: nul\n    args: [{pointer: /n, equals: null}]\n    action: block\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"a\":\"5\"}")), "str", "a quoted 5 is a string");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"a\":5}")), "num", "a plain 5 is a number");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"a\":5.0}")), "num", "numbers compare by value");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"a\":6}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"b\":true}")), "bool");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"b\":\"true\"}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"o\":{\"x\":[1,\"two\"]}}")), "obj");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"o\":{\"x\":[1]}}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":null}")), "nul");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_contains)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: sub\n    args: [{pointer: /s, contains: prod}]\n    action: block\n"
                               "  - id: elem\n    args: [{pointer: /tags, contains: prod}]\n    action: block\n"
                               "  - id: num\n    args: [{pointer: /ids, contains: 7}]\n    action: block\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"s\":\"db-production\"}")), "sub");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"s\":\"db-staging\"}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"tags\":[\"dev\",\"prod\"]}")), "elem");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"tags\":[\"production\"]}")), "", "arrays: whole elements");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"ids\":[1,7.0]}")), "num");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"ids\":7}")), "", "a number contains nothing");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_prefix)
{
    sl_policy_t *p = pf_rule ("    args:\n      - pointer: /path\n        prefix: /etc/\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":\"/etc/passwd\"}")), "r");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":\"/home/etc/x\"}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":\"/etc\"}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":42}")), "", "prefix tests strings only");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_numeric_comparisons)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: gt\n    args: [{pointer: /n, gt: 100}]\n    action: block\n"
                               "  - id: ge\n    args: [{pointer: /n, ge: 100}]\n    action: block\n"
                               "  - id: lt\n    args: [{pointer: /n, lt: -1.5}]\n    action: block\n"
                               "  - id: le\n    args: [{pointer: /n, le: -1.5}]\n    action: block\n"
                               "  - id: range\n    args: [{pointer: /m, ge: 1, le: 3}]\n    action: block\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":100.5}")), "gt");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":100}")), "ge");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":-2}")), "lt");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":-1.5}")), "le");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":0}")), "");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"n\":\"1000\"}")), "", "a numeric string is not a number");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"m\":2}")), "range", "tests of one entry all hold");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"m\":4}")), "");
    sl_policy_unref (&p);
}

Test (sl_policy_match, match_args_exists_and_not)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                               "  - id: has-force\n    args: [{pointer: /force, exists: true}]\n    action: block\n"
                               "  - id: no-path\n    args: [{pointer: /path, exists: false}]\n    action: block\n"
                               "  - id: not-tmp\n    args: [{pointer: /path, prefix: /tmp/, not: true}]\n"
                               "    action: block\n");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"force\":false,\"path\":\"/tmp/x\"}")), "has-force",
                      "exists holds for any value, false included");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{}")), "no-path");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":\"/etc/x\"}")), "not-tmp");
    cr_expect_str_eq (pf_rule_of (p, pf_call ("t", "{\"path\":\"/tmp/x\"}")), "");
    sl_policy_unref (&p);
}

//  --------------------------------------------------------------------------
//  Directly

//  A matcher read from one args entry (YAML flow mapping); *p keeps it.
static const sl_policy_matcher_t *
s_matcher (sl_policy_t **p, const char *entry)
{
    char yaml [512];
    snprintf (yaml, sizeof yaml, "rules:\n  - id: r\n    action: block\n    args: [%s]\n", entry);
    *p = pf_policy (yaml);
    return &(*p)->rules [0].args [0];
}

//  Does the matcher of entry pass the JSON value (NULL: absent)?
static bool
s_value (const char *entry, const char *json)
{
    sl_policy_t *p;
    const sl_policy_matcher_t *m = s_matcher (&p, entry);
    json_t *value = json ? json_loads (json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
    cr_assert (!json || value, "bad test JSON: %s", json);
    bool hit = sl_policy_match_value (m, value);
    json_decref (value);
    sl_policy_unref (&p);
    return hit;
}

Test (sl_policy_match, a_value_against_each_test)
{
    struct { const char *entry; const char *json; bool hit; } cases [] = {
        { "{pointer: /x, regex: '^ab'}", "\"abc\"", true },
        { "{pointer: /x, regex: '^ab'}", "\"cab\"", false },
        { "{pointer: /x, regex: 'rm -rf'}", "\"ls\\u0000; rm -rf /\"", true },       //  past a NUL
        { "{pointer: /x, regex: '^42$'}", "42", true },                               //  compact JSON
        { "{pointer: /x, regex: '^\\[1,2\\]$'}", "[1, 2]", true },
        { "{pointer: /x, equals: 5}", "5.0", true },
        { "{pointer: /x, equals: 5}", "\"5\"", false },
        { "{pointer: /x, equals: {a: [1]}}", "{\"a\":[1]}", true },
        { "{pointer: /x, contains: ''}", "\"anything\"", true },
        { "{pointer: /x, contains: b}", "\"abc\"", true },
        { "{pointer: /x, contains: 2}", "[1, 2.0]", true },
        { "{pointer: /x, contains: b}", "{\"b\":1}", false },                          //  not in objects
        { "{pointer: /x, prefix: ab}", "\"ab\"", true },
        { "{pointer: /x, prefix: ab}", "[\"ab\"]", false },
        { "{pointer: /x, gt: 1}", "\"2\"", false },                                    //  numbers only
        { "{pointer: /x, ge: 1, le: 1}", "1", true },
        { "{pointer: /x, lt: 0}", "-0.5", true },
        { "{pointer: /x, exists: true}", "null", true },
        { "{pointer: /x, exists: true}", NULL, false },
        { "{pointer: /x, exists: false}", NULL, true },
        { "{pointer: /x, exists: false}", "0", false },
        { "{pointer: /x, regex: a}", NULL, false },                                    //  absent fails a test
        { "{pointer: /x, regex: a, not: true}", NULL, true },                          //  ... and not inverts it
        { "{pointer: /x, regex: a, not: true}", "\"a\"", false },
        { "{pointer: /x, regex: a, prefix: b}", "\"ba\"", true },                      //  every test must hold
        { "{pointer: /x, regex: a, prefix: b}", "\"ab\"", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++)
        cr_expect_eq (s_value (cases [i].entry, cases [i].json), cases [i].hit, "%s on %s", cases [i].entry,
                      cases [i].json ? cases [i].json : "(absent)");
}

Test (sl_policy_match, an_argument_test_follows_its_pointer)
{
    json_t *args = json_loads ("{\"a\":{\"b\":[10,20,\"s\"]},\"a/b\":1,\"m~n\":2,\"\":3}", 0, NULL);
    cr_assert_not_null (args);
    struct { const char *entry; bool hit; } cases [] = {
        { "{pointer: /a/b/1, equals: 20}", true },
        { "{pointer: /a/b/0, equals: 10}", true },
        { "{pointer: /a/b/3, exists: false}", true },                                  //  past the end
        { "{pointer: /a/b/x, exists: false}", true },                                  //  not an index
        { "{pointer: /a/b/-1, exists: false}", true },
        { "{pointer: /a/b/, exists: false}", true },
        { "{pointer: /a/b/2/c, exists: false}", true },                                //  through a string
        { "{pointer: /a~1b, equals: 1}", true },
        { "{pointer: /m~0n, equals: 2}", true },
        { "{pointer: /, equals: 3}", true },                                           //  the empty member
        { "{pointer: '', contains: x}", false },
        { "{pointer: '', exists: true}", true },                                       //  the whole document
        { "{pointer: /A, exists: false}", true },                                      //  names are exact
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_policy_t *p;
        const sl_policy_matcher_t *m = s_matcher (&p, cases [i].entry);
        cr_expect_eq (sl_policy_match_arg (m, args), cases [i].hit, "%s", cases [i].entry);
        sl_policy_unref (&p);
    }
    json_decref (args);
}

Test (sl_policy_match, a_text_is_a_string_of_known_length)
{
    sl_policy_t *p;
    const sl_policy_matcher_t *m = s_matcher (&p, "{pointer: /x, regex: 'tail$'}");
    cr_expect (sl_policy_match_text (m, sl_str_n ("head\0tail", 9)), "a NUL does not end the text");
    cr_expect (!sl_policy_match_text (m, sl_str_n ("tail\0head", 9)));
    cr_expect (sl_policy_match_text (m, sl_str_n ("tailx", 4)), "the length ends it, not a NUL");
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, gt: 1}");
    cr_expect (!sl_policy_match_text (m, sl_str ("5")), "a text is no number");
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, gt: 1, not: true}");
    cr_expect (sl_policy_match_text (m, sl_str ("5")));
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, equals: 5}");
    cr_expect (!sl_policy_match_text (m, sl_str ("5")), "equals a number: never a text");
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, equals: ''}");
    cr_expect (sl_policy_match_text (m, SL_STR_NULL), "an absent text is empty");
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, contains: 5}");
    cr_expect (!sl_policy_match_text (m, sl_str ("5")), "contains a number: never a text");
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, prefix: abcd}");
    cr_expect (!sl_policy_match_text (m, sl_str ("abc")), "a prefix longer than the text");
    cr_expect (sl_policy_match_text (m, sl_str ("abcde")));
    sl_policy_unref (&p);
}

Test (sl_policy_match, numbers)
{
    sl_policy_t *p;
    const sl_policy_matcher_t *m = s_matcher (&p, "{pointer: /x, ge: 2, lt: 4}");
    cr_expect (sl_policy_match_number (m, 2));
    cr_expect (sl_policy_match_number (m, 3.5));
    cr_expect (!sl_policy_match_number (m, 4));
    cr_expect (!sl_policy_match_number (m, 1.99));
    sl_policy_unref (&p);
    m = s_matcher (&p, "{pointer: /x, gt: 10, not: true}");
    cr_expect (sl_policy_match_number (m, 10));
    cr_expect (!sl_policy_match_number (m, 11));
    sl_policy_unref (&p);
}

Test (sl_policy_match, headers_are_decoded_strings)
{
    sl_policy_t *p = pf_policy ("rules:\n  - {id: r, action: block, headers: [{name: X-Team, equals: infra}]}\n"
                                "  - {id: s, action: block, headers: [{name: x-team, exists: false}]}\n");
    const sl_policy_matcher_t *team = &p->rules [0].headers [0], *none = &p->rules [1].headers [0];
    cr_expect (sl_policy_match_header (team, sl_str ("{\"x-team\":\"infra\"}")));
    cr_expect (sl_policy_match_header (team, sl_str ("{\"x-team\":\"in\\u0066ra\"}")), "escapes decoded");
    cr_expect (!sl_policy_match_header (team, sl_str ("{\"x-team\":\"infra2\"}")));
    cr_expect (!sl_policy_match_header (team, sl_str ("{\"X-Team\":\"infra\"}")), "the request's names are lower case");
    cr_expect (!sl_policy_match_header (team, SL_STR_NULL));
    cr_expect (sl_policy_match_header (none, SL_STR_NULL), "no headers: the header is absent");
    cr_expect (sl_policy_match_header (none, sl_str ("{\"x-other\":\"1\"}")));
    cr_expect (!sl_policy_match_header (none, sl_str ("{\"x-team\":\"\"}")), "present, even empty");
    sl_policy_unref (&p);
}

Test (sl_policy_match, names_exact_or_glob)
{
    sl_policy_t *p = pf_rule ("    tool: [read_file, '*_tool', 'x?']\n");
    const sl_policy_names_t *n = &p->rules [0].tools;
    cr_expect (sl_policy_match_names (n, sl_str ("read_file")));
    cr_expect (!sl_policy_match_names (n, sl_str ("read_fil")));
    cr_expect (!sl_policy_match_names (n, sl_str_n ("read_file\0x", 11)), "a NUL does not end an exact name");
    cr_expect (sl_policy_match_names (n, sl_str ("my_tool")));
    cr_expect (sl_policy_match_names (n, sl_str ("xy")));
    cr_expect (!sl_policy_match_names (n, sl_str ("xyz")));
    cr_expect (!sl_policy_match_names (n, SL_STR_NULL), "no name matches nothing");
    cr_expect (!sl_policy_match_names (n, sl_str ("")));
    //  A name too long for the stack is matched on the heap.
    char longname [1024];
    memset (longname, 'a', sizeof longname);
    memcpy (longname + sizeof longname - 6, "_tool", 6);
    cr_expect (sl_policy_match_names (n, sl_str (longname)));
    longname [sizeof longname - 2] = 'x';
    cr_expect (!sl_policy_match_names (n, sl_str (longname)));
    sl_policy_unref (&p);
}

Test (sl_policy_match, a_regex_s_required_literal)
{
    struct { const char *regex; const char *literal; } cases [] = {
        { "sudo rm", "sudo rm" },
        { "^sudo ", "sudo " },
        { "ab", NULL },                 //  too short to be worth a memmem
        { "rm|del", NULL },             //  an alternation: no text every match holds
        { "(rm|del) -rf /", " -rf /" },
        { "[|]abc", "abc" },            //  a | in brackets is no alternation
        { "x*yzw", "yzw" },             //  an optional atom holds nothing
        { "ab?cde", "cde" },
        { "a{2}bcd", "bcd" },
        { "abc+de", "abc" },            //  one c at least: the run ends after it
        { "foo\\.bar", "foo.bar" },     //  an escaped dot is a dot
        { "\\bword\\b", "word" },       //  \\b holds no text
        { "[abc]def[^g]hi", "def" },
        { "rm[[:space:]]+-rf", "-rf" },
        { "[[:space:]]password", "password" },  //  a class's ']' does not close the brackets
        { "[^[:alnum:]]secret[[.-.]]key", "secret" },
        { "[[=e=]x]tail", "tail" },
        { "[[:space:]unclosed", NULL },
        { "[unclosed", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *literal = sl_policy_match_literal (cases [i].regex);
        if (cases [i].literal)
            cr_expect (literal && strcmp (literal, cases [i].literal) == 0, "%s: got '%s', want '%s'",
                       cases [i].regex, literal ? literal : "(none)", cases [i].literal);
        else
            cr_expect_null (literal, "%s: got '%s', want none", cases [i].regex, literal ? literal : "");
        free (literal);
    }
}

Test (sl_policy_match, a_regex_over_a_text_looks_for_its_literal_first)
{
    regex_t re;
    cr_assert_eq (regcomp (&re, "a", REG_EXTENDED | REG_NOSUB), 0);
    cr_expect (sl_policy_match_regex (&re, NULL, sl_str ("cat")));
    cr_expect (!sl_policy_match_regex (&re, "zzz", sl_str ("cat")), "without the literal the regex is not run");
    cr_expect (sl_policy_match_regex (&re, "ca", sl_str ("cat")));
    cr_expect (!sl_policy_match_regex (&re, NULL, SL_STR_NULL));
    regfree (&re);
    cr_assert_eq (regcomp (&re, "^tail", REG_EXTENDED | REG_NOSUB), 0);
    cr_expect (!sl_policy_match_regex (&re, NULL, sl_str_n ("head\0tail", 9)), "a NUL is no line start");
    regfree (&re);
}
