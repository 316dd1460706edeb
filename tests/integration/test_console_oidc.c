/*  Integration: people sign in to the audit console with a real OpenID
    provider (oidc-provider, tests/oidc, started by the browser script on
    127.0.0.1) in headless Chromium (tests/browser/oidc.mjs): a viewer sees
    no contents, in the pages or the API; a replayed redirect opens
    nothing; an auditor sees them; an approver of team eng approves eng's
    held call and is refused ops's; a logout kills the old cookie; with the
    provider down the console says so and its key still works.

    Skipped, with the reason, when node, Chromium, playwright-core or
    oidc-provider is not installed (make browser-deps oidc-deps). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/browser.h"
#include "tests/integration/harness.h"
#include "tests/keyfile_fixture.h"

#define ENG_KEY "sk-test-eng"
#define OPS_KEY "sk-test-ops"
#define CONSOLE_KEY "console-key-for-tests"
#define CLIENT_SECRET "console-client-secret"

static const char *s_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    ask:\n"
    "      timeout_ms: 120000\n"
    "      on_timeout: block\n"
    "      message: '{tool} wants {arguments}'\n";

Test (console_oidc, people_sign_in_see_what_their_role_allows_and_log_out, .timeout = 300)
{
    const char *missing = browser_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    if (access ("tests/oidc/node_modules/oidc-provider/package.json", R_OK) != 0)
        cr_skip_test ("oidc-provider is not installed in tests/oidc/node_modules (make oidc-deps)");
    char dir [] = "/tmp/sluice-oidc-XXXXXX", keys [1024] = "keys:\n", path [128];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "bob-eng", ENG_KEY, "eng", "bob", NULL);
    keyfile_entry (keys, sizeof keys, "carol-ops", OPS_KEY, "ops", "carol", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    const char *gateway_args [] = { "--keys-file", path, NULL };
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 20, .audit_spool = "",
                          .gateway_args = gateway_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    //  The provider's port and the console's, known before either starts:
    //  each names the other.
    int op_port = harness_free_port (), console_port = harness_free_port ();
    cr_assert (op_port > 0 && console_port > 0 && op_port != console_port);
    char issuer [64], port [16], op_env [48], console_env [64];
    snprintf (issuer, sizeof issuer, "http://127.0.0.1:%d", op_port);
    snprintf (port, sizeof port, "%d", console_port);
    setenv ("SLUICE_OIDC_ISSUER", issuer, 1);
    setenv ("SLUICE_OIDC_CLIENT_ID", "sluice-console", 1);
    setenv ("SLUICE_OIDC_CLIENT_SECRET", CLIENT_SECRET, 1);
    setenv ("SLUICE_CONSOLE_KEYS", "ci-bot:admin:" CONSOLE_KEY, 1);
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--judge-approvals", s->approvals, "--console-port", port, NULL };
    audit_proc_t a;
    bool up = audit_start (s, "audit", store, extra, &a);
    unsetenv ("SLUICE_OIDC_ISSUER");
    unsetenv ("SLUICE_OIDC_CLIENT_ID");
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_assert (up);
    cr_expect_eq (a.console_port, console_port);
    char console_url [80], gateway_url [80];
    snprintf (console_url, sizeof console_url, "SLUICE_CONSOLE_URL=http://127.0.0.1:%d/", a.console_port);
    snprintf (gateway_url, sizeof gateway_url, "SLUICE_GATEWAY_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (op_env, sizeof op_env, "SLUICE_OIDC_PORT=%d", op_port);
    snprintf (console_env, sizeof console_env, "SLUICE_TEST_CONSOLE_KEY=%s", CONSOLE_KEY);
    const char *env [] = { console_url, gateway_url, op_env, console_env, "SLUICE_TEST_ENG_KEY=" ENG_KEY,
                           "SLUICE_TEST_OPS_KEY=" OPS_KEY, "SLUICE_OIDC_CLIENT_SECRET=" CLIENT_SECRET, NULL };
    cr_expect (browser_run ("oidc.mjs", env, s->dir), "the browser test passed (its output is above)");
    unsetenv ("SLUICE_OIDC_CLIENT_SECRET");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
