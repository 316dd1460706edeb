/*  Integration: per-team policy over the real processes. A keys file made
    here (the hashes of keys the test chooses) gives two teams a policy
    file each, both including a company base; the gateway and the judge
    take it with --keys-file. One rm -rf call is blocked for team a and
    allowed for team b; the base's block on rm -rf / holds for both, the
    team b file's allow of every shell call notwithstanding. A third team
    whose file the judge does not have fails closed. Asserted on what the
    client receives (each rule's notice names it) and the judge's log. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/identity/sl_keyring.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 20000

//  The company's base: no rm -rf of the root, whatever a team says.
static const char *s_base =
    "rules:\n"
    "  - id: no-rm-root\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf[[:space:]]+/([[:space:]]|$)'}]\n"
    "    action: block\n"
    "    message: 'base blocked {tool} ({rule})'\n";
//  Team a: no rm -rf at all.
static const char *s_team_a =
    "include: base.yaml\n"
    "rules:\n"
    "  - id: a-no-rm-rf\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}]\n"
    "    action: block\n"
    "    message: 'team a blocked {tool} ({rule})'\n";
//  Team b: every shell call is fine (as far as the base lets it be).
static const char *s_team_b =
    "include: base.yaml\n"
    "rules:\n"
    "  - id: b-shell-ok\n"
    "    tool: run_shell\n"
    "    action: allow\n";

static char s_dir [] = "/tmp/sluice-teams-XXXXXX";

static void
s_write (const char *name, const char *text)
{
    cr_assert_eq (harness_write (s_dir, name, text), 0);
}

//  One key entry: key's hash, of team.
static void
s_key_entry (sl_buf_t *out, const char *id, const char *key, const char *team)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    sl_buf_printf (out, "  - {id: %s, sha256: %s, team: %s, user: %s-user}\n", id, hex, team, team);
}

//  keys.yaml (the gateway's: teams a, b, c) and keys-judge.yaml (the
//  judge's: a and b only, so team c's file is one it does not have).
static void
s_write_keys (void)
{
    sl_buf_t keys = { 0 }, judge = { 0 };
    const char *teams = "teams:\n  - {name: ta, policy: team-a.yaml}\n  - {name: tb, policy: team-b.yaml}\n";
    sl_buf_puts (&keys, teams);
    sl_buf_puts (&keys, "  - {name: tc, policy: team-c.yaml}\nkeys:\n");
    sl_buf_puts (&judge, teams);
    sl_buf_puts (&judge, "keys:\n");
    s_key_entry (&keys, "ka", "sk-team-a-1", "ta");
    s_key_entry (&keys, "kb", "sk-team-b-1", "tb");
    s_key_entry (&keys, "kc", "sk-team-c-1", "tc");
    s_key_entry (&judge, "ka", "sk-team-a-1", "ta");
    s_key_entry (&judge, "kb", "sk-team-b-1", "tb");
    s_write ("keys.yaml", sl_buf_cstr (&keys));
    s_write ("keys-judge.yaml", sl_buf_cstr (&judge));
    sl_buf_free (&keys);
    sl_buf_free (&judge);
}

//  A chat request to model offering a run_shell tool, as key; the
//  client's stream parsed into cs.
static void
s_ask (sluice_stack_t *s, const char *key, const char *model, chat_stream_t *cs)
{
    char body [512], auth [128];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}],"
              "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":"
              "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}}}]}", model);
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    const char *headers [] = { auth, NULL };
    sl_buf_t out = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", body, headers, &out, TIMEOUT_MS),
                  200, "%s", sl_buf_cstr (&out));
    chat_stream_parse (sl_buf_cstr (&out), cs);
    cr_expect (cs->done_last, "the stream ended cleanly: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
}

//  The run_shell call the client received, or NULL.
static const char *
s_shell_args (chat_stream_t *cs)
{
    for (int i = 0; i < cs->call_count; i++)
        if (strcmp (sl_buf_cstr (&cs->calls [i].name), "run_shell") == 0)
            return sl_buf_cstr (&cs->calls [i].arguments);
    return NULL;
}

Test (teams, each_team_runs_its_own_policy_and_none_drops_the_base)
{
    cr_assert_not_null (mkdtemp (s_dir));
    s_write ("base.yaml", s_base);
    s_write ("team-a.yaml", s_team_a);
    s_write ("team-b.yaml", s_team_b);
    s_write ("team-c.yaml", "rules: []\n");
    s_write_keys ();
    char keys [300], judge_keys [300];
    snprintf (keys, sizeof keys, "%s/keys.yaml", s_dir);
    snprintf (judge_keys, sizeof judge_keys, "%s/keys-judge.yaml", s_dir);
    const char *gateway_args [] = { "--keys-file", keys, NULL };
    const char *judge_args [] = { "--keys-file", judge_keys, NULL };
    stack_opts_t opts = { .mock_delay_ms = 1, .gateway_args = gateway_args, .judge_args = judge_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");

    //  rm -rf of a directory: team a's own rule blocks it ...
    chat_stream_t cs;
    s_ask (s, "sk-team-a-1", "mock-agent-danger", &cs);
    cr_expect_null (s_shell_args (&cs), "team a: the call does not reach the client");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "team a blocked run_shell (a-no-rm-rf)"),
                        "team a's rule decided: %s", sl_buf_cstr (&cs.content));
    chat_stream_free (&cs);
    cr_expect (proc_wait_log (s->judge, "action=block check=ran rule=a-no-rm-rf", "team=", NULL, 0, TIMEOUT_MS));

    //  ... and team b's file lets it through.
    s_ask (s, "sk-team-b-1", "mock-agent-danger", &cs);
    const char *args = s_shell_args (&cs);
    cr_expect (args && strstr (args, "rm -rf sluice-victim"), "team b: the call as the model sent it: %s",
               args ? args : "(none)");
    chat_stream_free (&cs);
    cr_expect (proc_wait_log (s->judge, "action=allow check=ran rule=b-shell-ok", NULL, NULL, 0, TIMEOUT_MS));

    //  rm -rf /: the base's rule comes first, for both teams.
    s_ask (s, "sk-team-b-1", "mock-tools", &cs);
    cr_expect_null (s_shell_args (&cs), "team b's allow does not undo the base's block");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "base blocked run_shell (no-rm-root)"), "%s",
                        sl_buf_cstr (&cs.content));
    cr_expect_eq (cs.call_count, 1, "get_weather, which no rule names, goes through");
    chat_stream_free (&cs);
    s_ask (s, "sk-team-a-1", "mock-tools", &cs);
    cr_expect_null (s_shell_args (&cs));
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "base blocked run_shell (no-rm-root)"),
                        "the base decides before team a's own rule: %s", sl_buf_cstr (&cs.content));
    chat_stream_free (&cs);

    //  Team c's file is one the judge does not have: never the default
    //  (which allows everything here); every call is blocked.
    s_ask (s, "sk-team-c-1", "mock-agent-danger", &cs);
    cr_expect_null (s_shell_args (&cs), "fails closed");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "not available"), "%s", sl_buf_cstr (&cs.content));
    chat_stream_free (&cs);
    cr_expect (proc_wait_log (s->judge, "action=block check=error", "team-c.yaml", NULL, 0, TIMEOUT_MS),
               "the verdict names the file");
    cr_expect (proc_wait_log (s->judge, "\"policy_unknown\"", "team-c.yaml", NULL, 0, TIMEOUT_MS));
    cr_expect_eq (harness_wait_metric (atoi (s->metrics [3]), "sluice_policy_unknown_total", 1, TIMEOUT_MS), 1);
    //  Each named file was loaded, its include with it.
    cr_expect (proc_wait_log (s->judge, "\"policy_loaded\"", "team-a.yaml", NULL, 0, TIMEOUT_MS));
    cr_expect (proc_wait_log (s->gateway, "\"policy_loaded\"", "team-c.yaml", NULL, 0, TIMEOUT_MS));

    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}
