/*  Unit tests: common/policy/sl_ask (action ask: its settings, the digest
    an approval is bound to, who may decide, how a person's decision or
    its absence becomes the call's decision). */
#include <math.h>

#include "tests/unit/common/policy/policy_fixture.h"

static const char *s_ask_policy =
    "rules:\n"
    "  - id: push\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'git push'}]\n"
    "    action: ask\n"
    "    ask:\n"
    "      timeout_ms: 60000\n"
    "      on_timeout: allow\n"
    "      approvers: [team:platform, user:alice, key:k1, console]\n"
    "      message: '{user} of {team} wants {tool}: {arguments} ({rule}, {model})'\n"
    "      remember_max_minutes: 30\n"
    "      allow_self: true\n"
    "  - id: pay\n"
    "    tool: pay\n"
    "    action: ask\n"
    "    message: 'no payment: {reason}'\n";

static int
s_rule_of (sl_policy_t *p, const char *id)
{
    for (int i = 0; i < sl_policy_rule_count (p); i++)
        if (strcmp (sl_policy_rule_id (p, i), id) == 0)
            return i;
    return -1;
}

Test (sl_ask, settings_and_defaults)
{
    sl_policy_t *p = pf_policy (s_ask_policy);
    cr_expect_eq (sl_policy_ask_count (p), 2);
    const sl_ask_spec_t *a = sl_policy_ask_spec (p, s_rule_of (p, "push"));
    cr_assert_not_null (a);
    cr_expect_eq (a->timeout_ms, 60000);
    cr_expect_eq (a->on_timeout, SL_ACT_ALLOW);
    cr_expect_eq (a->approver_count, 4);
    cr_expect_str_eq (a->approvers [3], "console");
    cr_expect_eq (a->remember_max_minutes, 30);
    cr_expect (a->allow_self);
    const sl_ask_spec_t *d = sl_policy_ask_spec (p, s_rule_of (p, "pay"));
    cr_assert_not_null (d);
    cr_expect_eq (d->timeout_ms, SL_ASK_DEFAULT_TIMEOUT_MS);
    cr_expect_eq (d->on_timeout, SL_ACT_BLOCK);
    cr_expect_eq (d->approver_count, 0);
    cr_expect_eq (d->remember_max_minutes, 0);
    cr_expect_not (d->allow_self, "another person decides unless the rule says otherwise");
    cr_expect_null (sl_policy_llm_spec (p, s_rule_of (p, "pay")), "a person is not an LLM judge");
    sl_policy_unref (&p);
}

Test (sl_ask, errors_name_the_place)
{
    static const struct { const char *yaml; const char *error; } cases [] = {
        { "rules:\n  - id: a\n    tool: t\n    action: block\n    ask: {timeout_ms: 5}\n",
          "ask: settings need action: ask" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {on_timeout: drop}\n",
          "p.yaml:5:23: on_timeout must be block, allow or terminate" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {approvers: [alice]}\n",
          "p.yaml:5:23: an approver is team:NAME, user:NAME, key:ID or console" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {timeout_ms: 99999999}\n",
          "timeout_ms" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {remember_max_minutes: 100000}\n",
          "remember_max_minutes" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {colour: red}\n",
          "unknown ask field 'colour'" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: {allow_self: maybe}\n", "allow_self" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n    ask: 5\n", "ask must be a mapping" },
        { "rules:\n  - id: a\n    on: request\n    action: ask\n", "not a request or its text" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n"
          "    llm_judge: {url: 'http://127.0.0.1:1/x', model: m}\n", "an LLM judge or a decision service: one of them" },
        { "rules:\n  - id: a\n    tool: t\n    action: ask\n"
          "    decide: {url: 'http://127.0.0.1:1/v1/data/x'}\n", "an LLM judge or a decision service: one of them" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = pf_refused (cases [i].yaml);
        cr_assert_not_null (error, "case %zu must be refused", i);
        cr_expect (strstr (error, cases [i].error), "case %zu: '%s' should say '%s'", i, error, cases [i].error);
        free (error);
    }
}

//  Who is the caller whose call waits: the same user (any key, any team),
//  the same key (but for a signing key's tokens naming other users).
Test (sl_ask, the_caller_is_the_same_user_or_the_same_key)
{
    sl_ask_by_t same_key = { .key_id = sl_str ("bob-agent"), .team = sl_str ("eng"), .user = sl_str ("bob"),
                             .approver = true };
    sl_ask_by_t other_key_same_user = { .key_id = sl_str ("bob-laptop"), .team = sl_str ("ops"),
                                        .user = sl_str ("bob"), .approver = true };
    sl_ask_by_t alice = { .key_id = sl_str ("alice"), .team = sl_str ("eng"), .user = sl_str ("alice"),
                          .approver = true };
    sl_ask_by_t userless_key = { .key_id = sl_str ("ci-1"), .team = sl_str ("eng") };
    sl_ask_by_t console = { .console = true };
    sl_ask_by_t loopback = { .loopback = true };
    sl_str_t bob = sl_str ("bob");
    cr_expect (sl_ask_is_caller (sl_str ("bob-agent"), bob, &same_key));
    cr_expect (sl_ask_is_caller (sl_str ("bob-agent"), bob, &other_key_same_user), "the same person");
    cr_expect_not (sl_ask_is_caller (sl_str ("bob-agent"), bob, &alice));
    cr_expect (sl_ask_is_caller (sl_str ("ci-1"), SL_STR_NULL, &userless_key), "a key naming no user is its caller");
    cr_expect_not (sl_ask_is_caller (sl_str ("ci-2"), SL_STR_NULL, &userless_key));
    cr_expect_not (sl_ask_is_caller (sl_str ("bob-agent"), bob, &console), "a console user is no key");
    cr_expect_not (sl_ask_is_caller (SL_STR_NULL, SL_STR_NULL, &loopback), "without keys nobody is told apart");
    cr_expect_not (sl_ask_is_caller (sl_str ("bob-agent"), bob, NULL));
    //  Tokens: every user of a signing key shares its key id.
    sl_ask_by_t token_alice = { .key_id = sl_str ("jwt:idp-1"), .team = sl_str ("eng"), .user = sl_str ("alice") };
    sl_ask_by_t token_bob = { .key_id = sl_str ("jwt:idp-2"), .team = sl_str ("eng"), .user = sl_str ("bob") };
    sl_ask_by_t token_nobody = { .key_id = sl_str ("jwt:idp-1"), .team = sl_str ("eng") };
    cr_expect_not (sl_ask_is_caller (sl_str ("jwt:idp-1"), bob, &token_alice), "another user of the same key");
    cr_expect_not (sl_ask_is_caller (sl_str ("jwt"), bob, &(sl_ask_by_t) { .key_id = sl_str ("jwt"),
                                                                           .user = sl_str ("carol") }));
    cr_expect (sl_ask_is_caller (sl_str ("jwt:idp-1"), bob, &token_bob), "the same user, another signing key");
    cr_expect (sl_ask_is_caller (sl_str ("bob-agent"), bob, &token_bob), "the same user, a token and a key");
    cr_expect (sl_ask_is_caller (sl_str ("jwt:idp-1"), bob, &token_nobody), "a token naming nobody: not told apart");
}

Test (sl_ask, digest_binds_tool_arguments_and_policy)
{
    char a [SL_ASK_DIGEST_SIZE], b [SL_ASK_DIGEST_SIZE], c [SL_ASK_DIGEST_SIZE];
    sl_ask_digest (sl_str ("run"), sl_str ("{\"a\":1,\"b\":[2,3]}"), "abc", a);
    sl_ask_digest (sl_str ("run"), sl_str ("{ \"b\": [2, 3], \"a\": 1 }"), "abc", b);
    cr_expect_eq (strlen (a), 64);
    cr_expect_str_eq (a, b, "the same arguments in another order and spacing are the same call");
    sl_ask_digest (sl_str ("run"), sl_str ("{\"a\":1,\"b\":[3,2]}"), "abc", c);
    cr_expect_str_neq (a, c, "other arguments");
    sl_ask_digest (sl_str ("run2"), sl_str ("{\"a\":1,\"b\":[2,3]}"), "abc", c);
    cr_expect_str_neq (a, c, "another tool");
    sl_ask_digest (sl_str ("run"), sl_str ("{\"a\":1,\"b\":[2,3]}"), "abd", c);
    cr_expect_str_neq (a, c, "another policy version");
    //  The tool and the arguments cannot trade bytes across the separator.
    sl_ask_digest (sl_str ("ab"), sl_str ("\"c\""), "p", a);
    sl_ask_digest (sl_str ("a"), sl_str ("b\"c\""), "p", b);
    cr_expect_str_neq (a, b);
}

Test (sl_ask, message_fills_the_template)
{
    sl_policy_t *p = pf_policy (s_ask_policy);
    sl_call_t call = pf_call ("run_shell", "{\"command\":\"git push --force\"}");
    call.model = sl_str ("gpt-x");
    sl_buf_t out = { 0 };
    sl_ask_message (sl_policy_ask_spec (p, 0), "push", &call, sl_str ("eng"), sl_str ("bob"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "bob of eng wants run_shell: {\"command\":\"git push --force\"} (push, gpt-x)");
    sl_buf_reset (&out);
    sl_ask_message (sl_policy_ask_spec (p, 1), "pay", &call, SL_STR_NULL, SL_STR_NULL, &out);
    cr_expect (strstr (sl_buf_cstr (&out), "run_shell"), "the default names the tool: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    sl_policy_unref (&p);
}

Test (sl_ask, who_may_decide)
{
    sl_policy_t *p = pf_policy (s_ask_policy);
    const sl_ask_spec_t *named = sl_policy_ask_spec (p, 0), *open = sl_policy_ask_spec (p, 1);
    sl_ask_by_t platform = { .team = sl_str ("platform"), .user = sl_str ("zed") };
    sl_ask_by_t alice = { .team = sl_str ("eng"), .user = sl_str ("alice") };
    sl_ask_by_t key = { .key_id = sl_str ("k1") };
    sl_ask_by_t bob = { .team = sl_str ("eng"), .user = sl_str ("bob"), .approver = true };
    sl_ask_by_t console = { .console = true };
    sl_ask_by_t loopback = { .loopback = true };
    sl_ask_by_t nobody = { .team = sl_str ("eng"), .user = sl_str ("carol") };
    cr_expect (sl_ask_may_decide (named, &platform));
    cr_expect (sl_ask_may_decide (named, &alice));
    cr_expect (sl_ask_may_decide (named, &key));
    cr_expect (sl_ask_may_decide (named, &console));
    cr_expect_not (sl_ask_may_decide (named, &bob), "an approver key the rule does not name");
    cr_expect_not (sl_ask_may_decide (named, &loopback), "a rule naming approvers names them all");
    cr_expect_not (sl_ask_may_decide (named, &nobody));
    cr_expect (sl_ask_may_decide (open, &bob));
    cr_expect (sl_ask_may_decide (open, &console));
    cr_expect (sl_ask_may_decide (open, &loopback));
    cr_expect_not (sl_ask_may_decide (open, &nobody), "a key not marked approver");
    cr_expect_not (sl_ask_may_decide (open, NULL));
    //  team:platf is not a prefix match
    sl_ask_by_t platf = { .team = sl_str ("platf") };
    cr_expect_not (sl_ask_may_decide (named, &platf));
    sl_policy_unref (&p);
}

//  Decide a call under the policy, then conclude the pending ask with
//  the given outcome.
static void
s_conclude (sl_policy_t *p, const char *tool, sl_check_t check, const char *approver, const char *comment,
            sl_decision_t *d)
{
    sl_call_t call = pf_call (tool, "{\"command\":\"git push\"}");
    sl_policy_decide (p, &call, d);
    cr_assert_eq (d->action, SL_ACT_NONE, "an ask is pending until concluded");
    cr_assert_geq (d->llm_rule, 0);
    sl_llm_result_t r = { .check = check, .probability = NAN, .approver = (char *) approver,
                          .explanation = (char *) comment, .approval = (char *) "ab12",
                          .error = check == SL_CHK_TIMEOUT || check == SL_CHK_ERROR ? (char *) "nobody came" : NULL };
    sl_policy_conclude (p, &call, &r, d);
}

Test (sl_ask, a_decision_becomes_the_action)
{
    sl_policy_t *p = pf_policy (s_ask_policy);
    sl_decision_t d;
    s_conclude (p, "run_shell", SL_CHK_APPROVED, "alice@eng", "fine", &d);
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_APPROVED);
    cr_expect_str_eq (d.reason, "approved by alice@eng: fine");
    cr_expect_str_eq (d.approver, "alice@eng");
    cr_expect_str_eq (d.rule, "push");
    sl_decision_clear (&d);

    s_conclude (p, "pay", SL_CHK_DENIED, "key:k9", "not today", &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_DENIED);
    cr_expect_str_eq (d.message, "no payment: denied by key:k9: not today", "the rule's notice");
    sl_decision_clear (&d);

    s_conclude (p, "run_shell", SL_CHK_APPROVED_EARLIER, "alice@eng", NULL, &d);
    cr_expect_eq (d.action, SL_ACT_ALLOW);
    cr_expect_eq (d.check, SL_CHK_APPROVED_EARLIER);
    cr_expect (strstr (d.reason, "approval ab12"), "names the first approval: %s", d.reason);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_ask, no_decision_takes_on_timeout_and_nothing_else_passes)
{
    sl_policy_t *p = pf_policy (s_ask_policy);
    sl_decision_t d;
    s_conclude (p, "run_shell", SL_CHK_TIMEOUT, NULL, NULL, &d);
    cr_expect_eq (d.action, SL_ACT_ALLOW, "on_timeout: allow, as the rule says");
    cr_expect_eq (d.check, SL_CHK_TIMEOUT);
    cr_expect (strstr (d.reason, "on_timeout: allow"), "%s", d.reason);
    sl_decision_clear (&d);

    s_conclude (p, "pay", SL_CHK_TIMEOUT, NULL, NULL, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_not_null (d.message);
    sl_decision_clear (&d);

    //  An ask that could not happen never passes, even with on_timeout allow.
    s_conclude (p, "run_shell", SL_CHK_ERROR, NULL, NULL, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_ERROR);
    sl_decision_clear (&d);
    //  Nor does an outcome that is not a person's (an LLM-style answer).
    s_conclude (p, "run_shell", SL_CHK_RAN, NULL, NULL, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK);
    cr_expect_eq (d.check, SL_CHK_ERROR);
    sl_decision_clear (&d);
    sl_policy_unref (&p);

    p = pf_policy ("rules:\n  - id: t\n    tool: t\n    action: ask\n    ask: {on_timeout: terminate}\n");
    sl_call_t call = pf_call ("t", "{}");
    sl_policy_decide (p, &call, &d);
    sl_llm_result_t r = { .check = SL_CHK_TIMEOUT, .probability = NAN };
    sl_policy_conclude (p, &call, &r, &d);
    cr_expect_eq (d.action, SL_ACT_TERMINATE);
    cr_expect_not_null (d.message);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}

Test (sl_ask, a_cut_call_is_not_asked_about)
{
    //  A prefix can show harm, never its absence: an approval would let
    //  a call through, so an ask rule passes over a call cut off.
    sl_policy_t *p = pf_policy ("rules:\n  - id: t\n    tool: t\n    action: ask\n");
    sl_call_t call = pf_cut_call ("t", "{\"a\":", SL_CUT_LENGTH);
    sl_decision_t d;
    sl_policy_decide (p, &call, &d);
    cr_expect_eq (d.action, SL_ACT_BLOCK, "on_incomplete");
    cr_expect_eq (d.llm_rule, -1);
    sl_decision_clear (&d);
    sl_policy_unref (&p);
}
