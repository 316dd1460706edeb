/*  Unit tests: a rule's decide section (common/policy): reading it, the
    input a decision service is sent (sl_policy_decide_input), and what
    its answers conclude (sl_policy_conclude). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/llm/sl_decide.h"
#include "common/policy/sl_policy_impl.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  --------------------------------------------------------------------------
//  Reading the rule

Test (sl_policy_decide, a_decide_rule_gets_the_llm_judges_defaults)
{
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - {id: r, tool: run_shell, decide: {url: 'http://127.0.0.1:8181/v1/data/s'}}\n"
                                "  - id: s\n"
                                "    action: terminate\n"
                                "    decide:\n"
                                "      url: https://opa.example/v1/data/t\n"
                                "      timeout_ms: 750\n"
                                "      on_error: terminate\n"
                                "      concurrency: 4\n"
                                "  - {id: j, llm_judge: {model: m}}\n");
    const sl_llm_spec_t *a = sl_policy_llm_spec (p, 0), *b = sl_policy_llm_spec (p, 1);
    cr_assert_not_null (a);
    cr_expect_eq (a->kind, SL_LLM_DECIDE);
    cr_expect_str_eq (a->url, "http://127.0.0.1:8181/v1/data/s");
    cr_expect_eq (a->timeout_ms, SL_LLM_DEFAULT_TIMEOUT_MS);
    cr_expect_eq (a->concurrency, SL_LLM_DEFAULT_CONCURRENCY);
    cr_expect_eq (a->on_error, SL_ACT_BLOCK, "a service that does not answer blocks");
    cr_expect_eq (p->rules [0].action, SL_ACT_BLOCK, "a denial blocks by default");
    cr_expect_eq (b->kind, SL_LLM_DECIDE);
    cr_expect_eq (b->timeout_ms, 750);
    cr_expect_eq (b->on_error, SL_ACT_TERMINATE);
    cr_expect_eq (b->concurrency, 4);
    cr_expect_eq (p->rules [1].action, SL_ACT_TERMINATE);
    cr_expect_eq (sl_policy_llm_spec (p, 2)->kind, SL_LLM_JUDGE);
    cr_expect_eq (sl_policy_decide_count (p), 2);
    cr_expect_eq (sl_policy_llm_count (p), 1, "a decision service is no LLM judge");
    cr_expect (sl_policy_uses_history (p), "a decision service is told the conversation's earlier calls");
    sl_policy_unref (&p);
}

Test (sl_policy_decide, every_error_names_line_and_column)
{
    struct { const char *yaml; const char *expect; } cases [] = {
        { "rules:\n  - id: a\n    decide: http://x\n", "p.yaml:3:13: decide must be a mapping" },
        { "rules:\n  - id: a\n    decide: {timeout_ms: 10}\n", "p.yaml:3:13: decide needs a url" },
        { "rules:\n  - id: a\n    decide: {url: 'ftp://x'}\n", "p.yaml:3:19: url must start with http:// or https://" },
        { "rules:\n  - id: a\n    decide: {url: [x]}\n", "p.yaml:3:19: url must be a string" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', timeout_ms: 0}\n",
          "p.yaml:3:43: timeout_ms must be a whole number from 1" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', timeout_ms: soon}\n",
          "p.yaml:3:43: timeout_ms must be a number" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', concurrency: 0}\n",
          "p.yaml:3:44: concurrency must be a whole number from 1" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', on_error: drop}\n",
          "p.yaml:3:41: on_error must be block, allow or terminate" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', on_error: [block]}\n",
          "p.yaml:3:41: on_error must be block, allow or terminate" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x', model: m}\n",
          "p.yaml:3:31: unknown decide field 'model' (expected url, timeout_ms, on_error, concurrency)" },
        { "rules:\n  - id: a\n    decide: {[1]: x}\n", "p.yaml:3:14: keys must be strings" },
        { "rules:\n  - id: a\n    decide: {url: 'http://x'}\n    decide: {url: 'http://y'}\n",
          "p.yaml:4:5: decide given twice" },
        { "rules:\n  - id: a\n    llm_judge: {model: m}\n    decide: {url: 'http://y'}\n",
          "p.yaml:4:5: a rule asks an llm_judge or a decide service, not both" },
        { "rules:\n  - id: a\n    decide: {url: 'http://y'}\n    llm_judge: {model: m}\n",
          "p.yaml:4:5: a rule asks an llm_judge or a decide service, not both" },
        { "rules:\n  - id: a\n    on: request\n    decide: {url: 'http://y'}\n",
          "p.yaml:2:5: rule 'a': decide judges tool calls (on: response), not a request" },
        { "rules:\n  - id: a\n    on: text\n    decide: {url: 'http://y'}\n",
          "p.yaml:2:5: rule 'a': decide judges tool calls (on: response), not the text" },
        { "rules:\n  - id: a\n    action: allow\n    decide: {url: 'http://y'}\n",
          "p.yaml:2:5: rule 'a': a decide rule acts on the calls its service denies, so its action cannot be allow" },
        { "rules:\n  - id: a\n    decide: {url: 'http://y'}\n    colour: red\n",
          "p.yaml:4:5: unknown rule field 'colour'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = pf_refused (cases [i].yaml);
        cr_assert_not_null (error, "case %zu should fail", i);
        cr_expect (strncmp (error, cases [i].expect, strlen (cases [i].expect)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error, cases [i].expect);
        free (error);
    }
}

//  --------------------------------------------------------------------------
//  The input

static const char *s_policy =
    "rules:\n"
    "  - id: shell-service\n"
    "    tool: run_shell\n"
    "    decide: {url: 'http://127.0.0.1:1/v1/data/sluice', on_error: allow}\n"
    "  - id: deploy-service\n"
    "    tool: deploy\n"
    "    action: terminate\n"
    "    message: 'no deploy: {reason}'\n"
    "    decide: {url: 'http://127.0.0.1:1/v1/data/sluice', on_error: terminate}\n"
    "  - id: git-service\n"
    "    tool: git\n"
    "    decide: {url: 'http://127.0.0.1:1/v1/data/sluice'}\n";

#define S_TOOLS "[{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":" \
                "\"string\"}},\"required\":[\"command\"]}},{\"name\":\"git\",\"schema\":{\"type\":\"object\"}}]"

static sl_call_t
s_call (const char *name, const char *args)
{
    sl_call_t c = pf_call (name, args);
    c.model = sl_str ("gpt-x");
    c.last_user = sl_str ("clean up");
    c.tools = sl_str (S_TOOLS);
    c.history = sl_str ("[{\"name\":\"git\",\"args\":{\"cmd\":\"status\"}}]");
    c.key_id = sl_str ("k_team_a");
    c.team = sl_str ("payments");
    c.user = sl_str ("ana");
    return c;
}

static json_t *
s_input (sl_policy_t *p, int rule, const sl_call_t *c)
{
    sl_buf_t body = { 0 };
    sl_policy_decide_input (p, rule, c, &body);
    json_t *root = json_loadb (body.data ? body.data : "", body.len, 0, NULL);
    cr_assert_not_null (root, "the body is JSON: %s", sl_buf_cstr (&body));
    sl_buf_free (&body);
    json_t *input = json_object_get (root, "input");
    cr_assert (json_is_object (input), "the body is {\"input\": {...}}");
    json_incref (input);
    json_decref (root);
    return input;
}

static const char *
s_get (json_t *input, const char *path)
{
    static char text [1024];
    json_t *v = input;
    char copy [128];
    snprintf (copy, sizeof copy, "%s", path);
    for (char *t = strtok (copy, "."); t && v; t = strtok (NULL, "."))
        v = json_is_array (v) ? json_array_get (v, (size_t) atoi (t)) : json_object_get (v, t);
    if (!v)
        return "(absent)";
    if (json_is_string (v))
        return json_string_value (v);
    char *dump = json_dumps (v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf (text, sizeof text, "%s", dump);
    free (dump);
    return text;
}

Test (sl_policy_decide, the_input_has_the_call_and_its_context)
{
    sl_policy_t *p = pf_policy (s_policy);
    sl_call_t c = s_call ("run_shell", "{\"command\":\"rm -rf /\"}");
    sl_decision_t d = pf_decide (p, c);
    cr_expect_eq (d.action, SL_ACT_NONE, "the service must be asked");
    cr_expect_eq (d.llm_rule, 0);
    json_t *in = s_input (p, d.llm_rule, &c);
    cr_expect_str_eq (s_get (in, "identity.key_id"), "k_team_a");
    cr_expect_str_eq (s_get (in, "identity.team"), "payments");
    cr_expect_str_eq (s_get (in, "identity.user"), "ana");
    cr_expect_str_eq (s_get (in, "model"), "gpt-x");
    cr_expect_str_eq (s_get (in, "tool"), "run_shell");
    cr_expect_str_eq (s_get (in, "arguments.command"), "rm -rf /", "arguments as JSON, not as text");
    cr_expect_str_eq (s_get (in, "tools.0.name"), "run_shell");
    cr_expect_str_eq (s_get (in, "tools.0.schema.required"), "[\"command\"]");
    cr_expect_str_eq (s_get (in, "history.0.args.cmd"), "status");
    cr_expect_str_eq (s_get (in, "last_user"), "clean up");
    cr_expect_str_eq (s_get (in, "rule"), "shell-service");
    cr_expect_str_eq (s_get (in, "policy.version"), sl_policy_id (p));
    cr_expect_str_eq (s_get (in, "policy.file"), PF_NAME);
    cr_expect_str_eq (s_get (in, "cut"), "null");
    json_decref (in);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, what_is_not_there_is_null_and_what_is_not_json_is_text)
{
    sl_policy_t *p = pf_policy ("rules:\n  - id: any\n    cut: eof\n    decide: {url: 'http://x'}\n");
    //  A call cut off: its arguments are not JSON; no identity, no tools.
    sl_call_t c = pf_cut_call ("write_file", "{\"path\": \"/etc/pass", SL_CUT_EOF);
    c.last_user = sl_str_n ("caf\xc3", 4);      //  cut inside a UTF-8 sequence
    json_t *in = s_input (p, 0, &c);
    cr_expect_str_eq (s_get (in, "identity"), "{\"key_id\":null,\"team\":null,\"user\":null}");
    cr_expect_str_eq (s_get (in, "model"), "null");
    cr_expect_str_eq (s_get (in, "arguments"), "{\"path\": \"/etc/pass");
    cr_expect_str_eq (s_get (in, "tools"), "[]");
    cr_expect_str_eq (s_get (in, "history"), "[]");
    cr_expect_str_eq (s_get (in, "last_user"), "caf\xef\xbf\xbd", "repaired, still JSON");
    cr_expect_str_eq (s_get (in, "cut"), "eof");
    json_decref (in);
    //  Nothing for a rule out of range.
    sl_buf_t body = { 0 };
    sl_policy_decide_input (p, 7, &c, &body);
    cr_expect_eq (body.len, 0);
    sl_buf_free (&body);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, the_same_call_asks_the_same_question)
{
    //  Kept answers are found by the body: it must not change between asks.
    sl_policy_t *p = pf_policy (s_policy);
    sl_call_t c = s_call ("run_shell", "{\"command\":\"ls\"}");
    sl_buf_t a = { 0 }, b = { 0 };
    sl_policy_decide_input (p, 0, &c, &a);
    sl_policy_decide_input (p, 0, &c, &b);
    cr_expect_str_eq (sl_buf_cstr (&a), sl_buf_cstr (&b));
    c.user = sl_str ("bo");
    sl_buf_reset (&b);
    sl_policy_decide_input (p, 0, &c, &b);
    cr_expect_str_neq (sl_buf_cstr (&a), sl_buf_cstr (&b), "another user asks another question");
    sl_buf_free (&a);
    sl_buf_free (&b);
    sl_policy_unref (&p);
}

//  --------------------------------------------------------------------------
//  Concluding

//  The decision for call under rule index, concluded with an answer
//  (status and body, as sl_decide reads them) or a failed check.
static sl_decision_t
s_conclude (sl_policy_t *p, sl_call_t c, int status, const char *body)
{
    sl_decision_t d = pf_decide (p, c);
    cr_assert_eq (d.action, SL_ACT_NONE, "pending");
    sl_llm_result_t r;
    sl_decide_parse_answer (status, sl_str (body), &r);
    sl_policy_conclude (p, &c, &r, &d);
    sl_llm_result_clear (&r);
    cr_expect_eq (d.llm_rule, -1, "no longer pending");
    cr_expect (isnan (d.probability));
    return d;
}

Test (sl_policy_decide, allow_runs_the_call_and_says_why)
{
    sl_policy_t *p = pf_policy (s_policy);
    sl_decision_t d = s_conclude (p, s_call ("run_shell", "{\"command\":\"ls\"}"), 200,
                                  "{\"result\":{\"allow\":true,\"reason\":\"read-only\"}}");
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_str_eq (d.rule, "shell-service");
    cr_expect_str_eq (d.reason, "decision service allowed: read-only");
    cr_expect_null (d.arguments);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, deny_takes_the_rules_action_with_the_services_reason)
{
    sl_policy_t *p = pf_policy (s_policy);
    sl_decision_t d = s_conclude (p, s_call ("run_shell", "{\"command\":\"rm -rf /\"}"), 200,
                                  "{\"result\":{\"allow\":false,\"reason\":\"no deletes on prod\"}}");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_str_eq (d.reason, "decision service denied: no deletes on prod");
    cr_expect_not_null (strstr (d.message, "run_shell"), "%s", d.message);
    sl_decision_clear (&d);
    d = s_conclude (p, s_call ("deploy", "{}"), 200, "{\"result\":{\"allow\":false}}");
    cr_expect_eq (d.action, SL_ACT_TERMINATE);
    cr_expect_str_eq (d.reason, "decision service denied: no reason given");
    cr_expect_str_eq (d.message, "no deploy: decision service denied: no reason given");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, a_rewrite_runs_only_when_it_matches_the_tools_schema)
{
    sl_policy_t *p = pf_policy (s_policy);
    sl_decision_t d = s_conclude (p, s_call ("run_shell", "{\"command\":\"rm -rf /\"}"), 200,
                                  "{\"result\":{\"allow\":true,\"reason\":\"dry run\","
                                  "\"rewrite\":{\"command\":\"echo rm -rf /\"}}}");
    cr_expect_eq (d.action, SL_ACT_REWRITE);
    cr_expect_eq (d.check, SL_CHK_RAN);
    cr_expect_str_eq (d.arguments, "{\"command\":\"echo rm -rf /\"}");
    cr_expect_str_eq (d.reason, "decision service allowed with a rewrite: dry run");
    sl_decision_clear (&d);

    //  shell-service: on_error allow. The rewrite that does not fit never
    //  runs; on_error lets the call run as sent, on record as a check
    //  that failed.
    d = s_conclude (p, s_call ("run_shell", "{\"command\":\"ls\"}"), 200,
                    "{\"result\":{\"allow\":true,\"rewrite\":{\"command\":42}}}");
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_ERROR, "never a pass");
    cr_expect_null (d.arguments, "the rewrite is not used");
    cr_expect_not_null (strstr (d.reason, "rewrite does not match the tool's schema (/command: expected string"),
                        "%s", d.reason);
    cr_expect_not_null (strstr (d.reason, "on_error: allow"), "%s", d.reason);
    sl_decision_clear (&d);

    //  git-service: on_error block (the default).
    d = s_conclude (p, s_call ("git", "{\"cmd\":\"push\"}"), 200,
                    "{\"result\":{\"allow\":true,\"rewrite\":{\"cmd\":\"push --dry-run\"}}}");
    cr_expect_eq (d.action, SL_ACT_REWRITE, "git's schema takes any object");
    sl_decision_clear (&d);
    sl_call_t undeclared = s_call ("git", "{\"cmd\":\"push\"}");
    undeclared.tools = SL_STR_NULL;
    d = s_conclude (p, undeclared, 200, "{\"result\":{\"allow\":true,\"rewrite\":{\"cmd\":\"status\"}}}");
    cr_expect_eq (d.action, SL_ACT_BLOCK, "a tool the request did not declare has no schema to check against");
    cr_expect_eq (d.check, SL_CHK_ERROR);
    cr_expect_not_null (strstr (d.reason, "on_error: block"), "%s", d.reason);
    cr_expect_not_null (d.message);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, a_check_that_did_not_run_takes_on_error_and_says_which)
{
    sl_policy_t *p = pf_policy (s_policy);
    //  A bad answer: on_error block (git-service), allow (shell-service),
    //  terminate (deploy-service), each an ERROR check.
    sl_decision_t d = s_conclude (p, s_call ("git", "{}"), 200, "<html>oops</html>");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_ERROR);
    cr_expect_str_eq (d.reason, "decision service failed: the decision service's answer is not a JSON object: "
                                "<html>oops</html>; on_error: block");
    cr_expect_not_null (d.message);
    sl_decision_clear (&d);
    d = s_conclude (p, s_call ("run_shell", "{\"command\":\"ls\"}"), 500, "boom");
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_ERROR, "allowed, and on record as a check that did not run");
    cr_expect_not_null (strstr (d.reason, "HTTP 500"), "%s", d.reason);
    sl_decision_clear (&d);
    d = s_conclude (p, s_call ("deploy", "{}"), 200, "{\"result\":{\"allow\":\"yes\"}}");
    cr_expect_eq (d.action, SL_ACT_TERMINATE);
    cr_expect_eq (d.check, SL_CHK_ERROR);
    cr_expect_not_null (strstr (d.reason, "allow is not a boolean"), "%s", d.reason);
    cr_expect_str_eq (d.message, "no deploy: decision service failed: the decision service's allow is not a boolean: "
                                 "{\"result\":{\"allow\":\"yes\"}}; on_error: terminate");
    sl_decision_clear (&d);

    //  A timeout, as the client reports it.
    sl_call_t c = s_call ("git", "{}");
    d = pf_decide (p, c);
    sl_llm_result_t r = { 0 };
    sl_llm_result_fail (&r, SL_CHK_TIMEOUT, "no answer within 200 ms");
    sl_policy_conclude (p, &c, &r, &d);
    sl_llm_result_clear (&r);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_TIMEOUT);
    cr_expect_str_eq (d.reason, "decision service timed out: no answer within 200 ms; on_error: block");
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_policy_decide, a_call_over_the_size_bound_is_never_released)
{
    sl_policy_t *p = pf_policy ("rules:\n  - id: s\n    cut: size\n    decide: {url: 'http://x'}\n");
    sl_decision_t d = s_conclude (p, pf_cut_call ("run_shell", "{\"command\":\"aaaa", SL_CUT_SIZE), 200,
                                  "{\"result\":{\"allow\":true}}");
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_not_null (strstr (d.reason, "never released"), "%s", d.reason);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}
