/*  Integration: the audit console in a real browser.

    A stack with sluice-audit beside it; tests/browser/console.mjs drives
    the console in headless Chromium (Debian's /usr/bin/chromium, through
    playwright-core pinned in tests/browser/package-lock.json): the live
    page shows a blocked run_shell call soon after it happens (the time is
    measured and printed; the bound is generous for these sanitizer
    builds), the search finds it by its rule, the stream's page shows the
    notice and the reason, and the charts, policy and try-it pages draw.
    Screenshots go to build/console-*.png.

    Skipped, with the reason, when node, Chromium or playwright-core is not
    installed (make browser-deps installs playwright-core; make deps
    installs chromium). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"

#define BROWSER_DIR "tests/browser"
#define CHROMIUM "/usr/bin/chromium"
#define BROWSER_TIMEOUT_MS 120000
#define LIVE_DEADLINE_MS "2000"

Test (console, the_browser_sees_a_blocked_call_live_finds_it_and_shows_why, .timeout = 240)
{
    if (system ("node --version > /dev/null 2>&1") != 0)
        cr_skip_test ("node is not installed (make sdk-deps installs Debian's nodejs and npm)");
    if (access (CHROMIUM, X_OK) != 0)
        cr_skip_test (CHROMIUM " is not installed (make deps installs Debian's chromium)");
    if (access (BROWSER_DIR "/node_modules/playwright-core/package.json", R_OK) != 0)
        cr_skip_test ("playwright-core is not installed in " BROWSER_DIR "/node_modules (make browser-deps)");
    char dir [] = "/tmp/sluice-console-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 20, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    char cwd [512], shots [600], console_url [64], gateway_url [64], log [300];
    cr_assert_not_null (getcwd (cwd, sizeof cwd));
    snprintf (shots, sizeof shots, "%s/build", cwd);
    snprintf (console_url, sizeof console_url, "http://127.0.0.1:%d/", a.console_port);
    snprintf (gateway_url, sizeof gateway_url, "http://127.0.0.1:%d", s->http_port);
    snprintf (log, sizeof log, "%s/browser.log", s->dir);
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        setenv ("SLUICE_CONSOLE_URL", console_url, 1);
        setenv ("SLUICE_GATEWAY_URL", gateway_url, 1);
        setenv ("SLUICE_SCREENSHOTS", shots, 1);
        setenv ("SLUICE_CHROMIUM", CHROMIUM, 1);
        setenv ("SLUICE_LIVE_DEADLINE_MS", LIVE_DEADLINE_MS, 1);
        execlp ("node", "node", BROWSER_DIR "/console.mjs", (char *) NULL);
        _exit (127);
    }
    cr_assert_gt (pid, 0);
    int status = -1;
    long deadline = zclock_mono () + BROWSER_TIMEOUT_MS;
    while (zclock_mono () < deadline && waitpid (pid, &status, WNOHANG) != pid)
        usleep (50000);
    if (zclock_mono () >= deadline) {
        kill (-pid, SIGKILL);
        waitpid (pid, &status, 0);
    }
    bool ok = WIFEXITED (status) && WEXITSTATUS (status) == 0;
    FILE *f = fopen (log, "r");
    char line [4096];
    while (f && fgets (line, sizeof line, f))
        if (!ok || strncmp (line, "measured:", 9) == 0)
            fprintf (stderr, "console: %s", line);
    if (f)
        fclose (f);
    cr_expect (ok, "the browser test passed (its output is above)");
    unlink (log);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
