/*  sdk_runner.c - node's test runner over the SDK tests (sdk_runner.h). */
#include "tests/integration/sdk_runner.h"

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

#include <czmq.h>

#define SDK_RUNNER_MAX_FILES 16
#define SDK_RUNNER_POLL_NS (20 * 1000000L)
#define SDK_RUNNER_SUFFIX ".test.mjs"

struct _sdk_run_t {
    pid_t pid;                          //  leads its own process group
    char dir [256];
    char log [512];
};

const char *
sdk_runner_missing (void)
{
    if (access (SDK_RUNNER_DIR "/node_modules/openai/package.json", R_OK) != 0
    ||  access (SDK_RUNNER_DIR "/node_modules/@anthropic-ai/sdk/package.json", R_OK) != 0
    ||  access (SDK_RUNNER_DIR "/node_modules/@google/genai/package.json", R_OK) != 0)
        return "the SDK packages are not installed in " SDK_RUNNER_DIR "/node_modules "
               "(run make sdk-deps; it needs npm and the npm registry)";
    if (system ("node --version > /dev/null 2>&1") != 0)
        return "node is not installed (make sdk-deps installs Debian's nodejs and npm)";
    return NULL;
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

sdk_run_t *
sdk_run_start (const char *dir, const char *const *env, const char *log, int test_timeout_ms)
{
    char *files [SDK_RUNNER_MAX_FILES];
    int count = 0;
    DIR *d = opendir (dir);
    cr_assert_not_null (d, "%s exists", dir);
    struct dirent *e;
    size_t suffix = strlen (SDK_RUNNER_SUFFIX);
    while ((e = readdir (d)) && count < SDK_RUNNER_MAX_FILES) {
        size_t n = strlen (e->d_name);
        if (n > suffix && strcmp (e->d_name + n - suffix, SDK_RUNNER_SUFFIX) == 0) {
            files [count] = malloc (strlen (dir) + n + 2);
            sprintf (files [count++], "%s/%s", dir, e->d_name);
        }
    }
    closedir (d);
    cr_assert_gt (count, 0, "SDK test files exist in %s", dir);
    char timeout [48];
    snprintf (timeout, sizeof timeout, "--test-timeout=%d", test_timeout_ms);
    const char *argv [SDK_RUNNER_MAX_FILES + 6] = { "node", "--test", timeout, "--test-reporter=spec" };
    int argc = 4;
    for (int i = 0; i < count; i++)
        argv [argc++] = files [i];
    argv [argc] = NULL;
    sdk_run_t *run = calloc (1, sizeof *run);
    cr_assert_not_null (run);
    snprintf (run->dir, sizeof run->dir, "%s", dir);
    snprintf (run->log, sizeof run->log, "%s", log);
    run->pid = fork ();
    if (run->pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        for (int i = 0; env [i]; i++)
            putenv ((char *) env [i]);
        //  The SDKs read their own variables too; make sure none points elsewhere.
        unsetenv ("OPENAI_BASE_URL");
        unsetenv ("ANTHROPIC_BASE_URL");
        execvp ("node", (char *const *) argv);
        _exit (127);
    }
    cr_assert_gt (run->pid, 0);
    for (int i = 0; i < count; i++)
        free (files [i]);
    return run;
}

bool
sdk_run_wait (sdk_run_t *run, int timeout_ms)
{
    int status = -1;
    int64_t deadline = zclock_mono () + timeout_ms;
    bool exited = false;
    while (!exited && zclock_mono () < deadline) {
        if (waitpid (run->pid, &status, WNOHANG) == run->pid)
            exited = true;
        else {
            struct timespec ts = { 0, SDK_RUNNER_POLL_NS };
            nanosleep (&ts, NULL);
        }
    }
    if (!exited) {
        kill (-run->pid, SIGKILL);
        waitpid (run->pid, &status, 0);
    }
    bool ok = exited && WIFEXITED (status) && WEXITSTATUS (status) == 0;
    if (!ok)
        s_dump (run->log);
    cr_expect (exited, "the SDK tests in %s finished within %d s", run->dir, timeout_ms / 1000);
    //  Say what ran: the runner's own summary lines.
    FILE *f = fopen (run->log, "r");
    char line [1024];
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "ℹ tests", 9) == 0 || strncmp (line, "ℹ pass", 8) == 0 || strncmp (line, "ℹ fail", 8) == 0)
            fprintf (stderr, "sdk (%s): %s", run->dir, line);
    if (f)
        fclose (f);
    unlink (run->log);
    free (run);
    return ok;
}
