/*  Integration: the official SDKs (tests/sdk, pinned in its package.json
    and package-lock.json) as real clients of a running stack. Each
    .test.mjs file in tests/sdk is run with node's test runner against the
    stack started here; the base URLs reach them as SLUICE_OPENAI_BASE_URL,
    SLUICE_ANTHROPIC_BASE_URL and SLUICE_GEMINI_BASE_URL.

    Skipped, with the reason, only when the packages are not installed
    (make sdk-deps installs them; it says why when it cannot). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SDK_DIR "tests/sdk"
#define SDK_TIMEOUT_MS 180000           //  the whole node run
#define SDK_TEST_TIMEOUT "--test-timeout=60000"
#define SDK_MAX_FILES 16

static long
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void
s_dump (const char *path)
{
    FILE *f = fopen (path, "r");
    char line [4096];
    fprintf (stderr, "---- SDK tests ----\n");
    while (f && fgets (line, sizeof line, f))
        fputs (line, stderr);
    if (f)
        fclose (f);
}

Test (sdk, official_sdks_against_the_stack, .timeout = 240)
{
    if (access (SDK_DIR "/node_modules/openai/package.json", R_OK) != 0
    ||  access (SDK_DIR "/node_modules/@anthropic-ai/sdk/package.json", R_OK) != 0
    ||  access (SDK_DIR "/node_modules/@google/genai/package.json", R_OK) != 0)
        cr_skip_test ("the SDK packages are not installed in " SDK_DIR "/node_modules "
                      "(run make sdk-deps; it needs npm and the npm registry)");
    if (system ("node --version > /dev/null 2>&1") != 0)
        cr_skip_test ("node is not installed (make sdk-deps installs Debian's nodejs and npm)");

    //  The test files, in a stable order.
    char *files [SDK_MAX_FILES];
    int count = 0;
    DIR *dir = opendir (SDK_DIR);
    cr_assert_not_null (dir);
    struct dirent *e;
    while ((e = readdir (dir)) && count < SDK_MAX_FILES) {
        size_t n = strlen (e->d_name);
        if (n > 9 && strcmp (e->d_name + n - 9, ".test.mjs") == 0) {
            files [count] = malloc (strlen (SDK_DIR) + n + 2);
            sprintf (files [count++], "%s/%s", SDK_DIR, e->d_name);
        }
    }
    closedir (dir);
    cr_assert_gt (count, 0, "SDK test files exist");

    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    char openai [128], anthropic [128], gemini [128], log [512];
    snprintf (openai, sizeof openai, "http://127.0.0.1:%d/v1", s->http_port);
    snprintf (anthropic, sizeof anthropic, "http://127.0.0.1:%d", s->http_port);
    snprintf (gemini, sizeof gemini, "http://127.0.0.1:%d", s->http_port);
    snprintf (log, sizeof log, "%s/sdk.log", s->dir);

    const char *argv [SDK_MAX_FILES + 6] = { "node", "--test", SDK_TEST_TIMEOUT, "--test-reporter=spec" };
    int argc = 4;
    for (int i = 0; i < count; i++)
        argv [argc++] = files [i];
    argv [argc] = NULL;
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        setenv ("SLUICE_OPENAI_BASE_URL", openai, 1);
        setenv ("SLUICE_ANTHROPIC_BASE_URL", anthropic, 1);
        setenv ("SLUICE_GEMINI_BASE_URL", gemini, 1);
        //  The SDKs read their own variables too; make sure none points elsewhere.
        unsetenv ("OPENAI_BASE_URL");
        unsetenv ("ANTHROPIC_BASE_URL");
        execvp ("node", (char *const *) argv);
        _exit (127);
    }
    cr_assert_gt (pid, 0);
    int status = -1;
    long deadline = s_now_ms () + SDK_TIMEOUT_MS;
    bool exited = false;
    while (!exited && s_now_ms () < deadline) {
        if (waitpid (pid, &status, WNOHANG) == pid)
            exited = true;
        else {
            struct timespec ts = { 0, 20 * 1000000L };
            nanosleep (&ts, NULL);
        }
    }
    if (!exited) {
        kill (-pid, SIGKILL);
        waitpid (pid, &status, 0);
    }
    bool ok = exited && WIFEXITED (status) && WEXITSTATUS (status) == 0;
    if (!ok)
        s_dump (log);
    cr_expect (exited, "the SDK tests finished within %d s", SDK_TIMEOUT_MS / 1000);
    cr_expect (ok, "every SDK test passed (node exit status %d)", WIFEXITED (status) ? WEXITSTATUS (status) : -1);
    //  Say what ran: the SDK runner's own summary lines.
    FILE *f = fopen (log, "r");
    char line [1024];
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "ℹ tests", 9) == 0 || strncmp (line, "ℹ pass", 8) == 0 || strncmp (line, "ℹ fail", 8) == 0)
            fprintf (stderr, "sdk: %s", line);
    if (f)
        fclose (f);
    unlink (log);
    for (int i = 0; i < count; i++)
        free (files [i]);
    cr_expect_eq (stack_stop (s), 0);
}
