/*  Integration: the console's Pending page in headless Chromium
    (tests/browser/pending.mjs), against a stack whose policy asks a person
    about run_shell and sluice-audit deciding through the judge's control
    link: a held call shows within the bound, and approving it from the
    page (keyboard only) releases it to the client.

    Skipped, with the reason, when node, Chromium or playwright-core is not
    installed (make browser-deps). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/browser.h"
#include "tests/integration/harness.h"

#define PENDING_DEADLINE_MS "2000"

static const char *s_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    ask:\n"
    "      timeout_ms: 60000\n"
    "      on_timeout: block\n"
    "      message: '{tool} wants {arguments}'\n";

Test (console_pending, the_browser_sees_a_held_call_within_the_bound_and_approves_it, .timeout = 240)
{
    const char *missing = browser_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    char dir [] = "/tmp/sluice-pending-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 20, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--judge-approvals", s->approvals, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, extra, &a));
    cr_expect (browser_run_console ("pending.mjs", a.console_port, s->http_port,
                                    "SLUICE_PENDING_DEADLINE_MS=" PENDING_DEADLINE_MS, s->dir),
               "the browser test passed (its output is above)");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
