/*  Integration: the audit console in a real browser.

    A stack with sluice-audit beside it; tests/browser/console.mjs drives
    the console in headless Chromium (Debian's /usr/bin/chromium, through
    playwright-core pinned in tests/browser/package-lock.json): the live
    page shows a blocked run_shell call soon after it happens (the time is
    measured and printed; the bound is generous for these sanitizer
    builds), the search finds it by its rule, the stream's page shows the
    notice and the reason, and the charts, policy and try-it pages draw.
    Screenshots go to build/console-*.png. tests/browser/live_roles.mjs:
    a viewer's live feed (over the API, and in the page) shows a blocked
    call's name and verdict, never its arguments or the user's message;
    an auditor's feed has them.

    Skipped, with the reason, when node, Chromium or playwright-core is not
    installed (make browser-deps installs playwright-core; make deps
    installs chromium). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/browser.h"
#include "tests/integration/harness.h"

#define LIVE_DEADLINE_MS "2000"

Test (console, the_browser_sees_a_blocked_call_live_finds_it_and_shows_why, .timeout = 240)
{
    const char *missing = browser_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    char dir [] = "/tmp/sluice-console-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 20, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    cr_expect (browser_run_console ("console.mjs", a.console_port, s->http_port,
                                    "SLUICE_LIVE_DEADLINE_MS=" LIVE_DEADLINE_MS, s->dir),
               "the browser test passed (its output is above)");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

#define VIEWER_KEY "viewer-key-0123456789"
#define AUDITOR_KEY "auditor-key-0123456789"

Test (console, a_viewer_sees_calls_live_without_their_contents, .timeout = 240)
{
    const char *missing = browser_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    char dir [] = "/tmp/sluice-console-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 20, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    setenv ("SLUICE_CONSOLE_KEYS", "dash:viewer:" VIEWER_KEY ",ops:auditor:" AUDITOR_KEY, 1);
    bool started = audit_start (s, "audit", store, NULL, &a);
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_assert (started);
    setenv ("SLUICE_VIEWER_KEY", VIEWER_KEY, 1);
    cr_expect (browser_run_console ("live_roles.mjs", a.console_port, s->http_port,
                                    "SLUICE_AUDITOR_KEY=" AUDITOR_KEY, s->dir),
               "the browser test passed (its output is above)");
    unsetenv ("SLUICE_VIEWER_KEY");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
